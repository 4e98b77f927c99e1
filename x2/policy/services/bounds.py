"""The lower bounds: `hold` keeps the robot at its home pose, `random` wanders about it.

A learned policy that does not beat both has learned nothing the task rewards. Both need the episode's
action layout (its home action and bounds), which x2's evaluator sends with `initialize_episode`; they are
deterministic given the episode's seed, so every run of a benchmark scores them the same.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from x2.base.arrays import Floats
from x2.policy.protocol import (
    ACTIONS,
    Answer,
    EpisodeEndMessage,
    EpisodeStartMessage,
    ObservationMessage,
    PolicyFault,
    ServiceInfo,
)
from x2.policy.services import ServeOptions

RANDOM_STEP = 0.02  # rad (and gripper fraction) per tick: a slow wander, not a shake the physics rejects
RANDOM_CHUNK = 10  # actions per answer
HOLD_CHUNK = 30  # a second of the same action per answer: one round trip per tick was most of hold's evaluation


class _Bound:
    kind = ""

    def __init__(self) -> None:
        self._home: Floats | None = None
        self._low: Floats = np.zeros(0)
        self._high: Floats = np.zeros(0)
        self._seed = 0

    def metadata(self) -> Mapping[str, object]:
        return ServiceInfo(kind=self.kind, identity=self.kind, lifecycle=True, state=True).to_metadata()

    def initialize_episode(self, start: EpisodeStartMessage) -> None:
        try:
            self._home = np.asarray(start["home_action"], dtype=np.float64)
            self._low = np.asarray(start["action_low"], dtype=np.float64)
            self._high = np.asarray(start["action_high"], dtype=np.float64)
            self._seed = int(start["seed"])
        except (KeyError, TypeError, ValueError) as exc:
            raise PolicyFault("malformed", f"initialize_episode without home_action/action_low/action_high/seed "
                                           f"({exc!r}): {self.kind} needs x2's evaluator") from None
        self.started()

    def started(self) -> None:
        pass

    def finalize_episode(self, result: EpisodeEndMessage) -> None:
        pass

    def home(self) -> Floats:
        if self._home is None:
            raise PolicyFault("malformed", f"{self.kind}: infer before initialize_episode")
        return self._home


class HoldService(_Bound):
    kind = "hold"

    def infer(self, obs: ObservationMessage) -> Answer:
        return {ACTIONS: np.repeat(self.home()[None], HOLD_CHUNK, axis=0).astype(np.float32)}


class RandomService(_Bound):
    kind = "random"

    def started(self) -> None:
        self._rng = np.random.default_rng(self._seed)
        self._last = self.home().copy()

    def infer(self, obs: ObservationMessage) -> Answer:
        self.home()
        steps = self._rng.normal(0.0, RANDOM_STEP, size=(RANDOM_CHUNK, len(self._last)))
        chunk = np.empty_like(steps)
        for i, step in enumerate(steps):
            self._last = np.clip(self._last + step, self._low, self._high)
            chunk[i] = self._last
        return {ACTIONS: chunk.astype(np.float32)}


def hold_service(arg: str, options: ServeOptions) -> HoldService:
    return HoldService()


def random_service(arg: str, options: ServeOptions) -> RandomService:
    return RandomService()
