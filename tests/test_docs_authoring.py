"""docs/authoring.md stays true: its schema section is what x2/envspec/schema_doc.py generates from the models
now, and its tutorial runs as written in an empty folder (the files it shows written, each `$ x2 ...` line of its
console blocks run), ending in a LeRobot export whose task text names the object by its display name."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from x2.cli.app import _mount, app
from x2.datasets import Dataset
from x2.envspec.schema_doc import BEGIN, END, schema_markdown

_mount()
runner = CliRunner()
REPO = Path(__file__).resolve().parent.parent
DOC = (REPO / "docs" / "authoring.md").read_text()
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```$", DOC, re.MULTILINE | re.DOTALL)
FILE_HEADER = re.compile(r"(?:# |<!-- )(specs/[\w./-]+)(?: -->)?")  # a block's first line naming its file


def test_the_schema_section_is_generated_from_the_models() -> None:
    section = DOC[DOC.index(BEGIN):DOC.index(END) + len(END)] + "\n"
    assert section == schema_markdown(), "run: python scripts/spec_schema_doc.py --write"


def test_linked_from_the_readme() -> None:
    assert "](docs/authoring.md)" in (REPO / "README.md").read_text()


def test_the_tutorial_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    files = [(m.group(1), body.split("\n", 1)[1]) for lang, body in BLOCKS
             if lang in ("yaml", "xml") and (m := FILE_HEADER.fullmatch(body.split("\n", 1)[0]))]
    assert {path for path, _ in files} == {"specs/objects/my_cube.xml", "specs/objects/my_cube.yaml",
                                           "specs/scenes/my_booth.yaml"}
    for path, text in files:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    commands = [line.removeprefix("$ ") for lang, body in BLOCKS if lang == "console"
                for line in body.splitlines() if line.startswith("$ x2 ")]
    assert [c.split()[1:3] for c in commands] == [["tasks", "new"], ["tasks", "show"], ["synth", "--task"],
                                                  ["datasets", "show"], ["export", "lerobot"]]
    for command in commands:
        result = runner.invoke(app, shlex.split(command)[1:], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (command, result.output)
    instruction = "Put the small red cube on the plate."
    ds = Dataset.open(tmp_path / "data" / "my_task")
    assert len(ds.episodes()) == 2
    for i in range(2):
        with ds.load(i) as ep:
            assert ep.instruction == instruction
    tasks = pq.read_table(tmp_path / "my_task_lerobot" / "meta" / "tasks.parquet")
    assert tasks.column("task").to_pylist() == [instruction]
