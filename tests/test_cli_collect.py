"""`x2 collect waypoints` and `x2 label` end to end through the CLI, and their input errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from x2.cli.app import _mount, app
from x2.datasets import Dataset

_mount()
runner = CliRunner()


@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_collect_then_label_and_inspect(workspace: Path) -> None:
    result = runner.invoke(app, ["collect", "waypoints", "--task", "pick_place", "--robot", "artixon-h", "-n", "2"])
    assert result.exit_code == 0, result.output
    # artixon-h is not the task's own robot (artixon-g): its default folder says so
    assert result.output.splitlines()[0].startswith("dataset: data/pick_place-artixon-h ")
    ds = Dataset.open(workspace / "data" / "pick_place-artixon-h")
    records = ds.episodes()
    assert [r.index for r in records] == [0, 1] and len({r.seed for r in records}) == 2
    assert json.loads((workspace / ".x2" / "state.json").read_text())["last_dataset"].endswith("pick_place-artixon-h")
    # no dataset argument: the last one is used and named first
    for args in (["label", "1"], ["datasets", "info"], ["datasets", "validate"]):
        out = runner.invoke(app, args)
        assert out.exit_code == 0, (args, out.output)
        assert "data/pick_place-artixon-h" in out.output.splitlines()[0]
    assert "labels identical" in runner.invoke(app, ["label", "0"]).output
    # appending continues the seed sequence: no seed repeats
    assert runner.invoke(app, ["collect", "waypoints", "--task", "pick_place", "--robot", "artixon-h"]).exit_code == 0
    seeds = [r.seed for r in Dataset.open(workspace / "data" / "pick_place-artixon-h").episodes()]
    assert len(seeds) == 4 and len(set(seeds)) == 4


def test_collect_refuses_a_dataset_of_another_robot(workspace: Path) -> None:
    assert runner.invoke(app, ["collect", "waypoints", "--task", "pick_place", "-n", "1"]).exit_code == 0
    before = sorted(p.name for p in (workspace / "data" / "pick_place" / "episodes").iterdir())
    result = runner.invoke(app, ["collect", "waypoints", "--task", "pick_place", "--robot", "artixon-h", "-n", "1",
                                 "--dataset", "pick_place"])
    out = result.output.strip()
    assert result.exit_code == 2 and len(out.splitlines()) == 1 and "Traceback" not in out, out
    assert "robot" in out and "artixon-g" in out
    assert out.endswith("/pick_place-artixon-h)"), out  # the folder its own default is
    assert sorted(p.name for p in (workspace / "data" / "pick_place" / "episodes").iterdir()) == before


@pytest.mark.parametrize("args", [
    ["collect", "waypoints", "--task", "no_such_task"],
    ["collect", "waypoints", "--task", "pick_place", "--robot", "r2d2"],
    ["collect", "waypoints", "--task", "pick_place", "--variant", "moon"],
    ["label", "3"],
])
def test_bad_input_writes_nothing(workspace: Path, args: list[str]) -> None:
    result = runner.invoke(app, args)
    out = result.output.strip()
    assert result.exit_code == 2 and len(out.splitlines()) == 1 and "Traceback" not in out, out
    assert not list(workspace.iterdir())


def test_help_shows_examples() -> None:
    for args in (["--help"], ["collect", "--help"], ["collect", "waypoints", "--help"], ["tasks", "--help"],
                 ["label", "--help"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0 and ("Example" in result.output or "x2 " in result.output), args
