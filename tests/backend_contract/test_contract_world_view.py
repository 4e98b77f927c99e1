"""What the task predicates read (x2/tasks/predicates.py's `WorldView`, evaluated each tick by
x2/rollout/monitor.py and offline by `x2 label`): object positions, rest heights and the table, box sites,
joint values, touching, the fingers, how far an arm is from home and where it is anchored. Each is checked
against the rest of the protocol and against a configuration whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from x2.envspec.env import EnvSpec
from x2.sim import Backend
from x2.tasks.predicates import holds

BLOCK_HALF = 0.025  # pick_place's cube: origin at its bottom face


def test_object_positions_agree_with_the_poses_and_rest_on_the_table(backend: Backend, env: EnvSpec) -> None:
    backend.reset(1)
    assert backend.object_names == tuple(o.name for o in env.objects)
    assert backend.table_height == env.booth.table_height
    for _ in range(5):
        backend.step(backend.home_action())
    poses = backend.object_poses()
    assert poses.shape == (len(backend.object_names), 7)
    np.testing.assert_allclose(np.linalg.norm(poses[:, 3:], axis=1), 1.0, atol=1e-9)
    for k, name in enumerate(backend.object_names):
        np.testing.assert_array_equal(backend.object_pos(name), poses[k, :3])
        rest = backend.object_rest_height(name)
        assert rest >= 0.0
        assert backend.object_pos(name)[2] == pytest.approx(backend.table_height + rest, abs=2e-3)
        assert not holds(backend, "object_lifted", {"obj": name})
        assert not holds(backend, "object_fallen", {"obj": name})


def test_set_object_pose_places_and_stops_it(backend: Backend) -> None:
    backend.reset(1)
    target = backend.object_pos("block") + np.array([0.0, 0.05, 0.2])
    quat = np.array([np.cos(0.3), 0.0, 0.0, np.sin(0.3)])
    backend.set_object_pose("block", target, quat)
    np.testing.assert_allclose(backend.object_pos("block"), target, atol=1e-12)
    np.testing.assert_allclose(backend.object_poses()[backend.object_names.index("block"), 3:], quat, atol=1e-9)
    assert holds(backend, "object_lifted", {"obj": "block", "height": 0.15})
    for _ in range(3):  # it falls from rest: after t = 3 ticks it has dropped g t^2 / 2
        backend.step(backend.home_action())
    t = 3 / backend.env.fps
    assert target[2] - backend.object_pos("block")[2] == pytest.approx(0.5 * 9.81 * t * t, abs=3e-3)
    backend.set_object_pose("block", np.array([0.3, -1.0, backend.table_height - 0.2]))  # beside the table
    assert holds(backend, "object_fallen", {"obj": "block"})


def test_joint_values_read_and_write(backend: Backend, env: EnvSpec) -> None:
    backend.reset(1)
    names = backend.robot_joint_names
    qpos = backend.robot_state().qpos
    for i, name in enumerate(names):
        assert backend.joint_value(name) == qpos[i]
    joint = env.robot.arms[-1].joints[2]
    backend.set_joint_values({joint: 0.25})
    assert backend.joint_value(joint) == 0.25
    assert holds(backend, "joint_above", {"joint": joint, "value": 0.2})
    assert not holds(backend, "joint_below", {"joint": joint, "value": 0.2})


def test_arm_joint_error_and_root(backend: Backend, env: EnvSpec) -> None:
    backend.reset(1)
    arms = [a.name for a in env.robot.arms]
    for arm in arms:
        assert backend.arm_joint_error(arm) == pytest.approx(0.0, abs=1e-9)  # reset: every arm at home
    first = env.robot.arms[0]
    backend.set_joint_values({first.joints[1]: first.home[1] + 0.5})
    assert backend.arm_joint_error(first.name) == pytest.approx(0.5)
    assert backend.arm_joint_error(arms[1]) == pytest.approx(0.0, abs=1e-9)
    assert not holds(backend, "arm_at_home", {"arm": first.name})
    roots = [backend.arm_root_pos(a) for a in arms]
    for arm, root in zip(arms, roots, strict=True):
        assert root.shape == (3,) and np.all(np.isfinite(root))
        joint = backend.model.joint(env.robot.arm(arm).joints[0]).id  # the first joint's anchor in the view
        np.testing.assert_allclose(root, backend.data.xanchor[joint], atol=1e-9)
    assert np.linalg.norm(roots[0] - roots[1]) > 0.1
    far = float(np.hypot(*(backend.object_pos("block")[:2] - roots[0][:2])))
    assert holds(backend, "within_reach", {"obj": "block", "arm": arms[0], "distance": far + 0.01})
    assert not holds(backend, "within_reach", {"obj": "block", "arm": arms[0], "distance": far - 0.01})


def test_site_box_and_object_inside(backend: Backend) -> None:
    backend.reset(1)
    for site in ("plate/top", "block/grasp"):
        pos, rot, half = backend.site_box(site)
        assert pos.shape == (3,) and rot.shape == (3, 3) and half.shape == (3,)
        np.testing.assert_allclose(rot @ rot.T, np.eye(3), atol=1e-9)
        assert np.all(half > 0)
    grasp, _, _ = backend.site_box("block/grasp")  # the site rides on the block: at its centre
    np.testing.assert_allclose(grasp, backend.object_pos("block") + [0, 0, BLOCK_HALF], atol=1e-9)
    centre, _, half = backend.site_box("plate/top")
    inside = {"obj": "block", "container": "plate/top"}
    assert not holds(backend, "object_inside", inside)
    backend.set_object_pose("block", centre.copy())
    assert holds(backend, "object_inside", inside)
    backend.set_object_pose("block", centre + np.array([0.0, 0.0, 2 * half[2]]))
    assert not holds(backend, "object_inside", inside)


def test_touching_an_object_set_on_another(backend: Backend) -> None:
    backend.reset(1)
    assert not backend.touching("block", "plate") and not backend.touching("plate", "block")
    backend.set_object_pose("block", backend.object_pos("plate") + np.array([0.0, 0.0, 0.02]))
    for _ in range(15):  # it drops onto the plate and settles there
        backend.step(backend.home_action())
    assert backend.touching("block", "plate") and backend.touching("plate", "block")
    assert not backend.touching("block", "world")  # the table (a world geom) is under the plate, not the block
    assert holds(backend, "object_on", {"obj": "block", "target": "plate"})
    assert not holds(backend, "object_on", {"obj": "plate", "target": "block"})


def test_fingers_touch_and_hold_a_grasped_object(backend: Backend, env: EnvSpec) -> None:
    backend.reset(1)
    arm = env.robot.arms[-1]
    fingers = backend.finger_bodies(arm.name)
    assert len(fingers) == 2 and fingers[0] != fingers[1]
    for f in fingers:
        assert backend.model.body(f).id > 0  # bodies of the world, by name
    released = {"arm": arm.name, "obj": "block"}
    assert holds(backend, "gripper_released", released)
    # the block between the open fingers, centred on the tool centre point, then the gripper closed
    tcp = backend.robot_state().ee_pose[-1, :3]
    backend.set_object_pose("block", tcp - np.array([0.0, 0.0, BLOCK_HALF]), np.array([1.0, 0, 0, 0]))
    action = backend.home_action()
    action[backend.action_layout.arm(arm.name).gripper] = 0.0
    for _ in range(30):
        backend.step(action)
    assert all(backend.touching(f, "block") for f in fingers)
    assert holds(backend, "gripper_holding", released)
    assert not holds(backend, "gripper_released", released)
    assert not holds(backend, "gripper_holding", {"arm": env.robot.arms[0].name, "obj": "block"})
    assert holds(backend, "object_lifted", {"obj": "block", "height": 0.2})  # held up, not dropped
