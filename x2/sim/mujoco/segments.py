"""The segmentation ids of a MuJoCo world (x2.sim.streams.SegmentTable), read from its model alone, so a world
rebuilt from an episode's `model_xml` gives the same table, and the same dataset's episodes (one robot, one booth, the
same objects) share it.

Every body of the world belongs to one thing. A body under a top-level body named `<object>/object` (the way x2's
world builder roots each object, x2/sim/mujoco/world.py) belongs to that object, moving parts (a microwave's door)
included. A body under a top-level body with joints of its own is a robot link, named by its body. Any other
top-level body (the walls; the world body itself: the floor and table its geoms draw) is scenery, named by that body.
An augmented world's distractors (x2/augment/compose.py) are geoms of the world body named
`augment/<distractor>/<geom>`: each distractor is an object too, named `augment/<distractor>` (no task object's name
has a slash), after the world's own objects.
Ids: 0 background, then the robot links in the model's body order, the objects in the order the world first names
them, the scenery in body order.
"""

from __future__ import annotations

import mujoco
import numpy as np
import numpy.typing as npt

from x2.sim.camera import CameraError
from x2.sim.streams import BACKGROUND, OBJECT, ROBOT, SCENERY, Segments, SegmentTable

WORLD_BODY = "world"
INSERTED_PREFIX = "augment/"  # a distractor's geoms: augment/<distractor>/<geom> (x2/augment/check.py names them)


class WorldSegments:
    """The table of `model` and the lookup from MuJoCo's segmentation render ((H, W, 2) object id, object type) to
    its ids."""

    def __init__(self, model: mujoco.MjModel) -> None:
        # (here, not at the top: the world builder imports the renderer's modules while it loads)
        from x2.sim.mujoco.world import ASSET_ROOT_BODY

        object_suffix = "/" + ASSET_ROOT_BODY
        roots = [int(r) for r in model.body_rootid]
        names = [model.body(b).name for b in range(model.nbody)]
        jointed = {roots[int(b)] for b in model.jnt_bodyid}
        kind_name: list[tuple[str, str]] = []
        for b in range(model.nbody):
            root = roots[b]
            if b == 0:
                kind_name.append((SCENERY, WORLD_BODY))
            elif names[root].endswith(object_suffix):
                kind_name.append((OBJECT, names[root].removesuffix(object_suffix)))
            elif root in jointed:
                kind_name.append((ROBOT, names[b]))
            else:
                kind_name.append((SCENERY, names[root]))
        inserted = {g: (OBJECT, INSERTED_PREFIX + name.removeprefix(INSERTED_PREFIX).split("/", 1)[0])
                    for g in range(model.ngeom) if int(model.geom_bodyid[g]) == 0
                    and (name := model.geom(g).name).startswith(INSERTED_PREFIX)}
        order = {ROBOT: 0, OBJECT: 1, SCENERY: 2}
        listed = sorted(dict.fromkeys([*kind_name, *inserted.values()]),  # stable: body order within a kind
                        key=lambda kn: order[kn[0]])
        ids = {kn: i + 1 for i, kn in enumerate(listed)}
        self.table = SegmentTable((BACKGROUND, *(n for _, n in listed)), (BACKGROUND, *(k for k, _ in listed)))
        twice = [kn for kn in listed if [n for _, n in listed].count(kn[1]) > 1]
        if twice:  # (MuJoCo keeps body names distinct; an object may still be named like a link or scenery body)
            found = " and ".join(f"{kind} {name!r}" for kind, name in twice)
            raise CameraError(f"segmentation: names: found {found} (one name for two things); allowed: distinct "
                              "names for the robot links, objects and top-level scenery bodies")
        self.of_body: npt.NDArray[np.uint16] = np.array([ids[kn] for kn in kind_name], np.uint16)
        of_geom = self.of_body[model.geom_bodyid]
        for g, kn in inserted.items():
            of_geom[g] = ids[kn]
        # the render's (object id, object type) -> ours, by type; a type without a body (decor) reads as background
        self._of_type = {int(mujoco.mjtObj.mjOBJ_GEOM): of_geom,
                         int(mujoco.mjtObj.mjOBJ_SITE): self.of_body[model.site_bodyid]}

    def ids(self, rendered: npt.NDArray[np.int32]) -> Segments:
        """MuJoCo's segmentation render (H, W, 2) int32 (object id, object type; -1 where nothing) -> (H, W) ids."""
        out: Segments = np.zeros(rendered.shape[:2], np.uint16)
        objid, objtype = rendered[..., 0], rendered[..., 1]
        for kind, lookup in self._of_type.items():
            here = objtype == kind
            if lookup.size and here.any():
                out[here] = lookup[objid[here]]
        return out
