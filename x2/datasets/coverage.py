"""What a dataset's episodes cover, per randomisation axis, read from each episode's own attributes.

- appearance: the scene variant each episode was recorded in, with the look its reset drew when its scene
  randomises appearance (or the scenery an augmented one was drawn with);
- task setting: the asset drawn for every object that had a choice, the instructions (paraphrases and grid
  positions give several per task), how many distinct layouts (object placements to the centimetre) and how
  many distinct bindings of the scene's roles (a puzzle's configuration: the sequence of buttons to press);
- embodiment: the robot (a gripper swapped in names itself in the robot's name), whether its reset drew the
  cameras' mounting and lens and the table's height, and the range of the table heights drawn;
- split: train or eval, as the episodes recorded it.

Unlike `x2.datasets.summary` this opens every episode file (root attributes only, no arrays).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets.store import Dataset

__all__ = ["Coverage", "coverage"]


@dataclass
class Coverage:
    episodes: int = 0
    appearance: Counter[str] = field(default_factory=Counter)  # scene variant or scenery -> episodes
    assets: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))  # object -> asset -> n
    instructions: Counter[str] = field(default_factory=Counter)
    layouts: int = 0  # distinct placements of all objects, to the centimetre
    role_bindings: int = 0  # distinct bindings of the scene's roles (0: no episode has roles)
    embodiment: Counter[str] = field(default_factory=Counter)  # robot -> episodes
    table_heights: list[float] = field(default_factory=list)  # m, each drawn one (relative to the robot's mount)
    split: Counter[str] = field(default_factory=Counter)
    unreadable: list[int] = field(default_factory=list)  # episodes whose file could not be read (validate says why)

    @property
    def drawn_assets(self) -> dict[str, Counter[str]]:
        """Objects with more than one asset in the dataset (the others had no choice to cover)."""
        return {name: c for name, c in self.assets.items() if len(c) > 1}


def coverage(ds: Dataset, progress: Callable[[int, int], None] | None = None) -> Coverage:
    records = sorted(ds.episodes(), key=lambda r: r.index)
    out = Coverage(episodes=len(records))
    layouts: set[tuple[tuple[str, int, int], ...]] = set()
    bindings: set[tuple[tuple[str, str], ...]] = set()
    for done, record in enumerate(records):
        if progress is not None:
            progress(done, len(records))
        try:
            _count(ds, record.index, out, layouts, bindings)
        except DatasetError:
            out.unreadable.append(record.index)
    if progress is not None:
        progress(len(records), len(records))
    out.layouts = len(layouts)
    out.role_bindings = len(bindings)
    return out


def _count(ds: Dataset, index: int, out: Coverage, layouts: set[tuple[tuple[str, int, int], ...]],
           bindings: set[tuple[tuple[str, str], ...]]) -> None:
    """Add one episode, all of it or (its file unreadable: DatasetError) nothing."""
    with ds.load(index) as ep:
        augmentation = ep.json_attr(fmt.AUGMENTATION_ATTR)
        variant = ep.text(fmt.SCENE_VARIANT_ATTR) or "default"
        drawn = ep.json_attr(fmt.RESET_LOOK_ATTR)
        if isinstance(augmentation, dict) and augmentation.get("look"):
            drawn = None  # restyled again by its scenery block (the variant named): the parent's look is gone
        if isinstance(drawn, dict):  # a look drawn at the reset: the scenery it came from
            variant = f"{variant}, look {drawn.get('scenery')}"
        assets = ep.json_attr(fmt.ASSETS_ATTR) or {}
        layout = ep.json_attr(fmt.LAYOUT_ATTR) or {}
        try:
            placed = tuple(sorted((str(k), round(float(v[0]) * 100), round(float(v[1]) * 100))
                                  for k, v in layout.items()))
        except (AttributeError, IndexError, TypeError, ValueError) as exc:
            raise DatasetError(f"{ep.path}: {fmt.LAYOUT_ATTR}: found {exc}; allowed: object -> [x, y, z, yaw]"
                               ) from None
        roles = ep.json_attr(fmt.RESET_ROLES_ATTR)
        instruction, robot, split = ep.instruction, ep.text(fmt.ROBOT_ATTR) or ds.manifest.robot, ep.split
        drawn_body = ep.json_attr(fmt.RESET_EMBODIMENT_ATTR)
        height = None
        if isinstance(drawn_body, dict):
            if drawn_body.get("cameras"):  # its cameras drawn at the reset
                robot = f"{robot}, cameras drawn"
            if "table_height" in drawn_body:  # and the table's height
                try:
                    height = float(drawn_body["table_height"])
                except (TypeError, ValueError) as exc:
                    raise DatasetError(f"{ep.path}: {fmt.RESET_EMBODIMENT_ATTR}: table_height: found {exc}; allowed: "
                                       "a number (m)") from None
                robot = f"{robot}, table height drawn"
    out.appearance["scenery " + variant if isinstance(augmentation, dict) else variant] += 1
    for name, asset in assets.items() if isinstance(assets, dict) else ():
        out.assets[str(name)][str(asset)] += 1
    out.instructions[instruction] += 1
    layouts.add(placed)
    if isinstance(roles, dict):
        bindings.add(tuple(sorted((str(k), str(v)) for k, v in roles.items())))
    out.embodiment[robot] += 1
    if height is not None:
        out.table_heights.append(height)
    out.split[split] += 1
