"""The segmentation ids of a MuJoCo world (x2/sim/mujoco/segments.py): one name for two things (an object named like
a scenery body) is one line, not a traceback; an augmented world's distractors (geoms of the world body) are objects,
one id each.

Tiny MJCF worlds compiled in memory: milliseconds.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from x2.augment.check import inserted_name
from x2.base.errors import X2Error
from x2.sim.mujoco.segments import WorldSegments
from x2.sim.streams import SegmentTable


def _model(bodies: str) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(f"<mujoco><worldbody><geom size='1 1 .1' type='box'/>{bodies}"
                                          "</worldbody></mujoco>")


def test_an_object_named_like_a_scenery_body_is_one_line() -> None:
    ok = WorldSegments(_model("<body name='box/object'><freejoint/><geom size='.1'/></body>"
                              "<body name='wall'><geom size='.1'/></body>"))
    assert ok.table == SegmentTable(("background", "box", "world", "wall"),
                                    ("background", "object", "scenery", "scenery"))
    with pytest.raises(X2Error) as err:
        WorldSegments(_model("<body name='wall/object'><freejoint/><geom size='.1'/></body>"
                             "<body name='wall'><geom size='.1'/></body>"))
    assert str(err.value) == ("segmentation: names: found object 'wall' and scenery 'wall' (one name for two things); "
                              "allowed: distinct names for the robot links, objects and top-level scenery bodies")
    assert err.value.exit_code == 2


def test_each_distractor_is_an_object_of_its_own() -> None:
    """Distractors are geoms of the world body (x2/augment/compose.py), so by body they read as scenery `world`."""
    geoms = "".join(f"<geom name='{inserted_name(d, g)}' size='.05' pos='{x} 0 .2'/>"
                    for x, (d, g) in enumerate((("mug_0", "body"), ("mug_0", "handle"), ("box_1", "box"))))
    segments = WorldSegments(_model("<body name='box/object'><freejoint/><geom size='.1'/></body>"
                                    f"<body name='wall'><geom size='.1'/></body>{geoms}"))
    assert segments.table == SegmentTable(("background", "box", "augment/mug_0", "augment/box_1", "world", "wall"),
                                          ("background", "object", "object", "object", "scenery", "scenery"))
    geom = int(mujoco.mjtObj.mjOBJ_GEOM)
    # geoms in MuJoCo's order (the world body's first): the floor, mug_0's two, box_1's, the box, the wall; -1: nothing
    rendered = np.array([[[0, geom], [1, geom], [2, geom], [3, geom], [4, geom], [5, geom], [-1, -1]]], np.int32)
    assert segments.ids(rendered).tolist() == [[4, 2, 2, 3, 1, 5, 0]]
