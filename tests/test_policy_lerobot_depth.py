"""`lerobot:PATH` for a policy whose inputs include a depth map and the camera's pose (x2.policy.services.lerobot):
the service asks `x2 eval` for them by name, and what it hands the policy from a live depth in metres is exactly what
LeRobot's own loader gave in training from x2's LeRobot export of the same frame, in the unit the training read
(LeRobot's default millimetres, or metres).

LeRobot 0.6's own policies read no depth (ACT and diffusion feed every visual feature to an RGB ResNet), so the
folder is one `make_policy` writes for an ACT config whose input features are the export's, untrained: what is
under test is the conversion in front of the policy, which runs before any weight is used.

Data: one 4-frame pick_place episode recorded by the real loop, rendered with rgb and depth at 48x64 and exported.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.lerobot_folder import untrained_act_folder
from helpers.real_dataset import record_short_dataset

from x2 import format as fmt
from x2.datasets import Dataset, Episode
from x2.export.lerobot import export_lerobot
from x2.export.lerobot_plan import LeRobotOptions
from x2.export.request import ExportRequest
from x2.policy.protocol import OBS_EXTRINSICS_PREFIX, OBS_IMAGE_PREFIX, OBS_STATE, PolicyFault, ServiceInfo
from x2.policy.services import ServeOptions, make_service
from x2.render import render_dataset
from x2.sim.camera import ImageSize

pytestmark = pytest.mark.timeout(150)
REPO, CAM = "x2/depth", "head"
DEPTH, IMAGE, POSE = f"{OBS_IMAGE_PREFIX}{CAM}_depth", f"{OBS_IMAGE_PREFIX}{CAM}", f"{OBS_EXTRINSICS_PREFIX}{CAM}"


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """(the LeRobot export, the x2 episode's stored depth in metres (T, H, W))."""
    import datasets.config

    tmp = tmp_path_factory.mktemp("lerobot-depth")
    record_short_dataset(tmp / "pick", episodes=1, ticks=4, task="pick_place", seed=2)
    render_dataset(tmp / "pick", (CAM,), ImageSize(48, 64), streams=("rgb", "depth"))
    ds = Dataset.open(tmp / "pick")
    with Episode(ds.episode_path(0)) as ep:
        stored = np.asarray(ep.dataset(fmt.depth_path(CAM))[:])
    with pytest.MonkeyPatch.context() as patch:  # LeRobot's loads copy tables into HF's cache: not ~/.cache
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp / "hf-cache")
        export_lerobot(ExportRequest(ds, tuple(ds.episodes()), tmp / "export", cameras=(CAM,)),
                       LeRobotOptions(repo_id=REPO))
    return tmp / "export", stored


@pytest.mark.parametrize("unit", ["mm", "m"])
def test_the_policy_is_given_the_depth_its_training_loader_gave(export: tuple[Path, np.ndarray], unit: str,
                                                                tmp_path: Path) -> None:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    root, stored = export
    service = make_service(f"lerobot:{untrained_act_folder(root, REPO, tmp_path, unit)}", ServeOptions())
    info = ServiceInfo.from_metadata(service.metadata())
    assert (dict(info.cameras), dict(info.depth), info.extrinsics) == ({CAM: (48, 64)}, {CAM: (48, 64)}, (CAM,))
    loaded = LeRobotDataset(REPO, root=root, video_backend="pyav", depth_output_unit=unit)
    for t in range(len(stored)):
        item = loaded[t]
        live = {IMAGE: np.zeros((48, 64, 3), np.uint8), DEPTH: stored[t][..., None].astype(np.float32),
                POSE: item[POSE].numpy(), OBS_STATE: item[OBS_STATE].numpy()}
        batch = service.batch(live)  # type: ignore[attr-defined]
        trained = item[DEPTH].numpy()  # (1, H, W) in `unit`
        assert batch[DEPTH].dtype == np.float32 and batch[DEPTH].shape == (48, 64, 1)
        np.testing.assert_array_equal(batch[DEPTH][..., 0], trained[0])
        np.testing.assert_array_equal(batch[POSE], item[POSE].numpy())
    scale = 1000.0 if unit == "mm" else 1.0
    assert 0.05 * scale < float(np.median(batch[DEPTH])) < 3 * scale


def test_a_depth_that_is_not_float_metres_of_its_size_is_malformed(export: tuple[Path, np.ndarray],
                                                                   tmp_path: Path) -> None:
    root, stored = export
    service = make_service(f"lerobot:{untrained_act_folder(root, REPO, tmp_path, 'mm')}", ServeOptions())
    good = {IMAGE: np.zeros((48, 64, 3), np.uint8), DEPTH: stored[0][..., None].astype(np.float32),
            POSE: np.eye(4, dtype=np.float32).ravel(), OBS_STATE: np.zeros(16, np.float32)}
    for bad, found in ((np.zeros((48, 64, 1), np.uint16), r"uint16\(48, 64, 1\)"),
                       (stored[0].astype(np.float32), r"float32\(48, 64\)"), (None, "missing")):
        obs = dict(good)
        if bad is None:
            del obs[DEPTH]
        else:
            obs[DEPTH] = bad
        with pytest.raises(PolicyFault, match=rf"{DEPTH}: found {found}; allowed: float metres \(48, 64, 1\)"):
            service.batch(obs)  # type: ignore[attr-defined]
