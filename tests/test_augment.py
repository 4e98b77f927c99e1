"""Replay augmentation on a real synthesised episode: what must not change, what must, and the safety margin.

The source is one `x2 synth` fruit_in_microwave episode (about 870 frames, the right arm picking the
fruit off the table, the left swinging the microwave door), its head camera rendered at 96x128 so its
camera poses are in the file.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import h5py
import hdf5plugin  # noqa: F401
import mujoco
import numpy as np
import pytest
from conftest import copy_dataset
from helpers.x2_cli import run_x2

from x2.augment.augment import AugmentRequest, augment_dataset
from x2.augment.check import check_world, restless, settle
from x2.augment.compose import compose_world
from x2.augment.envelope import build_envelope
from x2.augment.placement import (
    Placed,
    Support,
    box_support,
    distractor_shape,
    place_distractors,
    spheres_at,
    static_obstacles,
)
from x2.base.errors import DatasetError
from x2.datasets import Dataset, validate
from x2.envspec.scene import load_asset
from x2.format import AUGMENTATION_REPORT_FILE
from x2.recorded.replay import replay_actions
from x2.render import render_dataset
from x2.sim.camera import ImageSize

SMALL = ImageSize(96, 128)
# What an augmented episode changes at its root; every other attribute and every dataset stays the parent's.
CHANGED_ATTRS = {"episode_index", "source", "parent_episode", "scene_variant", "split", "seed", "model_xml",
                 "augmentation", "master_seed", "slot"}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory, synthesised_fruit: Path) -> Path:
    root = copy_dataset(synthesised_fruit, tmp_path_factory.mktemp("aug-src") / "fruit")
    render_dataset(root, ("head",), SMALL)
    return root


@pytest.fixture(scope="module")
def augmented(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("aug") / "fruit-aug"
    summary = augment_dataset(source, out, AugmentRequest(per_episode=2, scenery=("clutter", "studio"), objects=3))
    assert len(summary.written) == 2 and not summary.rejected
    return out


@pytest.fixture(scope="module")
def world(source: Path) -> tuple[mujoco.MjModel, np.ndarray, str]:
    with Dataset.open(source).load(0) as ep:
        xml = str(ep.attrs["model_xml"])
        return mujoco.MjModel.from_xml_string(xml), ep["states"], xml


def _datasets(f: h5py.File) -> dict[str, h5py.Dataset]:
    out: dict[str, h5py.Dataset] = {}
    f.visititems(lambda name, obj: out.__setitem__(name, obj) if isinstance(obj, h5py.Dataset) else None)
    return out


def _same_attrs(a: h5py.AttributeManager, b: h5py.AttributeManager, skip: set[str] = set()) -> bool:  # noqa: B006
    keys = set(a) - skip
    return keys == set(b) - skip and all(np.array_equal(a[k], b[k]) for k in keys)


def _same_bytes(a: h5py.Dataset, b: h5py.Dataset) -> bool:
    x, y = a[()], b[()]
    return x.dtype == y.dtype and x.shape == y.shape and np.asarray(x).tobytes() == np.asarray(y).tobytes()


# ---- what must not change ---------------------------------------------------------------------------
def test_streams_and_labels_are_the_parents_byte_for_byte(source: Path, augmented: Path) -> None:
    with h5py.File(Dataset.open(source).episode_path(0)) as parent:
        kept = {n: d for n, d in _datasets(parent).items() if not n.startswith("observations/images")}
        assert {"timestamps", "states", "action", "labels/subtask_index", "dag/completion_frame",
                "observations/camera_poses/head", "observations/object_poses"} <= set(kept)
        for path in sorted((augmented / "episodes").glob("*.h5")):
            with h5py.File(path) as child:
                have = _datasets(child)
                for name, data in kept.items():
                    assert _same_bytes(data, have[name]), f"{path.name}: {name}"
                assert not any(n.startswith("observations/images") for n in have)  # old pictures are not kept
                for group in ("dag", "labels", "observations/camera_poses/head", "states"):
                    assert _same_attrs(child[group].attrs, parent[group].attrs), group
                assert _same_attrs(child.attrs, parent.attrs, skip=CHANGED_ATTRS)
                assert child.attrs["source"] == "augment" and child.attrs["parent_episode"] == 0
                assert child.attrs["model_xml"] != parent.attrs["model_xml"]


def test_rendering_an_augmented_episode_gives_the_parents_camera_poses_and_new_pictures(source: Path,
                                                                                       augmented: Path) -> None:
    """The camera poses are recomputed from the states in the new world: bit-identical to the parent's."""
    render_dataset(augmented, ("head",), SMALL, episodes=[1])
    with h5py.File(Dataset.open(source).episode_path(0)) as parent, \
            h5py.File(Dataset.open(augmented).episode_path(1)) as child:  # the studio one: new walls
        assert _same_bytes(parent["observations/camera_poses/head"], child["observations/camera_poses/head"])
        before, after = parent["observations/images/head"][0], child["observations/images/head"][0]
        assert np.abs(before.astype(int) - after.astype(int)).mean() > 5


def test_the_physics_never_meets_a_distractor(augmented: Path) -> None:
    """Stepping the stored actions in the augmented world reproduces the stored states exactly."""
    ds = Dataset.open(augmented)
    with ds.load(0) as ep:
        assert json.loads(ep.attrs["augmentation"])["distractors"]["placed"]
        report = replay_actions(ep)
    assert report.max_deviation == 0.0
    report = validate(augmented)
    assert report.valid, report.problems


def test_same_seed_same_bytes_and_a_rerun_resumes(source: Path, augmented: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    first = augment_dataset(source, again, AugmentRequest(per_episode=1, scenery=("clutter", "studio"), objects=3))
    assert [o.k for o in first.written] == [0]
    # As a kill between the file's rename and its index line leaves it: the rerun lists the file and keeps it.
    (again / "episodes.jsonl").write_bytes(b"")
    second = augment_dataset(source, again, AugmentRequest(per_episode=2, scenery=("clutter", "studio"), objects=3))
    assert [o.existed for o in second.outcomes] == [True, False]  # resumed: k=0 kept, k=1 made
    assert_same_augmented(again, augmented)
    other = tmp_path / "other"
    augment_dataset(source, other, AugmentRequest(per_episode=2, scenery=("clutter", "studio"), objects=3, seed=1))
    assert (other / AUGMENTATION_REPORT_FILE).read_bytes() != (augmented / AUGMENTATION_REPORT_FILE).read_bytes()


def test_two_workers_make_the_same_bytes(source: Path, augmented: Path, tmp_path: Path) -> None:
    pooled = tmp_path / "pooled"
    summary = augment_dataset(source, pooled, AugmentRequest(per_episode=2, scenery=("clutter", "studio"), objects=3),
                              workers=2)
    assert [o.k for o in summary.written] == [0, 1] and summary.geometry_s > 0
    assert_same_augmented(pooled, augmented)


def assert_same_augmented(made: Path, augmented: Path) -> None:
    """`made` holds `augmented`'s two episodes byte for byte (but the pictures only `augmented` was given)."""
    assert (made / AUGMENTATION_REPORT_FILE).read_bytes() == (augmented / AUGMENTATION_REPORT_FILE).read_bytes()
    for name in ("episode_000000.h5", "episode_000001.h5"):
        with h5py.File(made / "episodes" / name) as a, h5py.File(augmented / "episodes" / name) as b:
            assert _same_attrs(a.attrs, b.attrs)
            da, db = _datasets(a), _datasets(b)
            images = [n for n in db if n.startswith("observations/images")]  # only `augmented` was rendered
            assert set(da) == set(db) - set(images)
            assert all(_same_bytes(da[n], db[n]) for n in da)


# ---- the safety margin ------------------------------------------------------------------------------
def _fruit_start(model: mujoco.MjModel, states: np.ndarray) -> np.ndarray:
    data = mujoco.MjData(model)
    mujoco.mj_setState(model, data, states[0], mujoco.mjtState.mjSTATE_INTEGRATION)
    mujoco.mj_kinematics(model, data)
    return data.xpos[model.body("fruit/object").id].copy()


def test_negative_control_where_the_gripper_passes(world: tuple[mujoco.MjModel, np.ndarray, str]) -> None:
    """A block where the fruit lies (the right gripper goes down there to grasp it) is refused by the envelope
    and, forced into the world anyway, flagged by the checker."""
    model, states, xml = world
    envelope = build_envelope(model, states)
    fruit = _fruit_start(model, states)
    block = distractor_shape(load_asset("block"))
    table = box_support(model)
    spot = Support(table.name, (float(fruit[0]), float(fruit[1] + 0.06)), (0.01, 0.01), table.z)
    report = place_distractors([block], spot, envelope, [], np.random.default_rng(0), 0.02, max_tries=50)
    assert report.unplaced == ["block"] and report.rejected["envelope"] == 50
    forced = Placed("block_0", "block", spot.centre[0], spot.centre[1], table.z, 0.0, 0.0)
    assert envelope.margin(spheres_at(block, forced.x, forced.y, forced.z, 0.0), block.radii) < 0
    result = check_world(mujoco.MjModel.from_xml_string(compose_world(xml, {}, [forced], {"block": block},
                                                                       model.opt.timestep)[0]), states, 0.02)
    assert not result.passed and result.violations > 0
    assert result.closest is not None and result.closest[1].startswith("augment/block_0/")
    assert result.closest[2].startswith(("right_", "fruit/"))


def test_without_inflation_tight_placements_collide(world: tuple[mujoco.MjModel, np.ndarray, str]) -> None:
    """Mutation: capsules of radius 0 (the bare proxy paths). Placed as tight as the envelope allows, the
    distractors then reach into the robot, and the checker says so; with the real inflation it never does."""
    model, states, xml = world
    envelope = build_envelope(model, states)
    bare = dataclasses.replace(envelope, radius=np.zeros_like(envelope.radius))
    shapes = [distractor_shape(load_asset(n)) for n in ("block", "mug", "orange")]
    by_name = {s.name: s for s in shapes}
    table = box_support(model)
    obstacles = static_obstacles(model, table)
    caught = 0
    for seed in range(2):
        for env, mutated in ((envelope, False), (bare, True)):
            report = place_distractors(shapes, table, env, obstacles, np.random.default_rng(seed), 0.02,
                                       max_tries=150, mode="tight")
            assert len(report.placed) == 3
            world_xml, _ = compose_world(xml, {}, report.placed, by_name, model.opt.timestep)
            result = check_world(mujoco.MjModel.from_xml_string(world_xml), states, 0.02)
            if not mutated:
                assert result.passed, result.problems
                assert result.min_distance_m is not None and result.min_distance_m >= 0.02
            else:
                caught += result.violations > 0
    assert caught == 2


def test_placed_distractors_stay_at_rest(augmented: Path, world: tuple[mujoco.MjModel, np.ndarray, str]) -> None:
    model, _, _ = world
    table = box_support(model)
    for path in sorted((augmented / "episodes").glob("*.h5")):
        with h5py.File(path) as f:
            config = json.loads(f.attrs["augmentation"])
        placed = [Placed(p["name"], p["asset"], *p["pose"], 0.0) for p in config["distractors"]["placed"]]
        assets = {p.asset: load_asset(p.asset) for p in placed}
        settled = settle(placed, assets, table)
        assert settled == config["settle"] and not restless(settled)
        assert all(abs(gap) <= 0.001 for gap in config["check"]["support_gap_m"].values())
        # The same objects dropped from 3 cm do move: the test can tell resting from falling.
        dropped = [dataclasses.replace(p, z=p.z + 0.03) for p in placed]
        assert restless(settle(dropped, assets, table)) == [p.name for p in dropped]


# ---- choices and errors -----------------------------------------------------------------------------
def test_eval_scenery_needs_allow_eval(source: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"--scenery: found 'held_out' \(split eval\); allowed: train"):
        augment_dataset(source, tmp_path / "e", AugmentRequest(per_episode=1, scenery=("held_out",)))
    assert not (tmp_path / "e").exists()
    done = augment_dataset(source, tmp_path / "e", AugmentRequest(per_episode=1, scenery=("held_out",),
                                                                  allow_eval=True))
    with Dataset.open(tmp_path / "e").load(done.written[0].index) as ep:
        assert ep.attrs["split"] == "eval" and ep.attrs["scene_variant"] == "held_out"
        placed = json.loads(ep.attrs["augmentation"])["distractors"]["placed"]
        assert {p["asset"] for p in placed} <= {"peach", "plum"}


def test_cli_names_what_it_does_and_draws_a_preview(source: Path, tmp_path: Path) -> None:
    png = tmp_path / "preview.png"
    run = run_x2(["augment", "replay", str(source), "--out", str(tmp_path / "cli-aug"), "--per-episode", "1",
                  "--scenery", "studio", "--preview", str(png), "--size", "96x128"], tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    first = run.stdout.splitlines()[0]
    assert first.startswith(f"augmenting {source} into {tmp_path / 'cli-aug'}: 1 augmented episode(s) per episode")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    bad = run_x2(["augment", "replay", str(source), "--out", str(tmp_path / "bad"), "--scenery", "nope"],
                 tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        "error: --scenery: found 'nope'; allowed: clutter, studio, warm_wood, held_out "
        "(scenery of scene 'kitchen_booth'), or x2's built-in lab, lab_plain"]
    assert not (tmp_path / "bad").exists()


def test_the_old_spellings_still_run_and_give_the_same_dataset(source: Path, augmented: Path, tmp_path: Path) -> None:
    """`--variants` and `--scene-variant`, the names --per-episode and --scenery had before, are still taken
    (hidden from --help): old and new spellings make `augmented` (made through the API) byte for byte."""
    for spelling, k, scenery in (("new", "--per-episode", "--scenery"), ("old", "--variants", "--scene-variant")):
        run = run_x2(["augment", "replay", str(source), "--out", str(tmp_path / spelling), k, "2", scenery, "clutter",
                      scenery, "studio", "--objects", "3"], tmp_path, timeout=300)
        assert run.returncode == 0, run.stderr
        assert_same_augmented(tmp_path / spelling, augmented)
    both = run_x2(["augment", "replay", str(source), "--out", str(tmp_path / "both"), "--per-episode", "2",
                   "--variants", "2"], tmp_path)
    assert both.returncode == 2 and both.stderr.strip().splitlines() == [
        "error: --per-episode: found both --per-episode and --variants (its old spelling); allowed: one of them"]
    assert not (tmp_path / "both").exists()
    shown = run_x2(["augment", "replay", "--help"], tmp_path).stdout
    assert "--per-episode" in shown and "--scenery" in shown
    assert "--variants" not in shown and "--scene-variant" not in shown


def test_closest_approach_is_measured_not_assumed(augmented: Path) -> None:
    for path in sorted((augmented / "episodes").glob("*.h5")):
        with h5py.File(path) as f:
            check = json.loads(f.attrs["augmentation"])["check"]
            frames = len(f["timestamps"])
        assert check["passed"] and check["frames"] == frames > 300 and check["violations"] == 0  # every frame
        if check["min_distance_m"] is not None:
            assert check["clearance_m"] <= check["min_distance_m"] < check["measured_within_m"]
        assert math.isfinite(check["measured_within_m"])


def test_kill_9_loses_nothing_and_the_rerun_gives_the_same_bytes(source: Path, tmp_path: Path) -> None:
    """SIGKILL at a random moment after the first augmented episode committed; the rerun finishes the job and its
    files equal an uninterrupted run's."""
    import random
    import signal
    import subprocess
    import sys
    import time

    from helpers.x2_cli import HEADLESS_ENV

    args = ["augment", "replay", str(source), "--per-episode", "5", "--objects", "2"]
    reference = tmp_path / "reference"
    augment_dataset(source, reference, AugmentRequest(per_episode=5, objects=2))
    out = tmp_path / "killed"
    rng = random.Random(7)
    for attempt in range(2):
        proc = subprocess.Popen([sys.executable, "-m", "x2", *args, "--out", str(out)], cwd=tmp_path,
                                env=HEADLESS_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        index = out / "episodes.jsonl"
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None and \
                (not index.exists() or index.read_text().count("\n") <= attempt):
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if attempt == 0:  # the kill came mid-run: not all augmented episodes were there yet
            assert len(list((out / "episodes").glob("*.h5"))) < 5
        # A kill between the file's rename into episodes/ and its index line leaves it unlisted: repairable,
        # and the next writer (or validate --repair) lists it (docs/format.md, "Guarantees"); never an error.
        report = validate(out)
        assert all(p.severity == "repairable" for p in report.problems), report.problems
    rerun = run_x2([*args, "--out", str(out)], tmp_path, timeout=300)
    assert rerun.returncode == 0, rerun.stderr
    assert not (out / ".staging").exists() or not any((out / ".staging").iterdir())
    assert (out / AUGMENTATION_REPORT_FILE).read_bytes() == (reference / AUGMENTATION_REPORT_FILE).read_bytes()
    names = sorted(p.name for p in (reference / "episodes").glob("*.h5"))
    assert names == sorted(p.name for p in (out / "episodes").glob("*.h5")) and len(names) == 5
    for name in names:
        with h5py.File(out / "episodes" / name) as a, h5py.File(reference / "episodes" / name) as b:
            assert _same_attrs(a.attrs, b.attrs)
            da, db = _datasets(a), _datasets(b)
            assert set(da) == set(db) and all(_same_bytes(da[n], db[n]) for n in da)
    assert validate(out).valid


def test_an_augmented_dataset_exports_to_lerobot(augmented: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`x2 export lerobot` takes the augmented dataset like any other; LeRobot loads it with its camera."""
    import datasets.config
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    from x2.export.lerobot import read_x2_meta

    target = tmp_path / "aug-lerobot"
    run = run_x2(["export", "lerobot", str(augmented), "--out", str(target), "--cameras", "head",
                  "--size", "96x128", "--episodes", "1"], tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    ds = LeRobotDataset("x2/aug-lerobot", root=target, video_backend="pyav")
    assert ds.num_episodes == 1 and "observation.images.head" in ds.meta.features
    assert tuple(ds[0]["observation.images.head"].shape) == (3, 96, 128)
    assert [(e["index"], e["source"]) for e in read_x2_meta(target)["episodes"]] == [(1, "augment")]


def test_partition_keeps_a_recording_and_its_augmented_episodes_together(source: Path, augmented: Path,
                                                                         tmp_path: Path) -> None:
    """Merged with its source, every augmented episode is put in its parent's part: no motion in train and val
    at once."""
    from x2.datasets.manage import merge
    from x2.datasets.partition import read_partition
    from x2.datasets.stratified_partition import assign_partition

    both = tmp_path / "both"
    merge([source, augmented], both)
    for seed in range(4):
        assign_partition(both, val=0.5, seed=seed)
        parts = read_partition(both)
        assert len(set(parts.values())) == 1, parts  # episode 0 and its two augmented episodes: one unit


def test_augmented_episodes_are_not_augmented_again(augmented: Path, tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="found only augmented ones"):
        augment_dataset(augmented, tmp_path / "twice", AugmentRequest())
    assert not (tmp_path / "twice").exists()


def test_adaptive_sampling_and_rdp_keep_their_bounds(world: tuple[mujoco.MjModel, np.ndarray, str]) -> None:
    """A tolerance finer than the motion between frames makes the sampler bisect; every dropped sample of
    every path lies within eps of its kept segment."""
    from x2.augment.envelope import EnvelopeParams, _segment_distance, rdp_keep

    model, states, _ = world
    coarse = build_envelope(model, states[100:300])
    fine = build_envelope(model, states[100:300], EnvelopeParams(temporal_tol=5e-5, max_depth=3))
    assert coarse.samples == 200 and fine.samples > coarse.samples
    assert fine.temporal_bound < coarse.temporal_bound
    rng = np.random.default_rng(3)
    paths = np.cumsum(rng.normal(scale=0.01, size=(300, 4, 3)), axis=0)
    kept = rdp_keep(paths, 0.02)
    assert kept[0] == 0 and kept[-1] == 299 and len(kept) < 300
    for a, b in zip(kept[:-1], kept[1:], strict=True):
        if b - a > 1:
            assert _segment_distance(paths[a + 1:b], paths[a], paths[b]).max() <= 0.02


def test_depth_and_segmentation_of_the_source_world_are_left_out(tmp_path: Path) -> None:
    """An augmented world looks otherwise (restyled, distractors): its parent's depth and ids would be wrong, so they
    go with its pictures; the poses of its cameras (the same states) stay."""
    from helpers.real_dataset import record_short_dataset

    src = tmp_path / "src"
    record_short_dataset(src, episodes=1, ticks=3)
    render_dataset(src, ("head",), ImageSize(48, 64), streams=("rgb", "depth", "segmentation"))
    augment_dataset(src, tmp_path / "aug", AugmentRequest(per_episode=1, objects=1))
    with h5py.File(Dataset.open(src).episode_path(0)) as parent, \
            h5py.File(Dataset.open(tmp_path / "aug").episode_path(0)) as child:
        assert {"images", "depth", "segmentation"} <= set(parent["observations"])
        assert not {"images", "depth", "segmentation"} & set(child["observations"])
        for kept in ("observations/camera_poses/head", "observations/camera_extrinsics/head"):
            assert _same_bytes(parent[kept], child[kept]), kept
