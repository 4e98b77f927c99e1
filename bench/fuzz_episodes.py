"""Fuzz the readers of a stranger's episode file with a large budget; print what each outcome counted.

The same corruptions and readers as tests/test_datasets_fuzz_episodes.py (tests/helpers/corrupt_episodes.py), on
a real short episode, with `--examples` drawn corruptions per reader (fixed seed, so a run is
repeatable). Each reader runs in a forked child: "traceback" is any exception but a one-line X2Error,
"crash" a child killed by a signal, "hang" one still running after `--timeout` seconds.

    .venv/bin/python bench/fuzz_episodes.py --examples 500
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.corrupt_episodes import READERS, Outcome, corrupted_copy, mutations, run_isolated  # noqa: E402
from helpers.real_dataset import record_short_dataset  # noqa: E402

KINDS = ("clean", "error", "multiline", "traceback", "crash", "hang")


def fuzz(reader: str, source: Path, examples: int, timeout: float, work: Path,
         failures: list[tuple[str, tuple, Outcome]]) -> tuple[Counter, Counter, float]:
    counts: Counter = Counter()
    by_mutation: Counter = Counter()
    started = time.perf_counter()

    @seed(20261201)
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(mutations())
    def run(mutation: tuple) -> None:
        with tempfile.TemporaryDirectory(dir=work) as tmp:
            root = corrupted_copy(source, Path(tmp) / "ds", mutation)
            outcome = run_isolated(READERS[reader], root, timeout)
        counts[outcome.kind] += 1
        by_mutation[(mutation[0], outcome.kind)] += 1
        if not outcome.ok:
            failures.append((reader, mutation, outcome))

    run()
    return counts, by_mutation, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=500, help="corruptions per reader")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a reader counts as hung")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        source = work / "short"
        record_short_dataset(source, episodes=1, ticks=4)
        failures: list[tuple[str, tuple, Outcome]] = []
        rows = []
        mixes: Counter = Counter()
        for reader in sorted(READERS):
            counts, by_mutation, seconds = fuzz(reader, source, args.examples, args.timeout, work, failures)
            rows.append((reader, counts, seconds))
            mixes.update(by_mutation)
    print(f"| target | cases run | clean | one-line errors | {' | '.join(KINDS[2:])} | wall s |")
    print("|---|---|---|---|" + "---|" * len(KINDS[2:]) + "---|")
    for reader, counts, seconds in rows:
        print(f"| {reader} | {sum(counts.values())} | {counts['clean']} | {counts['error']} | "
              + " | ".join(str(counts[k]) for k in KINDS[2:]) + f" | {seconds:.0f} |")
    print("\ncases per corruption kind (all readers):")
    for kind in sorted({m for m, _ in mixes}):
        parts = ", ".join(f"{o} {mixes[(kind, o)]}" for o in KINDS if mixes[(kind, o)])
        print(f"- {kind}: {parts}")
    for reader, mutation, outcome in failures[:20]:
        print(f"\nFAILED {reader} {mutation!r:.300}: {outcome.kind}\n{outcome.detail[-1500:]}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
