"""`x2 doctor` on this machine: the real renderer, the real packages; HOME and DISPLAY point where the test says."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.x2_cli import HEADLESS_ENV

from x2.doctor import checks as doctor


def test_one_line_each_with_the_fix_when_missing(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {**HEADLESS_ENV, "HOME": str(tmp_path)}  # no SteamVR registered, no display
    run = subprocess.run([sys.executable, "-m", "x2", "doctor"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = {line.split()[1]: line for line in run.stdout.splitlines()}
    assert set(lines) >= {"renderer", "python", "lerobot", "steamvr", "serial", "display", "disk"}
    assert lines["renderer"].startswith("ok") and "frames/s" in lines["renderer"]
    assert lines["python"].startswith("ok")
    assert lines["steamvr"].startswith("missing") and "fix: install SteamVR" in lines["steamvr"]
    assert lines["display"].startswith("missing") and "fix:" in lines["display"]
    assert lines["disk"].startswith(("ok", "warn")) and "GB free" in lines["disk"]


def test_steamvr_display_and_disk_findings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = tmp_path / ".config" / "openvr" / "openvrpaths.vrpath"
    paths.parent.mkdir(parents=True)
    paths.write_text('{"runtime": ["/opt/steamvr"]}')
    monkeypatch.setenv("HOME", str(tmp_path))
    assert doctor.check_steamvr().status == doctor.OK
    monkeypatch.setenv("DISPLAY", ":987")  # no server listens there
    found = doctor.check_display()
    assert found.status == doctor.WARN and "/tmp/.X11-unix/X987" in found.detail
    disk = doctor.check_disk(tmp_path / "not" / "yet" / "made")
    assert disk.status in (doctor.OK, doctor.WARN) and str(tmp_path) in disk.detail
