"""An episode whose model_xml names files, runs plugins or blows up the parser: every reader that
rebuilds a world refuses it in one line naming the file, before MuJoCo sees the text.

The episodes are real short recordings (tests/helpers/real_dataset.py) whose model_xml is replaced by a
hostile world (tests/helpers/corrupt_episodes.py: HOSTILE_WORLDS). That the named file is never opened
is shown without tracing: the include and the mesh point at a path that does not exist, MuJoCo alone
fails on exactly that path ("Error opening file"), and x2's refusal comes first and says otherwise.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import mujoco
import pytest
from helpers.corrupt_episodes import EPISODE, HOSTILE_WORLDS, apply, restamp
from helpers.real_dataset import record_short_dataset
from helpers.x2_cli import run_x2

from x2.augment.augmented import ParentEpisode
from x2.augment.compose import compose_world
from x2.augment.envelope import EnvelopeParams
from x2.base.errors import DatasetError
from x2.datasets import Episode
from x2.recorded.replay import deepest_penetration, replay_actions
from x2.recorded.world import open_world
from x2.render.dataset import render_dataset
from x2.sim.mujoco.look import restyled_world
from x2.sim.mujoco.recorded_xml import MAX_WORLD_BYTES, check_world_xml, compile_world

REFUSAL = "allowed: a self-contained world (no file references)"
WORLDS = ["include", "include_missing", "mesh_outside", "meshdir", "texture_file", "skybox_faces", "hfield_file",
          "skin_file", "sub_model", "plugin", "entity_bomb", "external_entity", "urdf", "oversize", "deep",
          "huge_texture", "huge_hfield", "arena"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "short"
    record_short_dataset(root, episodes=1, ticks=4)
    return root


def _hostile(recorded: Path, target: Path, world: str) -> Path:
    shutil.copytree(recorded, target)
    apply(target, ("world", world))
    restamp(target)
    return target


def _assert_refusal(message: str, path: Path) -> None:
    assert "\n" not in message, message
    assert message.startswith(f"{path}: model_xml: found "), message
    assert message.endswith(REFUSAL) or f"{REFUSAL} of at most {MAX_WORLD_BYTES} bytes" in message, message
    assert "Error opening file" not in message and "never-opened" not in message, message


@pytest.mark.parametrize("world", WORLDS)
def test_every_world_rebuilding_reader_refuses_before_mujoco(recorded: Path, tmp_path: Path, world: str) -> None:
    root = _hostile(recorded, tmp_path / "ds", world)
    path = root / EPISODE
    with Episode(path) as ep:
        xml, states = ep.attrs["model_xml"], ep["states"]
        for reader in (open_world, replay_actions, deepest_penetration):  # replay, label, validate --physics
            with pytest.raises(DatasetError) as refused:
                reader(ep)
            _assert_refusal(str(refused.value), path)
    for build in (lambda: ParentEpisode.of(xml, states, EnvelopeParams(), [], str(path)),  # x2 augment replay
                  lambda: restyled_world(xml, {}, str(path)),
                  lambda: compose_world(xml, {}, [], {}, 0.002, str(path))):
        with pytest.raises(DatasetError) as refused:
            build()
        _assert_refusal(str(refused.value), path)
    with pytest.raises(DatasetError) as refused:  # x2 render
        render_dataset(root, cameras=("front",))
    _assert_refusal(str(refused.value), path)


@pytest.mark.parametrize("world", ["include_missing", "mesh_outside", "texture_file"])
def test_the_file_a_hostile_world_names_is_never_opened(tmp_path: Path, world: str) -> None:
    missing = tmp_path / "never-opened"
    xml = HOSTILE_WORLDS[world].replace("{missing}", str(missing))
    with pytest.raises(ValueError, match="[Ee]rror opening file|could not open|resource not found"):
        mujoco.MjModel.from_xml_string(xml)  # MuJoCo alone goes for the file ...
    with pytest.raises(DatasetError) as refused:
        compile_world(xml, "ep.h5")  # ... x2 refuses first, naming the element, not the missing file
    assert str(refused.value).startswith("ep.h5: model_xml: found <") and "opening" not in str(refused.value)


def test_x2s_own_worlds_pass_and_the_limits_are_far_above_them(recorded: Path) -> None:
    with Episode(recorded / EPISODE) as ep:
        xml = ep.attrs["model_xml"]
    check_world_xml(xml, "ep.h5")  # a real recorded world is self-contained
    assert len(xml.encode()) * 50 < MAX_WORLD_BYTES
    assert compile_world(xml, "ep.h5").nbody > 10
    with pytest.raises(DatasetError, match=r'found <include file="/etc/passwd"> \(line 3\)'):
        check_world_xml('<mujoco>\n<worldbody/>\n<include file="/etc/passwd"/></mujoco>', "ep.h5")
    for light in ('<light dir="0 0 -1"/>', '<camera name="c" pos="0 0 1"/>'):  # `dir` is a direction
        check_world_xml(f"<mujoco><worldbody>{light}</worldbody></mujoco>", "ep.h5")


@pytest.mark.parametrize("command", [
    ["replay", "0", "--check", "-d", "{root}"],
    ["datasets", "validate", "--physics", "{root}"],
    ["render", "{root}", "--cameras", "front"],
    ["augment", "replay", "{root}", "-o", "{out}"],
], ids=["replay", "validate-physics", "render", "augment"])
def test_the_cli_refuses_a_hostile_world_in_one_line(recorded: Path, tmp_path: Path, command: list[str]) -> None:
    root = _hostile(recorded, tmp_path / "ds", "include")
    args = [a.replace("{root}", str(root)).replace("{out}", str(tmp_path / "aug")) for a in command]
    done = run_x2(args, tmp_path)
    assert done.returncode == 2, (done.returncode, done.stdout[-1000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: "), done.stderr
    assert f"{root / EPISODE}: model_xml: found <include" in errors[0] and REFUSAL in errors[0], errors[0]


@pytest.mark.parametrize(("world", "found"), [
    ("bad_geom", "found a world MuJoCo cannot compile (Error: mesh 'nope' not found"),  # MuJoCo's own refusal
    ("empty_world", "found no joint "),  # compiles, but is not the world its record describes
    ("malformed", "found malformed XML"),
])
def test_a_world_mujoco_refuses_is_one_line_naming_the_file(recorded: Path, tmp_path: Path, world: str,
                                                            found: str) -> None:
    root = _hostile(recorded, tmp_path / "ds", world)
    with Episode(root / EPISODE) as ep, pytest.raises(DatasetError) as refused:
        open_world(ep)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"{root / EPISODE}: model_xml: "), message
    assert found in message, message
