"""Where an `x2 eval` run goes when no --dataset is given: a folder under ./data named by the policy's identity, so
that evaluating checkpoint after checkpoint (of a ws:// service too) never writes one run over another.

    eval-<task>-<what it serves>-<8 hex of the sha256 of its digest, else of the policy as given>

The service says what it serves when it is connected to (x2/policy/protocol.py ServiceInfo: `identity`, and
`digest`, the sha256 of its weights or dataset index): a LeRobot checkpoint is named by its folder and its
weights' digest, wherever it is served from; a service that names no digest (a stock openpi server) by its URL,
so two checkpoints served one after the other at one URL without a digest share a folder (give --dataset)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path, PurePosixPath

from x2.policy.protocol import ServiceInfo

_UNSAFE = re.compile(r"[^A-Za-z0-9_.]+")
# path parts that say nothing about which checkpoint it is (LeRobot's checkpoint layout)
_GENERIC = {"pretrained_model", "checkpoints", "last", "outputs", "train"}
SLUG_CHARS = 40


def run_folder_name(task: str, policy: str, info: ServiceInfo) -> str:
    """The run's folder name under ./data (module docstring)."""
    key = info.digest or policy
    short = hashlib.sha256(key.encode()).hexdigest()[:8]
    return f"eval-{Path(task).stem}-{_slug(policy, info)}-{short}"


def _slug(policy: str, info: ServiceInfo) -> str:
    if info.kind in ("lerobot", "replay") and info.identity:
        parts = [p for p in PurePosixPath(info.identity.replace("\\", "/")).parts if p not in _GENERIC and p != "/"]
        text = "-".join(parts[-2:]) if parts else info.kind
    elif info.kind == "remote":
        text = "remote-" + policy.split("://", 1)[-1]
    else:
        text = info.kind
    slug = _UNSAFE.sub("-", text).strip("-.") or info.kind
    return slug[-SLUG_CHARS:].lstrip("-.")
