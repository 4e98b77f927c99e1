"""x2.cli.progress off a terminal: a plain line on stdout every few seconds (stderr is kept for the one
error line), none for a short job."""

from __future__ import annotations

import pytest

from x2.cli.progress import progress


def test_off_a_terminal_a_line_every_interval_and_none_before(capsys: pytest.CaptureFixture[str]) -> None:
    now = [100.0]
    with progress("rendering", "frames", every_s=5.0, clock=lambda: now[0]) as update:
        for t, done in ((101.0, 10), (104.9, 20), (105.0, 30), (107.0, 40), (110.5, 50)):
            now[0] = t
            update(done, 90, f"{done / 10:.1f} frames/s")
        now[0] = 111.0
        update(60)
    out, err = capsys.readouterr()
    assert err == ""  # stderr is kept for a failure's one line
    assert out.splitlines() == ["rendering: 30/90 frames (3.0 frames/s)", "rendering: 50/90 frames (5.0 frames/s)"]


def test_a_short_job_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with progress("copying episodes") as update:
        for done in range(5):
            update(done, 5)
    assert capsys.readouterr() == ("", "")


def test_once_past_the_interval_a_new_stage_gets_its_line_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    now = [0.0]
    with progress("export", "frames", every_s=5.0, clock=lambda: now[0]) as update:
        update(0, 16, "0/2 episodes", "writing")  # a job younger than the interval: quiet, stage or not
        now[0] = 6.0
        update(8, 16, "1/2 episodes", "writing")  # the interval is up
        now[0] = 7.0
        update(12, 16, "1/2 episodes", "writing")  # the same stage within the interval: quiet
        update(16, 16, "2/2 episodes", "reading back")  # a new stage: at once
    assert capsys.readouterr().out.splitlines() == ["export: writing: 8/16 frames (1/2 episodes)",
                                                    "export: reading back: 16/16 frames (2/2 episodes)"]
