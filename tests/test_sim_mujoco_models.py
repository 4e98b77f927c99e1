"""Physics and rendering checks of the authored MuJoCo models: ArtiXon body, G/H grippers, object assets
and the green-booth world builder.

Everything is built from the `x2.envspec.env` dataclasses directly (no YAML loader, no backend), so these
tests pin the models themselves. Timing: 30 Hz control ticks of 16 substeps at 1/480 s, as in a
default EnvSpec.
"""

from __future__ import annotations

import math
import os
from functools import cache
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")  # headless CPU rendering; must precede the mujoco import

import mujoco  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import yaml  # noqa: E402

from x2.base.errors import NotFoundError, SpecError  # noqa: E402
from x2.envspec.env import (  # noqa: E402
    ArmSpec,
    AssetSpec,
    BoothSpec,
    EnvSpec,
    GripperSpec,
    ObjectInstance,
    Region,
    RobotSpec,
)
from x2.sim.mujoco.world import build_world, free_joint, object_body  # noqa: E402

PKG = Path(__file__).resolve().parents[1] / "x2"
ROBOT_DIR = PKG / "robots" / "artixon"
ASSET_DIR = PKG / "assets" / "objects"
ASSETS = ("apple", "orange", "lemon", "banana", "mug", "block", "plate", "microwave")
FRUITS = ("apple", "orange", "lemon", "banana")
ARMS = ("left", "right")
HOME = (0.0, -1.21, 1.42, 0.0, 1.36, 0.0)  # arms raised in front, tools down, G TCP at (0.38, +-0.25, 1.12)
STROKE = {"g": 0.04, "h": 0.06}  # open ctrl per gripper kind (closed = 0)
TCP_OFFSET = {"g": 0.112, "h": 0.127}  # flange -> tcp along the tool axis (m)
FPS, SUBSTEPS = 30, 16
TABLE_Z = BoothSpec().table_height
# The reference layout: microwave on the far left of the table, fruit in front of the right arm.
LAYOUT = {
    "microwave": (0.7, 0.25, TABLE_Z, 0.0),
    "apple": (0.55, -0.25, TABLE_Z, 0.0),
    "orange": (0.4, -0.05, TABLE_Z, 0.0),
    "lemon": (0.65, -0.1, TABLE_Z, 0.3),
    "banana": (0.4, -0.45, TABLE_Z, 0.5),
    "mug": (0.9, -0.15, TABLE_Z, 0.0),
    "block": (0.35, 0.1, TABLE_Z, 0.3),
    "plate": (0.85, -0.4, TABLE_Z, 0.0),
}


# ---------------------------------------------------------------- spec construction


def load_asset(name: str) -> AssetSpec:
    d = yaml.safe_load((ASSET_DIR / f"{name}.yaml").read_text())
    return AssetSpec(
        name=d["name"], mjcf=ASSET_DIR / d["mjcf"], tags=tuple(d["tags"]),
        footprint_radius=d["footprint_radius"], height=d["height"], free=d["free"], parts=dict(d["parts"]),
        joints=tuple(d["joints"]),
    )


def artixon(kind: str) -> RobotSpec:
    arms = tuple(
        ArmSpec(
            name=a, joints=tuple(f"{a}_j{i}" for i in range(1, 7)),
            actuators=tuple(f"{a}_j{i}" for i in range(1, 7)), home=HOME, gripper_actuator=f"{a}_gripper",
            gripper_joints=(f"{a}_finger_a", f"{a}_finger_b"), tcp_site=f"{a}_tcp", wrist_camera=f"{a}_wrist",
        )
        for a in ARMS
    )
    gripper = GripperSpec(kind=kind.upper(), mjcf=ROBOT_DIR / f"gripper_{kind}.xml", open_ctrl=STROKE[kind],
                           closed_ctrl=0.0)
    return RobotSpec(name=f"artixon-{kind}", mjcf=ROBOT_DIR / "artixon.xml", gripper=gripper, arms=arms,
                      cameras=("head", "left_wrist", "right_wrist"))


def booth_env(kind: str, objects: dict[str, tuple[float, float, float, float]]) -> EnvSpec:
    instances = tuple(
        ObjectInstance(name=n, candidates=(load_asset(n),), tags=load_asset(n).tags, pose=pose)
        for n, pose in objects.items()
    )
    return EnvSpec(robot=artixon(kind), booth=BoothSpec(), objects=instances, task=None, fps=FPS,
                   substeps=SUBSTEPS)


@cache
def world(kind: str, names: tuple[str, ...]) -> mujoco.MjModel:
    return build_world(booth_env(kind, {n: LAYOUT[n] for n in names}), {}).compile()


class Sim:
    """A compiled world with the arms at home and helpers to run whole control ticks."""

    def __init__(self, model: mujoco.MjModel):
        self.m, self.d = model, mujoco.MjData(model)
        names = [f"{a}_j{i}" for a in ARMS for i in range(1, 7)]
        self.qadr = np.array([model.joint(n).qposadr[0] for n in names])
        self.act = np.array([model.actuator(n).id for n in names])
        self.set_arms(np.array(HOME * 2))
        mujoco.mj_forward(self.m, self.d)

    def set_arms(self, q: np.ndarray) -> None:
        self.d.qpos[self.qadr] = q
        self.d.ctrl[self.act] = q

    def arm_q(self) -> np.ndarray:
        return self.d.qpos[self.qadr].copy()

    def tick(self, n: int = 1) -> None:
        for _ in range(n * SUBSTEPS):
            mujoco.mj_step(self.m, self.d)

    def gripper(self, arm: str, ctrl: float) -> None:
        self.d.ctrl[self.m.actuator(f"{arm}_gripper").id] = ctrl

    def finger(self, arm: str, which: str = "a") -> float:
        return float(self.d.qpos[self.m.joint(f"{arm}_finger_{which}").qposadr[0]])

    def place(self, name: str, pos: tuple[float, float, float]) -> None:
        adr = self.m.joint(free_joint(name)).qposadr[0]
        self.d.qpos[adr:adr + 7] = [*pos, 1.0, 0.0, 0.0, 0.0]
        self.d.qvel[self.m.joint(free_joint(name)).dofadr[0]:][:6] = 0.0


def tool_down_ik(m: mujoco.MjModel, arm: str, tcp: tuple[float, float, float], tcp_offset: float
                 ) -> np.ndarray:
    """Joint angles putting the TCP at `tcp` with the tool pointing straight down (j4 = j6 = 0).

    Closed form for this arm: j1 turns the arm's vertical plane, j2/j3 are a planar 2-link chain to the
    wrist pitch axis, j5 makes the tool vertical. Link lengths are read from the compiled model."""
    shoulder = m.body(f"{arm}_link1").pos  # child of the fixed torso at the world origin
    l1 = m.body(f"{arm}_link3").pos[0]
    l2 = m.body(f"{arm}_link4").pos[0] + m.body(f"{arm}_link5").pos[0]
    lw = m.body(f"{arm}_link6").pos[0] + m.site(f"{arm}_flange").pos[0] + tcp_offset
    dx, dy = tcp[0] - shoulder[0], tcp[1] - shoulder[1]
    rho, z = math.hypot(dx, dy), tcp[2] + lw - shoulder[2]
    d = math.hypot(rho, z)
    j3 = math.acos((d * d - l1 * l1 - l2 * l2) / (2 * l1 * l2))
    j2 = math.atan2(-z, rho) - math.atan2(l2 * math.sin(j3), l1 + l2 * math.cos(j3))  # elbow up
    return np.array([math.atan2(dy, dx), j2, j3, 0.0, math.pi / 2 - j2 - j3, 0.0])


# ---------------------------------------------------------------- model structure


@pytest.mark.parametrize("name", ASSETS)
def test_asset_yaml_and_mjcf_follow_the_contract(name: str) -> None:
    d = yaml.safe_load((ASSET_DIR / f"{name}.yaml").read_text())
    assert set(d) == {"name", "mjcf", "tags", "footprint_radius", "height", "free", "parts", "joints"}
    assert d["name"] == name
    spec = mujoco.MjSpec.from_file(str(ASSET_DIR / d["mjcf"]))
    assert spec.modelname == name
    assert [b.name for b in spec.worldbody.bodies] == ["object"]
    sites = {s.name for s in spec.sites}
    assert set(d["parts"].values()) <= sites
    assert {j.name for j in spec.joints} == set(d["joints"])
    m = spec.compile()
    if name in FRUITS:
        assert 0.1 <= m.body("object").subtreemass[0] <= 0.2


@pytest.mark.parametrize("kind", ["g", "h"])
def test_world_with_all_assets_compiles_with_stable_names(kind: str) -> None:
    m = world(kind, ASSETS)
    for arm in ARMS:
        for i in range(1, 7):
            j, a = m.joint(f"{arm}_j{i}"), m.actuator(f"{arm}_j{i}")
            assert a.trntype == mujoco.mjtTrn.mjTRN_JOINT and a.trnid[0] == j.id
            np.testing.assert_allclose(a.ctrlrange, j.range)  # ctrl = target angle within the joint range
        gripper = m.actuator(f"{arm}_gripper")
        assert gripper.trnid[0] == m.joint(f"{arm}_finger_a").id
        np.testing.assert_allclose(gripper.ctrlrange, [0.0, STROKE[kind]])
        for site in (f"{arm}_flange", f"{arm}_tcp"):
            m.site(site)
        m.joint(f"{arm}_finger_b")
    for cam in ("head", "front", "left_wrist", "right_wrist"):
        m.camera(cam)
    m.joint("microwave/door_hinge")
    m.site("microwave/cavity")
    m.site("microwave/handle")
    m.site("microwave/door_grasp")
    for name in ASSETS:
        body = m.body(object_body(name))
        assert body.parentid[0] == 0
        if load_asset(name).free:
            assert m.joint(free_joint(name)).type[0] == mujoco.mjtJoint.mjJNT_FREE
        else:
            assert body.jntnum[0] == 0  # welded: the backend moves it through model.body_pos
    # The dataset stores the compiled MJCF: it must survive a save and reload.
    spec = build_world(booth_env(kind, {n: LAYOUT[n] for n in ASSETS}), {})
    spec.compile()
    assert mujoco.MjModel.from_xml_string(spec.to_xml()).nq == m.nq


def test_region_objects_start_at_the_region_centre_as_the_chosen_asset(tmp_path: Path) -> None:
    region = Region("front", center=(0.5, -0.2), half_size=(0.1, 0.1), z=TABLE_Z)
    pool = (load_asset("apple"), load_asset("orange"))
    env = EnvSpec(robot=artixon("g"), booth=BoothSpec(), task=None,
                  objects=(ObjectInstance("fruit", candidates=pool, tags=("fruit",), region=region),))
    m = build_world(env, {"fruit": pool[1]}).compile()
    adr = m.joint(free_joint("fruit")).qposadr[0]
    np.testing.assert_allclose(m.qpos0[adr:adr + 3], [0.5, -0.2, TABLE_Z])
    assert m.geom("fruit/peel").size[0] == pytest.approx(0.042)  # the orange, not the first candidate
    assert build_world(env, {}).compile().geom("fruit/flesh")  # no choice: the first candidate

    broken = tmp_path / "broken.xml"
    broken.write_text("<mujoco><worldbody><body name='object'><geom size='0.1'/></body></worldbody>")
    for mjcf, error in ((tmp_path / "ghost.xml", NotFoundError), (broken, SpecError)):
        bad = AssetSpec("bad", mjcf, (), 0.05, 0.0, True)
        with pytest.raises(error, match=mjcf.name):
            build_world(env, {"fruit": bad})


# ---------------------------------------------------------------- arm control


@pytest.mark.parametrize("kind", ["g", "h"])
def test_home_pose_holds_still_and_clear_of_the_table(kind: str) -> None:
    sim = Sim(world(kind, ("microwave", "apple")))
    home = sim.arm_q()
    worst = 0.0
    for _ in range(3 * FPS):
        sim.tick()
        worst = max(worst, float(np.abs(sim.arm_q() - home).max()))
    assert worst < 1e-3
    for arm in ARMS:
        tcp = sim.d.site(f"{arm}_tcp").xpos
        assert tcp[2] > TABLE_Z + 0.15
    robot_geoms = {i for i in range(sim.m.ngeom) if sim.m.geom_contype[i] == 2}
    touching = [c for c in sim.d.contact[: sim.d.ncon] if {c.geom1, c.geom2} & robot_geoms]
    assert touching == []


@pytest.mark.parametrize("kind", ["g", "h"])
def test_arms_track_a_30hz_sinusoid_stream(kind: str) -> None:
    sim = Sim(world(kind, ()))  # free space: this checks the servos, not contacts
    home = sim.arm_q()
    rng = np.random.default_rng(7)
    omega = rng.uniform(3.0, 5.0, 12)  # rad/s
    amp = 1.0 / omega  # peak joint speed 1 rad/s, swings of 0.2-0.33 rad that keep the hands off the table
    phase = rng.uniform(0, 2 * np.pi, 12)
    ticks = 6 * FPS
    target = np.array([home + amp * (np.sin(omega * k / FPS + phase) - np.sin(phase)) for k in range(ticks)])
    reached = np.empty_like(target)
    for k in range(ticks):
        sim.d.ctrl[sim.act] = target[k]  # one command per tick, held over its 16 substeps
        sim.tick()
        reached[k] = sim.arm_q()
        assert sim.d.ncon == 0
    rms = np.sqrt(((reached - target) ** 2).mean(axis=0))
    assert rms.max() < 0.02, rms

    def mse(lag: int) -> float:
        return float(((reached[lag:] - target[: ticks - lag]) ** 2).mean())

    assert min(range(6), key=mse) <= 2


@pytest.mark.parametrize("kind", ["g", "h"])
def test_gripper_reaches_commanded_opening_within_half_a_second(kind: str) -> None:
    sim = Sim(world(kind, ("microwave",)))
    for target in (STROKE[kind], 0.0, 0.5 * STROKE[kind]):
        for arm in ARMS:
            sim.gripper(arm, target)
        sim.tick(FPS // 2)
        for arm in ARMS:
            assert abs(sim.finger(arm, "a") - target) < 1e-3
            assert abs(sim.finger(arm, "b") - sim.finger(arm, "a")) < 1e-3  # the coupling holds


# ---------------------------------------------------------------- objects


@pytest.mark.parametrize("name", ["apple", "orange", "lemon", "banana", "mug", "block", "plate"])
def test_dropped_object_comes_to_rest_on_the_table(name: str) -> None:
    sim = Sim(world("g", ("microwave", name)))
    x, y = LAYOUT[name][:2]
    sim.place(name, (x, y, TABLE_Z + 0.05))
    sim.tick(FPS)
    body = sim.d.body(object_body(name))
    speed = np.linalg.norm(sim.d.qvel[sim.m.joint(free_joint(name)).dofadr[0]:][:3])
    assert speed < 0.01
    assert abs(body.xpos[2] - TABLE_Z) < 0.004  # origin at the bottom: resting means z = table height
    assert np.hypot(body.xpos[0] - x, body.xpos[1] - y) < 0.03  # no bounce or roll-away


def test_microwave_door_swings_within_range_and_stays_open() -> None:
    sim = Sim(world("g", ("microwave",)))
    hinge = sim.m.joint("microwave/door_hinge")
    qadr = hinge.qposadr[0]
    door = sim.m.body("microwave/door").id
    handle = sim.d.site("microwave/handle")
    angles = []
    for _ in range(2 * FPS):  # pull the handle straight out from the door with 3 N, for 2 s
        force = -3.0 * sim.d.xmat[door].reshape(3, 3)[:, 0]  # the door's outward normal is its local -x
        lever = handle.xpos - sim.d.xpos[door]
        sim.d.xfrc_applied[door, :3] = force
        sim.d.xfrc_applied[door, 3:] = np.cross(lever, force)
        sim.tick()
        angles.append(float(sim.d.qpos[qadr]))
    lo, hi = hinge.range
    assert angles[-1] > 1.0  # opened well past 60 deg
    assert min(angles) >= lo - 0.02 and max(angles) <= hi + 0.02
    sim.d.xfrc_applied[door] = 0.0
    opened = float(sim.d.qpos[qadr])
    sim.tick(FPS)
    assert abs(sim.d.qpos[qadr] - opened) < 0.05  # friction keeps it where it was left
    # Opening swings the free edge towards the robot and round to +y.
    assert handle.xpos[0] < LAYOUT["microwave"][0] - 0.16


def test_microwave_cavity_lies_inside_the_shell() -> None:
    m = world("g", ("microwave",))
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)
    cavity = m.site("microwave/cavity")
    assert cavity.type[0] == mujoco.mjtGeom.mjGEOM_BOX
    centre, half = d.site("microwave/cavity").xpos, cavity.size
    lo, hi = centre - half, centre + half
    x, y, z, _ = LAYOUT["microwave"]
    assert np.all(lo > [x - 0.16, y - 0.225, z]) and np.all(hi < [x + 0.16, y + 0.225, z + 0.28])
    shell = m.body("microwave/object").id
    for g in range(m.ngeom):
        if m.geom_bodyid[g] != shell or m.geom_contype[g] == 0:
            continue
        g_lo = d.geom_xpos[g] - m.geom_size[g]  # shell walls are axis-aligned boxes
        g_hi = d.geom_xpos[g] + m.geom_size[g]
        overlap = np.minimum(hi, g_hi) - np.maximum(lo, g_lo)
        assert overlap.min() <= 1e-6, m.geom(g).name  # no wall intrudes into the cavity


# ---------------------------------------------------------------- grasping


GRASP_XY = (0.5, -0.25)  # in front of the right shoulder, well inside the tool-down workspace


def lowest_point(m: mujoco.MjModel, d: mujoco.MjData, body: str) -> float:
    """World z of the lowest point of a body's colliding geoms (from their bounding boxes)."""
    zs = []
    for g in range(m.ngeom):
        if m.geom_bodyid[g] == m.body(body).id and m.geom_contype[g]:
            centre, half = m.geom_aabb[g, :3], m.geom_aabb[g, 3:]
            rot = d.geom_xmat[g].reshape(3, 3)
            zs.append(d.geom_xpos[g, 2] + rot[2] @ centre - np.abs(rot[2]) @ half)
    return min(zs)


@pytest.mark.parametrize("kind", ["g", "h"])
@pytest.mark.parametrize("fruit", FRUITS)
def test_squeezed_fruit_is_held_when_the_arm_lifts(kind: str, fruit: str) -> None:
    sim = Sim(world(kind, ("microwave", fruit)))
    x, y = GRASP_XY
    sim.place(fruit, (x, y, TABLE_Z))
    mujoco.mj_forward(sim.m, sim.d)
    centre_z = sim.d.site(f"{fruit}/grasp").xpos[2]

    def reach(z: float) -> np.ndarray:
        q = sim.arm_q()
        q[6:] = tool_down_ik(sim.m, "right", (x, y, z), TCP_OFFSET[kind])
        sim.set_arms(q)
        mujoco.mj_forward(sim.m, sim.d)
        assert np.linalg.norm(sim.d.site("right_tcp").xpos - [x, y, z]) < 1e-3  # the IK is right
        return q[6:]

    # Open jaws around the fruit's centre, raised if needed so no fingertip is below the table top
    # (the H hooks reach 47 mm past the TCP and grasp round fruit above the equator).
    for j in ("a", "b"):
        sim.d.qpos[sim.m.joint(f"right_finger_{j}").qposadr[0]] = STROKE[kind]
    sim.gripper("right", STROKE[kind])
    reach(centre_z)
    tip = min(lowest_point(sim.m, sim.d, f"right_finger_{j}") for j in ("a", "b"))
    grasp_z = centre_z + max(0.0, TABLE_Z + 0.004 - tip)
    grasp_q = reach(grasp_z)
    sim.tick(FPS // 3)
    sim.gripper("right", 0.0)
    sim.tick(FPS // 2)
    lift_q = tool_down_ik(sim.m, "right", (x, y, grasp_z + 0.2), TCP_OFFSET[kind])
    for k in range(1, FPS + 1):  # raise the TCP 0.2 m in 1 s, smoothly
        s = 0.5 - 0.5 * math.cos(math.pi * k / FPS)
        sim.d.ctrl[sim.act[6:]] = grasp_q + s * (lift_q - grasp_q)
        sim.tick()
    sim.tick(FPS // 2)
    def offset() -> np.ndarray:
        return sim.d.site(f"{fruit}/grasp").xpos - sim.d.site("right_tcp").xpos

    assert sim.d.site(f"{fruit}/grasp").xpos[2] > centre_z + 0.18  # lifted with the hand, not left behind
    lifted = offset()
    assert np.linalg.norm(lifted) < 0.03
    sim.tick(2 * FPS)  # 2 s more: with pyramidal cones fruit creeps out of the G jaws at ~6 cm/s
    assert np.linalg.norm(offset() - lifted) < 0.005


# ---------------------------------------------------------------- rendering


def _green(image: np.ndarray) -> np.ndarray:
    rgb = image.astype(np.int32)
    return (rgb[..., 1] > rgb[..., 0] + 30) & (rgb[..., 1] > rgb[..., 2] + 30)


def test_cameras_render_the_green_booth() -> None:
    sim = Sim(world("g", ("microwave", "apple")))
    try:
        renderer = mujoco.Renderer(sim.m, 96, 128)
    except Exception as err:  # no OpenGL on this machine: nothing to check here
        pytest.skip(f"no rendering context ({err})")
    images = {}
    with renderer:
        for cam in ("head", "left_wrist", "front"):
            renderer.update_scene(sim.d, cam)
            images[cam] = renderer.render().copy()
    for cam, image in images.items():
        assert image.shape == (96, 128, 3)
        assert image.std() > 10, cam  # something is in view
    for cam in ("head", "front"):
        top = images[cam][:12]  # the top of the frame looks at the far wall
        assert _green(top).mean() > 0.5, cam
        assert not _green(images[cam][40:]).all()  # but the table and objects are in view too
