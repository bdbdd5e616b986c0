"""skillwire.server."""
