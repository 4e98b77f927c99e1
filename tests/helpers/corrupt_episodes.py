"""Corrupted copies of a real episode file, and the readers a user runs on a stranger's dataset.

Shared by tests/test_datasets_fuzz_episodes.py (small budget) and bench/fuzz_episodes.py (large one). A mutation
is plain data (a tuple), drawn by the hypothesis strategy `mutations()` and applied to a copy of a real
short dataset by `apply`; `run_isolated` runs one reader in a forked child, so a crash in native code
(HDF5, MuJoCo) or a hang is an outcome the caller sees instead of the end of the test process.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from hypothesis import strategies as st

from x2.base.errors import X2Error
from x2.datasets import Episode
from x2.datasets.index import read_index, write_index
from x2.datasets.validate import repair, validate
from x2.files.digest import file_digest
from x2.format import INDEX_FILE, parse_episode_filename
from x2.recorded.replay import deepest_penetration, replay_actions

EPISODE = "episodes/episode_000000.h5"

# Worlds no reader may hand to MuJoCo. `{missing}` is a path that does not exist: were it opened, the
# error would be MuJoCo's "Error opening file", not x2's refusal.
HOSTILE_WORLDS: dict[str, str] = {
    "include": '<mujoco><include file="/etc/passwd"/><worldbody/></mujoco>',
    "include_missing": '<mujoco><include file="{missing}"/><worldbody/></mujoco>',
    "mesh_outside": '<mujoco><asset><mesh name="m" file="../../../../{missing}.stl"/></asset>'
                    '<worldbody><geom type="mesh" mesh="m"/></worldbody></mujoco>',
    "meshdir": '<mujoco><compiler meshdir="/etc"/><worldbody/></mujoco>',
    "texture_file": '<mujoco><asset><texture name="t" type="2d" file="{missing}.png"/></asset></mujoco>',
    "skybox_faces": '<mujoco><asset><texture name="t" type="skybox" fileright="/etc/passwd"/></asset></mujoco>',
    "hfield_file": '<mujoco><asset><hfield name="h" file="/etc/passwd"/></asset></mujoco>',
    "skin_file": '<mujoco><deformable><skin file="/etc/passwd"/></deformable></mujoco>',
    "sub_model": '<mujoco><asset><model name="m" file="/etc/passwd"/></asset></mujoco>',
    "plugin": '<mujoco><extension><plugin plugin="mujoco.elasticity.cable"/></extension></mujoco>',
    "entity_bomb": '<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "aaaaaaaaaa">'
                   + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
                   + ']><mujoco model="&i;"/>',
    "external_entity": '<!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]><mujoco model="&x;"/>',
    "urdf": '<robot name="r"><link name="l"><visual><geometry><mesh filename="/etc/passwd"/></geometry>'
            '</visual></link></robot>',
    "oversize": "<mujoco><!--" + "x" * (5 * 1024 * 1024) + "--></mujoco>",
    "deep": "<mujoco><worldbody>" + "<body>" * 5000 + "</body>" * 5000 + "</worldbody></mujoco>",
    "huge_texture": '<mujoco><asset><texture name="t" type="2d" builtin="checker" width="60000" '
                    'height="60000"/></asset></mujoco>',
    "huge_hfield": '<mujoco><asset><hfield name="h" nrow="60000" ncol="60000" size="1 1 1 1"/></asset></mujoco>',
    "arena": '<mujoco><size memory="50G"/><worldbody/></mujoco>',
    "malformed": "<mujoco><worldbody>",
    "not_mjcf": "hello",
    "empty_world": "<mujoco/>",
    "bad_geom": '<mujoco><worldbody><geom type="mesh" mesh="nope"/></worldbody></mujoco>',
}

ROOT_ATTRS = ("model_xml", "world", "assets", "layout", "episode_index", "seed", "source", "success", "master_seed",
              "slot", "versions", "env_args", "fps", "x2_format")
DAG_ATTRS = ("nodes", "edges", "scores", "events", "failure")
NODES = ("timestamps", "action", "states", "observations", "observations/qpos", "observations/ee_pose", "labels",
         "labels/subtask_index", "labels/active_mask", "dag", "dag/completion_frame", "timing")
ARRAYS = ("timestamps", "action", "states", "observations/qpos", "labels/subtask_index", "labels/active_mask",
          "dag/completion_frame")
VALUE_KINDS = ("deep_json", "huge_string", "malformed_json", "int", "float", "float_array", "string_array",
               "invalid_utf8", "opaque", "json_list", "json_dict", "json_string", "json_nested_list", "nan", "negative",
               "absent")
ARRAY_KINDS = ("strings", "nan", "inf", "ints", "wrong_rows", "scalar", "three_d", "empty", "huge_declared",
               "one_column", "compound")


# JSON attrs edited deep inside (one value anywhere in the tree replaced), and the replacements.
JSON_ATTRS = ("/world", "/world", "/world", "/assets", "/layout", "dag/events", "dag/failure", "dag/nodes",
              "dag/scores")
JSON_VALUES: dict[str, Any] = {"null": None, "negative": -1, "huge": 1e308, "string": "x", "empty_list": [],
                               "empty_dict": {}, "nested": [[{"a": []}]], "bool": True, "long_list": list(range(1000))}


def _paths(value: Any, here: tuple = ()) -> list[tuple]:
    """Every path (keys and indices) into a JSON value, the root included."""
    out = [here]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*here, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*here, i))
    return out


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    value[path[0]] = _replaced(value[path[0]], path[1:], new)
    return value


def mutations() -> st.SearchStrategy[tuple]:
    """One corruption: bit flips, truncation, a node removed or replaced, non-finite numbers, a hostile
    attr value or a hostile world."""
    fraction = st.floats(0.0, 1.0, allow_nan=False)
    # hypothesis favours the first branches: the cheap, structural ones go first, bit flips last
    return st.one_of(
        st.tuples(st.just("world"), st.sampled_from(sorted(HOSTILE_WORLDS))),
        st.tuples(st.just("attr"), st.sampled_from(("/",) * 3 + ("dag", "labels")),
                  st.sampled_from(ROOT_ATTRS + DAG_ATTRS + ("subtask_names",)), st.sampled_from(VALUE_KINDS)),
        st.tuples(st.just("json_edit"), st.sampled_from(JSON_ATTRS), st.integers(0, 10 ** 6),
                  st.sampled_from(sorted(JSON_VALUES))),
        st.tuples(st.just("array"), st.sampled_from(ARRAYS), st.sampled_from(ARRAY_KINDS)),
        st.tuples(st.just("nonfinite"), st.sampled_from(("states", "action", "timestamps", "observations/qpos")),
                  st.sampled_from((float("nan"), float("inf"), -float("inf"))), fraction),
        st.tuples(st.just("delete"), st.sampled_from(NODES)),
        st.tuples(st.just("truncate"), fraction),
        st.tuples(st.just("flip"), st.lists(st.tuples(fraction, st.integers(0, 7)), min_size=1, max_size=16)),
    )


def _value(kind: str) -> Any:
    """An attr value of `kind`; None means: delete the attr."""
    return {
        "deep_json": "[" * 100_000 + "]" * 100_000,
        "huge_string": "x" * (50 * 1024 * 1024),
        "malformed_json": '{"a": [1, 2',
        "int": np.int64(-7),
        "float": np.float64(float("inf")),
        "float_array": np.array([1.5, float("nan"), 3.0]),
        "string_array": np.array(["a", "b"], dtype=h5py.string_dtype()),
        "invalid_utf8": np.bytes_(b"\xff\xfe{"),
        "opaque": np.void(b"\xff\xfe\x00{"),
        "json_list": "[1, 2, 3]",
        "json_dict": '{"a": {"b": 1}}',
        "json_string": '"just a string"',
        "json_nested_list": "[[1, [2]], [\"x\", null, -1]]",
        "nan": np.float64(float("nan")),
        "negative": np.int64(-(2 ** 62)),
        "absent": None,
    }[kind]


def _array(kind: str, old: h5py.Dataset) -> dict[str, Any]:
    shape = old.shape
    rows = shape[0] if shape else 1
    if kind == "huge_declared":  # a 2**40-row dataset in a file of a few KB: its chunks were never written
        return {"shape": (2 ** 40, *shape[1:]), "dtype": old.dtype, "chunks": (1024, *shape[1:]),
                "maxshape": (None, *shape[1:])}
    data = {
        "strings": np.array(["x"] * rows, dtype=h5py.string_dtype()),
        "nan": np.full(shape, np.nan),
        "inf": np.full(shape, np.inf),
        "ints": np.full(shape, 2 ** 31 - 1, dtype=np.int64),
        "wrong_rows": np.zeros((rows + 3, *shape[1:]), dtype=old.dtype),
        "scalar": np.float64(1.0),
        "three_d": np.zeros((rows, 2, 2)),
        "empty": np.zeros((0, *shape[1:]), dtype=old.dtype),
        "one_column": np.zeros((rows, 1)),
        "compound": np.zeros(rows, dtype=[("a", "<f8"), ("b", "<i4")]),
    }[kind]
    return {"data": data}


def apply(root: Path, mutation: tuple) -> None:
    """Corrupt the episode file of the dataset at `root` in place."""
    path = root / EPISODE
    kind = mutation[0]
    if kind == "flip":
        raw = bytearray(path.read_bytes())
        for where, bit in mutation[1]:
            raw[min(len(raw) - 1, int(where * len(raw)))] ^= 1 << bit
        path.write_bytes(bytes(raw))
        return
    if kind == "truncate":
        raw = path.read_bytes()
        path.write_bytes(raw[: int(mutation[1] * len(raw))])
        return
    with h5py.File(path, "r+", libver="latest") as f:
        if kind == "delete":
            if mutation[1] in f:
                del f[mutation[1]]
        elif kind == "array":
            name, how = mutation[1], mutation[2]
            if name in f and isinstance(f[name], h5py.Dataset):
                spec = _array(how, f[name])
                del f[name]
                f.create_dataset(name, **spec)
        elif kind == "nonfinite":
            name, value, where = mutation[1:]
            if name in f and f[name].shape and f[name].shape[0] and f[name].dtype.kind == "f":
                data = f[name][()]
                data.reshape(len(data), -1)[min(len(data) - 1, int(where * len(data)))] = value
                f[name][...] = data
        elif kind == "attr":
            group, name, how = mutation[1:]
            if group in f:
                attrs = f[group].attrs
                value = _value(how)
                if name in attrs:
                    del attrs[name]
                if value is not None:
                    attrs[name] = value
        elif kind == "json_edit":
            group, name = mutation[1].rsplit("/", 1)
            attrs = f[group or "/"].attrs if (group or "/") in f else {}
            if name in attrs:
                raw = attrs[name]
                value = json.loads(raw.decode() if isinstance(raw, bytes) else str(raw))
                paths = _paths(value)
                value = _replaced(value, paths[mutation[2] % len(paths)], JSON_VALUES[mutation[3]])
                attrs[name] = json.dumps(value)
        elif kind == "world":
            f.attrs["model_xml"] = HOSTILE_WORLDS[mutation[1]].replace("{missing}", str(root / "never-opened"))
        else:
            raise ValueError(f"unknown mutation {mutation!r}")


# ---- the readers ----------------------------------------------------------------------------------
def read_episode(root: Path) -> None:
    """What `x2 datasets info/show` and the index rebuild read of one file."""
    with Episode(root / EPISODE) as ep:
        problems = list(ep.problems())
        if problems:
            return
        ep.record(root)
        ep.initial_digest()
        _ = (ep.attrs, ep.dag, ep.events, ep.failure, ep.outcome, ep.segments, ep.cameras, ep.keys())
        for name in ("world", "assets", "layout", "versions", "env_args"):
            ep.json_attr(name)


def check_dataset(root: Path) -> None:
    """`x2 datasets validate`, then `--repair`, then validate again."""
    validate(root)
    repair(root)
    validate(root)


def rebuild_world(root: Path) -> None:
    """`x2 replay N --check` and `x2 datasets validate --physics`: the world rebuilt from the file."""
    with Episode(root / EPISODE) as ep:
        replay_actions(ep)
        deepest_penetration(ep)


READERS: dict[str, Callable[[Path], None]] = {"episode": read_episode, "dataset": check_dataset,
                                              "world": rebuild_world}


@dataclass(frozen=True)
class Outcome:
    kind: str  # clean | error (one-line X2Error) | multiline (an X2Error of several lines) | traceback | crash | hang
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.kind in ("clean", "error")


def _child(reader: Callable[[Path], None], root: Path) -> Outcome:
    try:
        reader(root)
        return Outcome("clean")
    except X2Error as exc:
        text = str(exc)
        return Outcome("error" if "\n" not in text and text else "multiline", text[:2000])
    except BaseException:  # noqa: BLE001  (anything else is the bug this harness looks for)
        return Outcome("traceback", traceback.format_exc()[-4000:])


def _report(reader: Callable[[Path], None], root: Path, conn: Any) -> None:
    conn.send_bytes(json.dumps(list(_as_pair(_child(reader, root)))).encode("utf-8"))
    conn.close()


def _as_pair(outcome: Outcome) -> tuple[str, str]:
    return outcome.kind, outcome.detail


# Children come from a fork server: a process started clean, single-threaded, with x2 imported once. Forking
# the test process itself would copy whatever locks its other threads hold at that instant (a deadlock).
_SERVER = multiprocessing.get_context("forkserver")
_SERVER.set_forkserver_preload(["x2.datasets", "x2.recorded.replay", "x2.sim", "h5py", "mujoco"])


def run_isolated(reader: Callable[[Path], None], root: Path, timeout: float | None = None) -> Outcome:
    """Run `reader(root)` in a child process. A signal ends in "crash", running past `timeout` in "hang"
    (None: wait as long as it takes; a test's own timeout then bounds it)."""
    receive, send = _SERVER.Pipe(duplex=False)
    child = _SERVER.Process(target=_report, args=(reader, root, send), daemon=True)
    child.start()
    send.close()
    if not receive.poll(timeout):
        child.kill()
        child.join()
        return Outcome("hang", f"still running after {timeout} s")
    try:
        kind, detail = json.loads(receive.recv_bytes())
    except EOFError:
        kind, detail = None, ""
    child.join()
    if child.exitcode is not None and child.exitcode < 0:
        return Outcome("crash", f"killed by signal {-child.exitcode}")
    if kind is None:
        return Outcome("crash", f"exited {child.exitcode} without a report")
    return Outcome(kind, detail)


def restamp(root: Path) -> None:
    """Give the episode's index line the size and checksum of the file as it is now: a dataset made wrong
    on purpose (or by a buggy tool) carries checksums that match, so the readers behind the check are the
    ones under test. (A file damaged after its commit is the checksum's case: tests/test_files_digest.py.)"""
    index = parse_episode_filename(Path(EPISODE).name)
    records = [replace(r, bytes=(root / EPISODE).stat().st_size, digest=file_digest(root / EPISODE))
               if r.index == index else r for r in read_index(root / INDEX_FILE)]
    write_index(root / INDEX_FILE, records)


def strip_arm_labels(root: Path) -> Path:
    """Make the dataset's first episode one recorded before x2 kept per-arm labels: no
    labels/arm_subtask_index, no /dag arms map (its index restamped)."""
    with h5py.File(root / EPISODE, "r+") as f:
        del f["labels/arm_subtask_index"]
        del f["dag"].attrs["arms"]
    restamp(root)
    return root


def corrupted_copy(source: Path, target: Path, mutation: tuple) -> Path:
    """A copy of the dataset at `source` whose episode file carries `mutation` (and whose index says so)."""
    shutil.copytree(source, target)
    apply(target, mutation)
    restamp(target)
    return target


def describe(mutation: tuple) -> str:
    """A short label of a mutation (its kind and what it hit), for tables."""
    return json.dumps([m if isinstance(m, str) else "..." for m in mutation[:3]])
