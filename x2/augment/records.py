"""The JSON records replay augmentation writes: an augmented episode's `augmentation` attribute (the full
sampled configuration, docs/augmentation.md), the envelope's `params`, and `augmentation.json`.

Each is built by the step it describes (`CheckResult.as_dict`, `Envelope.summary`, ...) and written with sorted
keys, so the order of the fields here is no part of the bytes.
"""

from __future__ import annotations

from typing import TypedDict


class EnvelopeParamsRecord(TypedDict):
    eps: float
    clearance: float
    temporal_tol: float
    max_depth: int
    cell: float


class EnvelopeRecord(TypedDict):
    """`augmentation.envelope`, and the `params` attr of /augmentation/envelope."""

    params: EnvelopeParamsRecord
    frames: int
    samples: int
    proxies: int
    capsules_before: int
    capsules: int
    temporal_bound_m: float
    max_proxy_radius_m: float
    inflation_m: float
    bodies: list[str]


class PlacedRecord(TypedDict):
    name: str
    asset: str
    pose: list[float]  # x, y, z, yaw
    envelope_margin_m: float


class PlacementRecord(TypedDict):
    """`augmentation.distractors`."""

    placed: list[PlacedRecord]
    unplaced: list[str]
    tries: int
    rejected: dict[str, int]  # cause (placement.CAUSES) -> candidates rejected


class CheckRecord(TypedDict):
    """`augmentation.check`; a minimum is None when nothing came within reach."""

    passed: bool
    clearance_m: float
    measured_within_m: float
    frames: int
    inserted_geoms: int
    moving_geoms: int
    pairs_measured: int
    min_distance_m: float | None
    closest: list[int | str] | None  # frame, inserted geom, moving geom
    violations: int
    static_min_m: float | None
    between_min_m: float | None
    support_gap_m: dict[str, float]
    problems: list[str]


class SettleRecord(TypedDict):
    """`augmentation.settle[<distractor>]`."""

    moved_m: float
    tilt_rad: float


class SceneryRecord(TypedDict):
    name: str
    split: str
    description: str


class AreaRecord(TypedDict):
    centre: list[float]
    half_size: list[float]


class SupportRecord(TypedDict):
    geom: str
    z: float
    area: AreaRecord  # placement.work_area


class AugmentedConfig(TypedDict):
    """What one augmented episode drew and found (`augmented.make_augmented`)."""

    seed: int
    scenery: SceneryRecord
    look: dict[str, object]  # x2.sim.mujoco.look.sample_look's, as drawn
    distractors: PlacementRecord
    support: SupportRecord
    envelope: EnvelopeRecord
    check: CheckRecord
    settle: dict[str, SettleRecord]
    parent_model_sha256: str


class ParentRecord(TypedDict):
    dataset: str
    episode: int
    seed: int


class AugmentationConfig(AugmentedConfig):
    """An augmented episode's `augmentation` attribute: what it drew and found, and where it came from."""

    k: int  # the k-th augmented episode of its parent
    request_seed: int
    parent: ParentRecord
    x2_version: str


class MadeConfig(AugmentationConfig):
    """An augmented episode the output dataset holds: its configuration and index."""

    index: int


class RequestRecord(TypedDict):
    variants: int  # AugmentRequest.per_episode under its old name: kept on disk (docs/augmentation.md)
    scenery: list[str]
    objects: int | None
    clearance: float
    eps: float
    seed: int
    allow_eval: bool
    mode: str


class MadeRecord(TypedDict):
    """One augmented episode made, as augmentation.json lists it."""

    index: int
    parent: int
    k: int
    seed: int
    scenery: str
    split: str
    distractors: list[str]  # assets
    capsules: list[int]  # before and after RDP
    min_distance_m: float | None


class RejectedRecord(TypedDict):
    """One augmented episode rejected (or whose worker was lost), as augmentation.json lists it."""

    parent: int
    k: int
    seed: int
    scenery: str
    problems: list[str]


class AugmentationReport(TypedDict):
    """`augmentation.json` of an output dataset."""

    x2_version: str
    source: str
    request: RequestRecord
    episodes: list[MadeRecord]
    rejected: list[RejectedRecord]
