"""What x2 finds in a robot (`x2 robots check`): its chains, limits and servos, where its TCP is at home, what it
touches at home, what of the reference task's targets it reaches, and whether its arms move as their source
files say.

The forward-kinematics comparison compiles each arm's source file alone with plain MuJoCo (a URDF read by
MuJoCo's URDF reader with its geometry left out, since plain MuJoCo finds no `package://` mesh; an MJCF as it
is) and compares, at random joint values within the limits, the flange's pose relative to the arm's root
body there and in x2's compiled robot (mount, renaming, stripping, flange site and all).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import IKError, X2Error
from x2.envspec import load_env
from x2.envspec.env import ArmPart, ArmSpec, EnvSpec
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.collision import CollisionWorld
from x2.sim.mujoco.ik import ArmIK, IKOptions
from x2.sim.mujoco.robot import flange_site

GRASP_HEIGHT = 0.03  # m above a region's surface: where a top grasp puts the TCP on a small object
REACH_SAMPLES = 3000  # random configurations per arm for the workspace estimate
CELL = 0.05  # m, the table grid the workspace estimate covers
COVER_BAND = (0.02, 0.30)  # m above the table: a TCP there counts for the cell below it


@dataclass(frozen=True)
class JointCheck:
    name: str
    kind: str  # hinge | slide
    lo: float
    hi: float
    home: float
    kp: float
    kv: float
    force: float


@dataclass(frozen=True)
class TargetReach:
    """One grasp point of the reference task (a region's centre or corner, at grasp height)."""

    where: str  # region name and spot
    pos: tuple[float, float, float]
    reached: bool
    detail: str  # the IK's failure, or ""


@dataclass(frozen=True)
class ArmCheck:
    arm: str
    part: str | None
    source: str
    root: str
    flange: str
    joints: tuple[JointCheck, ...]
    defaulted: tuple[str, ...]  # servo fields x2 defaulted
    home_tcp: tuple[float, float, float]
    targets: tuple[TargetReach, ...]
    max_reach: float  # m, the farthest sampled TCP from the first joint's anchor
    table_cover: float  # fraction of the table top (CELL grid) some sampled TCP reaches within COVER_BAND above
    fk_configs: int
    fk_max_error_mm: float | None  # None: the arm is in the robot's own MJCF (no separate source)
    fk_max_angle_deg: float | None


@dataclass(frozen=True)
class HomeContact:
    geom1: str
    geom2: str
    depth_mm: float


@dataclass(frozen=True)
class RobotCheck:
    robot: str
    task: str
    dof: int
    arms: tuple[ArmCheck, ...]
    self_contacts: tuple[HomeContact, ...]  # robot geom against robot geom at home
    booth_contacts: tuple[HomeContact, ...]  # robot geom against the booth (table, walls, floor) at home
    problems: tuple[str, ...]  # what would stop synthesis, one line each

    @property
    def ok(self) -> bool:
        return not self.problems


def check_robot(robot: str, task: str | None = None, configs: int = 100, seed: int = 0) -> RobotCheck:
    """Check a robot by name or path against `task` (default: its reference task, else pick_place)."""
    from x2.envspec import load_robot

    info = load_robot(robot)
    task = task or info.reference_task or "pick_place"
    env = load_env(task, robot=robot)
    backend = MujocoBackend(env)
    backend.reset(seed)
    m = backend.model
    d = mujoco.MjData(m)
    d.qpos[:] = backend.data.qpos
    for arm in env.robot.arms:
        for j, q in zip(arm.joints, arm.home, strict=True):
            d.qpos[m.jnt_qposadr[m.joint(j).id]] = q
    mujoco.mj_forward(m, d)
    robot_bodies = _robot_bodies(m, env)
    self_contacts, booth_contacts = _home_contacts(m, d, robot_bodies)
    # the IK's world: the booth and the robot without the task's objects (a grasp point is inside its object)
    bare = MujocoBackend(load_env(None, robot=robot))
    bare.reset(seed)
    world = CollisionWorld(bare)
    rng = np.random.default_rng(seed)
    arms = tuple(_check_arm(m, d, env, arm, world, configs, rng) for arm in env.robot.arms)
    problems: list[str] = []
    for c in self_contacts:
        problems.append(f"at home {c.geom1} touches {c.geom2} ({c.depth_mm:.1f} mm deep): change the home pose")
    for c in booth_contacts:
        problems.append(f"at home {c.geom1} touches the booth's {c.geom2}: change the home pose or the mount")
    # a target any arm reaches is reachable (a one-arm task binds the arm that can; a bimanual robot's far arm
    # need not reach across)
    reached = {t.where for a in arms for t in a.targets if t.reached}
    missed = sorted({t.where for a in arms for t in a.targets} - reached)
    if missed:
        problems.append(f"no arm reaches {len(missed)} of the {task} targets ({', '.join(missed[:3])}"
                        f"{', ...' if len(missed) > 3 else ''})")
    for a in arms:
        if a.fk_max_error_mm is not None and a.fk_max_error_mm > 1.0:
            problems.append(f"arm {a.arm}: flange differs from its source file by {a.fk_max_error_mm:.2f} mm")
    return RobotCheck(env.robot.name, task, sum(len(a.joints) for a in env.robot.arms), arms,
                      tuple(self_contacts), tuple(booth_contacts), tuple(problems))


def _robot_bodies(m: mujoco.MjModel, env: EnvSpec) -> set[int]:
    first = m.joint(env.robot.arms[0].joints[0]).id
    torso = int(m.body_rootid[int(m.jnt_bodyid[first])])
    return {b for b in range(m.nbody) if int(m.body_rootid[b]) == torso}


def _geom_name(m: mujoco.MjModel, g: int) -> str:
    return m.geom(g).name or f"{m.body(int(m.geom_bodyid[g])).name}/geom{g}"


def _home_contacts(m: mujoco.MjModel, d: mujoco.MjData, robot: set[int]) -> tuple[list[HomeContact], list[HomeContact]]:
    mine: list[HomeContact] = []
    booth: list[HomeContact] = []
    seen: set[tuple[int, int]] = set()
    for c in d.contact[:d.ncon]:
        if (int(c.geom1), int(c.geom2)) in seen:
            continue
        seen.add((int(c.geom1), int(c.geom2)))
        b1, b2 = int(m.geom_bodyid[c.geom1]), int(m.geom_bodyid[c.geom2])
        if c.dist >= 0 or (b1 not in robot and b2 not in robot):
            continue
        if b1 in robot and b2 in robot:
            mine.append(HomeContact(_geom_name(m, c.geom1), _geom_name(m, c.geom2), round(-float(c.dist) * 1e3, 2)))
        elif int(m.body_rootid[b1]) == 0 or int(m.body_rootid[b2]) == 0:  # welded to the world: the booth
            ours, theirs = (c.geom1, c.geom2) if b1 in robot else (c.geom2, c.geom1)
            booth.append(HomeContact(_geom_name(m, ours), _geom_name(m, theirs), round(-float(c.dist) * 1e3, 2)))
    return mine, booth


def _check_arm(m: mujoco.MjModel, d: mujoco.MjData, env: EnvSpec, arm: ArmSpec, world: CollisionWorld,
               configs: int, rng: np.random.Generator) -> ArmCheck:
    jids = [m.joint(j).id for j in arm.joints]
    joints = []
    for j, jid, home, servo in zip(arm.joints, jids, arm.home, arm.actuators, strict=True):
        act = m.actuator(servo)
        kind = "slide" if m.jnt_type[jid] == mujoco.mjtJoint.mjJNT_SLIDE else "hinge"
        joints.append(JointCheck(j, kind, float(m.jnt_range[jid][0]), float(m.jnt_range[jid][1]), float(home),
                                 float(m.actuator_gainprm[act.id][0]), float(-m.actuator_biasprm[act.id][2]),
                                 float(m.actuator_forcerange[act.id][1])))
    tcp = m.site(arm.tcp_site).id
    home_tcp = tuple(round(float(v), 4) for v in d.site_xpos[tcp])
    targets = reference_targets(env, arm.name, arm.home, world, rng)
    max_reach, cover = _workspace(m, env, arm, jids, rng)
    part = arm.part
    err_mm = angle = None
    if part is not None:
        err_mm, angle = _fk_against_source(m, arm, part, configs, rng)
    return ArmCheck(arm.name, None if part is None else part.name, "" if part is None else str(part.source.file),
                    "" if part is None else part.root, "" if part is None else part.flange_body, tuple(joints),
                    () if part is None else part.defaulted, (home_tcp[0], home_tcp[1], home_tcp[2]), targets,
                    max_reach, cover, configs if part is not None else 0, err_mm, angle)


BEYOND = "beyond the arm's length"  # a TargetReach's detail where no IK was run


def reference_targets(env: EnvSpec, arm: str, home: tuple[float, ...], world: CollisionWorld,
                      rng: np.random.Generator, beyond: Callable[[Floats], bool] | None = None,
                      ) -> tuple[TargetReach, ...]:
    """Each region of the task's scene (`env`): its centre and corners at grasp height, solved for `arm` from
    `home` with x2's IK (tool axis down, as a top grasp) in `world`, the booth without objects, the arm's
    collisions checked; a target `beyond` says no arm of this length reaches is missed without the IK (whose
    failure costs most of a second). (`x2 robots new` refuses an arm that misses one, x2/sim/mujoco/robot_new.py.)"""
    ik = ArmIK(world, arm, IKOptions(collision_free=False))  # (checked below, to say which it was)
    out = []
    regions = {o.region.name: o.region for o in env.objects if o.region is not None}
    for region in regions.values():
        (cx, cy), (hx, hy) = region.center, region.half_size
        spots = {"centre": (cx, cy), "near left": (cx - hx, cy + hy), "near right": (cx - hx, cy - hy),
                 "far left": (cx + hx, cy + hy), "far right": (cx + hx, cy - hy)}
        for spot, (x, y) in spots.items():
            pos = (round(x, 4), round(y, 4), round(region.z + GRASP_HEIGHT, 4))
            if beyond is not None and beyond(np.array(pos)):
                out.append(TargetReach(f"{region.name} {spot}", pos, False, BEYOND))
                continue
            try:
                q = ik.solve(np.array(pos), rng=rng, q_ref=np.asarray(home), axis_down=True)
                reached, detail = True, ""
                if world.in_collision({arm: q}):
                    reached, detail = False, "solved, but the arm then collides"
            except IKError as exc:
                reached, detail = False, str(exc)
            out.append(TargetReach(f"{region.name} {spot}", pos, reached, detail))
    return tuple(out)


def _workspace(m: mujoco.MjModel, env: EnvSpec, arm: ArmSpec, jids: list[int],
               rng: np.random.Generator) -> tuple[float, float]:
    d = mujoco.MjData(m)
    lo, hi = m.jnt_range[jids, 0], m.jnt_range[jids, 1]
    qadr = m.jnt_qposadr[jids]
    tcp = m.site(arm.tcp_site).id
    anchor = int(m.jnt_bodyid[jids[0]])
    pts = np.zeros((REACH_SAMPLES, 3))
    for i in range(REACH_SAMPLES):
        d.qpos[qadr] = rng.uniform(lo, hi)
        mujoco.mj_kinematics(m, d)
        pts[i] = d.site_xpos[tcp]
    base = d.xpos[anchor].copy()
    max_reach = round(float(np.max(np.linalg.norm(pts - base, axis=1))), 3)
    b = env.booth
    xs = np.arange(b.table_center[0] - b.table_half_size[0] + CELL / 2, b.table_center[0] + b.table_half_size[0], CELL)
    ys = np.arange(b.table_center[1] - b.table_half_size[1] + CELL / 2, b.table_center[1] + b.table_half_size[1], CELL)
    band = pts[(pts[:, 2] >= b.table_height + COVER_BAND[0]) & (pts[:, 2] <= b.table_height + COVER_BAND[1])]
    if len(band) == 0:
        return max_reach, 0.0
    cells = {(int(np.floor((x - xs[0] + CELL / 2) / CELL)), int(np.floor((y - ys[0] + CELL / 2) / CELL)))
             for x, y in band[:, :2]}
    covered = sum((i, j) in cells for i in range(len(xs)) for j in range(len(ys)))
    return max_reach, round(covered / (len(xs) * len(ys)), 3)


def plain_model(part: ArmPart) -> mujoco.MjModel:
    """The part's source file compiled alone by plain MuJoCo (a URDF without its geometry, and its inertias
    balanced where they break the triangle inequality, as x2 reads it: kinematics do not depend on them)."""
    file = part.source.file
    try:
        if file.suffix.lower() == ".urdf":
            text = re.sub(r"<(visual|collision)\b.*?</\1>", "", file.read_text(), flags=re.S)
            text = re.sub(r"(<robot\b[^>]*>)", r'\1<mujoco><compiler balanceinertia="true"/></mujoco>', text,
                          count=1)
            return mujoco.MjModel.from_xml_string(text)
        spec = mujoco.MjSpec.from_file(str(file))
        if part.source.meshdir is not None:  # (the part's meshdir, as x2 reads the file)
            spec.meshdir = str(part.source.meshdir)
        return spec.compile()
    except ValueError as err:
        raise X2Error(f"{file}: plain MuJoCo cannot compile it: {str(err).strip().splitlines()[0]}") from None


def _pose(m: mujoco.MjModel, d: mujoco.MjData, body: str) -> tuple[Floats, Floats]:
    try:
        b = m.body(body).id
    except KeyError:  # (a URDF's fixed root, fused into the world by plain MuJoCo)
        return np.zeros(3), np.eye(3)
    return d.xpos[b].copy(), d.xmat[b].reshape(3, 3).copy()


def _fk_against_source(m: mujoco.MjModel, arm: ArmSpec, part: ArmPart, configs: int,
                       rng: np.random.Generator) -> tuple[float, float]:
    pm = plain_model(part)
    pd, d = mujoco.MjData(pm), mujoco.MjData(m)
    ours = [m.jnt_qposadr[m.joint(j).id] for j in arm.joints]
    theirs = [pm.jnt_qposadr[pm.joint(j).id] for j in part.joints]
    lo, hi = m.jnt_range[[m.joint(j).id for j in arm.joints]].T
    prefix = arm.name + "_"
    site = m.site(flange_site(arm.name)).id
    offset_rot = np.zeros(9)
    mujoco.mju_quat2Mat(offset_rot, np.asarray(part.flange_quat, dtype=np.float64))
    worst, worst_angle = 0.0, 0.0
    for _ in range(configs):
        q = rng.uniform(lo, hi)
        d.qpos[ours], pd.qpos[theirs] = q, q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_kinematics(pm, pd)
        r0p, r0r = _pose(m, d, prefix + part.root)
        mine_p = r0r.T @ (d.site_xpos[site] - r0p)
        mine_r = r0r.T @ d.site_xmat[site].reshape(3, 3)
        p0p, p0r = _pose(pm, pd, part.root)
        fp, fr = _pose(pm, pd, part.flange_body)
        their_p = p0r.T @ (fp + fr @ np.asarray(part.flange_pos) - p0p)
        their_r = p0r.T @ fr @ offset_rot.reshape(3, 3)
        worst = max(worst, float(np.linalg.norm(mine_p - their_p)) * 1e3)
        cos = (np.trace(mine_r.T @ their_r) - 1.0) / 2.0
        worst_angle = max(worst_angle, float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0)))))
    return round(worst, 4), round(worst_angle, 4)
