"""skillwire.engine."""
