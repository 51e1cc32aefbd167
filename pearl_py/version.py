"""The installed pearl_py's version, in one place (``pearl --version``, saved policies, the calibration cache key).

Example::

    >>> from pearl_py.version import __version__
    >>> __version__
    '0.1.0'
"""
from __future__ import annotations

__version__ = "0.1.0"
