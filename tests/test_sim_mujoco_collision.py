"""CollisionWorld: what counts as a collision, attachments, allowed pairs, speed, isolation from the sim."""

from __future__ import annotations

import numpy as np
import pytest

from x2.envspec import load_env
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.collision import CollisionWorld
from x2.sim.mujoco.ik import ArmIK, IKOptions

ROBOT_PREFIXES = ("left_", "right_")


@pytest.fixture(scope="module")
def backend() -> MujocoBackend:
    b = MujocoBackend(load_env("fruit_in_microwave"))
    assert b.reset(1).assets["fruit"] == "apple"  # a round fruit the open fingers straddle
    return b


@pytest.fixture()
def world(backend: MujocoBackend) -> CollisionWorld:
    return CollisionWorld(backend)


def _home(backend: MujocoBackend) -> dict[str, np.ndarray]:
    return {a.name: np.array(a.home) for a in backend.env.robot.arms}


def _reach(world: CollisionWorld, arm: str, pos: np.ndarray) -> np.ndarray:
    """Joint angles putting the tcp at pos, collisions allowed (we want to provoke them)."""
    ik = ArmIK(world, arm, IKOptions(collision_free=False, pos_tol=5e-3))
    return ik.solve(pos, rng=np.random.default_rng(0))


def test_home_is_free_with_and_without_margin(world, backend):
    assert world.colliding_pairs(_home(backend)) == []
    world.margin = 0.02
    assert not world.in_collision(_home(backend))


def test_arm_into_table_collides(world, backend):
    fruit = backend.object_pos("fruit")
    q = _reach(world, "right", np.array([fruit[0] + 0.1, fruit[1], backend.table_height - 0.03]))
    pairs = world.colliding_pairs({"right": q})
    assert any("table_top" in p for p in pairs), pairs


def test_arm_into_microwave_and_door_collides(world, backend):
    cavity, _, _ = backend.site_box("microwave/cavity")
    q = _reach(world, "left", cavity + np.array([0.0, 0.0, 0.02]))  # door closed: through the door into the oven
    pairs = world.colliding_pairs({"left": q})
    assert any(g.startswith("microwave/") for p in pairs for g in p), pairs


def _arm_arm(pairs: list[tuple[str, str]]) -> bool:
    return any(a.startswith("left_") and b.startswith("right_") or a.startswith("right_") and b.startswith("left_")
               for a, b in pairs)


def test_arms_collide_with_each_other(world, backend):
    """Crossed arms touch in the checker, and in the live simulator too, on exactly the same geom pairs."""
    crossed = {"left": np.array([-1.0, 0.0, 0.0, 0, 0, 0]), "right": np.array([1.0, 0.0, 0.0, 0, 0, 0])}
    pairs = world.colliding_pairs(crossed)
    assert _arm_arm(pairs), pairs
    backend.set_joint_values({f"{arm}_j{i + 1}": v for arm, q in crossed.items() for i, v in enumerate(q)})
    sim_pairs = [(c.geom1, c.geom2) for c in backend.contacts()]
    backend.set_joint_values({f"{arm}_j{i + 1}": v for arm, q in _home(backend).items() for i, v in enumerate(q)})
    assert _arm_arm(sim_pairs), sim_pairs
    assert {frozenset(p) for p in sim_pairs} == {frozenset(p) for p in pairs}


def test_checker_counts_what_the_simulator_puts_in_contact(backend):
    """Over random configurations of both arms: the checker's pairs at margin 0 are the simulator's
    contacts that involve the robot (world-world contacts, like the fruit on the table, never count)."""
    w = CollisionWorld(backend)
    robot = w.robot_body  # body id -> part of the robot
    rng = np.random.default_rng(3)
    lo = {a: w.joint_range[a][:, 0] for a in w.arms}
    hi = {a: w.joint_range[a][:, 1] for a in w.arms}
    robot_robot = 0
    try:
        for _ in range(60):
            q = {a: rng.uniform(lo[a], hi[a]) for a in w.arms}
            checker = {frozenset(p) for p in w.colliding_pairs(q)}
            backend.set_joint_values({f"{a}_j{i + 1}": v for a, qa in q.items() for i, v in enumerate(qa)})
            sim = {frozenset((c.geom1, c.geom2)) for c in backend.contacts()
                   if robot[backend.model.body(c.body1).id] or robot[backend.model.body(c.body2).id]}
            assert checker == sim
            robot_robot += any(all(robot[backend.model.geom(g).bodyid[0]] for g in p) for p in sim)
    finally:
        backend.set_joint_values({f"{a}_j{i + 1}": v for a, qa in _home(backend).items() for i, v in enumerate(qa)})
    assert robot_robot >= 5  # the draws did exercise robot-robot contacts


def _arm_of(world: CollisionWorld, geom: str) -> str | None:
    """The arm whose link1 subtree holds this geom (None: the torso, its brackets, the world)."""
    m = world.model
    body = int(m.geom(geom).bodyid[0])
    while body != 0:
        for arm in world.arms:
            if m.body(body).name == f"{arm}_link1":
                return arm
        body = int(m.body_parentid[body])
    return None


def test_margin_pads_against_the_rest_of_the_robot_not_within_one_arm(backend):
    """The margin counts near-contacts with the world, the torso and the other arm; one arm's own parts
    count only when they touch (at home the closed jaws stand 10 mm apart and the forearm 25 mm from the
    wrist, closer than the planner's clearances)."""
    w = CollisionWorld(backend, margin=0.035)
    for arm in w.arms:
        for finger in backend.env.robot.arm(arm).gripper_joints:
            w.set_joint(finger, 0.0)
    assert not w.in_collision(_home(backend))
    rng = np.random.default_rng(5)
    padded = 0
    for _ in range(150):
        q = {a: rng.uniform(w.joint_range[a][:, 0], w.joint_range[a][:, 1]) for a in w.arms}
        w.margin = 0.0
        touching = {frozenset(p) for p in w.colliding_pairs(q)}
        w.margin = 0.03
        near = {frozenset(p) for p in w.colliding_pairs(q)} - touching
        for pair in near:
            owners = {_arm_of(w, g) for g in pair}
            assert len(owners) == 2 or owners == {None}, pair  # never two parts of one arm
        padded += bool(near)
    assert padded >= 10  # the margin did pad some draws


def test_allow_ignores_expected_contacts(world, backend):
    fruit = backend.object_pos("fruit").copy()
    q = _reach(world, "right", fruit + np.array([0.0, 0.0, 0.01]))
    pairs = world.colliding_pairs({"right": q})
    assert any(g.startswith("fruit/") for p in pairs for g in p), pairs
    world.allow([("right_gripper", "fruit"), ("right_finger_a", "fruit"), ("right_finger_b", "fruit"),
                 ("right_gripper", "table_top"), ("right_finger_a", "table_top"),
                 ("right_finger_b", "table_top")])
    rest = world.colliding_pairs({"right": q})
    assert not any(g.startswith("fruit/") for p in rest for g in p), rest
    world.clear_allowed()
    assert world.in_collision({"right": q})


def test_attached_object_moves_with_tcp_and_collides(world, backend):
    fruit = backend.object_pos("fruit").copy()
    world.allow([("right_finger_a", "fruit"), ("right_finger_b", "fruit"), ("right_gripper", "fruit")])
    world.set_arm("right", _reach(world, "right", fruit + np.array([0.0, 0.0, 0.01])))
    world.attach("fruit", "right")
    # lifted: the held fruit rises with the tcp and does not count against its own gripper
    lifted = _reach(world, "right", fruit + np.array([0.0, 0.0, 0.2]))
    assert not world.in_collision({"right": lifted})
    body = world.model.body("fruit/object").id
    assert world.data.xpos[body][2] > fruit[2] + 0.15  # data holds the last checked configuration
    # pushed down through the table: the fruit (not only the gripper) hits it
    low = _reach(world, "right", fruit + np.array([0.0, 0.0, -0.005]))
    pairs = world.colliding_pairs({"right": low})
    assert any("table_top" in p and any(g.startswith("fruit/") for g in p) for p in pairs), pairs
    world.detach("fruit")


def test_world_never_touches_live_sim(backend):
    before = backend.get_state().copy()
    w = CollisionWorld(backend)
    w.in_collision({"left": np.zeros(6), "right": np.zeros(6)})
    w.margin = 0.05
    np.testing.assert_array_equal(backend.get_state(), before)
    assert backend.model.geom_margin.max() == 0.0


def test_checks_are_counted(world):
    # Their speed (~30 us each) is measured in bench/bench_collision.py: a timed assertion here failed on a
    # loaded machine.
    rng = np.random.default_rng(0)
    lo, hi = world.joint_range["right"].T
    qs = [rng.uniform(lo, hi) for _ in range(2000)]
    start = world.checks
    for q in qs:
        world.in_collision({"right": q})
    assert world.checks - start == len(qs)


def test_moving_only_keeps_every_verdict_of_checks_moving_that_arm(backend):
    """From a free configuration, checks of one arm (holding the fruit, so its held object moves too) give the
    same verdicts with and without `moving_only`, which leaves the masks as they were on exit."""
    world = CollisionWorld(backend, margin=0.01)
    fruit = backend.object_pos("fruit").copy()
    world.allow([("right_finger_a", "fruit"), ("right_finger_b", "fruit"), ("right_gripper", "fruit")])
    world.set_arm("right", _reach(world, "right", fruit + np.array([0.0, 0.0, 0.01])))
    world.attach("fruit", "right")
    world.set_arm("right", _reach(world, "right", fruit + np.array([0.0, 0.0, 0.15])))
    world.set_arm("left", np.array([0.5, 0.0, 0.0, 0.0, 0.0, 0.0]))  # reaching towards the right arm's side
    assert not world.in_collision({})
    rng = np.random.default_rng(3)
    lo, hi = world.joint_range["right"].T
    qs = [rng.uniform(lo, hi) for _ in range(300)]
    full = [world.in_collision({"right": q}) for q in qs]
    masks = world.model.geom_contype.copy(), world.model.geom_conaffinity.copy(), world.model.body_contype.copy()
    with world.moving_only(("right",)):
        reduced = [world.in_collision({"right": q}) for q in qs]
    assert 30 < sum(full) < 270  # both verdicts are common, on the table, the oven, the left arm
    assert reduced == full
    after = world.model.geom_contype, world.model.geom_conaffinity, world.model.body_contype
    assert all(np.array_equal(a, b) for a, b in zip(masks, after, strict=True))


def test_a_query_counts_only_the_contacts_of_the_arms_it_moves(backend):
    """With the left arm through the closed oven door, the right arm at home is free (what the left arm touches is
    not the right arm's way blocked), the left arm is not; the compatibility mode (every contact counts, the motion
    layer before the arm scheduler) and moving_only agree with that mode's own verdicts."""
    cavity, _, _ = backend.site_box("microwave/cavity")
    home_right = np.array(backend.env.robot.arm("right").home)
    for moved_only in (True, False):
        world = CollisionWorld(backend, moved_contacts_only=moved_only)
        q_left = _reach(world, "left", cavity + np.array([0.0, 0.0, 0.02]))
        world.set_arm("left", q_left)
        assert world.in_collision({"right": home_right}) is not moved_only
        assert (world.colliding_pairs({"right": home_right}) == []) is moved_only
        assert world.in_collision({"left": q_left})
        assert any("left" in a or "left" in b for a, b in world.colliding_pairs({"left": q_left}))
        with world.moving_only(("right",)):  # skips the pairs the right arm is not part of, in either mode
            assert not world.in_collision({"right": home_right})


def test_between_arms_only_keeps_every_arms_clash_verdict(backend):
    """Random configurations of both arms, some near each other, some in the table or the oven: arms_clash says
    the same with and without `between_arms_only`, which leaves the masks as they were on exit."""
    world = CollisionWorld(backend, margin=0.03)
    rng = np.random.default_rng(5)
    ranges = {arm: world.joint_range[arm].T for arm in world.arms}
    qs = [{arm: rng.uniform(lo, hi) for arm, (lo, hi) in ranges.items()} for _ in range(300)]
    full = [world.arms_clash(q) for q in qs]
    masks = world.model.geom_contype.copy(), world.model.geom_conaffinity.copy(), world.model.body_contype.copy()
    with world.between_arms_only():
        reduced = [world.arms_clash(q) for q in qs]
    assert 10 < sum(full) < 290
    assert reduced == full
    assert sum(world.in_collision(q) for q in qs) > sum(full)  # (the world counts again outside)
    after = world.model.geom_contype, world.model.geom_conaffinity, world.model.body_contype
    assert all(np.array_equal(a, b) for a, b in zip(masks, after, strict=True))
