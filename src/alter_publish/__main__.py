"""``python -m alter_publish`` runs the CLI."""

from alter_publish.cli import main

main()
