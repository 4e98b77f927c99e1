"""Damped-least-squares IK on one arm's own joints, from a nearby seed.

An iteration is one forward-kinematics pass and a 6x6 solve (~25 us), so following a continuous
tcp path (a synthesised screw or straight move, a teleop operator's hand) costs little per step. No
restarts and no collision checks: a solve that does not converge returns None and the caller
decides. Deterministic: the result depends only on the target and the seed.
"""

from __future__ import annotations

import mujoco
import numpy as np

from x2.base.arrays import Floats, Ints
from x2.base.vectors import norm
from x2.envspec.env import ArmSpec
from x2.sim.backend import Backend


class ArmDLS:
    """Tcp pose -> joint angles for one arm chain of `model` (joints at `qadr`, tcp site `site`)."""

    def __init__(self, model: mujoco.MjModel, qadr: Ints, joint_range: Floats, site: int,
                 damping: float = 0.02, rot_weight: float = 0.25):
        m = model
        self.model = m
        self.data = mujoco.MjData(m)  # private: callers' data hold simulation or collision-check state
        self.qadr = np.asarray(qadr)
        self.dofs = np.array([m.jnt_dofadr[np.flatnonzero(m.jnt_qposadr == a)[0]] for a in self.qadr])
        self.lo, self.hi = np.array(joint_range[:, 0], float), np.array(joint_range[:, 1], float)
        self.site = site
        self.damping, self.rot_weight = damping, rot_weight  # rot_weight: metres per radian of error
        self._jp, self._jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        self.iterations = 0  # cumulative, for effort reports
        # Views of the data taken once (MjData's arrays never move; each access through the bindings makes a
        # new array). The Jacobian and error stay freshly built arrays each iteration: filling buffers in place
        # or slicing the columns changes the solutions in their last bits (BLAS takes other paths).
        d = self.data
        self._qpos, self._site_xpos, self._site_xmat = d.qpos, d.site_xpos[site], d.site_xmat[site].reshape(3, 3)

    @classmethod
    def for_arm(cls, model: mujoco.MjModel, arm: ArmSpec, **options: float) -> ArmDLS:
        jids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in arm.joints]
        site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, arm.tcp_site)
        return cls(model, model.jnt_qposadr[jids].copy(), model.jnt_range[jids].copy(), site, **options)

    @classmethod
    def of_backend(cls, backend: Backend, arm: ArmSpec, **options: float) -> ArmDLS:
        """`for_arm` on the backend's world as it is now (its MuJoCo view: the IK reads it, its caller need not)."""
        return cls.for_arm(backend.model, arm, **options)

    def fk(self, q: Floats) -> tuple[Floats, Floats]:
        """Tcp position and rotation matrix at arm angles `q` (the arm chain depends on nothing else, but for a
        mobile base, which stays where `data` has it)."""
        self.data.qpos[self.qadr] = q
        mujoco.mj_kinematics(self.model, self.data)
        return self.data.site_xpos[self.site].copy(), self.data.site_xmat[self.site].reshape(3, 3).copy()

    def solve(self, pos: Floats, rot: Floats, seed: Floats, *, iters: int = 40, pos_tol: float = 1e-3,
              rot_tol: float = np.deg2rad(1.0), max_step: float = 0.25, best_effort: bool = False,
              ) -> Floats | None:
        """Joint angles within limits putting the tcp at `pos` with rotation `rot`, or None if the
        iteration from `seed` does not converge in `iters` steps (each moves a joint by <= `max_step`).
        With `best_effort` the last iterate is returned instead of None (teleop: follow as far as the
        arm can, never jump)."""
        m, d = self.model, self.data
        q = np.clip(np.asarray(seed, dtype=np.float64), self.lo, self.hi)
        target = np.asarray(rot, dtype=np.float64)
        quat, vel = np.zeros(4), np.zeros(3)
        reg = self.damping ** 2 * np.eye(6)
        qpos, qadr, site_xpos, site_xmat = self._qpos, self.qadr, self._site_xpos, self._site_xmat
        jp, jr, dofs, w = self._jp, self._jr, self.dofs, self.rot_weight
        for _ in range(iters):
            self.iterations += 1
            qpos[qadr] = q
            mujoco.mj_kinematics(m, d)
            err_p = pos - site_xpos
            mujoco.mju_mat2Quat(quat, (target @ site_xmat.T).ravel())
            mujoco.mju_quat2Vel(vel, quat, 1.0)  # world-frame rotation vector from the tcp to the target
            if norm(err_p) < pos_tol and norm(vel) < rot_tol:
                return q
            mujoco.mj_comPos(m, d)  # mj_jacSite reads the com-based quantities it computes
            mujoco.mj_jacSite(m, d, jp, jr, self.site)
            jac = np.vstack([jp[:, dofs], w * jr[:, dofs]])
            err = np.concatenate([err_p, w * vel])
            step = jac.T @ np.linalg.solve(jac @ jac.T + reg, err)
            biggest = float(np.max(np.abs(step)))
            if biggest > max_step:
                step *= max_step / biggest
            q = np.clip(q + step, self.lo, self.hi)
        return q if best_effort else None
