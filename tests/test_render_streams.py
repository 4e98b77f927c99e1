"""`x2 render --streams rgb,depth,segmentation`: the stored depth is MuJoCo's own depth render of the recorded state,
the stored segmentation ids are MuJoCo's segmentation render named through the stored table, the stored intrinsics
and extrinsics put a known body where the segmentation shows it, rgb alone writes no other stream, and bad requests
are refused in one line with nothing written; and the contact sheet's depth and segmentation rows
(x2/render/sheet.py, x2/sim/stream_colours.py) colour MuJoCo's own depth and things.

One short real recording (tests/helpers/real_dataset.py), 3 frames at 48x64.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import h5py
import hdf5plugin  # noqa: F401  (the Zstd filter the streams are stored with)
import mujoco
import numpy as np
import pytest
from helpers.real_dataset import record_short_dataset
from helpers.x2_cli import run_x2

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets import Episode
from x2.recorded.world import open_world
from x2.render import contact_sheet, render_dataset
from x2.render.grid import Box
from x2.render.sheet import sheet_moments, sheet_picture
from x2.sim.camera import ImageSize
from x2.sim.mujoco.state import STATE_SPEC
from x2.sim.stream_colours import BACKGROUND_COLOUR, DEPTH_STOPS, depth_colours, segment_colour
from x2.sim.streams import ROBOT, SCENERY

SIZE = ImageSize(48, 64)
CAMERAS = ("head", "left_wrist")
ALL = ("rgb", "depth", "segmentation")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("streams") / "short"
    record_short_dataset(root, episodes=1, ticks=3)
    return root


@pytest.fixture(scope="module")
def rendered(pristine: Path) -> Path:
    root = pristine.parent / "rendered"
    shutil.copytree(pristine, root)
    summary = render_dataset(root, CAMERAS, SIZE, streams=ALL)
    assert [e.drawn for e in summary.episodes] == [CAMERAS]
    return root


def _episode(root: Path) -> Path:
    return next((root / "episodes").glob("*.h5"))


def _mujoco_views(ep: Episode, cam: str) -> list[tuple[np.ndarray, np.ndarray, mujoco.MjModel, mujoco.MjData]]:
    """Per frame: MuJoCo's own depth and segmentation renders of the stored state (mujoco.Renderer, as its
    documentation shows), with the model and data they were drawn from."""
    out = []
    with open_world(ep) as world:
        model = world.backend.model
        states = ep.dataset(fmt.STATES)[:]
        with mujoco.Renderer(model, SIZE.height, SIZE.width) as r:
            for state in states:
                data = mujoco.MjData(model)
                mujoco.mj_setState(model, data, state, STATE_SPEC)
                mujoco.mj_forward(model, data)
                r.update_scene(data, camera=cam)
                r.enable_depth_rendering()
                depth = r.render()
                r.enable_segmentation_rendering()
                seg = r.render()
                r.disable_segmentation_rendering()
                out.append((depth, seg, model, data))
    return out


def _thing_of_body(model: mujoco.MjModel, body: int) -> str:
    """What the table should call a body, restated from docs/format.md: an object's parts are the object, a jointed
    top-level body's parts are robot links by their own names, other top-level bodies are scenery by theirs."""
    root = int(model.body_rootid[body])
    name = model.body(root).name
    if root == 0:
        return "world"
    if name.endswith("/object"):
        return name.removesuffix("/object")
    jointed = any(int(model.body_rootid[int(b)]) == root for b in model.jnt_bodyid)
    return str(model.body(body).name) if jointed else str(name)


def test_depth_is_mujocos_depth_render_within_a_millimetre(rendered: Path) -> None:
    with Episode(_episode(rendered)) as ep:
        for cam in CAMERAS:
            stored = ep.dataset(fmt.depth_path(cam))
            assert stored.dtype == np.float32 and stored.shape == (ep.frames, SIZE.height, SIZE.width)
            assert stored.attrs["unit"] == "m"
            for t, (depth, _, _, _) in enumerate(_mujoco_views(ep, cam)):
                assert np.abs(stored[t] - depth).max() <= 1e-3, (cam, t)
                assert 0.01 < float(stored[t].min()) < float(stored[t].max()) < 10.0  # a scene, not a blank


def test_segmentation_is_mujocos_segmentation_named_by_the_stored_table(rendered: Path) -> None:
    with Episode(_episode(rendered)) as ep:
        for cam in CAMERAS:
            stored = ep.dataset(fmt.segmentation_path(cam))
            names = [str(n) for n in stored.attrs[fmt.NAMES_ATTR]]
            kinds = [str(k) for k in stored.attrs[fmt.SEGMENT_KINDS_ATTR]]
            assert names[0] == "background" and {"robot", "object", "scenery"} <= set(kinds)
            assert "fruit" in names and "microwave" in names and "world" in names
            seen: set[str] = set()
            for t, (_, seg, model, _) in enumerate(_mujoco_views(ep, cam)):
                ids = stored[t]
                expected = np.full(ids.shape, "background", dtype=object)
                geoms = seg[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM)
                for g in np.unique(seg[..., 0][geoms]):
                    expected[geoms & (seg[..., 0] == g)] = _thing_of_body(model, int(model.geom_bodyid[g]))
                got = np.array(names, dtype=object)[ids]
                assert (got == expected).all(), (cam, t, set(got[got != expected]), set(expected[got != expected]))
                seen |= set(got.ravel())
            assert len(seen) >= 3  # the test saw things, not one colour


def _object_geoms(model: mujoco.MjModel, thing: str) -> list[int]:
    root = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, f"{thing}/object")
    return [g for g in range(model.ngeom) if model.body_rootid[model.geom_bodyid[g]] == root]


def test_intrinsics_and_extrinsics_put_a_body_where_the_segmentation_shows_it(rendered: Path) -> None:
    """Forward: the fruit's centre, through the stored extrinsics and K, lands on the fruit's pixels. Backward: every
    pixel the segmentation calls the fruit, lifted by its depth through K and the extrinsics, lies within the
    bounding sphere of one of the fruit's geoms (MuJoCo's geom_rbound)."""
    with Episode(_episode(rendered)) as ep:
        checked = 0
        for cam in CAMERAS:
            seg, depth = ep.dataset(fmt.segmentation_path(cam)), ep.dataset(fmt.depth_path(cam))
            k = np.asarray(seg.attrs["K"], np.float64)
            assert np.array_equal(k, depth.attrs["K"]) and seg.attrs["pixel_origin"] == "centre"
            extrinsics = ep.dataset(fmt.camera_extrinsics_path(cam))[:]
            assert extrinsics.shape == (ep.frames, 4, 4)
            names = [str(n) for n in seg.attrs[fmt.NAMES_ATTR]]
            for t, (_, _, model, data) in enumerate(_mujoco_views(ep, cam)):
                geoms = _object_geoms(model, "fruit")
                rows, cols = np.nonzero(seg[t] == names.index("fruit"))
                if rows.size < 4:
                    continue
                centre = data.xpos[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "fruit/object")]
                local = np.linalg.inv(extrinsics[t]) @ np.append(centre, 1.0)
                assert local[2] > 0  # in front of the camera
                u, v = (k @ (local[:3] / local[2]))[:2]
                assert np.min(np.hypot(cols - u, rows - v)) <= 1.0, (cam, t, (u, v))
                z = depth[t][rows, cols].astype(np.float64)
                lifted = np.stack([(cols - k[0, 2]) / k[0, 0] * z, (rows - k[1, 2]) / k[1, 1] * z, z, np.ones_like(z)])
                points = (extrinsics[t] @ lifted)[:3].T
                gaps = np.min([np.linalg.norm(points - data.geom_xpos[g], axis=1) - model.geom_rbound[g]
                               for g in geoms], axis=0)
                assert gaps.max() <= 2e-3, (cam, t, gaps.max())
                checked += 1
        assert checked >= 2


def test_rgb_of_all_streams_is_the_rgb_alone(rendered: Path, pristine: Path, tmp_path: Path) -> None:
    alone = tmp_path / "alone"
    shutil.copytree(pristine, alone)
    render_dataset(alone, CAMERAS, SIZE)
    with h5py.File(_episode(alone), "r") as f:  # rgb alone (the default) writes what x2 render always wrote
        assert fmt.DEPTH not in f and fmt.SEGMENTATION not in f and fmt.CAMERA_EXTRINSICS not in f
    with Episode(_episode(alone)) as a, Episode(_episode(rendered)) as b:
        for cam in CAMERAS:
            assert np.array_equal(a.dataset(fmt.image_path(cam))[:], b.dataset(fmt.image_path(cam))[:])
            assert np.array_equal(a.dataset(fmt.camera_pose_path(cam))[:], b.dataset(fmt.camera_pose_path(cam))[:])
    assert render_dataset(rendered, CAMERAS, SIZE, streams=ALL).rendered == []  # done: a rerun draws nothing


def test_bad_stream_or_camera_is_one_line_and_writes_nothing(pristine: Path, tmp_path: Path) -> None:
    root = tmp_path / "bad"
    shutil.copytree(pristine, root)
    before = {p.name: p.read_bytes() for p in (root / "episodes").glob("*.h5")}
    out = run_x2(["render", str(root), "--size", str(SIZE), "--streams", "rgb,heat"], cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.strip().count("\n") == 0 and out.stderr.startswith(
        "error: --streams: found 'rgb,heat'; allowed: distinct names of rgb, depth, segmentation"), out.stderr
    # (the same refusal as tests/test_render.py's through the CLI: a camera the robot lacks, before any pixel)
    with pytest.raises(DatasetError, match=r"^--cameras: found \['nose'\]; allowed: the world's cameras \["):
        render_dataset(root, ("head", "nose"), SIZE, streams=("depth",))
    with pytest.raises(DatasetError, match=r"^--streams: found \['heat'\]; allowed: distinct names of rgb, depth"):
        render_dataset(root, CAMERAS, SIZE, streams=("heat",))
    assert {p.name: p.read_bytes() for p in (root / "episodes").glob("*.h5")} == before
    assert not (root / ".rendering").exists() or not list((root / ".rendering").iterdir())


def _tile(picture: object, box: Box) -> np.ndarray:
    return np.asarray(picture).astype(np.int64)[box.y:box.y + box.height, box.x:box.x + box.width]


def test_contact_sheet_depth_follows_the_depth_and_segmentation_tells_robot_from_table(pristine: Path) -> None:
    """The head camera's rows on the sheet: depth coloured by its place between the stated nearest and farthest
    seen depth (MuJoCo's own depth render, to whole centimetres), nearer pixels at the near end of the colormap;
    segmentation one colour per thing, the robot's links in the robot's colours and the table in the world's."""
    with Episode(_episode(pristine)) as ep:
        picture, boxes = sheet_picture(ep, ("head",), SIZE, ALL)
        moments = [f for f, _ in sheet_moments(ep)]
        views = _mujoco_views(ep, "head")
    assert [len(row) for row in boxes] == [len(moments)] * 3 and len(moments) >= 2  # rgb, depth, segmentation
    seen_depth = np.concatenate([views[t][0][views[t][1][..., 0] >= 0] for t in moments])
    near, far = np.floor(seen_depth.min() * 100) / 100, np.ceil(seen_depth.max() * 100) / 100
    lut = depth_colours(np.linspace(0.0, 1.0, 1001)).astype(np.int64)
    world_colour = segment_colour(SCENERY, "world")
    robot_pixels = table_pixels = 0
    for col, t in enumerate(moments):
        depth, seg, model, _ = views[t]
        seen = seg[..., 0] >= 0
        tile = _tile(picture, boxes[1][col])
        assert (tile[~seen] == BACKGROUND_COLOUR).all()
        place = np.argmin(((tile[seen][:, None, :] - lut[None]) ** 2).sum(-1), axis=1) / 1000
        assert np.abs(place - (depth[seen] - near) / (far - near)).max() < 0.02, col
        nearest = tile[seen][np.argmin(depth[seen])]
        assert np.abs(nearest - DEPTH_STOPS[0]).sum() < np.abs(nearest - DEPTH_STOPS[-1]).sum()
        tile = _tile(picture, boxes[2][col])
        geoms = seg[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM)
        things = np.full(seg.shape[:2], "", dtype=object)
        for g in np.unique(seg[..., 0][geoms]):
            things[geoms & (seg[..., 0] == g)] = _thing_of_body(model, int(model.geom_bodyid[g]))
        links = {str(model.body(b).name) for b in range(1, model.nbody)
                 if int(model.body_rootid[b]) in {int(model.body_rootid[int(j)]) for j in model.jnt_bodyid}
                 and not model.body(int(model.body_rootid[b])).name.endswith("/object")}
        for thing in set(things[geoms]):
            colours = {tuple(c) for c in tile[things == thing]}
            assert len(colours) == 1, thing  # one thing, one colour
            if thing in links:
                assert colours == {segment_colour(ROBOT, thing)} and world_colour not in colours
                robot_pixels += int((things == thing).sum())
        table = things == "world"
        assert {tuple(c) for c in tile[table]} == {world_colour}
        table_pixels += int(table.sum())
    assert robot_pixels > 0 and table_pixels > 0  # both in view: the test compared something


def test_contact_sheet_of_rgb_alone_is_the_sheet_without_streams(pristine: Path, tmp_path: Path) -> None:
    out = run_x2(["render", str(pristine), "--contact-sheet", str(tmp_path / "rgb.png"), "--cameras", "head",
                  "--size", str(SIZE), "--streams", "rgb"], cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    with Episode(_episode(pristine)) as ep:  # the sheet as it was before --streams: no streams asked for
        contact_sheet(ep, ("head",), SIZE, tmp_path / "plain.png")
    assert (tmp_path / "rgb.png").read_bytes() == (tmp_path / "plain.png").read_bytes()
