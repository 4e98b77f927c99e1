"""Off a terminal no line of x2's output is hard-wrapped: scripts (and these tests) read it line by line.

Each command runs as a subprocess with pipes for stdout and stderr (no terminal, as in CI) in a folder
whose path alone is far longer than the 80 columns rich falls back to there, and every line it is
expected to print must come out whole: plain lines, table cells and error lines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.teleop_streams import home_stream
from helpers.write_episodes import MANIFEST, write_one
from helpers.x2_cli import run_x2

from x2.datasets import Dataset

# Off a terminal the consoles lay out at 100,000 columns (x2/cli/_common.py): a line that long means
# something expanded to fill the width (a Panel, a Rule) instead of wrapping at 80. Real lines here are
# a few paths long.
LONGEST_SANE_LINE = 5_000


@pytest.fixture
def deep(tmp_path: Path) -> Path:
    folder = tmp_path.joinpath(*["a-folder-with-a-name-as-long-as-real-homes-have"] * 6)
    folder.mkdir(parents=True)
    assert len(str(folder)) > 250
    return folder


def whole_line(text: str, pattern: str) -> str:
    """The line that `pattern` matches from its start to its end; fails showing the output otherwise."""
    for line in text.splitlines():
        if re.fullmatch(pattern, line):
            return line
    raise AssertionError(f"no whole line matching {pattern!r} in:\n{text}")


def nothing_fills_the_width(*texts: str) -> None:
    for text in texts:
        longest = max((len(line) for line in text.splitlines()), default=0)
        assert longest < LONGEST_SANE_LINE, f"a {longest}-character line: something expanded to the console width"


def test_devices_check_summary_is_one_line(deep: Path) -> None:
    stream = home_stream(deep / "s.h5", 2.0, [(0.5, "next", -1)])
    run = run_x2(["devices", "check", "--device", f"replay:{stream}", "--seconds", "1.5"], deep)
    assert run.returncode == 0, run.stderr
    whole_line(run.stdout, rf"replay:{re.escape(str(stream))}: \d+ Hz, drops 0, 1 events")
    nothing_fills_the_width(run.stdout, run.stderr)


def test_datasets_lines_and_table_cells_are_whole(deep: Path) -> None:
    root = deep / "data" / "fruit"
    with Dataset.create(root, MANIFEST) as ds:
        for _ in range(4):
            write_one(ds)
    broken = deep / "data" / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text("{")

    info = run_x2(["datasets", "info", str(root)], deep)
    assert info.returncode == 0, info.stderr
    assert info.stdout.splitlines()[0] == f"dataset: {root}"
    whole_line(info.stdout, r"│ sources +│ scripted: 4 +│")

    # A table cell holding a long error message (the unreadable dataset's) stays on its row.
    ls = run_x2(["datasets", "ls"], deep)
    assert ls.returncode == 0, ls.stderr
    whole_line(ls.stdout, r"│ broken .*│ unreadable: data/broken/manifest.json: manifest: found unreadable JSON "
                          r"\(.*\); allowed: a JSON object +│ +│")
    whole_line(ls.stdout, r"│ fruit +│ +4 │ .*│ fruit_in_microwave │")

    index = root / "episodes.jsonl"
    index.write_bytes(index.read_bytes()[:-40])  # a torn last line
    (root / ".inprogress" / "episode_000007.h5").write_bytes(b"")
    bad = run_x2(["datasets", "validate", str(root)], deep)
    assert bad.returncode == 1, bad.stderr
    whole_line(bad.stdout, rf"repairable {re.escape(str(index))}: {re.escape(str(index))}:4: .*")
    whole_line(bad.stdout, rf"repairable {re.escape(str(root / '.inprogress' / 'episode_000007.h5'))}: left by an "
                           r"interrupted writer \(repair salvages or removes it\)")
    whole_line(bad.stdout, r"invalid: 3 episodes checked, checksums verified \(try --repair\)")
    fixed = run_x2(["datasets", "validate", str(root), "--repair"], deep)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    whole_line(fixed.stdout, r"repaired: rebuilt episodes.jsonl from 4 episode file\(s\)")
    whole_line(fixed.stdout, r"valid: 4 episodes checked, checksums verified")
    nothing_fills_the_width(info.stdout, ls.stdout, bad.stdout, fixed.stdout)


def test_error_lines_are_whole(deep: Path) -> None:
    missing = deep / "no" / "such" / "dataset"
    run = run_x2(["datasets", "info", str(missing)], deep)
    assert run.returncode == 2 and run.stdout == ""
    (line,) = run.stderr.splitlines()
    assert line.startswith(f"error: {missing}: dataset: found no such folder (tried {missing})")

    stream = deep / "missing.h5"
    run = run_x2(["devices", "check", "--device", f"replay:{stream}"], deep)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    whole_line(run.stderr, rf"error: .*{re.escape(str(stream))}.*")

    # The allowed forms are text, not rich markup: "[dynamixel|feetech:]" must survive.
    run = run_x2(["devices", "calibrate", "--device", "keyboard"], deep)
    assert run.returncode == 2
    whole_line(run.stderr, re.escape("error: --device: found 'keyboard'; allowed: "
                                     "master-arm[:[dynamixel|feetech:]PORT]"))

    # Usage errors (typer's) are one line too, after the usage line and the help hint.
    run = run_x2(["datasets", "show", "--dataset", str(missing)], deep)
    assert run.returncode == 2
    whole_line(run.stderr, r"Usage: .* datasets show \[OPTIONS\] .*")
    whole_line(run.stderr, r"error: Missing argument '(episode|EPISODE)'\.")
    run = run_x2(["datasets", "info", str(deep), str(missing)], deep)
    assert run.returncode == 2
    whole_line(run.stderr, rf"error: Got unexpected extra argument\(s\) \({re.escape(str(missing))}\)")
    nothing_fills_the_width(run.stderr)


def test_the_task_graph_is_no_wider_than_its_nodes(deep: Path) -> None:
    run = run_x2(["tasks", "show", "fruit_in_microwave", "--graph"], deep)
    assert run.returncode == 0, run.stderr
    # Its frame spans the widest layer (two 36-column node panels), not the console's width.
    top = whole_line(run.stdout, r"╭─ task DAG ─+╮")
    assert len(top) == 2 * 37 - 1 + 4
    # Table cells (the subtask conditions) are not cut short with an ellipsis either.
    assert "…" not in run.stdout
    nothing_fills_the_width(run.stdout)
