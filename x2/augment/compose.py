"""The augmented world: the recorded model's text with a new static layer, nothing else changed.

The parent's `model_xml` is parsed back into an MjSpec (x2 wrote it from one, so it prints back
identically), the scenery's look is applied to materials and lights, and each placed distractor's geoms
are added to the world body inside a frame at its pose. No body or joint is added, so the state vector
keeps its size and meaning and the recorded `/states` set the new model exactly as they set the old one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import mujoco

from x2.augment.check import inserted_name
from x2.augment.placement import DistractorShape, Placed
from x2.sim.mujoco.look import apply_look
from x2.sim.mujoco.recorded_xml import world_spec
from x2.sim.mujoco.world import world_text, yaw_quat


def add_distractors(spec: mujoco.MjSpec, placed: Sequence[Placed], shapes: Mapping[str, DistractorShape]) -> None:
    for p in placed:
        frame = spec.worldbody.add_frame(pos=[p.x, p.y, p.z], quat=yaw_quat(p.yaw))
        for g in shapes[p.asset].geoms:
            geom = spec.worldbody.add_geom(
                name=inserted_name(p.name, g.name), type=mujoco.mjtGeom(g.type), size=list(g.size), pos=list(g.pos),
                quat=list(g.quat), rgba=list(g.rgba), friction=list(g.friction), condim=g.condim,
                contype=g.contype, conaffinity=g.conaffinity)
            geom.set_frame(frame)


def compose_world(parent_xml: str, look: Mapping[str, object], placed: Sequence[Placed],
                  shapes: Mapping[str, DistractorShape], timestep: float, source: str = "parent model_xml",
                  textures: Mapping[str, bytes] | None = None) -> tuple[str, dict[str, bytes]]:
    """The parent's world (read from the file `source` names, so checked first; `textures` the images it carries)
    with `look` and `placed`, and the images it carries now (the parent's, and the look's wood, concrete or
    fabric: x2/sim/mujoco/look.py)."""
    spec = world_spec(parent_xml, source, textures)
    images = apply_look(spec, look)
    add_distractors(spec, placed, shapes)
    return world_text(spec, timestep), images
