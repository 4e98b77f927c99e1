"""The segmentation ids of a MuJoCo world (x2/sim/mujoco/segments.py): one name for two things (an object named like
a scenery body) is one line, not a traceback.

Tiny MJCF worlds compiled in memory: milliseconds.
"""

from __future__ import annotations

import mujoco
import pytest

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
