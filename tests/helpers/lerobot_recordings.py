"""A LeRobot v3.0 dataset written by LeRobot's own writer (LeRobotDataset.create, add_frame, save_episode,
finalize), standing in for a real robot's recording: commanded joints in `action`, measured ones in
`observation.state`, optional camera videos, per-episode task text and, where given, the recording's own
timestamps (a real recorder's gaps and jitter, which LeRobot's add_frame would otherwise make frame_index / fps)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from x2.base.scheduling import keeps_scheduling
from x2.files.hf_cache import hf_datasets_cache

Rows = npt.NDArray[np.floating]


def write_lerobot_recording(root: Path, names: Sequence[str], actions: Sequence[Rows], states: Sequence[Rows],
                            fps: int, images: Sequence[dict[str, npt.NDArray[np.uint8]]] | None = None,
                            tasks: Sequence[str] | str = "pick up the cube",
                            timestamps: Sequence[Rows | None] | None = None,
                            state_names: Sequence[str] | None = None, robot_type: str = "aloha",
                            use_videos: bool = True, extra: Mapping[str, Sequence[Rows]] | None = None) -> Path:
    """One LeRobot episode per entry of `actions` ((T, n) float32 each, `states` alike); `images`: per episode
    {camera: (T, H, W, 3) uint8}, stored as videos `observation.images.<camera>`; `tasks`: one text for all
    episodes or one per episode; `timestamps`: per episode its (T,) seconds, or None for LeRobot's own; `use_videos`
    False: the cameras as PNG images in the frames table; `extra`: other float32 features, per episode (T, n) each."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    root = Path(root)
    episodes = len(actions)
    texts = [tasks] * episodes if isinstance(tasks, str) else list(tasks)
    n = len(names)
    features: dict[str, dict[str, object]] = {
        "action": {"dtype": "float32", "shape": (n,), "names": list(names)},
        "observation.state": {"dtype": "float32", "shape": (len(state_names or names),),
                              "names": list(state_names or names)},
    }
    cams = images[0] if images else {}
    for key, rows in (extra or {}).items():
        features[key] = {"dtype": "float32", "shape": (np.shape(rows[0])[1],), "names": None}
    for cam, frames in cams.items():
        features[f"observation.images.{cam}"] = {"dtype": "video" if use_videos else "image",
                                                 "shape": tuple(frames.shape[1:]),
                                                 "names": ["height", "width", "channels"]}
    # (keeps_scheduling: SVT-AV1 would leave this test worker and its encoding threads real-time, x2/base/scheduling.py)
    with hf_datasets_cache(root.parent / f".{root.name}-hf-cache"), keeps_scheduling():
        ds = LeRobotDataset.create(f"test/{root.name}", fps=fps, features=features, root=root, robot_type=robot_type,
                                   use_videos=bool(cams) and use_videos, video_backend="pyav")
        for e in range(episodes):
            for t in range(len(actions[e])):
                frame: dict[str, object] = {"action": np.asarray(actions[e][t], np.float32),
                                            "observation.state": np.asarray(states[e][t], np.float32),
                                            "task": texts[e]}
                for key, rows in (extra or {}).items():
                    frame[key] = np.asarray(rows[e][t], np.float32)
                for cam in cams:
                    assert images is not None
                    frame[f"observation.images.{cam}"] = images[e][cam][t]
                ds.add_frame(frame)
            if timestamps is not None and timestamps[e] is not None:
                ds.writer.episode_buffer["timestamp"] = [float(s) for s in np.asarray(timestamps[e])]
            ds.save_episode()
        ds.finalize()
    return root
