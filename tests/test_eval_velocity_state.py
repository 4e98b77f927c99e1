"""A policy trained on `x2 export lerobot --velocity-state` is sent by `x2 eval` the state it trained on: the joints'
positions, then their velocities (`<joint>.vel`), then, with `--ee-state` too, the tool poses (x2/eval/observe.py,
`robot_state`). The proof is the round trip, as for the tool poses (tests/test_eval_ee_state.py): the states a service
was sent while the arm moved equal, bit for bit, the rows the export of that evaluation's own episode writes and the
`agent_pos` the Gymnasium env with `velocity_state` observes under the same actions. x2's LeRobot service says it
wants them when its training dataset's state names have them. (A real recording, which stores no velocities, is
refused in one line: tests/test_ingest_lerobot.py.)

Data: one episode of 8 ticks per case; the LeRobot policy is tiny and untrained (what is under test is what it is
sent).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from helpers.lerobot_folder import exported_state_rows, untrained_act_folder
from helpers.policy_serving import serving
from helpers.real_dataset import record_short_dataset

from x2 import format as fmt
from x2.datasets import Dataset
from x2.envs import env_id
from x2.eval.runner import EvalRun
from x2.eval.seeds import plan_split
from x2.eval.session import EvalSetup
from x2.export.lerobot_plan import LeRobotOptions
from x2.policy.protocol import ACTIONS, OBS_STATE, VELOCITY_SUFFIX, ServiceInfo
from x2.policy.services import ServeOptions, make_service
from x2.policy.services.lerobot import dataset_feature_names

pytestmark = pytest.mark.timeout(240)


class SeesVelocities:
    """Says `velocity_state` (and `ee_state`); swings each arm's first joint away from home, so the velocities are
    not zero; keeps each state sent and each action answered."""

    def __init__(self) -> None:
        self.home, self.states, self.actions = np.zeros(0), [], []  # type: ignore[var-annotated]

    def metadata(self) -> dict[str, Any]:
        return ServiceInfo(kind="test", identity="velocities", lifecycle=True, velocity_state=True,
                           ee_state=True).to_metadata()

    def initialize_episode(self, episode: dict[str, Any]) -> None:
        self.home = np.asarray(episode["home_action"], np.float32).copy()

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        self.states.append(np.array(obs[OBS_STATE]))
        action = self.home.copy()
        action[0] += np.float32(0.04 * len(self.states))  # (the left arm's first joint)
        self.actions.append(action)
        return {ACTIONS: action[None]}

    def finalize_episode(self, result: dict[str, Any]) -> None:
        pass


def _export_states(ds: Dataset, target: Path, **flags: bool) -> tuple[np.ndarray, tuple[str, ...]]:
    """The observation.state column of a state-only LeRobot export of `ds` and its names."""
    rows = exported_state_rows(ds, target, LeRobotOptions(repo_id=f"x2/{target.name}", environment_state=True,
                                                          **flags))
    return rows, dataset_feature_names(target, OBS_STATE) or ()


def test_the_states_x2_eval_sends_are_the_rows_the_export_writes(tmp_path: Path) -> None:
    service = SeesVelocities()
    plan = plan_split("pick_place", None, "train", None, 1, 1)
    with serving(service) as url:
        EvalRun(EvalSetup("pick_place", None, plan.variant, plan.master_seed, url, 30.0, max_ticks=8), plan,
                tmp_path / "train", None).run()
    ds = Dataset.open(tmp_path / "train")
    with ds.load(0) as ep:
        said = ep.json_attr(fmt.POLICY_ATTR)
        joints, arms = ep.dataset(fmt.QPOS).shape[1], ep.dataset(fmt.EE_POSE).shape[1]
        qvel = np.asarray(ep[fmt.QVEL])
    assert said["inputs"]["velocity_state"] is True and said["inputs"]["ee_state"] is True
    sent = np.stack(service.states)
    assert sent.dtype == np.float32 and sent.shape[1] == 2 * joints + 7 * arms and len(sent) >= 7
    assert np.abs(sent[:, joints]).max() > 0.05  # the swung joint moved: its velocity is in the numbers compared
    exported, names = _export_states(ds, tmp_path / "both", velocity_state=True, ee_state=True)
    assert exported.shape == (8, 2 * joints + 7 * arms)
    assert names[joints:2 * joints] == tuple(n + VELOCITY_SUFFIX for n in names[:joints])
    # every tick asked is a frame; the last frame repeats the state the episode ended on, which nobody was sent
    np.testing.assert_array_equal(sent, exported[:len(sent)])
    np.testing.assert_array_equal(exported[:, joints:2 * joints], qvel.astype(np.float32))
    alone, _ = _export_states(ds, tmp_path / "velocities", velocity_state=True)
    np.testing.assert_array_equal(alone, exported[:, :2 * joints])  # without --ee-state: no tool poses after them
    # the Gymnasium env with both, in the same world given the same actions, observes the same agent_pos
    env = gymnasium.make(env_id("pick_place"), obs=["agent_pos"], velocity_state=True, ee_state=True,
                         disable_env_checker=True)
    try:
        seen = [env.reset(seed=0)[0]["agent_pos"]]
        seen += [env.step(action)[0]["agent_pos"] for action in service.actions[:len(sent) - 1]]
    finally:
        env.close()
    np.testing.assert_array_equal(np.stack(seen), sent)


def test_a_lerobot_policy_trained_on_velocities_asks_for_them_and_runs(tmp_path: Path) -> None:
    record_short_dataset(tmp_path / "pick", episodes=1, ticks=6, task="pick_place", seed=4)
    exported_state_rows(Dataset.open(tmp_path / "pick"), tmp_path / "export",
                        LeRobotOptions(repo_id="x2/vel", velocity_state=True, environment_state=True))
    service = make_service(f"lerobot:{untrained_act_folder(tmp_path / 'export', 'x2/vel', tmp_path / 'act')}",
                           ServeOptions())
    info = ServiceInfo.from_metadata(service.metadata())
    assert info.velocity_state is True and info.ee_state is False
    plan = plan_split("pick_place", None, "train", None, 1, 1)
    with serving(service) as url:
        EvalRun(EvalSetup("pick_place", None, plan.variant, plan.master_seed, url, 30.0, max_ticks=6), plan,
                tmp_path / "train", None).run()
    with Dataset.open(tmp_path / "train").load(0) as ep:
        said, frames = ep.json_attr(fmt.POLICY_ATTR), ep.frames
    assert said.get("ended") is None and frames == 6, said  # whole episodes: no "malformed" at the first tick
