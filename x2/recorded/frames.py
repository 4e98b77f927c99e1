"""Camera frames of a recorded episode for a reader (exporters, viewers, the render pass): stored streams, else
rendered now from its states.

What `x2 render` and every exporter draw when not told otherwise (`DEFAULT_CAMERAS`, `DEFAULT_SIZE`) is decided
here, once.

Cameras: the robot's own views. A policy runs on the robot, so it trains on what the robot sees: the head
camera for the scene and both wrist cameras for the fingers and the grasp (the booth's `front` camera
exists for people watching, and the robot never has it).

Size: 240x320 (height x width). Policy trainers downsample anyway (diffusion policy and robomimic train on
84-240 pixel crops, LeRobot's ACT/diffusion configs resize on load), so larger frames only cost render
time and disk. Measured on this 2-core machine (llvmpipe, three cameras, one fruit_in_microwave
episode): 17 ms a frame at 96x128, 31 ms at 240x320, 69 ms at 480x640; stored with Zstd level 1 they
take ~9, ~26 and ~59 KiB a frame. 240x320 renders a 865-frame episode in ~27 s on one core (~22 MB)
and still shows the fingertips and the fruit clearly in the wrist views; 480x640 would more than
double both for detail the trainers throw away.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence

import h5py

from x2 import format as fmt
from x2.base.arrays import Image
from x2.datasets import Episode
from x2.recorded.world import open_world
from x2.sim.camera import ImageSize
from x2.sim.streams import SegmentTable, Shot

DEFAULT_CAMERAS: tuple[str, ...] = ("head", "left_wrist", "right_wrist")
DEFAULT_SIZE = ImageSize(240, 320)


def stored_cameras(ep: Episode) -> dict[str, ImageSize]:
    """Cameras whose stream is in the file, with its size."""
    out: dict[str, ImageSize] = {}
    for cam in ep.cameras:
        shape = ep.dataset(fmt.image_path(cam)).shape
        if len(shape) == 4 and shape[0] == ep.frames:
            out[cam] = ImageSize(int(shape[1]), int(shape[2]))
    return out


def default_cameras(stored: Iterable[Mapping[str, ImageSize]]) -> tuple[tuple[str, ...], str]:
    """The cameras a reader takes when none were asked for, and why: those every given episode already
    stores (what `x2 render` made, so nothing is drawn twice), else the render pass's defaults."""
    common: set[str] | None = None
    for cams in stored:
        common = set(cams) if common is None else common & set(cams)
    if common:
        return tuple(sorted(common)), "stored in the episodes"
    return DEFAULT_CAMERAS, "x2 render's defaults"


def split_cameras(ep: Episode, cameras: Sequence[str], size: ImageSize | None) -> tuple[list[str], list[str]]:
    """(cameras read from the file, cameras to render): a stream is read when stored at `size`, or at
    any size when `size` is None."""
    stored = stored_cameras(ep)
    read = [c for c in cameras if c in stored and (size is None or stored[c] == size)]
    return read, [c for c in cameras if c not in read]


def episode_frames(ep: Episode, cameras: Sequence[str],
                   size: ImageSize | None = None) -> Iterator[dict[str, Image]]:
    """One {camera: (H, W, 3) uint8} per frame, in order. A camera stored at `size` (or at any size when
    `size` is None) is read from the file; the others are rendered from /states of the file's own world
    (at DEFAULT_SIZE when `size` is None)."""
    yield from frames_at(ep, cameras, range(ep.frames), size)


_READ_BLOCK = 32  # frames per h5py read of a stored stream: one call per frame costs ~3x more per frame


def _stored(datasets: dict[str, h5py.Dataset], frames: Sequence[int]) -> Iterator[dict[str, Image]]:
    """Stored frames in the order asked; a run of consecutive frames is read a block at a time."""
    frames = list(frames)
    i = 0
    while i < len(frames):
        j = i + 1
        while j < len(frames) and j - i < _READ_BLOCK and frames[j] == frames[j - 1] + 1:
            j += 1
        blocks = {c: ds[frames[i]:frames[j - 1] + 1] for c, ds in datasets.items()}
        for k in range(j - i):
            yield {c: block[k] for c, block in blocks.items()}
        i = j


def frames_at(ep: Episode, cameras: Sequence[str], frames: Sequence[int],
              size: ImageSize | None = None, stored_any_size: bool = False) -> Generator[dict[str, Image], None, None]:
    """As `episode_frames`, for the given frame numbers only (in the order given). `stored_any_size`: a stored
    camera is read at whatever size it was stored, and only the others are drawn at `size` (a video's tiles:
    x2/render/video.py scales them to one size)."""
    read, draw = split_cameras(ep, cameras, None if stored_any_size else size)
    stored = _stored({c: ep.dataset(fmt.image_path(c)) for c in read}, frames)
    if not draw:
        for shot in stored:
            yield {c: shot[c] for c in cameras}
        return
    with open_world(ep) as world, world.backend.renderer(draw, size or DEFAULT_SIZE) as renderer:
        states = ep.dataset(fmt.STATES)
        for t in frames:
            frame = renderer.frame(states[t])
            frame.update(next(stored) if read else {})
            yield {c: frame[c] for c in cameras}


def shots_at(ep: Episode, cameras: Sequence[str], frames: Sequence[int], size: ImageSize,
             streams: tuple[str, ...]) -> tuple[list[dict[str, Shot]], SegmentTable]:
    """Each camera's `streams` (x2.sim.streams) at the given frames (in the order given), drawn from /states of the
    file's own world at `size` (stored streams are not read: every stream of one shot comes from one drawing), and
    the table naming the segmentation's ids."""
    with open_world(ep) as world, world.backend.renderer(cameras, size) as renderer:
        states = ep.dataset(fmt.STATES)
        shots: list[dict[str, Shot]] = []
        for t in frames:
            renderer.set_state(states[t])
            shots.append({c: renderer.shot(c, streams) for c in cameras})
        return shots, renderer.segment_table
