"""Episodes into a dataset: what the manifest and each episode file say about where they came from.

An episode file carries its whole world: `model_xml` (the model exactly as stepped, compiled from this
text), `world` (the compiled task, scene, robot and action layout: x2.spec.record), the drawn `assets`
and `layout`, and the seed with the master seed and slot it was drawn for. `x2.rollout.world.open_world`
rebuilds everything from these attrs alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mujoco
import numpy as np

import x2
from x2.datasets import Dataset, EpisodeRecord
from x2.rollout.background import BackgroundRecorder
from x2.rollout.loop import EpisodeResult, Rollout, RolloutOptions
from x2.rollout.teacher import Teacher
from x2.sim.backend import Backend
from x2.spec.action import DEFINITION
from x2.spec.env import EnvSpec
from x2.spec.record import env_record


def versions() -> dict[str, str]:
    return {"x2": x2.__version__, "mujoco": mujoco.__version__, "numpy": np.__version__}


def dataset_manifest(env: EnvSpec, backend: Backend, cameras: tuple[str, ...] = ()) -> dict[str, Any]:
    task = env.task
    dag = None
    if task is not None:
        dag = {
            "nodes": list(task.node_ids),
            "edges": [list(e) for e in task.edges],
            "scores": {n.id: n.score for n in task.nodes},
            "predicates": {n.id: {"success": [c.describe() for c in n.success],
                                  "failure": [c.describe() for c in n.failure],
                                  "timeout_s": n.timeout_s} for n in task.nodes},
        }
    return {
        "robot": env.robot.name,
        "task": task.name if task else "",
        "fps": env.fps,
        "joint_names": list(backend.robot_joint_names),
        "action_names": list(env.robot.action_names),
        "cameras": list(cameras),
        "dag": dag or {},
        "world": env_record(env),
        "versions": versions(),
        "extra": {
            "action_definition": DEFINITION,
            "object_names": list(backend.object_names),
            "substeps": env.substeps,
            "sim_dt": env.booth.timestep,
            "scene": env.scene_name,
            "variant": env.variant,
            "spec_sources": list(env.sources),
        },
    }


def open_dataset(path: Path, env: EnvSpec, backend: Backend) -> Dataset:
    """Create the dataset, or reopen it (the store refuses one made for another world), and become its
    writer: the lock heals a log that a crash left behind, so counts are right from here."""
    ds = Dataset.create(path, dataset_manifest(env, backend), exist_ok=True)
    ds.lock()
    return ds


def episode_attrs(env: EnvSpec, seed: int, source: str, master_seed: int | None = None,
                  slot: int | None = None) -> dict[str, Any]:
    """Attributes known before an episode starts."""
    attrs: dict[str, Any] = {
        "task": env.task.name if env.task else "", "robot": env.robot.name, "seed": seed, "source": source,
        "fps": env.fps, "sim_dt": env.booth.timestep, "scene_variant": env.variant, "split": env.split,
        "versions": json.dumps(versions())}
    if master_seed is not None:
        attrs["master_seed"], attrs["slot"] = master_seed, slot
    return attrs


def episode_extra(env: EnvSpec, result: EpisodeResult, model_xml: str, object_names: tuple[str, ...],
                  more: dict[str, Any] | None = None) -> dict[str, Any]:
    """Attributes known once it ended: the world it ran in, what was drawn, how it ended."""
    pen = result.penetration
    return {
        "instruction": result.reset.instruction,
        "model_xml": model_xml,
        "world": json.dumps(env_record(env), sort_keys=True),
        "layout": json.dumps({k: v.as_list() for k, v in result.reset.layout.items()}),
        "assets": json.dumps(result.reset.assets),
        "env_args": json.dumps({"env_name": env.task.name if env.task else env.scene_name, "type": "x2-mujoco",
                                "env_kwargs": {"robot": env.robot.name, "variant": env.variant,
                                               "seed": result.seed}}),
        "end_reason": result.end_reason,
        "max_penetration_m": 0.0 if pen is None else pen.depth,
        "object_names": json.dumps(list(object_names)),
        **(more or {}),
    }


def timing_attrs(result: EpisodeResult) -> dict[str, Any]:
    """What the wall clock decided about an episode (kept under /timing, apart from the data)."""
    return {"missed_slots": result.missed_slots}


def record_episode(ds: Dataset, rollout: Rollout, teacher: Teacher, seed: int, source: str,
                   options: RolloutOptions | None = None, keep: Callable[[EpisodeResult], bool] | None = None,
                   finish: Callable[[EpisodeResult], dict[str, Any]] | None = None,
                   background: bool = False, master_seed: int | None = None,
                   slot: int | None = None) -> tuple[EpisodeResult, EpisodeRecord | None]:
    """Run one episode into the dataset. It is committed unless `keep` says no (then discarded).

    `finish` adds to what `EpisodeWriter.finish` gets: `extra_attrs` (merged), `device`, `device_attrs`.
    `background` appends ticks on a writer thread (real-time loops: see `BackgroundRecorder`)."""
    env, backend = rollout.env, rollout.backend
    attrs = episode_attrs(env, seed, source, master_seed, slot)
    with ds.begin_episode(attrs, object_names=backend.object_names) as writer:
        if background:
            recorder = BackgroundRecorder(writer)
            try:
                result = rollout.run(teacher, seed, recorder, options)
            finally:
                recorder.close()  # every tick written (or the writer's error raised) before finish/abort
        else:
            result = rollout.run(teacher, seed, writer, options)
        if result.ticks == 0 or (keep is not None and not keep(result)):
            writer.abort()
            return result, None
        more = dict(finish(result)) if finish is not None else {}
        extra = episode_extra(backend.env, result, backend.model_xml(), backend.object_names,
                              more.pop("extra_attrs", None))
        record = writer.finish(labels=result.labels, dag=result.dag, success=result.success, extra_attrs=extra,
                               timing=result.stage_ms, timing_attrs=timing_attrs(result), **more)
    return result, record
