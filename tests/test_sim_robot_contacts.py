"""The robot's links collide with each other, the booth and objects (artixon.xml's header): nothing touches
at home, an arm put into the other arm or into the torso does touch, and the only pairs kept apart beyond
MuJoCo's parent-child filter are the robot MJCF's own <exclude> list, each of them in contact (or flush)
by construction."""

from __future__ import annotations

import itertools

import mujoco
import numpy as np
import pytest

from x2.envspec import load_env
from x2.sim.mujoco.backend import MujocoBackend

ROBOTS = ("artixon-g", "artixon-h")
# The shoulder brackets against the j1 housing (flush faces) and the upper arm (its root passes through
# the bracket whenever the arm is raised): see the <contact> section of artixon.xml.
EXCLUDED = {frozenset((f"{arm}_shoulder_bracket", f"{arm}_{link}")) for arm in ("left", "right")
            for link in ("link1", "link2")}


@pytest.fixture(scope="module", params=ROBOTS)
def backend(request: pytest.FixtureRequest) -> MujocoBackend:
    b = MujocoBackend(load_env(None, robot=request.param, scene="green_booth"))
    b.reset(0)
    return b


def _robot_bodies(m: mujoco.MjModel) -> set[int]:
    torso = m.body("torso").id
    return {b for b in range(m.nbody) if m.body_rootid[b] == torso}


def _set_arms(b: MujocoBackend, q: dict[str, np.ndarray]) -> None:
    b.set_joint_values({f"{arm}_j{i + 1}": float(v) for arm, qa in q.items() for i, v in enumerate(qa)})


def _robot_pairs(b: MujocoBackend) -> set[frozenset[str]]:
    m, d = b.model, b.data
    robot = _robot_bodies(m)
    return {frozenset((m.body(int(m.geom_bodyid[c.geom1])).name, m.body(int(m.geom_bodyid[c.geom2])).name))
            for c in d.contact[:d.ncon]
            if m.geom_bodyid[c.geom1] in robot and m.geom_bodyid[c.geom2] in robot}


def _home(b: MujocoBackend) -> dict[str, np.ndarray]:
    return {a.name: np.array(a.home) for a in b.env.robot.arms}


def test_robot_geoms_collide_with_each_other_and_the_world(backend: MujocoBackend) -> None:
    m = backend.model
    robot = _robot_bodies(m)
    for g in range(m.ngeom):
        if m.geom_bodyid[g] in robot and (m.geom_contype[g] or m.geom_conaffinity[g]):  # not decorative
            assert (m.geom_contype[g], m.geom_conaffinity[g]) == (2, 3), m.geom(g).name
    for name in ("table_top", "wall_front", "wall_back", "wall_left", "wall_right"):
        g = m.geom(name)
        # MuJoCo's rule: two geoms may touch if either one's contype meets the other's conaffinity
        assert g.contype[0] & 3 or 2 & g.conaffinity[0], name


def test_nothing_touches_at_home(backend: MujocoBackend) -> None:
    _set_arms(backend, _home(backend))
    assert backend.contacts() == []


def test_an_arm_put_into_the_other_arm_touches_it(backend: MujocoBackend) -> None:
    # both shoulders yawed 1 rad inwards, the arms straight: the forearms cross in front of the chest
    _set_arms(backend, {"left": np.array([-1.0, 0, 0, 0, 0, 0]), "right": np.array([1.0, 0, 0, 0, 0, 0])})
    try:
        pairs = _robot_pairs(backend)
    finally:
        _set_arms(backend, _home(backend))
    assert any({n.split("_")[0] for n in p} == {"left", "right"} for p in pairs), pairs


def test_an_arm_put_into_the_torso_touches_it(backend: MujocoBackend) -> None:
    # the right shoulder yawed in to 1.6 rad at its home elbow: the forearm swings into the head
    right = np.array(backend.env.robot.arm("right").home)
    right[0] = 1.6
    _set_arms(backend, {"right": right})
    try:
        pairs = _robot_pairs(backend)
    finally:
        _set_arms(backend, _home(backend))
    assert any("torso" in p and any(n.startswith("right_") for n in p) for p in pairs), pairs


def test_exclusions_are_exactly_the_mjcf_list(backend: MujocoBackend) -> None:
    m = backend.model
    robot = _robot_bodies(m)
    spec = mujoco.MjSpec.from_file(str(backend.env.robot.mjcf))
    in_mjcf = {frozenset((e.bodyname1, e.bodyname2)) for e in spec.excludes}
    compiled = {frozenset((m.body(int(s) >> 16).name, m.body(int(s) & 0xFFFF).name))
                for s in m.exclude_signature[:m.nexclude]}
    assert in_mjcf == EXCLUDED
    assert {p for p in compiled if all(m.body(n).id in robot for n in p)} == EXCLUDED


def test_each_exclusion_touches_by_construction(backend: MujocoBackend) -> None:
    """Without its <exclude>, every listed pair would be in contact at home (at zero distance for the
    bracket on the j1 housing), so the list holds nothing that only touches when an arm folds."""
    m, d = backend.model, backend.data
    _set_arms(backend, _home(backend))
    for pair in EXCLUDED:
        a, b = (m.body(n).id for n in sorted(pair))
        geoms = [[g for g in range(m.ngeom) if m.geom_bodyid[g] == body and m.geom_contype[g]] for body in (a, b)]
        closest = min(mujoco.mj_geomDistance(m, d, g1, g2, 0.1, None) for g1, g2 in itertools.product(*geoms))
        assert closest <= 1e-6, (sorted(pair), closest)
