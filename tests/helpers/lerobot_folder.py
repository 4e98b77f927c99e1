"""A pretrained_model folder as lerobot-train saves one, of a tiny untrained ACT over an export's features: for tests
of what x2 does in front of a LeRobot policy (what it is sent), which runs before any weight is used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def untrained_act_folder(root: Path, repo: str, target: Path, depth_unit: str = "mm") -> Path:
    """`target`/checkpoints/000000/pretrained_model: an ACT made by `make_policy` from the export at `root`, with
    its processors and a train_config.json naming the export (and the unit its loader gave depth in)."""
    import torch
    from lerobot.configs.default import DatasetConfig
    from lerobot.configs.train import TrainPipelineConfig
    from lerobot.datasets.lerobot_dataset import LeRobotDatasetMetadata
    from lerobot.policies import make_policy, make_pre_post_processors
    from lerobot.policies.act.configuration_act import ACTConfig

    torch.manual_seed(0)
    config = ACTConfig(device="cpu", push_to_hub=False, chunk_size=2, n_action_steps=2, dim_model=32,
                       dim_feedforward=64, n_heads=2, n_encoder_layers=1, n_decoder_layers=1, n_vae_encoder_layers=1,
                       pretrained_backbone_weights=None)
    meta = LeRobotDatasetMetadata(repo, root=root)
    policy = make_policy(config, ds_meta=meta)
    preprocess, postprocess = make_pre_post_processors(config, dataset_stats=meta.stats)
    folder = target / "checkpoints" / "000000" / "pretrained_model"
    policy.save_pretrained(folder)
    TrainPipelineConfig(dataset=DatasetConfig(repo_id=repo, root=str(root), depth_output_unit=depth_unit),
                        policy=config, steps=1, batch_size=1).save_pretrained(folder)
    preprocess.save_pretrained(folder)
    postprocess.save_pretrained(folder)
    return folder


def exported_state_rows(ds: Any, target: Path, options: Any) -> np.ndarray:
    """The observation.state column of a state-only LeRobot export of every episode of `ds` (x2 Dataset) with
    `options` (LeRobotOptions) at `target`, episodes and frames in order."""
    import datasets.config
    import pyarrow.parquet as pq
    import pytest

    from x2.export.lerobot import export_lerobot
    from x2.export.request import ExportRequest
    from x2.policy.protocol import OBS_STATE

    with pytest.MonkeyPatch.context() as patch:  # LeRobot's loads copy tables into HF's cache: not ~/.cache
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", target.parent / "hf-cache")
        export_lerobot(ExportRequest(ds, tuple(ds.episodes()), target, state_only=True), options)
    table = pq.read_table(sorted((target / "data").rglob("*.parquet")))
    order = np.lexsort((table["frame_index"].to_numpy(), table["episode_index"].to_numpy()))
    return np.stack(table[OBS_STATE].to_numpy(zero_copy_only=False))[order]
