"""The wrist cameras see what a grasp policy needs: both fingertips and the tcp inside the picture, open
and closed, with the gripper's own geoms covering only a small part of it (x2/robots/artixon/gripper_*.xml).
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from x2.sim import make_backend
from x2.spec import load_env

H, W = 96, 128
MARGIN = 0.03  # of the image size: a fingertip on the border is not "in view"
MAX_COVER = 0.2  # measured <= 0.16; the palm-level mount these replaced covered 0.27-0.36
TIP_GEOMS = ("finger_a", "finger_b", "hook_a", "hook_b")


def _model(robot: str) -> mujoco.MjModel:
    backend = make_backend(load_env("fruit_in_microwave", robot=robot))
    try:
        backend.reset(0)
        return mujoco.MjModel.from_xml_string(backend.model_xml())
    finally:
        backend.close()


def _project(m: mujoco.MjModel, d: mujoco.MjData, cam: int, point: np.ndarray) -> tuple[float, float, float]:
    """(column, row, depth) of a world point through MuJoCo's pinhole camera (looks along -z, y up)."""
    rel = d.cam_xmat[cam].reshape(3, 3).T @ (point - d.cam_xpos[cam])
    f = 0.5 * H / math.tan(math.radians(m.cam_fovy[cam]) / 2)
    return W / 2 + f * rel[0] / -rel[2], H / 2 - f * rel[1] / -rel[2], -rel[2]


def _fingertip_corners(m: mujoco.MjModel, d: mujoco.MjData, arm: str) -> list[np.ndarray]:
    """The four corners at the far end (along the gripper's approach axis) of each finger and hook box."""
    gripper = m.body(f"{arm}_gripper").id
    rot, origin = d.xmat[gripper].reshape(3, 3), d.xpos[gripper]
    out: list[np.ndarray] = []
    for name in TIP_GEOMS:
        gid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, f"{arm}_{name}")
        if gid < 0:
            continue  # G has no hooks
        size, grot = m.geom_size[gid], d.geom_xmat[gid].reshape(3, 3)
        corners = [d.geom_xpos[gid] + grot @ (size * np.array([i, j, k]))
                   for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)]
        out += sorted(corners, key=lambda c: float(((c - origin) @ rot)[2]))[-4:]
    return out


@pytest.mark.parametrize("robot", ["artixon-g", "artixon-h"])
def test_wrist_cameras_see_both_fingertips_and_the_tcp(robot: str) -> None:
    m = _model(robot)
    d = mujoco.MjData(m)
    renderer = mujoco.Renderer(m, H, W)
    renderer.enable_segmentation_rendering()
    try:
        for arm in ("left", "right"):
            cam = m.camera(f"{arm}_wrist").id
            joints = [m.joint(f"{arm}_finger_{s}") for s in "ab"]
            gripper_bodies = {m.body(f"{arm}_{b}").id for b in ("gripper", "finger_a", "finger_b")}
            own = [g for g in range(m.ngeom) if m.geom_bodyid[g] in gripper_bodies]
            for opening in (float(joints[0].range[1]), 0.0):
                for joint in joints:
                    d.qpos[joint.qposadr[0]] = opening
                mujoco.mj_kinematics(m, d)
                mujoco.mj_camlight(m, d)
                where = f"{robot} {arm} opening {opening}"
                tips = _fingertip_corners(m, d, arm)
                assert len(tips) >= 8, where
                for u, v, depth in [_project(m, d, cam, p) for p in tips] + \
                        [_project(m, d, cam, d.site_xpos[m.site(f"{arm}_tcp").id])]:
                    assert depth > 0 and MARGIN * W < u < (1 - MARGIN) * W and MARGIN * H < v < (1 - MARGIN) * H, \
                        (where, u, v)
                renderer.update_scene(d, camera=cam)
                seg = renderer.render()
                mine = np.isin(seg[..., 0], own) & (seg[..., 1] == int(mujoco.mjtObj.mjOBJ_GEOM))
                assert mine.mean() < MAX_COVER, (where, float(mine.mean()))
                left_half, right_half = mine[:, : W // 2].any(), mine[:, W // 2:].any()
                assert left_half and right_half, where  # one finger on each side of the picture
    finally:
        renderer.close()
