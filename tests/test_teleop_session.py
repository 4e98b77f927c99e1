"""Teleop sessions end to end: `x2 collect teleop --device replay:FILE` through the real loop, clock,
mapper, safety filter, writer and CLI; lifecycle keys; Ctrl-C and kill -9."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from helpers.teleop_streams import demo_stream, home_stream
from helpers.x2_cli import HEADLESS_ENV, run_x2

from x2.base.seeding import slot_seed
from x2.datasets import Dataset, repair, validate
from x2.devices import read_stream
from x2.recorded.relabel import relabel
from x2.recorded.replay import replay_actions

# The 30 Hz loop paces these episodes by the wall clock: `make test` runs them alone, after the rest. (The
# refusals at the end end before any loop starts: they run with the rest.)
realtime = pytest.mark.realtime


@realtime
@pytest.mark.timeout(180)
def test_replay_completes_fruit_in_microwave_with_correct_labels(tmp_path: Path) -> None:
    stream = demo_stream(tmp_path / "leader.h5")
    run = run_x2(["collect", "teleop", "--task", "fruit_in_microwave", "--device", f"replay:{stream}", "-n", "1",
               "--dataset", "tele"], tmp_path)
    assert run.returncode == 0, run.stderr
    assert "episode 0: success" in run.stdout
    ds = Dataset.open(tmp_path / "data" / "tele")
    (rec,) = ds.episodes()
    assert rec.success and rec.source == "teleop" and rec.seed == slot_seed(0, 0)
    assert rec.segments[-1].node == "done" and rec.segments[-1].end - rec.segments[-1].start == 30  # 1 s hold
    with ds.load(0) as ep:
        assert ep.outcome == "success" and ep.attrs["teleop_end"] == "success"
        order = [n for n, _ in ep.events]
        assert order.index("open_door") < order.index("place_fruit") < order.index("close_door")
        assert order.index("pick_fruit") < order.index("place_fruit") < order.index("retract")
        assert ep["timing/lateness_ms"].shape == (ep.frames,)
        # The raw leader stream is stored and is the file's stream: same samples, same values.
        src, got = read_stream(stream), read_stream(ep.path)
        assert got.kind == "master-arm" and len(got) >= 0.95 * len(src)
        np.testing.assert_array_equal(got.values["joints"], src.values["joints"][got.seq])
        tick_seq = ep["device/master-arm/tick_seq"]
        assert tick_seq.shape == (ep.frames,) and np.all(np.diff(tick_seq[tick_seq >= 0]) >= 0)
        report = relabel(ep)
        assert report.identical, "x2 label must reproduce the labels recorded online"
        # The stored actions, stepped from the stored first state, reproduce the teleoperated episode exactly.
        assert replay_actions(ep).max_deviation == 0.0
    assert validate(tmp_path / "data" / "tele").valid


@realtime
@pytest.mark.timeout(120)
def test_lifecycle_keys_rerecord_discard_next_quit(tmp_path: Path) -> None:
    events = [(1.0, "rerecord", -1), (2.0, "discard", -1), (3.0, "next", -1), (4.0, "quit", -1)]
    stream = home_stream(tmp_path / "keys.h5", 6.0, events)
    run = run_x2(["collect", "teleop", "--task", "pick_place", "--device", f"replay:{stream}", "--dataset", "k"],
              tmp_path)
    assert run.returncode == 0, run.stderr
    ds = Dataset.open(tmp_path / "data" / "k")
    recs = ds.episodes()
    assert len(recs) == 2  # the re-recorded and the discarded attempts were not kept
    # A re-record keeps the scene (same seed); a discard moves on to the next one.
    assert recs[0].seed == slot_seed(0, 1) and recs[1].seed == slot_seed(0, 2)
    assert [(r.master_seed, r.slot) for r in recs] == [(0, 1), (0, 2)]
    assert ds.next_slot(0) == 3  # the discarded slot 0 is used up too: the next session starts at 3
    with ds.load(recs[0].index) as ep0, ds.load(recs[1].index) as ep1:
        assert ep0.attrs["teleop_end"] == "next" and ep1.attrs["teleop_end"] == "quit"
        assert 20 <= ep0.frames <= 40 and 20 <= ep1.frames <= 40  # ~1 s each at 30 Hz
        assert not ep0.success
    assert not list((tmp_path / "data" / "k" / ".inprogress").glob("*.h5"))


@realtime
@pytest.mark.timeout(120)
def test_a_finished_replay_ends_the_session(tmp_path: Path) -> None:
    stream = home_stream(tmp_path / "short.h5", 1.5, [(0.5, "next", -1)])
    run = run_x2(["collect", "teleop", "--task", "pick_place", "--device", f"replay:{stream}", "--max-seconds", "5",
               "--dataset", "r"], tmp_path)
    assert run.returncode == 0, run.stderr
    ds = Dataset.open(tmp_path / "data" / "r")
    endings = []
    for rec in ds.episodes():
        with ds.load(rec.index) as ep:
            endings.append(ep.attrs["teleop_end"])
    # The stream ends 1.5 s in, inside the second episode: nobody is left to end it, so the stream's end does (a
    # second later, well before --max-seconds); no third episode from a silent device.
    assert endings == ["next", "stream_end"]


def _wait_for_episodes(index: Path, count: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if index.exists() and len(index.read_text().splitlines()) >= count:
            return
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    raise AssertionError(f"no {count} episodes within {timeout} s")


def _ctrl_c_reaches_it() -> None:
    """In the child before exec: SIGINT as at a terminal. A test run started in the background (`cmd &` in
    a script, nohup, some CI runners) ignores SIGINT, children inherit that, and Python then installs no
    KeyboardInterrupt handler: the interrupt would never arrive."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@realtime
@pytest.mark.timeout(120)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_interrupt_or_kill_mid_episode_loses_only_that_episode(tmp_path: Path, sig: signal.Signals) -> None:
    events = [(1.0 + i, "next", -1) for i in range(20)]
    stream = home_stream(tmp_path / "long.h5", 30.0, events, wiggle=0.2)
    root = tmp_path / "data" / "crash"
    proc = subprocess.Popen([sys.executable, "-m", "x2", "collect", "teleop", "--task", "pick_place", "--device",
                             f"replay:{stream}", "--dataset", "crash"], cwd=tmp_path, env=HEADLESS_ENV,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_reaches_it)
    _wait_for_episodes(root / "episodes.jsonl", 2, proc)
    time.sleep(0.5)  # well inside the third episode
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    committed = [json.loads(line) for line in (root / "episodes.jsonl").read_text().splitlines() if line.strip()]
    assert len(committed) >= 2
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        assert not list((root / ".inprogress").glob("*.h5")), "Ctrl-C must not leave a half-written episode"
    else:
        repair(root)
    report = validate(root)
    assert report.valid, report.problems
    ds = Dataset.open(root)
    assert [r.index for r in ds.episodes()] == [c["index"] for c in committed]
    for rec in ds.episodes():
        with ds.load(rec.index) as ep:
            assert ep.frames == rec.frames and ep.attrs["teleop_end"] == "next"


@pytest.mark.parametrize("args, message", [
    (["--device", "joystick"], "--device: found 'joystick'; allowed: keyboard"),
    (["--device", "replay:nope.h5"], "nope.h5: playback file: found no such file"),
    (["--device", "vr"], "vr: no SteamVR runtime found"),
    (["--device", "master-arm:/dev/ttyNOPE"], "master-arm: serial port /dev/ttyNOPE not found"),
    (["--device", "keyboard:terminal"], "keyboard: stdin is not a terminal"),
    (["--task", "nope", "--device", "keyboard:terminal"], "task"),
    (["--keys", "mouse"], "--keys: found 'mouse'"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path: Path, args: list[str], message: str) -> None:
    run = run_x2(["collect", "teleop", *args], tmp_path, timeout=60)
    assert run.returncode == 2, run.stderr
    assert message in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "data").exists()


def test_an_eval_variant_is_refused_unless_allowed(tmp_path: Path) -> None:
    stream = home_stream(tmp_path / "leader.h5", 0.5, task="fruit_in_microwave")
    args = ["collect", "teleop", "--task", "fruit_in_microwave", "--device", f"replay:{stream}", "-n", "1",
            "--variant", "eval_fruit"]
    run = run_x2(args, tmp_path, timeout=60)
    assert run.returncode == 2 and "--variant: found 'eval_fruit' of scene kitchen_booth (split eval" in run.stderr
    assert not (tmp_path / "data").exists()
