"""Peak memory and episode-file opens of `x2 export lerobot`, before and after a change, at two dataset sizes.

    .venv/bin/python bench/bench_export_memory.py --before e31c6fa --cache /tmp/x2-export-bench
    .venv/bin/python bench/bench_export_memory.py --before e31c6fa --cache DIR --sizes 100,300 --keep

Each side runs `python -m x2 export lerobot DATASET --out ...` as a child process with this interpreter:
`--before REV` is checked out with `git worktree add --detach` into a temporary folder (removed afterwards)
and run with PYTHONPATH pointing there; the after side is the working tree this script lives in. Per
dataset and side the export runs twice: once plain, for its wall time and peak RSS (the child's rusage from
os.wait4), and once under `strace -f -e trace=open,openat`, counting the successful opens of episode files
(`episodes/episode_NNNNNN.h5`) per exported episode. The two sides' plain exports are fingerprinted with
bench/compare_outputs.py (every file, decoded: parquet columns, video frames, JSON fields; the export time
and the source files' digests excluded as there) and compared.

The datasets are made once with x2 itself (this tree) and cached in `--cache`: `x2 synth --task pick_place
-n N --workers 2 --seed 0` (state only) for the largest size, `x2 datasets filter --episodes 0-(n-1)` for the
smaller ones, and for the camera runs a copy rendered with `x2 render --cameras head --size 48x64` (one
camera: a LeRobot export encodes a video per camera and episode, which is slow here and says nothing about
memory). Exports run with default choices: state only with `--state-only`, the camera runs with none (the
stored streams at their stored size). The sides alternate per run, so a load change on this shared machine
hits both. Exit code 0: every pair of exports is the same bytes; 1: some differ; 2: could not run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_outputs import EXCLUDED, Side, differences, fingerprint, mask  # noqa: E402  (bench/ beside us)

REPO = Path(__file__).resolve().parents[1]
STRACE = "/usr/bin/strace"
CAMERA, CAMERA_SIZE = "head", "48x64"
_EPISODE_FILE = re.compile(r'"[^"]*/episodes/(episode_\d+\.h5)"')
_RESULT = re.compile(r"\)\s+=\s+(-?\d+)")
_PID = re.compile(r"^(\d+)\s")


@dataclass(frozen=True)
class Case:
    name: str  # the export's folder name
    dataset: Path
    episodes: int
    flags: tuple[str, ...]


@dataclass
class Run:
    wall_s: float = 0.0
    peak_rss_mb: float = 0.0
    opens: Counter[str] = field(default_factory=Counter)  # episode file -> successful opens
    failed: str = ""


def progress(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def x2(args: list[str], env: dict[str, str], cwd: Path, log: Path) -> None:
    """Run `python -m x2 ARGS` to the end (the dataset preparation), or stop the bench."""
    with log.open("ab") as out:
        done = subprocess.run([sys.executable, "-m", "x2", *args], cwd=cwd, env=env, stdout=out,
                              stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"error: x2 {' '.join(args)}: exit {done.returncode} (log: {log})")


def environment(source: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=str(source), MUJOCO_GL="egl", HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env


def prepare(cache: Path, sizes: list[int], log: Path) -> list[Case]:
    """The cached datasets (made when missing; a folder without its `.done` marker is made again)."""
    cache.mkdir(parents=True, exist_ok=True)
    env = environment(REPO)
    largest = max(sizes)

    def made(path: Path, *steps: list[str], copy_of: Path | None = None) -> Path:
        marker = path.with_name(path.name + ".done")
        if not marker.exists():
            shutil.rmtree(path, ignore_errors=True)
            progress(f"making {path}")
            if copy_of is not None:
                shutil.copytree(copy_of, path)
            for step in steps:
                x2(step, env, cache, log)
            marker.touch()
        return path

    largest_path = cache / f"pick_place_{largest}"
    state = made(largest_path, ["synth", "--task", "pick_place", "-n", str(largest), "--workers", "2", "--seed", "0",
                                "--dataset", str(largest_path)])
    camera_path = cache / f"pick_place_{largest}_{CAMERA}{CAMERA_SIZE}"
    camera = made(camera_path, ["render", str(camera_path), "--cameras", CAMERA, "--size", CAMERA_SIZE,
                                "--workers", "2"], copy_of=state)
    cases: list[Case] = []
    for n in sorted(sizes):
        for kind, source, flags in (("state", state, ("--state-only",)), ("camera", camera, ())):
            dataset = source if n == largest else made(
                source.with_name(source.name.replace(str(largest), str(n), 1)),
                ["datasets", "filter", str(source), "--episodes", f"0-{n - 1}", "--out",
                 str(source.with_name(source.name.replace(str(largest), str(n), 1)))])
            cases.append(Case(f"{kind}-{n}", dataset, n, flags))
    return cases


def measured(cmd: list[str], env: dict[str, str], cwd: Path, log: Path) -> tuple[float, float, int]:
    """(wall s, peak RSS MB of the child, exit code)."""
    with log.open("ab") as out:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)  # (reaped here: Popen must not wait for it again)
    return wall, usage.ru_maxrss / 1024, proc.returncode  # ru_maxrss is in KiB on Linux


def episode_opens(trace: Path) -> Counter[str]:
    """Successful open/openat calls on episode files in an `strace -f -o` log (calls split by another thread's
    output, "<unfinished ...>" then "<... resumed>", counted by their result)."""
    opens: Counter[str] = Counter()
    pending: dict[str, str] = {}  # pid -> file of its unfinished open
    for line in trace.read_text(errors="replace").splitlines():
        pid_match = _PID.match(line)
        pid = pid_match.group(1) if pid_match else ""
        name = _EPISODE_FILE.search(line)
        if "resumed>" in line:
            file = pending.pop(pid, None)
            result = _RESULT.search(line)
            if file is not None and result is not None and int(result.group(1)) >= 0:
                opens[file] += 1
        elif name is not None and ("open(" in line or "openat(" in line):
            if line.rstrip().endswith("<unfinished ...>"):
                pending[pid] = name.group(1)
            elif (result := _RESULT.search(line)) is not None and int(result.group(1)) >= 0:
                opens[name.group(1)] += 1
    return opens


def run_case(case: Case, side: Side, cwd: Path, traced: Path, logs: Path) -> Run:
    env = side.env()
    log = logs / f"{side.name}-{case.name}.log"
    export = ["-m", "x2", "export", "lerobot", str(case.dataset), *case.flags]
    run = Run()
    wall, rss, code = measured([sys.executable, *export, "--out", str(side.workspace / "exports" / case.name)],
                               env, cwd, log)
    run.wall_s, run.peak_rss_mb = wall, rss
    if code != 0:
        run.failed = f"exit {code} (log: {log})"
        return run
    trace = logs / f"{side.name}-{case.name}.strace"
    _, _, code = measured([STRACE, "-f", "-e", "trace=open,openat", "-o", str(trace), sys.executable, *export,
                           "--out", str(traced / case.name)], env, cwd, log)
    shutil.rmtree(traced / case.name, ignore_errors=True)
    if code != 0:
        run.failed = f"exit {code} under strace (log: {log})"
        return run
    run.opens = episode_opens(trace)
    trace.unlink()
    return run


def same_bytes(case: Case, before: dict[str, str], after: dict[str, str]) -> str:
    prefix = f"exports/{case.name}/"
    mine = [(k, v) for k, v in before.items() if k.startswith(prefix)]
    theirs = [(k, v) for k, v in after.items() if k.startswith(prefix)]
    if not mine or not theirs:
        return "n/a"
    found = differences(mine, theirs)
    return "yes" if not found else f"NO: {found[0]}"


def opens_text(run: Run, episodes: int) -> str:
    if not run.opens:
        return "-"
    per_file = sorted(set(run.opens.values()))
    spread = str(per_file[0]) if len(per_file) == 1 else f"{per_file[0]}-{per_file[-1]}"
    return f"{sum(run.opens.values()) / episodes:.2f} ({len(run.opens)} files, each {spread}x)"


def checkout(rev: str, into: Path) -> None:
    subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", rev + "^{commit}"], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(into), rev], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--before", required=True, help="git revision of the old version")
    parser.add_argument("--cache", type=Path, required=True, help="folder of the cached datasets (made when missing)")
    parser.add_argument("--sizes", default="100,300", help="episode counts, comma-separated (default: 100,300)")
    parser.add_argument("--keep", action="store_true", help="keep the workspaces and logs for inspection")
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",")})
    if not Path(STRACE).exists():
        print(f"error: strace: found none at {STRACE}; allowed: strace installed", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    top = Path(tempfile.mkdtemp(prefix="x2-export-memory-")).resolve()
    source = top / "src-before"
    checked_out = False
    try:
        (top / "logs").mkdir()
        cases = prepare(args.cache.resolve(), sizes, top / "logs" / "prepare.log")
        try:
            checkout(args.before, source)
        except subprocess.CalledProcessError:
            print(f"error: --before: found {args.before!r}; allowed: a git revision of {REPO}", file=sys.stderr)
            return 2
        checked_out = True
        sides = [Side("before", source, top / "ws-before"), Side("after", REPO, top / "ws-after")]
        for side in sides:
            (side.workspace / "exports").mkdir(parents=True)
            (top / f"cwd-{side.name}").mkdir()
            (top / f"traced-{side.name}").mkdir()
        progress(f"before = {args.before} ({source}), after = working tree ({REPO}); under {top}")
        runs: dict[tuple[str, str], Run] = {}
        for case in cases:
            for side in sides:
                progress(f"{case.name}: {side.name}")
                runs[case.name, side.name] = run_case(case, side, top / f"cwd-{side.name}",
                                                      top / f"traced-{side.name}", top / "logs")
        progress("fingerprinting both sides' exports")
        prints = {side.name: dict(mask(fingerprint(side), EXCLUDED)[0]) for side in sides}
        print(f"\nx2 export lerobot, before = {args.before}, after = working tree; peak RSS from wait4, "
              "opens from strace (open/openat of episode files, successful)")
        print("| dataset | episodes | side | wall s | peak RSS MB | episode-file opens per episode | same bytes |")
        print("|---|---|---|---|---|---|---|")
        worst = 0
        for case in cases:
            same = same_bytes(case, prints["before"], prints["after"])
            worst = max(worst, 0 if same == "yes" else 1)
            for side in sides:
                run = runs[case.name, side.name]
                kind = "state only" if case.flags else f"{CAMERA} {CAMERA_SIZE} stored"
                cells = [kind, str(case.episodes), side.name, f"{run.wall_s:.1f}", f"{run.peak_rss_mb:.0f}",
                         run.failed or opens_text(run, case.episodes), same if side.name == "after" else ""]
                print("| " + " | ".join(cells) + " |")
                worst = max(worst, 1 if run.failed else 0)
        return worst
    finally:
        if checked_out:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(source)], check=False)
        if args.keep:
            print(f"kept: {top}")
        else:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
