"""Chaos benchmark: SIGKILL every writing x2 command at seeded random moments, and refuse its writes.

For each command (tests/helpers/chaos_scenarios.py), `--kills` runs are killed after real progress; after
each kill: committed episodes all still there and matching their digests (after `repair()`), sources
byte-identical, targets absent or complete (read back by their own readers), and no process of the
command alive a second later. Then the write layer refuses the n-th write and every later one
(tests/helpers/fault_writes.c): the command must exit non-zero by itself, with no traceback, losing
nothing committed. The harness is the same one tests/test_chaos.py runs with a few kills.

    .venv/bin/python bench/chaos.py                       # everything, 20 kills per command
    .venv/bin/python bench/chaos.py --kills 3 --commands synth,"datasets rm" --no-faults
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.chaos_campaign import CommandStats, run_command  # noqa: E402
from helpers.chaos_faults import ERRNOS, FAULT_COMMANDS, NTH_WRITES, FaultStats, fault_campaign  # noqa: E402
from helpers.chaos_scenarios import SCENARIOS, Fixtures  # noqa: E402


def _table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def kill_table(stats: list[CommandStats]) -> str:
    rows = [[s.command, s.kills, s.finished, s.episodes_checked, len(s.lost) + len(s.changed_sources),
             len(s.left_behind), f"{s.complete} / {s.absent}" + (f" / {len(s.half_made)} half-made"
                                                                   if s.half_made else "") if s.has_target else "-",
             s.repaired, f"{s.window_s:.2f}", ", ".join(sorted(s.process_kinds)) or "-"] for s in stats]
    return _table(["command", "kills", "finished first", "episodes checked", "lost or corrupted",
                   "processes left behind", "exports checked (complete / absent)", "kills needing repair",
                   "run after progress (s)", "child processes"], rows)


def fault_table(stats: list[FaultStats]) -> str:
    rows = [[s.command, s.errno, ",".join(map(str, s.tried)), ",".join(map(str, s.exit_codes)),
             len(s.by_signal), len(s.succeeded), len(s.tracebacks), len(s.lost), len(s.half_made)] for s in stats]
    return _table(["command", "errno", "n tried", "exit codes", "exits by signal", "exits 0", "tracebacks",
                   "lost", "half-made targets"], rows)


def _details(kills: list[CommandStats], faults: list[FaultStats]) -> list[str]:
    out = []
    for s in kills:
        out += [f"- {s.command}: {m}" for m in s.lost + s.changed_sources + s.left_behind + s.half_made + s.failed_runs]
    for f in faults:
        out += [f"- {f.command} {f.errno}: {m}" for m in f.lost + f.half_made]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20, help="real kills per command")
    parser.add_argument("--commands", default=",".join(SCENARIOS), help="comma-separated; default: all")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--no-faults", action="store_true", help="skip the refused-write runs")
    parser.add_argument("--nth", default=",".join(map(str, NTH_WRITES)), help="n-th write that fails first")
    parser.add_argument("--scratch", type=Path, help="work folder (default: a temporary one); failures stay")
    args = parser.parse_args()
    commands = [c.strip() for c in args.commands.split(",") if c.strip()]
    unknown = [c for c in commands if c not in SCENARIOS]
    if unknown:
        parser.error(f"unknown commands {unknown}; known: {', '.join(SCENARIOS)}")
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="x2-chaos-"))
    print(f"scratch: {scratch}", flush=True)
    fixtures = Fixtures.make(scratch / "fixtures")
    rng = random.Random(args.seed)
    kills: list[CommandStats] = []
    for command in commands:
        started = time.perf_counter()
        kills.append(run_command(command, fixtures, args.kills, rng, scratch / "kills" / command.replace(" ", "-")))
        print(f"{command}: {time.perf_counter() - started:.0f} s", flush=True)
        print(kill_table(kills[-1:]), flush=True)
    faults: list[FaultStats] = []
    if not args.no_faults:
        expected = {s.command: s.target_episodes for s in kills}
        for command in [c for c in FAULT_COMMANDS if c in commands]:
            started = time.perf_counter()
            faults += fault_campaign([command], fixtures, scratch / "faults", expected,
                                     tuple(int(n) for n in args.nth.split(",")), ERRNOS)
            print(f"faults {command}: {time.perf_counter() - started:.0f} s", flush=True)
    print("\n## kills\n\n" + kill_table(kills))
    if faults:
        print("\n## refused writes\n\n" + fault_table(faults))
    details = _details(kills, faults)
    if details:
        print("\n## details\n\n" + "\n".join(details))


if __name__ == "__main__":
    main()
