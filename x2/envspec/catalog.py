"""Where specs live and how a name becomes a file.

Built-in specs ship inside the package (`x2/robots`, `x2/tasks`, `x2/assets/...`); a user's own
live under `./specs/<kind>/` or are given as a path to a `.yaml` file. Includes resolve only
inside these folders.
"""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Literal

from x2.base.errors import NotFoundError
from x2.envspec.source import Fragment, is_file, load_fragment

Kind = Literal["robots", "tasks", "scenes", "objects"]

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
BUILTIN_DIRS: dict[Kind, Path] = {
    "robots": PACKAGE_ROOT / "robots",
    "tasks": PACKAGE_ROOT / "tasks",
    "scenes": PACKAGE_ROOT / "assets" / "scenes",
    "objects": PACKAGE_ROOT / "assets" / "objects",
}
SINGULAR = {"robots": "robot", "tasks": "task", "scenes": "scene", "objects": "asset"}


def user_dir(kind: Kind) -> Path:
    return Path.cwd() / "specs" / kind


def spec_roots(extra: Path | None = None) -> tuple[Path, ...]:
    roots = [PACKAGE_ROOT, Path.cwd() / "specs"]
    if extra is not None:
        roots.append(extra.resolve().parent)
    return tuple(roots)


def names(kind: Kind) -> list[str]:
    """Every spec name of a kind, built-in first, then the user's."""
    found: dict[str, Path] = {}
    for folder in (BUILTIN_DIRS[kind], user_dir(kind)):
        if folder.is_dir():
            for path in sorted(folder.glob("*.yaml")):
                found.setdefault(path.stem, path)
    return list(found)


def locate(kind: Kind, name: str) -> Path:
    """A spec file by name (built-in or ./specs) or by path."""
    if name.endswith((".yaml", ".yml")):
        path = Path(name)
        if not is_file(path):
            raise NotFoundError(f"{reprlib.repr(name)}: no such {SINGULAR[kind]} file")
        return path.resolve()
    for folder in (user_dir(kind), BUILTIN_DIRS[kind]):
        path = folder / f"{name}.yaml"
        if is_file(path):
            return path
    available = ", ".join(names(kind)) or "none"
    raise NotFoundError(f"unknown {SINGULAR[kind]} {reprlib.repr(name)}; available: {available}")


def load(kind: Kind, name: str) -> tuple[Path, Fragment]:
    path = locate(kind, name)
    return path, load_fragment(path, spec_roots(path), (user_dir(kind), BUILTIN_DIRS[kind]))
