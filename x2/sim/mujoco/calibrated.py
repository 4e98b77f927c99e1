"""A twin calibration (x2/envspec/calibration.py) applied to a world, and refused when it makes the twin unstable.

The values go into the world's MJCF itself (servo gains in the actuators, damping, armature and friction loss on
the joints, the gravity-compensation share on an arm's bodies), so that an episode's stored world is the
calibrated world and its replay steps the same physics. The command latency goes in as the custom numeric
`x2_latency_ticks`: the backend (x2/sim/mujoco/backend.py) applies each tick's command that many ticks late, from
a delay line it fills with the reset's command; a recorded world carries the number, so its replay delays alike.
"""

from __future__ import annotations

import functools

import mujoco
import numpy as np

from x2.base.errors import SpecError
from x2.envspec.env import JointDynamics, RobotSpec, TwinCalibration

LATENCY_NUMERIC = "x2_latency_ticks"
STEP_RAD = 0.2  # the step every joint is commanded in the stability check
CHECK_S = 1.0  # how long the step response is simulated
# rad/s: a joint still moving faster than this in the last quarter of CHECK_S after a STEP_RAD step diverges or
# rings (a servo stiff for its timestep chatters between its force limits instead of blowing up)
SETTLED_RAD_S = 2.0


def arm_bodies(spec: mujoco.MjSpec, arm: str) -> list[mujoco.MjsBody]:
    """The bodies of an arm (and its gripper): x2 names them `<arm>_...`."""
    return [b for b in spec.bodies if b.name.startswith(f"{arm}_")]


def apply_values(spec: mujoco.MjSpec, robot: RobotSpec, cal: TwinCalibration) -> None:
    """Write `cal`'s values into a robot's world spec (names as x2/sim/mujoco/robot.py leaves them)."""
    slots = {j: (arm, i) for arm in robot.arms for i, j in enumerate(arm.joints)}
    for values in cal.joints:
        arm, i = slots[values.joint]
        joint = spec.joint(values.joint)
        servo = spec.actuator(arm.actuators[i])
        if values.kp is not None:
            servo.gainprm[0], servo.biasprm[1] = values.kp, -values.kp
        if values.kv is not None:
            servo.biasprm[2] = -values.kv
        if values.damping is not None:
            joint.damping = [values.damping, 0.0, 0.0]
        if values.armature is not None:
            joint.armature = values.armature
        if values.frictionloss is not None:
            joint.frictionloss = values.frictionloss
    for arm_name, share in cal.gravcomp:
        for body in arm_bodies(spec, arm_name):
            body.gravcomp = share
    if cal.latency_ticks:
        spec.add_numeric(name=LATENCY_NUMERIC, data=[float(cal.latency_ticks)], size=1)


def latency_ticks(model: mujoco.MjModel) -> int:
    """The command latency a world carries (0 without the numeric: every uncalibrated world)."""
    i = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_NUMERIC, LATENCY_NUMERIC)
    return 0 if i < 0 else int(model.numeric_data[model.numeric_adr[i]])


def check_stable(robot: RobotSpec, timestep: float) -> None:
    """Refuse, in one line naming the parameter, a calibration under which the robot alone does not settle
    after a step command: each joint's values are then tried alone to find the one that did it."""
    cal = robot.calibration
    if cal is None:
        return
    _check(robot, cal, timestep)


@functools.cache
def _check(robot: RobotSpec, cal: TwinCalibration, timestep: float) -> None:
    if _stable(robot, cal, timestep):
        return
    for j in cal.joints:
        for field in ("kp", "kv", "damping", "armature", "frictionloss"):
            value = getattr(j, field)
            if value is None:
                continue
            alone = TwinCalibration(cal.name, cal.digest, 0, (JointDynamics(j.joint, **{field: value}),), ())
            if not _stable(robot, alone, timestep):
                raise SpecError(f"calibration {cal.name!r}", None, f"dynamics.arms.{j.joint.split('_')[0]}.joints."
                                f"{j.joint}.{field}", f"{value:g}, which makes the twin unstable (its step response "
                                f"diverges at timestep {timestep:g} s)", "values under which every joint settles")
    raise SpecError(f"calibration {cal.name!r}", None, "dynamics", "values that together make the twin unstable "
                    "(no one of them alone does)", "values under which every joint settles")


def _stable(robot: RobotSpec, cal: TwinCalibration, timestep: float) -> bool:
    """Whether the robot under `cal` (no latency: a delay alone never diverges) follows a step of every joint from
    home without NaN, a MuJoCo warning, or a joint still moving faster than SETTLED_RAD_S at the end."""
    from x2.sim.mujoco.robot import robot_mjcf_spec

    spec = robot_mjcf_spec(robot, calibrate=False)
    apply_values(spec, robot, cal)
    spec.option.timestep = timestep
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    try:
        model = spec.compile()
    except ValueError:
        return False
    data = mujoco.MjData(model)
    qadr = [int(model.jnt_qposadr[model.joint(j).id]) for a in robot.arms for j in a.joints]
    ids = [int(model.actuator(n).id) for a in robot.arms for n in a.actuators]
    home = np.array([h for a in robot.arms for h in a.home])
    data.qpos[qadr] = home
    lo, hi = model.actuator_ctrlrange[ids, 0], model.actuator_ctrlrange[ids, 1]
    target = np.clip(home + STEP_RAD, lo, hi)
    data.ctrl[ids] = target
    steps = max(4, round(CHECK_S / timestep))
    fastest = 0.0
    with np.errstate(all="ignore"):
        mujoco.mj_step(model, data, nstep=steps - steps // 4)
        for _ in range(steps // 4):
            mujoco.mj_step(model, data)
            fastest = max(fastest, float(np.max(np.abs(data.qvel))))
    warned = any(data.warning[w].number for w in (mujoco.mjtWarning.mjWARN_BADQACC, mujoco.mjtWarning.mjWARN_BADQPOS,
                                                   mujoco.mjtWarning.mjWARN_BADQVEL))
    finite = np.isfinite(data.qpos).all() and np.isfinite(fastest)
    return bool(not warned and finite and fastest < SETTLED_RAD_S)
