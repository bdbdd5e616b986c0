"""skillwire.models."""
