"""A compiled environment as plain JSON data, and back: what a dataset's manifest and every episode
file keep of the specs, so that nothing recorded depends on the spec files of the day.

`env_record(env)` describes everything the specs decided: the task (nodes, edges, scores, predicates with
their resolved arguments, failures, timeouts, the instruction template, skill bindings), the scene (booth,
objects with their asset pools, regions and poses, variant, split), the robot (arms, joints, home pose,
gripper, cameras) with a digest of each MJCF file it was built from, the control rate and the action
layout. `env_from_record` rebuilds an `EnvSpec` from it without reading a file; its MJCF paths are only
names (a world rebuilt from a recording is compiled from the recorded XML, never from these files).

The record holds no file system paths and no line numbers, so it is the same on every machine and in
every working directory: equal records mean the same world definition.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from x2.base.errors import DatasetError
from x2.envspec.action import DEFINITION
from x2.envspec.env import (
    DRIVES,
    ArmPart,
    ArmSpec,
    AssetSpec,
    BoothSpec,
    CameraJitter,
    EnvSpec,
    GripperPart,
    GripperSpec,
    LightingLook,
    MobileBaseSpec,
    NodeSpec,
    ObjectInstance,
    PredicateCall,
    Region,
    RobotSpec,
    Role,
    Scenery,
    SkillBinding,
    SurfaceLook,
    TaskSpec,
    TwinCalibration,
)
from x2.envspec.record_types import check_types
from x2.tasks.predicates import PREDICATES

RECORD_VERSION = 1
_NO_ORIGIN = ("<recorded>", 0)


def _file(path: Path) -> dict[str, str]:
    """A spec file by name and content: moving a checkout changes neither, editing the file does."""
    try:
        st = Path(path).stat()
    except OSError:
        # an env rebuilt from a record has names, not files: keep that env's stored record
        return {"name": Path(path).name, "sha256": ""}
    return {"name": Path(path).name, "sha256": _digest(str(path), st.st_mtime_ns, st.st_size)}


@functools.lru_cache(maxsize=256)
def _digest(path: str, mtime_ns: int, size: int) -> str:
    """Every episode records its world: a file is read again only when it changed."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def _tuple(value: Any) -> Any:
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value


# ----- to JSON ---------------------------------------------------------------------------------------
def task_record(task: TaskSpec) -> dict[str, object]:
    def calls(cs: tuple[PredicateCall, ...]) -> list[dict[str, object]]:
        return [{"name": c.name, "args": dict(c.args)} for c in cs]

    def skill(b: SkillBinding | None) -> dict[str, object] | None:
        if b is None:
            return None
        return {"name": b.name, "arm": b.arm, "target": b.target, "target_object": b.target_object,
                "params": dict(b.params)}

    record: dict[str, object] = {
        "name": task.name, "instruction": task.instruction, "horizon_s": task.horizon_s,
        "nodes": [{"id": n.id, "success": calls(n.success), "failure": calls(n.failure), "timeout_s": n.timeout_s,
                   "score": n.score, "description": n.description, "skill": skill(n.skill)} for n in task.nodes],
        "edges": [list(e) for e in task.edges],
        "dimensions": list(task.dimensions),
    }
    if task.paraphrases or task.eval_paraphrases:  # (absent when there are none: older records stay as they were)
        record["paraphrases"] = {"train": list(task.paraphrases), "eval": list(task.eval_paraphrases)}
    return record


def _asset(a: AssetSpec) -> dict[str, object]:
    record: dict[str, object] = {"name": a.name, "mjcf": _file(a.mjcf), "tags": list(a.tags),
                                 "footprint_radius": a.footprint_radius, "height": a.height, "free": a.free,
                                 "parts": dict(a.parts), "joints": list(a.joints)}
    if a.display:  # (absent without one: the records of assets without a display name stay as they were)
        record["display"] = a.display
    return record


def _part(part: ArmPart | GripperPart | None) -> dict[str, object] | None:
    """A vendor part by provenance: its name, package and file (the world itself is in the recorded XML)."""
    if part is None:
        return None
    src = part.source
    return {"name": part.name, "package": src.package, "version": src.version, "file": _file(src.file)}


def robot_record(robot: RobotSpec) -> dict[str, object]:
    g = robot.gripper
    gripper: dict[str, object] = {"kind": g.kind, "mjcf": _file(g.mjcf), "open_ctrl": g.open_ctrl,
                                  "closed_ctrl": g.closed_ctrl}
    if g.drive != "slide":  # (a slide gripper's record stays as it was)
        gripper["drive"] = g.drive
    if g.part is not None:
        gripper["part"] = _part(g.part)
    arms = []
    for a in robot.arms:
        arm = {f.name: _plain(getattr(a, f.name)) for f in fields(ArmSpec) if f.name != "part"}
        if a.part is not None:
            arm["part"] = _part(a.part)
        arms.append(arm)
    record: dict[str, object] = {
        "name": robot.name, "mjcf": _file(robot.mjcf), "base_pos": list(robot.base_pos),
        "cameras": list(robot.cameras), "gripper": gripper, "arms": arms,
    }
    if robot.base is not None:  # (absent for a fixed robot: its records stay as they were)
        record["base"] = {f.name: _plain(getattr(robot.base, f.name)) for f in fields(MobileBaseSpec)}
    if robot.calibration is not None:  # (likewise: the twin calibration by name and digest, its values are the XML's)
        record["calibration"] = {"name": robot.calibration.name, "digest": robot.calibration.digest,
                                 "latency_ticks": robot.calibration.latency_ticks}
    return record


def _plain(value: object) -> object:
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def env_record(env: EnvSpec) -> dict[str, object]:
    """The JSON description of `env` as compiled from spec files (see the module docstring)."""
    objects = []
    for o in env.objects:
        objects.append({
            "name": o.name, "candidates": [_asset(a) for a in o.candidates], "tags": list(o.tags),
            # (slots and a support only where given: the records of other regions stay as they were)
            "region": None if o.region is None else {f.name: _plain(getattr(o.region, f.name)) for f in fields(Region)
                                                     if getattr(o.region, f.name) or f.name not in ("slots", "on")},
            "pose": None if o.pose is None else list(o.pose),
            # (a draw group or a followed object only where given: other records stay as they were)
            **({"group": o.group} if o.group else {}), **({"follows": o.follows} if o.follows else {}),
        })
    scene: dict[str, object] = {"name": env.scene_name, "variant": env.variant, "split": env.split,
                                "booth": {f.name: _plain(getattr(env.booth, f.name)) for f in fields(BoothSpec)},
                                "objects": objects}
    if env.roles:  # (only where declared: other records stay as they were)
        scene["roles"] = [{"name": r.name, "one_of": list(r.one_of), "unlike": r.unlike} for r in env.roles]
    if env.appearance:  # (only when drawn per reset: other records stay as they were)
        scene["appearance"] = [_look_record(v) for v in env.appearance]
    robot = robot_record(env.robot)
    if env.embodiment:  # (likewise)
        scene["embodiment"] = list(env.embodiment)
        robot["camera_jitter"] = [{f.name: getattr(j, f.name) for f in fields(CameraJitter)}
                                  for j in env.robot.camera_jitter]
        if "table_height" in env.embodiment:  # (only where drawn: the records of camera-only scenes stay as they were)
            robot["table_height_jitter"] = env.robot.table_height_jitter
    return {
        "version": RECORD_VERSION,
        "robot": robot,
        "scene": scene,
        "task": None if env.task is None else task_record(env.task),
        "control": {"fps": env.fps, "substeps": env.substeps, "timestep": env.booth.timestep},
        "action": {"names": list(env.robot.action_names), "definition": DEFINITION},
    }


def _look_record(v: Scenery) -> dict[str, object]:
    """A look drawn per reset (its distractors are replay augmentation's, never drawn at a reset)."""
    return {"name": v.name, "split": v.split, "description": v.description,
            **{part: None if (look := getattr(v, part)) is None else
               {f.name: _plain(getattr(look, f.name)) for f in fields(look)}
               for part in ("table", "walls", "floor", "lighting")}}


def _look(r: Mapping[str, Any]) -> Scenery:
    def surface(s: Mapping[str, Any] | None) -> SurfaceLook | None:
        return None if s is None else SurfaceLook(_tuple(s["colours"]), str(s["texture"]), _tuple(s["colours2"]),
                                                  _tuple(s["repeat"]))

    light = r["lighting"]
    return Scenery(
        name=r["name"], split=r["split"], description=r["description"], distractors=None,
        table=surface(r["table"]), walls=surface(r["walls"]), floor=surface(r["floor"]),
        lighting=None if light is None else LightingLook(_tuple(light["directions"]), _tuple(light["colours"]),
                                                         _tuple(light["intensity"]), bool(light["shadows"])))


# ----- from JSON -------------------------------------------------------------------------------------
# (Read duck-typed, hence Any: a missing key or a wrong kind raises below, and check_types then checks every
# field of the rebuilt spec against its declared type.)
def env_from_record(record: Mapping[str, Any], where: str = "world") -> EnvSpec:
    """The `EnvSpec` an `env_record` describes. Malformed records raise the one-line DatasetError."""
    try:
        if record.get("version") != RECORD_VERSION:
            raise DatasetError(f"{where}: version: found {record.get('version')!r}; allowed: {RECORD_VERSION}")
        r, sc, ctl = record["robot"], record["scene"], record["control"]
        g = r["gripper"]
        if g.get("drive", "slide") not in DRIVES:
            raise DatasetError(f"{where}: robot.gripper.drive: found {g['drive']!r}; allowed: {', '.join(DRIVES)}")
        robot = RobotSpec(
            name=r["name"], mjcf=Path(r["mjcf"]["name"]),
            gripper=GripperSpec(g["kind"], Path(g["mjcf"]["name"]), float(g["open_ctrl"]), float(g["closed_ctrl"]),
                                drive=g.get("drive", "slide")),
            # (a part is provenance only: the recorded XML is the world)
            arms=tuple(ArmSpec(**{k: _tuple(v) for k, v in a.items() if k != "part"}) for a in r["arms"]),
            cameras=tuple(r["cameras"]), base_pos=tuple(r["base_pos"]),
            base=MobileBaseSpec(**{k: _tuple(v) for k, v in r["base"].items()}) if "base" in r else None,
            camera_jitter=tuple(CameraJitter(**j) for j in r.get("camera_jitter", [])),
            table_height_jitter=float(r.get("table_height_jitter", 0.0)),
            calibration=None if "calibration" not in r else TwinCalibration(
                str(r["calibration"]["name"]), str(r["calibration"]["digest"]),
                int(r["calibration"]["latency_ticks"])))
        booth = BoothSpec(**{k: _tuple(v) for k, v in sc["booth"].items()})
        objects = tuple(_object(o) for o in sc["objects"])
        task = None if record["task"] is None else _task(record["task"], where)
        env = EnvSpec(robot=robot, booth=booth, objects=objects, task=task, fps=int(ctl["fps"]),
                      substeps=int(ctl["substeps"]), scene_name=sc["name"], variant=sc["variant"], split=sc["split"],
                      appearance=tuple(_look(v) for v in sc.get("appearance", [])),
                      embodiment=tuple(sc.get("embodiment", [])),
                      roles=tuple(Role(r["name"], tuple(r["one_of"]), r["unlike"]) for r in sc.get("roles", [])))
        check_types(env, where)  # a name that is null or a list must never reach MuJoCo's name lookup
        return env
    except DatasetError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise DatasetError(f"{where}: found a malformed world record ({type(exc).__name__}: {exc}); allowed: "
                           "the JSON x2 writes (robot, scene, task, control, action)") from None


def _object(o: Mapping[str, Any]) -> ObjectInstance:
    candidates = tuple(AssetSpec(name=a["name"], mjcf=Path(a["mjcf"]["name"]), tags=tuple(a["tags"]),
                                  footprint_radius=float(a["footprint_radius"]), height=float(a["height"]),
                                  free=bool(a["free"]), parts=dict(a["parts"]), joints=tuple(a["joints"]),
                                  display=a.get("display", ""))
                       for a in o["candidates"])
    region = None if o["region"] is None else Region(**{k: _tuple(v) for k, v in o["region"].items()})
    return ObjectInstance(o["name"], candidates, tuple(o["tags"]), region,
                          None if o["pose"] is None else tuple(o["pose"]), o.get("group"), o.get("follows"))


def _task(t: Mapping[str, Any], where: str) -> TaskSpec:
    def calls(cs: list[dict[str, Any]]) -> tuple[PredicateCall, ...]:
        out = []
        for c in cs:
            name, args = c["name"], dict(c["args"])
            # Names resolve only in x2's own registry, and only to the arguments it declares.
            if name not in PREDICATES or not set(args) <= set(PREDICATES[name].params):
                allowed = sorted(PREDICATES) if name not in PREDICATES else list(PREDICATES[name].params)
                raise DatasetError(f"{where}: task predicate: found {name}({', '.join(args)}); allowed: {allowed}")
            for arg, value in args.items():  # names are text, "float" arguments numbers
                number = PREDICATES[name].params[arg] == "float"
                if isinstance(value, bool) or not isinstance(value, int | float if number else str):
                    raise DatasetError(f"{where}: task predicate {name}: {arg}: found {value!r:.40}; allowed: "
                                       + ("a number" if number else "a name"))
            out.append(PredicateCall(name, args))
        return tuple(out)

    def skill(b: Mapping[str, Any] | None) -> SkillBinding | None:
        if b is None:
            return None
        return SkillBinding(b["name"], b["arm"], b["target"], b["target_object"], dict(b["params"]), _NO_ORIGIN)

    nodes = tuple(NodeSpec(id=n["id"], success=calls(n["success"]), failure=calls(n["failure"]),
                           timeout_s=n["timeout_s"], score=float(n["score"]), description=n["description"],
                           skill=skill(n["skill"])) for n in t["nodes"])
    return TaskSpec(t["name"], t["instruction"], float(t["horizon_s"]), nodes,
                     tuple((str(a), str(b)) for a, b in t["edges"]),
                     tuple(str(d) for d in t.get("dimensions", [])),  # (absent from records of an older x2)
                     tuple(str(p) for p in t.get("paraphrases", {}).get("train", [])),
                     tuple(str(p) for p in t.get("paraphrases", {}).get("eval", [])))
