"""Fuzzing corrupted episode files: whatever a stranger's file holds, a reader ends clean or in one line.

A real short episode (the real loop in the real simulator, tests/helpers/real_dataset.py) is copied and
corrupted (tests/helpers/corrupt_episodes.py: bit flips, truncation, removed or replaced datasets, NaN and
inf, hostile attrs and worlds) and each reader a user runs on someone else's dataset gets the copy:
opening the episode (problems, record, digest, attrs), validate + repair + validate, and rebuilding its
world (action replay and the penetration replay). Each reader runs in a forked child, so a native
crash fails the example instead of the test process. Pass: a clean result or an X2Error of one line.
The budget is small and the seed fixed (bench/fuzz_episodes.py runs 500+ examples per reader).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import h5py
import pytest
from helpers.corrupt_episodes import EPISODE, READERS, corrupted_copy, mutations, run_isolated
from helpers.real_dataset import record_short_dataset
from helpers.x2_cli import run_x2
from hypothesis import HealthCheck, example, given, settings

# drawn per reader, after the FOUND ones; each copies a 170 KB dataset and runs its reader in a forked child
EXAMPLES = 25


@pytest.fixture(scope="module")
def short_episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "short"
    record_short_dataset(root, episodes=1, ticks=4)
    return root


# The corruptions that broke a reader before this file existed (each became a one-line DatasetError).
FOUND = [
    ("array", "states", "huge_declared"),  # 2**40 unwritten rows: numpy tried to allocate 2.2 PiB
    ("array", "action", "huge_declared"),
    ("flip", [(0.004, 0)]),  # a metadata checksum: RuntimeError from h5py's visititems
    ("array", "states", "strings"),  # ValueError: could not convert string to float
    ("array", "states", "empty"),  # IndexError: states[0] of no rows
    ("array", "labels/subtask_index", "compound"),  # numpy's ufunc error on np.diff
    ("attr", "/", "world", "deep_json"),  # RecursionError from json.loads
    ("attr", "dag", "events", "json_dict"),  # ValueError unpacking a dict as [node, frame] pairs
    ("attr", "dag", "failure", "json_list"),
    ("attr", "/", "episode_index", "invalid_utf8"),
    ("attr", "/", "success", "float_array"),
    ("world", "include_missing"),
]


@pytest.mark.parametrize("reader", sorted(READERS))
@settings(derandomize=True, max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(mutation=mutations())
def test_a_corrupted_episode_reads_clean_or_fails_in_one_line(short_episode: Path, reader: str,
                                                             mutation: tuple) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = corrupted_copy(short_episode, Path(tmp) / "ds", mutation)
        outcome = run_isolated(READERS[reader], root)
    assert outcome.ok, f"{reader} on {mutation!r:.300}: {outcome.kind}\n{outcome.detail}"


for found in FOUND:  # the regressions run on every reader, before the drawn examples
    test_a_corrupted_episode_reads_clean_or_fails_in_one_line = example(mutation=found)(
        test_a_corrupted_episode_reads_clean_or_fails_in_one_line)


@pytest.mark.parametrize("mutation", [
    ("flip", [(0.004, 0), (0.01, 3)]),  # the metadata of the file
    ("array", "states", "huge_declared"),  # read whole by --physics
], ids=lambda m: "-".join(str(p) for p in m[:3] if isinstance(p, str)))
def test_the_cli_validates_a_corrupted_dataset_without_a_traceback(short_episode: Path, tmp_path: Path,
                                                                    mutation: tuple) -> None:
    root = corrupted_copy(short_episode, tmp_path / "ds", mutation)
    done = run_x2(["datasets", "validate", str(root), "--physics"], tmp_path)
    # 0 valid, 1 invalid (the report names the file), 2 an error line; never a signal (< 0)
    assert done.returncode in (0, 1, 2), (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-2000:]
    if done.returncode == 2:
        errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and EPISODE.split("/")[1] in errors[0], done.stderr


def test_replaying_nan_states_is_one_line_and_no_simulator_warning(short_episode: Path, tmp_path: Path) -> None:
    """NaN (or values MuJoCo calls unstable) in the stored states: refused before the simulator prints."""
    root = corrupted_copy(short_episode, tmp_path / "ds", ("nonfinite", "states", float("nan"), 0.5))
    done = run_x2(["replay", "0", "--check", "--dataset", str(root)], tmp_path)
    assert done.returncode == 2, (done.stdout[-2000:], done.stderr[-2000:])
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "states: found nan at (" in lines[0], done.stderr
    assert "WARNING" not in done.stdout + done.stderr


@pytest.mark.parametrize(("path", "value"), [
    (("robot", "arms", 0, "gripper_joints", 1), None),  # MuJoCo's name lookup dereferenced it: a segfault
    (("robot", "arms", 1, "joints", 4), -1),  # TypeError from the name lookup's binding
    (("robot", "arms", 0, "actuators"), list(range(1000))),
    (("task", "nodes", 0, "success", 0, "args"), {"obj": None}),  # a predicate argument that is no name
])
def test_a_world_record_of_the_wrong_types_is_refused_in_one_line(short_episode: Path, tmp_path: Path,
                                                                  path: tuple, value: object) -> None:
    root = shutil.copytree(short_episode, tmp_path / "ds")
    with h5py.File(root / EPISODE, "r+") as f:
        world = json.loads(f.attrs["world"])
        at = world
        for key in path[:-1]:
            at = at[key]
        if isinstance(at[path[-1]], dict) and isinstance(value, dict):  # keep the argument names it declares
            value = dict.fromkeys(at[path[-1]], None)
        at[path[-1]] = value
        f.attrs["world"] = json.dumps(world)
    outcome = run_isolated(READERS["world"], root)
    assert outcome.kind == "error", outcome
    assert outcome.detail.startswith(f"{root / EPISODE}: world: "), outcome.detail
