"""Delta Lake I/O: writes that land once per batch, the claims of a batch, which LogStore a path uses."""
