"""``init``: scaffold a workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from alter_publish import pipeline
from alter_publish.format.handles import normalize_domain


def init(
    directory: Annotated[Path, typer.Argument(help="Workspace directory.")] = Path(),
    zone: Annotated[str, typer.Option("--zone", help="Your zone.")] = "example.com",
) -> None:
    """Scaffold a workspace: zones/<zone>.yaml, templates/, keys/ with its .gitignore."""
    for path in pipeline.init_workspace(directory, zone):
        typer.echo(f"created {path}")
    definition = (directory / "zones" / f"{normalize_domain(zone)}.yaml").resolve()
    typer.echo(f"next: alter-publish sign {definition} --create-keys")
