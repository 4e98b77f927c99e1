"""The task suite: every built-in task compiles with the capability dimensions it exercises, `x2 tasks ls`
filters by one, and the precision task's tower really stands (read from the recorded states)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.x2_cli import run_x2

from x2 import format as fmt
from x2.datasets import Dataset, Episode
from x2.envspec import load_env, names
from x2.envspec.schema import DIMENSIONS
from x2.labeling import topological_order
from x2.recorded.relabel import relabel
from x2.recorded.replay import deepest_penetration
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun


@pytest.mark.parametrize("task", names("tasks"))
def test_every_task_compiles_with_its_dimensions(task: str) -> None:
    env = load_env(task)
    assert env.task is not None and env.task.dimensions
    assert set(env.task.dimensions) <= set(DIMENSIONS)
    topological_order(env.task.node_ids, env.task.edges)  # a DAG


@pytest.mark.parametrize("task", names("tasks"))
def test_a_lift_completes_a_node_only_in_the_hand(task: str) -> None:
    """A node that succeeds on an object lifted also needs a gripper holding it, the skill's own where it names an
    arm: a block knocked or flung into the air is not a pick (a per-subtask rate or a label would credit a grasp the
    gripper never made)."""
    env = load_env(task)
    assert env.task is not None
    for node in env.task.nodes:
        held = {str(c.args["obj"]): str(c.args["arm"]) for c in node.success if c.name == "gripper_holding"}
        for call in node.success:
            if call.name == "object_lifted":
                obj = str(call.args["obj"])
                assert obj in held, f"{task}: {node.id} succeeds on {call.describe()} without gripper_holding"
                if node.skill is not None and node.skill.name in ("pick", "intercept"):
                    assert held[obj] == node.skill.arm, (task, node.id, held[obj], node.skill.arm)


def test_a_block_flung_into_the_air_is_not_picked() -> None:
    """pick_place's pick from the physics: the block 10 cm above its rest with no finger on it is lifted but not
    picked; the same height between the closed fingers is picked."""
    from x2.sim.mujoco.backend import MujocoBackend
    from x2.tasks.predicates import holds

    env = load_env("pick_place")
    assert env.task is not None
    pick = next(n for n in env.task.nodes if n.id == "pick")
    backend = MujocoBackend(env)
    try:
        backend.reset(0)
        block = next(str(c.args["obj"]) for c in pick.success if c.name == "object_lifted")

        def picked() -> bool:
            return all(holds(backend, c.name, c.args) for c in pick.success)

        flung = np.array(backend.object_pos(block), copy=True) + np.array([0.0, 0.0, 0.10])
        backend.set_object_pose(block, flung, np.array([1.0, 0, 0, 0]))
        assert holds(backend, "object_lifted", {"obj": block, "height": 0.05}) and not picked()
        arm = env.robot.arms[-1].name
        tcp = backend.robot_state().ee_pose[-1, :3]  # the block between the open fingers, then the gripper closed
        backend.set_object_pose(block, tcp - np.array([0.0, 0.0, 0.025]), np.array([1.0, 0, 0, 0]))
        action = backend.home_action()
        action[backend.action_layout.arm(arm).gripper] = 0.0
        for _ in range(30):
            backend.step(action)
        assert picked()
    finally:
        backend.close()


def test_tasks_ls_filters_by_dimension(tmp_path: Path) -> None:
    out = run_x2(["tasks", "ls", "--dimension", "precision"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert "stack_blocks" in out.stdout and "pick_place" not in out.stdout
    bad = run_x2(["tasks", "ls", "--dimension", "speed"], tmp_path)
    assert bad.returncode == 2 and "--dimension: found 'speed'; allowed: generalization" in bad.stderr


def _one_episode(task: str, out: Path, seed: int) -> Dataset:
    run = SynthRun(SynthConfig(SessionOptions(task), n=1, workers=1, seed=seed, max_attempts=3), out).run()
    assert run.accepted == 1
    return Dataset.open(out)


def _respects_the_dag(ep: Episode) -> None:
    """Every node's first completion comes after its predecessors' (the DAG's partial order, from the events)."""
    first: dict[str, int] = {}
    for node, frame in ep.events:
        first.setdefault(node, frame)
    edges = ep.dag["edges"]
    assert edges and all(first[a] <= first[b] for a, b in edges), (first, edges)


def _sound(ep: Episode) -> None:
    """No contact the physics would not have (validate --physics' limit) and labels that reproduce offline."""
    assert deepest_penetration(ep).depth < 0.005
    assert relabel(ep).identical


def _object_poses(ep: Episode) -> tuple[list[str], np.ndarray]:
    """The recorded objects' names and their (T, K, 7) poses, read from the states' stream."""
    return [str(n) for n in ep.dataset_attrs(fmt.OBJECT_POSES)["names"]], np.asarray(ep[fmt.OBJECT_POSES])


def _final_pose(ep: Episode, obj: str) -> np.ndarray:
    names, poses = _object_poses(ep)
    return poses[-1, names.index(obj)]


def test_stack_blocks_builds_a_tower_whose_labels_reproduce(tmp_path: Path) -> None:
    ds = _one_episode("stack_blocks", tmp_path / "stack", seed=2)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        a, b, c = (_final_pose(ep, o)[:3] for o in ("block_a", "block_b", "block_c"))
        # each block one block height (5 cm) above the one below, within a few millimetres sideways
        assert b[2] - a[2] == pytest.approx(0.05, abs=0.003) and c[2] - b[2] == pytest.approx(0.05, abs=0.003)
        assert np.hypot(*(b - a)[:2]) < 0.015 and np.hypot(*(c - b)[:2]) < 0.015
        _sound(ep)


def test_pick_place_among_distractors_leaves_them_where_they_stood(tmp_path: Path) -> None:
    run = SynthRun(SynthConfig(SessionOptions("pick_place", variant="cluttered"), n=1, workers=1, seed=0,
                               max_attempts=3), tmp_path / "clutter").run()
    assert run.accepted == 1
    ds = Dataset.open(tmp_path / "clutter")
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        names, poses = _object_poses(ep)
        for name in ("distractor_1", "distractor_2"):  # drawn from the pool, and never touched (from the states)
            assert ep.json_attr(fmt.ASSETS_ATTR)[name] in ("apple", "orange", "mug", "bottle")
            moved = np.abs(poses[:, names.index(name), :3] - poses[0, names.index(name), :3]).max()
            assert moved < 0.001, (name, moved)
        _sound(ep)


def test_drawer_bottle_shuts_the_bottle_in_the_drawer(tmp_path: Path) -> None:
    ds = _one_episode("drawer_bottle", tmp_path / "drawer", seed=1)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        assert [n for n, _ in ep.events][:4] == ["open_drawer", "pick_bottle", "place_bottle", "close_drawer"]
        cabinet, bottle = _final_pose(ep, "cabinet"), _final_pose(ep, "bottle")
        # behind the cabinet's front (0.15 m before its centre, along -x) and standing on the tray floor
        assert bottle[0] > cabinet[0] - 0.15 and abs(bottle[2] - (cabinet[2] + 0.024)) < 0.003
        assert np.hypot(bottle[4], bottle[5]) < 0.02  # upright: turned about z only (quaternion w x y z)
        _sound(ep)


def test_twist_lid_unscrews_the_lid(tmp_path: Path) -> None:
    ds = _one_episode("twist_lid", tmp_path / "jar", seed=4)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        assert bool(ep.attrs[fmt.SUCCESS_ATTR]) and [n for n, _ in ep.events][:2] == ["twist", "retract"]
        report = relabel(ep)  # the lid's angle is read again from the stored states: joint_above 1.2 rad holds
        assert report.identical and report.success
        assert deepest_penetration(ep).depth < 0.005


def test_press_buttons_in_the_order_the_cue_showed_and_an_early_press_fails_the_due_node(tmp_path: Path) -> None:
    from x2.recorded.world import open_world

    ds = _one_episode("press_buttons", tmp_path / "buttons", seed=6)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        assert [n for n, _ in ep.events][:3] == ["press_first", "press_second", "press_third"]
        assert relabel(ep).identical
        # the lamps, left to right, show the colours the buttons drew, in the order they are due
        assets = ep.json_attr(fmt.ASSETS_ATTR)
        colour = {"button_panel": "red", "button_green": "green", "button_blue": "blue"}
        order = [colour[assets[b]] for b in ("first", "second", "third")]
        assert len(set(order)) == 3 and [assets[f"cue_{i}"] for i in (1, 2, 3)] == [f"lamp_{c}" for c in order]
        # from the states: the cover stands open at the start and lies shut before the first press lands, and
        # the buttons go down in that order
        states = np.asarray(ep[fmt.STATES])
        with open_world(ep) as world:
            def joint(t: int, name: str) -> float:
                world.backend.set_state(states[t])
                return world.backend.joint_value(name)

            assert joint(0, "cue_board/cover_hinge") < 0.05
            shut = next(t for t in range(len(states)) if joint(t, "cue_board/cover_hinge") > 1.5)
            pressed = [next(t for t in range(len(states)) if joint(t, f"{b}/button") <= -0.004)
                       for b in ("first", "second", "third")]
        assert shut < pressed[0] < pressed[1] < pressed[2], (shut, pressed)
    # the same task with its first press aimed at the second button: the failure names the due node and the button
    task = tmp_path / "press_out_of_order.yaml"
    text = (Path(__file__).parents[1] / "x2" / "tasks" / "press_buttons.yaml").read_text()
    task.write_text(text.replace("name: press_buttons", "name: press_out_of_order").replace(
        "target: first/button_top", "target: second/button_top"))
    out = tmp_path / "early"
    run = SynthRun(SynthConfig(SessionOptions(str(task)), n=1, workers=1, seed=6, max_attempts=1, keep_failed=True),
                   out).run()
    assert run.accepted == 0
    record = next(iter(Dataset.open(out).episodes()))
    assert record.failure is not None
    node, _, reason = record.failure
    assert node == "press_first" and "second/button" in reason


def test_press_sequence_12_presses_the_drawn_sequence_and_a_wrong_button_fails_the_due_node(tmp_path: Path) -> None:
    import mujoco

    from x2.rollout.monitor import TaskMonitor
    from x2.sim import make_backend

    ds = _one_episode("press_sequence_12", tmp_path / "sequence", seed=0)
    buttons = ("red", "green", "blue", "yellow")
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        roles = ep.json_attr(fmt.RESET_ROLES_ATTR)
        steps = [roles[f"step_{k}"] for k in range(1, 13)]
        assert all(a != b for a, b in zip(steps, steps[1:], strict=False))  # a new press at every cue
        assets = ep.json_attr(fmt.ASSETS_ATTR)
        assert [assets[f"cue_{k}"] for k in range(1, 13)] == [f"lamp_{b}" for b in steps]  # each lamp its button's
        # from the states: the order in which the buttons went down is the drawn sequence, and nothing else
        states = np.asarray(ep[fmt.STATES])
        from x2.recorded.world import open_world

        with open_world(ep) as world:
            depth = np.empty((len(states), len(buttons)))
            for t in range(len(states)):
                world.backend.set_state(states[t])
                depth[t] = [world.backend.joint_value(f"{b}/button") for b in buttons]
        down = depth <= -0.004
        onsets = [(t, buttons[i]) for i in range(len(buttons)) for t in np.flatnonzero(down[1:, i] & ~down[:-1, i]) + 1]
        assert [b for _, b in sorted(onsets)] == steps
        _sound(ep)
    # a button pressed out of turn fails the node that was due, naming that button
    env = load_env("press_sequence_12")
    assert env.task is not None
    backend = make_backend(env)
    info = backend.reset(5)
    assert info.roles == backend.reset(5).roles and info.roles != backend.reset(6).roles  # drawn by seed
    info = backend.reset(5)
    assert info.roles is not None
    monitor = TaskMonitor(env.task, backend, env.fps)
    monitor.reset(info.roles)
    wrong = next(b for b in buttons if b != info.roles["step_1"])
    model, data = backend.model, backend.data  # type: ignore[attr-defined]
    data.qpos[model.jnt_qposadr[model.joint(f"{wrong}/button").id]] = -0.006
    mujoco.mj_forward(model, data)
    monitor.step(0)
    assert monitor.runtime.failure is not None
    node, frame, reason = monitor.runtime.failure
    assert node == "press_1" and f"joint='{wrong}/button'" in reason, reason
    backend.close()


def test_hanoi_tower_moves_the_tower_and_never_puts_a_larger_disc_on_a_smaller(tmp_path: Path) -> None:
    ds = _one_episode("hanoi_tower", tmp_path / "hanoi", seed=0)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        names, poses = _object_poses(ep)
        radius = {"small": 0.018, "medium": 0.025, "large": 0.032}
        height = 0.05
        # from the states: a disc resting on a smaller one (its bottom on the other's top, its centre over it)
        for big, small in (("large", "medium"), ("large", "small"), ("medium", "small")):
            b, s = poses[:, names.index(big), :3], poses[:, names.index(small), :3]
            resting = (np.abs(b[:, 2] - (s[:, 2] + height)) < 0.004) & (np.hypot(*(b - s)[:, :2].T) < radius[small])
            assert not resting.any(), f"{big} on {small} at frames {np.flatnonzero(resting)[:5].tolist()}"
        final = {n: poses[-1, names.index(n), :3] for n in ("spot_c", "large", "medium", "small")}
        for lower, upper in (("large", "medium"), ("medium", "small")):  # the tower stands on spot C
            assert final[upper][2] - final[lower][2] == pytest.approx(height, abs=0.004)
            assert np.hypot(*(final[upper] - final["spot_c"])[:2]) < 0.03
        _sound(ep)


def test_classify_by_color_puts_every_block_on_its_mat(tmp_path: Path) -> None:
    ds = _one_episode("classify_by_color", tmp_path / "colors", seed=0)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        for colour in ("red", "green", "blue", "yellow"):
            block, mat = _final_pose(ep, f"{colour}_block"), _final_pose(ep, f"{colour}_mat")
            assert np.hypot(*(block - mat)[:2]) < 0.05, colour  # within the 10 cm mat
            assert block[2] - mat[2] == pytest.approx(0.003, abs=0.002), colour  # resting on its felt
        _sound(ep)


def test_pick_by_position_moves_the_block_the_words_name_and_no_other(tmp_path: Path) -> None:
    ds = _one_episode("pick_by_position", tmp_path / "grid", seed=3)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        names, poses = _object_poses(ep)
        x, y = poses[0, names.index("target")][:2]  # where the named block stood, read from the states
        row, column = 1 if x < 0.5 else 2, 1 + int(np.argmin([abs(y - c) for c in (-0.20, -0.33, -0.46)]))
        assert f"row {row}" in ep.instruction and f"column {column}" in ep.instruction, ep.instruction
        plate = poses[-1, names.index("plate")][:2]
        assert np.hypot(*(poses[-1, names.index("target")][:2] - plate)) < 0.06  # on the plate
        for other in ("block_2", "block_3", "block_4", "block_5", "block_6"):  # the others stayed where they were
            i = names.index(other)
            assert np.hypot(*(poses[-1, i][:2] - poses[0, i][:2])) < 0.005, other
        _sound(ep)


def test_handover_passes_the_baton_in_the_air_from_the_left_hand_to_the_right(tmp_path: Path) -> None:
    ds = _one_episode("handover", tmp_path / "handover", seed=0)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        events = dict(ep.events)
        names, poses = _object_poses(ep)
        baton = poses[:, names.index("baton"), :3]
        assert baton[0, 1] > 0.2 and baton[-1, 1] < -0.2  # from the left arm's side to the right's
        # from the states: lifted by the left hand, it never comes down until it is on the plate
        between = baton[events["pick_baton"]:events["hand_over"] + 1, 2]
        assert (between > baton[0, 2] + 0.04).all(), float(between.min() - baton[0, 2])
        plate = poses[-1, names.index("plate"), :3]
        assert np.hypot(*(baton[-1] - plate)[:2]) < 0.06
        _sound(ep)  # the hand-over's own predicates (right holds, left released) hold again from the states


def test_conveyor_pick_grasps_the_block_while_the_conveyor_carries_it(tmp_path: Path) -> None:
    from x2.recorded.world import open_world
    from x2.tasks.predicates import holds

    ds = _one_episode("conveyor_pick", tmp_path / "conveyor", seed=1)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        names, poses = _object_poses(ep)
        block = poses[:, names.index("block"), :3]
        speed = np.hypot(*np.diff(block[:, :2], axis=0).T) * 30  # m/s between frames
        lifted = int(np.flatnonzero(block[:, 2] > block[0, 2] + 0.003)[0])
        # it rode the conveyor at its 5 cm/s until it left it (the closing fingers jostle it for a frame or two)
        assert np.median(speed[10:lifted]) == pytest.approx(0.05, abs=0.002) and speed[10:lifted].min() > 0.02
        with open_world(ep) as world:  # from the states: both fingers on it while it still moved at speed
            states = np.asarray(ep[fmt.STATES])
            moving_and_held = []
            for t in range(lifted - 8, lifted):
                world.backend.set_state(states[t])
                if speed[t] > 0.04 and holds(world.backend, "gripper_holding", {"arm": "right", "obj": "block"}):
                    moving_and_held.append(t)
            assert moving_and_held, "the fingers closed on the block only after it had stopped"
        plate = poses[-1, names.index("plate"), :3]
        assert np.hypot(*(block[-1] - plate)[:2]) < 0.05
        _sound(ep)


def test_lift_tray_lifts_it_level_with_both_hands_and_the_block_stays_on(tmp_path: Path) -> None:
    ds = _one_episode("lift_tray", tmp_path / "tray", seed=0)
    with ds.load(next(iter(ds.episodes())).index) as ep:
        _respects_the_dag(ep)
        events = dict(ep.events)
        names, poses = _object_poses(ep)
        tray, block = poses[:, names.index("tray")], poses[:, names.index("block")]
        assert tray[events["lift"], 2] - tray[0, 2] > 0.1
        # level all the way (quaternion w x y z: x and y are the tilt), the block riding on it
        tilt = 2 * np.degrees(np.arcsin(np.hypot(tray[:, 4], tray[:, 5])))
        assert tilt.max() < 3.0, tilt.max()
        rel = block[:, 2] - tray[:, 2]
        assert np.ptp(rel) < 0.003 and np.hypot(*(block[-1, :2] - tray[-1, :2])) < 0.1
        assert abs(tray[-1, 2] - tray[0, 2]) < 0.003  # set down where it stood
        _sound(ep)  # both hands on the handles at the lift, both off after: the predicates, from the states
