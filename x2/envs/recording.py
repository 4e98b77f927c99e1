"""Opt-in: the episodes an agent runs in an x2 Gymnasium environment, committed into an x2 dataset as ordinary
episodes (source `policy`, as `x2 eval`'s rollouts), through the one commit path (x2/rollout/episodes.py): `x2
datasets show`, `x2 replay --check`, `x2 render`, the exporters and `x2 eval`'s report read them as any other.

Frame t is the state the agent saw and the action it answered (x2/rollout/loop.py's order; in an end-effector
action space `/action` holds the joint targets the adapter applied and `/ee_action` what the agent answered, the pose
it commanded, the pose the joint targets reached and which arms' poses were unreachable: docs/format.md); the
episode's last frame is the state it ended on, whose action no agent gave: it repeats the one before (recorded,
never applied, as the loop's last action is); an episode whose physics diverged ends on the frame before, as the
loop's does. Labels and the DAG record are the env's own monitor's, which scored every frame. An episode the agent
leaves unfinished (a reset or close before it ended) is committed with end reason `teacher`, as a policy that stops
is; one of a single frame (reset and left at once) is not committed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from x2 import format as fmt
from x2.base.arrays import Bools, Floats
from x2.datasets import EpisodeWriter
from x2.envs.env import EnvError, X2Env
from x2.rollout.episodes import EpisodeOutcome, commit_episode, ee_action_record, episode_start, open_dataset
from x2.rollout.loop import EpisodeResult
from x2.rollout.memory import MemoryRecorder


class RecordEpisodes(gym.Wrapper[dict[str, Any], Floats, dict[str, Any], Floats]):
    """`RecordEpisodes(gymnasium.make("x2/pick_place-v0"), "runs/agent")`: every episode into that dataset
    (created, or reopened when it holds the same world); `agent` names what acted, in each episode's policy attr."""

    def __init__(self, env: gym.Env[dict[str, Any], Floats], dataset: str | Path, agent: str = "gymnasium agent"):
        super().__init__(env)
        inner = env.unwrapped
        if not isinstance(inner, X2Env):
            raise EnvError(f"RecordEpisodes: env: found {type(inner).__name__}; allowed: an x2 environment "
                           "(gymnasium.make('x2/TASK-v0'))")
        self.x2 = inner
        self.ds = open_dataset(Path(dataset), inner.spec_env, inner.backend)
        self.policy = json.dumps({"kind": "gymnasium", "identity": agent, "digest": "", "url": None, "started": None,
                                  "privileged": inner.env_state, "observes": ", ".join(inner.observed),
                                  "chunk_exec": "", "ended": None}, sort_keys=True)
        self._recorder: MemoryRecorder | None = None
        self._last: Floats | None = None
        self._ee: list[tuple[Floats, Floats, Floats, Bools]] = []  # per frame: action, commanded, reached, unreachable

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        self._commit("teacher")
        out = self.env.reset(seed=seed, options=options)
        self._recorder, self._last, self._ee = MemoryRecorder(), None, []
        return out

    def step(self, action: Floats) -> tuple[dict[str, Any], SupportsFloat, bool, bool, dict[str, Any]]:
        frame = self._frame(action) if self._recorder is not None else None
        out = self.env.step(action)  # (refused: nothing recorded)
        if frame is not None:
            step = self.x2.ee_step
            if step is not None:  # (the joint targets applied are the episode's action)
                frame = (frame[0], step.joint_action.astype(np.float32), frame[2])
                self._ee.append((np.asarray(action, np.float32), step.commanded, step.reached, step.unreachable))
            self._append(*frame)
        if out[2] or out[3]:
            self._commit(self.x2.end_reason)
        return out

    def close(self) -> None:
        try:
            self._commit("teacher")
        finally:
            try:
                self.ds.close()
            finally:
                super().close()

    # ----- frames ---------------------------------------------------------------------------------------------
    def _frame(self, action: Floats) -> tuple[float, Floats, Floats]:
        backend = self.x2.backend
        return backend.time, np.asarray(action, np.float32), backend.get_state()

    def _append(self, timestamp: float, action: Floats, state: Floats) -> None:
        assert self._recorder is not None
        self._recorder.append_state(timestamp, action, state, 0.0)
        self._last = action

    def _ee_record(self) -> dict[str, Any]:
        """The episode's /ee_action arrays and attrs (none in the joint action space)."""
        rows, self._ee = self._ee, []
        if not rows:
            return {}
        arrays, attrs = ee_action_record(rows, self.x2.action_kind, self.x2.ee_names)
        return {"ee_arrays": arrays, "ee_attrs": attrs}

    def _commit(self, end_reason: str) -> None:
        """The running episode, whole, into the dataset (the state it ended on as its last frame)."""
        recorder, self._recorder = self._recorder, None
        if recorder is None or self._last is None:
            return
        x2 = self.x2
        backend = x2.backend
        if end_reason != "unstable":  # (a diverged state is no frame: the loop keeps the frames before it)
            recorder.append_state(backend.time, self._last, backend.get_state(), 0.0)
            if self._ee:
                self._ee.append(self._ee[-1])
        arrays = recorder.arrays(backend.observations)
        monitor, info = x2.monitor, x2.reset_info
        assert info is not None  # (an episode that ran was reset)
        rt = monitor.runtime
        frames = len(recorder)
        result = EpisodeResult(seed=x2.plan.seed_of(x2.slot), reset=info, ticks=frames, success=rt.success,
                               failure=rt.failure, events=list(rt.events), missed_slots=0, end_reason=end_reason,
                               labels=monitor.labels(), dag=monitor.dag_record(),
                               lateness_ms=np.zeros(frames, np.float32))
        start = episode_start(x2.spec_env, result.seed, fmt.POLICY_SOURCE, x2.plan.master_seed, x2.slot)
        stored = EpisodeOutcome(success=rt.success, model_xml=backend.model_xml(), textures=backend.model_textures(),
                                object_names=backend.object_names, policy=self.policy, **self._ee_record())

        def replay(writer: EpisodeWriter) -> EpisodeResult:
            writer.extend(arrays)
            return result

        commit_episode(self.ds, x2.spec_env, start, replay, lambda _: stored, backend.object_names)
