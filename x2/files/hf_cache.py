"""Hugging Face datasets' arrow cache kept inside a folder of ours while LeRobot loads a dataset.

Loading a LeRobot dataset copies its tables into the `datasets` library's cache (~/.cache/huggingface by default);
x2's readers of LeRobot folders (the export's read-back check, `x2 import lerobot`) point it into a folder they own
and remove it afterwards, so nothing is left in the user's home.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def hf_datasets_cache(folder: Path) -> Iterator[None]:
    """`datasets.config.HF_DATASETS_CACHE` set to `folder` for the body, put back and `folder` removed after."""
    import datasets.config  # (imported here: `datasets` comes with LeRobot, an optional extra)

    before = datasets.config.HF_DATASETS_CACHE
    datasets.config.HF_DATASETS_CACHE = folder
    try:
        yield
    finally:
        datasets.config.HF_DATASETS_CACHE = before
        shutil.rmtree(folder, ignore_errors=True)
