"""Space-time admission: a segment moving one arm starts only when it keeps clear of the other arms' motion.

Each lane commits to one segment at a time. A planner sees the other arms where their committed segments
end (`SkillExecutor.planning_pose`); this module checks the new segment tick by tick against the other
arms' committed tracks, on the simulator's own geometry (`CollisionWorld.arms_clash`: the pairs between
two arms and what they hold, within ARM_CLEARANCE). After its track an arm stands still until its lane
commits again, and that commitment is checked against this one, so every two committed futures keep the
clearance (a guarded move stopping short of its track is the one exception: it stands where the guard
stopped it, which the other arm's check saw it pass).

A segment that would come too close may wait: the smallest delay (on a grid of a few ticks, up to the end
of the other tracks) after which it stays clear throughout is taken, and its lane stands still meanwhile.
When no delay helps (a move nobody planned around where the other arm will rest), it waits until another
lane commits again; the executor retries then, and reports a deadlock when every lane waits.
"""

from __future__ import annotations

from collections.abc import Callable

from x2.base.arrays import Floats
from x2.sim.mujoco.collision import CollisionWorld
from x2.synth.executor import Lane, SkillExecutor, track_of

ARM_CLEARANCE = 0.03  # m between the two arms (and what they hold) over their committed motion
DELAY_GRID = 12  # delays tried: 0 and at most this many more, up to the end of the other tracks
MIN_DELAY_STEP = 3  # ticks


class SpaceTimeAdmission:
    """`delay` for `SkillExecutor.admission`, checked on a collision world synced to the live simulator."""

    def __init__(self, world: Callable[[], CollisionWorld]):
        self._world = world
        self.checks = 0
        self.waited = 0  # ticks of every admitted delay, for the attempt's statistics

    def delay(self, executor: SkillExecutor, lane: Lane) -> int | None:
        arm, mine = lane.moving_arm, track_of(lane.segment)
        assert arm is not None and mine is not None  # (asked only for a segment that moves an arm)
        moving: dict[str, Floats] = {}
        for other in executor.lanes:
            track = other.track() if other is not lane else None
            if track is not None and other.moving_arm is not None:
                moving[other.moving_arm] = track
        world = self._world()  # synced: the fingers as they are, what each hand holds
        for name in world.arms:
            if name != arm:
                world.set_arm(name, executor.arm_target(name))
        horizon = max((len(t) for t in moving.values()), default=0)
        step = max(MIN_DELAY_STEP, -(-horizon // DELAY_GRID))
        delays: tuple[int, ...] = (0, *range(step, horizon, step), horizon) if horizon else (0,)
        base = world.margin
        world.margin = ARM_CLEARANCE
        try:
            with world.between_arms_only():  # (all that arms_clash counts)
                for d in delays:
                    if self._clear(world, arm, mine, moving, d):
                        self.waited += d
                        return d
        finally:
            world.margin = base
        return None

    def _clear(self, world: CollisionWorld, arm: str, mine: Floats, moving: dict[str, Floats],
               delay: int) -> bool:
        """Does `mine`, started after `delay` ticks of standing still, stay clear of every moving track (and
        of the arms standing still)? Ticks before the delay were checked when the others committed."""
        n = len(mine)
        end = max([delay + n, *(len(t) for t in moving.values())])
        for i in range(delay, end):
            q = {arm: mine[min(i - delay, n - 1)]}
            for other, track in moving.items():
                q[other] = track[min(i, len(track) - 1)]
            self.checks += 1
            if world.arms_clash(q):
                return False
        return True
