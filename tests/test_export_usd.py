"""`x2 export usd`: the stage usd-core opens, its bodies where MuJoCo puts them at sampled frames (from x2's body
prims and from MuJoCo's exporter's geom prims), its cameras' lenses the twin's, the metadata beside it, and the
inputs it refuses in one line with nothing written.

Data: one real 20-frame scripted pick_place episode of the Franka Panda (the smallest world whose exporter pass takes
a fraction of a second: meshes and boxes, no capsules, whose tessellation in MuJoCo's exporter takes seconds), and
one `real` recording written by the dataset's own writer. MuJoCo's poses are computed here from the episode's stored
MJCF and states with MuJoCo alone, not through x2's world builder.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import mujoco
import numpy as np
import pytest
from helpers.real_dataset import record_short_dataset
from pxr import Usd, UsdGeom
from typer.testing import CliRunner

from x2 import format as fmt
from x2.cli.app import _mount
from x2.cli.app import app as x2_app
from x2.datasets import Dataset

_mount()  # the root command, as `x2` builds it

FRAMES = 20
SAMPLED = 10
TOLERANCE_M = 1e-6


def _export(args: list[str], cwd: Path):
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)
        return CliRunner().invoke(x2_app, ["export", "usd", *args])


def _refused(done, *words: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.exit_code == 2 and len(lines) == 1, (done.stdout, done.stderr, done.exception)
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def franka(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("usd") / "franka"
    record_short_dataset(path, episodes=1, ticks=FRAMES, task="pick_place", robot="franka-panda")
    return path


@pytest.fixture(scope="module")
def exported(franka: Path) -> dict[str, object]:
    target = franka.parent / "franka-usd"
    done = _export([str(franka / fmt.EPISODES_DIR / fmt.episode_filename(0)), "--out", str(target)], franka.parent)
    assert done.exit_code == 0, (done.output, done.exception)
    return {"target": target, "stdout": done.stdout}


@pytest.fixture(scope="module")
def truth(franka: Path) -> dict[str, object]:
    """MuJoCo's own answer: the episode's stored MJCF compiled, each stored state set, mj_kinematics and
    mj_camlight (bodies and cameras)."""
    with Dataset.open(franka).load(0) as ep:
        model = mujoco.MjModel.from_xml_string(ep.model_xml, ep.textures)
        states = np.asarray(ep[fmt.STATES], np.float64)
    data = mujoco.MjData(model)
    frames = sorted({int(round(t)) for t in np.linspace(0, len(states) - 1, SAMPLED)})
    xpos, xmat, cams = {}, {}, {}
    for t in frames:
        mujoco.mj_setState(model, data, states[t], mujoco.mjtState.mjSTATE_INTEGRATION)
        mujoco.mj_kinematics(model, data)
        mujoco.mj_camlight(model, data)
        xpos[t], xmat[t] = data.xpos.copy(), data.xmat.reshape(-1, 3, 3).copy()
        cams[t] = (data.cam_xpos.copy(), data.cam_xmat.reshape(-1, 3, 3).copy())
    return {"model": model, "frames": frames, "xpos": xpos, "xmat": xmat, "cams": cams, "states": states}


def _stage(exported: dict[str, object]) -> Usd.Stage:
    stage = Usd.Stage.Open(str(Path(str(exported["target"])) / "episode_000000" / "episode_000000.usdc"))
    assert stage is not None
    return stage


def _world(cache: UsdGeom.XformCache, prim: Usd.Prim) -> np.ndarray:
    return np.array(cache.GetLocalToWorldTransform(prim)).T  # USD's row-vector matrix, as a column form


def test_usd_core_opens_the_stage_at_the_episodes_rate(exported: dict[str, object]) -> None:
    stage = _stage(exported)
    assert stage.GetTimeCodesPerSecond() == 30.0 and stage.GetFramesPerSecond() == 30.0
    assert (stage.GetStartTimeCode(), stage.GetEndTimeCode()) == (0, FRAMES - 1)
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0 and UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    meta = json.loads(stage.GetRootLayer().customLayerData["x2"]["metadata"])
    target = Path(str(exported["target"]))
    sidecar = json.loads((target / "episode_000000" / "episode_000000.json").read_text())
    assert {k: v for k, v in sidecar.items() if k not in ("stage", "prims")} == meta
    assert meta["robot"] == "franka-panda" and meta["task"] == "pick_place" and meta["frames"] == FRAMES
    assert meta["seed"] == Dataset.open(target.parent / "franka").episodes()[0].seed and meta["success"] is False
    assert meta["labels"]["subtasks"] == ["pick", "place", "retract"] and meta["instruction"]
    provenance = json.loads((target / "x2_usd.json").read_text())
    assert provenance["stages"] == ["episode_000000/episode_000000.usdc"]
    assert "1 episodes (episodes 0), 20 frames" in str(exported["stdout"])


def test_every_body_stands_where_mujoco_puts_it(exported: dict[str, object], truth: dict[str, object]) -> None:
    """Every body's prim (x2's, double precision) and, for every body with a visible geom, the body pose recovered
    from MuJoCo's exporter's geom prim (its world transform times the inverse of the geom's fixed offset in its body:
    geom_pos, geom_quat), against MuJoCo's xpos/xmat for the recorded state, at 10 sampled frames."""
    stage, model = _stage(exported), truth["model"]
    assert isinstance(model, mujoco.MjModel)
    bodies = {str(p.GetCustomDataByKey("mujoco_body")): p for p in stage.GetPrimAtPath("/World/Bodies").GetChildren()}
    assert sorted(bodies) == sorted(model.body(b).name for b in range(model.nbody))
    geoms = {int(p.GetName().rsplit("_id", 1)[1].removesuffix("_geom")): p
             for p in stage.GetPrimAtPath("/World").GetChildren()
             if p.GetName().startswith("Mesh_Xform_") and p.GetName().endswith("_geom")}  # (not a site's)
    via_geom = {int(model.geom_bodyid[g]): g for g in sorted(geoms, reverse=True)}  # (one geom per body)
    assert len(via_geom) >= 12  # the arm's links, the fingers, the walls, the block and the plate
    moved = 0
    cache = UsdGeom.XformCache()
    for t in truth["frames"]:
        cache.SetTime(Usd.TimeCode(t))
        xpos, xmat = truth["xpos"][t], truth["xmat"][t]
        for name, prim in bodies.items():
            b = model.body(name).id
            m = _world(cache, prim)
            assert np.abs(m[:3, 3] - xpos[b]).max() <= TOLERANCE_M, (name, t)
            assert np.abs(m[:3, :3] - xmat[b]).max() <= 1e-9, (name, t)
        for b, g in via_geom.items():
            m = _world(cache, geoms[g])
            local = np.empty(9)
            mujoco.mju_quat2Mat(local, model.geom_quat[g])
            body_rot = m[:3, :3] @ local.reshape(3, 3).T
            body_pos = m[:3, 3] - body_rot @ model.geom_pos[g]
            assert np.abs(body_pos - xpos[b]).max() <= TOLERANCE_M, (model.body(b).name, t)
        moved += int(np.abs(xpos[model.body("right_link7").id] - truth["xpos"][0][model.body("right_link7").id]).max()
                     > 1e-3)
    assert moved >= 5  # the arm really moves between the sampled frames


def test_cameras_carry_the_twins_lens_and_the_wrist_camera_moves(exported: dict[str, object],
                                                                   truth: dict[str, object]) -> None:
    stage, model = _stage(exported), truth["model"]
    assert isinstance(model, mujoco.MjModel)
    prims = {str(p.GetCustomDataByKey("x2_camera")): p for p in stage.GetPrimAtPath("/World/Cameras").GetChildren()}
    assert sorted(prims) == sorted(model.camera(i).name for i in range(model.ncam))
    cache = UsdGeom.XformCache()
    moving = set()
    for name, prim in prims.items():
        cam, cid = UsdGeom.Camera(prim), model.camera(name).id
        focal, vertical = cam.GetFocalLengthAttr().Get(), cam.GetVerticalApertureAttr().Get()
        fovy = math.degrees(2 * math.atan(vertical / 2 / focal))
        assert fovy == pytest.approx(float(model.cam_fovy[cid]), abs=1e-4), name
        assert cam.GetHorizontalApertureAttr().Get() / vertical == pytest.approx(320 / 240, rel=1e-6)
        assert cam.GetHorizontalApertureOffsetAttr().Get() == 0 and cam.GetVerticalApertureOffsetAttr().Get() == 0
        for t in truth["frames"]:
            cache.SetTime(Usd.TimeCode(t))
            m = _world(cache, prim)
            pos, rot = truth["cams"][t]
            assert np.abs(m[:3, 3] - pos[cid]).max() <= TOLERANCE_M and np.abs(m[:3, :3] - rot[cid]).max() <= 1e-9
        first = truth["cams"][0][0][cid]
        if any(np.any(truth["cams"][t][0][cid] != first) for t in truth["frames"]):
            moving.add(name)
        samples = len(UsdGeom.Xformable(prim).GetOrderedXformOps()[0].GetTimeSamples())
        assert samples == (FRAMES if name in moving else 0), name  # a camera that stays: one value, no samples
    assert moving == {"right_wrist"}


def test_a_real_recording_is_refused_with_nothing_written(tmp_path: Path) -> None:
    names = ["j0", "j1"]
    manifest = fmt.Manifest(robot="aloha", task="real_rec", fps=30, joint_names=names, action_names=names,
                            cameras=[], world={}, versions={"x2": "test"})
    with Dataset.create(tmp_path / "real", manifest) as ds, \
            ds.begin_episode(fmt.EpisodeStart(source=fmt.REAL_SOURCE, seed=5, fps=30)) as writer:
        for t in range(3):
            writer.append(fmt.Tick(timestamp=t / 30, action=np.zeros(2, np.float32), state=None,
                                   qpos=np.zeros(2, np.float32)))
        writer.finish({}, {}, success=False)
    done = _export(["real", "--out", "out-usd"], tmp_path)
    _refused(done, "episode 0", "found source 'real'", "--source")
    assert not (tmp_path / "out-usd").exists() and not list(tmp_path.glob(".out-usd*"))


def test_unknown_episode_and_unwritable_or_existing_target_are_one_line(franka: Path, exported: dict[str, object],
                                                                         tmp_path: Path) -> None:
    episode = str(franka / fmt.EPISODES_DIR / fmt.episode_filename(0))
    _refused(_export([str(franka / fmt.EPISODES_DIR / fmt.episode_filename(7)), "--out", "x"], tmp_path),
             "episode_000007.h5", "found no episode 7")
    _refused(_export([str(franka), "--episodes", "7", "--out", "x"], tmp_path), "--episodes: found 7")
    (tmp_path / "a_file").write_text("in the way")
    _refused(_export([episode, "--out", str(tmp_path / "a_file" / "usd")], tmp_path), "a_file")
    target = Path(str(exported["target"]))
    before = sorted(p.name for p in target.rglob("*"))
    _refused(_export([episode, "--out", str(target)], tmp_path), "found an existing folder")
    _refused(_export([episode, "--out", "x", "--cameras", "nope"], tmp_path), "cameras: found ['nope']")
    assert sorted(p.name for p in target.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".x2") == ["a_file"]  # (.x2: the last dataset)


def test_overwrite_gives_the_same_bytes(franka: Path, tmp_path: Path) -> None:
    episode = str(franka / fmt.EPISODES_DIR / fmt.episode_filename(0))
    target = tmp_path / "again-usd"
    stage = target / "episode_000000" / "episode_000000.usdc"
    assert _export([episode, "--out", str(target), "--format", "usdc"], tmp_path).exit_code == 0
    first = (stage.read_bytes(), stage.with_suffix(".json").read_bytes())
    done = _export([episode, "--out", str(target), "--overwrite"], tmp_path)
    assert done.exit_code == 0, (done.output, done.exception)
    assert (stage.read_bytes(), stage.with_suffix(".json").read_bytes()) == first
    assert not [p for p in tmp_path.iterdir() if ".partial-" in p.name or ".old-" in p.name]
