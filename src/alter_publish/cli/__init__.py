"""The ``alter-publish`` command line: parse options, make one library call, print, exit.

``main`` is the entry point (``alter_publish.cli:main``, ``python -m alter_publish``);
``cli_command`` is the click command behind it, for tools that walk its options.
"""

from alter_publish.cli.app import cli_command, main

__all__ = ["cli_command", "main"]
