"""The Panda drawn with its vendor's visual meshes (x2/sim/mujoco/visual_meshes.py): each piece within its face
budget, the same bytes every time, the physics exactly what it was with the collision meshes drawn, and an
episode's world rebuilt from its file drawing the same picture."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
from helpers.calibration_files import record_swings

from x2.datasets import Dataset
from x2.envspec import load_env, load_robot
from x2.envspec.env import EnvSpec
from x2.meshes import decimated
from x2.recorded.world import open_world
from x2.sim import make_backend
from x2.sim.mujoco.visual_meshes import COLLISION_GROUP, VISUAL_GROUP, decimated_mesh

ROBOT = "franka-panda"


def _piece(name: str) -> Path:
    part = load_robot(ROBOT).model.arms[0].part
    assert part is not None
    return part.source.file.parent / "franka_emika_panda" / "meshes" / name


def test_a_piece_is_decimated_within_budget_to_the_same_bytes(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(decimated.CACHE_ENV, str(tmp_path / "one"))
    file = _piece("link1.obj")  # 12,516 faces
    first = decimated_mesh(file, (1.0, 1.0, 1.0), 300)
    assert 250 <= len(first.faces) <= 300 and first.faces.max() < len(first.vertices)
    assert (tmp_path / "one" / "visual-meshes").is_dir()  # kept, by the file's digest and the budget
    again = decimated_mesh(file, (1.0, 1.0, 1.0), 300)  # from the cache
    monkeypatch.setenv(decimated.CACHE_ENV, str(tmp_path / "two"))
    fresh = decimated_mesh(file, (1.0, 1.0, 1.0), 300)  # made again, in a cold cache
    for kept in (tmp_path / "one" / "visual-meshes").glob("*.npz"):  # a damaged cache: made again, not an error
        kept.write_bytes(kept.read_bytes()[:100])
    monkeypatch.setenv(decimated.CACHE_ENV, str(tmp_path / "one"))
    remade = decimated_mesh(file, (1.0, 1.0, 1.0), 300)
    for other in (again, fresh, remade):
        assert other.vertices.tobytes() == first.vertices.tobytes()
        assert other.faces.tobytes() == first.faces.tobytes()
    small = decimated_mesh(_piece("link6_12.obj"), (1.0, 1.0, 1.0), 300)  # 16 faces: kept as it is
    assert len(small.faces) == 16
    # 13,185 faces with open borders, where the collapse stops at 466: within the budget all the same
    for budget in (200, 480):
        stubborn = decimated_mesh(_piece("link0_8.obj"), (1.0, 1.0, 1.0), budget)
        assert budget / 4 <= len(stubborn.faces) <= budget


def _collision_look(env: EnvSpec) -> EnvSpec:
    """The same world with the collision meshes drawn (the part file's `visual_faces` left out)."""
    arm = env.robot.arms[0]
    assert arm.part is not None and arm.part.visual_faces > 0
    part = dataclasses.replace(arm.part, visual_faces=0)
    robot = dataclasses.replace(env.robot, arms=(dataclasses.replace(arm, part=part),))
    return dataclasses.replace(env, robot=robot)


def _colliding(model: mujoco.MjModel) -> list[tuple[object, ...]]:
    out = []
    for g in range(model.ngeom):
        if model.geom_contype[g] or model.geom_conaffinity[g]:
            mesh = int(model.geom_dataid[g])
            vert = b"" if mesh < 0 else model.mesh_vert[model.mesh_vertadr[mesh]:model.mesh_vertadr[mesh]
                                                        + model.mesh_vertnum[mesh]].tobytes()
            out.append((model.geom(g).name, int(model.geom_bodyid[g]), int(model.geom_type[g]),
                        model.geom_size[g].tobytes(), model.geom_pos[g].tobytes(), model.geom_quat[g].tobytes(),
                        model.geom_friction[g].tobytes(), int(model.geom_contype[g]),
                        int(model.geom_conaffinity[g]), vert))
    return out


def test_the_physics_is_the_same_with_the_visual_meshes_drawn() -> None:
    env = load_env("pick_place", robot=ROBOT)
    drawn, plain = make_backend(env), make_backend(_collision_look(env))
    try:
        dm, pm = drawn.model, plain.model
        visual = [g for g in range(dm.ngeom) if dm.geom_group[g] == VISUAL_GROUP and dm.geom_contype[g] == 0
                  and dm.body(int(dm.geom_bodyid[g])).name.startswith("right_link")]
        assert len(visual) == 49  # Menagerie's pieces, in its colours (link0's off-white and dark grey among them)
        colours = dm.geom_rgba[visual].astype(np.float64)
        for rgba in ((0.901961, 0.921569, 0.929412, 1.0), (0.25, 0.25, 0.25, 1.0)):  # off_white, dark_grey
            assert np.abs(colours - rgba).max(axis=1).min() < 1e-6, rgba
        assert all(dm.mesh_facenum[dm.geom_dataid[g]] <= 500 for g in visual)
        arm_collision = [g for g in range(dm.ngeom) if dm.geom_contype[g]
                         and dm.body(int(dm.geom_bodyid[g])).name.startswith("right_link")]
        assert arm_collision and all(dm.geom_group[g] == COLLISION_GROUP for g in arm_collision)
        assert _colliding(dm) == _colliding(pm)
        for name in ("body_mass", "body_inertia", "body_ipos", "body_iquat", "dof_armature", "actuator_gainprm"):
            assert getattr(dm, name).tobytes() == getattr(pm, name).tobytes(), name
        trajectories = []
        for backend in (drawn, plain):
            backend.reset(2)
            action = backend.home_action() + np.linspace(-0.3, 0.3, len(backend.home_action()))
            qpos = []
            for _ in range(20):
                backend.step(action)
                qpos.append(backend.get_state())
            trajectories.append(np.asarray(qpos).tobytes())
        assert trajectories[0] == trajectories[1]
    finally:
        drawn.close()
        plain.close()


def test_an_episode_reopened_from_its_file_draws_the_same_picture(tmp_path: Path) -> None:
    record_swings(tmp_path / "ds", ROBOT, episodes=1, ticks=6)
    env = load_env("pick_place", robot=ROBOT)
    live = make_backend(env)
    try:
        with Dataset.open(tmp_path / "ds").load(0) as ep, open_world(ep) as world:
            live.reset(0)
            assert world.backend.model_xml() == live.model_xml()  # the file holds the decimated meshes inline
            state = np.asarray(ep["states"][ep.frames - 1])
            world.backend.set_state(state)
            live.set_state(state)
            for camera in env.robot.cameras:
                again = np.asarray(world.backend.render(camera, 160, 120))
                assert np.array_equal(again, np.asarray(live.render(camera, 160, 120))), camera
                assert again.std() > 5
    finally:
        live.close()


def test_building_worlds_does_not_import_trimesh() -> None:
    # trimesh is only needed to decimate a mesh the cache lacks; imported with the backend it cost every x2
    # process (and the test suite's hundreds of them) about half a second
    code = "import sys, x2.sim.mujoco.backend; assert 'trimesh' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
