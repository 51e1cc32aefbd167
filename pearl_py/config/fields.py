"""Documented, validated config fields and the dataclass builder that checks them.

A config dataclass declares each field with :func:`param`; :func:`build` turns a
plain dict (from YAML or keyword arguments) into the frozen dataclass, rejecting
unknown keys, wrong types and out-of-range values with a :class:`ConfigError`
that names the key path and, when the dict came from a file, its line.
A field type may parse itself (a class method ``from_config(value)`` raising
``ValueError``, a ``config_number`` that ``low``/``high`` bound, a ``config_type_name``),
as schedules do; a ``ConfigError(key=...)`` raised by ``__post_init__`` (a check across
fields) is located at that key's line.

Example::

    >>> @dataclass(frozen=True)
    ... class Cfg:
    ...     batch_size: int = param(64, "Transitions per gradient step.", low=1)
    >>> build(Cfg, {"batch_size": 0}).batch_size
    ConfigError: batch_size: must be >= 1, got 0
"""
from __future__ import annotations

import dataclasses
import math
import re
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from pearl_py.config.yaml_source import KeyPath, YamlDocument
from pearl_py.errors import ConfigError

T = TypeVar("T")
_FLOAT_TEXT = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def param(default: Any, doc: str, *, low: float | None = None, high: float | None = None,
          low_open: bool = False, choices: tuple[Any, ...] | None = None) -> Any:
    """A config field with its documentation and its valid range.

    ``low``/``high`` bound numbers (and list items); ``low_open`` makes the lower
    bound exclusive; ``choices`` lists the allowed values.
    """
    meta = {"doc": doc, "low": low, "high": high, "low_open": low_open, "choices": choices}
    if isinstance(default, (list, dict)):
        raise TypeError("use a tuple default for list-valued fields")
    return dataclasses.field(default=default, metadata=meta)


def describe(cls: type) -> list[tuple[str, str, Any, str]]:
    """``(name, type, default, doc)`` of every field, for the config reference."""
    hints = typing.get_type_hints(cls)
    return [(f.name, _type_name(hints[f.name]), f.default, f.metadata.get("doc", ""))
            for f in dataclasses.fields(cls)]


def build(cls: type[T], values: dict[str, Any], *, doc: YamlDocument | None = None,
          path: KeyPath = ()) -> T:
    """Validate ``values`` against the fields of ``cls`` and construct it."""
    def fail(key_path: KeyPath, message: str) -> ConfigError:
        return doc.error(key_path, message) if doc is not None else \
            ConfigError(message, key=".".join(map(str, key_path)) or None)

    if not isinstance(values, dict):
        raise fail(path, f"expected a mapping of keys, got {type(values).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in values:
        if key not in fields:
            near = _nearest(key, fields)
            hint = f"; did you mean {near!r}?" if near else f"; known keys: {', '.join(sorted(fields))}"
            raise fail(path + (key,), f"unknown key{hint}")
    kwargs = {key: _check(value, hints[key], fields[key].metadata, path + (key,), fail)
              for key, value in values.items()}
    try:
        return cls(**kwargs)
    except ConfigError as exc:  # a check across fields (``__post_init__``) names its key: locate it in the file
        if exc.key is None or exc.file is not None:
            raise
        raise fail(path + tuple(exc.key.split(".")), exc.reason) from None


def rebuild(cls: type[T], config: T | None, overrides: dict[str, Any], **where: Any) -> T:
    """``config`` (or the defaults, when None) with ``overrides`` applied, validated by :func:`build` (``where``:
    its ``doc`` and ``path``)."""
    if config is not None and not overrides:
        return config
    given = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)} if config is not None else {}
    return build(cls, given | overrides, **where)


def _check(value: Any, hint: Any, meta: typing.Mapping[str, Any], path: KeyPath,
           fail: Callable[[KeyPath, str], ConfigError]) -> Any:
    origin = typing.get_origin(hint)
    if origin is tuple:
        item_type = typing.get_args(hint)[0]
        if not isinstance(value, (list, tuple)):
            raise fail(path, f"expected a list of {_type_name(item_type)}, got {_show(value)}")
        return tuple(_check(v, item_type, meta, path + (i,), fail) for i, v in enumerate(value))
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        if len(args) == 1:
            return _check(value, args[0], meta, path, fail)
        for arg in args:   # ``float | str``: checked as the first of the types the value is
            if _is_a(value, arg):
                return _check(value, arg, meta, path, fail)
        raise fail(path, f"expected {_type_name(hint)}, got {_show(value)}")
    checked = _scalar(value, hint, path, fail)
    choices = meta.get("choices")
    if choices is not None and checked not in choices:
        raise fail(path, f"must be one of {', '.join(map(str, choices))}; got {_show(value)}")
    low, high = meta.get("low"), meta.get("high")
    number = getattr(checked, "config_number", checked)  # a self-parsing value bounds one number of its own
    if isinstance(number, (int, float)) and not isinstance(number, bool):
        if isinstance(number, float) and not math.isfinite(number):
            raise fail(path, f"must be a finite number, got {checked}")
        if low is not None and (number <= low if meta.get("low_open") else number < low):
            op = ">" if meta.get("low_open") else ">="
            raise fail(path, f"must be {op} {low}, got {checked}")
        if high is not None and number > high:
            raise fail(path, f"must be <= {high}, got {checked}")
    return checked


def _scalar(value: Any, hint: Any, path: KeyPath, fail: Callable[[KeyPath, str], ConfigError]) -> Any:
    if hint is bool:
        if isinstance(value, bool):
            return value
    elif hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        number = _as_number(value)
        if number is not None and float(number).is_integer():
            return int(number)
    elif hint is float:
        number = _as_number(value)
        if number is not None:
            return float(number)
    elif hint is str:
        if isinstance(value, str):
            return value
    elif hasattr(hint, "from_config"):  # a value type that parses itself, e.g. a schedule ("lin_0.001")
        try:
            return hint.from_config(value)
        except ValueError as exc:
            raise fail(path, str(exc)) from None
    else:  # pragma: no cover - a field type the builder does not know is a bug in pearl_py
        raise TypeError(f"unsupported config field type {hint!r} at {path}")
    raise fail(path, f"expected {_type_name(hint)}, got {_show(value)}")


def _is_a(value: Any, hint: Any) -> bool:
    """Whether ``value`` reads as a scalar of type ``hint`` (range not checked)."""
    try:
        _scalar(value, hint, (), lambda path, message: ConfigError(message))
    except ConfigError:
        return False
    return True


def _as_number(value: Any) -> float | int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and _FLOAT_TEXT.match(value.strip()):
        return float(value)
    return None


def _show(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is tuple:
        return f"list of {_type_name(typing.get_args(hint)[0])}"
    if origin is not None:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        names = " or ".join(_type_name(a) for a in args)
        return f"{names} or null" if type(None) in typing.get_args(hint) else names
    named = getattr(hint, "config_type_name", None)
    return named or {bool: "true/false", int: "integer", float: "number", str: "text"}.get(hint, str(hint))


def _nearest(key: str, known: typing.Iterable[str]) -> str | None:
    import difflib

    found = difflib.get_close_matches(key, list(known), n=1, cutoff=0.75)
    return found[0] if found else None
