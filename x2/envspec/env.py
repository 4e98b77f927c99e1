"""Compiled, validated environment description: what `x2.envspec` hands to the simulator and the loop.

Everything here is plain frozen data (no YAML, no simulator), so the simulator, the DAG runtime and the dataset
store can share it without importing each other. (A calibrated camera's value, `CameraCalibration`, is defined
beside its file schema in x2/envspec/camera_calibration.py and held here as it is.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from x2.envspec.action import ActionLayout
from x2.envspec.camera_calibration import CameraCalibration

Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]  # w, x, y, z (MuJoCo order)


@dataclass(frozen=True)
class VendorSource:
    """A file inside a pinned third-party package (x2.envspec.vendor), resolved on this machine; or, with no
    package, a user's own MJCF or URDF (and the folder its meshes are in, when not the file's own)."""

    package: str | None
    version: str
    file: Path
    meshdir: Path | None = None


@dataclass(frozen=True)
class ArmPart:
    """An arm from a vendor MJCF (robots/parts/*.yaml; x2.sim.mujoco.parts builds it)."""

    name: str
    source: VendorSource
    root: str
    joints: tuple[str, ...]  # vendor names, base to tip
    joint_names: tuple[str, ...]  # x2's names for them (before the <arm>_ prefix); empty: the vendor's
    drop_bodies: tuple[str, ...]  # the vendor's own gripper, dropped when another is attached
    flange_body: str
    flange_pos: Vec3
    flange_quat: Quat
    kp: tuple[float, ...]
    kv: tuple[float, ...]
    force: tuple[float, ...]
    rgba: tuple[float, float, float, float]
    keep_visual: bool = False  # keep visual-only geoms (their meshes inline, big ones as hulls)
    joint_dynamics: tuple[float, float, float] | None = None  # armature, damping, frictionloss; None: the vendor's
    capsules: tuple[tuple[str, float], ...] = ()  # fitted collision capsules: (body, radius)
    joint_range: tuple[float, float] | None = None  # replaces the vendor's limits when they are none
    defaulted: tuple[str, ...] = ()  # fields the part file left out that x2 filled in (kp, kv, force): to say so
    # draw the vendor's visual meshes, in its colours, decimated to this many faces a piece; 0: the collision meshes
    visual_faces: int = 0


@dataclass(frozen=True)
class GripperPart:
    """A gripper from a vendor MJCF, renamed to x2's gripper contract."""

    name: str
    source: VendorSource
    root: str
    fingers: tuple[str, str]
    tcp: Vec3
    tcp_quat: Quat
    camera_pos: Vec3
    camera_xyaxes: tuple[float, float, float, float, float, float]
    camera_fovy: float
    kp: float | None  # x2's servo on a slide finger; None: a linkage keeps the vendor's actuator
    kv: float | None
    force: float | None
    pad_friction: Vec3
    rgba: tuple[float, float, float, float]
    in_arm: bool = False  # the gripper lives in its arm's vendor file (ALOHA's ViperX): renamed in place
    linkage: Linkage | None = None  # None: slide fingers
    mount_quat: Quat = (1.0, 0.0, 0.0, 0.0)  # the gripper body at the flange


DRIVES = ("slide", "linkage")  # how a gripper's fingers move (GripperSpec.drive)
SIDES = ("a_", "b_")  # a linkage gripper's two sides in x2's names (finger_a's side, finger_b's)


@dataclass(frozen=True)
class Linkage:
    """A gripper whose fingers ride on linkages of hinges (the Robotiq 2F-85's four-bars), kept as the vendor
    wrote them: its joints, equality constraints, tendon and actuator."""

    pads: tuple[str, str]  # vendor bodies that grip: they become bodies finger_a, finger_b
    sides: tuple[str, str]  # vendor name prefix of each side's elements: it becomes SIDES
    joints: tuple[str, ...]  # the vendor's other linkage joints, in the order x2 records them
    actuator: str  # the vendor's actuator: it becomes `gripper`

    def renamed(self, name: str) -> str:
        """x2's name of a vendor element of the gripper (its side prefix replaced)."""
        for side, ours in zip(self.sides, SIDES, strict=True):
            if name.startswith(side):
                return ours + name[len(side):]
        return name


@dataclass(frozen=True)
class ArmSpec:
    """One arm of a robot, with names as they appear in the compiled world model."""

    name: str  # "left" | "right" (a single-arm robot's arm is "right", the arm one-arm tasks bind)
    joints: tuple[str, ...]  # arm joint names in the compiled model, base to tip
    actuators: tuple[str, ...]  # position actuators, same order as joints
    home: tuple[float, ...]  # home joint angles (rad)
    gripper_actuator: str  # the actuator driving the fingers (GripperSpec: its ctrl)
    gripper_joints: tuple[str, ...]  # finger joints (recorded in qpos): finger_a, finger_b, a linkage's others
    tcp_site: str  # tool centre point between the fingertips
    wrist_camera: str | None = None
    reach_joints: tuple[int, int] = (1, 4)  # 0-based: shoulder pitch and wrist pitch (x2.synth's reach screen)
    part: ArmPart | None = None  # None: the arm is in the robot's own MJCF


@dataclass(frozen=True)
class GripperSpec:
    """Gripper variant. Action value g in [0, 1] (0 = closed, 1 = open) maps linearly to
    actuator ctrl = closed + g * (open - closed).

    A slide gripper's ctrl is the finger opening per side in metres, so the jaw's gap follows from it; a
    linkage gripper's is its vendor's command, and the simulator measures its jaw (gap and every linkage
    joint per command: x2.sim.backend.Jaw)."""

    kind: str  # "G" parallel jaw | "H" wide-stroke | a vendor gripper's name
    mjcf: Path
    open_ctrl: float
    closed_ctrl: float
    part: GripperPart | None = None  # a vendor gripper (then `mjcf` is its vendor file)
    drive: str = "slide"  # one of DRIVES


@dataclass(frozen=True)
class MobileBaseSpec:
    """A mobile robot's base: planar joints x, y (slides, m) and yaw (hinge, rad) under the whole robot, each
    driven by a position servo; the arms and cameras ride on it."""

    joints: tuple[str, str, str]  # base_x, base_y, base_yaw: joints and their servos, in the model and the action
    home: tuple[float, float, float]
    range: tuple[tuple[float, float], tuple[float, float], tuple[float, float]]  # x, y (m), yaw (rad)
    speed: float  # m/s, the planner's cruising speed (yaw: rad/s)

    @property
    def low(self) -> npt.NDArray[np.float64]:
        """The lower ends of the range, (x, y, yaw)."""
        return np.array([r[0] for r in self.range])

    @property
    def high(self) -> npt.NDArray[np.float64]:
        return np.array([r[1] for r in self.range])


@dataclass(frozen=True)
class CameraJitter:
    """How far a camera may vary between resets: position (m, each axis +-), angle (deg, a turn about a random
    axis of up to this), fovy (deg, +-)."""

    camera: str
    position: float
    angle: float
    fovy: float


@dataclass(frozen=True)
class JointDynamics:
    """One joint's dynamics in a twin calibration (x2/envspec/calibration.py); None: the robot's own value."""

    joint: str  # x2's joint name (left_waist); its servo is the actuator of the same arm slot
    kp: float | None = None  # position servo stiffness, N m / rad
    kv: float | None = None  # position servo damping, N m s / rad
    damping: float | None = None  # joint damping, N m s / rad
    armature: float | None = None  # reflected rotor inertia, kg m^2
    frictionloss: float | None = None  # dry friction, N m


@dataclass(frozen=True)
class TwinCalibration:
    """A twin calibration file applied to a robot (`aloha@lab1`): what makes x2's twin the lab's robot. The
    values go into the world's MJCF (x2/sim/mujoco/calibrated.py); the latency into the world too, as the custom
    numeric `x2_latency_ticks` the backend reads."""

    name: str
    digest: str  # sha256 of the calibration file's bytes
    latency_ticks: int = 0  # commands are applied this many control ticks late
    joints: tuple[JointDynamics, ...] = ()
    gravcomp: tuple[tuple[str, float], ...] = ()  # (arm, share of gravity the arm's bodies are compensated for)
    cameras: tuple[CameraCalibration, ...] = ()  # each camera's intrinsics, lens and pose (x2 calibrate camera)


@dataclass(frozen=True)
class RobotSpec:
    name: str
    mjcf: Path  # body description: torso + arms, flange sites "<arm>_flange"
    gripper: GripperSpec
    arms: tuple[ArmSpec, ...]
    cameras: tuple[str, ...]  # all camera names in the compiled model that belong to the robot
    base_pos: Vec3 = (0.0, 0.0, 0.0)
    base: MobileBaseSpec | None = None  # None: the robot stands where it is mounted
    camera_jitter: tuple[CameraJitter, ...] = ()  # drawn per reset where the scene randomises embodiment
    # m, +-: the table's height relative to the mount, drawn per reset where the scene lists `table_height`
    # (0: never drawn); realised by moving the mount (x2/sim/mujoco/embodiment.py)
    table_height_jitter: float = 0.0
    calibration: TwinCalibration | None = None  # the twin calibration the robot was named with (ROBOT@NAME)

    @property
    def action(self) -> ActionLayout:
        return ActionLayout.for_arms([(a.name, a.joints) for a in self.arms],
                                     self.base.joints if self.base is not None else ())

    @property
    def action_names(self) -> tuple[str, ...]:
        return self.action.names

    @property
    def action_dim(self) -> int:
        return self.action.dim

    @property
    def recorded_joints(self) -> tuple[str, ...]:
        """The joints an episode records in /observations/qpos (and x2's LeRobot export in observation.state): per
        arm its joints then its finger joints, then a mobile base's joints, as the action orders them."""
        joints = [j for a in self.arms for j in (*a.joints, *a.gripper_joints)]
        return (*joints, *(self.base.joints if self.base is not None else ()))

    def home_action(self) -> npt.NDArray[np.float64]:
        """Every arm at home, grippers open, the base at its home."""
        return self.action.compose([a.home for a in self.arms], [1.0] * len(self.arms),
                                   self.base.home if self.base is not None else ())

    def arm(self, name: str) -> ArmSpec:
        for a in self.arms:
            if a.name == name:
                return a
        from x2.base.errors import NotFoundError

        raise NotFoundError(f"robot {self.name!r} has no arm {name!r}; arms: {[a.name for a in self.arms]}")


@dataclass(frozen=True)
class AssetSpec:
    """An object asset: an MJCF file whose worldbody holds one top-level body named ``object``."""

    name: str
    mjcf: Path
    tags: tuple[str, ...]
    footprint_radius: float  # radius of the disc the object covers on a support surface (m)
    height: float  # resting height of the object's origin above the support surface (m)
    free: bool  # True: gets a free joint (movable); False: welded where placed
    parts: dict[str, str] = field(default_factory=dict)  # part name -> site name inside the asset
    joints: tuple[str, ...] = ()  # articulated joints inside the asset (unprefixed)
    display: str = ""  # what instructions call it; "": its name (x2/envspec/instruction.py)

    @property
    def said(self) -> str:
        """The words an instruction uses for it: its display name, else its name."""
        return self.display or self.name


@dataclass(frozen=True)
class Region:
    """A rectangle on a support surface where objects may be placed."""

    name: str
    center: tuple[float, float]  # world x, y
    half_size: tuple[float, float]
    z: float  # world height of the support surface
    yaw_range: tuple[float, float] = (-3.14159, 3.14159)
    slots: tuple[tuple[float, float], ...] = ()  # fixed spots shared out in a drawn order (then half_size: jitter)
    on: str | None = None  # the object this region lies on (z is its surface): its footprint does not count


@dataclass(frozen=True)
class ObjectInstance:
    """One object in the scene. Its bodies, joints and sites are prefixed ``<name>/`` in the model."""

    name: str
    candidates: tuple[AssetSpec, ...]  # asset pool; one is drawn per reset from the scene stream
    tags: tuple[str, ...]  # instance tags + asset tags
    region: Region | None = None  # sampled placement, or
    pose: tuple[float, float, float, float] | None = None  # fixed x, y, z, yaw
    group: str | None = None  # objects of one group draw different assets from their (one) pool
    follows: str | None = None  # draws the asset at the place in its pool that this earlier object drew in its own
    # (or, when it follows a role, at the place in its pool of the object the role drew)

    @property
    def max_footprint(self) -> float:
        return max(a.footprint_radius for a in self.candidates)


@dataclass(frozen=True)
class Role:
    """A name the task uses for one of `one_of`'s objects, bound at every reset (x2/envspec/roles.py)."""

    name: str
    one_of: tuple[str, ...]
    unlike: str | None = None  # an earlier role it never binds to the same object


# The booth's fixed lights, shared by the booth builder and the scenery variants that relight a recorded world:
# the key light's direction (from above, slightly beyond the table) and the fills' share of its intensity.
KEY_LIGHT_DIRECTION: Vec3 = (-0.3, 0.0, -1.0)
FILL_LIGHT_RATIO = 0.45


@dataclass(frozen=True)
class BoothSpec:
    """The green booth: chroma-green walls and floor, a table, fixed lights, a head camera."""

    table_center: tuple[float, float] = (0.6, 0.0)
    table_half_size: tuple[float, float] = (0.4, 0.6)
    table_height: float = 0.75
    wall_rgba: tuple[float, float, float, float] = (0.0, 0.69, 0.25, 1.0)  # chroma key green
    floor_rgba: tuple[float, float, float, float] = (0.0, 0.62, 0.22, 1.0)
    table_rgba: tuple[float, float, float, float] = (0.85, 0.85, 0.82, 1.0)
    booth_half_size: tuple[float, float, float] = (1.6, 1.6, 1.4)  # half extents of the booth room
    light_intensity: float = 0.6
    timestep: float = 1.0 / 480.0


@dataclass(frozen=True)
class PredicateCall:
    """A named predicate from `x2.tasks.predicates` with resolved arguments."""

    name: str
    args: dict[str, object]

    def describe(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.name}({inner})"


@dataclass(frozen=True)
class NodeSpec:
    id: str
    success: tuple[PredicateCall, ...]  # all must hold
    failure: tuple[PredicateCall, ...] = ()  # any triggers a failure
    timeout_s: float | None = None
    score: float = 1.0
    description: str = ""
    skill: SkillBinding | None = None  # how synthesis achieves this node


@dataclass(frozen=True)
class SkillBinding:
    """A node's skill as written in the task, with its target resolved. The skill name and parameters
    are checked against the synthesis registry (which the spec layer cannot import) at `origin`."""

    name: str
    arm: str  # left | right | both | auto
    target: str | None  # object instance name, or a part's site name ("microwave/handle")
    target_object: str | None  # the object the target belongs to
    params: dict[str, object]
    origin: tuple[str, int]  # file, line of the skill block, for errors found later

    def number(self, name: str, default: float) -> float:
        """Parameter `name` as a float, or `default` when the task leaves it out."""
        value = self.params.get(name, default)
        assert isinstance(value, int | float)  # x2.synth.binding checked the type against the skill registry
        return float(value)


@dataclass(frozen=True)
class TaskSpec:
    name: str
    instruction: str
    horizon_s: float
    nodes: tuple[NodeSpec, ...]
    edges: tuple[tuple[str, str], ...]
    dimensions: tuple[str, ...] = ()  # the capability dimensions it exercises (x2/envspec/schema.py: Dimension)
    paraphrases: tuple[str, ...] = ()  # more templates drawn beside `instruction` (x2/envspec/instruction.py)
    eval_paraphrases: tuple[str, ...] = ()  # held-out templates, drawn only in an evaluation scene variant

    @property
    def node_ids(self) -> tuple[str, ...]:
        return tuple(n.id for n in self.nodes)


# ----- scenery looks (x2/envspec/scenery.py compiles them; x2/sim/mujoco/look.py draws and applies them) -----
@dataclass(frozen=True)
class SurfaceLook:
    """Colours to draw one from per episode, a builtin texture, and the texture's second colour."""

    colours: tuple[Vec3, ...]
    texture: str  # none | checker | gradient | wood | concrete | fabric (x2/envspec/schema.py: TEXTURES)
    colours2: tuple[Vec3, ...]  # empty: a darker shade of the drawn colour (textured surfaces only)
    repeat: tuple[float, float]  # texture repeats across each face


@dataclass(frozen=True)
class LightingLook:
    """The key light (the fills follow it at FILL_LIGHT_RATIO of its intensity, in the same colour)."""

    directions: tuple[Vec3, ...]  # drawn one per episode
    colours: tuple[Vec3, ...]  # RGB, drawn one per episode
    intensity: tuple[float, float]  # uniform in [lo, hi]
    shadows: bool


@dataclass(frozen=True)
class DistractorPool:
    """Static assets (no joints) to scatter, `count` of them, inclusive range."""

    assets: tuple[AssetSpec, ...]
    count: tuple[int, int]


@dataclass(frozen=True)
class Scenery:
    """One `scenery:` block of a scene, compiled (x2/envspec/scenery.py): a look and distractors for a recorded
    world's static layer. Not a scene's `variants:` overlay, which recompiles the task."""

    name: str
    split: str  # train | eval (held out)
    description: str
    distractors: DistractorPool | None
    table: SurfaceLook | None
    walls: SurfaceLook | None
    floor: SurfaceLook | None
    lighting: LightingLook | None


@dataclass(frozen=True)
class EnvSpec:
    """Robot + scene + task, compiled and cross-checked."""

    robot: RobotSpec
    booth: BoothSpec
    objects: tuple[ObjectInstance, ...]
    task: TaskSpec | None
    fps: int = 30
    substeps: int = 16
    scene_name: str = "green_booth"
    variant: str = "default"
    split: str = "train"
    sources: tuple[str, ...] = ()  # spec files that produced this spec, for provenance
    appearance: tuple[Scenery, ...] = ()  # looks every reset draws one of (x2/sim/mujoco/look.py)
    # embodiment axes every reset draws ("camera", "table_height": x2/sim/mujoco/embodiment.py)
    embodiment: tuple[str, ...] = ()
    roles: tuple[Role, ...] = ()  # names the task uses for objects, bound at every reset (x2/envspec/roles.py)
    # Not part of the world (no record keeps them): they pick the default dataset folder. The name of the robot the
    # task file names, the one it is usually run with (None: it names none); the task file's stem, what a person
    # types (--task NAME, or a path to NAME.yaml), which a file may `name:` otherwise.
    reference_robot: str | None = None
    task_file: str | None = None

    @property
    def control_dt(self) -> float:
        return 1.0 / self.fps

    @property
    def dataset_name(self) -> str:
        """The folder under ./data a collector writes to when no --dataset is given: the task file's stem (the
        scene's name without a task), with `-<robot>` after it when the robot is not the task's reference robot, so
        the datasets of one task by two robots do not meet in one folder (which refuses the second robot)."""
        name = (self.task_file or self.task.name) if self.task is not None else self.scene_name
        if self.task is None or self.reference_robot in (None, self.robot.name):
            return name
        return f"{name}-{self.robot.name}"
