"""Check a task's skill bindings against the registry before any worker starts, and build the
program that runs them: nodes in topological order, each skill followed by a check that its node's
predicate really holds (synthesis is verified by the same DAG that labels the data)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator

import numpy as np

from x2.errors import SpecError
from x2.labeling import topological_order
from x2.spec.env import EnvSpec, NodeSpec
from x2.synth.context import SynthContext
from x2.synth.segments import Segment, Wait
from x2.synth.skills import SKILLS

VERIFY_S = 1.5  # how long a node's predicate may take to hold after its skill ends (settling)


def check_bindings(env: EnvSpec) -> None:
    """Every node has a known skill with valid parameters; raises the one-line SpecError otherwise."""
    task = env.task
    if task is None:
        raise SpecError(None, None, "task", "none", "a task whose nodes bind skills")
    for node in task.nodes:
        binding = node.skill
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
        for param, value in binding.params.items():
            kind = sdef.params.get(param)
            if kind is None:
                raise SpecError(file, line, f"{key}.{param}", f"unknown parameter {param!r}",
                                f"parameters of {binding.name}: " + (", ".join(sdef.params) or "none"))
            ok = isinstance(value, kind) or (kind is float and isinstance(value, int)) and not isinstance(value, bool)
            if not ok or (kind is float and not math.isfinite(value)):  # type: ignore[arg-type]  # a number here
                raise SpecError(file, line, f"{key}.{param}", repr(value),
                                "a finite number" if kind is float else f"a {kind.__name__}")


def _resolve_arm(ctx: SynthContext, node: NodeSpec) -> str:
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


def task_program(ctx: SynthContext) -> Iterator[Segment]:
    task = ctx.env.task
    assert task is not None
    nodes = {n.id: n for n in task.nodes}
    verify_ticks = round(VERIFY_S * ctx.env.fps)
    for nid in topological_order(task.node_ids, task.edges):
        node = nodes[nid]
        if ctx.node_done(nid):
            continue
        binding = node.skill
        assert binding is not None
        yield from SKILLS[binding.name].run(ctx, binding, _resolve_arm(ctx, node))
        yield Wait(verify_ticks, until=functools.partial(ctx.node_done, nid), required=True,
                   name=f"{nid}'s success predicate")
