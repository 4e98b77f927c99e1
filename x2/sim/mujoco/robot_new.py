"""A starting robot from an arm's URDF or MJCF (`x2 robots new`): the part file and the robot file a user then
finishes, with what x2 could find filled in and what only the user can decide marked `TO DECIDE`.

What x2 finds: the chain (the longest serial chain of hinge and slide joints from a top-level body; where a
body has two or more jointed branches, such as a gripper's fingers, the chain stops there and the branches are
dropped: x2 mounts its own gripper), the flange body (the chain's last link) and a guess of the flange offset
(where that link's geometry ends along its z axis), the joint limits (refused when a joint has none), and a home
pose: the TCP 0.25 m above the table in front of the mount, pointing down, solved by x2's IK from zero joint
values clipped to the limits (those values themselves when no solution is found). At home, the shoulder and wrist
pitch joints synthesis's reach screen spans (`reach_joints`, `pitch_joints`) are the first and last joints whose
axes lie level; the shoulders (the first one's axis) and the reach the scene checks read are measured there.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import IKError, SpecError, X2Error
from x2.envspec import catalog, load_env
from x2.envspec.robot import gripper_names
from x2.envspec.schema import NAME_PATTERN
from x2.files.atomic import write_text
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.collision import CollisionWorld
from x2.sim.mujoco.ik import ArmIK
from x2.sim.mujoco.parts import DEFAULT_ARMATURE, DEFAULT_FORCE, DEFAULT_STIFFNESS, has_limits, vendor_spec
from x2.sim.mujoco.robot_check import BEYOND, GRASP_HEIGHT, reference_targets

HOME_HEIGHT = 0.25  # m above the table: where the home pose puts the TCP
HOME_AHEAD = 0.4  # m in front of the mount (+x, towards the table)
REACH_SAMPLES = 2000
DRAFT_REACH = 10.0  # m: the draft measured before its reach is known (the scene's reach check passes it)
SINGLE = ("mounts/stand.xml", (0.09, 0.0, 0.0), ("right",))  # as franka-panda
BIMANUAL = ("mounts/side_by_side.xml", (0.14, 0.0, 0.0), ("left", "right"))  # as arx-r5
_CHAIN_TYPES = (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE)


@dataclass(frozen=True)
class ArmChain:
    """What x2 found in an arm's file."""

    root: str
    joints: tuple[str, ...]
    limits: tuple[tuple[float, float], ...]
    efforts: tuple[float, ...]  # the file's torque limits (0: none given)
    flange_body: str
    flange_z: float  # m: the guessed flange offset along the flange body's z
    drop_bodies: tuple[str, ...]


@dataclass(frozen=True)
class NewRobot:
    robot_file: Path
    part_file: Path
    chain: ArmChain
    home: tuple[float, ...]
    home_solved: bool  # the home pose came from the IK (else: zeros clipped to the limits)
    shoulders: dict[str, tuple[float, float, float]]
    reach: float
    todo: tuple[str, ...] = field(default=())


def find_chain(file: Path, meshdir: Path | None = None) -> ArmChain:
    """The arm in `file` (module docstring); a file with no chain of two joints, or a chain joint without
    limits, is refused in one line."""
    spec = vendor_spec(file, "arm", meshdir)
    best: list[mujoco.MjsBody] = []
    best_joints = 0

    def jointed(body: mujoco.MjsBody) -> bool:
        return any(j.type in _CHAIN_TYPES for j in body.joints) or any(jointed(c) for c in body.bodies)

    def walk(body: mujoco.MjsBody, path: list[mujoco.MjsBody], count: int) -> None:
        nonlocal best, best_joints
        path = [*path, body]
        count += sum(j.type in _CHAIN_TYPES for j in body.joints)
        if count > best_joints:
            best, best_joints = path, count
        for child in body.bodies:
            walk(child, path, count)

    for top in spec.worldbody.bodies:
        walk(top, [], 0)
    drop: tuple[str, ...] = ()
    for i in range(1, len(best)):
        branches = [c for c in best[i - 1].bodies if jointed(c)]
        if len(branches) > 1:  # a hand's fingers: the arm ends at their parent
            best, drop = best[:i], tuple(c.name for c in branches)
            break
    joints = [j for b in best for j in b.joints if j.type in _CHAIN_TYPES]
    if len(joints) < 2:
        raise SpecError(str(file), None, "joints", f"{len(joints)} hinge or slide joint(s) in a chain",
                        "an arm: a chain of at least two hinge or slide joints")
    for j in joints:
        if not has_limits(j):
            raise SpecError(str(file), None, "joints", f"{j.name!r} (no limits: a continuous or unlimited joint)",
                            "a controlled joint with limits in the file")
    flange = joints[-1].parent
    return ArmChain(best[0].name, tuple(j.name for j in joints), tuple((float(j.range[0]), float(j.range[1]))
                                                                        for j in joints),
                    tuple(float(j.actfrcrange[1]) if j.actfrcrange[1] > j.actfrcrange[0] else 0.0 for j in joints),
                    flange.name, _geometry_end(spec, flange.name), drop)


def _geometry_end(spec: mujoco.MjSpec, body: str) -> float:
    """How far the body's collision geometry reaches along its own z (0 when it has none beyond its origin)."""
    try:
        model = spec.compile()
    except ValueError as err:
        raise SpecError(spec.modelfiledir or None, None, "model", str(err).strip().splitlines()[0],
                        "a file MuJoCo compiles") from None
    b = model.body(body).id
    top = 0.0
    for g in range(model.ngeom):
        if int(model.geom_bodyid[g]) != b:
            continue
        rot = np.zeros(9)
        mujoco.mju_quat2Mat(rot, model.geom_quat[g])
        centre, half = model.geom_aabb[g][:3], model.geom_aabb[g][3:]
        corners = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]) * half + centre
        top = max(top, float(np.max((corners @ rot.reshape(3, 3).T + model.geom_pos[g])[:, 2])))
    return round(top, 3)


def new_robot(name: str, arm_file: Path, *, gripper: str = "franka-hand", bimanual: bool = False,
              meshdir: Path | None = None, folder: Path | None = None, task: str = "pick_place") -> NewRobot:
    """Write `<folder>/<name>.yaml` and `<folder>/parts/<name>-arm.yaml` (folder: ./specs/robots), `task` its
    reference task; refuses a name taken by a built-in robot or a file that exists, and an arm that does not reach
    every target of `task` (nothing written)."""
    folder = folder or catalog.user_dir("robots")
    if not re.match(NAME_PATTERN, name):
        raise X2Error(f"name: found {name!r}; allowed: letters, digits, '_', '.', '-'")
    if (catalog.BUILTIN_DIRS["robots"] / f"{name}.yaml").is_file():
        raise X2Error(f"name: found {name!r} (a built-in robot); allowed: a name no robot has")
    robot_file, part_file = folder / f"{name}.yaml", folder / "parts" / f"{name}-arm.yaml"
    for path in (robot_file, part_file):
        if path.exists():
            raise X2Error(f"{path}: found an existing file; allowed: a new robot name (x2 robots new never "
                          "overwrites)")
    catalog.locate("tasks", task)  # (an unknown task: the line listing those there are, before any work)
    arm_file = arm_file.resolve()
    if not arm_file.is_file():
        raise X2Error(f"{arm_file}: found no such file; allowed: an arm's URDF or MJCF")
    grippers = gripper_names(robot_file)
    if gripper not in grippers:
        raise X2Error(f"--gripper: found {gripper!r}; allowed: one of {', '.join(grippers)}")
    chain = find_chain(arm_file, meshdir)
    mount, base_pos, arms = BIMANUAL if bimanual else SINGLE
    zeros = tuple(float(np.clip(0.0, lo, hi)) for lo, hi in chain.limits)
    guess = (2, len(chain.joints) - 1) if len(chain.joints) >= 3 else (1, 2)  # (the draft's; measured below)
    with tempfile.TemporaryDirectory(prefix="x2-robot-new-") as tmp:
        # compiled once from a draft (source path absolute, zero home) to solve the home pose and measure it
        draft = Path(tmp)
        (draft / "parts").mkdir()
        (draft / "parts" / part_file.name).write_text(
            _part_text(name, arm_file, str(arm_file), chain, None if meshdir is None else meshdir.resolve()))
        text = _robot_text(name, arm_file, mount, base_pos, arms, gripper, {a: zeros for a in arms}, guess,
                           {a: (0.0, 0.0, 1.0) for a in arms}, DRAFT_REACH, task)
        (draft / robot_file.name).write_text(text)
        try:
            measured = _home_and_reach(draft / robot_file.name, zeros, guess, task, f"x2 robots new {name}")
        except X2Error as exc:  # (said of the files this writes, not of a draft that is gone by then)
            raise X2Error(str(exc).replace(str(draft / "parts"), str(part_file.parent))
                          .replace(str(draft), str(robot_file.parent))) from None
    homes, solved, reach_joints = measured.homes, measured.solved, measured.reach_joints
    shoulders, reach = measured.shoulders, measured.reach
    source = os.path.relpath(arm_file, part_file.parent) if arm_file.is_relative_to(Path.cwd()) else str(arm_file)
    part_text = _part_text(name, arm_file, source, chain, meshdir if meshdir is None else
                           Path(os.path.relpath(meshdir.resolve(), part_file.parent)))
    robot_text = _robot_text(name, arm_file, mount, base_pos, arms, gripper, homes, reach_joints, shoulders, reach,
                             task)
    part_file.parent.mkdir(parents=True, exist_ok=True)
    write_text(part_file, part_text)
    write_text(robot_file, robot_text)
    todo = [
        f"flange: where the gripper mounts on {chain.flange_body} (flange_pos, flange_quat in {part_file.name}); "
        f"x2 guessed {chain.flange_z} m along its z, no turn",
        "home pose: " + ("solved by x2's IK (TCP 0.25 m above the table, pointing down); keep or change it" if solved
                         else "x2's IK found none; zeros clipped to the limits are written: set arms.*.home"),
        "servo gains: defaulted from the file's effort limits (kp, kv, force in the part file: x2 robots check "
        "prints them)",
        f"cameras: the mount's head camera and a wrist camera on the gripper ({gripper}); add or move them in "
        "the mount's MJCF",
    ]
    if chain.drop_bodies:
        todo.append(f"dropped from the file (a hand of its own, x2 mounts {gripper}): {', '.join(chain.drop_bodies)}")
    first = arms[0]
    return NewRobot(robot_file, part_file, chain, homes[first], solved, shoulders, reach, tuple(todo))


@dataclass(frozen=True)
class _Measured:
    homes: dict[str, tuple[float, ...]]
    solved: bool
    reach_joints: tuple[int, int]
    shoulders: dict[str, tuple[float, float, float]]  # m, from the robot's base_pos, as robot files give them
    reach: float


def _home_and_reach(robot_file: Path, zeros: tuple[float, ...], guess: tuple[int, int], task: str,
                    where: str) -> _Measured:
    """The draft robot at `robot_file` measured: its home solved, its pitch joints, shoulders and reach; refused
    in one line when no arm reaches one of `task`'s targets from home (`reference_targets`, as `x2 robots check`
    looks for them)."""
    env = load_env(None, robot=str(robot_file))
    backend = MujocoBackend(env)
    backend.reset(0)
    world = CollisionWorld(backend)
    m = backend.model
    d = mujoco.MjData(m)
    d.qpos[:] = backend.data.qpos
    rng = np.random.default_rng(0)
    homes: dict[str, tuple[float, ...]] = {}
    solved = True
    for arm in env.robot.arms:
        mount = m.site(f"{arm.name}_mount").id
        mujoco.mj_kinematics(m, d)
        x, y, _ = d.site_xpos[mount]
        target = np.array([x + HOME_AHEAD, y, env.booth.table_height + HOME_HEIGHT])
        try:
            q = ArmIK(world, arm.name).solve(target, rng=rng, q_ref=np.asarray(zeros), axis_down=True)
            homes[arm.name] = tuple(round(float(v), 3) for v in q)
        except IKError:
            homes[arm.name], solved = zeros, False
        for j, v in zip(arm.joints, homes[arm.name], strict=True):
            d.qpos[m.jnt_qposadr[m.joint(j).id]] = v
    mujoco.mj_kinematics(m, d)
    first = env.robot.arms[0]
    reach_joints = pitch_joints(d, [m.joint(j).id for j in first.joints]) or guess
    base = np.asarray(env.robot.base_pos)
    shoulders: dict[str, tuple[float, float, float]] = {}
    world_shoulders = []
    far = 0.0
    for arm in env.robot.arms:
        pos = d.xanchor[m.joint(arm.joints[reach_joints[0] - 1]).id].copy()
        world_shoulders.append(pos)
        rel = pos - base
        shoulders[arm.name] = (round(float(rel[0]), 3), round(float(rel[1]), 3), round(float(rel[2]), 3))
        far = max(far, _farthest(m, arm.joints, arm.tcp_site, pos, rng))
    reach = round(0.9 * far, 2)
    # the task's regions (its scene with this draft, whose reach is a placeholder the scene's own check passes)
    regions = load_env(task, robot=str(robot_file))
    targets = [reference_targets(regions, arm.name, homes[arm.name], world, rng,
                                 beyond=_beyond(m, arm.tcp_site, arm.joints[reach_joints[0] - 1], shoulder))
               for arm, shoulder in zip(env.robot.arms, world_shoulders, strict=True)]
    reached = {t.where for ts in targets for t in ts if t.reached}
    missed = [t for t in targets[0] if t.where not in reached]
    distance = {t.where: min(float(np.linalg.norm(np.array(t.pos) - s)) for s in world_shoulders) for t in targets[0]}
    if missed:
        worst = max(missed, key=lambda t: distance[t.where])
        raise X2Error(
            f"{where}: reach: found {len(missed)} of {task}'s {len(targets[0])} targets out of reach, the "
            f"farthest {worst.where} {list(worst.pos)} {distance[worst.where]:.2f} m from the "
            f"{'nearest ' if len(world_shoulders) > 1 else ''}shoulder (the arm reaches {far:.2f} m"
            f"{_detail(worst.detail)}); allowed: an arm that reaches every target of {task} from x2's stand, tool "
            f"down (or --task naming a task whose regions it reaches)")
    # (the scene's check reads `reach` at the regions' surface: never less than what the arm was seen to reach)
    need = max((min(float(np.linalg.norm(np.array(t.pos) - (0.0, 0.0, GRASP_HEIGHT) - s)) for s in world_shoulders)
                for t in targets[0]), default=0.0)
    return _Measured(homes, solved, reach_joints, shoulders, max(reach, float(np.ceil(need * 100) / 100)))


def _detail(ik: str) -> str:
    """The IK's failure in words: how close it came (the IK's message ends with it), that the arm collides, or
    nothing where no IK was run (the distance says it all)."""
    if ik == BEYOND:
        return ""
    closest = re.search(r"closest: ([\d.]+ mm)", ik)
    return "; x2's IK comes within " + closest.group(1) if closest else "; " + ik.split(": ", 1)[-1]


def _beyond(m: mujoco.MjModel, tcp_site: str, shoulder_joint: str, shoulder: Floats) -> Callable[[Floats], bool]:
    """Whether a point lies farther from the shoulder than the arm's length: the TCP's offsets down the chain from
    the shoulder joint's axis, added up (no configuration reaches farther)."""
    site = m.site(tcp_site).id
    joint = m.joint(shoulder_joint).id
    top = int(m.jnt_bodyid[joint])
    length = float(np.linalg.norm(m.site_pos[site])) + float(np.linalg.norm(m.jnt_pos[joint]))
    b = int(m.site_bodyid[site])
    while b != top and b > 0:
        length += float(np.linalg.norm(m.body_pos[b]))
        b = int(m.body_parentid[b])
    return lambda point: float(np.linalg.norm(point - shoulder)) > length


def pitch_joints(d: mujoco.MjData, jids: list[int]) -> tuple[int, int] | None:
    """The arm's shoulder pitch and wrist pitch (1-based), the joints synthesis's reach screen measures between
    (x2/synth/skills/shapes.py, ArmReach): with the arm at home and its tool pointing down, the first and the last
    joint whose axis lies closer to the horizontal than to the vertical (a base yaw and a wrist roll about the
    tool's axis stand upright). A 6-DoF arm gets (2, 5) and a 7-DoF one (2, 6), as the built-in robots declare; a
    4- or 5-DoF arm (yaw, three pitches, perhaps a roll) gets (2, 4). None when fewer than two are horizontal."""
    level = [i + 1 for i, j in enumerate(jids) if abs(float(d.xaxis[j][2])) < np.sqrt(0.5)]
    return (level[0], level[-1]) if len(level) >= 2 else None


def _farthest(m: mujoco.MjModel, joints: tuple[str, ...], site: str, shoulder: Floats,
              rng: np.random.Generator) -> float:
    """The farthest sampled TCP from the shoulder (0.9 of it is the reach the scene checks use: the last tenth
    is a straight arm, no place to grasp from)."""
    d = mujoco.MjData(m)
    jids = [m.joint(j).id for j in joints]
    qadr, lo, hi = m.jnt_qposadr[jids], m.jnt_range[jids, 0], m.jnt_range[jids, 1]
    sid = m.site(site).id
    far = 0.0
    for _ in range(REACH_SAMPLES):
        d.qpos[qadr] = rng.uniform(lo, hi)
        mujoco.mj_kinematics(m, d)
        far = max(far, float(np.linalg.norm(d.site_xpos[sid] - shoulder)))
    return far


def _quoted(text: str) -> str:
    """A YAML scalar that reads back as `text` whatever it holds (a path with ', ', ' #' or ': '): JSON's string."""
    return json.dumps(text, ensure_ascii=False)


def _floats(values: tuple[float, ...] | list[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in values) + "]"


def _part_text(name: str, arm_file: Path, source: str, chain: ArmChain, meshdir: Path | None) -> str:
    forces = [e if e > 0 else DEFAULT_FORCE for e in chain.efforts]
    src = f"{{file: {_quoted(source)}" + ("" if meshdir is None else f", meshdir: {_quoted(str(meshdir))}") + "}"
    lines = [
        f"# The arm of robot {name}, from {arm_file.name} (written by `x2 robots new`: x2 found the chain, the limits",
        "# and the flange body in the file; what says TO DECIDE is yours to check).",
        f"name: {name}-arm",
        "kind: arm",
        "description: " + _quoted(f"{chain.root} .. {chain.flange_body}, {len(chain.joints)} DoF, from "
                                  f"{arm_file.name}"),
        f"source: {src}",
        f"root: {chain.root}",
        f"joints: [{', '.join(chain.joints)}]",
    ]
    if chain.drop_bodies:
        lines.append(f"drop_bodies: [{', '.join(chain.drop_bodies)}]  # the file's own hand: x2 mounts its gripper")
    lines += [
        f"flange_body: {chain.flange_body}",
        f"# TO DECIDE: where the gripper mounts on {chain.flange_body} (guessed: where its geometry ends along its z)",
        f"flange_pos: [0.0, 0.0, {chain.flange_z}]",
        "flange_quat: [1.0, 0.0, 0.0, 0.0]",
        "# TO DECIDE: the servos. Left out (as here), x2 defaults them from the file's effort limits: force = the",
        f"# limit ({DEFAULT_FORCE:g} N m where none), kp = {DEFAULT_STIFFNESS:g} x force per rad, kv = kp / 10:",
        f"# kp: {_floats([DEFAULT_STIFFNESS * f for f in forces])}",
        f"# kv: {_floats([DEFAULT_STIFFNESS * f / 10 for f in forces])}",
        f"# force: {_floats(forces)}",
        f"# (and {DEFAULT_ARMATURE:g} kg m^2 of armature on joints the file gives none: joint_dynamics sets your own)",
    ]
    return "\n".join(lines) + "\n"


def _robot_text(name: str, arm_file: Path, mount: str, base_pos: tuple[float, float, float], arms: tuple[str, ...],
                gripper: str, homes: dict[str, tuple[float, ...]], reach_joints: tuple[int, int],
                shoulders: dict[str, tuple[float, float, float]], reach: float, task: str) -> str:
    lines = [
        f"# Robot {name}: the arm of {arm_file.name} (parts/{name}-arm.yaml) on x2's {mount} with x2's {gripper}",
        "# (written by `x2 robots new`; `x2 robots check` reports what x2 finds in it).",
        f"name: {name}",
        "description: " + _quoted(f"{'Two arms' if len(arms) > 1 else 'An arm'} from {arm_file.name} with the "
                                  f"{gripper} gripper."),
        f"mjcf: {mount}  # x2's own mount, by name",
        f"base_pos: {_floats(base_pos)}",
        f"gripper: {gripper}",
        "arms:",
    ]
    for arm in arms:
        lines += [
            f"  {arm}:",
            f"    part: {name}-arm",
            "    # TO DECIDE: the home pose (x2 solved the TCP 0.25 m above the table, pointing down)",
            f"    home: {_floats(homes[arm])}",
            f"    reach_joints: [{reach_joints[0]}, {reach_joints[1]}]",
        ]
    lines += [
        f"cameras: [head, {', '.join(f'{a}_wrist' for a in arms)}]",
        "# measured by x2 at home: joint " + str(reach_joints[0]) + "'s axis (from base_pos), and 0.9 of the farthest "
        "TCP from it",
        "shoulders: {" + ", ".join(f"{a}: {_floats(shoulders[a])}" for a in arms) + "}",
        f"reach: {reach}",
        "control: {fps: 30, substeps: 16}",
        f"reference_task: {task}",
    ]
    return "\n".join(lines) + "\n"
