"""One world compiled from its MJCF text, with the index tables the MuJoCo backend's hot path uses
(x2/sim/mujoco/backend.py keeps a few of these, by text)."""

from __future__ import annotations

from collections.abc import Mapping

import mujoco
import numpy as np
import numpy.typing as npt

from x2.base.errors import DatasetError, NotFoundError, SpecError
from x2.envspec.env import AssetSpec, EnvSpec
from x2.sim.mujoco.recorded_xml import check_world_xml, compile_world, make_data
from x2.sim.mujoco.state import state_size
from x2.sim.mujoco.world import ASSET_ROOT_BODY, free_joint, object_body, spec_files, world_error


class Compiled:
    """One world compiled from its XML text, with the index tables the hot path uses."""

    def __init__(self, env: EnvSpec, chosen: Mapping[str, AssetSpec], xml: str, source: str | None = None,
                 textures: Mapping[str, bytes] | None = None):
        self.textures = dict(textures or {})  # the images the world carries (x2.sim.mujoco.textures)
        if source is not None:  # read from a file: checked before MuJoCo opens anything it names
            self.model = compile_world(xml, source, self.textures)
            self.data = make_data(self.model, source)
        else:
            # x2's own world, checked too so that it never records one its readers would refuse (~2 ms of
            # the ~10 ms a new world takes to compile)
            check_world_xml(xml, f"robot {env.robot.name!r} / scene {env.scene_name!r}", self.textures)
            try:
                self.model = mujoco.MjModel.from_xml_string(xml, self.textures)
            except ValueError as exc:
                raise world_error(env, chosen, exc) from None
            self.data = mujoco.MjData(self.model)
        robot_file = spec_files(env)[1]
        self.xml = xml
        self._ids: dict[tuple[mujoco.mjtObj, str], int] = {}
        m = self.model
        self.chosen = dict(chosen)

        def named(kind: mujoco.mjtObj, name: str) -> int:
            # The names come from the robot spec (an arm's joints and actuators) or are derived from its
            # gripper (`<arm>_finger_a`): a robot file naming what its MJCF lacks is a mistake in that file.
            i = mujoco.mj_name2id(m, kind, name)
            if i < 0:
                what = kind.name.removeprefix("mjOBJ_").lower()
                if source is not None:  # the file's world lacks what its own world record names
                    raise DatasetError(f"{source}: model_xml: found no {what} {name!r}; allowed: the world its "
                                       "world record describes")
                field = next((f"arms.{a.name}.{f}" for a in env.robot.arms for f in ("joints", "actuators")
                              if name in getattr(a, f)), "gripper.mjcf")
                raise SpecError(robot_file, None, field, f"{what} {name!r}, which is not in the robot's world",
                                f"{what}s that its MJCF ({env.robot.mjcf.name}) and gripper MJCF "
                                f"({env.robot.gripper.mjcf.name}) define")
            return i

        def jid(name: str) -> int:
            return named(mujoco.mjtObj.mjOBJ_JOINT, name)

        def aid(name: str) -> int:
            return named(mujoco.mjtObj.mjOBJ_ACTUATOR, name)

        self.arm_qadr = {a.name: np.array([m.jnt_qposadr[jid(j)] for j in a.joints]) for a in env.robot.arms}
        self.base_qadr: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.arm_home = {a.name: np.array(a.home) for a in env.robot.arms}
        base = env.robot.base
        if base is not None:
            self.base_qadr = np.array([m.jnt_qposadr[jid(j)] for j in base.joints], dtype=np.int64)
        joints = env.robot.recorded_joints
        self.robot_joints = joints
        self.robot_qadr = np.array([m.jnt_qposadr[jid(j)] for j in joints])
        self.robot_dadr = np.array([m.jnt_dofadr[jid(j)] for j in joints])
        ctrl_ids, lo, hi = [], [], []
        for arm in env.robot.arms:
            for name in (*arm.actuators, arm.gripper_actuator):
                ctrl_ids.append(aid(name))
        if base is not None:
            ctrl_ids += [aid(name) for name in base.joints]  # (each joint's servo has its name)
        self.ctrl_ids = np.array(ctrl_ids)
        lo = m.actuator_ctrlrange[self.ctrl_ids, 0].copy()
        hi = m.actuator_ctrlrange[self.ctrl_ids, 1].copy()
        limited = m.actuator_ctrllimited[self.ctrl_ids].astype(bool)
        self.ctrl_lo = np.where(limited, lo, -np.inf)
        self.ctrl_hi = np.where(limited, hi, np.inf)
        g = env.robot.gripper
        self.gripper_slots = env.robot.action.gripper_slots
        self.gripper_scale = (g.closed_ctrl, g.open_ctrl - g.closed_ctrl)
        self.tcp_ids = np.array([self.lookup(mujoco.mjtObj.mjOBJ_SITE, a.tcp_site) for a in env.robot.arms])
        if g.drive == "linkage":  # the pads, at the linkages' ends (x2/sim/mujoco/linkage.py)
            self.fingers = {a.name: tuple(m.body(self.lookup(mujoco.mjtObj.mjOBJ_BODY, f"{a.name}_finger_{s}")).name
                                          for s in "ab") for a in env.robot.arms}
        else:
            self.fingers = {a.name: tuple(m.body(int(m.jnt_bodyid[jid(j)])).name for j in a.gripper_joints)
                            for a in env.robot.arms}
        self.gripper_qadr = {a.name: np.array([m.jnt_qposadr[jid(j)] for j in a.gripper_joints])
                             for a in env.robot.arms}
        self.object_names = tuple(o.name for o in env.objects)
        self.object_body = {o.name: self.lookup(mujoco.mjtObj.mjOBJ_BODY, object_body(o.name)) for o in env.objects}
        self.object_ids = np.array([self.object_body[n] for n in self.object_names], dtype=int)
        self.free_qadr = {}
        for o in env.objects:
            if chosen[o.name].free:
                self.free_qadr[o.name] = m.jnt_qposadr[jid(free_joint(o.name))]
        # body -> object/finger group, so `touching` is one vectorised lookup over the contacts
        self.root_of_body = np.array([self._group_root(b) for b in range(m.nbody)])
        self.root_of_geom = self.root_of_body[m.geom_bodyid]
        self.roots: dict[str, int] = {}  # name -> group root, as `MujocoBackend._root` resolved it
        self.qadr: dict[str, int] = {}  # joint name -> qpos address, as `MujocoBackend.joint_value` resolved it
        self.state_size = state_size(m)
        # The loop reads these every tick. MjData's arrays never move, and each attribute access through the
        # bindings makes a new array object (~0.3 us): views taken once.
        d = self.data
        self.qpos, self.qvel, self.xpos, self.xquat = d.qpos, d.qvel, d.xpos, d.xquat
        self.site_xpos, self.site_xmat = d.site_xpos, d.site_xmat
        self.tcp_xmat = [d.site_xmat[i] for i in self.tcp_ids]
        self.robot_q, self.robot_dq = _slice_if_contiguous(self.robot_qadr), _slice_if_contiguous(self.robot_dadr)

    def lookup(self, kind: mujoco.mjtObj, name: str) -> int:
        # Predicates look names up every tick; a dict hit is ~20x cheaper than mj_name2id.
        key = (kind, name)
        if key in self._ids:
            return self._ids[key]
        i = mujoco.mj_name2id(self.model, kind, name)
        if i < 0:
            raise NotFoundError(f"no {kind.name.removeprefix('mjOBJ_').lower()} named {name!r} in the world model")
        self._ids[key] = i
        return i

    def _group_root(self, body: int) -> int:
        """The object's top body, or the body itself for robot parts."""
        m = self.model
        b = body
        while b != 0:
            if m.body(b).name.endswith("/" + ASSET_ROOT_BODY):
                return b
            b = int(m.body_parentid[b])
        return body


def _slice_if_contiguous(index: npt.NDArray[np.int64]) -> slice | npt.NDArray[np.int64]:
    """`index` as a slice when it is one (a slice is cheaper to take, and copies only when asked)."""
    if len(index) and np.all(np.diff(index) == 1):
        return slice(int(index[0]), int(index[-1]) + 1)
    return index


def compiled(env: EnvSpec, chosen: Mapping[str, AssetSpec], xml: str, source: str | None,
             textures: Mapping[str, bytes] | None = None) -> Compiled:
    try:
        return Compiled(env, chosen, xml, source, textures)
    except NotFoundError as exc:
        if source is None:
            raise
        # a recorded world that lacks what its own world record names: the file is at fault, say which
        raise DatasetError(f"{source}: model_xml: {exc}; allowed: the world its world record describes") from None
