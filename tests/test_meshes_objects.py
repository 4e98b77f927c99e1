"""`x2 objects add`: mesh files made with trimesh in a temp folder, made objects through the command, and what it
wrote checked against the analytic shapes; every bad input is one error line, exit 2, nothing written."""

from __future__ import annotations

from pathlib import Path

import h5py
import mujoco
import numpy as np
import pytest
import trimesh
import yaml
from helpers.meshes import checker_box
from PIL import Image
from typer.testing import CliRunner

from x2.cli.app import _mount, app
from x2.datasets import Episode
from x2.envspec import catalog
from x2.envspec.schema import AssetFile, parse
from x2.format import names
from x2.meshes.fragment import KEY_PREFIX
from x2.recorded.world import open_world
from x2.sim.mujoco.recorded_xml import compile_world
from x2.sim.mujoco.textures import texture_name

_mount()
runner = CliRunner()
BOX = (0.04, 0.05, 0.06)  # m
TASKS = Path(__file__).resolve().parents[1] / "x2" / "tasks"


@pytest.fixture()
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def add(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["objects", "add", *args])
    return result.exit_code, result.stdout, result.stderr


def written(folder: Path) -> list[str]:
    objects = folder / "specs" / "objects"
    return sorted(p.name for p in objects.iterdir()) if objects.is_dir() else []


def fragment(folder: Path, name: str) -> tuple[AssetFile, str, mujoco.MjModel]:
    _, frag = catalog.load("objects", name)
    asset: AssetFile = parse(AssetFile, frag)
    xml = (folder / "specs" / "objects" / asset.mjcf).read_text()
    textures = {}
    png = folder / "specs" / "objects" / f"{name}.png"
    if png.is_file():  # carried as a world carries it: named by its digest
        data = png.read_bytes()
        textures = {texture_name(data): data}
        xml = xml.replace(f'file="{png.name}"', f'file="{texture_name(data)}"')
    return asset, xml, compile_world(xml, name, textures)  # the fragment alone, checked as a recorded world is


def l_prism() -> trimesh.Trimesh:
    """An L-shaped prism 60 x 50 x 30 mm (non-convex; volume 54 cm^3)."""
    pts = np.array([[0, 0], [0.06, 0], [0.06, 0.02], [0.02, 0.02], [0.02, 0.05], [0, 0.05]])
    n = len(pts)
    vertices = np.vstack([np.c_[pts, np.zeros(n)], np.c_[pts, np.full(n, 0.03)]])
    faces = [f for a, b, c in [(0, 1, 2), (0, 2, 3), (0, 3, 5), (3, 4, 5)] for f in ([a, c, b], [a + n, b + n, c + n])]
    faces += [f for i in range(n) for f in ([i, (i + 1) % n, (i + 1) % n + n], [i, (i + 1) % n + n, i + n])]
    return trimesh.Trimesh(vertices, faces)


def test_a_box_has_the_analytic_mass_and_inertia(here: Path) -> None:
    trimesh.creation.box(BOX).export(here / "box.stl")
    code, out, err = add("box.stl", "--name", "mesh_box", "--display", "blue box")
    assert code == 0, err
    assert "convex pieces" in out and "1 (8 vertices)" in out
    asset, xml, model = fragment(here, "mesh_box")
    assert asset.display == "blue box" and asset.free and asset.parts == {"grasp": "grasp"}
    body = model.body("object").id
    mass = 500.0 * float(np.prod(BOX))  # the default density
    a, b, c = BOX
    analytic = mass / 12 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    assert model.body_mass[body] == pytest.approx(mass, rel=1e-4)
    assert sorted(model.body_inertia[body]) == pytest.approx(sorted(analytic), rel=1e-4)
    assert model.body_ipos[body] == pytest.approx([0, 0, c / 2], abs=1e-6)  # origin at the bottom centre
    assert asset.footprint_radius == pytest.approx(np.hypot(a, b) / 2, abs=1e-3)
    # the collision piece collides and is hidden, the visual mesh is seen and does not collide
    pieces = [g for g in range(model.ngeom) if model.geom_contype[g]]
    visual = model.geom("visual").id
    assert len(pieces) == 1 and model.geom_group[pieces[0]] == 3 and model.geom_group[visual] == 0
    assert model.geom_contype[visual] == model.geom_conaffinity[visual] == 0
    assert "file=" not in xml and "vertex=" in xml
    # the grasp sites close the fingers across the narrow side (x, 40 mm) and across the other (y), at half height
    closing = {}
    for site in ("grasp", "grasp_across"):
        y = np.zeros(3)
        mujoco.mju_rotVecQuat(y, np.array([0.0, 1.0, 0.0]), model.site_quat[model.site(site).id])
        closing[site] = np.abs(y)
        assert model.site_pos[model.site(site).id] == pytest.approx([0, 0, c / 2], abs=1e-6)
    assert closing["grasp"] == pytest.approx([1, 0, 0], abs=1e-6)
    assert closing["grasp_across"] == pytest.approx([0, 1, 0], abs=1e-6)


def test_mass_overrides_the_density_and_a_rerun_is_a_no_op(here: Path) -> None:
    trimesh.creation.box(BOX).export(here / "box.stl")
    assert add("box.stl", "--name", "heavy_box", "--mass", "0.3")[0] == 0
    _, _, model = fragment(here, "heavy_box")
    assert model.body_mass[model.body("object").id] == pytest.approx(0.3)
    xml = here / "specs" / "objects" / "heavy_box.xml"
    before = xml.stat().st_mtime_ns
    code, out, _ = add("box.stl", "--name", "heavy_box", "--mass", "0.3")
    assert code == 0 and "unchanged" in out and xml.stat().st_mtime_ns == before
    code, out, _ = add("box.stl", "--name", "heavy_box", "--mass", "0.4")  # other options: made again
    assert code == 0 and "unchanged" not in out
    trimesh.creation.box((0.03, 0.03, 0.03)).export(here / "box.stl")  # another file under the same name
    code, out, _ = add("box.stl", "--name", "heavy_box", "--mass", "0.4")
    assert code == 0 and "unchanged" not in out and "30.0 x 30.0 x 30.0 mm" in out


def test_a_gltfs_external_buffers_are_part_of_what_is_cached(here: Path) -> None:
    """A .gltf keeps its vertices in .bin files beside it: another buffer under the same JSON is another mesh."""
    small = trimesh.creation.box((0.04, 0.05, 0.1)).export(file_type="gltf")
    large = trimesh.creation.box((0.08, 0.05, 0.1)).export(file_type="gltf")
    for name, data in small.items():
        (here / name).write_bytes(data)
    code, out, err = add("model.gltf", "--name", "gbox")
    assert code == 0 and "40.0 x 50.0 x 100.0 mm" in out, (out, err)
    vertices = next(n for n in large if n.endswith(".bin") and len(large[n]) == 96)  # (8 vertices x 3 floats)
    (here / vertices).write_bytes(large[vertices])
    code, out, err = add("model.gltf", "--name", "gbox")
    assert code == 0 and "unchanged" not in out and "80.0 x 50.0 x 100.0 mm" in out, (out, err)


def test_up_turns_a_y_up_file(here: Path) -> None:
    trimesh.creation.box((0.03, 0.08, 0.04)).export(here / "tall.glb")  # 80 mm along the file's y
    code, out, err = add("tall.glb", "--name", "tall", "--up", "y")
    assert code == 0, err
    assert "30.0 x 40.0 x 80.0 mm" in out
    _, _, model = fragment(here, "tall")
    assert model.site_pos[model.site("grasp").id][2] == pytest.approx(0.04, abs=1e-6)


def test_ascii_and_binary_stl_make_the_same_tetrahedron(here: Path) -> None:
    tetra = trimesh.Trimesh([[0, 0, 0], [0.05, 0, 0], [0, 0.05, 0], [0, 0, 0.05]], [[0, 2, 1], [0, 1, 3], [0, 3, 2],
                                                                                    [1, 2, 3]])
    (here / "ascii.stl").write_text(trimesh.exchange.stl.export_stl_ascii(tetra))
    (here / "binary.stl").write_bytes(trimesh.exchange.stl.export_stl(tetra))
    assert (here / "ascii.stl").read_bytes().startswith(b"solid")
    masses = []
    for name in ("ascii", "binary"):
        code, _, err = add(f"{name}.stl", "--name", f"tetra_{name}")
        assert code == 0, err
        _, _, model = fragment(here, f"tetra_{name}")
        masses.append(float(model.body_mass[model.body("object").id]))
    assert masses[0] == pytest.approx(masses[1], rel=1e-5)
    assert masses[0] == pytest.approx(500.0 * 0.05 ** 3 / 6, rel=1e-4)


def test_a_concave_obj_is_cut_into_convex_pieces(here: Path) -> None:
    l_prism().export(here / "ell.obj")
    code, out, err = add("ell.obj", "--name", "ell", "--threshold", "0.1")
    assert code == 0, err
    _, xml, model = fragment(here, "ell")
    pieces = [g for g in range(model.ngeom) if model.geom_contype[g]]
    assert 2 <= len(pieces) <= 16
    assert model.body_mass[model.body("object").id] == pytest.approx(500.0 * 54e-6, rel=1e-4)  # the mesh's own


def test_the_same_file_makes_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    l_prism().export(tmp_path / "ell.obj")
    made = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        assert add(str(tmp_path / "ell.obj"), "--name", "ell_again", "--threshold", "0.1")[0] == 0
        objects = tmp_path / folder / "specs" / "objects"
        made.append([(objects / f"ell_again.{k}").read_bytes() for k in ("xml", "yaml")])
    assert made[0] == made[1]


def test_a_torus_obj_stands_on_its_pieces(here: Path) -> None:
    trimesh.creation.torus(0.03, 0.01, major_sections=24, minor_sections=12).export(here / "ring.obj")
    code, out, err = add("ring.obj", "--name", "ring", "--threshold", "0.3")
    assert code == 0, err
    _, _, model = fragment(here, "ring")
    assert 2 <= sum(1 for g in range(model.ngeom) if model.geom_contype[g]) <= 16
    assert "drop test" in out


def test_a_textured_obj_keeps_its_image_and_its_pieces_its_mean_colour(here: Path) -> None:
    mesh = trimesh.creation.box(BOX)
    image = Image.new("RGB", (600, 8), (200, 20, 20))
    mesh.visual = trimesh.visual.TextureVisuals(uv=np.full((len(mesh.vertices), 2), 0.5), image=image)
    mesh.export(here / "red.obj")
    assert any(p.suffix == ".png" for p in here.iterdir())  # trimesh wrote OBJ + MTL + PNG
    code, out, err = add("red.obj", "--name", "red_box")
    assert code == 0, err
    assert "texture" in out and "512 x 7" in out  # resized to at most 512 a side
    assert written(here) == ["red_box.png", "red_box.xml", "red_box.yaml"]
    _, xml, model = fragment(here, "red_box")
    assert 'file="red_box.png"' in (here / "specs" / "objects" / "red_box.xml").read_text()
    visual = model.geom("visual").id
    assert model.ntex == 1 and model.mat_texid[model.geom_matid[visual]][mujoco.mjtTextureRole.mjTEXROLE_RGB] == 0
    assert model.mesh_texcoordnum[model.geom_dataid[visual]] > 0
    piece = next(g for g in range(model.ngeom) if model.geom_contype[g])
    assert model.geom_rgba[piece] == pytest.approx([200 / 255, 20 / 255, 20 / 255, 1], abs=0.01)
    assert add("red.obj", "--name", "red_box")[1].count("unchanged") == 1  # its image is part of what is current


def test_a_missing_material_file_is_noted(here: Path) -> None:
    trimesh.creation.box(BOX).export(here / "plain.obj")
    text = (here / "plain.obj").read_text()
    (here / "plain.obj").write_text("mtllib gone.mtl\n" + text)
    code, out, err = add("plain.obj", "--name", "plain")
    assert code == 0, err
    assert "note: plain.obj names gone.mtl, not found beside it" in out


def _open_box(path: Path) -> None:
    mesh = trimesh.creation.box(BOX)
    trimesh.Trimesh(mesh.vertices, mesh.faces[:-2]).export(path)


def _flat(path: Path) -> None:
    trimesh.Trimesh([[0, 0, 0], [0.05, 0, 0], [0.05, 0.05, 0], [0, 0.05, 0]], [[0, 1, 2], [0, 2, 3]]).export(path)


def _bad_texture(path: Path) -> None:
    path.write_text("mtllib cup.mtl\nv 0 0 0\nv 0.05 0 0\nv 0 0.05 0\nv 0 0 0.05\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    (path.parent / "cup.mtl").write_text("newmtl cup\nmap_Kd cup.png\n")
    (path.parent / "cup.png").write_text("not a picture")


BAD = {  # file, how it is made, extra options, what the error says
    "unreadable": ("junk.stl", lambda p: p.write_bytes(b"\x00\x01garbage" * 3), [], "not a STL file trimesh can read"),
    "unreadable glb": ("junk.glb", lambda p: p.write_bytes(b"glTF" + b"\xff" * 40), [], "cannot read"),
    "empty": ("empty.obj", lambda p: p.write_text("# nothing\n"), [], "no triangles"),
    "not watertight": ("open.stl", _open_box, [], "not watertight"),
    "flat": ("flat.stl", _flat, ["--mass", "0.1"], "thin"),
    "too large": ("big.stl", lambda p: trimesh.creation.box((40, 50, 60)).export(p), [], "--scale 0.001"),
    "too large, in dm": ("duck.stl", lambda p: trimesh.creation.box((1.2, 1.0, 1.65)).export(p), [], "--scale 0.1:"),
    "texture not an image": ("cup.obj", _bad_texture, [], "not an image"),
    "no such file": ("missing.stl", lambda p: None, [], "no such file"),
    "another format": ("mesh.dae", lambda p: p.write_text("<COLLADA/>"), [], "one of .obj"),
    "an unknown up axis": ("box.stl", lambda p: trimesh.creation.box(BOX).export(p), ["--up", "w"], "one of z, y"),
    "mass and density": ("box.stl", lambda p: trimesh.creation.box(BOX).export(p), ["--mass", "1", "--density", "2"],
                         "one of them"),
    "a bad name": ("box.stl", lambda p: trimesh.creation.box(BOX).export(p), [], "letters, digits"),
    "x2's own name": ("box.stl", lambda p: trimesh.creation.box(BOX).export(p), [], "x2's own objects"),
    "a display name with brackets": ("box.stl", lambda p: trimesh.creation.box(BOX).export(p),
                                     ["--display", "red [mug]"], "display: found 'red [mug]'; allowed: words"),
    "a blank display name": ("box.stl", lambda p: trimesh.creation.box(BOX).export(p), ["--display", "  "],
                             "display: found '  '; allowed: words"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_and_writes_nothing(case: str, here: Path) -> None:
    file, make, extra, says = BAD[case]
    make(here / file)
    name = {"x2's own name": "block", "a bad name": "../up"}.get(case, "thing")
    code, out, err = add(file, "--name", name, *extra)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), (code, out, err)
    assert says in lines[0]
    assert written(here) == []


def test_a_hand_written_object_is_not_overwritten(here: Path) -> None:
    trimesh.creation.box(BOX).export(here / "box.stl")
    (here / "specs" / "objects").mkdir(parents=True)
    (here / "specs" / "objects" / "mine.yaml").write_text("name: mine\nmjcf: mine.xml\nfootprint_radius: 0.03\n")
    code, _, err = add("box.stl", "--name", "mine")
    assert code == 2 and "did not write" in err
    assert written(here) == ["mine.yaml"]


def synthesise_one(here: Path, asset: str) -> Path:
    """pick_place's copy with the block replaced by `asset` through its role: one episode, its file."""
    (here / "specs" / "scenes").mkdir()
    (here / "specs" / "scenes" / "mesh_booth.yaml").write_text(yaml.safe_dump({
        "include": "green_booth.yaml", "name": "mesh_booth", "description": "a mesh object and a plate",
        "regions": {"block_area": {"center": [0.5, -0.3], "half_size": [0.06, 0.07]},
                    "plate_area": {"center": [0.55, -0.05], "half_size": [0.04, 0.05]}},
        "objects": {"block": {"asset": asset, "tags": ["target_object"], "region": "block_area"},
                    "plate": {"asset": "plate", "region": "plate_area"}}}))
    task = yaml.safe_load((TASKS / "pick_place.yaml").read_text())
    (here / "specs" / "tasks").mkdir()
    (here / "specs" / "tasks" / "pick_mesh.yaml").write_text(yaml.safe_dump(
        {**task, "name": "pick_mesh", "scene": "mesh_booth"}))
    result = runner.invoke(app, ["synth", "--task", "pick_mesh", "-n", "1", "--workers", "1"])
    assert result.exit_code == 0, result.output
    [episode] = sorted((here / "data" / "pick_mesh" / "episodes").glob("*.h5"))
    return episode


def test_a_task_synthesises_with_a_mesh_object_and_its_episode_rebuilds_alone(here: Path) -> None:
    """The stored world of an untextured mesh object: plain MuJoCo compiles it from the file's text alone, and the
    file has no /textures (as every built-in task's)."""
    trimesh.creation.box((0.04, 0.04, 0.05)).export(here / "cube.stl")
    assert add("cube.stl", "--name", "mesh_cube", "--display", "grey cube")[0] == 0
    episode = synthesise_one(here, "mesh_cube")
    with h5py.File(episode, "r") as f:
        assert names.TEXTURES not in f
        world = f.attrs[names.MODEL_XML_ATTR]
    world = world.decode() if isinstance(world, bytes) else str(world)
    assert KEY_PREFIX not in world and "piece_00" in world
    model = mujoco.MjModel.from_xml_string(world)  # plain MuJoCo, nothing but the file's text
    assert model.body("block/object").id > 0


def test_a_textured_object_travels_with_its_episode_and_plain_mujoco_draws_it(here: Path) -> None:
    """A checkerboard box through `objects add` and synthesis: the episode file carries the image, and plain MuJoCo
    rebuilds the world from the file alone (its text and its /textures) and draws both colours of the board; x2's
    own reader (replay, relabel, render) opens it too."""
    checker_box(here / "checker.obj")
    code, out, err = add("checker.obj", "--name", "checker_box")
    assert code == 0, err
    assert "64 x 64 px PNG" in out
    episode = synthesise_one(here, "checker_box")
    with h5py.File(episode, "r") as f:
        world = f.attrs[names.MODEL_XML_ATTR]
        textures = {name: f[names.texture_path(name)][()].tobytes() for name in f[names.TEXTURES]}
        state = f[names.STATES][0]
    world = world.decode() if isinstance(world, bytes) else str(world)
    [(name, data)] = textures.items()
    assert name == texture_name(data) and f'file="{name}"' in world and "checker_box.png" not in world
    with pytest.raises(ValueError):
        mujoco.MjModel.from_xml_string(world)  # the text alone names an image it does not hold
    model = mujoco.MjModel.from_xml_string(world, textures)  # plain MuJoCo, nothing but the file
    data_ = mujoco.MjData(model)
    mujoco.mj_setState(model, data_, state, mujoco.mjtState.mjSTATE_INTEGRATION)
    mujoco.mj_forward(model, data_)
    camera = mujoco.MjvCamera()
    camera.lookat[:] = data_.xpos[model.body("block/object").id] + [0, 0, 0.025]
    camera.distance, camera.elevation, camera.azimuth = 0.2, -35.0, 135.0
    with mujoco.Renderer(model, 96, 96) as renderer:
        renderer.update_scene(data_, camera)
        rgb = renderer.render().astype(int)
    red = (rgb[..., 0] > rgb[..., 2] + 60) & (rgb[..., 0] > rgb[..., 1] + 60)
    blue = (rgb[..., 2] > rgb[..., 0] + 60) & (rgb[..., 2] > rgb[..., 1] + 60)
    assert red.mean() > 0.01 and blue.mean() > 0.01  # both squares of the board (one mean colour would be neither)
    with Episode(episode) as ep:
        assert ep.textures == textures
        recorded = open_world(ep)
        try:
            assert recorded.backend.model_textures() == textures
        finally:
            recorded.backend.close()
