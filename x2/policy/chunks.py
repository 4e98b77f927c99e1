"""How a policy's action chunks are executed, one action per control tick: the whole chunk open-loop (as openpi's
clients do), its first K actions, or asked every tick and temporally ensembled as ACT does (each action the
exponentially weighted mean of every chunk's prediction for that tick, the oldest weighted most).

`x2 eval` applies it to the chunks a service answers (x2/eval/teacher.py); a LeRobot policy keeps its own action
queue, so x2's LeRobot service hands it to LeRobot's own config instead (`n_action_steps`, ACT's
`temporal_ensemble_coeff`: x2/policy/services/lerobot.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from x2.base.errors import PolicyError

# ACT's temporal-ensembling weight exp(-m * i), i = 0 for the oldest prediction (the ACT paper's value, LeRobot's
# documented one)
ENSEMBLE_DECAY = 0.01


@dataclass(frozen=True)
class ChunkExecution:
    steps: int | None = None  # actions run open-loop from each chunk (None: the whole chunk)
    ensemble: bool = False

    @classmethod
    def parse(cls, text: str) -> ChunkExecution:
        if text == "ensemble":
            return cls(ensemble=True)
        if text == "chunk":
            return cls()
        if text.isdigit() and int(text) > 0:
            return cls(steps=int(text))
        raise PolicyError(f"--chunk-exec: found {text!r}; allowed: chunk (the whole chunk open-loop), a number K "
                          "of actions per chunk, or ensemble")

    def describe(self) -> str:
        return "ensemble" if self.ensemble else ("chunk" if self.steps is None else str(self.steps))
