"""Backends are found by name through the entry point group `x2.backends`: x2's own `mujoco` (the default) and the
test package's `delegate` (tests/backend_plugin, registered by its metadata alone), chosen by argument or by
$X2_BACKEND; an unknown or broken one is refused in one line that names what is installed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from x2_test_backend import DelegatingBackend  # tests/backend_plugin, on sys.path by this folder's conftest

from x2.base.errors import NotFoundError, X2Error
from x2.envspec.env import EnvSpec
from x2.sim import ImageSize, installed_backends, make_backend, recorded_backend
from x2.sim.discovery import ENV_VAR, GROUP
from x2.sim.mujoco.backend import MujocoBackend


def test_both_backends_are_installed() -> None:
    assert {"mujoco", "delegate"} <= set(installed_backends())


def test_mujoco_is_the_default(env: EnvSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    for value in (None, ""):  # unset, or set empty
        if value is None:
            monkeypatch.delenv(ENV_VAR, raising=False)
        else:
            monkeypatch.setenv(ENV_VAR, value)
        b = make_backend(env)
        assert type(b) is MujocoBackend
        b.close()


def test_chosen_by_argument_or_environment(env: EnvSpec, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    b = make_backend(env, "delegate")
    assert isinstance(b, DelegatingBackend)
    info = b.reset(0)
    b.step(b.home_action())
    assert b.steps == 1  # the tick went through the plugin's code
    with b.renderer(("head",), ImageSize(48, 64)) as renderer:
        renderer.set_state(b.get_state())
        assert renderer.render("head").shape == (48, 64, 3)
    assert b.renderers == 1  # and the renderer was made by it
    xml = b.model_xml()
    monkeypatch.setenv(ENV_VAR, "delegate")
    again = make_backend(env)
    rebuilt = recorded_backend(env, xml, info.assets, info.layout)
    assert isinstance(again, DelegatingBackend) and isinstance(rebuilt, DelegatingBackend)
    mine = make_backend(env, "mujoco")  # an argument wins over the environment
    assert type(mine) is MujocoBackend
    for x in (b, again, rebuilt, mine):
        x.close()


def test_an_unknown_backend_is_refused_naming_the_installed_ones(env: EnvSpec,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(NotFoundError) as info:
        make_backend(env, "isaaclab")
    message = str(info.value)
    assert "\n" not in message and "'isaaclab'" in message and GROUP in message
    assert re.search(r"\bdelegate, mujoco\b", message), message
    monkeypatch.setenv(ENV_VAR, "isaaclab")
    with pytest.raises(NotFoundError, match=f"^{ENV_VAR}: found 'isaaclab'"):
        make_backend(env)


def test_a_broken_entry_point_is_refused_in_one_line(env: EnvSpec, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    info = tmp_path / "x2_broken_backends-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: x2-broken-backends\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nmissing = x2_no_such_module:FACTORY\n"
                                           "not_a_factory = json:dumps\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert {"missing", "not_a_factory", "delegate", "mujoco"} <= set(installed_backends())
    with pytest.raises(X2Error, match=r"^backend 'missing': entry point 'x2_no_such_module:FACTORY' .* "
                                      r"ModuleNotFoundError") as raised:
        make_backend(env, "missing")
    assert "\n" not in str(raised.value)
    with pytest.raises(X2Error, match=r"^backend 'not_a_factory': .* names a function; allowed: an object with make"):
        make_backend(env, "not_a_factory")
    b = make_backend(env)
    assert type(b) is MujocoBackend  # the others still load
    b.close()


def test_the_contract_suite_runs_against_the_plugin(request: pytest.FixtureRequest) -> None:
    contract = [item.nodeid for item in request.session.items if "/test_contract_" in item.nodeid]
    if not contract:
        pytest.skip("the contract tests are not part of this run")
    for name in ("mujoco", "delegate"):
        assert any(re.search(rf"\[(.*-)?{name}(-.*)?\]$", nodeid) for nodeid in contract), name
