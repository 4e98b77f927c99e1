"""Pydantic models of the YAML files as written by people (before names are resolved).

`extra="forbid"` everywhere: a misspelt field is an error that names the file and line, never
a silently ignored setting.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from x2.spec.source import Fragment

Vec2 = tuple[float, float]
Vec3 = tuple[float, float, float]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ----- robots ---------------------------------------------------------------------------------


class GripperFile(_Strict):
    kind: Literal["G", "H"]
    mjcf: str
    open: float = Field(gt=0, description="actuator ctrl when fully open (finger opening per side, m)")
    closed: float = Field(ge=0)


class ArmFile(_Strict):
    joints: list[str] = Field(min_length=1)
    home: list[float]
    actuators: list[str] | None = None  # default: same names as the joints


class ControlFile(_Strict):
    fps: int = Field(default=30, ge=1, le=1000)
    substeps: int = Field(default=16, ge=1, le=200)


class RobotFile(_Strict):
    name: str
    description: str = ""
    mjcf: str
    gripper: GripperFile
    arms: dict[Literal["left", "right"], ArmFile] = Field(min_length=1)
    cameras: list[str] = []
    base_pos: Vec3 = (0.0, 0.0, 0.0)
    reach: float = Field(default=0.75, gt=0, description="max distance shoulder -> tcp (m)")
    shoulders: dict[Literal["left", "right"], Vec3] = {}
    control: ControlFile = ControlFile()
    reference_task: str | None = None


# ----- assets ---------------------------------------------------------------------------------


class AssetFile(_Strict):
    name: str
    mjcf: str
    tags: list[str] = []
    footprint_radius: float = Field(gt=0)
    height: float = Field(default=0.0, ge=0)
    free: bool = True
    parts: dict[str, str] = {}
    joints: list[str] = []


# ----- scenes ---------------------------------------------------------------------------------


class BoothFile(_Strict):
    table_center: Vec2 | None = None
    table_half_size: Vec2 | None = None
    table_height: float | None = Field(default=None, gt=0.2, lt=1.5)
    wall_rgba: tuple[float, float, float, float] | None = None
    floor_rgba: tuple[float, float, float, float] | None = None
    table_rgba: tuple[float, float, float, float] | None = None
    light_intensity: float | None = Field(default=None, ge=0, le=2)


class RegionFile(_Strict):
    center: Vec2
    half_size: Vec2
    yaw: Vec2 = (-3.14159, 3.14159)


class ObjectFile(_Strict):
    asset: str | None = None
    pool: list[str] | None = None
    tags: list[str] = []
    region: str | None = None
    pose: tuple[float, float, float, float] | None = Field(default=None, description="x, y, z, yaw")


class SceneFile(_Strict):
    name: str
    description: str = ""
    booth: BoothFile = BoothFile()
    regions: dict[str, RegionFile] = {}
    objects: dict[str, ObjectFile] = {}
    split: Literal["train", "eval"] = "train"
    variants: dict[str, dict[str, Any]] = {}  # overlay blocks merged onto this scene by name


# ----- tasks ----------------------------------------------------------------------------------

PredicateBlock = dict[str, dict[str, Any]]  # {predicate_name: {arg: value}}, several keys = AND


class NodeFile(_Strict):
    description: str = ""
    success: PredicateBlock = Field(min_length=1)
    failure: PredicateBlock = {}
    timeout_s: float | None = Field(default=None, gt=0)
    score: float = Field(default=1.0, gt=0)
    skill: dict[str, Any] | None = None


class TaskFile(_Strict):
    name: str
    instruction: str
    scene: str
    robot: str | None = None  # the robot it is usually run with
    horizon_s: float = Field(default=60.0, gt=0)
    nodes: dict[str, NodeFile] = Field(min_length=1)
    edges: list[tuple[str, str]] = []


def parse(model: type[_Strict], frag: Fragment) -> Any:
    """Validate a fragment; the first problem becomes a one-line SpecError at its file:line."""
    try:
        return model.model_validate(frag.data)
    except ValidationError as exc:
        # An unknown field explains a "missing" one (a typo), so report it first.
        errors = sorted(exc.errors(include_url=False), key=lambda e: e["type"] != "extra_forbidden")
        err = errors[0]
        loc = tuple(err["loc"])
        found = "nothing" if err["type"] == "missing" else repr(err.get("input"))
        if len(found) > 60:
            found = found[:57] + "..."
        allowed = _allowed(err)
        if err["type"] == "extra_forbidden":
            fields = sorted(_fields_at(model, loc[:-1]))
            found, allowed = f"unknown field {loc[-1]!r}", "one of " + ", ".join(fields)
        raise frag.error(loc, found, allowed) from None


def _allowed(err: Any) -> str:
    ctx = err.get("ctx") or {}
    if "expected" in ctx:
        return str(ctx["expected"])
    if err["type"] == "missing":
        return "a value (this field is required)"
    return err["msg"].removeprefix("Input should be ").removeprefix("Value error, ")


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """Field names of the sub-model at `loc` (dict keys and list indices are stepped over)."""
    current: Any = model
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
