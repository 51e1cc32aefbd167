"""Packaging glue: ships the top-level ``devices/`` and ``estimators/`` folders inside the wheel.

Everything else lives in pyproject.toml. The two data folders stay at the top of the
repository (users read and extend them there) and install as ``pearl_py/_data/...``,
where :mod:`pearl_py.resources` finds them.
"""
from setuptools import find_packages, setup

DATA_PACKAGES = {"pearl_py._data.devices": "devices", "pearl_py._data.estimators": "estimators"}

setup(
    packages=find_packages(include=["pearl_py", "pearl_py.*"]) + list(DATA_PACKAGES),
    package_dir=DATA_PACKAGES,
    package_data={name: ["*.yaml"] for name in DATA_PACKAGES},
)
