"""Image chunks: one frame per chunk, Zstd level 1, compressed by ctypes calls into hdf5plugin's own zstd.

Both writers of camera streams use this (the episode writer at record time, `x2 render` afterwards), so
every image dataset in a dataset has the same layout: shape (T, H, W, 3) uint8, chunks (1, H, W, 3), the
hdf5plugin Zstd filter. Frames are compressed here and written with `write_direct_chunk`: the HDF5 filter
then only decodes.
"""

from __future__ import annotations

import ctypes
import functools
import os
from typing import Any

import hdf5plugin
import numpy as np
import numpy.typing as npt

from x2.base.errors import DatasetError

ZSTD_LEVEL = 1  # measured: ~7 ms per 3x480x640 frame at 11.7x on 2 cores


@functools.cache
def zstd_lib() -> ctypes.CDLL | None:
    """The zstd inside hdf5plugin's own filter library, so the chunks we compress are exactly what
    its HDF5 filter decodes; ctypes releases the GIL, so a thread pool compresses in parallel."""
    try:
        lib = ctypes.CDLL(os.path.join(hdf5plugin.PLUGIN_PATH, "libh5zstd.so"))
        lib.ZSTD_compressBound.restype = ctypes.c_size_t
        lib.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
        lib.ZSTD_compress.restype = ctypes.c_size_t
        lib.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                      ctypes.c_int]
        lib.ZSTD_isError.restype = ctypes.c_uint
        lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    except (OSError, AttributeError):
        return None  # callers then let the HDF5 filter compress (serially) as they write
    return lib


def compress_frame(frame: npt.NDArray[np.generic]) -> bytes:
    """One C-contiguous uint8 frame -> the bytes of its Zstd chunk. Only call when `zstd_lib()` loaded."""
    lib = zstd_lib()
    assert lib is not None
    frame = np.ascontiguousarray(frame)
    bound = lib.ZSTD_compressBound(frame.nbytes)
    out = ctypes.create_string_buffer(bound)
    size = lib.ZSTD_compress(out, bound, frame.ctypes.data, frame.nbytes, ZSTD_LEVEL)
    if lib.ZSTD_isError(size):
        raise DatasetError(f"zstd: frame: found compression error {size}; allowed: a uint8 image")
    return out.raw[:size]


def image_filter() -> dict[str, Any]:
    """The create_dataset keywords of the image filter (Zstd at ZSTD_LEVEL)."""
    return dict(hdf5plugin.Zstd(clevel=ZSTD_LEVEL))
