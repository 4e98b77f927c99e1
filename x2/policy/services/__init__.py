"""The policy services x2 ships, by kind: `x2 serve KIND[:ARG]` and `x2 eval --policy KIND[:ARG]` name them.

- `random`, `hold`: lower bounds (a bounded random walk about the home pose; the home pose held);
- `replay:DATASET`: the recorded actions of a dataset's episode with the same seed;
- `expert`: x2's synthesis teacher driving the live episode (privileged: it reads the physics state);
- `lerobot:PATH`: a LeRobot 0.6 `pretrained_model` folder, with its own pre- and post-processors.

Each factory is imported on first use: a service process loads only what its kind needs (torch only for
`lerobot`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from x2.base.errors import PolicyError
from x2.policy.chunks import ChunkExecution
from x2.policy.protocol import PolicyService


@dataclass(frozen=True)
class ServeOptions:
    """What a service may need beyond its argument: the world it will be asked about (expert needs it)."""

    task: str | None = None
    robot: str | None = None
    variant: str = "default"
    device: str = "cpu"  # lerobot: the torch device
    # lerobot: how its own action queue runs its chunks (LeRobot's config fields, as lerobot-eval's
    # --policy.n_action_steps / --policy.temporal_ensemble_coeff set them); the default: as trained
    execution: ChunkExecution = field(default_factory=ChunkExecution)


# kind -> (module, factory name, whether it takes an argument); factory(arg, options) -> PolicyService
_KINDS: dict[str, tuple[str, str, bool]] = {
    "random": ("x2.policy.services.bounds", "random_service", False),
    "hold": ("x2.policy.services.bounds", "hold_service", False),
    "replay": ("x2.policy.services.replay", "replay_service", True),
    "expert": ("x2.policy.services.expert", "expert_service", False),
    "lerobot": ("x2.policy.services.lerobot", "lerobot_service", True),
}
KINDS = tuple(_KINDS)


def parse_kind(spec: str, where: str = "--policy") -> tuple[str, str]:
    """`KIND[:ARG]` -> (kind, arg); one line naming what is allowed when it is not a known kind."""
    kind, _, arg = spec.partition(":")
    if kind not in _KINDS:
        raise PolicyError(f"{where}: found {spec!r}; allowed: ws://HOST:PORT or one of "
                         "random, hold, expert, replay:DATASET, lerobot:PATH")
    if _KINDS[kind][2] and not arg:
        raise PolicyError(f"{where}: found {spec!r}; allowed: {kind}:{'DATASET' if kind == 'replay' else 'PATH'}")
    if not _KINDS[kind][2] and arg:
        raise PolicyError(f"{where}: found {spec!r}; allowed: {kind} (it takes no argument)")
    return kind, arg


def make_service(spec: str, options: ServeOptions) -> PolicyService:
    kind, arg = parse_kind(spec)
    module, name, _ = _KINDS[kind]
    factory: Callable[[str, ServeOptions], PolicyService] = getattr(importlib.import_module(module), name)
    return factory(arg, options)
