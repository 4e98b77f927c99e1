"""Task graph structure: validation, cycle finding and a deterministic topological order.

Kept apart from the runtime so the spec compiler can validate a task graph (and report a cycle
with file:line) without building a runtime.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from x2.base.errors import X2Error

# Reserved because `DagRuntime.labels()` uses them for frames after the last completion; a node with
# one of these ids would make the string labels ambiguous.
RESERVED_IDS = ("done", "unfinished")
# `subtask_index` is int16 with len(nodes) meaning "done", so the node count must leave room for it.
MAX_NODES = 32766


class DagError(X2Error):
    """A task graph is invalid, or the runtime was driven wrongly (e.g. skipped frames)."""


def _listing(nodes: Sequence[str]) -> str:
    return ", ".join(nodes) if nodes else "(none)"


def _adjacency(nodes: Sequence[str],
               edges: Iterable[tuple[str, str]]) -> tuple[dict[str, int], list[list[int]]]:
    """Validate ids and edge endpoints; return the id index and successor lists (declared order)."""
    index: dict[str, int] = {}
    for i, node in enumerate(nodes):
        if not isinstance(node, str) or not node:
            raise DagError(f"node ids must be non-empty strings; found {node!r}")
        if node in index:
            raise DagError(f"duplicate node id {node!r}; nodes: {_listing(nodes)}")
        index[node] = i
    succs: list[list[int]] = [[] for _ in nodes]
    for edge in edges:
        if len(edge) != 2:
            raise DagError(f"an edge is a (from, to) pair; found {edge!r}")
        for end in edge:
            if end not in index:
                raise DagError(f"edge {edge[0]!r} -> {edge[1]!r} refers to unknown node {end!r}; "
                               f"nodes: {_listing(nodes)}")
        src, dst = index[edge[0]], index[edge[1]]
        # A repeated edge adds no constraint; keeping it would double-count the predecessor.
        if dst not in succs[src]:
            succs[src].append(dst)
    return index, succs


def _cycle(nodes: Sequence[str], succs: list[list[int]]) -> list[str] | None:
    # Iterative DFS (no recursion limit on long chains), roots and successors in declared order so
    # the reported cycle is the same on every run.
    white, grey, black = 0, 1, 2
    colour = [white] * len(nodes)
    for root in range(len(nodes)):
        if colour[root] != white:
            continue
        path: list[int] = [root]
        cursor: list[int] = [0]
        colour[root] = grey
        while path:
            v = path[-1]
            if cursor[-1] < len(succs[v]):
                w = succs[v][cursor[-1]]
                cursor[-1] += 1
                if colour[w] == grey:
                    return [nodes[i] for i in path[path.index(w):]]
                if colour[w] == white:
                    colour[w] = grey
                    path.append(w)
                    cursor.append(0)
            else:
                colour[v] = black
                path.pop()
                cursor.pop()
    return None


def find_cycle(nodes: Sequence[str], edges: Iterable[tuple[str, str]]) -> list[str] | None:
    """The nodes of one cycle in edge order (``[a, b, c]`` means a -> b -> c -> a), or None.

    Raises DagError for duplicate ids or edges naming unknown nodes.
    """
    _, succs = _adjacency(nodes, edges)
    return _cycle(nodes, succs)


def _cycle_error(cycle: list[str]) -> DagError:
    return DagError(f"task graph has a cycle: {' -> '.join([*cycle, cycle[0]])}")


def _kahn(nodes: Sequence[str], succs: list[list[int]]) -> list[int]:
    # Ties go to the earliest declared node, so the order (and event order within a frame) is
    # a function of the spec alone.
    indegree = [0] * len(nodes)
    for out in succs:
        for w in out:
            indegree[w] += 1
    ready = [i for i, d in enumerate(indegree) if d == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        v = heapq.heappop(ready)
        order.append(v)
        for w in succs[v]:
            indegree[w] -= 1
            if indegree[w] == 0:
                heapq.heappush(ready, w)
    if len(order) != len(nodes):
        cycle = _cycle(nodes, succs)
        assert cycle is not None  # Kahn stalls only on a cycle
        raise _cycle_error(cycle)
    return order


def topological_order(nodes: Sequence[str], edges: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """Kahn's order, ties broken by declared order. Raises DagError naming a cycle if there is one."""
    _, succs = _adjacency(nodes, edges)
    return tuple(nodes[i] for i in _kahn(nodes, succs))


@dataclass(frozen=True)
class Dag:
    """A validated task graph in index form (indices are positions in the declared `nodes`)."""

    nodes: tuple[str, ...]
    index: dict[str, int]
    preds: tuple[tuple[int, ...], ...]
    succs: tuple[tuple[int, ...], ...]
    order: tuple[int, ...]  # topological order
    rank: tuple[int, ...]  # rank[i] = position of node i in `order`
    sinks: tuple[int, ...]

    @classmethod
    def build(cls, nodes: Sequence[str], edges: Iterable[tuple[str, str]]) -> Dag:
        nodes = tuple(nodes)
        if not nodes:
            raise DagError("task graph has no nodes")
        if len(nodes) > MAX_NODES:
            raise DagError(f"task graph has {len(nodes)} nodes; at most {MAX_NODES} are supported")
        index, succs = _adjacency(nodes, edges)
        for reserved in RESERVED_IDS:
            if reserved in index:
                raise DagError(f"node id {reserved!r} is reserved for labels; "
                               f"reserved: {', '.join(RESERVED_IDS)}")
        order = _kahn(nodes, succs)
        rank = [0] * len(nodes)
        for pos, v in enumerate(order):
            rank[v] = pos
        preds: list[list[int]] = [[] for _ in nodes]
        for v, out in enumerate(succs):
            for w in out:
                preds[w].append(v)
        return cls(
            nodes=nodes,
            index=index,
            preds=tuple(tuple(p) for p in preds),
            succs=tuple(tuple(s) for s in succs),
            order=tuple(order),
            rank=tuple(rank),
            sinks=tuple(v for v in range(len(nodes)) if not succs[v]),
        )

    @property
    def topo_order(self) -> tuple[str, ...]:
        return tuple(self.nodes[i] for i in self.order)
