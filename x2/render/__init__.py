"""The render pass: camera streams from recorded states (state first, pixels later).

Names resolve on first use, so a render worker process can set its environment (BLAS threads, GL
backend) before numpy or mujoco is imported (x2.render.workers).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from x2.render.dataset import RenderProgress, RenderSummary, render_dataset
    from x2.render.defaults import DEFAULT_CAMERAS, DEFAULT_SIZE
    from x2.render.frames import ImageSize, StateRenderer
    from x2.render.sheet import contact_sheet
    from x2.render.source import episode_frames, frames_at, stored_cameras

_WHERE = {
    "ImageSize": "frames", "StateRenderer": "frames",
    "DEFAULT_CAMERAS": "defaults", "DEFAULT_SIZE": "defaults",
    "episode_frames": "source", "frames_at": "source",
    "stored_cameras": "source",
    "render_dataset": "dataset", "RenderSummary": "dataset", "RenderProgress": "dataset",
    "contact_sheet": "sheet",
}

__all__ = [
    "DEFAULT_CAMERAS", "DEFAULT_SIZE", "ImageSize", "RenderProgress", "RenderSummary",
    "StateRenderer", "contact_sheet", "episode_frames", "frames_at", "render_dataset", "stored_cameras",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'x2.render' has no attribute {name!r}")
    return getattr(importlib.import_module(f"x2.render.{module}"), name)
