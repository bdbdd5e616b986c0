"""skillwire.tools."""
