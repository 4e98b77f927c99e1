"""A task's randomisation at a glance: the worlds of many seeded resets, one tile each, in one PNG.

Tile k is the world `x2 synth --seed S` starts its attempt k from in a new dataset (one it resumes continues
at later slots): the same seed (slot k of master seed S, x2/base/seeding.py), the same compiled env (task, robot,
gripper, scene variant) and the same reset the loop does, so a layout or an asset draw seen here is the one
synthesis meets. Only objects with more than one candidate asset are named in a tile's label: the others are
the same in every tile. A tile quotes its instruction when the resets drew more wordings than their assets
explain (paraphrases, grid positions).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from x2.base.errors import X2Error
from x2.base.seeding import AXES, slot_seed
from x2.envspec import load_env
from x2.envspec.env import EnvSpec
from x2.envspec.scenery import find_look
from x2.recorded.frames import DEFAULT_SIZE
from x2.render.grid import Box, GridRow, draw_grid, write_png
from x2.sim import make_backend
from x2.sim.backend import CameraDraw, EmbodimentDraw
from x2.sim.camera import ImageSize

MAX_COLUMNS = 10  # a wider default grid would not fit a screen at the default tile size


@dataclass(frozen=True)
class PreviewTile:
    slot: int
    seed: int
    label: str
    box: Box  # where it is on the picture


@dataclass(frozen=True)
class TaskPreview:
    path: Path
    task: str
    title: str
    camera: str
    tiles: tuple[PreviewTile, ...]


def _check_axis(axis: str | None, env: EnvSpec) -> None:
    if axis is None:
        return
    if axis not in AXES:
        raise X2Error(f"--axis: found {axis!r}; allowed: {', '.join(AXES)}")
    if axis == "appearance" and not env.appearance:
        raise X2Error(f"--axis: found 'appearance' but scene {env.scene_name} (variant {env.variant}) draws no look "
                      "per reset; allowed: task, or a variant whose scene lists `appearance:` looks")
    if axis == "embodiment" and not _draws_embodiment(env):
        raise X2Error(f"--axis: found 'embodiment' but scene {env.scene_name} (variant {env.variant}) with robot "
                      f"{env.robot.name} draws no cameras or table height per reset; allowed: task, or a variant "
                      "whose scene lists `embodiment: [camera]` or `[table_height]` with a robot that declares "
                      "camera_jitter or table_height_jitter (another robot or gripper is chosen with --robot and "
                      "--gripper)")


def _draws_embodiment(env: EnvSpec) -> bool:
    return bool(("camera" in env.embodiment and env.robot.camera_jitter)
                or ("table_height" in env.embodiment and env.robot.table_height_jitter > 0))


def _cameras(embodiment: EmbodimentDraw | None) -> list[tuple[str, CameraDraw]]:
    cameras = {} if embodiment is None else embodiment.get("cameras", {})
    return sorted(cameras.items(), key=lambda item: item[0])


def _table_height(embodiment: EmbodimentDraw | None) -> list[str]:
    """The drawn table height as a tile says it (cm, relative to the robot's mount), if one was drawn."""
    height = None if embodiment is None else embodiment.get("table_height")
    return [] if height is None else [f"table {100 * float(height):+.1f} cm"]


def default_camera(env: EnvSpec) -> str:
    """The robot's head camera, which most tasks are trained on; the booth's front camera for a robot without one."""
    return "head" if "head" in env.robot.cameras else "front"


def default_columns(seeds: int) -> int:
    # Four across for a handful (12 seeds: 4 x 3), about square for many (100 seeds: 10 x 10).
    return min(seeds, max(4, min(MAX_COLUMNS, math.ceil(math.sqrt(seeds)))))


def task_preview(task: str, out: str | Path, *, seeds: int = 12, master_seed: int = 0, camera: str | None = None,
                 size: ImageSize = DEFAULT_SIZE, robot: str | None = None, variant: str = "default",
                 gripper: str | None = None, columns: int | None = None, axis: str | None = None,
                 look: str | None = None, on_tile: Callable[[int, int], None] | None = None) -> TaskPreview:
    """Render slots 0..seeds-1 of `master_seed` and write the grid to `out` (a .png). With `axis`, only that
    randomisation axis (x2/base/seeding.py: AXES) is drawn from each slot's seed, the rest from slot 0's. Every
    argument is checked before the first frame is rendered and nothing is written unless all tiles are drawn.
    `look` draws every tile in that look (the scene's scenery block, or x2's built-in one such as `lab`:
    x2/envspec/scenery.py, find_look) instead of the scene's own appearance. `on_tile(done, total)` is called
    after each tile."""
    out = Path(out)
    if out.suffix.lower() != ".png":
        raise X2Error(f"--out: found {str(out)!r}; allowed: a .png file")
    if out.is_dir():
        raise X2Error(f"--out: found {str(out)!r}, a folder; allowed: a .png file")
    if seeds < 1:
        raise X2Error(f"--seeds: found {seeds}; allowed: 1 or more")
    if master_seed < 0:  # (numpy's SeedSequence takes no negative entropy)
        raise X2Error(f"--master-seed: found {master_seed}; allowed: 0 or more")
    columns = default_columns(seeds) if columns is None else columns
    if columns < 1:
        raise X2Error(f"--columns: found {columns}; allowed: 1 or more")
    env = load_env(task, robot=robot, variant=variant, gripper=gripper)
    if look is not None:  # the appearance axis with one look: every reset draws it
        env = dataclasses.replace(env, appearance=(find_look(env.scene_name, look),))
    _check_axis(axis, env)
    camera = camera or default_camera(env)
    backend = make_backend(env)
    try:
        have = backend.cameras
        if camera not in have.names:
            raise X2Error(f"--camera: found {camera!r}; allowed: {', '.join(have.names)}")
        if not have.fits(size):
            raise X2Error(f"--size: found {size}; allowed: up to {have.largest} (the model's offscreen buffer)")
        drawn = [o.name for o in env.objects if len(o.candidates) > 1]
        frames, labels, slot_seeds, instructions, draws_of = [], [], [], [], []
        for slot in range(seeds):
            seed = slot_seed(master_seed, slot)
            info = backend.reset(seed) if axis is None else backend.reset(slot_seed(master_seed, 0), axes={axis: seed})
            frames.append(backend.render(camera, size.width, size.height))
            draws = ", ".join([f"{name}={info.assets[name]}" for name in drawn]
                              + ([f"look={info.appearance['scenery']}"] if info.appearance else [])
                              + [f"{cam} fovy {change['fovy']:+.1f}" for cam, change in _cameras(info.embodiment)]
                              + _table_height(info.embodiment))
            labels.append(f"#{slot} seed {seed}" + (f": {draws}" if draws else ""))
            slot_seeds.append(seed)
            instructions.append(info.instruction)
            draws_of.append(draws)
            if on_tile is not None:
                on_tile(slot + 1, seeds)
    finally:
        backend.close()
    if len(set(zip(draws_of, instructions, strict=True))) > len(set(draws_of)):
        # more wordings than asset draws explain (paraphrases, grid positions): each tile says its own
        labels = [f"{label}: “{text}”" for label, text in zip(labels, instructions, strict=True)]
    name = env.task.name if env.task is not None else task
    title = (f"{name} · robot {env.robot.name} · scene {env.scene_name} · "
             f"variant {env.variant} (split {env.split}) · camera {camera} · master seed {master_seed}, "
             f"slots 0-{seeds - 1}"
             + ("" if axis is None else f" · only the {axis} axis varies (the rest is slot 0's)"))
    rows = [GridRow(frames[i:i + columns], labels[i:i + columns]) for i in range(0, seeds, columns)]
    picture, boxes = draw_grid(title, rows, size)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_png(picture, out)
    placed = [box for row in boxes for box in row]
    tiles = tuple(PreviewTile(slot, seed, label, box)
                  for slot, (seed, label, box) in enumerate(zip(slot_seeds, labels, placed, strict=True)))
    return TaskPreview(out, name, title, camera, tiles)
