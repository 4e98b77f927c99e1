"""Inverse kinematics for one arm's tcp site with mink.

Differential IK (a QP per iteration, joint limits as constraints, a light posture pull toward a
reference configuration) iterated to convergence, restarted from rng-sampled seeds when it stalls.
Only the chosen arm moves; everything else in the model stays at the world's current qpos. The
result depends only on the inputs (the QP solver is deterministic), so attempts repeat exactly.

Modes: a full pose (position + tool orientation), or `axis_down=True`: position plus the tool's
+z axis pointing straight down with the rotation about it left free, as top grasps want.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import IKError
from x2.sim.mujoco.collision import CollisionWorld

DOWN = np.array([0.0, 0.0, -1.0])
LIMIT_SHRINK = 0.02  # rad kept from each joint limit for seeds, so the QP starts strictly feasible
BASE_STILL = 1e4  # the damping cost on a mobile base's joints in an arm's IK (the frame task costs 1)


@dataclass(frozen=True)
class IKOptions:
    pos_tol: float = 2e-3  # m
    rot_tol: float = np.deg2rad(2.0)  # rad
    max_iters: int = 150  # per seed; converging solves take 15-40
    restarts: int = 12  # rng-sampled seeds after the reference seed
    posture_cost: float = 1e-2  # relative to 1.0 on the frame task: breaks ties, never beats the target
    damping: float = 1e-3  # Levenberg-Marquardt damping of the QP, keeps singular poses stable
    collision_free: bool = True  # reject solutions in collision in the world


class ArmIK:
    """IK solver for one arm of a `CollisionWorld` (mink on a private copy of the world's model).

    mink is imported where it is used: few skills solve IK with it, and importing it (with scipy) costs
    ~0.4 s, which every synthesis worker would pay at start-up."""

    def __init__(self, world: CollisionWorld, arm: str, options: IKOptions | None = None):
        import mink

        self.world, self.arm = world, arm
        self.options = options or IKOptions()
        model = world.model
        self.qadr = world.arm_qadr[arm]
        self.dofs = np.array([model.jnt_dofadr[model.jnt_qposadr == a][0] for a in self.qadr])
        self.lo, self.hi = world.joint_range[arm][:, 0], world.joint_range[arm][:, 1]
        self.config = mink.Configuration(model)
        site = model.site(world.tcp_site[arm]).name
        self.frame = mink.FrameTask(site, "site", position_cost=1.0, orientation_cost=1.0, lm_damping=1e-3)
        self.posture = mink.PostureTask(model, cost=self.options.posture_cost)
        self.limits = [mink.ConfigurationLimit(model)]
        self.tasks = [self.frame, self.posture]
        base = world.env.robot.base
        if base is not None:
            # the QP would reach with a mobile base's joints (and only the arm's step is taken): they cost so
            # much that the arm alone solves it
            cost = np.zeros(model.nv)
            cost[[model.jnt_dofadr[world.model.joint(j).id] for j in base.joints]] = BASE_STILL
            self.tasks.append(mink.DampingTask(model, cost))
        self._site = site

    def solve(self, pos: Floats, rot: Floats | None = None, *, rng: np.random.Generator,
              q_ref: Floats | None = None, axis_down: bool = False) -> Floats:
        """Joint angles putting the tcp at `pos` (world) with rotation matrix `rot` (or tool axis down,
        or position only if both are unset). Raises `IKError` if no seed converges."""
        import mink

        o = self.options
        pos = np.asarray(pos, dtype=np.float64)
        base = self.world.qpos
        q_ref = self.world.arm_q(self.arm) if q_ref is None else np.asarray(q_ref, dtype=np.float64)
        target_rot: Floats
        ori_cost: Floats
        if rot is not None:
            target_rot, ori_cost = np.asarray(rot, dtype=np.float64), np.ones(3)
        elif axis_down:
            # any rotation with z down; the zero cost on the local z twist leaves the yaw free
            target_rot, ori_cost = np.array([[1.0, 0, 0], [0, -1.0, 0], [0, 0, -1.0]]), np.array([1.0, 1.0, 0.0])
        else:
            target_rot, ori_cost = np.eye(3), np.zeros(3)
        self.frame.set_orientation_cost(ori_cost)
        self.frame.set_target(mink.SE3.from_rotation_and_translation(mink.SO3.from_matrix(target_rot), pos))
        posture_q = base.copy()
        posture_q[self.qadr] = q_ref
        self.posture.set_target(posture_q)
        seeds = [np.clip(q_ref, self.lo + LIMIT_SHRINK, self.hi - LIMIT_SHRINK)]
        seeds += [rng.uniform(self.lo + LIMIT_SHRINK, self.hi - LIMIT_SHRINK) for _ in range(o.restarts)]
        best = np.inf
        for seed in seeds:
            q = self._descend(base, seed)
            pos_err, rot_err = self._errors(q, base, pos, target_rot, ori_cost)
            best = min(best, pos_err)
            converged = pos_err <= o.pos_tol and rot_err <= o.rot_tol
            if converged and (not o.collision_free or not self.world.in_collision({self.arm: q})):
                return q
        raise IKError(f"arm {self.arm!r}: no IK solution for tcp at {np.round(pos, 3).tolist()} within "
                      f"{o.pos_tol * 1e3:.0f} mm / {np.rad2deg(o.rot_tol):.0f} deg after {len(seeds)} seeds "
                      f"(closest: {best * 1e3:.0f} mm){' without collision' if o.collision_free else ''}")

    def _descend(self, base: Floats, seed: Floats) -> Floats:
        import mink

        o = self.options
        q_full = base.copy()
        q_full[self.qadr] = seed
        self.config.update(q_full)
        dt = 1.0  # one full Newton-like step per iteration; ConfigurationLimit scales with dt
        for _ in range(o.max_iters):
            v = mink.solve_ik(self.config, self.tasks, dt, "daqp", damping=o.damping,
                              limits=self.limits)
            only_arm = np.zeros_like(v)
            only_arm[self.dofs] = v[self.dofs]  # the rest of the world never moves
            self.config.integrate_inplace(only_arm, dt)
            err = self.frame.compute_error(self.config)
            if np.linalg.norm(err[:3]) < 0.2 * o.pos_tol and np.linalg.norm(err[3:] * self.frame.cost[3:]) < 1e-4:
                break
        return np.clip(self.config.q[self.qadr], self.lo, self.hi)

    def _errors(self, q: Floats, base: Floats, pos: Floats, rot: Floats,
                ori_cost: Floats) -> tuple[float, float]:
        q_full = base.copy()
        q_full[self.qadr] = q
        self.config.update(q_full)
        t = self.config.get_transform_frame_to_world(self._site, "site")
        p, r = t.translation(), t.rotation().as_matrix()
        pos_err = float(np.linalg.norm(p - pos))
        if ori_cost[2] > 0:
            rot_err = float(np.arccos(np.clip((np.trace(rot.T @ r) - 1) / 2, -1.0, 1.0)))
        elif ori_cost[0] > 0:
            rot_err = float(np.arccos(np.clip(r[:, 2] @ rot[:, 2], -1.0, 1.0)))
        else:
            rot_err = 0.0
        return pos_err, rot_err

    def fk(self, q: Floats) -> tuple[Floats, Floats]:
        """Tcp position and rotation for arm angles `q` (the rest of the world as it is now)."""
        q_full = self.world.qpos
        q_full[self.qadr] = q
        self.config.update(q_full)
        t = self.config.get_transform_frame_to_world(self._site, "site")
        return t.translation(), t.rotation().as_matrix()


def site_pose(model: mujoco.MjModel, data: mujoco.MjData, site: str) -> tuple[Floats, Floats]:
    """A site's world position and rotation matrix from already-computed kinematics."""
    sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
    return data.site_xpos[sid].copy(), data.site_xmat[sid].reshape(3, 3).copy()
