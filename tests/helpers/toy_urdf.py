"""A small arm URDF written into a test's temporary folder: four hinges (yaw, pitch, pitch, pitch) on a base, each
link a cube mesh reached through `package://`, as a ROS description package lays it out
(toyarm/urdf/toyarm.urdf beside toyarm/meshes/)."""

from __future__ import annotations

from pathlib import Path

CUBE_OBJ = """\
v -0.5 -0.5 -0.5
v 0.5 -0.5 -0.5
v 0.5 0.5 -0.5
v -0.5 0.5 -0.5
v -0.5 -0.5 0.5
v 0.5 -0.5 0.5
v 0.5 0.5 0.5
v -0.5 0.5 0.5
f 1 3 2
f 1 4 3
f 5 6 7
f 5 7 8
f 1 2 6
f 1 6 5
f 2 3 7
f 2 7 6
f 3 4 8
f 3 8 7
f 4 1 5
f 4 5 8
"""


def _link(name: str, length: float, mesh: str) -> str:
    return f"""
  <link name="{name}">
    <inertial><origin xyz="0 0 {length / 2}"/><mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.005"/></inertial>
    <visual><geometry><mesh filename="package://toyarm/meshes/visual/{name}.dae"/></geometry></visual>
    <collision><origin xyz="0 0 {length / 2}"/>
      <geometry><mesh filename="{mesh}" scale="0.06 0.06 {length * 0.8:.3f}"/></geometry></collision>
  </link>"""


def _joint(name: str, parent: str, child: str, z: float, axis: str, limit: str) -> str:
    return f"""
  <joint name="{name}" type="{'continuous' if limit == 'none' else 'revolute'}">
    <parent link="{parent}"/><child link="{child}"/><origin xyz="0 0 {z}" rpy="0 0 0"/><axis xyz="{axis}"/>
    {'' if limit == 'none' else f'<limit lower="-{limit}" upper="{limit}" effort="40" velocity="2"/>'}
  </joint>"""


def write_toy_arm(folder: Path, *, mesh: str = "package://toyarm/meshes/cube.obj", continuous: bool = False,
                  with_mesh_file: bool = True, scale: float = 1.0) -> Path:
    """toyarm/urdf/toyarm.urdf under `folder` (and its mesh unless `with_mesh_file` is false); the URDF's path.
    Links: base (0.1 m), link1 (0.1), link2 (0.3), link3 (0.25), link4 (0.08, the flange body), the upper arm and
    forearm (link2, link3) `scale` times as long; joint3 continuous if asked. (Four joints: a hand pointing down
    reaches most of the table in front of it; `scale` 1.2 reaches all of pick_place's targets, 0.5 none.)"""
    upper, fore = round(0.3 * scale, 4), round(0.25 * scale, 4)
    root = folder / "toyarm"
    (root / "urdf").mkdir(parents=True, exist_ok=True)
    (root / "meshes").mkdir(exist_ok=True)
    if with_mesh_file:
        (root / "meshes" / "cube.obj").write_text(CUBE_OBJ)
    body = "".join((
        _link("base", 0.1, mesh), _joint("joint1", "base", "link1", 0.1, "0 0 1", "2.9"),
        _link("link1", 0.1, mesh), _joint("joint2", "link1", "link2", 0.1, "0 1 0", "2.0"),
        _link("link2", upper, mesh),
        _joint("joint3", "link2", "link3", upper, "0 1 0", "none" if continuous else "2.5"),
        _link("link3", fore, mesh), _joint("joint4", "link3", "link4", fore, "0 1 0", "2.5"),
        _link("link4", 0.08, mesh),
    ))
    path = root / "urdf" / "toyarm.urdf"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="toyarm">{body}\n</robot>\n')
    return path
