"""The render pass: camera streams from recorded states written into the episode files (state first, pixels later),
and pictures made from worlds: contact sheets, task previews, a robot's portrait.

Names resolve on first use, so a render worker process can set its environment (BLAS threads, GL
backend) before numpy or mujoco is imported (x2.processes.worker runs the jobs of x2.render.jobs). Reading a
recorded episode's frames (stored or drawn now) is x2.recorded.frames.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from x2.render.dataset import RenderProgress, RenderSummary, render_dataset
    from x2.render.sheet import contact_sheet

_WHERE = {
    "render_dataset": "dataset", "RenderSummary": "dataset", "RenderProgress": "dataset",
    "contact_sheet": "sheet",
}

__all__ = ["RenderProgress", "RenderSummary", "contact_sheet", "render_dataset"]


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'x2.render' has no attribute {name!r}")
    return getattr(importlib.import_module(f"x2.render.{module}"), name)
