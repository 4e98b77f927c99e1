"""`x2 export lerobot --environment-state`: every frame's object poses as `observation.environment_state`,
read back through LeRobot 0.6.1's own LeRobotDataset.

Data: two short pick_place episodes recorded by the real loop (8 frames each; objects block and plate),
exported state-only to stay fast.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers.corrupt_episodes import EPISODE, restamp
from helpers.real_dataset import record_short_dataset
from typer.testing import CliRunner

from x2.cli.app import _mount
from x2.cli.app import app as x2_app
from x2.datasets import Dataset
from x2.datasets.select import Selection
from x2.errors import ExportError
from x2.export.lerobot import export_lerobot, read_back, read_x2_meta
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


def export(ds: Dataset, target: Path, environment_state: bool = True):
    request = ExportRequest(ds, tuple(Selection().apply(ds)), target, "all episodes", None, True)
    return export_lerobot(request, LeRobotOptions(repo_id="x2/test", environment_state=environment_state)).plan


def load(root: Path):
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset("x2/test", root=root, video_backend="pyav")


def test_object_poses_read_back_through_lerobot(picks: Dataset, tmp_path: Path) -> None:
    plan = export(picks, tmp_path / "out")
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


def test_without_the_flag_nothing_changes(picks: Dataset, tmp_path: Path) -> None:
    plan = export(picks, tmp_path / "out", environment_state=False)
    assert plan.objects == () and all(e.environment_state is None for e in plan.episodes)
    assert ENV not in load(tmp_path / "out").meta.features
    assert "environment_state" not in read_x2_meta(tmp_path / "out")


def test_the_check_catches_a_wrong_pose(picks: Dataset, tmp_path: Path) -> None:
    plan = export(picks, tmp_path / "out")
    back = read_back(plan, tmp_path / "out", "x2/test")
    compare(plan, [{}, {}], back, "out")
    assert back.per_episode[1].environment_state is not None
    back.per_episode[1].environment_state[5, 8] += 0.01
    with pytest.raises(ExportError, match=rf"episode 1 .* frame 5 {ENV}: found"):
        compare(plan, [{}, {}], back, "out")
    back.per_episode[1].environment_state = None
    with pytest.raises(ExportError, match=rf"episode 0 .* feature {ENV}: found missing"):
        back.per_episode[0].environment_state = None
        compare(plan, [{}, {}], back, "out")


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
