"""`--ray local`: the units of `x2 synth`, `x2 render`, `x2 augment replay` and `x2 eval` run as Ray actors, and
the dataset is the one a local run makes, byte for byte (all but /timing, the wall clock's, for synthesis and
evaluation; every byte for rendering and augmentation).

Each test starts its own local Ray instance through the real command (a few seconds each).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.dataset_contents import deterministic_contents
from helpers.real_dataset import record_short_dataset
from helpers.x2_cli import run_x2

from x2.format import AUGMENTATION_REPORT_FILE, SYNTH_REPORT_FILE
from x2.render import render_dataset
from x2.sim.camera import ImageSize
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun

pytest.importorskip("ray", reason="x2[ray] is not installed (the dev extra pulls it)")

SEED = 5


def test_synth_on_ray_is_the_local_run_byte_for_byte(tmp_path: Path) -> None:
    local = tmp_path / "local"
    assert SynthRun(SynthConfig(SessionOptions("pick_place"), n=4, workers=2, seed=SEED), local).run().accepted == 4
    out = run_x2(["synth", "--task", "pick_place", "-n", "4", "--seed", str(SEED), "--workers", "2",
                  "--ray", "local", "--dataset", str(tmp_path / "ray")], tmp_path, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr == ""  # nothing of Ray's own chatter
    assert "2 workers on Ray (local)" in out.stdout
    a, b = deterministic_contents(local), deterministic_contents(tmp_path / "ray")
    assert len(a) == 4 and a == b
    report = json.loads((tmp_path / "ray" / SYNTH_REPORT_FILE).read_text())
    assert report["ray"] == {"address": "local", "units_retried": 0, "workers_alive": 2}
    assert report["workers"] == 2 and report["accepted"] == 4


def test_render_on_ray_is_the_local_render_byte_for_byte(tmp_path: Path) -> None:
    pristine = tmp_path / "pristine"
    record_short_dataset(pristine, episodes=3, ticks=8)
    local, ray = tmp_path / "local", tmp_path / "ray"
    shutil.copytree(pristine, local)
    shutil.copytree(pristine, ray)
    render_dataset(local, ("head", "left_wrist"), ImageSize(48, 64), workers=1)
    out = run_x2(["render", str(ray), "--cameras", "head,left_wrist", "--size", "48x64", "--workers", "2",
                  "--ray", "local"], tmp_path, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr == ""

    def files(root: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((root / "episodes").glob("*.h5"))}

    assert len(files(ray)) == 3 and files(ray) == files(local)
    assert (ray / "episodes.jsonl").read_bytes() == (local / "episodes.jsonl").read_bytes()
    assert not (ray / ".rendering").exists() or not any((ray / ".rendering").iterdir())


def test_augment_on_ray_is_the_local_augmentation_byte_for_byte(tmp_path: Path, synthesised_fruit: Path) -> None:
    from x2.augment.augment import AugmentRequest, augment_dataset

    local = tmp_path / "local"
    augment_dataset(synthesised_fruit, local, AugmentRequest(per_episode=3, objects=2))
    out = run_x2(["augment", "replay", str(synthesised_fruit), "--per-episode", "3", "--objects", "2", "--workers",
                  "2", "--ray", "local", "--out", str(tmp_path / "ray")], tmp_path, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr == ""

    def files(root: Path) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted((root / "episodes").glob("*.h5"))}

    assert len(files(local)) == 3 and files(tmp_path / "ray") == files(local)
    for name in ("episodes.jsonl", AUGMENTATION_REPORT_FILE):
        assert (tmp_path / "ray" / name).read_bytes() == (local / name).read_bytes()


def test_eval_on_ray_is_the_local_evaluation_byte_for_byte(tmp_path: Path) -> None:
    common = ["eval", "--task", "pick_place", "--policy", "random", "-n", "3", "--split", "train", "--max-ticks",
              "12", "--workers", "2"]
    local = run_x2([*common, "--dataset", str(tmp_path / "local")], tmp_path, timeout=240)
    assert local.returncode == 0, local.stdout + local.stderr
    out = run_x2([*common, "--ray", "local", "--dataset", str(tmp_path / "ray")], tmp_path, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr == ""
    assert "2 workers on Ray (local)" in out.stdout and "lost with their worker" not in out.stdout
    a, b = deterministic_contents(tmp_path / "local" / "train"), deterministic_contents(tmp_path / "ray" / "train")
    assert len(a) == 3 and a == b
    report = json.loads((tmp_path / "ray" / "eval_report.json").read_text())
    assert report["runs"][0]["lost_with_their_worker"] == [] and report["runs"][0]["run_now"] == 3


def test_importing_x2_imports_no_ray() -> None:
    code = ("import sys, x2.cli.app, x2.synth.runner, x2.render.dataset, x2.processes.pool; x2.cli.app._mount(); "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_unit_that_keeps_killing_its_worker_is_lost_and_the_pool_goes_on() -> None:
    """Ray restarts the killed actor and the unit is tried again; after the last try the unit ends in WorkerLost
    (synthesis records it as a rejected attempt, "worker lost") and the restarted actor takes the next unit.
    In a subprocess: Ray leaves threads behind in a process that used it, and a later test's pool forks."""
    code = textwrap.dedent("""\
        import os
        from x2.processes.pool import RayTarget, WorkerLost, open_pool
        from x2.processes.ray_cluster import TASK_RETRIES

        pool = open_pool(1, ray=RayTarget("local"))
        try:
            assert pool.submit(os.getpid).result(timeout=60) > 0
            try:
                pool.submit(os._exit, 1).result(timeout=120)  # (each try kills the actor: 1 + TASK_RETRIES)
            except WorkerLost as lost:
                assert "worker lost on every try" in str(lost), lost
            else:
                raise AssertionError("no WorkerLost")
            assert pool.submit(os.getpid).result(timeout=120) > 0
            assert pool.alive() == 1 and pool.retried() == TASK_RETRIES >= 1, (pool.alive(), pool.retried())
        finally:
            pool.shutdown()
        print("ok")
        """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    # (Ray itself says on stdout that a worker died: what it prints is its own)
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1] == "ok", out.stdout + out.stderr


def test_a_lost_attempt_is_a_rejected_attempt_saying_so() -> None:
    from concurrent.futures import Future

    from x2.base.seeding import slot_seed
    from x2.processes.pool import WorkerLost
    from x2.synth.attempt import AttemptUnit
    from x2.synth.runner import _outcome

    future: Future[object] = Future()
    future.set_exception(WorkerLost("worker lost on every try (ActorDiedError: node gone)"))
    outcome = _outcome(AttemptUnit(7, slot_seed(SEED, 7), False), future)  # type: ignore[arg-type]
    assert (outcome.index, outcome.seed, outcome.accepted, outcome.reason) == (7, slot_seed(SEED, 7), False,
                                                                                "worker lost")


def test_a_killed_local_ray_driver_leaves_no_ray_process_behind() -> None:
    """SIGKILL the driver of a `--ray local` pool: the reaper it started ends the Ray agents that would otherwise
    idle for ever, and removes the run's Ray folder."""
    from x2.processes.reaper import holders

    code = textwrap.dedent("""\
        import os, sys, time
        from x2.processes.pool import RayTarget, open_pool

        pool = open_pool(1, ray=RayTarget("local"))
        assert pool.submit(os.getpid).result(timeout=120) > 0
        print(pool._temp, flush=True)
        time.sleep(600)
        """)
    driver = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    try:
        assert driver.stdout is not None
        folder = Path(driver.stdout.readline().strip())
        assert folder.is_dir() and holders(folder), folder  # (Ray runs from it)
    finally:
        driver.kill()
        driver.wait()
    deadline = time.monotonic() + 60
    while (holders(folder) or folder.exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not holders(folder) and not folder.exists()


def test_workers_draw_with_the_drivers_renderer(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--renderer filament` sets X2_RENDERER in the driver; a worker `ray start` made elsewhere has only the
    runtime environment, so the choice (and the X display Filament needs) must travel in it."""
    from x2.processes.ray_cluster import worker_env
    from x2.sim.camera import RENDERER_ENV, choose_renderer

    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.setenv(RENDERER_ENV, "classic")  # (so that the teardown puts back what was there)
    monkeypatch.delenv(RENDERER_ENV)
    assert RENDERER_ENV not in worker_env()
    choose_renderer("filament")
    env = worker_env()
    assert env[RENDERER_ENV] == "filament" and env["DISPLAY"] == ":99"
