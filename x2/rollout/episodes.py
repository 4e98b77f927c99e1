"""Episodes into a dataset: the one commit path every collector takes, and what it records about them.

An episode file carries its whole world: `model_xml` (the model exactly as stepped, compiled from this
text), `world` (the compiled task, scene, robot and action layout: x2.envspec.record), the drawn `assets`
and `layout`, and the seed with the master seed and slot it was drawn for. `x2.recorded.world.open_world`
rebuilds everything from these attrs alone. The names and types are x2.format's; this module
fills them from a compiled environment and a finished rollout.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

import x2
from x2 import format as fmt
from x2.base.seeding import slot_seed
from x2.datasets import (
    Dataset,
    EpisodeEnd,
    EpisodeRecord,
    EpisodeStart,
    EpisodeWriter,
    Manifest,
    Rejection,
    TeleopEnd,
)
from x2.envspec.action import DEFINITION
from x2.envspec.calibration import calibration_record
from x2.envspec.env import EnvSpec
from x2.envspec.held_out import config_split
from x2.envspec.record import env_record
from x2.format import MISSED_SLOTS_ATTR, Array, manifest_extra
from x2.format.checks import string_array
from x2.rollout.background import BackgroundRecorder
from x2.rollout.loop import EpisodeResult, Recorder, Rollout, RolloutOptions
from x2.rollout.teacher import Teacher, reach_and_return
from x2.sim import simulator_versions
from x2.sim.discovery import DEFAULT as DEFAULT_BACKEND
from x2.sim.discovery import chosen_backend


def versions() -> dict[str, str]:
    """What made the data; `backend` names a simulator backend other than x2's own MuJoCo one (the entry point
    $X2_BACKEND chose, docs/backends.md), so a reader knows whose physics stepped the episode."""
    out = {"x2": x2.__version__, **simulator_versions(), "numpy": np.__version__}
    backend = chosen_backend()
    return out if backend == DEFAULT_BACKEND else {**out, "backend": backend}


class WorldNames(Protocol):
    """The names a dataset's manifest takes from a world's simulator: a `Backend` has them, and so has the answer
    of a process that holds one (a pool's parent that builds no simulator of its own)."""

    @property
    def robot_joint_names(self) -> tuple[str, ...]: ...
    @property
    def object_names(self) -> tuple[str, ...]: ...


def dataset_manifest(env: EnvSpec, backend: WorldNames, cameras: tuple[str, ...] = ()) -> Manifest:
    task = env.task
    dag: dict[str, object] = {}
    if task is not None:
        dag = {
            "nodes": list(task.node_ids),
            "edges": [list(e) for e in task.edges],
            "scores": {n.id: n.score for n in task.nodes},
            "predicates": {n.id: {"success": [c.describe() for c in n.success],
                                  "failure": [c.describe() for c in n.failure],
                                  "timeout_s": n.timeout_s} for n in task.nodes},
        }
    return Manifest(
        robot=env.robot.name,
        task=task.name if task else "",
        fps=env.fps,
        joint_names=tuple(backend.robot_joint_names),
        action_names=tuple(env.robot.action_names),
        cameras=list(cameras),
        dag=dag,
        world=env_record(env),
        versions=versions(),
        extra=manifest_extra(action_definition=DEFINITION, object_names=backend.object_names,
                             substeps=env.substeps, sim_dt=env.booth.timestep, scene=env.scene_name,
                             variant=env.variant, spec_sources=env.sources),
    )


def open_dataset(path: Path, env: EnvSpec, backend: WorldNames) -> Dataset:
    """Create the dataset, or reopen it (the store refuses one made for another world, and names the folder for
    another robot: its default one, or that with the robot's name after it), and become its writer: the lock heals
    a log that a crash left behind, so counts are right from here."""
    own = env.dataset_name
    robot_folder = path.parent / (own if path.name != own else f"{own}-{env.robot.name}")
    ds = Dataset.create(path, dataset_manifest(env, backend), exist_ok=True, robot_folder=str(robot_folder))
    ds.lock()
    return ds


def episode_start(env: EnvSpec, seed: int, source: str, master_seed: int | None = None,
                  slot: int | None = None) -> EpisodeStart:
    """Attributes known before an episode starts."""
    return EpisodeStart(
        task=env.task.name if env.task else "", robot=env.robot.name, seed=seed, source=source, fps=env.fps,
        sim_dt=env.booth.timestep, scene_variant=env.variant, split=config_split(env, master_seed),
        versions=json.dumps(versions()),
        master_seed=master_seed, slot=None if master_seed is None else slot,
        calibration=None if (cal := calibration_record(env.robot)) is None else json.dumps(cal, sort_keys=True))


def episode_end(env: EnvSpec, result: EpisodeResult, model_xml: str, object_names: tuple[str, ...], *,
                rejection: Rejection | None = None, teleop: TeleopEnd | None = None,
                synthesis: str | None = None, policy: str | None = None) -> EpisodeEnd:
    """Attributes known once it ended: the world it ran in, what was drawn, how it ended."""
    pen = result.penetration
    return EpisodeEnd(
        instruction=result.reset.instruction,
        model_xml=model_xml,
        world=json.dumps(env_record(env), sort_keys=True),
        layout=json.dumps({k: v.as_list() for k, v in result.reset.layout.items()}),
        assets=json.dumps(result.reset.assets),
        env_args=json.dumps({"env_name": env.task.name if env.task else env.scene_name, "type": "x2-mujoco",
                             "env_kwargs": {"robot": env.robot.name, "variant": env.variant,
                                            "seed": result.seed}}),
        # A person's episode ended as the person (or the session) said: the loop only saw its teacher stop.
        end_reason=teleop.ending if teleop is not None else result.end_reason,
        max_penetration_m=0.0 if pen is None else pen.depth,
        object_names=json.dumps(list(object_names)),
        rejection=rejection, teleop=teleop, synthesis=synthesis, policy=policy,
        reset_look=None if result.reset.appearance is None else json.dumps(result.reset.appearance, sort_keys=True),
        reset_embodiment=(None if result.reset.embodiment is None
                          else json.dumps(result.reset.embodiment, sort_keys=True)),
        reset_roles=None if result.reset.roles is None else json.dumps(result.reset.roles),
    )


@dataclass(frozen=True)
class DeviceRecord:
    """What a teleoperated episode adds: its raw device streams (/device/<kind>/...) and how it ended."""

    streams: Mapping[str, Mapping[str, Array]]
    attrs: Mapping[str, Mapping[str, object]]  # HDF5 attrs of each /device/<name> group
    teleop: TeleopEnd


# /ee_action's arrays by key, as x2.format names their paths (docs/format.md, "End-effector actions")
EE_KEYS = tuple(p.removeprefix(f"{fmt.EE_ACTION}/") for p in (fmt.EE_ACTION_VALUES, fmt.EE_COMMANDED, fmt.EE_REACHED,
                                                                fmt.EE_UNREACHABLE))


def ee_action_record(rows: Sequence[tuple[Array, Array, Array, Array]], kind: str, names: Sequence[str]
                     ) -> tuple[dict[str, Array], dict[str, object]]:
    """An end-effector policy's episode record from its frames' rows (the action it answered, the pose commanded, the
    pose reached, the unreachable flags): `EpisodeOutcome.ee_arrays` and `ee_attrs`."""
    columns = [np.stack(c) for c in zip(*rows, strict=True)]
    arrays = {key: np.asarray(col, dtype=np.float32) for key, col in zip(EE_KEYS[:3], columns[:3], strict=True)}
    arrays[EE_KEYS[3]] = np.asarray(columns[3], dtype=bool)
    return arrays, {fmt.EE_KIND_ATTR: kind, fmt.NAMES_ATTR: string_array(names)}


@dataclass(frozen=True)
class EpisodeOutcome:
    """How a recorded episode is committed: what it is stored as, beyond what the rollout says."""

    success: bool
    model_xml: str
    object_names: tuple[str, ...]
    rejection: Rejection | None = None
    device: DeviceRecord | None = None
    env: EnvSpec | None = None  # the world it ran in, when not the one it started from
    synthesis: str | None = None  # how synthesis made it (EpisodeEnd.synthesis)
    policy: str | None = None  # which evaluated policy drove it (EpisodeEnd.policy)
    textures: Mapping[str, bytes] = field(default_factory=dict)  # the images its world carries (/textures)
    # an end-effector policy's per-frame record (/ee_action/<key>) and the attrs of its first array
    ee_arrays: Mapping[str, Array] = field(default_factory=dict)
    ee_attrs: Mapping[str, object] = field(default_factory=dict)


def commit_episode(ds: Dataset, env: EnvSpec, start: EpisodeStart, record: Callable[[EpisodeWriter], EpisodeResult],
                   outcome: Callable[[EpisodeResult], EpisodeOutcome | None],
                   object_names: tuple[str, ...]) -> tuple[EpisodeResult, EpisodeRecord | None]:
    """The one commit path: open the dataset's next episode, let `record` append its ticks (live or
    replayed from memory), then commit it as `outcome` says, or discard it when `outcome` gives None
    (or nothing was recorded)."""
    with ds.begin_episode(start, object_names=object_names) as writer:
        result = record(writer)
        how = outcome(result) if result.ticks > 0 else None
        if how is None:
            writer.abort()
            return result, None
        device = how.device
        end = episode_end(how.env or env, result, how.model_xml, how.object_names, rejection=how.rejection,
                          teleop=device.teleop if device is not None else None, synthesis=how.synthesis,
                          policy=how.policy)
        committed = writer.finish(
            labels=result.labels, dag=result.dag, success=how.success, extra_attrs=end.attrs(),
            timing=result.stage_ms, timing_attrs={MISSED_SLOTS_ATTR: result.missed_slots},
            device=device.streams if device is not None else None,
            device_attrs=device.attrs if device is not None else None, textures=how.textures,
            ee_arrays=how.ee_arrays, ee_attrs=how.ee_attrs)
    return result, committed


def record_episode(ds: Dataset, rollout: Rollout, teacher: Teacher, seed: int, source: str,
                   options: RolloutOptions | None = None, keep: Callable[[EpisodeResult], bool] | None = None,
                   device: Callable[[EpisodeResult], DeviceRecord] | None = None,
                   background: bool = False, master_seed: int | None = None,
                   slot: int | None = None) -> tuple[EpisodeResult, EpisodeRecord | None]:
    """Run one episode live into the dataset. It is committed unless `keep` says no (then discarded);
    `device` adds a teleoperated episode's device record. `background` appends ticks on a writer thread
    (real-time loops: see `BackgroundRecorder`)."""
    env, backend = rollout.env, rollout.backend

    def run(writer: Recorder) -> EpisodeResult:
        if not background:
            return rollout.run(teacher, seed, writer, options)
        recorder = BackgroundRecorder(writer)
        try:
            return rollout.run(teacher, seed, recorder, options)
        finally:
            recorder.close()  # every tick written (or the writer's error raised) before finish/abort

    def outcome(result: EpisodeResult) -> EpisodeOutcome | None:
        if keep is not None and not keep(result):
            return None
        return EpisodeOutcome(success=result.success, model_xml=backend.model_xml(),
                              textures=backend.model_textures(), object_names=backend.object_names, env=backend.env,
                              device=device(result) if device is not None else None)

    return commit_episode(ds, env, episode_start(env, seed, source, master_seed, slot), run, outcome,
                          backend.object_names)


def record_scripted(ds: Dataset, rollout: Rollout, master_seed: int, first_slot: int, count: int,
                    progress: Callable[[int, int], None] | None = None,
                    ) -> Iterator[tuple[int, EpisodeResult, EpisodeRecord | None]]:
    """`count` scripted episodes (`reach_and_return`: every arm reaches out and comes home), one per seed slot
    of `master_seed` from `first_slot` on, each committed as it ends and its slot marked used (slots continue
    after every one used before: no seed repeats). Yields (seed, result, record) per episode, in slot order."""
    backend = rollout.backend
    for slot in range(first_slot, first_slot + count):
        if progress is not None:
            progress(slot - first_slot, count)
        seed = slot_seed(master_seed, slot)
        teacher = reach_and_return(backend.home_action(), backend.action_layout, rollout.env.fps)
        result, record = record_episode(ds, rollout, teacher, seed, source="scripted", master_seed=master_seed,
                                        slot=slot)
        ds.use_slots(master_seed, slot)
        yield seed, result, record
