"""`x2 tasks predicates` and `x2 tasks skills` print every registered predicate and skill with all its arguments,
read from the registries themselves (x2/tasks/predicates.py, x2/synth/skills/__init__.py)."""

from __future__ import annotations

import inspect
import json

from typer.testing import CliRunner

from x2.cli.app import _mount, app
from x2.synth.skills import SKILLS
from x2.tasks.predicates import PREDICATES

_mount()
runner = CliRunner()


def test_every_predicate_with_its_arguments() -> None:
    result = runner.invoke(app, ["tasks", "predicates", "--json"])
    assert result.exit_code == 0, result.output
    listed = {row["name"]: row for row in json.loads(result.output)}
    assert list(listed) == list(PREDICATES)
    for name, d in PREDICATES.items():
        args = {a["name"]: (a["type"], a["default"]) for a in listed[name]["args"]}
        assert args == {a: (kind, d.defaults.get(a)) for a, kind in d.params.items()}, name
        assert listed[name]["doc"] and listed[name]["doc"] == d.doc


def test_every_skill_with_its_parameters() -> None:
    result = runner.invoke(app, ["tasks", "skills", "--json"])
    assert result.exit_code == 0, result.output
    listed = {row["name"]: row for row in json.loads(result.output)}
    assert list(listed) == list(SKILLS)
    for name, d in SKILLS.items():
        args = {a["name"]: (a["type"], a["default"]) for a in listed[name]["args"]}
        assert args.pop("arm")[1] in ("auto", "both")
        assert ("target" in args) == d.needs_target
        args.pop("target", None)
        assert args == {a: (p.kind.__name__, p.default) for a, p in d.params.items()}, name
        assert all(a["doc"] for a in listed[name]["args"]) and listed[name]["doc"]


def test_the_tables_name_every_entry() -> None:
    for command, names in (("predicates", PREDICATES), ("skills", SKILLS)):
        result = runner.invoke(app, ["tasks", command], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        for name in names:
            assert f" {name} " in result.output, (command, name)


def test_registries_document_every_argument() -> None:
    """What the listings print comes from here: a new predicate or skill parameter without a meaning fails."""
    for d in PREDICATES.values():
        assert d.doc and set(d.params) == set(inspect.signature(d.fn).parameters) - {"world"}, d.name
    for s in SKILLS.values():
        assert s.doc and all(p.doc and p.kind in (float, bool, str, list) for p in s.params.values()), s.name
