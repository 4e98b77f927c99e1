"""Deterministic episodes for the dataset tests, and a writer that records them forever.

Every episode's content is a pure function of its index, so after any kill a test can check a
finished file byte for byte against what it must contain. Run as a script it is the victim of
tests/test_datasets_writer_crash.py: it writes episodes into DATASET with the real EpisodeWriter until killed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from x2.datasets import Dataset, EpisodeRecord, EpisodeStart, EpisodeWriter, Tick

NODES = ["open_door", "pick_fruit", "place_fruit"]
MANIFEST: dict[str, Any] = {
    "robot": "artixon-g", "task": "fruit_in_microwave", "fps": 30,
    "joint_names": [f"j{i}" for i in range(16)], "action_names": [f"a{i}" for i in range(14)],
    "cameras": ["front"], "dag": {"nodes": NODES, "edges": [["open_door", "place_fruit"],
                                                           ["pick_fruit", "place_fruit"]],
                                  "scores": {n: 1 for n in NODES}},
    "versions": {"x2": "test"}, "extra": {"note": "test data"},
}
OBJECTS = ["apple", "microwave"]


def content(index: int, images: bool | None = None) -> dict[str, Any]:
    """Arrays, labels and DAG of episode ``index`` (T = 20..60, images on odd indices by default)."""
    rng = np.random.default_rng(index)
    frames = 20 + index % 41
    with_images = index % 2 == 1 if images is None else images
    first, second = sorted(rng.choice(np.arange(2, frames - 2), size=2, replace=False).tolist())
    success = index % 3 != 0
    events = [["open_door", first], ["pick_fruit", second]]
    subtask = np.full(frames, -1, np.int16)
    subtask[: first + 1] = 0
    subtask[first + 1: second + 1] = 1
    if success:
        events.append(["place_fruit", frames - 1])
        subtask[second + 1:] = 2
    active = rng.random((frames, len(NODES))) > 0.5
    return {
        "timestamps": (np.arange(frames) + 1) / 30.0,
        "action": rng.normal(size=(frames, 14)).astype(np.float32),
        "qpos": rng.normal(size=(frames, 16)).astype(np.float32),
        "qvel": rng.normal(size=(frames, 16)).astype(np.float32),
        "ee_pose": rng.normal(size=(frames, 2, 7)).astype(np.float32),
        "object_poses": rng.normal(size=(frames, 2, 7)),
        "states": rng.normal(size=(frames, 100)),
        "lateness": rng.random(frames).astype(np.float32),
        "images": rng.integers(0, 256, size=(frames, 24, 32, 3), dtype=np.uint8) if with_images else None,
        "labels": {"subtask_index": subtask, "active_mask": active,
                   "progress": np.linspace(0, 1, frames).astype(np.float32)},
        "dag": {"nodes": NODES, "edges": MANIFEST["dag"]["edges"], "scores": MANIFEST["dag"]["scores"],
                "events": events, "failure": None if success else ["place_fruit", frames - 1, "timeout"]},
        "success": success,
    }


def attrs(seed: int = 7) -> EpisodeStart:
    return EpisodeStart(source="scripted", seed=seed, sim_dt=0.002, versions=json.dumps({"mujoco": "test"}))


# Root attributes the test episodes add when they finish (a collector's EpisodeEnd, in miniature).
END_ATTRS = {"instruction": "put the fruit in the microwave", "layout": {"apple": [0.1, 0.2]}}


def fill(writer: EpisodeWriter, data: dict[str, Any], tick_sleep: float = 0.0) -> None:
    for t in range(len(data["timestamps"])):
        images = None if data["images"] is None else {"front": data["images"][t]}
        writer.append(Tick(timestamp=float(data["timestamps"][t]), action=data["action"][t],
                           state=data["states"][t],
                           qpos=data["qpos"][t], qvel=data["qvel"][t], ee_pose=data["ee_pose"][t],
                           object_poses=data["object_poses"][t], lateness_ms=float(data["lateness"][t]),
                           stage_ms={"physics": 1.0}, images=images))
        if tick_sleep:
            time.sleep(tick_sleep)


def write_one(ds: Dataset, tick_sleep: float = 0.0, images: bool | None = None) -> EpisodeRecord:
    """Record the next episode; its content follows from the index the dataset hands out."""
    # A seed per episode: a dataset refuses a seed it has used (the same seed is the same demonstration).
    with ds.begin_episode(attrs(seed=1000 + ds.next_index()), object_names=OBJECTS,
                          camera_attrs={"front": {"fovy": 45.0, "extrinsics": np.eye(4)}}) as writer:
        data = content(writer.index, images)
        fill(writer, data, tick_sleep)
        return writer.finish(data["labels"], data["dag"], data["success"], extra_attrs={**END_ATTRS, "operator": "bot"},
                             device={"keyboard": {"keys": np.arange(3)}})


def check(path: Path, index: int) -> None:
    """Raise AssertionError unless the finished file at ``path`` holds exactly episode ``index``."""
    from x2.datasets import Episode

    data = content(index)
    with Episode(path) as ep:
        assert ep.index == index, (path, ep.index)
        for name, key in (("timestamps", "timestamps"), ("action", "action"), ("observations/qpos", "qpos"),
                          ("observations/qvel", "qvel"), ("observations/ee_pose", "ee_pose"),
                          ("observations/object_poses", "object_poses"), ("states", "states")):
            np.testing.assert_array_equal(ep[name], data[key], err_msg=f"{path}: {name}")
        if data["images"] is not None:
            np.testing.assert_array_equal(ep["observations/images/front"], data["images"])
        for key, value in data["labels"].items():
            np.testing.assert_array_equal(ep[f"labels/{key}"], value)
        assert ep.success == data["success"]
        assert [list(e) for e in ep.events] == data["dag"]["events"]


def main(argv: list[str]) -> None:
    """write_episodes.py DATASET [TICK_SLEEP_S]: record episodes until killed."""
    root = Path(argv[0])
    tick_sleep = float(argv[1]) if len(argv) > 1 else 0.005
    ds = Dataset.create(root, MANIFEST, exist_ok=True)
    while True:
        record = write_one(ds, tick_sleep=tick_sleep)
        print(f"committed {record.index}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
