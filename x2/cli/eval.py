"""`x2 eval`: a policy drives episodes in the twin; the task's DAG scores them; every rollout is kept.
`x2 eval correlate` (x2.cli.eval_correlate) hangs under it: the group runs the evaluation itself when no
subcommand is named."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from x2.base.errors import PolicyError
from x2.cli._common import console
from x2.cli.group_class import X2Group
from x2.cli.options import CalibrationOpt, CpusPerWorkerOpt, RayOpt, RobotOpt, ray_target
from x2.cli.progress import progress
from x2.datasets import workspace
from x2.envspec.task import robot_with_calibration
from x2.eval.evaluate import REPORT_JSON, REPORT_PNG, EvalConfig, evaluate, write_report
from x2.eval.run_folder import run_folder_name
from x2.eval.runner import EvalProgress
from x2.eval.seeds import SplitPlan
from x2.policy.chunks import ChunkExecution
from x2.policy.protocol import ServiceInfo
from x2.sim.camera import ImageSize, parse_cameras
from x2.sim.streams import DEPTH, RGB, SEGMENTATION, parse_streams

eval_app = typer.Typer(name="eval", cls=X2Group, rich_markup_mode="rich", no_args_is_help=False,
                       invoke_without_command=True, add_completion=False, pretty_exceptions_enable=False)


@eval_app.callback()
def eval_command(
    ctx: typer.Context,
    task: Annotated[str | None, typer.Option("--task", "-t", help="Task name or path to a task YAML.",
                                             show_default=False)] = None,
    policy: Annotated[str | None, typer.Option(
        "--policy", "-p", help="ws://HOST:PORT (a running service), or a service x2 starts and stops: random, hold, "
        "expert, replay:DATASET, lerobot:PATH.", show_default=False)] = None,
    n: Annotated[int, typer.Option("-n", "--episodes", min=1, help="episodes per split")] = 10,
    split: Annotated[str, typer.Option("--split", help="train (in-distribution), eval (held out) or both")] = "both",
    robot: RobotOpt = None,
    calibration: CalibrationOpt = None,
    variant: Annotated[str | None, typer.Option("--variant", help="scene variant (default: the scene's first of "
                                                "the split)", show_default=False)] = None,
    seed: Annotated[int, typer.Option("--seed", help="master seed; episode k is its slot k (eval adds 2^31)")] = 1,
    workers: Annotated[int | None, typer.Option("--workers", "-w", min=1, help="episodes at once, each worker "
                                                "with its own connection (default: the number of cores; with "
                                                "--ray, as many as the cluster's CPUs hold)")] = None,
    ray: RayOpt = None,
    cpus_per_worker: CpusPerWorkerOpt = 1.0,
    train_dataset: Annotated[list[str] | None, typer.Option(
        "--train-dataset", help="a dataset the policy was trained on: its seeds are refused; repeatable",
        show_default=False)] = None,
    cameras: Annotated[str | None, typer.Option("--cameras", help="cameras to render for a service that names none "
                                                "(comma-separated)", show_default=False)] = None,
    size: Annotated[str, typer.Option("--size", help="their HEIGHTxWIDTH")] = "96x128",
    streams: Annotated[str | None, typer.Option("--streams", help="what of --cameras to send such a service: rgb, "
                                                "depth (observation.images.<cam>_depth, metres) or rgb,depth "
                                                "(default: rgb)", show_default=False)] = None,
    chunk_exec: Annotated[str, typer.Option("--chunk-exec", help="chunk (each answer's actions open-loop), K (the "
                                            "first K of each), or ensemble (asked every tick, ACT's temporal "
                                            "ensembling)")] = "chunk",
    timeout: Annotated[float, typer.Option("--timeout", min=0.1, help="seconds to wait for an answer")] = 30.0,
    device: Annotated[str, typer.Option("--device", help="torch device of a lerobot service")] = "cpu",
    max_ticks: Annotated[int | None, typer.Option("--max-ticks", min=1, help="end episodes here (default: the "
                                                  "task's horizon)", show_default=False)] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="the run's folder under ./data or a path "
                                                "(default: data/eval-<task>-<what the policy serves>-<8 hex of its "
                                                "digest>: a new folder per checkpoint)", show_default=False)] = None,
    videos: Annotated[bool, typer.Option("--videos", help="keep one MP4 per rollout in RUN/videos/<split>/"
                                         "episode_NNNNNN.mp4 (the robot's cameras side by side, frame number, "
                                         "active subtask and failure written under them)")] = False,
    video_size: Annotated[str, typer.Option("--video-size", help="HEIGHTxWIDTH of each camera in --videos")
                          ] = "120x160",
    report_only: Annotated[bool, typer.Option("--report-only", help="recompute the report of --dataset's "
                                              "rollouts, run nothing")] = False,
) -> None:
    """Evaluate a policy in the twin: success, progress, subtasks and failures, in and out of distribution.

    Each split's episodes are ordinary x2 episodes (source policy) in RUN/train and RUN/eval, so x2 datasets
    show, view, label, render and the exporters work on them; the report (RUN/eval_report.json and .png) is
    computed from them alone. Every policy evaluated with the same --task, -n and --seed meets the same worlds.

    Example: [cyan]x2 eval --task pick_place --policy lerobot:outputs/act/checkpoints/last/pretrained_model -n 50[/cyan]

    Bounds on the same seeds: [cyan]x2 eval --task pick_place --policy expert -n 50[/cyan]
    (also random, hold, and replay:DATASET on that dataset's seeds)

    A policy served elsewhere (openpi's websocket protocol): [cyan]x2 eval --task pick_place --policy ws://gpu-box:8000[/cyan]
    (one whose metadata names no cameras is sent [cyan]--cameras head --streams rgb,depth[/cyan] when asked to)

    On a Ray cluster whose workers reach the policy's URL:
    [cyan]x2 eval --task pick_place --policy ws://gpu-box:8000 -n 500 --ray auto[/cyan]

    With a video of every rollout (RUN/videos/train/episode_000000.mp4, ...):
    [cyan]x2 eval --task pick_place --policy expert -n 5 --videos[/cyan]

    Without --dataset a run goes to a folder named by what the policy serves (a checkpoint: its folder and the
    sha256 of its weights), so checkpoint after checkpoint never overwrite each other; x2 datasets ls lists them.

    The report again: [cyan]x2 eval --report-only --dataset eval-pick_place-expert-c7d25387[/cyan]

    Against real success rates: [cyan]x2 eval correlate --real real.csv data/eval-*[/cyan] (x2 eval correlate --help)
    """
    if ctx.invoked_subcommand is not None:
        return
    if report_only:
        if dataset is None:
            raise PolicyError("--report-only: found no --dataset; allowed: the folder of an earlier x2 eval run")
        root = workspace.resolve_output(dataset, default_name="")
        found = [root / s for s in ("train", "eval") if (root / s).is_dir()]
        if not found:
            raise PolicyError(f"--dataset: found no train/ or eval/ rollouts in {root}; allowed: an x2 eval run")
        _show(write_report(root, found), root)
        return
    if task is None or policy is None:
        raise PolicyError(f"{'--task' if task is None else '--policy'}: found none; allowed: see x2 eval --help")
    if split not in ("train", "eval", "both"):
        raise PolicyError(f"--split: found {split!r}; allowed: train, eval or both")
    shape = ImageSize.parse(size)
    sent = parse_streams(streams)
    if SEGMENTATION in sent:
        raise PolicyError(f"--streams: found {streams!r}; allowed: rgb, depth or rgb,depth (a policy is sent no "
                          "segmentation)")
    if streams is not None and not cameras:
        raise PolicyError(f"--streams: found {streams!r} without --cameras; allowed: with --cameras, what to send of "
                          "them to a service that names none")
    asked = {c: (shape.height, shape.width) for c in parse_cameras(cameras) or ()}
    config = EvalConfig(
        task=task, policy=policy, n=n, splits=("train", "eval") if split == "both" else (split,),
        robot=robot_with_calibration(robot, task, calibration), variant=variant, seed=seed,
        workers=workers if ray else workers or os.cpu_count() or 1,
        ray=ray_target(ray, cpus_per_worker),
        train_datasets=tuple(workspace.resolve_dataset(d) for d in train_dataset or ()),
        cameras=asked if RGB in sent else {}, depth=asked if DEPTH in sent else {},
        execution=ChunkExecution.parse(chunk_exec), timeout_s=timeout, device=device, max_ticks=max_ticks,
        videos=ImageSize.parse(video_size) if videos else None)
    given = workspace.given_output(dataset)
    named: list[Path] = [] if given is None else [given]

    def folder(info: ServiceInfo) -> Path:  # no --dataset: named by what the service says it serves
        named.append(workspace.dataset_path(run_folder_name(task, policy, info)))
        return named[-1]

    where = f"{config.workers or 'all'} workers" + (f" on Ray ({ray})" if ray else "")
    console.print(f"evaluating {policy} on {task}: {n} episodes per split ({', '.join(config.splits)}), "
                  f"{where}, master seed {seed}; rollouts in "
                  + (str(given) if given is not None else "data/eval-<task>-<policy>-<its digest>"))
    with progress("episodes") as update:
        def on_split(plan: SplitPlan, path: Path) -> None:
            console.print(f"{plan.split}: variant {plan.variant}, master seed {plan.master_seed} -> {path}")

        def advance(p: EvalProgress) -> None:
            alive = "" if p.workers_alive is None else f", {p.workers_alive} workers alive"
            made = f", {p.videos} videos" if videos else ""
            update(p.done, p.total, f"{p.succeeded} succeeded, {p.per_minute:.1f}/min{alive}{made}", stage=p.split)

        report = evaluate(config, given if given is not None else folder, advance, on_split)
    root = named[-1]
    _show(report, root)
    lost = {r["split"]: r["lost_with_their_worker"] for r in report.get("runs", []) if r["lost_with_their_worker"]}
    if lost:
        console.print("episodes lost with their worker on every try, not in the report: "
                      + "; ".join(f"{split} slots {', '.join(map(str, slots))}" for split, slots in lost.items())
                      + " (the same command again runs them)")


def _show(report: Mapping[str, Any], root: Path) -> None:
    # The report is x2.eval's JSON document (eval_report.json), read here field by field as it was written.
    for task, by_split in report["tasks"].items():
        who = "; ".join(f"{p.get('identity')} ({p.get('observes') or '?'})" for p in report.get("policies", []))
        table = Table(title=f"{task}: {who}", title_justify="left")
        table.add_column("")
        for split in by_split:
            table.add_column("in-distribution" if split == "train" else "out-of-distribution", justify="right")
        rows: list[tuple[str, list[str]]] = [
            ("episodes", [str(v["episodes"]) for v in by_split.values()]),
            ("success", [f"{v['success_rate']:.0%} ({v['success_ci95'][0]:.0%}-{v['success_ci95'][1]:.0%})"
                         for v in by_split.values()]),
            ("progress", [f"{v['mean_progress']:.2f}" for v in by_split.values()]),
        ]
        nodes = list(dict.fromkeys(n for v in by_split.values() for n in v["subtask_completion"]))
        rows += [(f"  {node}", [f"{v['subtask_completion'].get(node, 0.0):.0%}" for v in by_split.values()])
                 for node in nodes]
        reasons = list(dict.fromkeys(r for v in by_split.values() for r in v["failure_reasons"]))
        rows += [(f"failed at {r}", [str(v["failure_reasons"].get(r, 0)) for v in by_split.values()]) for r in reasons]
        rows.append(("time: inference/render/physics", [
            " / ".join(f"{v['time_share'][k]:.0%}" for k in ("inference", "render", "physics"))
            for v in by_split.values()]))
        for label, cells in rows:
            table.add_row(label, *cells)
        console.print(table)
    if report["dimensions"]:
        dims = Table(title="per capability dimension", title_justify="left")
        dims.add_column("dimension")
        splits = list(report["splits"])
        for split in splits:
            dims.add_column("in-distribution" if split == "train" else "out-of-distribution", justify="right")
        for dim, by_split in report["dimensions"].items():
            dims.add_row(dim, *(f"{by_split[s]['success_rate']:.0%} of {by_split[s]['episodes']}" if s in by_split
                                else "-" for s in splits))
        console.print(dims)
    console.print(f"report: {root / REPORT_JSON}, {root / REPORT_PNG}")
