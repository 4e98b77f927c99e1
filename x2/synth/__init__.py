"""Synthesis: skills, the motion layer and the executor that turn a task DAG into demonstrations.

`SynthRun(SynthConfig(SessionOptions(task), ...), path).run()` is what `x2 synth` does;
`SynthSession(SessionOptions(task)).attempt(i, seed)` runs one attempt in memory; `SKILLS` is the skill registry;
`check_bindings` validates a task's bindings before any worker starts.
"""

from typing import TYPE_CHECKING

from x2.synth.attempt import AttemptOutcome, SynthSession
from x2.synth.binding import check_bindings
from x2.synth.options import SessionOptions
from x2.synth.skills import SKILLS

if TYPE_CHECKING:
    from x2.synth.runner import SynthConfig, SynthProgress, SynthRun

# The run (x2.synth.runner: the dataset, its store) is imported on first use: the workers only make attempts.
_RUNNER = ("SynthConfig", "SynthProgress", "SynthRun")


def __getattr__(name: str) -> object:
    if name in _RUNNER:
        from x2.synth import runner

        found: object = getattr(runner, name)
        return found
    raise AttributeError(f"module 'x2.synth' has no attribute {name!r}")


__all__ = ["SKILLS", "AttemptOutcome", "SessionOptions", "SynthConfig", "SynthProgress", "SynthRun", "SynthSession",
           "check_bindings"]
