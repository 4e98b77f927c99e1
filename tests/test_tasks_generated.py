"""Tasks written by scripts: each script writes the same bytes again; the N-disc Tower of Hanoi's moves
(scripts/hanoi_task.py), replayed on the scene's stacks, are the 2^N - 1 legal moves that carry the tower to spot
C; the N-block tower (scripts/stack_task.py) puts every cube on the one before, each picked from the supply; the
N-cue sequence (scripts/cue_task.py) presses step k's button at node k, and any other button fails it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from x2.envspec import load_env

ROOT = Path(__file__).resolve().parents[1]


def _rewrites_the_same_bytes(script: str, args: list[str], files: list[Path]) -> None:
    """Running `script` again writes each of `files` byte for byte as it is in the repository."""
    before = [f.read_bytes() for f in files]
    subprocess.run([sys.executable, str(ROOT / script), *args], check=True, capture_output=True)
    assert [f.read_bytes() for f in files] == before


@pytest.mark.parametrize("discs", [4, 5])
def test_the_written_task_is_the_scripts_and_its_moves_are_legal(discs: int, tmp_path: Path) -> None:
    _rewrites_the_same_bytes("scripts/hanoi_task.py", ["--discs", str(discs)],
                             [ROOT / f"x2/tasks/hanoi_tower_{discs}.yaml",
                              ROOT / f"x2/assets/scenes/hanoi_booth_{discs}.yaml"])

    env = load_env(f"hanoi_tower_{discs}")
    assert env.task is not None
    radius = {o.name: o.candidates[0].footprint_radius for o in env.objects if o.name.startswith("disc")}
    pegs: dict[str, list[str]] = {s: [] for s in "abc"}
    pegs["a"] = sorted(radius, key=lambda d: -radius[d])  # the tower on spot A, the largest at the bottom
    places = [n for n in env.task.nodes if n.id.endswith("_place")]
    assert len(places) == 2 ** discs - 1
    for node in places:
        assert node.skill is not None and node.skill.target is not None
        disc = next(c.args["obj"] for c in node.success if c.name == "object_on")
        source = next(s for s, stack in pegs.items() if stack and stack[-1] == disc)  # only a top disc moves
        target = node.skill.target
        on_top = {stack[-1]: s for s, stack in pegs.items() if stack}
        dest = target.removeprefix("spot_") if target.startswith("spot_") else on_top[target]
        assert not pegs[dest] or radius[pegs[dest][-1]] > radius[disc], node.id  # never onto a smaller disc
        pegs[source].pop()
        pegs[dest].append(disc)
    assert pegs["c"] == sorted(radius, key=lambda d: -radius[d]) and not pegs["a"] and not pegs["b"]


def test_the_tall_tower_task_is_the_scripts_and_stacks_every_cube_on_the_one_before() -> None:
    _rewrites_the_same_bytes("scripts/stack_task.py", ["--blocks", "15"],
                             [ROOT / "x2/tasks/stack_blocks_15.yaml",
                              ROOT / "x2/assets/scenes/stack_booth_15.yaml"])
    env = load_env("stack_blocks_15")
    assert env.task is not None
    places = [n for n in env.task.nodes if n.id.startswith("stack")]
    assert [n.skill.target for n in places if n.skill] == [f"cube{k - 1}" for k in range(2, 16)]
    supply = [o for o in env.objects if o.region is not None]
    assert len(supply) == 14 and len(supply[0].region.slots) >= 14  # type: ignore[union-attr]


def test_the_cue_sequence_task_is_the_scripts_and_presses_step_k_at_node_k() -> None:
    _rewrites_the_same_bytes("scripts/cue_task.py", ["--cues", "12"],
                             [ROOT / "x2/tasks/press_sequence_12.yaml",
                              ROOT / "x2/assets/scenes/sequence_booth_12.yaml"])
    env = load_env("press_sequence_12")
    assert env.task is not None and [r.name for r in env.roles] == [f"step_{k}" for k in range(1, 13)]
    assert all(r.unlike == f"step_{k - 1}" for k, r in enumerate(env.roles[1:], start=2))
    presses = [n for n in env.task.nodes if n.id.startswith("press_")]
    assert len(presses) == 12
    for k, node in enumerate(presses, start=1):
        assert [c.args["joint"] for c in node.success] == [f"step_{k}/button"]
        assert {c.args["joint"] for c in node.failure} == {f"{b}/button" for b in ("red", "green", "blue", "yellow")}
        assert all(c.args["due"] == f"step_{k}/button" for c in node.failure)
    lamps = {o.name: o.follows for o in env.objects if o.name.startswith("cue_") and o.name != "cue_board"}
    assert lamps == {f"cue_{k}": f"step_{k}" for k in range(1, 13)}
