"""`replay:DATASET`: a dataset's recorded actions, played back for the episode with the same seed.

Evaluated on the dataset's own seeds it must score what the dataset scored: the evaluator's episode from a
seed is the recorded one's world, and stepping its recorded float32 actions from the same first state
reproduces its states (the loop's contract, x2/rollout/loop.py). That makes it the check that evaluation
and collection agree. A seed the dataset has no episode for ends the episode at once, with that reason.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from x2 import format as fmt
from x2.base.arrays import Floats
from x2.datasets import Dataset
from x2.policy.protocol import (
    ACTIONS,
    END,
    OBS_TICK,
    Answer,
    EpisodeEndMessage,
    EpisodeStartMessage,
    ObservationMessage,
    PolicyFault,
    ServiceInfo,
)
from x2.policy.services import ServeOptions
from x2.recorded.world import SIM_BOUND


class ReplayService:
    def __init__(self, path: str):
        self.dataset = Dataset.open(Path(path))
        self.records = self.dataset.episodes()
        self.by_seed = {r.seed: r for r in self.records}
        digests = "\n".join(f"{r.index} {r.digest}" for r in self.records)
        self.digest = "sha256:" + hashlib.sha256(digests.encode()).hexdigest()
        self._actions: Floats | None = None
        self._missing = ""

    def metadata(self) -> Mapping[str, object]:
        return ServiceInfo(kind="replay", identity=str(self.dataset.root), digest=self.digest, lifecycle=True,
                           state=True, action_names=tuple(self.dataset.manifest.action_names)).to_metadata()

    def initialize_episode(self, start: EpisodeStartMessage) -> None:
        seed = int(start["seed"])
        record = self.by_seed.get(seed)
        self._actions, self._missing = None, ""
        if record is None:
            self._missing = f"{self.dataset.root} has no episode with seed {seed}"
            return
        with self.dataset.load(record.index) as ep:
            self._actions = np.asarray(ep.numeric(fmt.ACTION, 2, 1, bound=SIM_BOUND), dtype=np.float32)

    def infer(self, obs: ObservationMessage) -> Answer:
        actions = self._actions
        if actions is None:
            if self._missing:
                return {ACTIONS: np.zeros((1, 0), np.float32), END: self._missing}
            raise PolicyFault("malformed", "replay: infer before initialize_episode")
        tick = int(obs[OBS_TICK])
        if tick >= len(actions):  # (the last recorded action is given too: whether it ran is the loop's to say)
            return {ACTIONS: actions[-1:], END: "the recording ended"}
        return {ACTIONS: actions[tick:tick + 1]}

    def finalize_episode(self, result: EpisodeEndMessage) -> None:
        self._actions = None


def replay_service(arg: str, options: ServeOptions) -> ReplayService:
    return ReplayService(arg)
