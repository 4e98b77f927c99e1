"""Check a task's skill bindings against the registry before any worker starts, and build the
programs that run them: a node's skill followed by a check that its predicate really holds (synthesis is
verified by the same DAG that labels the data), and the sequential program, every node in topological
order (the concurrent one is x2/synth/scheduler.py)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator

import numpy as np

from x2.base.errors import SpecError
from x2.envspec.env import EnvSpec, NodeSpec
from x2.labeling import topological_order
from x2.synth.context import SynthContext
from x2.synth.segments import Segment, Wait
from x2.synth.skills import SKILLS

VERIFY_S = 1.5  # how long a node's predicate may take to hold after its skill ends (settling)


def check_bindings(env: EnvSpec, every_node: bool = True) -> None:
    """Every node has a known skill with valid parameters; raises the one-line SpecError otherwise. With
    `every_node` False a node may bind none (a task for teleoperation alone); the bindings there are still checked."""
    task = env.task
    if task is None:
        raise SpecError(None, None, "task", "none", "a task whose nodes bind skills")
    for node in task.nodes:
        binding = node.skill
        if binding is None and not every_node:
            continue
        if binding is None:
            first = task.nodes[0].skill
            where = first.origin if first else (env.sources[0] if env.sources else None, None)
            raise SpecError(where[0], None, f"nodes.{node.id}.skill", "no skill",
                            "a skill binding on every node to synthesise; skills: " + ", ".join(sorted(SKILLS)))
        file, line = binding.origin
        key = f"nodes.{node.id}.skill"
        if binding.name not in SKILLS:
            raise SpecError(file, line, f"{key}.name", repr(binding.name), "one of " + ", ".join(sorted(SKILLS)))
        sdef = SKILLS[binding.name]
        if sdef.needs_target and binding.target is None:
            raise SpecError(file, line, f"{key}.target", "nothing",
                            f"a target for {binding.name} (@tag or OBJECT/PART)")
        if binding.arm == "both" and not sdef.both_arms:
            raise SpecError(file, line, f"{key}.arm", "'both'", f"left, right or auto for {binding.name}")
        if sdef.needs_base and env.robot.base is None:
            raise SpecError(file, line, f"{key}.name", f"task {task.name} needs a mobile base ({binding.name}); "
                            f"robot {env.robot.name} has none", "a robot with a base: block")
        if sdef.needs_base and binding.arm != "both":
            raise SpecError(file, line, f"{key}.arm", repr(binding.arm),
                            f"both for {binding.name} (the arms hold still while the base drives)")
        for param, value in binding.params.items():
            known = sdef.params.get(param)
            if known is None:
                raise SpecError(file, line, f"{key}.{param}", f"unknown parameter {param!r}",
                                f"parameters of {binding.name}: " + (", ".join(sdef.params) or "none"))
            kind = known.kind
            ok = isinstance(value, kind) or (kind is float and isinstance(value, int)) and not isinstance(value, bool)
            if not ok or (kind is float and not math.isfinite(value)):  # type: ignore[arg-type]  # a number here
                raise SpecError(file, line, f"{key}.{param}", repr(value),
                                "a finite number" if kind is float else f"a {kind.__name__}")


def resolve_arm(ctx: SynthContext, node: NodeSpec) -> str:
    """The arm a node's skill runs on: its binding's (left, right or both), or for `auto` the arm nearest its target."""
    binding = node.skill
    assert binding is not None  # check_bindings ran
    if binding.arm != "auto":
        return binding.arm
    target = binding.target or binding.target_object
    if target is None:
        return ctx.env.robot.arms[0].name
    on_object = target in ctx.backend.object_names
    pos = ctx.backend.object_pos(target) if on_object else ctx.backend.site_box(target)[0]
    return ctx.arm_for(np.asarray(pos))


def node_program(ctx: SynthContext, node: NodeSpec, arm: str) -> Iterator[Segment]:
    """A node's skill, then a check that its success predicate really holds (it may take a moment to settle)."""
    binding = node.skill
    assert binding is not None  # check_bindings ran
    yield from SKILLS[binding.name].run(ctx, binding, arm)
    yield Wait(round(VERIFY_S * ctx.env.fps), until=functools.partial(ctx.node_done, node.id), required=True,
               name=f"{node.id}'s success predicate")


def task_program(ctx: SynthContext) -> Iterator[Segment]:
    """Sequential synthesis: every node in topological order, one at a time."""
    task = ctx.monitor.task  # (its roles bound to this reset's objects)
    nodes = {n.id: n for n in task.nodes}
    for nid in topological_order(task.node_ids, task.edges):
        if ctx.node_done(nid):
            continue
        arm = resolve_arm(ctx, nodes[nid])
        # the arms it really runs on (`auto` resolved now) and when it started, for the per-arm labels
        ctx.monitor.assign_arms(nid, ctx.monitor.arm_names if arm == "both" else (arm,), ctx.executor.frame)
        yield from node_program(ctx, nodes[nid], arm)
