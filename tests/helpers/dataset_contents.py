"""Everything of a dataset that its seed decides, to compare two runs byte for byte (/timing aside)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import h5py
import numpy as np

from x2.datasets import Dataset


def deterministic_contents(path: Path) -> list[dict[str, object]]:
    """Everything of every episode that the seed decides: each dataset's dtype, shape and bytes and every
    attr of every group, all but /timing (the wall clock's), plus the index lines."""
    ds = Dataset.open(path)
    out: list[dict[str, object]] = []
    for record in ds.episodes():
        # The digest is of every byte of the file, /timing included: equal exactly when the files are.
        content: dict[str, object] = {"index line": replace(record, digest=None).to_json()}
        content.update(file_contents(ds.episode_path(record.index)))
        out.append(content)
    return out


def file_contents(path: Path) -> dict[str, object]:
    """One episode file's part of `deterministic_contents`: all but /timing, decoded, with every attr."""
    content: dict[str, object] = {}
    with h5py.File(path) as f:
        def visit(name: str, obj: h5py.HLObject) -> None:
            if name.split("/")[0] == "timing":
                return
            if isinstance(obj, h5py.Dataset):
                content[name] = (obj.dtype.str, obj.shape, obj[()].tobytes())
            content[f"{name}@attrs"] = {k: _attr(v) for k, v in sorted(obj.attrs.items())}
        content["@attrs"] = {k: _attr(v) for k, v in sorted(f.attrs.items())}
        f.visititems(visit)
    return content


def _attr(value: object) -> object:
    if isinstance(value, np.ndarray) and value.dtype.kind == "O":  # strings: their text, not their pointers
        return tuple(v.decode() if isinstance(v, bytes) else str(v) for v in value.ravel())
    return value if isinstance(value, str | bytes) else np.asarray(value).tobytes()
