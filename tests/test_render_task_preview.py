"""`x2 tasks preview` (x2/render/task_preview.py): the grid is made of the worlds synthesis starts its
attempts from, the same arguments give the same bytes, and a bad camera is refused before anything is written.

Tiles are 96x128, three to four seeds: a few seconds of rendering.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from helpers.x2_cli import run_x2
from PIL import Image

from x2.render.task_preview import task_preview
from x2.sim.camera import ImageSize
from x2.synth.attempt import SynthSession
from x2.synth.options import SessionOptions

SIZE = ImageSize(96, 128)
MASTER_SEED = 7
SEEDS = 4


def _attempt_seed(master_seed: int, slot: int, attempts: int) -> int:
    # x2/synth/runner.py's promise, computed here without x2: attempt i's seed is the i-th child of
    # SeedSequence(master_seed), whatever the number of attempts.
    return int(np.random.SeedSequence(master_seed).spawn(attempts)[slot].generate_state(1, np.uint32)[0])


def test_tiles_are_the_worlds_synth_attempts_start_from(tmp_path: Path) -> None:
    out = tmp_path / "pictures" / "pick_place.png"
    done = run_x2(["tasks", "preview", "pick_place", "--out", str(out), "--seeds", str(SEEDS), "--size", str(SIZE),
                   "--master-seed", str(MASTER_SEED), "--columns", "2"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}: {SEEDS} tiles of pick_place" in done.stdout
    assert sorted(p.name for p in out.parent.iterdir()) == ["pick_place.png"]  # no temp file left beside it

    # The library call the command makes: the same bytes (nothing in the picture depends on the run), and
    # where each tile went.
    again = task_preview("pick_place", tmp_path / "again.png", seeds=SEEDS, master_seed=MASTER_SEED, size=SIZE,
                         columns=2)
    assert again.path.read_bytes() == out.read_bytes()
    picture = np.asarray(Image.open(out).convert("RGB"))
    boxes = [t.box for t in again.tiles]
    # 2 columns x 2 rows, slots in reading order
    assert [(b.x, b.y) for b in boxes] == [(boxes[0].x, boxes[0].y), (boxes[1].x, boxes[0].y),
                                           (boxes[0].x, boxes[2].y), (boxes[1].x, boxes[2].y)]
    assert boxes[1].x >= boxes[0].x + SIZE.width and boxes[2].y >= boxes[0].y + SIZE.height
    assert all((b.width, b.height) == (SIZE.width, SIZE.height) for b in boxes)
    assert all(b.x + b.width <= picture.shape[1] and b.y + b.height <= picture.shape[0] for b in boxes)
    assert picture.shape[1] < 3 * SIZE.width  # two tiles across, not more

    session = SynthSession(SessionOptions("pick_place"))  # synth's own world: the env and backend its attempts run in
    tiles = []
    for k, tile in enumerate(again.tiles):
        seed = _attempt_seed(MASTER_SEED, k, SEEDS)
        assert (tile.slot, tile.seed) == (k, seed)
        assert tile.label == f"#{k} seed {seed}"  # pick_place has one asset per object: nothing drawn to name
        session.backend.reset(seed)
        expected = session.backend.render("head", SIZE.width, SIZE.height)
        b = tile.box
        tiles.append(picture[b.y:b.y + b.height, b.x:b.x + b.width])
        assert np.array_equal(tiles[-1], expected), f"tile {k} is not attempt {k}'s first world"
    # pick_place's layout is random: every seed puts the block and the plate elsewhere
    assert all(not np.array_equal(tiles[i], tiles[j]) for i in range(SEEDS) for j in range(i))


def test_labels_name_the_drawn_assets(tmp_path: Path) -> None:
    preview = task_preview("fruit_in_microwave", tmp_path / "fruit.png", seeds=3, size=SIZE, camera="front")
    session = SynthSession(SessionOptions("fruit_in_microwave"))
    for tile in preview.tiles:
        fruit = session.backend.reset(tile.seed).assets["fruit"]
        # the fruit is drawn from four; the microwave, always the same, goes unnamed
        assert tile.label == f"#{tile.slot} seed {tile.seed}: fruit={fruit}"
    assert "fruit_in_microwave · robot artixon-g · scene kitchen_booth · variant default (split train)" \
        in preview.title


def test_a_bad_camera_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "pictures" / "preview.png"
    done = run_x2(["tasks", "preview", "pick_place", "--out", str(out), "--seeds", "3", "--size", str(SIZE),
                   "--camera", "nope"], cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == \
        ["error: --camera: found 'nope'; allowed: front, head, left_wrist, right_wrist"]
    assert list(tmp_path.iterdir()) == []  # not even the folder
