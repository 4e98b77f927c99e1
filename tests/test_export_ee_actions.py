"""`x2 export zarr|hdf5|lerobot --action ee_pose|ee_delta`: the exported action column is the episode's commanded
joint targets as end-effector actions (x2/recorded/ee_actions.py), named by the encoding, the provenance says so;
an unknown kind is one line, exit 2. `x2 export lerobot --ee-state`: observation.state gains the tool poses in the
base frame the actions are in."""

from __future__ import annotations

import json
from pathlib import Path

import h5py
import numpy as np
import pytest
import zarr
from helpers.x2_cli import run_x2

from x2 import format as fmt
from x2.datasets import Dataset
from x2.envspec.ee_action import EE_DELTA, EE_POSE, EELayout
from x2.recorded.ee_actions import base_frame_poses, episode_ee_actions, table_height
from x2.recorded.world import open_world
from x2.sim.mujoco.ee_adapter import EEAdapter

pytestmark = pytest.mark.timeout(300)


def expected(root: Path, kind: str) -> tuple[np.ndarray, tuple[str, ...]]:
    ds = Dataset.open(root)
    [record] = ds.episodes()
    with ds.load(record.index) as ep:
        converted = episode_ee_actions(ep, kind)
    return converted.values, converted.names


def test_zarr_and_hdf5_carry_end_effector_actions(synthesised_fruit: Path, tmp_path: Path) -> None:
    values, names = expected(synthesised_fruit, EE_DELTA)
    done = run_x2(["export", "zarr", str(synthesised_fruit), "--state-only", "--action", "ee_delta", "--out",
                   str(tmp_path / "fruit.zarr")], tmp_path)
    assert done.returncode == 0, done.stderr
    store = zarr.open(str(tmp_path / "fruit.zarr"), mode="r")
    assert np.array_equal(store["data/action"][:], values)
    assert list(store["data/action"].attrs["names"]) == list(names) and names[:2] == ("left_dx", "left_dy")
    assert store.attrs["x2_provenance"]["action"].startswith("ee_delta: per frame, the tool centre point pose")
    done = run_x2(["export", "hdf5", str(synthesised_fruit), "--state-only", "--action", "ee_pose", "--out",
                   str(tmp_path / "fruit.hdf5")], tmp_path)
    assert done.returncode == 0, done.stderr
    pose, _ = expected(synthesised_fruit, EE_POSE)
    with h5py.File(tmp_path / "fruit.hdf5", "r") as f:
        [demo] = f["data"].values()
        assert np.array_equal(demo["actions"][:], pose)
        assert np.array_equal(demo["obs/datagen_info/gripper_action/right"][:, 0], pose[:, 15])
    done = run_x2(["export", "zarr", str(synthesised_fruit), "--action", "twist"], tmp_path)
    assert done.returncode == 2 and "--action: found 'twist'; allowed: joint, ee_pose, ee_delta" in done.stderr
    assert "Traceback" not in done.stderr


def test_lerobot_carries_end_effector_actions_and_tool_poses_in_its_state(synthesised_fruit: Path,
                                                                          tmp_path: Path) -> None:
    values, names = expected(synthesised_fruit, EE_POSE)
    done = run_x2(["export", "lerobot", str(synthesised_fruit), "--state-only", "--action", "ee_pose", "--ee-state",
                   "--out", str(tmp_path / "fruit-lerobot")], tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr
    info = json.loads((tmp_path / "fruit-lerobot" / "meta" / "info.json").read_text())
    assert info["features"]["action"]["names"] == list(names) and info["features"]["action"]["shape"] == [16]
    import pyarrow.parquet as pq

    [table] = [pq.read_table(p) for p in sorted((tmp_path / "fruit-lerobot" / "data").rglob("*.parquet"))]
    assert np.array_equal(np.stack(table.column("action").to_numpy(zero_copy_only=False)), values)
    state = np.stack(table.column("observation.state").to_numpy(zero_copy_only=False))
    names = info["features"]["observation.state"]["names"]
    assert names[-14:-7] == ["left.x", "left.y", "left.z", "left.qw", "left.qx", "left.qy", "left.qz"]
    ds = Dataset.open(synthesised_fruit)
    [record] = ds.episodes()
    with ds.load(record.index) as ep:
        tcp = base_frame_poses(ep)
        qpos = np.asarray(ep[fmt.QPOS])
        # the base frame the state is in is the adapter's: its forward kinematics of the measured joints agree
        with open_world(ep) as world:
            adapter = EEAdapter(world.backend, EELayout(EE_POSE, ("left", "right")))
            world.backend.set_state(np.asarray(ep[fmt.STATES][0]))
            adapter.reset(table_height(ep))
            pos, _ = adapter.measured()
    assert np.array_equal(state, np.concatenate([qpos, tcp.reshape(len(tcp), -1)], axis=1).astype(np.float32))
    assert np.allclose(tcp[0, :, :3], pos, atol=1e-6)
