"""Time parametrisation of joint paths, the post-check of timed trajectories, and `plan_motion`.

Each straight segment of a path is timed rest-to-rest with a jerk-limited ruckig profile on the path
parameter s in [0, 1] (per-joint limits divided by the joint's share of the segment), so the
commanded motion stays exactly on the checked segments except between samples. The post-check then
checks the configurations between the 30 Hz samples (what a linearly interpolating servo actually
sweeps); on a violation `plan_motion` replans with more clearance, a bounded number of times.

A finely stepped tcp path (motion/paths.py: a waypoint every 5 mm or 0.04 rad) is timed differently,
by `time_polyline`: one jerk-limited profile on the path parameter over the whole polyline (a
rest-to-rest stop at every step would crawl); its limits come from the largest per-step joint slope,
so joint velocities stay within limits. Accelerations are exact on straight joint segments and
approximate where the polyline bends, which is slight at these step sizes.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import ruckig

from x2.base.arrays import Floats
from x2.base.errors import PlanningError
from x2.sim.mujoco.collision import CollisionWorld
from x2.synth.motion.planner import JointPathPlanner, Plan, RRTConnect


@dataclass(frozen=True)
class Limits:
    """Per-joint limits for synthesised motions. Placeholder values for a 3 kg-payload cobot moving
    at demonstration speed (well inside the servo tracking tested in tests/test_sim_mujoco_models.py),
    not a datasheet. One value for every joint (so the same limits serve arms of any number of joints),
    or one per joint."""

    velocity: Floats = field(default_factory=lambda: np.full(1, 1.0))  # rad/s
    acceleration: Floats = field(default_factory=lambda: np.full(1, 2.5))  # rad/s^2
    jerk: Floats = field(default_factory=lambda: np.full(1, 20.0))  # rad/s^3

    def scaled(self, factor: float) -> Limits:
        """Slower limits (factor < 1), e.g. for careful moves near contact."""
        return Limits(self.velocity * factor, self.acceleration * factor ** 2, self.jerk * factor ** 3)

    def per_joint(self, n: int) -> tuple[Floats, Floats, Floats]:
        """(velocity, acceleration, jerk) for an arm of n joints."""
        return (np.broadcast_to(self.velocity, (n,)), np.broadcast_to(self.acceleration, (n,)),
                np.broadcast_to(self.jerk, (n,)))


@dataclass(frozen=True)
class Trajectory:
    """Joint positions sampled at the control rate: q[k] at time k * dt; q[0] start, q[-1] goal."""

    arm: str
    dt: float
    q: Floats  # (n, dof)
    qd: Floats  # (n, dof) velocities of the continuous profile at the samples
    qdd: Floats  # (n, dof)

    @property
    def duration(self) -> float:
        return (len(self.q) - 1) * self.dt


def _segment(a: Floats, b: Floats, limits: Limits) -> ruckig.Trajectory | None:
    d = np.abs(b - a)
    if np.max(d) < 1e-9:
        return None
    moving = d > 1e-12
    otg, inp, out = ruckig.Ruckig(1), ruckig.InputParameter(1), ruckig.Trajectory(1)
    inp.current_position, inp.target_position = [0.0], [1.0]
    vel, acc, jerk = limits.per_joint(len(d))
    inp.max_velocity = [float(np.min(vel[moving] / d[moving]))]
    inp.max_acceleration = [float(np.min(acc[moving] / d[moving]))]
    inp.max_jerk = [float(np.min(jerk[moving] / d[moving]))]
    result = otg.calculate(inp, out)
    if result not in (ruckig.Result.Working, ruckig.Result.Finished):
        raise PlanningError(f"ruckig could not time a segment: {result}")
    return out


def time_parametrize(arm: str, waypoints: Floats, limits: Limits, dt: float) -> Trajectory:
    """Sample the rest-to-rest timing of a piecewise-linear path every `dt` seconds."""
    wps = np.asarray(waypoints, dtype=np.float64)
    segments = []
    for a, b in zip(wps[:-1], wps[1:], strict=True):
        prof = _segment(a, b, limits)
        if prof is not None:
            segments.append((a, b, prof))
    if not segments:
        z = np.zeros((1, wps.shape[1]))
        return Trajectory(arm, dt, wps[:1].copy(), z, z.copy())
    ends = np.cumsum([p.duration for *_, p in segments])
    n = int(np.ceil(ends[-1] / dt - 1e-9)) + 1
    # the profile is sampled one time at a time (ruckig's call); the joint rows are made for all samples at once,
    # with the same arithmetic per row as one at a time
    times = [min(k * dt, ends[-1]) for k in range(n)]
    index = np.minimum(np.searchsorted(ends, times, side="left"), len(segments) - 1).tolist()
    path = np.zeros((n, 3))
    for k, (t, i) in enumerate(zip(times, index, strict=True)):
        s, sd, sdd = segments[i][2].at_time(t - (ends[i - 1] if i else 0.0))
        path[k] = s[0], sd[0], sdd[0]
    a = np.stack([segments[i][0] for i in index])
    delta = np.stack([segments[i][1] for i in index]) - a
    q, qd, qdd = a + delta * path[:, :1], delta * path[:, 1:2], delta * path[:, 2:]
    q[-1] = wps[-1]  # exactly the goal, not a float's worth short of it
    return Trajectory(arm, dt, q, qd, qdd)


def postcheck(traj: Trajectory, world: CollisionWorld, substeps: int = 4, spacing: float = 0.0) -> int | None:
    """Index of the first sample whose interval to the next one passes through a collision (checked at
    `substeps` points per control interval, with the world's current margin), or None if all is free.

    With `spacing` > 0 a point closer than that (rad, largest joint difference) to the last point checked is
    skipped, the trajectory's end never: near rest the substeps crowd sub-milliradian apart, and one check
    per `spacing` of joint motion is what the interval needs, at speed (~8 mrad a substep at 1 rad/s) as
    at rest. 0 checks every substep."""
    q = traj.q
    fractions = np.arange(1, substeps + 1) / substeps
    points = q[:-1, None, :] + (q[1:] - q[:-1])[:, None, :] * fractions[None, :, None]  # (interval, substep, dof)
    points = points.reshape(-1, q.shape[1])
    if world.in_collision({traj.arm: q[0]}):
        return 0
    # The spacing test in plain floats: the same subtractions and comparisons as numpy's, a quarter of the time
    # (it runs on every point; most near rest are skipped).
    last, final = q[0].tolist(), len(points) - 1
    with world.moving_only((traj.arm,)):  # the rest moves only this arm
        for i, p in enumerate(points.tolist()):
            if spacing > 0.0 and i < final and max(map(abs, map(operator.sub, p, last))) < spacing:
                continue
            last = p
            if world.in_collision({traj.arm: points[i]}):
                return i // substeps
    return None


GRASP_VARIETY = 3  # the default of MotionSettings.grasp_variety


@dataclass(frozen=True)
class MotionSettings:
    """How `plan_motion` plans and post-checks: the planner, and the post-check's density.

    The defaults are the arm scheduler's (bench/RESULTS.md, "Synthesis at the physics floor": 44 % fewer
    checks for the same acceptance); `BEFORE_SCHEDULER` is the motion layer as it was when one node ran at a
    time, which `x2 synth --sequential` keeps so that its datasets stay byte-comparable with earlier ones."""

    # edges checked every 0.03 rad; 15 shortcut rounds before the waypoint pruning (paired runs: 1.5 % less
    # CPU an attempt than 30, episodes as short), each checked only if it saves a tenth of its stretch
    planner: RRTConnect = field(default_factory=lambda: RRTConnect(resolution=0.03, shortcut_rounds=15,
                                                                   min_gain=0.1))
    postcheck_substeps: int = 4
    # rad; 0: every substep. 0.02, still finer than the planner's 0.03 rad edges: 14 % fewer checks an attempt
    # than 0.01, and on 40 attempts not one verdict differed (the same bytes)
    postcheck_spacing: float = 0.02
    # A check of one arm counts only the contacts of that arm (CollisionWorld.moved_contacts_only): with two
    # arms busy at once, the other's hand on a handle or fruit on the table must not block this one.
    moved_contacts_only: bool = True
    # A blocked straight edge first tries the way back: the arm's previous free-space motion reversed, when it
    # starts where that motion ended (SynthContext.move_to), e.g. home out of the microwave the way it came in.
    retrace: bool = True
    # A place tries its best few goals without growing trees before it grows any (pick_place._first_feasible):
    # on 40 attempts 39 places went in by a detour, 24 % fewer checks an attempt, episodes 1 % shorter.
    quick_place_goals: int = 6
    # The best-ranked grasps (and intercepts) an attempt's grasp stream samples among: varied demonstrations.
    # 1 always takes the best one: the wrist turns the short way to a jaw axis the object's pose decides, so a
    # behaviour-cloning policy meets one grasp per pose instead of a mean between a grasp and its half-turn
    # twin (x2 synth --grasp-variety, README "Synthesis").
    grasp_variety: int = GRASP_VARIETY
    # A straight move whose joints jump in one step tries that step again in finer parts before it breaks off
    # (paths.follow's refine): a fast but continuous joint near a singularity is not a switch of IK branch.
    refine_jumps: bool = True

    def describe(self) -> dict[str, float | bool]:
        out: dict[str, float | bool] = {
            "planner_resolution": self.planner.resolution, "shortcut_rounds": self.planner.shortcut_rounds,
            "shortcut_min_gain": self.planner.min_gain,
            "postcheck_substeps": self.postcheck_substeps, "postcheck_spacing": self.postcheck_spacing,
            "moved_contacts_only": self.moved_contacts_only, "retrace": self.retrace,
            "quick_place_goals": self.quick_place_goals}
        if self.grasp_variety != GRASP_VARIETY:  # (named only when chosen: the default's records stay as they were)
            out["grasp_variety"] = self.grasp_variety
        if not self.refine_jumps:  # (named only when off, as grasp_variety)
            out["refine_jumps"] = False
        return out


BEFORE_SCHEDULER = MotionSettings(RRTConnect(), 4, 0.0, moved_contacts_only=False, retrace=False,
                                  quick_place_goals=0, refine_jumps=False)


@dataclass(frozen=True)
class MotionPlan:
    plan: Plan
    trajectory: Trajectory
    attempts: int  # 1 unless the post-check made us replan
    checks: int  # planner and post-check together


def plan_motion(world: CollisionWorld, arm: str, q_start: Floats, q_goal: Floats,
                rng: np.random.Generator, limits: Limits | None = None, *, planner: JointPathPlanner | None = None,
                dt: float = 1.0 / 30.0, clearance: float = 0.005, retries: int = 3,
                clearance_step: float = 0.01, substeps: int = 4, spacing: float = 0.0,
                hints: Sequence[Floats] = ()) -> MotionPlan:
    """Plan (with `clearance` added to the world's margin), time and post-check (at the world's own
    margin) a motion; on a post-check violation replan with `clearance_step` more, up to `retries`
    times. Never returns a trajectory the post-check rejects. `hints`: vias for the planner to try first."""
    limits = limits or Limits()
    planner = planner or RRTConnect()
    base = world.margin
    checks = 0
    try:
        for attempt in range(1, retries + 2):
            world.margin = base + clearance + (attempt - 1) * clearance_step
            try:
                plan = planner.plan(world, arm, q_start, q_goal, rng, hints)
            except PlanningError:
                if world.margin > base:
                    # the clearance itself may be what blocks (a start near the table, an elbow another
                    # skill left near the torso): plan at the bare margin; on a retry this is a new path
                    # (the rng has moved on), which the post-check judges again
                    world.margin = base
                    plan = planner.plan(world, arm, q_start, q_goal, rng, hints)
                else:
                    raise
            checks += plan.checks
            traj = time_parametrize(arm, plan.waypoints, limits, dt)
            world.margin = base
            before = world.checks
            bad = postcheck(traj, world, substeps, spacing)
            checks += world.checks - before
            if bad is None:
                return MotionPlan(plan, traj, attempt, checks)
    finally:
        world.margin = base
    assert bad is not None  # (the loop ran, and returned at the first plan that passed)
    raise PlanningError(f"arm {arm!r}: every timed trajectory failed the post-check after {retries + 1} plans "
                        f"(last violation at t={bad * dt:.2f} s)")


def time_polyline(arm: str, waypoints: Floats, limits: Limits, dt: float) -> Trajectory:
    """One rest-to-rest profile along a finely stepped joint polyline, sampled every `dt`."""
    wps = np.asarray(waypoints, dtype=np.float64)
    slope = np.abs(np.diff(wps, axis=0)).max(axis=0)  # max joint change per unit of the path parameter
    moving = slope > 1e-12
    if len(wps) < 2 or not moving.any():
        z = np.zeros((1, wps.shape[1]))
        return Trajectory(arm, dt, wps[:1].copy(), z, z.copy())
    otg, inp, prof = ruckig.Ruckig(1), ruckig.InputParameter(1), ruckig.Trajectory(1)
    inp.current_position, inp.target_position = [0.0], [float(len(wps) - 1)]
    vel, acc, jerk = limits.per_joint(len(slope))
    inp.max_velocity = [float(np.min(vel[moving] / slope[moving]))]
    inp.max_acceleration = [float(np.min(acc[moving] / slope[moving]))]
    inp.max_jerk = [float(np.min(jerk[moving] / slope[moving]))]
    if otg.calculate(inp, prof) not in (ruckig.Result.Working, ruckig.Result.Finished):
        raise PlanningError(f"arm {arm!r}: ruckig could not time the straight move")
    count = int(np.ceil(prof.duration / dt - 1e-9)) + 1
    path = np.array([[v[0] for v in prof.at_time(min(k * dt, prof.duration))] for k in range(count)])
    index = np.minimum(path[:, 0].astype(np.int64), len(wps) - 2)  # (int() of a non-negative s: its floor)
    seg = wps[index + 1] - wps[index]
    q, qd, qdd = wps[index] + seg * (path[:, :1] - index[:, None]), seg * path[:, 1:2], seg * path[:, 2:]
    q[-1] = wps[-1]
    return Trajectory(arm, dt, q, qd, qdd)
