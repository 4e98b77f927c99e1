"""The task's DAG runtime wired to the predicates: evaluates only active nodes, each tick.

Used online by the loop and offline by `x2 label`, so both produce labels from the same code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.envspec.env import TaskSpec
from x2.envspec.roles import bind_task
from x2.labeling import DagRuntime, Event, arm_label_arrays, arm_segment_owners
from x2.tasks.predicates import PREDICATES, WorldView

# How much a predicate costs to ask, roughly (a joint value, a lookup in the state's contacts, then geometry).
_COST = {"joint_above": 0, "joint_below": 0, "button_pressed": 0, "gripper_released": 1, "gripper_holding": 1}
_COSTLY = 2


class TaskMonitor:
    """`arms` names the robot's arms in robot order (none: no per-arm attribution and no per-arm labels).

    Every node starts attributed to every arm: a collector that cannot know which hand did a node (a person
    teleoperating may open the door with either) claims nothing, and each arm's column is then subtask_index.
    Synthesis, which does know, assigns each node the arms it runs on (`assign_arms`) as it starts."""

    def __init__(self, task: TaskSpec, world: WorldView, fps: int, arms: Sequence[str] = ()):
        self.world, self.fps = world, fps
        self.declared = task  # as compiled: its roles (x2/envspec/roles.py) unbound; `task` is the one running
        self._bind(task)
        self.arm_names = tuple(arms)
        self._default_arms = {n.id: self.arm_names for n in task.nodes}
        self.node_arms: dict[str, tuple[str, ...]] = dict(self._default_arms)
        self.node_starts: dict[str, int] = {}  # node -> the frame a collector that runs nodes started it
        timeouts = {n.id: max(1, math.ceil(n.timeout_s * fps)) if n.timeout_s else None for n in task.nodes}
        self.runtime = DagRuntime(task.node_ids, task.edges, {n.id: n.score for n in task.nodes}, timeouts)

    def _bind(self, task: TaskSpec) -> None:
        self.task = task
        # Bound per task: the per-tick path is a dict hit and plain calls, no registry lookups. A node's success is the
        # AND of pure predicates, so they are asked cheapest first: a fruit still held fails gripper_released
        # before object_inside does its geometry (failure predicates keep their order: the first names the reason).
        self._success_calls = {n.id: [(PREDICATES[c.name].fn, c.args) for c in
                                      sorted(n.success, key=lambda c: _COST.get(c.name, _COSTLY))]
                               for n in task.nodes}
        self._failure_calls = {n.id: [(PREDICATES[c.name].fn, c.args, c.describe()) for c in n.failure]
                               for n in task.nodes}

    def reset(self, roles: Mapping[str, str] | None = None, *, timeouts: bool = True) -> None:
        """A new episode, in a world whose reset bound the scene's `roles` to these objects. `timeouts=False`: the
        nodes' `timeout_s` (limits of synthesis) fail nothing in it; its record says so (`dag_record`)."""
        if roles or self.task is not self.declared:
            self._bind(bind_task(self.declared, roles or {}))
        self.runtime.reset(timeouts=timeouts)
        self.node_arms = dict(self._default_arms)
        self.node_starts = {}

    def assign_arms(self, node: str, arms: Sequence[str], frame: int | None = None) -> None:
        """Attribute `node` to the arms it really runs on (synthesis resolves `auto` when the node starts), and
        record the `frame` it started in: an arm's label segment runs from its previous event, idle or not."""
        if node not in self.node_arms:
            raise ValueError(f"assign_arms: node {node!r} unknown; nodes: {', '.join(self.node_arms)}")
        unknown = [a for a in arms if a not in self.arm_names]
        if unknown:
            raise ValueError(f"assign_arms: {node}: arm(s) {', '.join(map(repr, unknown))} unknown; "
                             f"arms: {', '.join(self.arm_names) or 'none'}")
        self.node_arms[node] = tuple(a for a in self.arm_names if a in arms)  # robot order, once each
        if frame is not None:
            self.node_starts[node] = int(frame)

    def _success(self, node: str) -> bool:
        world = self.world
        for fn, args in self._success_calls[node]:  # noqa: SIM110 - a generator in all() costs more than most predicates
            if not fn(world, **args):
                return False
        return True

    def _failure(self, node: str) -> str | None:
        world = self.world
        for fn, args, reason in self._failure_calls[node]:
            if fn(world, **args):
                return reason
        return None

    def step(self, t: int) -> list[Event]:
        return self.runtime.step(t, self._success, self._failure)

    @property
    def done(self) -> bool:
        return self.runtime.success or self.runtime.failure is not None

    def dag_record(self) -> dict[str, object]:
        """What the store keeps under /dag and in /labels (`arms`: the arms each node ran on, see assign_arms)."""
        rt = self.runtime
        nodes = list(self.task.node_ids)
        completion = np.array([-1 if rt.completion_frames[n] is None else rt.completion_frames[n] for n in nodes],
                              dtype=np.int32)
        return {
            "nodes": nodes,
            "edges": [list(e) for e in self.task.edges],
            "scores": {n.id: n.score for n in self.task.nodes},
            "completion_frame": completion,
            "events": [[n, int(f)] for n, f in rt.events],
            "failure": None if rt.failure is None else [rt.failure[0], int(rt.failure[1]), rt.failure[2]],
            "arms": {n: list(self.node_arms[n]) for n in nodes},
            **({"starts": {n: self.node_starts[n] for n in nodes if n in self.node_starts}}
               if self.node_starts else {}),  # (only from a collector that starts nodes: synthesis)
            **({} if rt.timeouts_apply else {"timeouts": False}),  # (only where they were off: teleoperation)
            fmt.ARM_NAMES_ATTR: list(self.arm_names),  # (for /labels: the arm of each arm_subtask_index column)
            "predicates": json.dumps({n.id: {"success": [c.describe() for c in n.success],
                                             "failure": [c.describe() for c in n.failure]} for n in self.task.nodes}),
        }

    def labels(self) -> dict[str, npt.NDArray[np.generic]]:
        """The runtime's label arrays, and with arms arm_subtask_index (T, A) from the arms each node ran on."""
        out = self.runtime.label_arrays()
        rt = self.runtime
        if self.arm_names and rt.first_frame is not None:
            nodes = rt.nodes
            owners = arm_segment_owners(rt.events, nodes, self.node_arms, self.arm_names, rt.first_frame,
                                        rt.n_frames, None if rt.failure is None else rt.failure[0])
            out.update(arm_label_arrays(nodes, owners, rt.n_frames))
        return out
