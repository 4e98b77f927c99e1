"""A YAML syntax error in a spec names the line a person must fix and says in words what is wrong there and
what YAML wants (x2/envspec/yaml_errors.py), not only the parser's own phrase."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import x2
from x2.base.errors import SpecError
from x2.cli.app import _mount, app
from x2.envspec.source import read_yaml

_mount()
runner = CliRunner()

# (the text, the line to fix, what is found there, what is allowed)
CASES = [
    ("name: x\nnodes: [a, b\n", 2, "a [ opened on this line and not closed (the parser met the end of the file at "
                                   "line 3)", "a closing ], with a comma between items: [a, b]"),
    ("name: x\nskill: {name: pick, arm: right\nedges: []\n", 2, "a { opened on this line and not closed",
     "a closing }"),
    ('name: x\ninstruction: "Put the {block}\nscene: y\n', 2, "a quote opened on this line and never closed",
     "a closing quote"),
    ("name: x\ninstruction: Put it: here\n", 2, "a ': ' inside a value without quotes",
     "quotes around a value that holds ': '"),
    ("name: x\ninstruction\nscene: y\n", 2, "a line that is not `key: value`", "`key: value`, with a space"),
    ("name: x\nnodes:\n  pick:\n    success: 1\n   place: 2\n", 5,
     "a line indented differently from the keys before it", "the keys of one mapping at the same indentation"),
    ("name: x\nnodes:\n\tpick: 1\n", 3, "a tab indenting this line", "spaces for indentation"),
    ("name: x\n- a\n", 2, "a '- ' list item among a mapping's keys", "a list under its key"),
    ("name: x\ninstruction: {block} on plate\n", 2, "more text after a value's closing quote or bracket",
     "quotes around the whole value"),
    ("name: x\ntarget: @block\n", 2, "'@' starting a value (YAML reserves it)", 'quotes around the value ("@...")'),
    ("name: x\na: *foo\n", 2, "*foo, an alias with no &foo anchor before it", "an &anchor defined above"),
    ("name: x\n---\nname: y\n", 2, "a second document (---)", "one YAML document per spec file"),
    ('name: "a\\qb"\n', 1, "the escape \\q in double quotes", "a known escape"),
]


@pytest.mark.parametrize("text, line, found, allowed", CASES)
def test_the_line_to_fix_in_words(text: str, line: int, found: str, allowed: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.yaml").write_text(text)
    with pytest.raises(SpecError) as caught:
        read_yaml(tmp_path / "t.yaml")
    error = caught.value
    assert (error.file, error.line, error.field) == ("t.yaml", line, "<yaml>"), str(error)
    assert error.found.startswith(found) and error.allowed.startswith(allowed), str(error)
    assert "valid YAML" not in str(error)


def test_a_user_task_with_a_yaml_mistake_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The instruction of a copied task left unquoted, with a ': ' in it: `x2 tasks show` says which line."""
    task = (Path(x2.__file__).parent / "tasks" / "pick_place.yaml").read_text()
    tasks = tmp_path / "specs" / "tasks"
    tasks.mkdir(parents=True)
    (tasks / "mine.yaml").write_text(task.replace('instruction: "Put the {block} on the {plate}."',
                                                  "instruction: Note: put the block on the plate."))
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["tasks", "show", "mine"])
    assert result.exit_code == 2, result.output
    assert result.output == ("error: specs/tasks/mine.yaml:3: <yaml>: found a ': ' inside a value without quotes; "
                             "allowed: quotes around a value that holds ': ' (\"Put it: here\"), a space after every "
                             "key's ':' (also on the line above), and the keys of one mapping indented alike\n")
