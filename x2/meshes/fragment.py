"""The MJCF text and asset YAML of a mesh object, as x2/assets/objects writes its own (block.yaml + block.xml).

The MJCF holds every mesh inline (`<mesh vertex=... face=...>`), so a world that uses the object is still
self-contained text (x2/sim/mujoco/recorded_xml.py): body `object` with an explicit `<inertial>`, the collision
pieces (group 3, hidden from the cameras; x2's usual contact: condim 4, friction 0.9) and the visual mesh (group 0,
no contacts, no mass), and two top-grasp sites at half height (synthesis's grasp search takes every `grasp*` site,
x2/synth/skills/grasp_poses.py, and has no heuristic for a mesh): `grasp` closes the fingers across the object's
narrowest horizontal width, `grasp_across` across the perpendicular one. Its first comment records what it
was made from (`KEY_PREFIX` + the cache key) so that `x2 objects add` knows when a rerun has nothing to do.

An object with a texture (x2.meshes.skin) names its image beside the MJCF, `<texture file="NAME.png">`, and its
visual mesh carries a UV per vertex (`texcoord`); a world that holds it carries the image's bytes
(x2/sim/mujoco/textures.py), so it is still rebuilt from an episode file alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import trimesh
import yaml

from x2.base.arrays import Floats
from x2.meshes.inertia import MassProperties
from x2.meshes.pieces import Piece

KEY_PREFIX = "x2 objects add key: "
PIECE_GROUP = 3  # MuJoCo draws groups 0-2 by default: the pieces collide, the cameras see the visual mesh
CONTACT = 'condim="4" friction="0.9 0.01 0.001"'  # as x2's own objects (block.xml)


@dataclass(frozen=True)
class ObjectText:
    xml: str
    yaml: str
    footprint_radius: float  # m, around the origin in the table plane
    grasp: Floats  # (3,) the grasp site, object frame
    grasp_width: float  # m, the object's width across which `grasp` closes


def _numbers(values: Floats) -> str:
    rounded = np.round(np.asarray(values, dtype=np.float64).ravel(), 5) + 0.0  # (+ 0.0: no "-0")
    return " ".join(f"{x:g}" for x in rounded)


def _ints(values: Floats) -> str:
    return " ".join(str(int(x)) for x in np.asarray(values).ravel())


@dataclass(frozen=True)
class GraspSite:
    pos: Floats  # (3,) object frame
    yaw: float  # rad about z: the site's y axis (the fingers' closing direction) is (-sin yaw, cos yaw, 0)
    width: float  # m across the object along the closing direction


YAWS = 36  # directions tried for the narrowest width (5 deg apart)


def grasp_sites(vertices: Floats, height: float) -> tuple[GraspSite, GraspSite]:
    """Top grasps closing across the narrowest horizontal width of the vertices, and across the perpendicular,
    each centred on the object's extent in its own directions, at half height."""
    xy = vertices[:, :2]
    sites = []
    angles = np.arange(YAWS) * np.pi / YAWS
    widths = [float(np.ptp(xy @ [np.cos(a), np.sin(a)])) for a in angles]
    best = float(angles[int(np.argmin(widths))])
    for closing in (best, best + np.pi / 2):
        across, along = np.array([np.cos(closing), np.sin(closing)]), np.array([-np.sin(closing), np.cos(closing)])
        p, q = xy @ across, xy @ along
        centre = across * (p.min() + p.max()) / 2 + along * (q.min() + q.max()) / 2
        sites.append(GraspSite(pos=np.array([centre[0], centre[1], height / 2]), yaw=closing - np.pi / 2,
                               width=float(np.ptp(p))))
    return sites[0], sites[1]


def _site(name: str, site: GraspSite) -> str:
    quat = np.array([np.cos(site.yaw / 2), 0.0, 0.0, np.sin(site.yaw / 2)])
    return f'      <site name="{name}" pos="{_numbers(site.pos)}" quat="{_numbers(quat)}" size="0.005" group="4"/>'


def _comment(text: str) -> str:
    return text.replace("--", "- -")  # (an XML comment may not hold "--": a file name might)


def texture_file(name: str) -> str:
    """The file name of object `name`'s texture, beside its MJCF."""
    return f"{name}.png"


def _texcoord(uv: Floats) -> str:
    # MuJoCo reads an image top row first and puts texcoord (0, 0) at its first pixel: v counts down the image,
    # where OBJ and glTF readers (trimesh) count it up
    flipped = np.column_stack([uv[:, 0], 1.0 - uv[:, 1]])
    return _numbers(flipped)


def object_text(name: str, display: str | None, visual: trimesh.Trimesh, pieces: list[Piece],
                props: MassProperties, rgba: tuple[float, float, float, float], about: str, key: str,
                uv: Floats | None = None) -> ObjectText:
    """`about`: one line saying what the object was made from (the file, the options), kept as a comment; `uv`
    the visual mesh's texture coordinates, one per vertex, when the object has a texture (`texture_file`)."""
    vertices = np.concatenate([p.vertices for p in pieces])
    footprint = float(np.linalg.norm(vertices[:, :2], axis=1).max())
    height = float(vertices[:, 2].max())
    grasp, across = grasp_sites(vertices, height)
    i = props.inertia
    colour = _numbers(np.array(rgba))
    lines = [
        "<!--",
        f"  {_comment(name)}: {_comment(about)}",
        f"  {len(pieces)} convex pieces, {props.mass:.4g} kg; origin at the bottom centre.",
        f"  {KEY_PREFIX}{key}",
        "-->",
        f'<mujoco model="{name}">',
        '  <compiler angle="radian"/>',
        "  <asset>",
        *([f'    <texture name="skin" type="2d" file="{texture_file(name)}"/>',
           '    <material name="skin" texture="skin"/>'] if uv is not None else []),
        # (shell inertia: the visual mesh may be open, and its mass is none anyway)
        f'    <mesh name="visual" inertia="shell" vertex="{_numbers(visual.vertices)}" '
        + (f'texcoord="{_texcoord(uv)}" ' if uv is not None else "") + f'face="{_ints(visual.faces)}"/>',
        *(f'    <mesh name="piece_{k:02d}" vertex="{_numbers(p.vertices)}"/>' for k, p in enumerate(pieces)),
        "  </asset>",
        "  <worldbody>",
        '    <body name="object">',
        f'      <inertial pos="{_numbers(props.com)}" mass="{props.mass:.6g}" '
        f'fullinertia="{i[0, 0]:.6g} {i[1, 1]:.6g} {i[2, 2]:.6g} {i[0, 1]:.6g} {i[0, 2]:.6g} {i[1, 2]:.6g}"/>',
        '      <geom name="visual" type="mesh" mesh="visual" contype="0" conaffinity="0" mass="0" '
        + ('material="skin"/>' if uv is not None else f'rgba="{colour}"/>'),
        *(f'      <geom name="piece_{k:02d}" type="mesh" mesh="piece_{k:02d}" group="{PIECE_GROUP}" {CONTACT} '
          f'rgba="{colour}"/>' for k in range(len(pieces))),
        _site("grasp", grasp),
        _site("grasp_across", across),
        "    </body>",
        "  </worldbody>",
        "</mujoco>",
        "",
    ]
    record: dict[str, object] = {"name": name, "mjcf": f"{name}.xml"}
    if display is not None:
        record["display"] = display
    record |= {"tags": ["pickable"], "footprint_radius": round(footprint, 4), "height": 0.0, "free": True,
               "parts": {"grasp": "grasp"}, "joints": []}
    header = f"# {about}\n# {KEY_PREFIX}{key}\n"
    text = header + yaml.safe_dump(record, sort_keys=False, default_flow_style=None, width=120)
    return ObjectText(xml="\n".join(lines), yaml=text, footprint_radius=footprint, grasp=grasp.pos,
                      grasp_width=grasp.width)
