"""`x2 collect teleop`: an operator drives the simulated robot with a device; every episode is recorded."""

from __future__ import annotations

import os
import sys
from typing import Annotated, cast

import typer
from rich.live import Live
from rich.prompt import Prompt
from rich.table import Table

from x2.cli._common import console, fail, translate_errors
from x2.datasets import workspace
from x2.devices import EXAMPLES, Device, make_device
from x2.devices.keyboard import Backend as KeyboardBackend
from x2.devices.keyboard import KeyboardConfig, KeyboardDevice, keymap_lines
from x2.devices.replay import ReplayDevice
from x2.errors import X2Error
from x2.rollout import open_dataset
from x2.sim import Backend, make_backend
from x2.spec import load_env, load_robot, names
from x2.teleop import TeleopConfig, TeleopSession, TeleopStatus, panel
from x2.teleop.live import Picture
from x2.teleop.preview import Preview, PreviewConfig

DEFAULT_ROBOT = "artixon-g"


def _choose_task(task: str | None, robot: str) -> str:
    """The task: given, or asked for when a person is at the terminal (default: the robot's reference task)."""
    if task:
        return task
    default = load_robot(robot).reference_task
    if not sys.stdin.isatty():
        if default:
            return default
        raise X2Error(f"--task: found none and no terminal to ask; allowed: {', '.join(names('tasks'))}")
    choices = names("tasks")
    return Prompt.ask("task", choices=choices, default=default or choices[0], console=console)


def _lifecycle_keys(device: Device, keys: str) -> list[Device]:
    """Episode keys beside a non-keyboard device: the keyboard with motion keys off."""
    if device.kind == "keyboard" or keys == "none":
        return []
    if keys == "auto" and not (os.environ.get("DISPLAY") or sys.stdin.isatty()):
        return []  # nobody at a keyboard (CI, a replay in the background): the device ends episodes
    backend = cast(KeyboardBackend, keys)  # auto, x11 or terminal: the option's choices
    return [KeyboardDevice(KeyboardConfig(backend=backend, motion=False))]


@translate_errors
def teleop(
    robot: Annotated[str | None, typer.Option("--robot", "-r", help="robot to drive (default: artixon-g, or "
                                              "the replayed episode's)")] = None,
    task: Annotated[str | None, typer.Option("--task", "-t", help="task (default: asked, or the robot's "
                                             "reference task)")] = None,
    device: Annotated[str, typer.Option("--device", "-D", help=f"input device: {', '.join(EXAMPLES)}")] = "keyboard",
    episodes: Annotated[int | None, typer.Option("--episodes", "-n", min=1, help="episodes to save, then stop "
                                                 "(default: until you quit)")] = None,
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="dataset name or folder "
                                                "(default: data/<task>)")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="master seed; episode i's scene derives from it "
                                             "(default 0; replaying an episode starts in its scene)")] = None,
    variant: Annotated[str | None, typer.Option("--variant", help="scene variant (default: default, or the "
                                                "replayed episode's)")] = None,
    max_seconds: Annotated[float | None, typer.Option("--max-seconds", min=1.0, help="episode time limit "
                                                      "(default: 3x the task horizon)")] = None,
    success_hold: Annotated[float, typer.Option("--success-hold", min=0.0, help="end an episode this many seconds "
                                                "after the task succeeds; 0 = only the keys end it")] = 1.0,
    keys: Annotated[str, typer.Option("--keys", help="episode keys beside a VR or master-arm device: "
                                      "auto, x11, terminal or none")] = "auto",
    preview: Annotated[bool | None, typer.Option("--preview/--no-preview", help="a low-rate camera view in the "
                                                 "panel, rendered in its own process (default: at a terminal)")
                       ] = None,
    preview_camera: Annotated[str | None, typer.Option("--preview-camera", help="camera for the preview "
                                                       "(default: the robot's first, e.g. head)")] = None,
) -> None:
    """Teleoperate the simulated robot at the control rate and record every episode.

    Keys: [bold]→[/bold] save the episode and start the next, [bold]←[/bold] re-record it (same scene),
    [bold]Backspace[/bold] discard it, [bold]Esc[/bold] save and quit. An episode also ends a second
    after the task succeeds, when a node fails, or at the time limit; each is saved with its outcome.

    Examples:

      [cyan]x2 collect teleop --robot artixon-g[/cyan]

      [cyan]x2 collect teleop --task fruit_in_microwave --device master-arm:/dev/ttyUSB0 -n 20[/cyan]

      [cyan]x2 collect teleop --device vr --keys terminal[/cyan]

      [cyan]x2 collect teleop --device replay:data/fruit_in_microwave/episodes/episode_000003.h5 -n 1[/cyan]
      (replays that episode's device stream, or its actions as a leader arm, in its own scene)
    """
    if keys not in ("auto", "x11", "terminal", "none"):
        raise fail(f"--keys: found {keys!r}; allowed: auto, x11, terminal, none")
    dev = make_device(device)  # reads a replay file / checks the spec before anything is written
    # Replaying a recorded episode: its task, robot, variant and scene unless told otherwise.
    source = dev.stream.source if isinstance(dev, ReplayDevice) else {}
    robot = robot or str(source.get("robot") or DEFAULT_ROBOT)
    task_name = _choose_task(task or source.get("task") or None, robot)
    env = load_env(task_name, robot=robot, variant=variant or str(source.get("scene_variant") or "default"))
    first_seed = int(source["seed"]) if seed is None and "seed" in source else None
    backend = make_backend(env)
    path = workspace.resolve_output(dataset, default_name=env.task.name if env.task else env.scene_name)
    status = TeleopStatus(device=device)
    key_devices = _lifecycle_keys(dev, keys)
    view = _preview(backend, preview_camera) if (console.is_terminal if preview is None else preview) else None
    opened: list[Device] = []
    ds = None
    summaries = []
    try:
        if view is not None:
            view.start()
        for d in (dev, *key_devices):
            d.connect()
            opened.append(d)
        ds = open_dataset(path, env, backend)
        workspace.remember_dataset(path)
        console.print(f"dataset [bold]{path}[/bold] ({len(ds.episodes())} episodes so far); "
                      f"task [bold]{env.task.name if env.task else '-'}[/bold], device [bold]{device}[/bold]")
        config = TeleopConfig(episodes=episodes, seed=seed or 0, first_seed=first_seed, max_seconds=max_seconds,
                              success_hold_s=success_hold or None)
        session = TeleopSession(backend, ds, dev, status, config, keys=key_devices,
                                hooks=[view.hook] if view is not None else [])
        keymap = _keymap(dev)
        picture = _PictureCache(view) if view is not None else None
        if console.is_terminal:
            with Live(get_renderable=lambda: panel(status, dev.health, keymap, picture), console=console,
                      refresh_per_second=4, transient=False):
                summaries = session.run()
        else:
            summaries = session.run(on_episode=lambda s: console.print(_summary_line(s)))
    except KeyboardInterrupt:
        console.print("interrupted: the episode in progress was dropped; saved episodes are safe")
        raise
    finally:
        if view is not None:
            if view.frames == 0 and summaries:
                console.print("[yellow]note:[/yellow] the camera preview rendered no frame (its process needs "
                              "MuJoCo's EGL or OSMesa rendering); --no-preview turns it off")
            view.close()
        for d in reversed(opened):
            d.close()
        if ds is not None:
            ds.close()
        backend.close()
    _print_table(summaries)


def _preview(backend: Backend, camera: str | None) -> Preview:
    m = backend.model
    cameras = [m.camera(i).name for i in range(m.ncam)]
    camera = camera or (backend.env.robot.cameras[0] if backend.env.robot.cameras else "front")
    if camera not in cameras:
        raise X2Error(f"--preview-camera: found {camera!r}; allowed: {', '.join(cameras)}")
    return Preview(PreviewConfig(camera=camera))


class _PictureCache:
    """The panel's picture, rebuilt only when the preview has a new frame (2 Hz), not at every refresh."""

    def __init__(self, view: Preview):
        self.view, self.seen = view, 0
        self.picture: Picture | None = None

    def __call__(self) -> Picture | None:
        if self.view.frames != self.seen:
            self.seen = self.view.frames
            image = self.view.image()
            self.picture = Picture(image) if image is not None else None
        return self.picture


def _keymap(dev: Device) -> list[str]:
    if dev.kind != "keyboard" or not isinstance(dev, KeyboardDevice):
        return []
    shown = ("Right", "Left", "Bksp", "Esc")  # the lifecycle keys have their own row in the panel
    return [line for line in keymap_lines(motion=True) if not line.startswith(shown)]


def _summary_line(s) -> str:
    where = f"episode {s.index}" if s.index is not None else "dropped"
    return (f"{where}: {s.ending}, success={'yes' if s.success else 'no'}, {s.frames} frames, "
            f"late slots {s.missed_slots}, lateness p99 {s.lateness_p99_ms:.1f} ms")


def _print_table(summaries) -> None:
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
