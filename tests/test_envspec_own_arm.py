"""Arms from a user's own files (a local URDF or MJCF instead of a vendor wheel), and x2's mounts and grippers
named from a user's robot file in ./specs/robots/: what compiles, and the one-line refusals (exit 2)."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from helpers.toy_urdf import write_toy_arm

from x2.base.errors import SpecError
from x2.envspec import load_robot
from x2.sim.mujoco.robot import robot_mjcf_spec

PART = """\
name: toy-arm
kind: arm
source: {{file: {file}}}
root: base
joints: [joint1, joint2, joint3, joint4]
flange_body: {flange}
flange_pos: [0.0, 0.0, 0.08]
{gains}"""

ROBOT = """\
name: toy
mjcf: mounts/stand.xml
base_pos: [0.09, 0.0, 0.0]
gripper: franka-hand
arms:
  right:
    part: toy-arm
    home: [0.0, 0.5, 1.0, 1.0]
    reach_joints: [2, 4]
cameras: [head, right_wrist]
shoulders: {right: [0.09, 0.0, 0.94]}
reach: 0.6
"""


def _specs(tmp: Path, *, file: str = "../../../toyarm/urdf/toyarm.urdf", flange: str = "link4", gains: str = "",
           **arm: bool) -> Path:
    write_toy_arm(tmp, **arm)
    parts = tmp / "specs" / "robots" / "parts"
    parts.mkdir(parents=True)
    (parts / "toy-arm.yaml").write_text(PART.format(file=file, flange=flange, gains=gains))
    (tmp / "specs" / "robots" / "toy.yaml").write_text(ROBOT)
    return tmp / "specs" / "robots" / "toy.yaml"


def test_a_local_urdf_arm_compiles_with_its_meshes_limits_and_defaulted_servos(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _specs(tmp_path)
    info = load_robot("toy")  # by name from ./specs/robots, its mount (mounts/stand.xml) from x2's robots folder
    arm = info.model.arms[0]
    assert arm.part is not None and arm.part.source.package is None
    assert arm.part.defaulted == ("kp", "kv", "force")
    assert info.model.mjcf.name == "stand.xml"
    m = robot_mjcf_spec(info.model).compile()
    # the URDF's limits; servos defaulted from its effort (40 N m): kp 10 x effort, kv a tenth of kp
    np.testing.assert_allclose(m.jnt_range[[m.joint(j).id for j in arm.joints]], [[-2.9, 2.9], [-2, 2], [-2.5, 2.5],
                                                                                  [-2.5, 2.5]])
    # a URDF gives no armature: x2's default motor inertia (a part's joint_dynamics would set its own)
    np.testing.assert_allclose(m.dof_armature[[m.jnt_dofadr[m.joint(j).id] for j in arm.joints]], 0.1)
    servo = m.actuator("right_joint2")
    assert (servo.gainprm[0], -servo.biasprm[2], servo.forcerange[1]) == pytest.approx((400.0, 40.0, 40.0))
    # the collision meshes came through package:// (three scaled cubes), visual .dae files were left out
    meshes = [m.geom(g) for g in range(m.ngeom) if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH
              and m.body(int(m.geom_bodyid[g])).name in ("right_base", "right_link1", "right_link2", "right_link3",
                                                             "right_link4")]
    assert len(meshes) == 5 and all(g.contype[0] == 2 for g in meshes)


def test_gains_given_in_the_part_file_are_used(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _specs(tmp_path, gains="kp: [900, 800, 700, 600]\nkv: [90, 80, 70, 60]\nforce: [30, 30, 20, 20]\n"
                             "joint_dynamics: [0.02, 1.0, 0.0]\n")
    info = load_robot("toy")
    assert info.model.arms[0].part is not None and info.model.arms[0].part.defaulted == ()
    m = robot_mjcf_spec(info.model).compile()
    assert m.actuator("right_joint3").gainprm[0] == pytest.approx(700.0)
    assert m.dof_armature[m.jnt_dofadr[m.joint("right_joint3").id]] == pytest.approx(0.02)  # the part's joint_dynamics


@pytest.mark.parametrize(("setup", "message"), [
    ({"file": "nowhere/arm.urdf"}, "toy-arm.yaml:3: source.file: found 'nowhere/arm.urdf' (no such file)"),
    ({"with_mesh_file": False}, "mesh: found 'package://toyarm/meshes/cube.obj' (no such file"),
    ({"continuous": True}, "joints: found 'joint3' (no limits"),
    ({"flange": "link9"}, "flange_body: found no body 'link9'; allowed: a body of the arm: base, link1"),
])
def test_bad_arm_files_are_refused_in_one_line(tmp_path, monkeypatch, setup, message) -> None:
    monkeypatch.chdir(tmp_path)
    _specs(tmp_path, **setup)
    with pytest.raises(SpecError) as err:
        robot_mjcf_spec(load_robot("toy").model)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_a_missing_mesh_is_named_with_its_line(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    _specs(tmp_path, with_mesh_file=False)
    with pytest.raises(SpecError) as err:
        robot_mjcf_spec(load_robot("toy").model)
    assert err.value.file is not None and err.value.file.endswith("toyarm.urdf") and err.value.line == 8


def test_a_mount_that_is_nowhere_names_both_folders(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = _specs(tmp_path)
    path.write_text(ROBOT.replace("mounts/stand.xml", "mounts/bench.xml"))
    with pytest.raises(SpecError) as err:
        load_robot("toy")
    text = str(err.value)
    assert "toy.yaml:2: mjcf: found 'mounts/bench.xml' (no such file)" in text
    assert "x2's robots folder" in text and "mounts/stand.xml" in text


MJCF_ARM = """\
<mujoco model="mjarm">
  <compiler angle="radian" meshdir="not_here"/>
  <asset><mesh name="cube" file="cube.obj" scale="0.1 0.1 0.1"/></asset>
  <worldbody>
    <body name="plinth"><geom type="box" size="0.2 0.2 0.01" pos="0 0 -0.5"/></body>
    <body name="base">
      <geom type="mesh" mesh="cube"/>
      <body name="l1" pos="0 0 0.1"><joint name="j1" axis="0 0 1" range="-2 2"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.2" size="0.03"/>
        <body name="l2" pos="0 0 0.2"><joint name="j2" axis="0 1 0" range="-2 2"/>
          <geom type="capsule" fromto="0 0 0 0 0 0.25" size="0.03"/>
          <body name="l3" pos="0 0 0.25"><joint name="j3" axis="0 1 0" range="-2 2"/>
            <geom type="capsule" fromto="0 0 0 0 0 0.2" size="0.025"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_a_local_mjcf_arm_with_its_meshes_elsewhere(tmp_path, monkeypatch) -> None:
    """An MJCF of the user's own whose meshes are in another folder (source.meshdir); the chain x2 finds in it
    (the other top-level body is no arm), and its flange against the file compiled alone."""
    from x2.sim.mujoco.robot_check import plain_model
    from x2.sim.mujoco.robot_new import find_chain

    monkeypatch.chdir(tmp_path)
    write_toy_arm(tmp_path)  # (for its cube mesh in toyarm/meshes)
    (tmp_path / "mjarm.xml").write_text(MJCF_ARM)
    chain = find_chain(tmp_path / "mjarm.xml", tmp_path / "toyarm" / "meshes")
    assert (chain.root, chain.joints, chain.flange_body) == ("base", ("j1", "j2", "j3"), "l3")
    assert chain.flange_z == pytest.approx(0.225, abs=1e-3)  # the capsule's end: 0.2 + its radius
    parts = tmp_path / "specs" / "robots" / "parts"
    parts.mkdir(parents=True)
    (parts / "toy-arm.yaml").write_text(PART.format(file="../../../mjarm.xml", flange="l3", gains="").replace(
        "../../../mjarm.xml}", "../../../mjarm.xml, meshdir: ../../../toyarm/meshes}").replace(
        "[joint1, joint2, joint3, joint4]", "[j1, j2, j3]"))
    (tmp_path / "specs" / "robots" / "toy.yaml").write_text(ROBOT.replace("[0.0, 0.5, 1.0, 1.0]", "[0.0, 0.5, 1.0]")
                                                            .replace("[2, 4]", "[2, 3]"))
    info = load_robot("toy")
    arm = info.model.arms[0]
    assert arm.part is not None and arm.part.source.meshdir == (tmp_path / "toyarm" / "meshes").resolve()
    m = robot_mjcf_spec(info.model).compile()
    assert "right_plinth" not in [m.body(b).name for b in range(m.nbody)]  # only the arm's tree from its root
    assert plain_model(arm.part).nbody == 6  # world, plinth, base, l1..l3: the file alone, meshes from meshdir


def test_a_collision_obj_of_several_objects_collides_as_its_pieces(tmp_path, monkeypatch) -> None:
    """A convex decomposition in one OBJ (V-HACD's output): one geom per object, not the hull of them all."""
    from helpers.toy_urdf import CUBE_OBJ

    from x2.sim.mujoco.mesh_pieces import obj_pieces

    monkeypatch.chdir(tmp_path)
    _specs(tmp_path, mesh="package://toyarm/meshes/two.obj")
    # the second cube 3 m along x; an OBJ's indices count over the whole file (the second's faces: 9..16)
    second = "".join(f"v {float(w[1]) + 3} {w[2]} {w[3]}\n" if w[0] == "v" else
                     "f " + " ".join(str(int(i) + 8) for i in w[1:]) + "\n"
                     for w in (line.split() for line in CUBE_OBJ.splitlines()))
    two = tmp_path / "toyarm" / "meshes" / "two.obj"
    two.write_text("o left\n" + CUBE_OBJ + "o right\n" + second)
    pieces = obj_pieces(two)
    assert [len(v) for v, _ in pieces] == [8, 8] and all(len(f) == 36 for _, f in pieces)
    m = robot_mjcf_spec(load_robot("toy").model).compile()
    link2 = [g for g in range(m.ngeom) if m.body(int(m.geom_bodyid[g])).name == "right_link2"]
    assert len(link2) == 2 and all(m.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH for g in link2)
