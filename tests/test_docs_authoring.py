"""docs/authoring.md stays true: its schema section is what x2/envspec/schema_doc.py generates from the models
now, and its tutorial runs as written in an empty folder (the files it shows written, each `$ x2 ...` line of its
console blocks run): an arm from a URDF made a robot and checked, an object from an OBJ, one by hand, a scene, a
task run by that robot, synthesised and exported for LeRobot with a task text naming the objects by their display
names."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from x2.cli.app import _mount, app
from x2.datasets import Dataset
from x2.envspec.schema_doc import BEGIN, END, schema_markdown

_mount()
runner = CliRunner()
REPO = Path(__file__).resolve().parent.parent
DOC = (REPO / "docs" / "authoring.md").read_text()
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```$", DOC, re.MULTILINE | re.DOTALL)
# a block's first line naming the file it is: `# PATH` or `<!-- PATH -->`
FILE_HEADER = re.compile(r"(?:# |<!-- )([\w./-]+\.(?:yaml|xml|urdf|obj|mtl))(?: -->)?")


def test_the_schema_section_is_generated_from_the_models() -> None:
    section = DOC[DOC.index(BEGIN):DOC.index(END) + len(END)] + "\n"
    assert section == schema_markdown(), "run: python scripts/spec_schema_doc.py --write"


def test_linked_from_the_readme() -> None:
    assert "](docs/authoring.md)" in (REPO / "README.md").read_text()


def test_the_tutorial_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    files = [(m.group(1), body.split("\n", 1)[1]) for _, body in BLOCKS
             if (m := FILE_HEADER.fullmatch(body.split("\n", 1)[0]))]
    assert {path for path, _ in files} == {"my_arm.urdf", "mug.obj", "mug.mtl", "specs/objects/my_tray.xml",
                                           "specs/objects/my_tray.yaml", "specs/scenes/my_booth.yaml"}
    for path, text in files:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    commands = [line.removeprefix("$ ") for lang, body in BLOCKS if lang == "console"
                for line in body.splitlines() if line.startswith("$ x2 ")]
    assert [c.split()[1:3] for c in commands] == [
        ["robots", "new"], ["robots", "check"], ["objects", "add"], ["tasks", "new"], ["tasks", "show"],
        ["synth", "--task"], ["datasets", "show"], ["export", "lerobot"]]
    outputs = {}
    for command in commands:
        result = runner.invoke(app, shlex.split(command)[1:], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (command, result.output)
        outputs[" ".join(command.split()[1:3])] = " ".join(result.output.split())
    # what the text says each step decided
    part = yaml.safe_load((tmp_path / "specs/robots/parts/my-arm-arm.yaml").read_text())
    robot = yaml.safe_load((tmp_path / "specs/robots/my-arm.yaml").read_text())
    assert part["source"] == {"file": "../../../my_arm.urdf"} and part["flange_body"] == "flange"
    assert part["flange_pos"] == [0.0, 0.0, 0.02] and "kp" not in part
    assert robot["mjcf"] == "mounts/stand.xml" and robot["gripper"] == "G"
    assert outputs["robots check"].endswith(" ok") and "pick_place targets reached 10/10" in outputs["robots check"]
    assert "convex pieces │ 2 " in outputs["objects add"]
    assert yaml.safe_load((tmp_path / "specs/objects/my_mug.yaml").read_text())["display"] == "red mug"
    task = yaml.safe_load((tmp_path / "specs/tasks/my_task.yaml").read_text())
    assert (task["scene"], task["robot"]) == ("my_booth", "my-arm")
    assert "warning: robot my-arm, arm right: servo kp, kv, force defaulted" in outputs["synth --task"]
    instruction = "Put the red mug on the blue tray."
    ds = Dataset.open(tmp_path / "data" / "my_task")
    assert len(ds.episodes()) == 2
    for i in range(2):
        with ds.load(i) as ep:
            assert ep.instruction == instruction
    tasks = pq.read_table(tmp_path / "my_task_lerobot" / "meta" / "tasks.parquet")
    assert tasks.column("task").to_pylist() == [instruction]
