"""`x2 robots new` and `x2 robots check` on an arm URDF a test writes (tests/helpers/toy_urdf.py): the chain
found, the files written (and never overwritten), the check's screen, and its refusals in one line, exit 2."""

from __future__ import annotations

import re

import mujoco
import pytest
import yaml
from helpers.toy_urdf import write_toy_arm
from helpers.x2_cli import run_x2
from typer.testing import CliRunner

from x2.cli.app import _mount, app
from x2.envspec import load_env
from x2.sim.mujoco.backend import MujocoBackend
from x2.sim.mujoco.robot_check import check_robot
from x2.sim.mujoco.robot_new import find_chain, pitch_joints

_mount()
runner = CliRunner()
REACHING = 1.2  # the toy arm's upper arm and forearm made long enough to reach every target of pick_place

HAND = """
  <joint name="wrist_fixed" type="fixed"><parent link="link4"/><child link="hand"/><origin xyz="0 0 0.08"/></joint>
  <link name="hand"><inertial><mass value="0.2"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0"
    izz="0.001"/></inertial></link>
  <joint name="finger_l" type="prismatic"><parent link="hand"/><child link="left"/><axis xyz="0 1 0"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
  <link name="left"><inertial><mass value="0.05"/><inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0"
    izz="0.0001"/></inertial></link>
  <joint name="finger_r" type="prismatic"><parent link="hand"/><child link="right"/><axis xyz="0 -1 0"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>
  <link name="right"><inertial><mass value="0.05"/><inertia ixx="0.0001" ixy="0" ixz="0" iyy="0.0001" iyz="0"
    izz="0.0001"/></inertial></link>
</robot>"""


def test_the_chain_stops_where_a_hand_branches(tmp_path) -> None:
    urdf = write_toy_arm(tmp_path)
    chain = find_chain(urdf)
    assert (chain.root, chain.joints, chain.flange_body) == ("base", ("joint1", "joint2", "joint3", "joint4"), "link4")
    assert chain.efforts == (40.0,) * 4 and chain.drop_bodies == ()
    assert chain.flange_z == pytest.approx(0.072, abs=1e-3)  # the link's cube: 0.8 of its 0.08 m, centred at 0.04
    urdf.write_text(urdf.read_text().replace("</robot>", HAND))
    chain = find_chain(urdf)  # two slides on the hand: longer, but a branch, so they are the file's own hand
    assert chain.joints == ("joint1", "joint2", "joint3", "joint4") and chain.drop_bodies == ("left", "right")
    assert chain.flange_body == "link4"


def test_new_writes_a_robot_that_check_passes_and_never_overwrites(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    urdf = write_toy_arm(tmp_path, scale=REACHING)
    result = runner.invoke(app, ["robots", "new", "toy", "--urdf", str(urdf), "--gripper", "G"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "chain: base -> link4, 4 joints: joint1, joint2, joint3, joint4" in out
    assert "still yours to decide" in out and "flange" in out and "servo gains" in out
    robot = yaml.safe_load((tmp_path / "specs/robots/toy.yaml").read_text())
    part = yaml.safe_load((tmp_path / "specs/robots/parts/toy-arm.yaml").read_text())
    assert robot["mjcf"] == "mounts/stand.xml" and robot["arms"]["right"]["part"] == "toy-arm"
    # the reach screen spans shoulder pitch (joint2, 0.2 m above the mount) to wrist pitch (joint4)
    assert robot["arms"]["right"]["reach_joints"] == [2, 4]
    assert robot["shoulders"]["right"] == pytest.approx([0.0, 0.0, 0.74 + 0.2])  # (from base_pos, as all robots)
    assert robot["reference_task"] == "pick_place"
    assert part["source"] == {"file": "../../../toyarm/urdf/toyarm.urdf"}  # relative: the folder can move
    assert "kp" not in part  # defaulted, and the check says so
    report = check_robot("toy", configs=20)
    arm = report.arms[0]
    assert report.dof == 4 and [j.kp for j in arm.joints] == [400.0] * 4
    assert arm.defaulted == ("kp", "kv", "force")
    assert arm.fk_configs == 20 and arm.fk_max_error_mm is not None and arm.fk_max_error_mm < 1e-3
    assert not report.self_contacts and not report.booth_contacts
    assert len(arm.targets) == 10 and all(t.reached for t in arm.targets) and 0 < arm.max_reach < 1.0
    assert report.ok, report.problems
    result = runner.invoke(app, ["robots", "check", "toy", "--configs", "5"])
    out = " ".join(result.output.split())
    assert "toy: 4 DoF in 1 arm(s), checked against task pick_place" in out
    assert "5 configurations: max 0.0000 mm" in out
    assert result.exit_code == 0, out
    again = runner.invoke(app, ["robots", "new", "toy", "--urdf", str(urdf)])
    assert again.exit_code == 2 and "found an existing file" in again.output
    assert len(again.output.strip().splitlines()) == 1


@pytest.mark.parametrize("robot", ["franka-panda", "artixon-g"])
def test_the_pitch_joints_found_at_home_are_those_built_in_robots_declare(robot: str) -> None:
    env = load_env(None, robot=robot)
    backend = MujocoBackend(env)
    backend.reset(0)
    m, d = backend.model, mujoco.MjData(backend.model)
    d.qpos[:] = backend.data.qpos
    mujoco.mj_kinematics(m, d)
    for arm in env.robot.arms:
        declared = tuple(i + 1 for i in arm.reach_joints)
        assert pitch_joints(d, [m.joint(j).id for j in arm.joints]) == declared


@pytest.mark.parametrize(("setup", "message"), [
    ({"with_mesh_file": False}, "mesh: found 'package://toyarm/meshes/cube.obj' (no such file"),
    ({"continuous": True}, "joints: found 'joint3' (no limits"),
])
def test_new_refuses_a_bad_file_in_one_line_and_writes_nothing(tmp_path, monkeypatch, setup, message) -> None:
    monkeypatch.chdir(tmp_path)
    urdf = write_toy_arm(tmp_path, **setup)
    result = runner.invoke(app, ["robots", "new", "toy", "--urdf", str(urdf)])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert not (tmp_path / "specs").exists()


@pytest.mark.parametrize(("scale", "found"), [
    (0.5, "found 10 of pick_place's 10 targets out of reach, the farthest block_area far right [0.56, -0.37, 0.78] "
          "0.62 m from the shoulder (the arm reaches 0.46 m); allowed"),  # (beyond its length: no IK run)
    (1.0, "found 1 of pick_place's 10 targets out of reach, the farthest block_area far right [0.56, -0.37, 0.78] "
          "0.62 m from the shoulder (the arm reaches 0.7"),  # (within its length, but not with the tool down)
])
def test_an_arm_too_short_for_its_reference_task_is_refused_in_one_line(tmp_path, monkeypatch, scale: float,
                                                                       found: str) -> None:
    monkeypatch.chdir(tmp_path)
    urdf = write_toy_arm(tmp_path, scale=scale)
    result = runner.invoke(app, ["robots", "new", "short", "--urdf", str(urdf), "--gripper", "G"])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    out = " ".join(result.output.split())
    assert out.startswith(f"error: x2 robots new short: reach: {found}"), out
    assert scale < 1.0 or "x2's IK comes within" in out
    assert "allowed: an arm that reaches every target of pick_place from x2's stand" in out
    assert not (tmp_path / "specs").exists()


def test_synth_refuses_a_robot_whose_reach_falls_short_before_any_attempt(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    urdf = write_toy_arm(tmp_path, scale=REACHING)
    assert runner.invoke(app, ["robots", "new", "toy", "--urdf", str(urdf), "--gripper", "G"]).exit_code == 0
    robot = tmp_path / "specs" / "robots" / "toy.yaml"
    robot.write_text(re.sub(r"^reach: .*$", "reach: 0.4", robot.read_text(), flags=re.MULTILINE))
    result = runner.invoke(app, ["synth", "--task", "pick_place", "--robot", "toy", "-n", "1", "--workers", "1"])
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert "regions.block_area: found corner (0.44, -0.37) 0.54 m from the nearest shoulder (unreachable by toy); " \
        "allowed: points within 0.4 m of a shoulder" in " ".join(result.output.split())
    assert not (tmp_path / "data").exists()


def test_check_of_a_robot_whose_arm_file_went_missing_is_one_line(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    urdf = write_toy_arm(tmp_path, scale=REACHING)
    assert runner.invoke(app, ["robots", "new", "toy", "--urdf", str(urdf), "--gripper", "G"]).exit_code == 0
    # (a process of its own each time, as a person runs it: this one has the arm compiled and cached)
    (urdf.parent.parent / "meshes" / "cube.obj").unlink()
    result = run_x2(["robots", "check", "toy"], tmp_path)
    assert result.returncode == 2 and "mesh: found 'package://toyarm/meshes/cube.obj'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    urdf.unlink()
    result = run_x2(["robots", "check", "toy"], tmp_path)
    assert result.returncode == 2 and "source.file: found '../../../toyarm/urdf/toyarm.urdf' (no such file)" in \
        " ".join(result.stderr.split())


def test_new_needs_exactly_one_arm_file(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["robots", "new", "toy"])
    assert result.exit_code == 2 and "--urdf/--mjcf: found neither" in result.output
    urdf = write_toy_arm(tmp_path, scale=REACHING)
    result = runner.invoke(app, ["robots", "new", "toy", "--urdf", str(urdf), "--task", "no_such_task"])
    assert result.exit_code == 2 and "unknown task 'no_such_task'; available: " in result.output
    assert not (tmp_path / "specs").exists()




def test_paths_that_yaml_would_misread_and_a_relative_meshdir(tmp_path, monkeypatch) -> None:
    """A folder named with ', ', ' #' and ': ' (quoted in the files written), a --meshdir given relative to where x2
    runs (the draft compiled on the way reads it from there too), a mesh in a commented-out element (not looked for)."""
    monkeypatch.chdir(tmp_path)
    odd = tmp_path / "v1, b #2: c"
    urdf = write_toy_arm(odd, scale=REACHING)
    urdf.write_text(urdf.read_text().replace("</robot>", '<!-- <mesh filename="package://toyarm/gone.dae"/> -->'
                                                          "\n</robot>"))
    result = runner.invoke(app, ["robots", "new", "toy", "--urdf", str(urdf.relative_to(tmp_path)),
                                 "--meshdir", odd.name, "--gripper", "G"])
    assert result.exit_code == 0, result.output
    part = yaml.safe_load((tmp_path / "specs/robots/parts/toy-arm.yaml").read_text())
    assert part["source"] == {"file": "../../../v1, b #2: c/toyarm/urdf/toyarm.urdf", "meshdir": "../../../v1, b #2: c"}
    robot = yaml.safe_load((tmp_path / "specs/robots/toy.yaml").read_text())
    assert robot["description"] == "An arm from toyarm.urdf with the G gripper."
    assert check_robot("toy", configs=2).dof == 4


def test_an_unknown_gripper_and_a_mimic_joint_are_one_line_and_write_nothing(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    urdf = write_toy_arm(tmp_path, scale=REACHING)
    result = runner.invoke(app, ["robots", "new", "toy", "--urdf", str(urdf), "--gripper", "nosuch"])
    assert result.exit_code == 2 and result.output.startswith("error: --gripper: found 'nosuch'; allowed: one of ")
    assert "franka-hand" in result.output and len(result.output.strip().splitlines()) == 1
    # joint4 follows joint3 (a <mimic>): it cannot have a servo of its own
    urdf.write_text(urdf.read_text().replace('<parent link="link3"/>', '<parent link="link3"/><mimic joint="joint3"/>'))
    result = runner.invoke(app, ["robots", "new", "toy", "--urdf", str(urdf)])
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert "joints: found 'joint4' (it follows 'joint3': a URDF <mimic>" in message, message
    assert message.startswith(f"error: {urdf}: ") and "x2-robot-new-" not in message  # (the user's file, no draft)
    assert not (tmp_path / "specs").exists()
