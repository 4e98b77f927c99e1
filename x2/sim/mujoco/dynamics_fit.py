"""The twin's dynamics fitted to recordings (`x2 calibrate dynamics`): MuJoCo's system identification toolbox.

What is fitted, per joint of every arm: the position servo's stiffness as a scale `s` of the robot's own (kp =
s kp0, and kv = s kv0 with it: a servo's kv and the joint's damping both act on velocity, so they cannot both be
fitted apart; the scale comes from the stiffness, the rest of the velocity term is the joint's damping), the joint
damping, the armature and the friction loss, and the share of the servo's kv it keeps (fitted in the damping's
place on a joint that wants less velocity gain than the servo's own kv gives: gym-aloha's servos have none); per
arm the gravity-compensation share of its bodies; for the robot the command latency in whole control ticks. The
least squares starts from the robot's own values or, per joint, from a servo without kv held back by dry
friction, whichever a coarse grid of friction losses scores better (`_coarse_start`). The latency is an
integer: it is searched outside the continuous fit (each candidate scored at the current values, the fit run at
the best, the search repeated at the fitted values). `mujoco.sysid` holds the parameters and bounds, runs
MuJoCo's least-squares optimiser (`mujoco.minimize`) and gives the confidence intervals; the residual is the
recorded joint positions against the twin's, stepped with `mujoco.rollout` from each recording's first measured
state under its commands.

The arms are independent when the robot stands still and touches nothing, so each is fitted alone in a model
of that arm alone (the other arms deleted, contacts off: the motions are in free space), which costs a
fraction of the whole world.
"""

from __future__ import annotations

import importlib
import io
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np

from x2.base.arrays import Bools, Floats, Ints
from x2.envspec.action import GRIPPER_SUFFIX
from x2.envspec.env import ArmSpec, JointDynamics, RobotSpec, TwinCalibration
from x2.sim.mujoco.robot import robot_mjcf_spec

FIELDS = ("kp", "kv", "damping", "armature", "frictionloss")
MAX_LATENCY = 6  # control ticks searched (0.2 s at 30 fps)
# the servo scale s: wide, since another model's servos may be 20 times softer than x2's (gym-aloha's forearm roll:
# kp 10 against x2's 200)
SCALE_BOUNDS = (0.02, 5.0)


@dataclass(frozen=True)
class Recording:
    """One recorded trajectory: the commands in the robot's action layout and the measured joint positions."""

    episode: int
    action: Floats  # (T, A)
    names: tuple[str, ...]  # the measured columns' joint names
    measured: Floats  # (T, J) rad (or m)
    dt: float  # s between ticks: the recording's own (a real robot's rate need not be the twin's)


@dataclass(frozen=True)
class ParamValue:
    name: str  # e.g. left_waist.kp
    nominal: float
    value: float
    interval: float  # 95 % confidence half-width (inf: not identifiable from these recordings; nan: held, not fitted)


@dataclass
class Errors:
    """Per trajectory: joint RMS (rad) per joint and TCP position errors (m) per tick."""

    rms: dict[str, list[float]] = field(default_factory=dict)  # joint -> one RMS per trajectory
    tcp: list[Floats] = field(default_factory=list)  # per trajectory, (T,) m, every arm's ticks together


@dataclass
class FitResult:
    calibration: TwinCalibration  # the fitted values (name and digest left for the writer)
    latency_ticks: int
    params: list[ParamValue]
    before: dict[str, Errors]  # "fitted" / "held_out"
    after: dict[str, Errors]
    steps: int  # physics steps simulated by the fit, evaluations included
    traces: list[tuple[int, tuple[str, ...], Floats, Floats, Floats]]  # (episode, joints, measured, before, after)


Progress = Callable[[str], None]



# By name, when a fit starts: mujoco.sysid carries a py.typed marker, and a static import of it makes mypy read all
# of the untyped mujoco package as typed (what x2 takes from either is Any, like the rest of MuJoCo); and it loads
# plotly, jinja2 and scipy, a second of start-up every x2 command would otherwise pay.
def _sysid() -> Any:
    return importlib.import_module("mujoco.sysid")


def _rollout() -> Any:
    return importlib.import_module("mujoco.rollout")


class ArmModel:
    """One arm alone, ready to roll out: its model, the addresses of its joints, servos and bodies, and the
    robot's own values of what is fitted (the nominal)."""

    def __init__(self, robot: RobotSpec, arm: ArmSpec, timestep: float, substeps: int):
        spec = robot_mjcf_spec(robot)
        for other in robot.arms:
            if other.name != arm.name:
                _delete_arm(spec, other.name)
        spec.option.timestep = timestep
        spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
        spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
        self.model = spec.compile()
        m = self.model
        self.arm, self.substeps = arm, substeps
        self.joints = arm.joints
        jids = [m.joint(j).id for j in arm.joints]
        self.qadr = np.array([m.jnt_qposadr[j] for j in jids])
        self.dadr = np.array([m.jnt_dofadr[j] for j in jids])
        self.servos = np.array([m.actuator(a).id for a in arm.actuators])
        self.gripper = m.actuator(arm.gripper_actuator).id
        self.bodies = np.array([b for b in range(m.nbody) if m.body(b).name.startswith(f"{arm.name}_")])
        self.tcp = m.site(arm.tcp_site).id
        self.kp0 = m.actuator_gainprm[self.servos, 0].copy()
        self.kv0 = -m.actuator_biasprm[self.servos, 2].copy()
        self.damping0 = m.dof_damping[self.dadr].copy()
        self.armature0 = m.dof_armature[self.dadr].copy()
        self.friction0 = m.dof_frictionloss[self.dadr].copy()
        self.gravcomp0 = float(m.body_gravcomp[self.bodies].max()) if len(self.bodies) else 0.0
        self.nstate = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        self._pool: list[mujoco.MjModel] = []
        self._pool_data: list[mujoco.MjData] = []
        g = robot.gripper
        self.gripper_ctrl = (g.closed_ctrl, g.open_ctrl - g.closed_ctrl)
        # a real recording measures the opening, not the fingers: on a slide gripper each finger stands at the
        # position its command would give it (x2/envspec/recording_table.py reads an opening back the same way)
        self.fingers = arm.gripper_joints if g.drive == "slide" else ()
        self.lo, self.hi = m.actuator_ctrlrange[:, 0].copy(), m.actuator_ctrlrange[:, 1].copy()

    def nominal(self) -> Floats:
        """The parameter vector of the robot's own values: per joint (scale, damping, armature, friction, kv
        share), then the gravity-compensation share."""
        n = len(self.joints)
        x = np.concatenate([np.ones(n), self.damping0, self.armature0, self.friction0, np.ones(n), [self.gravcomp0]])
        return np.asarray(x, dtype=np.float64)

    def models(self, xs: Floats) -> list[mujoco.MjModel]:
        """One model per column of `xs` (n_params, k), reused from a pool."""
        while len(self._pool) < xs.shape[1]:
            model = mujoco.MjModel.__copy__(self.model)
            self._pool.append(model)
            self._pool_data.append(mujoco.MjData(model))
        out = []
        n = len(self.joints)
        for i in range(xs.shape[1]):
            x, m = xs[:, i], self._pool[i]
            s = x[:n]
            m.actuator_gainprm[self.servos, 0] = s * self.kp0
            m.actuator_biasprm[self.servos, 1] = -s * self.kp0
            m.actuator_biasprm[self.servos, 2] = -s * self.kv0 * x[4 * n:5 * n]
            m.dof_damping[self.dadr] = x[n:2 * n]
            m.dof_frictionloss[self.dadr] = x[3 * n:4 * n]
            m.body_gravcomp[self.bodies] = x[5 * n]
            if not np.array_equal(m.dof_armature[self.dadr], x[2 * n:3 * n]):
                m.dof_armature[self.dadr] = x[2 * n:3 * n]
                # (the constants MuJoCo derives from the inertia at compile time, the joints' inverse weights among
                # them, follow the armature as the compiled calibrated twin's do: friction loss is a soft constraint
                # whose softness scales with the inverse weight, and a light link's differs from x2's 100-fold)
                mujoco.mj_setConst(m, self._pool_data[i])
            out.append(m)
        return out

    def steps(self, rec: Recording) -> tuple[Ints, Ints]:
        """(the recording's tick at every physics step, the physics step that ends every tick after the first):
        a recording at the twin's rate has `substeps` steps a tick; one at another rate is sampled at the nearest
        step (a 50 Hz recording in a twin of 1/480 s steps: 9 or 10 steps a tick)."""
        ts = float(self.model.opt.timestep)
        n = len(rec.action)
        if abs(rec.dt - self.substeps * ts) < 1e-9:
            total = (n - 1) * self.substeps
            return np.arange(total) // self.substeps, np.arange(1, n) * self.substeps - 1
        total = int(round((n - 1) * rec.dt / ts))
        tick = np.minimum(((np.arange(total) + 0.5) * ts / rec.dt).astype(int), n - 2)
        ends = np.clip(np.round(np.arange(1, n) * rec.dt / ts).astype(int) - 1, 0, total - 1)
        return tick, ends

    def controls(self, rec: Recording, arm_cols: Sequence[int], gripper_col: int, latency: int) -> Floats:
        """The servos' commands per physics step: tick t's command is the recording's command latency ticks
        earlier (its first command before that), held for the tick."""
        m = self.model
        tick, _ = self.steps(rec)
        src = np.clip(tick - latency, 0, None)
        ctrl = np.zeros((len(tick), m.nu))
        ctrl[:, self.servos] = rec.action[src][:, arm_cols]
        g = np.clip(rec.action[src, gripper_col], 0.0, 1.0)
        ctrl[:, self.gripper] = self.gripper_ctrl[0] + g * self.gripper_ctrl[1]
        return np.clip(ctrl, self.lo, self.hi)

    def initial_state(self, rec: Recording) -> Floats:
        m = self.model
        data = mujoco.MjData(m)
        for j, name in enumerate(rec.names):
            i = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
            if i >= 0:
                data.qpos[m.jnt_qposadr[i]] = rec.measured[0, j]
            elif name == f"{self.arm.name}{GRIPPER_SUFFIX}" and not any(f in rec.names for f in self.fingers):
                for finger in self.fingers:
                    adr = m.jnt_qposadr[m.joint(finger).id]
                    data.qpos[adr] = self.gripper_ctrl[0] + rec.measured[0, j] * self.gripper_ctrl[1]
        state = np.empty(self.nstate)
        mujoco.mj_getState(m, data, state, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        return state

    def tcp_positions(self, qpos_arm: Floats) -> Floats:
        """(T, 3) TCP positions for (T, joints) arm joint positions (the gripper where the model starts it)."""
        m = self.model
        data = mujoco.MjData(m)
        out = np.empty((len(qpos_arm), 3))
        for t, q in enumerate(qpos_arm):
            data.qpos[self.qadr] = q
            mujoco.mj_kinematics(m, data)
            out[t] = data.site_xpos[self.tcp]
        return out


def _delete_arm(spec: mujoco.MjSpec, arm: str) -> None:
    """An arm's bodies (and its gripper) and what names them, gone from a robot's spec."""
    prefix = f"{arm}_"
    for body in list(spec.worldbody.find_all(mujoco.mjtObj.mjOBJ_BODY)):
        parent = body.parent
        if body.name.startswith(prefix) and not (parent is not None and parent.name.startswith(prefix)):
            spec.delete(body)
    for group, attrs in (("actuators", ("target",)), ("equalities", ("name1", "name2")), ("sensors", ("objname",)),
                         ("excludes", ("bodyname1", "bodyname2")), ("tendons", ("name",))):
        for element in list(getattr(spec, group)):
            if any(str(getattr(element, a, "")).startswith(prefix) for a in attrs):
                spec.delete(element)


class ArmFit:
    """The fit of one arm: its model, its recordings' columns, and the rollouts (with their step count)."""

    def __init__(self, arm: ArmModel, action_names: Sequence[str], recs: Sequence[Recording]):
        self.arm, self.recs = arm, list(recs)
        self.arm_cols = [action_names.index(j) for j in arm.joints]
        self.gripper_col = action_names.index(f"{arm.arm.name}_gripper")
        self.meas_cols = [[r.names.index(j) for j in arm.joints] for r in recs]
        self.init = np.stack([arm.initial_state(r) for r in recs])
        self.ends = [arm.steps(r)[1] for r in recs]
        self.steps = 0
        self.pool = _rollout().Rollout(nthread=2)
        self.datas = [mujoco.MjData(arm.model) for _ in range(2)]
        self.latency = 0
        self._ctrl: dict[int, list[Floats]] = {}

    def ctrl(self, latency: int) -> list[Floats]:
        if latency not in self._ctrl:
            self._ctrl[latency] = [self.arm.controls(r, self.arm_cols, self.gripper_col, latency) for r in self.recs]
        return self._ctrl[latency]

    def predict(self, xs: Floats, latency: int) -> list[list[Floats]]:
        """Per column of `xs`, per recording, the predicted arm joint positions (T, joints) (row 0 measured)."""
        models = self.arm.models(xs)
        ctrls = self.ctrl(latency)
        out: list[list[Floats]] = [[] for _ in models]
        for r, rec in enumerate(self.recs):  # recordings differ in length: one batch of columns per recording
            nstep = len(ctrls[r])
            state, _ = self.pool.rollout(models, self.datas, np.repeat(self.init[r:r + 1], len(models), axis=0),
                                         np.repeat(ctrls[r][None], len(models), axis=0), nstep=nstep)
            self.steps += nstep * len(models)
            ticks = state[:, self.ends[r]][:, :, 1 + self.arm.qadr]
            for c in range(len(models)):
                first = rec.measured[:1, self.meas_cols[r]]
                out[c].append(np.concatenate([first, ticks[c]]))
        return out

    def residuals(self, xs: Floats, latency: int) -> list[Floats]:
        """Per recording, (T-1) x joints residuals (rad) stacked per column: (n, k)."""
        preds = self.predict(xs, latency)
        res = []
        for r, rec in enumerate(self.recs):
            meas = rec.measured[1:, self.meas_cols[r]]
            res.append(np.stack([(p[r][1:] - meas).ravel() for p in preds], axis=1) / np.sqrt(meas.size))
        return res

    def cost(self, x: Floats, latency: int) -> float:
        return float(sum(np.sum(r ** 2) for r in self.residuals(x[:, None], latency)))


# Armature is freed only when that explains this much more: of what the first stage left, and of the error the fit
# started from (a joint without a gravity load, a waist, responds alike to (s kp, s kv, s damping, s friction,
# s (link inertia + armature)) for every s: with the armature free, the scale drifts along that valley; held at
# the robot's own value, the link's known inertia pins the scale)
ARMATURE_GAIN = (0.1, 1e-3)


def fit_arm(fit: ArmFit, progress: Progress, max_iter: int) -> tuple[Floats, int, list[ParamValue]]:
    """(parameter vector, latency ticks, parameter table) fitted for one arm: first with every armature held at
    the robot's own value and every servo's kv at its scale of the robot's own, then with the armatures free too
    and, on a joint whose damping went to 0, the servo's kv share in its place; kept only when that explains
    ARMATURE_GAIN more."""
    a = fit.arm
    n = len(a.joints)
    x0 = a.nominal()
    lo, hi = _bounds(a)
    names = [f"{j}.{f}" for f in ("scale", "damping", "armature", "frictionloss", "kv_share") for j in a.joints]
    names.append(f"{a.arm.name}.gravcomp")
    x, latency = x0, _best_latency(fit, x0, progress)
    start_cost = fit.cost(x0, latency)
    x = _coarse_start(fit, x, hi, latency, progress)
    first = _free(x, lo, hi, armature=False)
    tried: set[int] = set()
    while latency not in tried:
        tried.add(latency)
        x, result = _optimise(fit, names, x, first, lo, hi, latency, max_iter, progress)
        latency = _best_latency(fit, x, progress)
    cost = fit.cost(x, latency)
    second = _free(x, lo, hi, armature=True)
    slack = second[4 * n:5 * n]
    x_free, result_free = _optimise(fit, names, x, second, lo, hi, latency, max_iter, progress)
    cost_free = fit.cost(x_free, latency)
    gain, floor = ARMATURE_GAIN
    what = "armature" + (f" and the kv share of {', '.join(np.asarray(a.joints)[slack])}" if slack.any() else "")
    if cost - cost_free > max(gain * cost, floor * start_cost):
        progress(f"{a.arm.name}: {what} freed: cost {cost:.3e} -> {cost_free:.3e}")
        x, result, mask = x_free, result_free, second
    else:
        progress(f"{a.arm.name}: {what} held at the robot's own (freeing: cost {cost:.3e} -> {cost_free:.3e})")
        mask = first
    fit.latency = latency
    res = fit.residuals(x[:, None], latency)
    jac = np.asarray(result.jac) if result.jac is not None else np.zeros((0, int(mask.sum())))
    half = np.full(len(x), np.nan)  # (nan: held, not fitted)
    try:
        half[mask] = _sysid().calculate_intervals([r[:, 0] for r in res], jac)[1]
    except (np.linalg.LinAlgError, ValueError):
        half[mask] = np.inf
    table = [ParamValue(name, float(x0[i]), float(x[i]), float(half[i])) for i, name in enumerate(names)]
    return x, latency, table


def _free(x: Floats, lo: Floats, hi: Floats, armature: bool) -> Bools:
    """Which parameters a stage fits: the armatures only when `armature`; per joint one velocity term, the damping
    or (where the servo's kv share is below 1, or the damping went to its bound: the recordings want less
    velocity gain than the servo's own kv gives; gym-aloha's servos have none) the kv share, never both (they act
    alike)."""
    n = (len(x) - 1) // 5
    kv = (x[4 * n:5 * n] < 1.0) | (x[n:2 * n] <= lo[n:2 * n] + 1e-3 * (hi[n:2 * n] - lo[n:2 * n]))
    free = np.ones(len(x), dtype=bool)
    free[n:2 * n] = ~kv
    free[2 * n:3 * n] = armature
    free[4 * n:5 * n] = kv
    return free


# the coarse start's friction losses: the upper bound and FRICTION_LEVELS more, each 1/FRICTION_STEP of the one
# above, none below the robot's own (x2's: 100 N m down to 0.1)
FRICTION_STEP, FRICTION_LEVELS = 2.0, 10


def _coarse_start(fit: ArmFit, x: Floats, hi: Floats, latency: int, progress: Progress) -> Floats:
    """The start of the least squares: per joint, the robot's own values or the other valley, a servo without
    velocity gain (kv share 0, no damping) held back by dry friction, at the friction loss of least cost on a
    coarse ladder (FRICTION_STEP apart from the upper bound down); for every joint alike first, then per joint in
    turn (the others held; twice over). gym-aloha's servos have no kv and 30-60 N m of friction loss instead:
    least squares from the robot's values stays in the robot's valley (it drives the friction loss to 0 against
    the servo's kv), and a friction loss above the largest force the servo asks of it never slips and leaves no
    gradient to climb (a soft constraint's force below its bound does not depend on it). A robot near its own
    values (the ground truth) keeps them: the grid is no better there."""
    n = (len(x) - 1) // 5
    x = x.copy()
    own = (fit.arm.friction0, fit.arm.damping0)

    def cheapest(x: Floats, joints: Sequence[int]) -> Floats:
        """x, or the cheapest of the grid's points for `joints` (all alike)."""
        cols = [x]
        for k in range(-1, FRICTION_LEVELS + 1):
            c = x.copy()
            for j in joints:
                if k < 0:
                    c[3 * n + j], c[4 * n + j], c[n + j] = own[0][j], 1.0, own[1][j]
                else:
                    friction = max(hi[3 * n + j] / FRICTION_STEP ** k, own[0][j])
                    c[3 * n + j], c[4 * n + j], c[n + j] = friction, 0.0, 0.0
            cols.append(c)
        xs = np.stack(cols, axis=1)
        costs = np.array([np.sum(r ** 2, axis=0) for r in fit.residuals(xs, latency)]).sum(axis=0)
        return xs[:, int(np.argmin(costs))].copy()

    x = cheapest(x, range(n))
    for _ in range(2):
        before = x
        for j in range(n):
            x = cheapest(x, [j])
        if np.array_equal(before, x):
            break
    desc = ", ".join(f"{j} {x[3 * n + i]:.3g} N m" + ("" if x[4 * n + i] else " (no kv)")
                     for i, j in enumerate(fit.arm.joints))
    progress(f"{fit.arm.arm.name}: coarse start: friction loss {desc} (cost {fit.cost(x, latency):.3e})")
    return x


def _optimise(fit: ArmFit, names: Sequence[str], x: Floats, free: Bools, lo: Floats, hi: Floats, latency: int,
              max_iter: int, progress: Progress) -> tuple[Floats, Any]:
    """One run of sysid's optimiser over the `free` parameters from `x` (the others held); (new x, its result)."""
    arm = fit.arm.arm.name
    progress(f"{arm}: fitting {int(free.sum())} parameters at latency {latency} ticks")
    params = _sysid().ParameterDict()
    for i in np.flatnonzero(free):
        params.add(_sysid().Parameter(names[i], float(np.clip(x[i], lo[i], hi[i])), float(lo[i]), float(hi[i])))
    base = x.copy()

    def full(xv: Floats) -> Floats:
        xs = xv if xv.ndim == 2 else xv[:, None]
        out = np.repeat(base[:, None], xs.shape[1], axis=1)
        out[free] = xs
        return out

    def residual_fn(xv: Floats, _p: Any) -> tuple[list[Floats], None, None]:
        res = fit.residuals(full(xv), latency)
        return ([r if xv.ndim == 2 else r[:, 0] for r in res], None, None)

    def on_iter(trace: list[object]) -> None:
        progress(f"{arm}: iteration {len(trace)}, cost {getattr(trace[-1], 'objective', float('nan')):.3e}")

    # (sysid warns through absl's logger, on stderr, of a start at a bound: the gravity share starts at its
    # bound, 1, on every x2 arm; this command's stderr is for its one error line)
    logging.getLogger("absl").setLevel(logging.ERROR)
    opt, result = _sysid().optimize(params, residual_fn, optimizer="mujoco", verbose=False, max_iters=max_iter,
                                 x_scale="jac", output=io.StringIO(), iter_callback=on_iter)
    return full(np.asarray(opt.as_vector(), dtype=np.float64))[:, 0], result


def _bounds(a: ArmModel) -> tuple[Floats, Floats]:
    n = len(a.joints)
    lo = np.concatenate([np.full(n, SCALE_BOUNDS[0]), np.zeros(4 * n), [0.0]])
    # (friction up to 100 N m: gym-aloha's joints carry 30-60 N m of it, standing in for servo damping)
    hi = np.concatenate([np.full(n, SCALE_BOUNDS[1]), np.maximum(10 * a.damping0, 50.0),
                         np.maximum(10 * a.armature0, 0.5), np.maximum(10 * a.friction0, 100.0), np.ones(n), [1.0]])
    return lo, hi


def _best_latency(fit: ArmFit, x: Floats, progress: Progress) -> int:
    costs = [fit.cost(x, lat) for lat in range(MAX_LATENCY + 1)]
    best = int(np.argmin(costs))
    progress(f"{fit.arm.arm.name}: latency search: best {best} ticks (cost {costs[best]:.3e}, "
             f"0 ticks: {costs[0]:.3e})")
    return best


def score_recordings(fit: ArmFit, recs: Sequence[Recording], x: Floats, latency: int, into: Errors) -> list[Floats]:
    """Joint RMS and TCP errors of `recs` under `x`, added to `into`; the predictions returned."""
    probe = fit  # (the same model and rollouts, other recordings: swapped in below)
    saved = probe.recs, probe.meas_cols, probe.init, probe._ctrl, probe.ends
    probe.recs = list(recs)
    probe.ends = [fit.arm.steps(r)[1] for r in recs]
    probe.meas_cols = [[r.names.index(j) for j in fit.arm.joints] for r in recs]
    probe.init = np.stack([fit.arm.initial_state(r) for r in recs])
    probe._ctrl = {}
    try:
        preds = probe.predict(x[:, None], latency)[0]
    finally:
        probe.recs, probe.meas_cols, probe.init, probe._ctrl, probe.ends = saved
    for r, rec in enumerate(recs):
        meas = rec.measured[:, [rec.names.index(j) for j in fit.arm.joints]]
        for j, joint in enumerate(fit.arm.joints):
            into.rms.setdefault(joint, []).append(float(np.sqrt(np.mean((preds[r][:, j] - meas[:, j]) ** 2))))
        tcp = np.linalg.norm(fit.arm.tcp_positions(preds[r]) - fit.arm.tcp_positions(meas), axis=1)
        into.tcp.append(tcp)
    return preds


def fit_dynamics(robot: RobotSpec, action_names: Sequence[str], timestep: float, substeps: int,
                 fitted: Sequence[Recording], held_out: Sequence[Recording], progress: Progress,
                 max_iter: int = 30, arms: Sequence[str] = ()) -> FitResult:
    """Fit the arms of `robot` (`arms`; all when empty) to the `fitted` recordings; errors before and after on
    both sets."""
    joints: list[JointDynamics] = []
    gravcomp: list[tuple[str, float]] = []
    table: list[ParamValue] = []
    before = {"fitted": Errors(), "held_out": Errors()}
    after = {"fitted": Errors(), "held_out": Errors()}
    latencies = []
    steps = 0
    traces: list[tuple[int, tuple[str, ...], Floats, Floats, Floats]] = []
    # latencies are searched in the recordings' ticks and written in the twin's control ticks
    rec_dt = fitted[0].dt if fitted else substeps * timestep
    per_tick = rec_dt / (substeps * timestep)
    base_latency = round((robot.calibration.latency_ticks if robot.calibration is not None else 0) / per_tick)
    for arm in robot.arms:
        if arms and arm.name not in arms:
            continue
        progress(f"{arm.name}: building the arm alone")
        model = ArmModel(robot, arm, timestep, substeps)
        fit = ArmFit(model, action_names, fitted)
        x, latency, params = fit_arm(fit, progress, max_iter)
        latencies.append(latency)
        table += params
        n = len(arm.joints)
        for j, name in enumerate(arm.joints):
            s = float(x[j])
            joints.append(JointDynamics(name, kp=s * float(model.kp0[j]), kv=s * float(model.kv0[j] * x[4 * n + j]),
                                        damping=float(x[n + j]), armature=float(x[2 * n + j]),
                                        frictionloss=float(x[3 * n + j])))
        gravcomp.append((arm.name, float(x[5 * n])))
        progress(f"{arm.name}: evaluating before and after")
        for part, recs in (("fitted", fitted), ("held_out", held_out)):
            if not recs:
                continue
            b = score_recordings(fit, recs, model.nominal(), base_latency, before[part])
            a = score_recordings(fit, recs, x, latency, after[part])
            if part == "held_out" or not held_out:
                for r, rec in enumerate(recs[:2]):
                    meas = rec.measured[:, [rec.names.index(j) for j in arm.joints]]
                    traces.append((rec.episode, arm.joints, meas, b[r], a[r]))
        steps += fit.steps
    # one latency for the robot (one command stream): the arms' most common
    latency = max(set(latencies), key=latencies.count) if latencies else 0
    cal = TwinCalibration(name="", digest="", latency_ticks=round(latency * per_tick), joints=tuple(joints),
                          gravcomp=tuple(gravcomp))
    return FitResult(cal, cal.latency_ticks, table, before, after, steps, traces)
