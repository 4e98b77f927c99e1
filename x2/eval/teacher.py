"""A policy service as the loop's teacher: observations out, checked action chunks back, one action per tick.

The simulator waits for the answer, so the loop keeps 30 Hz of simulated time whatever the inference latency;
the latency itself is recorded per tick (/timing/inference, beside /timing/render). An answer that cannot be
run (no answer in time, a lost connection, the wrong shape, NaN, values so far outside the robot's joint ranges
that they must be in other units) ends the episode with that reason: the run goes on with the next episode.
Values a little outside a range (a learned gripper command closing to -0.4) are clipped into it: what is
recorded is what the robot was commanded.

A service that answers end-effector actions (ServiceInfo.action_kind "ee_pose" or "ee_delta", x2/envspec/ee_action.py)
has each action turned into joint targets by x2's IK as its tick comes (x2/sim/mujoco/ee_adapter.py; a delta moves
the pose commanded the tick before); a malformed one (a quaternion not of unit length, millimetres) ends the
episode as above; an unreachable pose leaves the arm on its targets and the episode goes on.

Chunks are executed as `ChunkExecution` says (x2/policy/chunks.py).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

from x2.base.arrays import Bools, Floats
from x2.envspec.ee_action import JOINT, EEActionError, EELayout, rotation_quat
from x2.eval.observe import ObservationPlan
from x2.policy.chunks import ENSEMBLE_DECAY, ChunkExecution
from x2.policy.protocol import ACTIONS, END, EpisodeSetup, EpisodeStartMessage, PolicyClient, PolicyFault
from x2.rollout.teacher import Observation
from x2.sim.backend import Backend, ResetInfo
from x2.sim.mujoco.ee_adapter import EEAdapter

# of a value's range: a learned policy overshoots a little (a gripper closing to -0.4), a policy in other units
# (degrees, a gripper in millimetres) by far more than the whole range
RANGE_SLACK = 1.0


@dataclass
class PolicyEnd:
    """How the policy ended an episode, when it did: a fault of the service or its own end (x2.end)."""

    reason: str
    detail: str
    tick: int
    fault: bool


class PolicyEndRecord(TypedDict):
    """PolicyEnd as the episode's policy attr records it (under "ended")."""

    reason: str
    detail: str
    tick: int
    fault: bool


class PolicyTeacher:
    def __init__(self, client: PolicyClient, plan: ObservationPlan, backend: Backend, episode: EpisodeSetup,
                 execution: ChunkExecution | None = None, action_kind: str = JOINT):
        self.client, self.plan, self.backend = client, plan, backend
        self.adapter: EEAdapter | None = None
        if action_kind != JOINT:
            arms = backend.action_layout
            self.adapter = EEAdapter(backend, EELayout(action_kind, tuple(a.name for a in arms.arms),
                                                       arms.base is not None))
        self.execution = execution or ChunkExecution()
        self.layout = backend.action_layout
        self.episode = episode.copy()  # initialize_episode's map, less what reset() adds
        low, high = bounds(backend)
        self.low, self.high = low, high
        slack = RANGE_SLACK * np.where(np.isfinite(high - low), high - low, 0.0)
        self._lo, self._hi = low - slack, high + slack
        self.end: PolicyEnd | None = None
        self.infer_ms: list[float] = []
        self.render_ms: list[float] = []
        self._queue: deque[Floats] = deque()
        self._ensemble: list[tuple[int, Floats]] = []  # (tick of the chunk's first action, chunk)
        self._home: Floats = np.zeros(len(self.layout.names))
        self._table_height = 0.0  # the episode's drawn one: it lowers the mount a base-frame pose is measured from
        self.width = len(self.layout.names) if self.adapter is None else self.adapter.layout.dim
        # per recorded frame of an end-effector policy: its answer, the pose commanded, the pose reached, unreachable
        self.ee_rows: list[tuple[Floats, Floats, Floats, Bools]] = []

    def reset(self, info: ResetInfo, home_action: Floats) -> None:
        self.end, self.infer_ms, self.render_ms = None, [], []
        self._home = np.asarray(home_action, np.float64)
        self._queue.clear()
        self._ensemble.clear()
        self.ee_rows = []
        self._table_height = float((info.embodiment or {}).get("table_height", 0.0))
        if self.adapter is not None:
            self.adapter.reset(self._table_height)
        episode: EpisodeStartMessage = {
            **self.episode, "instruction": info.instruction, "action_names": list(self.layout.names),
            "home_action": np.asarray(home_action, np.float64), "action_low": self.low, "action_high": self.high}
        try:
            self.client.initialize_episode(episode)
        except PolicyFault as fault:
            self.end = PolicyEnd(fault.reason, f"initialize_episode: {fault.detail}", 0, True)

    def act(self, obs: Observation) -> Floats | None:
        asked = len(self.infer_ms)
        action = self._act(obs)
        if action is not None and self.adapter is not None:
            action = self._joints(action, obs.tick)
        if action is None and obs.tick == 0:
            # An episode ended before its first frame would leave no file, and the report counts files: it keeps
            # one frame, the robot holding its home pose, and ends at the next tick.
            action = self._home
            if self.adapter is not None:  # (its /ee_action row: no answer, the home pose commanded and reached)
                pos, rot = self.adapter.joint_poses(action)
                pose = np.concatenate([pos, np.stack([rotation_quat(r) for r in rot])], axis=1)
                self.ee_rows.append((np.full(self.width, np.nan, np.float32), pose, pose,
                                     np.zeros(len(pose), bool)))
        if action is not None and len(self.infer_ms) == asked:  # (one timing entry per recorded frame)
            self.infer_ms.append(0.0)
            self.render_ms.append(0.0)
        return action

    def _joints(self, action: Floats, tick: int) -> Floats | None:
        """An end-effector action's joint targets (as the tick comes: a delta moves the last commanded pose)."""
        assert self.adapter is not None
        answered = np.asarray(action, np.float32)
        try:
            step = self.adapter.command(answered, ACTIONS)
        except EEActionError as error:
            self.end = PolicyEnd("malformed", str(error), tick, True)
            return None
        self.ee_rows.append((answered, step.commanded, step.reached, step.unreachable))
        return step.joint_action

    def _act(self, obs: Observation) -> Floats | None:
        if self.end is not None:
            return None
        if self._queue and not self.execution.ensemble:
            return self._queue.popleft()
        message, render_ms = self.plan.observe(self.backend, obs, self._table_height)
        t0 = time.perf_counter()
        try:
            answer = self.client.infer(message)
            chunk = self._check(answer)
        except PolicyFault as fault:
            self.end = PolicyEnd(fault.reason, fault.detail, obs.tick, True)
            return None
        finally:
            self.infer_ms.append((time.perf_counter() - t0) * 1e3)
            self.render_ms.append(render_ms)
        if END in answer:
            self.end = PolicyEnd("policy ended", str(answer[END]), obs.tick, False)
            return None
        if self.execution.ensemble:
            return self._ensembled(obs.tick, chunk)
        self._queue.extend(chunk[: self.execution.steps])
        return self._queue.popleft()

    def _ensembled(self, tick: int, chunk: Floats) -> Floats:
        self._ensemble = [(t, c) for t, c in self._ensemble if tick - t < len(c)]
        self._ensemble.append((tick, chunk))
        predictions = np.stack([c[tick - t] for t, c in self._ensemble])  # oldest first
        weights = np.exp(-ENSEMBLE_DECAY * np.arange(len(predictions)))
        mean: Floats = (predictions * weights[:, None]).sum(axis=0) / weights.sum()
        return mean

    def _check(self, answer: Mapping[str, object]) -> Floats:
        """The answer's actions as a (H, D) float64 chunk, or a PolicyFault saying what is wrong with it."""
        if END in answer and not isinstance(answer[END], str):
            raise PolicyFault("malformed", f"{END}: found {type(answer[END]).__name__}; allowed: a reason string")
        try:
            actions = np.asarray(answer[ACTIONS], dtype=np.float64)
        except (KeyError, TypeError, ValueError) as exc:
            raise PolicyFault("malformed", f"{ACTIONS}: {exc!r}") from None
        width = self.width
        if actions.ndim == 1:
            actions = actions[None]
        if END in answer:  # (its actions are not run: any shape will do)
            return actions
        if actions.ndim != 2 or actions.shape[0] == 0 or actions.shape[1] != width:
            layout = "the robot's action layout" if self.adapter is None else f"the {self.adapter.layout.kind} layout"
            raise PolicyFault("malformed", f"{ACTIONS}: found shape {np.asarray(answer[ACTIONS]).shape}; allowed: "
                                           f"(H, {width}) or ({width},), {layout}")
        if not np.isfinite(actions).all():
            raise PolicyFault("malformed", f"{ACTIONS}: found NaN or infinity in {actions.shape[0]} actions")
        if self.adapter is not None:  # (end-effector actions: checked as each is turned into joints)
            return actions
        outside = (actions < self._lo) | (actions > self._hi)
        if outside.any():
            row, col = (int(i) for i in np.argwhere(outside)[0])
            raise PolicyFault("malformed", f"{ACTIONS}: found {self.layout.names[col]} = {actions[row, col]:.4g}; "
                                           f"allowed: within [{self.low[col]:.4g}, {self.high[col]:.4g}] (the "
                                           "robot's action units: rad, m, gripper opening 0-1)")
        return np.clip(actions, self.low, self.high)  # the robot is commanded within its ranges (and so recorded)

    def record(self) -> PolicyEndRecord | None:
        end = self.end
        return None if end is None else {"reason": end.reason, "detail": end.detail, "tick": end.tick,
                                         "fault": end.fault}


def bounds(backend: Backend) -> tuple[Floats, Floats]:
    """Each action value's allowed range: its joint's range (unlimited joints: infinite), grippers 0-1."""
    layout = backend.action_layout
    low = np.full(len(layout.names), -np.inf)
    high = np.full(len(layout.names), np.inf)
    joints = [i for i, name in enumerate(layout.names) if i not in {arm.gripper for arm in layout.arms}]
    ranges = backend.joint_range(tuple(layout.names[i] for i in joints))
    low[joints], high[joints] = ranges[:, 0], ranges[:, 1]
    for arm in layout.arms:
        low[arm.gripper], high[arm.gripper] = 0.0, 1.0
    return low, high
