"""The backend contract: what every simulator backend must do for x2's loop, synthesis, labelling and replay to
work on it (docs/backends.md). Each test runs once per backend installed under the entry point group
`x2.backends`, so another package's backend is checked by these very tests: `pytest tests/backend_contract -k NAME`.

The test package in tests/backend_plugin registers one (`delegate`, wrapping MuJoCo) by its metadata alone; its
folder goes on sys.path here, before the backends are listed, so it is found as an installed package would be.

Worlds are kept small (pick_place: two objects on a table, 6-joint arms) and images tiny, so the suite stays fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; before any backend imports mujoco

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from x2.envspec import load_env  # noqa: E402
from x2.envspec.env import EnvSpec  # noqa: E402
from x2.sim import Backend, installed_backends, make_backend  # noqa: E402

PLUGIN = Path(__file__).resolve().parents[1] / "backend_plugin"
if str(PLUGIN) not in sys.path:
    sys.path.insert(0, str(PLUGIN))

BACKENDS = installed_backends()
TASK = "pick_place"


@pytest.fixture(scope="session")
def env() -> EnvSpec:
    return load_env(TASK)


@pytest.fixture(scope="session", params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="session")
def backend(backend_name: str, env: EnvSpec) -> Iterator[Backend]:
    """One backend per name, shared: every test resets it first."""
    b = make_backend(env, backend_name)
    yield b
    b.close()


@pytest.fixture
def new_backend(backend_name: str, env: EnvSpec) -> Iterator[Callable[[], Backend]]:
    """Fresh backends of the name under test (closed after the test)."""
    made: list[Backend] = []

    def make() -> Backend:
        made.append(make_backend(env, backend_name))
        return made[-1]

    yield make
    for b in made:
        b.close()


@pytest.fixture(scope="session")
def busy() -> Callable[[Backend, int], np.ndarray]:
    return _busy


def _busy(backend: Backend, ticks: int, phase: float = 0.0) -> np.ndarray:
    """(ticks, dim) actions that move every arm joint around home and open and close every gripper, so stepping
    covers actuators, the grippers' range and (with an object dropped) contacts. float32-exact, as an episode
    stores them."""
    layout, home = backend.action_layout, backend.home_action()
    k = np.arange(ticks)[:, None] + phase
    out = np.repeat(home[None], ticks, axis=0)
    for arm in layout.arms:
        joints = np.arange(arm.joints.start, arm.joints.stop)
        out[:, joints] += 0.2 * np.sin(0.15 * k + joints[None])
        out[:, arm.gripper] = 0.5 + 0.5 * np.cos(0.3 * k[:, 0])
    return out.astype(np.float32).astype(np.float64)
