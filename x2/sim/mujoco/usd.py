"""A recorded motion of a MuJoCo world written as one USD stage (docs/usd.md): MuJoCo's own exporter
(`mujoco.usd.exporter.USDExporter`, on usd-core; docs/usd.md says why not through the `mujoco[usd]` extra) writes
the geometry, materials, textures, lights and each visible geom's pose per frame; what it leaves out is written
here into the same stage:

- `/World/Bodies/<name>_id<i>`: every body's world pose (xpos, xquat) in double precision, time-sampled when the
  body moves, one value when it does not; the exporter has geoms only (`/World/Mesh_Xform_<geom>_id<i>_geom`, from
  the float32 poses of MuJoCo's visual scene), and a body without a visible geom has none.
- `/World/Cameras/<camera>`: each camera with its lens (focal length and apertures giving the twin's K at its
  picture size, hence its fovy) and its pose (time-sampled for a camera on a moving body); the exporter writes
  cameras with a fixed focal length and aperture, so a re-render through it would not match x2's frames.

Each frame is drawn from its recorded state, never simulated: the state is set (mjSTATE_INTEGRATION) and
`mj_forward` places bodies, geoms, cameras and lights. Time code i is frame i; the stage's timeCodesPerSecond is
the episode's rate, its metersPerUnit 1 (MuJoCo's metres) and its up axis z.

The exporter's attributes used beyond its constructor and `update_scene`: `stage`, `geom_refs` (their
`last_visible_frame` and `update_visibility`, the visibility `save_scene` settles, done here without its fixed file
name) and `texture_files` (the texture paths its geoms' materials name, made relative to the stage file).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import ExportError
from x2.sim.camera import CameraError, ImageSize, Intrinsics, opencv_matrix, pinhole
from x2.sim.mujoco.lens import camera_matrix, distortion
from x2.sim.mujoco.state import STATE_SPEC, state_size

if TYPE_CHECKING:
    from pxr import Usd

FILE_FORMATS = ("usdc", "usda", "usd")
# USD's default horizontal aperture (a 35 mm film back, in tenths of a scene unit); the focal length and vertical
# aperture follow from K, so only the ratios matter for a pinhole, as in MuJoCo.
HORIZONTAL_APERTURE = 20.955
BODIES, CAMERAS = "/World/Bodies", "/World/Cameras"
_ASSETS = "assets"  # the exporter's folder of texture images, beside the stage file


@dataclass(frozen=True)
class Lens:
    """One camera as the stage describes it: its picture size, K at that size (OpenCV's pixel convention: the
    first pixel's centre is (0, 0)), its field of view, its distortion (not in the stage: USD has no lens model)
    and the body it is fixed to."""

    camera: str
    size: ImageSize
    k: Floats
    fovy_deg: float
    distortion: Floats | None
    body: str


@dataclass(frozen=True)
class BodyPrim:
    """One MuJoCo body's prim: its body id, its MuJoCo name ("" for an unnamed body: names need not be distinct
    then, so bodies are told apart by id and prim path) and its prim path."""

    id: int
    name: str
    path: str


@dataclass(frozen=True)
class StageWritten:
    """What one stage holds: its file, frames, the exporter's geoms, the bodies and cameras added, textures."""

    file: Path
    frames: int
    geoms: int
    bodies: tuple[BodyPrim, ...]  # every body, in body id order
    cameras: dict[str, str]  # camera name -> prim path
    textures: int


def lenses(model: mujoco.MjModel, cameras: Sequence[str], sizes: Mapping[str, ImageSize]) -> dict[str, Lens]:
    """Each of `cameras` at its size in `sizes`: a calibrated camera's K (x2/sim/mujoco/lens.py), else the pinhole
    of its field of view."""
    names = [model.camera(i).name for i in range(model.ncam)]
    missing = [c for c in cameras if c not in names]
    if missing:
        raise CameraError(f"cameras: found {missing}; allowed: the world's cameras {names}")
    out: dict[str, Lens] = {}
    for cam in cameras:
        cid, size = names.index(cam), sizes[cam]
        fovy = float(model.cam_fovy[cid])
        k = camera_matrix(model, cid, size)
        if k is None:  # a field-of-view camera: centred, square pixels, as its stored streams' K says
            k = opencv_matrix(Intrinsics(fovy_deg=fovy, intrinsics=pinhole(fovy, size.height, size.width),
                                         height=size.height, width=size.width))
        out[cam] = Lens(cam, size, k, fovy, distortion(model, cid), str(model.body(int(model.cam_bodyid[cid])).name))
    return out


@dataclass(frozen=True)
class Aperture:
    """A USD camera's lens attributes for a K at a picture size (docs/usd.md gives the formulas)."""

    focal_length: float
    horizontal: float
    vertical: float
    horizontal_offset: float
    vertical_offset: float

    @classmethod
    def of(cls, lens: Lens) -> Aperture:
        w, h = lens.size.width, lens.size.height
        fx, fy = float(lens.k[0, 0]), float(lens.k[1, 1])
        cx, cy = float(lens.k[0, 2]) + 0.5, float(lens.k[1, 2]) + 0.5  # from the first pixel's corner
        focal = fx * HORIZONTAL_APERTURE / w
        vertical = h * focal / fy
        # USD's window is [offset - aperture/2, offset + aperture/2] on the film back (x right, y up); the image's
        # rows run down, so a principal point below the centre is a window shifted up.
        return cls(focal, HORIZONTAL_APERTURE, vertical, (w / 2 - cx) * HORIZONTAL_APERTURE / w,
                   (cy - h / 2) * vertical / h)


def write_stage(model: mujoco.MjModel, states: Floats, fps: float, folder: Path, name: str,
                cameras: Mapping[str, Lens], metadata: Mapping[str, object], file_format: str = "usdc",
                progress: Callable[[int], None] = lambda done: None) -> StageWritten:
    """Write `states` (T, state size) of `model` as `folder/<name>.<file_format>` with the exporter's textures under
    `folder/assets/`; `metadata` goes into the stage's customLayerData under "x2" (module docstring)."""
    from mujoco.usd.exporter import USDExporter  # (imports pxr: only an export pays for it)
    from pxr import UsdGeom

    if file_format not in FILE_FORMATS:
        raise ExportError(f"--format: found {file_format!r}; allowed: {list(FILE_FORMATS)}")
    frames = len(states)
    if states.ndim != 2 or frames < 1 or states.shape[1] != state_size(model):
        raise ExportError(f"states: found {states.shape}; allowed: (T >= 1, {state_size(model)})")
    channels = sorted({int(c) for c in model.tex_nchannel} - {3})
    if channels:  # (the exporter writes each texture as H x W x 3)
        raise ExportError(f"{name}: textures: found ones with {channels} channels; allowed: RGB textures "
                          "(MuJoCo's USD exporter writes 3-channel images only)")
    folder.mkdir(parents=True, exist_ok=True)
    exporter = USDExporter(model, height=1, width=1, output_directory=".", output_directory_root=str(folder),
                           verbose=False)
    shutil.rmtree(os.path.join(exporter.output_directory_path, "frames"), ignore_errors=True)  # (we name the file)
    exporter.texture_files = [f"{_ASSETS}/{Path(p).name}" for p in exporter.texture_files]
    data = mujoco.MjData(model)
    bodies = np.empty((frames, model.nbody, 7))
    cams = {c: mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, c) for c in cameras}
    views = np.empty((len(cams), frames, 4, 4))
    for t, state in enumerate(states):
        mujoco.mj_setState(model, data, np.asarray(state, np.float64), STATE_SPEC)
        mujoco.mj_forward(model, data)
        exporter.update_scene(data)  # time code t: the exporter counts its updates from 0
        bodies[t, :, :3], bodies[t, :, 3:] = data.xpos, data.xquat
        for j, cid in enumerate(cams.values()):
            views[j, t] = _matrix(data.cam_xpos[cid], data.cam_xmat[cid].reshape(3, 3))
        if t % 30 == 29 or t == frames - 1:
            progress(t + 1)
    stage = exporter.stage
    for ref in exporter.geom_refs.values():  # hidden after its last visible frame (what save_scene does)
        if ref.last_visible_frame + 1 < frames:
            ref.update_visibility(False, ref.last_visible_frame + 1)
    stage.SetStartTimeCode(0)
    stage.SetEndTimeCode(frames - 1)
    stage.SetTimeCodesPerSecond(fps)
    stage.SetFramesPerSecond(fps)
    UsdGeom.SetStageMetersPerUnit(stage, UsdGeom.LinearUnits.meters)
    body_prims = _write_bodies(stage, model, bodies)
    camera_prims = _write_cameras(stage, model, cameras, views)
    layer = stage.GetRootLayer()
    layer.customLayerData = {"x2": {"metadata": json.dumps(metadata, sort_keys=True),
                                    "bodies": BODIES, "cameras": CAMERAS}}
    file = folder / f"{name}.{file_format}"
    if not layer.Export(str(file)):
        raise ExportError(f"{file}: USD: found the layer not written; allowed: a written stage")
    assets = folder / _ASSETS
    if assets.is_dir() and not any(assets.iterdir()):
        assets.rmdir()
    return StageWritten(file, frames, len(exporter.geom_refs), body_prims, camera_prims, int(model.ntex))


def _matrix(pos: Floats, rot: Floats) -> Floats:
    """The 4x4 pose in USD's row-vector layout (the transpose of the column form)."""
    m = np.eye(4)
    m[:3, :3], m[3, :3] = rot.T, pos
    return m


def _write_bodies(stage: Usd.Stage, model: mujoco.MjModel, poses: Floats) -> tuple[BodyPrim, ...]:
    """Every body's world pose under BODIES, flat (each prim's local frame is the world's); the id in each prim
    name keeps unnamed (or, across kinds, equally named) bodies apart."""
    from pxr import Gf, UsdGeom

    UsdGeom.Scope.Define(stage, BODIES)
    out: list[BodyPrim] = []
    for b in range(model.nbody):
        name = str(model.body(b).name)
        path = f"{BODIES}/{prim_name(name or 'body')}_id{b}"
        xform = UsdGeom.Xform.Define(stage, path)
        xform.GetPrim().SetCustomDataByKey("mujoco_body", name)
        translate = xform.AddTranslateOp(UsdGeom.XformOp.PrecisionDouble)
        orient = xform.AddOrientOp(UsdGeom.XformOp.PrecisionDouble)
        for at, row in _samples(poses[:, b]):
            translate.Set(Gf.Vec3d(*(float(v) for v in row[:3])), at)
            orient.Set(Gf.Quatd(float(row[3]), Gf.Vec3d(*(float(v) for v in row[4:7]))), at)
        out.append(BodyPrim(b, name, path))
    return tuple(out)


def _write_cameras(stage: Usd.Stage, model: mujoco.MjModel, cameras: Mapping[str, Lens],
                   views: Floats) -> dict[str, str]:
    """Each camera under CAMERAS with its lens (`Aperture`) and its pose (MuJoCo's camera axes are USD's: looking
    along -z, y up)."""
    from pxr import Gf, UsdGeom

    UsdGeom.Scope.Define(stage, CAMERAS)
    out: dict[str, str] = {}
    near, far = model.vis.map.znear * model.stat.extent, model.vis.map.zfar * model.stat.extent
    for j, (cam, lens) in enumerate(cameras.items()):
        path = f"{CAMERAS}/{prim_name(cam)}"
        usd_cam = UsdGeom.Camera.Define(stage, path)
        usd_cam.GetPrim().SetCustomDataByKey("x2_camera", cam)
        ap = Aperture.of(lens)
        usd_cam.CreateProjectionAttr().Set(UsdGeom.Tokens.perspective)
        usd_cam.CreateFocalLengthAttr().Set(ap.focal_length)
        usd_cam.CreateHorizontalApertureAttr().Set(ap.horizontal)
        usd_cam.CreateVerticalApertureAttr().Set(ap.vertical)
        usd_cam.CreateHorizontalApertureOffsetAttr().Set(ap.horizontal_offset)
        usd_cam.CreateVerticalApertureOffsetAttr().Set(ap.vertical_offset)
        usd_cam.CreateClippingRangeAttr().Set(Gf.Vec2f(float(near), float(far)))
        op = usd_cam.AddTransformOp(UsdGeom.XformOp.PrecisionDouble)
        for at, view in _samples(views[j]):
            op.Set(Gf.Matrix4d(view.tolist()), at)
        out[cam] = path
    return out


def _samples(track: Floats) -> list[tuple[Usd.TimeCode, Floats]]:
    """One value per frame of a track that changes; one default value (no time samples) of one that does not."""
    from pxr import Usd

    if np.all(track == track[0]):
        return [(Usd.TimeCode.Default(), track[0])]
    return [(Usd.TimeCode(t), row) for t, row in enumerate(track)]


def prim_name(name: str) -> str:
    """`name` as a USD prim name (what the exporter does to its geoms' names)."""
    from pxr import Tf

    return str(Tf.MakeValidIdentifier(name))


def read_back(written: StageWritten, model: mujoco.MjModel, states: Floats) -> None:
    """Open the written stage with usd-core and check its time range and prims, and that its bodies stand where
    MuJoCo puts them at the first and last recorded states."""
    from pxr import Usd, UsdGeom

    where = f"{written.file}: read back"
    stage = Usd.Stage.Open(str(written.file))
    if stage is None:
        raise ExportError(f"{where}: found a file usd-core does not open; allowed: a USD stage")
    last = written.frames - 1
    if (stage.GetStartTimeCode(), stage.GetEndTimeCode()) != (0, last):
        raise ExportError(f"{where}: time codes: found {stage.GetStartTimeCode()}..{stage.GetEndTimeCode()}; "
                          f"allowed: 0..{last}")
    geoms = [p for p in stage.GetPrimAtPath("/World").GetChildren() if p.GetName().startswith("Mesh_Xform_")]
    paths = [*(body.path for body in written.bodies), *written.cameras.values()]
    missing = [p for p in paths if not stage.GetPrimAtPath(p).IsValid()]
    if len(geoms) != written.geoms or missing:
        raise ExportError(f"{where}: prims: found {len(geoms)} geoms, {missing[:3]} missing; allowed: "
                          f"{written.geoms} geoms and every body and camera")
    data = mujoco.MjData(model)
    cache = UsdGeom.XformCache()
    for t in dict.fromkeys((0, last)):
        mujoco.mj_setState(model, data, np.asarray(states[t], np.float64), STATE_SPEC)
        mujoco.mj_kinematics(model, data)
        cache.SetTime(Usd.TimeCode(t))
        for b, path in ((body.id, body.path) for body in written.bodies):
            pos = np.array(cache.GetLocalToWorldTransform(stage.GetPrimAtPath(path)).ExtractTranslation())
            if not np.allclose(pos, data.xpos[b], rtol=0.0, atol=1e-9):
                raise ExportError(f"{where}: {path} at time code {t}: found {pos.round(6).tolist()}; allowed: "
                                  f"{data.xpos[b].round(6).tolist()} (MuJoCo's xpos)")
