"""Teleop into contact, on the real MujocoBackend (artixon-g in the bare green booth, mapper -> safety filter
-> 30 Hz ticks of 16 substeps, as a session runs them). The robot's links collide with each other
(artixon.xml), so a keyboard twist driving the right arm into the left arm, or into the chest and head,
must end with the arm stopped or sliding: shallow penetration at every tick, a finite simulation, a tcp
target that never runs on ahead of the arm, and, once the key is released, no push left behind. The
VR clutch does the same with its absolute hand mapping, and the leader-arm mirror driving a forearm into
the head stays bounded too.

Penetration is the deepest of all contacts: -min(data.contact.dist)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from x2.devices import Sample
from x2.envspec import load_env
from x2.sim.mujoco.backend import MujocoBackend
from x2.teleop import EEVelocity, JointMirror, SafetyFilter, VRClutch
from x2.teleop.mapping import LEASH_M, VR_TO_ROBOT

FPS = 30
PUSH_TICKS, RELEASE_TICKS = 4 * FPS, FPS
MAX_PENETRATION = 0.005  # m, at every tick
RIGHT = slice(7, 13)  # the right arm's joints in the action (left: 0-5, left gripper 6)
ROBOT = ("left_", "right_", "torso")


@pytest.fixture(scope="module")
def backend() -> MujocoBackend:
    return MujocoBackend(load_env(None, robot="artixon-g", scene="green_booth"))


@dataclass
class Drive:
    penetration: list[float] = field(default_factory=list)  # m, per tick
    tcp: list[np.ndarray] = field(default_factory=list)  # the right tcp as measured after each tick
    lead: list[float] = field(default_factory=list)  # m the mapper's right tcp target leads the measured tcp
    push: list[float] = field(default_factory=list)  # rad, largest right-arm servo error commanded
    pairs: list[set[tuple[str, str]]] = field(default_factory=list)  # robot bodies in contact, per tick

    def touching(self, a: tuple[str, ...], b: tuple[str, ...]) -> list[int]:
        """Ticks with a contact between a body named a* and one named b*."""
        return [k for k, pairs in enumerate(self.pairs)
                if any(x.startswith(a) and y.startswith(b) or x.startswith(b) and y.startswith(a) for x, y in pairs)]


def _record(drive: Drive, b: MujocoBackend, action: np.ndarray) -> None:
    d = b.data
    drive.penetration.append(max(0.0, -float(d.contact.dist[:d.ncon].min())) if d.ncon else 0.0)
    drive.pairs.append({(c.body1, c.body2) for c in b.contacts() if c.body1.startswith(ROBOT)
                        and c.body2.startswith(ROBOT)})
    rs = b.robot_state()
    drive.tcp.append(rs.ee_pose[1, :3].copy())
    drive.push.append(float(np.max(np.abs(action[RIGHT] - rs.qpos[8:14]))))  # qpos: 6 + 2 fingers per arm
    assert np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all()


def _keyboard(b: MujocoBackend, direction: tuple[float, float, float]) -> Drive:
    """The right arm's tcp driven along `direction` at full key for PUSH_TICKS, then released."""
    b.reset(0)
    home = b.home_action()
    mapper, safety = EEVelocity(FPS), SafetyFilter(b, FPS)
    mapper.reset(b, home)
    safety.reset(home)
    drive = Drive()
    for k in range(PUSH_TICKS + RELEASE_TICKS):
        twist = np.zeros((2, 6))
        if k < PUSH_TICKS:
            twist[1, :3] = direction
        action = safety(mapper.command(Sample(k, k / FPS, {"twist": twist}), 0.0, [], b.robot_state()))
        b.step(action)  # raises X2Error if the simulation goes unstable
        _record(drive, b, action)
        drive.lead.append(float(np.linalg.norm(mapper.targets.pos[1] - drive.tcp[-1])))
    return drive


def _check_no_backlog(drive: Drive) -> None:
    """While pushing the target never runs on (it leads by the leash at most, plus one tick of motion);
    released, it comes back onto the tcp and the servos stop pushing: the arm stays where it is."""
    assert max(drive.lead[:PUSH_TICKS]) < LEASH_M + 0.01
    settled = PUSH_TICKS + FPS // 3
    assert max(drive.lead[settled:]) < 0.005
    assert max(drive.push[settled:]) < 0.01
    assert np.linalg.norm(drive.tcp[-1] - drive.tcp[settled]) < 0.002


def test_keyboard_drives_the_right_arm_into_the_left_arm(backend: MujocoBackend) -> None:
    drive = _keyboard(backend, (0.0, 1.0, 0.0))
    touching = drive.touching(("right_",), ("left_",))
    assert touching, "the arms never touched"
    assert max(drive.penetration) < MAX_PENETRATION, max(drive.penetration)
    # contact slows it: from the first touch on, the tcp covers less than half of what the key commands
    # (the left arm's servos give way a little: it slides rather than stops dead)
    first = touching[0]
    commanded = EEVelocity(FPS).config.linear_mps * (PUSH_TICKS - first) / FPS
    assert drive.tcp[PUSH_TICKS - 1][1] - drive.tcp[first][1] < 0.5 * commanded
    _check_no_backlog(drive)


def test_keyboard_drives_the_right_arm_into_the_torso_and_head(backend: MujocoBackend) -> None:
    drive = _keyboard(backend, (-1.0, 0.3, -0.6))  # back towards the chest, in and down
    touching = drive.touching(("right_",), ("torso",))
    assert touching, "the arm never touched the torso"
    assert {b for pairs in drive.pairs for pair in pairs for b in pair} >= {"torso", "right_gripper"}
    assert max(drive.penetration) < MAX_PENETRATION, max(drive.penetration)
    # against the torso it stops: the last second of pushing moves the tcp by under a centimetre
    assert np.linalg.norm(drive.tcp[PUSH_TICKS - 1] - drive.tcp[PUSH_TICKS - 1 - FPS]) < 0.01
    _check_no_backlog(drive)


def test_vr_hand_driving_into_the_torso_stops_the_arm_without_backlog(backend: MujocoBackend) -> None:
    """The VR clutch maps the hand absolutely: the hand goes on 0.6 m into the chest, the arm stops at it
    with its target leashed; the clutch let go there leaves no push behind."""
    backend.reset(0)
    home = backend.home_action()
    mapper, safety = VRClutch(FPS), SafetyFilter(backend, FPS)
    mapper.reset(backend, home)
    safety.reset(home)
    direction = VR_TO_ROBOT.T @ np.array([-1.0, 0.3, -0.6])  # the same way as the keyboard test, in SteamVR axes
    drive = Drive()
    for k in range(PUSH_TICKS + RELEASE_TICKS):
        pose = np.zeros((2, 7))
        pose[:, 3] = 1.0
        pose[1, :3] = np.array([0.1, 1.2, -0.3]) + direction * 0.15 * min(k, PUSH_TICKS) / FPS
        clutch = 1.0 if k < PUSH_TICKS else 0.0
        sample = Sample(k, k / FPS, {"pose": pose, "valid": np.ones(2), "clutch": np.array([0.0, clutch]),
                                     "gripper": np.ones(2)})
        action = safety(mapper.command(sample, 0.0, [], backend.robot_state()))
        backend.step(action)
        _record(drive, backend, action)
        drive.lead.append(float(np.linalg.norm(mapper.targets.pos[1] - drive.tcp[-1])))
    assert drive.touching(("right_",), ("torso",)), "the arm never touched the torso"
    assert max(drive.penetration) < MAX_PENETRATION, max(drive.penetration)
    _check_no_backlog(drive)


def test_leader_arm_driving_the_forearm_into_the_head_stays_bounded(backend: MujocoBackend) -> None:
    """The mirror follows the leader's joints whatever they hit: the right shoulder yawed in to 1.6 rad
    swings the forearm into the head, where it stops with shallow contact and a stable simulation."""
    backend.reset(0)
    home = backend.home_action()
    mapper, safety = JointMirror(FPS), SafetyFilter(backend, FPS)
    mapper.reset(backend, home)
    safety.reset(home)
    leader_end = home.copy()
    leader_end[7] = 1.6  # right_j1 (positive yaws the right arm towards +y, in front of the torso)
    drive = Drive()
    for k in range(PUSH_TICKS):
        leader = home + min(1.0, k / (2 * FPS)) * (leader_end - home)  # 1.6 rad over 2 s, then held
        action = safety(mapper.command(Sample(k, k / FPS, {"joints": leader}), 0.0, [], backend.robot_state()))
        backend.step(action)
        _record(drive, backend, action)
    assert drive.touching(("right_",), ("torso",)), "the forearm never reached the head"
    assert max(drive.penetration) < MAX_PENETRATION, max(drive.penetration)
    assert np.linalg.norm(drive.tcp[-1] - drive.tcp[-FPS]) < 0.005  # stopped there, not creeping on
