"""`x2 synth`: synthesise demonstrations with atomic skills and a motion planner."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from x2.cli._common import console
from x2.cli.collect_streams import CamerasOpt, SizeOpt, StreamsOpt, render_saved, stream_request
from x2.cli.options import (
    AllowEvalOpt,
    CalibrationOpt,
    CpusPerWorkerOpt,
    GripperOpt,
    OutputDatasetOpt,
    RayOpt,
    RobotOpt,
    TaskOpt,
    VariantOpt,
    ray_target,
)
from x2.cli.progress import progress
from x2.datasets import workspace
from x2.envspec.task import robot_with_calibration
from x2.format import SYNTH_REPORT_FILE
from x2.processes.pool import RayTarget
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthProgress, SynthRun

# (each default below is the library's field: written there once)


def synth(
    task: TaskOpt,
    n: Annotated[int, typer.Option("-n", "--num-demos", min=1,
                                   help="accepted demonstrations to produce")] = SynthConfig.n,
    robot: RobotOpt = SessionOptions.robot,
    calibration: CalibrationOpt = None,
    gripper: GripperOpt = SessionOptions.gripper,
    workers: Annotated[int | None, typer.Option("--workers", "-w", min=1, help="worker processes "
                                                "(default: the number of cores; with --ray, as many as the "
                                                "cluster's CPUs hold)")] = SynthConfig.workers,
    seed: Annotated[int, typer.Option("--seed",
                                      help="master seed; attempt i's seed derives from it")] = SynthConfig.seed,
    max_attempts: Annotated[int | None, typer.Option("--max-attempts", min=1, help="stop after this many "
                                                     "attempts (default: 3 n + 10)")] = SynthConfig.max_attempts,
    keep_failed: Annotated[bool, typer.Option("--keep-failed", help="also store rejected attempts, "
                                              "marked rejected")] = SynthConfig.keep_failed,
    dataset: OutputDatasetOpt = None,
    variant: VariantOpt = SessionOptions.variant,
    allow_eval: AllowEvalOpt = SynthConfig.allow_eval,
    sequential: Annotated[bool, typer.Option("--sequential", help="run one DAG node at a time (the same bytes "
                                             "as before the arm scheduler, for comparing datasets); default: "
                                             "nodes on different arms run at once")] = SessionOptions.sequential,
    grasp_variety: Annotated[int, typer.Option(
        "--grasp-variety", min=1, help="the best-ranked grasps each attempt samples among: 1 always takes the "
        "best (one grasp per object pose: what a behaviour-cloning policy learns from most easily)")
    ] = SessionOptions.grasp_variety,
    streams: StreamsOpt = None,
    cameras: CamerasOpt = None,
    size: SizeOpt = None,
    ray: RayOpt = None,
    cpus_per_worker: CpusPerWorkerOpt = RayTarget.cpus_per_worker,
) -> None:
    """Synthesise demonstrations with atomic skills and a motion planner.

    Each DAG node's skill runs through the motion planner and the same loop as teleoperation; node
    predicates verify every stage; accepted attempts are stored in attempt order. Ready nodes on
    different arms run at once (the left arm opens a door while the right one picks), each arm's
    motion checked against the other's over time.

    Example: [cyan]x2 synth --task fruit_in_microwave -n 300[/cyan]

    One node at a time: [cyan]x2 synth --task fruit_in_microwave -n 20 --sequential[/cyan]

    A first policy's data, one grasp per pose: [cyan]x2 synth --task pick_place -n 200 --grasp-variety 1[/cyan]

    Another robot, another gripper: [cyan]x2 synth --task pick_place --robot franka-panda --gripper G -n 20[/cyan]

    With pictures, rendered into each episode once the run ends (the files `x2 render` makes afterwards):

    [cyan]x2 synth --task pick_place -n 200 --streams rgb --cameras head,right_wrist --size 72x96[/cyan]

    On a Ray cluster: [cyan]x2 synth --task pick_place -n 1000 --ray auto[/cyan]
    """
    request = stream_request(streams, cameras, size)
    session = SessionOptions(task=task, robot=robot_with_calibration(robot, task, calibration), gripper=gripper,
                             variant=variant, sequential=sequential,
                             grasp_variety=grasp_variety)
    config = SynthConfig(session, n=n, workers=workers, seed=seed, max_attempts=max_attempts, keep_failed=keep_failed,
                         allow_eval=allow_eval, ray=ray_target(ray, cpus_per_worker), streams=request)
    run = SynthRun(config, workspace.given_output(dataset))  # (None: the default folder, which needs the robot)
    workspace.remember_dataset(run.path)
    for arm in run.env.robot.arms:
        if arm.part is not None and arm.part.defaulted:
            console.print(escape(f"warning: robot {run.env.robot.name}, arm {arm.name}: servo "
                                 f"{', '.join(arm.part.defaulted)} defaulted (not in its part file {arm.part.name}); "
                                 f"x2 robots check {run.env.robot.name} shows them"), soft_wrap=True)
    schedule = "one node at a time" if sequential else "ready nodes on free arms at once"
    run.start_workers()  # (before the progress display's thread: they start as copies of this process)
    run.refuse_undrawn_streams()  # (--cameras, --size: before anything is said or written)
    where = f" on Ray ({ray})" if ray else ""
    console.print(f"dataset: {run.path}; {run.workers} workers{where}; master seed {seed}; {schedule}")
    latest = run.progress

    def table() -> Table:
        p = latest
        out = Table(title=f"{p.accepted} accepted / {p.attempted} attempted", title_justify="left")
        out.add_column("outcome")
        out.add_column("attempts", justify="right")
        for reason, count in p.reasons.most_common():
            out.add_row(reason, str(count))
        return out

    with progress("accepted", below=table) as update:
        def advance(p: SynthProgress) -> None:
            nonlocal latest
            latest = p
            alive = "" if p.workers_alive is None else f", {p.workers_alive}/{run.workers} workers alive"
            update(p.accepted, n, f"{p.attempted} attempted, {p.per_minute:.1f}/min, "
                                  f"{100 * p.accepted / max(1, p.attempted):.0f}% accepted{alive}")

        latest = run.run(advance)
    if not console.is_terminal:  # at a terminal the live view kept its last frame; a log gets the table once
        console.print(table())
    first, last = run.first_attempt, run.first_attempt + latest.attempted - 1
    where = "" if first == 0 else f" (continuing the dataset's seed {seed} after its {first} earlier attempts)"
    console.print(f"{latest.stop_reason}: attempts {first}-{last}{where}. Report: {run.path / SYNTH_REPORT_FILE}")
    if request is not None:
        render_saved(run.path, request, run.committed, allow_eval)
    if latest.accepted < n:
        raise typer.Exit(1)
