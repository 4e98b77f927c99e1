"""x2 eval correlate: the agreement numbers against their formulas written out here, the matching of a real
table's policies to x2 eval reports, and bad input refused in one line with nothing written."""

from __future__ import annotations

import json
import math
import threading
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from x2.cli.app import _mount, app
from x2.eval.agreement import bootstrap_pearson, kendall, mmrv, pearson, spearman
from x2.eval.evaluate import write_report
from x2.eval.report import EpisodeScore, _episode_row
from x2.eval.runner import EvalRun, dumps, open_eval_pool
from x2.eval.seeds import plan_split
from x2.eval.session import EvalSetup
from x2.policy.server import PolicyServer
from x2.policy.services import ServeOptions, make_service

_mount()
runner = CliRunner()

# A hand-made table: five policies, sim and real rates, with a tie in real (C, D) and one in sim (D, E).
SIM = [0.9, 0.7, 0.5, 0.3, 0.3]
REAL = [0.8, 0.4, 0.6, 0.6, 0.1]


def _ranks(values: list[float]) -> list[float]:
    # average ranks (1-based), ties sharing the mean of their positions
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _pearson(x: list[float], y: list[float]) -> float:
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy)


def _sign(v: float) -> int:
    return (v > 0) - (v < 0)


def test_the_numbers_agree_with_their_formulas() -> None:
    sim, real = np.array(SIM), np.array(REAL)
    # Pearson: the covariance over the product of the standard deviations
    assert pearson(sim, real) == pytest.approx(_pearson(SIM, REAL), abs=1e-12)
    # MMRV, SIMPLER's: for each i the largest |real_i - real_j| over j with (sim_i > sim_j) != (real_i > real_j)
    worst = []
    for i in range(5):
        gaps = [abs(REAL[i] - REAL[j]) for j in range(5) if (SIM[i] > SIM[j]) != (REAL[i] > REAL[j])]
        worst.append(max(gaps, default=0.0))
    assert mmrv(sim, real) == pytest.approx(sum(worst) / 5, abs=1e-12)
    # by hand: A none; B vs C, D (0.2); C vs B (0.2); D vs B (0.2) and E (sim tie, real 0.6 > 0.1: 0.5); E none
    assert sum(worst) / 5 == pytest.approx((0 + 0.2 + 0.2 + 0.5 + 0) / 5)
    # Spearman: Pearson of the average ranks
    assert spearman(sim, real) == pytest.approx(_pearson(_ranks(SIM), _ranks(REAL)), abs=1e-12)
    # Kendall tau-b: (concordant - discordant) / sqrt((n0 - ties in sim) * (n0 - ties in real))
    pairs = list(combinations(range(5), 2))
    s = sum(_sign(SIM[i] - SIM[j]) * _sign(REAL[i] - REAL[j]) for i, j in pairs)
    tied_sim = sum(SIM[i] == SIM[j] for i, j in pairs)
    tied_real = sum(REAL[i] == REAL[j] for i, j in pairs)
    expected = s / math.sqrt((len(pairs) - tied_sim) * (len(pairs) - tied_real))
    assert kendall(sim, real) == pytest.approx(expected, abs=1e-12)


def test_perfect_agreement_and_an_undefined_correlation() -> None:
    rates = np.array([0.1, 0.5, 0.9])
    assert pearson(rates, rates * 0.5) == pytest.approx(1.0)
    assert mmrv(rates, rates * 0.5) == 0.0
    assert pearson(rates, np.full(3, 0.4)) is None and spearman(rates, np.full(3, 0.4)) is None


def test_the_bootstrap_is_deterministic_and_holds_r() -> None:
    sim, real = np.array(SIM), np.array(REAL)
    groups = np.arange(5)
    first = bootstrap_pearson(sim, real, groups, 500, seed=7)
    again = bootstrap_pearson(sim, real, groups, 500, seed=7)
    other = bootstrap_pearson(sim, real, groups, 500, seed=8)
    assert first == again and first != other
    r = pearson(sim, real)
    assert first.low is not None and first.high is not None and r is not None
    assert first.low <= r <= first.high and 0 < first.defined <= 500


def _report(folder: Path, identity: str, digest: str, results: dict[str, list[bool]]) -> Path:
    """An eval_report.json as x2's report writer writes its episode rows (x2.eval.report)."""
    rows = []
    for task, outcomes in results.items():
        for k, success in enumerate(outcomes):
            score = EpisodeScore(str(folder / "train"), len(rows), task, (), "train", k, k, success, float(success),
                                 ("done",), ("done",) if success else (), None, 10, {"inference": 1.0, "render": 0.0,
                                                                                      "physics": 0.0, "other": 0.0},
                                 {"kind": "remote", "identity": identity, "digest": digest, "privileged": False,
                                  "observes": "images"})
            rows.append(_episode_row(score))
    folder.mkdir(parents=True)
    (folder / "eval_report.json").write_text(dumps({"policies": [], "datasets": [], "splits": ["train"],
                                                    "tasks": {}, "dimensions": {}, "episodes": rows}))
    return folder


@pytest.fixture
def reports(tmp_path: Path) -> list[Path]:
    runs = tmp_path / "runs"
    return [_report(runs / "eval-pick-act", "ckpt/act", "a" * 64, {"pick": [True] * 8 + [False] * 2,
                                                                       "stack": [True] * 3 + [False] * 7}),
            _report(runs / "eval-pick-dp", "ckpt/dp", "b" * 64, {"pick": [True] * 5 + [False] * 5}),
            _report(runs / "eval-pick-hold", "hold", "", {"pick": [False] * 10})]


def _csv(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


GOOD = ("policy,task,real_successes,real_trials,note\n"
        "eval-pick-act,pick,7,10,lab bench A\n"
        "bbbbbbbbbb,pick,3,10,\n"
        "hold,pick,0,10,\n"
        "ckpt/act,stack,2,10,\n")


def test_reports_are_matched_and_the_outputs_written(reports: list[Path], tmp_path: Path) -> None:
    real = _csv(tmp_path / "real.csv", GOOD)
    out = tmp_path / "agreement"
    args = ["eval", "correlate", "--real", str(real), *map(str, reports), "--out", str(out), "--bootstrap", "200"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "agreement.json").read_text())
    by_name = {(p["policy"], p["task"]): p for p in data["points"]}
    assert by_name[("eval-pick-act", "pick")]["x2_policy"]["identity"] == "ckpt/act"
    assert (by_name[("eval-pick-act", "pick")]["sim_successes"], by_name[("eval-pick-act", "pick")]["sim_trials"]) \
        == (8, 10)
    assert by_name[("bbbbbbbbbb", "pick")]["x2_policy"]["identity"] == "ckpt/dp"  # a digest prefix
    assert by_name[("ckpt/act", "stack")]["sim_rate"] == 0.3
    assert by_name[("eval-pick-act", "pick")]["note"] == "lab bench A"
    sim = [p["sim_rate"] for p in data["points"]]
    real_rates = [p["real_rate"] for p in data["points"]]
    assert data["overall"]["pearson"] == pytest.approx(_pearson(sim, real_rates), abs=1e-6)
    pick = next(t for t in data["tasks"] if t["scope"] == "pick")
    stack = next(t for t in data["tasks"] if t["scope"] == "stack")
    assert data["overall"]["policies"] == 3  # "eval-pick-act" and "ckpt/act" name one x2 policy
    assert pick["policies"] == 3 and pick["pearson"] is not None
    assert "too few policies to trust the interval" in pick["note"]  # 3 policies: ~2/9 of the resamples count
    assert stack["pearson"] is None and "at least 3" in stack["note"]
    png = (out / "agreement.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    # same seed, same bytes
    assert runner.invoke(app, args).exit_code == 0
    assert (out / "agreement.png").read_bytes() == png
    assert json.loads((out / "agreement.json").read_text()) == data


@pytest.mark.parametrize(("table", "expected"), [
    ("policy,task,real_trials\nhold,pick,10\n", "header: found no column 'real_successes'"),
    ("policy,task,real_successes,real_trials\nhold,pick,11,10\n", ":2: real_successes: found 11 > real_trials 10"),
    ("policy,task,real_successes,real_trials\nhold,pick,1,10\nckpt/rt1,pick,2,10\nckpt/dp,pick,3,10\n",
     "policy: found 'ckpt/rt1' in no x2 eval report given"),
    ("policy,task,real_successes,real_trials\nhold,pick,1,10\nckpt/dp,pick,3,10\n",
     "policy: found 2 policies (ckpt/dp, hold); allowed: at least 3 policies"),
    ("policy,task,real_successes,real_trials\nhold,pick,1,10\nckpt/dp,pick,3,10\nckpt/act,pour,3,10\n",
     ":4: task: found 'pour', with no x2 eval episodes of ckpt/act"),
])
def test_bad_input_is_one_line_and_writes_nothing(reports: list[Path], tmp_path: Path, table: str,
                                                  expected: str) -> None:
    real = _csv(tmp_path / "real.csv", table)
    out = tmp_path / "agreement"
    result = runner.invoke(app, ["eval", "correlate", "--real", str(real), *map(str, reports), "--out", str(out)])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert expected in lines[0] and lines[0].startswith("error: ")
    assert not out.exists()


def test_a_name_matching_two_policies_is_refused(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    both = [_report(runs / "one", "ckpt/a", "c" * 64, {"pick": [True]}),
            _report(runs / "two", "ckpt/a", "c" * 12 + "d" * 52, {"pick": [False]})]
    real = _csv(tmp_path / "real.csv", "policy,task,real_successes,real_trials\ncccccccc,pick,1,2\n")
    result = runner.invoke(app, ["eval", "correlate", "--real", str(real), *map(str, both),
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "found 'cccccccc' naming 2 policies" in result.stderr, result.output
    assert not (tmp_path / "out").exists()
    # a run folder whose report holds two policies names both
    rows = [*json.loads((both[0] / "eval_report.json").read_text())["episodes"],
            *json.loads((both[1] / "eval_report.json").read_text())["episodes"]]
    rows[1]["index"] = 1
    (tmp_path / "runs" / "mix").mkdir()
    (tmp_path / "runs" / "mix" / "eval_report.json").write_text(json.dumps({"episodes": rows}))
    real = _csv(tmp_path / "real.csv", "policy,task,real_successes,real_trials\nmix,pick,1,2\n")
    result = runner.invoke(app, ["eval", "correlate", "--real", str(real), str(tmp_path / "runs" / "mix"),
                                 "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "found 'mix' naming 2 policies" in result.stderr, result.output
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tiny x2 eval runs (hold and random, 2 episodes of 5 ticks each, in-process services), each with the
    report x2 eval writes."""
    runs = tmp_path_factory.mktemp("runs")
    for kind in ("hold", "random"):
        root = runs / f"eval-pick_place-{kind}"
        plan = plan_split("pick_place", None, "train", None, 1, 2)
        with PolicyServer(make_service(kind, ServeOptions())) as server:
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            setup = EvalSetup("pick_place", None, plan.variant, plan.master_seed, server.url, 30.0, max_ticks=5)
            pool = open_eval_pool(1, None)
            try:
                EvalRun(setup, plan, root / "train", pool).run()
            finally:
                if pool is not None:
                    pool.shutdown()
        thread.join(30)
        write_report(root, [root / "train"])
    return runs


def test_reports_of_real_x2_eval_runs_are_matched(real_runs: Path, tmp_path: Path) -> None:
    """By run folder (eval-pick_place-hold), by identity (random, given as its rollout dataset: scored here,
    nothing written there), beside a report from the report writer's rows."""
    act = _report(tmp_path / "eval-pick_place-act", "ckpt/act", "a" * 64, {"pick_place": [True] * 4 + [False]})
    real = _csv(tmp_path / "real.csv", "policy,task,real_successes,real_trials\n"
                "eval-pick_place-hold,pick_place,0,10\nrandom,pick_place,1,10\nckpt/act,pick_place,6,10\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["eval", "correlate", "--real", str(real), str(real_runs / "eval-pick_place-hold"),
                                 str(real_runs / "eval-pick_place-random" / "train"), str(act / "eval_report.json"),
                                 "--out", str(out), "--bootstrap", "200"])
    assert result.exit_code == 0, result.output
    points = {p["policy"]: p for p in json.loads((out / "agreement.json").read_text())["points"]}
    hold = points["eval-pick_place-hold"]
    assert hold["x2_policy"]["identity"] == "hold" and hold["sim_trials"] == 2
    assert points["random"]["x2_policy"]["kind"] == "random" and points["random"]["sim_trials"] == 2
    assert not (real_runs / "eval-pick_place-random" / "train" / "eval_report.json").exists()
    assert points["ckpt/act"]["sim_successes"] == 4
