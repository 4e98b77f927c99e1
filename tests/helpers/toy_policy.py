"""A toy PolicyService for the policy wire's tests (the transport is real, the policy a function), and, run as
a script with a ready-file path, a service child as x2.policy.process expects one: armed to die with its
parent, serving on a free port, its URL in the ready file."""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

from x2.policy.protocol import ServiceInfo


class ToyService:
    """actions = 2 * observation.state; `x2.tick` is echoed back. An observation with `raise` raises, one with
    `block` waits for `release`; `answer` replaces the answer as it is (for malformed ones)."""

    def __init__(self, lifecycle: bool = True):
        self.lifecycle = lifecycle
        self.release = threading.Event()
        self.episodes: list[tuple[str, dict[str, Any]]] = []

    def metadata(self) -> dict[str, Any]:
        return {**ServiceInfo(kind="hold", identity="toy", lifecycle=self.lifecycle, chunk=1).to_metadata(),
                "note": "from the test"}

    def infer(self, obs: dict[str, Any]) -> Any:
        if "raise" in obs:
            raise ValueError(f"the toy policy refuses: {obs['raise']}")
        if "block" in obs:
            self.release.wait()
        if "answer" in obs:
            return obs["answer"]
        return {"actions": 2 * np.asarray(obs["observation.state"]), "tick": obs.get("x2.tick")}

    def initialize_episode(self, episode: dict[str, Any]) -> None:
        self.episodes.append(("initialize", episode))

    def finalize_episode(self, result: dict[str, Any]) -> None:
        self.episodes.append(("finalize", result))


if __name__ == "__main__":
    from x2.policy.process import write_ready
    from x2.processes.life import arm_parent_death

    arm_parent_death()
    from x2.policy.server import PolicyServer

    server = PolicyServer(ToyService())
    write_ready(sys.argv[1], server.url)
    server.run_until_stopped()
