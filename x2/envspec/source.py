"""YAML fragments with `include:` and overrides, remembering the file and line of every value.

A fragment is read with `yaml.compose` (safe: no tags are constructed), so every scalar, mapping
and list keeps its source position; errors found much later (a pydantic field, an unknown
predicate) can still point at `file:line`.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from x2.base.errors import SpecError
from x2.envspec.yaml_errors import explain

Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Origin:
    file: str
    line: int


@dataclass
class Fragment:
    """Plain data (dicts, lists, scalars) plus the origin of every path in it."""

    data: dict[str, object]
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


def is_file(path: Path) -> bool:
    """Path.is_file, also False for a name the OS refuses (too long, a lone surrogate): a spec's paths are
    the user's text."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def resolved(base: Path, rel: str) -> Path | None:
    """`base / rel` made absolute, or None when `rel` is no file name (a lone surrogate, a NUL byte)."""
    try:
        return (base / rel).resolve()
    except (OSError, ValueError):
        return None


# Specs are small hand-written files (the shipped ones are a few kB). These bounds turn what no person
# writes into a one-line error instead of a hang, a MemoryError or a RecursionError: a huge file, nesting
# past Python's recursion limit, and aliases that expand exponentially ("billion laughs": ten levels of nine
# aliases each are 9 ** 10 values) or into themselves.
MAX_SPEC_BYTES = 1 << 20
MAX_DEPTH = 64  # mappings and lists inside each other, aliases expanded
MAX_VALUES = 20_000  # scalars, mappings and lists in one file, aliases expanded
_KINDS = {type(None): "null", str: "a string", list: "a list", int: "a number", float: "a number", bool: "a boolean"}
_PLAIN_TAGS: dict[type[yaml.Node], str] = {yaml.MappingNode: "tag:yaml.org,2002:map",
                                           yaml.SequenceNode: "tag:yaml.org,2002:seq"}


class _TooDeep(Exception):
    def __init__(self, line: int):
        self.line = line


class _SpecLoader(yaml.SafeLoader):
    """PyYAML's safe composer, stopped before its recursion reaches Python's limit, and its scanner,
    stopped before deep flow nesting (`[[[[...`) makes its simple-key bookkeeping quadratic."""

    def __init__(self, text: str):
        super().__init__(text)
        self._depth = 0

    def fetch_flow_collection_start(self, TokenClass: type) -> None:  # noqa: N803  # PyYAML's name
        if self.flow_level >= MAX_DEPTH:
            raise _TooDeep(self.line + 1)
        super().fetch_flow_collection_start(TokenClass)

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark.line + 1)  # type: ignore[no-untyped-call]  # untyped in types-PyYAML
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class _Converter:
    """Composed YAML nodes -> plain data and origins, aliases expanded within the bounds above."""

    def __init__(self, file: str):
        self.file = file
        self.origins: dict[Path_, Origin] = {}
        self.values = 0
        self._open: list[yaml.Node] = []  # the nodes being converted, outermost first
        self._constructor = yaml.SafeLoader("")  # builds scalars only, by their resolved tag

    def close(self) -> None:
        self._constructor.dispose()

    def error(self, node: yaml.Node, path: Path_, found: str, allowed: str) -> SpecError:
        return SpecError(self.file, node.start_mark.line + 1, dotted(path), found, allowed)

    def convert(self, node: yaml.Node, path: Path_) -> object:
        if any(node is n for n in self._open):
            raise self.error(node, path, "an alias inside its own anchor (a recursive structure)",
                             "aliases to values defined before and outside them")
        if len(self._open) >= MAX_DEPTH:
            raise self.error(node, path, f"values nested more than {MAX_DEPTH} deep", f"at most {MAX_DEPTH} levels")
        self.values += 1
        if self.values > MAX_VALUES:
            raise self.error(node, path, f"more than {MAX_VALUES} values (aliases expanded)",
                             f"at most {MAX_VALUES} values in one spec file")
        self.origins[path] = Origin(self.file, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if node.tag != _PLAIN_TAGS[type(node)]:
            tag = node.tag.replace("tag:yaml.org,2002:", "!!")  # as written
            raise self.error(node, path, f"a {tag} tag", "plain YAML mappings and lists (no tags)")
        self._open.append(node)
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
            return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
        finally:
            self._open.pop()

    def _mapping(self, node: yaml.MappingNode, path: Path_) -> dict[str, object]:
        out: dict[str, object] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.error(key_node, path, "a non-scalar key", "plain string keys")
            key = self._text(key_node, path, key_node.value)
            if key in out:
                raise self.error(key_node, (*path, key), "a duplicate key", "each key once per mapping")
            out[key] = self.convert(value_node, (*path, key))
        return out

    def _text(self, node: yaml.Node, path: Path_, value: str) -> str:
        # A "\ud800" escape is a lone surrogate: no UTF-8 text (a terminal, a manifest, an HDF5 attribute) holds it.
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise self.error(node, path, f"the escape {value[exc.start]!r} (a lone surrogate)",
                             "text that is valid Unicode") from None
        return value

    def _scalar(self, node: yaml.ScalarNode, path: Path_) -> object:
        if isinstance(node.value, str):
            self._text(node, path, node.value)
        try:
            return self._constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise self.error(node, path, str(exc).splitlines()[0], "plain YAML scalars") from None
        except ValueError as exc:  # an int longer than Python converts (sys.get_int_max_str_digits)
            raise self.error(node, path, f"{node.value[:20]}... ({type(exc).__name__})",
                             "a number of at most a few hundred digits") from None


def read_yaml(path: Path) -> Fragment:
    """One YAML file as a Fragment; bad YAML becomes a one-line SpecError."""
    file = display_path(path)
    try:
        with path.open("rb") as f:
            raw = f.read(MAX_SPEC_BYTES + 1)  # a bounded read: a device or a growing file is no spec either
        if len(raw) > MAX_SPEC_BYTES:
            raise SpecError(file, None, "<file>", f"more than {MAX_SPEC_BYTES} bytes",
                            f"a spec of at most {MAX_SPEC_BYTES} bytes")
        text = raw.decode("utf-8")
    except FileNotFoundError:
        raise SpecError(file, None, "<file>", "no such file", "an existing YAML file") from None
    except UnicodeDecodeError as exc:
        byte_line = exc.object[:exc.start].count(b"\n") + 1
        raise SpecError(file, byte_line, "<file>", f"byte {exc.object[exc.start]:#04x}, which is not UTF-8 text here",
                        "a UTF-8 YAML file") from None
    except OSError as exc:
        raise SpecError(file, None, "<file>", type(exc).__name__, "a readable UTF-8 YAML file") from None
    loader: _SpecLoader | None = None
    try:
        loader = _SpecLoader(text)  # its reader refuses control characters already
        node = loader.get_single_node()
    except _TooDeep as exc:
        raise SpecError(file, exc.line, "<yaml>", f"values nested more than {MAX_DEPTH} deep",
                        f"at most {MAX_DEPTH} levels") from None
    except yaml.MarkedYAMLError as exc:  # (the line to fix, in words: x2/envspec/yaml_errors.py)
        said = explain(exc)
        raise SpecError(file, said.line, "<yaml>", said.found, said.allowed) from None
    except yaml.reader.ReaderError as exc:  # a control character
        line = text[:exc.position].count("\n") + 1
        raise SpecError(file, line, "<yaml>", f"character {exc.character!r}",
                        "printable text (and tab, newline)") from None
    except yaml.YAMLError as exc:
        raise SpecError(file, None, "<yaml>", str(exc).splitlines()[0], "valid YAML") from None
    finally:
        if loader is not None:
            loader.dispose()
    if node is None:
        raise SpecError(file, 1, "<root>", "an empty file", "a mapping of fields")
    converter = _Converter(file)
    try:
        data = converter.convert(node, ())
    finally:
        converter.close()
    if not isinstance(data, dict):
        raise SpecError(file, 1, "<root>", _KINDS.get(type(data), f"a {type(data).__name__}"), "a mapping of fields")
    return Fragment(data, converter.origins, file)


def merge_fragments(base: Fragment, over: Fragment) -> Fragment:
    """Deep-merge `over` onto `base`: mappings merge key by key, anything else is replaced."""
    replaced: set[Path_] = set()  # paths whose whole value (and origins) come from `over`
    merged: list[Path_] = []  # mappings in both, merged key by key

    def go(a: object, b: object, path: Path_) -> object:
        if isinstance(a, dict) and isinstance(b, dict):
            out = dict(a)
            for key, value in b.items():
                sub = (*path, key)
                if key in a:
                    out[key] = go(a[key], value, sub)
                else:
                    replaced.add(sub)
                    out[key] = value
            merged.append(path)
            return out
        replaced.add(path)
        return b

    def from_over(path: Path_) -> bool:
        return any(path[:n] in replaced for n in range(len(path) + 1))

    data = go(base.data, over.data, ())
    assert isinstance(data, dict)  # two mappings merge into one
    # One pass over each side's origins (not one per merged key: a spec may hold 20000 values).
    origins = {k: v for k, v in base.origins.items() if not from_over(k)}
    origins.update({k: v for k, v in over.origins.items() if from_over(k)})
    for path in merged:
        origins[path] = over.origins.get(path, origins.get(path, Origin(over.file, 1)))
    return Fragment(data, origins, over.file)


MAX_INCLUDES = 32  # files one spec may pull in, nested includes counted: a list of 1000 includes is a hang


def load_fragment(path: Path, roots: tuple[Path, ...], search: tuple[Path, ...] = ()) -> Fragment:
    """Read `path`, resolving `include:` (a path or list of paths, relative to the including file,
    else a file of that name in the `search` folders, e.g. the built-in specs of the same kind).

    Included files are merged in order, then the including file's own fields override them.
    Includes must stay inside `roots` (specs are data; they never reach arbitrary files).
    """
    return _load(path, roots, search, (), [0])


def _load(path: Path, roots: tuple[Path, ...], search: tuple[Path, ...], chain: tuple[Path, ...],
          included: list[int]) -> Fragment:
    path = path.resolve()
    frag = read_yaml(path)
    if path in chain:
        loop = " -> ".join(display_path(p) for p in (*chain, path))
        raise frag.error(("include",), f"an include loop ({loop})", "includes that form no cycle")
    include = frag.data.pop("include", None)
    if include is None:
        return frag
    items = [include] if isinstance(include, str) else include
    if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
        raise frag.error(("include",), reprlib.repr(include), "a file path or a non-empty list of file paths")
    merged: Fragment | None = None
    for i, rel in enumerate(items):
        key: Path_ = ("include",) if isinstance(include, str) else ("include", i)
        included[0] += 1
        if included[0] > MAX_INCLUDES:
            raise frag.error(key, f"more than {MAX_INCLUDES} included files", f"at most {MAX_INCLUDES}, "
                             "nested includes counted")
        target = resolved(path.parent, rel)
        if target is None:
            raise frag.error(key, f"{reprlib.repr(rel)} (no such file)", "a file path")
        if not is_file(target):
            target = next((d / rel for d in search if is_file(d / rel)), target).resolve()
        if not any(target.is_relative_to(r.resolve()) for r in roots):
            raise frag.error(key, f"{reprlib.repr(rel)} outside the spec folders", "paths inside " +
                             ", ".join(display_path(r) for r in roots))
        if not is_file(target):
            raise frag.error(key, f"{reprlib.repr(rel)} (no such file)", "an existing YAML file next to this one")
        part = _load(target, roots, search, (*chain, path), included)
        merged = part if merged is None else merge_fragments(merged, part)
    return merge_fragments(merged, frag)  # type: ignore[arg-type]  # items is non-empty
