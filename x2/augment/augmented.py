"""One augmented episode of one recorded episode: scenery drawn, distractors placed, world composed, checked.

Everything drawn comes from the augmented episode's own seed (three named streams, so the look never shifts
the placement), and everything drawn is recorded: `Augmented.config` is the full sampled configuration that
goes into the new episode, rounded so the same seed gives the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import mujoco
import numpy as np

from x2 import format as fmt
from x2.augment.check import CheckResult, check_world, restless, settle
from x2.augment.compose import compose_world
from x2.augment.envelope import Envelope, EnvelopeParams, build_envelope
from x2.augment.placement import (
    Obstacle,
    PlacementReport,
    Support,
    box_support,
    distractor_shape,
    place_distractors,
    static_obstacles,
    work_area,
)
from x2.augment.records import AugmentedConfig, SettleRecord
from x2.base.arrays import Floats
from x2.base.seeding import child_seed, streams
from x2.envspec.env import AssetSpec
from x2.envspec.scenery import Scenery
from x2.sim.mujoco.look import sample_look
from x2.sim.mujoco.recorded_xml import compile_world

STREAMS = ("look", "distractors", "placement")  # order is part of the bytes: append, never reorder


def augmented_seed(master_seed: int, parent_seed: int, k: int) -> int:
    """The seed of the k-th augmented episode of the one recorded from `parent_seed`: unique per (parent, k)."""
    return child_seed(master_seed, parent_seed, k)


@dataclass(frozen=True)
class Augmented:
    """The k-th augmented episode of a parent, made but not written: its world, what was drawn, what was found."""

    seed: int
    scenery: Scenery
    model_xml: str
    placement: PlacementReport
    check: CheckResult
    settled: dict[str, SettleRecord]
    config: AugmentedConfig
    textures: dict[str, bytes] = field(default_factory=dict)  # the images its world carries (the parent's, the look's)

    @property
    def problems(self) -> list[str]:
        out = list(self.check.problems)
        out += [f"{name} does not stay at rest on its support" for name in restless(self.settled)]
        if not self.placement.placed and not self.config["look"]:
            out.append("nothing changed (no distractor found a spot and the scenery has no look): the parent again")
        return out


def choose_distractors(scenery: Scenery, count: int | None, task_assets: Sequence[str],
                       rng: np.random.Generator) -> list[AssetSpec]:
    """The distractor assets: `count` (or the scenery's range) drawn from its pool, never an asset a task
    object of the episode is (the instruction names those: a second one would make it ambiguous)."""
    pool = scenery.distractors
    if pool is None:
        return []
    lo, hi = pool.count
    n = int(rng.integers(lo, hi + 1)) if count is None else count
    allowed = [a for a in pool.assets if a.name not in set(task_assets)]
    if not allowed or n <= 0:
        return []
    picks = rng.choice(len(allowed), size=n, replace=n > len(allowed))  # distinct while the pool allows
    return [allowed[int(i)] for i in picks]


@dataclass(frozen=True)
class ParentEpisode:
    """What every augmented episode of one recorded episode shares, worked out once."""

    xml: str
    model: mujoco.MjModel
    states: Floats  # (T, D) the recorded /states
    envelope: Envelope
    support: Support
    area: Support  # where distractors go (placement.work_area)
    obstacles: tuple[Obstacle, ...]
    task_assets: tuple[str, ...]  # the assets the episode's task objects are
    sha256: str
    source: str  # the episode file the world was read from (errors name it)
    textures: Mapping[str, bytes]  # the images the world carries (an augmented copy keeps the parent's /textures)

    @classmethod
    def of(cls, xml: str, states: Floats, params: EnvelopeParams, task_assets: Sequence[str],
           source: str = fmt.MODEL_XML_ATTR, textures: Mapping[str, bytes] | None = None) -> ParentEpisode:
        model = compile_world(xml, source, textures)
        envelope = build_envelope(model, states, params)
        support = box_support(model)
        return cls(xml, model, states, envelope, support, work_area(envelope, support),
                   tuple(static_obstacles(model, support)), tuple(task_assets),
                   hashlib.sha256(xml.encode("utf-8")).hexdigest(), source, dict(textures or {}))


def make_augmented(parent: ParentEpisode, scenery: Scenery, seed: int, objects: int | None = None,
                   mode: str = "uniform") -> Augmented:
    rngs = streams(seed, STREAMS)
    look = sample_look(scenery, rngs["look"])
    envelope, support, area = parent.envelope, parent.support, parent.area
    assets = choose_distractors(scenery, objects, parent.task_assets, rngs["distractors"])
    shapes = [distractor_shape(a) for a in assets]
    report = place_distractors(shapes, area, envelope, parent.obstacles, rngs["placement"],
                               envelope.params.clearance, mode=mode)
    xml, images = compose_world(parent.xml, look, report.placed, {s.name: s for s in shapes},
                                float(parent.model.opt.timestep), parent.source, parent.textures)
    check = check_world(compile_world(xml, parent.source, images), parent.states, envelope.params.clearance,
                        support.name)
    settled = settle(report.placed, {a.name: a for a in assets}, support)
    config: AugmentedConfig = {
        "seed": seed,
        "scenery": {"name": scenery.name, "split": scenery.split, "description": scenery.description},
        "look": look,
        "distractors": report.as_dict(),
        "support": {"geom": support.name, "z": support.z, "area": {"centre": list(area.centre),
                                                                  "half_size": list(area.half)}},
        "envelope": envelope.summary(),
        "check": check.as_dict(),
        "settle": settled,
        "parent_model_sha256": parent.sha256,
    }
    return Augmented(seed, scenery, xml, report, check, settled, config, images)
