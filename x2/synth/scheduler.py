"""The arm scheduler: concurrent synthesis, one lane per DAG node.

At every decision point (the first tick, a node's completion, a lane's end) every node whose predecessors are
done starts, in a seeded order, as soon as the arms its skill occupies are free: `arm: left` or `right`
one arm, `arm: both` every arm, `arm: auto` the arm standing nearest its target. A node needing both arms
waits for both; when its skill is the same on each arm alone (`retract`), each arm runs it in a lane of
its own, at once. A node whose predicate already holds (a side effect of another) is not run. The seeded
order (the attempt's "schedule" stream, drawn only when more than one node is ready) decides which node
gets a contested arm first and which lane plans first; each start (its frame and the arms the node runs
on) goes to the task monitor, which stores it with the episode's DAG.

A node whose plan fails while the other arm is busy (it rests where this one must go) runs its skill
again once the other lane has ended; an idle arm in the way is first sent home (`make_way`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator

import numpy as np

from x2.envspec.env import NodeSpec
from x2.labeling import topological_order
from x2.synth.binding import node_program, resolve_arm
from x2.synth.context import SynthContext
from x2.synth.executor import Lane, SkillExecutor
from x2.synth.segments import Segment
from x2.synth.skills import SKILLS


class ArmScheduler:
    def __init__(self, ctx: SynthContext):
        task = ctx.env.task
        assert task is not None  # check_bindings requires one
        self.ctx = ctx
        self.order = topological_order(task.node_ids, task.edges)
        self.preds: dict[str, list[str]] = {n: [a for a, b in task.edges if b == n] for n in task.node_ids}
        self.all_arms = tuple(a.name for a in ctx.env.robot.arms)
        self.started: set[str] = set()
        self._last: tuple[int, frozenset[str]] | None = None  # (completions, free arms) at the last decision

    def reset(self) -> None:
        self.started.clear()
        self._last = None

    def _state(self, free_arms: set[str]) -> tuple[int, frozenset[str]]:
        # completions latch, so their number says which have happened since the last decision
        return self.ctx.monitor.runtime.event_count, frozenset(free_arms)

    def _ready(self) -> list[str]:
        return [n for n in self.order if n not in self.started and all(self.ctx.node_done(p) for p in self.preds[n])]

    def start(self, executor: SkillExecutor, free_arms: set[str], frame: int) -> list[Lane]:
        ctx = self.ctx
        lanes: list[Lane] = []
        state = self._state(free_arms)
        if state == self._last:
            return lanes  # nothing completed and no arm freed since the last decision
        self._last = state
        # the nodes as the monitor runs them: their roles bound to this reset's objects (x2/envspec/roles.py)
        nodes: dict[str, NodeSpec] = {n.id: n for n in ctx.monitor.task.nodes}
        ready = self._ready()
        while done_already := [n for n in ready if ctx.node_done(n)]:  # their successors may be ready now
            self.started.update(done_already)
            ready = self._ready()
        if len(ready) > 1:
            ready = [ready[i] for i in ctx.rng["schedule"].permutation(len(ready))]
        for nid in ready:
            node = nodes[nid]
            arm = resolve_arm(ctx, node)
            arms = set(self.all_arms) if arm == "both" else {arm}
            if not arms <= free_arms:
                continue
            free_arms -= arms
            self.started.add(nid)
            ordered = tuple(a for a in self.all_arms if a in arms)
            ctx.monitor.assign_arms(nid, ordered, frame)
            binding = node.skill
            assert binding is not None  # check_bindings ran
            split = arm == "both" and SKILLS[binding.name].arm_by_arm
            for key, lane_arm in ([(f"{nid}/{a}", a) for a in ordered] if split else [(nid, arm)]):
                lanes.append(Lane(key, {lane_arm} if split else arms, node_program(ctx, node, lane_arm),
                                  started=frame, restart=functools.partial(self._again, node, lane_arm)))
        return lanes

    def _again(self, node: NodeSpec, arm: str) -> Iterator[Segment]:
        if not self.ctx.node_done(node.id):  # (the other arm may have done it meanwhile)
            yield from node_program(self.ctx, node, arm)

    def make_way(self, executor: SkillExecutor, arm: str) -> Lane | None:
        home = np.array(self.ctx.env.robot.arm(arm).home)
        if np.max(np.abs(executor.arm_target(arm) - home)) <= 1e-6:
            return None
        return Lane(f"{arm} arm out of the way", {arm}, self.ctx.move_to(arm, home))
