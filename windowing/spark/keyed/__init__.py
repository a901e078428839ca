"""The per-key executor: the reference model per key in applyInArrow and its pickled state."""
