"""Per-arm subtask labels: the rule on hand-made events, the writer's and reader's checks, and a real
synthesised fruit_in_microwave episode in which the left arm opens the door while the right picks the fruit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import h5py
import numpy as np
import pytest
from conftest import copy_dataset

from x2 import format as fmt
from x2.base.errors import DatasetError
from x2.datasets import Episode
from x2.envspec import load_env
from x2.labeling import ARM_SUBTASK_INDEX_KEY, DagRuntime, arm_label_arrays, arm_segment_owners, segment_owners
from x2.recorded.relabel import relabel
from x2.rollout.monitor import TaskMonitor

NODES = ["a", "b", "c", "d"]
ARMS = ["left", "right"]
DONE, UNFINISHED = len(NODES), -1


def _table(events: list[tuple[str, int]], arms_of_node: dict[str, list[str]], n_frames: int,
           failed: str | None = None, arm_names: list[str] = ARMS) -> np.ndarray:
    owners = arm_segment_owners(events, NODES, arms_of_node, arm_names, 0, n_frames, failed)
    return arm_label_arrays(NODES, owners, n_frames)[ARM_SUBTASK_INDEX_KEY]


def test_overlapping_nodes_on_two_arms_and_one_on_both() -> None:
    # a on the left and b on the right run side by side; c needs both arms; d is the left arm's last.
    table = _table([("b", 3), ("a", 5), ("c", 8), ("d", 10)],
                   {"a": ["left"], "b": ["right"], "c": ["left", "right"], "d": ["left"]}, 12)
    assert table.dtype == np.int16 and table.shape == (12, 2)
    assert table[:, 0].tolist() == [0] * 6 + [2] * 3 + [3] * 2 + [DONE]
    assert table[:, 1].tolist() == [1] * 4 + [2] * 5 + [DONE] * 3


def test_a_failed_or_unfinished_arm_ends_unfinished_and_the_other_arm_done() -> None:
    # b fails on the right after a finished on the left: the left arm's work is all done, the right's is not.
    table = _table([("a", 2)], {"a": ["left"], "b": ["right"], "c": ["right"], "d": ["right"]}, 6, failed="b")
    assert table[:, 0].tolist() == [0, 0, 0, DONE, DONE, DONE]
    assert table[:, 1].tolist() == [UNFINISHED] * 6
    # Without a failure, an arm with a node never completed ends unfinished too.
    table = _table([("a", 2), ("b", 3)], {"a": ["left"], "b": ["right"], "c": ["right"], "d": ["left"]}, 5)
    assert table[:, 0].tolist() == [0, 0, 0, UNFINISHED, UNFINISHED]
    assert table[:, 1].tolist() == [1, 1, 1, 1, UNFINISHED]


def test_a_node_missing_from_the_map_is_on_every_arm() -> None:
    table = _table([("a", 1), ("b", 2), ("c", 3), ("d", 4)], {"a": ["left"], "b": ["right"]}, 6)
    assert table[:, 0].tolist() == [0, 0, 2, 2, 3, DONE]
    assert table[:, 1].tolist() == [1, 1, 1, 2, 3, DONE]


def _runtime_run(truth: dict[str, int], fail: tuple[str, int] | None, frames: int) -> DagRuntime:
    """The fruit DAG stepped on a truth table: node -> first frame its predicate holds."""
    env = load_env("fruit_in_microwave")
    task = env.task
    assert task is not None
    rt = DagRuntime(task.node_ids, task.edges)
    for t in range(frames):
        rt.step(t, {n: t >= f for n, f in truth.items()},
                {fail[0]: "broke"} if fail is not None and t >= fail[1] else None)
    return rt


@pytest.mark.parametrize("truth, fail", [
    ({"pick_fruit": 2, "open_door": 4, "place_fruit": 7, "close_door": 9, "retract": 9}, None),
    ({"pick_fruit": 2, "open_door": 4}, None),
    ({"open_door": 1}, ("pick_fruit", 5)),
])
def test_one_arm_column_equals_subtask_index(truth: dict[str, int], fail: tuple[str, int] | None) -> None:
    rt = _runtime_run(truth, fail, 12)
    nodes = list(rt.nodes)
    owners = arm_segment_owners(rt.events, nodes, {n: ["arm"] for n in nodes}, ["arm"], 0, rt.n_frames,
                                rt.failure[0] if rt.failure else None)
    column = arm_label_arrays(nodes, owners, rt.n_frames)[ARM_SUBTASK_INDEX_KEY][:, 0]
    assert owners[0] == segment_owners(rt.events, 0, rt.n_frames, rt.success)
    assert column.tobytes() == rt.label_arrays()["subtask_index"].tobytes()


def test_monitor_attributes_every_node_to_every_arm_until_told_and_reset_restores_that() -> None:
    task = load_env("fruit_in_microwave").task
    assert task is not None
    monitor = TaskMonitor(task, None, 30, ["left", "right"])  # type: ignore[arg-type]  # (never stepped on a world)
    # (a person teleoperating may open the door with either hand: nothing is claimed before synthesis says)
    assert monitor.node_arms == dict.fromkeys(task.node_ids, ("left", "right"))
    monitor.assign_arms("retract", ["right"])
    assert monitor.dag_record()["arms"]["retract"] == ["right"]  # type: ignore[index]
    with pytest.raises(ValueError, match="'middle' unknown"):
        monitor.assign_arms("retract", ["middle"])
    monitor.reset()
    assert monitor.node_arms["retract"] == ("left", "right")
    armless = TaskMonitor(task, None, 30)  # type: ignore[arg-type]
    armless.runtime.step(0, {})
    assert ARM_SUBTASK_INDEX_KEY not in armless.labels() and set(armless.labels()) == {
        "subtask_index", "active_mask", "progress"}


@pytest.mark.parametrize("arms, found", [
    ({"a": ["left"], "b": ["left"], "zzz": ["left"]}, "found node 'zzz'"),
    ({"a": ["left"], "b": [1]}, "dag/arms/b: found [1]"),
    ({"a": ["left"], "b": ["middle"]}, "found arm 'middle'"),
    ({"a": ["left"]}, "no arms for node 'b'"),
    (["left"], "dag/arms: found ['left']"),
])
def test_check_dag_refuses_a_malformed_arms_map(arms: object, found: str) -> None:
    dag = {"nodes": ["a", "b"], "arms": arms, fmt.ARM_NAMES_ATTR: ARMS}
    with pytest.raises(DatasetError) as info:
        fmt.check_dag(dag, 10, "ep.h5")
    message = str(info.value)
    assert found in message and "\n" not in message and message.startswith("ep.h5: dag/arms")


def test_check_dag_keeps_the_old_attrs_and_adds_arms_last() -> None:
    dag = {"nodes": ["a", "b"], "events": [["a", 3]], "failure": None, "edges": [], "scores": {}}
    old, _ = fmt.check_dag(dag, 10, "ep.h5")
    new, _ = fmt.check_dag({**dag, "arms": {"b": ["right"], "a": []}, fmt.ARM_NAMES_ATTR: ARMS}, 10, "ep.h5")
    assert list(new) == [*old, "arms"] and {k: new[k] for k in old} == old
    assert new["arms"] == {"a": [], "b": ["right"]}


@pytest.mark.parametrize("value, found", [
    (np.zeros((10, 3), np.int16), "found int16(10, 3)"),
    (np.full((10, 2), 3, np.int16), "found 3 at frame 0"),
    (np.zeros((10, 2), np.float32), "found float32(10, 2)"),
])
def test_check_labels_refuses_a_bad_arm_array(value: np.ndarray, found: str) -> None:
    dag = {"nodes": ["a", "b"], fmt.ARM_NAMES_ATTR: ARMS}
    with pytest.raises(DatasetError, match=re.escape(found)):
        fmt.check_labels({ARM_SUBTASK_INDEX_KEY: value}, dag, 10, "ep.h5")


# ---- a real synthesised episode (tests/conftest.py's synthesised_fruit: concurrent synthesis, seed 0) ------
def _episode_file(root: Path) -> Path:
    return sorted((root / fmt.EPISODES_DIR).glob(f"*{fmt.EPISODE_SUFFIX}"))[0]


def test_each_arm_names_its_own_subtask_while_both_work(synthesised_fruit: Path) -> None:
    with Episode(_episode_file(synthesised_fruit)) as ep:
        arms = ep.arm_subtask_index
        assert arms is not None and arms.dtype == np.int16 and ep.arm_names == ["left", "right"]
        assert ep.node_arms is not None and ep.node_arms["open_door"] == ["left"]
        assert ep.node_arms["pick_fruit"] == ["right"] and ep.node_arms["retract"] == ["left", "right"]
        nodes = ep.subtask_names
        active = ep[fmt.ACTIVE_MASK]
        both = active[:, nodes.index("open_door")] & active[:, nodes.index("pick_fruit")]
        assert both.sum() > 50, f"open_door and pick_fruit are active together for only {both.sum()} frames"
        assert (arms[both, 0] == nodes.index("open_door")).all()
        assert (arms[both, 1] == nodes.index("pick_fruit")).all()
        # One owner per frame cannot say this: subtask_index gives those frames to the right arm's pick_fruit.
        assert (ep[fmt.SUBTASK_INDEX][both] == nodes.index("pick_fruit")).all()


def test_relabel_reproduces_the_stored_arm_labels_from_the_stored_map(synthesised_fruit: Path,
                                                                      tmp_path: Path) -> None:
    path = _episode_file(synthesised_fruit)
    with Episode(path) as ep:
        report = relabel(ep)
        stored = ep[fmt.ARM_SUBTASK_INDEX]
    assert report.identical, report.differences
    assert report.labels[ARM_SUBTASK_INDEX_KEY].tobytes() == stored.tobytes()
    # Relabelling reads the map in the file, not the task's bindings: a changed map gives other labels.
    changed = _episode_file(copy_dataset(synthesised_fruit, tmp_path / "changed"))
    with h5py.File(changed, "r+") as f:
        arms = json.loads(f[fmt.DAG].attrs["arms"])
        f[fmt.DAG].attrs["arms"] = json.dumps({**arms, "pick_fruit": ["left", "right"]}, sort_keys=True)
    with Episode(changed) as ep:
        report = relabel(ep)
    assert [d.split(":")[0] for d in report.differences] == [fmt.ARM_SUBTASK_INDEX]


def test_an_episode_from_before_per_arm_labels_reads_and_relabels(synthesised_fruit: Path, tmp_path: Path) -> None:
    old = _episode_file(copy_dataset(synthesised_fruit, tmp_path / "old"))
    with h5py.File(old, "r+") as f:
        del f[fmt.ARM_SUBTASK_INDEX]
        del f[fmt.DAG].attrs["arms"]
    with Episode(old) as ep:
        assert ep.arm_subtask_index is None and ep.arm_names == [] and ep.node_arms is None
        report = relabel(ep)
    assert report.identical, report.differences
    assert any(fmt.ARM_SUBTASK_INDEX in note for note in report.notes)
    # Every node on every arm: both columns follow every event, as subtask_index does.
    table = report.labels[ARM_SUBTASK_INDEX_KEY]
    assert (table[:, 0] == report.labels["subtask_index"]).all() and (table[:, 1] == table[:, 0]).all()


def test_show_and_the_timeline_draw_one_lane_per_arm(synthesised_fruit: Path, tmp_path: Path) -> None:
    from matplotlib.image import imread
    from typer.testing import CliRunner

    from x2.cli.datasets import app
    from x2.datasets.timeline import plot_timeline

    result = CliRunner().invoke(app, ["show", "0", "--dataset", str(synthesised_fruit)], terminal_width=200)
    assert result.exit_code == 0, result.output
    table = result.output[result.output.index("segments per arm"):]
    rows = [line.split("│")[1:6] for line in table.splitlines() if line.startswith("│")]
    first = {cells[0].strip(): cells[1].strip() for cells in rows if cells[2].strip() == "0"}
    assert first == {"left": "open_door", "right": "pick_fruit"}
    with Episode(_episode_file(synthesised_fruit)) as ep:
        two = imread(plot_timeline(ep, tmp_path / "two.png"))
        with h5py.File(copy_dataset(synthesised_fruit, tmp_path / "one") / "episodes" / "episode_000000.h5", "a") as f:
            del f[fmt.ARM_SUBTASK_INDEX]
        one_lane = tmp_path / "one" / "episodes" / "episode_000000.h5"
    with Episode(one_lane) as old:
        one = imread(plot_timeline(old, tmp_path / "one.png"))
    assert two.shape[0] > one.shape[0]  # a taller bar panel: a second lane


def test_synthesis_records_when_each_node_started(synthesised_fruit: Path) -> None:
    with Episode(_episode_file(synthesised_fruit)) as ep:
        starts, done = ep.node_starts, dict(ep.events)
    assert set(starts) == set(done) and all(starts[n] <= done[n] for n in done)
    assert starts["open_door"] == starts["pick_fruit"] == 0  # both arms at once, from the first frame
    # the left arm waits for the fruit to be in before it closes the door: its segment starts earlier than its work
    assert starts["close_door"] > done["place_fruit"] > done["open_door"]


def test_a_node_that_fails_as_it_starts_is_kept_with_its_start(tmp_path: Path) -> None:
    """--keep-failed stores an attempt whose last node failed while planning its first frame: that node started on
    the frame the episode ends in."""
    from x2.datasets import Dataset
    from x2.synth.options import SessionOptions
    from x2.synth.runner import SynthConfig, SynthRun

    task = tmp_path / "place_nothing.yaml"
    task.write_text("""name: place_nothing
instruction: "Lift the hook, then put down what the left hand holds."
scene: hook_booth
dimensions: [tool_usage]
robot: artixon-g
horizon_s: 20
nodes:
  pick_hook:
    success: {object_lifted: {obj: hook, height: 0.05}}
    skill: {name: pick, arm: right, target: hook/handle}
  place_nothing:
    success: {object_on: {obj: block, target: plate}}
    skill: {name: place, arm: left, target: plate}
edges: [[pick_hook, place_nothing]]
""")
    out = tmp_path / "kept"
    run = SynthRun(SynthConfig(SessionOptions(str(task)), n=1, workers=1, seed=0, max_attempts=1, keep_failed=True),
                   out).run()
    assert run.accepted == 0
    ds = Dataset.open(out)
    record = next(iter(ds.episodes()))
    with ds.load(record.index) as ep:
        assert ep.node_starts["place_nothing"] == ep.frames  # the left hand holds nothing: it failed as it began
        assert ep.text(fmt.REJECTION_REASON_ATTR) == "grasp lost"


@pytest.mark.parametrize("starts, found", [
    ({"zzz": 0}, "found 'zzz': 0"), ({"a": 99}, "found 'a': 99"), ({"a": True}, "found 'a': True"), ([0], "found [0]"),
])
def test_check_dag_refuses_malformed_starts(starts: object, found: str) -> None:
    dag = {"nodes": ["a", "b"], "events": [], "starts": starts}
    with pytest.raises(DatasetError, match=re.escape(f"ep: dag/starts: {found}")):
        fmt.check_dag(dag, 10, "ep")
