"""Where the shipped data lives: the hardware catalogue and the estimator parameters.

The repository keeps them at the top level (``devices/``, ``estimators/``); the wheel
ships them inside the package as ``pearl_py/_data/devices`` and ``pearl_py/_data/estimators``.

Example::

    >>> sorted(p.name for p in devices_dir().glob("*.yaml"))[:1]
    ['cpus.yaml']
"""
from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def _data_dir(name: str) -> Path:
    installed = _PACKAGE / "_data" / name
    if installed.is_dir():
        return installed
    checkout = _PACKAGE.parent / name
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(f"pearl_py data folder {name!r} is missing from {installed} and {checkout}")


def devices_dir() -> Path:
    """Folder of the hardware catalogue YAML files (cpus, gpus, fpgas, links, platforms)."""
    return _data_dir("devices")


def estimators_dir() -> Path:
    """Folder of the estimator parameter YAML files (FPGA HLS templates, default calibrations)."""
    return _data_dir("estimators")
