"""Malformed specs: each ends in one line naming file:line, the field, what was found and what is
allowed; exit code 2; no traceback; nothing written."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from x2.cli.app import _mount, app

_mount()
runner = CliRunner()

GOOD_TASK = """\
name: mytask
instruction: "Put the {fruit} in the microwave."
scene: kitchen_booth
robot: artixon-g
nodes:
  open_door:
    success: {joint_above: {joint: microwave/door_hinge, value: 1.2}}
  pick:
    success: {object_lifted: {obj: "@fruit"}}
  place:
    success: {object_inside: {obj: "@fruit", container: microwave/cavity}}
edges: [[open_door, place], [pick, place]]
"""


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# (name, files to write {relpath: text}, command args, expected file, expected line, message pattern)
CASES = [
    ("bad yaml", {"t.yaml": "name: x\nnodes: [a, b\n"}, ["tasks", "show", "t.yaml"], "t.yaml", 2,
     r"<yaml>: found a \[ opened on this line and not closed .*; allowed: a closing \]"),
    ("unknown robot", {"t.yaml": GOOD_TASK.replace("robot: artixon-g", "robot: artixon-z")},
     ["tasks", "show", "t.yaml"], "t.yaml", 4, r"robot: found unknown robot 'artixon-z'; allowed: available: .*artixon-g"),
    ("cycle", {"t.yaml": GOOD_TASK.replace("edges: [[open_door, place], [pick, place]]",
                                          "edges: [[open_door, place], [place, pick], [pick, open_door]]")},
     ["tasks", "show", "t.yaml"], "t.yaml", 12, r"edges: found a cycle open_door -> place -> pick -> open_door"),
    ("edge to missing node", {"t.yaml": GOOD_TASK.replace("[pick, place]]", "[pick, plaec]]")},
     ["tasks", "show", "t.yaml"], "t.yaml", 12, r"edges\[1\]\[1\]: found edge to missing node 'plaec'; allowed: one of"),
    ("unknown predicate", {"t.yaml": GOOD_TASK.replace("object_lifted:", "object_lifterd:")},
     ["tasks", "show", "t.yaml"], "t.yaml", 9, r"nodes.pick.success.object_lifterd: found unknown predicate.*object_lifted"),
    ("wrong argument type", {"t.yaml": GOOD_TASK.replace("value: 1.2", "value: wide")},
     ["tasks", "show", "t.yaml"], "t.yaml", 7, r"success.joint_above.value: found 'wide'; allowed: a number"),
    ("unknown argument", {"t.yaml": GOOD_TASK.replace('obj: "@fruit"}}\n  place', 'obj: "@fruit", hieght: 0.1}}\n  place')},
     ["tasks", "show", "t.yaml"], "t.yaml", 9, r"object_lifted.hieght: found unknown argument 'hieght'.*height"),
    ("missing argument", {"t.yaml": GOOD_TASK.replace("{joint: microwave/door_hinge, value: 1.2}",
                                                     "{joint: microwave/door_hinge}")},
     ["tasks", "show", "t.yaml"], "t.yaml", 7, r"joint_above: found no 'value'"),
    ("tag matches nothing", {"t.yaml": GOOD_TASK.replace('{object_lifted: {obj: "@fruit"}}',
                                                        '{object_lifted: {obj: "@vegetable"}}')},
     ["tasks", "show", "t.yaml"], "t.yaml", 9, r"found @vegetable matching nothing; allowed: a tag naming exactly one"),
    ("joint not in asset", {"t.yaml": GOOD_TASK.replace("microwave/door_hinge", "microwave/lid_hinge")},
     ["tasks", "show", "t.yaml"], "t.yaml", 7, r"microwave has no joint 'lid_hinge'.*door_hinge"),
    ("unknown field", {"t.yaml": GOOD_TASK.replace("  pick:\n    success:", "  pick:\n    sucess:")},
     ["tasks", "show", "t.yaml"], "t.yaml", 9, r"nodes.pick.sucess: found unknown field 'sucess'; allowed: one of .*success"),
    ("include loop", {"a.yaml": "include: b.yaml\nname: a\n", "b.yaml": "include: a.yaml\nname: b\n"},
     ["tasks", "show", "a.yaml"], "a.yaml", 1, r"include: found an include loop \(.*a.yaml -> .*b.yaml -> .*a.yaml\)"),
    ("missing include", {"t.yaml": "include: base_task.yaml\nname: t\n"}, ["tasks", "show", "t.yaml"], "t.yaml", 1,
     r"include: found 'base_task.yaml' \(no such file\)"),
    ("unreachable region", {
        "specs/scenes/far.yaml": """\
            include: kitchen_booth.yaml
            name: far
            regions:
              fruit_area: {center: [0.95, -0.5], half_size: [0.02, 0.02]}
            """,
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: far")},
     ["tasks", "show", "t.yaml"], "far.yaml", 4, r"regions.fruit_area: found corner .* (off the table|unreachable)"),
    ("region out of reach", {
        "specs/scenes/far.yaml": """\
            include: kitchen_booth.yaml
            name: far
            regions:
              fruit_area: {center: [0.85, -0.4], half_size: [0.02, 0.02]}
            """,
        "specs/robots/shorty.yaml": "include: artixon-g.yaml\nname: shorty\nreach: 0.79\n",
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: far").replace("artixon-g", "shorty")},
     ["tasks", "show", "t.yaml"], "far.yaml", 4, r"m from the nearest shoulder \(unreachable by shorty\)"),
    ("unknown asset in pool", {
        "specs/scenes/s.yaml": "include: kitchen_booth.yaml\nname: s\nobjects:\n  fruit: {pool: [apple, durian]}\n",
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: s")},
     ["tasks", "show", "t.yaml"], "s.yaml", 4, r"objects.fruit.pool\[1\]: found 'durian'; allowed: one of .*apple"),
    ("undeclared region", {
        "specs/scenes/s.yaml": "include: kitchen_booth.yaml\nname: s\nobjects:\n  fruit: {region: shelf}\n",
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: s")},
     ["tasks", "show", "t.yaml"], "s.yaml", 4, r"objects.fruit.region: found 'shelf'; allowed: one of .*fruit_area"),
    ("train asset in an eval pool", {
        "specs/scenes/s.yaml": "include: kitchen_booth.yaml\nname: s\nobjects:\n  fruit: {pool: [apple, peach]}\n",
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: s")},
     ["tasks", "show", "t.yaml"], "kitchen_booth.yaml", 14,
     r"variants.eval_fruit.objects.fruit.pool\[0\]: found asset 'peach' in an eval pool, also in a train pool at "
     r"\S*s.yaml:4; allowed: held-out pools"),
    ("trained paraphrase held out", {"t.yaml": GOOD_TASK.replace(
        "scene: kitchen_booth", "paraphrases:\n  train: ['Microwave the {fruit}.']\n  eval: ['Microwave the {fruit}.']\n"
        "scene: kitchen_booth")},
     ["tasks", "show", "t.yaml"], "t.yaml", 5, r"paraphrases.eval\[0\]: found 'Microwave the \{fruit\}.', also a "
     r"train template at \S*t.yaml:4; allowed: held-out paraphrases that are never trained on"),
    ("grid position of an object without slots", {"t.yaml": GOOD_TASK.replace("{fruit}", "{fruit.row}")},
     ["tasks", "show", "t.yaml"], "t.yaml", 2, r"instruction: found placeholder \{fruit.row\}; allowed: .*"),
    ("held-out look drawn for training", {
        "specs/scenes/s.yaml": "include: kitchen_booth.yaml\nname: s\nappearance: [studio, held_out]\n",
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: s")},
     ["tasks", "show", "t.yaml"], "s.yaml", 3,
     r"appearance\[1\]: found 'held_out' \(split eval\) in a train configuration; allowed: a train look: clutter"),
    ("a look that only adds distractors", {
        "specs/scenes/s.yaml": "include: kitchen_booth.yaml\nname: s\nappearance: [clutter]\n",
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: s")},
     ["tasks", "show", "t.yaml"], "s.yaml", 3, r"appearance\[0\]: found 'clutter', which only adds distractors"),
    ("robot home length", {"specs/robots/r.yaml": "include: artixon-g.yaml\nname: r\narms:\n  left:\n"
                                                  "    joints: [left_j1, left_j2]\n    home: [0.0]\n"},
     ["robots", "show", "r"], "r.yaml", 6, r"arms.left.home: found 1 values; allowed: 2 values"),
    ("jitter for a camera the robot has not", {"specs/robots/r.yaml": "include: artixon-g.yaml\nname: r\n"
                                                                       "camera_jitter: {nose: {fovy: 2}}\n"},
     ["robots", "show", "r"], "r.yaml", 3, r"camera_jitter.nose: found 'nose'; allowed: one of the robot's cameras: "
                                           r"head, left_wrist, right_wrist"),
    ("a table height range beyond a few centimetres", {"specs/robots/r.yaml": "include: artixon-g.yaml\nname: r\n"
                                                                               "table_height_jitter: 0.5\n"},
     ["robots", "show", "r"], "r.yaml", 3, r"table_height_jitter: found 0.5; allowed: less than or equal to 0.05$"),
    ("a table height range on a mobile base", {"specs/robots/r.yaml": "include: mobile-aloha.yaml\nname: r\n"
                                                                       "table_height_jitter: 0.01\n"},
     ["robots", "show", "r"], "r.yaml", 3, r"table_height_jitter: found 0.01 on a robot with a mobile base; allowed: "
                                           r"0 \(omitted\): only a robot whose mount is fixed to the world"),
    ("an embodiment axis x2 does not draw", {
        "specs/scenes/s.yaml": "include: kitchen_booth.yaml\nname: s\nembodiment: [camera, table]\n",
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: s")},
     ["tasks", "show", "t.yaml"], "s.yaml", 3, r"embodiment\[1\]: found 'table'; allowed: 'camera' or 'table_height'"),
    ("a region on an object the scene has not", {
        "specs/scenes/s.yaml": "include: kitchen_booth.yaml\nname: s\nregions:\n"
                               "  r: {center: [0.5, 0.0], half_size: [0.02, 0.02], on: shelf, height: 0.1}\n",
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: s")},
     ["tasks", "show", "t.yaml"], "s.yaml", 4, r"regions.r.on: found 'shelf'; allowed: an object of this scene: "),
    ("an object following one the scene has not (before it)", {
        "specs/scenes/s.yaml": "include: kitchen_booth.yaml\nname: s\nobjects:\n"
                               "  lamp: {pool: [lamp_red, lamp_blue], follows: shelf, pose: [0.8, 0.0, 0.75, 0.0]}\n",
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: s")},
     ["tasks", "show", "t.yaml"], "s.yaml", 4, r"objects.lamp.follows: found 'shelf'; allowed: an object listed "
                                               r"before this one or a role: .*fruit"),
    ("a role unlike a later role", {
        "specs/scenes/s.yaml": "include: kitchen_booth.yaml\nname: s\nroles:\n"
                               "  first: {one_of: [fruit, microwave], unlike: second}\n"
                               "  second: {one_of: [fruit, microwave]}\n",
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: s")},
     ["tasks", "show", "t.yaml"], "s.yaml", 4, r"roles.first.unlike: found 'second'; allowed: a role listed before "
                                               r"this one: none"),
    ("a role's objects without the joint the task names", {
        "specs/scenes/s.yaml": "include: kitchen_booth.yaml\nname: s\nroles:\n"
                               "  either: {one_of: [fruit, microwave]}\n",
        "t.yaml": GOOD_TASK.replace("scene: kitchen_booth", "scene: s").replace("microwave/door_hinge",
                                                                                "either/door_hinge")},
     ["tasks", "show", "t.yaml"], "t.yaml", 7, r"joint_above.joint: found 'either/door_hinge' \(\w+ has no joint "
                                               r"'door_hinge'\)"),
    ("duplicate key", {"t.yaml": GOOD_TASK + "robot: artixon-h\n"}, ["tasks", "show", "t.yaml"], "t.yaml", 13,
     r"robot: found a duplicate key"),
    ("empty file", {"t.yaml": ""}, ["tasks", "show", "t.yaml"], "t.yaml", 1, r"found an empty file"),
    ("bad placeholder", {"t.yaml": GOOD_TASK.replace("{fruit}", "{vegetable}")}, ["tasks", "show", "t.yaml"],
     "t.yaml", 2, r"instruction: found placeholder \{vegetable\}"),
    ("missing field", {"t.yaml": GOOD_TASK.replace('instruction: "Put the {fruit} in the microwave."\n', "")},
     ["tasks", "show", "t.yaml"], "t.yaml", 1, r"instruction: found nothing; allowed: a value"),
    ("wrong type field", {"t.yaml": GOOD_TASK.replace("nodes:\n", "horizon_s: soon\nnodes:\n")},
     ["tasks", "show", "t.yaml"], "t.yaml", 5, r"horizon_s: found 'soon'"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_malformed_spec_gives_one_line(case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _name, files, args, file, line, pattern = case
    for rel, text in files.items():
        _write(tmp_path, rel, text)
    monkeypatch.chdir(tmp_path)
    before = _tree(tmp_path)
    result = runner.invoke(app, args)
    out = result.output.strip()
    assert result.exit_code == 2, out
    assert "Traceback" not in out
    assert len(out.splitlines()) == 1, out
    m = re.match(r"error: (?P<file>\S+?):(?P<line>\d+): ", out)
    assert m, out
    assert os.path.basename(m["file"]) == file and int(m["line"]) == line, out
    assert re.search(pattern, out), out
    assert _tree(tmp_path) == before  # nothing written


@pytest.mark.parametrize("args, pattern", [
    (["tasks", "show", "no_such_task"], r"unknown task 'no_such_task'; available: .*fruit_in_microwave"),
    (["robots", "show", "r2d2"], r"unknown robot 'r2d2'; available: aloha, artixon-g, artixon-h, arx-r5, franka-panda"),
    (["tasks", "show", "fruit_in_microwave", "--robot", "r2d2"], r"unknown robot 'r2d2'"),
    (["tasks", "show", "fruit_in_microwave", "--variant", "night"], r"kitchen_booth.yaml:\d+: variants: found no "
                                                                     r"variant 'night'; allowed: one of default"),
])
def test_unknown_names(args: list[str], pattern: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    out = result.output.strip()
    assert result.exit_code == 2 and len(out.splitlines()) == 1 and "Traceback" not in out, out
    assert re.search(pattern, out), out
    assert not list(tmp_path.iterdir())


def test_builtin_specs_compile_and_show(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for args in (["robots", "ls"], ["robots", "show", "artixon-h"], ["tasks", "ls"],
                 ["tasks", "show", "fruit_in_microwave", "--graph"], ["tasks", "show", "pick_place"],
                 ["tasks", "show", "fruit_in_microwave", "--variant", "eval_fruit", "--robot", "artixon-h"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)
    result = runner.invoke(app, ["tasks", "show", "fruit_in_microwave", "--graph"])
    for node in ("open_door", "pick_fruit", "place_fruit", "close_door", "retract"):
        assert node in result.output
    assert "after open_door + pick_fruit" in result.output.replace("\n│ │ ", " ")


SKILL_TASK = GOOD_TASK.replace('    success: {object_lifted: {obj: "@fruit"}}',
                               '    success: {object_lifted: {obj: "@fruit"}}\n    skill: {name: pick, arm: right, target: "@fruit"}')


@pytest.mark.parametrize("text, pattern", [
    (SKILL_TASK.replace('target: "@fruit"', 'target: "@veg"'), r"t.yaml:10: nodes.pick.skill.target: found @veg matching nothing"),
    (SKILL_TASK.replace("arm: right", "arm: middle"), r"t.yaml:10: nodes.pick.skill.arm: found 'middle'; allowed: one of left, right, auto, both"),
    (SKILL_TASK.replace('target: "@fruit"', "target: microwave/knob"), r"t.yaml:10: nodes.pick.skill.target: found 'microwave/knob' \(microwave has no part 'knob'\)"),
])
def test_bad_skill_binding(text: str, pattern: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write(tmp_path, "t.yaml", text)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["tasks", "show", "t.yaml"])
    out = result.output.strip()
    assert result.exit_code == 2 and len(out.splitlines()) == 1, out
    assert re.search(pattern, out), out
