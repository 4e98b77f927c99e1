"""`x2 augment replay --preview`: a source and an augmented episode at the same recorded frame, and the top view.

The left two panels are the same state drawn in the parent's world and in the augmented one's; the right one
is the envelope's footprint on the table (all of it, and the part that comes within LOW_LAYER of the
tabletop, where every distractor stands)
with the placed distractors and the static obstacles, so one picture shows both what changed and why
nothing the robot touches did.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from x2 import format as fmt
from x2.augment.records import AugmentationConfig
from x2.base.arrays import Bools, Floats
from x2.datasets import Episode
from x2.envspec.scene import load_asset
from x2.files.atomic import replacing
from x2.recorded.frames import frames_at
from x2.recorded.world import recorded_env
from x2.sim.camera import ImageSize

LOW_LAYER = 0.03  # m above the support: every distractor fills this slab, so this footprint is off limits
CELL = 0.004  # m per footprint pixel


def _footprint(capsules: Floats, lo: Floats, hi: Floats, top: float | None) -> Bools:
    """Cells of the xy box [lo, hi] within reach of a capsule (only the parts below `top`, if given)."""
    nx, ny = (np.ceil((hi - lo) / CELL)).astype(int)
    xs, ys = lo[0] + CELL * (np.arange(nx) + 0.5), lo[1] + CELL * (np.arange(ny) + 0.5)
    mask = np.zeros((ny, nx), bool)
    for x0, y0, z0, x1, y1, z1, r in capsules:
        if top is not None and min(z0, z1) - r > top:
            continue
        i0, i1 = np.searchsorted(xs, [min(x0, x1) - r, max(x0, x1) + r])
        j0, j1 = np.searchsorted(ys, [min(y0, y1) - r, max(y0, y1) + r])
        if i0 >= i1 or j0 >= j1:
            continue
        gx, gy = np.meshgrid(xs[i0:i1], ys[j0:j1])
        dx, dy = x1 - x0, y1 - y0
        length2 = dx * dx + dy * dy
        t = np.clip(((gx - x0) * dx + (gy - y0) * dy) / length2, 0, 1) if length2 > 0 else 0.0
        mask[j0:j1, i0:i1] |= np.hypot(gx - (x0 + t * dx), gy - (y0 + t * dy)) <= r
    return mask


def _closest_frame(config: AugmentationConfig, frames: int) -> int:
    closest = (config.get("check") or {}).get("closest")
    return int(closest[0]) if closest else frames // 2


def draw_preview(parent: Episode, child: Episode, out: str | Path, camera: str = "head",
                 size: ImageSize = ImageSize(240, 320), frame: int | None = None) -> Path:
    # (imported here: matplotlib is ~0.3 s of imports, and every `x2` command imports this module with its CLI)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle, Rectangle

    out = Path(out)
    config: AugmentationConfig = child.json_attr(fmt.AUGMENTATION_ATTR, {})  # as augment._commit wrote it
    t = _closest_frame(config, child.frames) if frame is None else frame
    (before,) = frames_at(parent, [camera], [t], size)
    (after,) = frames_at(child, [camera], [t], size)
    capsules = np.asarray(child[fmt.ENVELOPE], np.float64)  # stored float64 (Envelope.as_array): the same array
    support = config.get("support", {})
    z = float(support.get("z", 0.75))
    booth = recorded_env(parent).booth
    (cx, cy), (hx, hy) = booth.table_center, booth.table_half_size
    lo, hi = np.array([cx - hx, cy - hy]), np.array([cx + hx, cy + hy])

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), gridspec_kw={"width_ratios": [1, 1, 1.05]})
    axes[0].imshow(before[camera])
    axes[0].set_title(f"source: episode {parent.index}, frame {t}", fontsize=10)
    scenery = (config.get("scenery") or {}).get("name", "?")
    axes[1].imshow(after[camera])
    # (the title's old word is drawn into the picture: changing it would change the PNG's bytes)
    axes[1].set_title(f"variant '{scenery}': episode {child.index}, frame {t}", fontsize=10)
    for ax in axes[:2]:
        ax.set_axis_off()
    ax = axes[2]
    # Top view with the robot at the bottom: x (away from the robot) up, y (robot's left) to the left.
    whole, low = _footprint(capsules, lo, hi, None), _footprint(capsules, lo, hi, z + LOW_LAYER)
    shade = np.zeros((*whole.shape, 4))
    shade[whole] = (0.55, 0.65, 0.9, 0.35)
    shade[low] = (0.15, 0.3, 0.8, 0.75)
    ax.imshow(np.transpose(shade, (1, 0, 2))[::-1, ::-1], extent=(hi[1], lo[1], lo[0], hi[0]), origin="upper")
    ax.add_patch(Rectangle((lo[1], lo[0]), 2 * hy, 2 * hx, fill=False, edgecolor="0.3"))
    for placed in (config.get("distractors") or {}).get("placed", []):
        x, y = placed["pose"][0], placed["pose"][1]
        r = load_asset(placed["asset"]).footprint_radius
        ax.add_patch(Circle((y, x), r, facecolor=(0.95, 0.55, 0.1, 0.8), edgecolor="k", lw=0.8))
        ax.text(y, x, placed["asset"], ha="center", va="center", fontsize=7)
    ax.set_xlim(hi[1], lo[1])
    ax.set_ylim(lo[0] - 0.05, hi[0])
    ax.set_aspect("equal")
    ax.set_xlabel("y (m, robot's left <- )")
    ax.set_ylabel("x (m, away from the robot)")
    env = config.get("envelope") or {}
    ax.set_title(f"envelope footprint: {env.get('capsules', '?')} capsules (from {env.get('capsules_before', '?')}); "
                 f"dark: within {LOW_LAYER * 100:.0f} cm of the table", fontsize=9)
    check = config.get("check") or {}
    dist = check.get("min_distance_m")
    fig.suptitle(f"{parent.task}: same states, new static layer · closest approach "
                 f"{'n/a' if dist is None else f'{dist * 1000:.1f} mm'} (clearance "
                 f"{check.get('clearance_m', math.nan) * 1000:.0f} mm)", fontsize=11)
    fig.tight_layout()
    with replacing(out) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    plt.close(fig)
    return out
