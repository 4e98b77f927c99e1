"""`x2 eval` without --dataset: a folder named by what the policy serves (x2/eval/run_folder.py), a new one per
checkpoint, and `x2 datasets ls` lists the run's rollouts."""

from __future__ import annotations

import hashlib
from pathlib import Path

from helpers.x2_cli import run_x2

from x2.eval.run_folder import SLUG_CHARS, run_folder_name
from x2.policy.protocol import ServiceInfo


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def test_a_checkpoint_is_named_by_its_folder_and_its_weights() -> None:
    policy = "lerobot:outputs/act/checkpoints/008000/pretrained_model"
    one = ServiceInfo(kind="lerobot", identity="/lab/outputs/act/checkpoints/008000/pretrained_model",
                      digest="a" * 64)
    assert run_folder_name("pick_place", policy, one) == f"eval-pick_place-act-008000-{_h('a' * 64)}"
    # the next checkpoint, and the same one served over a websocket: named by the weights, wherever they are
    two = ServiceInfo(kind="lerobot", identity="/lab/outputs/act/checkpoints/010000/pretrained_model", digest="b" * 64)
    assert run_folder_name("pick_place", policy, two) != run_folder_name("pick_place", policy, one)
    assert run_folder_name("pick_place", "ws://gpu:8000", one) == run_folder_name("pick_place", policy, one)
    # a service that names no digest: by the URL it was reached at
    stock = ServiceInfo()
    assert run_folder_name("specs/tasks/pick_place.yaml", "ws://gpu-box:8000", stock) == \
        f"eval-pick_place-remote-gpu-box-8000-{_h('ws://gpu-box:8000')}"
    odd = ServiceInfo(kind="lerobot", identity="/" + "x" * 200 + "/ckpt with spaces/!!", digest="c" * 64)
    slug = run_folder_name("pick_place", "lerobot:x", odd).removeprefix("eval-pick_place-").rsplit("-", 1)[0]
    assert 0 < len(slug) <= SLUG_CHARS and all(ch.isalnum() or ch in "_.-" for ch in slug)


def test_runs_go_to_folders_named_by_the_policy_and_are_listed(tmp_path: Path) -> None:
    args = ["eval", "--task", "pick_place", "-n", "1", "--split", "train", "--max-ticks", "3", "--workers", "1"]
    for policy in ("hold", "random"):
        done = run_x2([*args, "--policy", policy], tmp_path, timeout=240)
        assert done.returncode == 0, done.stdout + done.stderr
    folders = sorted(p.name for p in (tmp_path / "data").iterdir())
    assert folders == [f"eval-pick_place-hold-{_h('hold')}", f"eval-pick_place-random-{_h('random')}"]
    listed = run_x2(["datasets", "ls"], tmp_path)
    assert listed.returncode == 0, listed.stderr
    text = "".join(listed.stdout.split())  # (the table may wrap a long name at any width)
    assert all(f"{name}/train" in text for name in folders), listed.stdout
    shown = run_x2(["datasets", "info", f"{folders[0]}/train"], tmp_path)  # a run's rollouts by that name
    assert shown.returncode == 0, shown.stdout + shown.stderr
