"""MuJoCo implementation of `x2.sim.Backend` (and of the predicates' `WorldView`).

Two ways to get one:

- `MujocoBackend(env)` collects: every `reset(seed)` draws the assets and the layout from the seed's scene
  stream, writes the world as MJCF text with them baked in (`world_xml`) and compiles the model it steps
  from that very text (~10 ms). The text is what `model_xml()` returns and an episode stores, so the
  stored world is the stepped world, welded objects included.
- `MujocoBackend.recorded(env, model_xml, assets, layout)` is a world rebuilt from an episode file: the
  stored text compiled as it is, nothing redrawn, no spec file read.

A world is its text and the images it carries beside it (`model_textures()`, x2.sim.mujoco.textures: none
unless an object was made from a textured mesh); the compiled-world cache is keyed by both.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

import mujoco
import numpy as np

from x2 import format as fmt
from x2.base.arrays import Floats, Image
from x2.base.errors import NotFoundError, X2Error
from x2.base.seeding import axis_streams
from x2.envspec.action import ActionLayout
from x2.envspec.env import AssetSpec, EnvSpec
from x2.envspec.instruction import fill, pick_template
from x2.sim.backend import CameraInfo, Contact, EmbodimentDraw, Jaw, ResetInfo, RobotState, SimulationUnstable
from x2.sim.camera import ImageSize, WorldCameras, pinhole
from x2.sim.layout import Placement, draw_assets, draw_roles, solve_layout
from x2.sim.mujoco.calibrated import latency_ticks
from x2.sim.mujoco.compiled import Compiled, compiled
from x2.sim.mujoco.embodiment import jittered_world, mounted, sample_embodiment
from x2.sim.mujoco.jaw import world_jaw
from x2.sim.mujoco.lens import camera_matrix, distortion
from x2.sim.mujoco.look import restyled_world, sample_look
from x2.sim.mujoco.renderer import MujocoRenderer, world_cameras
from x2.sim.mujoco.state import STATE_SPEC
from x2.sim.mujoco.world import free_joint, world_of
from x2.sim.streams import Shot

_CACHE = 4  # compiled worlds kept: a re-recorded teleop episode or a relabel pass reuses its world


class MujocoBackend:
    """A MuJoCo world for one EnvSpec (see the module docstring for the two ways to make one)."""

    _c: Compiled  # the world in use: set by _use, which __init__ calls

    def __init__(self, env: EnvSpec, *, _recorded: tuple[str, dict[str, AssetSpec], dict[str, Placement], str]
                 | None = None, _textures: Mapping[str, bytes] | None = None):
        self.env = env
        self._cache: dict[tuple[str, tuple[str, ...]], Compiled] = {}  # by XML text and texture names, newest last
        self._renderers: dict[tuple[int, int], MujocoRenderer] = {}  # render's, by (width, height)
        self.table_height = env.booth.table_height
        self._recorded = _recorded
        self._appearance: dict[str, object] | None = None  # the look the last reset drew (a recorded world's is in it)
        self._embodiment: EmbodimentDraw | None = None  # its embodiment's draw, likewise
        self._roles: dict[str, str] | None = None  # the objects its roles were bound to, likewise
        self._jaw: Jaw | None = None
        self._delay: deque[Floats] = deque()  # commands not yet applied (a calibrated twin's latency)
        source = None
        if _recorded is not None:
            xml, chosen, layout, source = _recorded
            textures = dict(_textures or {})
            self._layout = dict(layout)
        else:
            chosen = {o.name: o.candidates[0] for o in env.objects}
            self._layout = {}
            xml, textures = world_of(env, chosen)
        self._use(chosen, xml, source, textures)

    @classmethod
    def recorded(cls, env: EnvSpec, model_xml: str, assets: Mapping[str, str],
                 layout: Mapping[str, Placement], source: str = fmt.MODEL_XML_ATTR,
                 roles: Mapping[str, str] | None = None, textures: Mapping[str, bytes] | None = None) -> MujocoBackend:
        """The world of a recorded episode: its stored XML as it is (checked by x2.sim.mujoco.recorded_xml
        first) with the images it carries (`textures`), `assets` naming each object's drawn asset among `env`'s
        candidates (an env rebuilt from the same file), `roles` the objects its roles were bound to. `source`
        names the file in every error."""
        chosen = {}
        for obj in env.objects:
            pool = {a.name: a for a in obj.candidates}
            name = assets.get(obj.name)
            if name not in pool:
                raise NotFoundError(f"object {obj.name!r}: recorded asset {name!r} is not among its assets "
                                    f"{sorted(pool)}")
            chosen[obj.name] = pool[name]
        for role in env.roles:
            bound = (roles or {}).get(role.name)
            if bound not in role.one_of:
                raise NotFoundError(f"role {role.name!r}: recorded object {bound!r} is not among its objects "
                                    f"{list(role.one_of)}")
        backend = cls(env, _recorded=(model_xml, chosen, dict(layout), source), _textures=textures)
        backend._roles = {r.name: (roles or {})[r.name] for r in env.roles} or None
        return backend

    # ----- world selection -------------------------------------------------------------------
    def _use(self, chosen: Mapping[str, AssetSpec], xml: str, source: str | None = None,
             textures: Mapping[str, bytes] | None = None) -> None:
        key = (xml, tuple(textures or ()))  # (the names are digests of the images)
        c = self._cache.pop(key, None) or compiled(self.env, chosen, xml, source, textures)
        self._cache[key] = c
        while len(self._cache) > _CACHE:
            del self._cache[next(iter(self._cache))]
        if getattr(self, "_c", None) is not c:  # (no `_c` yet on __init__'s first call)
            self._close_renderers()
        self._c = c
        self.model, self.data = c.model, c.data
        self._changed()

    def _changed(self) -> None:
        """The state changed (every method that changes it says so): what was derived from the last one is gone."""
        self._touch_pairs: set[tuple[int, int]] | None = None

    @property
    def time(self) -> float:
        return float(self.data.time)

    @property
    def state_size(self) -> int:
        return self._c.state_size

    @property
    def robot_joint_names(self) -> tuple[str, ...]:
        return self._c.robot_joints

    @property
    def object_names(self) -> tuple[str, ...]:
        return self._c.object_names

    @property
    def action_layout(self) -> ActionLayout:
        return self.env.robot.action

    # ----- lifecycle -------------------------------------------------------------------------
    def reset(self, seed: int, variant: str | None = None, axes: dict[str, int] | None = None) -> ResetInfo:
        """The world for `seed`: its assets and layout drawn from the seed's scene stream, its instruction from
        its language stream, its look from its appearance stream and its cameras and table height from its
        embodiment stream (a recorded world keeps its own), arms at home, grippers open, everything at rest.
        `axes` ({"appearance": s}) draws an axis from another seed's streams (x2/base/seeding.py: AXES)."""
        if variant is not None and variant != self.env.variant:
            if self._recorded is not None:
                raise X2Error(f"variant: found {variant!r} for a recorded world; allowed: its own, "
                              f"{self.env.variant!r}")
            self._switch_variant(variant)
        rngs = axis_streams(seed, axes)
        if self._recorded is None:
            rng = rngs["scene"]
            places = draw_roles(self.env.roles, rng)
            self._roles = {r.name: r.one_of[places[r.name]] for r in self.env.roles} or None
            chosen = draw_assets(self.env.objects, rng, places)
            layout = solve_layout(self.env.objects, chosen, rng)
            # the embodiment drawn from the seed's own stream (the other axes' draws stay as they were); the
            # table's height is built in (the robot's mount moved), the cameras jittered once the look is on
            embodiment = sample_embodiment(self.env.robot, self.env.embodiment, rngs["embodiment"])
            xml, textures = world_of(mounted(self.env, embodiment), chosen, layout)
            self._appearance = None
            if self.env.appearance:  # a look drawn from the seed's own stream: the layout's draws stay as they were
                looks = rngs["appearance"]
                scenery = self.env.appearance[int(looks.integers(len(self.env.appearance)))]
                look = sample_look(scenery, looks)
                xml, textures = restyled_world(xml, look, "the world x2 built", textures)
                self._appearance = {"scenery": scenery.name, "look": look}
            self._embodiment = embodiment
            if embodiment is not None and "cameras" in embodiment:
                xml = jittered_world(xml, embodiment, textures)
            self._use(chosen, xml, textures=textures)
            self._layout = layout
        m, d = self.model, self.data
        jaw = self.jaw()
        mujoco.mj_resetData(m, d)  # objects at qpos0: where the XML placed them
        for arm in self.env.robot.arms:
            d.qpos[self._c.arm_qadr[arm.name]] = arm.home
            if jaw is not None:  # the whole linkage where the open command settles it
                d.qpos[self._c.gripper_qadr[arm.name]] = jaw.qpos[-1]
                continue
            for j in arm.gripper_joints:
                d.qpos[m.jnt_qposadr[self._c.lookup(mujoco.mjtObj.mjOBJ_JOINT, j)]] = self.env.robot.gripper.open_ctrl
        if self.env.robot.base is not None:
            d.qpos[self._c.base_qadr] = self.env.robot.base.home
        d.ctrl[self._c.ctrl_ids] = self._action_to_ctrl(self.home_action())
        # a calibrated twin's command latency: the reset's command is what the servos get for its first ticks
        self._delay = deque([d.ctrl[self._c.ctrl_ids].copy() for _ in range(latency_ticks(m))])
        mujoco.mj_forward(m, d)
        self._changed()
        names = {o.name: self._c.chosen[o.name].name for o in self.env.objects}
        instruction = self._instruction(rngs["language"], names)
        return ResetInfo(seed, self.env.variant, names, dict(self._layout), instruction, self._appearance,
                         self._embodiment, None if self._roles is None else dict(self._roles))

    def _instruction(self, language: np.random.Generator, names: Mapping[str, str]) -> str:
        """The task's instruction for this world: a template drawn from the seed's language stream (only when
        the task has paraphrases), filled with the drawn assets' names and the objects' grid positions."""
        task = self.env.task
        if task is None:
            return ""
        template = pick_template(task, self.env.split, language)
        positions = {name: (p.x, p.y) for name, p in self._layout.items()}
        return fill(template, self.env.objects, names, positions)

    def _switch_variant(self, variant: str) -> None:
        """Recompile the same task/scene/robot files with another scene variant (assets, lighting, split)."""
        from x2.envspec import load_env

        files = self.env.sources
        task, scene, robot = (files[0], files[1], files[2]) if self.env.task is not None else (None, *files[:2])
        self.env = load_env(task, robot=robot, scene=scene, variant=variant)
        self.table_height = self.env.booth.table_height
        self._cache.clear()

    def home_action(self) -> Floats:
        """The action that holds every arm at home with open grippers."""
        return self.env.robot.home_action()

    @property
    def layout(self) -> dict[str, Placement]:
        return dict(self._layout)

    def close(self) -> None:
        self._close_renderers()

    def _close_renderers(self) -> None:
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()

    # ----- stepping and state ----------------------------------------------------------------
    def _action_to_ctrl(self, action: Floats) -> Floats:
        ctrl = np.asarray(action, dtype=np.float64).copy()
        g = np.clip(ctrl[self._c.gripper_slots], 0.0, 1.0)
        ctrl[self._c.gripper_slots] = self._c.gripper_scale[0] + g * self._c.gripper_scale[1]
        return np.clip(ctrl, self._c.ctrl_lo, self._c.ctrl_hi)

    def step(self, action: Floats) -> None:
        if len(action) != len(self._c.ctrl_ids):
            raise X2Error(f"action has {len(action)} values; {self.env.robot.name} takes {len(self._c.ctrl_ids)}: "
                          + ", ".join(self.env.robot.action_names))
        if not np.isfinite(action).all():
            # MuJoCo would only warn (mjWARN_BADCTRL) and drop every control: the arms would collapse.
            bad = [n for n, v in zip(self.env.robot.action_names, action, strict=True) if not np.isfinite(v)]
            raise X2Error(f"action has non-finite values at {', '.join(bad)}; allowed: finite numbers")
        m, d = self.model, self.data
        ctrl = self._action_to_ctrl(action)
        if self._delay:  # applied latency_ticks ticks late (x2/sim/mujoco/calibrated.py)
            self._delay.append(ctrl)
            ctrl = self._delay.popleft()
        d.ctrl[self._c.ctrl_ids] = ctrl
        mujoco.mj_step(m, d, nstep=self.env.substeps)
        # mj_step leaves kinematics at the pre-integration state; refresh so observations,
        # predicates and an offline replay of the stored state all see the same world.
        mujoco.mj_forward(m, d)
        self._changed()
        if not np.isfinite(d.qacc).all() or d.warning[mujoco.mjtWarning.mjWARN_BADQACC].number:
            raise SimulationUnstable(f"simulation unstable at t={d.time:.3f} s (non-finite accelerations)")

    def get_state(self) -> Floats:
        out = np.empty(self._c.state_size)
        mujoco.mj_getState(self.model, self.data, out, STATE_SPEC)
        return out

    def set_state(self, state: Floats) -> None:
        if np.shape(state) != (self.state_size,):
            raise X2Error(f"state has shape {np.shape(state)}; allowed: ({self.state_size},) for this world")
        mujoco.mj_setState(self.model, self.data, np.asarray(state, dtype=np.float64), STATE_SPEC)
        # a calibrated twin's delay line restarts holding the state's command (a state holds no history): at an
        # episode's first state that is the reset's command, so a replay from it delays exactly as recorded
        ctrl = self.data.ctrl[self._c.ctrl_ids].copy()
        self._delay = deque([ctrl.copy() for _ in range(latency_ticks(self.model))])
        mujoco.mj_forward(self.model, self.data)
        self._changed()

    # ----- reading the world -----------------------------------------------------------------
    def robot_state(self) -> RobotState:
        c = self._c
        ee = np.empty((len(c.tcp_ids), 7))
        ee[:, :3] = c.site_xpos[c.tcp_ids]
        for i, xmat in enumerate(c.tcp_xmat):
            mujoco.mju_mat2Quat(ee[i, 3:], xmat)
        return RobotState(c.qpos[c.robot_q].copy(), c.qvel[c.robot_dq].copy(), ee)

    def observations(self, states: Floats) -> dict[str, Floats]:
        """What `robot_state` and `object_poses` read at each of these states of the current world, in one batch:
        the joint streams straight from the states' qpos and qvel, the poses from the kinematics of each qpos on a
        private MjData, through the same functions as the live reads (so the same bits)."""
        m, c = self.model, self._c
        states = np.asarray(states, dtype=np.float64)
        n, spec = len(states), int(STATE_SPEC)
        q0 = mujoco.mj_stateSize(m, spec & (int(mujoco.mjtState.mjSTATE_QPOS) - 1))  # (what precedes it)
        v0 = mujoco.mj_stateSize(m, spec & (int(mujoco.mjtState.mjSTATE_QVEL) - 1))
        qpos = states[:, q0:q0 + m.nq]
        d = mujoco.MjData(m)
        # whole arrays copied per state (a contiguous copy each), the rows wanted picked once afterwards
        site_xpos, site_xmat = np.empty((n, m.nsite, 3)), np.empty((n, m.nsite, 9))
        xpos, xquat = np.empty((n, m.nbody, 3)), np.empty((n, m.nbody, 4))
        d_qpos, d_site_xpos, d_site_xmat, d_xpos, d_xquat = d.qpos, d.site_xpos, d.site_xmat, d.xpos, d.xquat
        for t in range(n):
            if m.nmocap:  # (mocap bodies move with the state, not the qpos)
                mujoco.mj_setState(m, d, states[t], spec)
            else:
                d_qpos[:] = qpos[t]
            mujoco.mj_kinematics(m, d)
            site_xpos[t], site_xmat[t], xpos[t], xquat[t] = d_site_xpos, d_site_xmat, d_xpos, d_xquat
        ee = np.empty((n, len(c.tcp_ids), 7))
        ee[:, :, :3] = site_xpos[:, c.tcp_ids]
        quats, mats = ee.reshape(-1, 7)[:, 3:], site_xmat[:, c.tcp_ids].reshape(-1, 9)
        for k in range(len(mats)):
            mujoco.mju_mat2Quat(quats[k], mats[k])
        objects = np.empty((n, len(c.object_ids), 7))
        objects[:, :, :3], objects[:, :, 3:] = xpos[:, c.object_ids], xquat[:, c.object_ids]
        return {"qpos": qpos[:, c.robot_qadr], "qvel": states[:, v0 + c.robot_dadr], "ee_pose": ee,
                "object_poses": objects}

    def object_poses(self) -> Floats:
        c = self._c
        out = np.empty((len(c.object_ids), 7))
        out[:, :3] = c.xpos[c.object_ids]
        out[:, 3:] = c.xquat[c.object_ids]
        return out

    def joint_values(self, names: tuple[str, ...]) -> Floats:
        return np.array([self.joint_value(n) for n in names])

    def set_joint_values(self, values: dict[str, float]) -> None:
        for name, value in values.items():
            self.data.qpos[self.model.jnt_qposadr[self._c.lookup(mujoco.mjtObj.mjOBJ_JOINT, name)]] = value
        mujoco.mj_forward(self.model, self.data)
        self._changed()

    def set_object_pose(self, obj: str, pos: Floats, quat: Floats | None = None) -> None:
        if obj not in self._c.free_qadr:
            raise NotFoundError(f"no movable object {obj!r}; movable: {', '.join(self._c.free_qadr)}")
        a = self._c.free_qadr[obj]
        self.data.qpos[a:a + 3] = pos
        if quat is not None:
            self.data.qpos[a + 3:a + 7] = quat
        dof = self.model.jnt_dofadr[self._c.lookup(mujoco.mjtObj.mjOBJ_JOINT, free_joint(obj))]
        self.data.qvel[dof:dof + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)
        self._changed()

    def joint_range(self, names: tuple[str, ...]) -> Floats:
        """(n, 2) position limits of the named joints; unlimited joints get -inf..inf."""
        m = self.model
        ids = [self._c.lookup(mujoco.mjtObj.mjOBJ_JOINT, n) for n in names]
        limited = m.jnt_limited[ids].astype(bool)[:, None]
        return np.where(limited, m.jnt_range[ids], np.array([-np.inf, np.inf]))

    def penetration(self) -> float:
        """How deep (m) the deepest contact of the current state penetrates; 0 when none does. Cheap
        enough for every tick: the contacts are those mj_forward found for this very state."""
        d = self.data
        return max(0.0, -min(d.contact.dist.tolist())) if d.ncon else 0.0  # (a few contacts: no numpy reduction)

    def deepest_contact(self) -> Contact | None:
        """The contact with the smallest signed distance now, or None without contacts."""
        d = self.data
        if d.ncon == 0:
            return None
        return self._contact(int(np.argmin(d.contact.dist)))

    def _contact(self, i: int) -> Contact:
        m, c = self.model, self.data.contact[i]
        g1, g2 = int(c.geom1), int(c.geom2)
        return Contact(m.geom(g1).name, m.geom(g2).name, m.body(int(m.geom_bodyid[g1])).name,
                       m.body(int(m.geom_bodyid[g2])).name, float(c.dist))

    def contacts(self) -> list[Contact]:
        return [self._contact(i) for i in range(self.data.ncon)]

    def geom_distance(self, geom1: str, geom2: str, cutoff: float = 1.0) -> float:
        g1 = self._c.lookup(mujoco.mjtObj.mjOBJ_GEOM, geom1)
        g2 = self._c.lookup(mujoco.mjtObj.mjOBJ_GEOM, geom2)
        return float(mujoco.mj_geomDistance(self.model, self.data, g1, g2, cutoff, None))

    # ----- WorldView (what predicates read) --------------------------------------------------
    def object_pos(self, obj: str) -> Floats:
        return self._c.xpos[self._c.object_body[obj]]

    def object_rest_height(self, obj: str) -> float:
        return self._c.chosen[obj].height

    def site_box(self, site: str) -> tuple[Floats, Floats, Floats]:
        c = self._c
        sid = c.lookup(mujoco.mjtObj.mjOBJ_SITE, site)
        return c.site_xpos[sid], c.site_xmat[sid].reshape(3, 3), self.model.site_size[sid]

    def joint_value(self, joint: str) -> float:
        c = self._c
        adr = c.qadr.get(joint)
        if adr is None:
            adr = c.qadr[joint] = int(self.model.jnt_qposadr[c.lookup(mujoco.mjtObj.mjOBJ_JOINT, joint)])
        return float(c.qpos[adr])

    def touching(self, body_a: str, body_b: str) -> bool:
        pairs = self._touch_pairs
        if pairs is None:  # once per state: predicates and skills ask several times a tick
            d = self.data
            pairs = set()
            if d.ncon:
                for a, b in self._c.root_of_geom[d.contact.geom].tolist():  # (a loop: a few contacts, every tick)
                    pairs.add((a, b))
                    pairs.add((b, a))
            self._touch_pairs = pairs
        return (self._root(body_a), self._root(body_b)) in pairs

    def _root(self, name: str) -> int:
        c = self._c
        root = c.roots.get(name)
        if root is None:
            root = c.object_body[name] if name in c.object_body else int(
                c.root_of_body[c.lookup(mujoco.mjtObj.mjOBJ_BODY, name)])
            c.roots[name] = root
        return root

    def jaw(self) -> Jaw | None:
        if self.env.robot.gripper.drive != "linkage":
            return None
        if self._jaw is None:  # measured once per backend: every world it compiles carries the same gripper
            self._jaw = world_jaw(self._c.xml, self.env.robot, self._c.textures)
        return self._jaw

    def finger_bodies(self, arm: str) -> tuple[str, str]:
        a, b = self._c.fingers[arm]
        return a, b

    def arm_joint_error(self, arm: str) -> float:
        return float(np.max(np.abs(self.data.qpos[self._c.arm_qadr[arm]] - self._c.arm_home[arm])))

    def arm_root_pos(self, arm: str) -> Floats:
        joint = self._c.lookup(mujoco.mjtObj.mjOBJ_JOINT, self.env.robot.arm(arm).joints[0])
        return self.data.xanchor[joint].copy()

    # ----- pictures --------------------------------------------------------------------------
    def render(self, camera: str, width: int = 640, height: int = 480) -> Image:
        """The current state through this world's own renderer (a `renderer` per size, kept until the world
        changes): the picture `renderer(...).set_state(get_state())` would draw."""
        return self._drawn(camera, width, height).render(camera)

    def shot(self, camera: str, streams: tuple[str, ...], width: int = 640, height: int = 480) -> Shot:
        """The current state's `streams` of the camera (rgb, depth, segmentation) in one pass, through the same
        renderer as `render`: its rgb is `render`'s picture, bit for bit."""
        return self._drawn(camera, width, height).shot(camera, streams)

    def _drawn(self, camera: str, width: int, height: int) -> MujocoRenderer:
        """This world's renderer at the size (made once per world and size), set to the current state."""
        self._c.lookup(mujoco.mjtObj.mjOBJ_CAMERA, camera)  # an unknown camera: NotFoundError naming it
        key = (width, height)
        if key not in self._renderers:
            self._renderers[key] = MujocoRenderer(self.model, self.cameras.names, ImageSize(height, width))
        r = self._renderers[key]
        r.set_state(self.get_state())
        return r

    def camera_info(self, camera: str, width: int = 640, height: int = 480) -> CameraInfo:
        cid = self._c.lookup(mujoco.mjtObj.mjOBJ_CAMERA, camera)
        fovy = float(self.model.cam_fovy[cid])
        ext = np.eye(4)
        ext[:3, :3] = self.data.cam_xmat[cid].reshape(3, 3)
        ext[:3, 3] = self.data.cam_xpos[cid]
        # a camera calibrated by `x2 calibrate camera` has its own K and maybe a lens (x2/sim/mujoco/lens.py)
        k = camera_matrix(self.model, cid, ImageSize(height, width))
        lens = distortion(self.model, cid)
        return CameraInfo(camera, width, height, fovy, pinhole(fovy, height, width) if k is None else k, ext,
                          {} if lens is None else {"distortion": lens})

    @property
    def cameras(self) -> WorldCameras:
        return world_cameras(self.model)

    def renderer(self, cameras: Sequence[str], size: ImageSize) -> MujocoRenderer:
        """A renderer of the world as it is now, with its own state (x2/sim/mujoco/renderer.py)."""
        return MujocoRenderer(self.model, cameras, size)

    def model_xml(self) -> str:
        return self._c.xml

    def model_textures(self) -> dict[str, bytes]:
        """The images the world carries beside `model_xml` (x2.sim.mujoco.textures), by name."""
        return dict(self._c.textures)
