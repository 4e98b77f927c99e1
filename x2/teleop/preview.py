"""A low-rate camera preview for the operator, rendered in its own process.

Rendering costs ~50 ms of CPU a frame here (Mesa on the CPU), far too much for the 30 Hz control
thread, so the loop only publishes the physics state into shared memory every few ticks (a copy of a
few hundred doubles); a spawned process holds its own renderer of the episode's world, draws the latest
state at `hz` and leaves the frame in shared memory for the panel, which draws it in the terminal.
Each episode sends its world's XML (welded objects included) once, at its first tick: a renderer can cross no
process boundary, and `model_xml` is every backend's world as MJCF text, so the preview draws it with MuJoCo's
renderer (x2/sim/mujoco/renderer.py), whichever backend steps it.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing as mp
import queue
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Event, Lock

import numpy as np

from x2.base.arrays import Floats, Image
from x2.processes.life import ParentProcess, die_with
from x2.sim.backend import Backend
from x2.sim.camera import ImageSize
from x2.sim.stream_colours import depth_range, depth_tile, segment_palette, segmentation_tile
from x2.sim.streams import DEPTH, RGB, SEGMENTATION, SegmentTable, Shot

MAX_STATE = 8192  # doubles: the booth's integration state is a few hundred


@dataclass(frozen=True)
class PreviewConfig:
    camera: str = "head"  # the robot's own view, as an operator in VR would see it
    stream: str = RGB  # x2.sim.streams' name: depth and segmentation are shown as `stream_picture` colours them
    width: int = 72  # pixels; the panel draws two pixel rows per text row
    height: int = 40
    hz: float = 2.0  # ~10 % of a core at 50 ms a frame
    publish_every: int = 5  # ticks between state copies (6 Hz at 30 Hz: fresher than the frames)


class Preview:
    def __init__(self, config: PreviewConfig | None = None):
        self.config = c = config or PreviewConfig()
        ctx = mp.get_context("spawn")  # a fresh interpreter: no inherited threads, locks or GL context
        self._lock = ctx.Lock()
        self._state = ctx.RawArray("d", MAX_STATE)
        self._state_len = ctx.RawValue("i", 0)
        self._state_seq = ctx.RawValue("q", 0)
        self._image = ctx.RawArray("B", c.width * c.height * 3)
        self._image_seq = ctx.RawValue("q", 0)
        self._worlds: mp.Queue[tuple[str, dict[str, bytes]]] = ctx.Queue()  # each new world: MJCF text, images
        self._stop = ctx.Event()
        self._proc = ctx.Process(target=_render_loop, name="x2-preview", daemon=True, args=(
            c, self._lock, self._state, self._state_len, self._state_seq, self._image, self._image_seq,
            self._worlds, self._stop, ParentProcess.here()))
        self._seen = 0

    def start(self) -> Preview:
        self._proc.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._proc.join(timeout=3.0)
        if self._proc.is_alive():
            self._proc.kill()
        self._worlds.close()

    def __enter__(self) -> Preview:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def hook(self, tick: int, backend: Backend) -> None:
        """A `RolloutOptions` hook: the world at an episode's first tick, the state every few ticks."""
        if tick == 0:
            self._worlds.put((backend.model_xml(), backend.model_textures()))
        if tick % self.config.publish_every == 0:
            self.publish(backend.get_state())

    def publish(self, state: Floats) -> None:
        n = len(state)
        if n > MAX_STATE:
            return  # a world this large gets no preview rather than a cut state
        with self._lock:
            np.frombuffer(self._state, np.float64, n)[:] = state
            self._state_len.value = n
            self._state_seq.value += 1

    def image(self) -> Image | None:
        """The latest frame (height, width, 3) uint8, or None before the first."""
        c = self.config
        with self._lock:
            if self._image_seq.value == 0:
                return None
            return np.frombuffer(self._image, np.uint8).reshape(c.height, c.width, 3).copy()

    @property
    def frames(self) -> int:
        return int(self._image_seq.value)


def stream_picture(shot: Shot, stream: str, table: SegmentTable) -> Image:
    """The camera's `stream` of `shot` as an (H, W, 3) uint8 picture for the panel, coloured as a contact sheet
    colours it (x2/sim/stream_colours.py): the picture itself; depth over the nearest and farthest depth this frame
    sees (where the shot's segmentation sees something: the far clip stays the background's colour); each
    segmentation id its thing's one colour (`table` names them)."""
    if stream == RGB:
        assert shot.rgb is not None
        return shot.rgb
    assert shot.segmentation is not None  # (depth is drawn with the ids: they say which pixels see nothing)
    if stream == DEPTH:
        assert shot.depth is not None
        return depth_tile(shot.depth, shot.segmentation, depth_range([shot.depth], [shot.segmentation]))
    return segmentation_tile(shot.segmentation, segment_palette(table))


def _render_loop(c: PreviewConfig, lock: Lock, state: ctypes.Array[ctypes.c_double], state_len: ctypes.c_int,
                 state_seq: ctypes.c_longlong, image: ctypes.Array[ctypes.c_ubyte], image_seq: ctypes.c_longlong,
                 worlds: mp.Queue[tuple[str, dict[str, bytes]]], stop: Event, parent: ParentProcess) -> None:
    die_with(parent)  # a SIGKILLed session never sets `stop`
    import x2  # noqa: F401  (caps BLAS threads, sets MUJOCO_GL before the renderer's import loads a GL)
    from x2.sim.mujoco.renderer import MujocoRenderer

    renderer: MujocoRenderer | None = None
    seen = 0
    buf = np.empty(MAX_STATE)
    period = 1.0 / c.hz
    size = ImageSize(c.height, c.width)
    try:
        while not stop.is_set():
            t0 = time.monotonic()
            with contextlib.suppress(queue.Empty):
                while True:  # only the newest world matters
                    xml, textures = worlds.get_nowait()
                    if renderer is not None:
                        renderer.close()
                        renderer = None
                    renderer = MujocoRenderer.of_xml(xml, (c.camera,), size, textures)
                    seen = 0
            if renderer is not None and state_seq.value != seen:
                with lock:
                    seen, n = state_seq.value, state_len.value
                    buf[:n] = np.frombuffer(state, np.float64, n)
                if n == renderer.state_size:
                    renderer.set_state(buf[:n])
                    # (depth is drawn with the ids, in the same pass, to know which pixels see nothing)
                    wanted = (DEPTH, SEGMENTATION) if c.stream == DEPTH else (c.stream,)
                    frame = renderer.render(c.camera) if c.stream == RGB else \
                        stream_picture(renderer.shot(c.camera, wanted), c.stream, renderer.segment_table)
                    with lock:
                        np.frombuffer(image, np.uint8)[:] = frame.reshape(-1)
                        image_seq.value += 1
            stop.wait(max(0.0, period - (time.monotonic() - t0)))
    finally:
        if renderer is not None:
            renderer.close()
