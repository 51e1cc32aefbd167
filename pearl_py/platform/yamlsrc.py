"""Catalogue and estimator YAML files: read with line numbers, errors as :class:`CatalogueError`.

Example::

    >>> doc = CatalogueYaml.load("devices/cpus.yaml")
    >>> raise doc.error(("cpus", "epyc-9654", "cores"), "must be > 0")
    CatalogueError: devices/cpus.yaml:12: cpus.epyc-9654.cores: must be > 0
"""
from __future__ import annotations

from pearl_py.config.yaml_source import YamlDocument
from pearl_py.errors import ConfigError


class CatalogueError(ConfigError):
    """A bad hardware-catalogue or estimator YAML file: names file, line and key."""


class CatalogueYaml(YamlDocument):
    """A :class:`YamlDocument` whose errors are :class:`CatalogueError`."""

    error_type = CatalogueError
