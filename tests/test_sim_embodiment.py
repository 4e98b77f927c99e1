"""The table's height as an embodiment axis: drawn per reset within the robot's declared table_height_jitter by
moving the robot's mount, reproducibly by seed and without changing the other draws; recorded with the episode,
rebuilt and relabelled offline from the recorded world, counted by `x2 datasets info` and shown by
`x2 tasks preview --axis embodiment`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
from helpers.real_dataset import record_short_dataset
from typer.testing import CliRunner

from x2 import format as fmt
from x2.cli.app import _mount, app
from x2.datasets import Dataset
from x2.datasets.coverage import coverage
from x2.envspec import load_env
from x2.envspec.record import env_from_record, env_record
from x2.recorded.relabel import relabel
from x2.recorded.replay import replay_actions
from x2.recorded.world import open_world
from x2.render.task_preview import task_preview
from x2.sim.camera import ImageSize
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.kinematics import ArmDLS
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun

_mount()
runner = CliRunner()

JITTER = 0.02  # artixon-g.yaml's table_height_jitter


def test_the_table_height_moves_the_robots_mount_and_nothing_else() -> None:
    env = load_env("pick_place", variant="randomized")
    assert env.embodiment == ("camera", "table_height") and env.robot.table_height_jitter == JITTER
    cameras_only = dataclasses.replace(env, embodiment=("camera",))
    backend, cams, plain = MujocoBackend(env), MujocoBackend(cameras_only), MujocoBackend(load_env("pick_place"))
    heights = []
    for seed in range(4):
        info = backend.reset(seed)
        xml = backend.model_xml()
        assert backend.reset(seed) == info and backend.model_xml() == xml  # same seed, same draw, same world text
        assert info.embodiment is not None
        height = info.embodiment["table_height"]
        assert isinstance(height, float) and 0 < abs(height) <= JITTER and height == round(height, 5)
        heights.append(height)
        # listing the axis leaves every other draw as it was: the cameras', the look's, the layout's
        other, nominal = cams.reset(seed), plain.reset(seed)
        assert other.embodiment == {"cameras": info.embodiment["cameras"]}
        assert info.appearance == other.appearance and info.layout == nominal.layout
        # the text carries the draw exactly: the mount (the torso, at the origin) lowered by it
        assert f'<body name="torso" childclass="artixon" pos="0 0 {-height:g}">' in xml
        # the whole robot moved down by it, cameras included...
        down = np.array([0.0, 0.0, -height])
        for arm in ("left", "right"):
            np.testing.assert_allclose(backend.arm_root_pos(arm) - plain.arm_root_pos(arm), down, atol=1e-12)
        np.testing.assert_allclose(backend.robot_state().ee_pose[:, :3] - plain.robot_state().ee_pose[:, :3],
                                   [down, down], atol=1e-12)
        np.testing.assert_allclose(backend.data.cam("head").xpos - cams.data.cam("head").xpos, down, atol=1e-12)
        # ...while the table, the objects on it and the world's heights stayed
        assert backend.table_height == plain.table_height == env.booth.table_height
        np.testing.assert_array_equal(backend.data.geom("table_top").xpos, plain.data.geom("table_top").xpos)
        for obj in ("block", "plate"):
            np.testing.assert_array_equal(backend.object_pos(obj), plain.object_pos(obj))
        # IK reads the compiled model: the arm reaches a world point with other angles than in the nominal world
        arm = env.robot.arm("right")
        ik, nominal_ik = ArmDLS.for_arm(backend.model, arm), ArmDLS.for_arm(plain.model, arm)
        pos, rot = nominal_ik.fk(np.array(arm.home))
        np.testing.assert_allclose(ik.fk(np.array(arm.home))[0], pos - [0.0, 0.0, height], atol=1e-12)
        q = ik.solve(pos, rot, np.array(arm.home))
        assert q is not None and np.abs(q - np.array(arm.home)).max() > 1e-3
        np.testing.assert_allclose(ik.fk(q)[0], pos, atol=1e-3)
    assert min(heights) < 0 < max(heights)
    for b in (backend, cams, plain):
        b.close()


def test_the_range_is_recorded_only_where_the_scene_draws_it() -> None:
    env = load_env("pick_place", variant="randomized")
    record = env_record(env)
    assert record["robot"]["table_height_jitter"] == JITTER  # type: ignore[index]
    assert env_from_record(record).robot.table_height_jitter == JITTER
    for plain in (load_env("pick_place"), dataclasses.replace(env, embodiment=("camera",))):
        assert "table_height_jitter" not in env_record(plain)["robot"]  # type: ignore[operator]


def test_a_recorded_table_height_is_the_recorded_worlds(tmp_path: Path) -> None:
    path = tmp_path / "th"
    record_short_dataset(path, episodes=2, ticks=3, task="pick_place", variant="randomized")
    backend = MujocoBackend(load_env("pick_place", variant="randomized"))
    ds = Dataset.open(path)
    heights = []
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            drawn = ep.json_attr(fmt.RESET_EMBODIMENT_ATTR)
            height = drawn["table_height"]
            heights.append(height)
            # reproducible by seed: the episode's seed draws the same again and builds the same world text
            seed = int(ep.attrs[fmt.SEED_ATTR])
            info = backend.reset(seed)
            assert info.embodiment == drawn and backend.model_xml() == ep.model_xml
            # offline, from the file alone: the recorded world has the mount where the draw put it
            with open_world(ep) as world:
                assert world.backend.model.body("torso").pos[2] == -height
                assert world.env.robot.table_height_jitter == JITTER
            assert relabel(ep).identical
    backend.close()
    assert len(set(heights)) == 2
    cov = coverage(ds)
    assert cov.embodiment == {"artixon-g, cameras drawn, table height drawn": 2}
    assert sorted(cov.table_heights) == sorted(heights)
    out = runner.invoke(app, ["datasets", "info", str(path)])
    assert out.exit_code == 0 and "table height" in out.output and "2 drawn" in out.output, out.output


def test_synthesis_accepts_a_demonstration_with_the_table_nearly_two_cm_low(tmp_path: Path) -> None:
    # master seed 17, slot 0: the table 1.9 cm lower than nominal as the robot sees it (the robot raised)
    out = tmp_path / "low"
    run = SynthRun(SynthConfig(SessionOptions("pick_place", variant="randomized"), n=1, workers=1, seed=17,
                               max_attempts=2), out).run()
    assert run.accepted == 1
    ds = Dataset.open(out)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        assert ep.json_attr(fmt.RESET_EMBODIMENT_ATTR)["table_height"] == -0.01947
        assert ep.success and relabel(ep).identical  # the predicates agree offline, in the recorded world
        assert replay_actions(ep).max_deviation == 0.0


def test_the_embodiment_preview_names_the_drawn_table_height(tmp_path: Path) -> None:
    done = task_preview("pick_place", tmp_path / "body.png", seeds=3, size=ImageSize(48, 64), variant="randomized",
                        axis="embodiment")
    assert all("head fovy" in t.label and " cm" in t.label for t in done.tiles)
    assert len({t.label.split("table ")[1] for t in done.tiles}) == 3
