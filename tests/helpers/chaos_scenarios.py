"""Every writing x2 command, as a run the chaos harness can start, kill and judge.

Each run gets a fresh workspace: copies of small real datasets (tests/helpers/real_dataset.py) or, for
a collector, an empty folder with a recorded leader-arm stream. `Fixtures` are made once per harness.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from helpers.chaos_checks import Store, Target
from helpers.chaos_kills import Run, any_of, appeared, opened, workers
from helpers.real_dataset import record_short_dataset
from helpers.teleop_streams import home_stream

# The stream ends its episodes at 1 s and 2 s and quits at 3 s: kills land before, between and after commits.
TELEOP_EVENTS = [(1.0, "next", -1), (2.0, "next", -1), (3.0, "quit", -1)]


@dataclass(frozen=True)
class Fixtures:
    short: Path  # 4 scripted fruit_in_microwave episodes of 24 ticks
    other: Path  # 3 more with another master seed (a merge refuses shared seeds)
    many: Path  # 12 episodes of 12 ticks: rm and partition have more to do
    stream: Path  # a pick_place leader-arm stream for `collect teleop --device replay:`

    @classmethod
    def make(cls, base: Path) -> Fixtures:
        base.mkdir(parents=True, exist_ok=True)
        made = cls(base / "short", base / "other", base / "many", base / "stream.h5")
        if not made.short.exists():
            record_short_dataset(made.short, episodes=4, ticks=24)
        if not made.other.exists():
            record_short_dataset(made.other, episodes=3, ticks=24, seed=1)
        if not made.many.exists():
            record_short_dataset(made.many, episodes=12, ticks=12)
        if not made.stream.exists():
            home_stream(made.stream, 4.0, TELEOP_EVENTS)
        return made


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def synth(fx: Fixtures, work: Path) -> Run:
    ds = _copy(fx.short, work / "ds")  # appends after committed episodes: none of them may be lost
    return Run(["synth", "--task", "fruit_in_microwave", "-n", "2", "--workers", "2", "--dataset", str(ds)],
               work, workers(2), stores=(Store(ds),), disk=ds)


def collect_teleop(fx: Fixtures, work: Path) -> Run:
    ds = work / "data" / "tele"
    return Run(["collect", "teleop", "--task", "pick_place", "--device", f"replay:{fx.stream}", "--dataset",
                "tele"], work, appeared(work / "data", "tele"), stores=(Store(ds),), disk=ds.parent)


def render(fx: Fixtures, work: Path) -> Run:
    ds = _copy(fx.short, work / "ds")
    return Run(["render", str(ds), "--cameras", "head", "--size", "48x64", "--workers", "2"], work, workers(2),
               stores=(Store(ds, rewrites_episodes=True),))


def augment_replay(fx: Fixtures, work: Path) -> Run:
    src, out = _copy(fx.short, work / "src"), work / "aug"
    return Run(["augment", "replay", str(src), "--out", str(out), "--variants", "2"], work,
               appeared(work, "aug"), stores=(Store(out),), sources=(src,))


def _export(kind: str, suffix: str) -> Callable[[Fixtures, Path], Run]:
    def build(fx: Fixtures, work: Path) -> Run:
        src, out = _copy(fx.short, work / "src"), work / "out"
        out.mkdir()
        target = out / f"short{suffix}"
        return Run(["export", kind, str(src), "--out", str(target), "--state-only"], work,
                   appeared(out, f".{target.name}*partial-*"), sources=(src,), target=Target(target, kind),
                   disk=out)

    return build


def merge(fx: Fixtures, work: Path) -> Run:
    a, b, out = _copy(fx.short, work / "a"), _copy(fx.other, work / "b"), work / "merged"
    return Run(["datasets", "merge", str(a), str(b), "--out", str(out)], work,
               any_of(opened(a), appeared(work, ".merged.building-*")), sources=(a, b), target=Target(out, "dataset"))


def filter_(fx: Fixtures, work: Path) -> Run:
    src, out = _copy(fx.short, work / "src"), work / "filtered"
    return Run(["datasets", "filter", str(src), "--episodes", "0-2", "--out", str(out)], work,
               any_of(opened(src), appeared(work, ".filtered.building-*")), sources=(src,),
               target=Target(out, "dataset"))


def partition(fx: Fixtures, work: Path) -> Run:
    ds = _copy(fx.many, work / "ds")
    return Run(["datasets", "partition", str(ds), "--val", "0.5"], work, opened(ds), stores=(Store(ds),))


RM_EPISODES = frozenset(range(1, 11))


def rm(fx: Fixtures, work: Path) -> Run:
    ds = _copy(fx.many, work / "ds")
    return Run(["datasets", "rm", str(ds), "1-10", "--yes"], work, opened(ds),
               stores=(Store(ds, may_drop=RM_EPISODES),))


SCENARIOS: dict[str, Callable[[Fixtures, Path], Run]] = {
    "synth": synth,
    "collect teleop": collect_teleop,
    "render": render,
    "augment replay": augment_replay,
    "export lerobot": _export("lerobot", "-lerobot"),
    "export zarr": _export("zarr", ".zarr"),
    "export hdf5": _export("hdf5", ".hdf5"),
    "datasets merge": merge,
    "datasets filter": filter_,
    "datasets partition": partition,
    "datasets rm": rm,
}
