"""MuJoCo's StateRenderer (x2/sim/mujoco/renderer.py): a renderer whose construction fails closes the GL contexts it
had already made (its caller never gets it to close), and close() lets go of everything it drew with."""

from __future__ import annotations

import mujoco
import pytest

from x2.sim.camera import RENDERER_ENV, CameraError, ImageSize
from x2.sim.mujoco.renderer import MujocoRenderer
from x2.sim.mujoco.streams import StreamDrawer

SIZE = ImageSize(24, 32)
WORLD = "<mujoco><worldbody><camera name='c'/><geom size='0.1'/></worldbody></mujoco>"


def test_a_failed_construction_closes_the_drawer_it_made(monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[StreamDrawer] = []
    close = StreamDrawer.close

    def spy(drawer: StreamDrawer) -> None:  # (the real close, noted)
        closed.append(drawer)
        close(drawer)

    monkeypatch.setattr(StreamDrawer, "close", spy)
    model = mujoco.MjModel.from_xml_string(WORLD)
    # Filament without an X display refuses after the classic drawer (a mujoco.Renderer) was made
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv(RENDERER_ENV, "filament")
    with pytest.raises(CameraError, match=r"^renderer: found 'filament' without an X display"):
        MujocoRenderer(model, ["c"], SIZE)
    assert len(closed) == 1 and closed[0].renderer._gl_context is None
    # a renderer that was made closes its drawer once, in close()
    monkeypatch.setenv(RENDERER_ENV, "classic")
    with MujocoRenderer(model, ["c"], SIZE) as renderer:
        assert renderer.render("c").shape == (24, 32, 3) and len(closed) == 1
    assert len(closed) == 2 and renderer._filament is None
