"""x2 eval end to end: policy services over a real websocket (only the policy is a function where it is not one of
x2's own), episodes recorded as ordinary x2 episodes, faults recorded and survived, the report recomputed from the
episodes, the split guard, kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.policy_serving import serving
from helpers.x2_cli import HEADLESS_ENV, run_x2

from x2 import format as fmt
from x2.base.errors import PolicyError
from x2.datasets import Dataset
from x2.eval.evaluate import REPORT_JSON, write_report
from x2.eval.report import build_report
from x2.eval.runner import EvalRun, open_eval_pool
from x2.eval.seeds import plan_split
from x2.eval.session import EvalSetup
from x2.policy.chunks import ChunkExecution
from x2.policy.protocol import ACTIONS, ServiceInfo
from x2.policy.services import ServeOptions, make_service
from x2.processes.pool import WorkerLost
from x2.synth.options import SessionOptions
from x2.synth.runner import SynthConfig, SynthRun

pytestmark = pytest.mark.timeout(300)
TASK = "pick_place"


def evaluate(url: str, root: Path, n: int, seed: int = 1, workers: int = 1, timeout_s: float = 30.0,
             max_ticks: int | None = None) -> Path:
    plan = plan_split(TASK, None, "train", None, seed, n)
    setup = EvalSetup(TASK, None, plan.variant, plan.master_seed, url, timeout_s, max_ticks=max_ticks)
    pool = open_eval_pool(workers, None)
    try:
        EvalRun(setup, plan, root / "train", pool).run()
    finally:
        if pool is not None:
            pool.shutdown()
    return root / "train"


def episodes(path: Path) -> list[dict[str, Any]]:
    ds = Dataset.open(path)
    out = []
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            out.append({"seed": record.seed, "slot": record.slot, "success": ep.success, "source": ep.source,
                        "action": ep[fmt.ACTION], "states": ep[fmt.STATES], "digest": record.digest,
                        "policy": ep.json_attr(fmt.POLICY_ATTR)})
    return out


@pytest.fixture(scope="module")
def synthesised(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three attempts of x2 synth from master seed 1, rejected ones kept: the worlds x2 eval's seed 1 meets."""
    path = tmp_path_factory.mktemp("synth") / "pick"
    SynthRun(SynthConfig(SessionOptions(TASK), n=3, workers=1, seed=1, keep_failed=True, max_attempts=3), path).run()
    return path


class Misbehaving:
    """Holds the home pose, except in the episode of slot `k` in `faults`, where it answers as named."""

    faults = {1: "nan", 2: "shape", 3: "late", 4: "degrees"}

    def __init__(self) -> None:
        self.slot, self.home = -1, np.zeros(0)

    def metadata(self) -> dict[str, Any]:
        return ServiceInfo(kind="test", identity="misbehaving", lifecycle=True).to_metadata()

    def initialize_episode(self, episode: dict[str, Any]) -> None:
        self.slot, self.home = int(episode["slot"]), np.asarray(episode["home_action"], np.float32)

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        fault = self.faults.get(self.slot) if obs["x2.tick"] >= 5 else None  # (asked at ticks 0, 3, 6, ...)
        if fault == "nan":
            return {ACTIONS: np.full_like(self.home, np.nan)}
        if fault == "shape":
            return {ACTIONS: self.home[:-1][None]}
        if fault == "late":
            time.sleep(0.8)  # (past the 0.5 s timeout, over before the next episode's first call times out)
        if fault == "degrees":
            return {ACTIONS: np.degrees(self.home + 0.5)[None]}
        return {ACTIONS: np.repeat(self.home[None], 3, axis=0)}

    def finalize_episode(self, result: dict[str, Any]) -> None:
        pass


def test_faults_end_their_episode_with_the_reason_and_the_run_goes_on(tmp_path: Path) -> None:
    with serving(Misbehaving()) as url:
        path = evaluate(url, tmp_path, n=6, timeout_s=0.5, max_ticks=12)
    eps = episodes(path)
    assert [e["slot"] for e in eps] == list(range(6)) and {e["source"] for e in eps} == {"policy"}
    ended = [e["policy"]["ended"] for e in eps]
    assert ended[0] is None and ended[5] is None  # held the pose to --max-ticks: an ordinary failure
    assert [len(e["action"]) for e in eps] == [12, 6, 6, 6, 6, 12]  # a fault at tick 6 ends the episode there
    assert ended[1]["reason"] == "malformed" and "NaN" in ended[1]["detail"]
    assert ended[2]["reason"] == "malformed" and "shape (1, 13)" in ended[2]["detail"]
    assert ended[3]["reason"] == "timeout" and ended[3]["tick"] == 6
    assert ended[4]["reason"] == "malformed" and "units" in ended[4]["detail"]
    report = json.loads((write_report(tmp_path, [path]) and (tmp_path / REPORT_JSON)).read_text())
    numbers = report["tasks"][TASK]["train"]
    assert numbers["episodes"] == 6 and numbers["successes"] == 0
    assert numbers["failure_reasons"] == {"pick: horizon": 2, "pick: policy malformed": 3, "pick: policy timeout": 1}


class LosesSlot1:
    """A pool whose worker dies under the episode of slot 1 on every try (what a Ray pool then answers); the
    other units run here, in this process."""

    workers, shared_disk = 2, True

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        if args[0].slot == 1:
            future.set_exception(WorkerLost("worker lost on every try, 3 (ActorDiedError: node gone)"))
        else:
            future.set_result(fn(*args))
        return future

    def alive(self) -> int | None:
        return 1

    def retried(self) -> int:
        return 2

    def shutdown(self) -> None:
        pass


def test_an_episode_lost_with_its_worker_is_left_out_and_run_by_the_next_run(tmp_path: Path) -> None:
    plan = plan_split(TASK, None, "train", None, 1, 4)
    with serving(Misbehaving()) as url:
        setup = EvalSetup(TASK, None, plan.variant, plan.master_seed, url, max_ticks=6)
        progress = EvalRun(setup, plan, tmp_path / "train", LosesSlot1()).run()
        assert progress.lost == [1] and progress.done == 3 and progress.workers_alive == 1
        assert [e["slot"] for e in episodes(tmp_path / "train")] == [0, 2, 3]
        again = EvalRun(setup, plan, tmp_path / "train").run()
    assert again.lost == [] and again.skipped == 3 and again.done == 4
    assert sorted(e["slot"] for e in episodes(tmp_path / "train")) == [0, 1, 2, 3]


class OtherRobot(Misbehaving):
    def metadata(self) -> dict[str, Any]:
        return ServiceInfo(kind="test", identity="six joints", action_names=("j1", "j2", "j3", "j4", "j5", "j6",
                                                                             "gripper")).to_metadata()


def test_a_policy_for_another_action_layout_is_refused_before_any_episode(tmp_path: Path) -> None:
    with serving(OtherRobot()) as url, pytest.raises(PolicyError, match="action_names: found .*j1.*allowed: this"):
        evaluate(url, tmp_path, n=1)
    assert not (tmp_path / "train").exists()


def test_the_report_recomputes_from_the_episodes(tmp_path: Path) -> None:
    with serving(make_service("random", ServeOptions())) as url:
        path = evaluate(url, tmp_path, n=3, max_ticks=40)
    first = write_report(tmp_path, [path])
    assert build_report([path]) == {k: v for k, v in first.items() if k != "runs"}
    eps = episodes(path)
    numbers = first["tasks"][TASK]["train"]
    assert numbers["success_rate"] == sum(e["success"] for e in eps) / 3
    assert [row["seed"] for row in first["episodes"]] == [e["seed"] for e in eps]


def test_replay_scores_what_the_dataset_scored(synthesised: Path, tmp_path: Path) -> None:
    recorded = episodes(synthesised)
    with serving(make_service(f"replay:{synthesised}", ServeOptions())) as url:
        path = evaluate(url, tmp_path, n=3)
    replayed = {e["seed"]: e for e in episodes(path)}
    assert recorded and all(r["seed"] in replayed for r in recorded)
    for r in recorded:  # the same world, the same actions: the same states and the same verdict
        again = replayed[r["seed"]]
        assert again["success"] == r["success"]
        assert np.array_equal(again["states"][: len(r["states"])], r["states"])


def test_the_expert_repeats_synthesis_with_one_worker_or_two(synthesised: Path, tmp_path: Path) -> None:
    """`x2 eval --policy expert` starts x2 serve expert, two workers connect to it; an in-process server with one
    worker gives the same bytes; both repeat synthesis's accepted episodes action for action."""
    done = run_x2(["eval", "--task", TASK, "--policy", "expert", "-n", "3", "--split", "train", "--seed", "1",
                   "--workers", "2", "--dataset", str(tmp_path / "run")], cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "run" / REPORT_JSON).is_file() and (tmp_path / "run" / "eval_report.png").is_file()
    two = episodes(tmp_path / "run" / "train")
    with serving(make_service("expert", ServeOptions(task=TASK))) as url:
        one = episodes(evaluate(url, tmp_path / "inline", n=3))
    assert [(e["seed"], e["digest"] is not None) for e in one] == [(e["seed"], True) for e in two]
    for a, b in zip(one, two, strict=True):
        assert np.array_equal(a["action"], b["action"]) and np.array_equal(a["states"], b["states"])
    synth = {e["seed"]: e for e in episodes(synthesised)}
    for e in two:
        s = synth.get(e["seed"])
        if s is not None and s["success"]:
            assert e["success"] and np.array_equal(e["action"], s["action"])
    rollouts = str(tmp_path / "run" / "train")  # ordinary episodes: shown, relabelled from their states alone
    shown = run_x2(["datasets", "show", "0", "--dataset", rollouts], cwd=tmp_path)
    assert shown.returncode == 0 and "policy" in shown.stdout, shown.stderr
    labelled = run_x2(["label", "0", "--dataset", rollouts], cwd=tmp_path)
    assert labelled.returncode == 0, labelled.stdout + labelled.stderr


def test_the_split_guard_refuses_seeds_the_policy_was_trained_on(synthesised: Path, tmp_path: Path) -> None:
    done = run_x2(["eval", "--task", TASK, "--policy", "hold", "-n", "2", "--seed", "1", "--train-dataset",
                   str(synthesised), "--dataset", str(tmp_path / "run")], cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "training dataset" in done.stderr and str(synthesised) in done.stderr
    assert not (tmp_path / "run").exists()


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_kill_9_loses_no_finished_episode_and_leaves_no_service(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "x2", "eval", "--task", TASK, "--policy", "hold", "-n", "40", "--split", "train",
            "--workers", "1", "--max-ticks", "60", "--dataset", str(tmp_path / "run")]
    index = tmp_path / "run" / "train" / "episodes.jsonl"
    proc = subprocess.Popen(args, cwd=tmp_path, env=HEADLESS_ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None and not (
            index.is_file() and len(index.read_text().splitlines()) >= 2):
        time.sleep(0.1)
    assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
    children = _descendants(proc.pid)
    assert children  # the hold service
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(c) for c in children):
        time.sleep(0.1)
    assert not any(_alive(c) for c in children)
    before = {e["slot"]: e["digest"] for e in episodes(tmp_path / "run" / "train")}
    assert len(before) >= 2
    again = run_x2(args[3:], cwd=tmp_path, timeout=240)
    assert again.returncode == 0, again.stderr
    after = {e["slot"]: e["digest"] for e in episodes(tmp_path / "run" / "train")}
    assert sorted(after) == list(range(40)) and all(after[s] == d for s, d in before.items())


class Chunks(Misbehaving):
    """Answers at tick q a chunk of 4 whose row i moves the first joint by (10 q + i) milli-radians."""

    faults: dict[int, str] = {}

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        chunk = np.repeat(self.home[None], 4, axis=0).astype(np.float64)
        chunk[:, 0] += (10 * obs["x2.tick"] + np.arange(4)) * 1e-3
        return {ACTIONS: chunk}


@pytest.mark.parametrize(("execution", "expected"), [
    ("chunk", [0, 1, 2, 3, 40, 41]),
    ("2", [0, 1, 20, 21, 40, 41]),
    ("ensemble", None),  # asked every tick; each action the weighted mean of every chunk's prediction for it
])
def test_chunks_run_open_loop_or_temporally_ensembled(tmp_path: Path, execution: str, expected: list[int] | None
                                                      ) -> None:
    plan = plan_split(TASK, None, "train", None, 1, 1)
    with serving(Chunks()) as url:
        setup = EvalSetup(TASK, None, plan.variant, plan.master_seed, url, max_ticks=6,
                          execution=ChunkExecution.parse(execution))
        EvalRun(setup, plan, tmp_path / "train").run()
    got = episodes(tmp_path / "train")[0]["action"][:, 0].astype(np.float64)
    offsets = (got - got[0]) * 1e3
    if expected is None:
        weights = np.exp(-0.01 * np.arange(4))
        expected_f = []
        for t in range(6):
            predictions = [10 * q + (t - q) for q in range(max(0, t - 3), t + 1)]  # oldest first
            w = weights[: len(predictions)]
            expected_f.append(float(np.dot(w, predictions) / w.sum()))
        assert np.allclose(offsets, expected_f, atol=1e-3)
    else:
        assert np.allclose(offsets, expected, atol=1e-3)
