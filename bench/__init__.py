"""Benchmarks: ``python -m bench.<name>`` prints one JSON line."""
