"""Names for the numpy array types x2 hands between modules, by dtype (shapes stay in the comments where
each array is declared)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.floating]  # any width: float64 from the simulator, float32 read back from a dataset
Ints = npt.NDArray[np.integer]
Bools = npt.NDArray[np.bool_]
Image = npt.NDArray[np.uint8]  # (H, W, 3) RGB, or (H, W) one channel
