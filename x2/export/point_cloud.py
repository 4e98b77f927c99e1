"""Fused point clouds for `x2 export zarr --point-cloud N`: the layout 3D Diffusion Policy (DP3) trains from.

Per frame: each chosen camera's depth (drawn from the recorded state, x2/recorded/shots.py) is lifted to points
with its K and extrinsics (`lift`), the cameras' points are joined in the world frame, pixels that see no geom
(segmentation id 0: the depth there is the far clip) are dropped, the rest are cropped to the workspace box
(`Crop`), thinned to the first point of each 1 cm cube (`voxel_firsts`: every kept point is still a pixel's own) and
farthest-point sampled to N (`farthest_points`, deterministic: the start is drawn from `--point-cloud-seed` and the
frame's row in the export). A frame left with fewer than N points repeats them in sampling order to N; a frame left
with none is refused in one line naming the episode and frame.

Row layout: (N, 6) float32 x, y, z in metres (world frame, or with `frame="base"` the robot's base frame:
`base_origin`), r, g, b 0..255 as float (the picture's own values, not
rescaled). DP3's datasets read `data/point_cloud` (T, N, 3 or 6) and, with its default `use_pc_color: false`, take
the first three channels.

The default workspace box is the booth's table top, from the recorded world: x and y the table's extent, z from
2 cm below its top (so the table surface itself is kept: a frame always has points) to 60 cm above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.base.arrays import Floats, Image
from x2.base.errors import ExportError
from x2.datasets import Episode
from x2.envspec.env import BoothSpec, EnvSpec
from x2.recorded.frames import DEFAULT_SIZE
from x2.recorded.shots import CameraShot
from x2.sim.camera import ImageSize

POINT_CLOUD_KEY = "point_cloud"
FRAMES: tuple[str, ...] = ("world", "base")
DEFAULT_POINT_CLOUD_CAMERAS: tuple[str, ...] = ("head",)  # the robot's scene view: the wrists see mostly fingers
_BELOW_TOP, _ABOVE_TOP = 0.02, 0.6  # m: the default box's floor and ceiling about the table top
# m: the cube one surface point stands for before the sampling. 1024 points spread over a ~1 m^2 table top lie ~3 cm
# apart, so thinning at 1 cm moves what FPS picks by less than a cube, while it cuts the points each of its N passes
# scans (a 240x320 head depth sees ~60k pixels in the table-top box) several-fold (bench/bench_point_cloud.py).
VOXEL = 0.01


@dataclass(frozen=True)
class Crop:
    """An axis-aligned box in the world frame: lo (x0, y0, z0) to hi (x1, y1, z1), metres, bounds included."""

    lo: tuple[float, float, float]
    hi: tuple[float, float, float]

    @classmethod
    def parse(cls, text: str, where: str = "--point-cloud-crop") -> Crop:
        allowed = "six numbers x0,y0,z0,x1,y1,z1 (metres, world frame) with x0<x1, y0<y1, z0<z1"
        try:
            v = [float(p) for p in text.split(",")]
        except ValueError:
            raise ExportError(f"{where}: found {text!r}; allowed: {allowed}") from None
        if len(v) != 6 or not all(np.isfinite(v)) or not (v[0] < v[3] and v[1] < v[4] and v[2] < v[5]):
            raise ExportError(f"{where}: found {text!r}; allowed: {allowed}")
        return cls((v[0], v[1], v[2]), (v[3], v[4], v[5]))

    @classmethod
    def table_top(cls, booth: BoothSpec) -> Crop:
        (cx, cy), (hx, hy), top = booth.table_center, booth.table_half_size, booth.table_height
        return cls((cx - hx, cy - hy, top - _BELOW_TOP), (cx + hx, cy + hy, top + _ABOVE_TOP))

    def inside(self, xyz: Floats) -> npt.NDArray[np.bool_]:
        out: npt.NDArray[np.bool_] = np.all((xyz >= np.asarray(self.lo)) & (xyz <= np.asarray(self.hi)), axis=1)
        return out

    def __str__(self) -> str:
        return ",".join(f"{v:g}" for v in (*self.lo, *self.hi))


@dataclass(frozen=True)
class PointCloudOptions:
    points: int  # N
    cameras: tuple[str, ...] = DEFAULT_POINT_CLOUD_CAMERAS
    crop: Crop | None = None  # None: the recorded booth's table top (Crop.table_top)
    size: ImageSize = DEFAULT_SIZE  # the depth is drawn at this size
    seed: int = 0
    frame: str = "world"  # one of FRAMES: the points' frame (the crop is always in the world's)

    def __post_init__(self) -> None:
        if self.frame not in FRAMES:
            raise ExportError(f"--point-cloud-frame: found {self.frame!r}; allowed: {', '.join(FRAMES)}")


def base_origin(ep: Episode, env: EnvSpec) -> Floats:
    """(3,) world position of the robot's base frame: where its robot file is mounted (`base_pos`), lowered by the
    table height the episode's reset drew (the world builder realises that draw by moving the mount), axes the
    world's. A robot on a mobile base is refused: its base moves, and its frame is not built here yet."""
    robot = env.robot
    if robot.base is not None:
        raise ExportError(f"{ep.path}: --point-cloud-frame: found base for robot {robot.name!r}, which drives a mobile "
                          "base; allowed: world")
    drawn = ep.json_attr(fmt.RESET_EMBODIMENT_ATTR)
    height = float(drawn.get("table_height", 0.0)) if isinstance(drawn, dict) else 0.0
    x, y, z = robot.base_pos
    return np.array([x, y, z - height], np.float64)


def lift(depth: Floats, k: Floats, extrinsics: Floats) -> Floats:
    """(H*W, 3) float64 world points of an (H, W) depth along the optical axis, row-major: pixel (u, v) (OpenCV's
    convention, the first pixel's centre at 0, 0) at depth z is K^-1 (u, v, 1) z in the camera's optical frame,
    then moved by the (4, 4) camera-to-world `extrinsics`."""
    h, w = depth.shape
    z = np.asarray(depth, np.float64).ravel()
    v, u = np.divmod(np.arange(h * w, dtype=np.float64), w)
    x = (u - k[0, 2]) / k[0, 0] * z
    y = (v - k[1, 2]) / k[1, 1] * z
    cam = np.stack([x, y, z], axis=1)
    out: Floats = cam @ extrinsics[:3, :3].T + extrinsics[:3, 3]
    return out


def farthest_points(xyz: Floats, n: int, start: int) -> npt.NDArray[np.int64]:
    """Indices of `n` points of `xyz` (M, 3) chosen greedily, each the farthest from those chosen before, from
    `start`; ties go to the lowest index. Fewer than n points: all of them in sampling order, repeated to n."""
    m = len(xyz)
    take = min(n, m)
    chosen = np.empty(take, np.int64)
    nearest = np.full(m, np.inf)
    # one coordinate per contiguous array and every pass in place: the loop is n passes over M points
    axes = [np.ascontiguousarray(xyz[:, a], np.float64) for a in range(3)]
    d, sq = np.empty(m), np.empty(m)
    current = start % m
    for i in range(take):
        chosen[i] = current
        np.subtract(axes[0], axes[0][current], out=d)
        np.multiply(d, d, out=d)
        for axis in axes[1:]:
            np.subtract(axis, axis[current], out=sq)
            np.multiply(sq, sq, out=sq)
            d += sq
        np.minimum(nearest, d, out=nearest)
        current = int(np.argmax(nearest))
    return chosen if take == n else np.resize(chosen, n)


def voxel_firsts(xyz: Floats, voxel: float) -> npt.NDArray[np.int64]:
    """Indices of the first point (in the given order) in each occupied `voxel`-sized cube, ascending: one real
    surface point per cube, so a dense depth is thinned before the sampling without moving any point."""
    cells = np.floor((xyz - xyz.min(axis=0)) / voxel).astype(np.int64)
    span = cells.max(axis=0) + 1
    keys = (cells[:, 0] * span[1] + cells[:, 1]) * span[2] + cells[:, 2]
    firsts: npt.NDArray[np.int64] = np.sort(np.unique(keys, return_index=True)[1]).astype(np.int64)
    return firsts


def frame_points(shots: Sequence[CameraShot]) -> tuple[Floats, Image]:
    """The cameras' points that see a geom, in the world frame, fused: (M, 3) float64 xyz and (M, 3) uint8 rgb."""
    xyz, rgb = [], []
    for s in shots:
        assert s.shot.depth is not None and s.shot.rgb is not None and s.shot.segmentation is not None
        seen = s.shot.segmentation.ravel() != 0
        xyz.append(lift(s.shot.depth, s.k, s.extrinsics)[seen])
        rgb.append(s.shot.rgb.reshape(-1, 3)[seen])
    return np.concatenate(xyz), np.concatenate(rgb)


def sample_frame(xyz: Floats, rgb: Image, crop: Crop, n: int, start_seed: Sequence[int], where: str,
                 origin: Floats | None = None) -> npt.NDArray[np.float32]:
    """(n, 6) float32 xyz + rgb of the cropped, farthest-point sampled cloud; ExportError when the crop leaves none.
    `start_seed` (the export's seed, the frame's row) draws the first point; `origin` (3,), when given, is the world
    position of the frame the points are returned in (axes the world's)."""
    keep = crop.inside(xyz)
    if not keep.any():
        raise ExportError(f"{where}: --point-cloud-crop: found no points inside {crop} (of {len(xyz)} seen); "
                          "allowed: a box that holds part of the scene (x0,y0,z0,x1,y1,z1 in metres, world frame)")
    xyz, rgb = xyz[keep], rgb[keep]
    thin = voxel_firsts(xyz, VOXEL)
    xyz, rgb = xyz[thin], rgb[thin]
    start = int(np.random.default_rng(list(start_seed)).integers(len(xyz)))
    idx = farthest_points(xyz, n, start)
    if origin is not None:
        xyz = xyz - origin
    out: npt.NDArray[np.float32] = np.concatenate([xyz[idx], rgb[idx].astype(np.float64)], axis=1).astype(np.float32)
    return out
