"""Pictures of a world, whatever simulator draws them: image sizes, camera lists, the pinhole model, and the
`StateRenderer` protocol a backend's renderer meets (`Backend.renderer`, docs/backends.md). Nothing here imports a
simulator; MuJoCo's renderer is x2/sim/mujoco/renderer.py."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import NotRequired, Protocol, TypedDict

import numpy as np

from x2.base.arrays import Floats, Image
from x2.base.errors import DatasetError
from x2.sim.streams import SegmentTable, Shot


@dataclass(frozen=True)
class ImageSize:
    height: int
    width: int

    @classmethod
    def parse(cls, text: str, where: str = "--size") -> ImageSize:
        """``"96x128"`` (height x width) -> ImageSize; anything else is a one-line error."""
        try:
            h, w = (int(x) for x in text.lower().split("x"))
        except ValueError:
            raise DatasetError(f"{where}: found {text!r}; allowed: HxW, e.g. 480x640") from None
        if not (16 <= h <= 2160 and 16 <= w <= 3840):
            raise DatasetError(f"{where}: found {text!r}; allowed: 16..2160 x 16..3840 pixels")
        return cls(h, w)

    def __str__(self) -> str:
        return f"{self.height}x{self.width}"


_CAMERA_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


def parse_cameras(text: str | None, where: str = "--cameras") -> tuple[str, ...] | None:
    """``"head,left_wrist"`` -> ("head", "left_wrist"); None -> None (the command's default applies).
    Every command that takes a camera list parses it here."""
    if text is None:
        return None
    names = tuple(n.strip() for n in text.split(","))
    if not names or any(not _CAMERA_NAME.match(n) for n in names) or len(set(names)) != len(names):
        raise DatasetError(f"{where}: found {text!r}; allowed: distinct camera names separated by commas, "
                           "e.g. head,left_wrist")
    return names


# The engines that draw a camera's picture (x2/sim/mujoco/renderer.py): MuJoCo's classic OpenGL renderer, or
# MuJoCo 4's Filament. Chosen per process by the environment variable, so that the render pass's worker
# processes draw with the engine their parent was asked for.
RENDERERS = ("classic", "filament")
RENDERER_ENV = "X2_RENDERER"


def chosen_renderer() -> str:
    """The engine this process draws with: $X2_RENDERER, default classic."""
    name = os.environ.get(RENDERER_ENV) or "classic"
    if name not in RENDERERS:
        raise DatasetError(f"{RENDERER_ENV}: found {name!r}; allowed: one of {', '.join(RENDERERS)}")
    return name


def choose_renderer(name: str, option: str = "--renderer") -> None:
    """Draw with the engine `name` in this process and the workers it starts (checked: one of RENDERERS)."""
    if name not in RENDERERS:
        raise DatasetError(f"{option}: found {name!r}; allowed: one of {', '.join(RENDERERS)}")
    os.environ[RENDERER_ENV] = name


class CameraError(DatasetError):
    """A camera the world does not have, or a picture larger than its renderer draws. (A DatasetError: most
    renderers draw recorded worlds, whose cameras a command's options are checked against.)"""


@dataclass(frozen=True)
class WorldCameras:
    """Every camera of a world (booth's and robot's, in the world's order) and the largest picture its renderer
    draws (MuJoCo: the model's offscreen buffer): what a command checks its camera and size options against."""

    names: tuple[str, ...]
    largest: ImageSize

    def missing(self, cameras: Sequence[str]) -> list[str]:
        return [c for c in cameras if c not in self.names]

    def fits(self, size: ImageSize) -> bool:
        return size.height <= self.largest.height and size.width <= self.largest.width

    def refuse_unless_drawn(self, cameras: Sequence[str], size: ImageSize, note: str = "") -> None:
        """A one-line CameraError unless every one of `cameras` is this world's and `size` fits its renderer; `note`
        (e.g. the episode file) closes the line."""
        missing = self.missing(cameras)
        tail = f" ({note})" if note else ""
        if missing:
            raise CameraError(f"--cameras: found {missing}; allowed: the world's cameras {list(self.names)}{tail}")
        if not self.fits(size):
            raise CameraError(f"--size: found {size}; allowed: up to {self.largest} (the model's offscreen "
                              f"buffer{', ' + note if note else ''})")


@dataclass(frozen=True)
class StreamRequest:
    """The camera streams a collector draws into each episode it saves (`x2 collect ... --streams`): x2.sim.streams'
    names, the cameras, the size; drawn as `x2 render --streams` draws them afterwards."""

    streams: tuple[str, ...]
    cameras: tuple[str, ...]
    size: ImageSize


class Intrinsics(TypedDict):
    """A camera's pinhole at one picture size, as stored with its image stream (attrs in this order)."""

    fovy_deg: float  # vertical field of view
    # 3x3 K at this size: a calibrated camera's own (x2 calibrate camera: OpenCV's pixel convention, the first
    # pixel's centre at 0, 0), else square pixels with the principal point at the image centre (`pinhole`)
    intrinsics: Floats
    height: int
    width: int
    distortion: NotRequired[Floats]  # (8,) OpenCV's k1 k2 p1 p2 k3 k4 k5 k6, only for a calibrated lens that has it
    # "centre" for a calibrated K (OpenCV's convention, said outright so that a calibration that happens to equal
    # the centred pinhole is not mistaken for one); absent for a field-of-view pinhole, whose stored bytes it keeps
    pixel_origin: NotRequired[str]


CENTRE = "centre"  # K's pixel convention: (0, 0) is the first pixel's centre (OpenCV's, ROS's)


def pinhole(fovy_deg: float, height: int, width: int) -> Floats:
    """The 3x3 intrinsic matrix of a picture `height` x `width` taken with vertical field of view `fovy_deg`."""
    f = 0.5 * height / np.tan(np.deg2rad(fovy_deg) / 2)
    return np.array([[f, 0.0, width / 2], [0.0, f, height / 2], [0.0, 0.0, 1.0]])


def scaled_k(k: Floats, stored: ImageSize, to: ImageSize) -> Floats:
    """K (OpenCV's pixel convention) of a picture stretched per axis from `stored` to `to` (pixel centres move with
    the stretch: the first pixel's corner stays put)."""
    sx, sy = to.width / stored.width, to.height / stored.height
    return np.array([[k[0, 0] * sx, 0.0, (k[0, 2] + 0.5) * sx - 0.5],
                     [0.0, k[1, 1] * sy, (k[1, 2] + 0.5) * sy - 0.5], [0.0, 0.0, 1.0]])


OPTICAL = np.diag([1.0, -1.0, -1.0])  # the renderer's camera axes (looking along -z, y up) -> OpenCV's optical frame


def opencv_matrix(intrinsics: Intrinsics) -> Floats:
    """The stored K of `intrinsics` in OpenCV's pixel convention (the first pixel's centre at 0, 0): a calibrated
    camera's already is; a field-of-view camera's (`pinhole`, the corner convention) is moved half a pixel."""
    k = np.array(intrinsics["intrinsics"], np.float64)
    if intrinsics.get("pixel_origin") == CENTRE:
        return k
    # no convention stored: a field-of-view pinhole, or a calibrated stream rendered before x2 stored it (whose K,
    # unless it is exactly the centred pinhole, tells the two apart)
    if np.allclose(k, pinhole(float(intrinsics["fovy_deg"]), int(intrinsics["height"]), int(intrinsics["width"]))):
        k[:2, 2] -= 0.5
    return k


def optical_to_world(position: Floats, rotation: Floats) -> Floats:
    """4x4 camera-to-world transform of the OpenCV optical frame (x right, y down, z forward) of a camera at
    `position` (3,) whose renderer axes are the columns of `rotation` (3, 3) (`StateRenderer.camera_frame`)."""
    t = np.eye(4)
    t[:3, :3] = np.asarray(rotation, np.float64) @ OPTICAL
    t[:3, 3] = position
    return t


@dataclass(frozen=True)
class FreeCamera:
    """A viewpoint that is not one of the world's cameras: looking at `lookat` from `distance` m away, turned
    `azimuth` degrees about the vertical and tilted `elevation` degrees (negative: from above)."""

    lookat: Floats  # (3,) world
    distance: float
    azimuth: float
    elevation: float


@dataclass(frozen=True)
class Viewpoint:
    """Where a free camera's picture was taken from (OpenGL axes), to project world points onto it."""

    pos: Floats  # (3,)
    forward: Floats  # (3,) unit
    up: Floats  # (3,) unit
    fovy_deg: float


class StateRenderer(Protocol):
    """Pictures of one world's states at one size. `set_state` places the world at a stored state with kinematics
    only (nothing is stepped, the backend's own state is untouched); `render` then draws one of `cameras`.
    `Backend.renderer(cameras, size)` makes one; the render pass, the readers of recorded episodes, the teleop
    preview, the robot's portrait and `x2 doctor` draw through it."""

    @property
    def cameras(self) -> tuple[str, ...]: ...
    @property
    def size(self) -> ImageSize: ...
    @property
    def state_size(self) -> int: ...  # the length of the states `set_state` takes (`Backend.state_size`)
    @property
    def description(self) -> str: ...  # what draws the pictures and its version, stored with each image stream

    def set_state(self, state: Floats) -> None: ...
    def render(self, camera: str) -> Image: ...  # (H, W, 3) uint8 of the state last set, a fresh array
    # the camera's streams of the state last set (x2/sim/streams.py: rgb as `render` gives it, depth in metres,
    # segmentation ids of `segment_table`), in one pass where the simulator can
    def shot(self, camera: str, streams: tuple[str, ...]) -> Shot: ...
    @property
    def segment_table(self) -> SegmentTable: ...
    def render_free(self, view: FreeCamera) -> tuple[Image, Viewpoint]: ...
    def frame(self, state: Floats) -> dict[str, Image]: ...  # set_state, then every camera
    def frames(self, states: Floats) -> Iterator[dict[str, Image]]: ...
    # (7,) world pose of the camera at the state last set: position, quaternion w x y z (OpenGL camera axes:
    # looking along -z, y up)
    def camera_pose(self, camera: str) -> Floats: ...
    def camera_frame(self, camera: str) -> tuple[Floats, Floats]: ...  # position (3,), rotation (3, 3) columns = axes
    def intrinsics(self, camera: str) -> Intrinsics: ...
    def camera_body(self, camera: str) -> str: ...  # the body the camera is fixed to (`world` for a booth camera)
    def close(self) -> None: ...
    def __enter__(self) -> StateRenderer: ...
    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...
