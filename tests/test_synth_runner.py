"""`x2 synth` as a whole: determinism across worker counts, verified episodes, the report, and bad
bindings failing before any worker starts."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from x2.cli.app import _mount, app
from x2.datasets import Dataset
from x2.labeling import topological_order
from x2.seeding import slot_seed
from x2.sim.mujoco.backend import MujocoBackend
from x2.spec import load_env
from x2.synth.runner import REPORT_NAME, SynthConfig, SynthRun
from x2.tasks.predicates import evaluate

_mount()
runner = CliRunner()


def _states(path: Path) -> list[bytes]:
    ds = Dataset.open(path)
    out = []
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            out.append(ep["states"].tobytes())
    return out


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("synth")
    paths = []
    for workers in (1, 2):
        path = root / f"w{workers}"
        progress = SynthRun(SynthConfig("pick_place", n=3, workers=workers, seed=11), path).run()
        assert progress.accepted == 3, progress.reasons
        paths.append(path)
    return paths[0], paths[1]


def test_same_seed_same_bytes_whatever_the_workers(two_runs: tuple[Path, Path]) -> None:
    one, two = two_runs
    assert _states(one) == _states(two)
    seeds = [r.seed for r in Dataset.open(one).episodes()]
    report = json.loads((one / REPORT_NAME).read_text())
    accepted_attempts = [a["index"] for a in report["attempts"] if a["accepted"]]
    assert seeds == [slot_seed(11, i) for i in accepted_attempts]


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
                assert all(evaluate(backend, c.name, c.args) for c in node.success), sink
    assert topological_order(task.node_ids, task.edges)


def test_report_counts_and_reasons(two_runs: tuple[Path, Path]) -> None:
    report = json.loads((two_runs[1] / REPORT_NAME).read_text())
    assert report["accepted"] == 3 and report["attempted"] == len(report["attempts"])
    assert sum(report["rejections"].values()) == report["attempted"]
    assert report["rejections"].get("accepted") == 3
    assert report["master_seed"] == 11 and report["workers"] == 2


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
