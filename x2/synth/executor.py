"""The synthesis teacher: plays skills (generators of segments) tick by tick, on lanes of arms.

A lane is one running program and the arms it occupies. In sequential mode a single lane runs the whole
task (every node in topological order) and owns every arm. In concurrent mode the arm scheduler
(x2/synth/scheduler.py) starts a lane per DAG node whenever the node is ready and its arms are free,
so the left arm opens a door while the right one picks. Every tick each lane plays its segment on its
own arms, and the lanes' commands interleave into one action stream.

A segment that moves an arm while another lane is running is admitted by `x2/synth/spacetime.py`
against what the other lanes have committed to: at once, after its lane stands still for a while, or,
when no wait helps, once another lane moves on. When every lane waits for another, nothing can ever
move again: the attempt fails as "deadlock" instead of idling to its horizon.

The executor is an ordinary `Teacher`, so synthesised demos go through the same loop, DAG runtime and
recorder as teleoperation. Planning happens inside `act` (simulated time stands still meanwhile), and
a `SkillFailure` ends the episode with its reason.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from x2.base.arrays import Floats
from x2.envspec.action import ActionLayout
from x2.rollout.teacher import Observation
from x2.sim.backend import ResetInfo
from x2.synth.segments import ArmsTrack, ArmTrack, BaseTrack, Gripper, Guarded, Segment, SkillFailure, Wait

Program = Callable[[], Iterator[Segment]]
REPLANNABLE = ("ik infeasible", "no plan", "target unreachable")  # failures another arm's pose may cause
MAX_REPLANS = 3  # per lane
# isinstance tuples made once (a union written in the call is built again on every call, twice a tick)
_TRACKS = (ArmTrack, ArmsTrack, BaseTrack)
_ONE_ARM = (ArmTrack, Gripper)


@dataclass
class Lane:
    """One running program: the arms it occupies and the segment it plays."""

    key: str  # the node it runs ("task" for the sequential program)
    arms: set[str]
    program: Iterator[Segment]
    segment: Segment | None = None
    k: int = 0  # ticks of `segment` played
    hold: int = 0  # ticks to stand still before `segment` starts (its admission delay)
    waiting: bool = False  # `segment` is not admitted yet: the lane stands still
    checked_epoch: int = -1  # the executor's epoch when admission last failed
    started: int = 0  # the frame the lane started in
    restart: Program | None = None  # runs its program again from the live state (a node's skill), if it can
    retries: int = 0
    waits_for: frozenset[str] = frozenset()  # after a failed plan: the lanes that must end before it tries again
    hold_pose: Floats = field(default_factory=lambda: np.zeros(0))  # where it stands during `hold`

    @property
    def moving_arm(self) -> str | None:
        seg = self.segment
        if isinstance(seg, ArmTrack):
            return seg.arm
        if isinstance(seg, Guarded):
            return seg.track.arm
        return None

    def track(self) -> Floats | None:
        """What its moving arm is committed to from the next tick on: (n, dof), or None when it stands still."""
        q = track_of(self.segment)
        if self.waiting or q is None:
            return None
        rest = q[self.k:]
        if self.hold:
            rest = np.concatenate([np.repeat(self.hold_pose[None], self.hold, axis=0), rest])
        return rest if len(rest) else None


class Scheduler(Protocol):
    """Starts lanes at decision points: asked every tick (and again whenever a lane ends); it starts what the
    DAG's completions and the free arms allow."""

    def start(self, executor: SkillExecutor, free_arms: set[str], frame: int) -> list[Lane]: ...
    def reset(self) -> None: ...
    def make_way(self, executor: SkillExecutor, arm: str) -> Lane | None:
        """A lane that takes an idle arm out of the way (home), or None when it is there already."""
        ...


class Admission(Protocol):
    """Decides when a segment that moves an arm may start beside the other lanes (x2/synth/spacetime.py)."""

    def delay(self, executor: SkillExecutor, lane: Lane) -> int | None:
        """Ticks `lane` stands still before its segment starts; None: not before another lane moves on."""
        ...


class SequentialProgram:
    """Today's order: one lane owning every arm runs the whole program."""

    def __init__(self, program: Program, arms: Sequence[str]):
        self.program, self.arms, self._started = program, tuple(arms), False

    def start(self, executor: SkillExecutor, free_arms: set[str], frame: int) -> list[Lane]:
        if self._started:
            return []
        self._started = True
        return [Lane("task", set(self.arms), self.program(), started=frame)]

    def reset(self) -> None:
        self._started = False

    def make_way(self, executor: SkillExecutor, arm: str) -> Lane | None:
        return None  # (the one lane owns every arm: nothing else is ever in its way)


class SkillExecutor:
    """A `Teacher` whose actions come from lanes of segments; `failure` says why the program stopped early."""

    def __init__(self, layout: ActionLayout, program: Program | None = None):
        self._arm_slices = {a.name: a.joints for a in layout.arms}
        self._gripper_index = {a.name: a.gripper for a in layout.arms}
        self._base_slice = layout.base
        self.arms = tuple(a.name for a in layout.arms)
        self.scheduler: Scheduler | None = SequentialProgram(program, self.arms) if program else None
        self.admission: Admission | None = None
        self.targets: Floats = np.zeros(0)
        self.failure: SkillFailure | None = None
        self.finished = False
        self.lanes: list[Lane] = []
        self.current: Lane | None = None  # the lane whose program runs (plans) right now
        self.epoch = 0  # bumped whenever a lane's commitment changes: waiting lanes look again
        self.replans: list[tuple[str, int, str]] = []  # (lane, frame, why) of every skill run again
        self._started = False
        self._frame = 0

    @property
    def program(self) -> Program | None:
        return self.scheduler.program if isinstance(self.scheduler, SequentialProgram) else None

    @program.setter
    def program(self, program: Program) -> None:
        self.scheduler = SequentialProgram(program, self.arms)

    def reset(self, info: ResetInfo, home_action: Floats) -> None:
        self.targets = np.asarray(home_action, dtype=np.float64).copy()
        self.failure, self.finished = None, False
        self.lanes, self.current, self.epoch, self._started, self.replans = [], None, 0, False, []
        if self.scheduler is not None:
            self.scheduler.reset()

    @property
    def frame(self) -> int:
        """The frame being decided (programs run inside `act`)."""
        return self._frame

    def arm_target(self, arm: str) -> Floats:
        """The joint targets currently commanded to `arm` (what the next plan of this arm starts from)."""
        return self.targets[self._arm_slices[arm]].copy()

    def base_target(self) -> Floats:
        """The mobile base's commanded (x, y, yaw)."""
        if self._base_slice is None:
            raise SkillFailure("target unreachable", "the robot has no mobile base")
        return self.targets[self._base_slice].copy()

    def planning_pose(self, arm: str) -> Floats:
        """Where `arm` stands for another lane's plan: the end of what its own lane has committed to."""
        for lane in self.lanes:
            q = track_of(lane.segment)
            if lane is not self.current and lane.moving_arm == arm and not lane.waiting and q is not None:
                return np.asarray(q[-1], dtype=np.float64).copy()
        return self.arm_target(arm)

    def lane_of(self, arm: str) -> Lane | None:
        return next((lane for lane in self.lanes if arm in lane.arms), None)

    # ----- the tick ------------------------------------------------------------------------------
    def act(self, obs: Observation) -> Floats | None:
        if self.finished:
            return None
        self._frame = obs.tick
        if not self._started:
            if self.scheduler is None:
                raise RuntimeError("SkillExecutor.program (or a scheduler) must be set before the episode starts")
            self._started = True
            self._start_lanes()
        else:
            self._start_lanes()  # a node completed this frame is a decision point too (the scheduler knows)
        changed = True
        while changed and self.failure is None:  # a lane that ends frees arms: start what is ready, same tick
            changed = False
            for lane in list(self.lanes):
                if not self._advance(lane):
                    self.lanes.remove(lane)
                    self.epoch += 1
                    changed = True
                if self.failure is not None:
                    break
            if changed and self.failure is None:
                self._start_lanes()
        if self.failure is None and self.lanes and all(
                lane.waiting and (lane.waits_for or lane.checked_epoch == self.epoch) for lane in self.lanes):
            waits = "; ".join(f"{lane.key} ({_describe(lane)})" for lane in self.lanes)
            self.failure = SkillFailure("deadlock", f"every lane waits for another: {waits}")
        if self.failure is not None or not self.lanes:
            self.finished = True
            return None
        for lane in self.lanes:
            self._apply(lane)
        return self.targets.copy()

    def add_lane(self, lane: Lane) -> Lane:
        """Start a lane now (a skill handing another arm's motion to a lane of its own); it plays from the next
        tick on."""
        lane.started = self._frame
        self.lanes.append(lane)
        self.epoch += 1
        return lane

    def _start_lanes(self) -> None:
        assert self.scheduler is not None
        busy = {arm for lane in self.lanes for arm in lane.arms}
        for lane in self.scheduler.start(self, set(self.arms) - busy, self._frame):
            self.add_lane(lane)

    def _advance(self, lane: Lane) -> bool:
        """Bring `lane` to a segment it can play (or wait on) this tick; False when its program ended."""
        while True:
            if lane.waits_for:
                if lane.waits_for & {other.key for other in self.lanes}:
                    return True
                assert lane.restart is not None
                lane.waits_for, lane.program = frozenset(), lane.restart()
            seg = lane.segment
            if seg is not None:
                if lane.waiting:
                    return self._admit(lane) or True
                if lane.hold > 0 or not self._done(lane, seg):
                    return True
                if self.failure is not None:
                    return False
            self.current = lane
            try:
                seg = next(lane.program)
            except StopIteration:
                return False
            except SkillFailure as failure:
                if not self._plan_again_later(lane, failure):
                    self.failure = failure
                    return False
                return True
            finally:
                self.current = None
            lane.segment, lane.k, lane.hold = seg, 0, 0
            lane.waiting, lane.checked_epoch = True, -1
            self._admit(lane)
            if lane.waiting:
                return True

    def _plan_again_later(self, lane: Lane, failure: SkillFailure) -> bool:
        """A plan that failed beside other lanes may have failed because of them (an arm resting where this one
        must go): the lane stands still until they end (an idle arm in the way goes home first), then runs its
        skill again from the live state, at most MAX_REPLANS times."""
        if lane.restart is None or failure.reason not in REPLANNABLE or lane.retries >= MAX_REPLANS:
            return False
        assert self.scheduler is not None
        others = frozenset(other.key for other in self.lanes if other is not lane)
        for arm in self.arms:
            if self.lane_of(arm) is None:
                clear = self.scheduler.make_way(self, arm)
                if clear is not None:
                    others |= {self.add_lane(clear).key}
        if not others:
            return False  # nothing else moves: the plan failed on the world itself
        lane.retries += 1
        lane.waits_for, lane.segment, lane.waiting = others, None, True
        lane.checked_epoch = self.epoch
        self.replans.append((lane.key, self._frame, failure.reason))
        self.epoch += 1
        return True

    def _admit(self, lane: Lane) -> bool:
        """Try to start the lane's segment: claim the arm it moves (if free) and ask admission when other lanes
        run. True once admitted."""
        if lane.checked_epoch == self.epoch:
            return False  # nothing changed since the last refusal
        seg = lane.segment
        if isinstance(seg, ArmsTrack) and not set(seg.q) <= lane.arms:
            self._fail(lane, SkillFailure("no plan", f"{lane.key} moves the {', '.join(sorted(seg.q))} arms together "
                                                     "without owning them all (bind it to both arms)"))
            return False
        arm = _arm_of(seg)
        if arm is not None and arm not in lane.arms:
            owner = self.lane_of(arm)
            if owner is not None:
                lane.checked_epoch = self.epoch
                return False
            lane.arms.add(arm)  # a skill clearing the way moves an arm no lane holds
        if self.admission is not None and lane.moving_arm is not None and len(self.lanes) > 1:
            delay = self.admission.delay(self, lane)
            if delay is None:
                lane.checked_epoch = self.epoch
                return False
            lane.hold = delay
            lane.hold_pose = self.arm_target(lane.moving_arm)
        lane.waiting = False
        self.epoch += 1
        return True

    def _done(self, lane: Lane, seg: Segment) -> bool:
        k = lane.k
        if isinstance(seg, _TRACKS):
            return k >= len(seg)
        if isinstance(seg, Gripper):
            return k >= seg.ticks
        if isinstance(seg, Guarded):
            if k > 0 and seg.until():
                self.epoch += 1  # it stops short of what it committed to
                return True
            if k >= len(seg.track):
                if seg.required:
                    self._fail(lane, SkillFailure("guard timeout",
                                                  f"{seg.name} did not hold within {len(seg.track)} ticks"))
                return True
            return False
        if isinstance(seg, Wait):
            if seg.until is not None and seg.until():
                return True
            if k >= seg.ticks:
                if seg.required:
                    self._fail(lane, SkillFailure("predicate false",
                                                  f"{seg.name} did not hold within {seg.ticks} ticks"))
                return True
            return False
        raise TypeError(f"unknown segment {type(seg).__name__}")

    def _fail(self, lane: Lane, failure: SkillFailure) -> None:
        # Deliver the failure into the program so it can clean up, then stop.
        if isinstance(lane.program, Generator):  # (a program is a generator; a plain iterator cannot clean up)
            self.current = lane
            with contextlib.suppress(SkillFailure, StopIteration):
                lane.program.throw(failure)
            self.current = None
        self.failure = failure

    def _apply(self, lane: Lane) -> None:
        if lane.waiting:
            return
        if lane.hold > 0:
            lane.hold -= 1
            return
        seg, k = lane.segment, lane.k
        if isinstance(seg, ArmTrack):
            self.targets[self._arm_slices[seg.arm]] = seg.q[k]
        elif isinstance(seg, ArmsTrack):
            for arm, q in seg.q.items():
                self.targets[self._arm_slices[arm]] = q[k]
        elif isinstance(seg, Guarded):
            self.targets[self._arm_slices[seg.track.arm]] = seg.track.q[min(k, len(seg.track) - 1)]
        elif isinstance(seg, Gripper):
            self.targets[self._gripper_index[seg.arm]] = seg.value
        elif isinstance(seg, BaseTrack):
            assert self._base_slice is not None  # (base_target refused the skill that made it)
            self.targets[self._base_slice] = seg.q[k]
        lane.k += 1


def track_of(seg: Segment | None) -> Floats | None:
    """The joint targets a segment commands to its arm, one row per tick; None for one that holds the arm."""
    if isinstance(seg, ArmTrack):
        return seg.q
    if isinstance(seg, Guarded):
        return seg.track.q
    return None


def _arm_of(seg: Segment | None) -> str | None:
    if isinstance(seg, _ONE_ARM):
        return seg.arm
    if isinstance(seg, Guarded):
        return seg.track.arm
    return None


def _describe(lane: Lane) -> str:
    seg = lane.segment
    if lane.waits_for:
        return "to plan again after " + ", ".join(sorted(lane.waits_for))
    if isinstance(seg, Guarded):
        return f"{seg.name} on the {seg.track.arm} arm"
    if isinstance(seg, ArmTrack):
        return f"a {seg.kind} motion of the {seg.arm} arm"
    if isinstance(seg, ArmsTrack):
        return f"a motion of the {' and '.join(sorted(seg.q))} arms together"
    if isinstance(seg, Gripper):
        return f"the {seg.arm} gripper"
    if isinstance(seg, BaseTrack):
        return "a drive of the base"
    return "nothing"
