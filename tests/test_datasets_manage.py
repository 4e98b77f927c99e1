"""x2 datasets merge / partition / filter / rm / stats: the library on real and deterministic episodes, the CLI
in a subprocess, and real kill -9 of each operation in the middle of its work."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.real_dataset import record_short_dataset
from helpers.write_episodes import MANIFEST, OBJECTS, attrs, content, fill, write_one
from helpers.x2_cli import run_x2

from x2.base.errors import DatasetError
from x2.datasets import Dataset, Episode, repair, validate
from x2.datasets.building import clear_dead_builds
from x2.datasets.index import write_index
from x2.datasets.manage import Filter, filter_dataset, merge, remove, subtask_frames
from x2.datasets.partition import episode_parts, read_partition
from x2.datasets.removal import begin_removal, journal_path
from x2.datasets.select import Selection
from x2.datasets.stats import dataset_stats
from x2.datasets.stratified_partition import assign_partition, part_counts

REPO = Path(__file__).resolve().parents[1]
VICTIM = REPO / "tests" / "helpers" / "manage_victim.py"


# ---- data -----------------------------------------------------------------------------------------
def _tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under `root` (the lock file's pid text aside)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".lock"}


def _write_mixed(root: Path, plan: list[tuple[str, str]], manifest: dict[str, Any] | None = None,
                 seed_base: int = 5000, content_base: int = 0) -> Path:
    """A dataset of write_episodes content; episode i gets plan[i]'s (task, source), seed seed_base + i and
    the content write_episodes gives index content_base + i."""
    ds = Dataset.create(root, manifest or MANIFEST, exist_ok=True)
    try:
        for task, source in plan:
            index = ds.next_index()
            with ds.begin_episode(replace(attrs(seed=seed_base + index), task=task, source=source),
                                  object_names=OBJECTS) as writer:
                data = content(content_base + writer.index)
                fill(writer, data)
                writer.finish(data["labels"], data["dag"], data["success"])
    finally:
        ds.close()
    return root


MIXED = ([("fruit_in_microwave", "synth")] * 10 + [("fruit_in_microwave", "teleop")] * 4
         + [("pick_place", "synth")] * 5 + [("fruit_in_microwave", "scripted")])


@pytest.fixture(scope="session")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Short real episodes: A (master seed 0), B (master seed 1), P (pick_place, master seed 2)."""
    base = tmp_path_factory.mktemp("real")
    record_short_dataset(base / "A", episodes=3, ticks=16, seed=0)
    record_short_dataset(base / "B", episodes=2, ticks=16, seed=1)
    record_short_dataset(base / "P", episodes=2, ticks=16, task="pick_place", seed=2)
    return {"A": base / "A", "B": base / "B", "P": base / "P"}


@pytest.fixture(scope="session")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20 deterministic episodes of two tasks and three sources (never changed by a test: copy it)."""
    return _write_mixed(tmp_path_factory.mktemp("mixed") / "W", MIXED)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


# ---- merge ----------------------------------------------------------------------------------------
def test_merge_renumbers_copies_and_keeps_slots(real: dict[str, Path], tmp_path: Path) -> None:
    before = {k: _tree_digest(p) for k, p in real.items()}
    a, b = Dataset.open(real["A"]), Dataset.open(real["B"])
    out = tmp_path / "C"
    result = merge([real["A"], real["B"]], out)
    assert not result.multi_task
    report = validate(out)
    assert report.valid and report.episodes == 5, report.problems
    c = Dataset.open(out)
    sources = [(a, r) for r in a.episodes()] + [(b, r) for r in b.episodes()]
    for new, (record, (src, old)) in enumerate(zip(c.episodes(), sources, strict=True)):
        assert record.index == new and record.file == f"episodes/episode_{new:06d}.h5"
        assert (record.seed, record.frames, record.segments, record.master_seed, record.slot) == \
            (old.seed, old.frames, old.segments, old.master_seed, old.slot)
        with c.load(new) as ep, src.load(old.index) as orig:
            assert ep.index == new
            assert ep.json_attr("merged_from") == {"dataset": src.name, "episode": old.index}
            for name in orig.keys():  # noqa: SIM118  (Episode is no dict)
                np.testing.assert_array_equal(ep[name], orig[name], err_msg=name)
            assert {k: v for k, v in ep.attrs.items() if k not in ("episode_index", "merged_from")} == \
                {k: v for k, v in orig.attrs.items() if k != "episode_index"}
    assert c.manifest.world == a.manifest.world and c.manifest.task == a.manifest.task
    assert [s["dataset"] for s in c.manifest.extra["merged_from"]] == ["A", "B"]
    assert (c.next_slot(0), c.next_slot(1)) == (a.next_slot(0), b.next_slot(1))
    assert {k: _tree_digest(p) for k, p in real.items()} == before  # sources untouched
    # Same inputs, same bytes (the manifest's creation time aside).
    again = merge([real["A"], real["B"]], tmp_path / "C2")
    assert len(again.records) == 5
    first, second = _tree_digest(out), _tree_digest(tmp_path / "C2")
    first.pop("manifest.json"), second.pop("manifest.json")
    assert first == second
    # One world: a collector appends to C after every slot the sources used.
    appended = record_short_dataset(out, episodes=1, ticks=8, seed=1)
    assert (appended[0].index, appended[0].slot) == (5, b.next_slot(1))
    assert validate(out).valid


def test_merge_of_two_tasks_is_multi_task_and_refuses_appends(real: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "multi"
    result = merge([real["A"], real["P"]], out)
    assert result.multi_task
    assert validate(out).valid
    c = Dataset.open(out)
    assert c.manifest.task == "fruit_in_microwave+pick_place"
    tasks = []
    for record in c.episodes():
        with c.load(record.index) as ep:
            tasks.append(ep.attrs["task"])
            assert json.loads(ep.attrs["world"])["task"]["name"] == ep.attrs["task"]  # each file keeps its own
    assert tasks == ["fruit_in_microwave"] * 3 + ["pick_place"] * 2
    for task in ("fruit_in_microwave", "pick_place"):
        with pytest.raises(DatasetError, match=r"manifest.json: task: found '\w+' for a dataset recorded with "
                                               r"'fruit_in_microwave\+pick_place'"):
            record_short_dataset(out, episodes=1, ticks=4, task=task, seed=9)
    assert len(Dataset.open(out).episodes()) == 5


@pytest.mark.parametrize(("field", "value"), [("robot", "artixon-h"), ("fps", 15),
                                              ("action_names", [f"b{i}" for i in range(14)]),
                                              ("cameras", ["front", "wrist"])])
def test_incompatible_merge_is_refused_with_the_first_difference(tmp_path: Path, field: str, value: Any) -> None:
    a = _write_mixed(tmp_path / "a", [("fruit_in_microwave", "synth")])
    ds = Dataset.create(tmp_path / "b", {**MANIFEST, field: value})
    with ds:
        write_one(ds)  # seed 1000: differs from a's 5000
    with pytest.raises(DatasetError) as err:
        merge([a, tmp_path / "b"], tmp_path / "out")
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"{tmp_path / 'b' / 'manifest.json'}: {field}")
    assert "where a has" in message and "allowed: datasets of the same robot, fps" in message
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out.*"))


def test_merge_refuses_a_repeated_seed_naming_both_episodes(tmp_path: Path) -> None:
    for name in ("a", "b"):
        with Dataset.create(tmp_path / name, MANIFEST) as ds:
            write_one(ds)
            write_one(ds)
    with pytest.raises(DatasetError, match=r"seed: found 1000 in b episode 0, already used by a episode 0 "
                                           r"\(and 1 more\)"):
        merge([tmp_path / "a", tmp_path / "b"], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_merge_refuses_a_repeated_demonstration_under_another_seed(mixed: Path, tmp_path: Path) -> None:
    again = _write_mixed(tmp_path / "again", MIXED[:3], seed_base=7000)  # W's first three, other seeds
    with pytest.raises(DatasetError, match="again: episode 0: found the same world and initial state as W episode 0"):
        merge([mixed, again], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_merge_refusal_is_one_line(tmp_path: Path, real: dict[str, Path]) -> None:
    proc = run_x2(["datasets", "merge", str(real["A"]), str(real["A"]), "--out", str(tmp_path / "x")], tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "found it twice" in proc.stderr, proc.stderr
    proc = run_x2(["datasets", "merge", str(real["A"]), str(real["B"]), "--out", "both"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "data/both: 5 episodes, one world" in proc.stdout
    assert validate(tmp_path / "data" / "both").valid


# ---- partition ------------------------------------------------------------------------------------
def test_partition_is_stratified_and_deterministic(mixed: Path, tmp_path: Path) -> None:
    root = _copy(mixed, tmp_path / "W")
    strata = assign_partition(root, val=0.2, test=0.1, seed=3)
    first = (root / "partition.json").read_bytes()
    parts = read_partition(root)
    assert sorted(parts) == list(range(len(MIXED)))
    for s in strata:
        members = [i for i, key in enumerate(MIXED) if key == (s.task, s.source)]
        assert sorted(s.train + s.val + s.test) == members
        assert all(parts[i] == "val" for i in s.val) and all(parts[i] == "test" for i in s.test)
        n = len(members)
        assert (len(s.val), len(s.test)) == part_counts(n, 0.2, 0.1)
        assert len(s.train) >= 1
        if n >= 2:
            assert len(s.val) >= 1 and abs(len(s.val) - 0.2 * n) <= max(0.5, 1 - 0.2 * n)
    assert Counter((s.task, s.source, s.episodes) for s in strata) == Counter(
        (t, src, n) for (t, src), n in Counter(MIXED).items())
    # The part readers use, and the shared selection, follow partition.json.
    ds = Dataset.open(root)
    assert episode_parts(ds, range(len(MIXED))) == parts
    assert [r.index for r in Selection(part="val").apply(ds)] == sorted(i for i, v in parts.items() if v == "val")
    assign_partition(root, val=0.2, test=0.1, seed=3)
    assert (root / "partition.json").read_bytes() == first
    other = assign_partition(root, val=0.2, test=0.1, seed=4)
    assert [s.val for s in other] != [s.val for s in strata]
    # A stratum's assignment does not move when another stratum grows.
    _write_mixed(root, [("fruit_in_microwave", "teleop")])
    grown = {(s.task, s.source): s for s in assign_partition(root, val=0.2, test=0.1, seed=3)}
    before = {(s.task, s.source): s for s in strata}
    assert grown[("fruit_in_microwave", "synth")] == before[("fruit_in_microwave", "synth")]
    with pytest.raises(DatasetError, match="--val/--test: found 0.6 \\+ 0.5"):
        assign_partition(root, val=0.6, test=0.5)
    assert validate(root).valid


def test_part_counts_keep_the_minimums() -> None:
    for n in range(1, 40):
        for val, test in ((0.1, 0.0), (0.01, 0.0), (0.5, 0.4), (0.1, 0.1), (0.9, 0.0)):
            n_val, n_test = part_counts(n, val, test)
            assert n - n_val - n_test >= 1
            assert n_val >= (1 if n >= 2 else 0) and n_test >= (1 if n >= 3 and test > 0 else 0)


def test_cli_partition_prints_counts_per_stratum(mixed: Path, tmp_path: Path) -> None:
    root = _copy(mixed, tmp_path / "W")
    proc = run_x2(["datasets", "partition", str(root), "--val", "0.2", "--seed", "3"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"dataset: {root}"
    rows = {tuple(line.split("│")[1:3]): line for line in lines if line.count("│") == 7}
    assert any("pick_place" in k[0] and "synth" in k[1] for k in rows)
    parts = read_partition(root)
    assert len(parts) == len(MIXED) and Counter(parts.values())["val"] == \
        sum(part_counts(n, 0.2, 0.0)[0] for n in Counter(MIXED).values())


# ---- filter ---------------------------------------------------------------------------------------
def _labelled_frames(ds: Dataset, index: int, node: str) -> int:
    with ds.load(index) as ep:
        names = ep.subtask_names
        return int(np.count_nonzero(ep["labels/subtask_index"] == names.index(node)))


def test_filter_variants(mixed: Path, tmp_path: Path) -> None:
    root = _copy(mixed, tmp_path / "W")
    source = Dataset.open(root)
    all_records = source.episodes()
    cases = {
        "ok": (Filter(Selection(success_only=True)), [r.index for r in all_records if r.success]),
        "teleop": (Filter(Selection(sources=("teleop",))), [i for i, (_, s) in enumerate(MIXED) if s == "teleop"]),
        "pick": (Filter(tasks=("pick_place",)), [i for i, (t, _) in enumerate(MIXED) if t == "pick_place"]),
        "some": (Filter(Selection(episodes=(1, 4, 7))), [1, 4, 7]),
    }
    pick = [_labelled_frames(source, r.index, "pick_fruit") for r in all_records]
    bound = int(np.median(pick))
    cases["long"] = (Filter(min_frames={"pick_fruit": bound}), [i for i, f in enumerate(pick) if f >= bound])
    cases["short_ok"] = (Filter(Selection(success_only=True), max_frames={"pick_fruit": bound}),
                         [r.index for r, f in zip(all_records, pick, strict=True) if r.success and f <= bound])
    for name, (keep, expected) in cases.items():
        result = filter_dataset(root, tmp_path / name, keep)
        out = Dataset.open(tmp_path / name)
        assert [r.index for r in out.episodes()] == expected, name  # original indices kept
        assert validate(out.root).valid, (name, validate(out.root).problems)
        assert out.manifest.extra["filtered_from"]["filter"] == keep.describe()
        assert len(result.records) == len(expected)
        with out.load(expected[0]) as ep:
            assert ep.json_attr("filtered_from") == {"dataset": "W", "episode": expected[0]}
    assert all(subtask_frames(r).get("pick_fruit", 0) == f for r, f in zip(all_records, pick, strict=True))
    # --part follows partition.json; --renumber gives 0..N-1 and the part travels with its episode.
    assign_partition(root, val=0.3, seed=1)
    val = [i for i, v in sorted(read_partition(root).items()) if v == "val"]
    filter_dataset(root, tmp_path / "val", Filter(Selection(part="val")), renumber=True)
    out = Dataset.open(tmp_path / "val")
    assert [r.index for r in out.episodes()] == list(range(len(val)))
    assert set(read_partition(out.root).values()) == {"val"}
    for new, old in enumerate(val):
        with out.load(new) as ep:
            assert ep.json_attr("filtered_from") == {"dataset": "W", "episode": old}
    for keep, message in ((Filter(tasks=("stack_cubes",)), "--task: found 'stack_cubes'; allowed: a task of this "
                                                             "dataset \\(fruit_in_microwave, pick_place\\)"),
                          (Filter(min_frames={"fly": 1}), "subtask: found 'fly'; allowed: one of \\['open_door'"),
                          (Filter(min_frames={"pick_fruit": 10_000}), "episodes: found none matching")):
        with pytest.raises(DatasetError, match=message):
            filter_dataset(root, tmp_path / "refused", keep)
        assert not (tmp_path / "refused").exists()
    with pytest.raises(DatasetError, match="--out: found an existing folder"):
        filter_dataset(root, tmp_path / "ok", Filter())


# ---- rm -------------------------------------------------------------------------------------------
def test_rm_moves_files_keeps_slots_and_rewrites_the_index(real: dict[str, Path], tmp_path: Path) -> None:
    root = _copy(real["A"], tmp_path / "A")
    ds = Dataset.open(root)
    digests = _tree_digest(root / "episodes")
    next_slot, next_index = ds.next_slot(0), ds.next_index()
    plan = remove(root, [1, 2])
    assert plan.remove == (1, 2) and plan.already == ()
    assert [r.index for r in ds.episodes()] == [0]
    moved = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (root / ".removed").glob("*.h5")}
    assert moved == {k: v for k, v in digests.items() if k != "episode_000000.h5"}  # nothing deleted, bytes same
    report = validate(root)
    assert report.valid and [p.severity for p in report.problems] == ["info"]
    assert (ds.next_slot(0), ds.next_index()) == (next_slot, next_index)  # slots and indices never reused
    assert remove(root, [2]).already == (2,)  # a rerun succeeds
    with pytest.raises(DatasetError, match="episodes: found 7; allowed: 0 "):
        remove(root, [0, 7])
    again = record_short_dataset(root, episodes=1, ticks=4, seed=0)
    assert (again[0].index, again[0].slot) == (next_index, next_slot)


def test_an_interrupted_rm_is_valid_and_finished_by_the_next_writer(mixed: Path, tmp_path: Path) -> None:
    root = _copy(mixed, tmp_path / "W")
    ds = Dataset.open(root)
    # The state a kill between "index rewritten" and "files moved" leaves (removal.py, steps 3 and 4).
    begin_removal(root, [3, 4])
    write_index(ds.index_path, [r for r in ds.episodes() if r.index not in (3, 4)])
    report = validate(root)
    assert report.valid, report.problems
    assert sum("on its way to .removed/" in p.message for p in report.problems) == 2
    assert repair(root).actions[0].startswith("finished the interrupted removal of episodes 3-4")
    assert not journal_path(root).exists() and sorted(p.name for p in (root / ".removed").iterdir()) == \
        ["episode_000003.h5", "episode_000004.h5"]
    begin_removal(root, [5])
    with Dataset.open(root) as writer:
        writer.lock()  # any writer heals: the file goes to .removed/, it is not listed again
        assert 5 not in {r.index for r in writer.episodes()}
    assert (root / ".removed" / "episode_000005.h5").exists() and validate(root).valid


def test_cli_rm_asks_or_needs_yes(mixed: Path, tmp_path: Path) -> None:
    root = _copy(mixed, tmp_path / "W")
    proc = run_x2(["datasets", "rm", str(root), "3,5-7"], tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "found no terminal to ask at; allowed: --yes" in proc.stderr
    assert len(Dataset.open(root).episodes()) == len(MIXED)
    proc = run_x2(["datasets", "rm", str(root), "3,5-7", "--yes"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "removed episodes 3, 5-7" in proc.stdout and "nothing deleted" in proc.stdout
    assert [r.index for r in Dataset.open(root).episodes()] == [i for i in range(len(MIXED)) if i not in (3, 5, 6, 7)]


# ---- stats ----------------------------------------------------------------------------------------
def test_stats_equal_numpy_on_the_arrays(mixed: Path, tmp_path: Path) -> None:
    ds = Dataset.open(mixed)
    records = ds.episodes()
    stats = dataset_stats(ds, records)
    arrays: dict[str, list[np.ndarray]] = {k: [] for k in ("action", "qpos", "qvel", "ee_pose")}
    lengths: dict[str, list[int]] = {}
    for r in records:
        with Episode(mixed / r.file) as ep:
            arrays["action"].append(ep["action"])
            arrays["qpos"].append(ep["observations/qpos"])
            arrays["qvel"].append(ep["observations/qvel"])
            arrays["ee_pose"].append(ep["observations/ee_pose"].reshape(ep.frames, -1))
            labels, names = ep["labels/subtask_index"], ep.subtask_names
            for value in np.unique(labels):
                node = names[value] if value >= 0 else "unfinished"
                runs = np.diff(np.flatnonzero(np.diff(np.r_[False, labels == value, False])))[::2]
                lengths.setdefault(node, []).extend(runs.tolist())
    by_name = {f.feature: f for f in stats.features}
    assert set(by_name) == set(arrays)
    for feature, parts in arrays.items():
        x = np.concatenate(parts).astype(np.float64)
        f = by_name[feature]
        assert f.frames == x.shape[0] == sum(r.frames for r in records)
        np.testing.assert_allclose(f.mean, x.mean(axis=0), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(f.std, x.std(axis=0), rtol=1e-10, atol=1e-12)
        np.testing.assert_array_equal(f.min, x.min(axis=0))
        np.testing.assert_array_equal(f.max, x.max(axis=0))
    assert by_name["action"].names == tuple(MANIFEST["action_names"])
    assert by_name["ee_pose"].names[:8] == ("arm0.x", "arm0.y", "arm0.z", "arm0.qw", "arm0.qx", "arm0.qy",
                                            "arm0.qz", "arm1.x")
    assert [d.node for d in stats.durations][:3] == ["open_door", "pick_fruit", "place_fruit"]
    for d in stats.durations:
        values = np.asarray(lengths[d.node], np.float64)
        s = d.summary()
        assert sorted(d.frames) == sorted(lengths[d.node])
        assert (s["count"], s["max"]) == (values.size, values.max())
        assert s["mean"] == pytest.approx(values.mean())
        assert (s["p50"], s["p90"]) == pytest.approx((np.percentile(values, 50), np.percentile(values, 90)))


def test_cli_stats_writes_json_and_png(real: dict[str, Path], tmp_path: Path) -> None:
    proc = run_x2(["datasets", "stats", str(real["A"]), "--json", "s.json", "--plot", "d.png"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == f"dataset: {real['A']}"
    assert "left_gripper" in proc.stdout and "unfinished" in proc.stdout
    data = json.loads((tmp_path / "s.json").read_text())
    ds = Dataset.open(real["A"])
    expected = dataset_stats(ds, ds.episodes()).to_json()
    assert data == json.loads(json.dumps(expected))
    assert data["features"]["ee_pose"]["names"][0] == "left.x"  # arm names from the recorded world
    from matplotlib.image import imread

    image = imread(tmp_path / "d.png")
    assert image.ndim == 3 and image.shape[0] > 100
    assert not list(tmp_path.glob(".d.png.tmp-*"))


# ---- kill -9 --------------------------------------------------------------------------------------
def _run_and_kill(args: list[str], after_step: int, delay_s: float) -> int | None:
    """Run the victim; SIGKILL it `delay_s` after it reported step `after_step` (0: after "started").
    The return code, or None when it was killed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
    proc = subprocess.Popen([sys.executable, str(VICTIM), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("started") and after_step == 0 or line.startswith(f"step {after_step}/"):
            break
    if proc.poll() is None:
        time.sleep(delay_s)
        proc.send_signal(signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == -signal.SIGKILL:
        return None
    assert proc.returncode == 0, err[-2000:]
    return 0


@pytest.mark.timeout(240)
def test_kill9_mid_operation_leaves_source_intact_and_target_absent_or_complete(
        mixed: Path, real: dict[str, Path], tmp_path: Path) -> None:
    rng = np.random.default_rng(20260601)
    sources = [mixed, _write_mixed(tmp_path / "V", [("fruit_in_microwave", "synth")] * 6, seed_base=9000,
                                             content_base=100)]
    before = [_tree_digest(p) for p in sources]
    steps = {"merge": len(MIXED) + 6, "filter": sum(r.success for r in Dataset.open(mixed).episodes())}
    killed = 0
    for op in ("merge", "filter"):
        for trial in range(3):
            out = tmp_path / f"{op}{trial}"
            args = ["merge", str(out), *map(str, sources)] if op == "merge" else ["filter", str(mixed), str(out)]
            rc = _run_and_kill(args, int(rng.integers(0, steps[op])), float(rng.uniform(0, 0.02)))
            killed += rc is None
            assert [_tree_digest(p) for p in sources] == before, f"{op}: a source changed"
            if out.exists():  # complete, never half-made
                assert validate(out).valid and len(Dataset.open(out).episodes()) == steps[op]
                # Killed after the rename, before the hidden box was removed: only the empty box is left,
                # and the next build of the same target clears it.
                assert all(not any(box.iterdir()) for box in tmp_path.glob(f".{out.name}.building-*"))
                clear_dead_builds(out)
            else:  # absent: the rerun builds it (and clears what the kill left beside it)
                (merge(sources, out) if op == "merge" else filter_dataset(mixed, out, Filter(Selection(True))))
                assert validate(out).valid and len(Dataset.open(out).episodes()) == steps[op]
            assert not list(tmp_path.glob(f".{out.name}.building-*"))
    # rm and partition change a dataset in place: old or new state, valid, and the rerun finishes the job.
    # rm is a few milliseconds of work: kill it that soon after it started (before, at the journal, at the
    # index, between two moves or after, wherever the delay lands).
    for trial in range(4):
        root = _copy(mixed, tmp_path / f"rm{trial}")
        files = _tree_digest(root / "episodes")
        rc = _run_and_kill(["rm", str(root), "2,4-19"], 0, float(rng.uniform(0, 0.008)))
        killed += rc is None
        assert validate(root).valid, validate(root).problems
        listed = [r.index for r in Dataset.open(root).episodes()]
        assert listed in ([0, 1, 3], list(range(len(MIXED))))  # old or new, as far as readers see
        remove(root, [2, *range(4, 20)])
        assert [r.index for r in Dataset.open(root).episodes()] == [0, 1, 3]
        kept = {**_tree_digest(root / "episodes"), **_tree_digest(root / ".removed")}
        assert kept == files  # every finished file, byte for byte, in episodes/ or .removed/ (and nothing else)
        assert validate(root).valid
    root = _copy(mixed, tmp_path / "partition")
    assign_partition(root, 0.25, 0.0, 1)
    reference = (root / "partition.json").read_bytes()
    assign_partition(root, 0.5, 0.0, 2)
    old = (root / "partition.json").read_bytes()
    for _ in range(3):
        rc = _run_and_kill(["partition", str(root), "1"], int(rng.integers(0, len(MIXED) + 1)),
                           float(rng.uniform(0, 0.02)))
        killed += rc is None
        assert (root / "partition.json").read_bytes() in (old, reference)
        assert validate(root).valid
    assign_partition(root, 0.25, 0.0, 1)
    assert (root / "partition.json").read_bytes() == reference
    assert killed >= 3, f"only {killed} of 13 runs were killed before they exited"
