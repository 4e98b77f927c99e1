"""Fuzzing x2's spec loaders: mutated copies of the shipped robot, scene and task YAML, loaded the way a
user's own specs are (a workspace's `./specs/<kind>/` folders and a task given as a path), compiled into an
EnvSpec, checked for synthesis and built into a MuJoCo world.

Shared by tests/test_envspec_fuzz.py (a small budget) and bench/fuzz_specs.py (a large one). A case is the
set of spec files of a workspace, one of them mutated; `run_case` loads it and says how it ended: a clean
load or an `X2Error` whose message is one line. Anything else (another exception, a multi-line message)
is raised, with the case, for the caller to report.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from x2.base.errors import X2Error
from x2.envspec import catalog
from x2.envspec.assets import load_asset
from x2.envspec.task import load_env
from x2.synth.binding import check_bindings

PACKAGE = catalog.PACKAGE_ROOT
ROBOT_MJCF_DIR = PACKAGE / "robots" / "artixon"


ASSET_DIR = PACKAGE / "assets" / "objects"


def _shipped(rel: str) -> str:
    text = (PACKAGE / rel).read_text(encoding="utf-8")
    # The copies live in a workspace, away from the MJCF files: point at those by absolute path.
    return text.replace("artixon/", f"{ROBOT_MJCF_DIR}/").replace("mjcf: ", f"mjcf: {ASSET_DIR}/") \
        if rel.startswith("assets/objects/") else text.replace("artixon/", f"{ROBOT_MJCF_DIR}/")


# The workspace a case runs in: every shipped spec the two tasks use, copied under ./specs (the user's
# folders, which take precedence over the built-in ones), so a mutated file is the one actually loaded.
BASE_FILES: dict[str, str] = {
    "specs/robots/artixon-g.yaml": _shipped("robots/artixon-g.yaml"),
    "specs/robots/artixon-h.yaml": _shipped("robots/artixon-h.yaml"),
    "specs/scenes/green_booth.yaml": _shipped("assets/scenes/green_booth.yaml"),
    "specs/scenes/kitchen_booth.yaml": _shipped("assets/scenes/kitchen_booth.yaml"),
    "specs/scenes/tabletop_booth.yaml": _shipped("assets/scenes/tabletop_booth.yaml"),
    "specs/tasks/fruit_in_microwave.yaml": _shipped("tasks/fruit_in_microwave.yaml"),
    "specs/tasks/pick_place.yaml": _shipped("tasks/pick_place.yaml"),
    # two of the assets the scenes use: an articulated one (joints, parts) and a pickable one
    "specs/objects/microwave.yaml": _shipped("assets/objects/microwave.yaml"),
    "specs/objects/apple.yaml": _shipped("assets/objects/apple.yaml"),
}
TARGETS: dict[str, tuple[str, ...]] = {
    "robot": ("specs/robots/artixon-g.yaml", "specs/robots/artixon-h.yaml"),
    "scene": ("specs/scenes/green_booth.yaml", "specs/scenes/kitchen_booth.yaml", "specs/scenes/tabletop_booth.yaml"),
    "task": ("specs/tasks/fruit_in_microwave.yaml", "specs/tasks/pick_place.yaml"),
    "asset": ("specs/objects/microwave.yaml", "specs/objects/apple.yaml"),
}
TEXT_TARGETS = tuple(path for paths in TARGETS.values() for path in paths)
TASKS = ("specs/tasks/fruit_in_microwave.yaml", "specs/tasks/pick_place.yaml")
ROBOTS = (None, "artixon-g", "artixon-h")  # None: the robot the task names


@dataclass(frozen=True)
class Case:
    """One workspace: the mutated file's new bytes, and how the specs are loaded."""

    target: str  # path of the mutated file in the workspace
    content: bytes
    task: str  # the task file given, as to `x2 synth --task`
    robot: str | None  # as `--robot`
    variant: str = "default"

    def describe(self) -> str:
        head = self.content[:2000].decode("utf-8", "backslashreplace")
        return (f"{self.target} ({len(self.content)} bytes) loaded via task={self.task} robot={self.robot} "
                f"variant={self.variant}:\n{head}")


# ----- loading a case -------------------------------------------------------------------------------


@contextlib.contextmanager
def workspace(case: Case) -> Iterator[Path]:
    """A temporary folder holding the case's specs, as the working directory (the user's ./specs)."""
    old = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="x2-fuzz-") as tmp:
        root = Path(tmp)
        for rel, text in BASE_FILES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(case.content if rel == case.target else text.encode())
        os.chdir(root)
        load_asset.cache_clear()  # asset lookups are cached by name, and names resolve against ./specs
        try:
            yield root
        finally:
            os.chdir(old)


def compile_case(case: Case) -> None:
    """What `x2 synth --task FILE` does before its first attempt: compile the specs into an EnvSpec, check
    the skill bindings, build and compile the world, then reset it once (draw assets and a layout)."""
    from x2.sim.mujoco.backend import MujocoBackend

    env = load_env(case.task, robot=case.robot, variant=case.variant)
    if env.task is not None:
        check_bindings(env)
    backend = MujocoBackend(env)
    try:
        backend.reset(0)
    finally:
        backend.close()


def run_case(case: Case) -> str:
    """'ok' (the specs compiled) or 'error' (an X2Error with a one-line message); raises anything else."""
    with workspace(case):
        try:
            compile_case(case)
        except X2Error as exc:
            message = str(exc)
            if "\n" in message or "\r" in message or not message.strip():
                raise AssertionError(f"{type(exc).__name__} message is not one line: {message!r}") from exc
            return "error"
    return "ok"


def show_case(case: Case) -> str:
    """`x2 tasks show FILE --graph` (in process, typer's test runner): 'ok' (exit 0) or 'error' (exit 2 with
    one `error:` line); raises for anything else, e.g. an exception escaping the command."""
    from typer.testing import CliRunner

    from x2.cli.app import _mount, app

    if not app.registered_groups:
        _mount()
    args = ["tasks", "show", case.task, "--graph", "--variant", case.variant]
    args += ["--robot", case.robot] if case.robot else []
    with workspace(case):
        result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    if result.exit_code == 0:
        return "ok"
    lines = result.output.strip().splitlines()
    if result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "):
        return "error"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    raise AssertionError(f"exit code {result.exit_code}, output {result.output[-2000:]!r}")


# ----- structural mutations -------------------------------------------------------------------------

SNIPPET = "SNIPPET_7f3a9"  # a plain scalar placed in the data, then replaced in the text by a raw YAML snippet

# Raw YAML, one line each (flow style), that no Python value dumps to: the parser's and the loader's limits.
_LAUGHS = "[" + ", ".join(["&l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"] + [
    f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 10)]) + "]"
YAML_SNIPPETS: tuple[str, ...] = (
    _LAUGHS,  # billion laughs: 9 ** 10 leaves from 90 aliases
    "&loop [*loop]",  # an alias inside its own anchor: a recursive structure
    "&m {a: *m}",
    "[" * 3000 + "]" * 3000,  # deeper than Python's recursion limit
    "{a: " * 2000 + "1" + "}" * 2000,
    "!!python/object/apply:os.system [echo pwned]",
    "!!python/object:builtins.dict {}",
    "!!python/name:os.system",
    "!!python/tuple [1, 2]",
    "!custom {a: 1}",
    "!!binary aGVsbG8=",
    "!!timestamp 2001-12-14",
    "!!set {a, b}",
    "!!omap [a: 1, b: 2]",
    "!!float nope",
    "!!int 0x",
    "1" * 5000,  # beyond Python's int-from-string digit limit
    "-" + "9" * 400,
    "1e400",
    "-.inf",
    ".nan",
    "0x1F",
    "1_000",
    "0o17",
    "1:20:30",
    '"\\ud800"',  # a lone surrogate
    '"\\x00nul"',
    '"line\\nbreak"',
    '"\\u202eevil"',
    "{? [a, b] : 1}",
    '{"multi\\nline": 1}',
    '{"": 1}',
    "{<<: {a: 1}}",
    "*undefined_alias",
    "&anchor_only",
    "~",
    "''",
    "[]",
    "{}",
    "[[]]",
    "x" * 200_000,  # a very long string
    "\u00e9\u4e2d\U0001f916",
)


def _values() -> st.SearchStrategy[Any]:
    """Any value a YAML file can hold, with the edges: huge and tiny numbers, NaN, empty, deep, long."""
    numbers = st.one_of(
        st.integers(min_value=-(10**6), max_value=10**6),
        st.sampled_from([0, -1, 1, 2**31, 2**63, -(2**63), 10**30, -(10**30)]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([0.0, -0.0, 1e-300, 5e-324, 1e300, -1e300, float("nan"), float("inf"), float("-inf")]),
    )
    scalars = st.one_of(
        st.none(), st.booleans(), numbers,
        st.text(max_size=20),
        st.sampled_from(["", " ", "left", "right", "both", "G", "H", "apple", "@fruit", "microwave/handle",
                         "microwave/door_hinge", "pick", "train", "eval", "checker", "x" * 5000, "\t", "a/b",
                         "@", "/", "../../etc/passwd.yaml", "green_booth.yaml", "artixon-g", "{fruit}", "{",
                         "\u00e9\u4e2d\U0001f916", "yes", "null", SNIPPET]),
    )
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=4)), max_leaves=12)


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path in a document (keys and list indices), root first."""
    out = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += _paths(value, (*prefix, i))
    return out


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


def _mutate_once(draw: st.DrawFn, data: Any) -> Any:
    paths = _paths(data)
    path = draw(st.sampled_from(paths))
    op = draw(st.sampled_from(["delete", "rename", "replace", "replace", "wrap", "deepen", "duplicate", "empty"]))
    if not path:  # the document itself
        return draw(_values()) if op in ("replace", "empty", "delete") else [data] if op == "wrap" else data
    parent, last = _parent(data, path), path[-1]
    if op == "delete":
        del parent[last]
    elif op == "rename" and isinstance(parent, dict):
        new = draw(st.one_of(st.text(max_size=12), st.sampled_from([
            str(last).upper(), str(last)[:-1], f"{last}s", "include", "name", "nodes", "objects", "skill"])))
        parent[new] = parent.pop(last)
    elif op == "wrap":
        parent[last] = [parent[last]]
    elif op == "deepen":
        value = parent[last]
        for _ in range(draw(st.integers(1, 60))):
            value = {"a": value} if draw(st.booleans()) else [value]
        parent[last] = value
    elif op == "duplicate" and isinstance(parent, list):
        parent.append(parent[last])
    elif op == "empty":
        parent[last] = draw(st.sampled_from(["", [], {}, None, 0, -1]))
    else:
        parent[last] = draw(_values())
    return data


@st.composite
def structural_case(draw: st.DrawFn, kind: str) -> Case:
    """A shipped spec of `kind` with a few structural mutations, maybe with one raw YAML snippet spliced in."""
    target = draw(st.sampled_from(TARGETS[kind]))
    data = yaml.safe_load(BASE_FILES[target])
    for _ in range(draw(st.integers(1, 4))):
        data = _mutate_once(draw, data)
    if draw(st.integers(0, 3)) == 0:  # a raw snippet at some path
        paths = [p for p in _paths(data) if p]
        if paths:
            path = draw(st.sampled_from(paths))
            _parent(data, path)[path[-1]] = SNIPPET
        else:
            data = SNIPPET
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=10**9)
    if SNIPPET in text:
        text = text.replace(SNIPPET, draw(st.sampled_from(YAML_SNIPPETS)), 1)
    task = target if kind == "task" else draw(st.sampled_from(TASKS))
    robot = draw(st.sampled_from(ROBOTS))
    return Case(target, text.encode("utf-8", "surrogatepass"), task, robot, draw(_variants(target)))


def _variants(target: str) -> st.SearchStrategy[str]:
    return st.sampled_from(["default", "default", "eval_fruit", "dim_light"]) if "kitchen" in target \
        else st.just("default")


# ----- textual mutations ----------------------------------------------------------------------------

# Whole files a user might end up with: another document kind, several documents, garbage.
WHOLE_FILES: tuple[bytes, ...] = (
    b"", b"\n", b"   \n\t\n", b"# only a comment\n", b"~\n", b"42\n", b"just a string\n", b"- a\n- b\n", b"[]\n",
    b"{}\n", b"name: a\n---\nname: b\n", b"---\n...\n", b"\xff\xfe\x00garbage\x80\x81", b"\x00\x00\x00\x00",
    b"\xef\xbb\xbfname: bom\n", b"name: \xc3\x28\n", b"%YAML 1.1\n%TAG ! tag:x,2000:\n--- !foo {a: 1}\n",
    b"%YAML 9.9\n--- {}\n", b"name: x\n\tdescription: tab\n", b"name: [unclosed\n", b'name: "unclosed\n',
    b"!!python/object/apply:os.system [echo pwned]\n", b"&a [*a]\n", b"? [complex, key]\n: value\n",
    ("laughs: " + _LAUGHS + "\n").encode(),
    bytes(range(256)),
)
_CHARS = st.one_of(st.sampled_from(list(":-[]{}\t\"'&*!%@`|>#,?\\ \n0.9e") + ["\x00", "\u00e9", "\ufeff", "\u2028"]),
                   st.characters())


@st.composite
def textual_case(draw: st.DrawFn) -> Case:
    """A shipped file's text with lines deleted, duplicated or swapped and characters flipped or inserted;
    now and then replaced whole, truncated, or given bytes that are not UTF-8."""
    target = draw(st.sampled_from(TEXT_TARGETS))
    if draw(st.integers(0, 9)) == 0:
        content = draw(st.sampled_from(WHOLE_FILES))
    else:
        text = BASE_FILES[target]
        for _ in range(draw(st.integers(1, 6))):
            lines = text.splitlines(keepends=True)
            op = draw(st.sampled_from(["delete_line", "dup_line", "swap_lines", "flip", "insert", "indent",
                                       "truncate"]))
            i = draw(st.integers(0, max(0, len(lines) - 1)))
            if op == "delete_line" and lines:
                del lines[i]
            elif op == "dup_line" and lines:
                lines.insert(i, lines[i])
            elif op == "swap_lines" and len(lines) > 1:
                j = draw(st.integers(0, len(lines) - 1))
                lines[i], lines[j] = lines[j], lines[i]
            elif op == "indent" and lines:
                lines[i] = draw(st.sampled_from(["\t", " ", "  ", "    "])) + lines[i]
            text = "".join(lines)
            if op in ("flip", "insert", "truncate") and text:
                at = draw(st.integers(0, len(text) - 1))
                if op == "flip":
                    text = text[:at] + draw(_CHARS) + text[at + 1:]
                elif op == "insert":
                    text = text[:at] + draw(st.text(_CHARS, min_size=1, max_size=8)) + text[at:]
                else:
                    text = text[:at]
        content = text.encode("utf-8", "surrogatepass")
        if draw(st.integers(0, 9)) == 0:  # invalid UTF-8 somewhere
            at = draw(st.integers(0, len(content)))
            bad = draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]))
            content = content[:at] + bad + content[at:]
    task = target if target in TASKS else draw(st.sampled_from(TASKS))
    return Case(target, content, task, draw(st.sampled_from(ROBOTS)), draw(_variants(target)))


def cases(kind: str) -> st.SearchStrategy[Case]:
    """The strategy for one fuzz target: robot, scene, task, asset (structural), text, or any of them ("any")."""
    if kind == "any":
        return st.one_of(*(cases(k) for k in ("robot", "scene", "task", "asset", "text")))
    return textual_case() if kind == "text" else structural_case(kind)
