"""`x2 objects sheet`: the objects `x2 objects add` made, each drawn alone through x2's renderer, in one PNG; a
textured object shows its texture (both colours of a checkerboard), and no object made is one error line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.meshes import checker_box
from PIL import Image
from typer.testing import CliRunner

from x2.cli.app import _mount, app
from x2.render.object_sheet import made_objects

_mount()
runner = CliRunner()


@pytest.fixture()
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_sheet_shows_each_object_made_and_its_texture(here: Path) -> None:
    checker_box(here / "checker.obj")
    added = runner.invoke(app, ["objects", "add", "checker.obj", "--name", "checker_box"])
    assert added.exit_code == 0, added.output
    assert made_objects() == ["checker_box"]
    result = runner.invoke(app, ["objects", "sheet", "--out", "sheet.png", "--size", "96"])
    assert result.exit_code == 0, result.output
    rgb = np.asarray(Image.open(here / "sheet.png").convert("RGB")).astype(int)
    assert rgb.shape[1] >= 96 and rgb.shape[0] >= 96
    red = (rgb[..., 0] > rgb[..., 2] + 60) & (rgb[..., 0] > rgb[..., 1] + 60)
    blue = (rgb[..., 2] > rgb[..., 0] + 60) & (rgb[..., 2] > rgb[..., 1] + 60)
    assert red.sum() > 100 and blue.sum() > 100  # the board's two colours, not one mean


def test_no_object_made_is_one_line(here: Path) -> None:
    result = runner.invoke(app, ["objects", "sheet"])
    assert result.exit_code == 2 and "x2 objects add" in result.output and not (here / "objects.png").exists()
