"""What an export was made from: written beside every export (LeRobot `meta/x2.json`, zarr and HDF5 attrs)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import x2
from x2.datasets import Dataset, EpisodeRecord

type Json = None | bool | int | float | str | list[Json] | dict[str, Json]
# x2_version, exported_utc, dataset, selection, sim_versions, episodes, and the format's own keys
type Provenance = dict[str, Json]


def provenance(ds: Dataset, records: Sequence[EpisodeRecord], selection: str, **extra: Json) -> Provenance:
    """x2 version, the source dataset, and per exported episode its index, seed, source, outcome and the
    digest of the file it was read from (so a trainer can tell which source files a model saw).

    ``episodes[i]`` describes the i-th exported episode (export episode i came from source episode
    ``episodes[i]["index"]``)."""
    return {
        "x2_version": x2.__version__,
        "exported_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "dataset": {"name": ds.name, "path": str(ds.root.absolute()), "schema": ds.manifest.schema,
                    "robot": ds.manifest.robot, "task": ds.manifest.task, "fps": ds.manifest.fps},
        "selection": selection,
        "sim_versions": dict(ds.manifest.versions),
        "episodes": [{"index": r.index, "file": r.file, "frames": r.frames, "seed": r.seed,
                      "master_seed": r.master_seed, "slot": r.slot, "source": r.source,
                      "success": r.success, "bytes": r.bytes, "digest": r.digest} for r in records],
        **extra,
    }
