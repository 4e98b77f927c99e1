"""Scenery: `scenery:` blocks in scene YAML (spec), and the looks drawn from them restyling a real
recorded world without touching its physics (x2/sim/mujoco/look.py)."""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from pathlib import Path

import h5py
import hdf5plugin  # noqa: F401  (registers the filters the episode file is written with)
import mujoco
import numpy as np
import pytest
import yaml
from helpers.real_dataset import record_short_dataset
from typer.testing import CliRunner

from x2.base.errors import DatasetError, SpecError, X2Error
from x2.cli.app import _mount, app
from x2.envspec.scenery import Scenery, load_scenery
from x2.sim.mujoco.look import DRAW_ORDER, apply_look, restyled_world, sample_look
from x2.sim.mujoco.world import world_text

STATE = mujoco.mjtState.mjSTATE_INTEGRATION
# the built-in assets a distractor may be: those without joints, read from their files here
STATIC_ASSETS = ", ".join(sorted(
    p.stem for p in (Path(__file__).parents[1] / "x2" / "assets" / "objects").glob("*.yaml")
    if not yaml.safe_load(p.read_text()).get("joints")))


# ----- spec -------------------------------------------------------------------------------------


@pytest.mark.parametrize("scene", ["kitchen_booth", "tabletop_booth"])
def test_builtin_scenery_is_inherited_from_the_green_booth(scene: str) -> None:
    scenery = load_scenery(scene)
    splits = {name: v.split for name, v in scenery.items()}
    assert splits == {"clutter": "train", "studio": "train", "warm_wood": "train", "held_out": "eval"}
    assert scenery["clutter"].distractors is not None and scenery["clutter"].walls is None  # distractors only
    held_out = scenery["held_out"]
    train = [v for v in scenery.values() if v.split == "train"]
    train_assets = {a.name for v in train if v.distractors for a in v.distractors.assets}
    train_walls = {c for v in train if v.walls for c in v.walls.colours}
    assert held_out.distractors and held_out.walls
    assert not {a.name for a in held_out.distractors.assets} & train_assets
    assert not set(held_out.walls.colours) & train_walls
    assert all(not a.joints for v in scenery.values() if v.distractors for a in v.distractors.assets)


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


def test_a_scene_overrides_and_adds_scenery(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "specs/scenes/s.yaml", """\
        include: kitchen_booth.yaml
        name: s
        booth: {wall_rgba: [0.1, 0.2, 0.3, 1.0]}
        scenery:
          studio: {split: eval}
          night: {lighting: {intensity: [0.1, 0.2]}, walls: {texture: checker}}
        """)
    monkeypatch.chdir(tmp_path)
    scenery = load_scenery("s")
    assert list(scenery) == ["clutter", "studio", "warm_wood", "held_out", "night"]
    studio, builtin = scenery["studio"], load_scenery("kitchen_booth")["studio"]
    assert studio.split == "eval" and dataclasses.replace(studio, split="train") == builtin
    night = scenery["night"]
    assert night.lighting and night.lighting.intensity == (0.1, 0.2) and night.lighting.shadows is False
    # Defaults come from the scene's own booth: its wall colour, a darker shade drawn as the second colour.
    assert night.walls and night.walls.colours == ((0.1, 0.2, 0.3),) and night.walls.colours2 == ()
    look = sample_look(night, np.random.default_rng(0))
    assert look["walls"] == {"rgb": [0.1, 0.2, 0.3], "texture": "checker", "rgb2": [0.06, 0.12, 0.18],
                             "repeat": [4.0, 4.0]}


BAD_SCENERY = [
    ("unknown asset", "distractors: {pool: [block, durian]}",
     rf"scenery.x.distractors.pool\[1\]: found 'durian'; allowed: one of the assets without joints: {STATIC_ASSETS}$"),
    ("articulated asset", "distractors: {pool: [microwave]}",
     r"scenery.x.distractors.pool\[0\]: found 'microwave' \(articulated: joints door_hinge\); "
     rf"allowed: a static asset, one of {STATIC_ASSETS}$"),
    ("bad texture", "table: {colour: [0.5, 0.4, 0.3], texture: marble}",
     r"scenery.x.table.texture: found 'marble'; allowed: 'none', 'checker', 'gradient', 'wood', 'concrete' or "
     r"'fabric'$"),
    ("colour out of range", "walls: {colour: [[0.2, 0.3, 0.4], [1.2, 0.3, 0.3]]}",
     r"scenery.x.walls.colour: found \[\[0.2, 0.3, 0.4\], \[1.2, 0.3, 0.3\]\]; allowed: an \[r, g, b\] colour "
     r"with r, g, b in 0..1, or a non-empty list of them"),
    ("empty block", "description: nothing at all",
     r"scenery.x: found \{'description': 'nothing at all'\}; allowed: at least one of distractors, table, walls, "
     r"floor, lighting; this block changes nothing$"),
    ("empty surface", "floor: {}", r"scenery.x.floor: found \{\}; allowed: a colour and/or a texture"),
    ("repeat without texture", "walls: {colour: [0.5, 0.5, 0.5], repeat: [2, 2]}",
     r"scenery.x.walls: found .*; allowed: colour2 and repeat only with a texture \(checker, gradient, wood, "
     r"concrete, fabric\)$"),
    ("bad count", "distractors: {pool: [apple], count: [3, 1]}",
     r"scenery.x.distractors.count: found \[3, 1\]; allowed: a whole number >= 1 or \[lo, hi\]"),
    ("light from below", "lighting: {direction: [0.0, 0.0, 1.0]}",
     r"scenery.x.lighting.direction: found \[0.0, 0.0, 1.0\]; allowed: an \[x, y, z\] light direction pointing "
     r"down \(z < 0\)"),
    ("unknown field", "table: {color: [0.5, 0.5, 0.5]}",
     r"scenery.x.table.color: found unknown field 'color'; allowed: one of colour, colour2, repeat, texture$"),
    ("bad split", "split: test\n    walls: {colour: [0.5, 0.5, 0.5]}",
     r"scenery.x.split: found 'test'; allowed: 'train' or 'eval'$"),
]


def _bad_scene(block: str) -> str:
    return f"include: tabletop_booth.yaml\nname: s\nscenery:\n  x:\n    {block}\n"


@pytest.mark.parametrize("case", BAD_SCENERY, ids=[c[0] for c in BAD_SCENERY])
def test_bad_scenery_is_one_line_at_file_line(case: tuple[str, str, str], tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _name, block, pattern = case
    _write(tmp_path, "specs/scenes/s.yaml", _bad_scene(block))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as err:
        load_scenery("s")
    message = str(err.value)
    assert len(message.splitlines()) == 1, message
    assert re.match(r"specs/scenes/s\.yaml:5: ", message), message  # the block's first line (see _bad_scene)
    assert re.search(pattern, message), message


def test_bad_scenery_fails_the_task_that_uses_the_scene(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scene compiler checks the scenery too, so `x2 tasks show` reports it before any collection."""
    _write(tmp_path, "specs/scenes/s.yaml", _bad_scene("distractors: {pool: [knob_box]}"))
    _write(tmp_path, "t.yaml", """\
        name: t
        instruction: Lift the block.
        scene: s
        robot: artixon-g
        nodes:
          lift: {success: {object_lifted: {obj: block}}}
        """)
    monkeypatch.chdir(tmp_path)
    _mount()
    result = CliRunner().invoke(app, ["tasks", "show", "t.yaml"])
    out = result.output.strip()
    assert result.exit_code == 2 and len(out.splitlines()) == 1, out
    assert re.search(r"s\.yaml:5: scenery.x.distractors.pool\[0\]: found 'knob_box' \(articulated", out), out


# ----- sample_look --------------------------------------------------------------------------------


def test_sample_look_is_deterministic_json_and_draws_in_a_fixed_order() -> None:
    studio = load_scenery("kitchen_booth")["studio"]
    looks = [sample_look(studio, np.random.default_rng(seed)) for seed in (7, 7, 8)]
    assert looks[0] == looks[1] and looks[0] != looks[2]
    assert json.loads(json.dumps(looks[0])) == looks[0]
    assert set(looks[0]) == {"table", "walls", "floor", "lighting"}
    assert looks[0]["lighting"]["intensity"] == round(looks[0]["lighting"]["intensity"], 4)
    lo, hi = studio.lighting.intensity if studio.lighting else (0, 0)
    assert lo <= looks[0]["lighting"]["intensity"] <= hi
    # Every scenery consumes the same draws, and a part's look does not depend on the other parts present.
    walls_only = dataclasses.replace(studio, table=None, floor=None, lighting=None)
    rng_a, rng_b = np.random.default_rng(7), np.random.default_rng(7)
    assert sample_look(walls_only, rng_a) == {"walls": looks[0]["walls"]}
    assert sample_look(load_scenery("kitchen_booth")["clutter"], rng_b) == {}
    assert rng_a.random() == rng_b.random()
    assert len(DRAW_ORDER) == 9
    # Across seeds every listed colour turns up (a draw is no constant).
    walls = {tuple(sample_look(studio, np.random.default_rng(s))["walls"]["rgb"]) for s in range(40)}
    assert studio.walls and walls == set(studio.walls.colours)


# ----- apply_look on a real recorded world ----------------------------------------------------------------


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, np.ndarray]:
    root = tmp_path_factory.mktemp("scenery") / "ds"
    [record] = record_short_dataset(root, episodes=1, ticks=5)
    with h5py.File(root / record.file, "r") as f:
        return str(f.attrs["model_xml"]), f["states"][()]


LOOK = {
    "walls": {"rgb": [0.8, 0.1, 0.1], "texture": "none"},
    "floor": {"rgb": [0.3, 0.3, 0.3], "texture": "checker", "rgb2": [0.1, 0.1, 0.1], "repeat": [10.0, 10.0]},
    "table": {"rgb": [0.55, 0.38, 0.22], "texture": "gradient", "rgb2": [0.3, 0.2, 0.1], "repeat": [1.0, 1.0]},
    "lighting": {"direction": [0.2, 0.4, -1.0], "colour": [1.0, 0.9, 0.8], "intensity": 0.5, "shadows": True},
}

# Everything in a model that kinematics, collision or dynamics read (visual fields are free to differ).
PHYSICAL_PREFIXES = ("opt", "body_", "jnt_", "dof_", "actuator_", "eq_", "tendon_", "sensor_", "site_", "cam_",
                     "qpos0", "qpos_spring")
PHYSICAL_GEOM = ("geom_type", "geom_contype", "geom_conaffinity", "geom_condim", "geom_bodyid", "geom_size",
                 "geom_pos", "geom_quat", "geom_friction", "geom_solref", "geom_solimp", "geom_margin", "geom_gap",
                 "geom_priority", "geom_solmix", "geom_rbound", "geom_aabb")


def _physical_fields(model: mujoco.MjModel) -> dict[str, bytes]:
    out = {}
    for name in dir(model):
        if name.startswith(PHYSICAL_PREFIXES) or name in PHYSICAL_GEOM:
            value = getattr(model, name)
            if isinstance(value, np.ndarray):
                out[name] = value.tobytes()
    return out


def _all_arrays(model: mujoco.MjModel) -> dict[str, bytes]:
    return {n: v.tobytes() for n in dir(model) if not n.startswith("_")
            and isinstance(v := getattr(model, n), np.ndarray)}


IDENTITY_QUAT = re.compile(r' quat="1 0 0 0"')


def _rgb(values: np.ndarray) -> list[float]:
    return [round(float(v), 4) for v in values[:3]]


def test_apply_look_restyles_only_the_static_layer(recorded: tuple[str, np.ndarray]) -> None:
    xml, states = recorded
    edited_xml, _ = restyled_world(xml, LOOK)
    assert edited_xml != xml and restyled_world(edited_xml, LOOK)[0] == edited_xml  # applying again changes nothing
    original, edited = mujoco.MjModel.from_xml_string(xml), mujoco.MjModel.from_xml_string(edited_xml)

    wall, floor = edited.material("booth_wall"), edited.material("booth_floor")
    assert _rgb(wall.rgba) == [0.8, 0.1, 0.1] and wall.texid[mujoco.mjtTextureRole.mjTEXROLE_RGB] == -1
    floor_tex = edited.texture(int(floor.texid[mujoco.mjtTextureRole.mjTEXROLE_RGB]))
    assert floor_tex.name == "scenery_booth_floor" and list(floor.texrepeat) == [10.0, 10.0]
    table = edited.geom("table_top")
    table_mat = edited.material(int(table.matid[0]))
    assert table_mat.name == "scenery_table_top" and table_mat.texid[mujoco.mjtTextureRole.mjTEXROLE_RGB] >= 0
    key, fill = edited.light("key"), edited.light("fill_left")
    assert _rgb(key.diffuse) == [0.5, 0.45, 0.4] and _rgb(fill.diffuse) == [0.225, 0.2025, 0.18]
    assert bool(key.castshadow) and np.allclose(key.dir, np.array([0.2, 0.4, -1.0]) / np.linalg.norm([0.2, 0.4, -1]))
    assert original.material("booth_wall").rgba[0] == 0.0  # the recording itself is untouched

    for n in ("nq", "nv", "nu", "na", "nbody", "njnt", "ngeom", "nmocap", "neq"):
        assert getattr(edited, n) == getattr(original, n), n
    assert mujoco.mj_stateSize(edited, STATE) == mujoco.mj_stateSize(original, STATE) == states.shape[1]
    assert _physical_fields(edited) == _physical_fields(original)

    data_o, data_e = mujoco.MjData(original), mujoco.MjData(edited)
    for state in states:
        for model, data in ((original, data_o), (edited, data_e)):
            mujoco.mj_setState(model, data, state, STATE)
            mujoco.mj_kinematics(model, data)
            mujoco.mj_camlight(model, data)
        for field in ("xpos", "xquat", "cam_xpos", "cam_xmat", "geom_xpos", "geom_xmat"):
            assert getattr(data_e, field).tobytes() == getattr(data_o, field).tobytes(), field
    stepped = []
    for model, data in ((original, data_o), (edited, data_e)):
        mujoco.mj_setState(model, data, states[2], STATE)
        mujoco.mj_step(model, data)
        out = np.empty(mujoco.mj_stateSize(model, STATE))
        mujoco.mj_getState(model, data, out, STATE)
        stepped.append(out.tobytes())
    assert stepped[0] == stepped[1]


def _head_image(xml: str, state: np.ndarray) -> np.ndarray:
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_setState(model, data, state, STATE)
    mujoco.mj_forward(model, data)
    with mujoco.Renderer(model, height=96, width=128) as renderer:
        renderer.update_scene(data, camera="head")
        return renderer.render()


def test_the_look_shows_in_the_head_camera_and_the_empty_look_changes_nothing(
        recorded: tuple[str, np.ndarray]) -> None:
    xml, states = recorded
    unchanged, _ = restyled_world(xml, {})
    assert _all_arrays(mujoco.MjModel.from_xml_string(unchanged)) == _all_arrays(mujoco.MjModel.from_xml_string(xml))
    plain = _head_image(xml, states[0])
    assert np.array_equal(_head_image(unchanged, states[0]), plain)
    walls_only = _head_image(restyled_world(xml, {"walls": LOOK["walls"]})[0], states[0])
    changed = np.any(walls_only != plain, axis=-1)
    assert changed.mean() > 0.1  # the booth wall behind the table fills the top of the picture
    # The top rows show wall: green before, red after.
    top = (slice(0, 8), slice(None))
    assert plain[top][..., 1].mean() > plain[top][..., 0].mean()
    assert walls_only[top][..., 0].mean() > walls_only[top][..., 1].mean()


def test_world_text_prints_a_recorded_world_as_it_was(recorded: tuple[str, np.ndarray]) -> None:
    """Read back and printed, a recorded world is the same text but for identity orientations MuJoCo's writer
    spells out (bodies inside rotated frames), and it compiles to the same model, array for array."""
    xml, _ = recorded
    spec = mujoco.MjSpec.from_string(xml)
    assert "0.0020833333333333333" in xml and "0.0020833333333333333" not in spec.to_xml()  # to_xml: 6 digits
    printed = world_text(spec, spec.option.timestep)
    assert IDENTITY_QUAT.sub("", printed) == IDENTITY_QUAT.sub("", xml)
    assert _all_arrays(mujoco.MjModel.from_xml_string(printed)) == _all_arrays(mujoco.MjModel.from_xml_string(xml))
    again = mujoco.MjSpec.from_string(printed)
    assert world_text(again, again.option.timestep) == printed  # one pass reaches the fixed point


def test_apply_look_refuses_bad_looks_and_foreign_worlds(recorded: tuple[str, np.ndarray]) -> None:
    xml, _ = recorded
    spec = mujoco.MjSpec.from_string(xml)
    with pytest.raises(DatasetError, match=r"look.table.texture: found 'marble'; allowed: one of none, checker, "
                                           r"gradient, wood, concrete, fabric"):
        apply_look(spec, {"table": {"rgb": [0.1, 0.1, 0.1], "texture": "marble"}})
    with pytest.raises(DatasetError, match=r"look.walls.rgb: found \[2.0, 0.0, 0.0\]; allowed: 3 numbers in 0..1"):
        apply_look(spec, {"walls": {"rgb": [2.0, 0.0, 0.0], "texture": "none"}})
    with pytest.raises(DatasetError, match=r"look.sky: found .*; allowed: only the parts table, walls, floor, "
                                           r"lighting"):
        apply_look(spec, {"sky": {}})
    before = world_text(mujoco.MjSpec.from_string(xml), spec.option.timestep)
    assert world_text(spec, spec.option.timestep) == before  # a refused look edits nothing
    bare = mujoco.MjSpec.from_string("<mujoco><worldbody><geom size='1' type='sphere'/></worldbody></mujoco>")
    with pytest.raises(X2Error, match=r"world: found no material 'booth_wall'; allowed: a green-booth world "
                                      r"\(materials booth_wall, booth_floor; geom table_top; lights key"):
        apply_look(bare, {"walls": LOOK["walls"]})


def test_every_builtin_look_applies(recorded: tuple[str, np.ndarray]) -> None:
    xml, _ = recorded
    for scenery in load_scenery("kitchen_booth").values():
        assert isinstance(scenery, Scenery)
        look = sample_look(scenery, np.random.default_rng(1))
        text, _ = restyled_world(xml, json.loads(json.dumps(look)))
        assert text == restyled_world(xml, look)[0]
        assert mujoco.MjModel.from_xml_string(text).nbody == mujoco.MjModel.from_xml_string(xml).nbody
