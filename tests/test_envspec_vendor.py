"""Robots made of vendor parts (franka-panda, franka-robotiq, aloha, arx-r5): faithful to the vendor's file,
self-contained when recorded,
refused by tasks they cannot do, and synthesised on; and the vendor fetch that brings their files."""

from __future__ import annotations

import dataclasses
import hashlib
import sys
import time
import zipfile
from pathlib import Path

import mujoco
import numpy as np
import pytest

from x2.base.errors import SpecError, X2Error
from x2.datasets import Dataset
from x2.envspec import load_env, load_robot, names, vendor
from x2.recorded.replay import deepest_penetration, replay_actions
from x2.sim import make_backend
from x2.sim.mujoco.recorded_xml import check_world_xml
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun

ROBOT = "franka-panda"


def _vendor_arm() -> tuple[mujoco.MjModel, mujoco.MjData]:
    part = load_robot(ROBOT).model.arms[0].part
    assert part is not None
    model = mujoco.MjModel.from_xml_path(str(part.source.file))  # the vendor's file, as the vendor wrote it
    return model, mujoco.MjData(model)


def _pose(model: mujoco.MjModel, data: mujoco.MjData, body: str, base: str) -> tuple[np.ndarray, np.ndarray]:
    """Position and rotation of `body` in the frame of `base`."""
    b, o = model.body(body).id, model.body(base).id
    r0 = data.xmat[o].reshape(3, 3)
    return r0.T @ (data.xpos[b] - data.xpos[o]), r0.T @ data.xmat[b].reshape(3, 3)


def test_the_panda_arm_is_the_vendors_arm() -> None:
    """Forward kinematics of 100 random configurations within the joint limits, link by link, base frame, against
    the vendor's own MJCF compiled alone; and the joints' limits and axes, the links' masses and inertias."""
    vm, vd = _vendor_arm()
    backend = make_backend(load_env("pick_place", robot=ROBOT))
    m, d = backend.model, backend.data
    arm = backend.env.robot.arms[0]
    assert arm.part is not None
    ours = [m.joint(j).id for j in arm.joints]
    theirs = [vm.joint(j).id for j in arm.part.joints]
    np.testing.assert_allclose(m.jnt_range[ours], vm.jnt_range[theirs], atol=1e-6)
    np.testing.assert_allclose(m.jnt_axis[ours], vm.jnt_axis[theirs], atol=1e-6)
    links = [f"link{i}" for i in range(1, 8)]
    for link in links:
        mine, vendor_id = m.body(f"right_{link}").id, vm.body(link).id
        assert m.body_mass[mine] == pytest.approx(vm.body_mass[vendor_id], rel=1e-5)
        np.testing.assert_allclose(m.body_inertia[mine], vm.body_inertia[vendor_id], rtol=1e-4)
    _same_links(m, d, ours, [(f"right_{link}", link) for link in links], ("right_link0", "link0"),
                vm, vd, theirs, np.random.default_rng(0))
    for link in links:  # the collision meshes, carried inline in x2's world, sit where the vendor's do
        np.testing.assert_allclose(_mesh_points(m, d, f"right_{link}", "right_link0"),
                                   _mesh_points(vm, vd, link, "link0"), atol=1e-6)


def _mesh_points(model: mujoco.MjModel, data: mujoco.MjData, body: str, base: str) -> np.ndarray:
    """The vertices of a body's colliding mesh geoms, in the frame of `base`, sorted."""
    points = []
    for g in np.flatnonzero(model.geom_bodyid == model.body(body).id):
        if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_MESH and (model.geom_contype[g] or model.geom_conaffinity[g]):
            mesh = model.geom_dataid[g]
            v = model.mesh_vert[model.mesh_vertadr[mesh]:model.mesh_vertadr[mesh] + model.mesh_vertnum[mesh]]
            points.append(v @ data.geom_xmat[g].reshape(3, 3).T + data.geom_xpos[g])
    o = model.body(base).id
    local = (np.concatenate(points) - data.xpos[o]) @ data.xmat[o].reshape(3, 3)
    return local[np.lexsort(local.T.round(5))]


def _same_links(m: mujoco.MjModel, d: mujoco.MjData, ours: list[int], links: list[tuple[str, str]],
                bases: tuple[str, str], vm: mujoco.MjModel, vd: mujoco.MjData, theirs: list[int],
                rng: np.random.Generator) -> None:
    """Over 100 configurations drawn within the vendor's limits: each (our link, their link) in its arm's base
    frame, within 1 mm and 1e-5 of rotation."""
    for _ in range(100):
        q = rng.uniform(vm.jnt_range[theirs, 0], vm.jnt_range[theirs, 1])
        vd.qpos[vm.jnt_qposadr[theirs]] = q
        d.qpos[m.jnt_qposadr[ours]] = q
        mujoco.mj_kinematics(vm, vd)
        mujoco.mj_kinematics(m, d)
        for mine, vendors in links:
            p_ours, r_ours = _pose(m, d, mine, bases[0])
            p_vendor, r_vendor = _pose(vm, vd, vendors, bases[1])
            assert np.linalg.norm(p_ours - p_vendor) < 1e-3, (mine, q)
            np.testing.assert_allclose(r_ours, r_vendor, atol=1e-5)


def test_the_aloha_arms_are_the_vendors_viperx() -> None:
    """Both ALOHA arms against gym-aloha's ViperX (its left arm's chain), link by link, 100 configurations."""
    part = load_robot("aloha").model.arms[0].part
    assert part is not None
    vm = mujoco.MjModel.from_xml_path(str(part.source.file))
    vd = mujoco.MjData(vm)
    backend = make_backend(load_env("pick_place", robot="aloha"))
    m, d = backend.model, backend.data
    theirs = [vm.joint(j).id for j in part.joints]
    links = ["shoulder_link", "upper_arm_link", "upper_forearm_link", "lower_forearm_link", "wrist_link",
             "gripper_link"]
    rng = np.random.default_rng(2)
    for arm in backend.env.robot.arms:
        ours = [m.joint(j).id for j in arm.joints]
        np.testing.assert_allclose(m.jnt_range[ours], vm.jnt_range[theirs], atol=1e-5)
        for link in links:
            assert m.body_mass[m.body(f"{arm.name}_vx300s_left/{link}").id] == pytest.approx(
                vm.body_mass[vm.body(f"vx300s_left/{link}").id], rel=1e-5)
        _same_links(m, d, ours, [(f"{arm.name}_vx300s_left/{link}", f"vx300s_left/{link}") for link in links],
                    (f"{arm.name}_vx300s_left", "vx300s_left"), vm, vd, theirs, rng)


def test_the_robotiq_linkage_is_the_vendors() -> None:
    """The 2F-85 on x2's Panda against Menagerie's in gym-hil's panda.xml compiled alone (gravity off, x2's
    integrator and step): joints, limits, masses, and at five commands the settled linkage (every joint) and
    the pads in the gripper base's frame; the measured jaw's open end is where reset puts the linkage."""
    part = load_robot("franka-robotiq").model.gripper.part
    assert part is not None and part.linkage is not None
    vm = mujoco.MjModel.from_xml_path(str(part.source.file))
    backend = make_backend(load_env("pick_place", robot="franka-robotiq"))
    m = backend.model
    vm.opt.integrator, vm.opt.timestep, vm.opt.gravity[:] = m.opt.integrator, m.opt.timestep, 0.0
    vd = mujoco.MjData(vm)
    arm = backend.env.robot.arms[0]
    ours = [m.joint(j).id for j in arm.gripper_joints]
    theirs = [vm.joint(j).id for j in (*part.fingers, *part.linkage.joints)]
    for table in ("jnt_range", "jnt_axis", "jnt_stiffness", "dof_damping", "dof_armature"):
        index = [m.jnt_dofadr[ours], vm.jnt_dofadr[theirs]] if table.startswith("dof") else [ours, theirs]
        np.testing.assert_allclose(getattr(m, table)[index[0]], getattr(vm, table)[index[1]], atol=1e-6)
    for mine, vendors in (("right_base", "base"), ("right_finger_a", "right_pad"),
                          ("right_a_follower", "right_follower"), ("right_b_coupler", "left_coupler"),
                          ("right_b_spring_link", "left_spring_link")):
        assert m.body_mass[m.body(mine).id] == pytest.approx(vm.body_mass[vm.body(vendors).id], rel=1e-6)
    assert (m.neq, m.ntendon) == (vm.neq, vm.ntendon)  # the four-bars' connects, the joint tie, the tendon
    servo, vendor_servo = m.actuator("right_gripper").id, vm.actuator("fingers_actuator").id
    for table in ("actuator_gainprm", "actuator_biasprm", "actuator_forcerange", "actuator_ctrlrange"):
        # (a recorded world is MJCF text, numbers to 6 digits: 0.3137255 is 0.313725 there)
        np.testing.assert_allclose(getattr(m, table)[servo], getattr(vm, table)[vendor_servo], rtol=1e-5)
    backend.reset(0)
    np.testing.assert_allclose(backend.joint_values(arm.gripper_joints), backend.jaw().qpos[-1])
    mujoco.mj_kinematics(vm, vd)  # mounted on link7 as the vendor mounts it
    for got, want in zip(_pose(m, backend.data, "right_base", "right_link7"), _pose(vm, vd, "base", "link7"),
                         strict=True):
        np.testing.assert_allclose(got, want, atol=1e-6)
    for command in (0, 64, 128, 192, 255):
        backend.reset(0)
        action = backend.home_action()
        action[-1] = 1.0 - command / 255  # the action's gripper value: 1 open (the vendor's 0) .. 0 closed (255)
        for _ in range(45):
            backend.step(action)
        mujoco.mj_resetData(vm, vd)
        vd.ctrl[vendor_servo] = command
        mujoco.mj_step(vm, vd, nstep=round(1.5 / vm.opt.timestep))
        np.testing.assert_allclose(backend.joint_values(arm.gripper_joints), vd.qpos[vm.jnt_qposadr[theirs]],
                                   atol=2e-3)  # (closed: the pads press on each other, with x2's pad contacts)
        for mine, vendors in (("right_finger_a", "right_pad"), ("right_finger_b", "left_pad")):
            p_ours, r_ours = _pose(m, backend.data, mine, "right_base")
            p_vendor, r_vendor = _pose(vm, vd, vendors, "base")
            assert np.linalg.norm(p_ours - p_vendor) < 1e-4, (command, mine)
            np.testing.assert_allclose(r_ours, r_vendor, atol=2e-3)


def test_the_robotiq_jaw_is_measured() -> None:
    """The measured jaw: 0..85 mm between the pads (Robotiq's stroke), growing with the command; a gap asked of
    it comes back from the linkage it settles."""
    jaw = make_backend(load_env("pick_place", robot="franka-robotiq")).jaw()
    assert jaw is not None
    assert jaw.gap_closed == pytest.approx(0.0, abs=1e-3) and jaw.gap_open == pytest.approx(0.085, abs=1e-3)
    assert np.all(np.diff(jaw.gaps) > 0)
    for gap in (0.02, 0.05, 0.08):
        command = jaw.command_for_gap(gap)
        assert float(np.interp(command, jaw.commands, jaw.gaps)) == pytest.approx(gap, abs=1e-9)
        assert jaw.command_at(float(jaw.joints_at(command)[0])) == pytest.approx(command, abs=1e-6)
    assert make_backend(load_env("pick_place", robot=ROBOT)).jaw() is None  # slides: the opening is the ctrl


@pytest.mark.parametrize(("gripper", "geom"), [("G", "right_pad_a"), ("robotiq-2f85", "right_a_pad1")])
def test_another_gripper_gives_another_model_on_the_same_arm(gripper: str, geom: str) -> None:
    own = make_backend(load_env("pick_place", robot=ROBOT))
    other = make_backend(load_env("pick_place", robot=ROBOT, gripper=gripper))
    assert other.env.robot.name == f"franka-panda+{gripper}" and other.env.robot.gripper.kind == gripper
    assert load_env("pick_place", robot=f"franka-panda+{gripper}").robot == other.env.robot  # the recorded name
    hand = {own.model.geom(g).name for g in range(own.model.ngeom)}
    assert geom in {other.model.geom(g).name for g in range(other.model.ngeom)} and geom not in hand
    arm = own.env.robot.arms[0]
    assert other.env.robot.arms[0].joints == arm.joints
    rng = np.random.default_rng(3)
    for backend in (own, other):
        backend.reset(0)
    for _ in range(10):
        q = rng.uniform(-1.0, 1.0, size=7)
        flanges = []
        for backend in (own, other):
            m, d = backend.model, backend.data
            d.qpos[m.jnt_qposadr[[m.joint(j).id for j in arm.joints]]] = q
            mujoco.mj_kinematics(m, d)
            flanges.append(d.site_xpos[m.site("right_flange").id].copy())
        np.testing.assert_allclose(flanges[0], flanges[1], atol=1e-9)


def _rpy(r: float, p: float, y: float) -> np.ndarray:
    """URDF's fixed-axis roll, pitch, yaw: Rz(y) Ry(p) Rx(r)."""
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def test_the_arx_r5_arms_follow_the_vendor_urdf() -> None:
    """The URDF read here with the standard library (no MuJoCo): each link's pose by its joints' origins and
    axes, against both x2 arms over 100 random configurations; and the links' masses."""
    import xml.etree.ElementTree as ET

    part = load_robot("arx-r5").model.arms[0].part
    assert part is not None
    urdf = ET.parse(part.source.file).getroot()
    joints = {j.get("name"): j for j in urdf.iter("joint")}
    masses = {link.get("name"): float(link.find("inertial/mass").get("value")) for link in urdf.iter("link")}
    chain = [joints[name] for name in part.joints]
    backend = make_backend(load_env("pick_place", robot="arx-r5"))
    m, d = backend.model, backend.data
    rng = np.random.default_rng(4)
    for arm in backend.env.robot.arms:
        for joint in chain:
            link = joint.find("child").get("link")
            assert m.body_mass[m.body(f"{arm.name}_{link}").id] == pytest.approx(masses[link], rel=1e-4)
        adr = m.jnt_qposadr[[m.joint(j).id for j in arm.joints]]
        for _ in range(100):
            q = rng.uniform(-3.0, 3.0, size=len(chain))
            d.qpos[adr] = q
            mujoco.mj_kinematics(m, d)
            rot, pos = np.eye(3), np.zeros(3)
            for qi, joint in zip(q, chain, strict=True):
                origin = joint.find("origin")
                xyz = np.array([float(v) for v in origin.get("xyz").split()])
                rpy = [float(v) for v in origin.get("rpy").split()]
                axis = np.array([float(v) for v in joint.find("axis").get("xyz").split()])
                pos, rot = pos + rot @ xyz, rot @ _rpy(*rpy) @ _axis_angle(axis, qi)
                link = joint.find("child").get("link")
                got_pos, got_rot = _pose(m, d, f"{arm.name}_{link}", f"{arm.name}_base_link")
                assert np.linalg.norm(got_pos - pos) < 1e-3
                np.testing.assert_allclose(got_rot, rot, atol=1e-4)


def _dh(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    """One link of Craig's (modified) Denavit-Hartenberg convention, as Franka publishes the Panda's."""
    ca, sa, ct, st = np.cos(alpha), np.sin(alpha), np.cos(theta), np.sin(theta)
    return np.array([[ct, -st, 0, a], [st * ca, ct * ca, -sa, -d * sa], [st * sa, ct * sa, ca, d * ca], [0, 0, 0, 1]])


def test_the_panda_flange_matches_frankas_published_parameters() -> None:
    """An independent check of the vendor file: Franka's DH table (a, d, alpha per joint, flange 0.107 m) puts
    the flange where x2's compiled arm has it."""
    a = [0.0, 0.0, 0.0, 0.0825, -0.0825, 0.0, 0.088]
    dd = [0.333, 0.0, 0.316, 0.0, 0.384, 0.0, 0.0]
    alpha = [0.0, -np.pi / 2, np.pi / 2, np.pi / 2, -np.pi / 2, np.pi / 2, np.pi / 2]
    backend = make_backend(load_env("pick_place", robot=ROBOT))
    m, d = backend.model, backend.data
    arm = backend.env.robot.arms[0]
    adr = m.jnt_qposadr[[m.joint(j).id for j in arm.joints]]
    flange, base = m.site("right_flange").id, m.body("right_link0").id
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = rng.uniform(-1.5, 1.5, size=7)
        d.qpos[adr] = q
        mujoco.mj_kinematics(m, d)
        t = np.eye(4)
        for i in range(7):
            t = t @ _dh(a[i], dd[i], alpha[i], q[i])
        expected = (t @ np.array([0.0, 0.0, 0.107, 1.0]))[:3]
        r0 = d.xmat[base].reshape(3, 3)
        got = r0.T @ (d.site_xpos[flange] - d.xpos[base])
        assert np.linalg.norm(got - expected) < 1e-3


@pytest.mark.parametrize("robot", names("robots"))
def test_every_robot_compiles_steps_renders_and_is_recorded_whole(robot: str) -> None:
    backend = make_backend(load_env("pick_place", robot=robot))
    backend.reset(3)
    xml = backend.model_xml()
    check_world_xml(xml, "franka world")  # no file names: the meshes are inline
    assert "file=" not in xml
    for _ in range(15):
        backend.step(backend.home_action())
    state, i = backend.robot_state(), 0
    for arm in backend.env.robot.arms:  # the servos hold home
        np.testing.assert_allclose(state.qpos[i:i + len(arm.joints)], arm.home, atol=0.02)
        i += len(arm.joints) + len(arm.gripper_joints)
    assert backend.penetration() < 0.005
    for camera in backend.env.robot.cameras:
        image = np.asarray(backend.render(camera, 64, 48))
        assert image.shape == (48, 64, 3) and image.std() > 5  # a picture, not a blank


def test_a_one_arm_robot_refuses_a_two_arm_task_in_one_line() -> None:
    with pytest.raises(SpecError) as err:
        load_env("fruit_in_microwave", robot=ROBOT)
    assert "task fruit_in_microwave needs two arms; robot franka-panda has one" in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("robot", [ROBOT, "aloha", "arx-r5", "franka-robotiq"])
def test_pick_place_synthesises_and_replays_exactly(tmp_path: Path, robot: str) -> None:
    out = tmp_path / robot
    run = SynthRun(SynthConfig(SessionOptions("pick_place", robot=robot), n=2, workers=1, seed=5, max_attempts=4),
                   out).run()
    assert run.accepted == 2
    ds = Dataset.open(out)
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            assert replay_actions(ep).max_deviation == 0.0
            assert deepest_penetration(ep).depth < 0.005


# ----- the vendor fetch, with pip replaced by a script that hands over a wheel (the transport) -----------------
def _wheel(path: Path) -> Path:
    wheel = path / "demo_pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("demo_pkg/assets/arm.xml", "<mujoco/>")
        z.writestr("demo_pkg/code.py", "raise SystemExit('never imported')")
        z.writestr("demo_pkg-1.0.dist-info/LICENSE", "MIT")
    return wheel


def _fake_pip(tmp_path: Path, wheel: Path) -> tuple[str, ...]:
    script = tmp_path / "pip.py"
    script.write_text("import shutil, sys\n"
                      "dest = sys.argv[sys.argv.index('--dest') + 1]\n"
                      f"import os; os.makedirs(dest, exist_ok=True); shutil.copy({str(wheel)!r}, dest)\n")
    return (sys.executable, str(script))


def _package(sha: str) -> vendor.VendorPackage:
    return vendor.VendorPackage("demo-pkg", "1.0", sha, "MIT", ("demo_pkg/assets",),
                                ("demo_pkg-1.0.dist-info/LICENSE",), "a test")


def test_fetch_checks_the_pin_and_unpacks_only_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = _wheel(tmp_path)
    monkeypatch.setenv(vendor.VENDOR_ENV, str(tmp_path / "vendor"))
    monkeypatch.setitem(vendor.PACKAGES, "demo-pkg", _package("0" * 64))
    with pytest.raises(X2Error, match="sha256 .*; pinned: 0000"):
        vendor.fetch("demo-pkg", pip=_fake_pip(tmp_path, wheel))
    assert not vendor.fetched("demo-pkg")
    assert [p.name for p in (tmp_path / "vendor").iterdir()] == []  # nothing half-unpacked left behind
    monkeypatch.setitem(vendor.PACKAGES, "demo-pkg", _package(hashlib.sha256(wheel.read_bytes()).hexdigest()))
    folder = vendor.fetch("demo-pkg", pip=_fake_pip(tmp_path, wheel))
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert files == ["demo_pkg-1.0.dist-info/LICENSE", "demo_pkg/assets/arm.xml"]
    assert vendor.vendor_file("demo-pkg", "demo_pkg/assets/arm.xml").read_text() == "<mujoco/>"
    with pytest.raises(X2Error, match="no file 'demo_pkg/code.py'"):
        vendor.vendor_file("demo-pkg", "demo_pkg/code.py")


def test_an_on_demand_package_is_fetched_only_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`make`'s fetch (fetch_all) leaves a big wheel no built-in robot needs; its pip options pin one platform's
    wheel (the sha256 is of one file)."""
    wheel = _wheel(tmp_path)
    monkeypatch.setenv(vendor.VENDOR_ENV, str(tmp_path / "vendor"))
    pkg = dataclasses.replace(_package(hashlib.sha256(wheel.read_bytes()).hexdigest()), on_demand=True,
                              pip_args=("--platform", "manylinux2014_x86_64"))
    monkeypatch.setattr(vendor, "PACKAGES", {"demo-pkg": pkg})
    assert vendor.fetch_all() == [] and not vendor.fetched("demo-pkg")
    script = tmp_path / "pip.py"
    log = tmp_path / "argv.txt"
    script.write_text("import os, shutil, sys\n"
                      f"open({str(log)!r}, 'w').write(' '.join(sys.argv[1:]))\n"
                      "dest = sys.argv[sys.argv.index('--dest') + 1]\n"
                      f"os.makedirs(dest, exist_ok=True); shutil.copy({str(wheel)!r}, dest)\n")
    vendor.fetch("demo-pkg", pip=(sys.executable, str(script)))
    assert vendor.fetched("demo-pkg") and "--platform manylinux2014_x86_64" in log.read_text()
    assert vendor.PACKAGES["demo-pkg"].on_demand


def test_the_pybullet_package_is_on_demand_and_pins_one_wheel() -> None:
    pkg = vendor.PACKAGES["pybullet"]
    assert pkg.on_demand and "--platform" in pkg.pip_args
    assert set(pkg.folders) == {"pybullet_data/kuka_iiwa", "pybullet_data/xarm"}


def test_robots_show_draws_the_robot_from_three_sides_with_its_cameras(tmp_path: Path) -> None:
    from PIL import Image

    from x2.render.robot_picture import COLOURS, robot_picture

    out = robot_picture("aloha", tmp_path / "aloha.png", width=160, height=120)
    image = np.asarray(Image.open(out).convert("RGB"))
    assert image.shape == (120, 3 * 160, 3)
    for colour in COLOURS[:3]:  # head, left wrist, right wrist: each camera's frustum is drawn in every view
        for view in range(3):
            panel = image[:, view * 160:(view + 1) * 160]
            assert (panel == colour).all(axis=-1).any(), (colour, view)
    assert [p.name for p in tmp_path.iterdir()] == ["aloha.png"]  # no temporary file left


# ----- ALOHA's leader arms through the pty servo bus ---------------------------------------------------------
def test_the_leader_arm_mirror_drives_aloha_through_the_serial_line(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A GELLO-style leader (two arms of six Dynamixel joints, as ALOHA's WidowX leaders) on a fake bus behind a
    pty, calibrated at the robot's home; the follower engages, then follows the leader to a new pose."""
    from helpers.fake_servo_bus import FakeDynamixelBus

    from x2.devices import make_device
    from x2.devices.calibration import Calibration, calibration_path, device_id_for_port
    from x2.teleop.mapping import JointMirror

    monkeypatch.setenv("X2_CALIBRATION_DIR", str(tmp_path / "calibration"))
    backend = make_backend(load_env("pick_place", robot="aloha"))
    backend.reset(0)
    robot = backend.env.robot
    home = np.concatenate([a.home for a in robot.arms])
    ids = tuple(range(1, 15))
    at_home = {i: 2048 for i in ids}
    moved = dict(at_home) | {1: 2048 + 200, 3: 2048 - 150, 9: 2048 + 120}  # waist, elbow left; shoulder right
    with FakeDynamixelBus(ids) as bus:
        device_id = device_id_for_port(bus.path)
        cal = Calibration.from_pose(device_id, ids, [at_home[i] for i in ids], home)
        cal.save(calibration_path(device_id))
        bus.set_ticks(at_home)
        mirror = JointMirror(backend.env.fps)
        mirror.reset(backend, backend.home_action())
        with make_device(f"master-arm:{bus.path}") as dev:
            def follow(ticks: int) -> None:
                for _ in range(ticks):
                    sample = dev.latest()
                    backend.step(mirror.command(sample, 0.0, [], backend.robot_state()))

            while dev.latest() is None:  # (a bus that never answers is the test timeout's to end)
                time.sleep(0.01)
            follow(10)
            assert mirror.status.count("following") == 2, mirror.status
            bus.set_ticks(moved)
            while not np.array_equal(dev.latest().values["ticks"][:3], [2248, 2048, 1898]):
                time.sleep(0.01)
            follow(60)
    want = cal.to_joints(np.array([moved[i] for i in ids], dtype=np.float64))
    qpos, i = backend.robot_state().qpos, 0
    for a, arm in enumerate(robot.arms):
        np.testing.assert_allclose(qpos[i:i + 6], want[7 * a:7 * a + 6], atol=0.03)
        i += len(arm.joints) + len(arm.gripper_joints)


def test_the_leader_arm_refuses_a_robot_it_cannot_mirror() -> None:
    from x2.teleop.mapping import JointMirror

    backend = make_backend(load_env("pick_place", robot=ROBOT))
    with pytest.raises(X2Error, match="master-arm mirrors 2 arms of 6 joints; robot franka-panda has right 7"):
        JointMirror(30).reset(backend, backend.home_action())


def test_a_source_archive_comes_straight_from_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No pip (it would run the archive's build): the index page's link, the pin, only the listed files."""
    import functools
    import http.server
    import io
    import tarfile
    import threading

    root = tmp_path / "index"
    (root / "demo-pkg").mkdir(parents=True)
    archive = root / "demo-pkg" / "demo_pkg-1.0.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in (("demo_pkg-1.0/robot/arm.urdf", "<robot/>"), ("demo_pkg-1.0/setup.py", "raise"),
                           ("demo_pkg-1.0/LICENSE", "BSD")):
            info = tarfile.TarInfo(name)
            info.size = len(text)
            tar.addfile(info, io.BytesIO(text.encode()))
    (root / "demo-pkg" / "index.html").write_text('<a href="demo_pkg-1.0.tar.gz#sha256=x">demo_pkg-1.0.tar.gz</a>')
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv(vendor.INDEX_ENV, f"http://127.0.0.1:{server.server_address[1]}")
        monkeypatch.setenv(vendor.VENDOR_ENV, str(tmp_path / "vendor"))
        pkg = vendor.VendorPackage("demo-pkg", "1.0", hashlib.sha256(archive.read_bytes()).hexdigest(), "BSD",
                                   ("demo_pkg-1.0/robot/arm.urdf",), ("demo_pkg-1.0/LICENSE",), "a test",
                                   sdist="demo_pkg-1.0.tar.gz")
        monkeypatch.setitem(vendor.PACKAGES, "demo-pkg", pkg)
        folder = vendor.fetch("demo-pkg", pip=("false",))  # (pip is never asked)
    finally:
        server.shutdown()
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert files == ["demo_pkg-1.0/LICENSE", "demo_pkg-1.0/robot/arm.urdf"]


def test_a_linkage_part_naming_what_its_file_lacks_is_refused_in_one_line(tmp_path: Path) -> None:
    """A linkage gripper's part file must name every linkage joint of the vendor's gripper, and give its pads."""
    info = load_robot("franka-robotiq")
    part_text = (info.file.parent / "parts" / "robotiq-2f85.yaml").read_text().replace("name: robotiq-2f85", "name: r")
    (tmp_path / "parts").mkdir()
    robot = tmp_path / "arm-robotiq.yaml"
    robot.write_text(info.file.read_text().replace("mounts/stand.xml", str(info.model.mjcf)).replace(
        "gripper: robotiq-2f85", "gripper: {kind: r, part: r, open: 0, closed: 255}"))
    part = tmp_path / "parts" / "r.yaml"
    part.write_text(part_text.replace(" left_follower_joint]", "]"))
    with pytest.raises(SpecError) as err:
        make_backend(load_env("pick_place", robot=str(robot)))
    assert "linkage: found left_follower_joint;" in str(err.value) and "\n" not in str(err.value)
    part.write_text(part_text.replace("pads: [right_pad, left_pad]\n", ""))
    with pytest.raises(SpecError) as err:
        load_robot(str(robot))
    assert "pads" in str(err.value) and str(part) in str(err.value) and "\n" not in str(err.value)
