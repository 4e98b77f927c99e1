"""Straight-line Cartesian moves of the tcp (approach, lift, retreat) through IK at fine steps.

The tcp keeps its starting orientation and moves along a world-frame displacement in steps of
`step` metres; each step's IK is seeded with the previous solution (no random restarts, so the arm
never jumps to another branch), and a step that moves any joint by more than `max_joint_step` is a
discontinuity and fails the move. Every step is collision-checked against the world, so expected
contacts (fingers-object while lifting) must be `allow`ed first.

Timing: one jerk-limited profile on the path parameter over the whole polyline (a rest-to-rest stop
at every 5 mm step would crawl); its limits come from the largest per-step joint slope, so joint
velocities stay within limits. Accelerations are exact on straight joint segments and approximate
where the polyline bends, which is slight at these step sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import ruckig

from x2.synth.motion.collision import CollisionWorld
from x2.synth.motion.errors import IKError, PlanningError
from x2.synth.motion.ik import ArmIK, IKOptions
from x2.synth.motion.timing import Limits, Trajectory


@dataclass(frozen=True)
class CartesianPath:
    arm: str
    waypoints: np.ndarray  # (n, dof): joint angles at each step, first = start
    tcp: np.ndarray  # (n, 3): tcp positions reached


def cartesian_path(world: CollisionWorld, ik: ArmIK, q_start: np.ndarray, displacement: np.ndarray, *,
                   step: float = 0.005, max_joint_step: float = 0.15, check_collisions: bool = True) -> CartesianPath:
    """Joint waypoints moving the tcp by `displacement` (world frame, m) in a straight line."""
    arm = ik.arm
    q = np.asarray(q_start, dtype=np.float64)
    start, rot = ik.fk(q)
    disp = np.asarray(displacement, dtype=np.float64)
    n = max(1, int(np.ceil(np.linalg.norm(disp) / step)))
    seeded = ArmIK(world, arm, IKOptions(restarts=0, collision_free=False, pos_tol=1e-3, rot_tol=np.deg2rad(1.0)))
    qs, tcps = [q], [start]
    for i in range(1, n + 1):
        target = start + disp * (i / n)
        try:
            q_next = seeded.solve(target, rot, rng=np.random.default_rng(0), q_ref=qs[-1])
        except IKError as exc:
            done = (i - 1) * step * 1e3
            raise PlanningError(f"arm {arm!r}: straight move stops after {done:.0f} mm: {exc}") from None
        jump = float(np.max(np.abs(q_next - qs[-1])))
        if jump > max_joint_step:
            raise PlanningError(f"arm {arm!r}: straight move is discontinuous at {i * step * 1e3:.0f} mm "
                                f"(a joint jumps {jump:.2f} rad; max {max_joint_step})")
        if check_collisions and world.in_collision({arm: q_next}):
            raise PlanningError(f"arm {arm!r}: straight move collides at {i * step * 1e3:.0f} mm: "
                                f"{world.colliding_pairs({arm: q_next})[:3]}")
        qs.append(q_next)
        tcps.append(target)
    return CartesianPath(arm, np.stack(qs), np.stack(tcps))


def time_polyline(arm: str, waypoints: np.ndarray, limits: Limits, dt: float) -> Trajectory:
    """One rest-to-rest profile along a finely stepped joint polyline, sampled every `dt`."""
    wps = np.asarray(waypoints, dtype=np.float64)
    slope = np.abs(np.diff(wps, axis=0)).max(axis=0)  # max joint change per unit of the path parameter
    moving = slope > 1e-12
    if len(wps) < 2 or not moving.any():
        z = np.zeros((1, wps.shape[1]))
        return Trajectory(arm, dt, wps[:1].copy(), z, z.copy())
    otg, inp, prof = ruckig.Ruckig(1), ruckig.InputParameter(1), ruckig.Trajectory(1)
    inp.current_position, inp.target_position = [0.0], [float(len(wps) - 1)]
    inp.max_velocity = [float(np.min(limits.velocity[moving] / slope[moving]))]
    inp.max_acceleration = [float(np.min(limits.acceleration[moving] / slope[moving]))]
    inp.max_jerk = [float(np.min(limits.jerk[moving] / slope[moving]))]
    if otg.calculate(inp, prof) not in (ruckig.Result.Working, ruckig.Result.Finished):
        raise PlanningError(f"arm {arm!r}: ruckig could not time the straight move")
    count = int(np.ceil(prof.duration / dt - 1e-9)) + 1
    q, qd, qdd = (np.zeros((count, wps.shape[1])) for _ in range(3))
    for k in range(count):
        s, sd, sdd = (v[0] for v in prof.at_time(min(k * dt, prof.duration)))
        i = min(int(s), len(wps) - 2)
        seg = wps[i + 1] - wps[i]
        q[k], qd[k], qdd[k] = wps[i] + seg * (s - i), seg * sd, seg * sdd
    q[-1] = wps[-1]
    return Trajectory(arm, dt, q, qd, qdd)
