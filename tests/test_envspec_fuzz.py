"""Fuzzing the spec loaders: every mutation of a shipped robot, scene or task file either still compiles
(into an EnvSpec, a checked synthesis program and a MuJoCo world) or ends in one `X2Error` line.

The mutations and the loading are tests/helpers/spec_fuzz.py's (bench/fuzz_specs.py runs the same with a
larger budget); a small fixed-seed budget here. A handful of the worst inputs also go through the real CLI.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.spec_fuzz import (
    BASE_FILES,
    TASKS,
    WHOLE_FILES,
    YAML_SNIPPETS,
    Case,
    cases,
    compile_case,
    run_case,
    show_case,
    workspace,
)
from helpers.x2_cli import run_x2
from hypothesis import HealthCheck, given, note, settings

from x2.base.errors import X2Error
from x2.envspec.source import MAX_SPEC_BYTES
from x2.envspec.task import load_env

FUZZ = settings(derandomize=True, max_examples=20, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TASK = "specs/tasks/fruit_in_microwave.yaml"
ROBOT = "specs/robots/artixon-g.yaml"


def _check(case: Case) -> str:
    try:
        return run_case(case)  # raises on anything but a clean load or a one-line X2Error
    except Exception as exc:
        exc.add_note(case.describe())
        raise


def _fuzz(case: Case) -> None:
    note(case.describe())
    assert run_case(case) in ("ok", "error")


@pytest.mark.parametrize("task", TASKS)
def test_the_unmutated_workspace_compiles(task: str) -> None:
    # The harness loads the copies it writes (not the built-in specs): unmutated, they compile.
    assert run_case(Case(task, BASE_FILES[task].encode(), task, None)) == "ok"


def test_the_workspace_copy_is_what_gets_loaded() -> None:
    broken = BASE_FILES[ROBOT].replace("reach: 0.8", "reach: -1")
    with pytest.raises(X2Error, match=r"specs/robots/artixon-g.yaml:\d+: reach: found -1"), \
            workspace(Case(ROBOT, broken.encode(), TASK, None)):
        load_env(TASK)


@FUZZ
@given(cases("robot"))
def test_mutated_robot(case: Case) -> None:
    _fuzz(case)


@FUZZ
@given(cases("scene"))
def test_mutated_scene(case: Case) -> None:
    _fuzz(case)


@FUZZ
@given(cases("task"))
def test_mutated_task(case: Case) -> None:
    _fuzz(case)


@FUZZ
@given(cases("asset"))
def test_mutated_asset(case: Case) -> None:
    _fuzz(case)


@settings(FUZZ, max_examples=40)
@given(cases("text"))
def test_mutated_text(case: Case) -> None:
    _fuzz(case)


@settings(FUZZ, max_examples=10)
@given(cases("any"))
def test_mutated_specs_through_tasks_show(case: Case) -> None:
    # What the user sees: the command prints the compiled task or one error line (rendering included).
    note(case.describe())
    assert show_case(case) in ("ok", "error")


def _with_value(field_line: str, snippet: str, target: str = TASK) -> Case:
    text = BASE_FILES[target]
    key = field_line.split(":")[0]
    assert field_line in text
    return Case(target, text.replace(field_line, f"{key}: {snippet}", 1).encode("utf-8", "surrogatepass"), TASK, None)


@pytest.mark.parametrize("snippet", YAML_SNIPPETS, ids=lambda s: s[:24])
def test_every_yaml_snippet_as_a_task_value(snippet: str) -> None:
    # In a field read before validation (`scene:` names the scene to load) and in a plain one.
    assert _check(_with_value("scene: kitchen_booth", snippet)) in ("ok", "error")
    assert _check(_with_value("horizon_s: 60", snippet)) in ("ok", "error")


@pytest.mark.parametrize("content", WHOLE_FILES, ids=lambda b: repr(b[:16]))
@pytest.mark.parametrize("target", [TASK, ROBOT, "specs/scenes/green_booth.yaml"])
def test_every_whole_file(content: bytes, target: str) -> None:
    # Task and robot files need fields; the base scene may be empty (kitchen_booth, which includes it, has them).
    assert _check(Case(target, content, TASK, None)) in (("ok", "error") if "scenes" in target else ("error",))


# Inputs that used to end in a traceback, a hang or a multi-line message, and the line each gives now.
LIMITS = [
    ("billion laughs", "horizon_s: 60", YAML_SNIPPETS[0],
     r"horizon_s\[\d\][][\d]*: found more than 20000 values \(aliases expanded\)"),
    ("recursive alias", "horizon_s: 60", "&loop [*loop]", r"found an alias inside its own anchor"),
    ("deep list", "horizon_s: 60", "[" * 3000 + "]" * 3000, r"<yaml>: found values nested more than 64 deep"),
    ("deep mapping", "horizon_s: 60", "{a: " * 2000 + "1" + "}" * 2000, r"found values nested more than 64 deep"),
    ("python tag", "horizon_s: 60", "!!python/object/apply:os.system [echo pwned]",
     r"horizon_s: found a !!python/object/apply:os.system tag; allowed: plain YAML"),
    ("python name", "horizon_s: 60", "!!python/name:os.system", r"horizon_s: found could not determine a constructor"),
    ("set tag", "horizon_s: 60", "!!set {a, b}", r"found a !!set tag; allowed: plain YAML"),
    ("huge int", "horizon_s: 60", "1" * 5000, r"horizon_s: found 1{20}\.\.\. \(ValueError\)"),
    ("nan", "horizon_s: 60", ".nan", r"horizon_s: found nan; allowed: a finite number"),
    ("inf", "timeout_s: 30", ".inf", r"timeout_s: found inf; allowed: a finite number"),
    ("nan argument", "value: 1.2", ".nan", r"joint_above.value: found nan; allowed: a finite number"),
    ("format spec", 'instruction: "Open', '"{fruit:>99999999999} Open',
     r"instruction: found placeholder \{fruit:>99999999999\}"),
    ("lone brace", 'instruction: "Open', '"} Open', r"instruction: found Single '}'"),
    ("positional placeholder", 'instruction: "Open', '"{} Open', r"instruction: found placeholder \{\}"),
    ("lone surrogate", 'instruction: "Open', '"\\ud800 Open',
     r"instruction: found the escape '\\ud800' \(a lone surrogate\); allowed: text that is valid Unicode"),
    ("NUL in a path", "scene: kitchen_booth", '"kitchen\\0booth.yaml"', r"scene: found .*no such scene file"),
    ("newline in a key", "horizon_s: 60", '{"a\\nb": 1}', r"horizon_s: found \{'a\\nb': 1\}; allowed: a valid number"),
]


@pytest.mark.parametrize("field_line, snippet, pattern", [c[1:] for c in LIMITS], ids=[c[0] for c in LIMITS])
def test_limits_and_checks(field_line: str, snippet: str, pattern: str) -> None:
    with pytest.raises(X2Error) as caught, workspace(_with_value(field_line, snippet)):
        load_env(TASK)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("specs/tasks/fruit_in_microwave.yaml:"), message
    assert re.search(pattern, message), message


def test_an_unknown_key_with_a_line_break_stays_on_one_line() -> None:
    text = BASE_FILES[TASK].replace("horizon_s: 60", 'horizon_s: 60\n"hor\\nizon": 1')
    with pytest.raises(X2Error) as caught, workspace(Case(TASK, text.encode(), TASK, None)):
        load_env(TASK)
    assert r"hor\nizon: found unknown field 'hor\nizon'" in str(caught.value)


def test_a_file_over_the_size_limit() -> None:
    text = BASE_FILES[TASK] + "#" * MAX_SPEC_BYTES
    with pytest.raises(X2Error, match=r"<file>: found more than \d+ bytes; allowed: a spec of at most"), \
            workspace(Case(TASK, text.encode(), TASK, None)):
        load_env(TASK)


def test_a_robot_joint_missing_from_its_mjcf_names_the_robot_file() -> None:
    text = BASE_FILES[ROBOT].replace("joints: [left_j1,", "joints: [left_jX,")
    case = Case(ROBOT, text.encode(), TASK, None)
    assert run_case(case) == "error"
    with pytest.raises(X2Error, match=r"^specs/robots/artixon-g.yaml: arms.left.joints: found joint 'left_jX'"), \
            workspace(case):
        compile_case(case)


def test_a_world_mujoco_cannot_compile_names_the_scene_and_robot_files() -> None:
    # A user's asset whose mesh file is missing: its MJCF parses, the world it joins does not compile.
    case = Case(TASK, BASE_FILES["specs/tasks/pick_place.yaml"].encode(), TASK, None)
    with workspace(case) as root:
        (root / "specs/objects").mkdir(exist_ok=True)
        (root / "specs/objects/block.yaml").write_text(
            "name: block\nmjcf: block.xml\ntags: [pickable]\nfootprint_radius: 0.03\nparts: {grasp: grasp}\n")
        (root / "specs/objects/block.xml").write_text(
            '<mujoco><asset><mesh name="m" file="missing.stl"/></asset><worldbody><body name="object">'
            '<geom type="mesh" mesh="m"/><site name="grasp"/></body></worldbody></mujoco>')
        with pytest.raises(X2Error, match=r"^specs/scenes/tabletop_booth.yaml: <world>: found a world MuJoCo cannot "
                           r"compile \(.*missing.stl.*\) from this scene \(assets: block, plate\) and robot "
                           r"specs/robots/artixon-g.yaml; allowed: "):
            compile_case(case)


@pytest.mark.parametrize("target, old, new, pattern", [
    ("specs/scenes/kitchen_booth.yaml", "include: green_booth.yaml", "include: [" + ", ".join(["green_booth.yaml"] * 40)
     + "]", r"kitchen_booth.yaml:\d+: include\[32\]: found more than 32 included files"),
    (TASK, "robot: artixon-g\n", "", r"fruit_in_microwave.yaml:\d+: robot: found no robot \(and none given with"),
    (TASK, "robot: artixon-g", "robot: [artixon-g]", r"fruit_in_microwave.yaml:\d+: robot: found \['artixon-g'\]"),
    (TASK, "scene: kitchen_booth", "scene: " + "k" * 5000, r"scene: found unknown scene 'k+\.\.\.k+'; allowed"),
    ("specs/scenes/kitchen_booth.yaml", "  microwave: {", '  "micro wave": {',
     r"objects.micro wave: found 'micro wave'; allowed: an object name of letters, digits"),
    ("specs/scenes/green_booth.yaml", "table_half_size: [0.4, 0.6]", "table_half_size: [-0.4, 0.6]",
     r"green_booth.yaml:\d+: booth.table_half_size\[0\]: found -0.4; allowed: greater than 0"),
    ("specs/scenes/green_booth.yaml", "table_height: 0.75", "table_height: 0.75\n  wall_rgba: [5, 0, 0, 1]",
     r"booth.wall_rgba\[0\]: found 5; allowed: less than or equal to 1"),
    ("specs/scenes/kitchen_booth.yaml", "yaw: [-0.08, 0.08]", "yaw: [0.5, -0.5]",  # numpy raised at reset
     r"kitchen_booth.yaml:\d+: regions.microwave_spot: found .*; allowed: yaw \[lo, hi\] with lo <= hi"),
    ("specs/scenes/kitchen_booth.yaml", "yaw: [-0.08, 0.08]", "yaw: [true, 0.08]",  # was read as 1.0
     r"kitchen_booth.yaml:\d+: regions.microwave_spot.yaw\[0\]: found True; allowed: a valid number"),
    (ROBOT, "fps: 30", 'fps: "30"', r"control.fps: found '30'; allowed: a valid integer"),
    ("specs/objects/microwave.yaml", "footprint_radius: 0.28", "footprint_radius: .inf",
     r"^specs/objects/microwave.yaml:\d+: footprint_radius: found inf; allowed: a finite number"),
    (ROBOT, "home: [0.0, -1.21", "home: [.nan, -1.21", r"arms.left.home\[0\]: found nan; allowed: a finite number"),
    (TASK, "skill: {name: pick, arm: right,", "skill: {name: pick, lift: .nan, arm: right,",
     r"fruit_in_microwave.yaml:\d+: nodes.pick_fruit.skill.lift: found nan; allowed: a finite number"),
    (TASK, "name: fruit_in_microwave", "name: '[red]fruit'", r"name: found '\[red\]fruit'; allowed: a name of"),
    (TASK, "  open_door:\n", "  open door:\n", r"nodes.open door: found 'open door'; allowed: a name of letters"),
    (TASK, "name: fruit_in_microwave", "name: fruit_in_microwave\nhorizon_s: 1\nhorizon_s: 2",
     r"horizon_s: found a duplicate key"),
])
def test_checks_found_by_fuzzing(target: str, old: str, new: str, pattern: str) -> None:
    assert old in BASE_FILES[target]
    case = Case(target, BASE_FILES[target].replace(old, new, 1).encode(), TASK, None)
    with workspace(case), pytest.raises(X2Error) as caught:
        compile_case(case)
    assert "\n" not in str(caught.value) and re.search(pattern, str(caught.value)), str(caught.value)


def test_markup_in_spec_text_is_printed_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    # Descriptions and instructions are free text: rich markup in them used to end `tasks show` in an
    # internal error (MarkupError); names that would be markup are refused by the spec (test above).
    from typer.testing import CliRunner

    from x2.cli.app import _mount, app

    _mount()
    text = BASE_FILES[TASK].replace("Swing the microwave door open.", '"[/] [red"').replace(
        'instruction: "Open', 'instruction: "[/bold] Open')
    with workspace(Case(TASK, text.encode(), TASK, None)):
        monkeypatch.setenv("COLUMNS", "400")
        result = CliRunner().invoke(app, ["tasks", "show", TASK, "--graph"])
    assert result.exit_code == 0, result.output
    assert "[/bold] Open the microwave" in result.output and "[/] [red" in result.output


# ----- through the real command ------------------------------------------------------------------

CLI_CASES = [  # (name, command, file to write, its content)
    ("billion laughs", ["tasks", "show", TASK], TASK, _with_value("horizon_s: 60", YAML_SNIPPETS[0]).content),
    ("invalid utf-8", ["robots", "show", ROBOT], ROBOT, BASE_FILES[ROBOT].encode() + b"# \xc3\x28\n"),
    # found only once the world is built: synth compiles it before any attempt
    ("joint not in the MJCF", ["synth", "-n", "1", "--task", TASK], ROBOT,
     BASE_FILES[ROBOT].replace("joints: [left_j1,", "joints: [left_jX,").encode()),
]


@pytest.mark.parametrize("args, target, content", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_reports_one_line(args: list[str], target: str, content: bytes, tmp_path: Path) -> None:
    for rel, text in BASE_FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(content if rel == target else text.encode())
    result = run_x2(args, tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 2, out  # not 1 (an internal error), not negative (a signal)
    assert "Traceback" not in out and "internal error" not in out, out
    assert len(result.stderr.strip().splitlines()) == 1, out
    assert result.stderr.startswith(f"error: {target}:"), out
