"""`x2 export zarr --point-cloud N` (x2.export.point_cloud): every exported point lies on the surface of a geom of the
thing its pixel's segmentation names (MuJoCo's own ray from the camera through the point, in the episode's model at
that frame's state, within 3 mm); zarr 2.x opens the store the way diffusion_policy's ReplayBuffer does; the same seed
gives the same bytes; a crop that leaves no points is refused in one line, exit 2, nothing written, as are a malformed
crop and a camera the robot lacks.

One 3-frame scripted episode (tests/helpers/real_dataset.py), the head and left wrist cameras drawn at 48x64.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import mujoco
import numpy as np
import pytest
import zarr
from helpers.real_dataset import record_short_dataset
from helpers.x2_cli import run_x2
from test_export_formats import zarr2_python

from x2 import format as fmt
from x2.base.errors import ExportError, X2Error
from x2.datasets import Dataset, Episode
from x2.export.point_cloud import Crop, PointCloudOptions, base_origin, farthest_points, frame_points
from x2.export.request import ExportRequest
from x2.export.zarr import ZarrOptions, export_zarr
from x2.recorded.shots import drawn_shots
from x2.recorded.world import open_world, recorded_env
from x2.sim.camera import ImageSize
from x2.sim.mujoco.segments import WorldSegments
from x2.sim.mujoco.state import STATE_SPEC

SIZE = ImageSize(48, 64)
N = 256
CAMERAS = ("head", "left_wrist")  # fused: the booth-fixed view and one that moves with the arm
SURFACE_TOL = 3e-3  # m


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("point-cloud") / "short"
    record_short_dataset(root, episodes=1, ticks=3)
    return Dataset.open(root)


def _export(ds: Dataset, target: Path, seed: int = 0, crop: Crop | None = None) -> None:
    request = ExportRequest(ds, tuple(ds.episodes()), target, state_only=True)
    export_zarr(request, ZarrOptions(point_cloud=PointCloudOptions(N, CAMERAS, crop, SIZE, seed)))


@pytest.fixture(scope="module")
def exported(dataset: Dataset, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("pc-out") / "pc.zarr"
    _export(dataset, target)
    return target


def test_every_point_lies_on_a_geom_of_the_thing_its_pixel_names(dataset: Dataset, exported: Path) -> None:
    clouds = np.asarray(zarr.open_group(str(exported), mode="r")["data/point_cloud"][:])
    assert clouds.shape == (3, N, 6) and clouds.dtype == np.float32
    with Episode(dataset.episode_path(0)) as ep, open_world(ep) as world:
        model = world.backend.model  # the episode's world, compiled from its file
        data = mujoco.MjData(model)
        of_body = WorldSegments(model).of_body
        states = ep.dataset(fmt.STATES)[:]
        shots = list(drawn_shots(ep, CAMERAS, SIZE))
    group = np.array([1, 1, 1, 0, 0, 0], np.uint8)  # the groups the renderer draws
    kinds: set[str] = set()
    used: set[str] = set()
    for t, (frame, table) in enumerate(shots):
        lifted = {}
        for cam in CAMERAS:
            xyz, _ = frame_points([frame[cam]])
            seg = frame[cam].shot.segmentation
            assert seg is not None
            lifted[cam] = (xyz, seg.ravel()[seg.ravel() != 0])
        mujoco.mj_setState(model, data, np.asarray(states[t], np.float64), STATE_SPEC)
        mujoco.mj_kinematics(model, data)
        for point in np.unique(clouds[t, :, :3], axis=0):
            # the camera and pixel the point was lifted from: exported points are lifted pixels, unmoved
            gaps = {cam: np.abs(xyz - point).sum(axis=1) for cam, (xyz, _) in lifted.items()}
            cam = min(CAMERAS, key=lambda c: float(gaps[c].min()))
            xyz, ids = lifted[cam]
            which = int(np.argmin(gaps[cam]))
            assert np.abs(xyz[which] - point).max() < 1e-5
            eye = frame[cam].extrinsics[:3, 3]
            span = float(np.linalg.norm(point - eye))
            geom = np.array([-1], np.int32)
            hit = mujoco.mj_ray(model, data, eye, (point - eye) / span, group, 1, -1, geom)
            assert geom[0] >= 0 and abs(hit - span) <= SURFACE_TOL, (t, cam, point, hit, span)
            assert of_body[model.geom_bodyid[geom[0]]] == ids[which], (t, cam, point, table.names[ids[which]])
            kinds.add(table.kinds[ids[which]])
            used.add(cam)
    assert used == set(CAMERAS)  # both cameras' points survive the crop and the sampling
    assert {"robot", "scenery"} <= kinds  # the clouds hold the robot and the table, not one surface


def test_diffusion_policys_replay_buffer_opens_it_with_zarr_2(exported: Path, tmp_path: Path) -> None:
    # diffusion_policy's ReplayBuffer.copy_from_path (its common/replay_buffer module; DP3 carries the same):
    # zarr.open(path, 'r'), zarr.group(store), meta and data read to numpy, and its constructor's asserts
    script = tmp_path / "read.py"
    script.write_text(r"""
import json, sys, numpy as np, zarr
group = zarr.open(sys.argv[1], 'r')
src_root = zarr.group(group.store)
meta = {k: (np.array(v) if len(v.shape) == 0 else v[:]) for k, v in src_root['meta'].items()}
data = {k: src_root['data'][k][:] for k in ['point_cloud', 'action', 'state']}
root = {'meta': meta, 'data': data}
assert 'data' in root and 'meta' in root and 'episode_ends' in root['meta']
for key, value in root['data'].items():
    assert value.shape[0] == root['meta']['episode_ends'][-1]
np.save(sys.argv[2], data['point_cloud'])
print(json.dumps({"zarr": zarr.__version__, "ends": meta['episode_ends'].tolist(),
                  "shape": list(data['point_cloud'].shape)}))
""")
    done = subprocess.run([zarr2_python(), str(script), str(exported), str(tmp_path / "pc.npy")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    assert said["zarr"].startswith("2.") and said["ends"] == [3] and said["shape"] == [3, N, 6]
    ours = np.asarray(zarr.open_group(str(exported), mode="r")["data/point_cloud"][:])
    assert np.load(tmp_path / "pc.npy").tobytes() == ours.tobytes()


def test_the_same_seed_gives_the_same_bytes(dataset: Dataset, exported: Path, tmp_path: Path) -> None:
    _export(dataset, tmp_path / "again.zarr")
    _export(dataset, tmp_path / "other.zarr", seed=1)
    read = {name: np.asarray(zarr.open_group(str(tmp_path / name if name != "first" else exported),
                                             mode="r")["data/point_cloud"][:]) for name in ("first", "again.zarr",
                                                                                            "other.zarr")}
    assert read["first"].tobytes() == read["again.zarr"].tobytes()
    assert read["first"].tobytes() != read["other.zarr"].tobytes()  # the seed draws the first point


def test_farthest_points_spreads_and_pads_with_repeats() -> None:
    line = np.array([[0.0, 0, 0], [0.1, 0, 0], [0.5, 0, 0], [1.0, 0, 0]])
    assert farthest_points(line, 3, 0).tolist() == [0, 3, 2]
    assert farthest_points(line[:2], 5, 1).tolist() == [1, 0, 1, 0, 1]


def test_a_crop_that_leaves_no_points_is_refused(dataset: Dataset, tmp_path: Path) -> None:
    far = Crop((10.0, 10.0, 10.0), (11.0, 11.0, 11.0))
    with pytest.raises(ExportError, match=r"episode_000000\.h5: frame 0: --point-cloud-crop: found no points inside "
                                          r"10,10,10,11,11,11"):
        _export(dataset, tmp_path / "none.zarr", crop=far)
    assert not (tmp_path / "none.zarr").exists()
    done = run_x2(["export", "zarr", str(dataset.root), "--state-only", "--point-cloud", "8", "--point-cloud-size",
                   "48x64", "--point-cloud-crop", "10,10,10,11,11,11", "--out", str(tmp_path / "cli.zarr")], tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "frame 0: --point-cloud-crop: found no points" in lines[0], done.stderr
    assert not (tmp_path / "cli.zarr").exists()
    for text in ("1,2,3", "0,0,0,1,1,x", "1,0,0,0,1,1"):
        with pytest.raises(ExportError, match=rf"--point-cloud-crop: found '{text}'; allowed: six numbers"):
            Crop.parse(text)


def test_a_camera_the_robot_lacks_is_refused(dataset: Dataset, tmp_path: Path) -> None:
    request = ExportRequest(dataset, tuple(dataset.episodes()), tmp_path / "cam.zarr", state_only=True)
    with pytest.raises(X2Error, match=r"episode_000000\.h5: --point-cloud-cameras: found \['nope'\]; allowed: the "
                                      r"world's cameras \['front', 'head'"):
        export_zarr(request, ZarrOptions(point_cloud=PointCloudOptions(8, ("nope",), None, SIZE)))
    assert not (tmp_path / "cam.zarr").exists()


def test_the_base_frame_is_the_world_frame_moved_to_the_robots_mount(tmp_path: Path) -> None:
    # ALOHA is mounted at base_pos (0.14, 0, 0) (x2/robots/aloha.yaml) and its reset draws no table height here
    root = tmp_path / "aloha"
    record_short_dataset(root, episodes=1, ticks=2, task="pick_place", robot="aloha")
    ds = Dataset.open(root)
    clouds = {}
    for frame in ("world", "base"):
        request = ExportRequest(ds, tuple(ds.episodes()), tmp_path / f"{frame}.zarr", state_only=True)
        export_zarr(request, ZarrOptions(point_cloud=PointCloudOptions(32, ("head",), None, SIZE, 0, frame)))
        clouds[frame] = np.asarray(zarr.open_group(str(tmp_path / f"{frame}.zarr"), mode="r")["data/point_cloud"][:])
    with Episode(ds.episode_path(0)) as ep:
        origin = base_origin(ep, recorded_env(ep))
    assert origin.tolist() == [0.14, 0.0, 0.0]
    world, base = clouds["world"], clouds["base"]
    assert np.allclose(base[..., :3] + origin, world[..., :3], atol=1e-6)  # the same points (same seed), moved
    assert np.array_equal(base[..., 3:], world[..., 3:])
    with pytest.raises(ExportError, match=r"--point-cloud-frame: found 'robot'; allowed: world, base"):
        PointCloudOptions(32, frame="robot")


def test_a_mobile_robots_base_frame_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "mobile"
    record_short_dataset(root, episodes=1, ticks=2, task="pick_place", robot="mobile-aloha")
    ds = Dataset.open(root)
    request = ExportRequest(ds, tuple(ds.episodes()), tmp_path / "m.zarr", state_only=True)
    with pytest.raises(ExportError, match=r"--point-cloud-frame: found base for robot 'mobile-aloha', which drives a "
                                          r"mobile base; allowed: world"):
        export_zarr(request, ZarrOptions(point_cloud=PointCloudOptions(32, ("head",), None, SIZE, 0, "base")))
    assert not (tmp_path / "m.zarr").exists()
