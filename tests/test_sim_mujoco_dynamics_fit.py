"""The dynamics fit's model of one arm (x2/sim/mujoco/dynamics_fit.py): an armature moved in the fit softens
friction loss as the compiled calibrated twin does, and a servo without velocity gain held back by dry friction
(gym-aloha's kind) is found from x2's own values."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from x2.envspec import load_env
from x2.envspec.env import JointDynamics, TwinCalibration
from x2.sim.mujoco.dynamics_fit import ArmFit, ArmModel, Recording, fit_arm


def test_an_armature_moved_in_the_fit_gives_the_compiled_twins_inverse_weights() -> None:
    env = load_env(None, robot="aloha")
    arm = env.robot.arms[0]
    model = ArmModel(env.robot, arm, env.booth.timestep, env.substeps)
    n = len(arm.joints)
    x = model.nominal()
    x[2 * n:3 * n] = 0.001
    moved = model.models(x[:, None])[0]
    cal = TwinCalibration("t", "", joints=tuple(JointDynamics(j, armature=0.001) for j in arm.joints))
    compiled = ArmModel(replace(env.robot, calibration=cal), arm, env.booth.timestep, env.substeps).model
    # (friction loss's softness scales with these: x2's wrists' differ from their armature-free values 10-100 fold)
    assert not np.allclose(model.model.dof_invweight0[model.dadr], compiled.dof_invweight0[model.dadr], rtol=0.5)
    assert np.allclose(moved.dof_invweight0[model.dadr], compiled.dof_invweight0[model.dadr], rtol=1e-9)


def test_a_servo_without_velocity_gain_held_by_friction_is_found() -> None:
    env = load_env(None, robot="aloha")
    robot = env.robot
    arm = robot.arms[0]
    model = ArmModel(robot, arm, env.booth.timestep, env.substeps)
    n = len(arm.joints)
    truth = model.nominal()
    truth[[4 * n, 4 * n + 1]] = 0.0  # the waist's and the shoulder's servos: no kv, no damping, 25 N m of friction
    truth[[n, n + 1]] = 0.0
    truth[[3 * n, 3 * n + 1]] = 25.0
    names = robot.action_names
    home = np.array([h for a in robot.arms for h in (*a.home, 1.0)])
    t = np.arange(45) / env.fps
    recs = []
    for k in range(2):
        action = np.repeat(home[None], len(t), axis=0)
        for i, joint in enumerate(arm.joints):
            action[:, names.index(joint)] += 0.3 * np.sin(2 * np.pi * (0.7 + 0.3 * k + 0.1 * i) * t)
        first = Recording(k, action, arm.joints, np.repeat(np.asarray(arm.home)[None], len(t), axis=0),
                          1.0 / env.fps)
        measured = ArmFit(model, names, [first]).predict(truth[:, None], 0)[0][0]
        recs.append(replace(first, measured=measured))
    x, latency, _ = fit_arm(ArmFit(model, names, recs), lambda _: None, max_iter=4)
    assert latency == 0
    assert x[4 * n] < 0.2 and x[4 * n + 1] < 0.2  # (x2's own: 1; without the kv share the fit cannot go below it)
    assert abs(x[3 * n] - 25.0) < 5.0 and abs(x[3 * n + 1] - 25.0) < 5.0
