"""`x2 tasks new NAME --from TASK`: ./specs/tasks/NAME.yaml, a copy of TASK renamed under a header saying what to
edit; `x2 tasks show NAME` then shows it from that folder. A taken name is refused in one line, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import x2
from x2.cli.app import _mount, app

_mount()
runner = CliRunner()
SOURCE = Path(x2.__file__).parent / "tasks" / "pick_place.yaml"


def test_new_task_from_a_built_in_then_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    made = runner.invoke(app, ["tasks", "new", "my_task", "--from", "pick_place"])
    assert made.exit_code == 0, made.output
    assert made.output.strip() == "wrote specs/tasks/my_task.yaml, a copy of the task pick_place: edit it, then " \
                                  "`x2 tasks show my_task`"
    text = (tmp_path / "specs" / "tasks" / "my_task.yaml").read_text()
    header = text[:text.index("# Single-arm")]
    assert header.startswith("# my_task: your own task, started from the task pick_place")
    assert all(line.startswith("#") for line in header.splitlines()) and "x2 tasks predicates" in header
    copied, original = yaml.safe_load(text), yaml.safe_load(SOURCE.read_text())
    assert copied == {**original, "name": "my_task"}
    shown = runner.invoke(app, ["tasks", "show", "my_task"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert shown.output.startswith("my_task: Put the {block} on the {plate}.")


def test_new_task_with_another_robot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    made = runner.invoke(app, ["tasks", "new", "my_task", "--robot", "franka-panda+G", "--scene", "tabletop_booth"])
    assert made.exit_code == 0, made.output
    copied = yaml.safe_load((tmp_path / "specs" / "tasks" / "my_task.yaml").read_text())
    assert copied == {**yaml.safe_load(SOURCE.read_text()), "name": "my_task", "robot": "franka-panda+G"}


@pytest.mark.parametrize("args, found", [
    (["my_task"], "x2 tasks new my_task: NAME: found 'my_task', a task already (specs/tasks/my_task.yaml)"),
    (["pick_place"], "x2 tasks new pick_place: NAME: found 'pick_place', a task already"),
    (["bad name"], "x2 tasks new bad name: NAME: found 'bad name'; allowed: a name of letters"),
    (["t.yaml"], "x2 tasks new t.yaml: NAME: found 't.yaml'; allowed: a name of letters"),
    (["other", "--from", "no_such_task"], "unknown task 'no_such_task'; available: "),
    (["other", "--scene", "no_such_scene"], "unknown scene 'no_such_scene'; available: "),
    (["other", "--robot", "no_such_robot+G"], "unknown robot 'no_such_robot'; available: "),
])
def test_refused_in_one_line_nothing_written(args: list[str], found: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "specs" / "tasks" / "my_task.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("# mine, edited\n" + SOURCE.read_text().replace("name: pick_place", "name: my_task"))
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    result = runner.invoke(app, ["tasks", "new", *args])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert result.output.startswith(f"error: {found}"), result.output
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
