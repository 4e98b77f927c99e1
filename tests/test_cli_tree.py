"""The whole command tree: errors are translated once at the root for every command, and help is ordered and
shows flags as flags."""

from __future__ import annotations

import errno
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

from x2.base.errors import X2Error
from x2.cli.app import _mount, app

_mount()
runner = CliRunner()
WORKFLOW = ["collect", "import", "synth", "augment", "render", "export", "datasets", "label", "replay", "eval", "serve",
            "calibrate", "robots", "objects", "tasks", "devices", "doctor"]


def _leaves(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    ctx = typer.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if hasattr(cmd, "commands"):
            if cmd.invoke_without_command:  # a group that is a command too (`x2 eval` beside `x2 eval correlate`)
                yield (*path, name), cmd
            yield from _leaves(cmd, (*path, name))
        else:
            yield (*path, name), cmd


def _command_paths() -> list[tuple[str, ...]]:
    return [path for path, _ in _leaves(typer.main.get_command(app))]


def _parsable_args(cmd: Any) -> list[str]:
    """The least a command's parser accepts: "0" for every required argument and option."""
    args: list[str] = []
    for param in cmd.params:
        if not param.required:
            continue
        values = ["0", "0"] if param.nargs == -1 else ["0"] * param.nargs
        args += values if param.param_type_name == "argument" else [param.opts[0], *values]
    return args


def _run_root(root: Any, args: list[str], standalone: bool) -> int:
    """The root command as `x2` runs it: off a terminal (standalone_mode=False, x2.cli._common.run_app) or
    at one (click's standalone mode)."""
    if not standalone:
        return root.main(args, prog_name="x2", standalone_mode=False)
    with pytest.raises(SystemExit) as done:
        root.main(args, prog_name="x2", standalone_mode=True)
    return done.value.code


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip()]


def test_the_tree_is_the_expected_one() -> None:
    paths = _command_paths()
    assert len(paths) >= 28 and len(set(paths)) == len(paths)
    assert [p[0] for p in paths if len(p) == 1] == ["synth", "render", "label", "replay", "eval", "serve", "doctor"]


@pytest.mark.parametrize("standalone", [False, True], ids=["off-terminal", "terminal"])
@pytest.mark.parametrize("path", _command_paths(), ids=" ".join)
def test_every_command_turns_an_x2_error_into_one_line(path: tuple[str, ...], standalone: bool,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    root = typer.main.get_command(app)
    leaf = dict(_leaves(root))[path]

    def boom(**_: Any) -> None:
        raise X2Error("some.yaml: field: found 3; allowed: 1 or 2")

    monkeypatch.setattr(leaf, "callback", boom)
    code = _run_root(root, [*path, *_parsable_args(leaf)], standalone)
    err = capsys.readouterr().err
    assert code == 2, err
    assert _error_lines(err) == ["error: some.yaml: field: found 3; allowed: 1 or 2"]


@pytest.mark.parametrize("standalone", [False, True], ids=["off-terminal", "terminal"])
def test_a_refusal_and_ctrl_c_are_translated_at_the_root(standalone: bool, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    root = typer.main.get_command(app)
    leaf = dict(_leaves(root))[("datasets", "ls")]

    def missing(**_: Any) -> None:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "/gone/file.h5")

    monkeypatch.setattr(leaf, "callback", missing)
    assert _run_root(root, ["datasets", "ls"], standalone) == 2
    assert _error_lines(capsys.readouterr().err) == [
        "error: /gone/file.h5: path: found no such file or folder; allowed: an existing path"]

    def ctrl_c(**_: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(leaf, "callback", ctrl_c)
    assert _run_root(root, ["datasets", "ls"], standalone) == 130
    assert _error_lines(capsys.readouterr().err) == ["interrupted"]


def test_a_bug_is_not_translated_and_x2_debug_keeps_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    root = typer.main.get_command(app)
    leaf = dict(_leaves(root))[("datasets", "ls")]

    def bug(**_: Any) -> None:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(leaf, "callback", bug)
    with pytest.raises(ZeroDivisionError):  # x2.cli.app.main() reports it as an internal error
        _run_root(root, ["datasets", "ls"], False)

    def user_mistake(**_: Any) -> None:
        raise X2Error("a mistake")

    monkeypatch.setattr(leaf, "callback", user_mistake)
    monkeypatch.setenv("X2_DEBUG", "1")
    with pytest.raises(X2Error):
        _run_root(root, ["datasets", "ls"], False)


# Every command that reads an existing dataset, with a path that is none: the command's own body refuses.
MISSING = "/nonexistent/x2-dataset"
BAD_DATASET = {
    ("label",): ["label", "0", "-d", MISSING],
    ("replay",): ["replay", "0", "-d", MISSING],
    ("calibrate", "dynamics"): ["calibrate", "dynamics", MISSING, "--robot", "aloha"],
    ("render",): ["render", MISSING],
    ("augment", "replay"): ["augment", "replay", MISSING],
    ("datasets", "info"): ["datasets", "info", MISSING],
    ("datasets", "show"): ["datasets", "show", "0", "-d", MISSING],
    ("datasets", "view"): ["datasets", "view", "0", "-d", MISSING],
    ("datasets", "validate"): ["datasets", "validate", MISSING],
    ("datasets", "merge"): ["datasets", "merge", MISSING, MISSING, "--out", "merged"],
    ("datasets", "filter"): ["datasets", "filter", MISSING, "--out", "filtered"],
    ("datasets", "rm"): ["datasets", "rm", MISSING, "0", "--yes"],
    ("datasets", "partition"): ["datasets", "partition", MISSING],
    ("datasets", "split"): ["datasets", "split", MISSING],  # partition's older name, hidden
    ("datasets", "stats"): ["datasets", "stats", MISSING],
    ("export", "lerobot"): ["export", "lerobot", MISSING],
    ("export", "zarr"): ["export", "zarr", MISSING],
    ("export", "hdf5"): ["export", "hdf5", MISSING],
}
# `--dataset` names the dataset these write into (a new one is made): no path is a mistake for them.
WRITERS = {("synth",), ("collect", "waypoints"), ("collect", "teleop"), ("eval",), ("import", "lerobot")}


def test_every_command_with_a_dataset_is_in_the_bad_dataset_table() -> None:
    with_dataset = {path for path, cmd in _leaves(typer.main.get_command(app))
                    if any(p.name in ("dataset", "datasets", "args") for p in cmd.params)}
    assert with_dataset - WRITERS == set(BAD_DATASET)


@pytest.mark.parametrize("path", sorted(BAD_DATASET), ids=" ".join)
def test_a_missing_dataset_is_one_error_line(path: tuple[str, ...], tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, BAD_DATASET[path])
    assert result.exit_code == 2, result.output
    lines = _error_lines(result.stderr)
    assert len(lines) == 1 and lines[0].startswith(f"error: {MISSING}: dataset: found no such folder"), lines


def test_top_level_help_follows_the_workflow() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    listed = re.findall(r"^│ ([a-z]+) ", result.output, flags=re.M)
    assert listed == WORKFLOW
    panels = re.findall(r"╭─ ([^─]+?) ─", result.output)
    assert panels[1:] == ["Make episodes", "Use a dataset", "Check episodes", "Evaluate policies",
                          "Robots, tasks, devices, this machine"]


@pytest.mark.parametrize("path", [(), ("datasets",), ("export",), *_command_paths()], ids=lambda p: " ".join(p) or "x2")
def test_help_shows_flags_as_flags(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output


def test_mounting_again_adds_nothing() -> None:
    # Every test module mounts the app it imports; typer builds click commands from every registration on each
    # run, so a second mount that registered again made in-process runs 20-40x slower in the full suite.
    def counts() -> tuple[int, int, list[int]]:
        return (len(app.registered_groups), len(app.registered_commands),
                [len(g.typer_instance.registered_commands) for g in app.registered_groups if g.typer_instance])

    before = counts()
    _mount()
    _mount()
    assert counts() == before
    assert [leaf for leaf, _ in _leaves(typer.main.get_command(app))].count(("collect", "teleop")) == 1


def test_mounting_every_command_imports_no_plotting_and_no_zarr() -> None:
    # Every `x2` process mounts every command before it runs one: matplotlib (augment's --preview) and zarr
    # (export zarr) imported with their command modules cost each one ~1 s of CPU on a loaded 2-core machine.
    import subprocess
    import sys

    code = ("import sys; from x2.cli.app import _mount; _mount(); "
            "print(sorted(m for m in ('matplotlib', 'zarr', 'torch', 'lerobot') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
