"""The ``pearl`` command: one module per subcommand, :func:`main` dispatches.

``python -m pearl_py.cli ...`` and the installed ``pearl`` script both run :func:`main`.
"""
from pearl_py.cli.main import main

__all__ = ["main"]
