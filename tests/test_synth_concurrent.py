"""Concurrent synthesis: ready DAG nodes on different arms run at once, each arm's motion admitted against
the other's over time. On real synthesised episodes of fruit_in_microwave: the two arms move in the same
frames, they keep clear of each other by MuJoCo's own distances, a seeded run is the same bytes with 1 and
2 workers, and `--sequential` runs one node at a time, as synthesis always did. A task whose
two goals sit side by side (a twin-button panel) ends in a plan, where one node at a time cannot; two lanes
that can only wait for each other end the attempt as a deadlock at once, never a hang."""

from __future__ import annotations

import textwrap
from pathlib import Path

import mujoco
import numpy as np
import pytest
from helpers.dataset_contents import deterministic_contents

from x2.base.seeding import slot_seed
from x2.rollout import RolloutOptions
from x2.sim.backend import Backend
from x2.sim.mujoco.collision import CollisionWorld
from x2.synth.attempt import AttemptOutcome, SynthSession
from x2.synth.executor import Lane, SkillExecutor
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun
from x2.synth.segments import ArmTrack
from x2.synth.spacetime import ARM_CLEARANCE, SpaceTimeAdmission

# Servos lag their targets by a few mm at speed and the clearance is kept between commanded poses.
TRACKING_SLACK = 0.01


def _arm_geoms(backend: Backend) -> list[list[int]]:
    """Per arm, its collidable geoms: everything below its first joint (links, gripper, fingers)."""
    m = backend.model
    out = []
    for arm in backend.env.robot.arms:
        root = int(m.jnt_bodyid[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, arm.joints[0])])

        def below(body: int, root: int = root) -> bool:
            while body > 0:
                if body == root:
                    return True
                body = int(m.body_parentid[body])
            return False

        out.append([g for g in range(m.ngeom) if below(int(m.geom_bodyid[g]))
                    and (m.geom_contype[g] or m.geom_conaffinity[g])])
    return out


def closest_arms(backend: Backend, states: np.ndarray, every: int = 2) -> float:
    """The smallest MuJoCo geom distance between the two arms over the recorded states."""
    m = backend.model
    d = mujoco.MjData(m)
    left, right = _arm_geoms(backend)
    best = np.inf
    for t in range(0, len(states), every):
        mujoco.mj_setState(m, d, states[t], mujoco.mjtState.mjSTATE_INTEGRATION)
        mujoco.mj_kinematics(m, d)
        for g1 in left:
            for g2 in right:
                best = min(best, mujoco.mj_geomDistance(m, d, g1, g2, 0.25, None))
    return float(best)


@pytest.fixture(scope="module")
def concurrent() -> tuple[SynthSession, AttemptOutcome]:
    session = SynthSession(SessionOptions("fruit_in_microwave"))
    return session, session.attempt(0, slot_seed(0, 0))


def _moving(session: SynthSession, outcome: AttemptOutcome) -> dict[str, np.ndarray]:
    """Per arm, the frames (from the second on) in which its commanded joints change."""
    assert outcome.arrays is not None
    action = outcome.arrays["action"]
    return {arm.name: np.abs(np.diff(action[:, arm.joints], axis=0)).max(axis=1) > 1e-5
            for arm in session.backend.action_layout.arms}


def test_sequential_runs_one_node_at_a_time() -> None:
    # (Its bytes equal the synthesis before the arm scheduler existed: bench/compare_outputs.py compares the two
    # commits on one machine; a digest pinned here would pin this machine's floating point too.)
    session = SynthSession(SessionOptions("fruit_in_microwave", sequential=True))
    outcome = session.attempt(0, slot_seed(0, 0))
    assert outcome.accepted and outcome.result is not None
    moving = _moving(session, outcome)
    assert not (moving["left"] & moving["right"]).any()
    assert [n for n, _ in outcome.result.events] == ["open_door", "pick_fruit", "place_fruit", "close_door", "retract"]
    arms = {node: list(a) for node, a in outcome.result.dag["arms"].items()}
    assert arms == {"open_door": ["left"], "pick_fruit": ["right"], "place_fruit": ["right"],
                    "close_door": ["left"], "retract": ["left", "right"]}


def test_open_door_and_pick_fruit_run_in_the_same_frames(concurrent: tuple[SynthSession, AttemptOutcome]) -> None:
    session, outcome = concurrent
    assert outcome.accepted and outcome.arrays is not None and outcome.result is not None
    completion = dict(outcome.result.events)
    first = min(completion["open_door"], completion["pick_fruit"])
    moving = _moving(session, outcome)
    both = (moving["left"] & moving["right"])[:first]
    assert both.sum() > 0.4 * first, f"both arms move in {both.sum()} of the first {first} frames"
    mask = outcome.result.labels["active_mask"]
    nodes = list(session.env.task.node_ids)  # type: ignore[union-attr]
    assert mask[both.nonzero()[0], nodes.index("open_door")].all()
    assert mask[both.nonzero()[0], nodes.index("pick_fruit")].all()


def test_the_arms_keep_clear_by_mujocos_own_distances(concurrent: tuple[SynthSession, AttemptOutcome]) -> None:
    session, outcome = concurrent
    assert outcome.arrays is not None
    assert closest_arms(session.backend, outcome.arrays["state"]) > ARM_CLEARANCE - TRACKING_SLACK


def test_concurrent_episodes_are_shorter_than_sequential_ones(concurrent: tuple[SynthSession, AttemptOutcome]) -> None:
    _, outcome = concurrent
    sequential = SynthSession(SessionOptions("fruit_in_microwave", sequential=True)).attempt(0, slot_seed(0, 0))
    assert outcome.ticks < 0.9 * sequential.ticks


def test_same_bytes_with_one_and_two_workers(tmp_path: Path) -> None:
    runs = []
    for workers in (1, 2):
        path = tmp_path / f"w{workers}"
        config = SynthConfig(SessionOptions("fruit_in_microwave"), n=2, workers=workers, seed=5)
        assert SynthRun(config, path).run().accepted == 2
        runs.append(deterministic_contents(path))
    a, b = runs
    assert [sorted(x) for x in a] == [sorted(y) for y in b]
    for ea, eb in zip(a, b, strict=True):
        for key in ea:
            assert ea[key] == eb[key], key


TWIN_BUTTONS_XML = """\
    <mujoco model="twin_buttons">
      <default>
        <default class="twin">
          <geom condim="3" friction="0.8 0.01 0.001" rgba="0.25 0.26 0.28 1"/>
          <joint type="slide" axis="0 0 1" range="-0.008 0" stiffness="400" springref="0.004" damping="3"
                 armature="0.02" solreflimit="0.005 1"/>
        </default>
      </default>
      <worldbody>
        <body name="object" childclass="twin">
          <geom name="housing" type="box" size="0.06 0.08 0.025" pos="0 0 0.025" mass="1.2"/>
          <body name="left_button" pos="0 0.03 0.05">
            <joint name="left_button"/>
            <geom name="left_cap" type="cylinder" size="0.02 0.007" pos="0 0 0.007" mass="0.02"/>
            <site name="left_top" pos="0 0 0.014"/>
          </body>
          <body name="right_button" pos="0 -0.03 0.05">
            <joint name="right_button"/>
            <geom name="right_cap" type="cylinder" size="0.02 0.007" pos="0 0 0.007" mass="0.02"/>
            <site name="right_top" pos="0 0 0.014"/>
          </body>
        </body>
      </worldbody>
      <contact>
        <exclude body1="object" body2="left_button"/>
        <exclude body1="object" body2="right_button"/>
      </contact>
    </mujoco>
    """
SPECS = {
    "objects/twin_buttons.xml": TWIN_BUTTONS_XML,
    "objects/twin_buttons.yaml": """\
        name: twin_buttons
        mjcf: twin_buttons.xml
        tags: [button, panel]
        footprint_radius: 0.1
        height: 0.0
        free: false
        parts: {left_top: left_top, right_top: right_top}
        joints: [left_button, right_button]
        """,
    "scenes/twin_scene.yaml": """\
        include: green_booth.yaml
        name: twin_scene
        objects:
          panel: {asset: twin_buttons, pose: [0.5, 0.0, 0.75, 0.0]}
        """,
    # Two buttons 6 cm apart in the middle of the table, one per arm: both hands must be at one spot.
    "tasks/twin_buttons.yaml": """\
        name: twin_buttons
        instruction: "press both buttons"
        scene: twin_scene
        robot: artixon-g
        horizon_s: 30
        nodes:
          left_press:
            success: {button_pressed: {joint: panel/left_button}}
            timeout_s: 25
            skill: {name: press, arm: left, target: panel/left_top}
          right_press:
            success: {button_pressed: {joint: panel/right_button}}
            timeout_s: 25
            skill: {name: press, arm: right, target: panel/right_top}
          home:
            success: {arm_at_home: {arm: both}}
            skill: {name: retract, arm: both}
        edges: [[left_press, home], [right_press, home]]
        """,
}


def test_two_goals_at_one_spot_end_in_a_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for rel, text in SPECS.items():
        path = tmp_path / "specs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    monkeypatch.chdir(tmp_path)
    # One node at a time, the first hand stays on its button and the second cannot reach its own.
    sequential = SynthSession(SessionOptions("twin_buttons", sequential=True)).attempt(0, slot_seed(0, 0))
    assert not sequential.accepted and sequential.reason == "ik infeasible"
    session = SynthSession(SessionOptions("twin_buttons"))
    outcome = session.attempt(0, slot_seed(0, 0))
    assert outcome.accepted, (outcome.reason, outcome.detail)
    assert outcome.arrays is not None and outcome.result is not None
    assert {node for node, _ in outcome.result.events} == {"left_press", "right_press", "home"}
    assert closest_arms(session.backend, outcome.arrays["state"]) > ARM_CLEARANCE - TRACKING_SLACK


class _CrossingLanes:
    """A scheduler starting one lane per arm, each reaching to where the other arm stands: neither motion can
    ever be admitted while the other arm stays there, and neither arm will move first."""

    def __init__(self, tracks: dict[str, np.ndarray]):
        self.tracks, self._started = tracks, False

    def start(self, executor: SkillExecutor, free_arms: set[str], frame: int) -> list[Lane]:
        if self._started:
            return []
        self._started = True
        return [Lane(f"reach {arm}", {arm}, iter([ArmTrack(arm, q)])) for arm, q in self.tracks.items()]

    def reset(self) -> None:
        self._started = False

    def make_way(self, executor: SkillExecutor, arm: str) -> Lane | None:
        return None


def test_two_lanes_waiting_for_each_other_end_as_a_deadlock_not_a_hang() -> None:
    session = SynthSession(SessionOptions("fruit_in_microwave"))
    backend = session.backend
    backend.reset(slot_seed(0, 0))
    world = CollisionWorld(backend, margin=ARM_CLEARANCE)
    home = {arm.name: np.array(arm.home) for arm in backend.env.robot.arms}
    rng = np.random.default_rng(0)
    tracks = {}
    for arm, other in (("left", "right"), ("right", "left")):
        lo, hi = world.joint_range[arm][:, 0], world.joint_range[arm][:, 1]
        # a configuration within the clearance of the other arm at home, found by sampling
        goal = next(q for q in (rng.uniform(lo, hi) for _ in range(20_000))
                    if world.arms_clash({arm: q, other: home[other]}))
        tracks[arm] = home[arm] + np.linspace(0.0, 1.0, 30)[:, None] * (goal - home[arm])
    executor = SkillExecutor(backend.action_layout)
    executor.scheduler = _CrossingLanes(tracks)
    executor.admission = SpaceTimeAdmission(lambda: world)
    assert session.rollout.monitor is not None
    result = session.rollout.run(executor, slot_seed(0, 0), None, RolloutOptions(max_ticks=100))
    assert result.end_reason == "teacher" and result.ticks <= 2
    assert executor.failure is not None and executor.failure.reason == "deadlock"
    assert "reach left" in executor.failure.detail and "reach right" in executor.failure.detail
