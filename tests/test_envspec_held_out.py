"""Sampled configurations: instructions (paraphrases, grid positions) and appearance are drawn per reset,
reproducibly by seed, recorded and counted by `x2 datasets info`; evaluation configurations stay held out:
collectors refuse them without --allow-eval (nothing written), `x2 datasets validate --split` proves a dataset
never saw one, and render and augment refuse its episodes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
from helpers.real_dataset import record_short_dataset
from typer.testing import CliRunner

from x2.augment.augment import AugmentRequest, augment_dataset
from x2.cli.app import _mount, app
from x2.datasets import Dataset
from x2.datasets.coverage import coverage
from x2.envspec import load_env
from x2.envspec.held_out import EVAL_SEED_BASE, HeldOutError
from x2.envspec.instruction import fill
from x2.recorded.held_out_check import eval_configuration
from x2.render.task_preview import task_preview
from x2.sim.camera import ImageSize
from x2.sim.mujoco.backend import MujocoBackend

_mount()
runner = CliRunner()


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("args, pattern", [
    (["synth", "--task", "fruit_in_microwave", "-n", "1", "--variant", "eval_fruit"],
     r"--variant: found 'eval_fruit' of scene kitchen_booth \(split eval, held out for evaluation\); allowed: a "
     r"train configuration, or --allow-eval"),
    (["synth", "--task", "pick_place", "-n", "1", "--seed", str(EVAL_SEED_BASE)],
     rf"--seed: found {EVAL_SEED_BASE} \(seeds from {EVAL_SEED_BASE} on\) \(split eval"),
    (["collect", "waypoints", "--task", "pick_by_position", "-n", "1", "--variant", "eval_wording"],
     r"--variant: found 'eval_wording' of scene grid_booth \(split eval"),
])
def test_collectors_refuse_an_eval_configuration_and_write_nothing(args: list[str], pattern: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, args)
    out = result.output.strip()
    assert result.exit_code == 2 and len(out.splitlines()) == 1 and "Traceback" not in out, out
    assert re.search(pattern, out), out
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("held_out")
    made = {"train": root / "train", "eval_variant": root / "eval_variant", "eval_seed": root / "eval_seed"}
    record_short_dataset(made["train"], episodes=1, ticks=8)
    record_short_dataset(made["eval_variant"], episodes=1, ticks=8, variant="eval_fruit")
    record_short_dataset(made["eval_seed"], episodes=1, ticks=8, seed=EVAL_SEED_BASE + 5)
    return made


def test_validate_split_proves_a_train_dataset_and_names_an_eval_episode(datasets: dict[str, Path]) -> None:
    ok = runner.invoke(app, ["datasets", "validate", str(datasets["train"]), "--split"])
    assert ok.exit_code == 0 and "none saw an evaluation configuration" in ok.output, ok.output
    for name, why in (("eval_variant", "recorded with split eval (scene variant eval_fruit)"),
                      ("eval_seed", "recorded with split eval (scene variant default)")):
        bad = runner.invoke(app, ["datasets", "validate", str(datasets[name]), "--split"])
        assert bad.exit_code == 1 and f"episode 0: {why}" in bad.output, bad.output
    with Dataset.open(datasets["eval_seed"]).load(0) as ep:  # the seed alone makes it eval, the variant aside
        assert ep.attrs["master_seed"] == EVAL_SEED_BASE + 5 and ep.attrs["scene_variant"] == "default"


def test_an_eval_seed_is_found_even_where_the_split_attr_says_train(datasets: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    path = shutil.copytree(datasets["eval_seed"], tmp_path / "relabelled")
    with Dataset.open(path).load(0) as ep:
        file = ep.path
    with h5py.File(file, "r+") as f:  # (a file edited by hand: only its master seed says it was held out)
        f.attrs["split"] = "train"
    with Dataset.open(path).load(0) as ep:
        why = eval_configuration(ep)
    assert why == f"master seed {EVAL_SEED_BASE + 5}, an evaluation seed (from {EVAL_SEED_BASE} on)"


def test_render_and_augment_refuse_eval_episodes_unless_allowed(datasets: dict[str, Path], tmp_path: Path) -> None:
    source = tmp_path / "ev"
    shutil.copytree(datasets["eval_variant"], source)
    before = _files(source)
    refused = runner.invoke(app, ["render", str(source), "--cameras", "head", "--size", "48x64"])
    assert refused.exit_code == 2 and "episode 0 of" in refused.output and "--allow-eval" in refused.output
    assert _files(source) == before
    with pytest.raises(HeldOutError, match="recorded with split eval"):
        augment_dataset(source, tmp_path / "aug", AugmentRequest(per_episode=1))
    assert not (tmp_path / "aug").exists()
    allowed = runner.invoke(app, ["render", str(source), "--cameras", "head", "--size", "48x64", "--allow-eval"])
    assert allowed.exit_code == 0, allowed.output


def test_an_eval_paraphrase_in_a_train_episode_is_found(tmp_path: Path) -> None:
    path = tmp_path / "grid"
    record_short_dataset(path, episodes=1, ticks=4, task="pick_by_position")
    with Dataset.open(path).load(0) as ep:
        assert eval_configuration(ep) is None
        file = ep.path
        layout = ep.json_attr("layout")
    env = load_env("pick_by_position")
    assert env.task is not None
    held = fill(env.task.eval_paraphrases[0], env.objects, {o.name: "block" for o in env.objects if o.name != "plate"}
                | {"plate": "plate"}, {k: (v[0], v[1]) for k, v in layout.items()})
    with h5py.File(file, "r+") as f:  # (a file edited by hand: only its instruction says it was held out)
        f.attrs["instruction"] = held
    with Dataset.open(path).load(0) as ep:
        assert eval_configuration(ep) == f"its instruction is the held-out paraphrase {env.task.eval_paraphrases[0]!r}"


def test_instructions_are_drawn_per_reset_name_the_grid_position_and_hold_out_eval_wording() -> None:
    env = load_env("pick_by_position")
    assert env.task is not None
    train = {env.task.instruction, *env.task.paraphrases}
    backend = MujocoBackend(env)
    seen: set[str] = set()
    for seed in range(10):
        info = backend.reset(seed)
        assert backend.reset(seed) == info  # same seed, same draw
        x, y = info.layout["target"].x, info.layout["target"].y
        row, column = 1 if x < 0.5 else 2, {-0.2: 1, -0.33: 2, -0.46: 3}[round(y, 2)]
        assert f"row {row}, column {column}" in info.instruction or f"row {row} and column {column}" in info.instruction
        template = next(t for t in train if fill(t, env.objects, info.assets, {"target": (x, y)}) == info.instruction)
        seen.add(template)
    assert len(seen) >= 2  # the paraphrases are drawn, not only the instruction
    held = backend.reset(3, variant="eval_wording")
    assert backend.env.split == "eval" and "found at row" in held.instruction  # the eval paraphrase only
    backend.close()


def test_info_reports_coverage_per_axis(tmp_path: Path) -> None:
    path = tmp_path / "grid"
    record_short_dataset(path, episodes=4, ticks=2, task="pick_by_position")
    cov = coverage(Dataset.open(path))
    assert cov.episodes == 4 and cov.layouts == 4 and cov.split == {"train": 4} and not cov.unreadable
    assert cov.appearance == {"default": 4} and cov.embodiment == {"artixon-g": 4}
    assert sum(cov.instructions.values()) == 4 and len(cov.instructions) >= 2  # wordings and positions vary
    assert cov.drawn_assets == {}  # every object had one asset: nothing to cover
    (path / "episodes" / "episode_000002.h5").write_bytes(b"not hdf5")  # a damaged file is counted, not fatal
    damaged = coverage(Dataset.open(path))
    assert damaged.unreadable == [2] and sum(damaged.split.values()) == 3
    out = runner.invoke(app, ["datasets", "info", str(path)])
    assert out.exit_code == 0 and "coverage per randomisation axis" in out.output and "unreadable" in out.output


def test_appearance_is_drawn_per_reset_from_its_own_stream_and_recorded(tmp_path: Path) -> None:
    env = load_env("pick_place", variant="randomized")
    assert [v.name for v in env.appearance] == ["studio", "warm_wood"]
    backend, plain = MujocoBackend(env), MujocoBackend(load_env("pick_place"))
    drawn = set()
    for seed in range(6):
        info = backend.reset(seed)
        xml = backend.model_xml()
        assert backend.reset(seed) == info and backend.model_xml() == xml  # same seed, same look, same world text
        assert info.layout == plain.reset(seed).layout  # the look's draws leave the layout's as they were
        assert info.appearance is not None
        look = info.appearance["look"]
        assert isinstance(look, dict)
        drawn.add((info.appearance["scenery"], tuple(look["table"]["rgb"])))
        # the embodiment axis: the head camera moved, turned and re-lensed within the robot's declared jitter
        assert info.embodiment is not None
        head = info.embodiment["cameras"]["head"]
        cam, nominal = backend.model.camera("head"), plain.model.camera("head")
        assert cam.fovy[0] - nominal.fovy[0] == pytest.approx(head["fovy"], abs=1e-4) and abs(head["fovy"]) <= 3.0
        assert 0 < abs(cam.pos - nominal.pos).max() <= 0.01 + 1e-5
        turned = 2 * np.degrees(np.arccos(min(1.0, abs(float(cam.quat @ nominal.quat)))))
        assert 0 < turned <= 2.0 + 1e-3
    assert len(drawn) >= 2
    backend.close()
    plain.close()
    path = tmp_path / "looks"
    record_short_dataset(path, episodes=2, ticks=2, task="pick_place", variant="randomized")
    ds = Dataset.open(path)
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            recorded = ep.json_attr("reset_look")
            assert recorded["scenery"] in ("studio", "warm_wood")
            rgb = " ".join(f"{c:g}" for c in recorded["look"]["table"]["rgb"])
            assert rgb in ep.model_xml  # the file's world is the restyled one: rendering it shows the look
            fovy = 65 + ep.json_attr("reset_embodiment")["cameras"]["head"]["fovy"]
            assert 'name="head"' in ep.model_xml and f'fovy="{fovy:g}"' in ep.model_xml  # and its camera is drawn
    assert {k.split(", look ")[1] for k in coverage(ds).appearance} <= {"studio", "warm_wood"}
    # augmented: a scenery block that draws a look restyles the world over the parent's, and the appearance axis
    # counts that one; a block without a look leaves the parent's showing
    augment_dataset(path, tmp_path / "aug", AugmentRequest(per_episode=1))
    aug = Dataset.open(tmp_path / "aug")
    expected = []
    for record in aug.episodes():
        with aug.load(record.index) as ep:
            scenery, parent_look = ep.text("scene_variant"), ep.json_attr("reset_look")["scenery"]
            expected.append(f"scenery {scenery}" if ep.json_attr("augmentation")["look"]
                            else f"scenery {scenery}, look {parent_look}")
    assert sorted(coverage(aug).appearance.elements()) == sorted(expected)
    assert any(", look " not in k for k in expected) and any(", look " in k for k in expected)  # both kinds seen


def test_one_axis_redraws_alone(tmp_path: Path) -> None:
    backend = MujocoBackend(load_env("pick_place", variant="randomized"))
    base, other = 11, 12
    a, b = backend.reset(base), backend.reset(other)
    assert a.appearance != b.appearance and a.layout != b.layout
    looks_only = backend.reset(base, axes={"appearance": other})
    assert looks_only.appearance == b.appearance and looks_only.layout == a.layout
    task_only = backend.reset(base, axes={"task": other})
    assert task_only.appearance == a.appearance and task_only.layout == b.layout
    cameras_only = backend.reset(base, axes={"embodiment": other})
    assert a.embodiment != b.embodiment and cameras_only.embodiment == b.embodiment
    assert cameras_only.appearance == a.appearance and cameras_only.layout == a.layout
    backend.close()
    done = task_preview("pick_place", tmp_path / "looks.png", seeds=3, size=ImageSize(48, 64), variant="randomized",
                        axis="appearance")
    assert all("look=" in t.label for t in done.tiles) and "only the appearance axis varies" in done.title
