"""Device samples -> actions: the start gate, ramp and clamp of the joint mirror, the keyboard's tcp
velocity through IK, the VR clutch (anchor, hold, re-anchor after tracking loss) and the safety filter."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from x2.devices import DeviceEvent, Sample
from x2.envspec import load_env
from x2.sim.backend import RobotState
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.kinematics import ArmDLS
from x2.teleop import EEVelocity, JointMirror, SafetyFilter, VRClutch
from x2.teleop.mapping import VR_TO_ROBOT, MirrorConfig

FPS = 30


@pytest.fixture(scope="module")
def backend() -> MujocoBackend:
    b = MujocoBackend(load_env("pick_place"))
    b.reset(0)
    return b


def _sample(**values: np.ndarray) -> Sample:
    return Sample(0, 0.0, {k: np.asarray(v, float) for k, v in values.items()})


def test_mirror_gates_each_arm_until_leader_agrees_then_ramps(backend: MujocoBackend) -> None:
    home = backend.home_action()
    m = JointMirror(FPS)
    m.reset(backend, home)
    leader = home.copy()
    leader[0] += 0.5  # left leader far off: the left arm must not move
    leader[7] += 0.1  # right leader within the gate: follows
    cmd = m.command(_sample(joints=leader), 0.0, [], backend.robot_state())
    assert np.array_equal(cmd[:7], home[:7]) and "align leader" in m.status
    step = MirrorConfig().max_speed / FPS * MirrorConfig().ramp_floor
    assert cmd[7] - home[7] == pytest.approx(step, rel=0.05)  # ramping: a fifth of full speed at first
    for _ in range(3 * FPS):
        cmd = m.command(_sample(joints=leader), 0.0, [], backend.robot_state())
    assert cmd[7] == pytest.approx(leader[7]) and cmd[0] == home[0]
    leader[0] = home[0] + 0.05  # now within the gate: engages
    cmd = m.command(_sample(joints=leader), 0.0, [], backend.robot_state())
    assert home[0] < cmd[0] <= home[0] + 0.05
    held = m.command(_sample(joints=leader + 0.1), 1.0, [], backend.robot_state())  # a stale sample: hold
    assert np.array_equal(held, cmd) and "silent" in m.status
    m.command(_sample(joints=leader), 0.0, [DeviceEvent("engage", 0.0, 1)], backend.robot_state())
    assert "right: align" not in m.status  # re-armed, and the leader is already aligned: engages again


def _following(backend: MujocoBackend, cmd: np.ndarray) -> RobotState:
    """The robot at rest exactly where `cmd` put its arms (fingers open): what the Cartesian mappers
    measure when nothing holds the arms back. They leash their targets to the measured tcp, so a frozen
    robot state would read as an arm blocked by a contact (tests/test_teleop_contacts.py)."""
    qpos, ee = [], []
    for a, arm in enumerate(backend.env.robot.arms):
        q = cmd[7 * a:7 * a + 6]
        pos, rot = ArmDLS.for_arm(backend.model, arm).fk(q)
        quat = np.zeros(4)
        mujoco.mju_mat2Quat(quat, rot.ravel())
        qpos += [*q, *[backend.env.robot.gripper.open_ctrl] * len(arm.gripper_joints)]
        ee.append([*pos, *quat])
    return RobotState(np.array(qpos), np.zeros(len(qpos)), np.array(ee))


def _right_arm_start(backend: MujocoBackend, mapper):
    """The mapper reset at home, an IK for the right arm (action slots 7-12) and its home tcp pose."""
    home = backend.home_action()
    mapper.reset(backend, home)
    ik = ArmDLS.for_arm(backend.model, backend.env.robot.arms[1])
    return home, ik, *ik.fk(home[7:13])


def test_keyboard_twist_moves_the_tcp_at_the_set_speed(backend: MujocoBackend) -> None:
    m = EEVelocity(FPS)
    home, ik, p0, r0 = _right_arm_start(backend, m)
    twist = np.zeros((2, 6))
    twist[1, 0] = 1.0  # right arm, +x at full key
    cmd = home
    for _ in range(FPS):
        cmd = m.command(_sample(twist=twist), 0.0, [], _following(backend, cmd))
    p1, r1 = ik.fk(cmd[7:13])
    assert p1[0] - p0[0] == pytest.approx(m.config.linear_mps, abs=0.01)
    assert np.abs(p1[1:] - p0[1:]).max() < 0.005 and np.abs(r1 - r0).max() < 0.02
    assert np.array_equal(cmd[:7], home[:7])  # the other arm never moved
    robot = _following(backend, cmd)
    cmd = m.command(_sample(twist=np.zeros((2, 6))), 0.0, [DeviceEvent("gripper", 0.0, 1)], robot)
    assert cmd[13] == 0.0 and cmd[6] == 1.0
    m.command(_sample(twist=np.zeros((2, 6))), 0.0, [DeviceEvent("arm", 0.0, 0)], robot)
    assert m.active == 0 and "left" in m.status
    paused = m.command(_sample(twist=twist), 0.0, [DeviceEvent("engage", 0.0, -1)], robot)
    assert np.array_equal(paused, cmd) and "paused" in m.status  # Enter locks the arms
    moved = m.command(_sample(twist=twist), 0.0, [DeviceEvent("engage", 0.0, -1)], robot)
    assert not np.array_equal(moved, cmd)  # and unlocks them


def _vr(pos_vr: np.ndarray, clutch: float, valid: float = 1.0) -> Sample:
    pose = np.zeros((2, 7))
    pose[:, 3] = 1.0
    pose[1, :3] = pos_vr
    return _sample(pose=pose, valid=[1.0, valid], clutch=[0.0, clutch], gripper=[1.0, 0.5])


def test_vr_clutch_anchors_holds_and_reanchors(backend: MujocoBackend) -> None:
    m = VRClutch(FPS)
    home, ik, p0, _ = _right_arm_start(backend, m)
    start = np.array([0.1, 1.2, -0.3])
    cmd = m.command(_vr(start, 1.0), 0.0, [], _following(backend, home))  # clutch closes here: anchor
    forward = start + np.array([0.0, 0.0, -0.08])  # SteamVR -z is the operator's forward = robot +x
    for _ in range(10):
        cmd = m.command(_vr(forward, 1.0), 0.0, [], _following(backend, cmd))
    robot = _following(backend, cmd)
    p1, _ = ik.fk(cmd[7:13])
    np.testing.assert_allclose(p1 - p0, VR_TO_ROBOT @ (forward - start), atol=0.004)
    assert cmd[13] == 0.5  # the gripper follows the controller's command
    held = m.command(_vr(forward + 0.3, 0.0), 0.0, [], robot)  # released: moving the hand does nothing
    np.testing.assert_array_equal(held[7:13], cmd[7:13])
    m.command(_vr(forward, 1.0, valid=0.0), 0.0, [], robot)  # tracking lost while clutched: hold
    jumped = m.command(_vr(forward + 0.5, 1.0), 0.0, [], robot)  # back, 0.5 m away: re-anchor, no jump
    np.testing.assert_allclose(jumped[7:13], cmd[7:13], atol=1e-6)


def test_safety_filter_clamps_steps_limits_and_rejects_nan(backend: MujocoBackend) -> None:
    home = backend.home_action()
    f = SafetyFilter(backend, FPS)
    f.reset(home)
    bad = home.copy()
    bad[2] = np.nan
    np.testing.assert_array_equal(f(bad), home)
    assert f.rejected == 1
    far = home.copy()
    far[0] += 1.0
    far[6] = 7.0
    out = f(far)
    assert out[0] - home[0] == pytest.approx(3.0 / FPS) and out[6] == 1.0 and f.clamped == 1
    for _ in range(200):
        out = f(np.full_like(home, 100.0))
    assert np.all(out <= f.hi) and np.all(np.isfinite(out))


@pytest.mark.parametrize("robot", ["franka-panda", "aloha"])
def test_keyboard_and_vr_drive_the_right_arm_of_any_robot(robot: str) -> None:
    """The keyboard's right-arm row and the right VR hand drive the arm named right, on a one-arm 7-DoF robot
    (whose only arm it is) as on ALOHA; the tcp moves as asked through the arm's own IK."""
    backend = MujocoBackend(load_env("pick_place", robot=robot))
    backend.reset(0)
    arms = backend.env.robot.arms
    a = [arm.name for arm in arms].index("right")
    sl = backend.action_layout.arms[a].joints
    ik = ArmDLS.for_arm(backend.model, arms[a])
    for mapper in (EEVelocity(FPS), VRClutch(FPS)):
        home = backend.home_action()
        mapper.reset(backend, home)
        p0, _ = ik.fk(home[sl])
        cmd = home
        for k in range(FPS):
            if isinstance(mapper, EEVelocity):
                twist = np.zeros((2, 6))
                twist[1, 0] = 1.0
                sample = _sample(twist=twist)
            else:  # the right controller held and moved 0.1 m forward (VR -z is the robot's +x)
                sample = _vr(np.array([0.0, 0.0, -0.1 * k / (FPS - 1)]), clutch=1.0)
            qpos = backend.robot_state().qpos.copy()
            i = sum(len(arm.joints) + len(arm.gripper_joints) for arm in arms[:a])
            qpos[i:i + len(arms[a].joints)] = cmd[sl]
            ee = backend.robot_state().ee_pose.copy()
            pos, rot = ik.fk(cmd[sl])
            quat = np.zeros(4)
            mujoco.mju_mat2Quat(quat, rot.ravel())
            ee[a] = [*pos, *quat]
            cmd = mapper.command(sample, 0.0, [], RobotState(qpos, np.zeros_like(qpos), ee))
        p1, _ = ik.fk(cmd[sl])
        assert p1[0] - p0[0] > 0.07, (robot, type(mapper).__name__, p1 - p0)
        assert np.abs(p1[1:] - p0[1:]).max() < 0.01
    if len(arms) == 1:  # after Tab the keyboard publishes on the left row: a one-arm robot's arm still moves
        m = EEVelocity(FPS)
        m.reset(backend, backend.home_action())
        twist = np.zeros((2, 6))
        twist[0, 2] = 1.0
        cmd = m.command(_sample(twist=twist), 0.0, [DeviceEvent("arm", 0.0, 0)], backend.robot_state())
        assert ik.fk(cmd[sl])[0][2] > ik.fk(backend.home_action()[sl])[0][2]
