"""The wrist cameras see what a grasp policy needs: both fingertips and the tcp inside the picture, open
and closed, with the gripper's own geoms covering only a small part of it; on every robot (x2's own grippers,
x2/robots/artixon/gripper_*.xml, and the wrist cameras x2 puts on vendor grippers, x2/robots/parts; a linkage
gripper's ends where its measured jaw settles them)."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from x2.envspec import load_env, load_robot, names
from x2.sim import Jaw, make_backend

H, W = 96, 128
MARGIN = 0.03  # of the image size: a fingertip on the border is not "in view"
MAX_COVER = 0.2  # measured <= 0.16; the palm-level mount these replaced covered 0.27-0.36


def _model(robot: str) -> tuple[mujoco.MjModel, Jaw | None]:
    backend = make_backend(load_env("pick_place", robot=robot))
    try:
        backend.reset(0)
        return mujoco.MjModel.from_xml_string(backend.model_xml()), backend.jaw()
    finally:
        backend.close()


def _project(m: mujoco.MjModel, d: mujoco.MjData, cam: int, point: np.ndarray) -> tuple[float, float, float]:
    """(column, row, depth) of a world point through MuJoCo's pinhole camera (looks along -z, y up)."""
    rel = d.cam_xmat[cam].reshape(3, 3).T @ (point - d.cam_xpos[cam])
    f = 0.5 * H / math.tan(math.radians(m.cam_fovy[cam]) / 2)
    return W / 2 + f * rel[0] / -rel[2], H / 2 - f * rel[1] / -rel[2], -rel[2]


def _fingertip_corners(m: mujoco.MjModel, d: mujoco.MjData, arm: str, fingers: list[int]) -> list[np.ndarray]:
    """Per finger, the four corners at the far end (along the tcp's approach axis) of the bounding boxes of its
    collision geoms (a box is its own; a mesh's is MuJoCo's local bounding box)."""
    tcp = m.site(f"{arm}_tcp").id
    z, origin = d.site_xmat[tcp].reshape(3, 3)[:, 2], d.site_xpos[tcp]
    out: list[np.ndarray] = []
    for body in fingers:
        corners = []
        for gid in np.flatnonzero(m.geom_bodyid == body):
            if not (m.geom_contype[gid] or m.geom_conaffinity[gid]):
                continue
            centre, half = m.geom_aabb[gid, :3], m.geom_aabb[gid, 3:]
            grot = d.geom_xmat[gid].reshape(3, 3)
            corners += [d.geom_xpos[gid] + grot @ (centre + half * np.array([i, j, k]))
                        for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)]
        out += sorted(corners, key=lambda c: float((c - origin) @ z))[-4:]
    return out


@pytest.mark.parametrize("robot", names("robots"))
def test_wrist_cameras_see_both_fingertips_and_the_tcp(robot: str) -> None:
    m, jaw = _model(robot)
    d = mujoco.MjData(m)
    renderer = mujoco.Renderer(m, H, W)
    renderer.enable_segmentation_rendering()
    try:
        for arm in load_robot(robot).model.arms:
            cam = m.camera(f"{arm.name}_wrist").id
            joints = [m.joint(j) for j in arm.gripper_joints]
            if jaw is None:  # slides: the finger bodies are the joints', the gripper's body their parent
                fingers = [int(j.bodyid[0]) for j in joints]
                gripper_bodies = {*fingers, int(m.body_parentid[fingers[0]])}
                ends = [[float(joints[0].range[i])] * len(joints) for i in (1, 0)]
            else:  # a linkage: the pads at its ends, the gripper every body under the tcp's, as the jaw settles
                fingers = [m.body(f"{arm.name}_finger_{s}").id for s in "ab"]
                inside = np.zeros(m.nbody, dtype=bool)
                for b in range(m.nbody):
                    inside[b] = b == m.site(f"{arm.name}_tcp").bodyid[0] or (b > 0 and inside[m.body_parentid[b]])
                gripper_bodies = set(np.flatnonzero(inside).tolist())
                ends = [jaw.joints_at(1.0).tolist(), jaw.joints_at(0.0).tolist()]
            own = [g for g in range(m.ngeom) if m.geom_bodyid[g] in gripper_bodies]
            for values in ends:
                opening = values[0]
                for joint, value in zip(joints, values, strict=True):
                    d.qpos[joint.qposadr[0]] = value
                mujoco.mj_kinematics(m, d)
                mujoco.mj_camlight(m, d)
                where = f"{robot} {arm.name} opening {opening}"
                tips = _fingertip_corners(m, d, arm.name, fingers)
                assert len(tips) == 8, where
                for u, v, depth in [_project(m, d, cam, p) for p in tips] + \
                        [_project(m, d, cam, d.site_xpos[m.site(f"{arm.name}_tcp").id])]:
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
