"""What "the physics state" of a world is: the part of MjData an episode stores every tick.

mjSTATE_INTEGRATION is everything `mj_step` reads: time, qpos, qvel, act, the warm start of the
constraint solver, ctrl, applied forces, mocap poses and equality flags. Setting it (and running
mj_forward) on a model compiled from the same XML reproduces the recorded world exactly, and stepping
from it with the next recorded action reproduces the next recorded state.
"""

from __future__ import annotations

import mujoco

STATE_SPEC = mujoco.mjtState.mjSTATE_INTEGRATION


def state_size(model: mujoco.MjModel) -> int:
    return int(mujoco.mj_stateSize(model, STATE_SPEC))
