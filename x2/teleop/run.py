"""One `x2 collect teleop` run put together: the device (and the keyboard's episode keys beside it), the
task and world (a played-back episode's unless told otherwise), the dataset, the camera preview and the
session, connected in order and closed in reverse. The caller draws and prints; it passes in how to ask
for a task when a person is there to answer."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

from x2 import format as fmt
from x2.base.errors import X2Error
from x2.datasets import Dataset, remember_dataset, resolve_output
from x2.devices import Device, make_device
from x2.devices.keyboard import KeyboardConfig, KeyboardDevice, keymap_lines
from x2.devices.playback import PlaybackDevice
from x2.envspec import load_env, load_robot, names, task_robot
from x2.envspec.held_out import refuse_eval_run
from x2.rollout import open_dataset
from x2.sim import Backend, make_backend
from x2.sim.camera import StreamRequest
from x2.sim.streams import RGB, STREAMS
from x2.teleop.live import Picture
from x2.teleop.preview import Preview, PreviewConfig
from x2.teleop.session import EpisodeSummary, TeleopConfig, TeleopSession
from x2.teleop.status import TeleopStatus

DEFAULT_ROBOT = "artixon-g"
KEYS = ("auto", "x11", "terminal", "none")
# Asks a person for the task: (the tasks there are, the default) -> the chosen one.
AskTask = Callable[[Sequence[str], str], str]


@dataclass(frozen=True)
class TeleopRequest:
    device: str = "keyboard"
    robot: str | None = None
    task: str | None = None
    dataset: str | None = None
    variant: str | None = None
    seed: int | None = None
    episodes: int | None = None
    max_seconds: float | None = None
    success_hold_s: float = 1.0
    keys: str = "auto"
    preview: bool = False
    preview_camera: str | None = None
    preview_stream: str = "rgb"  # x2.sim.streams' name the preview shows
    allow_eval: bool = False  # an eval scene variant or master seed (x2/envspec/held_out.py) is refused without it
    # camera streams the caller renders into the saved episodes once the run ends (x2/cli/collect_streams.py):
    # checked against the world here, before anything is opened
    streams: StreamRequest | None = None

    def __post_init__(self) -> None:
        # (before anything is opened or made: typer's min=1 lets inf and nan through)
        if self.max_seconds is not None and not (math.isfinite(self.max_seconds) and self.max_seconds > 0):
            raise X2Error(f"--max-seconds: found {self.max_seconds}; allowed: a number of seconds (leave it out for "
                          "no limit)")
        if self.preview_stream not in STREAMS:
            raise X2Error(f"--preview-stream: found {self.preview_stream!r}; allowed: one of {', '.join(STREAMS)}")


def choose_task(task: str | None, robot: str, ask: AskTask | None) -> str:
    """The task: given, else asked (when `ask` is given), else the robot's reference task."""
    if task:
        return task
    default = load_robot(robot).reference_task
    if ask is None:
        if default:
            return default
        raise X2Error(f"--task: found none and no terminal to ask; allowed: {', '.join(names('tasks'))}")
    choices = names("tasks")
    return ask(choices, default or choices[0])


def lifecycle_keys(device: Device, keys: str) -> list[Device]:
    """Episode keys beside a non-keyboard device: the keyboard with motion keys off."""
    if device.kind == "keyboard" or keys == "none":
        return []
    if keys == "auto" and not (os.environ.get("DISPLAY") or sys.stdin.isatty()):
        return []  # nobody at a keyboard (CI, a playback in the background): the device ends episodes
    backend: Literal["auto", "x11", "terminal"] = "x11" if keys == "x11" else \
        "terminal" if keys == "terminal" else "auto"
    return [KeyboardDevice(KeyboardConfig(backend=backend, motion=False))]


def preview_for(backend: Backend, camera: str | None, stream: str = RGB) -> Preview:
    cameras = backend.cameras.names
    camera = camera or (backend.env.robot.cameras[0] if backend.env.robot.cameras else "front")
    if camera not in cameras:
        raise X2Error(f"--preview-camera: found {camera!r}; allowed: {', '.join(cameras)}")
    return Preview(PreviewConfig(camera=camera, stream=stream))


class PictureCache:
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


def keymap(dev: Device) -> list[str]:
    """The keyboard's motion keys for the panel (the lifecycle keys have their own row there)."""
    if dev.kind != "keyboard" or not isinstance(dev, KeyboardDevice):
        return []
    shown = ("Right", "Left", "Bksp", "Esc")
    return [line for line in keymap_lines(motion=True) if not line.startswith(shown)]


class TeleopRun:
    """Built (and checked) on construction, before anything is written; connected by `with`, where
    `dataset` is open and remembered; `run()` records the episodes."""

    def __init__(self, request: TeleopRequest, ask_task: AskTask | None = None):
        if request.keys not in KEYS:
            raise X2Error(f"--keys: found {request.keys!r}; allowed: {', '.join(KEYS)}")
        self.request = request
        self.device = make_device(request.device)  # reads a playback file / checks the spec first
        # Playing back a recorded episode's device stream: its task, robot, variant and scene unless told otherwise.
        source = self.device.stream.source if isinstance(self.device, PlaybackDevice) else {}
        named_task = request.task or source.get(fmt.TASK_ATTR) or None
        # A task given is run with the robot its file names (a lab's own task with its own arm); none given, the
        # robot (artixon-g unless told) proposes its reference task.
        robot = request.robot or str(source.get(fmt.ROBOT_ATTR) or (named_task and task_robot(str(named_task)))
                                     or DEFAULT_ROBOT)
        task = choose_task(named_task, robot, ask_task)
        variant = request.variant or str(source.get(fmt.SCENE_VARIANT_ATTR) or "default")
        self.env = load_env(task, robot=robot, variant=variant)
        refuse_eval_run(self.env, request.seed or 0, request.allow_eval)
        seed = source.get(fmt.SEED_ATTR)
        self.first_seed = int(seed) if request.seed is None and seed is not None else None
        self.backend = make_backend(self.env)
        self.path: Path = resolve_output(request.dataset, default_name=self.env.dataset_name)
        self.status = TeleopStatus(device=request.device)
        self.keys = lifecycle_keys(self.device, request.keys)
        self.preview: Preview | None = None
        self.preview_frames = 0
        self.dataset: Dataset | None = None
        self._opened: list[Device] = []
        try:
            if request.streams is not None:
                self.backend.cameras.refuse_unless_drawn(request.streams.cameras, request.streams.size,
                                                         f"robot {self.env.robot.name}")
            self.preview = preview_for(self.backend, request.preview_camera, request.preview_stream) \
                if request.preview else None
        except BaseException:
            self.backend.close()
            raise

    def __enter__(self) -> TeleopRun:
        try:
            if self.preview is not None:
                self.preview.start()
            for d in (self.device, *self.keys):
                d.connect()
                self._opened.append(d)
            self.dataset = open_dataset(self.path, self.env, self.backend)
            remember_dataset(self.path)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def picture(self) -> PictureCache | None:
        return PictureCache(self.preview) if self.preview is not None else None

    def episodes_so_far(self) -> int:
        """Committed episodes in the dataset the run records into."""
        assert self.dataset is not None, "connect first (with TeleopRun(...) as run)"
        return len(self.dataset.episodes())

    def run(self, on_episode: Callable[[EpisodeSummary], None] | None = None) -> list[EpisodeSummary]:
        assert self.dataset is not None, "connect first (with TeleopRun(...) as run)"
        r = self.request
        config = TeleopConfig(episodes=r.episodes, seed=r.seed or 0, first_seed=self.first_seed,
                              max_seconds=r.max_seconds, success_hold_s=r.success_hold_s or None)
        session = TeleopSession(self.backend, self.dataset, self.device, self.status, config, keys=self.keys,
                                hooks=[self.preview.hook] if self.preview is not None else [])
        return session.run(on_episode=on_episode)

    def close(self) -> None:
        """Everything that was opened, in reverse; `preview_frames` says how many frames the preview drew."""
        if self.preview is not None:
            self.preview_frames = self.preview.frames
            self.preview.close()
            self.preview = None
        for d in reversed(self._opened):
            d.close()
        self._opened = []
        if self.dataset is not None:
            self.dataset.close()
            self.dataset = None
        if self.backend is not None:
            self.backend.close()
            self.backend = None  # type: ignore[assignment]
