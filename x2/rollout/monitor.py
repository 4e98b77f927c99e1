"""The task's DAG runtime wired to the predicates: evaluates only active nodes, each tick.

Used online by the loop and offline by `x2 label`, so both produce labels from the same code.
"""

from __future__ import annotations

import json
import math

import numpy as np

from x2.labeling import DagRuntime, Event
from x2.spec.env import TaskSpec
from x2.tasks.predicates import PREDICATES, WorldView


class TaskMonitor:
    def __init__(self, task: TaskSpec, world: WorldView, fps: int):
        self.task, self.world, self.fps = task, world, fps
        # Bound once: the per-tick path is a dict hit and plain calls, no registry lookups.
        self._success_calls = {n.id: [(PREDICATES[c.name].fn, c.args) for c in n.success] for n in task.nodes}
        self._failure_calls = {n.id: [(PREDICATES[c.name].fn, c.args, c.describe()) for c in n.failure]
                               for n in task.nodes}
        timeouts = {n.id: max(1, math.ceil(n.timeout_s * fps)) if n.timeout_s else None for n in task.nodes}
        self.runtime = DagRuntime(task.node_ids, task.edges, {n.id: n.score for n in task.nodes}, timeouts)

    def reset(self) -> None:
        self.runtime.reset()

    def _success(self, node: str) -> bool:
        world = self.world
        return all(fn(world, **args) for fn, args in self._success_calls[node])

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
        """What the store keeps under /dag and in /labels."""
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
            "predicates": json.dumps({n.id: {"success": [c.describe() for c in n.success],
                                             "failure": [c.describe() for c in n.failure]} for n in self.task.nodes}),
        }

    def labels(self) -> dict[str, np.ndarray]:
        return self.runtime.label_arrays()
