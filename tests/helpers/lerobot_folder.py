"""A pretrained_model folder as lerobot-train saves one, of a tiny untrained ACT over an export's features: for tests
of what x2 does in front of a LeRobot policy (what it is sent), which runs before any weight is used."""

from __future__ import annotations

from pathlib import Path


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
