"""Give a dataset's episodes stored camera streams, as a render pass leaves them (`/observations/images/<cam>`,
(T, H, W, 3) uint8, Zstd, one chunk a frame; docs/format.md), rendered from each file's own world.

`invert=True` stores 255 - the rendered picture, so a reader that re-renders instead of reading the
stored stream gives visibly different pixels.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import h5py
import hdf5plugin
import numpy as np

from x2.datasets import Dataset, Episode
from x2.datasets.index import write_index
from x2.recorded.world import open_world
from x2.sim.camera import ImageSize


def rendered_frames(ep: Episode, cameras: Sequence[str], size: ImageSize) -> dict[str, np.ndarray]:
    with open_world(ep) as world, world.backend.renderer(cameras, size) as renderer:
        shots = [renderer.frame(state) for state in ep["states"]]
    return {cam: np.stack([s[cam] for s in shots]) for cam in cameras}


def store_images(root: Path, cameras: Sequence[str], size: ImageSize, invert: bool = False) -> None:
    ds = Dataset.open(root)
    for record in ds.episodes():
        path = ds.episode_path(record.index)
        with Episode(path) as ep:
            streams = rendered_frames(ep, cameras, size)
        with h5py.File(path, "r+") as f:
            for cam, frames in streams.items():
                f.create_dataset(f"observations/images/{cam}", data=255 - frames if invert else frames,
                                 chunks=(1, size.height, size.width, 3), **hdf5plugin.Zstd(clevel=3))
    # The files changed after their commit: their index lines take the new sizes and checksums, as a render's do.
    records = []
    for record in ds.episodes():
        with Episode(ds.episode_path(record.index)) as ep:
            records.append(ep.record(ds.root))
    write_index(ds.index_path, records)


def stored_chunks(path: Path, paths: Sequence[str]) -> dict[str, list[bytes]]:
    """Each of the streams at `paths`, as its stored (compressed) chunks of one frame each, as they are on disk."""
    with h5py.File(path) as f:
        return {p: [f[p].id.read_direct_chunk((t,) + (0,) * (f[p].ndim - 1))[1] for t in range(f[p].shape[0])]
                for p in paths}
