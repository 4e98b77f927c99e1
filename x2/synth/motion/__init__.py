"""Motion layer for synthesis: joint-space planning, tcp paths, timing and post-check, on the simulator's
collision world and IK (x2.sim.mujoco.collision.CollisionWorld, x2.sim.mujoco.ik.ArmIK).

Import from the modules: `seeded.SeededIK`, `planner.RRTConnect`, `paths.follow` (with `paths.line` /
`paths.screw`), `timing.plan_motion`, `timing.time_polyline`.
"""
