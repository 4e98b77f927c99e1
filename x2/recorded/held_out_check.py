"""Did an episode see an evaluation configuration? Answered from its file alone (no spec file is read).

An episode was made in a held-out configuration (x2/envspec/held_out.py) when its `split` attr says eval (an eval
scene variant or master seed when it was recorded, an eval scenery when it was augmented), when its master seed
is an evaluation seed, when its world record's scene says eval, or when its instruction is one of its task's
held-out paraphrases filled in for its world. `x2 datasets validate --split` runs this over a dataset, and
`x2 render` and `x2 augment replay` refuse such episodes unless told `--allow-eval`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets import Dataset, Episode, EpisodeRecord
from x2.envspec.held_out import EVAL_SEED_BASE, held_out_error, seed_split
from x2.envspec.instruction import fill
from x2.recorded.world import recorded_env

__all__ = ["eval_configuration", "held_out_episodes", "refuse_eval_episodes", "refuse_held_out"]


def eval_configuration(ep: Episode) -> str | None:
    """Why `ep` belongs to an evaluation configuration, or None when nothing in its file says so."""
    if ep.split == "eval":
        return f"recorded with split eval (scene variant {ep.text(fmt.SCENE_VARIANT_ATTR) or '?'})"
    master = ep.attrs.get(fmt.MASTER_SEED_ATTR)
    if isinstance(master, int | float) and not isinstance(master, bool) and seed_split(int(master)) == "eval":
        return f"master seed {int(master)}, an evaluation seed (from {EVAL_SEED_BASE} on)"
    augmentation = ep.json_attr(fmt.AUGMENTATION_ATTR) or {}
    if isinstance(augmentation, dict) and (augmentation.get("scenery") or {}).get("split") == "eval":
        return f"augmented with eval scenery {augmentation['scenery'].get('name')!r}"
    if ep.attrs.get(fmt.WORLD_ATTR) is None:
        return None  # an episode without a world record (a bare writer's) names no configuration beyond the above
    env = recorded_env(ep)
    if env.split == "eval":
        return f"its world record's scene {env.scene_name} (variant {env.variant}) has split eval"
    if env.task is not None and env.task.eval_paraphrases:
        assets = ep.json_attr(fmt.ASSETS_ATTR) or {}
        layout = ep.json_attr(fmt.LAYOUT_ATTR) or {}
        positions = {name: (float(p[0]), float(p[1])) for name, p in layout.items()}
        try:
            held = [t for t in env.task.eval_paraphrases if fill(t, env.objects, assets, positions) == ep.instruction]
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise DatasetError(f"{ep.path}: {fmt.ASSETS_ATTR}/{fmt.LAYOUT_ATTR}: found {exc!r} filling its "
                               "task's templates; allowed: every object's asset and placement") from None
        if held:
            return f"its instruction is the held-out paraphrase {held[0]!r}"
    return None


def held_out_episodes(ds: Dataset, records: Sequence[EpisodeRecord],
                      progress: Callable[[int, int], None] | None = None) -> Iterator[tuple[int, str]]:
    """(index, why) of each of `records` that saw an evaluation configuration, in order, read as it goes."""
    for done, record in enumerate(records):
        if progress is not None:
            progress(done, len(records))
        with ds.load(record.index) as ep:
            why = eval_configuration(ep)
        if why is not None:
            yield record.index, why


def refuse_held_out(ds: Dataset, index: int, why: str | None, allow_eval: bool) -> None:
    """One line when episode `index` saw an evaluation configuration (`why`, from eval_configuration)."""
    if why is not None and not allow_eval:
        raise held_out_error("episodes", f"episode {index} of {ds.root}, {why}")


def refuse_eval_episodes(ds: Dataset, records: Sequence[EpisodeRecord], allow_eval: bool) -> None:
    """One line, before anything is written, when one of `records` saw an evaluation configuration."""
    if not allow_eval:
        for index, why in held_out_episodes(ds, records):
            refuse_held_out(ds, index, why, allow_eval)
