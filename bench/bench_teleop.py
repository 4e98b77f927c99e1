"""Teleop loop figures, measured in one run:

1. The control loop at 30 Hz for N minutes (default 5) with a replay device (a leader-arm stream,
   120 Hz) and recording on, through the real TeleopSession, with the operator panel rendered at 4 Hz
   on its own thread and the camera preview (its own render process, 2 Hz, drawn in the panel) as
   `x2 collect teleop` does at a terminal (here to an off-screen terminal): achieved rate,
   lateness percentiles, overruns (missed slots) and that every tick's lateness is stored.
2. Recorder overhead: a teleop tick (teacher + DAG labels + record + physics step) with recording
   (EpisodeWriter on its writer thread, as teleop records, + the raw device stream) / the same tick
   without, in interleaved rounds of real-time episodes; medians of per-round means. Two views: the
   control thread's tick work (what paces the loop; target <= 1.10) and the
   process CPU time per tick (all threads: what recording costs the machine in total).

Usage: python bench/bench_teleop.py [--minutes 5] [--rounds 6] [--round-seconds 30] [--no-overhead]
"""

from __future__ import annotations

import argparse
import gc
import io
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.live import Live

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers.teleop_streams import home_stream  # noqa: E402

from x2.devices.playback import PlaybackDevice  # noqa: E402
from x2.envspec import load_env  # noqa: E402
from x2.rollout import RealTimeClock, Rollout, RolloutOptions, open_dataset, record_episode  # noqa: E402
from x2.sim.mujoco.backend import MujocoBackend  # noqa: E402
from x2.teleop import JointMirror, TeleopConfig, TeleopSession, TeleopStatus, panel  # noqa: E402
from x2.teleop.live import Picture  # noqa: E402
from x2.teleop.preview import Preview  # noqa: E402
from x2.teleop.teacher import DeviceTeacher  # noqa: E402

TASK = "fruit_in_microwave"
WORK_STAGES = ("teacher", "label", "record", "step")


def long_loop(tmp: Path, minutes: float) -> dict[str, float]:
    env = load_env(TASK)
    backend = MujocoBackend(env)
    stream = home_stream(tmp / "long.h5", minutes * 60 + 5, task=TASK, wiggle=0.3)
    ds = open_dataset(tmp / "long", env, backend)
    status = TeleopStatus(device="replay")
    config = TeleopConfig(episodes=1, max_seconds=minutes * 60, success_hold_s=None, stop_on_failure=False)
    screen = Console(file=io.StringIO(), force_terminal=True, width=120)
    pauses: list[tuple[float, float]] = []  # (start, ms)
    started: list[float] = []

    def gc_timer(phase: str, info: dict) -> None:  # how long each collection holds every thread
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            t0 = started.pop()
            pauses.append((t0, (time.perf_counter() - t0) * 1e3))

    gc.callbacks.append(gc_timer)
    with PlaybackDevice(stream) as dev, Preview() as view:
        session = TeleopSession(backend, ds, dev, status, config, hooks=[view.hook])

        def picture() -> Picture | None:
            image = view.image()
            return Picture(image) if image is not None else None

        with Live(get_renderable=lambda: panel(status, dev.health, (), picture), console=screen,
                  refresh_per_second=4):
            (summary,) = session.run()
        preview_frames = view.frames
        wall = status.last_tick_at - status.first_tick_at  # first to last tick: the loop's own span
    gc.callbacks.remove(gc_timer)
    with ds.load(summary.index) as ep:
        lat = ep["timing/lateness_ms"]
        frames = ep.frames
        work = sum(ep[f"timing/{s}_ms"] for s in WORK_STAGES)
    ds.close()
    period_ms = 1e3 / env.fps
    return {"frames": frames, "wall_s": wall, "rate_hz": (frames - 1) / wall, "p50": float(np.percentile(lat, 50)),
            "p99": float(np.percentile(lat, 99)), "max": float(lat.max()), "late_ticks": int((lat > period_ms).sum()),
            "missed": summary.missed_slots, "stored": len(lat) == frames, "work_ms": float(np.mean(work)),
            # collections during the loop (the session's own collect before its first tick excluded)
            "gc_max_ms": max((ms for t, ms in pauses if t >= status.first_tick_at), default=0.0),
            "gc_count": sum(t >= status.first_tick_at for t, _ in pauses), "preview_frames": preview_frames}


def overhead(tmp: Path, rounds: int, seconds: float) -> dict[bool, dict[str, list[float]]]:
    env = load_env(TASK)
    backend = MujocoBackend(env)
    ds = open_dataset(tmp / "overhead", env, backend)
    stream = home_stream(tmp / "round.h5", seconds + 2, task=TASK, wiggle=0.3)
    options = RolloutOptions(stop_on_success=False, stop_on_failure=False, max_ticks=round(seconds * env.fps))
    out: dict[bool, dict[str, list[float]]] = {True: {"tick": [], "cpu": []}, False: {"tick": [], "cpu": []}}
    for r in range(rounds):
        for recording in ((True, False) if r % 2 == 0 else (False, True)):
            with PlaybackDevice(stream) as dev:
                rollout = Rollout(backend, RealTimeClock(env.fps))
                teacher = DeviceTeacher(dev, JointMirror(env.fps), backend, TeleopStatus(), monitor=rollout.monitor,
                                        success_hold_s=None, record_stream=recording)
                cpu0 = time.process_time()
                if recording:
                    # (a dataset never repeats a seed: round r's, the same for both sides of the round)
                    result, _ = record_episode(ds, rollout, teacher, 1 + r, "teleop", options, background=True,
                                               device=lambda res, t=teacher: t.device_record(res.ticks, "max_seconds"))
                else:
                    result = rollout.run(teacher, 1 + r, None, options)
                cpu = (time.process_time() - cpu0) * 1e3 / result.ticks
            out[recording]["tick"].append(float(np.mean(sum(result.stage_ms[s] for s in WORK_STAGES))))
            out[recording]["cpu"].append(cpu)
    ds.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--round-seconds", type=float, default=30.0)
    ap.add_argument("--no-overhead", action="store_true", help="only the long loop")
    args = ap.parse_args()
    print(f"machine: {platform.node() or 'vm'} {platform.machine()} python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        res = {} if args.no_overhead else overhead(tmp, args.rounds, args.round_seconds)
        views = (("tick", "control-thread tick work"), ("cpu", "process CPU per tick (all threads)"))
        if res:
            print(f"recorder overhead, {args.rounds} interleaved rounds x {args.round_seconds:.0f} s at 30 Hz, "
                  "medians:")
        for view, label in views if res else ():
            rec, bare = res[True][view], res[False][view]
            ratio = statistics.median(rec) / statistics.median(bare)
            print(f"  {label}: with recording {statistics.median(rec):.3f} ms, without "
                  f"{statistics.median(bare):.3f} ms, ratio {ratio:.3f}; per round: "
                  + ", ".join(f"{a / b:.3f}" for a, b in zip(rec, bare, strict=True)))
        loop = long_loop(tmp, args.minutes)
        print(f"control loop, {args.minutes:g} min at 30 Hz, replay device + recording ({TASK}):")
        print(f"  {loop['frames']} frames, first to last tick {loop['wall_s']:.2f} s = {loop['rate_hz']:.3f} Hz "
              f"achieved; lateness p50 {loop['p50']:.2f} / p99 {loop['p99']:.2f} / max {loop['max']:.2f} ms; "
              f"ticks later than one period {loop['late_ticks']}; missed slots {loop['missed']}; "
              f"every tick's lateness stored: {loop['stored']}; mean tick work {loop['work_ms']:.2f} ms; "
              f"{loop['gc_count']} garbage collections, longest {loop['gc_max_ms']:.1f} ms; "
              f"{loop['preview_frames']} preview frames")


if __name__ == "__main__":
    main()
