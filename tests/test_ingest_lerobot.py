"""`x2 import lerobot`: a LeRobot v3.0 recording written by LeRobot's own writer (tests/helpers/lerobot_recordings.py)
read into an x2 dataset of source `real`: values through the robot's unit table, timestamps as recorded, gaps
reported, cameras decoded, the commands that need a world refused in one line, a mismatching recording refused
with nothing written, and a kill -9 in the middle losing nothing finished."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers.dataset_contents import deterministic_contents
from helpers.lerobot_recordings import write_lerobot_recording
from helpers.x2_cli import HEADLESS_ENV, run_x2

from x2 import format as fmt
from x2.augment.augment import augment_dataset
from x2.base.errors import DatasetError
from x2.datasets import Dataset, validate
from x2.datasets.manage import Filter, filter_dataset, merge
from x2.datasets.select import Selection
from x2.envspec.robot import load_robot
from x2.export.hdf5 import Hdf5Options, export_hdf5
from x2.export.lerobot import export_lerobot
from x2.export.request import ExportRequest
from x2.export.zarr import ZarrOptions, export_zarr
from x2.ingest import import_lerobot
from x2.recorded.relabel import relabel
from x2.recorded.replay import penetrations
from x2.render.dataset import render_dataset
from x2.view.recording import plan_cameras, record_rerun

ALOHA = load_robot("aloha").recording
assert ALOHA is not None
NAMES = ALOHA.names
FPS = 10


@pytest.fixture(autouse=True, scope="module")
def hf_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory):
    """LeRobot's table loads copy arrow files into HF's cache: keep it out of ~/.cache."""
    import datasets.config

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path_factory.mktemp("hf-cache"))
        yield


def _joints(rng: np.random.Generator, frames: int) -> np.ndarray:
    rows = rng.uniform(-1.5, 1.5, (frames, len(NAMES))).astype(np.float32)
    for i, name in enumerate(NAMES):
        if name.endswith("_gripper"):
            rows[:, i] = rng.uniform(0.0, 1.0, frames).astype(np.float32)
    return rows


def _picture(frames: int, shift: int) -> np.ndarray:
    """Smooth frames a video codec keeps nearly as they are."""
    y, x = np.mgrid[0:24, 0:32]
    out = np.empty((frames, 24, 32, 3), np.uint8)
    for t in range(frames):
        out[t, ..., 0] = (x * 8 + t * 4 + shift) % 256
        out[t, ..., 1] = (y * 10) % 256
        out[t, ..., 2] = 128
    return out


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """`cams`: 2 episodes of 20 frames with a 24x32 camera; `plain`: 3 episodes of 12 frames without cameras, the
    second with a 3-period gap before frame 5, the third with one jittered step."""
    rng = np.random.default_rng(7)
    root = tmp_path_factory.mktemp("recordings")
    cam_actions = [_joints(rng, 20) for _ in range(2)]
    cam_states = [_joints(rng, 20) for _ in range(2)]
    images = [{"head": _picture(20, 0)}, {"head": _picture(20, 50)}]
    cams = write_lerobot_recording(root / "cams", NAMES, cam_actions, cam_states, FPS, images=images,
                                   tasks=["pick up the red cube", "put it in the bin"])
    actions = [_joints(rng, 12) for _ in range(3)]
    states = [_joints(rng, 12) for _ in range(3)]
    gap = np.arange(12) / FPS
    gap[5:] += 3 / FPS
    jitter = np.arange(12) / FPS
    jitter[7] += 0.004
    plain = write_lerobot_recording(root / "plain", NAMES, actions, states, FPS, tasks="stack the cups",
                                    timestamps=[None, gap, jitter])
    return {"cams": cams, "plain": plain, "cam_actions": cam_actions, "cam_states": cam_states, "images": images,
            "actions": actions, "states": states, "gap": gap, "jitter": jitter}


@pytest.fixture(scope="module")
def imported(recordings: dict[str, object], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imported") / "real_cams"
    result = import_lerobot(Path(str(recordings["cams"])), "aloha", out)
    assert [e.source_index for e in result.imported] == [0, 1] and result.cameras == ("head",)
    return out


def test_values_timestamps_and_frames_round_trip(imported: Path, recordings: dict[str, object]) -> None:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    back = LeRobotDataset("test/cams", root=Path(str(recordings["cams"])), video_backend="pyav", return_uint8=True)
    ds = Dataset.open(imported)
    assert ds.manifest.action_names == NAMES and ds.manifest.joint_names == NAMES and ds.manifest.world == {}
    for e, record in enumerate(ds.episodes()):
        assert record.source == fmt.REAL_SOURCE
        with ds.load(record.index) as ep, h5py.File(ep.path) as f:
            assert f.attrs[fmt.SOURCE_ATTR] == "real"
            for absent in (fmt.MODEL_XML_ATTR, fmt.WORLD_ATTR):
                assert absent not in f.attrs
            for absent in (fmt.STATES, fmt.LABELS, fmt.DAG):
                assert absent not in f
            # radians and ALOHA's 0..1 gripper are x2's units already: the float32 values come through untouched
            action, qpos = f[fmt.ACTION][()], f[fmt.QPOS][()]
            assert action.dtype == np.float32 and qpos.dtype == np.float32
            assert np.array_equal(action, np.asarray(recordings["cam_actions"])[e])  # type: ignore[index]
            assert np.array_equal(qpos, np.asarray(recordings["cam_states"])[e])  # type: ignore[index]
            assert [str(n, "utf-8") if isinstance(n, bytes) else n for n in f[fmt.ACTION].attrs["names"]] == \
                list(NAMES) == [str(n, "utf-8") if isinstance(n, bytes) else n for n in f[fmt.QPOS].attrs["names"]]
            meta = back.meta.episodes[e]
            start, stop = int(meta["dataset_from_index"]), int(meta["dataset_to_index"])
            stamps = back.hf_dataset.with_format("numpy")[start:stop]["timestamp"]
            assert f[fmt.TIMESTAMPS].dtype == np.float64
            assert np.array_equal(f[fmt.TIMESTAMPS][()], stamps.astype(np.float64))
            frames = f[fmt.image_path("head")]
            assert frames.shape == (20, 24, 32, 3) and frames.dtype == np.uint8
            assert frames.attrs["intrinsics_known"] == np.False_
            for t in (0, 19):  # what LeRobot's own reader decodes, frame for frame
                assert np.array_equal(frames[t], back[start + t]["observation.images.head"].permute(1, 2, 0).numpy())
            assert ep.instruction == ["pick up the red cube", "put it in the bin"][e]
            recording = json.loads(f.attrs[fmt.RECORDING_ATTR])
            assert recording["episode_index"] == e and recording["path"] == str(Path(str(recordings["cams"])))
            assert recording["timing"]["gap_count"] == 0 and recording["cameras"]["head"]["intrinsics"] is None
            assert [c["name"] for c in recording["table"]["columns"]] == list(NAMES)
            assert not list(ep.problems())


def test_gaps_and_irregular_steps_are_reported_not_filled(recordings: dict[str, object], tmp_path: Path) -> None:
    result = import_lerobot(Path(str(recordings["plain"])), "aloha", tmp_path / "plain")
    regular, gap, jitter = result.imported
    assert not regular.timing.gaps and regular.timing.irregular == 0
    assert [f for f, _ in gap.timing.gaps] == [5] and gap.timing.missing_frames == 3 and gap.timing.irregular == 0
    assert math.isclose(gap.timing.gaps[0][1], 4 / FPS, rel_tol=1e-5)
    assert not jitter.timing.gaps and jitter.timing.irregular == 2  # the step into frame 7 and the one out of it
    ds = Dataset.open(tmp_path / "plain")
    with ds.load(1) as ep:
        assert ep.frames == 12  # nothing invented: 12 frames in, 12 out
        stamps = ep[fmt.TIMESTAMPS]
        assert np.array_equal(stamps, np.asarray(recordings["gap"], np.float32).astype(np.float64))
        assert ep.json_attr(fmt.RECORDING_ATTR)["timing"]["gaps"] == [[5, gap.timing.gaps[0][1]]]


def test_commands_that_need_a_world_refuse_in_one_line(imported: Path, tmp_path: Path) -> None:
    done = run_x2(["replay", "0", "-d", str(imported)], cwd=imported.parent)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, (done.stdout, done.stderr)
    assert "episode 0" in lines[0] and "a real recording without a world" in lines[0], lines
    ds = Dataset.open(imported)
    refusals = {  # what x2 label, x2 render, x2 augment replay and x2 datasets validate --physics call
        "label": lambda: relabel(ds.load(1)),
        "render": lambda: render_dataset(imported),
        "augment replay": lambda: augment_dataset(imported, tmp_path / "augmented"),
        "validate --physics": lambda: next(penetrations(ds, ds.episodes())),
    }
    for what, call in refusals.items():
        with pytest.raises(DatasetError, match=r"episode [01], a real recording without a world\)") as err:
            call()
        assert "\n" not in str(err.value), what
    assert not (tmp_path / "augmented").exists()


def test_a_recording_that_does_not_match_the_robot_is_refused(tmp_path: Path) -> None:
    wrong = write_lerobot_recording(tmp_path / "wrong", [*NAMES[:-1], "right_claw"], [np.zeros((3, 14))],
                                    [np.zeros((3, 14))], FPS)
    short = write_lerobot_recording(tmp_path / "short", NAMES[:13], [np.zeros((3, 13))], [np.zeros((3, 13))], FPS)
    done = run_x2(["import", "lerobot", str(wrong), "--robot", "aloha", "--dataset", str(tmp_path / "out")],
                  cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: {wrong}/meta/info.json: features.action.names: found 14 values named [")
    assert "'right_claw'" in lines[0] and "allowed: the 14 columns of robot aloha's lerobot table" in lines[0]
    with pytest.raises(DatasetError, match=r"/short/meta/info.json: features.action.names: found 13 values named "):
        import_lerobot(short, "aloha", tmp_path / "out")
    assert not (tmp_path / "out").exists()


_KILLED_IMPORT = """
import os, signal, sys
from pathlib import Path
from x2.datasets.writer import EpisodeWriter
from x2.ingest import import_lerobot
from x2.recorded.relabel import relabel
from x2.recorded.replay import penetrations
from x2.render.dataset import render_dataset
from x2.view.recording import plan_cameras, record_rerun

original = EpisodeWriter.append
def append(self, tick):  # the kill lands in the middle of the second episode
    if self.index == 1 and self.frames == 6:
        os.kill(os.getpid(), signal.SIGKILL)
    original(self, tick)
EpisodeWriter.append = append
import_lerobot(Path(sys.argv[1]), "aloha", Path(sys.argv[2]))
"""


def test_a_killed_import_loses_nothing_finished_and_resumes(recordings: dict[str, object], tmp_path: Path) -> None:
    source = Path(str(recordings["plain"]))
    done = subprocess.run([sys.executable, "-c", _KILLED_IMPORT, str(source), str(tmp_path / "killed")],
                          env=HEADLESS_ENV, capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    killed = Dataset.open(tmp_path / "killed")
    assert [r.index for r in killed.episodes()] == [0]  # the finished episode is there, the one in progress is not
    assert list((tmp_path / "killed" / fmt.INPROGRESS_DIR).iterdir())
    again = import_lerobot(source, "aloha", tmp_path / "killed")
    assert again.skipped == [0] and [e.index for e in again.imported] == [1, 2]
    assert not list((tmp_path / "killed" / fmt.INPROGRESS_DIR).iterdir())
    import_lerobot(source, "aloha", tmp_path / "clean")
    assert deterministic_contents(tmp_path / "killed") == deterministic_contents(tmp_path / "clean")


def test_an_export_of_velocities_a_recording_lacks_is_refused_in_one_line(imported: Path, tmp_path: Path) -> None:
    """A recording stores measured joints but no velocities: `--velocity-state` cannot fill observation.state."""
    done = run_x2(["export", "lerobot", str(imported), "--velocity-state", "--out", str(tmp_path / "out")],
                  cwd=imported.parent)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, (done.stdout, done.stderr)
    assert "observations/qvel: found missing" in lines[0] and "--velocity-state" in lines[0], lines
    assert not (tmp_path / "out").exists() and not any(tmp_path.iterdir())


def test_exports_carry_state_action_and_stored_frames(imported: Path, tmp_path: Path) -> None:
    """zarr and HDF5 without the simulator state a recording lacks, a rerun recording (x2 datasets view); LeRobot
    without labels, and read in again by `x2 import lerobot` it gives back the same values, timestamps and
    instruction."""
    ds = Dataset.open(imported)
    records = tuple(ds.episodes())
    export_zarr(ExportRequest(ds, records, tmp_path / "real.zarr"), ZarrOptions())
    export_hdf5(ExportRequest(ds, records, tmp_path / "real.hdf5"), Hdf5Options())
    export_lerobot(ExportRequest(ds, records, tmp_path / "real-lerobot"))
    with h5py.File(tmp_path / "real.hdf5") as f:
        demo = f["data/demo_000000"]
        assert "states" not in demo and demo["obs/head_image"].shape == (20, 24, 32, 3)
        assert np.array_equal(demo["actions"][()], ds.load(0)[fmt.ACTION])
    with ds.load(1) as ep:  # x2 datasets view: the recording's cameras, joints and timeline in a .rrd
        summary = record_rerun(ep, dataset=ds.name, plan=plan_cameras(ep), path=tmp_path / "ep1.rrd")
    assert (tmp_path / "ep1.rrd").stat().st_size > 0 and summary
    info = json.loads((tmp_path / "real-lerobot" / "meta" / "info.json").read_text())
    assert "subtask_index" not in info["features"] and "language_persistent" not in info["features"]
    again = import_lerobot(tmp_path / "real-lerobot", "aloha", tmp_path / "again")
    assert [e.timing.summary() for e in again.imported] == ["regular", "regular"]
    for e in range(2):
        with Dataset.open(imported).load(e) as first, Dataset.open(tmp_path / "again").load(e) as second:
            for path in (fmt.ACTION, fmt.QPOS, fmt.TIMESTAMPS):
                assert np.array_equal(first[path], second[path]), path
            assert second.instruction == first.instruction
            assert second[fmt.image_path("head")].shape == first[fmt.image_path("head")].shape


_SERVO_TABLE = """
include: {aloha}
name: aloha-servos
lerobot:
  source: a lab's servo layout (this test)
  columns:
    - {{name: left_waist.pos, to: left_waist, unit: deg}}
    - {{name: left_shoulder.pos, to: left_shoulder, unit: deg, sign: -1}}
    - {{name: left_elbow.pos, to: left_elbow, unit: ticks, ticks_per_turn: 4096, zero: 2048}}
    - {{name: left_forearm_roll.pos, to: left_forearm_roll, unit: ticks, ticks_per_turn: 4096, zero: 2048, sign: -1,
       offset: 0.5}}
    - {{name: left_wrist_angle.pos, to: left_wrist_angle, offset: -0.25}}
    - {{name: left_gripper.pos, to: left_gripper, unit: range, range: [10.0, 90.0]}}
    - {{name: left_wrist_rotate.pos, to: left_wrist_rotate}}
    - {{name: right_waist.pos, to: right_waist}}
    - {{name: right_shoulder.pos, to: right_shoulder}}
    - {{name: right_elbow.pos, to: right_elbow}}
    - {{name: right_forearm_roll.pos, to: right_forearm_roll}}
    - {{name: right_wrist_angle.pos, to: right_wrist_angle}}
    - {{name: right_wrist_rotate.pos, to: right_wrist_rotate}}
    - {{name: right_gripper.pos, to: right_gripper, unit: range, range: [100.0, 0.0]}}
"""


def test_degrees_ticks_signs_and_gripper_ranges_map_onto_x2_units(tmp_path: Path) -> None:
    """Another column order and other units: each value lands in its x2 slot, converted as docs/robots.md says
    (float64, then float32: within one float32 step of the formula)."""
    robot = tmp_path / "aloha-servos.yaml"
    robot.write_text(_SERVO_TABLE.format(aloha=Path(fmt.__file__).parents[1] / "robots" / "aloha.yaml"))
    names = [f"{n}.pos" for n in ("left_waist", "left_shoulder", "left_elbow", "left_forearm_roll",
                                   "left_wrist_angle", "left_gripper", "left_wrist_rotate", *NAMES[7:])]
    rng = np.random.default_rng(3)
    rows = rng.uniform(-90, 90, (6, 14)).astype(np.float32)
    rows[:, 2:4] = rng.integers(0, 4096, (6, 2)).astype(np.float32)
    rows[:, 5], rows[:, 13] = rng.uniform(10, 90, 6), rng.uniform(0, 100, 6)
    source = write_lerobot_recording(tmp_path / "servos", names, [rows], [rows + 1], FPS, robot_type="lab")
    import_lerobot(source, str(robot), tmp_path / "out")
    with Dataset.open(tmp_path / "out").load(0) as ep:
        action, qpos = ep[fmt.ACTION], ep[fmt.QPOS]
    v = rows.astype(np.float64)
    turn = 2 * np.pi / 4096
    expected = np.stack([np.radians(v[:, 0]), -np.radians(v[:, 1]), (v[:, 2] - 2048) * turn,
                         0.5 - (v[:, 3] - 2048) * turn, v[:, 4] - 0.25, v[:, 6], (v[:, 5] - 10) / 80,
                         *(v[:, k] for k in range(7, 13)), (v[:, 13] - 100) / -100], axis=1)
    np.testing.assert_array_max_ulp(action, expected.astype(np.float32), maxulp=1)
    assert np.array_equal(action[:, 7:13], rows[:, 7:13])  # radians: untouched
    assert np.isclose(qpos[0, 0], np.radians(v[0, 0] + 1))


def test_two_recordings_merge_and_filter_like_any_datasets(recordings: dict[str, object], tmp_path: Path) -> None:
    other = write_lerobot_recording(tmp_path / "other", NAMES, [np.zeros((4, 14))], [np.zeros((4, 14))], FPS)
    import_lerobot(Path(str(recordings["plain"])), "aloha", tmp_path / "plain")
    import_lerobot(other, "aloha", tmp_path / "other-x2")
    merge([tmp_path / "plain", tmp_path / "other-x2"], tmp_path / "both")
    ds = Dataset.open(tmp_path / "both")
    assert len(ds.episodes()) == 4 and {r.source for r in ds.episodes()} == {"real"}
    assert validate(tmp_path / "both").valid
    filter_dataset(tmp_path / "both", tmp_path / "some", Filter(Selection(episodes=(1, 3))))
    assert [r.index for r in Dataset.open(tmp_path / "some").episodes()] == [1, 3]


def test_cameras_stored_as_images_come_through_exactly_and_other_sensors_are_named(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    frames = rng.integers(0, 256, (6, 8, 10, 3), dtype=np.uint8)
    joints = _joints(rng, 6)
    source = write_lerobot_recording(tmp_path / "pngs", NAMES, [joints], [joints], FPS, images=[{"top": frames}],
                                     use_videos=False, extra={"observation.effort": [np.ones((6, 14))]})
    result = import_lerobot(source, "aloha", tmp_path / "out")
    assert result.cameras == ("top",) and result.not_imported == ("observation.effort",)
    with Dataset.open(tmp_path / "out").load(0) as ep:
        assert np.array_equal(ep[fmt.image_path("top")], frames)  # PNG: lossless, frame for frame
        assert ep.dataset_attrs(fmt.image_path("top"))["height"] == 8
        assert ep.json_attr(fmt.RECORDING_ATTR)["not_imported"] == ["observation.effort"]


def test_measured_joints_may_have_their_own_columns(tmp_path: Path) -> None:
    """A recording that measures each gripper by its fingers' positions (m), as x2's own LeRobot export of a
    simulated ALOHA does: `state_columns` maps one finger onto the opening, `ignore` leaves the other out."""
    joints = [f"{arm}_{j}" for arm in ("left", "right") for j in ("waist", "shoulder", "elbow", "forearm_roll",
                                                                    "wrist_angle", "wrist_rotate")]
    measured = [*joints[:6], "left_finger_a", "left_finger_b", *joints[6:], "right_finger_a", "right_finger_b"]
    state = "\n".join(f"    - {{name: {n}}}" for n in joints[:6]) + \
        "\n    - {name: left_finger_a, to: left_gripper, unit: range, range: [0.021, 0.057]}\n" + \
        "\n".join(f"    - {{name: {n}}}" for n in joints[6:]) + \
        "\n    - {name: right_finger_a, to: right_gripper, unit: range, range: [0.021, 0.057]}"
    robot = tmp_path / "aloha-fingers.yaml"
    commanded = "\n".join(f"    - {{name: {n}}}" if not n.endswith("gripper") else
                          f"    - {{name: {n}, unit: range, range: [0.0, 1.0]}}" for n in NAMES)
    robot.write_text(f"include: {Path(fmt.__file__).parents[1] / 'robots' / 'aloha.yaml'}\nname: aloha-fingers\n"
                     f"lerobot:\n  ignore: [left_finger_b, right_finger_b]\n  columns:\n{commanded}\n"
                     f"  state_columns:\n{state}\n")
    rng = np.random.default_rng(11)
    action = _joints(rng, 5)
    fingers = rng.uniform(0.021, 0.057, (5, 16)).astype(np.float32)
    source = write_lerobot_recording(tmp_path / "fingers", NAMES, [action], [fingers], FPS, state_names=measured)
    import_lerobot(source, str(robot), tmp_path / "out")
    with Dataset.open(tmp_path / "out").load(0) as ep:
        qpos = ep[fmt.QPOS]
        assert np.array_equal(ep[fmt.ACTION], action)
        assert np.array_equal(qpos[:, :6], fingers[:, :6]) and np.array_equal(qpos[:, 7:13], fingers[:, 8:14])
        opening = (fingers[:, 6].astype(np.float64) - 0.021) / (0.057 - 0.021)
        np.testing.assert_array_max_ulp(qpos[:, 6], opening.astype(np.float32), maxulp=1)
        assert ep.json_attr(fmt.RECORDING_ATTR)["table"]["ignore"] == ["left_finger_b", "right_finger_b"]


def test_x2s_own_lerobot_export_reads_back_without_a_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`x2 export lerobot` of a simulated dataset, read in again: its features are x2's own (the robot's 16
    recorded joints in observation.state), so the import reads them with no `lerobot:` table: the action as it
    was, each arm joint as measured, each gripper's opening from its first finger joint; and the twin that
    recorded it is recovered from the import (latency exact, the perturbed gain) as from the x2 dataset itself."""
    from helpers.calibration_files import record_swings, write_calibration

    from x2.recorded.dynamics import calibrate_dynamics

    monkeypatch.chdir(tmp_path)
    write_calibration(tmp_path, "truth", {"robot": "aloha", "dynamics": {"latency_ticks": 2, "arms": {"left": {
        "joints": {"left_waist": {"kp": 1040.0, "kv": 52.0}}}}}})
    record_swings(tmp_path / "sim", "aloha@truth", episodes=2, ticks=60)
    sim = Dataset.open(tmp_path / "sim")
    export_lerobot(ExportRequest(sim, tuple(sim.episodes()), tmp_path / "sim-lerobot", state_only=True))
    names = json.loads((tmp_path / "sim-lerobot" / "meta" / "info.json").read_text())["features"][
        "observation.state"]["names"]
    assert len(names) == 16 and "left_finger_a" in names  # x2's layout, which aloha's ALOHA table refuses
    result = import_lerobot(tmp_path / "sim-lerobot", "aloha", tmp_path / "back")
    assert len(result.imported) == 2
    robot = load_robot("aloha").model
    g = robot.gripper
    back = Dataset.open(tmp_path / "back")
    for e in range(2):
        with sim.load(e) as first, back.load(e) as second:
            assert second.attrs["source"] == fmt.REAL_SOURCE
            assert np.array_equal(first[fmt.ACTION], second[fmt.ACTION])
            qpos, measured = np.asarray(first[fmt.QPOS]), np.asarray(second[fmt.QPOS])
            assert [str(n) for n in second.dataset_attrs(fmt.QPOS)["names"]] == list(robot.action_names)
            for i, name in enumerate(robot.action_names):
                if name.endswith("_gripper"):
                    finger = qpos[:, list(robot.recorded_joints).index(name.replace("_gripper", "_finger_a"))]
                    want = (finger.astype(np.float64) - g.closed_ctrl) / (g.open_ctrl - g.closed_ctrl)
                    assert np.allclose(measured[:, i], want, atol=1e-5), name
                else:
                    assert np.array_equal(measured[:, i], qpos[:, list(robot.recorded_joints).index(name)]), name
            assert json.loads(second.attrs[fmt.RECORDING_ATTR])["table"]["source"].startswith("x2's own")
    run = calibrate_dynamics(tmp_path / "back", "aloha", 0.5, "lab1", 0, lambda _: None, max_iter=6, arms=("left",))
    assert run.result.latency_ticks == 2
    assert abs({p.name: p.value for p in run.result.params}["left_waist.scale"] - 1.3) < 0.08
