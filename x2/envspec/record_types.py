"""Checking a spec rebuilt from a file's JSON against the types its dataclasses declare.

`env_from_record` builds an `EnvSpec` from an episode's `world` attr, which anyone may have written. The
dataclasses take whatever they are given, and a joint name that is `null` or a list reaches MuJoCo's
name lookup, which dereferences it (a segfault, not an exception). So every field of the rebuilt spec is
checked against its annotation (`str`, `float`, `tuple[str, ...]`, `X | None`, nested dataclasses, ...)
before anything uses it; the first mismatch is one DatasetError line naming its path in the record.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from x2.base.errors import DatasetError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)




# `hint` is a type form (a class, `X | None`, `tuple[str, ...]`, a Literal): typing has no type for those.
def _mismatch(value: object, hint: Any, path: str) -> tuple[str, object, Any] | None:
    """(path, value, expected) of the first part of `value` that is not a `hint`; None when it is."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is object:
        return None
    if origin in (typing.Union, types.UnionType):
        misses = [_mismatch(value, a, path) for a in args]
        return None if any(m is None for m in misses) else (path, value, hint)
    if origin is typing.Literal:
        return None if value in args else (path, value, hint)
    if origin is tuple:
        if not isinstance(value, tuple):
            return path, value, hint
        items = args[:1] * len(value) if len(args) == 2 and args[1] is Ellipsis else args
        if len(items) != len(value):
            return path, value, hint
        return next((m for i, (v, h) in enumerate(zip(value, items, strict=True))
                     if (m := _mismatch(v, h, f"{path}[{i}]")) is not None), None)
    if origin is dict:
        if not isinstance(value, dict):
            return path, value, hint
        return next((m for k, v in value.items()
                     if (m := _mismatch(k, args[0], path) or _mismatch(v, args[1], f"{path}.{k}")) is not None), None)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return mismatch(value, path) if isinstance(value, hint) else (path, value, hint)
    plain = {bool: bool, str: str, Path: Path, type(None): type(None)}
    if hint in plain:
        return None if isinstance(value, plain[hint]) else (path, value, hint)
    if hint in (int, float):
        ok = isinstance(value, int | float if hint is float else int) and not isinstance(value, bool)
        return None if ok else (path, value, hint)
    return None  # a kind no record holds (slices, callables): built by x2, not read from the file


def mismatch(obj: DataclassInstance, path: str = "") -> tuple[str, object, Any] | None:
    """The first field of dataclass `obj` (recursively) whose value does not have its declared type."""
    hints = _hints(type(obj))
    for f in dataclasses.fields(obj):
        found = _mismatch(getattr(obj, f.name), hints[f.name], f"{path}.{f.name}" if path else f.name)
        if found is not None:
            return found
    return None


def check_types(obj: DataclassInstance, where: str) -> None:
    """Raise one DatasetError line unless every field of `obj` has its declared type."""
    found = mismatch(obj)
    if found is not None:
        path, value, hint = found
        shown = repr(value)[:60]
        expected = hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "").replace("pathlib.", "")
        raise DatasetError(f"{where}: {path}: found {shown}; allowed: {expected}")
