"""The render pass: camera streams from recorded states (state first, pixels later)."""

from x2.render.frames import ImageSize, StateRenderer

__all__ = ["ImageSize", "StateRenderer"]
