"""A collision checker on the simulator's own geometry, for planning.

`CollisionWorld` snapshots a backend's MuJoCo view (a copy of its model and qpos; the live sim is never
touched) and checks the pairs the simulator itself puts in contact: every robot geom against the world
(table, walls, objects, the microwave and its door at the angle it had when the world was built or last
synced) and against the rest of the robot (the other arm, the torso and head, its own links), subject
to the robot MJCF's `<exclude>` list and MuJoCo's parent-child filter, which the copy carries as they
are. The copy's bitmasks express only what differs from the simulator:

- world against world never counts (a fruit resting on the table is not the planner's business);
- a held object goes with its gripper: ignored against that gripper's palm and fingers, checked
  against everything else (the table, the oven, the rest of the robot);
- a linkage gripper's parts against each other never count (its pads meet when it closes on nothing, and its
  linkage moves only as its joints and constraints let it).

One bit each for the world W and the robot's links R, two per arm: its gripper (palm and fingers) G and
what it holds H; 6 bits for two arms.

The margin (clearance) pads robot geoms against the world, the torso and the other arm. Between two
parts of one arm (its links, gripper and held object) only touching counts: their distance is set by
the joints between them alone, which the servos track to a few mrad, and some sit closer than any
clearance by construction (the closed jaws 4-10 mm apart, the forearm 25 mm from the wrist at home).

A check is `mj_kinematics` + `mj_collision` on the copy: ~14 us near home, ~28 us for configurations
drawn anywhere within the limits (CPU time; bench/bench_collision.py, bench/RESULTS.md). The robot's pairs
and the booth walls made it 1.2-1.4x what it was when the arms ignored each other and the walls were out of
collision. A held object costs a second `mj_kinematics` (~2 us) after its free joint is set from the tcp site.
Two modes leave out pairs that cannot change a series of checks' verdicts (`moving_only` for a planner moving
one arm from a free start, `between_arms_only` for `arms_clash`), with a bit each beyond those six.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterable, Iterator, Mapping

import mujoco
import numpy as np

from x2.base.arrays import Bools, Floats, Ints
from x2.base.errors import NotFoundError
from x2.sim.backend import Backend
from x2.sim.mujoco.world import free_joint, object_body

_W, _R = 1 << 0, 1 << 1  # contype bits of the world and of the robot's links (torso included)
_MOVING = 1 << 6  # `moving_only`: what the moving arms carry, the one bit the rest accepts
_TOUCHING, _ALWAYS = 1, 2  # _counts: a contact counts when the geoms touch, or already within the margin
_FEW_CONTACTS = 24  # up to this many contacts a check tests them one by one in Python, beyond it with numpy


def _gripper_bit(arm_index: int) -> int:
    return 1 << (2 + 2 * arm_index)


def _held_bit(arm_index: int) -> int:
    return 1 << (3 + 2 * arm_index)


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

    def __init__(self, backend: Backend, margin: float = 0.0, moved_contacts_only: bool = True,
                 refine_jumps: bool = True):
        self.env = backend.env
        # False: a query counts every contact, the moved arms' or not (the motion layer before the arm
        # scheduler, which `x2 synth --sequential` keeps for its bytes)
        self.moved_contacts_only = moved_contacts_only
        # how the straight and guarded moves checked in this world follow their line (paths.follow's refine):
        # False is the motion layer before the arm scheduler, as moved_contacts_only
        self.refine_jumps = refine_jumps
        self.model = copy.deepcopy(backend.model)  # welded objects' poses live in model.body_pos
        # The simulator overrides every contact's softness and margin (x2/sim/mujoco/booth.py); checks need
        # the per-geom margins they set below, so the copy uses the geoms' own parameters.
        self.model.opt.enableflags &= ~int(mujoco.mjtEnableBit.mjENBL_OVERRIDE)
        self.data = mujoco.MjData(self.model)
        self._check_qpos = self.data.qpos  # (a view taken once: each access through the bindings makes a new one)
        self.checks = 0
        m = self.model
        self.arms = tuple(a.name for a in self.env.robot.arms)
        self.arm_qadr: dict[str, Ints] = {}
        self._arm_slice: dict[str, slice | Ints] = {}  # a slice when contiguous: faster to assign
        self.joint_range: dict[str, Floats] = {}
        self.tcp_site: dict[str, int] = {}
        link_arm: dict[int, int] = {}  # body of an arm joint -> arm index
        for ai, arm in enumerate(self.env.robot.arms):
            jids = [self._id(mujoco.mjtObj.mjOBJ_JOINT, j) for j in arm.joints]
            self.arm_qadr[arm.name] = m.jnt_qposadr[jids].copy()
            qa = self.arm_qadr[arm.name]
            contiguous = bool(np.all(np.diff(qa) == 1))
            self._arm_slice[arm.name] = slice(int(qa[0]), int(qa[-1]) + 1) if contiguous else qa
            self.joint_range[arm.name] = m.jnt_range[jids].copy()
            self.tcp_site[arm.name] = self._id(mujoco.mjtObj.mjOBJ_SITE, arm.tcp_site)
            for j in jids:
                link_arm[int(m.jnt_bodyid[j])] = ai
        base = self.env.robot.base
        self.base_qadr = (m.jnt_qposadr[[self._id(mujoco.mjtObj.mjOBJ_JOINT, j) for j in base.joints]].copy()
                          if base is not None else np.zeros(0, dtype=np.int32))
        first_joint = self._id(mujoco.mjtObj.mjOBJ_JOINT, self.env.robot.arms[0].joints[0])
        torso = int(m.body_rootid[int(m.jnt_bodyid[first_joint])])
        n = len(self.arms)
        self._all_grippers = sum(_gripper_bit(a) for a in range(n))
        self._all_held = sum(_held_bit(a) for a in range(n))
        robot_aff = _W | _R | self._all_grippers | self._all_held  # links touch everything
        linkage = self.env.robot.gripper.drive == "linkage"
        body_type = np.full(m.nbody, _W, dtype=np.int64)
        body_aff = np.full(m.nbody, robot_aff & ~_W, dtype=np.int64)  # the world: the robot only
        self._arm_of_body = np.full(m.nbody, -1, dtype=np.int64)  # arm owning a link or gripper body
        self.robot_body = np.zeros(m.nbody, dtype=bool)
        for b in range(m.nbody):
            below, a = False, b
            while a != 0 and a not in link_arm and a != torso:
                below, a = True, int(m.body_parentid[a])
            if a in link_arm:
                ai = link_arm[a]
                self._arm_of_body[b], self.robot_body[b] = ai, True
                if below:  # under link6: the gripper and its fingers, blind to what they hold
                    body_type[b], body_aff[b] = _gripper_bit(ai), robot_aff & ~_held_bit(ai)
                    if linkage:  # and to itself: a linkage's pads meet when it closes on nothing, as they should
                        body_aff[b] &= ~_gripper_bit(ai)
                else:
                    body_type[b], body_aff[b] = _R, robot_aff
            elif a == torso:  # the torso, its head and shoulder brackets
                body_type[b], body_aff[b], self.robot_body[b] = _R, robot_aff, True
        self._collidable = (m.geom_contype | m.geom_conaffinity) != 0
        self._home_type, self._home_aff = body_type[m.geom_bodyid], body_aff[m.geom_bodyid]
        self._robot_geoms = np.flatnonzero(self.robot_body[m.geom_bodyid] & self._collidable)
        self._allowed = np.zeros((m.ngeom, m.ngeom), dtype=bool)  # the union of every owner's
        self._allowed_by: dict[str, Ints] = {}
        self.owner = ""  # who `allow` and `clear_allowed` act for: a skill running beside another keeps its own
        self._attached: dict[str, _Carried] = {}
        self._geoms_of: dict[str, Ints] = {}  # object, body or geom name -> its geoms
        self._joint_adr: dict[str, int] = {}  # joint name -> qpos address (set_joint)
        self._margin = float(margin)
        self._regroup()  # masks, margins and the per-pair counting rule
        self.sync(backend)

    # ----- setup -----------------------------------------------------------------------------
    def _id(self, kind: mujoco.mjtObj, name: str) -> int:
        i = mujoco.mj_name2id(self.model, kind, name)
        if i < 0:
            raise NotFoundError(f"no {kind.name.removeprefix('mjOBJ_').lower()} named {name!r} in the world model")
        return i

    def _apply_masks(self, contype: Ints, conaffinity: Ints) -> None:
        m = self.model
        # int32 wrap: 6 bits used, far below the sign bit
        m.geom_contype[:] = np.where(self._collidable, contype, 0).astype(np.int32)
        m.geom_conaffinity[:] = np.where(self._collidable, conaffinity, 0).astype(np.int32)
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
        """Clearance (m) kept between robot geoms (and held objects) and everything else; contacts count
        below it, except between parts of one arm, which count only when they touch."""
        self._margin = float(value)
        self.model.geom_margin[:] = 0.0
        self.model.geom_margin[self._robot_geoms] = self._margin
        for obj in self._attached:
            self.model.geom_margin[self._object_geoms(obj)] = self._margin

    def sync(self, backend: Backend) -> None:
        """Take the live qpos (arms, fingers, door, objects) and welded poses; keep attachments."""
        if backend.model.ngeom != self.model.ngeom:
            raise NotFoundError("the backend switched to another asset draw; build a new CollisionWorld after reset")
        self.model.body_pos[:] = backend.model.body_pos
        self.model.body_quat[:] = backend.model.body_quat
        self._qpos = backend.data.qpos.copy()  # the configuration checks start from
        self.data.qpos[:] = self._qpos
        mujoco.mj_kinematics(self.model, self.data)

    def _object_geoms(self, name: str) -> Ints:
        geoms = self._geoms_of.get(name)
        if geoms is None:  # (skills allow and attach by name several times a node: found once per world)
            geoms = self._geoms_of[name] = self._find_geoms(name)
        return geoms

    def _find_geoms(self, name: str) -> Ints:
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
        """Ignore contacts between these (object, body or geom names), e.g. fingers and the fruit, until the
        same `owner` clears them (another owner's pairs stay: two skills may run side by side)."""
        mine = self._allowed_by.get(self.owner)
        if mine is None:
            mine = self._allowed_by[self.owner] = np.zeros_like(self._allowed)
        for a, b in pairs:
            ga, gb = self._object_geoms(a), self._object_geoms(b)
            mine[np.ix_(ga, gb)] = True
            mine[np.ix_(gb, ga)] = True
        self._recount()

    def clear_allowed(self) -> None:
        self._allowed_by.pop(self.owner, None)
        self._recount()

    def attach(self, obj: str, arm: str) -> None:
        """Let a free object move rigidly with `arm`'s tcp from now on (it is held); it joins the
        gripper's group, so it is ignored against that gripper but checked against everything else."""
        m, d = self.model, self.data
        joint = self._id(mujoco.mjtObj.mjOBJ_JOINT, free_joint(obj))
        site = self.tcp_site[self._arm(arm)]
        d.qpos[:] = self._qpos
        mujoco.mj_kinematics(m, d)
        self._attached[obj] = _Carried(arm, site, int(m.jnt_qposadr[joint]), d)
        self._regroup()

    def detach(self, obj: str) -> None:
        """The object stays where the arm's current configuration (`set_arm`) carries it."""
        if obj in self._attached:
            self._update({})
            self.checks -= 1  # bookkeeping, not a check
            carried = self._attached.pop(obj)
            self._qpos[carried.qadr:carried.qadr + 7] = self.data.qpos[carried.qadr:carried.qadr + 7]
        self._regroup()

    def _regroup(self) -> None:
        """Held objects join their gripper's masks and their arm's pairs; margins follow the geom sets."""
        contype, aff = self._home_type.copy(), self._home_aff.copy()
        arm_of_geom = self._arm_of_body[self.model.geom_bodyid]
        for held, carried in self._attached.items():
            ai, geoms = self.arms.index(carried.arm), self._object_geoms(held)
            contype[geoms] = _held_bit(ai)
            aff[geoms] = _W | _R | (self._all_grippers & ~_gripper_bit(ai)) | (self._all_held & ~_held_bit(ai))
            arm_of_geom[geoms] = ai
        self._masks = contype, aff
        self._arm_of_geom = arm_of_geom
        self._moved: dict[tuple[str, ...], Bools] = {}  # arms of a query -> their geoms (held ones included)
        self._apply_masks(contype, aff)
        self._same_arm = (arm_of_geom[:, None] == arm_of_geom[None, :]) & (arm_of_geom[:, None] >= 0)
        owned = arm_of_geom >= 0
        self._between_arms = (arm_of_geom[:, None] != arm_of_geom[None, :]) & owned[:, None] & owned[None, :]
        self._recount()
        self.margin = self._margin

    @contextlib.contextmanager
    def moving_only(self, arms: Iterable[str]) -> Iterator[None]:
        """Within this, checks skip the geom pairs that no geom of `arms` (or what they hold) is part of.

        For checks that move only these arms: the pairs left out keep their geometry whatever these arms do, so
        they are none of these arms' business (the other arm's fruit still on the table as it lifts it must not
        block this arm's plan), and skipping them saves ~13 % a check (the other arm's links among themselves,
        against the torso and the table, are not tried again on every check). The planner, its post-check and
        the part skills' checks run within it."""
        indices = [self.arms.index(self._arm(a)) for a in arms]
        contype, aff = self._masks
        moving = np.isin(self._arm_of_geom, indices)
        # moving geoms gain a bit that only the rest accepts; the rest accepts only it: moving-moving pairs keep
        # their masks, moving-rest pairs all pass (as they did: no mask kept an arm from the world or the other
        # arm), rest-rest pairs no longer do
        self._apply_masks(np.where(moving, contype | _MOVING, contype), np.where(moving, aff, _MOVING))
        try:
            yield
        finally:
            self._apply_masks(*self._masks)

    @contextlib.contextmanager
    def between_arms_only(self) -> Iterator[None]:
        """Within this, `mj_collision` tries only the geom pairs between two arms (with what they hold): all
        that `arms_clash` counts, so its verdicts are unchanged, in a third of the time (16 -> 6 us a check near
        home at 30 mm).
        Other queries would miss the rest of the world, so this is for `arms_clash` alone."""
        arm_bits = np.array([1 << (7 + i) for i in range(len(self.arms))], dtype=np.int64)
        owned = self._arm_of_geom >= 0
        mine = np.where(owned, arm_bits[self._arm_of_geom], 0)
        # no mask kept one arm from the other: every pair between two arms passes, as it did, and no other does
        self._apply_masks(mine, np.where(owned, arm_bits.sum() & ~mine, 0))
        try:
            yield
        finally:
            self._apply_masks(*self._masks)

    def _recount(self) -> None:
        """Per geom pair: ignored (allowed), counted only when touching (one arm's own parts), or
        counted within the margin (everything else)."""
        self._allowed[:] = False
        for mine in self._allowed_by.values():
            self._allowed |= mine
        self._counts = np.where(self._allowed, 0, np.where(self._same_arm, _TOUCHING, _ALWAYS)).astype(np.int8)

    def _arm(self, arm: str) -> str:
        if arm not in self.arm_qadr:
            raise NotFoundError(f"no arm {arm!r}; arms: {list(self.arm_qadr)}")
        return arm

    # ----- queries ---------------------------------------------------------------------------
    def set_arm(self, arm: str, q: Floats) -> None:
        """Move an arm in the world's qpos: checks that do not mention this arm see it here."""
        self._qpos[self.arm_qadr[self._arm(arm)]] = q

    def set_base(self, q: Floats) -> None:
        """Move a mobile robot's base (x, y, yaw) in the world's qpos: every check sees the robot there."""
        if not self.base_qadr.size:
            raise NotFoundError(f"robot {self.env.robot.name!r} has no mobile base")
        self._qpos[self.base_qadr] = q

    def base_q(self) -> Floats:
        """A mobile robot's base (x, y, yaw) in the qpos checks start from."""
        return self._qpos[self.base_qadr].copy()

    def set_joint(self, joint: str, value: float) -> None:
        """Set an object's joint (a door hinge, a drawer slide) in the qpos checks start from, so a
        pose along an articulated motion is checked with the part where it will be then."""
        adr = self._joint_adr.get(joint)
        if adr is None:  # (skills set the part and the fingers around every check: looked up once)
            adr = self._joint_adr[joint] = int(self.model.jnt_qposadr[self._id(mujoco.mjtObj.mjOBJ_JOINT, joint)])
        self._qpos[adr] = value

    def set_object_position(self, obj: str, pos: Floats) -> None:
        """Move a free object (not a held one: that follows its arm) in the qpos checks start from, its
        orientation kept, so a pose along a moving object's path is checked with the object where it will be."""
        adr = int(self.model.jnt_qposadr[self._id(mujoco.mjtObj.mjOBJ_JOINT, free_joint(obj))])
        self._qpos[adr:adr + 3] = pos

    def arm_geoms(self, arm: str) -> Ints:
        """Mask over geoms: the arm's own links and gripper (not what it holds)."""
        return self._arm_of_body[self.model.geom_bodyid] == self.arms.index(self._arm(arm))

    def arm_q(self, arm: str) -> Floats:
        return self._qpos[self.arm_qadr[self._arm(arm)]].copy()

    @property
    def qpos(self) -> Floats:
        """A copy of the full qpos checks start from (arms, fingers, door, objects)."""
        return self._qpos.copy()

    def _update(self, q_by_arm: Mapping[str, Floats]) -> None:
        m, d, qpos = self.model, self.data, self._check_qpos
        # Checks never change the qpos: each one starts from it, so results do not depend on history.
        qpos[:] = self._qpos
        for arm, q in q_by_arm.items():
            qpos[self._arm_slice[arm]] = q
        mujoco.mj_kinematics(m, d)
        if self._attached:
            for carried in self._attached.values():
                carried.place()
            mujoco.mj_kinematics(m, d)
        mujoco.mj_collision(m, d)
        self.checks += 1

    def _counted(self, q_by_arm: Mapping[str, Floats]) -> Bools:
        """Per contact of the last check: does it count? By its pair's rule, and only when one of its geoms
        belongs to an arm the check moved (or to what that arm holds): what the rest touches stays as it is
        whatever these arms do (the other arm's fruit still on the table as it lifts it), so it is none of this
        query's business."""
        contact = self.data.contact
        g1, g2 = contact.geom1, contact.geom2
        # a pair's rule (0, _TOUCHING or _ALWAYS) must exceed 1 for a contact that is only within the margin
        counted = self._counts[g1, g2] > (contact.dist >= 0)
        if q_by_arm and self.moved_contacts_only:
            moved = self._moved_geoms(q_by_arm)
            counted &= moved[g1] | moved[g2]
        return counted

    def _moved_geoms(self, q_by_arm: Mapping[str, Floats]) -> Bools:
        arms = tuple(q_by_arm)
        moved = self._moved.get(arms)
        if moved is None:
            moved = self._moved[arms] = np.isin(self._arm_of_geom, [self.arms.index(a) for a in arms])
        return moved

    def _bad_contacts(self, q_by_arm: Mapping[str, Floats]) -> list[int]:
        """Indices of the last check's contacts that count (`_counted`'s rule, one contact at a time: a check
        finds a few, where numpy's fancy indexing costs more than the loop)."""
        n = self.data.ncon
        if n == 0:
            return []
        if n > _FEW_CONTACTS:
            return np.flatnonzero(self._counted(q_by_arm)).tolist()
        contact, counts = self.data.contact, self._counts
        moved = self._moved_geoms(q_by_arm) if q_by_arm and self.moved_contacts_only else None
        bad = []
        for i, (a, b, dist) in enumerate(zip(contact.geom1.tolist(), contact.geom2.tolist(), contact.dist.tolist(),
                                             strict=True)):
            rule = counts[a, b]  # (as `_counted`: the rule must exceed 1 for a contact only within the margin)
            if (rule == _ALWAYS or (rule == _TOUCHING and not dist >= 0)) and (moved is None or moved[a] or moved[b]):
                bad.append(i)
        return bad

    def in_collision(self, q_by_arm: Mapping[str, Floats]) -> bool:
        """True if the arms at these configurations (others unchanged) touch anything that counts."""
        self._update(q_by_arm)
        if self.data.ncon == 0:  # the common case in free space, without touching numpy
            return False
        return len(self._bad_contacts(q_by_arm)) > 0

    def arms_clash(self, q_by_arm: Mapping[str, Floats]) -> bool:
        """True if two arms (with what they hold) at these configurations come within the margin of each other;
        nothing else counts (the space-time check between two lanes' motions)."""
        self._update(q_by_arm)
        d = self.data
        if d.ncon == 0:
            return False
        contact, between = d.contact, self._between_arms
        return any(between[a, b] for a, b in zip(contact.geom1.tolist(), contact.geom2.tolist(), strict=True))

    def colliding_pairs(self, q_by_arm: Mapping[str, Floats]) -> list[tuple[str, str]]:
        """Names of the geom pairs in contact (for error messages and tests)."""
        self._update(q_by_arm)
        d, m = self.data, self.model
        return [(m.geom(int(d.contact.geom1[i])).name, m.geom(int(d.contact.geom2[i])).name)
                for i in self._bad_contacts(q_by_arm)]

    def colliding_geoms(self, q_by_arm: Mapping[str, Floats]) -> Ints:
        """(n, 2) geom ids of the pairs in contact, as `colliding_pairs` without building names: for
        skills that expect some contacts (a gripper on a handle) and filter them out on every check."""
        self._update(q_by_arm)
        i = self._bad_contacts(q_by_arm)
        if not i:
            return np.zeros((0, 2), dtype=np.int32)
        return np.stack([self.data.contact.geom1[i], self.data.contact.geom2[i]], axis=1)

    def tcp_pose(self, arm: str) -> tuple[Floats, Floats]:
        """Tcp position and rotation matrix at the world's qpos."""
        self.data.qpos[:] = self._qpos
        mujoco.mj_kinematics(self.model, self.data)
        site = self.tcp_site[self._arm(arm)]
        return self.data.site_xpos[site].copy(), self.data.site_xmat[site].reshape(3, 3).copy()
