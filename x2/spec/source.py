"""YAML fragments with `include:` and overrides, remembering the file and line of every value.

A fragment is read with `yaml.compose` (safe: no tags are constructed), so every scalar, mapping
and list keeps its source position; errors found much later (a pydantic field, an unknown
predicate) can still point at `file:line`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from x2.errors import SpecError

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Origin:
    file: str
    line: int


@dataclass
class Fragment:
    """Plain data (dicts, lists, scalars) plus the origin of every path in it."""

    data: dict[str, Any]
    origins: dict[Path_, Origin] = field(default_factory=dict)
    file: str = "<spec>"

    def origin(self, path: Path_) -> Origin:
        """The origin of `path`, or of its nearest ancestor that has one."""
        path = tuple(path)
        while path:
            if path in self.origins:
                return self.origins[path]
            path = path[:-1]
        return self.origins.get((), Origin(self.file, 1))

    def error(self, path: Path_, found: str, allowed: str) -> SpecError:
        where = self.origin(path)
        return SpecError(where.file, where.line, dotted(path), found, allowed)


def dotted(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<root>"


def display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _convert(node: yaml.Node, file: str, path: Path_, origins: dict[Path_, Origin]) -> Any:
    origins[path] = Origin(file, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise SpecError(file, key_node.start_mark.line + 1, dotted(path), "a non-scalar key",
                                "plain string keys")
            key = key_node.value
            if key in out:
                raise SpecError(file, key_node.start_mark.line + 1, dotted((*path, key)), "a duplicate key",
                                "each key once per mapping")
            out[key] = _convert(value_node, file, (*path, key), origins)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, file, (*path, i), origins) for i, item in enumerate(node.value)]
    return _safe_scalar(node)


def _safe_scalar(node: yaml.ScalarNode) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def read_yaml(path: Path) -> Fragment:
    """One YAML file as a Fragment; bad YAML becomes a one-line SpecError."""
    file = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(file, None, "<file>", "no such file", "an existing YAML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(file, None, "<file>", type(exc).__name__, "a readable UTF-8 YAML file") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise SpecError(file, line, "<yaml>", str(exc.problem or exc.context), "valid YAML") from None
    except yaml.YAMLError as exc:
        raise SpecError(file, None, "<yaml>", str(exc).splitlines()[0], "valid YAML") from None
    if node is None:
        raise SpecError(file, 1, "<root>", "an empty file", "a mapping of fields")
    origins: dict[Path_, Origin] = {}
    try:
        data = _convert(node, file, (), origins)
    except yaml.YAMLError as exc:
        raise SpecError(file, None, "<yaml>", str(exc).splitlines()[0], "plain YAML scalars") from None
    if not isinstance(data, dict):
        raise SpecError(file, 1, "<root>", f"a {type(data).__name__}", "a mapping of fields")
    return Fragment(data, origins, file)


def merge(base: Fragment, over: Fragment) -> Fragment:
    """Deep-merge `over` onto `base`: mappings merge key by key, anything else is replaced."""
    origins = dict(base.origins)

    def go(a: Any, b: Any, path: Path_) -> Any:
        if isinstance(a, dict) and isinstance(b, dict):
            out = dict(a)
            for key, value in b.items():
                out[key] = go(a.get(key), value, (*path, key)) if key in a else _take(value, (*path, key))
            origins[path] = over.origins.get(path, origins.get(path, Origin(over.file, 1)))
            return out
        return _take(b, path)

    def _take(value: Any, path: Path_) -> Any:
        for key in [k for k in origins if k[: len(path)] == path]:
            del origins[key]
        origins.update({k: v for k, v in over.origins.items() if k[: len(path)] == path})
        return value

    data = go(base.data, over.data, ())
    return Fragment(data, origins, over.file)


def load_fragment(path: Path, roots: tuple[Path, ...], search: tuple[Path, ...] = (),
                  _chain: tuple[Path, ...] = ()) -> Fragment:
    """Read `path`, resolving `include:` (a path or list of paths, relative to the including file,
    else a file of that name in the `search` folders, e.g. the built-in specs of the same kind).

    Included files are merged in order, then the including file's own fields override them.
    Includes must stay inside `roots` (specs are data; they never reach arbitrary files).
    """
    path = path.resolve()
    frag = read_yaml(path)
    if path in _chain:
        loop = " -> ".join(display_path(p) for p in (*_chain, path))
        raise frag.error(("include",), f"an include loop ({loop})", "includes that form no cycle")
    include = frag.data.pop("include", None)
    if include is None:
        return frag
    items = [include] if isinstance(include, str) else include
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        raise frag.error(("include",), repr(include), "a file path or a non-empty list of file paths")
    merged: Fragment | None = None
    for i, rel in enumerate(items):
        target = (path.parent / rel).resolve()
        if not target.is_file():
            target = next((d / rel for d in search if (d / rel).is_file()), target).resolve()
        key: Path_ = ("include",) if isinstance(include, str) else ("include", i)
        if not any(target.is_relative_to(r.resolve()) for r in roots):
            raise frag.error(key, f"{rel!r} outside the spec folders", "paths inside " +
                             ", ".join(display_path(r) for r in roots))
        if not target.is_file():
            raise frag.error(key, f"{rel!r} (no such file)", "an existing YAML file next to this one")
        part = load_fragment(target, roots, search, (*_chain, path))
        merged = part if merged is None else merge(merged, part)
    return merge(merged, frag)  # type: ignore[arg-type]  # items is non-empty
