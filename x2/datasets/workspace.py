"""Workspace defaults: datasets live under ``./data/<name>``; ``./.x2/state.json`` remembers the last
dataset written or used, so the design card's commands work without a dataset argument.

The state file is a convenience cache: unreadable or pointing at a removed folder, it counts as empty.
"""

from __future__ import annotations

import json
from pathlib import Path

from x2 import format as fmt
from x2.base.errors import NotFoundError
from x2.datasets.untrusted import json_loads
from x2.files.atomic import write_bytes

DATA_DIR = "data"
STATE_PATH = Path(".x2") / "state.json"


def _base(root: str | Path | None) -> Path:
    # Relative to the working directory unless told otherwise, so messages show "data/foo".
    return Path(root) if root is not None else Path(".")


def data_dir(root: str | Path | None = None) -> Path:
    return _base(root) / DATA_DIR


def dataset_path(name: str, root: str | Path | None = None) -> Path:
    """Where a dataset called ``name`` lives by default (``./data/<name>``)."""
    return data_dir(root) / name


def list_datasets(root: str | Path | None = None) -> list[Path]:
    """Dataset folders under ``./data`` (those with a manifest), sorted by name, and the datasets one level down in
    a folder that is none (an `x2 eval` run's `train/` and `eval/` rollouts)."""
    folder = data_dir(root)
    if not folder.is_dir():
        return []
    out = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith(".") or not p.is_dir():
            continue
        if (p / fmt.MANIFEST_FILE).is_file():
            out.append(p)
            continue
        try:
            out += sorted(c for c in p.iterdir() if not c.name.startswith(".") and (c / fmt.MANIFEST_FILE).is_file())
        except OSError:  # (a folder x2 cannot read holds nothing it could list)
            continue
    return out


def dataset_label(path: Path, root: str | Path | None = None) -> str:
    """How a listed dataset is named: its path under ./data (`eval-pick_place-expert-1a2b3c4d/train`)."""
    try:
        return path.relative_to(data_dir(root)).as_posix()
    except ValueError:
        return str(path)


def last_dataset(root: str | Path | None = None) -> Path | None:
    try:
        state = json_loads((_base(root) / STATE_PATH).read_text(encoding="utf-8"))
        value = state["last_dataset"] if isinstance(state, dict) else None
    except (OSError, ValueError, KeyError):
        return None
    if not isinstance(value, str):
        return None
    path = Path(value) if Path(value).is_absolute() else _base(root) / value
    return path if path.is_dir() else None


def remember_dataset(path: str | Path, root: str | Path | None = None) -> None:
    """Record ``path`` as the last dataset written or used (atomic; relative when inside the workspace)."""
    base = _base(root).resolve()
    target = Path(path).resolve()
    try:
        value = str(target.relative_to(base))
    except ValueError:
        value = str(target)
    state_file = _base(root) / STATE_PATH
    state: dict[str, object] = {}
    try:
        loaded = json_loads(state_file.read_text(encoding="utf-8"))
        state = loaded if isinstance(loaded, dict) else {}
    except (OSError, ValueError):
        pass  # other keys of a broken state file are not worth keeping
    state["last_dataset"] = value
    state_file.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(state_file, (json.dumps(state, indent=2, sort_keys=True) + "\n").encode("utf-8"))


def resolve_output(arg: str | None, default_name: str, root: str | Path | None = None) -> Path:
    """Where a command writes: a bare name means ``./data/<name>``, anything with a slash is a path,
    nothing means ``./data/<default_name>`` (a collector's: `EnvSpec.dataset_name`). The folder need not exist
    yet."""
    return given_output(arg, root) or dataset_path(default_name, root)


def given_output(arg: str | None, root: str | Path | None = None) -> Path | None:
    """`resolve_output` of a --dataset that was given; None when it was not."""
    if not arg:
        return None
    given = Path(arg)
    if given.is_absolute():
        return given
    return dataset_path(arg, root) if len(given.parts) == 1 else _base(root) / given


def resolve_dataset(arg: str | None, root: str | Path | None = None) -> Path:
    """An explicit path, a bare name under ``./data``, or (no argument) the last dataset used."""
    if arg:
        given = Path(arg)
        tried = [given if given.is_absolute() else _base(root) / given]
        if not given.is_absolute():  # (a name, or a run's rollouts, under ./data: eval-.../train)
            tried.append(data_dir(root) / given)
        for path in tried:
            if path.exists():
                return path
        raise NotFoundError(f"{arg}: dataset: found no such folder (tried {', '.join(map(str, tried))}); "
                            f"allowed: a path or one of {_names(root)}")
    last = last_dataset(root)
    if last is not None:
        return last
    raise NotFoundError(f"{_base(root) / STATE_PATH}: last_dataset: found none; allowed: pass a dataset, "
                        f"one of {_names(root)}")


def _names(root: str | Path | None) -> str:
    names = [dataset_label(p, root) for p in list_datasets(root)]
    if names:
        return ", ".join(names)
    return f"none yet under {data_dir(root)}/ (record one with x2 collect or x2 synth)"
