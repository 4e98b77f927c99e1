"""The skill registry's types: a skill is a generator function plus the parameters it accepts (with their
types, defaults and meaning: `x2 tasks skills` prints them from here)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from x2.envspec.env import SkillBinding
from x2.synth.context import SynthContext
from x2.synth.segments import Segment

SkillFn = Callable[[SynthContext, SkillBinding, str], Iterator[Segment]]  # ctx, binding, resolved arm


@dataclass(frozen=True)
class SkillParam:
    """One optional parameter of a skill, as a task's `skill:` block may set it and `x2 tasks skills` lists it."""

    kind: type  # float (an int is taken too), bool, str or list
    doc: str  # what it means, one line
    default: float | bool | None = None  # the value a skill uses when the task leaves it out; None: `doc` says


@dataclass(frozen=True)
class SkillDef:
    name: str
    run: SkillFn
    params: dict[str, SkillParam]  # the optional parameters it accepts
    needs_target: bool = True
    both_arms: bool = False  # may be bound to arm: both
    arm_by_arm: bool = False  # bound to both, it is the same skill on each arm alone: the arms may move at once
    needs_base: bool = False  # drives a mobile base (and holds every arm meanwhile: bound to both)
    doc: str = ""
