"""`x2 eval --videos` (x2.eval.runner.EvalVideos): one MP4 per rollout, each the rollout's frames, and a rerun
writes the video a killed run did not, without running its episode again.

The policy is the `hold` service on the real wire (tests/test_eval.py's setup, smaller: two rollouts of a few
ticks).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import av
import pytest
from helpers.policy_serving import serving

from x2.datasets import Dataset
from x2.eval.evaluate import EvalConfig, evaluate
from x2.eval.runner import EvalRun, EvalVideos
from x2.eval.seeds import plan_split
from x2.eval.session import EvalSetup
from x2.policy.services import ServeOptions, make_service
from x2.sim.camera import ImageSize

pytestmark = pytest.mark.timeout(300)
TASK, TICKS = "pick_place", 6


@contextmanager
def serving_hold() -> Iterator[str]:
    with serving(make_service("hold", ServeOptions())) as url:
        yield url


def frame_count(path: Path) -> int:
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


def test_every_rollout_gets_its_video_and_a_rerun_makes_the_missing_one(tmp_path: Path) -> None:
    plan = plan_split(TASK, None, "train", None, 1, 2)
    folder = tmp_path / "videos" / "train"
    with serving_hold() as url:
        config = EvalConfig(TASK, url, n=2, splits=("train",), max_ticks=TICKS, videos=ImageSize(48, 64))
        report = evaluate(config, tmp_path)  # (the run's folder: RUN/train, RUN/videos/train)
        assert report["runs"][0]["episodes"] == 2
        names = sorted(p.name for p in folder.iterdir())
        assert names == ["episode_000000.mp4", "episode_000001.mp4"]
        frames = {r.index: r.frames for r in Dataset.open(tmp_path / "train").episodes()}
        assert {i: frame_count(folder / n) for i, n in enumerate(names)} == frames == {0: TICKS, 1: TICKS}
        # A run killed between its last commit and that episode's video: the next run writes it, runs nothing.
        kept = (folder / names[0]).read_bytes()
        (folder / names[1]).unlink()
        setup = EvalSetup(TASK, None, plan.variant, plan.master_seed, url, max_ticks=TICKS)
        videos = EvalVideos(folder, ImageSize(48, 64))
        again = EvalRun(setup, plan, tmp_path / "train", None, videos=videos).run()
    assert (again.skipped, again.videos) == (2, 1)
    assert sorted(p.name for p in folder.iterdir()) == names and (folder / names[0]).read_bytes() == kept
    assert frame_count(folder / names[1]) == TICKS
