"""`x2 collect ...`: record episodes through the one loop into a dataset."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from x2.cli._common import console
from x2.cli.collect_streams import CamerasOpt, SizeOpt, StreamsOpt, render_saved, stream_request
from x2.cli.group_class import typer_group
from x2.cli.options import AllowEvalOpt, CalibrationOpt, OutputDatasetOpt, RobotOpt, TaskOpt, VariantOpt
from x2.cli.progress import progress
from x2.datasets import workspace
from x2.envspec import load_env
from x2.envspec.held_out import refuse_eval_run
from x2.envspec.task import robot_with_calibration
from x2.rollout import RealTimeClock, Rollout, open_dataset
from x2.rollout.episodes import record_scripted
from x2.sim import make_backend

app = typer_group(
    "collect", "Record episodes into a dataset.",
    "  x2 collect teleop --robot artixon-g\n\n"
    "  x2 collect teleop --task fruit_in_microwave --device master-arm:/dev/ttyUSB0 -n 20\n\n"
    "  x2 collect waypoints --task fruit_in_microwave -n 3\n\n"
    "  x2 collect waypoints --task pick_place --robot artixon-h --realtime --dataset smoke\n\n"
    "  x2 collect waypoints --task pick_place -n 2 --streams rgb,depth,segmentation --size 96x128",
)



@app.command("waypoints")
def waypoints(
    task: TaskOpt = "fruit_in_microwave",
    robot: RobotOpt = None,
    calibration: CalibrationOpt = None,
    episodes: Annotated[int, typer.Option("--episodes", "-n", min=1, help="episodes to record")] = 2,
    seed: Annotated[int, typer.Option("--seed", help="master seed; episode i's seed derives from it")] = 0,
    dataset: OutputDatasetOpt = None,
    variant: VariantOpt = "default",
    realtime: Annotated[bool, typer.Option("--realtime/--free", help="pace at the control rate or run free")] = False,
    allow_eval: AllowEvalOpt = False,
    streams: StreamsOpt = None,
    cameras: CamerasOpt = None,
    size: SizeOpt = None,
) -> None:
    """Record scripted joint-waypoint episodes: every arm reaches out, closes and opens its gripper and
    comes home. It exercises the loop, the DAG labels and the store; it does not solve the task.

    Example: [cyan]x2 collect waypoints --task fruit_in_microwave -n 3[/cyan]

    With depth and segmentation of the head camera, rendered into each episode once recorded (the files
    `x2 render --streams` makes afterwards; docs/format.md, "Camera streams"):

    [cyan]x2 collect waypoints -n 2 --streams rgb,depth,segmentation --cameras head --size 96x128[/cyan]
    """
    request = stream_request(streams, cameras, size)
    env = load_env(task, robot=robot_with_calibration(robot, task, calibration), variant=variant)
    refuse_eval_run(env, seed, allow_eval)
    backend = make_backend(env)
    if request is not None:
        try:
            backend.cameras.refuse_unless_drawn(request.cameras, request.size, f"robot {env.robot.name}")
        except BaseException:
            backend.close()
            raise
    path = workspace.resolve_output(dataset, default_name=env.dataset_name)
    ds = open_dataset(path, env, backend)
    workspace.remember_dataset(path)
    try:
        done, start = len(ds.episodes()), ds.next_slot(seed)
        console.print(f"dataset: {path} ({done} episodes so far); master seed {seed} from slot {start}")
        saved: list[int] = []
        clock = RealTimeClock(env.fps) if realtime else None
        rollout = Rollout(backend, clock)
        table = Table(title="episodes", title_justify="left")
        for col in ("episode", "seed", "frames", "end", "events", "success", "late slots"):
            table.add_column(col)
        with progress("recording", "episodes") as update:
            for s, result, record in record_scripted(ds, rollout, seed, start, episodes, update):
                if record is not None:
                    saved.append(record.index)
                events = ", ".join(f"{n}@{f}" for n, f in result.events) or "-"
                table.add_row(str(record.index) if record else "-", str(s), str(result.ticks), result.end_reason,
                              events, "yes" if result.success else "no", str(result.missed_slots))
    finally:
        ds.close()
        backend.close()
    console.print(table)
    if request is not None:
        render_saved(path, request, saved, allow_eval)
    if saved:
        console.print(f"next: [cyan]x2 datasets info[/cyan], [cyan]x2 datasets show {saved[0]} --plot timeline.png"
                      f"[/cyan], [cyan]x2 label {saved[0]}[/cyan]")
