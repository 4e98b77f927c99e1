"""What a skill may use: the live world (read only), its random streams and the motion layer.

One context serves one attempt. Motions start from the targets the executor is commanding, are
planned on a `CollisionWorld` synced to the live simulator, and come back as segments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import IKError, PlanningError
from x2.rollout.monitor import TaskMonitor
from x2.sim.backend import Backend
from x2.sim.mujoco.collision import CollisionWorld
from x2.sim.mujoco.ik import ArmIK
from x2.synth.executor import Lane, SkillExecutor
from x2.synth.motion.timing import Limits, MotionSettings, plan_motion, time_polyline
from x2.synth.segments import ArmTrack, Segment, SkillFailure

# rad (largest joint difference): a plan that starts this close to where the arm's previous free-space motion
# ended may try that motion reversed (MotionSettings.retrace)
RETRACE_FROM = 1.0


@dataclass
class SynthStats:
    """Where an attempt's planning effort went (summed into synth_report.json)."""

    ik_calls: int = 0
    plans: int = 0
    collision_checks: int = 0
    replans: int = 0
    space_time_checks: int = 0  # concurrent lanes: checks between one arm's new motion and the other's
    waited_ticks: int = 0  # ticks arms stood still before a motion, to let the other arm pass
    lane_replans: int = 0  # skills run again after failing beside another lane (the executor's replans)
    segments: dict[str, int] = field(default_factory=dict)


class SynthContext:
    def __init__(self, backend: Backend, monitor: TaskMonitor, executor: SkillExecutor,
                 rngs: dict[str, np.random.Generator], limits: Limits | None = None,
                 motion: MotionSettings | None = None):
        self.backend, self.monitor, self.executor = backend, monitor, executor
        self.env = backend.env
        self.rng = rngs
        self.limits = limits or Limits()
        self.motion = motion or MotionSettings()
        self.stats = SynthStats()
        self._world: CollisionWorld | None = None
        self._ik: dict[str, ArmIK] = {}
        self._last_path: dict[str, Floats] = {}  # per arm: the waypoints of its latest free-space plan

    # ----- the world as it is now --------------------------------------------------------------
    def world(self) -> CollisionWorld:
        """The collision world, synced to the live simulator (held objects stay attached), with every arm where
        the planning lane will find it."""
        if self._world is None or self._world.model.ngeom != self.backend.model.ngeom:
            self._world = CollisionWorld(self.backend, moved_contacts_only=self.motion.moved_contacts_only,
                                         refine_jumps=self.motion.refine_jumps)
            self._ik.clear()
        else:
            self._world.sync(self.backend)
        lane = self.executor.current
        if lane is not None:
            self._world.owner = lane.key
        for arm in self._world.arms:  # another lane's arm stands where its committed motion ends
            self._world.set_arm(arm, self.executor.planning_pose(arm))
        return self._world

    def ik(self, arm: str) -> ArmIK:
        world = self.world()
        if arm not in self._ik:
            self._ik[arm] = ArmIK(world, arm)
        return self._ik[arm]

    @property
    def concurrent(self) -> bool:
        """Lanes run side by side (the arm scheduler), so a skill may hand another arm's motion to a lane."""
        return self.executor.admission is not None

    def run_beside(self, arm: str, key: str, program: Iterator[Segment]) -> Lane:
        """Start `program` on the free `arm` in a lane of its own, beside the calling skill's."""
        if self.executor.lane_of(arm) is not None:
            raise RuntimeError(f"the {arm} arm is not free")
        return self.executor.add_lane(Lane(key, {arm}, program))

    def node_done(self, node: str) -> bool:
        return self.monitor.runtime.completed(node)

    def arm_for(self, target_pos: Floats) -> str:
        """`arm: auto`: the arm whose first joint is nearest the target, horizontally (ties: the first arm). Not
        the nearest hand: a hand just back from the middle of the table is nearer the far side than the arm that
        stands there."""
        arms = [a.name for a in self.env.robot.arms]
        roots = np.array([self.backend.arm_root_pos(a)[:2] for a in arms])
        return arms[int(np.argmin(np.linalg.norm(roots - np.asarray(target_pos)[None, :2], axis=1)))]

    # ----- motions -----------------------------------------------------------------------------
    def solve_ik(self, arm: str, pos: Floats, rot: Floats | None = None, *, axis_down: bool = False,
                 q_ref: Floats | None = None) -> Floats:
        self.stats.ik_calls += 1
        try:
            return self.ik(arm).solve(pos, rot, rng=self.rng["grasp"], q_ref=q_ref if q_ref is not None
                                      else self.executor.arm_target(arm), axis_down=axis_down)
        except IKError as exc:
            raise SkillFailure("ik infeasible", str(exc)) from None

    def move_to(self, arm: str, q_goal: Floats, limits: Limits | None = None, *,
                trees: bool = True) -> Iterator[Segment]:
        """A collision-free, timed, post-checked joint motion from the commanded targets to `q_goal`; without
        `trees`, only by the planner's cheap ways (SkillFailure "no plan" where those are blocked)."""
        world = self.world()
        q_start = self.executor.arm_target(arm)
        settings = self.motion
        hints = []
        last = self._last_path.get(arm)
        if settings.retrace and last is not None and np.max(np.abs(q_start - last[-1])) <= RETRACE_FROM:
            hints.append(last[::-1])
        planner = settings.planner if trees else dataclasses.replace(settings.planner, trees=False)
        try:
            motion = plan_motion(world, arm, q_start, np.asarray(q_goal, dtype=np.float64), self.rng["planner"],
                                 limits or self.limits, planner=planner, dt=self.env.control_dt,
                                 substeps=settings.postcheck_substeps, spacing=settings.postcheck_spacing,
                                 hints=hints)
        except PlanningError as exc:
            raise SkillFailure("no plan", str(exc)) from None
        self._last_path[arm] = motion.plan.waypoints
        self.stats.plans += 1
        self.stats.replans += motion.attempts - 1
        self.stats.collision_checks += motion.checks
        yield ArmTrack(arm, motion.trajectory.q[1:])

    def timed(self, arm: str, waypoints: Floats, speed: float, kind: str = "cartesian") -> ArmTrack:
        """A finely stepped joint polyline (a straight or screw path) as one jerk-limited track at `speed`
        (a fraction of the context's limits), starting with the tick after its first waypoint."""
        try:
            traj = time_polyline(arm, waypoints, self.limits.scaled(speed), self.env.control_dt)
        except PlanningError as exc:
            raise SkillFailure("no plan", str(exc)) from None
        return ArmTrack(arm, traj.q[1:] if len(traj.q) > 1 else traj.q, kind)

    def move_pose(self, arm: str, pos: Floats, rot: Floats | None = None, *, axis_down: bool = False,
                  limits: Limits | None = None) -> Iterator[Segment]:
        yield from self.move_to(arm, self.solve_ik(arm, pos, rot, axis_down=axis_down), limits)
