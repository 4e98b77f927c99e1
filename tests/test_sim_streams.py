"""The streams of one camera (x2/sim/mujoco/streams.py, MujocoRenderer.shot) on a world small enough to know the answer:
a wall square to the camera 0.99 m away and a ball before it, off centre. Depth is the distance along the optical axis,
so it is 0.99 m on every wall pixel whatever the lens does; a calibrated lens that distorts takes depth and ids from
the nearest pinhole pixel (never a blend across the ball's edge), and its rgb is the picture `render` draws.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from x2.base.errors import DatasetError
from x2.sim.camera import ImageSize
from x2.sim.mujoco.renderer import MujocoRenderer
from x2.sim.streams import BACKGROUND, SCENERY, parse_streams

SIZE = ImageSize(48, 64)
LENS = 'sensorsize="0.0048 0.0036" focal="0.0035 0.0035" resolution="64 48" user="0.15 -0.2 0 0 0.05 0 0 0"'


def _world(lens: str) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(f"""
<mujoco>
  <size nuser_cam="8"/>
  <visual><global offwidth="640" offheight="480"/></visual>
  <worldbody>
    <camera name="cam" pos="0 0 0" {lens}/>
    <geom name="wall" type="box" size="5 5 0.01" pos="0 0 -1" rgba="0.8 0.8 0.8 1"/>
    <body name="ball" pos="0.2 0.1 -0.5"><geom type="sphere" size="0.05" rgba="1 0 0 1"/></body>
  </worldbody>
</mujoco>""")


@pytest.mark.parametrize("lens", ['fovy="60"', LENS], ids=["pinhole", "distorted"])
def test_depth_is_the_distance_along_the_axis_and_ids_name_the_things(lens: str) -> None:
    model = _world(lens)
    with MujocoRenderer(model, ["cam"], SIZE) as r:
        r.set_state(np.zeros(r.state_size))
        assert ("distortion" in r.intrinsics("cam")) == (lens == LENS)  # drawn through the lens (x2/sim/mujoco/lens.py)
        shot = r.shot("cam", ("rgb", "depth", "segmentation"))
        assert shot.rgb is not None and shot.depth is not None and shot.segmentation is not None
        assert np.array_equal(shot.rgb, r.render("cam"))
        table = r.segment_table
        assert table.names == (BACKGROUND, "world", "ball") and table.kinds == (BACKGROUND, SCENERY, SCENERY)
        wall, ball = shot.segmentation == 1, shot.segmentation == 2
        assert wall.sum() > 0.8 * wall.size and ball.sum() > 0 and (wall | ball).all()
        assert np.abs(shot.depth[wall] - 0.99).max() < 1e-3
        assert (shot.depth[ball] > 0.449).all() and (shot.depth[ball] < 0.551).all()  # the sphere spans z 0.45..0.55
        assert ball[:, SIZE.width // 2:].sum() == ball.sum()  # off centre, where the lens bends most: to the right
        only_depth = r.shot("cam", ("depth",))
        assert only_depth.rgb is None and only_depth.segmentation is None
        assert only_depth.depth is not None and np.array_equal(only_depth.depth, shot.depth)


def test_unknown_streams_are_refused_in_one_line() -> None:
    assert parse_streams(None) == ("rgb",)
    assert parse_streams("segmentation,rgb") == ("rgb", "segmentation")
    for bad in ("rgb,rgb", "", "rgb,ir"):
        with pytest.raises(DatasetError, match=r"^--streams: found .*; allowed: distinct names of rgb, depth, "):
            parse_streams(bad)
