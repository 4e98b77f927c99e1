"""`MujocoBackend` on the compiled specs: seeded resets, exact state save/restore and replay, the action
contract (home hold, gripper mapping, wrong lengths), observations, free-fall physics, the predicates'
`WorldView`, rendering and camera geometry, the artixon-h robot and the `eval_fruit` variant."""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")  # headless CPU rendering; must precede the mujoco import

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from x2.base.errors import X2Error  # noqa: E402
from x2.envspec import load_env  # noqa: E402
from x2.sim.mujoco.backend import MujocoBackend  # noqa: E402
from x2.tasks.predicates import holds  # noqa: E402

FRUITS = ("apple", "orange", "lemon", "banana")
G = 9.81


@pytest.fixture(scope="module")
def env():
    return load_env("fruit_in_microwave")


@pytest.fixture(scope="module")
def backend(env) -> MujocoBackend:
    b = MujocoBackend(env)
    yield b
    b.close()


@pytest.fixture(scope="module")
def fruit_seeds(backend: MujocoBackend) -> dict[str, int]:
    """The first seed that draws each fruit."""
    out: dict[str, int] = {}
    for seed in range(100):
        out.setdefault(backend.reset(seed).assets["fruit"], seed)
        if len(out) == len(FRUITS):
            return out
    raise AssertionError(f"100 seeds drew only {sorted(out)}")


def _arm_slots(backend: MujocoBackend) -> tuple[np.ndarray, np.ndarray]:
    """Indices of arm joints and of finger joints in `robot_state().qpos`."""
    names = backend.robot_joint_names
    fingers = np.array([i for i, n in enumerate(names) if "finger" in n])
    arms = np.array([i for i, n in enumerate(names) if "finger" not in n])
    return arms, fingers


def _home_qpos(backend: MujocoBackend) -> np.ndarray:
    return np.concatenate([a.home for a in backend.env.robot.arms])


def _yaw_quat(yaw: float) -> np.ndarray:
    return np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])


# ----------------------------------------------------------------------------- reset and seeding


def test_same_seed_same_state_and_reset_info(env, backend: MujocoBackend) -> None:
    info = backend.reset(11)
    state = backend.get_state().tobytes()
    for _ in range(5):  # history must not leak into the next reset
        backend.step(backend.home_action())
    backend.reset(12)
    again = backend.reset(11)
    assert backend.get_state().tobytes() == state
    assert again == info
    fresh = MujocoBackend(env)  # a fresh process-like backend gives the same bytes
    assert fresh.reset(11) == info
    assert fresh.get_state().tobytes() == state
    assert backend.time == 0.0 and info.seed == 11 and info.variant == "default"
    assert info.instruction == env.task.instruction.format(**info.assets)


def test_seeds_vary_assets_and_layout_and_the_world_follows(backend: MujocoBackend) -> None:
    infos = [backend.reset(seed) for seed in range(12)]
    fruits = {i.assets["fruit"] for i in infos}
    assert fruits <= set(FRUITS) and len(fruits) >= 3
    assert {i.assets["microwave"] for i in infos} == {"microwave"}
    assert len({(round(i.layout["fruit"].x, 9), round(i.layout["fruit"].y, 9)) for i in infos}) == 12
    assert len({round(i.layout["microwave"].yaw, 9) for i in infos}) == 12
    for seed in (0, 5, 9):
        info = backend.reset(seed)
        assert info.instruction.count(info.assets["fruit"]) == 1
        poses = backend.object_poses()
        for k, name in enumerate(backend.object_names):  # objects stand where the layout put them
            p = info.layout[name]
            np.testing.assert_allclose(poses[k, :3], [p.x, p.y, p.z], atol=1e-9)  # placements survive the XML
            # the XML keeps 6 digits of the yaw's quaternion, and the compiled model is the truth
            np.testing.assert_allclose(poses[k, 3:], _yaw_quat(p.yaw), atol=1e-6)
        assert backend.layout == info.layout


# ----------------------------------------------------------------------------- state and replay


def _busy_action(backend: MujocoBackend, k: int) -> np.ndarray:
    """A moving arm and a closing/opening gripper, so the replay covers actuators and contacts."""
    a = backend.home_action()
    a[1] += 0.3 * np.sin(0.2 * k)
    a[8] -= 0.3 * np.sin(0.15 * k)
    a[6] = 0.5 + 0.5 * np.cos(0.3 * k)
    return a


def test_state_round_trip_and_exact_replay(backend: MujocoBackend) -> None:
    info = backend.reset(4)
    p = info.layout["fruit"]
    backend.set_object_pose("fruit", np.array([p.x, p.y, p.z + 0.1]))  # it lands on the table during replay
    for k in range(5):
        backend.step(_busy_action(backend, k))
    saved = backend.get_state().copy()
    assert saved.shape == (backend.state_size,)
    robot, objects, t = backend.robot_state(), backend.object_poses(), backend.time

    first = []
    for k in range(5, 25):
        backend.step(_busy_action(backend, k))
        first.append(backend.get_state().tobytes())
    assert len(set(first)) == 20  # the world really moved every tick
    backend.set_joint_values({"microwave/door_hinge": 1.0})  # disturb further
    backend.step(backend.home_action())

    backend.set_state(saved)
    assert backend.get_state().tobytes() == saved.tobytes()
    assert backend.time == t
    assert np.array_equal(backend.robot_state().qpos, robot.qpos)
    assert np.array_equal(backend.robot_state().qvel, robot.qvel)
    assert np.array_equal(backend.robot_state().ee_pose, robot.ee_pose)  # derived quantities refreshed too
    assert np.array_equal(backend.object_poses(), objects)
    second = []
    for k in range(5, 25):
        backend.step(_busy_action(backend, k))
        second.append(backend.get_state().tobytes())
    assert second == first  # bit for bit


# ----------------------------------------------------------------------------- actions


def test_home_action_holds_the_arms_at_home(backend: MujocoBackend) -> None:
    backend.reset(2)
    arms, fingers = _arm_slots(backend)
    home = _home_qpos(backend)
    open_ctrl = backend.env.robot.gripper.open_ctrl
    worst = 0.0
    for _ in range(60):
        backend.step(backend.home_action())
        q = backend.robot_state().qpos
        worst = max(worst, float(np.max(np.abs(q[arms] - home))))
        np.testing.assert_allclose(q[fingers], open_ctrl, atol=1e-3)
    assert worst < 1e-3
    assert max(backend.arm_joint_error(a.name) for a in backend.env.robot.arms) < 1e-3
    assert backend.time == pytest.approx(60 / backend.env.fps)


@pytest.mark.parametrize("length", [0, 13, 15, 16])
def test_wrong_action_length_names_the_actions(backend: MujocoBackend, length: int) -> None:
    backend.reset(0)
    before = backend.get_state().tobytes()
    names = backend.env.robot.action_names
    assert len(names) == 14
    with pytest.raises(X2Error, match=f"action has {length} values") as info:
        backend.step(np.zeros(length))
    assert all(n in str(info.value) for n in names)
    assert "takes 14" in str(info.value)
    assert backend.get_state().tobytes() == before  # nothing was stepped


def test_non_finite_action_is_rejected(backend: MujocoBackend, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # MuJoCo appends its warning to ./MUJOCO_LOG.TXT
    backend.reset(0)
    action = backend.home_action()
    action[0] = np.nan  # a teacher bug in one joint of one arm
    with pytest.raises(X2Error):
        for _ in range(10):
            backend.step(action)


def test_gripper_zero_closes_one_opens_linearly_per_arm(backend: MujocoBackend) -> None:
    backend.reset(0)
    g = backend.env.robot.gripper
    assert (g.closed_ctrl, g.open_ctrl) == (0.0, 0.04)
    names = backend.robot_joint_names
    left = [names.index("left_finger_a"), names.index("left_finger_b")]
    right = [names.index("right_finger_a"), names.index("right_finger_b")]

    def hold(left_g: float, right_g: float) -> np.ndarray:
        a = backend.home_action()
        a[6], a[13] = left_g, right_g
        for _ in range(30):
            backend.step(a)
        return backend.robot_state().qpos

    q = backend.robot_state().qpos
    np.testing.assert_allclose(q[left + right], g.open_ctrl, atol=1e-9)  # reset opens the grippers
    q = hold(0.0, 1.0)
    np.testing.assert_allclose(q[left], g.closed_ctrl, atol=1e-3)
    np.testing.assert_allclose(q[right], g.open_ctrl, atol=1e-3)
    q = hold(1.0, 0.0)
    np.testing.assert_allclose(q[left], g.open_ctrl, atol=1e-3)
    np.testing.assert_allclose(q[right], g.closed_ctrl, atol=1e-3)
    q = hold(0.5, 0.25)  # linear: ctrl = closed + g * (open - closed)
    np.testing.assert_allclose(q[left], 0.02, atol=1e-3)
    np.testing.assert_allclose(q[right], 0.01, atol=1e-3)
    q = hold(-3.0, 7.0)  # out-of-range commands are clipped to [0, 1]
    np.testing.assert_allclose(q[left], g.closed_ctrl, atol=1e-3)
    np.testing.assert_allclose(q[right], g.open_ctrl, atol=1e-3)


# ----------------------------------------------------------------------------- observations


def test_robot_state_and_object_poses(backend: MujocoBackend) -> None:
    backend.reset(0)
    rs = backend.robot_state()
    assert len(backend.robot_joint_names) == 16
    assert rs.qpos.shape == (16,) and rs.qvel.shape == (16,) and rs.ee_pose.shape == (2, 7)
    np.testing.assert_allclose(np.linalg.norm(rs.ee_pose[:, 3:], axis=1), 1.0, atol=1e-9)
    # home puts the tool centre points in front of the shoulders, above the table, mirrored in y
    np.testing.assert_allclose(rs.ee_pose[:, :3], [[0.38, 0.25, 1.12], [0.38, -0.25, 1.12]], atol=0.01)
    np.testing.assert_allclose(rs.qvel, 0.0)
    rs.qpos[:] = 99.0  # observations are copies
    assert backend.robot_state().qpos[0] != 99.0
    poses = backend.object_poses()
    assert backend.object_names == ("microwave", "fruit")
    assert poses.shape == (2, 7)
    np.testing.assert_allclose(np.linalg.norm(poses[:, 3:], axis=1), 1.0, atol=1e-9)
    for _ in range(10):
        backend.step(backend.home_action())
    poses = backend.object_poses()
    np.testing.assert_allclose(np.linalg.norm(poses[:, 3:], axis=1), 1.0, atol=1e-9)


@pytest.mark.parametrize("fruit", FRUITS)
def test_dropped_fruit_falls_and_rests_on_the_table(backend: MujocoBackend, fruit_seeds, fruit: str) -> None:
    info = backend.reset(fruit_seeds[fruit])
    assert info.assets["fruit"] == fruit
    table, rest = backend.table_height, backend.object_rest_height("fruit")
    p = info.layout["fruit"]
    start = np.array([p.x, p.y, table + rest + 0.15])  # below the home-pose grippers
    backend.set_object_pose("fruit", start)
    for _ in range(5):  # let it pick up speed, then put it back: set_object_pose must also stop it
        backend.step(backend.home_action())
    backend.set_object_pose("fruit", start)
    np.testing.assert_allclose(backend.object_pos("fruit"), start, atol=1e-12)
    zs = []
    for _ in range(round(1.5 * backend.env.fps)):
        backend.step(backend.home_action())
        zs.append(float(backend.object_pos("fruit")[2]))
    # free fall before touching down: after 5 ticks it dropped g t^2 / 2 (within the integrator's error)
    t = 5 / backend.env.fps
    assert start[2] - zs[4] == pytest.approx(0.5 * G * t * t, abs=0.005)
    assert np.all(np.diff(zs[:5]) < 0)
    # at rest on the table 1.5 s later, near where it was dropped
    pos = backend.object_pos("fruit")
    assert abs(pos[2] - (table + rest)) < 0.01
    assert np.hypot(pos[0] - p.x, pos[1] - p.y) < 0.05
    dof = backend.model.jnt_dofadr[backend.model.joint("fruit/free").id]
    assert np.linalg.norm(backend.data.qvel[dof:dof + 3]) < 0.01
    assert not holds(backend, "object_fallen", {"obj": "fruit"})


# ----------------------------------------------------------------------------- predicates (WorldView)


@pytest.mark.parametrize("fruit", FRUITS)  # each fruit is its own compiled world with its own ids
def test_predicates_on_the_world(backend: MujocoBackend, fruit_seeds, fruit: str) -> None:
    backend.reset(fruit_seeds["orange" if fruit == "apple" else "apple"])  # name lookups must not leak across
    backend.reset(fruit_seeds[fruit])
    door = {"joint": "microwave/door_hinge", "value": 1.2}
    assert backend.joint_value("microwave/door_hinge") == 0.0
    assert not holds(backend, "joint_above", door)
    backend.set_joint_values({"microwave/door_hinge": 1.5})
    assert backend.joint_value("microwave/door_hinge") == 1.5
    assert holds(backend, "joint_above", door)
    assert not holds(backend, "joint_below", {"joint": "microwave/door_hinge", "value": 0.1})
    backend.set_joint_values({"microwave/door_hinge": 0.0})
    assert not holds(backend, "joint_above", door)

    inside = {"obj": "fruit", "container": "microwave/cavity"}
    assert not holds(backend, "object_inside", inside)  # on the table at reset
    centre, rot, half = backend.site_box("microwave/cavity")
    assert np.all(half > 0) and np.allclose(rot @ rot.T, np.eye(3))
    backend.set_object_pose("fruit", np.array(centre, copy=True))
    assert holds(backend, "object_inside", inside)
    backend.set_object_pose("fruit", np.array(centre, copy=True) + np.array([0.0, 0.0, 2 * half[2]]))
    assert not holds(backend, "object_inside", inside)  # above the oven


def test_arm_and_gripper_predicates(backend: MujocoBackend, fruit_seeds) -> None:
    backend.reset(fruit_seeds["apple"])
    assert holds(backend, "arm_at_home", {"arm": "both"})
    assert not holds(backend, "gripper_holding", {"arm": "right", "obj": "fruit"})
    assert holds(backend, "gripper_released", {"arm": "right", "obj": "fruit"})
    assert not holds(backend, "object_lifted", {"obj": "fruit"})

    # hand the apple to the open right gripper (origin is its bottom, 34 mm below its centre) and close it
    tcp = backend.robot_state().ee_pose[1, :3]
    backend.set_object_pose("fruit", tcp - np.array([0.0, 0.0, 0.034]))
    action = backend.home_action()
    action[13] = 0.0
    for _ in range(30):
        backend.step(action)
    assert holds(backend, "gripper_holding", {"arm": "right", "obj": "fruit"})
    assert not holds(backend, "gripper_released", {"arm": "right", "obj": "fruit"})
    assert not holds(backend, "gripper_holding", {"arm": "left", "obj": "fruit"})
    assert holds(backend, "object_lifted", {"obj": "fruit", "height": 0.3})  # held, not dropped
    assert holds(backend, "arm_at_home", {"arm": "both"})

    backend.set_joint_values({"right_j1": _home_qpos(backend)[6] + 0.5})
    assert not holds(backend, "arm_at_home", {"arm": "right"})
    assert not holds(backend, "arm_at_home", {"arm": "both"})
    assert holds(backend, "arm_at_home", {"arm": "left"})
    assert backend.arm_joint_error("right") == pytest.approx(0.5)


# ----------------------------------------------------------------------------- rendering


def _project(info, point: np.ndarray) -> tuple[float, float]:
    """Pixel (u, v) of a world point through `CameraInfo` (OpenGL camera axes: -z forward, +y up)."""
    rot, pos = info.extrinsics[:3, :3], info.extrinsics[:3, 3]
    cam = rot.T @ (point - pos)
    assert cam[2] < 0, "point behind the camera"
    k = info.intrinsics
    u, v = k[0, 2] + k[0, 0] * cam[0] / -cam[2], k[1, 2] - k[1, 1] * cam[1] / -cam[2]
    assert 0 <= u < info.width and 0 <= v < info.height, (u, v)
    return u, v


def _chroma_green(img: np.ndarray) -> np.ndarray:
    px = img.astype(int)
    return (px[..., 1] > px[..., 0] + 40) & (px[..., 1] > px[..., 2] + 40)


def test_head_camera_render_and_intrinsics(backend: MujocoBackend, fruit_seeds) -> None:
    backend.reset(fruit_seeds["orange"])
    img = backend.render("head", 128, 96)
    assert img.shape == (96, 128, 3) and img.dtype == np.uint8
    green = _chroma_green(img)
    # The back wall of the booth fills the top of the view; the table (not green) fills the bottom.
    # (The side columns are mostly table and grippers from this camera, so they are not tested for green.)
    assert green[:3].mean() > 0.8
    assert green[-20:].mean() < 0.05

    info = backend.camera_info("head", 128, 96)
    fovy = float(backend.model.cam_fovy[backend.model.camera("head").id])
    assert info.fovy_deg == fovy
    f = 48 / np.tan(np.deg2rad(fovy) / 2)
    np.testing.assert_allclose(info.intrinsics, [[f, 0, 64], [0, f, 48], [0, 0, 1]])
    rot = info.extrinsics[:3, :3]
    np.testing.assert_allclose(rot @ rot.T, np.eye(3), atol=1e-9)
    np.testing.assert_allclose(info.extrinsics[3], [0, 0, 0, 1])

    # Project the orange's centre with these intrinsics/extrinsics: the pixel there is orange.
    u, v = _project(info, backend.object_pos("fruit") + np.array([0.0, 0.0, 0.042]))
    r, g, b = (int(c) for c in img[int(v), int(u)])
    assert r > 200 and g < r - 50 and b < 80, (u, v, (r, g, b))


def test_render_follows_asset_changes(backend: MujocoBackend, fruit_seeds) -> None:
    backend.reset(fruit_seeds["orange"])
    orange = backend.render("head", 128, 96).copy()
    backend.reset(fruit_seeds["lemon"])  # another compiled world: renderers must follow it
    lemon = backend.render("head", 128, 96)
    assert lemon.shape == orange.shape and not np.array_equal(lemon, orange)
    u, v = _project(backend.camera_info("head", 128, 96), backend.object_pos("fruit") + np.array([0, 0, 0.027]))
    r, g, b = (int(c) for c in lemon[int(v), int(u)])
    assert r > 200 and g > 0.8 * r and b < 100, (u, v, (r, g, b))  # yellow, not the previous world's orange
    backend.reset(fruit_seeds["orange"])
    assert np.array_equal(backend.render("head", 128, 96), orange)  # rendering is deterministic
    assert set(backend.env.robot.cameras) == {"head", "left_wrist", "right_wrist"}
    for cam in backend.env.robot.cameras:
        assert backend.render(cam, 64, 48).shape == (48, 64, 3)


# ----------------------------------------------------------------------------- other robot, variant


def test_artixon_h_pick_place_compiles_resets_and_steps() -> None:
    env = load_env("pick_place", robot="artixon-h")
    assert env.robot.name == "artixon-h" and env.robot.gripper.kind == "H"
    b = MujocoBackend(env)
    info = b.reset(1)
    assert info.assets == {"block": "block", "plate": "plate"}
    assert info.instruction == "Put the block on the plate."
    assert "<mujoco" in b.model_xml()
    arms, fingers = _arm_slots(b)
    np.testing.assert_allclose(b.robot_state().qpos[fingers], 0.06)  # the H stroke
    action = b.home_action()
    action[13] = 0.0
    for _ in range(30):
        b.step(action)
    q = b.robot_state().qpos
    assert np.max(np.abs(q[arms] - _home_qpos(b))) < 1e-3
    np.testing.assert_allclose(q[fingers], [0.06, 0.06, 0.0, 0.0], atol=1e-3)
    poses = b.object_poses()
    assert poses.shape == (2, 7)
    np.testing.assert_allclose(poses[:, 2], env.booth.table_height, atol=0.002)  # resting on the table
    b.close()


def test_eval_fruit_variant_draws_only_held_out_fruit(env, backend: MujocoBackend) -> None:
    ev = load_env("fruit_in_microwave", variant="eval_fruit")
    assert ev.split == "eval" and ev.variant == "eval_fruit" and env.split == "train"
    b = MujocoBackend(ev)
    drawn = set()
    for seed in range(30):
        info = b.reset(seed)
        assert info.variant == "eval_fruit"
        drawn.add(info.assets["fruit"])
    assert drawn == {"peach", "plum"}
    b.close()


def test_reset_switches_variant_and_back_to_identical_worlds(env) -> None:
    b = MujocoBackend(env)
    base = b.reset(11)
    base_state, base_xml = b.get_state().tobytes(), b.model_xml()
    eval_ref = MujocoBackend(load_env("fruit_in_microwave", variant="eval_fruit"))
    for _ in range(2):  # default -> eval -> default -> eval -> default
        drawn = {b.reset(seed, variant="eval_fruit").assets["fruit"] for seed in range(12)}
        assert drawn == {"peach", "plum"} and b.env.split == "eval" and b.env.variant == "eval_fruit"
        info = b.reset(3)  # no variant given: stays on the current one
        assert info.variant == "eval_fruit" and info == eval_ref.reset(3)
        assert b.get_state().tobytes() == eval_ref.get_state().tobytes()
        assert b.render("head", 64, 48).shape == (48, 64, 3)  # renderers follow the recompiled world
        again = b.reset(11, variant="default")
        assert again == base and b.env.split == "train"
        assert b.get_state().tobytes() == base_state and b.model_xml() == base_xml
    with pytest.raises(X2Error, match="no_such_variant"):
        b.reset(0, variant="no_such_variant")
    assert b.env.variant == "default" and b.reset(11) == base  # a failed switch leaves the backend usable
    b.close()
    eval_ref.close()
