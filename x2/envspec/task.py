"""Task YAML -> TaskSpec, and the whole EnvSpec (task + scene + robot), cross-checked.

Every name in a task is resolved here, before any simulator starts: objects by instance name or
`@tag`, joints and parts as `object/name`, predicates in `x2.tasks.predicates.PREDICATES`.
"""

from __future__ import annotations

import builtins
import math
import reprlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from x2.base.errors import NotFoundError, X2Error
from x2.envspec import catalog
from x2.envspec.env import EnvSpec, NodeSpec, ObjectInstance, PredicateCall, SkillBinding, TaskSpec
from x2.envspec.instruction import check_template
from x2.envspec.robot import RobotInfo, load_robot
from x2.envspec.scene import SceneInfo, load_scene
from x2.envspec.schema import TaskFile, parse
from x2.envspec.source import Fragment, Path_
from x2.labeling import find_cycle
from x2.tasks.predicates import PREDICATES

_KIND_HELP = {
    "object": "an object name or @tag",
    "joint": "OBJECT/JOINT or a robot joint name",
    "part": "OBJECT/PART",
    "arm": "left, right or both",
    "float": "a number",
}


class _Resolver:
    def __init__(self, frag: Fragment, scene: SceneInfo, robot: RobotInfo):
        self.frag, self.scene, self.robot = frag, scene, robot
        self.objects = {o.name: o for o in scene.objects}
        # a role stands for any of its objects: it resolves as one object whose assets are all of theirs
        for role in scene.roles:
            assets = {a.name: a for name in role.one_of for a in self.objects[name].candidates}
            self.objects[role.name] = ObjectInstance(role.name, tuple(assets.values()), ())

    def object(self, key: Path_, ref: object) -> ObjectInstance:
        if not isinstance(ref, str):
            raise self.frag.error(key, repr(ref), _KIND_HELP["object"])
        if ref.startswith("@"):
            tag = ref[1:]
            hits = [o for o in self.scene.objects if tag in o.tags]
            if len(hits) != 1:
                tags = sorted({t for o in self.scene.objects for t in o.tags})
                found = f"{ref} matching {'nothing' if not hits else ', '.join(o.name for o in hits)}"
                raise self.frag.error(key, found, "a tag naming exactly one object; tags: " + ", ".join(tags))
            return hits[0]
        if ref not in self.objects:
            raise self.frag.error(key, repr(ref), "one of " + ", ".join(self.objects) + " or an @tag")
        return self.objects[ref]

    # (`builtins.object`: below the method `object`, a bare `object` names the method.)
    def arg(self, key: Path_, kind: str, value: builtins.object) -> builtins.object:
        if kind == "float":
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise self.frag.error(key, repr(value), _KIND_HELP[kind])
            if not math.isfinite(value):  # .nan compares false with everything: a predicate that never holds
                raise self.frag.error(key, repr(value), "a finite number")
            return float(value)
        if kind == "object":
            return self.object(key, value).name
        if kind == "arm":
            arms = [a.name for a in self.robot.model.arms]
            allowed = [*arms, "both"] if len(arms) > 1 else arms
            if value not in allowed:
                raise self.frag.error(key, repr(value), f"one of {', '.join(allowed)} for {self.robot.model.name}")
            return value
        if not isinstance(value, str):
            raise self.frag.error(key, repr(value), _KIND_HELP[kind])
        if kind == "joint" and "/" not in value:
            joints = [j for a in self.robot.model.arms for j in (*a.joints, *a.gripper_joints)]
            if value not in joints:
                raise self.frag.error(key, repr(value), _KIND_HELP[kind])
            return value
        obj_ref, _, name = value.partition("/")
        obj = self.object(key, obj_ref)
        for asset in obj.candidates:
            names = asset.joints if kind == "joint" else tuple(asset.parts)
            if name not in names:
                raise self.frag.error(key, f"{value!r} ({asset.name} has no {kind} {name!r})",
                                      f"{kind}s of {asset.name}: " + (", ".join(names) or "none"))
        if kind == "part":
            sites = {a.parts[name] for a in obj.candidates}
            if len(sites) > 1:  # (a role's objects may differ)
                raise self.frag.error(key, f"{value!r}, a different site in each of {obj.name}'s assets",
                                      f"a part every asset of {obj.name} names alike")
            return f"{obj.name}/{obj.candidates[0].parts[name]}"
        return f"{obj.name}/{name}"

    def calls(self, key: Path_, block: dict[str, dict[str, builtins.object]]) -> tuple[PredicateCall, ...]:
        out = []
        for name, args in block.items():
            here = (*key, name)
            if name not in PREDICATES:
                raise self.frag.error(here, f"unknown predicate {name!r}", "one of " + ", ".join(sorted(PREDICATES)))
            pdef = PREDICATES[name]
            if not isinstance(args, dict):
                raise self.frag.error(here, repr(args), "a mapping of arguments: " + ", ".join(pdef.params))
            for arg in args:
                if arg not in pdef.params:
                    raise self.frag.error((*here, arg), f"unknown argument {arg!r} of {name}",
                                          ", ".join(pdef.params))
            missing = [p for p in pdef.params if p not in args and p not in pdef.defaults]
            if missing:
                raise self.frag.error(here, f"no {missing[0]!r}", f"{name}({', '.join(pdef.params)}) with "
                                      f"{missing[0]} as {_KIND_HELP[pdef.params[missing[0]]]}")
            resolved = {a: self.arg((*here, a), pdef.params[a], v) for a, v in args.items()}
            out.append(PredicateCall(name, resolved))
        return tuple(out)


def _failure_calls(resolver: _Resolver, key: Path_,
                   block: dict[str, dict[str, builtins.object]] | list[dict[str, dict[str, builtins.object]]],
                   ) -> tuple[PredicateCall, ...]:
    """A failure block's calls (any one holding fails the node); a list of blocks, its blocks' calls in order."""
    if isinstance(block, dict):
        return resolver.calls(key, block)
    return tuple(c for i, b in enumerate(block) for c in resolver.calls((*key, i), b))


def _skill(resolver: _Resolver, key: Path_, block: dict[str, object] | None) -> SkillBinding | None:
    if block is None:
        return None
    frag = resolver.frag
    name = block.get("name")
    if not isinstance(name, str):
        raise frag.error((*key, "name"), repr(name), "a skill name, e.g. pick, place, open, close, retract")
    arms = [a.name for a in resolver.robot.model.arms]
    arm = block.get("arm", "auto")
    allowed_arms = [*arms, "auto", *(["both"] if len(arms) > 1 else [])]
    if arm not in allowed_arms:
        raise frag.error((*key, "arm"), repr(arm), f"one of {', '.join(allowed_arms)} for {resolver.robot.model.name}")
    target = block.get("target")
    target_name = target_object = None
    if target is not None:
        if not isinstance(target, str):
            raise frag.error((*key, "target"), repr(target), "an object name, @tag or OBJECT/PART")
        if "/" in target:
            target_name = str(resolver.arg((*key, "target"), "part", target))
            target_object = target_name.split("/", 1)[0]
        else:
            target_name = target_object = resolver.object((*key, "target"), target).name
    params = {k: v for k, v in block.items() if k not in ("name", "arm", "target")}
    origin = frag.origin(key)
    return SkillBinding(name, str(arm), target_name, target_object, params, (origin.file, origin.line))


def _check_instructions(frag: Fragment, spec: TaskFile, objects: tuple[ObjectInstance, ...]) -> None:
    """Every template is checked; a paraphrase both trained on and held out is refused at both lines."""
    check_template(frag, ("instruction",), spec.instruction, objects)
    train: dict[str, Path_] = {spec.instruction: ("instruction",)}
    for split in ("train", "eval"):
        for i, text in enumerate(getattr(spec.paraphrases, split)):
            check_template(frag, ("paraphrases", split, i), text, objects)
            if split == "train":
                train.setdefault(text, ("paraphrases", split, i))
            elif text in train:
                there = frag.origin(train[text])
                raise frag.error(("paraphrases", split, i), f"{text!r}, also a train template at "
                                 f"{there.file}:{there.line}", "held-out paraphrases that are never trained on")


_NUMBERS = {1: "one", 2: "two"}


def _check_arm_count(frag: Fragment, spec: TaskFile, robot: RobotInfo) -> None:
    """A task whose skills name more arms than the robot has is refused in one line, before any arm name."""
    have = [a.name for a in robot.model.arms]
    named: dict[str, tuple[str | int, ...]] = {}
    for node_id, node in spec.nodes.items():
        block = node.skill if isinstance(node.skill, dict) else {}
        arm = block.get("arm", "auto")
        for name in (("left", "right") if arm == "both" else (arm,)):
            if isinstance(name, str) and name != "auto":
                named.setdefault(name, ("nodes", node_id, "skill", "arm"))
    if len(named) > len(have):
        need = _NUMBERS.get(len(named), str(len(named)))
        has = _NUMBERS.get(len(have), str(len(have)))
        key = next(k for a, k in named.items() if a not in have)
        raise frag.error(key, f"task {spec.name} needs {need} arms; robot {robot.model.name} has {has}",
                         f"a robot with {need} arms")


def compile_task(frag: Fragment, scene: SceneInfo, robot: RobotInfo) -> TaskSpec:
    spec: TaskFile = parse(TaskFile, frag)
    node_ids = list(spec.nodes)
    for i, (a, b) in enumerate(spec.edges):
        for end, name in ((0, a), (1, b)):
            if name not in spec.nodes:
                raise frag.error(("edges", i, end), f"edge to missing node {name!r}", "one of " + ", ".join(node_ids))
    cycle = find_cycle(node_ids, [(a, b) for a, b in spec.edges])
    if cycle:
        raise frag.error(("edges",), "a cycle " + " -> ".join([*cycle, cycle[0]]), "edges that form a DAG")
    _check_instructions(frag, spec, scene.objects)
    _check_arm_count(frag, spec, robot)
    resolver = _Resolver(frag, scene, robot)
    nodes = tuple(
        NodeSpec(id=nid, success=resolver.calls(("nodes", nid, "success"), node.success),
                 failure=_failure_calls(resolver, ("nodes", nid, "failure"), node.failure), timeout_s=node.timeout_s,
                 score=node.score, description=node.description,
                 skill=_skill(resolver, ("nodes", nid, "skill"), node.skill))
        for nid, node in spec.nodes.items()
    )
    return TaskSpec(spec.name, spec.instruction, spec.horizon_s, nodes, tuple((a, b) for a, b in spec.edges),
                    tuple(spec.dimensions), tuple(spec.paraphrases.train), tuple(spec.paraphrases.eval))


def load_env(task: str | None, robot: str | None = None, variant: str = "default",
             scene: str | None = None, gripper: str | None = None) -> EnvSpec:
    """Compile a task (with its scene and robot) or, without a task, a bare scene for a robot; `gripper` puts
    that gripper (robots/grippers/<name>.yaml) on the robot instead of its own."""
    task_frag: Fragment | None = None
    task_path: Path | None = None
    if task is not None:
        task_path, task_frag = catalog.load("tasks", task)
    named_in_task = task_frag.data if task_frag is not None else {}
    named: dict[str, str] = {}
    for key in ("robot", "scene"):  # read before the task is validated: they say which files to load
        value = named_in_task.get(key)
        if task_frag is not None and value is not None and not isinstance(value, str):
            raise task_frag.error((key,), reprlib.repr(value), f"a {key} name or the path of its YAML file")
        if isinstance(value, str):
            named[key] = value
    robot = robot or named.get("robot")
    scene = scene or named.get("scene") or "green_booth"
    if robot is None:
        robots = ", ".join(catalog.names("robots"))
        if task_frag is not None:
            raise task_frag.error(("robot",), "no robot (and none given with --robot)", f"one of {robots}")
        raise NotFoundError(f"no robot given; robots: {robots}")
    with _reported_at(task_frag, ("robot",), named_in_task.get("robot") == robot):
        robot_info = load_robot(str(robot), gripper)
    with _reported_at(task_frag, ("scene",), named_in_task.get("scene") == scene):
        scene_info = load_scene(str(scene), robot_info, variant)
    task_model = compile_task(task_frag, scene_info, robot_info) if task_frag is not None else None
    sources = tuple(str(p) for p in (task_path, scene_info.file, robot_info.file) if p is not None)
    reference = named.get("robot")
    return EnvSpec(robot=robot_info.model, booth=scene_info.booth, objects=scene_info.objects, task=task_model,
                   fps=robot_info.fps, substeps=robot_info.substeps, scene_name=scene_info.name,
                   variant=variant, split=scene_info.split, sources=sources, appearance=scene_info.appearance,
                   embodiment=scene_info.embodiment, roles=scene_info.roles,
                   reference_robot=None if reference is None else _robot_name(reference),
                   task_file=None if task_path is None else task_path.stem)


def robot_with_calibration(robot: str | None, task: str | None, calibration: str | None) -> str | None:
    """The robot a collector runs, with `--calibration NAME` made part of its name (ROBOT@NAME: the robot given,
    else the task's); without one, `robot` as given."""
    if calibration is None:
        return robot
    base = robot or (task_robot(task) if task is not None else None)
    if base is None:
        raise NotFoundError(f"--calibration {calibration}: found no robot to calibrate; allowed: a --robot, or a "
                            "task that names its robot")
    return f"{base}@{calibration}"


def task_robot(task: str) -> str | None:
    """The robot a task file names (`robot:`, a name or a path), without compiling anything; None when it names
    none, or when the task cannot be read (compiling it says why)."""
    try:
        _, frag = catalog.load("tasks", task)
    except X2Error:
        return None
    robot = frag.data.get("robot")
    return robot if isinstance(robot, str) else None


def _robot_name(robot: str) -> str:
    """The name of the robot a task file names (`robot:` is a name or a path): its file's `name:` (as written, when
    the file cannot be read: nothing runs it then)."""
    try:
        _, frag = catalog.load("robots", robot)
    except X2Error:
        return robot
    name = frag.data.get("name")
    return name if isinstance(name, str) else robot


@contextmanager
def _reported_at(frag: Fragment | None, key: Path_, written_in_task: bool) -> Iterator[None]:
    """A bad robot or scene name written in the task file is reported at its line there."""
    try:
        yield
    except NotFoundError as exc:
        if frag is None or not written_in_task:
            raise
        found, _, allowed = str(exc).partition("; ")
        raise frag.error(key, found, allowed or "an existing spec") from None
