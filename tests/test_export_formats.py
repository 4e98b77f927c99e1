"""x2 export zarr / hdf5: read back by the consumers' own readers (zarr 2.x in its own environment, h5py
against robomimic's documented layout), real SIGKILLs mid-export, and term signals of a real synthesised
episode, per arm too (concurrent synthesis: the left arm opens the door while the right picks the fruit)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import zarr
from conftest import copy_dataset
from helpers.corrupt_episodes import strip_arm_labels
from helpers.real_dataset import record_short_dataset
from helpers.x2_cli import HEADLESS_ENV, run_x2
from typer.testing import CliRunner

from x2.cli.app import _mount
from x2.cli.app import app as x2_app
from x2.datasets import Dataset, Episode
from x2.datasets.partition import write_partition
from x2.export.hdf5 import Hdf5Options, demo_names, export_hdf5
from x2.export.request import ExportRequest
from x2.export.zarr import ZarrOptions, export_zarr
from x2.recorded.frames import episode_frames
from x2.sim.camera import ImageSize, pinhole

REPO = Path(__file__).resolve().parents[1]
_mount()  # the root command, as `x2` builds it
SIZE = ImageSize(96, 128)
KEYS = {"action": "action", "state": "observations/qpos", "timestamp": "timestamps",
        "ee_pose": "observations/ee_pose", "object_poses": "observations/object_poses",
        "subtask_index": "labels/subtask_index", "arm_subtask_index": "labels/arm_subtask_index",
        "mujoco_state": "states"}
ZARR2_DUMP = r"""
import json, sys
import numpy as np, zarr
path, kind, out = sys.argv[1:]
store = zarr.ZipStore(path, mode="r") if kind == "zip" else None
root = zarr.open(store if store is not None else path, mode="r")
arrays = {f"data/{k}": root["data"][k][:] for k in root["data"].array_keys()}
arrays["meta/episode_ends"] = root["meta"]["episode_ends"][:]
np.savez(out + ".npz", **arrays)
facts = {k: {"chunks": list(root["data"][k].chunks), "dtype": str(root["data"][k].dtype),
             "compressor": None if root["data"][k].compressor is None else root["data"][k].compressor.get_config(),
             "attrs": dict(root["data"][k].attrs)}
         for k in root["data"].array_keys()}
json.dump({"zarr": zarr.__version__, "arrays": facts, "attrs": dict(root.attrs)}, open(out + ".json", "w"))
"""


def zarr2_python() -> str:
    python = os.environ.get("X2_ZARR2_PYTHON") or str(REPO / ".venv/zarr2/bin/python")
    if not Path(python).exists():
        pytest.fail(f"no zarr 2.x environment at {python}: `make venv` builds it (.venv/zarr2)")
    return python


@pytest.fixture(scope="module")
def short(tmp_path_factory) -> Path:
    """Three real 30-frame episodes; episode 1 is in the val part of the partition."""
    path = tmp_path_factory.mktemp("formats") / "short"
    record_short_dataset(path, episodes=3, ticks=30)
    write_partition(path, {1: "val"})
    return path


@pytest.fixture(scope="module")
def synth(tmp_path_factory, synthesised_fruit: Path) -> Path:
    """One real synthesised fruit_in_microwave episode with real subtask labels."""
    return copy_dataset(synthesised_fruit, tmp_path_factory.mktemp("synth") / "fruit")


@pytest.fixture(scope="module")
def rendered(short) -> list[np.ndarray]:
    """The head camera of every short episode, rendered independently of the exporters."""
    ds = Dataset.open(short)
    out = []
    for r in ds.episodes():
        with ds.load(r.index) as ep:
            out.append(np.stack([f["head"] for f in episode_frames(ep, ["head"], SIZE)]))
    return out


def source_arrays(root: Path, indices: list[int]) -> dict[str, np.ndarray]:
    ds = Dataset.open(root)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in KEYS}
    for i in indices:
        with ds.load(i) as ep:
            for key, path in KEYS.items():
                parts[key].append(ep[path])
    return {k: np.concatenate(v) for k, v in parts.items()}


def kill_run(args: list[str], target: Path, cwd: Path, seed: int) -> str:
    """Start the exporter and SIGKILL it at a random moment after its partial appears; what the kill left at
    the target: "absent" or "present"."""
    rng = random.Random(seed)
    proc = subprocess.Popen([sys.executable, "-m", "x2", *args], cwd=cwd, env=HEADLESS_ENV,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline and \
            not list(target.parent.glob(f".{target.name}*partial-{proc.pid}")):
        time.sleep(0.005)
    time.sleep(rng.uniform(0.0, 2.0))  # some land after the rename
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return "present" if target.exists() else "absent"


def run_after_kill(args: list[str], cwd: Path) -> str:
    """The command's next run, which must clear what the killed one left, in this process (the kill needs a
    process of its own, this run only the command's code); its standard output."""
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(cwd)  # the workspace state a run records goes where `x2` would have written it
        done = CliRunner().invoke(x2_app, args)
    assert done.exit_code == 0, f"{done.output}{done.exception!r}"
    return done.stdout


# ---- zarr ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def zarr_exports(short, tmp_path_factory) -> dict[str, object]:
    """Directory and zip exports, each made after a real kill of an earlier run at the same target (one kill
    each: a second one proved the same again, for another start-up of the command)."""
    out = tmp_path_factory.mktemp("zarr_out")
    results: dict[str, object] = {}
    for seed, (kind, extra) in enumerate((("dir", []), ("zip", ["--zip"]))):
        target = out / f"short.zarr{'.zip' if kind == 'zip' else ''}"
        args = ["export", "zarr", str(short), "--out", str(target), "--size", str(SIZE), "--overwrite", *extra]
        results[f"{kind}_kill"] = kill_run(args, target, out, seed=11 + seed)
        results[f"{kind}_complete_after_kill"] = _zarr_complete(target) if target.exists() else None
        results[f"{kind}_stdout"] = run_after_kill(args, out)
        results[kind] = target
    results["leftovers"] = sorted(p.name for p in out.iterdir() if "partial-" in p.name or ".old-" in p.name)
    return results


def _zarr_complete(target: Path) -> bool:
    store = zarr.storage.ZipStore(str(target), mode="r") if target.is_file() else str(target)
    return list(zarr.open_group(store, mode="r")["meta/episode_ends"][:]) == [30, 60, 90]


def test_zarr_killed_exports_leave_nothing_or_a_complete_store(zarr_exports):
    for kind in ("dir", "zip"):
        assert zarr_exports[f"{kind}_complete_after_kill"] in (None, True)  # never a store without ends
    if Path(zarr_exports["dir"]).is_dir():
        assert (Path(zarr_exports["dir"]) / "meta/episode_ends/.zarray").is_file()
    assert zarr_exports["leftovers"] == []  # killed runs' partials were cleared by the next run


@pytest.mark.parametrize("kind", ["dir", "zip"])
def test_zarr2_reads_what_x2_wrote(zarr_exports, short, rendered, tmp_path, kind):
    dump = tmp_path / "dump.py"
    dump.write_text(ZARR2_DUMP)
    done = subprocess.run([zarr2_python(), str(dump), str(zarr_exports[kind]), kind, str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    facts = json.loads((tmp_path / "out.json").read_text())
    assert facts["zarr"].startswith("2.")
    got = np.load(tmp_path / "out.npz")
    ends = got["meta/episode_ends"]
    assert ends.dtype == np.int64 and ends.tolist() == [30, 60, 90]
    expected = source_arrays(short, [0, 1, 2])
    for key, values in expected.items():
        assert got[f"data/{key}"].dtype == values.dtype, key
        assert np.array_equal(got[f"data/{key}"], values), key
    images = got["data/head"]
    assert images.shape == (90, SIZE.height, SIZE.width, 3) and images.dtype == np.uint8
    for i, (lo, hi) in enumerate(zip([0, *ends[:-1]], ends, strict=True)):
        assert np.array_equal(images[lo:hi], rendered[i])  # episode boundaries fall where they belong
    head = facts["arrays"]["head"]
    assert head["chunks"] == [1, SIZE.height, SIZE.width, 3]
    assert head["compressor"] == {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0, "blocksize": 0}
    assert facts["arrays"]["action"]["compressor"] is None
    assert facts["arrays"]["arm_subtask_index"]["attrs"]["names"] == ["left", "right"]
    prov = facts["attrs"]["x2_provenance"]
    assert [e["index"] for e in prov["episodes"]] == [0, 1, 2] and prov["dataset"]["name"] == "short"
    lens = prov["camera_lenses"]["head"]  # the exported camera's K at the exported size, and where it was
    assert (lens["height"], lens["width"]) == (SIZE.height, SIZE.width) and "distortion" not in lens
    np.testing.assert_allclose(lens["K"], pinhole(lens["fovy_deg"], SIZE.height, SIZE.width), atol=1e-6)
    assert lens["body"] and np.allclose(np.asarray(lens["pose"])[3], [0, 0, 0, 1])


def test_zarr_zip_is_stored_uncompressed(zarr_exports):
    import zipfile

    with zipfile.ZipFile(zarr_exports["zip"]) as zf:
        infos = zf.infolist()
    assert infos and all(i.compress_type == zipfile.ZIP_STORED for i in infos)
    assert [i.filename for i in infos] == sorted(i.filename for i in infos)


def test_zarr_refuses_an_existing_target_and_selects_episodes(zarr_exports, short):
    target = Path(zarr_exports["dir"])
    refused = run_x2(["export", "zarr", str(short), "--out", str(target), "--state-only"], cwd=target.parent)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1].startswith(f"error: {target}: target: found an existing")
    assert "Traceback" not in refused.stderr
    ds = Dataset.open(short)
    records = [r for r in ds.episodes() if r.index in (0, 2)]
    summary = export_zarr(ExportRequest(ds, tuple(records), target, state_only=True, overwrite=True))
    assert summary.episode_ends == [30, 60]
    root = zarr.open_group(str(target), mode="r")
    assert np.array_equal(root["data/action"][:], source_arrays(short, [0, 2])["action"])
    assert "head" not in root["data"]


def test_zarr_format3_and_resize(short, rendered, tmp_path):
    ds = Dataset.open(short)
    options = ZarrOptions(render_size=SIZE, image_size=ImageSize(48, 64), zarr_format=3)
    export_zarr(ExportRequest(ds, tuple(ds.episodes()[:1]), tmp_path / "v3.zarr"), options)
    root = zarr.open_group(str(tmp_path / "v3.zarr"), mode="r")
    assert root.metadata.zarr_format == 3
    small = root["data/head"][:]
    assert small.shape == (30, 48, 64, 3)
    # halving each side averages 2x2 blocks: the mean colour is kept, the detail is not invented
    assert abs(float(small.mean()) - float(rendered[0].mean())) < 2.0
    assert np.array_equal(root["data/action"][:], source_arrays(short, [0])["action"])


def test_zarr_same_input_same_bytes(short, tmp_path):
    ds = Dataset.open(short)
    for name in ("a", "b"):
        export_zarr(ExportRequest(ds, tuple(ds.episodes()), tmp_path / f"{name}.zarr", state_only=True))
    files = sorted(p.relative_to(tmp_path / "a.zarr") for p in (tmp_path / "a.zarr").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(tmp_path / "b.zarr") for p in (tmp_path / "b.zarr").rglob("*")
                           if p.is_file())
    for rel in files:
        a, b = (tmp_path / n / rel for n in ("a.zarr", "b.zarr"))
        if rel == Path(".zattrs"):  # the export time is a wall-clock fact
            pa, pb = (json.loads(p.read_text())["x2_provenance"] for p in (a, b))
            pa.pop("exported_utc"), pb.pop("exported_utc")
            assert pa == pb
        else:
            assert a.read_bytes() == b.read_bytes(), rel


# ---- hdf5 ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hdf5_export(short, tmp_path_factory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("hdf5_out")
    target = out / "short.hdf5"
    args = ["export", "hdf5", str(short), "--out", str(target), "--size", str(SIZE), "--overwrite"]
    kill = kill_run(args, target, out, seed=7)
    complete = None
    if target.exists():
        with h5py.File(target, "r") as f:
            complete = int(f["data"].attrs["total"]) == 90 and len(f["data"]) == 3
    stdout = run_after_kill(args, out)
    return {"path": target, "kill": kill, "complete_after_kill": complete, "stdout": stdout,
            "leftovers": sorted(p.name for p in out.iterdir() if "partial-" in p.name or ".old-" in p.name)}


def test_hdf5_killed_exports_leave_nothing_or_a_complete_file(hdf5_export):
    assert hdf5_export["complete_after_kill"] in (None, True)
    assert hdf5_export["leftovers"] == []
    first = hdf5_export["stdout"].splitlines()[0]
    assert first.startswith("dataset: ") and first.endswith("short")  # the first line names the dataset


def test_demo_names_sort_as_strings_and_as_robomimic_does():
    names = demo_names(1001)
    robomimic_order = [names[i] for i in np.argsort([int(n[5:]) for n in names])]
    assert sorted(names) == robomimic_order == names
    assert names[0] == "demo_000000" and names[-1] == "demo_001000"


def test_hdf5_has_robomimic_layout(hdf5_export, short, rendered):
    expected = source_arrays(short, [0, 1, 2])
    with h5py.File(hdf5_export["path"], "r") as f:
        data = f["data"]
        assert int(data.attrs["total"]) == 90
        env_args = json.loads(data.attrs["env_args"])
        assert env_args["env_name"] == "fruit_in_microwave" and {"type", "env_kwargs"} <= set(env_args)
        demos = list(data.keys())
        robomimic_order = [demos[i] for i in np.argsort([int(d[5:]) for d in demos])]
        assert demos == robomimic_order == sorted(demos)
        assert [int(data[d].attrs["x2_episode"]) for d in robomimic_order] == [0, 1, 2]
        with Episode(Dataset.open(short).episode_path(0)) as ep:
            assert data[demos[0]].attrs["model_file"] == ep.attrs["model_xml"]
            assert int(data[demos[0]].attrs["seed"]) == ep.attrs["seed"]
        lo = 0
        for i, name in enumerate(demos):
            demo = data[name]
            n = int(demo.attrs["num_samples"])
            assert n == 30 and bool(demo.attrs["success"]) is False
            assert np.array_equal(demo["actions"][:], expected["action"][lo:lo + n])
            assert np.array_equal(demo["states"][:], expected["mujoco_state"][lo:lo + n])
            assert np.array_equal(demo["obs/state"][:], expected["state"][lo:lo + n])
            assert np.array_equal(demo["obs/left_ee_pose"][:], expected["ee_pose"][lo:lo + n, 0])
            assert demo["rewards"].shape == (n,) and not demo["rewards"][:].any()  # unfinished episodes
            assert demo["dones"][:].tolist() == [0] * (n - 1) + [1]
            assert np.array_equal(demo["obs/head_image"][:], rendered[i])
            assert demo["obs/head_image"].compression == "gzip"
            for key in demo["obs"]:
                if isinstance(demo[f"obs/{key}"], h5py.Dataset):
                    obs, nxt = demo[f"obs/{key}"][:], demo[f"next_obs/{key}"][:]
                    assert np.array_equal(nxt[:-1], obs[1:]) and np.array_equal(nxt[-1], obs[-1]), key
            signals = demo["obs/datagen_info/subtask_term_signals"]
            assert set(signals) == {"open_door", "pick_fruit", "place_fruit", "close_door", "retract"}
            assert not any(signals[k][:].any() for k in signals)  # nothing was completed in 30 frames
            assert demo["obs/datagen_info/eef_pose/left"].shape == (n, 4, 4)
            for a, arm in enumerate(("left", "right")):
                assert np.array_equal(demo[f"obs/{arm}_subtask_index"][:], expected["arm_subtask_index"][lo:lo + n, a])
            lo += n
        assert [m.decode() for m in f["mask/train"][:]] == [demos[0], demos[2]]
        assert [m.decode() for m in f["mask/valid"][:]] == [demos[1]]
        prov = json.loads(f.attrs["x2_provenance"])
        assert [e["index"] for e in prov["episodes"]] == [0, 1, 2]
        assert set(prov["camera_lenses"]) == set(prov["cameras"])


def test_hdf5_term_signals_switch_at_the_dag_events(synth, tmp_path):
    ds = Dataset.open(synth)
    records = ds.episodes()
    export_hdf5(ExportRequest(ds, tuple(records), tmp_path / "fruit.hdf5", state_only=True))
    with ds.load(records[0].index) as ep:
        events = dict(reversed(ep.events))  # first completion of each node
        frames, segments = ep.frames, ep.segments
    assert len(events) >= 3
    with h5py.File(tmp_path / "fruit.hdf5", "r") as f:
        demo = f["data/demo_000000"]
        signals = demo["obs/datagen_info/subtask_term_signals"]
        for node, frame in events.items():
            s = signals[node][:]
            assert s.dtype == bool and s.shape == (frames,)
            assert not s[:frame].any() and s[frame:].all(), node
            # Isaac Lab Mimic's cut: the first 0 -> 1 step ends the subtask, demo[start:end] style
            end = int(np.flatnonzero(np.diff(s.astype(int)))[0]) + 2
            segment = next(seg for seg in segments if seg.node == node)
            assert end == segment.end, node
        done_at = max(events.values())
        rewards = demo["rewards"][:]
        assert bool(demo.attrs["success"]) and rewards[done_at - 1:].all() and not rewards[:done_at - 1].any()
        assert "head_image" not in demo["obs"]


def test_hdf5_refuses_existing_target_and_unknown_camera(hdf5_export, short):
    target = hdf5_export["path"]
    refused = run_x2(["export", "hdf5", str(short), "--out", str(target)], cwd=target.parent)
    assert refused.returncode == 2 and "target: found an existing file" in refused.stderr
    bad = run_x2(["export", "hdf5", str(short), "--out", str(target.with_name("x.hdf5")), "--cameras", "nope",
                  "--size", str(SIZE)], cwd=target.parent)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "cameras: found ['nope']; allowed: the model's cameras" in bad.stderr
    assert not target.with_name("x.hdf5").exists()


def test_without_cameras_both_export_what_x2_render_stored(short, tmp_path):
    import shutil

    from helpers.stored_images import store_images

    shutil.copytree(short, tmp_path / "ds")
    store_images(tmp_path / "ds", ["head"], SIZE, invert=True)
    ds = Dataset.open(tmp_path / "ds")
    records = ds.episodes()[:1]
    export_zarr(ExportRequest(ds, tuple(records), tmp_path / "z.zarr"), ZarrOptions())
    root = zarr.open_group(str(tmp_path / "z.zarr"), mode="r")
    assert sorted(k for k in root["data"].array_keys() if root["data"][k].ndim == 4) == ["head"]
    with ds.load(records[0].index) as ep:
        stored = ep["observations/images/head"]
    assert np.array_equal(root["data/head"][:], stored)  # read, not drawn again at the default size
    export_hdf5(ExportRequest(ds, tuple(records), tmp_path / "h.hdf5"), Hdf5Options())
    with h5py.File(tmp_path / "h.hdf5", "r") as f:
        demo = f["data"][sorted(f["data"])[0]]
        assert sorted(k for k in demo["obs"] if k.endswith("_image")) == ["head_image"]
        assert np.array_equal(demo["obs/head_image"][:], stored)


# ---- per-arm labels of a real concurrent episode ---------------------------------------------------------
def zarr2_dump(store: Path, tmp_path: Path) -> tuple[dict, dict]:
    """(arrays, facts) of a replay buffer as zarr 2.x reads it, in its own environment."""
    dump = tmp_path / "dump.py"
    dump.write_text(ZARR2_DUMP)
    done = subprocess.run([zarr2_python(), str(dump), str(store), "dir", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(np.load(tmp_path / "out.npz")), json.loads((tmp_path / "out.json").read_text())


def first_run_end(column: np.ndarray, code: int) -> int | None:
    """The last frame of the first run of `code` in a label column (None: the code never occurs)."""
    at = np.flatnonzero(column == code)
    if not at.size:
        return None
    breaks = np.flatnonzero(np.diff(at) != 1)
    return int(at[breaks[0]] if breaks.size else at[-1])


def test_per_arm_labels_in_hdf5_and_zarr(synth, tmp_path):
    ds = Dataset.open(synth)
    records = ds.episodes()[:1]
    export_hdf5(ExportRequest(ds, tuple(records), tmp_path / "fruit.hdf5", state_only=True))
    export_zarr(ExportRequest(ds, tuple(records), tmp_path / "fruit.zarr", state_only=True))
    with ds.load(records[0].index) as ep:
        table, arms, node_arms, nodes = ep.arm_subtask_index, ep.arm_names, ep.node_arms, ep.subtask_names
        active = ep["labels/active_mask"]
    assert table is not None and node_arms is not None and arms == ["left", "right"]
    both = active[:, nodes.index("open_door")] & active[:, nodes.index("pick_fruit")]
    assert both.sum() > 50  # the arms really work side by side

    arrays, facts = zarr2_dump(tmp_path / "fruit.zarr", tmp_path)
    assert arrays["data/arm_subtask_index"].dtype == table.dtype
    assert np.array_equal(arrays["data/arm_subtask_index"], table)
    assert facts["arrays"]["arm_subtask_index"]["attrs"]["names"] == arms
    assert (arrays["data/arm_subtask_index"][both] == [nodes.index("open_door"), nodes.index("pick_fruit")]).all()

    with h5py.File(tmp_path / "fruit.hdf5", "r") as f:
        obs = f["data/demo_000000/obs"]
        flat = obs["datagen_info/subtask_term_signals"]
        assert set(flat) == set(nodes)  # the single-arm keys stay as they were
        by_arm = obs["datagen_info/subtask_term_signals_by_arm"]
        assert sorted(by_arm) == sorted(arms)
        for a, arm in enumerate(arms):
            column = obs[f"{arm}_subtask_index"][:]
            assert np.array_equal(column, table[:, a])
            assert np.array_equal(f[f"data/demo_000000/next_obs/{arm}_subtask_index"][:-1], column[1:])
            mine = [n for n in nodes if arm in node_arms[n]]
            assert set(by_arm[arm]) == set(mine)
            ends = {}
            for node in mine:
                s = by_arm[arm][node][:]
                assert s.dtype == bool and np.array_equal(s, flat[node][:]), (arm, node)
                end = first_run_end(column, nodes.index(node))
                assert end is not None, (arm, node)  # every node of this successful demo ran on its arms
                # Isaac Lab Mimic's cut: the first 0 -> 1 step is the last frame of the arm's segment for the node
                assert not s[:end].any() and s[end:].all(), (arm, node)
                ends[node] = end
            assert [str(n) for n in by_arm[arm].attrs["order"]] == sorted(mine, key=ends.__getitem__)
        assert (obs["left_subtask_index"][:][both] == nodes.index("open_door")).all()
        assert (obs["right_subtask_index"][:][both] == nodes.index("pick_fruit")).all()


def test_an_episode_without_per_arm_labels_exports_as_before(synth, tmp_path):
    """No per-arm keys, and every other array the same bytes as in the export of the same episode with its
    per-arm labels: the additions are the only change."""
    old = Dataset.open(strip_arm_labels(copy_dataset(synth, tmp_path / "old")))
    new = Dataset.open(synth)
    for name, ds in (("old", old), ("new", new)):
        records = tuple(ds.episodes()[:1])
        export_hdf5(ExportRequest(ds, records, tmp_path / f"{name}.hdf5", state_only=True))
        export_zarr(ExportRequest(ds, records, tmp_path / f"{name}.zarr", state_only=True))
    old_files = {p.relative_to(tmp_path / "old.zarr") for p in (tmp_path / "old.zarr").rglob("*") if p.is_file()}
    new_files = {p.relative_to(tmp_path / "new.zarr") for p in (tmp_path / "new.zarr").rglob("*") if p.is_file()}
    assert {p.parts[:2] for p in new_files - old_files} == {("data", "arm_subtask_index")}
    for rel in sorted(old_files - {Path(".zattrs")}):  # (.zattrs: the provenance names the episode's checksum)
        assert (tmp_path / "old.zarr" / rel).read_bytes() == (tmp_path / "new.zarr" / rel).read_bytes(), rel

    def datasets(path: Path) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        with h5py.File(path, "r") as f:
            f.visititems(lambda name, obj: out.__setitem__(name, obj[()].tobytes())
                         if isinstance(obj, h5py.Dataset) else None)
        return out

    old_sets, new_sets = datasets(tmp_path / "old.hdf5"), datasets(tmp_path / "new.hdf5")
    added = sorted(set(new_sets) - set(old_sets))
    per_arm = ("left_subtask_index", "right_subtask_index")
    assert added and all("subtask_term_signals_by_arm/" in k or k.endswith(per_arm) for k in added)
    assert set(old_sets) <= set(new_sets) and all(old_sets[k] == new_sets[k] for k in old_sets)


def test_older_and_newer_episodes_export_together(synth, tmp_path):
    """A synthesis resumed after an upgrade: an episode without per-arm labels, then newer ones. Every
    episode gets the per-arm arrays; the older one's columns follow the format's rule for it (every node on
    every arm: each column is its subtask_index)."""
    ds = Dataset.open(strip_arm_labels(copy_dataset(synth, tmp_path / "both")))
    record_short_dataset(ds.root, episodes=1, ticks=8)
    ds = Dataset.open(ds.root)
    records = tuple(ds.episodes())
    export_hdf5(ExportRequest(ds, records, tmp_path / "both.hdf5", state_only=True))
    export_zarr(ExportRequest(ds, records, tmp_path / "both.zarr", state_only=True))
    with ds.load(records[0].index) as old:
        labels, frames = old["labels/subtask_index"], old.frames
    arrays, _ = zarr2_dump(tmp_path / "both.zarr", tmp_path)
    table = arrays["data/arm_subtask_index"]
    assert table.shape == (frames + 8, 2)
    assert np.array_equal(table[:frames], np.stack([labels, labels], axis=1))
    with h5py.File(tmp_path / "both.hdf5", "r") as f:
        for arm in ("left", "right"):
            assert np.array_equal(f[f"data/demo_000000/obs/{arm}_subtask_index"][:], labels)
            assert len(f[f"data/demo_000001/obs/{arm}_subtask_index"]) == 8
