"""Motion layer for synthesis: collision world, IK, joint-space planning, tcp paths, timing and post-check.

Import from the modules: `collision.CollisionWorld`, `ik.ArmIK`, `seeded.SeededIK`, `planner.RRTConnect`,
`paths.follow` (with `paths.line` / `paths.screw`), `timing.plan_motion`, `timing.time_polyline`.
"""
