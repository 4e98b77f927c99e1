"""A collision checker on the simulator's own geometry, for planning.

`CollisionWorld` snapshots a backend's MuJoCo view (a copy of its model and state; the live sim is never
touched) and re-assigns contact bitmasks so that exactly the pairs a planner cares about collide:

- every robot geom against the rest of the world (table, walls, objects, the microwave and its door
  at the angle it had when the world was built or last synced);
- the two arms against each other, and the torso against both arms from link3 (the forearm) on;
- each arm against itself, for links three or more joints apart (nearer links overlap at the joints
  by construction, and MuJoCo's parent-child filter only covers direct neighbours).

The simulator itself has robot geoms contype=2 / conaffinity=1, so it never reports arm-arm contacts;
this is why the checker compiles its own masks. One bit per link group: world W, torso T and
7 groups per arm (links 1-6, gripper incl. fingers), 16 bits of the 32 available.

A check is `mj_kinematics` + `mj_collision` on the copy, ~10-20 us (see tests/test_motion_collision.py).
A held object costs a second `mj_kinematics` (~2 us) after its free joint is set from the tcp site.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping

import mujoco
import numpy as np

from x2.errors import NotFoundError
from x2.sim.backend import Backend
from x2.sim.mujoco.world import free_joint, object_body

GRIPPER_GROUP = 7  # group index of the gripper, its fingers and anything it holds
SELF_MIN_HOPS = 3  # same-arm groups this many joints apart are checked against each other
TORSO_MIN_GROUP = 3  # link2's upper arm sits in the torso's shoulder bracket by construction
_W, _T = 0, 1


def _bit(arm_index: int, group: int) -> int:
    return 1 << (2 + 7 * arm_index + group - 1)


class _Carried:
    """A held object's pose fixed in the tcp site's frame; `place` sets its free joint from the site."""

    def __init__(self, arm: str, site: int, qadr: int, d: mujoco.MjData):
        self.arm, self.qadr = arm, qadr
        # MjData's arrays never move: views taken once spare the bindings' lookups and slicing on every
        # check, which cost more than the second mj_kinematics itself (~2 us)
        self.site_xpos, self.site_xmat = d.site_xpos[site], d.site_xmat[site]
        self.rot = self.site_xmat.reshape(3, 3)
        self.pos, self.quat = d.qpos[qadr:qadr + 3], d.qpos[qadr + 3:qadr + 7]
        self.rel_pos = self.rot.T @ (self.pos - self.site_xpos)
        site_quat, self.rel_quat = np.empty(4), np.empty(4)
        mujoco.mju_mat2Quat(site_quat, self.site_xmat)
        mujoco.mju_negQuat(site_quat, site_quat)
        mujoco.mju_mulQuat(self.rel_quat, site_quat, self.quat)
        self._site_quat, self._offset = np.empty(4), np.empty(3)

    def place(self) -> None:
        """After mj_kinematics: put the object where the site carries it (the caller re-runs kinematics)."""
        np.matmul(self.rot, self.rel_pos, out=self._offset)
        np.add(self.site_xpos, self._offset, out=self.pos)
        mujoco.mju_mat2Quat(self._site_quat, self.site_xmat)
        mujoco.mju_mulQuat(self.quat, self._site_quat, self.rel_quat)


class CollisionWorld:
    """Collision checks for joint configurations of the robot's arms, on a private model copy."""

    def __init__(self, backend: Backend, margin: float = 0.0):
        self.env = backend.env
        self.model = copy.deepcopy(backend.model)  # welded objects' poses live in model.body_pos
        # The simulator overrides every contact's softness and margin (x2/sim/mujoco/booth.py); checks need
        # the per-geom margins they set below, so the copy uses the geoms' own parameters.
        self.model.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_OVERRIDE)
        self.data = mujoco.MjData(self.model)
        self.checks = 0
        m = self.model
        self.arms = tuple(a.name for a in self.env.robot.arms)
        self.arm_qadr: dict[str, np.ndarray] = {}
        self._arm_slice: dict[str, slice | np.ndarray] = {}  # a slice when contiguous: faster to assign
        self.joint_range: dict[str, np.ndarray] = {}
        self.tcp_site: dict[str, int] = {}
        group_of_body: dict[int, tuple[int, int]] = {}  # body -> (arm index, group)
        for ai, arm in enumerate(self.env.robot.arms):
            jids = [self._id(mujoco.mjtObj.mjOBJ_JOINT, j) for j in arm.joints]
            self.arm_qadr[arm.name] = m.jnt_qposadr[jids].copy()
            qa = self.arm_qadr[arm.name]
            contiguous = bool(np.all(np.diff(qa) == 1))
            self._arm_slice[arm.name] = slice(int(qa[0]), int(qa[-1]) + 1) if contiguous else qa
            self.joint_range[arm.name] = m.jnt_range[jids].copy()
            self.tcp_site[arm.name] = self._id(mujoco.mjtObj.mjOBJ_SITE, arm.tcp_site)
            for k, j in enumerate(jids):
                group_of_body[int(m.jnt_bodyid[j])] = (ai, k + 1)
        first_joint = self._id(mujoco.mjtObj.mjOBJ_JOINT, self.env.robot.arms[0].joints[0])
        torso = int(m.body_rootid[int(m.jnt_bodyid[first_joint])])
        self._group = np.zeros(m.nbody, dtype=np.int64)  # bit of each body's group
        self.robot_body = np.zeros(m.nbody, dtype=bool)
        for b in range(m.nbody):
            chain, a = [], b
            while a != 0 and a not in group_of_body and a != torso:
                chain.append(a)
                a = int(m.body_parentid[a])
            if a in group_of_body:
                ai, g = group_of_body[a]
                # bodies below link6 (gripper, fingers) form the gripper group
                self._group[b] = _bit(ai, GRIPPER_GROUP if chain else g)
                self.robot_body[b] = True
            elif a == torso:
                self._group[b], self.robot_body[b] = 1 << _T, True
            else:
                self._group[b] = 1 << _W
        self._affinity_of_bit = self._affinities(len(self.arms))
        self._collidable = np.array([(m.geom_contype[g] | m.geom_conaffinity[g]) != 0
                                     or m.geom(g).name.startswith("wall_") for g in range(m.ngeom)])
        self._home_group = self._group[m.geom_bodyid].copy()
        self._apply_masks(self._home_group)
        self._robot_geoms = np.flatnonzero(self.robot_body[m.geom_bodyid] & self._collidable)
        self._allowed = np.zeros((m.ngeom, m.ngeom), dtype=bool)
        self._attached: dict[str, _Carried] = {}
        self.margin = margin
        self.sync(backend)

    # ----- setup -----------------------------------------------------------------------------
    def _id(self, kind: mujoco.mjtObj, name: str) -> int:
        i = mujoco.mj_name2id(self.model, kind, name)
        if i < 0:
            raise NotFoundError(f"no {kind.name.removeprefix('mjOBJ_').lower()} named {name!r} in the world model")
        return i

    @staticmethod
    def _affinities(n_arms: int) -> dict[int, int]:
        aff: dict[int, int] = {1 << _W: 0, 1 << _T: 0}
        for a in range(n_arms):
            for g in range(1, GRIPPER_GROUP + 1):
                bits = 1 << _W
                if g >= TORSO_MIN_GROUP:
                    bits |= 1 << _T
                for other in range(n_arms):
                    for h in range(1, GRIPPER_GROUP + 1):
                        if other != a or abs(g - h) >= SELF_MIN_HOPS:
                            bits |= _bit(other, h)
                aff[_bit(a, g)] = bits
                aff[1 << _W] |= _bit(a, g)
                if g >= TORSO_MIN_GROUP:
                    aff[1 << _T] |= _bit(a, g)
        return aff

    def _apply_masks(self, group_of_geom: np.ndarray) -> None:
        m = self.model
        aff = np.array([self._affinity_of_bit[int(b)] for b in group_of_geom], dtype=np.int64)
        # uint32 wrap: bit 31 is unused, so int32 holds every mask
        m.geom_contype[:] = np.where(self._collidable, group_of_geom, 0).astype(np.int32)
        m.geom_conaffinity[:] = np.where(self._collidable, aff, 0).astype(np.int32)
        # The broadphase first filters bodies by the OR of their geoms' masks, computed at compile time.
        m.body_contype[:] = 0
        m.body_conaffinity[:] = 0
        np.bitwise_or.at(m.body_contype, m.geom_bodyid, m.geom_contype)
        np.bitwise_or.at(m.body_conaffinity, m.geom_bodyid, m.geom_conaffinity)

    @property
    def margin(self) -> float:
        return self._margin

    @margin.setter
    def margin(self, value: float) -> None:
        """Clearance (m) kept between robot geoms and everything else; contacts count below it."""
        self._margin = float(value)
        self.model.geom_margin[:] = 0.0
        self.model.geom_margin[self._robot_geoms] = self._margin
        for obj in self._attached:
            self.model.geom_margin[self._object_geoms(obj)] = self._margin

    def sync(self, backend: Backend) -> None:
        """Take the live state (arms, fingers, door, objects) and welded poses; keep attachments."""
        if backend.model.ngeom != self.model.ngeom:
            raise NotFoundError("the backend switched to another asset draw; build a new CollisionWorld after reset")
        self.model.body_pos[:] = backend.model.body_pos
        self.model.body_quat[:] = backend.model.body_quat
        self._state = backend.data.qpos.copy()  # the configuration checks start from
        self.data.qpos[:] = self._state
        mujoco.mj_kinematics(self.model, self.data)

    def _object_geoms(self, name: str) -> np.ndarray:
        m = self.model
        if name in self.arms:
            raise NotFoundError(f"{name!r} is an arm, not an object")
        root = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, object_body(name))
        if root >= 0:
            inside = np.array([self._descends(int(b), root) for b in m.geom_bodyid])
            return np.flatnonzero(inside)
        body = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)
        if body >= 0:
            return np.flatnonzero(m.geom_bodyid == body)
        geom = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, name)
        if geom >= 0:
            return np.array([geom])
        objects = [o.name for o in self.env.objects]
        raise NotFoundError(f"no object, body or geom named {name!r}; objects: {objects}")

    def _descends(self, body: int, root: int) -> bool:
        while body != 0:
            if body == root:
                return True
            body = int(self.model.body_parentid[body])
        return False

    def allow(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Ignore contacts between these (object, body or geom names), e.g. fingers and the fruit."""
        for a, b in pairs:
            ga, gb = self._object_geoms(a), self._object_geoms(b)
            self._allowed[np.ix_(ga, gb)] = True
            self._allowed[np.ix_(gb, ga)] = True

    def clear_allowed(self) -> None:
        self._allowed[:] = False

    def attach(self, obj: str, arm: str) -> None:
        """Let a free object move rigidly with `arm`'s tcp from now on (it is held); it joins the
        gripper's group, so it is ignored against that gripper but checked against everything else."""
        m, d = self.model, self.data
        joint = self._id(mujoco.mjtObj.mjOBJ_JOINT, free_joint(obj))
        site = self.tcp_site[self._arm(arm)]
        d.qpos[:] = self._state
        mujoco.mj_kinematics(m, d)
        self._attached[obj] = _Carried(arm, site, int(m.jnt_qposadr[joint]), d)
        self._regroup()

    def detach(self, obj: str) -> None:
        """The object stays where the arm's current configuration (`set_arm`) carries it."""
        if obj in self._attached:
            self._update({})
            self.checks -= 1  # bookkeeping, not a check
            carried = self._attached.pop(obj)
            self._state[carried.qadr:carried.qadr + 7] = self.data.qpos[carried.qadr:carried.qadr + 7]
        self._regroup()

    def _regroup(self) -> None:
        """Held objects join their gripper's contact group; margins follow the new geom sets."""
        groups = self._home_group.copy()
        for held, carried in self._attached.items():
            groups[self._object_geoms(held)] = _bit(self.arms.index(carried.arm), GRIPPER_GROUP)
        self._apply_masks(groups)
        self.margin = self._margin

    def _arm(self, arm: str) -> str:
        if arm not in self.arm_qadr:
            raise NotFoundError(f"no arm {arm!r}; arms: {list(self.arm_qadr)}")
        return arm

    # ----- queries ---------------------------------------------------------------------------
    def set_arm(self, arm: str, q: np.ndarray) -> None:
        """Move an arm in the world's state: checks that do not mention this arm see it here."""
        self._state[self.arm_qadr[self._arm(arm)]] = q

    def set_joint(self, joint: str, value: float) -> None:
        """Set an object's joint (a door hinge, a drawer slide) in the state checks start from, so a
        pose along an articulated motion is checked with the part where it will be then."""
        self._state[self.model.jnt_qposadr[self._id(mujoco.mjtObj.mjOBJ_JOINT, joint)]] = value

    def arm_q(self, arm: str) -> np.ndarray:
        return self._state[self.arm_qadr[self._arm(arm)]].copy()

    @property
    def state(self) -> np.ndarray:
        """A copy of the full qpos checks start from (arms, fingers, door, objects)."""
        return self._state.copy()

    def _update(self, q_by_arm: Mapping[str, np.ndarray]) -> None:
        m, d = self.model, self.data
        # Checks never change the state: each one starts from it, so results do not depend on history.
        d.qpos[:] = self._state
        for arm, q in q_by_arm.items():
            d.qpos[self._arm_slice[arm]] = q
        mujoco.mj_kinematics(m, d)
        if self._attached:
            for carried in self._attached.values():
                carried.place()
            mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        self.checks += 1

    def _bad_contacts(self) -> np.ndarray:
        d = self.data
        if d.ncon == 0:
            return np.zeros(0, dtype=int)
        contact = d.contact
        return np.flatnonzero(~self._allowed[contact.geom1, contact.geom2])

    def in_collision(self, q_by_arm: Mapping[str, np.ndarray]) -> bool:
        """True if the arms at these configurations (others unchanged) touch anything that counts."""
        self._update(q_by_arm)
        d = self.data
        if d.ncon == 0:  # the common case in free space, without touching numpy
            return False
        contact = d.contact
        return not self._allowed[contact.geom1, contact.geom2].all()

    def colliding_pairs(self, q_by_arm: Mapping[str, np.ndarray]) -> list[tuple[str, str]]:
        """Names of the geom pairs in contact (for error messages and tests)."""
        self._update(q_by_arm)
        d, m = self.data, self.model
        return [(m.geom(int(d.contact.geom1[i])).name, m.geom(int(d.contact.geom2[i])).name)
                for i in self._bad_contacts()]

    def colliding_geoms(self, q_by_arm: Mapping[str, np.ndarray]) -> np.ndarray:
        """(n, 2) geom ids of the pairs in contact, as `colliding_pairs` without building names: for
        skills that expect some contacts (a gripper on a handle) and filter them out on every check."""
        self._update(q_by_arm)
        i = self._bad_contacts()
        return np.stack([self.data.contact.geom1[i], self.data.contact.geom2[i]], axis=1)

    def tcp_pose(self, arm: str) -> tuple[np.ndarray, np.ndarray]:
        """Tcp position and rotation matrix at the arm's state configuration."""
        self.data.qpos[:] = self._state
        mujoco.mj_kinematics(self.model, self.data)
        site = self.tcp_site[self._arm(arm)]
        return self.data.site_xpos[site].copy(), self.data.site_xmat[site].reshape(3, 3).copy()
