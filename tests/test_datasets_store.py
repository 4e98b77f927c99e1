"""The native dataset store: round trips, determinism, the commit log, validate/repair, workspace."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import replace
from datetime import datetime, tzinfo
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers.write_episodes import MANIFEST, NODES, OBJECTS, attrs, check, content, fill, write_one

from x2.base.errors import DatasetError, NotFoundError
from x2.datasets import (
    Dataset,
    EpisodeStart,
    Tick,
    last_dataset,
    remember_dataset,
    repair,
    resolve_dataset,
    summarize,
    validate,
)
from x2.datasets.index import EpisodeRecord
from x2.datasets.workspace import resolve_output


@pytest.fixture
def ds(tmp_path: Path) -> Dataset:
    dataset = Dataset.create(tmp_path / "ds", MANIFEST)
    yield dataset
    dataset.close()


# ---- round trip -----------------------------------------------------------------------------------
@pytest.mark.parametrize("images", [False, True])
def test_round_trip_arrays_and_attrs(ds: Dataset, images: bool) -> None:
    record = write_one(ds, images=images)
    data = content(record.index, images)
    path = ds.episode_path(record.index)
    assert record.file == f"episodes/{path.name}" and record.frames == len(data["timestamps"])
    assert record.bytes == path.stat().st_size
    with ds.load(record.index) as ep:
        check(path, record.index) if images == (record.index % 2 == 1) else None
        for name, key in (("action", "action"), ("states", "states"), ("observations/qpos", "qpos"),
                          ("observations/object_poses", "object_poses"), ("timestamps", "timestamps")):
            np.testing.assert_array_equal(ep[name], data[key])
        assert ep["action"].dtype == np.float32 and ep["states"].dtype == np.float64
        assert ep["observations/object_poses"].dtype == np.float64
        assert ep["labels/subtask_index"].dtype == np.int16 and ep["labels/active_mask"].dtype == bool
        np.testing.assert_array_equal(ep["labels/active_mask"], data["labels"]["active_mask"])
        np.testing.assert_array_equal(ep["timing/lateness_ms"], data["lateness"])
        np.testing.assert_array_equal(ep["timing/physics_ms"], np.ones(ep.frames, np.float32))
        np.testing.assert_array_equal(ep["device/keyboard/keys"], np.arange(3))
        assert ep.cameras == (["front"] if images else [])
        if images:
            np.testing.assert_array_equal(ep["observations/images/front"], data["images"])
            dset = ep.dataset("observations/images/front")
            assert dset.chunks == (1, 24, 32, 3)
            assert ep.dataset_attrs("observations/images/front")["fovy"] == 45.0
            np.testing.assert_array_equal(dset.attrs["extrinsics"], np.eye(4))
        assert ep.dataset_attrs("observations/object_poses")["names"] == OBJECTS
        assert ep.dataset_attrs("action")["names"] == MANIFEST["action_names"]
        a = ep.attrs
        assert (a["x2_format"], a["episode_index"], a["task"], a["robot"], a["seed"], a["source"]) == \
            ("x2/2", record.index, "fruit_in_microwave", "artixon-g", 1000 + record.index, "scripted")
        assert a["success"] == data["success"] and a["operator"] == "bot" and a["fps"] == 30
        assert ep.json_attr("layout") == {"apple": [0.1, 0.2]}
        assert ep.json_attr("versions") == {"mujoco": "test"}
        assert ep.dag["nodes"] == NODES and ep.subtask_names == NODES
        assert [list(e) for e in ep.events] == data["dag"]["events"]
        assert ep.failure == (None if data["success"] else ("place_fruit", ep.frames - 1, "timeout"))
        assert tuple(ep.segments) == record.segments
        assert ep.segments[0].node == "open_door" and ep.segments[0].start == 0
        assert sum(s.end - s.start for s in ep.segments) == ep.frames
        expected_completion = [dict(data["dag"]["events"]).get(n, -1) for n in NODES]
        np.testing.assert_array_equal(ep["dag/completion_frame"], expected_completion)
        assert not list(ep.problems())
    assert ds.episodes() == [record]
    assert not list((ds.root / ".inprogress").iterdir())


def test_byte_determinism(tmp_path: Path) -> None:
    files = []
    for name in ("a", "c"):
        with Dataset.create(tmp_path / name, MANIFEST) as ds:
            with ds.begin_episode(attrs(), object_names=OBJECTS) as w:
                data = content(0, images=True)
                fill(w, data)
                w.finish(data["labels"], data["dag"], data["success"], timing_attrs={"missed_slots": 0})
            files.append(ds.episode_path(0))
        if name == "a":
            time.sleep(1.1)  # a later second: the wall clock differs, the data must not
    a, c = (p.read_bytes() for p in files)
    with h5py.File(files[0]) as fa, h5py.File(files[1]) as fc:
        assert fa["states"][()].tobytes() == fc["states"][()].tobytes()
        assert "created" not in fa.attrs  # wall-clock facts live under /timing, apart from the data
        created_a, created_c = fa["timing"].attrs["created_utc"].encode(), fc["timing"].attrs["created_utc"].encode()
        assert created_a != created_c and fa["timing"].attrs["missed_slots"] == 0
    # Same size, and the only differing bytes lie inside the wall-clock `created_utc` string.
    assert len(a) == len(c)
    diff = [i for i, (x, y) in enumerate(zip(a, c, strict=True)) if x != y]
    at = a.find(created_a)
    assert at >= 0 and c[at:at + len(created_c)] == created_c
    assert all(at <= i < at + len(created_a) for i in diff)


def test_attributes_written_low_level_are_the_bytes_h5py_writes(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer's attributes go through `set_attr` (h5py's low-level calls, types made once): the file is the
    one h5py's `attrs[name] = value` writes, byte for byte, for every kind of attribute an episode carries."""
    import x2.datasets.writer as writer_module

    class Frozen(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> Frozen:
            return cls(2026, 1, 2, 3, 4, 5, tzinfo=tz)

    monkeypatch.setattr(writer_module, "datetime", Frozen)
    files = []
    for name in ("low_level", "h5py"):
        if name == "h5py":
            monkeypatch.setattr(writer_module, "set_attr", lambda obj, key, value: obj.attrs.__setitem__(key, value))
        with Dataset.create(tmp_path / name, MANIFEST) as ds:
            write_one(ds, images=True)
            files.append(ds.episode_path(0))
    with h5py.File(files[0]) as f:
        assert f.attrs["operator"] == "bot" and f["timing"].attrs["created_utc"] == "2026-01-02T03:04:05Z"
    assert files[0].read_bytes() == files[1].read_bytes()


# ---- the commit log -------------------------------------------------------------------------------
def test_torn_last_line_tolerated_and_rebuild_equals_original(ds: Dataset) -> None:
    for _ in range(3):
        write_one(ds)
    original = ds.index_path.read_bytes()
    with open(ds.index_path, "ab") as fh:
        fh.write(b'{"index":3,"file":"episodes/epi')
    assert [r.index for r in ds.episodes()] == [0, 1, 2]
    report = validate(ds.root)
    assert not report.valid
    assert [p.severity for p in report.problems] == ["repairable"]
    ds.close()
    result = repair(ds.root)
    assert result.actions == ["rebuilt episodes.jsonl from 3 episode file(s)"]
    assert ds.index_path.read_bytes() == original
    assert validate(ds.root).valid
    assert repair(ds.root).actions == []  # idempotent


def test_torn_middle_line_is_an_error(ds: Dataset) -> None:
    for _ in range(2):
        write_one(ds)
    lines = ds.index_path.read_text().splitlines(keepends=True)
    ds.index_path.write_text(lines[0][:20] + "\n" + lines[1])
    report = validate(ds.root)
    assert [p.severity for p in report.problems] == ["error", "repairable"]  # bad line; episode 0 unlisted
    with pytest.raises(DatasetError, match="episodes.jsonl:1"):
        ds.episodes()
    ds.close()
    repair(ds.root)
    assert validate(ds.root).valid and [r.index for r in ds.episodes()] == [0, 1]


def test_writer_heals_log_and_never_reuses_indices(ds: Dataset) -> None:
    write_one(ds)
    write_one(ds)
    ds.close()
    # Simulate kills: one between rename and log append (file unlisted, line torn), one mid-episode.
    lines = ds.index_path.read_text().splitlines(keepends=True)
    ds.index_path.write_text(lines[0] + lines[1][:15])
    (ds.root / ".inprogress" / "episode_000005.h5").write_bytes(b"")
    with Dataset.open(ds.root) as again:
        record = write_one(again)
        assert record.index == 6
        assert [r.index for r in again.episodes()] == [0, 1, 6]
    assert [p.severity for p in validate(ds.root).problems] == ["repairable"]  # the stale .inprogress file


def test_second_writer_gets_lock_error_naming_pid(ds: Dataset) -> None:
    write_one(ds)
    other = Dataset.open(ds.root)
    with pytest.raises(DatasetError, match=r"\.lock: lock: found held by pid \d+"):
        other.begin_episode(attrs())
    with pytest.raises(DatasetError, match="held by pid"):
        repair(ds.root)
    ds.close()
    write_one(other)
    other.close()


# ---- validate / repair ----------------------------------------------------------------------------
def test_repair_quarantines_salvages_and_is_idempotent(ds: Dataset, tmp_path: Path) -> None:
    for _ in range(3):
        write_one(ds)
    # A live SWMR file copied after a flush looks exactly like one left by a killed writer.
    w = ds.begin_episode(attrs(), object_names=OBJECTS)
    data = content(30, images=False)  # 50 ticks: one block of 30 flushed, 20 still in memory
    fill(w, data)
    shutil.copy(w.path, tmp_path / "crashed.h5")
    w.abort()
    ds.close()
    shutil.copy(tmp_path / "crashed.h5", ds.root / ".inprogress" / "episode_000009.h5")
    (ds.root / ".inprogress" / "episode_000010.h5").write_bytes(b"\0" * 100)
    bad = ds.episode_path(1)
    bad.write_bytes(bad.read_bytes()[:5000])  # a torn finished file (e.g. a disk fault)
    report = validate(ds.root)
    assert not report.valid
    assert {p.severity for p in report.problems} == {"error", "repairable"}
    result = repair(ds.root)
    assert any(a.startswith("quarantined episode_000001.h5") for a in result.actions)
    assert "salvaged episode_000009.h5 (30 frames) -> .salvaged/episode_000009.h5" in result.actions
    assert any(a.startswith("removed episode_000010.h5") for a in result.actions)
    assert (ds.root / ".quarantine" / "episode_000001.h5").exists()
    with h5py.File(ds.root / ".salvaged" / "episode_000009.h5", "r", swmr=True) as f:
        np.testing.assert_array_equal(f["states"][()], data["states"][:30])
    after = validate(ds.root)
    assert after.valid and after.episodes == 2
    assert [r.index for r in ds.episodes()] == [0, 2]
    assert repair(ds.root).actions == []
    with Dataset.open(ds.root) as again:
        # 9 is kept in .salvaged/ so it is not handed out again; the removed empty 10 left no trace.
        assert write_one(again).index == 10


def test_validate_reports_mismatch_and_missing(ds: Dataset) -> None:
    for _ in range(2):
        write_one(ds)
    lines = [json.loads(line) for line in ds.index_path.read_text().splitlines()]
    lines[0]["frames"] += 1
    ds.index_path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    ds.episode_path(1).unlink()
    messages = [p.message for p in validate(ds.root).problems]
    assert any("frames: found" in m for m in messages) and any("missing" in m for m in messages)
    ds.close()
    repair(ds.root)
    assert validate(ds.root).valid and [r.index for r in ds.episodes()] == [0]


# ---- no demonstration twice -----------------------------------------------------------------------
def test_validate_flags_a_repeated_demonstration(ds: Dataset) -> None:
    for _ in range(3):
        write_one(ds)
    ds.close()
    # A hand-made copy of episode 1 under another index (two datasets merged by hand, say).
    copy = ds.root / "episodes" / "episode_000003.h5"
    shutil.copy(ds.episode_path(1), copy)
    with h5py.File(copy, "r+") as f:
        f.attrs["episode_index"] = 3
    repair(ds.root)  # lists it: every file is a readable episode
    report = validate(ds.root)
    assert not report.valid and report.episodes == 4
    (problem,) = [p for p in report.problems if p.severity == "error"]
    assert problem.where.endswith("episode_000003.h5")
    assert "episode 3 starts from the same world and state as episode 1" in problem.message
    assert "a repeated demonstration" in problem.message


def test_a_used_seed_is_refused(ds: Dataset) -> None:
    record = write_one(ds)
    with pytest.raises(DatasetError, match=rf"seed: found {record.seed}, already used by episode 0; allowed: a seed "
                                           "this dataset has not used"):
        ds.begin_episode(attrs(seed=record.seed))
    assert not list((ds.root / ".inprogress").iterdir())


def test_slots_continue_after_every_used_one(ds: Dataset) -> None:
    assert ds.next_slot(0) == 0
    with ds.begin_episode(replace(attrs(seed=1), master_seed=0, slot=4), object_names=OBJECTS) as w:
        data = content(0)
        fill(w, data)
        record = w.finish(data["labels"], data["dag"], data["success"])
    assert (record.master_seed, record.slot) == (0, 4) and ds.episodes()[0].slot == 4
    assert ds.next_slot(0) == 5 and ds.next_slot(1) == 0  # committed slots count, per master seed
    ds.use_slots(0, 8)  # slots 5-8 were tried and turned down: never handed out again
    assert ds.next_slot(0) == 9
    ds.use_slots(0, 6)  # the ledger never goes back
    assert ds.next_slot(0) == 9
    assert json.loads((ds.root / "slots.json").read_text()) == {"next_slot": {"0": 9}}
    ds.close()
    (ds.root / "slots.json").write_text("{broken")
    assert [p.severity for p in validate(ds.root).problems] == ["repairable"]
    assert any("rebuilt slots.json" in a for a in repair(ds.root).actions)
    assert validate(ds.root).valid and Dataset.open(ds.root).next_slot(0) == 5  # back to what the index knows


def test_a_readers_probe_never_fails_a_starting_writer(ds: Dataset) -> None:
    ds.close()
    fd = os.open(ds.root / ".lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_SH)  # what lock_holder does, caught at the worst moment and held long
    done: list[BaseException | None] = []

    def start_writer() -> None:
        try:
            Dataset.open(ds.root).lock()
            done.append(None)
        except BaseException as exc:  # reported below
            done.append(exc)

    thread = threading.Thread(target=start_writer)
    thread.start()
    time.sleep(0.3)
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    thread.join(timeout=10)
    assert done == [None]


# ---- inputs are checked, nothing half-written -----------------------------------------------------
def test_manifest_contract(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="fps: found missing"):
        Dataset.create(tmp_path / "x", {"robot": "r", "task": "t"})
    with pytest.raises(DatasetError, match="colour: found an unknown key"):
        Dataset.create(tmp_path / "x", {**MANIFEST, "colour": 1})
    with pytest.raises(NotFoundError, match="no such folder"):
        Dataset.open(tmp_path / "nope")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "notes.txt").write_text("mine")
    with pytest.raises(DatasetError, match="non-empty folder"):
        Dataset.create(tmp_path / "plain", MANIFEST)
    Dataset.create(tmp_path / "ok", {**MANIFEST, "world": {"task": {"nodes": [{"timeout_s": 30}]}}})
    with pytest.raises(DatasetError, match=r"robot: found 'franka' for a dataset recorded with 'artixon-g'; allowed: "
                                           r"the same world \(write to a new dataset: --dataset \S*/ok-franka\)"):
        Dataset.create(tmp_path / "ok", {**MANIFEST, "robot": "franka"})
    with pytest.raises(DatasetError, match=r"world.task.nodes\[0\].timeout_s: found 20 .* with 30; allowed: the "
                                           r"same world \(write to a new dataset: --dataset NEW\)"):
        Dataset.create(tmp_path / "ok", {**MANIFEST, "world": {"task": {"nodes": [{"timeout_s": 20}]}}})
    (tmp_path / "ok" / "manifest.json").write_text('{"robot": "r", "task": "t", "fps": 30, "schema": "x2/9"}')
    with pytest.raises(DatasetError, match="schema: found 'x2/9'"):
        Dataset.open(tmp_path / "ok")


def test_writer_rejects_bad_ticks_and_aborts(ds: Dataset) -> None:
    with pytest.raises(DatasetError, match="source: found 'robot'"):
        ds.begin_episode(EpisodeStart(source="robot", seed=1))
    with pytest.raises(DatasetError, match=r"action: found shape \(13,\)"), \
            ds.begin_episode(attrs()) as w:
        w.append(Tick(timestamp=0.0, action=np.zeros(14), state=np.zeros(5)))
        w.append(Tick(timestamp=0.1, action=np.zeros(13), state=np.zeros(5)))
    with pytest.raises(DatasetError, match="qpos: found missing at tick 1"), ds.begin_episode(attrs()) as w:
        w.append(Tick(timestamp=0.0, action=np.zeros(14), state=np.zeros(5), qpos=np.zeros(3)))
        w.append(Tick(timestamp=0.1, action=np.zeros(14), state=np.zeros(5)))
    with pytest.raises(DatasetError, match="strictly increasing"), ds.begin_episode(attrs()) as w:
        w.append(Tick(timestamp=0.1, action=np.zeros(14), state=np.zeros(5)))
        w.append(Tick(timestamp=0.1, action=np.zeros(14), state=np.zeros(5)))
    with ds.begin_episode(attrs()) as w:
        for t in range(5):
            w.append(Tick(timestamp=t / 30, action=np.zeros(14), state=np.zeros(5)))
        with pytest.raises(DatasetError, match=r"labels/progress: found float32\(4,\)"):
            w.finish({"progress": np.zeros(4)}, {"nodes": NODES}, success=False)
        with pytest.raises(DatasetError, match="dag/events: found \\['nope', 1\\]"):
            w.finish({}, {"nodes": NODES, "events": [["nope", 1]]}, success=False)
        w.abort()
    assert not list((ds.root / ".inprogress").iterdir()) and not list((ds.root / "episodes").iterdir())
    assert ds.episodes() == []


def test_state_only_episode_with_declared_shapes(ds: Dataset) -> None:
    w = ds.begin_episode(attrs(), shapes={"action": (14,), "state": (100,)}, flush_every=7)
    states = np.random.default_rng(0).normal(size=(20, 100))
    for t in range(20):
        w.append(Tick(timestamp=t / 30, action=np.zeros(14), state=states[t]))
    with pytest.raises(DatasetError, match=r"timing/step: found shape \(3,\)"):
        w.finish({}, {}, success=True, timing={"step": np.zeros(3)})
    record = w.finish({}, {}, success=True, timing={"step": np.arange(20)})
    with ds.load(record.index) as ep:
        np.testing.assert_array_equal(ep["states"], states)
        np.testing.assert_array_equal(ep["timing/step_ms"], np.arange(20, dtype=np.float32))
        assert "observations/qpos" not in ep and ep.segments == [] and ep.events == []
    with pytest.raises(NotFoundError, match="found no episode 5; allowed: 0"):
        ds.load(5)


def test_extend_stores_what_appending_tick_by_tick_stores(tmp_path: Path) -> None:
    data = content(2, images=False)
    columns = {"timestamp": data["timestamps"], "action": data["action"], "state": data["states"],
               "qpos": data["qpos"], "qvel": data["qvel"], "ee_pose": data["ee_pose"],
               "object_poses": data["object_poses"], "lateness_ms": data["lateness"]}
    stored = []
    for how in ("append", "extend"):
        with Dataset.create(tmp_path / how, MANIFEST) as ds, ds.begin_episode(attrs(), object_names=OBJECTS) as w:
            if how == "append":
                for t in range(len(data["timestamps"])):
                    w.append(Tick(**{k: (float(v[t]) if v.ndim == 1 else v[t]) for k, v in columns.items()}))
            else:  # a tick appended first, then the rest in two blocks
                w.append(Tick(**{k: (float(v[0]) if v.ndim == 1 else v[0]) for k, v in columns.items()}))
                w.extend({k: v[1:7] for k, v in columns.items()})
                w.extend({k: v[7:] for k, v in columns.items()})
            record = w.finish(data["labels"], data["dag"], data["success"])
            with ds.load(record.index) as ep:
                names = ep.keys()  # (an Episode is not iterable)
                stored.append({name: ep[name] for name in names})
    a, b = stored
    assert sorted(a) == sorted(b) and "timing/lateness_ms" in a
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


def test_extend_refuses_bad_blocks_and_keeps_nothing(ds: Dataset) -> None:
    block = {"timestamp": np.arange(1, 4) / 30, "action": np.zeros((3, 14)), "state": np.zeros((3, 5))}
    with pytest.raises(DatasetError, match=r"action: found shape \(3, 13\); allowed: \(3, 14\)"), \
            ds.begin_episode(attrs()) as w:
        w.extend(block)
        w.extend({**block, "timestamp": block["timestamp"] + 1, "action": np.zeros((3, 13))})
    with pytest.raises(DatasetError, match="timestamp: found 0.1 after 0.1; allowed: strictly increasing"), \
            ds.begin_episode(attrs()) as w:
        w.extend({**block, "timestamp": np.array([0.05, 0.1, 0.1])})
    with pytest.raises(DatasetError, match="qpos: found given at tick 1"), ds.begin_episode(attrs()) as w:
        w.append(Tick(timestamp=0.0, action=np.zeros(14), state=np.zeros(5)))
        w.extend({**block, "qpos": np.zeros((3, 2))})
    with pytest.raises(DatasetError, match=r"extend: found \['images'\]"), ds.begin_episode(attrs()) as w:
        w.extend({**block, "images": np.zeros((3, 4, 4, 3), np.uint8)})
    assert not list((ds.root / ".inprogress").iterdir()) and ds.episodes() == []


# ---- summaries, workspace, layering ---------------------------------------------------------------
def test_summary(ds: Dataset) -> None:
    records = [write_one(ds) for _ in range(4)]
    s = summarize(ds)
    assert s.episodes == 4 and s.frames == sum(r.frames for r in records)
    assert s.success_rate == pytest.approx(sum(r.success for r in records) / 4)
    assert s.sources == {"scripted": 4} and list(s.subtask_mean_s)[:3] == NODES
    first = [r.segments[0] for r in records]
    assert s.subtask_mean_s["open_door"] == pytest.approx(np.mean([g.end - g.start for g in first]) / 30)
    assert s.failure_reasons == {"place_fruit: timeout": 2}  # episodes 0 and 3


def test_workspace_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotFoundError, match="none yet under data/"):
        resolve_dataset(None)
    Dataset.create("data/pick", MANIFEST)
    Dataset.create("elsewhere/place", MANIFEST)
    assert resolve_dataset("pick") == Path("data/pick")
    assert resolve_dataset("elsewhere/place") == Path("elsewhere/place")
    with pytest.raises(NotFoundError, match="allowed: a path or one of pick"):
        resolve_dataset("nope")
    assert resolve_output(None, "fruit") == Path("data/fruit")
    assert resolve_output("mine", "fruit") == Path("data/mine")
    assert resolve_output("./here/mine", "fruit") == Path("here/mine")
    remember_dataset("data/pick")
    assert json.loads(Path(".x2/state.json").read_text()) == {"last_dataset": "data/pick"}
    assert resolve_dataset(None) == Path("data/pick") == last_dataset()
    Path(".x2/state.json").write_text("{torn")
    assert last_dataset() is None


def test_datasets_package_stays_simulator_free() -> None:
    code = ("import sys, x2.datasets, x2.datasets.timeline; "
            "bad = [m for m in sys.modules "
            "       if m == 'mujoco' or m.startswith(('x2.sim', 'x2.rollout', 'x2.cli'))]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_an_index_line_with_a_huge_number_is_one_dataset_error() -> None:
    # json.loads refuses an int longer than Python converts with a plain ValueError (no JSONDecodeError.msg)
    with pytest.raises(DatasetError, match=r"^index.jsonl:1: line: found invalid JSON \(Exceeds the limit"):
        EpisodeRecord.from_json('{"index": ' + "9" * 5000 + "}", "index.jsonl:1")
