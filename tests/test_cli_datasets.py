"""`x2 datasets ...`: help with examples, exit codes, one-line errors, the workspace default."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.write_episodes import MANIFEST, write_one
from typer.testing import CliRunner

from x2.cli.datasets import app
from x2.datasets import Dataset

runner = CliRunner()


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with data/fruit holding 4 episodes (0 and 3 failed) and no remembered dataset."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    with Dataset.create("data/fruit", MANIFEST) as ds:
        for _ in range(4):
            write_one(ds)
    return tmp_path


@pytest.mark.parametrize("command", [[], ["ls"], ["info"], ["show"], ["validate"]])
def test_help_shows_an_example(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.output and "x2 datasets" in result.output


def test_ls_lists_datasets(workspace: Path) -> None:
    result = runner.invoke(app, ["ls"])
    assert result.exit_code == 0, result.output
    assert "fruit" in result.output and "artixon-g" in result.output and "50%" in result.output


def test_info_names_the_dataset_it_uses(workspace: Path) -> None:
    result = runner.invoke(app, ["info", "fruit"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "dataset: data/fruit"
    for text in ("episodes", "success rate", "50%", "scripted: 4", "open_door", "place_fruit: timeout"):
        assert text in result.output
    # Now remembered: without an argument the first line says which dataset and why.
    again = runner.invoke(app, ["info"])
    assert again.exit_code == 0 and again.output.splitlines()[0] == "dataset: data/fruit (last used)"


def test_show_episode_and_plot(workspace: Path) -> None:
    result = runner.invoke(app, ["show", "3", "--dataset", "fruit", "--plot", "ep3.png"])
    assert result.exit_code == 0, result.output
    for text in ("episode 3", "failure: place_fruit failed at frame", "timeout", "completion events",
                 "open_door", "segments", "wrote ep3.png"):
        assert text in result.output
    png = Path("ep3.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    assert not [p for p in Path(".").iterdir() if ".tmp-" in p.name]


def test_show_unknown_episode_is_one_line(workspace: Path) -> None:
    result = runner.invoke(app, ["show", "99", "--dataset", "fruit"])
    assert result.exit_code == 2
    assert "found no episode 99; allowed: 0-3" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize("command", [["info", "no/such/place"], ["validate", "nope"],
                                     ["show", "1", "--dataset", "nope"], ["info"]])
def test_bad_dataset_path_is_one_line_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             command: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, command)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("error:") and "Traceback" not in result.output


def test_not_a_dataset_is_one_line_exit_2(workspace: Path) -> None:
    Path("data/plain").mkdir()
    result = runner.invoke(app, ["info", "data/plain"])
    assert result.exit_code == 2 and "manifest: found missing" in result.stderr


def test_validate_and_repair_exit_codes(workspace: Path) -> None:
    ok = runner.invoke(app, ["validate", "fruit"])
    assert ok.exit_code == 0 and "valid: 4 episodes checked" in ok.output
    index = Path("data/fruit/episodes.jsonl")
    index.write_bytes(index.read_bytes()[:-40])  # torn last line
    (Path("data/fruit/.inprogress") / "episode_000007.h5").write_bytes(b"")
    bad = runner.invoke(app, ["validate", "fruit"])
    assert bad.exit_code == 1
    assert "repairable" in bad.output and "invalid" in bad.output and "--repair" in bad.output
    fixed = runner.invoke(app, ["validate", "fruit", "--repair"])
    assert fixed.exit_code == 0, fixed.output
    assert "repaired: rebuilt episodes.jsonl from 4 episode file(s)" in fixed.output
    assert "repaired: removed episode_000007.h5" in fixed.output
    assert runner.invoke(app, ["validate"]).exit_code == 0  # remembered, and still valid
