"""Fuzz the spec loaders with a large budget: mutated robot, scene and task YAML (structural) and mutated
text of all of them, each case loaded as `x2 synth --task FILE` would (EnvSpec, skill bindings, MuJoCo
world, one reset); target "show" runs cases of every kind through `x2 tasks show FILE --graph` instead.

The mutations and the loading are tests/helpers/spec_fuzz.py's, as in tests/test_envspec_fuzz.py. Here each
case runs in a worker process with a time bound: a case that outlives it is a hang (the worker is killed and
replaced), a worker that dies is a crash. The worker's address space is capped so that a memory blow-up is
a MemoryError (a traceback), not a machine brought down.

    .venv/bin/python bench/fuzz_specs.py --examples 1000
"""

from __future__ import annotations

import argparse
import collections
import multiprocessing as mp
import os
import platform
import resource
import sys
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from helpers.spec_fuzz import Case, cases, compile_case, show_case, workspace  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

TARGETS = ("robot", "scene", "task", "asset", "text", "show")
WORKER_MEMORY = 4 << 30  # bytes of address space per worker


def _load(kind: str, case: Case) -> str:
    if kind == "show":
        return show_case(case)  # 'ok' or 'error'; raises for any other exit
    with workspace(case):
        compile_case(case)
    return "ok"


def _classify(kind: str, case: Case) -> tuple[str, str]:
    """(outcome, detail): ok, error (one line), multiline (an X2Error over several lines), traceback."""
    from x2.base.errors import X2Error

    try:
        return _load(kind, case), ""
    except X2Error as exc:
        message = str(exc)
        if "\n" in message or "\r" in message or not message.strip():
            return "multiline", f"{type(exc).__name__}: {message[:300]!r}"
        return "error", message
    except Exception as exc:  # what the fuzzing is for: report it with where it came from
        frames = traceback.extract_tb(exc.__traceback__)
        where = next((f"{f.filename.rsplit('/x2/', 1)[-1]}:{f.lineno}" for f in reversed(frames)
                      if "/x2/" in f.filename), "?")
        return "traceback", f"{type(exc).__name__} at x2/{where}: {str(exc)[:200]}"


def _worker(conn: Connection) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY, WORKER_MEMORY))
    while True:
        try:
            case = conn.recv()
        except EOFError:
            return
        conn.send(_classify(*case))


class Pool:
    """One worker process at a time, replaced when a case hangs it or kills it."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.ctx = mp.get_context("spawn")
        self._start()

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        child.close()

    def _restart(self) -> None:
        self.proc.kill()
        self.proc.join()
        self.conn.close()
        self._start()

    def run(self, kind: str, case: Case) -> tuple[str, str]:
        # The first case of a fresh worker also pays for its imports (x2, MuJoCo, pydantic), a few seconds.
        self.conn.send((kind, case))
        if not self.conn.poll(self.timeout):
            self._restart()
            return "hang", f"no answer within {self.timeout:g} s"
        try:
            return self.conn.recv()
        except (EOFError, ConnectionError):
            code = self.proc.exitcode
            self._restart()
            return "crash", f"worker exit code {code}"

    def close(self) -> None:
        self.conn.close()
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()


@dataclass
class Tally:
    outcomes: collections.Counter[str] = field(default_factory=collections.Counter)
    examples: dict[str, tuple[str, str]] = field(default_factory=dict)  # first case of each problem
    seconds: list[float] = field(default_factory=list)


def fuzz(kind: str, examples: int, pool: Pool) -> Tally:
    tally = Tally()

    @settings(derandomize=True, max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(cases("any" if kind == "show" else kind))
    def one(case: Case) -> None:
        t0 = time.perf_counter()
        outcome, detail = pool.run(kind, case)
        tally.seconds.append(time.perf_counter() - t0)
        tally.outcomes[outcome] += 1
        if outcome not in ("ok", "error"):
            tally.examples.setdefault(detail.split(": ")[0], (detail, case.describe()[:600]))

    one()
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000, help="cases per target")
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=TARGETS)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds a case may take before it is a hang")
    args = parser.parse_args()
    os.environ.setdefault("MUJOCO_GL", "egl")
    pool = Pool(args.timeout)
    warm = Case("specs/tasks/pick_place.yaml", b"", "specs/tasks/pick_place.yaml", None)
    pool.run("show", warm)  # the imports, once
    rows = []
    problems: dict[str, tuple[str, str]] = {}
    started = time.perf_counter()
    try:
        for kind in args.targets:
            tally = fuzz(kind, args.examples, pool)
            n = sum(tally.outcomes.values())
            o = tally.outcomes
            median = sorted(tally.seconds)[len(tally.seconds) // 2] if tally.seconds else 0.0
            rows.append((kind, n, o["ok"], o["error"], o["traceback"] + o["multiline"], o["hang"], o["crash"],
                         f"{1e3 * median:.0f} / {1e3 * max(tally.seconds, default=0):.0f}"))
            problems.update({f"{kind}: {k}": v for k, v in tally.examples.items()})
            print(f"{kind}: {n} cases, {dict(o)}", file=sys.stderr, flush=True)
    finally:
        pool.close()
    total = time.perf_counter() - started
    print(f"\nbench/fuzz_specs.py --examples {args.examples}  ({platform.python_version()}, {os.cpu_count()} cores, "
          f"{total:.0f} s, per-case bound {args.timeout:g} s)\n")
    head = ("target", "cases run", "clean loads", "one-line errors", "tracebacks", "hangs", "crashes",
            "ms per case (median / max)")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(str(c) for c in row) + " |")
    for key, (detail, case) in problems.items():
        print(f"\n{key}\n  {detail}\n  {case}")


if __name__ == "__main__":
    main()
