"""`x2 datasets view`: the .rrd it writes, read back with rerun's own reader (rerun.experimental.RrdReader,
which replaces rerun.recording.load_recording in rerun 0.32+), and the command's no-display, error and
crash behaviour, run as the real CLI in a subprocess."""

from __future__ import annotations

import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
from conftest import copy_dataset
from helpers.real_dataset import record_short_dataset
from helpers.x2_cli import HEADLESS_ENV, run_x2
from PIL import Image
from rerun.experimental import RrdReader

from x2 import format as fmt
from x2.datasets import Dataset, Episode
from x2.recorded.frames import DEFAULT_CAMERAS, DEFAULT_SIZE
from x2.recorded.world import open_world
from x2.render import render_dataset
from x2.sim.camera import ImageSize
from x2.view import plan_cameras, record_rerun, wants_viewer
from x2.view.sensor_streams import stored_sensor_cameras

SMALL = ImageSize(96, 128)


# ---- reading a recording back ---------------------------------------------------------------------
class Recording:
    """Every entity's rows as rerun stored them: temporal rows sorted by frame, static rows apart."""

    def __init__(self, path: Path, footer: bool = True) -> None:
        # store() reads the footer's manifest: a truncated file fails there. A stream a viewer saved as it
        # arrived has no footer and is read whole.
        if footer:
            store = RrdReader(path).store()
        else:
            with warnings.catch_warnings():  # rerun warns that such a file has no footer: we know
                warnings.simplefilter("ignore")
                store = RrdReader(path).stream().collect()
        temporal: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.static: dict[str, dict[str, Any]] = defaultdict(dict)
        for chunk in store.stream():
            for row in chunk.to_record_batch().to_pylist():
                row.pop("rerun.controls.RowId")  # time + random per row: the one thing never repeated
                if chunk.is_static:
                    self.static[chunk.entity_path].update(row)
                else:
                    temporal[chunk.entity_path].append(row)
        self.rows = {entity: sorted(rows, key=lambda r: r["frame"]) for entity, rows in temporal.items()}

    def entities(self) -> set[str]:
        return set(self.rows) | set(self.static)

    def frames(self, entity: str) -> np.ndarray:
        return np.array([r["frame"] for r in self.rows[entity]])

    def sim_time_ns(self, entity: str) -> np.ndarray:
        return np.array([r["sim_time"].value for r in self.rows[entity]])

    def values(self, entity: str, component: str) -> list[Any]:
        return [r[component] for r in self.rows[entity]]

    def scalars(self, entity: str) -> np.ndarray:
        return np.array([v[0] for v in self.values(entity, "Scalars:scalars")])

    def images(self, entity: str) -> list[np.ndarray]:
        return [np.asarray(Image.open(io.BytesIO(bytes(v[0])))) for v in self.values(entity, "EncodedImage:blob")]


def rendered(ep: Episode, camera: str, size: ImageSize) -> np.ndarray:
    with open_world(ep) as world, world.backend.renderer([camera], size) as renderer:
        return np.stack([renderer.frame(s)[camera] for s in ep["states"]])


# ---- data -----------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def short_ds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("view") / "short"
    record_short_dataset(path, episodes=2, ticks=12)
    return path


@pytest.fixture(scope="session")
def synth_ds(tmp_path_factory: pytest.TempPathFactory, synthesised_fruit: Path) -> Path:
    """A real synthesised episode: real subtask segments and DAG events."""
    return copy_dataset(synthesised_fruit, tmp_path_factory.mktemp("view_synth") / "fruit")


@pytest.fixture(scope="session")
def stored_ds(short_ds: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The short dataset with a stored `head` stream on episode 0 that differs from what rendering gives
    (the rendered frames inverted), so a recording of it shows which one it used."""
    path = tmp_path_factory.mktemp("view_stored") / "stored"
    shutil.copytree(short_ds, path)
    with Dataset.open(path).load(0) as ep:
        frames = 255 - rendered(ep, "head", SMALL)
    with h5py.File(Dataset.open(path).episode_path(0), "a") as f:
        f.create_dataset("observations/images/head", data=frames, chunks=(1, *frames.shape[1:]))
    return path


def write(ds_path: Path, episode: int, out: Path, cameras: tuple[str, ...] | None, size: ImageSize | None) -> Path:
    ds = Dataset.open(ds_path)
    with ds.load(episode) as ep:
        record_rerun(ep, dataset=ds.name, plan=plan_cameras(ep, cameras, size), path=out)
    return out


# ---- the recording --------------------------------------------------------------------------------
def test_cli_without_display_writes_a_complete_recording(short_ds: Path, tmp_path: Path) -> None:
    # A `rerun` first on PATH that only notes it was started: the viewer is the transport replaced here.
    fake_bin, marker = tmp_path / "bin", tmp_path / "spawned"
    fake_bin.mkdir()
    (fake_bin / "rerun").write_text(f"#!/bin/sh\necho \"$@\" >> {marker}\n")
    (fake_bin / "rerun").chmod(0o755)
    env = {**HEADLESS_ENV, "PATH": f"{fake_bin}{os.pathsep}{HEADLESS_ENV['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "x2", "datasets", "view", "1", "--dataset", str(short_ds),
                           "--cameras", "head,left_wrist", "--size", "96x128", "--spawn"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = tmp_path / "exports" / "short-episode_1.rrd"
    lines = done.stdout.splitlines()
    assert lines[0] == f"dataset: {short_ds}"
    assert "no display" in lines[1]
    assert lines[-1] == "wrote exports/short-episode_1.rrd; open it with: rerun exports/short-episode_1.rrd"
    assert not marker.exists(), "the no-display path started a viewer"
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]  # no temp left beside it

    rec = Recording(out)
    with Dataset.open(short_ds).load(1) as ep:
        frames, times = np.arange(ep.frames), np.round(ep["timestamps"] * 1e9).astype(np.int64)
        qpos_names = ep.dataset_attrs("observations/qpos")["names"]
        action_names = ep.dataset_attrs("action")["names"]
        objects = ep.dataset_attrs("observations/object_poses")["names"]
        expected = {"/episode", "/world", "/subtask/index", "/subtask/name", "/subtask/progress",
                    "/cameras/head", "/cameras/left_wrist"}
        expected |= {f"/joints/{n}/qpos" for n in qpos_names} | {f"/joints/{n}/action" for n in action_names}
        expected |= {f"/world/{kind}/{n}" for kind, names in (("objects", objects), ("tcp", ["left", "right"]))
                     for n in names}
        expected |= {f"/world/paths/{kind}/{n}" for kind, names in (("objects", objects), ("tcp", ["left", "right"]))
                     for n in names}
        assert expected <= rec.entities(), expected - rec.entities()
        for cam in ("head", "left_wrist"):
            entity = f"/cameras/{cam}"
            assert np.array_equal(rec.frames(entity), frames) and np.array_equal(rec.sim_time_ns(entity), times)
            images = rec.images(entity)
            assert len(images) == ep.frames and images[0].shape == (96, 128, 3)
        # JPEG is lossy: the pictures are the episode's (a few levels off), not any other picture.
        truth = rendered(ep, "head", SMALL)
        error = np.abs(np.stack(rec.images("/cameras/head")).astype(int) - truth).mean()
        assert error < 3.0, error
        for kind, key, names in (("qpos", "observations/qpos", qpos_names), ("action", "action", action_names)):
            for j, name in enumerate(names):
                entity = f"/joints/{name}/{kind}"
                assert np.array_equal(rec.frames(entity), frames)
                assert np.array_equal(rec.sim_time_ns(entity), times)
                assert np.array_equal(rec.scalars(entity), ep[key][:, j].astype(np.float64)), entity
        poses = ep["observations/object_poses"]
        for k, name in enumerate(objects):
            entity = f"/world/objects/{name}"
            translation = np.array([v[0] for v in rec.values(entity, "Transform3D:translation")])
            quaternion = np.array([v[0] for v in rec.values(entity, "Transform3D:quaternion")])
            assert np.array_equal(translation, poses[:, k, :3].astype(np.float32))
            assert np.array_equal(quaternion, poses[:, k, [4, 5, 6, 3]].astype(np.float32))  # wxyz -> xyzw
        tcp = np.array([v[0] for v in rec.values("/world/tcp/right", "Transform3D:translation")])
        assert np.array_equal(tcp, ep["observations/ee_pose"][:, 1, :3])
        assert rec.static["/world/objects/fruit"]["Points3D:labels"] == ["fruit"]
        assert "# episode 1" in rec.static["/episode"]["TextDocument:text"][0]


def test_subtask_timeline_matches_the_labels(synth_ds: Path, tmp_path: Path) -> None:
    out = write(synth_ds, 0, tmp_path / "ep.rrd", cameras=(), size=None)  # no pictures: only the timeline
    rec = Recording(out)
    with Dataset.open(synth_ds).load(0) as ep:
        segments = ep.segments
        assert len(segments) >= 3 and ep.events, "a synthesised episode has real segments and events"
        names = rec.values("/subtask/name", "TextDocument:text")
        assert len(names) == ep.frames
        for seg in segments:
            assert {n[0] for n in names[seg.start:seg.end]} == {seg.node}, seg
        assert np.array_equal(rec.scalars("/subtask/index"), ep["labels/subtask_index"].astype(np.float64))
        assert np.array_equal(rec.scalars("/subtask/progress"), ep["labels/progress"].astype(np.float64))
        event_frames = [frame for _, frame in ep.events]
        assert rec.values("/subtask/events", "TextLog:text") == [[f"{node} done"] for node, _ in ep.events]
        assert rec.frames("/subtask/events").tolist() == event_frames
        assert rec.frames("/subtask/event_markers").tolist() == event_frames
        assert rec.scalars("/subtask/event_markers").tolist() == [ep.subtask_names.index(n) for n, _ in ep.events]
        assert rec.static["/subtask/event_markers"]["SeriesPoints:markers"] is not None
        assert not any(e.startswith("/cameras") for e in rec.entities())


def test_stored_streams_are_read_not_rendered(stored_ds: Path, tmp_path: Path) -> None:
    with Dataset.open(stored_ds).load(0) as ep:
        plan = plan_cameras(ep)
        assert (plan.cameras, plan.size, plan.rendered) == (("head",), None, ())
        stored, drawn = ep["observations/images/head"], rendered(ep, "head", SMALL)
    rec = Recording(write(stored_ds, 0, tmp_path / "ep.rrd", cameras=None, size=None))
    images = np.stack(rec.images("/cameras/head")).astype(int)
    assert np.abs(images - stored).mean() < 3.0
    assert np.abs(images - drawn).mean() > 50.0  # the inverted stored stream, not a fresh rendering


def test_stored_depth_and_segmentation_are_shown_as_stored(short_ds: Path, tmp_path: Path) -> None:
    path = shutil.copytree(short_ds, tmp_path / "sensed")
    render_dataset(path, ("head",), ImageSize(16, 24), streams=("rgb", "depth", "segmentation"), episodes=[0])
    rec = Recording(write(path, 0, tmp_path / "ep.rrd", cameras=("head",), size=None))
    with Dataset.open(path).load(0) as ep:
        depth, ids = ep[fmt.depth_path("head")], ep[fmt.segmentation_path("head")]
        names = [str(n) for n in ep.dataset_attrs(fmt.segmentation_path("head"))[fmt.NAMES_ATTR]]
        assert rec.frames("/depth/head").tolist() == rec.frames("/segmentation/head").tolist() == list(range(ep.frames))
    assert rec.static["/depth/head"]["DepthImage:meter"] == [1.0]
    shown = np.stack([np.frombuffer(bytes(v[0]), np.float32) for v in rec.values("/depth/head", "DepthImage:buffer")])
    np.testing.assert_array_equal(shown.reshape(depth.shape), depth)  # the stored metres, bit for bit
    values = rec.values("/segmentation/head", "SegmentationImage:buffer")
    np.testing.assert_array_equal(np.stack([np.frombuffer(bytes(v[0]), np.uint16) for v in values]).reshape(ids.shape),
                                  ids)
    context = rec.static["/segmentation/head"]["AnnotationContext:context"][0]
    assert [c["class_description"]["info"]["label"] for c in context] == names
    with Dataset.open(short_ds).load(0) as ep:  # none stored: none shown
        assert stored_sensor_cameras(ep, ("head",)) == ((), ())


def test_plan_renders_what_is_not_stored_at_the_stored_size(stored_ds: Path, short_ds: Path) -> None:
    with Dataset.open(stored_ds).load(0) as ep:
        plan = plan_cameras(ep, ["head", "front"])
        assert (plan.size, plan.rendered) == (SMALL, ("front",))
        assert plan_cameras(ep, ["head"], ImageSize(48, 64)).rendered == ("head",)
    with Dataset.open(short_ds).load(0) as ep:
        plan = plan_cameras(ep)
        assert (plan.cameras, plan.size, plan.rendered) == (DEFAULT_CAMERAS, DEFAULT_SIZE, DEFAULT_CAMERAS)


def test_same_episode_same_recording(short_ds: Path, tmp_path: Path) -> None:
    first = Recording(write(short_ds, 0, tmp_path / "a.rrd", ("head",), SMALL))
    second = Recording(write(short_ds, 0, tmp_path / "b.rrd", ("head",), SMALL))
    assert first.rows == second.rows and first.static == second.static
    ids = {name: RrdReader(tmp_path / name).recordings()[0].recording_id for name in ("a.rrd", "b.rrd")}
    assert ids["a.rrd"] == ids["b.rrd"]
    other = write(short_ds, 0, tmp_path / "c.rrd", ("head",), ImageSize(48, 64))  # another view of it
    assert RrdReader(other).recordings()[0].recording_id != ids["a.rrd"]


# ---- the command ----------------------------------------------------------------------------------
def test_dataset_is_remembered_and_the_default_path_used(short_ds: Path, tmp_path: Path) -> None:
    assert run_x2(["datasets", "info", str(short_ds)], cwd=tmp_path).returncode == 0  # remembers it
    done = run_x2(["datasets", "view", "0", "--cameras", "head", "--size", "48x64"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == f"dataset: {short_ds} (last used)"
    rec = Recording(tmp_path / "exports" / "short-episode_0.rrd")
    assert rec.images("/cameras/head")[0].shape == (48, 64, 3)


def test_missing_episode_is_one_line(short_ds: Path, tmp_path: Path) -> None:
    done = run_x2(["datasets", "view", "7", "-d", str(short_ds)], cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: {short_ds}: episode: found no episode 7; allowed: 0-1"]
    assert not (tmp_path / "exports").exists()


def test_unknown_camera_is_one_line_and_leaves_nothing(short_ds: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "ep.rrd"
    done = run_x2(["datasets", "view", "0", "-d", str(short_ds), "--cameras", "head,nope", "--out", str(out)],
                  cwd=tmp_path)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    episode = Dataset.open(short_ds).episode_path(0)
    assert line.startswith(f"error: {episode}: cameras: found ['nope']; allowed: the model's cameras"), line
    assert list(out.parent.iterdir()) == []


def end_group(process: subprocess.Popen) -> None:
    """SIGTERM the process group `process` leads, and wait until every member is gone (files closed)."""
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    raise AssertionError("rerun did not end on SIGTERM")


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_with_a_display_the_viewer_gets_the_recording(short_ds: Path, tmp_path: Path) -> None:
    # A real rerun listening where the viewer would, saving what it receives: x2 finds it there and sends
    # to it instead of starting one (what rerun's spawn does with a viewer already open on the port).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    received = tmp_path / "received.rrd"
    # The `rerun` script runs the real binary as its child: a session of its own lets both be ended.
    viewer = subprocess.Popen([str(Path(sys.executable).parent / "rerun"), "--port", str(port), "--save",
                               str(received)], env=HEADLESS_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        while not listening(port):  # rerun starts slowly on a loaded machine; a hang meets pytest's timeout
            assert viewer.poll() is None, "rerun exited before it listened"
            time.sleep(0.1)
        env = {**HEADLESS_ENV, "DISPLAY": ":99"}
        args = [sys.executable, "-m", "x2", "datasets", "view", "1", "-d", str(short_ds), "--cameras", "head",
                "--size", "48x64", "--port", str(port)]
        done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == f"sent to the rerun viewer on port {port}"
        assert not (tmp_path / "exports").exists()  # a display and no --out: the viewer only
        done = subprocess.run([*args, "--out", "both.rrd", "--spawn"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    finally:
        end_group(viewer)
    frames = Dataset.open(short_ds).load(1).frames
    both = Recording(tmp_path / "both.rrd")
    assert len(both.images("/cameras/head")) == frames
    got = Recording(received, footer=False)  # the same view twice: one recording id, every row twice
    assert sorted(got.frames("/cameras/head").tolist()) == sorted(2 * list(range(frames)))
    assert got.scalars("/joints/left_j1/qpos").tolist() == [v for v in both.scalars("/joints/left_j1/qpos")
                                                            for _ in range(2)]


def test_viewer_only_with_a_display() -> None:
    assert wants_viewer(False, None, {"DISPLAY": ":0"})
    assert wants_viewer(True, Path("a.rrd"), {"DISPLAY": ":0"})
    assert not wants_viewer(False, Path("a.rrd"), {"DISPLAY": ":0"})
    assert not wants_viewer(True, None, {})
    assert not wants_viewer(True, None, {"DISPLAY": ""})


def test_x2_does_not_import_rerun_until_a_view_is_made(tmp_path: Path) -> None:
    code = ("import sys; from x2.cli.app import app, _mount; _mount(); import x2.view; "
            "print('rerun' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=HEADLESS_ENV, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.strip() == "False", done.stderr


def test_sigkill_leaves_no_half_written_recording(synth_ds: Path, short_ds: Path, tmp_path: Path) -> None:
    out = tmp_path / "exports" / "ep.rrd"
    args = [sys.executable, "-m", "x2", "datasets", "view", "0", "-d", str(synth_ds), "--size", "96x128",
            "--cameras", "head,front", "--out", str(out)]
    victim = subprocess.Popen(args, cwd=tmp_path, env=HEADLESS_ENV, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    partial = out.with_name(f".{out.name}.partial-{victim.pid}")
    while not (partial.exists() and partial.stat().st_size > 100_000):  # well into the camera frames
        assert victim.poll() is None, "the view ended before it could be killed"  # (a hang: the test timeout)
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert not out.exists()
    assert partial.exists()  # what the kill left: hidden, never under the target's name
    # The next run for the same target clears the dead run's partial and puts a complete file in place.
    done = run_x2(["datasets", "view", "0", "-d", str(short_ds), "--size", "48x64", "--out", str(out)],
                  cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]
    assert len(Recording(out).frames("/cameras/head")) == Dataset.open(short_ds).load(0).frames
