"""`x2 export lerobot --environment-state`: every frame's object poses as `observation.environment_state`,
read back through LeRobot 0.6.1's own LeRobotDataset.

Data: two short pick_place episodes recorded by the real loop (8 frames each; objects block and plate),
exported state-only to stay fast.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers.corrupt_episodes import EPISODE, restamp
from helpers.real_dataset import record_short_dataset
from typer.testing import CliRunner

from x2.base.errors import ExportError
from x2.cli.app import _mount
from x2.cli.app import app as x2_app
from x2.datasets import Dataset
from x2.datasets.select import Selection
from x2.export.lerobot import LeRobotExport, export_lerobot, read_x2_meta, reading_back
from x2.export.lerobot_check import compare
from x2.export.lerobot_plan import LeRobotOptions
from x2.export.request import ExportRequest

runner = CliRunner()
_mount()
ENV = "observation.environment_state"
FIELDS = ("x", "y", "z", "qw", "qx", "qy", "qz")


@pytest.fixture(autouse=True, scope="module")
def hf_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory):
    import datasets.config

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("hf-cache"))
        yield


@pytest.fixture(scope="module")
def picks(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("picks") / "pick"
    record_short_dataset(root, episodes=2, ticks=8, task="pick_place", seed=4)
    return Dataset.open(root)


def export(ds: Dataset, target: Path, environment_state: bool = True) -> LeRobotExport:
    request = ExportRequest(ds, tuple(Selection().apply(ds)), target, "all episodes", None, True)
    return export_lerobot(request, LeRobotOptions(repo_id="x2/test", environment_state=environment_state))


def load(root: Path):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset("x2/test", root=root, video_backend="pyav")


def test_object_poses_read_back_through_lerobot(picks: Dataset, tmp_path: Path) -> None:
    plan = export(picks, tmp_path / "out").plan
    objects = ["block", "plate"]
    assert plan.objects == tuple(objects)
    back = load(tmp_path / "out")
    feature = back.meta.features[ENV]
    assert feature["dtype"] == "float32" and tuple(feature["shape"]) == (14,)
    assert feature["names"] == [f"{o}.{f}" for o in objects for f in FIELDS]
    row = 0
    for index in (0, 1):
        with picks.load(index) as ep:
            poses = ep["observations/object_poses"]
            qpos = ep["observations/qpos"]
        assert poses.shape == (8, 2, 7)
        for t in range(8):
            item = back[row]
            row += 1
            np.testing.assert_array_equal(item[ENV].numpy(), poses[t].reshape(-1).astype(np.float32))
            np.testing.assert_array_equal(item["observation.state"].numpy(), qpos[t])
    stats = back.meta.stats[ENV]  # LeRobot's own statistics, what a policy's normaliser is fed
    assert np.asarray(stats["mean"]).shape == (14,)
    meta = read_x2_meta(tmp_path / "out")["environment_state"]
    assert meta == {"feature": ENV, "privileged": True, "objects": objects, "layout": "per object: x y z qw qx qy qz",
                    "frame": "world; quaternion w x y z",
                    "source": "/observations/object_poses (float64, stored as float32)"}


def test_near_constant_channels_get_a_floor_under_their_spread(picks: Dataset, tmp_path: Path) -> None:
    """The idle left arm and the resting plate's height and tilt are constant up to the physics' jitter: LeRobot's
    own std of them is ~1e-7 or less, which its normaliser (std + 1e-8) would blow up into noise. In the export
    every such channel has std 1e-3 and min/max 1e-3 either side of the middle; every other channel is LeRobot's."""
    export(picks, tmp_path / "out")
    back = load(tmp_path / "out")
    stats = back.meta.stats  # what lerobot-train builds its normaliser from
    frames = back.hf_dataset.with_format("numpy")
    raised = read_x2_meta(tmp_path / "out")["stats"]["raised"]
    assert {0, 6, 7} <= set(raised["observation.state"])  # the idle left arm's j1 and fingers
    assert {9, 11, 12} <= set(raised[ENV])  # the plate's z, qx, qy: resting on the table
    for feature in ("observation.state", ENV, "action"):
        channels = raised.get(feature, [])
        std, low = np.asarray(stats[feature]["std"]), np.asarray(frames[feature], np.float64).std(axis=0)
        assert channels == [int(i) for i in np.flatnonzero(low < 1e-3)], (feature, low)
        assert np.allclose(std[channels], 1e-3)
        spread = np.asarray(stats[feature]["max"]) - np.asarray(stats[feature]["min"])
        assert np.all(spread[channels] >= 2e-3 - 1e-9)
        others = [i for i in range(len(std)) if i not in channels]
        np.testing.assert_allclose(std[others], low[others], rtol=1e-3)  # (LeRobot aggregates per episode)
        assert np.all(low[others] >= 1e-3)


def test_without_the_flag_nothing_changes(picks: Dataset, tmp_path: Path) -> None:
    result = export(picks, tmp_path / "out", environment_state=False)
    assert result.plan.objects == () and all(e.environment_state is None for e in result.written)
    assert ENV not in load(tmp_path / "out").meta.features
    assert "environment_state" not in read_x2_meta(tmp_path / "out")


def test_the_check_catches_a_wrong_pose(picks: Dataset, tmp_path: Path) -> None:
    result = export(picks, tmp_path / "out")
    plan, written = result.plan, result.written
    with reading_back(plan, tmp_path / "out", "x2/test") as back:
        back = replace(back, per_episode=list(back.per_episode))
    compare(plan, written, [{}, {}], back, "out")
    assert back.per_episode[1].environment_state is not None
    back.per_episode[1].environment_state[5, 8] += 0.01
    with pytest.raises(ExportError, match=rf"episode 1 .* {ENV}: found values of sha256"):
        compare(plan, written, [{}, {}], back, "out")
    back.per_episode[1].environment_state = None
    with pytest.raises(ExportError, match=rf"episode 0 .* feature {ENV}: found missing"):
        back.per_episode[0].environment_state = None
        compare(plan, written, [{}, {}], back, "out")


def _damaged(picks: Dataset, tmp_path: Path, damage) -> Path:
    root = tmp_path / "damaged"
    shutil.copytree(picks.root, root)
    with h5py.File(root / EPISODE, "r+") as f:
        damage(f)
    restamp(root)
    return root


def _refused(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(x2_app, ["export", "lerobot", str(root), "--state-only", "--environment-state",
                                    "--out", "bad"])
    assert result.exit_code == 2, result.output
    assert result.output.count("error:") == 1 and "Traceback" not in result.output
    assert not (tmp_path / "bad").exists()
    return result.output


def test_refusals_are_one_line(picks: Dataset, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def rename(f: h5py.File) -> None:
        f["observations/object_poses"].attrs["names"] = np.array(["cube", "plate"], dtype=h5py.string_dtype())

    out = _refused(_damaged(picks, tmp_path, rename), tmp_path, monkeypatch)
    assert "episode_000001.h5: observations/object_poses: names: found ['block', 'plate']; allowed: ['cube', " \
           "'plate'], as in the first exported episode" in " ".join(out.split())
    shutil.rmtree(tmp_path / "damaged")

    def drop(f: h5py.File) -> None:
        del f["observations/object_poses"]

    out = _refused(_damaged(picks, tmp_path, drop), tmp_path, monkeypatch)
    assert "episode_000000.h5: observations/object_poses: found missing; allowed: episodes that record object " \
           "poses" in " ".join(out.split())


def test_the_floor_leaves_every_channel_above_it_alone() -> None:
    from x2.export.lerobot_stats import floor_spread

    stats = {"observation.state": {"mean": np.array([0.5, 1.0, 0.2]), "std": np.array([1e-9, 0.3, 2e-3]),
                                   "min": np.array([0.5, 0.0, 0.1]), "max": np.array([0.5, 2.0, 0.3]),
                                   "q01": np.array([0.5, 0.1, 0.2]), "q99": np.array([0.5, 1.9, 0.2])},
             "action": {"mean": np.array([0.0]), "std": np.array([0.0]), "min": np.array([0.0]),
                        "max": np.array([0.0])}}
    raised = floor_spread(stats, ["observation.state", "action", "absent"])
    assert raised == {"observation.state": [0], "action": [0]}
    state = stats["observation.state"]
    np.testing.assert_allclose(state["std"], [1e-3, 0.3, 2e-3])
    np.testing.assert_allclose(state["min"], [0.499, 0.0, 0.1])
    np.testing.assert_allclose(state["max"], [0.501, 2.0, 0.3])
    # q01 == q99 for the third channel (LeRobot averages per-episode quantiles): its std is above the floor, kept
    np.testing.assert_allclose(state["q01"], [0.499, 0.1, 0.2])
    np.testing.assert_allclose(state["q99"], [0.501, 1.9, 0.2])
    np.testing.assert_allclose(stats["action"]["std"], [1e-3])
