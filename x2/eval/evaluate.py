"""A whole `x2 eval`: the policy (a URL, or a service x2 starts and stops), each split's episodes into its own
dataset under the run's folder, and the report of them all.

    RUN/train/   the in-distribution rollouts (an ordinary x2 dataset: show, view, label, render, export)
    RUN/eval/    the out-of-distribution rollouts
    RUN/eval_report.json, RUN/eval_report.png
    RUN/videos/<split>/episode_NNNNNN.mp4   with --videos: one per rollout (x2/render/video.py)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from x2.eval.picture import draw_report
from x2.eval.report import EvalReport, RunRecord, build_report
from x2.eval.runner import EvalProgress, EvalRun, EvalVideos, dumps, open_eval_pool, run_summary
from x2.eval.seeds import SplitPlan, plan_split, refuse_trained_seeds
from x2.eval.session import EvalSetup
from x2.files.atomic import write_bytes
from x2.policy.chunks import ChunkExecution
from x2.policy.client import RemotePolicy
from x2.policy.protocol import ServiceInfo
from x2.policy.services import ServeOptions, parse_kind
from x2.processes.pool import RayTarget, WorkerPool
from x2.sim.camera import ImageSize

REPORT_JSON, REPORT_PNG = "eval_report.json", "eval_report.png"
VIDEOS = "videos"


@dataclass(frozen=True)
class EvalConfig:
    task: str
    policy: str  # ws://HOST:PORT, or KIND[:ARG] for a service x2 starts
    n: int = 10
    splits: tuple[str, ...] = ("train", "eval")
    robot: str | None = None
    variant: str | None = None  # default: the scene's first variant of each split
    seed: int = 1
    workers: int | None = 1  # None: one per core, or with `ray` as many as the cluster holds
    ray: RayTarget | None = None
    train_datasets: tuple[Path, ...] = ()
    cameras: dict[str, tuple[int, int]] = field(default_factory=dict)
    depth: dict[str, tuple[int, int]] = field(default_factory=dict)  # depth maps for a service that names none
    execution: ChunkExecution = field(default_factory=ChunkExecution)
    timeout_s: float = 30.0
    device: str = "cpu"
    max_ticks: int | None = None
    videos: ImageSize | None = None  # --videos: one MP4 per rollout, tiles of this size; None: none


def plans(config: EvalConfig) -> list[SplitPlan]:
    out = [plan_split(config.task, config.robot, split, config.variant, config.seed, config.n)
           for split in config.splits]
    refuse_trained_seeds(out, config.train_datasets)
    return out


@contextlib.contextmanager
def policy_url(config: EvalConfig) -> Iterator[str]:
    """The service's URL: the one given, or that of a service started now and stopped with the run (it dies with
    this process even when this is SIGKILLed: x2/policy/process.py)."""
    if config.policy.startswith(("ws://", "wss://")):
        yield config.policy
        return
    parse_kind(config.policy)
    from x2.policy.process import ServiceProcess

    options = ServeOptions(task=config.task, robot=config.robot, variant=config.variant or "default",
                           device=config.device, execution=config.execution)
    with ServiceProcess.start(config.policy, options) as service:
        yield service.url


def evaluate(config: EvalConfig, root: Path | Callable[[ServiceInfo], Path],
             on_update: Callable[[EvalProgress], None] | None = None,
             on_split: Callable[[SplitPlan, Path], None] | None = None) -> EvalReport:
    """Run every split of `config` into `root` (or the folder `root` names for what the service says it serves:
    x2/eval/run_folder.py) and write the report there."""
    todo = plans(config)  # (refusals first: nothing is started or written for a run that cannot be)
    runs: list[RunRecord] = []
    with policy_url(config) as url, _pool(config) as pool:
        if not isinstance(root, Path):
            with RemotePolicy(url, config.timeout_s) as service:
                root = root(service.info)
        for plan in todo:
            setup = EvalSetup(config.task, config.robot, plan.variant, plan.master_seed, url, config.timeout_s,
                              config.cameras, config.execution, config.max_ticks,
                              None if config.policy.startswith(("ws://", "wss://")) else config.policy,
                              depth=config.depth)
            path = root / plan.split
            if on_split is not None:
                on_split(plan, path)
            videos = None if config.videos is None else EvalVideos(root / VIDEOS / plan.split, config.videos)
            progress = EvalRun(setup, plan, path, pool, videos=videos).run(on_update)
            runs.append({**run_summary(progress), "variant": plan.variant, "master_seed": plan.master_seed,
                         "dataset": str(path)})
    return write_report(root, [root / p.split for p in todo], runs)


@contextlib.contextmanager
def _pool(config: EvalConfig) -> Iterator[WorkerPool | None]:
    pool = open_eval_pool(config.workers, config.ray)
    try:
        yield pool
    finally:
        if pool is not None:
            pool.shutdown()


def write_report(root: Path, datasets: Sequence[Path], runs: Sequence[RunRecord] = ()) -> EvalReport:
    """eval_report.json and .png of `datasets`; the report."""
    report: EvalReport = build_report(datasets)
    if runs:
        report["runs"] = list(runs)
    write_bytes(root / REPORT_JSON, dumps(report).encode())
    draw_report(report, root / REPORT_PNG)
    return report
