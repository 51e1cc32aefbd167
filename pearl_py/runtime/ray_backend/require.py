"""Ray is an optional extra: import it, or tell the user how to install it.

Example::

    >>> ray = import_ray()          # UserError without ray: pip install -c constraints.txt ".[ray]"
"""
from __future__ import annotations

from types import ModuleType

from pearl_py.errors import UserError

INSTALL_HINT = 'pip install -c constraints.txt ".[ray]"   (from the pearl_py source folder)'


def import_ray() -> ModuleType:
    """The ``ray`` module; a :class:`UserError` naming the install command when it is missing."""
    try:
        import ray
    except ImportError:
        raise UserError(f"the ray backend needs Ray, which is not installed; install it with: {INSTALL_HINT}") from None
    return ray
