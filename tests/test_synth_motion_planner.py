"""RRTConnect: finds a way into the open microwave, every edge is free, seeded, within budget."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import cavity_reach_problem

from x2.base.errors import PlanningError
from x2.sim.mujoco.collision import CollisionWorld
from x2.synth.motion.planner import RRTConnect


@pytest.fixture(scope="module")
def cavity_problem() -> tuple[CollisionWorld, np.ndarray, np.ndarray]:
    return cavity_reach_problem()[1:]


def _edges_free(world: CollisionWorld, arm: str, waypoints: np.ndarray, resolution: float) -> bool:
    for a, b in zip(waypoints[:-1], waypoints[1:], strict=True):
        n = max(1, int(np.ceil(np.max(np.abs(b - a)) / resolution)))
        if any(world.in_collision({arm: a + (b - a) * (i / n)}) for i in range(n + 1)):
            return False
    return True


@pytest.mark.parametrize("planner", [RRTConnect(detours=()), RRTConnect()], ids=["trees", "fixed detour"])
def test_reaches_into_open_microwave_around_obstacles(cavity_problem, planner):
    world, start, goal = cavity_problem
    plan = planner.plan(world, "left", start, goal, np.random.default_rng(0))
    assert plan.tree_nodes > 0  # the straight edge is blocked: this is a real detour
    np.testing.assert_array_equal(plan.waypoints[0], start)
    np.testing.assert_array_equal(plan.waypoints[-1], goal)
    assert _edges_free(world, "left", plan.waypoints, resolution=0.005)  # 4x finer than the planner
    lo, hi = world.joint_range["left"].T
    assert np.all(plan.waypoints >= lo) and np.all(plan.waypoints <= hi)
    assert 0 < plan.checks <= RRTConnect().max_checks


def test_same_seed_same_plan(cavity_problem):
    world, start, goal = cavity_problem
    a = RRTConnect().plan(world, "left", start, goal, np.random.default_rng(3))
    b = RRTConnect().plan(world, "left", start, goal, np.random.default_rng(3))
    assert a.waypoints.tobytes() == b.waypoints.tobytes() and a.checks == b.checks
    others = [RRTConnect().plan(world, "left", start, goal, np.random.default_rng(s)).waypoints for s in (4, 5)]
    assert all(_edges_free(world, "left", w, 0.02) for w in others)


def test_budget_is_honoured(cavity_problem):
    world, start, goal = cavity_problem
    before = world.checks
    with pytest.raises(PlanningError, match="no plan within 40 collision checks"):
        RRTConnect(max_checks=40).plan(world, "left", start, goal, np.random.default_rng(0))
    assert world.checks - before <= 40 + 2  # + the start/goal validation


def test_direct_edge_when_free(cavity_problem):
    world, start, _ = cavity_problem
    near = start + np.array([0.1, 0.05, -0.05, 0.1, 0.0, 0.2])
    plan = RRTConnect().plan(world, "left", start, near, np.random.default_rng(0))
    assert plan.tree_nodes == 0 and len(plan.waypoints) == 2


def test_start_in_collision_is_reported(cavity_problem):
    world, start, goal = cavity_problem
    crossed = np.array([-1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    world.set_arm("right", np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0]))
    try:
        with pytest.raises(PlanningError, match="start configuration is in collision"):
            RRTConnect().plan(world, "left", crossed, goal, np.random.default_rng(0))
    finally:
        world.set_arm("right", start)


def test_a_free_hint_is_taken_and_a_blocked_one_only_costs_checks(cavity_problem):
    world, start, goal = cavity_problem
    trees = RRTConnect(detours=(), shortcut_rounds=0)
    grown = trees.plan(world, "left", start, goal, np.random.default_rng(0))
    vias = grown.waypoints[1:-1]  # a free way, as the reverse of an earlier motion would be
    hinted = trees.plan(world, "left", start, goal, np.random.default_rng(0), hints=[vias])
    assert hinted.tree_nodes == len(vias) and hinted.checks < grown.checks
    np.testing.assert_array_equal(hinted.waypoints[[0, -1]], [start, goal])
    assert _edges_free(world, "left", hinted.waypoints, resolution=0.005)
    # a via in collision (on the blocked straight edge): the trees grow as without a hint
    blocked = next(start + (goal - start) * f for f in np.linspace(0.05, 0.95, 19)
                   if world.in_collision({"left": start + (goal - start) * f}))
    unhelped = trees.plan(world, "left", start, goal, np.random.default_rng(0), hints=[blocked[None]])
    assert unhelped.waypoints.tobytes() == grown.waypoints.tobytes()


def test_hints_are_tried_in_turn_and_without_trees_a_blocked_way_fails_cheaply(cavity_problem):
    world, start, goal = cavity_problem
    grown = RRTConnect(detours=(), shortcut_rounds=0).plan(world, "left", start, goal, np.random.default_rng(0))
    vias = grown.waypoints[1:-1]
    blocked = next(start + (goal - start) * f for f in np.linspace(0.05, 0.95, 19)
                   if world.in_collision({"left": start + (goal - start) * f}))
    cheap = RRTConnect(detours=(), shortcut_rounds=0, trees=False)
    second = cheap.plan(world, "left", start, goal, np.random.default_rng(0), hints=[blocked[None], vias])
    assert second.tree_nodes == len(vias) and _edges_free(world, "left", second.waypoints, resolution=0.005)
    before = world.checks
    with pytest.raises(PlanningError, match="no plan by the straight edge, its hints or the fixed detours"):
        cheap.plan(world, "left", start, goal, np.random.default_rng(0), hints=[blocked[None]])
    assert world.checks - before < grown.checks  # no tree was grown


def test_shortcuts_that_gain_little_are_not_checked(cavity_problem):
    world, start, goal = cavity_problem
    every = RRTConnect(detours=()).plan(world, "left", start, goal, np.random.default_rng(1))
    gainful = RRTConnect(detours=(), min_gain=0.1).plan(world, "left", start, goal, np.random.default_rng(1))
    assert gainful.checks < every.checks
    assert _edges_free(world, "left", gainful.waypoints, resolution=0.005)
