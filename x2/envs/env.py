"""One x2 task as a Gymnasium environment: the worlds `x2 eval` and `x2 synth` meet, stepped one control tick per
`step`, scored by the task's DAG.

- `reset(seed=k)` builds the world of slot k of the split's master seed, through `SplitPlan.seed_of`, the function
  `x2 eval` runs its episode k from (x2/eval/seeds.py; `x2 synth --seed S` draws attempt k from slot k of S too): the
  state is the one those commands start from, bit for bit. `reset()` without a seed takes the slot `slot_stride`
  after the last (give N to the N envs of a vector env seeded 0 .. N-1: their autoresets never meet one world
  twice); before any seed, a slot drawn at random, as an unseeded Gymnasium env does.
- `step(action)` is the loop's tick (x2/rollout/loop.py): the action is rounded to the float32 a file keeps, applied
  for one control tick (1/fps s), and the DAG monitor steps on the state reached, so stepping a recorded episode's
  actions reaches its recorded states.
- reward: the change of the DAG's progress this step (x2/labeling/runtime.py: completed nodes' scores over the
  total), so an episode's return is the progress it reached, 1.0 on success; `info["progress"]` is the level.
- `terminated` on success, on the DAG's failure (a failure predicate or a node's timeout) and when the physics
  diverges (`info["end_reason"]` "unstable"); `truncated` where `x2 eval` stops at the task's horizon: the last
  state it scores is frame horizon - 1, so the env truncates after horizon - 1 steps.
- info: `is_success`, `progress`, `subtasks` (the DAG's active nodes), `failure` (node, frame, reason) or None,
  `end_reason`, `slot` and `world_seed`; the attributes `task` (its name) and `task_description` (the current world's
  instruction) are what LeRobot's evaluator reads.

Actions (`action=`): "joint", x2's joint targets in the robot's action layout (per arm its joints in rad, then the
gripper opening 0..1); values beyond the Box by more than a whole range are another unit and refused in one line, as
`x2 eval` refuses them; the rest go to the simulator as given, whose actuators hold them to their ranges as for
every collector. "ee_pose" / "ee_delta": end-effector poses in the robot's base frame (x2/envspec/ee_action.py says
the encoding), turned into joint targets each tick by x2's IK (x2/sim/mujoco/ee_adapter.py); `info["ee"]` holds the
pose commanded, the pose the joint targets reach and which arms' poses were unreachable (the arm then holds its
targets; the step goes on), and `info["joint_action"]` the joint targets applied.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from x2 import format as fmt
from x2.base.arrays import Floats, Image
from x2.base.errors import PolicyError, X2Error
from x2.envspec import load_env
from x2.envspec.ee_action import ACTION_KINDS, EEActionError, EELayout
from x2.envspec.held_out import EVAL_SEED_BASE
from x2.eval.observe import robot_state
from x2.eval.seeds import SPLITS, SplitPlan, plan_split
from x2.eval.teacher import RANGE_SLACK, bounds
from x2.policy.protocol import OBS_DEPTH_SUFFIX
from x2.processes.life import ParentProcess, die_with
from x2.rollout import TaskMonitor
from x2.sim import ImageSize, ResetInfo, SimulationUnstable, make_backend
from x2.sim.mujoco.ee_adapter import EEAdapter, EEStep
from x2.sim.streams import DEPTH as DEPTH_STREAM
from x2.sim.streams import RGB

AGENT_POS, ENV_STATE, PIXELS = "agent_pos", "environment_state", "pixels"  # LeRobot's gym observation keys
DEPTH = "depth"  # camera -> (H, W, 1) float32 metres, for the obs entries `<camera>_depth`
ACTION_SPACES = ACTION_KINDS
DEFAULT_IMAGE_SIZE = (480, 640)  # (height, width), x2's default picture


class EnvError(X2Error):
    """A Gymnasium environment of x2 asked for with arguments it cannot honour, or given an action it cannot run."""


class X2Env(gym.Env[dict[str, Any], Floats]):
    """`gymnasium.make("x2/TASK-v0", robot=None, split="train", obs=("agent_pos", "environment_state"),
    action="joint", render_mode=None, master_seed=1, variant=None, image_size=(480, 640), max_ticks=None,
    ee_state=False, velocity_state=False)`.

    `master_seed` is `x2 eval --seed` (the eval split adds EVAL_SEED_BASE, as x2 eval does) and `x2 synth --seed`
    for the train split; `variant` a scene variant of the split (default: the one x2 eval picks); `max_ticks` as
    `x2 eval --max-ticks` (default: the task's horizon); `slot_stride` how far `reset()` without a seed moves on;
    `ee_state` appends to `agent_pos` each arm's tool centre point pose in the base frame, as `x2 export lerobot
    --ee-state` does to `observation.state` (and x2 eval to what it sends such a policy); `velocity_state` puts the
    joints' velocities right after their positions (before any tool pose), as `--velocity-state` does."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, task: str, robot: str | None = None, split: str = "train",
                 obs: Sequence[str] = (AGENT_POS, ENV_STATE), action: str = "joint", render_mode: str | None = None,
                 master_seed: int = 1, variant: str | None = None,
                 image_size: tuple[int, int] = DEFAULT_IMAGE_SIZE, max_ticks: int | None = None,
                 slot_stride: int = 1, ee_state: bool = False, velocity_state: bool = False):
        where = f"x2/{task}-v0"
        if multiprocessing.parent_process() is not None:
            # a worker of a vector env (or any pool) ends with the process that started it, even a SIGKILLed one;
            # watched, not signalled: which thread of the parent spawned it is unknown here (x2/processes/life.py)
            die_with(ParentProcess(os.getppid(), spawned_by_main_thread=False))
        _refuse(where, "action", action, ACTION_SPACES)
        _refuse(where, "split", split, SPLITS)
        _refuse(where, "render_mode", render_mode, ("rgb_array", None))
        if not (isinstance(master_seed, int) and 0 <= master_seed < EVAL_SEED_BASE):
            raise EnvError(f"{where}: master_seed: found {master_seed!r}; allowed: 0 to {EVAL_SEED_BASE - 1}")
        if not (isinstance(slot_stride, int) and slot_stride >= 1):
            raise EnvError(f"{where}: slot_stride: found {slot_stride!r}; allowed: 1 or more")
        if max_ticks is not None and not (isinstance(max_ticks, int) and max_ticks >= 2):
            raise EnvError(f"{where}: max_ticks: found {max_ticks!r}; allowed: 2 or more, or None (the task's horizon)")
        self.slot_stride, self.ee_state, self.velocity_state = slot_stride, bool(ee_state), bool(velocity_state)
        self._table_height = 0.0  # the reset's drawn one: it lowers the mount the tool poses are measured from
        if isinstance(obs, str):
            obs = (obs,)
        if not obs:
            raise EnvError(f"{where}: obs: found none; allowed: {AGENT_POS}, {ENV_STATE} and camera names")
        try:
            self.plan: SplitPlan = plan_split(task, robot, split, variant, master_seed, 0)
        except PolicyError as error:  # (x2 eval's words for its options: here they are this env's arguments)
            raise EnvError(f"{where}: {str(error).removeprefix('--')}") from None
        self.spec_env = load_env(task, robot=robot, variant=self.plan.variant)
        assert self.spec_env.task is not None  # (a task compiles with its task)
        self.backend = make_backend(self.spec_env)
        try:
            self._setup(where, tuple(obs), ImageSize(*image_size), max_ticks)
            self._setup_action(action)
        except BaseException:
            self.backend.close()
            raise
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "render_fps": self.spec_env.fps}

    def _setup(self, where: str, obs: tuple[str, ...], size: ImageSize, max_ticks: int | None) -> None:
        env, backend = self.spec_env, self.backend
        task = env.task
        assert task is not None
        cameras = backend.cameras
        for key in obs:
            if key not in (AGENT_POS, ENV_STATE) and key.removesuffix(OBS_DEPTH_SUFFIX) not in cameras.names:
                raise EnvError(f"{where}: obs: found {key!r}; allowed: {AGENT_POS}, {ENV_STATE}, a camera of this "
                               f"world ({', '.join(cameras.names)}) or a camera{OBS_DEPTH_SUFFIX} for its depth")
        if not cameras.fits(size):
            raise EnvError(f"{where}: image_size: found {size.height}x{size.width}; allowed: up to "
                           f"{cameras.largest.height}x{cameras.largest.width}")
        self.where, self.size, self.observed = where, size, obs
        self.cameras = tuple(k for k in obs if k not in (AGENT_POS, ENV_STATE) and k in cameras.names)
        self.depths = tuple(k.removesuffix(OBS_DEPTH_SUFFIX) for k in obs
                            if k not in (AGENT_POS, ENV_STATE) and k not in cameras.names)
        self.agent_pos, self.env_state = AGENT_POS in obs, ENV_STATE in obs
        self.monitor = TaskMonitor(task, backend, env.fps, [arm.name for arm in env.robot.arms])
        self.horizon = max_ticks or round(task.horizon_s * env.fps)  # (the loop's, x2/rollout/loop.py)
        low, high = bounds(backend)
        slack = RANGE_SLACK * np.where(np.isfinite(high - low), high - low, 0.0)
        self._low, self._high, self._lo, self._hi = low, high, low - slack, high + slack
        self.action_names = backend.action_layout.names
        self.action_space = spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)
        entries: dict[str, spaces.Space[Any]] = {}
        if self.cameras:
            entries[PIXELS] = spaces.Dict({c: spaces.Box(0, 255, (size.height, size.width, 3), np.uint8)
                                           for c in self.cameras})
        if self.depths:
            entries[DEPTH] = spaces.Dict({c: spaces.Box(0, np.inf, (size.height, size.width, 1), np.float32)
                                          for c in self.depths})
        if self.agent_pos:
            joints = len(backend.robot_joint_names)
            width = joints * (2 if self.velocity_state else 1) + (7 * len(env.robot.arms) if self.ee_state else 0)
            entries[AGENT_POS] = spaces.Box(-np.inf, np.inf, (width,), np.float32)
        if self.env_state:
            entries[ENV_STATE] = spaces.Box(-np.inf, np.inf, (7 * len(backend.object_names),), np.float32)
        self.observation_space = spaces.Dict(entries)
        self.slot = -1
        self.tick = 0
        self.ended = True
        self.reset_info: ResetInfo | None = None
        self.end_reason = ""
        self._progress = 0.0

    def _setup_action(self, kind: str) -> None:
        """An end-effector action space in place of the joint one, and the adapter that turns it into joints."""
        self.action_kind = kind
        self.adapter: EEAdapter | None = None
        self.ee_step: EEStep | None = None
        if kind == "joint":
            return
        backend = self.backend
        layout = backend.action_layout
        ee = EELayout(kind, tuple(a.name for a in layout.arms), layout.base is not None)
        base = (self._low[layout.base], self._high[layout.base]) if layout.base is not None else ((), ())
        low, high = ee.bounds(*base)
        self.ee_names = ee.names
        self.action_space = spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)
        self.adapter = EEAdapter(backend, ee)

    # ----- Gymnasium's API ----------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None and seed < 0:
            raise EnvError(f"{self.where}: reset seed: found {seed}; allowed: a slot number, 0 or more")
        if seed is not None:
            self.slot = seed
        elif self.slot < 0:
            self.slot = int(self.np_random.integers(0, EVAL_SEED_BASE))
        else:
            self.slot += self.slot_stride
        world_seed = self.plan.seed_of(self.slot)
        self.reset_info = info = self.backend.reset(world_seed)
        self.monitor.reset(info.roles)
        self._table_height = float((info.embodiment or {}).get("table_height", 0.0))
        if self.adapter is not None:
            self.adapter.reset(self._table_height)
            self.ee_step = None
        self.tick, self.ended, self.end_reason = 0, False, ""
        self.monitor.step(0)  # (the loop scores frame 0 before its first action)
        self._progress = self.monitor.runtime.progress
        self._check_end()
        return self._observation(), self._info()

    def step(self, action: Floats) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self.ended:
            raise EnvError(f"{self.where}: step: the episode ended (or none began); allowed: reset() first")
        if self.adapter is not None:
            try:
                self.ee_step = self.adapter.command(np.asarray(action, dtype=np.float32), self.where)
            except EEActionError as error:
                raise EnvError(str(error)) from None
            # (rounded as a file keeps it: a recorded episode's /action steps to its states)
            self._apply(self.ee_step.joint_action.astype(np.float32))
        else:
            self._apply(self._checked(action))
        if not self.ended:
            self.tick += 1
            self.monitor.step(self.tick)
            self._check_end()
        progress = self.monitor.runtime.progress
        reward, self._progress = progress - self._progress, progress
        terminated = self.end_reason in ("success", "failure", "unstable")
        return self._observation(), reward, terminated, self.end_reason == "horizon", self._info()

    def render(self) -> Image | None:
        if self.render_mode is None:
            return None
        camera = self.cameras[0] if self.cameras else self.backend.cameras.names[0]
        return self.backend.render(camera, self.size.width, self.size.height)

    def close(self) -> None:
        self.backend.close()

    # (what LeRobot's evaluator reads from each env, x2's and gym-aloha's alike: the task, and the language
    # instruction a policy is prompted with, drawn with the world)
    @property
    def task(self) -> str:
        return self.spec_env.task.name if self.spec_env.task else ""

    @property
    def task_description(self) -> str:
        if self.reset_info is not None:
            return self.reset_info.instruction
        return self.spec_env.task.instruction if self.spec_env.task else ""

    # ----- the tick ----------------------------------------------------------------------------------------------
    def _checked(self, action: Floats) -> Floats:
        """The action as the float32 a file keeps (what the loop applies), or one line saying what is wrong."""
        values = np.asarray(action, dtype=np.float32)
        width = len(self.action_names)
        if values.shape != (width,):
            raise EnvError(f"{self.where}: action: found shape {values.shape}; allowed: ({width},), the robot's "
                           f"action layout ({', '.join(self.action_names)})")
        if not np.isfinite(values).all():
            raise EnvError(f"{self.where}: action: found NaN or infinity; allowed: finite joint targets")
        outside = (values < self._lo) | (values > self._hi)
        if outside.any():
            col = int(np.argmax(outside))
            low, high = self._low[col], self._high[col]
            raise EnvError(f"{self.where}: action: found {self.action_names[col]} = {values[col]:.4g}; allowed: "
                           f"within [{low:.4g}, {high:.4g}] (the robot's action units: rad, m, gripper opening 0-1)")
        return values

    def _apply(self, action: Floats) -> None:
        try:
            self.backend.step(action.astype(np.float64))
        except SimulationUnstable:
            self.end_reason, self.ended = "unstable", True

    def _check_end(self) -> None:
        runtime = self.monitor.runtime
        if runtime.success or runtime.failure is not None:
            self.end_reason = "success" if runtime.success else "failure"
        elif self.tick >= self.horizon - 1:  # (x2 eval scores frames 0 .. horizon - 1)
            self.end_reason = "horizon"
        self.ended = bool(self.end_reason)

    def _observation(self) -> dict[str, Any]:
        backend = self.backend
        out: dict[str, Any] = {}
        w, h = self.size.width, self.size.height
        streams = {c: (RGB, DEPTH_STREAM) if c in self.cameras else (DEPTH_STREAM,) for c in self.depths}
        shots = {c: backend.shot(c, streams[c], w, h) for c in self.depths}
        if self.cameras:  # (a camera whose depth is observed too: its picture from the same pass)
            out[PIXELS] = {c: np.ascontiguousarray(shots[c].rgb if c in shots else backend.render(c, w, h))
                           for c in self.cameras}
        if self.depths:
            out[DEPTH] = {c: np.asarray(shots[c].depth, np.float32)[..., None] for c in self.depths}
        if self.agent_pos:
            out[AGENT_POS] = robot_state(backend, backend.robot_state(), self._table_height, self.velocity_state,
                                         self.ee_state)
        if self.env_state:
            out[ENV_STATE] = np.asarray(backend.object_poses(), dtype=np.float32).reshape(-1)
        return out

    def _info(self) -> dict[str, Any]:
        runtime = self.monitor.runtime
        failure = runtime.failure
        return {"is_success": runtime.success, "progress": runtime.progress,
                "subtasks": sorted(runtime.active_nodes), fmt.END_REASON_ATTR: self.end_reason,
                "failure": None if failure is None else {"node": failure[0], "frame": int(failure[1]),
                                                         "reason": failure[2]},
                "slot": self.slot, "world_seed": self.plan.seed_of(self.slot), "tick": self.tick,
                **self._ee_info()}

    def _ee_info(self) -> dict[str, Any]:
        step = self.ee_step
        if step is None:
            return {}
        return {"ee": {"commanded": step.commanded, "reached": step.reached, "unreachable": step.unreachable},
                "joint_action": step.joint_action.astype(np.float32)}


def _refuse(where: str, option: str, found: object, allowed: Sequence[object]) -> None:
    if found not in allowed:
        raise EnvError(f"{where}: {option}: found {found!r}; allowed: {', '.join(map(repr, allowed))}")
