"""``python -m truthline`` runs the CLI."""

from truthline.cli import main

main()
