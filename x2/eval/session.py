"""One evaluation worker: a simulator of the evaluated world and a connection to the policy service.

`EvalSession.episode(slot, seed)` runs one episode into memory through the same loop every collector runs
(x2/rollout/loop.py), the policy as its teacher; the process that owns the dataset commits it, in slot order,
so the dataset is the same bytes whatever the number of workers (given a deterministic policy).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

import numpy as np
import numpy.typing as npt

from x2.base.errors import PolicyError
from x2.envspec import load_env
from x2.envspec.ee_action import ACTION_KINDS, EELayout
from x2.envspec.ee_action import KINDS as EE_KINDS
from x2.envspec.held_out import config_split
from x2.eval.observe import ObservationPlan
from x2.eval.teacher import PolicyEndRecord, PolicyTeacher
from x2.policy.chunks import ChunkExecution
from x2.policy.protocol import EpisodeEndMessage, EpisodeSetup, PolicyClient, PolicyFault, ServiceInfo
from x2.rollout import Rollout, RolloutOptions
from x2.rollout.episodes import ee_action_record
from x2.rollout.loop import EpisodeResult
from x2.rollout.memory import MemoryRecorder
from x2.sim import Backend, make_backend


@dataclass(frozen=True)
class EvalSetup:
    """What every worker of a run is built from (picklable: it crosses into the pool's processes)."""

    task: str
    robot: str | None
    variant: str
    master_seed: int
    url: str
    timeout_s: float = 30.0
    cameras: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # for a service that names none
    execution: ChunkExecution = field(default_factory=ChunkExecution)
    max_ticks: int | None = None  # default: the task's horizon
    started: str | None = None  # the service x2 started for the run (its KIND[:ARG]); None: a URL given to it
    depth: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # for a service that names none (--streams)


class PolicyInputs(TypedDict):
    cameras: dict[str, list[int]]  # camera -> [height, width]
    state: bool
    environment_state: bool
    sim_state: bool
    depth: NotRequired[dict[str, list[int]]]  # camera -> [height, width] of its depth map; said only when sent
    extrinsics: NotRequired[list[str]]  # cameras whose poses are sent; likewise
    ee_state: NotRequired[bool]  # the state ends with the tool centre points' poses (base frame); likewise
    velocity_state: NotRequired[bool]  # the joints' velocities follow their positions in the state; likewise


class PolicyIdentity(TypedDict):
    """Which policy drives a run's episodes (EvalSession.identity)."""

    kind: str
    identity: str
    digest: str
    url: str | None
    started: str | None
    privileged: bool
    observes: str
    chunk_exec: str
    inputs: PolicyInputs


class PolicyRecord(PolicyIdentity):
    """The episode's policy attr (format.POLICY_ATTR, JSON with sorted keys): the policy, and how it ended there."""

    ended: PolicyEndRecord | None


@dataclass
class EvalOutcome:
    slot: int
    seed: int
    result: EpisodeResult
    arrays: dict[str, npt.NDArray[np.generic]]
    model_xml: str
    object_names: tuple[str, ...]
    policy: PolicyRecord
    timing: dict[str, npt.NDArray[np.float32]]  # per tick, ms: inference and render, beside the loop's stages
    textures: dict[str, bytes] = field(default_factory=dict)  # the images its world carries beside model_xml
    # an end-effector policy's /ee_action arrays and their attrs (x2/rollout/episodes.py's ee_action_record)
    ee_arrays: dict[str, npt.NDArray[np.generic]] = field(default_factory=dict)
    ee_attrs: dict[str, object] = field(default_factory=dict)


def ee_layout_of(backend: Backend, kind: str) -> EELayout:
    layout = backend.action_layout
    return EELayout(kind, tuple(a.name for a in layout.arms), layout.base is not None)


def service_action_kind(info: ServiceInfo, backend: Backend, url: str | None) -> str:
    """What the service's actions are: as it says (`action_kind`), or, from a service that does not say, end-effector
    actions when its action names are an end-effector layout of this robot (a LeRobot policy trained on an
    `x2 export lerobot --action ee_pose|ee_delta` export names its actions so)."""
    if info.action_kind not in ACTION_KINDS:
        raise PolicyError(f"{url}: action_kind: found {info.action_kind!r}; allowed: {', '.join(ACTION_KINDS)}")
    if info.action_kind == "joint" and info.action_names is not None:
        for kind in EE_KINDS:
            if tuple(info.action_names) == ee_layout_of(backend, kind).names:
                return kind
    return info.action_kind


class EvalSession:
    def __init__(self, setup: EvalSetup, connect: Callable[[EvalSetup], PolicyClient]):
        self.setup = setup
        self._closed = False
        self.env = load_env(setup.task, robot=setup.robot, variant=setup.variant)
        self.backend = make_backend(self.env)
        self.rollout = Rollout(self.backend)
        self.client = connect(setup)
        self.info: ServiceInfo = self.client.info
        self.plan = ObservationPlan.for_service(self.info, setup.cameras, setup.depth)
        self.plan.check(self.backend)
        self.action_kind = service_action_kind(self.info, self.backend, setup.url)
        names = self.backend.action_layout.names if self.action_kind == "joint" else \
            ee_layout_of(self.backend, self.action_kind).names
        if self.info.action_names is not None and tuple(self.info.action_names) != tuple(names):
            # other joints, another order, another robot: one line before any episode, not a failure per episode
            raise PolicyError(f"{setup.url}: action_names: found {list(self.info.action_names)}; allowed: this "
                              f"robot's action layout {list(names)} ({self.env.robot.name})")

    def identity(self) -> PolicyIdentity:
        """Which policy drives the episodes, as each of them records it (with how it ended there)."""
        info = self.info
        plan = self.plan
        pixels = " and ".join((["images"] if plan.cameras else []) + (["depth"] if plan.depth else []))
        observes = ("privileged state (low-dim)" if plan.environment_state or plan.sim_state
                    else pixels or "proprioception only")
        inputs: PolicyInputs = {"cameras": {c: list(hw) for c, hw in plan.cameras.items()}, "state": plan.state,
                                "environment_state": plan.environment_state, "sim_state": plan.sim_state}
        if plan.depth:  # (said only when sent: the episodes of a policy reading none keep their bytes)
            inputs["depth"] = {c: list(hw) for c, hw in plan.depth.items()}
        if plan.extrinsics:
            inputs["extrinsics"] = list(plan.extrinsics)
        if plan.ee_state:
            inputs["ee_state"] = True
        if plan.velocity_state:
            inputs["velocity_state"] = True
        return {"kind": info.kind, "identity": info.identity, "digest": info.digest,
                # a service x2 started is named by what it was started as: its URL (a free port) is the run's
                # accident, and the episodes of one seed are the same bytes whichever port it got
                "url": None if self.setup.started else self.setup.url, "started": self.setup.started,
                "privileged": info.privileged, "observes": observes, "chunk_exec": self.setup.execution.describe(),
                "inputs": inputs}

    def episode(self, slot: int, seed: int) -> EvalOutcome:
        env, setup = self.env, self.setup
        episode: EpisodeSetup = {"seed": seed, "slot": slot, "task": env.task.name if env.task else "",
                                 "robot": env.robot.name, "variant": env.variant,
                                 "split": config_split(env, setup.master_seed)}
        teacher = PolicyTeacher(self.client, self.plan, self.backend, episode, setup.execution, self.action_kind)
        recorder = MemoryRecorder()
        result = self.rollout.run(teacher, seed, recorder, RolloutOptions(max_ticks=setup.max_ticks,
                                                                          unstable_ends=True))
        ended = teacher.record()
        with contextlib.suppress(PolicyFault):  # the episode is over and scored: a deaf service changes nothing
            self.client.finalize_episode(EpisodeEndMessage(seed=seed, success=result.success, ticks=result.ticks,
                                                           end_reason=result.end_reason))
        n = result.ticks
        timing = {"inference": np.asarray(teacher.infer_ms[:n], np.float32),
                  "render": np.asarray(teacher.render_ms[:n], np.float32)}
        ee_arrays: dict[str, npt.NDArray[np.generic]] = {}
        ee_attrs: dict[str, object] = {}
        if teacher.adapter is not None and len(teacher.ee_rows) >= n > 0:
            ee_arrays, ee_attrs = ee_action_record(teacher.ee_rows[:n], self.action_kind,
                                                   teacher.adapter.layout.names)
        return EvalOutcome(slot, seed, result, recorder.arrays(), self.backend.model_xml(), self.backend.object_names,
                           {**self.identity(), "ended": ended}, timing, self.backend.model_textures(), ee_arrays,
                           ee_attrs)

    def close(self) -> None:
        """Hang up and free the simulator; again is nothing (a run closes its own session early for its pool)."""
        if not self._closed:
            self._closed = True
            self.client.close()
            self.backend.close()


def policy_text(policy: PolicyRecord) -> str:
    return json.dumps(policy, sort_keys=True)
