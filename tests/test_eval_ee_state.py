"""A policy trained on `x2 export lerobot --ee-state` is sent by `x2 eval` the state it trained on: the joints, then
each arm's tool centre point pose in the robot's base frame (x2/eval/observe.py, x2/envspec/ee_action.py
`world_to_base`). The proof is the round trip: the states a service was sent during an evaluation equal, bit for
bit, the `observation.state` rows the export of that evaluation's own episodes writes, and the `agent_pos` the
Gymnasium env with `ee_state` observes in the same world under the same actions (a fixed robot, and a mobile one
whose base drives and turns, so the base's motion is in the numbers). x2's LeRobot service says it wants them
when its training dataset's state names end with a tool pose; a policy so trained runs whole episodes in `x2 eval`
(before, every episode ended at its first tick, "malformed").

Data: 1-2 episodes of 6-8 ticks per case; the LeRobot policies are tiny and untrained (what is under test is what
they are sent).
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
from x2.eval.observe import ObservationPlan
from x2.eval.runner import EvalRun
from x2.eval.seeds import plan_split
from x2.eval.session import EvalSetup
from x2.export.lerobot import export_lerobot
from x2.export.lerobot_plan import LeRobotOptions
from x2.export.request import ExportRequest
from x2.policy.protocol import ACTIONS, OBS_STATE, ServiceInfo
from x2.policy.services import ServeOptions, make_service

pytestmark = pytest.mark.timeout(240)


class SeesToolPoses:
    """Says `ee_state`; holds the home pose (a mobile base driven forward and turned); keeps each state sent."""

    def __init__(self, mobile: bool) -> None:
        self.mobile, self.home, self.states = mobile, np.zeros(0), []  # type: ignore[var-annotated]

    def metadata(self) -> dict[str, Any]:
        return ServiceInfo(kind="test", identity="tool poses", lifecycle=True, ee_state=True).to_metadata()

    def initialize_episode(self, episode: dict[str, Any]) -> None:
        self.home = np.asarray(episode["home_action"], np.float32).copy()
        if self.mobile:  # (the layout's last three: base x, y, yaw targets)
            self.home[-3:] = (-0.2, 0.3, 0.6)

    def infer(self, obs: dict[str, Any]) -> dict[str, Any]:
        self.states.append(np.array(obs[OBS_STATE]))
        return {ACTIONS: self.home[None]}

    def finalize_episode(self, result: dict[str, Any]) -> None:
        pass


@pytest.mark.parametrize("robot", [None, "mobile-aloha"])
def test_the_states_x2_eval_sends_are_the_rows_the_export_writes(robot: str | None, tmp_path: Path) -> None:
    service = SeesToolPoses(mobile=robot is not None)
    plan = plan_split("pick_place", robot, "train", None, 1, 1)
    with serving(service) as url:
        EvalRun(EvalSetup("pick_place", robot, plan.variant, plan.master_seed, url, 30.0, max_ticks=8), plan,
                tmp_path / "train", None).run()
    ds = Dataset.open(tmp_path / "train")
    with ds.load(0) as ep:
        said = ep.json_attr(fmt.POLICY_ATTR)
        joints, arms = ep.dataset(fmt.QPOS).shape[1], ep.dataset(fmt.EE_POSE).shape[1]
        base_yaw = float(ep.dataset(fmt.QPOS)[-1, -1])
    assert said["inputs"]["ee_state"] is True
    sent = np.stack(service.states)
    assert sent.dtype == np.float32 and sent.shape[1] == joints + 7 * arms and len(sent) >= 7
    exported = exported_state_rows(ds, tmp_path / "export", LeRobotOptions(repo_id="x2/ee-eval", ee_state=True))
    assert exported.shape == (8, joints + 7 * arms)
    # every tick asked is a frame; the last frame repeats the state the episode ended on, which nobody was sent
    np.testing.assert_array_equal(sent, exported[:len(sent)])
    if robot is not None:
        assert base_yaw > 0.05  # the base turned: its rotation is in the poses compared
    tool = sent[:, joints:].reshape(len(sent), arms, 7)
    np.testing.assert_allclose(np.linalg.norm(tool[..., 3:], axis=-1), 1.0, atol=1e-5)
    assert np.all(np.abs(tool[..., :3]) < 1.5)  # metres from the mount, not the world's origin
    # the Gymnasium env with ee_state, in the same world given the same actions, observes the same agent_pos
    env = gymnasium.make(env_id("pick_place"), robot=robot, obs=["agent_pos"], ee_state=True,
                         disable_env_checker=True)
    try:
        seen = [env.reset(seed=0)[0]["agent_pos"]]
        seen += [env.step(service.home)[0]["agent_pos"] for _ in range(len(sent) - 1)]
    finally:
        env.close()
    np.testing.assert_array_equal(np.stack(seen), sent)


@pytest.mark.parametrize("wish", ["ee_state", "velocity_state"])
def test_a_plain_service_is_sent_the_joints_alone(wish: str) -> None:
    """Neither the tool poses nor the velocities (tests/test_eval_velocity_state.py) unless the service says so."""
    info = ServiceInfo(kind="lerobot")
    assert wish not in info.to_metadata()["x2"]
    assert getattr(ObservationPlan.for_service(info), wish) is False
    said = ServiceInfo(kind="lerobot", **{wish: True})
    assert ServiceInfo.from_metadata(said.to_metadata()) == said and getattr(ObservationPlan.for_service(said), wish)


@pytest.fixture(scope="module")
def exports(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, Path]:
    """State-only LeRobot exports of one short pick_place episode, with and without --ee-state (and with the
    object poses: LeRobot's ACT wants a picture or them)."""
    import datasets.config

    tmp = tmp_path_factory.mktemp("ee-state")
    record_short_dataset(tmp / "pick", episodes=1, ticks=6, task="pick_place", seed=4)
    ds = Dataset.open(tmp / "pick")
    out = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp / "hf-cache")
        for ee in (False, True):
            out[ee] = tmp / f"export-{ee}"
            export_lerobot(ExportRequest(ds, tuple(ds.episodes()), out[ee], state_only=True),
                           LeRobotOptions(repo_id=f"x2/ee-{ee}", ee_state=ee, environment_state=True))
    return out


def test_a_lerobot_policy_trained_on_tool_poses_asks_for_them_and_runs(exports: dict[bool, Path],
                                                                      tmp_path: Path) -> None:
    plain = make_service(f"lerobot:{untrained_act_folder(exports[False], 'x2/ee-False', tmp_path / 'a')}",
                         ServeOptions())
    assert ServiceInfo.from_metadata(plain.metadata()).ee_state is False
    service = make_service(f"lerobot:{untrained_act_folder(exports[True], 'x2/ee-True', tmp_path / 'b')}",
                           ServeOptions())
    assert ServiceInfo.from_metadata(service.metadata()).ee_state is True
    plan = plan_split("pick_place", None, "train", None, 1, 1)
    with serving(service) as url:
        EvalRun(EvalSetup("pick_place", None, plan.variant, plan.master_seed, url, 30.0, max_ticks=6), plan,
                tmp_path / "train", None).run()
    with Dataset.open(tmp_path / "train").load(0) as ep:
        said, frames = ep.json_attr(fmt.POLICY_ATTR), ep.frames
    assert said.get("ended") is None and frames == 6, said  # whole episodes: no "malformed" at the first tick
