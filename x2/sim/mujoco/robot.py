"""Load a robot description and mount its gripper on every arm.

The robot's MJCF becomes the root of the world spec, so its names stay exactly as authored
(``left_j1``, ``head``, ...) without an attach prefix; MuJoCo cannot save a model whose parts were
attached with an empty prefix. Grippers are attached at ``<arm>_flange`` with the prefix
``<arm>_``, which turns ``finger_a`` / ``gripper`` / ``tcp`` / ``wrist`` into ``left_finger_a`` /
``left_gripper`` / ``left_tcp`` / ``left_wrist``.
"""

from __future__ import annotations

from pathlib import Path

import mujoco

from x2.base.errors import NotFoundError, SpecError
from x2.envspec.env import RobotSpec
from x2.sim.mujoco.calibrated import apply_values
from x2.sim.mujoco.camera_calibration import apply_camera_calibration
from x2.sim.mujoco.linkage import linkage_gripper_spec
from x2.sim.mujoco.parts import arm_part_spec, gripper_part_spec


def load_mjcf(path: Path, what: str) -> mujoco.MjSpec:
    """Parse one MJCF file, turning a missing or broken file into a one-line x2 error."""
    if not path.is_file():
        raise NotFoundError(f"{what} MJCF not found: {path}")
    try:
        return mujoco.MjSpec.from_file(str(path))
    except ValueError as err:  # MuJoCo's parser reports XML and schema errors as ValueError
        first_line = str(err).strip().splitlines()[0]
        raise SpecError(str(path), None, "mjcf", first_line, f"a valid {what} MJCF") from None


def flange_site(arm: str) -> str:
    return f"{arm}_flange"


def gripper_prefix(arm: str) -> str:
    return f"{arm}_"


def mount_site(arm: str) -> str:
    return f"{arm}_mount"


def robot_mjcf_spec(robot: RobotSpec, calibrate: bool = True) -> mujoco.MjSpec:
    """The robot body with one gripper per arm, its base moved to ``robot.base_pos``; arms made from vendor
    parts are attached at ``<arm>_mount`` first (prefix ``<arm>_``: their flange site becomes
    ``<arm>_flange``); a twin calibration's values written in (unless `calibrate` is False)."""
    spec = _robot_spec(robot)
    if calibrate and robot.calibration is not None:
        apply_values(spec, robot, robot.calibration)
        if robot.calibration.cameras:
            apply_camera_calibration(spec, {c.name: c for c in robot.calibration.cameras},
                                     f"calibration {robot.calibration.name!r}")
    return spec


def _robot_spec(robot: RobotSpec) -> mujoco.MjSpec:
    spec = load_mjcf(robot.mjcf, f"robot {robot.name!r}")
    for body in spec.worldbody.bodies:
        body.pos = [p + o for p, o in zip(body.pos, robot.base_pos, strict=True)]
    if robot.base is not None:
        for name, limits in zip(robot.base.joints, robot.base.range, strict=True):
            joint = spec.joint(name)
            if joint is None:
                raise NotFoundError(f"robot {robot.name!r} ({robot.mjcf}) has no base joint {name!r}")
            joint.range, joint.limited = list(limits), mujoco.mjtLimited.mjLIMITED_TRUE
    g = robot.gripper
    in_arm = g.part if g.part is not None and g.part.in_arm else None
    for arm in robot.arms:
        if arm.part is not None:
            site = spec.site(mount_site(arm.name))
            if site is None:
                raise NotFoundError(f"robot {robot.name!r} ({robot.mjcf}) has no site {mount_site(arm.name)!r} "
                                    f"for its {arm.part.name} arm")
            spec.attach(arm_part_spec(arm.part, in_arm, g.closed_ctrl, g.open_ctrl), site=site,
                        prefix=gripper_prefix(arm.name))
    if in_arm is not None:
        return spec  # every arm brought its own
    sites = [s.name for s in spec.sites]
    for arm in robot.arms:
        site = flange_site(arm.name)
        if site not in sites:
            raise NotFoundError(f"robot {robot.name!r} ({robot.mjcf}) has no site {site!r}; sites: {sites}")
        # Each arm needs its own copy: attaching hands the child spec over to the parent.
        if g.part is None:
            gripper = load_mjcf(g.mjcf, f"gripper {g.kind!r}")
        elif g.part.linkage is not None:
            gripper = linkage_gripper_spec(g.part, g.closed_ctrl, g.open_ctrl)
        else:
            gripper = gripper_part_spec(g.part, g.closed_ctrl, g.open_ctrl)
        spec.attach(gripper, site=site, prefix=gripper_prefix(arm.name))
    return spec
