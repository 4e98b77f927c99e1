"""Synthesis: skills, the motion layer and the executor that turn a task DAG into demonstrations.

`SynthRun(SynthConfig(...), path).run()` is what `x2 synth` does; `SynthSession(task).attempt(i, seed)`
runs one attempt in memory; `SKILLS` is the skill registry; `check_bindings` validates a task's
bindings before any worker starts.
"""

from x2.synth.attempt import AttemptOutcome, SynthSession
from x2.synth.binding import check_bindings
from x2.synth.runner import SynthConfig, SynthProgress, SynthRun
from x2.synth.skills import SKILLS

__all__ = ["SKILLS", "AttemptOutcome", "SynthConfig", "SynthProgress", "SynthRun", "SynthSession", "check_bindings"]
