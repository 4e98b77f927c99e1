"""The synthesis teacher: runs a program of skills (a generator of segments) tick by tick.

It is an ordinary `Teacher`, so synthesised demos go through the same loop, DAG runtime and
recorder as teleoperation. Planning happens inside `act` (simulated time stands still meanwhile),
and a `SkillFailure` ends the episode with its reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator

import numpy as np

from x2.arrays import Floats
from x2.rollout.teacher import Observation
from x2.sim.backend import ResetInfo
from x2.spec.action import ActionLayout
from x2.synth.segments import ArmTrack, Gripper, Guarded, Segment, SkillFailure, Wait

Program = Callable[[], Iterator[Segment]]


class SkillExecutor:
    """A `Teacher` whose actions come from segments; `failure` says why a program stopped early."""

    def __init__(self, layout: ActionLayout, program: Program | None = None):
        self.program = program
        self._arm_slices = {a.name: a.joints for a in layout.arms}
        self._gripper_index = {a.name: a.gripper for a in layout.arms}
        self.targets: Floats = np.zeros(0)
        self.failure: SkillFailure | None = None
        self.finished = False
        self._gen: Iterator[Segment] | None = None
        self._segment: Segment | None = None
        self._k = 0

    def reset(self, info: ResetInfo, home_action: np.ndarray) -> None:
        self.targets = np.asarray(home_action, dtype=np.float64).copy()
        self.failure, self.finished = None, False
        self._gen, self._segment, self._k = None, None, 0

    def arm_target(self, arm: str) -> np.ndarray:
        """The joint targets currently commanded to `arm` (what the next plan should start from)."""
        return self.targets[self._arm_slices[arm]].copy()

    def act(self, obs: Observation) -> np.ndarray | None:
        if self.finished:
            return None
        if self._gen is None:
            if self.program is None:
                raise RuntimeError("SkillExecutor.program must be set before the episode starts")
            self._gen = self.program()
        while self._segment is None or self._done(self._segment):
            try:
                self._segment, self._k = next(self._gen), 0
            except StopIteration:
                self.finished = True
                return None
            except SkillFailure as failure:
                self.failure, self.finished = failure, True
                return None
        self._apply(self._segment)
        self._k += 1
        return self.targets.copy()

    def _done(self, seg: Segment) -> bool:
        if isinstance(seg, ArmTrack):
            return self._k >= len(seg)
        if isinstance(seg, Gripper):
            return self._k >= seg.ticks
        if isinstance(seg, Guarded):
            if self._k > 0 and seg.until():
                return True
            if self._k >= len(seg.track):
                if seg.required:
                    self._fail(SkillFailure("guard timeout", f"{seg.name} did not hold within {len(seg.track)} ticks"))
                return True
            return False
        if isinstance(seg, Wait):
            if seg.until is not None and seg.until():
                return True
            if self._k >= seg.ticks:
                if seg.required:
                    self._fail(SkillFailure("predicate false", f"{seg.name} did not hold within {seg.ticks} ticks"))
                return True
            return False
        raise TypeError(f"unknown segment {type(seg).__name__}")

    def _fail(self, failure: SkillFailure) -> None:
        # Deliver the failure into the program so it can clean up, then stop.
        assert self._gen is not None
        if isinstance(self._gen, Generator):  # (a program is a generator; a plain iterator cannot clean up)
            with contextlib.suppress(SkillFailure, StopIteration):
                self._gen.throw(failure)
        self.failure = failure
        self._gen = iter(())

    def _apply(self, seg: Segment) -> None:
        if isinstance(seg, ArmTrack):
            self.targets[self._arm_slices[seg.arm]] = seg.q[self._k]
        elif isinstance(seg, Guarded):
            self.targets[self._arm_slices[seg.track.arm]] = seg.track.q[min(self._k, len(seg.track) - 1)]
        elif isinstance(seg, Gripper):
            self.targets[self._gripper_index[seg.arm]] = seg.value
