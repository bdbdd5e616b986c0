"""The ``skillwire`` command."""

from __future__ import annotations


def main() -> None:
    """Entry point (of ``skillwire`` and of ``python -m skillwire``, both named
    ``skillwire`` in usage lines)."""
    from skillwire.cli_app import app

    app(prog_name="skillwire")
