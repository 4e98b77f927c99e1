"""What x2 says to a policy service and what it expects back.

The wire is openpi's: a websocket whose every binary message is msgpack with numpy arrays as
`{__ndarray__, data, dtype, shape}` maps (x2.policy.wire). On connect the service sends its metadata;
then each observation message is answered by one message holding `actions`, an (H, D) chunk or a (D,)
vector. A stock openpi server does only that, and x2 drives it as it is.

A service that says so in its metadata (`x2.lifecycle`) also answers the episode lifecycle's other two
operations, sent as messages carrying `x2.op`: `initialize_episode` (what the episode is: seed, task,
instruction; a stateful policy clears its history) and `finalize_episode` (how it ended). Both are
answered by `{"ok": true}`. `initialize_episode`'s `episode` map holds `seed`, `slot`, `task`, `robot`,
`variant`, `split`, `instruction`, `action_names`, `home_action`, `action_low` and `action_high`.
Everything x2-specific in the metadata sits under its `x2` key, so other clients ignore it; what it
means is `ServiceInfo`. An answer may also carry `x2.end` (a reason): the policy ends the episode there.

Observation keys are LeRobot's feature names (so a LeRobot policy's batch is the message itself) plus
openpi's `prompt`. Privileged simulator state (`x2.sim_state`, the full physics state) goes only to a
service that asks for it in its metadata: x2's own expert, which is reported as privileged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, NotRequired, Protocol, TypedDict

from x2.base.arrays import Floats, Image

# (J,) float32: the robot's joint positions, as the dataset's qpos; for a service saying `velocity_state`, then the
# joints' velocities, as the dataset's qvel (J more, named <joint> + VELOCITY_SUFFIX); for one saying `ee_state`, last,
# per arm its tool centre point's pose in the robot's base frame, x y z qw qx qy qz (as `x2 export lerobot
# --ee-state` states it: x2/envspec/ee_action.py, world_to_base)
OBS_STATE: Final = "observation.state"
VELOCITY_SUFFIX: Final = ".vel"  # a joint's velocity in observation.state (`x2 export lerobot --velocity-state`)
OBS_IMAGE_PREFIX: Final = "observation.images."  # + camera: (H, W, 3) uint8, rendered live
# + camera + OBS_DEPTH_SUFFIX: (H, W, 1) float32, the camera's depth in metres along its optical axis, rendered live
# (LeRobot 0.6's depth feature name, which x2's LeRobot export writes too: x2/export/sensor_streams.py)
OBS_DEPTH_SUFFIX: Final = "_depth"
# + camera: (16,) float32, the camera's pose, 4x4 camera (OpenCV axes) to world, row by row (as x2's LeRobot export
# stores it beside a depth feature, so a policy trained on such an export reads it)
OBS_EXTRINSICS_PREFIX: Final = "observation.extrinsics."
OBS_ENV_STATE: Final = "observation.environment_state"  # (K * 7,) float32: object poses (privileged: low-dim policies)
OBS_PROMPT: Final = "prompt"  # the episode's instruction (openpi's name)
OBS_TASK: Final = "task"  # the same instruction (LeRobot's name)
OBS_TICK: Final = "x2.tick"  # the control tick of this observation (30 Hz simulated time)
OBS_SIM_STATE: Final = "x2.sim_state"  # the full physics state, float64 (privileged: only to a service asking for it)
ACTIONS: Final = "actions"
END: Final = "x2.end"  # in an answer: the policy ends the episode here (its reason, a string); its actions are not run
OP_KEY: Final = "x2.op"
INITIALIZE: Final = "initialize_episode"
FINALIZE: Final = "finalize_episode"
METADATA_KEY: Final = "x2"

# An observation message: OBS_TICK an int, OBS_PROMPT and OBS_TASK the instruction, the others arrays (images by
# camera: OBS_IMAGE_PREFIX + its name). What a service receives is whatever its client sent: it checks what it reads.
ObservationMessage = dict[str, int | str | Floats | Image]
# An answer as a service gives it; the evaluator takes what came back as a map still to be checked (x2.eval.teacher).
Answer = TypedDict("Answer", {"actions": Floats, "x2.end": NotRequired[str]})
Received = Mapping[str, object]  # a message as it came off the wire, before anything in it is checked


class EpisodeSetup(TypedDict):
    """What the episode is, as its evaluator's session knows it before the reset."""

    seed: int
    slot: int
    task: str
    robot: str
    variant: str
    split: str


class EpisodeStartMessage(EpisodeSetup):
    """`initialize_episode`'s map: the episode, and what the reset gave (its instruction, the action layout)."""

    instruction: str
    action_names: list[str]
    home_action: Floats
    action_low: Floats
    action_high: Floats


class EpisodeEndMessage(TypedDict):
    """`finalize_episode`'s map: how the episode ended (end_reason as the episode file's attr of that name)."""

    seed: int
    success: bool
    ticks: int
    end_reason: str


class Metadata(TypedDict):
    """What ServiceInfo says under the metadata's `x2` key."""

    kind: str
    identity: str
    digest: str
    lifecycle: bool
    cameras: dict[str, list[int]]
    state: bool
    environment_state: bool
    sim_state: bool
    action_names: list[str] | None
    chunk: int | None
    action_kind: NotRequired[str]  # said only by a service answering end-effector actions
    depth: NotRequired[dict[str, list[int]]]  # said only by a service reading depth maps
    extrinsics: NotRequired[list[str]]  # said only by a service reading camera poses
    ee_state: NotRequired[bool]  # said only by a service reading the tool centre points' poses in its state
    velocity_state: NotRequired[bool]  # said only by a service reading the joints' velocities in its state


class PolicyFault(Exception):
    """The service could not give a usable answer: the episode ends with `reason` recorded, the run goes on."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail  # reason: timeout | connection lost | service error | malformed


@dataclass(frozen=True)
class ServiceInfo:
    """What a service says about itself under its metadata's `x2` key (all optional: a stock openpi server
    says nothing, and the evaluator's own options fill in the cameras and sizes)."""

    kind: str = "remote"  # random | hold | replay | expert | lerobot | remote (anything else)
    identity: str = ""  # what a report names it by: the folder, dataset or kind it serves
    digest: str = ""  # sha256 of what it serves (weights, dataset index), "" when it has none
    lifecycle: bool = False  # answers initialize_episode / finalize_episode
    cameras: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # camera -> (height, width) it wants
    depth: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # camera -> (height, width) of its depth map
    extrinsics: tuple[str, ...] = ()  # cameras whose pose it wants each tick
    state: bool = True  # wants observation.state
    ee_state: bool = False  # wants the tool centre points' poses after the joints in observation.state
    velocity_state: bool = False  # wants the joints' velocities after their positions (before any tool pose)
    environment_state: bool = False  # wants observation.environment_state (a low-dim policy)
    sim_state: bool = False  # wants x2.sim_state (privileged: the expert)
    action_names: tuple[str, ...] | None = None  # the action vector's names, checked against the robot's
    chunk: int | None = None  # actions per answer, when fixed
    # what its actions are: "joint" (the robot's action layout) or end-effector poses, "ee_pose" / "ee_delta"
    # (x2/envspec/ee_action.py), which the evaluator turns into joint targets each tick (x2/sim/mujoco/ee_adapter.py)
    action_kind: str = "joint"

    @property
    def privileged(self) -> bool:
        return self.sim_state or self.environment_state

    def to_metadata(self) -> dict[str, Metadata]:
        said: Metadata = {
            "kind": self.kind, "identity": self.identity, "digest": self.digest, "lifecycle": self.lifecycle,
            "cameras": {c: list(hw) for c, hw in self.cameras.items()}, "state": self.state,
            "environment_state": self.environment_state, "sim_state": self.sim_state,
            "action_names": None if self.action_names is None else list(self.action_names), "chunk": self.chunk}
        if self.action_kind != "joint":  # (a joint service's metadata stays as it was)
            said["action_kind"] = self.action_kind
        if self.depth:  # (likewise a service that reads no depth)
            said["depth"] = {c: list(hw) for c, hw in self.depth.items()}
        if self.extrinsics:
            said["extrinsics"] = list(self.extrinsics)
        if self.ee_state:
            said["ee_state"] = True
        if self.velocity_state:
            said["velocity_state"] = True
        return {METADATA_KEY: said}

    @classmethod
    def from_metadata(cls, metadata: Received) -> ServiceInfo:
        raw = metadata.get(METADATA_KEY) if isinstance(metadata, Mapping) else None
        if not isinstance(raw, Mapping):
            return cls()
        names = raw.get("action_names")
        cameras = raw.get("cameras") or {}
        depth = raw.get("depth") or {}
        return cls(kind=str(raw.get("kind", "remote")), identity=str(raw.get("identity", "")),
                   digest=str(raw.get("digest", "")), lifecycle=bool(raw.get("lifecycle", False)),
                   cameras={str(c): (int(hw[0]), int(hw[1])) for c, hw in dict(cameras).items()},
                   depth={str(c): (int(hw[0]), int(hw[1])) for c, hw in dict(depth).items()},
                   extrinsics=tuple(str(c) for c in raw.get("extrinsics") or ()),
                   state=bool(raw.get("state", True)), ee_state=bool(raw.get("ee_state", False)),
                   velocity_state=bool(raw.get("velocity_state", False)),
                   environment_state=bool(raw.get("environment_state", False)),
                   sim_state=bool(raw.get("sim_state", False)),
                   action_names=None if names is None else tuple(str(n) for n in names),
                   chunk=None if raw.get("chunk") is None else int(raw["chunk"]),
                   action_kind=str(raw.get("action_kind", "joint")))


class PolicyService(Protocol):
    """A policy as a service runs it: `x2 serve` puts one behind a websocket (x2.policy.server)."""

    def metadata(self) -> Mapping[str, object]: ...
    def infer(self, obs: ObservationMessage) -> Answer: ...
    def initialize_episode(self, episode: EpisodeStartMessage) -> None: ...
    def finalize_episode(self, result: EpisodeEndMessage) -> None: ...


class PolicyClient(Protocol):
    """The evaluator's side of one connection (x2.policy.client over a websocket, or in-process in tests of
    the code above it). Every method raises PolicyFault when the service fails to answer usefully."""

    @property
    def info(self) -> ServiceInfo: ...
    def initialize_episode(self, episode: EpisodeStartMessage) -> None: ...
    def infer(self, obs: ObservationMessage) -> Received: ...
    def finalize_episode(self, result: EpisodeEndMessage) -> None: ...
    def close(self) -> None: ...
