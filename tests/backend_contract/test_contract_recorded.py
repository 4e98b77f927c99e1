"""The recorded world: an episode stores the world as stepped (`model_xml`, the drawn assets, layout and roles),
and `recorded_backend` rebuilds it from that text alone; stepping the stored actions from the stored first
state reproduces every stored state exactly (`x2 replay --check`). Relabelling, rendering, augmentation and
export all start from such a rebuilt world."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers.real_dataset import record_short_dataset

from x2.datasets import Dataset
from x2.envspec.env import EnvSpec
from x2.recorded.replay import replay_actions
from x2.recorded.world import open_world
from x2.sim import Backend, recorded_backend
from x2.sim.discovery import ENV_VAR


def test_a_rebuilt_world_retraces_the_recorded_ticks(backend: Backend, backend_name: str, env: EnvSpec,
                                                     busy: Callable) -> None:
    info = backend.reset(5)
    p = backend.object_pos("block").copy()
    backend.set_object_pose("block", p + np.array([0.0, 0.0, 0.05]))  # a fall and a landing on the record
    actions = busy(backend, 20)
    states = [backend.get_state().copy()]
    for a in actions:
        backend.step(a)
        states.append(backend.get_state().copy())
    xml = backend.model_xml()
    assert xml.lstrip().startswith("<mujoco")

    rebuilt = recorded_backend(env, xml, info.assets, info.layout, "contract", info.roles, backend=backend_name)
    try:
        assert rebuilt.model_xml() == xml and rebuilt.state_size == backend.state_size
        again = rebuilt.reset(123)  # a recorded world draws nothing: any seed gives its own assets and layout
        assert (again.assets, again.layout) == (info.assets, info.layout) and rebuilt.model_xml() == xml
        rebuilt.set_state(states[0])
        for t, a in enumerate(actions):
            rebuilt.step(a)
            assert rebuilt.get_state().tobytes() == states[t + 1].tobytes(), f"tick {t}"
        np.testing.assert_array_equal(rebuilt.object_poses(), backend.object_poses())
    finally:
        rebuilt.close()


def test_an_episode_file_replays_exactly(backend_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recorded by the real loop through the backend under test, rebuilt from the file through it too."""
    monkeypatch.setenv(ENV_VAR, backend_name)  # what `make_backend` / `recorded_backend` use when not told
    (record,) = record_short_dataset(tmp_path / "ds", episodes=1, ticks=24, task="pick_place")
    assert record.frames == 24
    with Dataset.open(tmp_path / "ds").load(0) as ep:
        made_by = ep.json_attr("versions")
        assert made_by.get("backend") == (None if backend_name == "mujoco" else backend_name), made_by
        with open_world(ep) as world:
            assert world.backend.model_xml() == ep.attrs["model_xml"]
        report = replay_actions(ep)
    assert len(report.deviation) == 24
    assert report.max_deviation == 0.0, report.first_deviation
