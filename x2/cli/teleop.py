"""`x2 collect teleop`: an operator drives the simulated robot with a device; every episode is recorded.
Parsing and output only: the run is put together by x2.teleop.run."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated

import typer
from rich.live import Live
from rich.prompt import Prompt
from rich.table import Table

from x2.cli._common import console
from x2.cli.collect_streams import CamerasOpt, SizeOpt, StreamsOpt, render_saved, stream_request
from x2.cli.options import AllowEvalOpt, CalibrationOpt, OutputDatasetOpt
from x2.devices import EXAMPLES
from x2.envspec.task import robot_with_calibration
from x2.teleop import EpisodeSummary, panel
from x2.teleop.run import TeleopRequest, TeleopRun, keymap


def _ask_task(choices: Sequence[str], default: str) -> str:
    return Prompt.ask("task", choices=list(choices), default=default, console=console)


def teleop(
    robot: Annotated[str | None, typer.Option("--robot", "-r", help="robot to drive (default: the replayed "
                                              "episode's, the task's, else artixon-g)")] = None,
    calibration: CalibrationOpt = None,
    task: Annotated[str | None, typer.Option("--task", "-t", help="task (default: asked, or the robot's "
                                             "reference task)")] = None,
    device: Annotated[str, typer.Option("--device", "-D", help=f"input device: {', '.join(EXAMPLES)}")] = "keyboard",
    episodes: Annotated[int | None, typer.Option("--episodes", "-n", min=1, help="episodes to save, then stop "
                                                 "(default: until you quit)")] = None,
    dataset: OutputDatasetOpt = None,
    seed: Annotated[int | None, typer.Option("--seed", help="master seed; episode i's scene derives from it "
                                             "(default 0; replaying an episode starts in its scene)")] = None,
    variant: Annotated[str | None, typer.Option("--variant", help="scene variant (default: default, or the "
                                                "replayed episode's)")] = None,
    max_seconds: Annotated[float | None, typer.Option("--max-seconds", min=1.0, help="end each episode after "
                                                      "this many seconds (default: none; the task's horizon and "
                                                      "node timeouts limit synthesis, not you)")] = None,
    success_hold: Annotated[float, typer.Option("--success-hold", min=0.0, help="end an episode this many seconds "
                                                "after the task succeeds; 0 = only the keys end it")] = 1.0,
    keys: Annotated[str, typer.Option("--keys", help="episode keys beside a VR or master-arm device: "
                                      "auto, x11, terminal or none")] = "auto",
    preview: Annotated[bool | None, typer.Option("--preview/--no-preview", help="a low-rate camera view in the "
                                                 "panel, rendered in its own process (default: at a terminal)")
                       ] = None,
    preview_camera: Annotated[str | None, typer.Option("--preview-camera", help="camera for the preview "
                                                       "(default: the robot's first, e.g. head)")] = None,
    preview_stream: Annotated[str, typer.Option("--preview-stream", help="what the preview shows of its camera: "
                                                "rgb, depth (near yellow, far violet) or segmentation (a colour a "
                                                "thing), coloured as contact sheets colour them")
                              ] = "rgb",
    allow_eval: AllowEvalOpt = False,
    streams: StreamsOpt = None,
    cameras: CamerasOpt = None,
    size: SizeOpt = None,
) -> None:
    """Teleoperate the simulated robot at the control rate and record every episode.

    Keys: [bold]→[/bold] save the episode and start the next, [bold]←[/bold] re-record it (same scene),
    [bold]Backspace[/bold] discard it, [bold]Esc[/bold] save and quit. An episode also ends a second
    after the task succeeds, when a node's failure predicate holds (the block fell), or at --max-seconds; each
    is saved with its ending. The task's node timeouts and horizon do not end your episode.

    Examples:

      [cyan]x2 collect teleop --robot artixon-g[/cyan]

      [cyan]x2 collect teleop --task fruit_in_microwave --device master-arm:/dev/ttyUSB0 -n 20[/cyan]

      [cyan]x2 collect teleop --device vr --keys terminal[/cyan]

      [cyan]x2 collect teleop --task pick_place --max-seconds 120[/cyan]

      [cyan]x2 collect teleop --device playback:data/fruit_in_microwave/episodes/episode_000003.h5 -n 1[/cyan]
      (replays that episode's device stream, or its actions as a leader arm, in its own scene)

      [cyan]x2 collect teleop --task pick_place --streams rgb,depth,segmentation --cameras head --size 96x128[/cyan]
      (renders those streams into every saved episode once the session ends: the files `x2 render --streams` makes)
    """
    rendered = stream_request(streams, cameras, size)
    request = TeleopRequest(device=device, robot=robot_with_calibration(robot, task, calibration), task=task,
                            dataset=dataset, variant=variant, seed=seed,
                            episodes=episodes, max_seconds=max_seconds, success_hold_s=success_hold, keys=keys,
                            preview=console.is_terminal if preview is None else preview,
                            preview_camera=preview_camera, preview_stream=preview_stream, allow_eval=allow_eval,
                            streams=rendered)
    run = TeleopRun(request, ask_task=_ask_task if sys.stdin.isatty() else None)
    summaries: list[EpisodeSummary] = []
    try:
        with run:
            env = run.env
            console.print(f"dataset: {run.path} ({run.episodes_so_far()} episodes so far); "
                          f"task [bold]{env.task.name if env.task else '-'}[/bold], device [bold]{device}[/bold]")
            if console.is_terminal:
                dev, keys_shown, picture = run.device, keymap(run.device), run.picture()
                with Live(get_renderable=lambda: panel(run.status, dev.health, keys_shown, picture), console=console,
                          refresh_per_second=4, transient=False):
                    summaries = run.run()
            else:
                summaries = run.run(on_episode=lambda s: console.print(_summary_line(s)))
    except KeyboardInterrupt:
        console.print("interrupted: the episode in progress was dropped; saved episodes are safe"
                      + ("" if rendered is None else
                         f" but not rendered: x2 render {run.path} --streams {','.join(rendered.streams)} --cameras "
                         f"{','.join(rendered.cameras)} --size {rendered.size.height}x{rendered.size.width}"))
        raise
    finally:
        if request.preview and run.preview_frames == 0 and summaries:
            console.print("[yellow]note:[/yellow] the camera preview rendered no frame (its process needs "
                          "MuJoCo's EGL or OSMesa rendering); --no-preview turns it off")
    _print_table(summaries)
    if rendered is not None:
        render_saved(run.path, rendered, [s.index for s in summaries if s.index is not None], allow_eval)


def _summary_line(s: EpisodeSummary) -> str:
    where = f"episode {s.index}" if s.index is not None else "dropped"
    return (f"{where}: {s.ending}, success={'yes' if s.success else 'no'}, {s.frames} frames, "
            f"late slots {s.missed_slots}, lateness p99 {s.lateness_p99_ms:.1f} ms")


def _print_table(summaries: list[EpisodeSummary]) -> None:
    if not summaries:
        return
    table = Table(title="teleop episodes", title_justify="left")
    for col in ("episode", "seed", "frames", "ending", "success", "events", "late slots"):
        table.add_column(col)
    for s in summaries:
        table.add_row("-" if s.index is None else str(s.index), str(s.seed), str(s.frames), s.ending,
                      "yes" if s.success else "no", ", ".join(f"{n}@{f}" for n, f in s.events) or "-",
                      str(s.missed_slots))
    console.print(table)
    saved = [s.index for s in summaries if s.index is not None]
    if saved:
        console.print(f"next: [cyan]x2 datasets info[/cyan], [cyan]x2 datasets show {saved[-1]} --plot "
                      f"timeline.png[/cyan]")
