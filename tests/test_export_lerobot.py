"""`x2 export lerobot`: written by LeRobot 0.6.1's own writer, checked with its own reader.

Data: one real synthesised fruit_in_microwave episode (real subtask segments, both arms at work at once,
about 600 frames; exported state-only to stay fast) plus short scripted episodes recorded by the real loop
(labels "unfinished"; exported with 96x128 images).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from conftest import copy_dataset
from helpers.corrupt_episodes import strip_arm_labels
from helpers.real_dataset import record_short_dataset
from helpers.stored_images import rendered_frames, store_images
from helpers.write_episodes import MANIFEST, write_one
from helpers.x2_cli import HEADLESS_ENV, run_x2
from typer.testing import CliRunner

from x2.base.errors import ExportError
from x2.cli.app import _mount
from x2.cli.app import app as x2_app
from x2.datasets import Dataset, remember_dataset
from x2.datasets.partition import write_partition
from x2.datasets.select import Selection
from x2.export.lerobot import export_lerobot, read_x2_meta, reading_back
from x2.export.lerobot_check import PIXEL_TOLERANCE, Readback, compare, mean_abs_diff
from x2.export.lerobot_plan import LeRobotOptions
from x2.export.request import ExportRequest
from x2.recorded.frames import DEFAULT_CAMERAS, DEFAULT_SIZE
from x2.sim.camera import ImageSize

SMALL = ImageSize(96, 128)
runner = CliRunner()
_mount()  # the root command, as `x2` builds it


def load(root: Path, repo_id: str = "x2/test"):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset(repo_id, root=root, video_backend="pyav", return_uint8=True)


def active_subtask(item: dict) -> str:
    from lerobot.datasets import language_render

    row = language_render.active_at(float(item["timestamp"]), persistent=item["language_persistent"],
                                    style="subtask")
    return row["content"]


def export(ds: Dataset, target: Path, episodes: tuple[int, ...], cameras: list[str] | None = None,
           size: ImageSize | None = None, state_only: bool = False):
    records = Selection(episodes=episodes).apply(ds)
    request = ExportRequest(ds, tuple(records), target, f"episodes {episodes}",
                            None if cameras is None else tuple(cameras), state_only)
    result = export_lerobot(request, LeRobotOptions(size=size, repo_id="x2/test"))
    return result.plan, result


def read_back(plan, target: Path) -> Readback:
    """Everything LeRobot reads back, every episode's at once (a small export)."""
    with reading_back(plan, target, "x2/test") as back:
        return replace(back, per_episode=list(back.per_episode))


@pytest.fixture(autouse=True, scope="module")
def hf_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory):
    """The tests' own LeRobotDataset loads copy tables into HF's arrow cache: keep it out of ~/.cache."""
    import datasets.config

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("hf-cache"))
        yield


@pytest.fixture(scope="session")
def mixed(tmp_path_factory: pytest.TempPathFactory, synthesised_fruit: Path) -> Dataset:
    """Episode 0: a real synthesised demo (5 subtasks, success); 1 and 2: 12-frame scripted episodes."""
    root = copy_dataset(synthesised_fruit, tmp_path_factory.mktemp("mixed") / "fruit")
    record_short_dataset(root, episodes=2, ticks=12)
    write_partition(root, {1: "val"})
    return Dataset.open(root)


@pytest.fixture(scope="session")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    """Two 8-frame episodes whose head stream is stored (inverted, so re-rendering would show)."""
    root = tmp_path_factory.mktemp("stored") / "booth"
    record_short_dataset(root, episodes=2, ticks=8, seed=3)
    store_images(root, ["head"], SMALL, invert=True)
    return Dataset.open(root)


# ---- the round trip through LeRobot's own reader ----------------------------------------------------
def test_round_trip_with_rendered_images(mixed: Dataset, tmp_path: Path) -> None:
    target = tmp_path / "out"
    policy = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
    plan, result = export(mixed, target, (1, 2), cameras=["head", "front"], size=SMALL)
    # encoding the videos (SVT-AV1) leaves the exporting process's scheduling as it was, not SCHED_FIFO 99
    assert (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority) == policy
    assert result.target == target and result.episodes == 2 and result.frames == 24
    back = load(target)
    assert back.num_episodes == 2 and back.num_frames == 24 and back.fps == 30
    assert back.features["observation.state"]["names"] == list(mixed.manifest.joint_names)
    assert back.features["action"]["names"] == list(mixed.manifest.action_names)
    assert tuple(back.features["observation.images.head"]["shape"]) == (96, 128, 3)
    unfinished = plan.codes.names.index("unfinished")
    row = 0
    for i, source in enumerate((1, 2)):
        with mixed.load(source) as ep:
            pictures = rendered_frames(ep, ["head", "front"], SMALL)
            for t in range(ep.frames):
                item = back[row]
                row += 1
                assert (int(item["episode_index"]), int(item["frame_index"])) == (i, t)
                assert float(item["timestamp"]) == pytest.approx(t / 30, abs=1e-6)
                assert item["task"] == ep.attrs["instruction"]
                assert active_subtask(item) == "unfinished"
                assert int(item["subtask_index"]) == unfinished
                np.testing.assert_array_equal(item["observation.state"].numpy(), ep["observations/qpos"][t])
                np.testing.assert_array_equal(item["action"].numpy(), ep["action"][t])
                for cam in ("head", "front"):
                    decoded = item[f"observation.images.{cam}"].permute(1, 2, 0).numpy()
                    assert mean_abs_diff(decoded, pictures[cam][t]) < PIXEL_TOLERANCE, (i, t, cam)
    meta = read_x2_meta(target)
    assert [e["index"] for e in meta["episodes"]] == [1, 2]
    assert [e["seed"] for e in meta["episodes"]] == [r.seed for r in mixed.episodes()[1:3]]
    assert meta["images"]["cameras"] == ["head", "front"] and meta["images"]["size"] == [96, 128]
    assert [(meta["camera_lenses"][c]["height"], meta["camera_lenses"][c]["width"]) for c in ("head", "front")] \
        == [(96, 128)] * 2  # each camera's K, at the exported size (x2/recorded/camera_lenses.py)
    assert meta["subtask_index"]["names"] == [*mixed.manifest.dag["nodes"], "done", "unfinished"]
    assert meta["subtask_index"]["x2_to_export"]["-1"] == unfinished
    assert meta["dataset"]["name"] == "fruit" and meta["sim_versions"]["mujoco"]
    info = json.loads((target / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["features"]["language_persistent"]["dtype"] == "language"
    videos = sorted((target / "videos").rglob("*.mp4"))
    assert len(videos) == 2 and all(v.stat().st_mode & 0o777 == 0o644 for v in videos)
    assert not [p.name for p in target.parent.iterdir() if p.name.startswith(".")]  # no partial left


def test_real_subtasks_state_only(mixed: Dataset, tmp_path: Path) -> None:
    """Concurrent synthesis: each frame's subtask text names both arms' subtasks, and subtask_index.<arm>
    is the episode's per-arm column, as LeRobotDataset reads them."""
    target = tmp_path / "out"
    plan, _ = export(mixed, target, (0,), state_only=True)
    with mixed.load(0) as ep:
        labels = ep["labels/subtask_index"]
        table, arms = ep.arm_subtask_index, ep.arm_names
        active = ep["labels/active_mask"]
        instruction = ep.attrs["instruction"]
    assert table is not None and arms == ["left", "right"]
    names = [*mixed.manifest.dag["nodes"], "done", "unfinished"]
    per_arm = [[names[v] for v in column] for column in table.T]  # x2's -1 indexes "unfinished" here too
    expected = [a if a == b else f"{a} + {b}" for a, b in zip(*per_arm, strict=True)]
    both = active[:, names.index("open_door")] & active[:, names.index("pick_fruit")]
    assert both.sum() > 50 and {expected[t] for t in np.flatnonzero(both)} == {"open_door + pick_fruit"}
    back = load(target)
    assert back.num_episodes == 1 and back.num_frames == len(labels)
    assert not any(k.startswith("observation.images") for k in back.features) and not (target / "videos").exists()
    for arm in arms:
        assert back.features[f"subtask_index.{arm}"]["dtype"] == "int64"
    columns = back.select_columns(["timestamp", "subtask_index", "subtask_index.left", "subtask_index.right",
                                   "language_persistent", "task_index"]).with_format(None)[:]
    rows = columns["language_persistent"][0]
    runs = [t for t in range(len(expected)) if t == 0 or expected[t] != expected[t - 1]]
    assert [r["content"] for r in rows] == [expected[t] for t in runs]
    assert [round(r["timestamp"] * 30) for r in rows] == runs
    unfinished = names.index("unfinished")
    for t in range(len(labels)):
        item = {"timestamp": columns["timestamp"][t], "language_persistent": columns["language_persistent"][t]}
        assert active_subtask(item) == expected[t], t
        assert columns["subtask_index"][t] == labels[t]
        for a, arm in enumerate(arms):
            code = int(table[t, a])
            assert columns[f"subtask_index.{arm}"][t] == (unfinished if code == -1 else code), (t, arm)
    assert back[len(labels) - 1]["task"] == instruction
    meta = read_x2_meta(target)
    assert meta["images"] == {"cameras": [], "size": None, "choice": "state only"}
    assert meta["arm_subtask_index"]["features"] == {"left": "subtask_index.left", "right": "subtask_index.right"}
    assert plan.images.reason == "state only" and plan.arms == ("left", "right")


def test_an_episode_without_per_arm_labels_exports_as_before(synthesised_fruit: Path, tmp_path: Path) -> None:
    """Recorded before x2 kept per-arm labels: one subtask_index, the segments' names, no per-arm feature."""
    ds = Dataset.open(strip_arm_labels(copy_dataset(synthesised_fruit, tmp_path / "old")))
    target = tmp_path / "out"
    plan, _ = export(ds, target, (0,), state_only=True)
    with ds.load(0) as ep:
        labels = ep["labels/subtask_index"]
        segments = ep.segments
    assert len(segments) >= 3 and plan.arms == ()
    back = load(target)
    assert not any(k.startswith("subtask_index.") for k in back.features)
    columns = back.select_columns(["timestamp", "subtask_index", "language_persistent"]).with_format(None)[:]
    names = list(ds.manifest.dag["nodes"])
    rows = columns["language_persistent"][0]
    assert [r["content"] for r in rows] == [s.node for s in segments]
    assert [round(r["timestamp"] * 30) for r in rows] == [s.start for s in segments]
    for t in range(len(labels)):
        item = {"timestamp": columns["timestamp"][t], "language_persistent": columns["language_persistent"][t]}
        assert active_subtask(item) == names[labels[t]], t
    assert "arm_subtask_index" not in read_x2_meta(target)
    # A synthesis resumed after an upgrade: a newer episode after the old one. One export has one set of
    # features, so the old episode gets the per-arm columns of its format rule: every node on every arm.
    record_short_dataset(ds.root, episodes=1, ticks=8)
    plan, _ = export(Dataset.open(ds.root), tmp_path / "mixed", (0, 1), state_only=True)
    assert plan.arms == ("left", "right")
    both = load(tmp_path / "mixed").select_columns(
        ["episode_index", "subtask_index", "subtask_index.left", "subtask_index.right"]).with_format(None)[:]
    old = [t for t, e in enumerate(both["episode_index"]) if e == 0]
    assert len(old) == len(labels)
    for t in old:
        assert both["subtask_index.left"][t] == both["subtask_index.right"][t] == both["subtask_index"][t], t


def test_stored_streams_are_read_not_rendered(stored: Dataset, tmp_path: Path) -> None:
    target = tmp_path / "out"
    plan, _ = export(stored, target, (0, 1))
    # No --cameras / --size: what x2 render stored, at its stored size (not the render defaults again).
    assert plan.images.cameras == ("head",) and plan.images.size == SMALL
    assert "stored in the episodes" in plan.images.reason
    back = load(target)
    row = 0
    for index in (0, 1):
        with stored.load(index) as ep:
            kept = ep["observations/images/head"]
            fresh = rendered_frames(ep, ["head"], SMALL)["head"]
            for t in range(ep.frames):
                decoded = back[row]["observation.images.head"].permute(1, 2, 0).numpy()
                row += 1
                assert mean_abs_diff(decoded, kept[t]) < PIXEL_TOLERANCE
                assert mean_abs_diff(decoded, fresh[t]) > 40  # the inverted stored stream, not a render


def test_the_check_catches_what_differs(stored: Dataset, tmp_path: Path) -> None:
    target = tmp_path / "out"
    plan, result = export(stored, target, (0, 1), cameras=["head"], size=SMALL)
    written = result.written
    with stored.load(0) as a, stored.load(1) as b:
        edges = [{"head": (ep["observations/images/head"][0], ep["observations/images/head"][-1])} for ep in (a, b)]
    back = read_back(plan, target)
    compare(plan, written, edges, back, str(target))  # as exported: no difference
    back.per_episode[1].subtask[5] = "open_door"
    with pytest.raises(ExportError, match=r"episode 1 \(x2 episode 1\) frame 5 subtask .*'open_door'.*'unfinished'"):
        compare(plan, written, edges, back, str(target))
    back = read_back(plan, target)
    first, last = back.per_episode[0].edges["head"]
    back.per_episode[0].edges["head"] = (first, np.clip(last.astype(int) + 40, 0, 255).astype(np.uint8))
    with pytest.raises(ExportError, match=r"episode 0 .* last head frame: found \d+\.\d levels"):
        compare(plan, written, edges, back, str(target))
    back = read_back(plan, target)
    back.per_episode[1].state[4, 2] += 0.5
    with pytest.raises(ExportError, match=r"episode 1 .* observation.state: found values of sha256 \w+\.\.\.; allowed: "
                                          r"the file's, sha256 \w+\.\.\. \(as float32\)"):
        compare(plan, written, edges, back, str(target))
    back = read_back(plan, target)
    back.per_episode[1].arm_subtask_index["subtask_index.right"][6] += 1
    with pytest.raises(ExportError, match=r"episode 1 .* frame 6 subtask_index.right: found"):
        compare(plan, written, edges, back, str(target))
    back = read_back(plan, target)
    back.per_episode[0].task[3] = "something else"
    with pytest.raises(ExportError, match="frame 3 task: found 'something else'"):
        compare(plan, written, edges, back, str(target))


def test_lerobot_trains_on_it(stored: Dataset, tmp_path: Path) -> None:
    """Two optimiser steps of LeRobot's ACT on the export, batches from LeRobot's loader and collate."""
    import torch
    from lerobot.configs.types import FeatureType
    from lerobot.datasets.lerobot_dataset import LeRobotDataset
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.policies.act.modeling_act import ACTPolicy
    from lerobot.policies.factory import make_pre_post_processors
    from lerobot.utils.collate import lerobot_collate_fn
    from lerobot.utils.feature_utils import dataset_to_policy_features

    target = tmp_path / "out"
    export(stored, target, (0, 1), cameras=["head"], size=SMALL)
    data = LeRobotDataset("x2/test", root=target, video_backend="pyav",
                          delta_timestamps={"action": [i / 30 for i in range(4)]})
    features = dataset_to_policy_features(data.meta.features)
    outputs = {k: f for k, f in features.items() if f.type is FeatureType.ACTION}
    inputs = {k: f for k, f in features.items() if k not in outputs}
    assert set(inputs) == {"observation.state", "observation.images.head"}
    config = ACTConfig(input_features=inputs, output_features=outputs, pretrained_backbone_weights=None,
                       chunk_size=4, n_action_steps=4, device="cpu", dim_model=32, dim_feedforward=64,
                       n_encoder_layers=1, n_decoder_layers=1, n_heads=2)
    torch.manual_seed(0)
    policy = ACTPolicy(config)
    preprocess, _ = make_pre_post_processors(config, dataset_stats=data.meta.stats)
    assert data.meta.has_language_columns  # so LeRobot's trainer collates with lerobot_collate_fn
    loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True, collate_fn=lerobot_collate_fn)
    optimiser = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    for _, batch in zip(range(2), loader, strict=False):
        loss, _ = policy.forward(preprocess(batch))
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()
        assert torch.isfinite(loss)


def test_same_input_same_bytes(stored: Dataset, tmp_path: Path) -> None:
    for name in ("a", "b"):
        export(stored, tmp_path / name, (0, 1), cameras=["head"], size=SMALL)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    for rel in files:
        a, b = (tmp_path / "a" / rel).read_bytes(), (tmp_path / "b" / rel).read_bytes()
        if rel.name == "x2.json":
            a_meta, b_meta = json.loads(a), json.loads(b)
            a_meta.pop("exported_utc"), b_meta.pop("exported_utc")
            assert a_meta == b_meta
        else:
            assert a == b, rel


# ---- the command ------------------------------------------------------------------------------------
@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace whose last used dataset is data/booth (two 8-frame real episodes)."""
    record_short_dataset(tmp_path / "data" / "booth", episodes=2, ticks=8, seed=5)
    remember_dataset(tmp_path / "data" / "booth", root=tmp_path)
    return tmp_path


def test_no_arguments_exports_the_current_dataset(workspace: Path) -> None:
    run = run_x2(["export", "lerobot"], workspace, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    target = workspace / "exports" / "booth-lerobot"
    assert lines[0] == "dataset: data/booth (last used)"
    assert str(target) in lines[-2] and "2 episodes, 16 frames" in lines[-2]
    assert "Traceback" not in run.stderr and "Svt[" not in run.stderr, run.stderr
    back = load(target, "x2/booth")
    cameras, size = DEFAULT_CAMERAS, DEFAULT_SIZE  # nothing stored: the render pass's defaults
    assert back.num_episodes == 2 and back.num_frames == 16
    assert sorted(back.meta.video_keys) == sorted(f"observation.images.{c}" for c in cameras)
    assert back[15][f"observation.images.{cameras[0]}"].shape[1:] == (size.height, size.width)
    assert read_x2_meta(target)["format"]["repo_id"] == "x2/booth"


def invoke(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(cwd)
    return runner.invoke(x2_app, ["export", "lerobot", *args])


def test_filters_choose_the_episodes(mixed: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = {"success": (["--success-only"], [0]), "scripted": (["--source", "scripted", "--episodes", "0-1"], [1]),
             "val": (["--part", "val"], [1]), "train": (["--part", "train", "--episodes", "1-2"], [2])}
    for name, (flags, expected) in cases.items():
        result = invoke([str(mixed.root), "--state-only", "--out", name, *flags], tmp_path, monkeypatch)
        assert result.exit_code == 0, result.output
        assert [e["index"] for e in read_x2_meta(tmp_path / name)["episodes"]] == expected, name
        assert load(tmp_path / name).num_episodes == len(expected)
    none = invoke([str(mixed.root), "--state-only", "--out", "none", "--success-only", "--source", "scripted"],
                  tmp_path, monkeypatch)
    assert none.exit_code == 2 and len(none.output.strip().splitlines()) == 2  # dataset line + one error
    assert "episodes: found none matching (successful, source scripted)" in none.output
    assert not (tmp_path / "none").exists()


def test_existing_target_refused_then_replaced(mixed: Dataset, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    first = invoke([str(mixed.root), "--state-only", "--out", "out", "--episodes", "1"], tmp_path, monkeypatch)
    assert first.exit_code == 0, first.output
    before = (tmp_path / "out" / "meta" / "x2.json").read_bytes()
    again = invoke([str(mixed.root), "--state-only", "--out", "out", "--episodes", "2"], tmp_path, monkeypatch)
    assert again.exit_code == 2
    assert "out: target: found an existing folder; allowed: a new path, or --overwrite" in again.output
    assert (tmp_path / "out" / "meta" / "x2.json").read_bytes() == before
    replaced = invoke([str(mixed.root), "--state-only", "--out", "out", "--episodes", "2", "--overwrite"], tmp_path,
                      monkeypatch)
    assert replaced.exit_code == 0, replaced.output
    assert [e["index"] for e in read_x2_meta(tmp_path / "out")["episodes"]] == [2]
    assert load(tmp_path / "out").num_frames == 12
    assert sorted(p.name for p in tmp_path.iterdir()) == [".x2", "out"]  # nothing set aside or half-built


def test_bad_input_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mixed: Dataset) -> None:
    # Ticks that are not frame_index / fps (this dataset stamps frame t at (t + 1) / 30).
    with Dataset.create(tmp_path / "late", MANIFEST) as ds:
        write_one(ds)
    late = invoke(["late", "--state-only"], tmp_path, monkeypatch)
    assert late.exit_code == 2 and late.output.count("error:") == 1
    assert "episode_000000.h5: timestamps: found frame 0 at 0.033333 s; allowed: frame_index / fps" in late.output
    with Dataset.create(tmp_path / "ntsc", {**MANIFEST, "fps": 29.97}) as ds:
        write_one(ds)
    ntsc = invoke(["ntsc", "--state-only"], tmp_path, monkeypatch)
    assert ntsc.exit_code == 2 and "manifest.json: fps: found 29.97; allowed: a whole number" in ntsc.output
    for flags, text in ((["--size", "97x128"], "--size: found 97x128; allowed: an even height and width"),
                        (["--size", "big"], "--size: found 'big'; allowed: HxW"),
                        (["--cameras", "head", "--state-only"], "--cameras: found head with --state-only"),
                        (["--cameras", "nose", "--episodes", "1"], "cameras: found ['nose']; allowed: the model's"),
                        (["--repo-id", "plain", "--state-only"], "--repo-id: found 'plain'; allowed: owner/name"),
                        (["--episodes", "7"], "--episodes: found 7; allowed: 0-2")):
        result = invoke([str(mixed.root), "--out", "bad", *flags], tmp_path, monkeypatch)
        assert result.exit_code == 2, (flags, result.output)
        assert result.output.count("error:") == 1 and text in result.output, (flags, result.output)
        assert "Traceback" not in result.output
        assert not (tmp_path / "bad").exists() and not list(tmp_path.glob(".bad*"))


def test_help_has_an_example() -> None:
    result = runner.invoke(x2_app, ["export", "lerobot", "--help"])
    assert result.exit_code == 0 and "Example" in result.output and "x2 export lerobot" in result.output


def test_importing_x2_imports_no_torch() -> None:
    code = ("import sys, x2.cli.app, x2.cli.export_lerobot, x2.export.lerobot; x2.cli.app._mount(); "
            "print(sorted(m for m in ('torch', 'lerobot', 'datasets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=HEADLESS_ENV, check=True)
    assert out.stdout.strip() == "[]"


# ---- kill -9 ------------------------------------------------------------------------------------------
def _complete(target: Path) -> bool:
    back = load(target, "x2/booth")
    return back.num_episodes == 2 and back.num_frames == 16 and (target / "meta" / "x2.json").is_file()


def test_kill_9_leaves_no_half_written_export(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`x2 export lerobot` as typed, killed at a random moment after it started writing, then run again as
    typed. One victim: a run costs ~9 s of imports before it writes, and more victims would only be killed at
    more moments of the same writing."""
    delay = random.Random(20261201).uniform(0.0, 1.5)
    proc = subprocess.Popen([sys.executable, "-m", "x2", "export", "lerobot"], cwd=workspace, env=HEADLESS_ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    partial = workspace / "exports" / f".booth-lerobot.partial-{proc.pid}"
    kill_at: float | None = None
    deadline = time.monotonic() + 280
    while proc.poll() is None and time.monotonic() < deadline:
        if kill_at is None and partial.exists():
            kill_at = time.monotonic() + delay  # it is writing: kill somewhere inside the export
        if kill_at is not None and time.monotonic() >= kill_at:
            os.kill(proc.pid, signal.SIGKILL)
            break
        time.sleep(0.005)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    assert kill_at is not None, f"exited {proc.returncode} before it was seen writing"
    target = workspace / "exports" / "booth-lerobot"
    assert not target.exists() or _complete(target)
    if target.exists():  # it finished before its moment: then it must be whole, and we start over
        shutil.rmtree(target)
    again = invoke([], workspace, monkeypatch)  # the next run, as typed
    assert again.exit_code == 0, again.output
    assert _complete(target)
    assert sorted(p.name for p in (workspace / "exports").iterdir()) == ["booth-lerobot"]  # partials cleared


def test_subtask_text_names_the_working_arms() -> None:
    from x2.export.lerobot_language import subtask_texts

    left = ["open_door", "close_door", "done", "done", "unfinished"]
    right = ["pick_fruit", "close_door", "retract", "done", "done"]
    assert subtask_texts([left, right]) == ("open_door + pick_fruit", "close_door", "retract", "done", "unfinished")
    # a one-arm task on a two-arm robot: the idle arm has no node (done throughout) and is never named
    assert subtask_texts([["done"] * 3, ["pick", "place", "done"]]) == ("pick", "place", "done")
