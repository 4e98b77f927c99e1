"""A URDF read by MuJoCo's own URDF reader, with the mesh paths a URDF writes resolved first.

MuJoCo's reader keeps only a mesh's file name (its `strippath`) and looks for it in one folder; URDFs name
meshes relative to the file (`meshes/link1.stl`), through a ROS package (`package://robot_description/meshes/
link1.stl`) or absolutely (`file:///...`). So the text is rewritten before MuJoCo reads it: every collision
mesh becomes an absolute path that exists (or the file is refused in one line naming the mesh), visual
elements go (x2 shows the collision geometry; vendor visual meshes are often COLLADA files MuJoCo cannot read),
and the fixed base stays a body (MuJoCo would fuse it into the world). A collision OBJ of several objects (a
convex decomposition) becomes one geom per piece (x2.sim.mujoco.mesh_pieces). A link whose inertia breaks the triangle
inequality (pybullet_data's xArm6 has one) is balanced by MuJoCo (`balanceinertia`) rather than refused: its
mass and centre stay, and a valid one is left as it is.

`package://NAME/REST` is looked up as `<folder>/NAME/REST` and `<folder>/REST` for the URDF's folder and each
folder above it (a ROS description package keeps its URDF in `urdf/` beside `meshes/`), and under the part's
`meshdir` when it gives one.
"""

from __future__ import annotations

import re
from pathlib import Path

import mujoco

from x2.base.errors import SpecError
from x2.sim.mujoco.mesh_pieces import split_pieces

MESH_FORMATS = (".stl", ".obj", ".msh")  # what MuJoCo's mesh loader reads
_MESH = re.compile(r'(<mesh\b[^>]*\bfilename\s*=\s*)(["\'])(.*?)\2', re.S)
_UP = 4  # folders above the URDF searched for a package:// path


def read_urdf(file: Path, meshdir: Path | None = None, geometry: bool = True) -> mujoco.MjSpec:
    """The URDF's kinematic tree, inertias and (with `geometry`) its collision meshes; without `geometry`, no
    geoms at all (a URDF whose meshes are not shipped; x2 fits capsules instead)."""
    text = file.read_text()
    # comments first: a mesh named in a commented-out element is not the file's (MuJoCo's reader skips it too)
    text = re.sub(r"<!--.*?-->", _blank, text, flags=re.S)
    text = re.sub(r"<visual\b.*?</visual>", _blank, text, flags=re.S)
    if geometry:
        text = _MESH.sub(lambda m: m.group(1) + m.group(2) + str(_mesh_path(file, meshdir, text, m)) + m.group(2),
                         text)
    else:
        text = re.sub(r"<collision\b.*?</collision>", "", text, flags=re.S)
    text = re.sub(r"(<robot\b[^>]*>)",
                  r'\1<mujoco><compiler fusestatic="false" strippath="false" balanceinertia="true"/></mujoco>',
                  text, count=1)
    try:
        spec = mujoco.MjSpec.from_string(text)
    except ValueError as err:
        raise SpecError(str(file), None, "urdf", str(err).strip().splitlines()[0], "a URDF MuJoCo reads") from None
    split_pieces(spec)  # an OBJ of several convex pieces (V-HACD's) collides as those pieces, not as their hull
    return spec


def _blank(match: re.Match[str]) -> str:
    """What goes keeps its line breaks: an error's line number is the file's."""
    return "\n" * match.group(0).count("\n")


def _mesh_path(file: Path, meshdir: Path | None, text: str, match: re.Match[str]) -> Path:
    name = match.group(3).strip()
    line = text.count("\n", 0, match.start()) + 1
    candidates = mesh_candidates(file, meshdir, name)
    found = next((c for c in candidates if c.is_file()), None)
    if found is None:
        where = ", ".join(sorted({str(c.parent) for c in candidates})[:4])
        raise SpecError(str(file), line, "mesh", f"{name!r} (no such file; looked in {where})",
                        "a mesh file next to the URDF, in its package's folder, or under the part's source.meshdir")
    if found.suffix.lower() not in MESH_FORMATS:
        raise SpecError(str(file), line, "mesh", f"{name!r} (a {found.suffix} file)",
                        "a mesh MuJoCo reads: " + ", ".join(f.lstrip(".").upper() for f in MESH_FORMATS))
    return found.resolve()


def mesh_candidates(file: Path, meshdir: Path | None, name: str) -> list[Path]:
    """Where a URDF's mesh file name may point, most likely first."""
    if name.startswith("file://"):
        return [Path(name[len("file://"):])]
    if name.startswith("package://"):
        rest = name[len("package://"):]
        tail = rest.split("/", 1)[1] if "/" in rest else rest
        roots = ([meshdir] if meshdir is not None else []) + [file.resolve().parent, *file.resolve().parents][:_UP + 1]
        return [r / p for r in roots for p in (rest, tail)]
    path = Path(name)
    if path.is_absolute():
        return [path]
    return ([meshdir / path] if meshdir is not None else []) + [file.resolve().parent / path]
