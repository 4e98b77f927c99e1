"""What `x2 eval` sends a policy that reads depth (x2/eval/observe.py): a camera's live depth map is MuJoCo's own depth
render of the state within 1 mm, drawn in the same pass as its picture (which stays `render`'s, bit for bit); a
camera's pose is the 4x4 OpenCV-axes camera-to-world x2's LeRobot export stores, so a pixel's depth back-projected
through it lands where MuJoCo's own ray from the camera meets the world. A service's depth and pose wishes travel in
its metadata; a camera the world lacks is refused before the first episode.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import pytest
from helpers.policy_serving import serving
from helpers.x2_cli import run_x2

from x2 import format as fmt
from x2.base.errors import X2Error
from x2.datasets import Dataset
from x2.envspec import load_env
from x2.eval.observe import ObservationPlan
from x2.eval.runner import EvalRun
from x2.eval.seeds import plan_split
from x2.eval.session import EvalSetup
from x2.policy.protocol import ACTIONS, OBS_EXTRINSICS_PREFIX, OBS_IMAGE_PREFIX, ServiceInfo
from x2.rollout.teacher import Observation
from x2.sim import make_backend
from x2.sim.camera import ImageSize, opencv_matrix
from x2.sim.mujoco.backend import MujocoBackend

HEAD, WRIST = "head", "right_wrist"


@pytest.fixture(scope="module")
def backend() -> MujocoBackend:
    b = make_backend(load_env("pick_place"))
    assert isinstance(b, MujocoBackend)
    b.reset(3)
    for _ in range(5):
        b.step(b.home_action())
    return b


def _observation(b: MujocoBackend) -> Observation:
    return Observation(tick=5, time=b.time, robot=b.robot_state(), object_poses=b.object_poses(), instruction="go")


def _mujoco_depth(b: MujocoBackend, camera: str, height: int, width: int) -> np.ndarray:
    with mujoco.Renderer(b.model, height, width) as r:
        r.enable_depth_rendering()
        r.update_scene(b.data, camera=camera)
        return np.asarray(r.render(), np.float64)


def test_depth_is_mujocos_depth_render_and_the_picture_is_renders(backend: MujocoBackend) -> None:
    plan = ObservationPlan(cameras={HEAD: (48, 64)}, depth={HEAD: (48, 64), WRIST: (36, 40)})
    plan.check(backend)
    message, _ = plan.observe(backend, _observation(backend))
    np.testing.assert_array_equal(message[OBS_IMAGE_PREFIX + HEAD], backend.render(HEAD, 64, 48))
    for camera, (h, w) in plan.depth.items():
        depth = message[f"{OBS_IMAGE_PREFIX}{camera}_depth"]
        assert isinstance(depth, np.ndarray) and depth.shape == (h, w, 1) and depth.dtype == np.float32
        assert np.abs(depth[..., 0] - _mujoco_depth(backend, camera, h, w)).max() <= 1e-3
        assert 0.05 < float(np.median(depth)) < 3  # it sees the booth
    assert set(message) >= {OBS_IMAGE_PREFIX + WRIST + "_depth"} and OBS_IMAGE_PREFIX + WRIST not in message


def test_a_pixels_depth_through_the_sent_pose_lands_where_mujocos_ray_does(backend: MujocoBackend) -> None:
    h, w = 48, 64
    plan = ObservationPlan(cameras={}, depth={WRIST: (h, w)}, extrinsics=(WRIST,), state=False)
    message, _ = plan.observe(backend, _observation(backend))
    pose = np.asarray(message[OBS_EXTRINSICS_PREFIX + WRIST], np.float64)
    assert pose.shape == (16,) and message[OBS_EXTRINSICS_PREFIX + WRIST].dtype == np.float32
    camera_to_world = pose.reshape(4, 4)
    with backend.renderer([WRIST], ImageSize(h, w)) as renderer:
        k = opencv_matrix(renderer.intrinsics(WRIST))
    depth = np.asarray(message[f"{OBS_IMAGE_PREFIX}{WRIST}_depth"])[..., 0]
    cid = backend.model.camera(WRIST).id
    origin = backend.data.cam_xpos[cid].copy()
    for v, u in ((h // 2, w // 2), (h // 4, w // 4), (3 * h // 4, 2 * w // 3)):
        point_cam = depth[v, u] * np.linalg.solve(k, [u, v, 1.0])  # (OpenCV's K: pixel centres at whole numbers)
        point = camera_to_world[:3, :3] @ point_cam + camera_to_world[:3, 3]
        direction = (point - origin) / np.linalg.norm(point - origin)
        geom = np.zeros(1, np.int32)
        hit = mujoco.mj_ray(backend.model, backend.data, origin, direction, None, 1, -1, geom)
        assert hit > 0 and np.linalg.norm(origin + hit * direction - point) <= 3e-3


def test_a_services_depth_and_pose_wishes_travel_in_its_metadata() -> None:
    info = ServiceInfo(kind="lerobot", cameras={HEAD: (48, 64)}, depth={HEAD: (48, 64)}, extrinsics=(HEAD,))
    assert ServiceInfo.from_metadata(info.to_metadata()) == info
    plan = ObservationPlan.for_service(info)
    assert (dict(plan.depth), plan.extrinsics) == ({HEAD: (48, 64)}, (HEAD,))
    plain = ServiceInfo(kind="lerobot", cameras={HEAD: (48, 64)})
    assert set(plain.to_metadata()["x2"]) == {"kind", "identity", "digest", "lifecycle", "cameras", "state",
                                              "environment_state", "sim_state", "action_names", "chunk"}


def test_a_depth_camera_the_world_lacks_is_refused(backend: MujocoBackend) -> None:
    with pytest.raises(X2Error, match="left_eye"):
        ObservationPlan(depth={"left_eye": (48, 64)}).check(backend)
    with pytest.raises(X2Error, match="left_eye"):
        ObservationPlan(extrinsics=("left_eye",)).check(backend)


class SeesDepth:
    """Asks for the head camera's depth and pose, no picture; holds the home pose; keeps what each tick brought."""

    def __init__(self) -> None:
        self.home, self.seen = np.zeros(0), []  # type: ignore[var-annotated]

    def metadata(self) -> dict[str, Any]:
        return ServiceInfo(kind="test", identity="depth", lifecycle=True, depth={HEAD: (24, 32)},
                           extrinsics=(HEAD,)).to_metadata()

    def initialize_episode(self, episode: dict[str, Any]) -> None:
        self.home = np.asarray(episode["home_action"], np.float32)

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        self.seen.append({k: (v.dtype.name, v.shape) for k, v in obs.items() if isinstance(v, np.ndarray)})
        return {ACTIONS: self.home[None]}

    def finalize_episode(self, result: dict[str, Any]) -> None:
        pass


def test_x2_eval_sends_a_service_the_depth_and_pose_it_asked_for(tmp_path: Path) -> None:
    service = SeesDepth()
    plan = plan_split("pick_place", None, "train", None, 1, 1)
    with serving(service) as url:
        EvalRun(EvalSetup("pick_place", None, plan.variant, plan.master_seed, url, 30.0, max_ticks=4), plan,
                tmp_path / "train", None).run()
    ds = Dataset.open(tmp_path / "train")
    with ds.load(0) as ep:
        said = ep.json_attr(fmt.POLICY_ATTR)
    assert said["observes"] == "depth" and said["privileged"] is False
    assert (said["inputs"]["depth"], said["inputs"]["extrinsics"], said["inputs"]["cameras"]) == (
        {HEAD: [24, 32]}, [HEAD], {})
    assert service.seen and all(seen == {"observation.state": ("float32", (16,)),
                                         f"{OBS_IMAGE_PREFIX}{HEAD}_depth": ("float32", (24, 32, 1)),
                                         f"{OBS_EXTRINSICS_PREFIX}{HEAD}": ("float32", (16,))}
                                for seen in service.seen)


class NamesNoCameras(SeesDepth):
    """A service that names neither pictures nor depth maps (as a stock openpi server names nothing)."""

    def metadata(self) -> dict[str, Any]:
        return ServiceInfo(kind="test", identity="silent", lifecycle=True).to_metadata()


def test_a_service_that_names_nothing_is_sent_the_evaluators_streams(tmp_path: Path) -> None:
    service = NamesNoCameras()
    plan = plan_split("pick_place", None, "train", None, 1, 1)
    setup = EvalSetup("pick_place", None, plan.variant, plan.master_seed, "", 30.0, cameras={HEAD: (24, 32)},
                      max_ticks=3, depth={HEAD: (24, 32)})
    with serving(service) as url:
        EvalRun(dataclasses.replace(setup, url=url), plan, tmp_path / "train", None).run()
    assert service.seen[0] == {"observation.state": ("float32", (16,)),
                               f"{OBS_IMAGE_PREFIX}{HEAD}": ("uint8", (24, 32, 3)),
                               f"{OBS_IMAGE_PREFIX}{HEAD}_depth": ("float32", (24, 32, 1))}


@pytest.mark.parametrize(("args", "says"), [
    (["--cameras", "head", "--streams", "rgb,segmentation"], "--streams: found 'rgb,segmentation'; allowed: rgb, "
                                                             "depth or rgb,depth"),
    (["--streams", "depth"], "--streams: found 'depth' without --cameras; allowed: with --cameras"),
    (["--cameras", "head", "--streams", "normals"], "--streams: found 'normals'; allowed: distinct names of rgb"),
])
def test_bad_streams_for_x2_eval_are_one_line(args: list[str], says: str, tmp_path: Path) -> None:
    result = run_x2(["eval", "--task", "pick_place", "--policy", "hold", "-n", "1", *args], cwd=tmp_path)
    assert result.returncode == 2 and says in " ".join(result.stderr.split()), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "data").exists()
