"""The ``skillwire`` command."""

from __future__ import annotations


def main() -> None:
    """Entry point."""
    from skillwire.cli_app import app

    app()
