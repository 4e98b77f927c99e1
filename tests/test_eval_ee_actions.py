"""`x2 eval` of a service answering end-effector actions (ServiceInfo.action_kind, or an end-effector layout's
action names): each action is turned into joint targets by the adapter as its tick comes; a malformed one ends its
episode with the reason, the run goes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.policy_serving import serving

from x2 import format as fmt
from x2.base.errors import PolicyError
from x2.datasets import Dataset
from x2.envspec import load_env
from x2.eval.runner import EvalRun
from x2.eval.seeds import plan_split
from x2.eval.session import EvalSetup, ee_layout_of, service_action_kind
from x2.policy.protocol import ACTIONS, ServiceInfo
from x2.sim import make_backend

pytestmark = pytest.mark.timeout(300)
TASK = "pick_place"


def evaluate(url: str, root: Path, n: int, max_ticks: int) -> list[tuple[np.ndarray, Any, dict[str, np.ndarray]]]:
    """(/action, the policy attr, /ee_action's arrays) of each episode of an `x2 eval` of n slots, in one process."""
    plan = plan_split(TASK, None, "train", None, 1, n)
    EvalRun(EvalSetup(TASK, None, plan.variant, plan.master_seed, url, 30.0, max_ticks=max_ticks), plan,
            root / "train", None).run()
    ds = Dataset.open(root / "train")
    out = []
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            ee = {path: np.asarray(ep[path]) for path in (fmt.EE_ACTION_VALUES, fmt.EE_COMMANDED, fmt.EE_REACHED,
                                                          fmt.EE_UNREACHABLE)}
            assert ep.dataset_attrs(fmt.EE_ACTION_VALUES)[fmt.EE_KIND_ATTR] == "ee_delta"
            out.append((np.asarray(ep[fmt.ACTION]), ep.json_attr(fmt.POLICY_ATTR), ee))
    return out


class HoldsByDeltas:
    """Answers zero deltas (every arm holds its pose, grippers open); in slot 1 from tick 5 a delta in millimetres."""

    def __init__(self) -> None:
        self.slot = -1

    def metadata(self) -> dict[str, Any]:
        return ServiceInfo(kind="test", identity="deltas", lifecycle=True, action_kind="ee_delta").to_metadata()

    def initialize_episode(self, episode: dict[str, Any]) -> None:
        self.slot = int(episode["slot"])

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        hold = np.array([0, 0, 0, 0, 0, 0, 1] * 2, np.float32)
        if self.slot == 1 and obs["x2.tick"] >= 5:
            hold[0] = 250.0
        return {ACTIONS: hold[None]}

    def finalize_episode(self, result: dict[str, Any]) -> None:
        pass


def test_end_effector_answers_become_joint_targets_and_a_malformed_one_ends_its_episode(tmp_path: Path) -> None:
    with serving(HoldsByDeltas()) as url:
        (held, held_policy, ee), (bad, bad_policy, _) = evaluate(url, tmp_path, n=2, max_ticks=8)
    assert held_policy["ended"] is None and held.shape == (8, 14)  # (/action: the joint targets applied)
    # what the policy answered, the pose it commanded and the pose reached, one row a frame
    assert ee[fmt.EE_ACTION_VALUES].shape == (8, 14) and not ee[fmt.EE_UNREACHABLE].any()
    assert np.allclose(ee[fmt.EE_COMMANDED][:, :, :3], ee[fmt.EE_COMMANDED][0, :, :3], atol=1e-6)
    assert np.max(np.abs(ee[fmt.EE_COMMANDED][:, :, :3] - ee[fmt.EE_REACHED][:, :, :3])) < 2e-3
    # holding the measured pose at the reset: the joint targets stay at home, to the IK's tolerance
    assert np.max(np.abs(held - held[0])) < 1e-3
    assert bad_policy["ended"]["reason"] == "malformed" and "left_dx = 250" in bad_policy["ended"]["detail"]
    assert len(bad) == 5  # (asked every tick: the answer of tick 5 ends it there)


def test_the_kind_is_said_or_read_from_the_action_names() -> None:
    backend = make_backend(load_env(TASK))
    try:
        names = ee_layout_of(backend, "ee_pose").names
        assert service_action_kind(ServiceInfo(action_names=names), backend, "ws://x") == "ee_pose"
        assert service_action_kind(ServiceInfo(), backend, "ws://x") == "joint"
        assert ServiceInfo.from_metadata(ServiceInfo(action_kind="ee_delta").to_metadata()).action_kind == "ee_delta"
        assert "action_kind" not in ServiceInfo().to_metadata()["x2"]  # (a joint service says what it said before)
        with pytest.raises(PolicyError, match="action_kind: found 'twist'; allowed: joint, ee_pose, ee_delta"):
            service_action_kind(ServiceInfo(action_kind="twist"), backend, "ws://x")
    finally:
        backend.close()
