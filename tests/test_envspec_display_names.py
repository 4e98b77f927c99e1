"""An object's `display` name is what instructions call it: in the synthesised episode's instruction and in the
LeRobot export's task text. Without one, an instruction names the asset as before (built-in bytes unchanged)."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import x2
from x2.base.errors import SpecError
from x2.cli.app import _mount, app
from x2.datasets import Dataset
from x2.envspec import load_env
from x2.envspec.instruction import fill
from x2.envspec.record import env_from_record, env_record

_mount()
runner = CliRunner()
SHIPPED = Path(x2.__file__).parent


def _user_object(root: Path, name: str, display_line: str) -> None:
    objects, scenes = root / "specs" / "objects", root / "specs" / "scenes"
    objects.mkdir(parents=True)
    scenes.mkdir(parents=True)
    shutil.copy(SHIPPED / "assets" / "objects" / "block_red.xml", objects / "block_red.xml")
    (objects / f"{name}.yaml").write_text(textwrap.dedent(f"""\
        name: {name}
        {display_line}
        mjcf: block_red.xml
        tags: [pickable]
        footprint_radius: 0.036
        parts: {{grasp: grasp}}
        """))
    (scenes / f"{name}_booth.yaml").write_text(textwrap.dedent(f"""\
        include: tabletop_booth.yaml
        name: {name}_booth
        objects:
          block: {{asset: {name}, tags: [target_object], region: block_area}}
        """))
    task = (SHIPPED / "tasks" / "pick_place.yaml").read_text()
    (root / "mugs.yaml").write_text(task.replace("name: pick_place", "name: mugs").replace(
        "scene: tabletop_booth", f"scene: {name}_booth"))


def test_display_name_in_the_episode_and_the_lerobot_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _user_object(tmp_path, "display_mug", 'display: "red mug"')
    monkeypatch.chdir(tmp_path)
    synth = runner.invoke(app, ["synth", "--task", "mugs.yaml", "-n", "1", "--workers", "1", "-d", "data/mugs"])
    assert synth.exit_code == 0, synth.output
    ds = Dataset.open(tmp_path / "data" / "mugs")
    with ds.load(0) as ep:
        assert ep.instruction == "Put the red mug on the plate."
        world = json.loads(ep.attrs["world"])
    assert env_from_record(world).objects[0].candidates[0].display == "red mug"  # (the record keeps it)
    export = runner.invoke(app, ["export", "lerobot", "data/mugs", "--state-only", "--out", "out"])
    assert export.exit_code == 0, export.output
    assert pq.read_table(tmp_path / "out" / "meta" / "tasks.parquet").column("task").to_pylist() == [
        "Put the red mug on the plate."]


def test_without_display_an_instruction_names_the_asset_as_before() -> None:
    env = load_env("pick_place")
    assert env.task is not None and all(not a.display for o in env.objects for a in o.candidates)
    assert fill(env.task.instruction, env.objects, {"block": "block", "plate": "plate"}, {}) == \
        "Put the block on the plate."
    record = env_record(env)
    assert "display" not in json.dumps(record)  # (built-in world records: not a byte more)


@pytest.mark.parametrize("line", ['display: "red [bold]mug"', 'display: "{mug}"', 'display: ""', 'display: "  "'])
def test_a_display_name_is_words(line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"odd_mug_{abs(hash(line))}"  # (assets are cached by name: each case its own)
    _user_object(tmp_path, name, line)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as caught:
        load_env("mugs.yaml")
    assert f"specs/objects/{name}.yaml:2: display: found" in str(caught.value), str(caught.value)
    assert "allowed: words on one line" in str(caught.value) or "at least 1 character" in str(caught.value)
