"""A package's public names imported on first use (PEP 562): the package's ``__getattr__`` and ``__dir__``.

Example (a package's ``__init__.py``)::

    __getattr__, __dir__ = lazy_names(__name__, {"pearl_py.runtime.parallel.executor": ("ParallelExecutor",)})

``import`` of the package then loads none of those modules; ``package.ParallelExecutor`` (or ``from package import
ParallelExecutor``) imports its module once and keeps the name in the package.
"""
from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: Mapping[str, tuple[str, ...]]
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` (its ``__name__``, already in ``sys.modules``), whose names are
    ``where``'s: ``{module: names it defines}``."""
    module_of = {name: module for module, names in where.items() for name in names}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *module_of})

    return __getattr__, __dir__
