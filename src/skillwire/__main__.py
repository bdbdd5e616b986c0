"""``python -m skillwire`` runs the command line."""

from skillwire.cli import main

main()
