"""Tcp paths followed by seeded IK: the one implementation behind synthesis' straight and screw moves.

A path is a sequence of tcp poses (`TcpPoses`), each at a value s of a path parameter; the first pose
is where the arm starts. `follow` solves the others in order, each from the previous solution
(`SeededIK`: damped least squares, a few iterations a step), so the arm keeps its IK branch: a step
that moves any joint by more than `max_jump` is a branch switch and ends the path, as a pose the
iteration does not reach does. What counts as a collision is the caller's `collides(q, s)`: it sees the
configuration and the path parameter, so it can allow the gripper on a handle, put a door where it will
be at s, set the fingers' opening or widen the margin. With `midpoints` it also sees each step's
joint-space midpoint (at the mean s): coarse steps (3 cm) bow away from the tcp line in between.
Where the path breaks off, `follow` raises `PathBreak` (a PlanningError saying where and why) or, with
`partial`, returns the waypoints up to there and the break.

Generators: `line` (the tcp translates at a fixed orientation) and `screw` (it turns about an axis
through an anchor). Both take the path parameter's values and the value at which the given pose holds,
so a part moving with the hand (a drawer on its slide, a door on its hinge) can have its own joint
value as s. `straight` and `turn` start them at a configuration's tcp pose and follow them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import PathBreak
from x2.base.vectors import norm
from x2.synth.motion.seeded import SeededIK

Collides = Callable[[Floats, float], bool]  # (arm configuration, path parameter) -> in collision
Explain = Callable[[Floats, float], object]  # what a colliding configuration touches, for the message

# DLS iterations a step may take: ArmDLS's default, which the pick / place and open / close moves were
# tuned with. From the previous waypoint a 2 cm step converges in at most 10 (tests/test_synth_skills_articulated.py);
# a step that needs more than 40 counts as out of reach.
STEP_ITERS = 40


@dataclass(frozen=True)
class TcpPoses:
    """Tcp poses along a path; pose 0 is where the arm starts."""

    pos: Floats  # (n, 3) world positions
    rot: Floats  # (n, 3, 3) rotation matrices
    s: Floats  # (n,) the path parameter at each pose
    kind: str  # what messages call the move: "straight move", "screw move"
    unit: str  # of s: "m" or "rad"

    def __len__(self) -> int:
        return len(self.s)

    def distance(self, s: float) -> str:
        """How far along the path s is, in words for messages (mm or deg from the start)."""
        d = abs(s - float(self.s[0]))
        return f"{d * 1e3:.0f} mm" if self.unit == "m" else f"{np.rad2deg(d):.0f} deg"


@dataclass(frozen=True)
class TcpPath:
    """Joint waypoints following `TcpPoses`; waypoint 0 is the start configuration."""

    arm: str
    waypoints: Floats  # (k, dof)
    s: Floats  # (k,) the path parameter each waypoint reaches
    broke: PathBreak | None  # why a partial path ends before the last pose; None if it gets there
    solves: int  # IK solves spent (for effort statistics)

    @property
    def complete(self) -> bool:
        return self.broke is None

    @property
    def reached(self) -> float:
        """The path parameter of the last waypoint."""
        return float(self.s[-1])


# ----- generators ------------------------------------------------------------------------------------
def steps(start: float, end: float, step: float) -> Floats:
    """`start`, then evenly spaced values up to and including `end`, at most `step` apart."""
    n = max(1, int(np.ceil(abs(end - start) / step - 1e-9)))
    out = start + (end - start) * np.arange(n + 1) / n
    out[-1] = end  # not a rounding error short of (or past) it: a part's joint limit may be the end
    return out


def rotations(axis: Floats, angles: Floats) -> Floats:
    """(n, 3, 3) rotation matrices of `angles` rad about `axis` (Rodrigues)."""
    a = np.asarray(axis, dtype=np.float64)
    a = a / norm(a)
    k = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    t = np.asarray(angles, dtype=np.float64)[:, None, None]
    out: Floats = np.eye(3) + np.sin(t) * k + (1 - np.cos(t)) * (k @ k)
    return out


def line(pos: Floats, rot: Floats, direction: Floats, s: Floats, *,
         origin: float = 0.0) -> TcpPoses:
    """The tcp at (`pos`, `rot`) when s = `origin`, moved by `direction` * (s - origin) at the same
    orientation (`direction` is normalised, so s is in metres; a zero direction stays put)."""
    u = np.asarray(direction, dtype=np.float64)
    norm = float(np.linalg.norm(u))
    u = u / norm if norm > 1e-12 else np.zeros(3)
    s = np.asarray(s, dtype=np.float64)
    positions = np.asarray(pos, dtype=np.float64) + (s - origin)[:, None] * u
    return TcpPoses(positions, np.repeat(np.asarray(rot, dtype=np.float64)[None], len(s), axis=0), s,
                    "straight move", "m")


def screw(pos: Floats, rot: Floats, axis: Floats, anchor: Floats, s: Floats, *,
          origin: float = 0.0) -> TcpPoses:
    """The tcp at (`pos`, `rot`) when s = `origin`, turned by (s - origin) rad about the line through
    `anchor` along `axis` (right-handed), position and orientation together, as a hand on a hinged part."""
    s = np.asarray(s, dtype=np.float64)
    turns = rotations(axis, s - origin)
    c = np.asarray(anchor, dtype=np.float64)
    positions = c + turns @ (np.asarray(pos, dtype=np.float64) - c)
    return TcpPoses(positions, turns @ np.asarray(rot, dtype=np.float64), s, "screw move", "rad")


# ----- following -------------------------------------------------------------------------------------
def follow(ik: SeededIK, q_start: Floats, poses: TcpPoses, collides: Collides, *, max_jump: float,
           midpoints: bool = True, partial: bool = False, iters: int = STEP_ITERS,
           explain: Explain | None = None, refine: bool = True) -> TcpPath:
    """Joint waypoints through `poses` from `q_start` (the arm at pose 0), each solved from the previous
    one in `iters` DLS iterations. A pose not reached, a joint moving more than `max_jump` rad in one step
    (with `refine`: still more than half of it in one of the step's REFINE finer parts), or `collides` (at
    each waypoint and, with `midpoints`, each step's midpoint) ends the path: raises
    `PathBreak`, or with `partial` returns the waypoints before it with the break in `broke`. `explain`
    (q, s) -> what q touches, called once at a collision for the message."""
    q_prev: Floats = np.asarray(q_start, dtype=np.float64)
    s_prev = float(poses.s[0])
    qs: list[Floats] = [q_prev]
    reached = [s_prev]
    broke: PathBreak | None = None
    solves = 0
    for k in range(1, len(poses)):
        s = float(poses.s[k])
        solves += 1
        q = ik.solve(poses.pos[k], poses.rot[k], q_prev, iters=iters)
        fine: list[tuple[Floats, float]] = []  # the step in finer steps, where it needed them
        if q is None:
            broke = _break(ik.arm, poses, "ik", "has no IK solution", s, s_prev)
        elif (jump := float(np.max(np.abs(q - q_prev)))) > max_jump:
            if refine:
                fine = _finer(ik, poses, k, q_prev, max_jump, iters)
                solves += REFINE
            if not fine:
                broke = _break(ik.arm, poses, "jump", f"switches IK branch (a joint jumps {jump:.2f} rad; "
                                                       f"max {max_jump})", s, s_prev)
        for q_f, s_f in fine or ([(q, s)] if broke is None and q is not None else []):
            checks = [(q_f, s_f), ((q_f + q_prev) / 2, (s_f + s_prev) / 2)] if midpoints else [(q_f, s_f)]
            hit = next(((q_c, s_c) for q_c, s_c in checks if collides(q_c, s_c)), None)
            if hit is not None:
                what = f": {explain(*hit)}" if explain is not None else ""
                broke = _break(ik.arm, poses, "collision", f"collides{what}", hit[1], s_prev)
                break
            qs.append(q_f)
            reached.append(s_f)
            q_prev, s_prev = q_f, s_f
        if broke is not None:
            if not partial:
                raise broke
            break
    return TcpPath(ik.arm, np.stack(qs), np.array(reached), broke, solves)


# A step whose joints jump more than max_jump is tried again in REFINE equal parts: near a singularity a joint
# moves fast but continuously, and then no part jumps more than half of max_jump; a real switch of IK branch
# still jumps in one part, and the path breaks there. (Without `refine`, the motion layer before this existed,
# which `x2 synth --sequential` keeps for its bytes, the path breaks at the first jump.)
REFINE = 4


def _finer(ik: SeededIK, poses: TcpPoses, k: int, q_prev: Floats, max_jump: float,
           iters: int) -> list[tuple[Floats, float]]:
    """Step k of a straight move in REFINE parts, each solved from the one before: (q, s) of each part, or []
    where a part has no solution or still jumps more than max_jump / 2 (screw moves: [])."""
    if not np.allclose(poses.rot[k], poses.rot[k - 1]):
        return []
    out: list[tuple[Floats, float]] = []
    q = q_prev
    for i in range(1, REFINE + 1):
        f = i / REFINE
        pos = poses.pos[k - 1] + f * (poses.pos[k] - poses.pos[k - 1])
        nxt = ik.solve(pos, poses.rot[k], q, iters=iters)
        if nxt is None or float(np.max(np.abs(nxt - q))) > max_jump / 2:
            return []
        q = nxt
        out.append((q, float(poses.s[k - 1] + f * (poses.s[k] - poses.s[k - 1]))))
    return out


def _break(arm: str, poses: TcpPoses, cause: str, problem: str, s: float, reached: float) -> PathBreak:
    total = poses.distance(float(poses.s[-1]))
    return PathBreak(f"arm {arm!r}: {poses.kind} {problem} at {poses.distance(s)} of {total}", cause, reached)


def straight(ik: SeededIK, q_start: Floats, displacement: Floats, collides: Collides, *, step: float,
             max_jump: float, midpoints: bool = True, partial: bool = False, iters: int = STEP_ITERS,
             explain: Explain | None = None, refine: bool = True) -> TcpPath:
    """The tcp moves from its pose at `q_start` by `displacement` (world, m) at a fixed orientation, in
    even steps of at most `step` m; the rest as `follow`."""
    q0 = np.asarray(q_start, dtype=np.float64)
    disp = np.asarray(displacement, dtype=np.float64)
    pos, rot = ik.fk(q0)
    poses = line(pos, rot, disp, steps(0.0, float(np.linalg.norm(disp)), step))
    return follow(ik, q0, poses, collides, max_jump=max_jump,
                  midpoints=midpoints, partial=partial, iters=iters, explain=explain, refine=refine)


def turn(ik: SeededIK, q_start: Floats, axis: Floats, anchor: Floats, angle: float,
         collides: Collides, *, step: float, max_jump: float, midpoints: bool = True, partial: bool = False,
         iters: int = STEP_ITERS, explain: Explain | None = None) -> TcpPath:
    """The tcp turns from its pose at `q_start` by `angle` rad about the line (`anchor`, `axis`), in even
    steps of at most `step` rad; the rest as `follow`."""
    q0 = np.asarray(q_start, dtype=np.float64)
    pos, rot = ik.fk(q0)
    return follow(ik, q0, screw(pos, rot, axis, anchor, steps(0.0, angle, step)), collides, max_jump=max_jump,
                  midpoints=midpoints, partial=partial, iters=iters, explain=explain)
