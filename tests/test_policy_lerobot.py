"""`lerobot:PATH`: a LeRobot pretrained_model folder served through x2.policy.services.lerobot.

The folder is made the way `lerobot-train` makes one (lerobot/scripts/lerobot_train.py and
lerobot/common/train_utils.py `save_checkpoint`), in process and tiny so the test stays fast: make_policy
from the export's LeRobotDatasetMetadata, make_pre_post_processors with its stats, two optimiser steps on
batches from LeRobot's own loader, then policy / train config / processors `save_pretrained` into
pretrained_model/. (`lerobot-train` itself needs `accelerate`, which x2's dev extra does not pull; its
checkpoint folders load the same way: docs/policies.md.)

Data: two 8-frame pick_place episodes recorded by the real loop, exported with --state-only
--environment-state.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.real_dataset import record_short_dataset
from helpers.x2_cli import HEADLESS_ENV

from x2.base.errors import PolicyError
from x2.datasets import Dataset
from x2.datasets.select import Selection
from x2.export.lerobot import export_lerobot
from x2.export.lerobot_plan import LeRobotOptions
from x2.export.request import ExportRequest
from x2.policy.chunks import ENSEMBLE_DECAY, ChunkExecution
from x2.policy.protocol import ACTIONS, OBS_ENV_STATE, OBS_STATE, PolicyFault, ServiceInfo
from x2.policy.services import ServeOptions, make_service

# The budget: ~20 s of CPU (torch and LeRobot imports most of it), ~45 s on a loaded 2-core machine.
pytestmark = pytest.mark.timeout(150)
REPO = "x2/pick"
CHUNK = 4


@pytest.fixture(scope="module")
def export_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import datasets.config

    tmp = tmp_path_factory.mktemp("lerobot-policy")
    record_short_dataset(tmp / "pick", episodes=2, ticks=8, task="pick_place", seed=2)
    ds = Dataset.open(tmp / "pick")
    request = ExportRequest(ds, tuple(Selection().apply(ds)), tmp / "export", "all episodes", None, True)
    with pytest.MonkeyPatch.context() as patch:  # LeRobot's loads copy tables into HF's cache: not ~/.cache
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp / "hf-cache")
        export_lerobot(request, LeRobotOptions(repo_id=REPO, environment_state=True))
    return tmp / "export"


def first_frame(root: Path) -> dict[str, object]:
    """The observation x2's evaluator would send for the export's first frame (numpy, as on the wire)."""
    import pyarrow.parquet as pq

    table = pq.read_table(next((root / "data").rglob("*.parquet"))).to_pydict()
    task = json.loads((root / "meta" / "x2.json").read_text())["dataset"]["task"]
    return {OBS_STATE: np.asarray(table[OBS_STATE][0], np.float32),
            OBS_ENV_STATE: np.asarray(table[OBS_ENV_STATE][0], np.float32), "prompt": task, "task": task}


@pytest.fixture(scope="module")
def pretrained(export_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """(checkpoints/000002/pretrained_model, the first action the trained policy gives for frame 0)."""
    import torch
    from lerobot.configs.default import DatasetConfig
    from lerobot.configs.train import TrainPipelineConfig
    from lerobot.configs.types import NormalizationMode
    from lerobot.datasets.factory import resolve_delta_timestamps
    from lerobot.datasets.lerobot_dataset import LeRobotDataset, LeRobotDatasetMetadata
    from lerobot.policies import make_policy, make_pre_post_processors, prepare_observation_for_inference
    from lerobot.policies.act.configuration_act import ACTConfig
    from lerobot.utils.collate import lerobot_collate_fn

    torch.manual_seed(0)
    modes = {k: NormalizationMode.MEAN_STD for k in ("VISUAL", "STATE", "ENV", "ACTION")}
    config = ACTConfig(device="cpu", push_to_hub=False, chunk_size=CHUNK, n_action_steps=CHUNK, dim_model=32,
                       dim_feedforward=64, n_heads=2, n_encoder_layers=1, n_decoder_layers=1,
                       n_vae_encoder_layers=1, normalization_mapping=modes)
    meta = LeRobotDatasetMetadata(REPO, root=export_root)
    policy = make_policy(config, ds_meta=meta)
    preprocess, postprocess = make_pre_post_processors(config, dataset_stats=meta.stats)
    data = LeRobotDataset(REPO, root=export_root, delta_timestamps=resolve_delta_timestamps(config, meta))
    loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True, collate_fn=lerobot_collate_fn)
    optimiser = torch.optim.AdamW(policy.parameters(), lr=1e-3)
    policy.train()
    for _, batch in zip(range(2), loader, strict=False):
        loss, _ = policy.forward(preprocess(batch))
        loss.backward()
        optimiser.step()
        optimiser.zero_grad()
    policy.eval()
    policy.reset()
    obs = {k: v for k, v in first_frame(export_root).items() if isinstance(v, np.ndarray)}
    with torch.inference_mode():
        frame = prepare_observation_for_inference(obs, torch.device("cpu"), "task")
        expected = postprocess(policy.select_action(preprocess(frame))).numpy()
    folder = tmp_path_factory.mktemp("train") / "checkpoints" / "000002" / "pretrained_model"
    policy.save_pretrained(folder)
    TrainPipelineConfig(dataset=DatasetConfig(repo_id=REPO, root=str(export_root)), policy=config,
                        steps=2, batch_size=4).save_pretrained(folder)
    preprocess.save_pretrained(folder)
    postprocess.save_pretrained(folder)
    return folder, expected


def test_it_serves_a_trained_folder(pretrained: tuple[Path, np.ndarray], export_root: Path) -> None:
    folder, expected = pretrained
    service = make_service(f"lerobot:{folder}", ServeOptions())
    info = ServiceInfo.from_metadata(service.metadata())
    names = json.loads((export_root / "meta" / "info.json").read_text())["features"]["action"]["names"]
    assert info == ServiceInfo(kind="lerobot", identity=str(folder), lifecycle=True, cameras={}, state=True,
                               environment_state=True, action_names=tuple(names), chunk=None,
                               digest=hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest())
    assert info.privileged  # it reads the objects' poses
    obs = first_frame(export_root)
    service.initialize_episode({"seed": 1, "instruction": obs["task"]})
    first = service.infer(dict(obs))[ACTIONS]
    assert first.shape == (1, len(names)) and first.dtype == np.float32 and np.isfinite(first).all()
    np.testing.assert_allclose(first, expected, rtol=1e-5, atol=1e-5)  # what the trainer's own policy said
    second = service.infer(dict(obs))[ACTIONS]  # ACT's queue: the chunk's next action, not a new chunk
    assert not np.allclose(second, first)
    service.finalize_episode({"success": False})
    service.initialize_episode({"seed": 2})  # a new episode empties the queue: the chunk starts again
    np.testing.assert_allclose(service.infer(dict(obs))[ACTIONS], first, rtol=1e-5, atol=1e-5)
    with pytest.raises(PolicyFault, match=r"observation.environment_state: found missing; allowed: float \(14,\)"):
        service.infer({OBS_STATE: obs[OBS_STATE]})


def _answers(folder: Path, execution: str, observations: list[dict[str, object]]) -> np.ndarray:
    service = make_service(f"lerobot:{folder}", ServeOptions(execution=ChunkExecution.parse(execution)))
    service.initialize_episode({"seed": 1})
    return np.concatenate([service.infer(dict(obs))[ACTIONS] for obs in observations])


def test_chunk_execution_is_handed_to_lerobots_own_queue_and_ensembler(pretrained: tuple[Path, np.ndarray],
                                                                        export_root: Path) -> None:
    folder, _ = pretrained
    first = first_frame(export_root)
    state = np.asarray(first[OBS_STATE])
    moved = [{**first, OBS_STATE: state + 0.05 * t} for t in range(CHUNK)]  # a new state each tick
    chunk, each, ensembled = (_answers(folder, e, moved) for e in ("chunk", "1", "ensemble"))
    still = _answers(folder, "chunk", [first] * CHUNK)
    np.testing.assert_allclose(chunk, still, rtol=1e-5, atol=1e-6)  # as trained: one chunk, open-loop
    np.testing.assert_allclose(each[0], chunk[0], rtol=1e-5, atol=1e-6)
    assert not np.allclose(each[1:], chunk[1:], atol=1e-4)  # K = 1: a new chunk every tick, the new state seen
    # ACT's ensembler: tick 1 is the weighted mean of chunk 0's second action (the open-loop answer 1) and
    # chunk 1's first (K = 1's answer 1), the oldest weighted exp(0) = 1, the next exp(-ENSEMBLE_DECAY)
    w = np.exp(-ENSEMBLE_DECAY)
    np.testing.assert_allclose(ensembled[0], each[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ensembled[1], (chunk[1] + w * each[1]) / (1 + w), rtol=1e-4, atol=1e-5)
    with pytest.raises(PolicyError, match=rf"^--chunk-exec: found {CHUNK + 1} for lerobot:{folder}, a act policy; "
                                          rf"allowed: 1 to {CHUNK} \(what one inference predicts\)$"):
        make_service(f"lerobot:{folder}", ServeOptions(execution=ChunkExecution(steps=CHUNK + 1)))


def test_a_folder_that_is_not_a_pretrained_model_is_refused(pretrained: tuple[Path, np.ndarray],
                                                             tmp_path: Path) -> None:
    folder, _ = pretrained
    run = folder.parent.parent.parent  # the training run's output folder
    with pytest.raises(PolicyError, match=rf"lerobot:{run}: found no config.json, model.safetensors, .*"
                                          rf"\(found one at .*pretrained_model\)"):
        make_service(f"lerobot:{run}", ServeOptions())
    with pytest.raises(PolicyError, match=rf"lerobot:{tmp_path / 'nowhere'}: found no such folder"):
        make_service(f"lerobot:{tmp_path / 'nowhere'}", ServeOptions())
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in ("config.json", "model.safetensors", "policy_preprocessor.json", "policy_postprocessor.json"):
        (partial / name).write_bytes((folder / name).read_bytes())
    with pytest.raises(PolicyError, match=r"found no policy_preprocessor_step_\d+_normalizer_processor.safetensors"):
        make_service(f"lerobot:{partial}", ServeOptions())


def test_importing_the_service_imports_no_torch() -> None:
    code = ("import sys, x2.policy.services.lerobot; "
            "print(sorted(m for m in ('torch', 'lerobot') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=HEADLESS_ENV, check=True)
    assert out.stdout.strip() == "[]"
