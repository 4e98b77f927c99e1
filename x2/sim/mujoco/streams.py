"""A camera's rgb, depth and segmentation of one state, drawn with as few passes of MuJoCo's classic renderer as they
allow (x2/sim/mujoco/renderer.py draws every stream through this).

`mujoco.Renderer` draws one stream a call: a picture, or depth, or segmentation, each a full render of the scene.
Depth and segmentation come from the same kind of render (the scene flags `mujoco.Renderer` sets for both,
`mjRND_SEGMENT` and `mjRND_IDCOLOR`: no lighting, no reflections), so one such pass gives both (`mjr_readPixels` reads
the colours and the depth buffer at once), and rgb+depth+segmentation costs two renders of the scene, not three.
(The picture's own depth buffer is not the scene's geometry: the reflective floor is drawn mirrored into it;
measured on fruit_in_microwave's head camera, up to 1.8 m off MuJoCo's depth render.) The depth buffer becomes
metres exactly as `mujoco.Renderer.render` makes it (MuJoCo 4.0.1's code, the same float32 coefficients), and the
segmentation's colours become MuJoCo's (object id, object type) as it makes them, then x2's ids
(x2/sim/mujoco/segments.py).

It reads the scene, rectangle and contexts of a `mujoco.Renderer` it owns (private attributes of MuJoCo's Python
class: the class makes the GL context and offscreen buffer every platform needs, which this does not redo).
"""

from __future__ import annotations

import mujoco
import numpy as np
import numpy.typing as npt

from x2.base.arrays import Floats, Image
from x2.sim.mujoco.segments import WorldSegments
from x2.sim.streams import DEPTH, RGB, SEGMENTATION, Segments, Shot


def to_metres(raw: npt.NDArray[np.float32], model: mujoco.MjModel, orthographic: bool) -> Floats:
    """The depth buffer (reversed z, MuJoCo's mjDEPTH_ZEROFAR) as metres along the optical axis: the arithmetic of
    `mujoco.Renderer.render` for depth, step for step (its float32 planes, float64 arithmetic, float32 result)."""
    extent = model.stat.extent
    znear, zfar = np.float32(model.vis.map.znear * extent), np.float32(model.vis.map.zfar * extent)
    out = raw.astype(np.float64)
    if orthographic:
        out = zfar - out * (zfar - znear)
    else:
        c = -(zfar + znear) / (zfar - znear)
        d = -(np.float32(2) * zfar * znear) / (zfar - znear)
        c = np.float32(-0.5) * c - np.float32(0.5)
        d = np.float32(-0.5) * d
        out = d / (out + c)
    metres: Floats = out.astype(np.float32)
    return metres


class StreamDrawer:
    """Draws the streams of `model`'s cameras at height x width (see the module docstring)."""

    def __init__(self, model: mujoco.MjModel, height: int, width: int) -> None:
        self.model, self.height, self.width = model, height, width
        self._segments_of: WorldSegments | None = None  # made when first asked for
        self.renderer = mujoco.Renderer(model, height=height, width=width)
        r = self.renderer
        # mujoco.Renderer's own scene, rectangle and contexts (see the module docstring)
        self._scene: mujoco.MjvScene = r._scene
        self._rect: mujoco.MjrRect = r._rect
        self._context: mujoco.MjrContext = r._mjr_context
        self._gl = r._gl_context

    def draw(self, data: mujoco.MjData, camera: int | mujoco.MjvCamera, streams: tuple[str, ...]) -> Shot:
        """The `streams` of camera `camera` (an id, or a free camera) at the state in `data`."""
        self.renderer.update_scene(data, camera=camera)
        if self._gl is not None:
            self._gl.make_current()
        h, w = self.height, self.width
        rgb: Image | None = None
        raw: npt.NDArray[np.float32] | None = None
        colours: Image | None = None
        want_depth, want_seg = DEPTH in streams, SEGMENTATION in streams
        if RGB in streams:
            rgb = np.empty((h, w, 3), np.uint8)
            mujoco.mjr_render(self._rect, self._scene, self._context)
            mujoco.mjr_readPixels(rgb, None, self._rect, self._context)
        if want_seg or want_depth:
            flags = self._scene.flags.copy()
            try:
                self._scene.flags[mujoco.mjtRndFlag.mjRND_SEGMENT] = True
                self._scene.flags[mujoco.mjtRndFlag.mjRND_IDCOLOR] = True
                colours = np.empty((h, w, 3), np.uint8) if want_seg else None
                raw = np.empty((h, w), np.float32) if want_depth else None
                mujoco.mjr_render(self._rect, self._scene, self._context)
                mujoco.mjr_readPixels(colours, raw, self._rect, self._context)
            finally:
                np.copyto(self._scene.flags, flags)
        flip = self._gl is not None  # EGL, OSMesa and GLFW read the picture bottom row first
        return Shot(
            rgb=None if rgb is None else (np.ascontiguousarray(rgb[::-1]) if flip else rgb),
            depth=None if raw is None else to_metres(raw[::-1] if flip else raw, self.model,
                                                     bool(self._scene.camera[0].orthographic)),
            segmentation=None if colours is None else self._segments(colours[::-1] if flip else colours))

    @property
    def segments(self) -> WorldSegments:
        if self._segments_of is None:
            self._segments_of = WorldSegments(self.model)
        return self._segments_of

    def _segments(self, colours: Image) -> Segments:
        """The segmentation pass's colours -> MuJoCo's (object id, object type) as `mujoco.Renderer` makes them ->
        x2's ids."""
        c = colours.astype(np.uint32)
        segid = c[..., 0] + c[..., 1] * (1 << 8) + c[..., 2] * (1 << 16)
        n = self._scene.ngeom
        table = np.full((n + 1, 2), -1, np.int32)  # segid 0 is the background
        for g in self._scene.geoms[:n]:
            if g.segid != -1:
                table[g.segid + 1] = (g.objid, g.objtype)
        return self.segments.ids(table[segid])

    def close(self) -> None:
        self.renderer.close()
