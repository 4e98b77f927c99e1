"""A person's teleop episode ends when the person says: the nodes' `timeout_s` and the task's `horizon_s` are
synthesis's limits and end nothing here; `--max-seconds` is the one time limit, and only when given. The ending is
what the episode stores as its `end_reason` (and `x2 datasets show` prints). A robot other than the task's
reference robot writes to its own default folder. Keyboard episodes are driven by a recorded keyboard stream
played back (`--device replay:FILE`), the real session, loop, mapper and writer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.teleop_streams import home_stream, keyboard_stream
from helpers.x2_cli import run_x2
from typer.testing import CliRunner

from x2.cli.app import _mount, app
from x2.datasets import Dataset
from x2.envspec import load_env
from x2.recorded.relabel import relabel

realtime = pytest.mark.realtime  # (the 30 Hz loop is paced by the wall clock)
_mount()
runner = CliRunner()

# pick_place with synthesis's limits cut to nothing: every node may take 0.2 s, the whole task 1 s.
QUICK_PICK = """\
include: pick_place.yaml
name: quick_pick
horizon_s: 1
nodes:
  pick: {timeout_s: 0.2}
  place: {timeout_s: 0.2}
  retract: {timeout_s: 0.2}
"""


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "specs" / "tasks").mkdir(parents=True)
    (tmp_path / "specs" / "tasks" / "quick_pick.yaml").write_text(QUICK_PICK)
    return tmp_path


@realtime
@pytest.mark.timeout(120)
def test_a_keyboard_episode_longer_than_every_node_timeout_records_to_its_end(work: Path) -> None:
    # w held on the right arm for half a second, then nothing until Esc (quit) 3 s in: 15x every node's timeout.
    stream = keyboard_stream(work / "keys.h5", 3.5, [(3.0, "quit", -1)], forward_s=0.5)
    run = run_x2(["collect", "teleop", "--task", "quick_pick", "--device", f"replay:{stream}", "--dataset", "k"],
                 work)
    assert run.returncode == 0, run.stderr
    assert "episode 0: quit" in run.stdout and "failed" not in run.stdout
    ds = Dataset.open(work / "data" / "k")
    (rec,) = ds.episodes()
    env = load_env(str(work / "specs" / "tasks" / "quick_pick.yaml"))
    assert env.task is not None
    limits = [n.timeout_s for n in env.task.nodes if n.timeout_s] + [env.task.horizon_s]
    assert rec.frames / env.fps > 2 * max(limits)  # (3 s nominal: a loaded machine may run late, not short)
    with ds.load(rec.index) as ep:
        assert ep.failure is None and ep.outcome == "unfinished"  # the person quit before the block was placed
        assert ep.attrs["end_reason"] == "quit" == ep.attrs["teleop_end"]
        assert not ep.node_timeouts
        moved = ep["observations/ee_pose"][-1, 1, 0] - ep["observations/ee_pose"][0, 1, 0]
        assert moved > 0.03, moved  # the keyboard drove the right arm forward (15 cm/s for 0.5 s)
        report = relabel(ep)  # `x2 label` recomputes the labels the same way: no timeout there either
        assert report.identical, report.differences
        assert report.failure is None
    show = runner.invoke(app, ["datasets", "show", str(rec.index), "--dataset", str(work / "data" / "k")])
    assert show.exit_code == 0, show.output
    rows = {line.split()[1]: line.split()[3] for line in show.stdout.splitlines()
            if line.startswith("│") and len(line.split()) >= 4 and line.split()[1] in ("end_reason", "teleop_end")}
    assert rows == {"end_reason": "quit", "teleop_end": "quit"}, show.stdout


@realtime
@pytest.mark.timeout(120)
def test_max_seconds_ends_a_persons_episode_when_given(work: Path) -> None:
    stream = keyboard_stream(work / "keys.h5", 5.0)  # a person who says nothing for longer than the limit
    run = run_x2(["collect", "teleop", "--task", "quick_pick", "--device", f"replay:{stream}", "--max-seconds", "1.5",
                  "-n", "1", "--dataset", "m"], work)
    assert run.returncode == 0, run.stderr
    assert "episode 0: max_seconds" in run.stdout
    ds = Dataset.open(work / "data" / "m")
    (rec,) = ds.episodes()
    assert rec.frames == 45  # 1.5 s at 30 Hz exactly: ticks are counted, not timed (past the 1 s horizon)
    with ds.load(rec.index) as ep:
        assert ep.attrs["end_reason"] == "max_seconds" == ep.attrs["teleop_end"] and ep.failure is None


def test_the_default_folder_names_a_robot_that_is_not_the_tasks(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_env("pick_place").dataset_name == "pick_place"  # the task's own robot: as before
    assert load_env("pick_place", robot="artixon-g").dataset_name == "pick_place"
    assert load_env("pick_place", robot="franka-robotiq").dataset_name == "pick_place-franka-robotiq"
    assert load_env("pick_place", gripper="franka-hand").dataset_name == "pick_place-artixon-g+franka-hand"
    assert load_env(None, robot="franka-robotiq").dataset_name == "green_booth"  # a bare scene has no task robot
    monkeypatch.chdir(tmp_path)
    franka = runner.invoke(app, ["collect", "waypoints", "--task", "pick_place", "--robot", "franka-robotiq",
                                 "-n", "1"])
    assert franka.exit_code == 0, franka.output
    assert Dataset.open(tmp_path / "data" / "pick_place-franka-robotiq").manifest.robot == "franka-robotiq"
    # The task's own robot told to write into the Franka's folder: the refusal names the folder to use instead.
    mixed = runner.invoke(app, ["collect", "waypoints", "--task", "pick_place", "-n", "1", "--dataset",
                                "pick_place-franka-robotiq"])
    assert mixed.exit_code == 2
    assert re.search(r"robot: found 'artixon-g' for a dataset recorded with 'franka-robotiq'; .* --dataset "
                     r"\S*data/pick_place\)$", mixed.stderr.strip()), mixed.stderr


def test_synthesis_and_teleop_default_to_the_same_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from x2.synth.options import SessionOptions
    from x2.synth.runner import SynthConfig, SynthRun
    from x2.teleop.run import TeleopRequest, TeleopRun

    monkeypatch.chdir(tmp_path)
    synth = SynthRun(SynthConfig(SessionOptions("pick_place", robot="franka-robotiq"), n=1, workers=2))
    assert synth.path.resolve() == tmp_path / "data" / "pick_place-franka-robotiq"
    stream = home_stream(tmp_path / "s.h5", 0.5)
    tele = TeleopRun(TeleopRequest(device=f"replay:{stream}", task="pick_place", robot="franka-robotiq"))
    try:
        assert tele.path.resolve() == synth.path.resolve()
        assert tele.env.robot.name == "franka-robotiq"
    finally:
        tele.close()


def test_teleop_of_a_task_drives_the_robot_the_task_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from x2.teleop.run import TeleopRequest, TeleopRun

    (tmp_path / "specs" / "tasks").mkdir(parents=True)
    (tmp_path / "specs" / "tasks" / "franka_pick.yaml").write_text(
        "include: pick_place.yaml\nname: franka_pick\nrobot: franka-robotiq\n")
    monkeypatch.chdir(tmp_path)
    stream = home_stream(tmp_path / "s.h5", 0.5)
    tele = TeleopRun(TeleopRequest(device=f"replay:{stream}", task="franka_pick"))
    try:  # the lab's own task with its own arm: that arm, and the task's own folder
        assert tele.env.robot.name == "franka-robotiq" and tele.path.resolve() == tmp_path / "data" / "franka_pick"
    finally:
        tele.close()


@pytest.mark.parametrize("value", ["inf"])
def test_a_max_seconds_that_is_no_number_of_seconds_is_one_line(value: str, tmp_path: Path) -> None:
    """(typer's min=1 lets it through; nan it refuses) refused before a device, a simulator or a dataset folder is
    made."""
    run = run_x2(["collect", "teleop", "--task", "pick_place", "--max-seconds", value, "-n", "1", "--dataset", "m"],
                 tmp_path)
    assert run.returncode == 2 and run.stderr.strip() == f"error: --max-seconds: found {value}; allowed: a number " \
        "of seconds (leave it out for no limit)", run.stderr
    assert not (tmp_path / "data").exists()
