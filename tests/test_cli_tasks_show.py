"""`x2 tasks show` compiles what `x2 synth` compiles (x2.synth.options.SessionOptions.compile): a task synthesis
would refuse, show refuses with the same one line, exit 2."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import x2
from x2.cli.app import _mount, app

_mount()
runner = CliRunner()

TASK = (Path(x2.__file__).parent / "tasks" / "pick_place.yaml").read_text().replace("name: pick_place", "name: t")
# An object whose MJCF names a mesh file that is not there: the spec compiles, the world does not.
MESHED = """\
<mujoco model="tetra">
  <asset><mesh name="tetra" file="tetra.stl"/></asset>
  <worldbody><body name="object"><geom type="mesh" mesh="tetra"/></body></worldbody>
</mujoco>
"""


def _workspace(root: Path, task: str) -> None:
    (root / "specs" / "objects").mkdir(parents=True)
    (root / "specs" / "scenes").mkdir(parents=True)
    (root / "specs" / "objects" / "tetra.xml").write_text(MESHED)
    (root / "specs" / "objects" / "tetra.yaml").write_text("name: tetra\nmjcf: tetra.xml\ntags: [pickable]\n"
                                                           "footprint_radius: 0.03\n")
    (root / "specs" / "scenes" / "tetra_booth.yaml").write_text(textwrap.dedent("""\
        include: tabletop_booth.yaml
        name: tetra_booth
        objects:
          block: {asset: tetra, tags: [target_object], region: block_area}
        """))
    (root / "t.yaml").write_text(task)


@pytest.mark.parametrize("task, found", [
    (TASK.replace("name: pick, arm", "name: yeet, arm"), "t.yaml:16: nodes.pick.skill.name: found 'yeet'"),
    (TASK.replace("arm: right, target: plate", "arm: right, target: plate, speed: 2"),
     "t.yaml:24: nodes.place.skill.speed: found unknown parameter 'speed'"),
    (TASK.replace("scene: tabletop_booth", "scene: tetra_booth"),
     "specs/scenes/tetra_booth.yaml: <world>: found a world MuJoCo cannot compile (Error: Error opening file "
     "'tetra.stl')"),
])
def test_show_refuses_what_synth_refuses_with_its_line(task: str, found: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _workspace(tmp_path, task)
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    show = runner.invoke(app, ["tasks", "show", "t.yaml"])
    synth = runner.invoke(app, ["synth", "--task", "t.yaml", "-n", "1", "--workers", "1"])
    assert show.exit_code == synth.exit_code == 2, (show.output, synth.output)
    assert len(show.output.strip().splitlines()) == 1 and "Traceback" not in show.output, show.output
    assert show.output.startswith(f"error: {found}"), show.output
    assert show.output == synth.output
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_show_shows_what_synth_accepts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _workspace(tmp_path, TASK)
    monkeypatch.chdir(tmp_path)
    show = runner.invoke(app, ["tasks", "show", "t.yaml"], env={"COLUMNS": "200"})
    assert show.exit_code == 0, show.output
    assert show.output.startswith("t: Put the {block} on the {plate}.") and "pick arm=right" in show.output


def test_a_task_for_teleoperation_alone_is_shown_and_said_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node that binds no skill: synthesis refuses the task, show shows it and says synthesis refuses it (a task
    a person teleoperates needs no skills)."""
    lines = TASK.splitlines()
    task = "\n".join(line for line in lines if not line.strip().startswith("skill: {name: place")) + "\n"
    _workspace(tmp_path, task)
    monkeypatch.chdir(tmp_path)
    show = runner.invoke(app, ["tasks", "show", "t.yaml"], env={"COLUMNS": "200"})
    assert show.exit_code == 0, show.output
    assert "teleoperation only: x2 synth refuses it (no skill on place)" in show.output, show.output
    synth = runner.invoke(app, ["synth", "--task", "t.yaml", "-n", "1", "--workers", "1"])
    assert synth.exit_code == 2 and "nodes.place.skill: found no skill" in synth.output, synth.output
