"""Depth, segmentation and the cameras' extrinsics in the exports (x2.export.sensor_streams): zarr and robomimic HDF5
carry the stored arrays exactly, with K and the id table; LeRobot 0.6 gets its depth feature, and what LeRobot itself
reads back is the stored depth within its depth encoder's quantisation; an episode without the streams the first had
is refused.

Two 3-frame scripted episodes (tests/helpers/real_dataset.py); episode 0 rendered with every stream at 48x64,
episode 1 not at all.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np
import pytest
import zarr
from helpers.real_dataset import record_short_dataset

from x2 import format as fmt
from x2.base.errors import ExportError
from x2.datasets import Dataset, Episode
from x2.export.hdf5 import Hdf5Options, export_hdf5
from x2.export.lerobot import export_lerobot, read_x2_meta, reading_back
from x2.export.lerobot_check import compare
from x2.export.lerobot_plan import LeRobotOptions
from x2.export.request import ExportRequest
from x2.export.zarr import ZarrOptions, export_zarr
from x2.render import render_dataset
from x2.sim.camera import ImageSize

SIZE = ImageSize(48, 64)
CAMERAS = ("head", "left_wrist")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("sensor-exports") / "short"
    record_short_dataset(root, episodes=2, ticks=3)
    render_dataset(root, CAMERAS, SIZE, episodes=[0], streams=("rgb", "depth", "segmentation"))
    return Dataset.open(root)


@pytest.fixture(autouse=True, scope="module")
def hf_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory):
    """LeRobotDataset's loads copy tables into HF's arrow cache: keep it out of ~/.cache."""
    import datasets.config

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("hf-cache"))
        yield


def _stored(ds: Dataset, cam: str) -> dict[str, np.ndarray]:
    with Episode(ds.episode_path(0)) as ep:
        return {"depth": ep.dataset(fmt.depth_path(cam))[:], "seg": ep.dataset(fmt.segmentation_path(cam))[:],
                "extrinsics": ep.dataset(fmt.camera_extrinsics_path(cam))[:],
                "K": np.asarray(ep.dataset_attrs(fmt.depth_path(cam))["K"]),
                "names": [str(n) for n in ep.dataset_attrs(fmt.segmentation_path(cam))[fmt.NAMES_ATTR]]}


def _request(ds: Dataset, target: Path, episodes: tuple[int, ...] = (0,)) -> ExportRequest:
    records = tuple(r for r in ds.episodes() if r.index in episodes)
    return ExportRequest(ds, records, target, cameras=CAMERAS)


def test_zarr_carries_the_stored_depth_segmentation_and_extrinsics(dataset: Dataset, tmp_path: Path) -> None:
    export_zarr(_request(dataset, tmp_path / "s.zarr"), ZarrOptions())
    root = zarr.open_group(str(tmp_path / "s.zarr"), mode="r")
    for cam in CAMERAS:
        want = _stored(dataset, cam)
        depth, seg = root[f"data/{cam}_depth"], root[f"data/{cam}_segmentation"]
        assert depth.dtype == np.float32 and np.array_equal(depth[:], want["depth"])
        assert seg.dtype == np.uint16 and np.array_equal(seg[:], want["seg"])
        assert np.array_equal(root[f"data/{cam}_extrinsics"][:], want["extrinsics"])
        assert np.allclose(depth.attrs["K"], want["K"], atol=1e-12) and seg.attrs["names"] == want["names"]
        assert depth.attrs["unit"] == "m" and seg.attrs["kinds"][0] == "background"


def test_hdf5_carries_them_as_robomimic_depth_obs(dataset: Dataset, tmp_path: Path) -> None:
    export_hdf5(_request(dataset, tmp_path / "s.hdf5"), Hdf5Options())
    with h5py.File(tmp_path / "s.hdf5", "r") as f:
        obs = f["data/demo_000000/obs"]
        for cam in CAMERAS:
            want = _stored(dataset, cam)
            assert obs[f"{cam}_depth"].shape == (*want["depth"].shape, 1)
            assert np.array_equal(obs[f"{cam}_depth"][..., 0], want["depth"])
            assert np.array_equal(obs[f"{cam}_segmentation"][..., 0], want["seg"])
            assert np.array_equal(obs[f"{cam}_extrinsics"][:], want["extrinsics"])
            assert np.allclose(obs[f"{cam}_depth"].attrs["K"], want["K"], atol=1e-12)
            assert [str(n) for n in obs[f"{cam}_segmentation"].attrs["names"]] == want["names"]
            assert np.array_equal(f[f"data/demo_000000/next_obs/{cam}_depth"][0], obs[f"{cam}_depth"][1])


def test_an_episode_without_the_streams_is_refused(dataset: Dataset, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"episode_000001\.h5: observations/depth/head: found missing; allowed: "
                                          r"stored, as in the first exported episode"):
        export_zarr(_request(dataset, tmp_path / "both.zarr", (0, 1)), ZarrOptions())
    assert not (tmp_path / "both.zarr").exists()


def test_lerobot_depth_reads_back_within_its_encoders_quantisation(dataset: Dataset, tmp_path: Path) -> None:
    from lerobot.configs.video import DEPTH_QMAX, depth_encoder_defaults
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    target = tmp_path / "lerobot"
    result = export_lerobot(_request(dataset, target), LeRobotOptions(repo_id="x2/test"))
    back = LeRobotDataset("x2/test", root=target, video_backend="pyav", depth_output_unit="m")  # (default: whole mm)
    enc = depth_encoder_defaults()
    assert enc.use_log and back.meta.depth_keys == [f"observation.images.{c}_depth" for c in CAMERAS]
    # LeRobot's log quantiser: codes 0..DEPTH_QMAX evenly spaced in log(depth + shift) over [depth_min, depth_max];
    # rounding to the nearest code moves a depth d by at most (d + shift) (exp(step / 2) - 1) (the encoder is
    # lossless HEVC: the codes come back as written)
    step = math.log((enc.depth_max + enc.shift) / (enc.depth_min + enc.shift)) / DEPTH_QMAX
    meta = read_x2_meta(target)["depth"]
    for cam in CAMERAS:
        want = _stored(dataset, cam)
        bound = (want["depth"] + enc.shift) * (math.exp(step / 2) - 1) * 1.001 + 1e-6
        assert np.allclose(meta["lens"][cam]["K"], want["K"], atol=1e-9)
        for t in range(len(want["depth"])):
            item = back[t]
            metres = item[f"observation.images.{cam}_depth"].numpy().squeeze()
            assert metres.shape == want["depth"][t].shape
            error = np.abs(metres - want["depth"][t])
            assert (error <= bound[t]).all(), (cam, t, error.max())
            assert np.allclose(item[f"observation.extrinsics.{cam}"].numpy(), want["extrinsics"][t].ravel(), atol=1e-5)
    # the export's own read-back check holds the depth to the same bound: 2 mm off one pixel fails it
    plan, key = result.plan, "observation.images.head_depth"
    edges = [{**{c: (_stored_rgb(dataset, c)[0], _stored_rgb(dataset, c)[-1]) for c in CAMERAS},
              **{f"observation.images.{c}_depth": (_stored(dataset, c)["depth"][0], _stored(dataset, c)["depth"][-1])
                 for c in CAMERAS}}]
    with reading_back(plan, target, "x2/test") as back:
        compare(plan, result.written, edges, replace(back, per_episode=list(back.per_episode)), str(target))
    with reading_back(plan, target, "x2/test") as back:
        episodes = list(back.per_episode)
        first, last = episodes[0].edges[key]
        last = last.copy()
        last[10, 20] += 0.002
        episodes[0].edges[key] = (first, last)
        with pytest.raises(ExportError, match=r"episode 0 .* last observation.images.head_depth frame: found "
                                              r"[12]\.\d\d mm from the source depth; allowed: <= 0\.\d\d mm"):
            compare(plan, result.written, edges, replace(back, per_episode=episodes), str(target))
    shutil.rmtree(target)


def test_no_depth_exports_the_pictures_alone(dataset: Dataset, tmp_path: Path) -> None:
    """`--no-depth`: what LeRobot's ACT and diffusion train on (their ResNets would take a depth map for RGB)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    target = tmp_path / "rgb"
    export_lerobot(_request(dataset, target), LeRobotOptions(repo_id="x2/rgb", depth=False))
    back = LeRobotDataset("x2/rgb", root=target, video_backend="pyav")
    assert back.meta.depth_keys == [] and "depth" not in read_x2_meta(target)
    assert sorted(k for k in back.meta.features if k.startswith("observation.")) == [
        "observation.images.head", "observation.images.left_wrist", "observation.state"]
    decoded = back[0]["observation.images.head"].numpy().transpose(1, 2, 0) * 255  # the stored picture, as video
    assert np.abs(decoded - _stored_rgb(dataset, "head")[0]).mean() < 8
    shutil.rmtree(target)


def _stored_rgb(ds: Dataset, cam: str) -> np.ndarray:
    with Episode(ds.episode_path(0)) as ep:
        return ep.dataset(fmt.image_path(cam))[:]


def test_lerobot_depth_of_pixels_that_see_nothing_reads_back_as_the_encoders_far_bound(dataset: Dataset,
                                                                                       tmp_path: Path) -> None:
    """A pixel that sees nothing stores the far clip (75.5 m in the booth): LeRobot's encoder clips it to depth_max,
    so the export writes it clipped and its read-back check compares with the clipped depth (it refused the export
    when the first or last frame had one)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from x2.datasets.rewrite import commit_rewrite, staged_path

    root = tmp_path / "far"
    shutil.copytree(dataset.root, root)
    staged = staged_path(root, 0)
    staged.parent.mkdir(exist_ok=True)
    shutil.copyfile(Dataset.open(root).episode_path(0), staged)
    with h5py.File(staged, "r+") as f:  # every frame, first and last included, has pixels past the far bound
        depth = f[fmt.depth_path("head")]
        far = depth[:]
        far[:, :4, :] = 75.5
        depth[...] = far
    commit_rewrite(root, sorted(Dataset.open(root).episodes(), key=lambda r: r.index), 0)
    ds = Dataset.open(root)
    target = tmp_path / "lerobot"
    export_lerobot(_request(ds, target), LeRobotOptions(repo_id="x2/far"))
    meta = read_x2_meta(target)["depth"]
    assert "depth_max" in meta["clipped"] and meta["encoder"]["depth_max"] == 10.0
    back = LeRobotDataset("x2/far", root=target, video_backend="pyav", depth_output_unit="m")
    for t in range(len(far)):
        metres = back[t]["observation.images.head_depth"].numpy().squeeze()
        assert np.allclose(metres[:4], 10.0, atol=1e-3) and np.abs(metres[4:] - far[t, 4:]).max() < 0.002
    shutil.rmtree(target)
