"""What a synthesis session needs: the world its attempts run in and how their motions are made.

`x2 synth` builds one `SessionOptions` from its options (x2/cli/synth.py, whose help says what each one means)
and hands it whole to the run, to the session of an inline run, and pickled to every worker (a local process or
a Ray actor), which builds its own session from it. Each default is written here once: the command's options
default to these fields.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from x2.envspec import load_env
from x2.envspec.env import EnvSpec
from x2.sim import Backend, make_backend
from x2.synth.binding import check_bindings
from x2.synth.motion.timing import BEFORE_SCHEDULER, GRASP_VARIETY, MotionSettings


@dataclass(frozen=True)
class SessionOptions:
    """`x2 synth`'s --task, --robot, --gripper, --variant, --sequential and --grasp-variety (their help says what
    each means; None: the task's robot, the robot's own gripper)."""

    task: str
    robot: str | None = None
    gripper: str | None = None
    variant: str = "default"
    sequential: bool = False
    grasp_variety: int = GRASP_VARIETY  # (MotionSettings.grasp_variety)

    @property
    def schedule(self) -> str:
        """How the DAG's nodes are run, as episodes and reports name it."""
        return "sequential" if self.sequential else "concurrent"

    @property
    def motion(self) -> MotionSettings:
        """The motion layer of the schedule (x2/synth/motion/timing.py), with these options' grasp variety."""
        return replace(BEFORE_SCHEDULER if self.sequential else MotionSettings(), grasp_variety=self.grasp_variety)

    def load(self, every_node: bool = True) -> EnvSpec:
        """The compiled environment, its skill bindings checked (a one-line SpecError otherwise); no simulator.
        `every_node` False: a node may bind no skill (see `check_bindings`)."""
        env = load_env(self.task, robot=self.robot, variant=self.variant, gripper=self.gripper)
        check_bindings(env, every_node)
        return env

    def compile(self, every_node: bool = True) -> tuple[EnvSpec, Backend]:
        """Everything synthesis compiles before its first attempt: `load`, then the world (robot, gripper and
        every asset's MJCF in one MuJoCo model; a one-line SpecError otherwise). A synthesis session builds its
        simulator here, and `x2 tasks show` checks a task here, so what one accepts the other does (show lets a
        node bind no skill, `every_node` False: a task for teleoperation alone, which it says synth refuses)."""
        env = self.load(every_node)
        return env, make_backend(env)
