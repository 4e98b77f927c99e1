"""`open` / `close` on their own: the microwave door (hinge) with both grippers, a drawer (slide), no
contact but the gripper on the moving part at any tick, and byte-identical replays of a seed.

Each run is a synthesis attempt cut down to one skill: the same SkillExecutor, SynthContext and Rollout
as x2/synth/attempt.py, with a program that yields from the skill alone.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable

import numpy as np
import pytest

from x2.base.seeding import streams
from x2.rollout import RolloutOptions
from x2.rollout.loop import EpisodeResult
from x2.rollout.memory import MemoryRecorder
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.collision import CollisionWorld
from x2.synth.attempt import SynthSession
from x2.synth.context import SynthContext
from x2.synth.executor import SkillExecutor
from x2.synth.motion.seeded import SeededIK
from x2.synth.options import SessionOptions
from x2.synth.skills import SKILLS

DOOR = "microwave/door_hinge"
SEEDS = range(1, 7)
ROBOT = ("left_", "right_", "torso")
HAND = ("left_gripper", "left_finger_a", "left_finger_b")

DRAWER_SCENE = """\
include: green_booth.yaml
name: drawer_booth
description: Green booth with a drawer cabinet on the left.
regions:
  cabinet_spot: {center: [0.68, 0.22], half_size: [0.01, 0.01], yaw: [-0.05, 0.05]}
objects:
  cabinet: {asset: drawer_cabinet, region: cabinet_spot}
"""
DRAWER_TASK = """\
name: drawer_test
instruction: "Open the drawer, then close it."
scene: drawer_booth
robot: {robot}
horizon_s: 30
nodes:
  open_drawer:
    success: {{joint_above: {{joint: cabinet/drawer_slide, value: 0.12}}}}
    skill: {{name: open, arm: left, target: cabinet/handle}}
  close_drawer:
    success: {{joint_below: {{joint: cabinet/drawer_slide, value: 0.02}}}}
    skill: {{name: close, arm: left, target: cabinet/handle}}
edges: [[open_drawer, close_drawer]]
"""


class Run:
    """One rollout of some of a task's skills (node ids, in order) with the left arm."""

    def __init__(self, session: SynthSession, nodes: list[str], seed: int, start: dict[str, float] | None = None,
                 moving: str = "microwave/door"):
        self.session, self.seed = session, seed
        self.bad: list[tuple[int, str, str]] = []
        executor = SkillExecutor(session.env.robot.action)
        assert session.rollout.monitor is not None
        ctx = SynthContext(session.backend, session.rollout.monitor, executor, streams(seed))
        bindings = {n.id: n.skill for n in session.env.task.nodes}

        def program():
            for node in nodes:
                binding = bindings[node]
                yield from SKILLS[binding.name].run(ctx, binding, "left")

        executor.program = program
        self.recorder = MemoryRecorder()
        hooks: list[Callable[[int, MujocoBackend], None]] = [self._contacts(moving)]
        if start:
            hooks.insert(0, lambda t, b: b.set_joint_values(start) if t == 0 else None)
        opts = RolloutOptions(stop_on_success=False, stop_on_failure=False, max_ticks=900, hooks=hooks)
        self.result: EpisodeResult = session.rollout.run(executor, seed, self.recorder, opts)
        self.failure = executor.failure
        self.ctx = ctx

    def _contacts(self, moving: str) -> Callable[[int, MujocoBackend], None]:
        """Every contact touching the robot must be the left hand on the moving part (handle or panel)."""
        def hook(t: int, b: MujocoBackend) -> None:
            for c in b.contacts():
                robot = [n for n in (c.body1, c.body2) if n.startswith(ROBOT)]
                if not robot:
                    continue
                other = [n for n in (c.body1, c.body2) if not n.startswith(ROBOT)]
                if not (all(n in HAND for n in robot) and other and all(n.startswith(moving) for n in other)):
                    self.bad.append((t, c.geom1, c.geom2))
        return hook

    def joint(self, name: str) -> float:
        return self.session.backend.joint_value(name)


@pytest.fixture(scope="module")
def microwave_g() -> SynthSession:
    return SynthSession(SessionOptions("fruit_in_microwave", robot="artixon-g"))


@pytest.fixture(scope="module")
def microwave_h() -> SynthSession:
    return SynthSession(SessionOptions("fruit_in_microwave", robot="artixon-h"))


def test_seeded_ik_tracks_and_refuses(microwave_g):
    """The sweeps' IK: from the previous waypoint it converges in a few iterations to 1 mm / 1 deg, stays in
    the joint limits, and says None (no exception, no random restart) for a pose out of reach."""
    microwave_g.backend.reset(1)
    ik = SeededIK(CollisionWorld(microwave_g.backend), "left")
    q = np.array(microwave_g.env.robot.arm("left").home)
    pos, rot = ik.fk(q)
    for k in range(1, 11):  # 2 cm steps down and out, the size of a sweep's waypoints
        before = ik.iterations
        target = pos + np.array([0.01, 0.0, -0.02]) * k
        q = ik.solve(target, rot, q)
        assert q is not None and ik.iterations - before <= 10
        got, grot = ik.fk(q)
        assert np.linalg.norm(got - target) < 1e-3
        assert np.arccos(np.clip((np.trace(rot.T @ grot) - 1) / 2, -1, 1)) < np.deg2rad(1.0)
        assert np.all(q >= ik.lo) and np.all(q <= ik.hi)
    assert ik.solve(pos + np.array([1.5, 0.0, 0.0]), rot, q) is None


def test_registered_with_parameters():
    for name in ("open", "close"):
        assert {k: p.kind for k, p in SKILLS[name].params.items()} == {"goal": float, "joint": str, "park": bool}
        assert SKILLS[name].needs_target and not SKILLS[name].both_arms


def test_open_door_past_threshold(microwave_g):
    runs = [Run(microwave_g, ["open_door"], seed) for seed in SEEDS]
    opened = [r for r in runs if r.failure is None and r.joint(DOOR) >= 1.2]
    assert len(opened) >= 5, [(r.seed, r.failure, round(r.joint(DOOR), 3)) for r in runs]
    for r in runs:
        assert r.bad == [], (r.seed, r.bad[:5])
        if r in opened:
            assert dict(r.result.events).get("open_door") is not None
            # the opening itself (grasp to release) is brisk: a few seconds of simulated time
            assert r.result.ticks < 12 * microwave_g.env.fps


def test_close_door_from_open(microwave_g):
    runs = [Run(microwave_g, ["close_door"], seed, start={DOOR: 1.35}) for seed in SEEDS]
    closed = [r for r in runs if r.failure is None and r.joint(DOOR) <= 0.1]
    assert len(closed) >= 5, [(r.seed, r.failure, round(r.joint(DOOR), 3)) for r in runs]
    for r in runs:
        assert r.bad == [], (r.seed, r.bad[:5])


@pytest.mark.parametrize("seed", [1, 2])
def test_open_then_close_with_h_gripper(microwave_h, seed):
    r = Run(microwave_h, ["open_door", "close_door"], seed)
    assert r.failure is None, r.failure
    events = dict(r.result.events)
    assert events.get("open_door") is not None  # joint_above 1.2 held on the way
    assert r.joint(DOOR) <= 0.1
    assert r.bad == [], r.bad[:5]


def test_same_seed_same_bytes(microwave_g):
    a = Run(microwave_g, ["open_door"], 3).recorder.arrays()
    b = Run(microwave_g, ["open_door"], 3).recorder.arrays()
    assert a["state"].tobytes() == b["state"].tobytes()
    assert a["action"].tobytes() == b["action"].tobytes()


def test_guard_gives_up_on_a_stuck_door(microwave_g):
    """A door that cannot move: the pull's guarded rounds run out and the skill ends with a reason."""
    def stuck(t: int, b: MujocoBackend) -> None:
        b.set_joint_values({DOOR: 0.0})

    session = microwave_g
    executor = SkillExecutor(session.env.robot.action)
    ctx = SynthContext(session.backend, session.rollout.monitor, executor, streams(4))
    binding = next(n.skill for n in session.env.task.nodes if n.id == "open_door")
    executor.program = lambda: SKILLS["open"].run(ctx, binding, "left")
    opts = RolloutOptions(stop_on_success=False, stop_on_failure=False, max_ticks=600, hooks=[stuck])
    session.rollout.run(executor, 4, None, opts)
    assert executor.failure is not None
    assert executor.failure.reason in ("guard timeout", "grasp lost")


@pytest.fixture(scope="module")
def drawer(tmp_path_factory) -> SynthSession:
    root = tmp_path_factory.mktemp("drawer")
    (root / "specs" / "scenes").mkdir(parents=True)
    (root / "specs" / "tasks").mkdir(parents=True)
    (root / "specs" / "scenes" / "drawer_booth.yaml").write_text(textwrap.dedent(DRAWER_SCENE))
    (root / "specs" / "tasks" / "drawer_test.yaml").write_text(DRAWER_TASK.format(robot="artixon-g"))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        return SynthSession(SessionOptions("drawer_test"))


@pytest.mark.parametrize("seed", [1, 2])
def test_drawer_opens_and_closes(drawer, seed):
    r = Run(drawer, ["open_drawer", "close_drawer"], seed, moving="cabinet/drawer")
    assert r.failure is None, r.failure
    events = dict(r.result.events)
    assert events.get("open_drawer") is not None and events.get("close_drawer") is not None
    assert r.joint("cabinet/drawer_slide") <= 0.02
    assert r.bad == [], r.bad[:5]
    # the drawer was pulled out along its slide: the recorded states pass the open threshold
    slide = int(r.session.backend.model.joint("cabinet/drawer_slide").qposadr[0])
    recorded = np.asarray(r.recorder.arrays()["state"])[:, 1 + slide]  # a state is time, qpos, qvel, ...
    assert recorded.max() >= 0.12


def test_missing_joint_fails_cleanly(microwave_g):
    """A target that no hinge or slide moves ends the attempt with "target unreachable", not a crash."""
    from dataclasses import replace

    session = microwave_g
    executor = SkillExecutor(session.env.robot.action)
    ctx = SynthContext(session.backend, session.rollout.monitor, executor, streams(1))
    binding = next(n.skill for n in session.env.task.nodes if n.id == "open_door")
    binding = replace(binding, target="microwave/cavity", params={"joint": "lid_hinge"})
    executor.program = lambda: SKILLS["open"].run(ctx, binding, "left")
    session.rollout.run(executor, 1, None, RolloutOptions(stop_on_success=False, max_ticks=30))
    assert executor.failure is not None and executor.failure.reason == "target unreachable"
