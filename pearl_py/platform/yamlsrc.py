"""YAML with line numbers: load a file and remember where every key path sits.

Catalogue errors must name file, key and line; plain ``yaml.safe_load`` forgets lines.

Example::

    >>> doc = LocatedYaml.parse("a:\\n  b: 1\\n", "x.yaml")
    >>> doc.data["a"]["b"], doc.line(("a", "b"))
    (1, 2)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from pearl_py.errors import ConfigError


@dataclass
class LocatedYaml:
    """Parsed YAML data plus the 1-based line of every mapping key and sequence item."""

    data: object
    file: str
    lines: dict[tuple, int] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str, file: str) -> LocatedYaml:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise ConfigError(f"not valid YAML: {getattr(exc, 'problem', exc)}", file=file,
                              line=mark.line + 1 if mark else None) from None
        finally:
            loader.dispose()
        doc = cls(data=data, file=file)
        if node is not None:
            doc._index(node, ())
        return doc

    @classmethod
    def read(cls, path: str | Path) -> LocatedYaml:
        return cls.parse(Path(path).read_text(), str(path))

    def _index(self, node: yaml.Node, path: tuple) -> None:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                child = path + (key_node.value,)
                self._index(value_node, child)
                self.lines[child] = key_node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._index(item, path + (i,))

    def line(self, path: tuple) -> int | None:
        """Line of ``path``, or of its nearest located ancestor."""
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path)

    def error(self, path: tuple, message: str) -> ConfigError:
        """A :class:`CatalogueError` located at ``path`` (keys joined with dots)."""
        key = ".".join(str(p) for p in path) or None
        return CatalogueError(message, key=key, file=self.file, line=self.line(path))


class CatalogueError(ConfigError):
    """A bad hardware-catalogue or estimator YAML file: names file, line and key."""
