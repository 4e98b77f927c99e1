"""Evaluation configurations are held out: never sampled for training data, and never overlapping it.

Every configuration carries a split, `train` or `eval`: a scene and each of its `variants:` (their `split:`,
else the scene's), each `scenery:` look (replay augmentation), a task's paraphrase sets
(x2/envspec/instruction.py) and master seeds (`EVAL_SEED_BASE` and above are evaluation seeds). Two checks keep
them apart:

- at compile time, an asset in a pool declared for an eval configuration that a train pool of the same scene
  also declares is an error naming both lines (a held-out object that was trained on is not held out);
- at run time, a collector asked for an eval configuration refuses before writing anything, unless the user
  says `--allow-eval` (`refuse_eval`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from x2.base.errors import X2Error
from x2.envspec.env import EnvSpec
from x2.envspec.source import Fragment, Path_

__all__ = ["EVAL_SEED_BASE", "HeldOutError", "check_pools", "config_split", "held_out_error", "refuse_eval",
           "refuse_eval_run", "seed_split"]

# Master seeds from 2**31 on are reserved for evaluation (x2 eval); training collectors use smaller ones.
EVAL_SEED_BASE = 2**31


class HeldOutError(X2Error):
    """A collector was asked for an evaluation configuration without --allow-eval."""


def seed_split(master_seed: int) -> str:
    return "eval" if master_seed >= EVAL_SEED_BASE else "train"


def held_out_error(option: str, found: str) -> HeldOutError:
    return HeldOutError(f"{option}: found {found} (split eval, held out for evaluation); allowed: a train "
                        "configuration, or --allow-eval to make evaluation data on purpose")


def refuse_eval(allow_eval: bool, *, option: str, found: str, split: str) -> None:
    """One line and nothing written when `found` (given with `option`) is an eval configuration."""
    if split == "eval" and not allow_eval:
        raise held_out_error(option, found)


def refuse_eval_run(env: EnvSpec, master_seed: int, allow_eval: bool) -> None:
    """A collector's configuration, its scene variant and its master seed, before it writes anything."""
    refuse_eval(allow_eval, option="--variant", found=f"{env.variant!r} of scene {env.scene_name}", split=env.split)
    refuse_eval(allow_eval, option="--seed", found=f"{master_seed} (seeds from {EVAL_SEED_BASE} on)",
                split=seed_split(master_seed))


def config_split(env: EnvSpec, master_seed: int | None) -> str:
    """The split an episode of `env` from `master_seed` belongs to: eval when either is held out."""
    held = env.split == "eval" or (master_seed is not None and seed_split(master_seed) == "eval")
    return "eval" if held else "train"


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _declared_pools(frag: Fragment) -> Iterator[tuple[str, str, Path_]]:
    """(split, asset, where) for every asset written in a pool of the scene file itself (not inherited by a
    variant: a variant that keeps the scene's pool declares nothing)."""
    data = _mapping(frag.data)
    base = str(data.get("split", "train"))

    def pool(block: dict[str, Any], key: Path_, split: str) -> Iterator[tuple[str, str, Path_]]:
        assets = block.get("pool")
        for i, asset in enumerate(assets if isinstance(assets, list) else ()):
            yield split, str(asset), (*key, "pool", i)

    def objects(block: object, key: Path_, split: str) -> Iterator[tuple[str, str, Path_]]:
        for name, obj in _mapping(block).items():
            yield from pool(_mapping(obj), (*key, name), split)

    yield from objects(data.get("objects"), ("objects",), base)
    for v, block in _mapping(data.get("variants")).items():
        yield from objects(_mapping(block).get("objects"), ("variants", v, "objects"),
                           str(_mapping(block).get("split", base)))
    for s, block in _mapping(data.get("scenery")).items():
        yield from pool(_mapping(_mapping(block).get("distractors")), ("scenery", s, "distractors"),
                        str(_mapping(block).get("split", "train")))


def check_pools(frag: Fragment) -> None:
    """A validated scene's train and eval pools share no asset; the first shared one is reported at its eval
    pool, naming the train pool's file and line."""
    train: dict[str, Path_] = {}
    held: list[tuple[str, Path_]] = []
    for split, asset, key in _declared_pools(frag):
        if split == "train":
            train.setdefault(asset, key)
        else:
            held.append((asset, key))
    for asset, key in held:
        if asset in train:
            there = frag.origin(train[asset])
            raise frag.error(key, f"asset {asset!r} in an eval pool, also in a train pool at {there.file}:"
                             f"{there.line}", "held-out pools whose assets no train pool of the scene declares")
