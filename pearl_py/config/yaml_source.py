"""Read YAML keeping the line of every key, so errors can point at ``file:line``.

Example::

    >>> doc = YamlDocument.load("examples/configs/dqn_cartpole.yaml")
    >>> doc.data["hyperparameters"]["batch_size"]
    64
    >>> doc.line_of(("hyperparameters", "batch_size"))
    9

Anchors, aliases and merge keys (``<<: *defaults``) are read as YAML 1.1 defines them; a merged key's line
is the line of its value in the anchored mapping.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import yaml

from pearl_py.errors import ConfigError

FAST_COMPOSER = getattr(yaml, "CSafeLoader", None)
"""libyaml's parser where PyYAML was built with it: its nodes carry the same tags and lines, several times faster (the
shipped catalogue and cost-model files are read on every plan). A text it refuses is parsed again by PyYAML's own,
whose error the message quotes, so a bad file reads the same with or without libyaml."""


def _compose(text: str) -> yaml.Node | None:
    """The text's node tree (None: an empty text), by :data:`FAST_COMPOSER` where it takes the text."""
    if FAST_COMPOSER is not None:
        with contextlib.suppress(yaml.YAMLError):
            return yaml.compose(text, Loader=FAST_COMPOSER)
    return yaml.compose(text, Loader=yaml.SafeLoader)


KeyPath = tuple[str | int, ...]

MAX_BYTES = 16 * 2**20
"""Largest file read (16 MiB): configs, plans and catalogue files are a few kB; anything bigger is not one."""
MAX_NODES = 1_000_000
"""YAML nodes converted at most (aliases count each time they are used): a bound on "billion laughs" files."""


@dataclass
class YamlDocument:
    """Plain Python data of a YAML file plus the line (1-based) of every key and list item."""

    data: Any
    file: str
    lines: dict[KeyPath, int] = field(default_factory=dict)
    error_type: ClassVar[type[ConfigError]] = ConfigError
    """Error class raised for this kind of file (subclasses set e.g. CatalogueError)."""
    _budget: int = field(default=MAX_NODES, repr=False)
    """Nodes :meth:`_convert` may still convert."""

    def line_of(self, path: KeyPath) -> int | None:
        """Line of ``path``, or of its nearest parent that has one."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)

    def error(self, path: KeyPath, message: str) -> ConfigError:
        return self.error_type(message, key=".".join(str(p) for p in path) or None, file=self.file,
                               line=self.line_of(path))

    @classmethod
    def load(cls, path: str | Path) -> YamlDocument:
        """Read and parse a text file of at most :data:`MAX_BYTES`; anything else is a located error."""
        path = Path(path)
        try:
            if path.exists() and not path.is_file() and not path.is_dir():
                raise cls.error_type("not a regular file (a device, a pipe or a socket)", file=str(path))
            with path.open("rb") as f:
                data = f.read(MAX_BYTES + 1)
        except FileNotFoundError:
            raise cls.error_type("file not found", file=str(path)) from None
        except OSError as exc:
            raise cls.error_type(f"cannot read: {exc.strerror}", file=str(path)) from None
        if len(data) > MAX_BYTES:
            raise cls.error_type(f"larger than {MAX_BYTES // 2**20} MiB: not a YAML file pearl_py wrote or reads",
                                 file=str(path))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[:exc.start].count(b"\n") + 1
            raise cls.error_type(f"not a text file (byte 0x{data[exc.start]:02x} is not UTF-8)", file=str(path),
                                 line=line) from None
        return cls.parse(text, str(path))

    @classmethod
    def parse(cls, text: str, file: str = "<string>") -> YamlDocument:
        doc = cls(data={}, file=file)
        try:
            node = _compose(text)
            if node is not None:
                doc.lines[()] = node.start_mark.line + 1
                doc.data = doc._convert(node, ())
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            problem = getattr(exc, "problem", None) or str(exc)
            raise cls.error_type(f"invalid YAML: {problem}", file=file,
                                 line=mark.line + 1 if mark else None) from None
        except RecursionError:
            raise cls.error_type("invalid YAML: nested too deeply", file=file) from None
        return doc

    def _spend(self, nodes: int, node: yaml.Node) -> None:
        self._budget -= nodes
        if self._budget < 0:
            raise self.error_type(f"more than {MAX_NODES:,} values (aliases counted where used): not a file "
                                  "pearl_py reads", file=self.file, line=node.start_mark.line + 1)

    def _pairs(self, node: yaml.MappingNode) -> list[tuple[yaml.Node, yaml.Node]]:
        """The mapping's (key, value) nodes with merge keys resolved (``<<: *defaults`` or ``<<: [*a, *b]``,
        YAML 1.1's merge type): the mapping's own keys win over merged ones, an earlier merged mapping over a
        later one. A merged key keeps the node of its anchor, so its line is where its value is written."""
        self._spend(len(node.value), node)  # merges of merges count each time, as aliases do
        own = [(k, v) for k, v in node.value if k.tag != "tag:yaml.org,2002:merge"]
        merged: list[tuple[yaml.Node, yaml.Node]] = []
        for key_node, value_node in node.value:
            if key_node.tag != "tag:yaml.org,2002:merge":
                continue
            sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for source in sources:
                if not isinstance(source, yaml.MappingNode):
                    raise self.error_type("invalid YAML: '<<' merges a mapping or a list of mappings "
                                          "(<<: *defaults)", file=self.file, line=source.start_mark.line + 1)
                merged.extend(self._pairs(source))
        taken: set[Any] = {k.value for k, _ in own if isinstance(k, yaml.ScalarNode)}
        extra = []
        for key_node, value_node in merged:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value in taken:
                continue
            taken.add(key_node.value)
            extra.append((key_node, value_node))
        return own + extra

    def _convert(self, node: yaml.Node, path: KeyPath) -> Any:
        self._spend(1, node)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for key_node, value_node in self._pairs(node):
                key = yaml.SafeLoader.construct_scalar(yaml.SafeLoader(""), key_node) \
                    if isinstance(key_node, yaml.ScalarNode) else None
                if not isinstance(key, str):
                    raise self.error_type("keys must be plain names", file=self.file,
                                          line=key_node.start_mark.line + 1)
                child = path + (key,)
                if key in out:
                    raise self.error_type("key given twice", key=".".join(map(str, child)), file=self.file,
                                          line=key_node.start_mark.line + 1)
                self.lines[child] = key_node.start_mark.line + 1
                out[key] = self._convert(value_node, child)
            return out
        if isinstance(node, yaml.SequenceNode):
            items = []
            for i, item in enumerate(node.value):
                self.lines[path + (i,)] = item.start_mark.line + 1
                items.append(self._convert(item, path + (i,)))
            return items
        loader = yaml.SafeLoader("")
        try:
            return loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:  # a scalar its tag cannot build (!!int 12x)
            raise self.error_type(f"invalid YAML: {getattr(exc, 'problem', None) or exc}",
                                  key=".".join(map(str, path)) or None, file=self.file,
                                  line=node.start_mark.line + 1) from None
