"""Which episodes an evaluation runs: the split's configuration, its master seed, and the guard that keeps
them apart from the training data.

Episode k of a run is slot k of its master seed (x2/base/seeding.py), so every policy evaluated with the same
options meets the same worlds. In-distribution (`train`) runs use the task's training configuration with
`--seed` as master seed; out-of-distribution (`eval`) runs use a held-out variant of the task's scene with
`EVAL_SEED_BASE + --seed`, a seed no collector uses without --allow-eval. In-distribution seeds are still
seeds a collector could have drawn, so `--train-dataset` checks them against a training dataset's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from x2.base.errors import PolicyError
from x2.base.seeding import slot_seed
from x2.datasets import Dataset
from x2.envspec import catalog, load_env
from x2.envspec.held_out import EVAL_SEED_BASE, HeldOutError

SPLITS = ("train", "eval")


@dataclass(frozen=True)
class SplitPlan:
    split: str
    variant: str
    master_seed: int
    slots: tuple[int, ...]

    def seed_of(self, slot: int) -> int:
        """The world seed of episode `slot` of this split (x2 eval's, and x2.envs' `reset(seed=slot)`)."""
        return slot_seed(self.master_seed, slot)

    def seeds(self) -> list[int]:
        return [self.seed_of(slot) for slot in self.slots]


def scene_variants(task: str, robot: str | None) -> dict[str, str]:
    """variant -> split of the task's scene, `default` first (each variant compiled: a broken one says so)."""
    env = load_env(task, robot=robot)
    _, scene = catalog.load("scenes", env.scene_name)
    blocks = scene.data.get("variants") if isinstance(scene.data, dict) else None
    names = ["default", *(blocks if isinstance(blocks, dict) else {})]
    return {name: load_env(task, robot=robot, variant=name).split for name in names}


def plan_split(task: str, robot: str | None, split: str, variant: str | None, seed: int, n: int) -> SplitPlan:
    if split not in SPLITS:
        raise PolicyError(f"--split: found {split!r}; allowed: train, eval or both")
    if not 0 <= seed < EVAL_SEED_BASE:
        raise PolicyError(f"--seed: found {seed}; allowed: 0 to {EVAL_SEED_BASE - 1} (an eval run adds "
                          f"{EVAL_SEED_BASE} itself)")
    variants = scene_variants(task, robot)
    if variant is None:
        chosen = [v for v, s in variants.items() if s == split]
        if not chosen:
            raise PolicyError(f"--split: found {split}, but task {task}'s scene declares no variant with split "
                              f"{split}; allowed: a split the scene has ({', '.join(sorted(set(variants.values())))})")
        variant = "default" if split == "train" and "default" in chosen else chosen[0]
    elif variant not in variants:
        raise PolicyError(f"--variant: found {variant!r}; allowed: one of task {task}'s scene variants "
                          f"({', '.join(variants)})")
    elif variants[variant] != split:
        raise PolicyError(f"--variant: found {variant!r} (split {variants[variant]}) for --split {split}; "
                          f"allowed: a variant of split {split}")
    master = seed + (EVAL_SEED_BASE if split == "eval" else 0)
    return SplitPlan(split, variant, master, tuple(range(n)))


def refuse_trained_seeds(plans: Sequence[SplitPlan], train_datasets: Sequence[Path]) -> None:
    """One line, before anything runs, when an episode to evaluate has the seed of an episode trained on."""
    for path in train_datasets:
        ds = Dataset.open(path)
        trained = {r.seed: r.index for r in ds.episodes()}
        for plan in plans:
            for slot, seed in zip(plan.slots, plan.seeds(), strict=True):
                if seed in trained:
                    raise HeldOutError(
                        f"--seed: found master seed {plan.master_seed} whose episode {slot} has seed {seed}, the "
                        f"seed of episode {trained[seed]} of training dataset {ds.root}; allowed: a master seed "
                        "whose episodes the policy was not trained on (another --seed)")
