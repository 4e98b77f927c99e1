"""Procedural surface images for a look: wood grain, concrete and woven fabric, made with numpy.

A look that gives a surface one of IMAGE_TEXTURES (x2/envspec/schema.py: wood, concrete, fabric) draws it
with an image instead of one of MuJoCo's builtin patterns (checker, gradient). The image is a pattern in
0..1, the same for every look of that kind (each kind has its own fixed seed), mixed between the look's two
colours: `surface_png(kind, rgb, rgb2)` is a pure function of its arguments, so the same look gives the same
PNG bytes, the same digest name (x2/sim/mujoco/textures.py) and the same world text, on every run.

The patterns tile: every noise is drawn on a periodic grid and the wood's rings and the fabric's threads
count whole periods across the image, so a surface repeated across a face shows no seams.

Generated here, nothing downloaded: no licence beyond x2's own applies to them (docs/looks.md).
"""

from __future__ import annotations

import functools
import io

import numpy as np
import numpy.typing as npt
from PIL import Image

from x2.base.errors import X2Error
from x2.envspec.schema import IMAGE_TEXTURES

SIDE = 256  # px: sharp at the cameras' sizes, about 30-110 kB of PNG a surface
_SEEDS = dict(zip(IMAGE_TEXTURES, (4101, 4102, 4103), strict=True))  # one fixed pattern per kind

Field = npt.NDArray[np.float64]


def _periodic_noise(rng: np.random.Generator, cells: tuple[int, int], side: int = SIDE) -> Field:
    """Smooth value noise on a periodic `cells` grid (rows, columns), bilinear, `side` x `side`, in 0..1."""
    grid = rng.random(cells)
    ys = np.arange(side) * cells[0] / side
    xs = np.arange(side) * cells[1] / side
    y0, x0 = np.floor(ys).astype(int), np.floor(xs).astype(int)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    fy, fx = fy * fy * (3 - 2 * fy), fx * fx * (3 - 2 * fx)  # smoothstep: no creases at the cells' edges
    y1, x1 = (y0 + 1) % cells[0], (x0 + 1) % cells[1]
    a, b = grid[y0][:, x0], grid[y0][:, x1]
    c, d = grid[y1][:, x0], grid[y1][:, x1]
    out: Field = (a * (1 - fx) + b * fx) * (1 - fy) + (c * (1 - fx) + d * fx) * fy
    return out


def _octaves(rng: np.random.Generator, base: tuple[int, int], count: int) -> Field:
    total, weight, norm = np.zeros((SIDE, SIDE)), 1.0, 0.0
    for i in range(count):
        total += weight * _periodic_noise(rng, (base[0] << i, base[1] << i))
        norm += weight
        weight *= 0.5
    out: Field = total / norm
    return out


def _wood(rng: np.random.Generator) -> Field:
    """Rings across the rows, bent by low noise, with fine streaks along the grain (columns)."""
    y = np.arange(SIDE)[:, None] / SIDE
    warp = _octaves(rng, (2, 2), 3)
    rings = 0.5 + 0.5 * np.sin(2 * np.pi * (6 * y + 1.5 * warp))  # 6 whole rings: tiles
    rings = rings ** 3  # thin dark late-wood lines, wide light early wood
    streaks = _periodic_noise(rng, (64, 4))
    out: Field = 1.0 - 0.55 * rings - 0.25 * streaks
    return out


def _concrete(rng: np.random.Generator) -> Field:
    """Cloudy grey with speckles and a few small dark pores."""
    clouds = _octaves(rng, (4, 4), 5)
    speckle = rng.random((SIDE, SIDE))
    pores = (rng.random((SIDE, SIDE)) < 0.004).astype(np.float64)
    out: Field = 0.35 + 0.55 * clouds + 0.15 * (speckle - 0.5) - 0.5 * pores
    return out


def _fabric(rng: np.random.Generator) -> Field:
    """A plain weave: warp and weft threads over and under each other, with slubs."""
    threads = 32  # per side: whole periods, so the weave tiles
    u = np.arange(SIDE) * threads / SIDE
    warp = 0.5 + 0.5 * np.cos(2 * np.pi * u)[None, :]  # bright at a thread's crest
    weft = 0.5 + 0.5 * np.cos(2 * np.pi * u)[:, None]
    over = ((np.floor(u)[:, None] + np.floor(u)[None, :]) % 2).astype(np.float64)  # who is on top
    weave = over * warp + (1 - over) * weft
    slubs = _periodic_noise(rng, (4, 32))
    out: Field = 0.45 + 0.45 * weave + 0.15 * (slubs - 0.5)
    return out


_PATTERNS = {"wood": _wood, "concrete": _concrete, "fabric": _fabric}


@functools.lru_cache(maxsize=len(IMAGE_TEXTURES))
def pattern(kind: str) -> Field:
    """The kind's pattern, (SIDE, SIDE) in 0..1: 1 shows the look's colour, 0 its second colour."""
    if kind not in _PATTERNS:
        raise X2Error(f"texture: found {kind!r}; allowed: one of {', '.join(IMAGE_TEXTURES)}")
    field = _PATTERNS[kind](np.random.default_rng(_SEEDS[kind]))
    out: Field = np.clip(field, 0.0, 1.0)
    out.setflags(write=False)  # cached: shared by every caller
    return out


@functools.lru_cache(maxsize=64)
def surface_png(kind: str, rgb: tuple[float, float, float], rgb2: tuple[float, float, float]) -> bytes:
    """The RGB PNG of the kind's pattern between `rgb2` (0) and `rgb` (1), colours in 0..1."""
    p = pattern(kind)[..., None]
    colour = np.asarray(rgb2) + (np.asarray(rgb) - np.asarray(rgb2)) * p
    pixels = np.round(np.clip(colour, 0.0, 1.0) * 255).astype(np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(out, format="PNG")  # PIL writes no timestamp: same pixels, same bytes
    return out.getvalue()
