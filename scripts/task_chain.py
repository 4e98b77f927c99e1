"""A task DAG that is one chain of nodes, as the YAML lines of its `nodes:` and `edges:` (the task scripts here,
scripts/hanoi_task.py and scripts/stack_task.py, write theirs with it)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Node:
    id: str
    description: str
    success: list[str]  # predicates, each "name: {arg: value, ...}" (several: all must hold)
    failure: str | list[str] | None  # a predicate as in `success`, several (any of them fails it), or none
    timeout_s: int
    skill: str  # the binding as a flow mapping: "{name: pick, arm: right, target: cube2}"


def chain(nodes: list[Node]) -> list[str]:
    """`nodes:` and `edges:` lines, each node after the one before it."""
    out = ["nodes:"]
    for n in nodes:
        out += [f"  {n.id}:", f"    description: {n.description}"]
        if len(n.success) == 1:
            out.append(f"    success: {{{n.success[0]}}}")
        else:
            out += ["    success:", *(f"      {p}" for p in n.success)]
        if isinstance(n.failure, str):
            out.append(f"    failure: {{{n.failure}}}")
        elif n.failure:
            out += ["    failure:", *(f"      - {{{p}}}" for p in n.failure)]
        out += [f"    timeout_s: {n.timeout_s}", f"    skill: {n.skill}"]
    out.append("edges:")
    out += [f"  - [{a.id}, {b.id}]" for a, b in zip(nodes, nodes[1:], strict=False)]
    return out
