"""Online DAG runtime: gated, latched subtask completion (report section 3.3.1, eqs. (1)-(4)).

Per frame only the active nodes (gate open, not yet done) are evaluated, in topological order, so
a completion opens its successors' gates within the same frame and they are evaluated right away.
"""

from __future__ import annotations

import heapq
import math
import numbers
import operator
import types
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from x2.labeling.dag import Dag, DagError
from x2.labeling.labels import label_arrays, segment_owners

Predicates = Mapping[str, bool] | Callable[[str], bool]
FailurePredicates = Mapping[str, str | None] | Callable[[str], str | None]
Event = tuple[str, int]
Failure = tuple[str, int, str]


_PLAIN_CALLABLES = (types.MethodType, types.FunctionType)  # (made once: a union in the call is built every call)


def _asker(values: Mapping[str, object] | Callable[[str], object] | None) -> Callable[[str], object]:
    # A Mapping is read with .get so a missing key reads as "does not hold" (False / no failure).
    if values is None:
        return lambda _name: None
    if isinstance(values, _PLAIN_CALLABLES):  # (the online monitor's, every frame: no ABC check)
        return values
    if isinstance(values, Mapping):
        return values.get
    if callable(values):
        return values
    raise TypeError(f"predicate values must be a Mapping or a callable; found {type(values).__name__}")


class DagRuntime:
    """Tracks subtask completion, failure and per-frame labels for one episode."""

    def __init__(self, nodes: Sequence[str], edges: Iterable[tuple[str, str]] = (),
                 scores: Mapping[str, float] | None = None,
                 timeouts: Mapping[str, int | None] | None = None) -> None:
        self._dag = Dag.build(nodes, edges)
        self._scores = self._read_scores(scores or {})
        self._total = math.fsum(self._scores)
        self._timeouts = self._read_timeouts(timeouts or {})
        self.reset()

    def _unknown(self, what: str, names: Iterable[str]) -> None:
        unknown = [n for n in names if n not in self._dag.index]
        if unknown:
            raise DagError(f"{what} name unknown node(s) {', '.join(map(repr, unknown))}; "
                           f"nodes: {', '.join(self._dag.nodes)}")

    def _read_scores(self, scores: Mapping[str, float]) -> tuple[float, ...]:
        self._unknown("scores", scores)
        out: list[float] = []
        for node in self._dag.nodes:
            s = scores.get(node, 1.0)
            if isinstance(s, bool) or not isinstance(s, numbers.Real) or not math.isfinite(s) or s < 0:
                raise DagError(f"score of {node!r} must be a finite number >= 0; found {s!r}")
            out.append(float(s))
        if math.fsum(out) <= 0:
            raise DagError("scores sum to 0; progress would be undefined")
        return tuple(out)

    def _read_timeouts(self, timeouts: Mapping[str, int | None]) -> tuple[int | None, ...]:
        self._unknown("timeouts", timeouts)
        out: list[int | None] = []
        for node in self._dag.nodes:
            n = timeouts.get(node)
            if n is not None and (isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1):
                raise DagError(f"timeout of {node!r} must be a whole number of frames >= 1; found {n!r}")
            out.append(None if n is None else int(n))
        return tuple(out)

    def reset(self, *, timeouts: bool = True) -> None:
        """Back to the state before the first step (no frames, no completions, no failure). `timeouts=False`: for
        this episode no node fails by its timeout (they limit a collector that runs nodes, not a person)."""
        dag = self._dag
        self._timeouts_on = timeouts
        self._limits = self._timeouts if timeouts else (None,) * len(dag.nodes)
        self._done = [False] * len(dag.nodes)
        self._done_frame: list[int | None] = [None] * len(dag.nodes)
        self._waiting = [len(p) for p in dag.preds]  # predecessors not yet done
        self._active: set[int] = {v for v in range(len(dag.nodes)) if not dag.preds[v]}
        self._opened: dict[int, int] = {}  # frame each active node's gate opened (for timeouts)
        self._events: list[Event] = []
        self._failure: Failure | None = None
        self._first_frame: int | None = None
        self._last_frame: int | None = None
        self._score_done = 0.0
        self._sinks_left = len(dag.sinks)
        self._active_log: list[tuple[int, ...]] = []
        self._progress_log: list[float] = []
        self._active_now, self._progress_now = tuple(sorted(self._active)), self.progress
        self._active_ranked = self._by_rank(self._active)

    def _check_frame(self, t: int) -> int:
        if isinstance(t, bool):
            raise DagError(f"frame must be an integer; found {t!r}")
        try:
            t = operator.index(t)
        except TypeError:
            raise DagError(f"frame must be an integer; found {t!r}") from None
        if self._last_frame is not None and t != self._last_frame + 1:
            raise DagError(f"frame {t} after frame {self._last_frame}; frames must be consecutive "
                           f"(expected {self._last_frame + 1})")
        return t

    def step(self, t: int, values: Predicates, failures: FailurePredicates | None = None) -> list[Event]:
        """Advance to frame `t`; return the nodes completed in it as (node, t), in topological order.

        `values` gives each node's success predicate c_v(s_t); `failures` gives a reason string
        when a node's failure predicate holds. Both are consulted only for active nodes.
        """
        t = self._check_frame(t)
        if self._first_frame is None:
            self._first_frame = t
            self._opened = dict.fromkeys(self._active, t)
        holds, failed = _asker(values), _asker(failures)
        dag = self._dag
        new: list[Event] = []
        # Active nodes in topological rank. Most frames complete nothing: those are swept in the order kept since
        # the last completion, and only a completion turns the rest of the frame into the heap below.
        queue: list[tuple[int, int]] = []
        for i, v in enumerate(self._active_ranked):
            if holds(dag.nodes[v]):
                new.append((dag.nodes[v], t))
                queue = [(dag.rank[u], u) for u in self._active_ranked[i + 1:]]
                queue += [(dag.rank[w], w) for w in self._complete(v, t)]
                heapq.heapify(queue)
                break
            if self._failure is None:
                self._check_failure(v, t, failed)
        # A heap by topological rank: successors opened mid-frame rank after the node that opened
        # them, so popping in rank order is a topological sweep over active nodes only.
        while queue:
            _, v = heapq.heappop(queue)
            if holds(dag.nodes[v]):
                new.append((dag.nodes[v], t))
                for w in self._complete(v, t):
                    heapq.heappush(queue, (dag.rank[w], w))
            elif self._failure is None:
                self._check_failure(v, t, failed)
        self._last_frame = t
        if new:  # (the active set and the progress change only with completions: most frames repeat the last)
            self._events += new
            self._active_now = tuple(sorted(self._active))
            self._active_ranked = self._by_rank(self._active)
            self._progress_now = self.progress
        self._active_log.append(self._active_now)
        self._progress_log.append(self._progress_now)
        return new

    def _by_rank(self, nodes: Iterable[int]) -> tuple[int, ...]:
        return tuple(sorted(nodes, key=self._dag.rank.__getitem__))

    def _complete(self, v: int, t: int) -> list[int]:
        """Latch v done at t; return the successors whose gates this opened."""
        self._done[v] = True
        self._done_frame[v] = t
        self._active.discard(v)
        self._opened.pop(v, None)
        self._score_done += self._scores[v]
        if not self._dag.succs[v]:
            self._sinks_left -= 1
        opened: list[int] = []
        for w in self._dag.succs[v]:
            self._waiting[w] -= 1
            if self._waiting[w] == 0:
                self._active.add(w)
                self._opened[w] = t
                opened.append(w)
        return opened

    def _check_failure(self, v: int, t: int, failed: Callable[[str], object]) -> None:
        name = self._dag.nodes[v]
        reason = failed(name)
        if reason is not None and reason is not False:
            self._failure = (name, t, str(reason))
            return
        limit = self._limits[v]
        # The node has been evaluated on frames opened..t; timeout N allows exactly N of them.
        if limit is not None and t - self._opened[v] + 1 > limit:
            self._failure = (name, t, f"timeout after {limit} frames")

    @property
    def timeouts_apply(self) -> bool:
        """Whether this episode's nodes fail by their timeouts (`reset(timeouts=...)`)."""
        return self._timeouts_on

    @property
    def nodes(self) -> tuple[str, ...]:
        return self._dag.nodes

    @property
    def topo_order(self) -> tuple[str, ...]:
        return self._dag.topo_order

    @property
    def events(self) -> list[Event]:
        return list(self._events)

    @property
    def event_count(self) -> int:
        """How many completions so far (they latch: a new count is a new completion; no list copied)."""
        return len(self._events)

    @property
    def completion_frames(self) -> dict[str, int | None]:
        return dict(zip(self._dag.nodes, self._done_frame, strict=True))

    def completed(self, node: str) -> bool:
        """Has `node` completed? (The per-tick question of a scheduler: no dict built.)"""
        return self._done[self._dag.index[node]]

    @property
    def active_nodes(self) -> set[str]:
        return {self._dag.nodes[v] for v in self._active}

    @property
    def failure(self) -> Failure | None:
        return self._failure

    @property
    def success(self) -> bool:
        return self._failure is None and self._sinks_left == 0

    @property
    def progress(self) -> float:
        # Every node lies on a path to a sink, so all sinks done means all nodes done; say exactly 1.0
        # then, since a running float sum can miss the fsum total by an ulp either way.
        if self._sinks_left == 0:
            return 1.0
        return min(1.0, self._score_done / self._total)

    @property
    def first_frame(self) -> int | None:
        """The frame of the first step (None before it)."""
        return self._first_frame

    @property
    def n_frames(self) -> int:
        return len(self._progress_log)

    def labels(self) -> list[str]:
        """Per-frame owner node id, or "done" / "unfinished" after the last completion."""
        if self._first_frame is None:
            return []
        return segment_owners(self._events, self._first_frame, self.n_frames, self.success)

    def label_arrays(self) -> dict[str, npt.NDArray[np.generic]]:
        """subtask_index (T,) int16, active_mask (T, N) bool, progress (T,) float32 over frames seen."""
        return label_arrays(self._dag.nodes, self.labels(), self._active_log, self._progress_log)
