"""``python -m flows.cli`` runs the folioflow CLI."""

from flows.cli import main

main()
