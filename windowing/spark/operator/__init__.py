"""The exactly-once batch protocol, the executor interface, de-duplication and the choice of a path."""
