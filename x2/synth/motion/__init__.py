"""Motion layer for synthesis: collision world, IK, joint-space planning, timing and post-check.

Import from the modules: `collision.CollisionWorld`, `ik.ArmIK`, `planner.RRTConnect`,
`timing.plan_motion`, `cartesian.cartesian_path`.
"""
