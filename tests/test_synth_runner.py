"""`x2 synth` as a whole: determinism across worker counts, verified episodes, the report, and bad
bindings failing before any worker starts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers.dataset_contents import deterministic_contents
from typer.testing import CliRunner

import x2
from x2.base.errors import SpecError, X2Error
from x2.base.seeding import slot_seed
from x2.cli.app import _mount, app
from x2.datasets import Dataset
from x2.envspec import load_env
from x2.format import MANIFEST_FILE, SYNTH_REPORT_FILE
from x2.labeling import topological_order
from x2.sim.mujoco.backend import MujocoBackend
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun
from x2.tasks.predicates import holds

_mount()
runner = CliRunner()


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """`-n 4` once with 2 workers, and `-n 2` twice into one dataset (1 worker, then 2)."""
    root = tmp_path_factory.mktemp("synth")
    once = root / "once"
    assert SynthRun(SynthConfig(SessionOptions("pick_place"), n=4, workers=2, seed=11), once).run().accepted == 4
    twice = root / "twice"
    for workers in (1, 2):
        progress = SynthRun(SynthConfig(SessionOptions("pick_place"), n=2, workers=workers, seed=11), twice).run()
        assert progress.accepted == 2, progress.reasons
    return once, twice


def test_n2_twice_is_n4_once_byte_for_byte_whatever_the_workers(two_runs: tuple[Path, Path]) -> None:
    once, twice = two_runs
    a, b = deterministic_contents(once), deterministic_contents(twice)
    assert len(a) == 4 and [sorted(x) for x in a] == [sorted(y) for y in b]
    for ea, eb in zip(a, b, strict=True):
        for key in ea:
            assert ea[key] == eb[key], key
    assert {"states", "action", "labels/subtask_index", "labels/progress", "dag/completion_frame"} <= set(a[0])
    records = Dataset.open(once).episodes()
    assert [(r.master_seed, r.slot) for r in records] == [(11, r.slot) for r in records]
    report = json.loads((once / SYNTH_REPORT_FILE).read_text())
    accepted_attempts = [a["index"] for a in report["attempts"] if a["accepted"]]
    assert [r.seed for r in records] == [slot_seed(11, i) for i in accepted_attempts]
    assert len({r.seed for r in records}) == 4


def test_a_rejected_attempt_is_used_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that ends on a rejected attempt: the next run starts after it, not at it again."""
    import x2.synth.attempt as attempt

    real = attempt._verdict
    rejected = slot_seed(3, 1)

    def verdict(result, executor):  # attempt 1's demonstration is turned down, the rest as they come
        return ("predicate false", "turned down by the test") if result.seed == rejected else real(result, executor)

    monkeypatch.setattr(attempt, "_verdict", verdict)
    path = tmp_path / "ds"
    first = SynthRun(SynthConfig(SessionOptions("pick_place"), n=2, workers=1, seed=3, max_attempts=2), path).run()
    assert (first.accepted, first.attempted) == (1, 2)
    ds = Dataset.open(path)
    assert [r.slot for r in ds.episodes()] == [0] and ds.next_slot(3) == 2
    second = SynthRun(SynthConfig(SessionOptions("pick_place"), n=1, workers=1, seed=3), path)
    assert second.run().accepted == 1 and second.first_attempt == 2
    assert [r.slot for r in Dataset.open(path).episodes()] == [0, 2]


def test_accepted_episodes_respect_the_dag_and_end_in_every_sink(two_runs: tuple[Path, Path]) -> None:
    path = two_runs[0]
    env = load_env("pick_place")
    task = env.task
    assert task is not None
    sinks = [n for n in task.node_ids if not any(a == n for a, _ in task.edges)]
    backend = MujocoBackend(env)
    ds = Dataset.open(path)
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            assert ep.success and ep.attrs["source"] == "synth"
            frames = dict(ep.events)
            assert set(frames) == set(task.node_ids)
            for a, b in task.edges:
                assert frames[a] <= frames[b], (a, b, frames)
            # the final stored state satisfies every sink's success predicate
            backend.reset(int(ep.attrs["seed"]))
            backend.set_state(ep["states"][-1])
            for sink in sinks:
                node = next(n for n in task.nodes if n.id == sink)
                assert all(holds(backend, c.name, c.args) for c in node.success), sink
    assert topological_order(task.node_ids, task.edges)


def test_every_episode_says_how_its_motions_were_made(two_runs: tuple[Path, Path]) -> None:
    """The schedule and motion settings are in each episode, not only in the last run's report: a run may resume a
    dataset another run began with other settings."""
    report = json.loads((two_runs[0] / SYNTH_REPORT_FILE).read_text())
    ds = Dataset.open(two_runs[0])
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            how = json.loads(str(ep.attrs["synthesis"]))
        assert how == {"schedule": "concurrent", "motion": report["motion"]} and report["schedule"] == "concurrent"


def test_report_counts_and_reasons(two_runs: tuple[Path, Path]) -> None:
    report = json.loads((two_runs[1] / SYNTH_REPORT_FILE).read_text())  # the second of the two runs
    assert report["accepted"] == 2 and report["attempted"] == len(report["attempts"])
    assert sum(report["rejections"].values()) == report["attempted"]
    assert report["rejections"].get("accepted") == 2 and report["first_attempt"] >= 2
    assert report["master_seed"] == 11 and report["workers"] == 2


def test_a_pools_manifest_names_the_world_as_an_inline_runs(two_runs: tuple[Path, Path]) -> None:
    """`once` was created by a pool, whose parent builds no simulator (a worker named the world's rows), `twice`
    by an inline run on its own simulator: the same manifest, all but the time it was made."""
    once, twice = (json.loads((path / MANIFEST_FILE).read_text()) for path in two_runs)
    assert once.pop("created") and twice.pop("created")
    assert once == twice
    backend = MujocoBackend(load_env("pick_place"))
    assert tuple(once["joint_names"]) == backend.robot_joint_names and len(backend.robot_joint_names) > 6


def test_a_pools_parent_builds_no_simulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import x2.synth.options as options  # (where a session's simulator is made: SessionOptions.compile)

    parent, built = os.getpid(), []
    real = options.make_backend

    def make_backend(env: object) -> object:  # (a forked worker counts in its own copy of `built`)
        if os.getpid() == parent:
            built.append(env)
        return real(env)  # type: ignore[arg-type]

    monkeypatch.setattr(options, "make_backend", make_backend)
    run = SynthRun(SynthConfig(SessionOptions("pick_place"), n=1, workers=2, seed=11), tmp_path / "ds")
    assert run.run().accepted == 1 and built == [] and run.session is None
    inline = SynthRun(SynthConfig(SessionOptions("pick_place"), n=1, workers=1, seed=11), tmp_path / "inline")
    assert len(built) == 1 and inline.session is not None  # (the one-worker run makes its attempts here)


def test_a_world_that_does_not_compile_is_a_workers_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found only once the world is built, which a pool's parent does not do: the first worker's unit says it, as
    one line, before the dataset is made."""
    shipped = Path(x2.__file__).parent / "robots"
    robot = (shipped / "artixon-g.yaml").read_text().replace("artixon/", f"{shipped}/artixon/")
    (tmp_path / "specs" / "robots").mkdir(parents=True)
    (tmp_path / "specs" / "robots" / "artixon-g.yaml").write_text(robot.replace("[left_j1,", "[left_jX,"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as caught:
        SynthRun(SynthConfig(SessionOptions("pick_place"), n=1, workers=2), tmp_path / "ds").run()
    assert re.fullmatch(r"specs/robots/artixon-g.yaml: arms.left.joints: found joint 'left_jX', which is not in the "
                        r"robot's world; .*", str(caught.value)), str(caught.value)
    assert not (tmp_path / "ds").exists()


BAD_TASK = """\
name: bad
instruction: "Put the {block} on the {plate}."
scene: tabletop_booth
robot: artixon-g
nodes:
  pick:
    success: {object_lifted: {obj: "@target_object"}}
    skill: {name: pick, arm: right, target: "@target_object"}
"""


@pytest.mark.parametrize("text, pattern", [
    (BAD_TASK.replace("name: pick, arm", "name: yeet, arm"), r"t.yaml:8: nodes.pick.skill.name: found 'yeet'"),
    (BAD_TASK.replace('target: "@target_object"}', 'target: "@nothing"}'),
     r"t.yaml:8: nodes.pick.skill.target: found @nothing matching nothing"),
    (BAD_TASK.replace("scene: tabletop_booth", "scene: far"), r"far.yaml:\d+: regions.block_area: found corner"),
    (BAD_TASK.replace("arm: right,", "arm: right, speed: fast,"), r"nodes.pick.skill.speed: found unknown parameter"),
])
def test_bad_binding_fails_before_any_worker(text: str, pattern: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "specs" / "scenes").mkdir(parents=True)
    (tmp_path / "specs" / "scenes" / "far.yaml").write_text(textwrap.dedent("""\
        include: tabletop_booth.yaml
        name: far
        regions:
          block_area: {center: [0.95, -0.55], half_size: [0.02, 0.02]}
        """))
    (tmp_path / "t.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    result = runner.invoke(app, ["synth", "--task", "t.yaml", "-n", "2", "--workers", "2"])
    out = result.output.strip()
    assert result.exit_code == 2 and len(out.splitlines()) == 1 and "Traceback" not in out, out
    assert re.search(pattern, out), out
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_attempt_seeds_are_independent_of_order() -> None:
    children = np.random.SeedSequence(5).spawn(6)
    assert [slot_seed(5, i) for i in range(6)] == [int(c.generate_state(1, np.uint32)[0]) for c in children]


def test_an_error_inside_an_attempt_stops_the_run_with_its_line(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec mistake that only shows once the world runs (an asset part naming a site its MJCF lacks) is
    not a rejection: every attempt would fail alike. It stops the run, from a worker, with one line."""
    objects = tmp_path / "specs" / "objects"
    objects.mkdir(parents=True)
    shutil.copy(Path(x2.__file__).parent / "assets" / "objects" / "plate.xml", objects / "plate.xml")
    (objects / "odd_plate.yaml").write_text(textwrap.dedent("""\
        name: odd_plate
        mjcf: plate.xml
        tags: [surface]
        footprint_radius: 0.11
        parts: {rim: no_such_site}
        """))
    (tmp_path / "specs" / "scenes").mkdir(parents=True)
    (tmp_path / "specs" / "scenes" / "odd.yaml").write_text(textwrap.dedent("""\
        include: tabletop_booth.yaml
        name: odd
        objects:
          plate: {asset: odd_plate, region: plate_area}
        """))
    (tmp_path / "t.yaml").write_text(BAD_TASK.replace("scene: tabletop_booth", "scene: odd").replace(
        'success: {object_lifted: {obj: "@target_object"}}',
        'success: {object_inside: {obj: "@target_object", container: plate/rim}}'))
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["synth", "--task", "t.yaml", "-n", "3", "--workers", "2"])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    # (the runner mixes the progress table on stdout with the error line on stderr)
    assert lines[-1].endswith("error: no site named 'plate/no_such_site' in the world model"), result.output
    assert result.output.count("error:") == 1
    assert Dataset.open(tmp_path / "data" / "t").episodes() == []
    assert not (tmp_path / "data" / "t" / "slots.json").exists()  # no attempt was taken as a rejection


def _killed() -> None:
    os._exit(3)  # the worker dies before it answers (as under the OOM killer)


def test_a_worker_lost_before_it_names_the_world_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool's first unit names the world for the manifest: its worker dying is a one-line error, and no
    dataset is made."""
    import x2.synth.runner as runner

    monkeypatch.setattr(runner, "world_names", _killed)  # (the forked workers inherit it)
    with pytest.raises(X2Error) as caught:
        SynthRun(SynthConfig(SessionOptions("pick_place"), n=1, workers=2), tmp_path / "ds").run()
    assert str(caught.value).startswith("workers: found the worker asked for the world's joint names gone")
    assert "\n" not in str(caught.value) and not (tmp_path / "ds").exists()


BUG_IN_A_WORKER = """\
import sys
from pathlib import Path

import x2.synth.options as options
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun


def bug(env):
    raise RuntimeError("a bug in building the simulator")


options.make_backend = bug  # (inherited by the pool's workers: forked copies of this one-thread process)
try:
    SynthRun(SynthConfig(SessionOptions("pick_place"), n=1, workers=2), Path(sys.argv[1])).run()
except RuntimeError as exc:
    print("raised:", exc)
"""


def test_a_bug_in_a_workers_session_is_reported_as_the_bug(tmp_path: Path) -> None:
    """Not an X2Error: the parent raises the worker's own exception (an internal error, exit 1 at the CLI), not
    the one line that tells a user to run it again, and no dataset is made. (In a process of its own: in one
    that runs other threads, as a test runner's may, the pool spawns fresh workers that would not carry the bug.)"""
    script = tmp_path / "bug.py"
    script.write_text(BUG_IN_A_WORKER)
    run = subprocess.run([sys.executable, str(script), str(tmp_path / "ds")], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(Path(x2.__file__).parent.parent)})
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "raised: a bug in building the simulator", (run.stdout, run.stderr)
    assert not (tmp_path / "ds").exists()
