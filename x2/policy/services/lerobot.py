"""`lerobot:PATH`: a LeRobot 0.6 `pretrained_model` folder (what `lerobot-train` writes under
`checkpoints/<step>/pretrained_model`) served as a policy.

It is loaded the way LeRobot 0.6.1 loads a policy for evaluation (lerobot/scripts/lerobot_eval.py,
lerobot/rollout/context.py): `PreTrainedConfig.from_pretrained(folder)` with the serving device,
`get_policy_class(type).from_pretrained(folder, config=...)`, and the folder's own pre- and
post-processors through `make_pre_post_processors(config, pretrained_path=folder, ...)` with the
preprocessor's device overridden. Each observation becomes the batch LeRobot's own synchronous inference
makes (`lerobot.policies.utils.prepare_observation_for_inference`: tensors with a batch dimension, images
(H, W, 3) uint8 -> (3, H, W) float in [0, 1], as LeRobotDataset gives them in training, and the task
string), then preprocessor -> `policy.select_action` -> postprocessor. `select_action` keeps ACT's and
diffusion's action queues, so every answer is one action, (1, D).

A policy trained on depth (LeRobot 0.6's `observation.images.<cam>_depth`, (1, H, W)) is sent the camera's live
depth in metres; it is given what its training loader gave: clipped and quantised by LeRobot's own depth
quantiser with the training dataset's encoder parameters (its meta/info.json, else LeRobot's defaults), and
dequantised to the unit its training read depth in (train_config.json's `dataset.depth_output_unit`, LeRobot's
default millimetres).

LeRobot and torch are imported only here and only when a folder is loaded (pyproject's import contract).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from x2.base.arrays import Floats, Image
from x2.base.errors import PolicyError
from x2.datasets.untrusted import json_loads
from x2.envspec.ee_action import TCP_FIELDS
from x2.files.digest import file_digest
from x2.policy.chunks import ENSEMBLE_DECAY
from x2.policy.protocol import (
    ACTIONS,
    OBS_DEPTH_SUFFIX,
    OBS_ENV_STATE,
    OBS_EXTRINSICS_PREFIX,
    OBS_IMAGE_PREFIX,
    OBS_PROMPT,
    OBS_STATE,
    OBS_TASK,
    VELOCITY_SUFFIX,
    Answer,
    EpisodeEndMessage,
    EpisodeStartMessage,
    ObservationMessage,
    PolicyFault,
    ServiceInfo,
)
from x2.policy.services import ServeOptions

CONFIG, WEIGHTS = "config.json", "model.safetensors"
PREPROCESSOR, POSTPROCESSOR = "policy_preprocessor.json", "policy_postprocessor.json"
TRAIN_CONFIG = "train_config.json"  # lerobot-train's own record, beside the weights: names the dataset
REQUIRED = (CONFIG, WEIGHTS, PREPROCESSOR, POSTPROCESSOR)
ACTION = "action"


def check_folder(folder: Path) -> None:
    """Refuse what is not a pretrained_model folder, naming what is missing (and, for a training run's
    output or checkpoint folder, where its pretrained_model is)."""
    where = f"lerobot:{folder}"
    if not folder.is_dir():
        raise PolicyError(f"{where}: found {'a file' if folder.exists() else 'no such folder'}; allowed: a LeRobot "
                          "pretrained_model folder (lerobot-train's checkpoints/<step>/pretrained_model)")
    missing = [name for name in REQUIRED if not (folder / name).is_file()]
    for processor in (PREPROCESSOR, POSTPROCESSOR):  # the state files (normalisation stats) each step names
        if processor not in missing:
            missing += [state for state in _state_files(folder / processor) if not (folder / state).is_file()]
    if missing:
        # A training run's output folder holds checkpoints/<step>/pretrained_model (and `last`, a link).
        steps = sorted(folder.glob("checkpoints/*/pretrained_model"), key=lambda p: p.parent.name, reverse=True)
        candidates = (folder / "pretrained_model", folder / "checkpoints" / "last" / "pretrained_model", *steps)
        inside = next((p for p in candidates if (p / CONFIG).is_file()), None)
        hint = f" (found one at {inside})" if inside is not None else ""
        raise PolicyError(f"{where}: found no {', '.join(missing)}; allowed: a LeRobot pretrained_model folder with "
                          f"{', '.join(REQUIRED)} and the processors' state files{hint}")


def _state_files(pipeline: Path) -> list[str]:
    try:
        steps = json_loads(pipeline.read_text(encoding="utf-8")).get("steps", [])
    except (OSError, ValueError, AttributeError) as exc:
        raise PolicyError(f"lerobot:{pipeline}: found {type(exc).__name__}: {exc}; allowed: a LeRobot processor "
                          "pipeline (JSON with its steps)") from None
    return [str(s["state_file"]) for s in steps if isinstance(s, Mapping) and s.get("state_file")]


def _train_config(folder: Path) -> dict[str, object] | None:
    try:
        train = json_loads((folder / TRAIN_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return train if isinstance(train, dict) else None


def _dataset_features(folder: Path) -> dict[str, object] | None:
    """The training dataset's features (its meta/info.json, found through the root lerobot-train recorded in
    train_config.json); None when the record or the dataset is not there (a folder copied to another machine)."""
    try:
        root = (_train_config(folder) or {})["dataset"]["root"]  # type: ignore[index]
        info = json_loads((Path(root) / "meta" / "info.json").read_text(encoding="utf-8"))
        features = info["features"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return features if isinstance(features, dict) else None


def dataset_feature_names(folder: Path, feature: str) -> tuple[str, ...] | None:
    """A vector feature's names (the action's, the state's), when recoverable: the training dataset's
    meta/info.json names them."""
    try:
        names = (_dataset_features(folder) or {})[feature]["names"]  # type: ignore[index]
    except (KeyError, TypeError):
        return None
    return tuple(str(n) for n in names) if isinstance(names, list) else None


def states_tool_poses(names: tuple[str, ...]) -> bool:
    """Whether the training dataset's observation.state `names` end with tool centre point poses (`x2 export lerobot
    --ee-state` names them `<arm>.x` .. `<arm>.qz`): then x2 eval must send them too."""
    return len(names) >= len(TCP_FIELDS) and \
        tuple(n.rsplit(".", 1)[-1] for n in names[-len(TCP_FIELDS):]) == TCP_FIELDS


def states_velocities(names: tuple[str, ...]) -> bool:
    """Whether the training dataset's observation.state `names` have the joints' velocities after their positions
    (`x2 export lerobot --velocity-state` names them `<joint>.vel`): then x2 eval must send them too."""
    joints = sum(n.endswith(VELOCITY_SUFFIX) for n in names)
    return joints > 0 and tuple(names[joints:2 * joints]) == tuple(n + VELOCITY_SUFFIX for n in names[:joints])


def depth_unit(folder: Path) -> str:
    """The unit lerobot-train's loader gave depth maps in (train_config.json's dataset.depth_output_unit)."""
    from lerobot.configs import DEFAULT_DEPTH_UNIT

    try:
        unit = (_train_config(folder) or {})["dataset"]["depth_output_unit"]  # type: ignore[index]
    except (KeyError, TypeError):
        return str(DEFAULT_DEPTH_UNIT)
    return str(unit) if unit else str(DEFAULT_DEPTH_UNIT)


class LeRobotService:
    """One loaded policy with its processors; one episode at a time (the server calls it from one thread)."""

    def __init__(self, folder: Path, options: ServeOptions) -> None:
        check_folder(folder)
        self.folder = folder
        self.device = options.device
        self._load(options)
        self._task = ""  # the episode's instruction, for an observation that carries none
        self.info = self._describe()

    def _load(self, options: ServeOptions) -> None:
        import torch
        from lerobot.configs.policies import PreTrainedConfig
        from lerobot.configs.types import FeatureType
        from lerobot.policies import get_policy_class, make_pre_post_processors

        where, path = f"lerobot:{self.folder}", str(self.folder)
        # LeRobot prints "Loading weights from local directory" to stdout, which a service keeps for itself.
        with contextlib.redirect_stdout(sys.stderr):
            try:
                config = PreTrainedConfig.from_pretrained(path)
                config.pretrained_path = self.folder
                self._execute_as_asked(config, options)
                config.device = self.device  # from_pretrained puts the weights there
                self.policy = get_policy_class(config.type).from_pretrained(path, config=config)
                self.preprocessor, self.postprocessor = make_pre_post_processors(
                    config, pretrained_path=path,
                    preprocessor_overrides={"device_processor": {"device": self.device},
                                            "rename_observations_processor": {"rename_map": {}}})
            except (OSError, ValueError, KeyError, TypeError, ImportError, RuntimeError) as exc:
                text = " ".join(str(exc).split())[:300]
                raise PolicyError(f"{where}: LeRobot could not load it: {type(exc).__name__}: {text}; allowed: a "
                                  f"pretrained_model folder LeRobot 0.6 wrote, on a device this machine has "
                                  f"(--device {self.device})") from None
        self.policy.eval()
        self.config = config
        self._torch_device = torch.device(self.device)
        self.images: dict[str, tuple[int, int]] = {}  # feature key -> (H, W)
        self.depths: dict[str, tuple[int, int]] = {}  # depth feature key -> (H, W)
        self.vectors: dict[str, int] = {}  # feature key -> width
        for key, feature in config.input_features.items():
            if (feature.type is FeatureType.VISUAL and key.startswith(OBS_IMAGE_PREFIX)
                    and key.endswith(OBS_DEPTH_SUFFIX) and tuple(feature.shape)[:1] == (1,)
                    and len(feature.shape) == 3):
                self.depths[key] = (int(feature.shape[1]), int(feature.shape[2]))
            elif feature.type is FeatureType.VISUAL and key.startswith(OBS_IMAGE_PREFIX) and len(feature.shape) == 3:
                self.images[key] = (int(feature.shape[1]), int(feature.shape[2]))  # LeRobot keeps (C, H, W)
            elif len(feature.shape) == 1 and (key in (OBS_STATE, OBS_ENV_STATE)
                                              or key.startswith(OBS_EXTRINSICS_PREFIX)):
                self.vectors[key] = int(feature.shape[0])
            else:
                raise PolicyError(f"{where}: input feature {key} {tuple(feature.shape)}: found one x2 does not "
                                  f"send; allowed: {OBS_STATE}, {OBS_ENV_STATE}, {OBS_EXTRINSICS_PREFIX}<camera> "
                                  "(vectors), "
                                  f"{OBS_IMAGE_PREFIX}<camera> (C, H, W) and {OBS_IMAGE_PREFIX}<camera>"
                                  f"{OBS_DEPTH_SUFFIX} (1, H, W)")
        action = config.output_features.get(ACTION)
        if action is None or len(action.shape) != 1:
            raise PolicyError(f"{where}: output features: found {sorted(config.output_features)}; allowed: an "
                              f"{ACTION} vector")
        self.action_dim = int(action.shape[0])
        self._depth_unit = depth_unit(self.folder) if self.depths else ""
        self._depth_encoders = {key: self._depth_encoder(key) for key in self.depths}

    def _execute_as_asked(self, config: object, options: ServeOptions) -> None:
        """`x2 eval --chunk-exec` for a policy that keeps its own action queue: set before the policy is built (ACT
        builds its temporal ensembler from its config), so LeRobot's own queue and ensembler run it."""
        where = f"lerobot:{self.folder}"
        kind = getattr(config, "type", "?")
        if options.execution.ensemble:
            if not hasattr(config, "temporal_ensemble_coeff"):
                raise PolicyError(f"--chunk-exec: found ensemble for {where}, a {kind} policy; allowed: chunk or a "
                                  "number K (temporal ensembling is ACT's)")
            config.temporal_ensemble_coeff = ENSEMBLE_DECAY
            config.n_action_steps = 1  # type: ignore[attr-defined]  # (ACT asks it with ensembling)
        elif options.execution.steps is not None:
            steps = options.execution.steps
            # at most what one inference predicts: ACT's chunk, diffusion's horizon past its observed steps
            limit = getattr(config, "chunk_size", None)
            if limit is None and hasattr(config, "horizon"):
                limit = int(config.horizon) - int(getattr(config, "n_obs_steps", 1)) + 1
            if not hasattr(config, "n_action_steps") or limit is None or not 1 <= steps <= int(limit):
                allowed = f"1 to {limit} (what one inference predicts)" if limit else "chunk (it has no action queue)"
                raise PolicyError(f"--chunk-exec: found {steps} for {where}, a {kind} policy; allowed: {allowed}")
            config.n_action_steps = steps

    def _depth_encoder(self, key: str) -> object:
        """The depth encoder the training dataset's `key` was stored with (what its loader dequantised by)."""
        from lerobot.configs.video import DepthEncoderConfig

        feature = (_dataset_features(self.folder) or {}).get(key)
        info = feature.get("info") if isinstance(feature, dict) else None  # (as LeRobot's reader reads it)
        return DepthEncoderConfig.from_video_info(info if isinstance(info, dict) else None)

    def _describe(self) -> ServiceInfo:
        names = getattr(self.config, "action_feature_names", None) or dataset_feature_names(self.folder, ACTION)
        if names is not None and len(names) != self.action_dim:
            names = None  # a dataset that changed since training says nothing about this policy
        state = dataset_feature_names(self.folder, OBS_STATE) or ()  # (read once for both checks below)
        return ServiceInfo(
            kind="lerobot", identity=str(self.folder), lifecycle=True,
            digest=file_digest(self.folder / WEIGHTS).split(":", 1)[1],  # the weights' sha256 in hex
            cameras={key.removeprefix(OBS_IMAGE_PREFIX): hw for key, hw in self.images.items()},
            depth={key.removeprefix(OBS_IMAGE_PREFIX).removesuffix(OBS_DEPTH_SUFFIX): hw
                   for key, hw in self.depths.items()},
            extrinsics=tuple(k.removeprefix(OBS_EXTRINSICS_PREFIX) for k in self.vectors
                             if k.startswith(OBS_EXTRINSICS_PREFIX)),
            state=OBS_STATE in self.vectors, ee_state=OBS_STATE in self.vectors and states_tool_poses(state),
            velocity_state=OBS_STATE in self.vectors and states_velocities(state),
            environment_state=OBS_ENV_STATE in self.vectors,
            action_names=None if names is None else tuple(names), chunk=None)

    def metadata(self) -> Mapping[str, object]:
        return self.info.to_metadata()

    def initialize_episode(self, episode: EpisodeStartMessage) -> None:
        # As LeRobot's own rollout resets before an episode: the action queue and any processor state.
        self.policy.reset()
        self.preprocessor.reset()
        self.postprocessor.reset()
        self._task = str(episode.get("instruction") or "")

    def finalize_episode(self, result: EpisodeEndMessage) -> None:
        pass

    def batch(self, obs: ObservationMessage) -> dict[str, Floats | Image]:
        """The observation's arrays the policy reads, checked and copied (writable: torch.from_numpy)."""
        out: dict[str, Floats | Image] = {}
        for key, (height, width) in self.images.items():
            value = np.asarray(obs[key]) if key in obs else None
            if value is None or value.shape != (height, width, 3) or value.dtype != np.uint8:
                found = "missing" if value is None else f"{value.dtype}{value.shape}"
                raise PolicyFault("malformed", f"{key}: found {found}; allowed: uint8 ({height}, {width}, 3)")
            out[key] = np.array(value)
        for key, (height, width) in self.depths.items():
            value = np.asarray(obs[key]) if key in obs else None
            if value is None or value.shape != (height, width, 1) or value.dtype.kind != "f":
                found = "missing" if value is None else f"{value.dtype}{value.shape}"
                raise PolicyFault("malformed", f"{key}: found {found}; allowed: float metres ({height}, {width}, 1)")
            out[key] = self._as_trained(key, value)
        for key, width in self.vectors.items():
            value = np.asarray(obs[key]) if key in obs else None
            if value is None or value.shape != (width,) or value.dtype.kind not in "fiu":
                found = "missing" if value is None else f"{value.dtype}{value.shape}"
                raise PolicyFault("malformed", f"{key}: found {found}; allowed: float ({width},)")
            out[key] = np.array(value, dtype=np.float32)
        return out

    def _as_trained(self, key: str, metres: Floats) -> Floats:
        """A live depth map (H, W, 1) in metres as the training loader gave it: LeRobot's quantiser and
        dequantiser with the dataset's encoder parameters, in the training's unit, (H, W, 1) float32."""
        import torch
        from lerobot.datasets.depth_utils import dequantize_depth, quantize_depth

        enc = self._depth_encoders[key]
        tuning = {name: getattr(enc, name) for name in ("depth_min", "depth_max", "shift", "use_log")}
        codes = quantize_depth(np.asarray(metres, np.float32), **tuning, video_backend=None, input_unit="m")
        # Dequantised from a tensor, as the loader's decoded frames are: torch's float32 exp, not numpy's (they
        # differ in the last bit, which moves a millimetre's rounding), and float32 even in millimetres.
        back = dequantize_depth(torch.from_numpy(codes.astype(np.int32)), **tuning, output_unit=self._depth_unit,
                                output_channel_last=True)
        out: Floats = np.asarray(back.numpy(), np.float32).reshape(metres.shape)
        return out

    def infer(self, obs: ObservationMessage) -> Answer:
        import torch
        from lerobot.policies import prepare_observation_for_inference

        batch = self.batch(obs)
        task = str(obs.get(OBS_TASK) or obs.get(OBS_PROMPT) or self._task)
        with torch.inference_mode():
            frame = prepare_observation_for_inference(batch, self._torch_device, task)
            action = self.postprocessor(self.policy.select_action(self.preprocessor(frame)))
        actions = action.detach().to("cpu", torch.float32).numpy().reshape(1, -1)
        if actions.shape[1] != self.action_dim:
            raise PolicyFault("malformed", f"the policy answered {actions.shape}; allowed: (1, {self.action_dim})")
        return {ACTIONS: actions}


def lerobot_service(path: str, options: ServeOptions) -> LeRobotService:
    return LeRobotService(Path(path).expanduser().absolute(), options)
