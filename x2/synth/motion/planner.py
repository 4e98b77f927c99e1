"""Collision-free joint-space planning for one arm: fixed detours, then RRT-Connect, with shortcutting.

The other arm stays at whatever configuration the `CollisionWorld` holds. The budget is counted in
collision checks, not wall time, so a plan depends only on (world, start, goal, rng state) and an
attempt replays bit for bit on any machine. Edges are checked at `resolution` (max joint step).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import PlanningError
from x2.base.vectors import norm
from x2.sim.mujoco.collision import CollisionWorld


@dataclass(frozen=True)
class Plan:
    """A collision-free piecewise-linear joint path; waypoints[0] is the start, waypoints[-1] the goal."""

    arm: str
    waypoints: Floats  # (n, dof), rad
    checks: int  # collision checks spent, including shortcutting
    tree_nodes: int  # 0 when the direct edge was free; its vias for a hint or a fixed detour; else the trees' nodes
    margin: float  # clearance (m) the path was checked with

    @property
    def length(self) -> float:
        return float(np.linalg.norm(np.diff(self.waypoints, axis=0), axis=1).sum())


class JointPathPlanner(Protocol):
    def plan(self, world: CollisionWorld, arm: str, q_start: Floats, q_goal: Floats,
             rng: np.random.Generator, hints: Sequence[Floats] = ()) -> Plan: ...


class _OutOfChecks(Exception):
    pass


class _BudgetChecker:
    """Collision checks for one arm with a budget; raises _OutOfChecks when it is spent."""

    def __init__(self, world: CollisionWorld, arm: str, budget: int, resolution: float):
        self.world, self.arm, self.budget, self.resolution = world, arm, budget, resolution
        self.used = 0

    def free(self, q: Floats) -> bool:
        if self.used >= self.budget:
            raise _OutOfChecks
        self.used += 1
        return not self.world.in_collision({self.arm: q})

    def edge_free(self, a: Floats, b: Floats) -> bool:
        """Configurations strictly after `a` up to and including `b`, at most `resolution` apart.

        The end first (a tree step's new node is likeliest to collide), then by bisection, so a blocked
        edge fails after a few checks; the verdict, and so the plan, is the same in any order."""
        n = max(1, int(np.ceil(np.max(np.abs(b - a)) / self.resolution)))
        qs = a + np.multiply.outer(_bisection_order(n) / n, b - a)
        in_collision, arm = self.world.in_collision, self.arm  # `free` inlined: a plan makes thousands of checks
        for q in qs:
            if self.used >= self.budget:
                raise _OutOfChecks
            self.used += 1
            if in_collision({arm: q}):
                return False
        return True


@functools.cache
def _bisection_order(n: int) -> Floats:
    """1..n with n first, then midpoints of ever finer halvings (1-D van der Corput order)."""
    order, seen, level = [n], {0, n}, [(0, n)]
    while level:
        finer = []
        for lo, hi in level:
            if hi - lo > 1:
                mid = (lo + hi) // 2
                order.append(mid)
                seen.add(mid)
                finer += [(lo, mid), (mid, hi)]
        level = finer
    assert len(order) == n and len(seen) == n + 1
    return np.array(order, dtype=np.float64)


class _Tree:
    def __init__(self, root: Floats):
        self.nodes: Floats = np.zeros((256, len(root)))
        self.nodes[0] = root
        self.parent = [-1]

    def __len__(self) -> int:
        return len(self.parent)

    def nearest(self, q: Floats) -> int:
        return int(np.argmin(np.sum((self.nodes[:len(self)] - q) ** 2, axis=1)))

    def add(self, q: Floats, parent: int) -> int:
        if len(self) == len(self.nodes):
            self.nodes = np.concatenate([self.nodes, np.zeros_like(self.nodes)])
        self.nodes[len(self)] = q
        self.parent.append(parent)
        return len(self) - 1

    def path_to_root(self, i: int) -> list[Floats]:
        out = []
        while i >= 0:
            out.append(self.nodes[i].copy())
            i = self.parent[i]
        return out


@dataclass(frozen=True)
class RRTConnect:
    """Bidirectional RRT; tries the straight edge first, then a few fixed detours, then grows trees, then
    shortcuts."""

    max_checks: int = 20_000
    resolution: float = 0.02  # rad, largest joint step between checked configurations on an edge
    extend: float = 0.3  # rad (L2), largest tree step toward a sample
    # 30, not 60: on fruit_in_microwave the paths came out ~as short (3.88 vs 3.89 rad a plan) for a
    # third fewer collision checks; the waypoint pruning after the rounds does most of the work
    shortcut_rounds: int = 30
    # A random shortcut is checked only if it makes the path between its two ends at least this much shorter
    # (a fraction of that stretch; 0: every one). Most of a plan's checks went into shortcuts that saved a few
    # percent of a nearly straight stretch: at 0.1 a concurrent plan takes 16 % fewer checks, paths as short.
    min_gain: float = 0.0
    trees: bool = True  # False: only the straight edge, the hints and the detours (PlanningError beyond them)
    # Fixed joint offsets d tried, in order, as a two-via detour start -> start+d -> goal+d -> goal before
    # any tree grows: the shoulder (joint 1) up a little and the elbow (joint 2) folded lift the arm and
    # draw it in over an obstacle's near edge, the last two with the wrist (joint 4) turned or the
    # shoulder higher. On fruit_in_microwave the move from the lifted fruit into the microwave's opening
    # clips the front corner on the straight edge, as does the way back home; these took ~2/3 of such
    # moves for ~150-250 checks each instead of RRT's 800-2,100 (32 plans, 16 attempts), a failing one
    # usually costing a few to ~30 checks (at most ~200). They depend only on (world, start, goal), never
    # on the rng, so a plan stays a pure function of the attempt. Offsets of another length than the
    # arm's dof are skipped.
    detours: tuple[tuple[float, ...], ...] = (
        (0.0, -0.2, 0.4, 0.0, 0.0, 0.0),
        (0.0, -0.2, 0.6, 0.0, 0.0, 0.0),
        (0.0, 0.0, 0.3, 0.0, 0.4, 0.0),
        (0.0, -0.4, 0.3, 0.0, 0.0, 0.0),
    )

    def plan(self, world: CollisionWorld, arm: str, q_start: Floats, q_goal: Floats,
             rng: np.random.Generator, hints: Sequence[Floats] = ()) -> Plan:
        """A path from `q_start` to `q_goal`. `hints`, each (k, dof): vias to try in turn, as start -> hint... ->
        goal, when the straight edge is blocked and before the detours (ways the caller has reason to think
        free, such as the reverse of the arm's previous motion)."""
        start, goal = np.asarray(q_start, dtype=np.float64), np.asarray(q_goal, dtype=np.float64)
        lo, hi = world.joint_range[arm][:, 0], world.joint_range[arm][:, 1]
        for name, q in (("start", start), ("goal", goal)):
            if np.any(q < lo - 1e-9) or np.any(q > hi + 1e-9):
                raise PlanningError(f"arm {arm!r}: {name} {np.round(q, 3).tolist()} is outside the joint limits")
            pairs = world.colliding_pairs({arm: q})
            if pairs:
                raise PlanningError(f"arm {arm!r}: {name} configuration is in collision "
                                    f"(margin {world.margin * 1e3:.0f} mm): {pairs[:3]}")
        checker = _BudgetChecker(world, arm, self.max_checks, self.resolution)
        with world.moving_only((arm,)):  # every check from here on moves only `arm`, and its start is free
            try:
                if checker.edge_free(start, goal):
                    return Plan(arm, np.stack([start, goal]), checker.used, 0, world.margin)
                path, nodes = None, 0
                for hint in hints:
                    if len(hint):
                        path, nodes = self._through(checker, start, hint, goal, lo, hi), len(hint)
                    if path is not None:
                        break
                if path is None:
                    path, nodes = self._detour(checker, start, goal, lo, hi), 2
                if path is None and not self.trees:
                    raise PlanningError(f"arm {arm!r}: no plan by the straight edge, its hints or the fixed detours")
                if path is None:
                    path, nodes = self._grow(checker, start, goal, lo, hi, rng)
            except _OutOfChecks:
                raise PlanningError(f"arm {arm!r}: no plan within {self.max_checks} collision checks") from None
            with contextlib.suppress(_OutOfChecks):  # out of checks: the unshortened path is still collision-free
                path = self._shortcut(checker, path, rng)
        return Plan(arm, np.stack(path), checker.used, nodes, world.margin)

    def _detour(self, checker: _BudgetChecker, start: Floats, goal: Floats, lo: Floats,
                hi: Floats) -> list[Floats] | None:
        """The first of the fixed `detours` whose three edges are free at full resolution, or None."""
        for offset in self.detours:
            d = np.asarray(offset, dtype=np.float64)
            if len(d) != len(start):
                continue
            path = self._through(checker, start, np.stack([start + d, goal + d]), goal, lo, hi)
            if path is not None:
                return path
        return None

    @staticmethod
    def _through(checker: _BudgetChecker, start: Floats, vias: Floats, goal: Floats, lo: Floats,
                 hi: Floats) -> list[Floats] | None:
        """start -> vias -> goal if the vias are within the limits and every edge is free, else None."""
        if np.any(vias < lo) or np.any(vias > hi):
            return None
        path = [start, *np.asarray(vias, dtype=np.float64), goal]
        if all(checker.edge_free(a, b) for a, b in zip(path[:-1], path[1:], strict=True)):
            return path
        return None

    def _grow(self, checker: _BudgetChecker, start: Floats, goal: Floats, lo: Floats, hi: Floats,
              rng: np.random.Generator) -> tuple[list[Floats], int]:
        ta, tb = _Tree(start), _Tree(goal)
        a_is_start = True
        while True:  # ends by finding a path or by _OutOfChecks
            sample = rng.uniform(lo, hi)
            new = self._step(checker, ta, sample)
            if new is not None:
                reached = self._connect(checker, tb, ta.nodes[new])
                if reached is not None:
                    half_a, half_b = ta.path_to_root(new), tb.path_to_root(reached)
                    path = half_a[::-1] + half_b[1:] if a_is_start else half_b[::-1] + half_a[1:]
                    return path, len(ta) + len(tb)
            ta, tb, a_is_start = tb, ta, not a_is_start

    def _step(self, checker: _BudgetChecker, tree: _Tree, target: Floats) -> int | None:
        near = tree.nearest(target)
        q_near = tree.nodes[near].copy()
        delta = target - q_near
        dist = norm(delta)
        q_new = target if dist <= self.extend else q_near + delta * (self.extend / dist)
        if dist < 1e-9 or not checker.edge_free(q_near, q_new):
            return None
        return tree.add(q_new, near)

    def _connect(self, checker: _BudgetChecker, tree: _Tree, target: Floats) -> int | None:
        while True:
            i = self._step(checker, tree, target)
            if i is None:
                return None
            if np.allclose(tree.nodes[i], target, atol=1e-12):
                return i

    def _shortcut(self, checker: _BudgetChecker, path: list[Floats], rng: np.random.Generator) -> list[Floats]:
        # Random shortcuts between points anywhere on the path, then drop waypoints whose
        # neighbours see each other; both only ever replace checked edges by checked edges.
        for _ in range(self.shortcut_rounds):
            if len(path) < 3:
                break
            seg = np.linalg.norm(np.diff(np.stack(path), axis=0), axis=1)
            cum = np.concatenate([[0.0], np.cumsum(seg)])
            t1, t2 = np.sort(rng.uniform(0.0, cum[-1], size=2))
            i, j = int(np.searchsorted(cum, t1, side="right")) - 1, int(np.searchsorted(cum, t2, side="right")) - 1
            if i == j:
                continue
            a = path[i] + (path[i + 1] - path[i]) * ((t1 - cum[i]) / max(seg[i], 1e-12))
            b = path[j] + (path[j + 1] - path[j]) * ((t2 - cum[j]) / max(seg[j], 1e-12))
            if self.min_gain > 0.0 and (t2 - t1) - norm(b - a) < self.min_gain * (t2 - t1):
                continue
            if checker.edge_free(a, b):
                path = [*path[:i + 1], a, b, *path[j + 1:]]
        k = 1
        while k < len(path) - 1:
            if checker.edge_free(path[k - 1], path[k + 1]):
                del path[k]
            else:
                k += 1
        return path
