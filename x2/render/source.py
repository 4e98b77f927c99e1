"""Camera frames of an episode for a reader (exporters, viewers): stored streams, else rendered now."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from x2.datasets import Episode
from x2.render.frames import ImageSize, StateRenderer
from x2.rollout.world import open_world

IMAGES = "observations/images"


def stored_cameras(ep: Episode) -> dict[str, ImageSize]:
    """Cameras whose stream is in the file, with its size."""
    out: dict[str, ImageSize] = {}
    for cam in ep.cameras:
        shape = ep.dataset(f"{IMAGES}/{cam}").shape
        if len(shape) == 4 and shape[0] == ep.frames:
            out[cam] = ImageSize(int(shape[1]), int(shape[2]))
    return out


def episode_frames(ep: Episode, cameras: Sequence[str],
                   size: ImageSize | None = None) -> Iterator[dict[str, np.ndarray]]:
    """One {camera: (H, W, 3) uint8} per frame, in order. A camera stored at `size` (or at any size when
    `size` is None) is read from the file; the others are rendered from /states of the file's own world."""
    stored = stored_cameras(ep)
    read = [c for c in cameras if c in stored and (size is None or stored[c] == size)]
    draw = [c for c in cameras if c not in read]
    datasets = {c: ep.dataset(f"{IMAGES}/{c}") for c in read}
    if not draw:
        for t in range(ep.frames):
            yield {c: datasets[c][t] for c in cameras}
        return
    with open_world(ep) as world, StateRenderer(world, draw, size or ImageSize(480, 640)) as renderer:
        states = ep.dataset("states")
        for t in range(ep.frames):
            frame = renderer.frame(states[t])
            frame.update({c: datasets[c][t] for c in read})
            yield {c: frame[c] for c in cameras}
