"""`expert`: x2's synthesis teacher as a policy, the upper bound of a benchmark.

It keeps its own copy of the evaluated world (the same task, robot and variant, reset from the same seed)
and, at every observation, sets that copy to the evaluator's physics state (`x2.sim_state`, which it asks
for: it is privileged) before the teacher plans and acts on it, so its skills see exactly the live episode.
Its teacher is the one `x2 synth` runs for that seed (SynthSession.teacher), so on synthesis's seeds it
succeeds where synthesis accepted (synthesis also rejects a success with a contact deeper than 5 mm).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import MotionError
from x2.policy.protocol import (
    ACTIONS,
    END,
    OBS_SIM_STATE,
    OBS_TICK,
    Answer,
    EpisodeEndMessage,
    EpisodeStartMessage,
    ObservationMessage,
    PolicyFault,
    ServiceInfo,
)
from x2.policy.services import ServeOptions
from x2.rollout.teacher import Observation
from x2.sim import SimulationUnstable
from x2.synth.attempt import SynthSession
from x2.synth.executor import SkillExecutor
from x2.synth.options import SessionOptions
from x2.synth.segments import SkillFailure


class ExpertService:
    def __init__(self, options: ServeOptions):
        self.options = options
        self._sessions: dict[tuple[str, str | None, str], SynthSession] = {}
        self._session: SynthSession | None = None
        self._executor: SkillExecutor | None = None
        self._instruction = ""
        self._last: Floats | None = None

    def metadata(self) -> Mapping[str, object]:
        return ServiceInfo(kind="expert", identity=f"expert (x2 synth's teacher{self._which()})", lifecycle=True,
                           state=True, sim_state=True).to_metadata()

    def _which(self) -> str:
        return f", task {self.options.task}" if self.options.task else ""

    def initialize_episode(self, start: EpisodeStartMessage) -> None:
        task = str(start.get("task") or self.options.task or "")
        if not task:
            raise PolicyFault("malformed", "expert: initialize_episode names no task (and the service was "
                                           "started without --task)")
        robot = start.get("robot") or self.options.robot
        variant = str(start.get("variant") or self.options.variant)
        key = (task, None if robot is None else str(robot), variant)
        if key not in self._sessions:
            self._sessions[key] = SynthSession(SessionOptions(task, robot=key[1], variant=variant))
        session = self._session = self._sessions[key]
        seed = int(start["seed"])
        executor, _, _ = session.teacher(seed)
        info = session.backend.reset(seed)  # the evaluator's reset from the same seed: the same world
        executor.reset(info, session.backend.home_action())
        assert session.rollout.monitor is not None
        session.rollout.monitor.reset(info.roles)
        self._executor, self._instruction, self._last = executor, info.instruction, session.backend.home_action()

    def infer(self, obs: ObservationMessage) -> Answer:
        session, executor = self._session, self._executor
        if session is None or executor is None:
            raise PolicyFault("malformed", "expert: infer before initialize_episode")
        if OBS_SIM_STATE not in obs:
            raise PolicyFault("malformed", f"expert: the observation has no {OBS_SIM_STATE} (it is privileged: "
                                           "x2's evaluator sends it to services asking for it)")
        backend, monitor = session.backend, session.rollout.monitor
        assert monitor is not None
        backend.set_state(np.asarray(obs[OBS_SIM_STATE], dtype=np.float64))
        tick = int(obs[OBS_TICK])
        try:
            # (the executor acts through its context's view of the simulator, as in synthesis: no reads for it)
            action = executor.act(Observation(tick, backend.time, None, None, self._instruction))
        except (SkillFailure, MotionError, SimulationUnstable) as exc:
            return self._end(f"{type(exc).__name__}: {exc}")
        monitor.step(tick)  # after acting, as the rollout loop orders them: the teacher of tick t saw s_t only
        if action is None:
            failure = executor.failure
            return self._end("program ended" if failure is None else f"{failure.reason}: {failure.detail}")
        self._last = np.asarray(action, dtype=np.float64)
        return {ACTIONS: self._last[None].astype(np.float32)}

    def _end(self, why: str) -> Answer:
        assert self._last is not None
        return {ACTIONS: self._last[None].astype(np.float32), END: why}

    def finalize_episode(self, result: EpisodeEndMessage) -> None:
        self._executor = None


def expert_service(arg: str, options: ServeOptions) -> ExpertService:
    return ExpertService(options)
