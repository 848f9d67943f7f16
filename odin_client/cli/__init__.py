"""The ``odin`` command line: ``main`` parses and dispatches; ``docs``, ``graph`` and ``reindex`` are command
groups, ``chat`` the interactive loop, ``render`` the text output, ``exit_codes`` what each outcome returns."""

from odin_client.cli.main import main

__all__ = ["main"]
