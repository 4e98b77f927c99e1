"""DagRuntime against a direct transcription of report eqs. (1)-(4), plus focused cases."""

from __future__ import annotations

import numpy as np
import pytest

from x2.base.errors import X2Error
from x2.labeling import DagError, DagRuntime, find_cycle, topological_order

# ---------------------------------------------------------------------------------------------
# Reference: eqs. (1)-(4) over full (T, N) arrays, no incremental bookkeeping.


def ref_topo(nodes: list[str], edges: list[tuple[str, str]]) -> list[str]:
    """Kahn with ties by declared order, written as "first declared node whose preds are placed"."""
    placed: list[str] = []
    while len(placed) < len(nodes):
        for v in nodes:
            if v not in placed and all(u in placed for u, w in edges if w == v):
                placed.append(v)
                break
    return placed


def reference(nodes, edges, scores, c, timeouts=None, fail=None):
    timeouts = timeouts or {}
    n_frames, n = c.shape
    idx = {v: i for i, v in enumerate(nodes)}
    order = ref_topo(nodes, edges)
    preds = {v: [u for u, w in edges if w == v] for v in nodes}
    d = np.zeros((n_frames, n), dtype=bool)
    g = np.zeros((n_frames, n), dtype=bool)
    for t in range(n_frames):
        for v in order:
            i = idx[v]
            g[t, i] = all(d[t, idx[u]] for u in preds[v])  # eq. (1): same-frame d_u(t)
            prev = d[t - 1, i] if t > 0 else False
            d[t, i] = prev or (g[t, i] and c[t, i])  # eq. (2)
    was = np.vstack([np.zeros((1, n), dtype=bool), d[:-1]])
    events = [(v, t) for t in range(n_frames) for v in order if d[t, idx[v]] and not was[t, idx[v]]]
    completion = {v: (int(np.argmax(d[:, idx[v]])) if d[:, idx[v]].any() else None) for v in nodes}
    evaluated = g & ~was  # gated and not done before this frame
    active = [{v for v in nodes if g[t, idx[v]] and not d[t, idx[v]]} for t in range(n_frames)]
    total = sum(scores[v] for v in nodes)
    progress = [sum(scores[v] for v in nodes if d[t, idx[v]]) / total for t in range(n_frames)]
    failure = None
    for t in range(n_frames):
        for v in order:
            i = idx[v]
            if failure is not None or not evaluated[t, i] or d[t, i]:
                continue
            opened = int(np.argmax(g[:, i]))
            if fail is not None and fail[t][i] is not None:
                failure = (v, t, fail[t][i])
            elif v in timeouts and t - opened + 1 > timeouts[v]:
                failure = (v, t, f"timeout after {timeouts[v]} frames")
    sinks = [v for v in nodes if not any(u == v for u, _ in edges)]
    success = failure is None and all(d[-1, idx[v]] for v in sinks)  # eq. (3)
    labels = []
    for t in range(n_frames):
        owner = next((v for v, f in events if f >= t), None)
        labels.append(owner if owner is not None else ("done" if success else "unfinished"))
    return {"events": events, "completion": completion, "active": active, "progress": progress,
            "failure": failure, "success": success, "labels": labels, "evaluated": evaluated,
            "order": order, "d": d}


def random_case(rng: np.random.Generator):
    n = int(rng.integers(1, 13))
    nodes = [f"n{i}" for i in rng.permutation(n)]
    perm = [nodes[i] for i in rng.permutation(n)]
    density = rng.uniform(0.05, 0.6)
    edges = [(perm[i], perm[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < density]
    edges = [edges[k] for k in rng.permutation(len(edges))]
    scores = {v: float(rng.choice([1.0, 2.0, 0.5, 3.0])) for v in nodes}
    n_frames = int(rng.integers(1, 41))
    p = rng.uniform(0.05, 0.7, size=n)
    c = rng.random((n_frames, n)) < p
    always = rng.random(n) < 0.2  # predicate already true at reset and forever
    c[:, always] = True
    timeouts = {}
    if rng.random() < 0.5:
        timeouts = {v: int(rng.integers(1, 15)) for v in nodes if rng.random() < 0.3}
    fail = None
    if rng.random() < 0.3:
        fail = [[f"fail-{v}-{t}" if rng.random() < 0.03 else None for v in nodes] for t in range(n_frames)]
    return nodes, edges, scores, c, timeouts, fail, always


class Recorder:
    """A callable predicate over a (T, N) table that records which nodes it was asked about."""

    def __init__(self, nodes: list[str], table) -> None:
        self.idx = {v: i for i, v in enumerate(nodes)}
        self.table, self.t, self.calls = table, 0, []

    def at(self, t: int) -> Recorder:
        self.t, self.calls = t, []
        return self

    def __call__(self, v: str):
        self.calls.append(v)
        return None if self.table is None else self.table[self.t][self.idx[v]]


def test_property_against_equations():
    rng = np.random.default_rng(20240807)
    for case in range(400):
        nodes, edges, scores, c, timeouts, fail, always = random_case(rng)
        idx = {v: i for i, v in enumerate(nodes)}
        ref = reference(nodes, edges, scores, c, timeouts, fail)
        use_callable = case % 2 == 1
        rt = DagRuntime(nodes=nodes, edges=edges, scores=scores, timeouts=timeouts)
        assert list(rt.topo_order) == ref["order"]
        events, actives, progress = [], [], []
        holds, failed = Recorder(nodes, c), Recorder(nodes, fail)
        for t in range(c.shape[0]):
            if use_callable:
                step = rt.step(t, holds.at(t), failures=failed.at(t))
                calls, fcalls = holds.calls, failed.calls
                expected_calls = [v for v in ref["order"] if ref["evaluated"][t, idx[v]]]
                assert calls == expected_calls, f"case {case} t={t}: asked {calls}, expected {expected_calls}"
                not_done = [v for v in expected_calls if not ref["d"][t, idx[v]]]
                assert set(fcalls) <= set(not_done), f"case {case} t={t}: failure asked {fcalls}"
                if ref["failure"] is None:
                    assert fcalls == not_done
            else:
                # Alternate sparse (missing key = False) and full mappings.
                values = {v: bool(c[t, idx[v]]) for v in nodes if c[t, idx[v]] or case % 4 == 0}
                freasons = {} if fail is None else {v: fail[t][idx[v]] for v in nodes if fail[t][idx[v]]}
                step = rt.step(t, values, failures=freasons)
            events += step
            actives.append(rt.active_nodes)
            progress.append(rt.progress)
        msg = f"case {case}: nodes={nodes} edges={edges}"
        assert events == ref["events"] == rt.events, msg
        assert rt.completion_frames == ref["completion"], msg
        assert actives == ref["active"], msg
        assert progress == pytest.approx(ref["progress"]), msg
        assert rt.failure == ref["failure"], msg
        assert rt.success == ref["success"], msg
        assert rt.labels() == ref["labels"], msg
        # A node whose predicate holds from reset completes exactly when its gate opens.
        for v in nodes:
            if always[idx[v]]:
                pre = [ref["completion"][u] for u, w in edges if w == v]
                gate = 0 if not pre else (None if None in pre else max(pre))
                assert rt.completion_frames[v] == gate, msg
        arrays = rt.label_arrays()
        code = {**idx, "done": len(nodes), "unfinished": -1}
        assert arrays["subtask_index"].dtype == np.int16
        assert arrays["subtask_index"].tolist() == [code[x] for x in ref["labels"]], msg
        mask = np.array([[v in a for v in nodes] for a in ref["active"]], dtype=bool)
        assert arrays["active_mask"].dtype == bool and np.array_equal(arrays["active_mask"], mask), msg
        assert arrays["progress"].dtype == np.float32
        np.testing.assert_allclose(arrays["progress"], ref["progress"], rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# Focused cases


def drive(rt: DagRuntime, completions: dict[str, int], n_frames: int) -> None:
    """Each node's predicate holds from its listed frame on (and never for unlisted nodes)."""
    for t in range(n_frames):
        rt.step(t, {v: t >= f for v, f in completions.items()})


def fig14() -> DagRuntime:
    return DagRuntime(nodes=["A", "B", "C", "D", "E"],
                      edges=[("A", "C"), ("B", "C"), ("B", "D"), ("C", "E"), ("D", "E")])


def test_figure_14_example():
    rt = fig14()
    assert rt.topo_order == ("A", "B", "C", "D", "E")
    assert rt.active_nodes == {"A", "B"}
    seen = []
    order = {"B": 2, "D": 4, "A": 6, "C": 8, "E": 10}
    for t in range(13):
        rt.step(t, {v: t >= f for v, f in order.items()})
        seen.append(rt.active_nodes)
    assert rt.events == [("B", 2), ("D", 4), ("A", 6), ("C", 8), ("E", 10)]
    assert seen[1] == {"A", "B"} and seen[2] == {"A", "D"} and seen[4] == {"A"}
    assert seen[6] == {"C"} and seen[8] == {"E"} and seen[10] == set()
    assert rt.labels() == ["B"] * 3 + ["D"] * 2 + ["A"] * 2 + ["C"] * 2 + ["E"] * 2 + ["done"] * 2
    assert rt.success and rt.failure is None and rt.progress == 1.0
    arrays = rt.label_arrays()
    assert arrays["subtask_index"].tolist() == [1] * 3 + [3] * 2 + [0] * 2 + [2] * 2 + [4] * 2 + [5] * 2
    assert arrays["active_mask"].shape == (13, 5)
    assert arrays["active_mask"][3].tolist() == [True, False, False, True, False]
    assert arrays["progress"][4] == pytest.approx(0.4)


def test_predicate_true_at_reset_waits_for_gate():
    rt = fig14()
    # E's predicate holds from the start; it may complete only once C and D are done.
    drive(rt, {"E": 0, "A": 0, "B": 3, "C": 5, "D": 7}, 9)
    assert rt.completion_frames == {"A": 0, "B": 3, "C": 5, "D": 7, "E": 7}


def test_same_frame_cascade_along_chain():
    rt = DagRuntime(nodes=["A", "B", "C", "D"], edges=[("A", "B"), ("B", "C"), ("C", "D")])
    calls = []

    def holds(v):
        calls.append(v)
        return v != "D" or len(calls) > 4  # D first fails, then holds on the next frame

    assert rt.step(0, holds) == [("A", 0), ("B", 0), ("C", 0)]
    assert calls == ["A", "B", "C", "D"] and rt.active_nodes == {"D"}
    assert rt.step(1, holds) == [("D", 1)]
    assert calls[4:] == ["D"]
    assert rt.labels() == ["A", "D"]
    assert rt.success


def test_two_completions_same_frame_segment_ownership():
    rt = DagRuntime(nodes=["A", "B", "C"], edges=[("A", "C"), ("B", "C")])
    drive(rt, {"A": 3, "B": 3, "C": 5}, 7)
    assert rt.events == [("A", 3), ("B", 3), ("C", 5)]
    assert rt.labels() == ["A"] * 4 + ["C"] * 2 + ["done"]
    # Declared order breaks the tie, so reversing it hands the segment to B.
    rt = DagRuntime(nodes=["B", "A", "C"], edges=[("A", "C"), ("B", "C")])
    drive(rt, {"A": 3, "B": 3, "C": 5}, 7)
    assert rt.events == [("B", 3), ("A", 3), ("C", 5)]
    assert rt.labels() == ["B"] * 4 + ["C"] * 2 + ["done"]


def test_timeout_first_failure_only_and_latching_continues():
    rt = DagRuntime(nodes=["A", "B"], edges=[("A", "B")], timeouts={"A": 3, "B": 1})
    drive(rt, {"A": 5, "B": 5}, 8)
    # A is evaluated on frames 0, 1, 2 and fails on the 4th frame it is active.
    assert rt.failure == ("A", 3, "timeout after 3 frames")
    assert rt.completion_frames == {"A": 5, "B": 5}
    assert not rt.success
    assert rt.labels() == ["A"] * 6 + ["unfinished"] * 2
    assert rt.label_arrays()["subtask_index"].tolist() == [0] * 6 + [-1] * 2


def test_timeout_counts_from_gate_opening():
    rt = DagRuntime(nodes=["A", "B"], edges=[("A", "B")], timeouts={"B": 2})
    drive(rt, {"A": 10}, 12)
    assert rt.failure is None
    rt.step(12, {})
    assert rt.failure == ("B", 12, "timeout after 2 frames")  # gate opened at 10: allowed 10 and 11


def test_timeout_not_hit_when_completing_on_last_allowed_frame():
    rt = DagRuntime(nodes=["A"], timeouts={"A": 3})
    drive(rt, {"A": 2}, 4)
    assert rt.failure is None and rt.success


def test_timeouts_off_for_an_episode_fail_nothing_and_come_back_on_reset():
    rt = DagRuntime(nodes=["A", "B"], edges=[("A", "B")], timeouts={"A": 3, "B": 1})
    rt.reset(timeouts=False)  # a person's episode: the nodes' timeouts are synthesis's limits
    assert not rt.timeouts_apply
    drive(rt, {"A": 5, "B": 9}, 12)
    assert rt.failure is None and rt.success and rt.completion_frames == {"A": 5, "B": 9}
    rt.reset()
    assert rt.timeouts_apply
    drive(rt, {"A": 5, "B": 9}, 12)
    assert rt.failure == ("A", 3, "timeout after 3 frames")


def test_failure_predicate_with_timeouts_off():
    rt = DagRuntime(nodes=["A"], timeouts={"A": 1})
    rt.reset(timeouts=False)
    rt.step(0, {"A": False})
    rt.step(1, {"A": False}, failures={"A": "dropped cup"})
    assert rt.failure == ("A", 1, "dropped cup")


def test_failure_predicate():
    rt = DagRuntime(nodes=["A", "B"], edges=[("A", "B")])
    asked = []

    def failures(v):
        asked.append(v)
        return "dropped cup" if v == "A" else None

    rt.step(0, {"A": False}, failures={"B": "never active"})
    assert rt.failure is None
    rt.step(1, {"A": False}, failures=failures)
    assert asked == ["A"] and rt.failure == ("A", 1, "dropped cup")
    rt.step(2, {"A": True, "B": True}, failures={"B": "later failure"})
    assert rt.failure == ("A", 1, "dropped cup")
    assert rt.events == [("A", 2), ("B", 2)] and not rt.success and rt.progress == 1.0


def test_completion_wins_over_failure_in_same_frame():
    rt = DagRuntime(nodes=["A"])
    rt.step(0, {"A": True}, failures={"A": "boom"})
    assert rt.failure is None and rt.success


def test_success_requires_all_sinks():
    rt = DagRuntime(nodes=["A", "B", "C"], edges=[("A", "B"), ("A", "C")], scores={"A": 2})
    rt.step(0, {"A": True, "B": True})
    assert not rt.success and rt.active_nodes == {"C"} and rt.progress == pytest.approx(0.75)
    rt.step(1, {})
    assert rt.labels() == ["A", "unfinished"]
    rt.step(2, {"C": True})
    assert rt.success and rt.labels() == ["A", "C", "C"]
    rt.step(3, {})
    assert rt.labels()[-1] == "done"


def test_first_frame_need_not_be_zero():
    rt = DagRuntime(nodes=["A"], timeouts={"A": 2})
    rt.step(100, {})
    rt.step(101, {})
    rt.step(102, {})
    rt.step(103, {"A": True})
    assert rt.failure == ("A", 102, "timeout after 2 frames")
    assert rt.events == [("A", 103)] and rt.labels() == ["A"] * 4


@pytest.mark.parametrize(
    ("nodes", "edges", "kwargs", "needles"),
    [
        (["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "a")], {}, ["cycle", "a -> b -> c -> a"]),
        (["a"], [("a", "a")], {}, ["cycle", "a -> a"]),
        (["a", "b"], [("a", "x")], {}, ["'x'", "a, b"]),
        (["a", "b"], [("y", "b")], {}, ["'y'", "a, b"]),
        (["a", "b", "a"], [], {}, ["duplicate", "'a'"]),
        ([], [], {}, ["no nodes"]),
        (["a"], [], {"scores": {"z": 1}}, ["scores", "'z'", "nodes: a"]),
        (["a"], [], {"timeouts": {"z": 3}}, ["timeouts", "'z'"]),
        (["a"], [], {"timeouts": {"a": 0}}, ["timeout"]),
        (["a"], [], {"scores": {"a": -1}}, ["score"]),
        (["done"], [], {}, ["reserved"]),
    ],
)
def test_graph_errors(nodes, edges, kwargs, needles):
    with pytest.raises(DagError) as err:
        DagRuntime(nodes=nodes, edges=edges, **kwargs)
    for needle in needles:
        assert needle in str(err.value)
    assert isinstance(err.value, X2Error)


@pytest.mark.parametrize("frames", [[0, 2], [0, 1, 1], [3, 2], [0, 1, 0]])
def test_frames_must_be_consecutive(frames):
    rt = DagRuntime(nodes=["A"])
    for t in frames[:-1]:
        rt.step(t, {})
    with pytest.raises(DagError, match="consecutive"):
        rt.step(frames[-1], {})


def test_find_cycle_and_topological_order():
    assert find_cycle(["a", "b", "c"], [("a", "b"), ("b", "c")]) is None
    edges = [("a", "b"), ("b", "c"), ("c", "d"), ("d", "b")]
    assert find_cycle(["a", "b", "c", "d"], edges) == ["b", "c", "d"]
    assert topological_order(["c", "b", "a"], [("a", "b")]) == ("c", "a", "b")
    with pytest.raises(DagError, match="a -> b -> a"):
        topological_order(["a", "b", "c"], [("b", "a"), ("a", "b")])
    with pytest.raises(DagError, match="'q'"):
        find_cycle(["a"], [("a", "q")])


def test_reset_restores_initial_state():
    rt = DagRuntime(nodes=["A", "B"], edges=[("A", "B")], timeouts={"B": 1})
    fresh = (rt.events, rt.completion_frames, rt.active_nodes, rt.labels(), rt.progress, rt.failure)
    drive(rt, {"A": 1}, 5)
    first = (rt.events, rt.labels(), rt.failure)
    assert rt.failure is not None
    rt.reset()
    assert (rt.events, rt.completion_frames, rt.active_nodes, rt.labels(), rt.progress, rt.failure) == fresh
    assert rt.label_arrays()["active_mask"].shape == (0, 2)
    drive(rt, {"A": 1}, 5)  # frames restart at 0 after reset
    assert (rt.events, rt.labels(), rt.failure) == first
