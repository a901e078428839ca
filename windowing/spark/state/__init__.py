"""Where an operator keeps its state and writes its outputs: the stores, the driver-side cache, the state log."""
