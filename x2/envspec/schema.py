"""Pydantic models of the YAML files as written by people (before names are resolved).

`extra="forbid"` everywhere: a misspelt field is an error that names the file and line, never
a silently ignored setting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError, model_validator
from pydantic_core import ErrorDetails

from x2.envspec.source import Fragment

# Strict: a YAML `true` or `yes` (a bool) or a quoted "0.5" (a string) is no number; an int is.
Number = Annotated[float, Strict()]
Whole = Annotated[int, Strict()]
Flag = Annotated[bool, Strict()]  # true/false, not 1 or "yes" in quotes
Vec2 = tuple[Number, Number]
Vec3 = tuple[Number, Number, Number]
# Robot, asset, scene and task names and DAG node ids end up in MuJoCo names, dataset manifests, labels and
# terminal output (where "[red]" would be markup): letters, digits and a few separators only.
NAME_PATTERN = r"^[A-Za-z0-9_.-]+$"
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
# A display name is words in an instruction (and a LeRobot task string): printable, one line, no markup brackets.
DISPLAY_PATTERN = r"^[^\x00-\x1f\x7f\[\]{}]*[^\x00-\x1f\x7f\[\]{}\s][^\x00-\x1f\x7f\[\]{}]*$"  # words: not blank
DISPLAY_ALLOWED = "words on one line, without [ ] { } (what an instruction calls the object: 'red mug')"
Size = Annotated[Number, Field(gt=0)]
Extent = Annotated[Number, Field(ge=0)]
Unit = Annotated[Number, Field(ge=0, le=1)]
RGBA = tuple[Unit, Unit, Unit, Unit]


class _Strict(BaseModel):
    # allow_inf_nan: a `.nan` or `.inf` (YAML floats) is no position, size or time.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


# ----- robots ---------------------------------------------------------------------------------

# m: the largest table_height_jitter a robot may declare. Scenes check their regions' reach against the nominal
# shoulders (x2/envspec/scene.py); a few centimetres leave that check meaningful, a larger range would not.
MAX_TABLE_HEIGHT_JITTER = 0.05


class GripperFile(_Strict):
    kind: Name  # the gripper's name in episodes and reports (G, H, franka-hand, ...)
    # x2's own gripper MJCF (next to the robot file), or a vendor part (robots/parts/<part>.yaml): one of them
    mjcf: str | None = None
    part: Name | None = None
    # the gripper servo's ctrl at either end: a slide gripper's finger opening per side (m, closed < open); a
    # linkage gripper's vendor command (the 2F-85's 0 open .. 255 closed)
    open: Number = Field(ge=0, description="actuator ctrl when fully open")
    closed: Number = Field(ge=0, description="actuator ctrl when fully closed")

    @model_validator(mode="after")
    def _one_source(self) -> GripperFile:
        if (self.mjcf is None) == (self.part is None):
            raise ValueError("give exactly one of mjcf (x2's own gripper file) and part (a vendor part)")
        return self


class ArmFile(_Strict):
    # joints in the robot's MJCF, base to tip; an arm made from a part takes the part's (prefixed <arm>_)
    joints: list[str] | None = Field(default=None, min_length=1)
    part: Name | None = None  # robots/parts/<part>.yaml, attached at the site <arm>_mount of the robot's MJCF
    home: list[Number]  # rad (or m), one per joint: where every episode starts
    actuators: list[str] | None = None  # default: same names as the joints
    # 1-based joints whose axes bound the reach screen: shoulder pitch and wrist pitch (a 6-DoF arm: 2, 5)
    reach_joints: tuple[Whole, Whole] = (2, 5)

    @model_validator(mode="after")
    def _one_source(self) -> ArmFile:
        if (self.joints is None) == (self.part is None):
            raise ValueError("give exactly one of joints (in the robot's MJCF) and part (a vendor arm)")
        return self


# ----- robot parts from vendor files (robots/parts/*.yaml) ------------------------------------------


class VendorSourceFile(_Strict):
    # a pinned package of x2.envspec.vendor (file: the MJCF or URDF inside it); without it, file is the user's own
    # MJCF or URDF, relative to the part YAML or absolute, and meshdir where its meshes are (default: its folder)
    package: Name | None = None
    file: str
    meshdir: str | None = None

    @model_validator(mode="after")
    def _meshdir_is_local(self) -> VendorSourceFile:
        if self.package is not None and self.meshdir is not None:
            raise ValueError("meshdir is for a file of your own (no package): a package's files stay as shipped")
        return self


class ArmPartFile(_Strict):
    """An arm taken from a vendor MJCF: its chain from `root`, its joints, where a gripper mounts, x2's servos."""

    name: Name
    kind: Literal["arm"]
    description: str = ""
    source: VendorSourceFile
    root: str  # the vendor body attached at the mount
    joints: list[str] = Field(min_length=1)  # vendor names, base to tip
    joint_names: list[Name] = []  # x2's names for them (prefixed <arm>_); default: the vendor's
    drop_bodies: list[str] = []  # what the vendor file carries beyond the arm (its own gripper)
    keep_visual: Flag = False  # keep the vendor's visual-only geoms (meshes inline, big ones as hulls)
    # draw the arm with the vendor's visual meshes, in its colours, each piece decimated to at most this many faces
    # (x2.sim.mujoco.visual_meshes); null or left out: the cameras see the collision meshes
    visual_faces: Annotated[int, Strict(), Field(ge=4)] | None = None
    # joint armature, damping and friction loss for x2's servos, when the vendor's were tuned for another
    # controller (gym-aloha: 50 N m of friction standing in for damping); default: the vendor's
    joint_dynamics: tuple[Extent, Extent, Extent] | None = None
    # collision geometry fitted here where the vendor ships none (a URDF without meshes): per body, a capsule of
    # this radius (m) from the body's origin to its child's (the flange body's: to the flange)
    capsules: dict[str, Size] = {}
    # joint limits where the vendor's are none (the ARX R5 URDF's +-10 rad): one (lo, hi) for every joint
    joint_range: tuple[Number, Number] | None = None
    flange_body: str
    flange_pos: Vec3 = (0.0, 0.0, 0.0)
    flange_quat: tuple[Number, Number, Number, Number] = (1.0, 0.0, 0.0, 0.0)
    # position servo per joint (N m / rad), its damping and torque limit (N m); a file of your own may leave them
    # out (a URDF has no actuators): x2 then takes DEFAULT_GAINS and says so (x2 robots check)
    kp: list[Size] | None = None
    kv: list[Extent] | None = None
    force: list[Size] | None = None
    rgba: RGBA = (0.92, 0.92, 0.9, 1.0)

    @model_validator(mode="after")
    def _per_joint(self) -> ArmPartFile:
        for field in ("kp", "kv", "force", *(("joint_names",) if self.joint_names else ())):
            if getattr(self, field) is None:
                if self.source.package is not None:
                    raise ValueError(f"{field}: one value per joint ({len(self.joints)}) for a vendor package's arm")
                continue
            if len(getattr(self, field)) != len(self.joints):
                raise ValueError(f"{field}: one value per joint ({len(self.joints)})")
        return self


class GripperPartFile(_Strict):
    """A gripper taken from a vendor MJCF, renamed to x2's gripper contract (see x2/sim/mujoco/parts.py)."""

    name: Name
    kind: Literal["gripper"]
    description: str = ""
    source: VendorSourceFile
    root: str  # the vendor body that becomes "gripper"
    # slide: each finger on a slide opening per side; linkage: each finger at the end of a linkage of hinges
    # closed by the vendor's equality constraints and driven by the vendor's actuator (x2/sim/mujoco/parts.py)
    drive: Literal["slide", "linkage"] = "slide"
    fingers: tuple[str, str]  # vendor finger joints -> finger_a, finger_b (slides; a linkage's driven hinges)
    # linkage only: the bodies that grip (-> bodies finger_a, finger_b), the name prefix of each side's elements
    # in the vendor file (-> a_, b_), the linkage's other joints (recorded after finger_a, finger_b) and the
    # vendor's actuator (-> gripper, its gains and force as the vendor set them)
    pads: tuple[str, str] | None = None
    sides: tuple[str, str] | None = None
    linkage: list[str] = []
    actuator: str | None = None
    # the gripper body's rotation at the flange (the vendor's mounting), in which tcp and camera are given
    mount_quat: tuple[Number, Number, Number, Number] = (1.0, 0.0, 0.0, 0.0)
    in_arm: Flag = False  # the gripper is part of its arm's vendor file (root: its body there)
    tcp: Vec3  # in the root body
    tcp_quat: tuple[Number, Number, Number, Number] = (1.0, 0.0, 0.0, 0.0)  # +z the approach, fingers along y
    camera_pos: Vec3
    camera_xyaxes: tuple[Number, Number, Number, Number, Number, Number]
    camera_fovy: Size
    kp: Size | None = None  # x2's servo on a slide finger (a linkage keeps the vendor's actuator)
    kv: Extent | None = None
    force: Size | None = None  # N, the squeeze
    pad_friction: tuple[Size, Extent, Extent] = (1.5, 0.02, 0.0001)
    rgba: RGBA = (0.92, 0.92, 0.9, 1.0)

    @model_validator(mode="after")
    def _drive(self) -> GripperPartFile:
        if self.drive == "slide":
            missing = [f for f in ("kp", "kv", "force") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"{', '.join(missing)}: required for slide fingers (x2's servo)")
            extra = [f for f in ("pads", "sides", "actuator") if getattr(self, f) is not None] + \
                (["linkage"] if self.linkage else [])
            if extra:
                raise ValueError(f"{', '.join(extra)}: only for drive: linkage")
        else:
            missing = [f for f in ("pads", "sides", "actuator") if getattr(self, f) is None]
            if missing:
                raise ValueError(f"{', '.join(missing)}: required for drive: linkage")
            if self.in_arm:
                raise ValueError("in_arm: only for slide fingers")
        return self


PartFile = ArmPartFile | GripperPartFile


class ControlFile(_Strict):
    fps: Whole = Field(default=30, ge=1, le=1000)  # control ticks (recorded frames) per second
    substeps: Whole = Field(default=16, ge=1, le=200)  # physics steps per control tick


class MobileBaseFile(_Strict):
    """A mobile base: three joints in the robot's MJCF (planar x, y slides and a yaw hinge, in that order), each
    with a position servo of the same name; the action's last three values (x2/envspec/action.py)."""

    joints: tuple[str, str, str] = ("base_x", "base_y", "base_yaw")
    home: tuple[Number, Number, Number] = (0.0, 0.0, 0.0)
    # x, y (m) and yaw (rad) limits, written into the MJCF's joints: the one place they are set
    range: tuple[tuple[Number, Number], tuple[Number, Number], tuple[Number, Number]]
    speed: Size = 0.3  # m/s (and rad/s for the heading) the planner drives at

    @model_validator(mode="after")
    def _valid(self) -> MobileBaseFile:
        if not all(j.startswith("base_") for j in self.joints):
            raise ValueError(f"joints {list(self.joints)}: a base's joints are named base_* (the action's names)")
        for axis, (lo, hi), home in zip(["x", "y", "yaw"], self.range, self.home, strict=True):
            if not lo <= home <= hi:
                raise ValueError(f"range of {axis} [{lo}, {hi}] must hold its home {home}")
        return self


class CameraJitterFile(_Strict):
    """How far a camera's mounting and lens may vary between resets (an embodiment axis), each drawn uniformly."""

    position: Extent = 0.0  # m, on each axis, +-
    angle: Extent = Field(default=0.0, le=20.0)  # deg: the camera turned by up to this about a random axis
    fovy: Extent = Field(default=0.0, le=20.0)  # deg, +-


class RecordingColumnFile(_Strict):
    """One column of a recording's joint vector (a LeRobot dataset's `action` and `observation.state`): the x2 action
    value it becomes and its unit. Every unit is an affine map onto x2's (rad for a joint, 0 closed .. 1 open for a
    gripper), written out in each imported episode's `recording` attr."""

    name: Annotated[str, Field(min_length=1)]  # the column's name in the recording (LeRobot's feature `names`)
    to: Name | None = None  # the x2 action name it becomes (`x2 robots show`); default: the same name
    # rad, deg, servo ticks (`ticks_per_turn`, `zero`), or `range` (a gripper: `range: [closed, open]` onto 0..1)
    unit: Literal["rad", "deg", "ticks", "range"] = "rad"
    sign: Literal[1, -1] = 1  # -1: the recording's joint turns the other way round than x2's
    offset: Number = 0.0  # rad added after the unit's conversion (where the recording's zero is not x2's)
    ticks_per_turn: Annotated[int, Strict(), Field(gt=0)] | None = None  # unit ticks: a servo's counts per turn
    zero: Number = 0.0  # unit ticks: the count at x2's 0 rad
    range: Vec2 | None = None  # unit range: the recording's values at closed and fully open

    @model_validator(mode="after")
    def _unit_fields(self) -> RecordingColumnFile:
        if (self.unit == "ticks") != (self.ticks_per_turn is not None):
            raise ValueError("ticks_per_turn is given with unit ticks, and only then")
        if (self.unit == "range") != (self.range is not None):
            raise ValueError("range [closed, open] is given with unit range, and only then")
        if self.range is not None and self.range[0] == self.range[1]:
            raise ValueError(f"range {list(self.range)}: closed and open must differ")
        if self.unit == "range" and (self.sign != 1 or self.offset != 0.0):
            raise ValueError("a range column takes no sign or offset (the range says both)")
        return self


class RecordingLayoutFile(_Strict):
    """How this robot's recordings in LeRobot's format name and scale their joints (`x2 import lerobot`)."""

    source: str = ""  # where the layout and its numbers come from, in words
    action: Annotated[str, Field(min_length=1)] = "action"  # the feature with the commanded joints
    state: Annotated[str, Field(min_length=1)] = "observation.state"  # the feature with the measured joints
    columns: list[RecordingColumnFile] = Field(min_length=1)  # in the recording's column order
    # the measured joints' own columns, where they differ from the commanded ones (default: `columns`): a recording
    # that measures the gripper by a finger's position, say
    state_columns: list[RecordingColumnFile] | None = Field(default=None, min_length=1)
    ignore: list[str] = []  # recording columns deliberately not imported (a second finger that mirrors the first)


class RobotFile(_Strict):
    name: Name  # what tasks, `--robot` and datasets call it
    description: str = ""
    mjcf: str  # the robot's world (its mount, and arms or the sites parts attach at), relative to this file
    gripper: GripperFile | Name  # a gripper block, or the name of one in robots/grippers
    arms: dict[Literal["left", "right"], ArmFile] = Field(min_length=1)
    cameras: list[str] = []  # the robot's cameras in its MJCF (the head first), recorded or rendered by name
    # per camera: how much its mounting and lens vary, drawn at every reset where a scene randomises embodiment
    camera_jitter: dict[str, CameraJitterFile] = {}
    # m, +-: how far the table's top may stand above or below its nominal height relative to this robot's mount
    # (benches and stands differ from lab to lab), drawn at every reset where a scene lists `table_height` in its
    # embodiment axes. It is realised by moving the mount, not the table (x2/sim/mujoco/embodiment.py), so only a
    # robot whose mount is welded to the world may declare it: a mobile base rides on the floor (x2/envspec/robot.py)
    table_height_jitter: Extent = Field(default=0.0, le=MAX_TABLE_HEIGHT_JITTER)
    base_pos: Vec3 = (0.0, 0.0, 0.0)  # m, where the robot's mount stands in the booth
    reach: Number = Field(default=0.75, gt=0, description="max distance shoulder -> tcp (m)")
    shoulders: dict[Literal["left", "right"], Vec3] = {}  # m, per arm: where reach is measured from (scenes check it)
    base: MobileBaseFile | None = None  # a mobile robot's planar base
    control: ControlFile = ControlFile()
    reference_task: str | None = None  # the task `x2 collect teleop` runs with this robot when given none
    # a real robot's LeRobot recordings: their columns, units and gripper convention (x2 import lerobot)
    lerobot: RecordingLayoutFile | None = None


# ----- assets ---------------------------------------------------------------------------------


class AssetFile(_Strict):
    name: Name  # what scenes call it (`asset:`, `pool:`)
    # what instructions call it ("red mug"): a task's {OBJECT} placeholder becomes this, else the asset's name
    display: Annotated[str, Field(min_length=1, pattern=DISPLAY_PATTERN)] | None = None
    mjcf: str  # the object's MJCF, relative to this file: one top-level body named `object`, no file references
    tags: list[str] = []  # what tasks select it by (`@pickable`), beside the scene object's own tags
    footprint_radius: Number = Field(gt=0)  # m: the disc it covers on the table (layouts keep these apart)
    height: Number = Field(default=0.0, ge=0)  # m: its origin's height above the surface it rests on
    free: Flag = True  # true: it moves (a free joint); false: welded where placed
    parts: dict[str, str] = {}  # part name -> site in the MJCF (grasp sites, handles, a container's box)
    joints: list[str] = []  # its articulated joints (a door's hinge), which predicates may name OBJECT/JOINT


# ----- scenes ---------------------------------------------------------------------------------


class BoothFile(_Strict):
    table_center: Vec2 | None = None  # m, in the world; default (none): the booth's own
    table_half_size: tuple[Size, Size] | None = None  # m
    table_height: Number | None = Field(default=None, gt=0.2, lt=1.5)  # m, of the table's top
    wall_rgba: RGBA | None = None
    floor_rgba: RGBA | None = None
    table_rgba: RGBA | None = None
    light_intensity: Number | None = Field(default=None, ge=0, le=2)


class RegionFile(_Strict):
    center: Vec2  # m, world x, y (the robot stands at the table's -x edge, +y to its left)
    half_size: tuple[Extent, Extent]  # with slots: how far each object may stray from its slot
    yaw: Vec2 = (-3.14159, 3.14159)  # rad, [lo, hi]: the objects' heading, drawn at every reset
    # fixed spots (world x, y): the region's objects take one each, in an order drawn at every reset (buttons in
    # a row, mats on a grid: a new arrangement each time, never a spot too few)
    slots: list[Vec2] = []
    # a region on top of another object (a conveyor's pallet): its surface `height` m above the table top, and
    # objects placed in it may stand inside that object's footprint
    on: str | None = None
    height: Extent = 0.0

    @model_validator(mode="after")
    def _yaw_is_a_range(self) -> RegionFile:
        if self.yaw[0] > self.yaw[1]:  # each reset draws uniformly from it
            raise ValueError(f"yaw [lo, hi] with lo <= hi (got [{self.yaw[0]:g}, {self.yaw[1]:g}])")
        return self


class ObjectFile(_Strict):
    asset: str | None = None  # the object file it is (x2/assets/objects or ./specs/objects), or:
    pool: list[str] | None = None  # object files one is drawn from at every reset
    tags: list[str] = []  # names tasks select it by (`@target_object`)
    region: str | None = None  # where it is placed at every reset (or a fixed `pose`)
    pose: tuple[Number, Number, Number, Number] | None = Field(default=None, description="x, y, z, yaw")
    # objects of one `group` draw different assets from the same pool (three buttons, three colours, a new order
    # every reset); an object that `follows` another draws the asset at the same place in its own pool (a cue
    # lamp of the colour its button drew)
    group: str | None = None
    follows: str | None = None


class RoleFile(_Strict):
    """A name the task uses for one of the scene's objects, drawn at every reset (the button the third cue asks
    for): a puzzle's configuration, while the objects themselves stay where the layout put them."""

    one_of: list[str] = Field(min_length=2)
    unlike: str | None = None  # an earlier role this one never draws the same object as (no cue twice in a row)


# ----- scenery (replay augmentation: a recorded world's static layer, recomposed) ----------------
# Fields that take "one value or a list to draw from" are normalised to a tuple here, so that their
# errors read as one rule ("an [r, g, b] colour ... or a list of them") instead of pydantic's two union branches.

RGB = tuple[float, float, float]
# Images x2 generates and the world carries (x2/sim/mujoco/surface_images.py); nothing read from disk
ImageTexture = Literal["wood", "concrete", "fabric"]
# A surface's texture: none, MuJoCo's builtin procedural ones (checker, gradient), or an image. The Literal is the one
# list of names (mypy needs it written out); the tuples below are read from it.
Texture = Literal["none", "checker", "gradient", ImageTexture]
TEXTURES: tuple[str, ...] = get_args(Texture)
IMAGE_TEXTURES: tuple[str, ...] = get_args(ImageTexture)
MAX_LIGHT_INTENSITY = 2.0  # as BoothFile.light_intensity


def _number(value: object) -> float | None:
    """A YAML int or float as a float; None for anything else (bool included: YAML `yes` is no number)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _vector(value: object) -> Vec3 | None:
    if not isinstance(value, list | tuple) or len(value) != 3:
        return None
    x, y, z = (_number(v) for v in value)
    return None if x is None or y is None or z is None else (x, y, z)


def _one_or_many[T](value: object, one: Callable[[object], T | None], what: str) -> tuple[T, ...]:
    """`value` as one item (accepted by `one`) or a non-empty list of them, always a tuple of items."""
    if (item := one(value)) is not None:
        return (item,)
    if isinstance(value, list) and value and all(one(v) is not None for v in value):
        return tuple(item for v in value if (item := one(v)) is not None)
    raise ValueError(f"{what}, or a non-empty list of them (one is drawn per episode)")


def _colour(value: object) -> RGB | None:
    rgb = _vector(value)
    return rgb if rgb is not None and all(0.0 <= c <= 1.0 for c in rgb) else None


def _direction(value: object) -> Vec3 | None:
    xyz = _vector(value)
    return xyz if xyz is not None and xyz[2] < 0.0 else None


def _colours(value: object) -> tuple[RGB, ...]:
    return _one_or_many(value, _colour, "an [r, g, b] colour with r, g, b in 0..1")


def _directions(value: object) -> tuple[Vec3, ...]:
    return _one_or_many(value, _direction, "an [x, y, z] light direction pointing down (z < 0)")


def _intensity(value: object) -> tuple[float, float]:
    one = _number(value)
    lo, hi = (one, one) if one is not None else (
        (_number(value[0]), _number(value[1])) if isinstance(value, list) and len(value) == 2 else (None, None))
    if lo is None or hi is None or not 0.0 <= lo <= hi <= MAX_LIGHT_INTENSITY:
        raise ValueError(f"a number in 0..{MAX_LIGHT_INTENSITY:g} or [lo, hi] with 0 <= lo <= hi <= "
                         f"{MAX_LIGHT_INTENSITY:g} (drawn uniformly)")
    return (lo, hi)


def _count(value: object) -> tuple[int, int]:
    def whole(v: object) -> int | None:
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    lo, hi = (whole(value), whole(value)) if whole(value) is not None else (
        (whole(value[0]), whole(value[1])) if isinstance(value, list) and len(value) == 2 else (None, None))
    if lo is None or hi is None or not 0 <= lo <= hi or hi < 1:
        raise ValueError("a whole number >= 1 or [lo, hi] with 0 <= lo <= hi and hi >= 1 (inclusive)")
    return (lo, hi)


Colours = Annotated[tuple[RGB, ...], BeforeValidator(_colours)]
Directions = Annotated[tuple[Vec3, ...], BeforeValidator(_directions)]
Intensity = Annotated[tuple[float, float], BeforeValidator(_intensity)]
Count = Annotated[tuple[int, int], BeforeValidator(_count)]


class DistractorsFile(_Strict):
    pool: list[str] = Field(min_length=1)
    count: Count = (1, 1)


_TEXTURED = ", ".join(t for t in TEXTURES if t != "none")


class SurfaceFile(_Strict):
    colour: Colours | None = None  # default: the scene's own booth colour
    texture: Texture = "none"
    colour2: Colours | None = None  # second texture colour; default: a darker shade of the drawn colour
    repeat: tuple[Size, Size] | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> SurfaceFile:
        if self.colour is None and self.texture == "none":
            raise ValueError(f"a colour and/or a texture ({_TEXTURED}): this block changes nothing")
        if self.texture == "none" and (self.colour2 is not None or self.repeat is not None):
            raise ValueError(f"colour2 and repeat only with a texture ({_TEXTURED})")
        return self


class LightingFile(_Strict):
    direction: Directions | None = None  # of the key light; default: the booth's
    colour: Colours | None = None  # default: white
    intensity: Intensity | None = None  # key light; default: the scene's booth light_intensity
    shadows: Flag = False  # does the key light cast shadows (costly on a CPU renderer)

    @model_validator(mode="after")
    def _changes_something(self) -> LightingFile:
        if self.direction is None and self.colour is None and self.intensity is None and not self.shadows:
            raise ValueError("at least one of direction, colour, intensity, shadows: true; this block changes nothing")
        return self


class SceneryFile(_Strict):
    split: Literal["train", "eval"] = "train"
    description: str = ""
    distractors: DistractorsFile | None = None
    table: SurfaceFile | None = None
    walls: SurfaceFile | None = None
    floor: SurfaceFile | None = None
    lighting: LightingFile | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> SceneryFile:
        if all(getattr(self, f) is None for f in ("distractors", "table", "walls", "floor", "lighting")):
            raise ValueError("at least one of distractors, table, walls, floor, lighting; this block changes nothing")
        return self


class SceneFile(_Strict):
    name: Name  # what tasks call it (`scene:`)
    description: str = ""
    booth: BoothFile = BoothFile()  # the table and the booth's look
    regions: dict[str, RegionFile] = {}  # named areas on the table objects are placed in
    objects: dict[str, ObjectFile] = {}  # by the name tasks and instructions use ({block})
    split: Literal["train", "eval"] = "train"  # eval: a held-out configuration (x2 eval)
    variants: dict[str, dict[str, Any]] = {}  # overlay blocks merged onto this scene by name
    scenery: dict[str, SceneryFile] = {}  # static-layer looks for replay augmentation (x2/envspec/scenery.py)
    # scenery looks (their table, walls, floor and lighting) every reset draws one of: appearance randomised
    # at collection time, recorded in the world it compiles
    appearance: list[str] = []
    # embodiment axes every reset draws: `camera` (the robot's declared camera_jitter) and `table_height` (the table's
    # height relative to the robot's mount, within the robot's declared table_height_jitter)
    embodiment: list[Literal["camera", "table_height"]] = []
    # roles every reset binds to objects, before it draws assets (an object may follow a role: a cue lamp of the
    # colour of the button the role drew)
    roles: dict[str, RoleFile] = {}


# ----- tasks ----------------------------------------------------------------------------------

PredicateBlock = dict[str, dict[str, Any]]  # {predicate_name: {arg: value}}, several keys = AND


class NodeFile(_Strict):
    description: str = ""  # the subtask in words (the LeRobot export's subtask text)
    success: PredicateBlock = Field(min_length=1)  # predicates (`x2 tasks predicates`) that all hold when it is done
    # holds when any of its predicates does; a list of blocks names one predicate several times (any of them)
    failure: PredicateBlock | list[PredicateBlock] = {}
    timeout_s: Number | None = Field(default=None, gt=0)  # s a synthesised attempt may spend on it
    score: Number = Field(default=1.0, gt=0)  # its weight in the episode's score
    skill: dict[str, Any] | None = None  # {name, arm, target, parameters}: how synthesis does it (`x2 tasks skills`)


# The capability dimensions a task exercises: the X2Real benchmark's ten (reasoning: generalization, visual and
# language understanding, memory; manipulation: precision, bimanual coordination, tool usage, dynamic and mobile
# operation) and the suite's categories beside them (long horizon, twisting, challenge).
Dimension = Literal["generalization", "visual_understanding", "language_understanding", "memory", "precision",
                    "bimanual_coordination", "tool_usage", "dynamic_operation", "mobile_operation", "long_horizon",
                    "twisting", "challenge"]
DIMENSIONS: tuple[str, ...] = get_args(Dimension)


class ParaphrasesFile(_Strict):
    train: list[str] = []  # drawn beside the instruction itself
    eval: list[str] = []  # held out: drawn only in a scene variant of split eval


class TaskFile(_Strict):
    name: Name  # what `--task` and datasets call it
    instruction: str  # recorded with every episode; {OBJECT} names a scene object (x2/envspec/instruction.py)
    paraphrases: ParaphrasesFile = ParaphrasesFile()
    scene: str  # the scene it runs in
    dimensions: list[Dimension] = []  # the capabilities it exercises (x2 tasks ls --dimension)
    robot: str | None = None  # the robot it is usually run with
    horizon_s: Number = Field(default=60.0, gt=0)  # s an episode may last
    nodes: dict[Name, NodeFile] = Field(min_length=1)  # its subtasks by id
    edges: list[tuple[str, str]] = []  # [before, after] pairs: the subtask DAG


def parse[M: _Strict](model: type[M], frag: Fragment) -> M:
    """Validate a fragment; the first problem becomes a one-line SpecError at its file:line."""
    try:
        return model.model_validate(frag.data)
    except ValidationError as exc:
        # An unknown field explains a "missing" one (a typo), so report it first.
        errors = sorted(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
        err = errors[0]
        loc = tuple(err["loc"])
        if loc[-1:] == ("[key]",):  # pydantic's marker for a dict key that failed (a node id)
            loc = loc[:-1]
        found = "nothing" if err["type"] == "missing" else repr(err.get("input"))
        if len(found) > 60:
            found = found[:57] + "..."
        allowed = _allowed(err)
        if err["type"] == "extra_forbidden":
            fields = sorted(_fields_at(model, loc[:-1]))
            found, allowed = f"unknown field {loc[-1]!r}", "one of " + ", ".join(fields)
        raise frag.error(loc, found, allowed) from None


def _allowed(err: ErrorDetails) -> str:
    ctx = err.get("ctx") or {}
    if "expected" in ctx:
        return str(ctx["expected"])
    if err["type"] == "missing":
        return "a value (this field is required)"
    if err["type"] == "string_pattern_mismatch":
        if ctx.get("pattern") == DISPLAY_PATTERN:
            return DISPLAY_ALLOWED
        return "a name of letters, digits, '_', '-' and '.'"
    if err["type"] == "model_type":  # pydantic: "a valid dictionary or instance of NodeFile"
        return "a mapping of fields"
    return err["msg"].removeprefix("Input should be ").removeprefix("Value error, ")


def _fields_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """Field names of the sub-model at `loc` (dict keys and list indices are stepped over)."""
    current: object = model
    skip = False
    for part in loc:
        if skip or isinstance(part, int):
            skip = False
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)) or part not in current.model_fields:
            return []
        annotation = current.model_fields[part].annotation
        args = getattr(annotation, "__args__", ())
        skip = getattr(annotation, "__origin__", None) is dict
        current = next((a for a in (annotation, *args) if isinstance(a, type) and issubclass(a, BaseModel)),
                       annotation)
    return list(current.model_fields) if isinstance(current, type) and issubclass(current, BaseModel) else []
