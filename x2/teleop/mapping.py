"""Device samples -> robot actions, one mapper per device kind.

- `JointMirror` (master arm): the follower copies the leader's joints, but only once the two agree
  (a start gate per arm, so engaging never yanks the robot), then ramps up to full speed.
- `EEVelocity` (keyboard): held keys are a tcp twist; the tcp target integrates it and damped
  least-squares IK turns it into joint targets.
- `VRClutch` (VR controllers): while the trigger is held, the controller's motion since the clutch
  closed moves the tcp target from where it was (scaled); released, the target holds.

A mobile robot's base is driven in its own frame (forward, left, turn): from the keyboard after B (the motion
keys w/s, a/d, j/l then drive the base, B again the arms), from VR with the thumbsticks (left: forward and
sideways, right: turn). The Cartesian mappers keep their tcp targets in the base's frame, so the arms ride
along with it.

The two Cartesian mappers keep their tcp targets near the measured tcp (`_TcpTargets`): the robot's links
collide with each other and with the world, so a commanded motion can be stopped by a contact, and a
target running on ahead of an arm that cannot follow would wind the servos up against it.

Every mapper returns the full action (per arm: joints, then gripper opening in [0, 1]); the safety
filter after it clamps per-tick steps and joint limits whatever the mapper did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import X2Error
from x2.devices import DeviceEvent, Sample
from x2.devices.calibration import ARMS as LEADER_ARMS
from x2.devices.calibration import JOINTS_PER_ARM as LEADER_JOINTS
from x2.sim.backend import Backend, RobotState
from x2.sim.mujoco.kinematics import ArmDLS
from x2.sim.mujoco.rotations import quaternion_matrix, rotation_angle, rotation_vector, vector_matrix

STALE_S = 0.25  # a sample older than this is not followed: the robot holds (device hiccup, lost USB)
# How far a tcp target may lead the measured tcp. In free space the tcp trails its target by ~2 mm at the
# keyboard's 15 cm/s, so the leash binds only when something holds the arm back; then the servos push with a
# bounded error (2 cm at the tcp is ~0.03 rad at the shoulder, ~45 Nm of its 80) instead of one that grows
# until they saturate. Measured on artixon-g, bare booth, the right tcp driven from home at full key in
# seven directions into the left arm, the chest and the head (tests/test_teleop_contacts.py runs two):
# deepest penetration 3.7 mm with 2 cm; a leash that also grew with the tcp's speed (+0.1 s x speed) let a
# hand sliding along the head push a finger 8.5 mm into it.
# The cost: a VR hand moving faster than ~0.5 m/s is followed at ~0.5 m/s (a 20 cm move at 1 m/s arrives
# in 13 ticks instead of 7); slower hands and the keyboard are not slowed at all.
LEASH_M = 0.02
LEASH_RAD = 0.15
# An arm at rest (every joint slower than REST_RPS) but short of its target by more than HOLD_M / HOLD_RAD is
# held by a contact: with nothing commanded for it, its target becomes where it is, so it stops pushing.
# At rest in free space the servos hold the target within ~1 mm (gravity compensated, 0.1 Nm friction).
REST_RPS = 0.05
HOLD_M = 0.005
HOLD_RAD = 0.05


class Mapper(Protocol):
    status: str  # one line for the operator panel

    def reset(self, backend: Backend, home_action: Floats) -> None: ...
    def command(self, sample: Sample | None, age_s: float, events: Sequence[DeviceEvent],
                robot: RobotState) -> Floats: ...


def _arm_slices(backend: Backend) -> list[slice]:
    return [a.joints for a in backend.action_layout.arms]


DEVICE_SIDES = ("left", "right")  # a keyboard's twist rows and a VR pair's hands, in this order


def device_rows(backend: Backend) -> list[int]:
    """Per robot arm, the device row that drives it: by side (a one-arm robot's arm is "right", driven by the
    right hand and the keyboard's right-arm row), else by position."""
    names = [a.name for a in backend.env.robot.arms]
    return [DEVICE_SIDES.index(n) if n in DEVICE_SIDES else i for i, n in enumerate(names)]


@dataclass(frozen=True)
class MirrorConfig:
    gate_tol_rad: float = 0.15  # leader and follower must agree this well on every joint to engage
    ramp_s: float = 1.0  # after engaging, the speed limit ramps from ramp_floor to 1 over this time
    ramp_floor: float = 0.2
    max_speed: float = 3.0  # rad/s per joint: the artixon arms' actuators follow ~3 rad/s cleanly


class JointMirror:
    def __init__(self, fps: int, config: MirrorConfig | None = None):
        self.fps, self.config = fps, config or MirrorConfig()
        self.status = "waiting for the leader arm"

    def reset(self, backend: Backend, home_action: Floats) -> None:
        arms = backend.env.robot.arms
        if len(arms) != LEADER_ARMS or any(len(a.joints) != LEADER_JOINTS for a in arms):
            # joint to joint needs the leader's kinematics: ALOHA's ViperX and the artixon arms match the
            # GELLO-style leader (two arms, six joints each); a Panda does not
            raise X2Error(f"master-arm mirrors {LEADER_ARMS} arms of {LEADER_JOINTS} joints; robot "
                          f"{backend.env.robot.name} has " + " and ".join(f"{a.name} {len(a.joints)}" for a in arms)
                          + " joints; allowed: a robot with matching arms, or --device keyboard or vr")
        self.cmd = np.array(home_action, dtype=np.float64)
        self.slices = _arm_slices(backend)
        self.names = [a.name for a in arms]
        self.engaged_at: list[int | None] = [None] * len(self.slices)
        self.tick = 0
        self.status = "waiting for the leader arm"

    def command(self, sample: Sample | None, age_s: float, events: Sequence[DeviceEvent],
                robot: RobotState) -> Floats:
        c = self.config
        self.tick += 1
        for ev in events:
            if ev.kind == "engage":  # re-arm the gate: the operator wants to re-align
                arms = range(len(self.slices)) if ev.arm < 0 else [ev.arm]
                for a in arms:
                    self.engaged_at[a] = None
        if sample is None or age_s > STALE_S:
            self.status = "holding: no leader sample" if sample is None else f"holding: leader silent {age_s:.2f} s"
            return self.cmd.copy()
        leader = np.asarray(sample.values["joints"], dtype=np.float64)
        parts = []
        for a, sl in enumerate(self.slices):
            grip = sl.stop
            engaged = self.engaged_at[a]
            if engaged is None:
                err = float(np.max(np.abs(leader[sl] - self.cmd[sl])))
                if err <= c.gate_tol_rad:
                    self.engaged_at[a] = engaged = self.tick
                else:
                    parts.append(f"{self.names[a]}: align leader (off by {err:.2f} rad)")
                    continue
            since = (self.tick - engaged) / (c.ramp_s * self.fps)
            ramp = min(1.0, c.ramp_floor + (1 - c.ramp_floor) * since)
            step = c.max_speed / self.fps * ramp
            self.cmd[sl] += np.clip(leader[sl] - self.cmd[sl], -step, step)
            self.cmd[grip] = float(np.clip(leader[grip], 0.0, 1.0))
            parts.append(f"{self.names[a]}: following" + ("" if ramp >= 1 else f" (ramping {ramp:.0%})"))
        self.status = "; ".join(parts)
        return self.cmd.copy()


@dataclass(frozen=True)
class BaseDriveConfig:
    linear_mps: float = 0.25  # full key or stick: 25 cm/s forward or sideways
    angular_rps: float = 0.5
    stick_deadzone: float = 0.15  # a thumbstick at rest reads a few percent off centre


class _BaseTarget:
    """A mobile base's commanded (x, y, yaw), driven in the robot's own frame and kept within its range."""

    def __init__(self, backend: Backend, config: BaseDriveConfig):
        base = backend.env.robot.base
        assert base is not None and backend.action_layout.base is not None
        self.slice, self.config = backend.action_layout.base, config
        self.lo, self.hi = base.low, base.high

    def drive(self, cmd: Floats, forward: float, left: float, turn: float, dt: float) -> bool:
        """Move the target by one tick of (forward, left, turn) in [-1, 1]; True if it moved."""
        if not (forward or left or turn):
            return False
        c = self.config
        q = cmd[self.slice]
        yaw = float(q[2])
        step = np.array([np.cos(yaw) * forward - np.sin(yaw) * left, np.sin(yaw) * forward + np.cos(yaw) * left])
        q[:2] += step * c.linear_mps * dt
        q[2] += turn * c.angular_rps * dt
        cmd[self.slice] = np.clip(q, self.lo, self.hi)
        return True


class _TcpTargets:
    """Per-arm tcp targets followed by damped least-squares IK, shared by the Cartesian mappers, kept near
    the measured tcp (`observe` each tick before `follow` / `hold`)."""

    def __init__(self, backend: Backend, home_action: Floats):
        self.slices = _arm_slices(backend)
        self.cmd = np.array(home_action, dtype=np.float64)
        self.ik = [ArmDLS.of_backend(backend, arm) for arm in backend.env.robot.arms]
        self.pos, self.rot = [], []
        for a, sl in enumerate(self.slices):
            p, r = self.ik[a].fk(self.cmd[sl])
            self.pos.append(p)
            self.rot.append(r)
        n = len(self.slices)
        self.limited = [False] * n
        self.blocked = [False] * n  # the leash held the target back this tick: a contact stops the arm
        # RobotState.qpos / qvel hold, per arm, its joints and then its finger joints
        self.qpos_slices, start = [], 0
        for arm in backend.env.robot.arms:
            self.qpos_slices.append(slice(start, start + len(arm.joints)))
            start += len(arm.joints) + len(arm.gripper_joints)
        self.measured: list[tuple[Floats, Floats]] = [(p.copy(), r.copy()) for p, r in zip(self.pos, self.rot,
                                                                                                   strict=True)]
        self.q_measured = [self.cmd[sl].copy() for sl in self.slices]
        self.at_rest = [True] * n
        # a mobile robot: the IK's model keeps its base at home, so targets live in the base's frame; measured
        # poses are brought there from the world with the base's measured pose (the state's last three values)
        self.mount = np.array([*backend.env.robot.base_pos[:2], 0.0]) if backend.env.robot.base else None

    def observe(self, robot: RobotState) -> None:
        """This tick's measured tcp poses, arm joint angles and whether each arm is at rest."""
        to_base = None
        if self.mount is not None:
            x, y, yaw = (float(v) for v in robot.qpos[-3:])
            turn = np.array([[np.cos(yaw), np.sin(yaw), 0.0], [-np.sin(yaw), np.cos(yaw), 0.0], [0.0, 0.0, 1.0]])
            to_base = (turn, self.mount + np.array([x, y, 0.0]))
        for a, sl in enumerate(self.qpos_slices):
            pos = np.asarray(robot.ee_pose[a, :3], dtype=np.float64).copy()
            rot = quaternion_matrix(robot.ee_pose[a, 3:])
            if to_base is not None:
                turn, origin = to_base
                pos, rot = self.mount + turn @ (pos - origin), turn @ rot
            self.measured[a] = (pos, rot)
            self.q_measured[a] = np.asarray(robot.qpos[sl], dtype=np.float64).copy()
            self.at_rest[a] = bool(np.max(np.abs(robot.qvel[sl])) < REST_RPS)

    def follow(self, a: int) -> None:
        """Joint targets toward arm a's tcp target, leashed to the measured tcp first; a target the arm
        cannot reach is pulled back to what it reached, so holding a key at the edge of the workspace or
        against an obstacle never winds up a backlog."""
        self.blocked[a] = self._leash(a)
        sl, ik = self.slices[a], self.ik[a]
        q = ik.solve(self.pos[a], self.rot[a], self.cmd[sl], iters=8, max_step=0.1, best_effort=True)
        assert q is not None  # best_effort returns the last iterate
        self.cmd[sl] = q
        p, r = ik.fk(q)
        self.limited[a] = bool(np.linalg.norm(p - self.pos[a]) > 0.01)
        if self.limited[a]:
            self.pos[a], self.rot[a] = p, r

    def hold(self, a: int) -> None:
        """Nothing commanded for arm a this tick. If a contact holds it at rest short of its target, the
        target (tcp pose and joints) becomes where it is: releasing a key against an obstacle leaves no
        push behind. An arm still moving or already there keeps its target."""
        self.blocked[a] = False
        pos, rot = self.measured[a]
        if not self.at_rest[a]:
            return
        if np.linalg.norm(self.pos[a] - pos) > HOLD_M or rotation_angle(self.rot[a], rot) > HOLD_RAD:
            self.pos[a], self.rot[a] = pos.copy(), rot.copy()
            self.cmd[self.slices[a]] = self.q_measured[a]

    def _leash(self, a: int) -> bool:
        """Pull arm a's target to within LEASH_M / LEASH_RAD of the measured tcp; True if it had to."""
        pos, rot = self.measured[a]
        held = False
        offset = self.pos[a] - pos
        dist = float(np.linalg.norm(offset))
        if dist > LEASH_M:
            self.pos[a] = pos + offset * (LEASH_M / dist)
            held = True
        w = rotation_vector(self.rot[a] @ rot.T)  # world-frame rotation from the measured tcp to the target
        angle = float(np.linalg.norm(w))
        if angle > LEASH_RAD:
            self.rot[a] = vector_matrix(w * (LEASH_RAD / angle)) @ rot
            held = True
        return held


@dataclass(frozen=True)
class VelocityConfig:
    linear_mps: float = 0.15  # full key = 15 cm/s: fine placing still takes a tap of ~0.1 s for 1.5 cm
    angular_rps: float = 0.8


class EEVelocity:
    def __init__(self, fps: int, config: VelocityConfig | None = None):
        self.fps, self.config = fps, config or VelocityConfig()
        self.status = "keys move the active arm"
        self.active = 1  # (set by reset: the robot's right arm)
        self.paused = False  # Enter ("engage") locks the arms against stray keys, and unlocks them
        self.driving = False  # B: the motion keys drive a mobile robot's base instead of the active arm

    def reset(self, backend: Backend, home_action: Floats) -> None:
        self.targets = _TcpTargets(backend, home_action)
        self.base = _BaseTarget(backend, BaseDriveConfig()) if backend.env.robot.base is not None else None
        self.driving = False
        self.names = [a.name for a in backend.env.robot.arms]
        self.rows = device_rows(backend)
        self.active = self.rows.index(1) if 1 in self.rows else 0  # the keyboard starts on the right arm

    def command(self, sample: Sample | None, age_s: float, events: Sequence[DeviceEvent],
                robot: RobotState) -> Floats:
        tg, c, dt = self.targets, self.config, 1.0 / self.fps
        tg.observe(robot)
        for ev in events:
            if ev.kind == "arm" and ev.arm in self.rows:  # (a one-arm robot stays on its arm)
                self.active = self.rows.index(ev.arm)
            elif ev.kind == "engage":
                self.paused = not self.paused
            elif ev.kind == "base" and self.base is not None:
                self.driving = not self.driving
            elif ev.kind == "gripper":
                a = self.active if ev.arm not in self.rows else self.rows.index(ev.arm)
                grip = tg.slices[a].stop
                tg.cmd[grip] = 0.0 if tg.cmd[grip] > 0.5 else 1.0
        twist: Floats = np.zeros((len(DEVICE_SIDES), 6))  # a stale sample or a pause commands nothing
        if sample is not None and age_s <= STALE_S and not self.paused:
            twist = np.asarray(sample.values["twist"], dtype=np.float64)
        if len(self.rows) == 1:  # one arm: whichever side the keyboard is on drives it (Tab changes nothing)
            twist = np.repeat(twist.sum(axis=0, keepdims=True), len(DEVICE_SIDES), axis=0)
        if self.driving and self.base is not None:
            keys = twist.sum(axis=0)  # (only the active row is ever non-zero)
            self.base.drive(tg.cmd, float(keys[0]), float(keys[1]), float(keys[5]), dt)
            twist = np.zeros_like(twist)  # the arms hold (and ride along)
        for a, row in enumerate(self.rows):
            v, w = twist[row, :3] * c.linear_mps * dt, twist[row, 3:] * c.angular_rps * dt
            if not (v.any() or w.any()):
                tg.hold(a)
                continue
            tg.pos[a] = tg.pos[a] + v
            tg.rot[a] = vector_matrix(w) @ tg.rot[a]
            tg.follow(a)
        arm = self.names[self.active]
        edge = " (at the edge of reach)" if tg.limited[self.active] else ""
        edge += " (blocked by a contact)" if tg.blocked[self.active] and not tg.limited[self.active] else ""
        self.status = (("driving the base (B: the arms)" if self.driving else f"active arm: {arm}{edge}")
                       + ("  [paused: Enter resumes]" if self.paused else ""))
        return tg.cmd.copy()


# SteamVR's tracking frame is y-up with -z forward; the booth's robot frame is z-up with x forward.
VR_TO_ROBOT = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


@dataclass(frozen=True)
class ClutchConfig:
    scale: float = 1.0  # tcp metres per controller metre
    clutch_on: float = 0.5  # trigger value that closes the clutch


class VRClutch:
    def __init__(self, fps: int, config: ClutchConfig | None = None):
        self.fps, self.config = fps, config or ClutchConfig()
        self.status = "hold a trigger to move that arm"

    def reset(self, backend: Backend, home_action: Floats) -> None:
        self.targets = _TcpTargets(backend, home_action)
        self.base = _BaseTarget(backend, BaseDriveConfig()) if backend.env.robot.base is not None else None
        self.names = [a.name for a in backend.env.robot.arms]
        self.rows = device_rows(backend)
        n = len(self.targets.slices)
        self.anchor: list[tuple[Floats, Floats, Floats, Floats] | None] = [None] * n

    def command(self, sample: Sample | None, age_s: float, events: Sequence[DeviceEvent],
                robot: RobotState) -> Floats:
        tg, c = self.targets, self.config
        tg.observe(robot)
        if sample is None or age_s > STALE_S:
            self.anchor = [None] * len(self.anchor)  # re-anchor when samples return: never jump
            for a in range(len(tg.slices)):
                tg.hold(a)
            self.status = "holding: no controller sample"
            return tg.cmd.copy()
        v = sample.values
        parts = []
        if self.base is not None and "stick" in v:  # (streams recorded before the sticks have none)
            dead = self.base.config.stick_deadzone
            stick = np.where(np.abs(v["stick"]) < dead, 0.0, np.asarray(v["stick"], dtype=np.float64))
            if self.base.drive(tg.cmd, float(stick[0, 1]), -float(stick[0, 0]), -float(stick[1, 0]), 1.0 / self.fps):
                parts.append("driving the base")
        for a, h in enumerate(self.rows):  # h: the hand driving arm a
            tg.cmd[tg.slices[a].stop] = float(np.clip(v["gripper"][h], 0.0, 1.0))
            held = v["clutch"][h] >= c.clutch_on
            if not held or v["valid"][h] < 0.5:
                self.anchor[a] = None  # released or tracking lost: hold, and re-anchor on return
                tg.hold(a)
                parts.append(f"{self.names[a]}: " + ("holding" if v["valid"][h] >= 0.5 else "tracking lost"))
                continue
            ctrl_pos = VR_TO_ROBOT @ v["pose"][h, :3]
            ctrl_rot = VR_TO_ROBOT @ quaternion_matrix(v["pose"][h, 3:]) @ VR_TO_ROBOT.T
            anchor = self.anchor[a]
            if anchor is None:
                self.anchor[a] = anchor = (ctrl_pos, ctrl_rot, tg.pos[a].copy(), tg.rot[a].copy())
            p0, r0, ee_p0, ee_r0 = anchor
            tg.pos[a] = ee_p0 + c.scale * (ctrl_pos - p0)
            tg.rot[a] = (ctrl_rot @ r0.T) @ ee_r0
            tg.follow(a)
            parts.append(f"{self.names[a]}: clutched" + (" (at the edge of reach)" if tg.limited[a] else "")
                         + (" (blocked by a contact)" if tg.blocked[a] and not tg.limited[a] else ""))
        self.status = "; ".join(parts)
        return tg.cmd.copy()


def mapper_for(kind: str, fps: int) -> Mapper:
    if kind == "master-arm":
        return JointMirror(fps)
    if kind == "keyboard":
        return EEVelocity(fps)
    if kind == "vr":
        return VRClutch(fps)
    raise ValueError(f"no teleop mapping for device kind {kind!r}")
