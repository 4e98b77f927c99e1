"""Roles: names a task uses for scene objects that each reset binds anew (the button the seventh cue asks for).

A scene declares `roles: {step_7: {one_of: [red, green, blue, yellow], unlike: step_6}}`. The task writes
`step_7/button` wherever it would write `red/button`; it compiles only if every object the role may bind has
that joint or part. Each reset draws one object per role (x2/sim/layout.py: draw_roles) and `bind_task` rewrites
the task's names to that object's, so the DAG monitor, the skills and the offline labeller only ever see a task
that names real objects. The episode records the binding (format.RESET_ROLES_ATTR), so its labels reproduce from
the file alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from x2.envspec.env import NodeSpec, PredicateCall, Role, SkillBinding, TaskSpec
from x2.envspec.schema import SceneFile
from x2.envspec.source import Fragment
from x2.tasks.predicates import PREDICATES

_NAMED_KINDS = ("object", "joint", "part")  # argument kinds that name an object (or something of one)


def compile_roles(frag: Fragment, spec: SceneFile, names: re.Pattern[str]) -> tuple[Role, ...]:
    """The scene's roles, checked: a role is a new name (`names` matches a valid one), binds one of at least two
    distinct objects of the scene, and is unlike only an earlier role."""
    roles: list[Role] = []
    for name, role in spec.roles.items():
        key = ("roles", name)
        if not names.fullmatch(name):
            raise frag.error(key, repr(name), "a role name of letters, digits, '_' and '-'")
        if name in spec.objects:
            raise frag.error(key, f"{name!r}, also an object", "a name no object of the scene has")
        for i, obj in enumerate(role.one_of):
            if obj not in spec.objects:
                raise frag.error((*key, "one_of", i), repr(obj), "an object of this scene: " + ", ".join(spec.objects))
        if len(set(role.one_of)) != len(role.one_of):
            raise frag.error((*key, "one_of"), f"{role.one_of} (an object twice)", "distinct objects")
        if role.unlike is not None and role.unlike not in [r.name for r in roles]:
            raise frag.error((*key, "unlike"), repr(role.unlike),
                             "a role listed before this one: " + (", ".join(r.name for r in roles) or "none"))
        roles.append(Role(name, tuple(role.one_of), role.unlike))
    return tuple(roles)


def bind_name(value: str, binding: Mapping[str, str]) -> str:
    """`value` (an object, or OBJECT/NAME) with a role in front replaced by the object it is bound to."""
    head, sep, rest = value.partition("/")
    return binding[head] + sep + rest if head in binding else value


def bind_task(task: TaskSpec, binding: Mapping[str, str]) -> TaskSpec:
    """`task` with every role it names (in predicate arguments naming objects, and skill targets) replaced by the
    object `binding` gives it; the task itself when nothing is bound."""
    if not binding:
        return task

    def calls(cs: tuple[PredicateCall, ...]) -> tuple[PredicateCall, ...]:
        out = []
        for c in cs:
            kinds = PREDICATES[c.name].params
            out.append(PredicateCall(c.name, {a: bind_name(v, binding) if kinds.get(a) in _NAMED_KINDS
                                              and isinstance(v, str) else v for a, v in c.args.items()}))
        return tuple(out)

    def skill(s: SkillBinding | None) -> SkillBinding | None:
        if s is None:
            return None
        return replace(s, target=None if s.target is None else bind_name(s.target, binding),
                       target_object=None if s.target_object is None else bind_name(s.target_object, binding))

    nodes: list[NodeSpec] = [replace(n, success=calls(n.success), failure=calls(n.failure), skill=skill(n.skill))
                             for n in task.nodes]
    return replace(task, nodes=tuple(nodes))
