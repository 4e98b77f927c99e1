"""`hook_pull`: bring an object that lies beyond the arm's reach closer with a held tool's blade.

The arm already holds the tool (a `pick` of its handle before); the target names the object to pull. The tool
is any held object with a `blade` part: a box site on the face that drags, its +x the face's normal (the way
the face pushes), its y along the face. Steps:

1. the tool is turned about the vertical so the face is square to the drag's heading (towards the arm's first
   joint, or a little off that line where that drag would cross a wrist singularity), and carried (a planned
   motion, the held tool checked against everything) to HOVER above the spot where the face stands GAP behind
   the object, centred on it, the tool's lowest point CLEARANCE above the table; the arm pose there is solved
   from the drag's end (the arm folded near the body), so the whole drag is one straight line in one IK branch;
2. a straight move down to that spot (the blade passes behind the object, touching nothing), and a closed loop
   on the tool's height: the stretched-out arm sags, so the tool's lowest point is read from the live
   simulator and brought back to CLEARANCE above the table;
3. the drag: a straight move along the heading, the tool allowed to touch the object and nothing else, guarded
   on the object itself: it stops once the object is within `reach` m of the arm's first joint (horizontally),
   read from the live simulator;
4. the face backs off the object, the tool rises, moves sideways (to the handle's side) until the blade's end
   clears the object, comes down to just above the table, and the jaw lets go of it; the hand rises.

The tool keeps the pose it has in the hand (read from the live simulator, level as it was picked): only its
blade touches anything on purpose, the object, and only during the drag and its back-off.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import numpy as np

from x2.base.arrays import Floats
from x2.base.errors import PlanningError
from x2.envspec.env import SkillBinding
from x2.synth.context import SynthContext
from x2.synth.segments import Gripper, Guarded, Segment, SkillFailure, Wait
from x2.synth.skills.contact_motion import object_reach, unit
from x2.synth.skills.grasp_poses import solve_pose, straight_line
from x2.synth.skills.pick_place import NEAR_CONTACT, OPEN_TICKS, RELEASE_TICKS, holding, released
from x2.synth.skills.place_poses import part_site
from x2.synth.skills.shapes import UP, rot_about

TOOL_PART = "blade"  # the tool's part whose face drags the object
REACH = 0.58  # m from the arm's first joint (horizontally) where a top grasp of a 5 cm block has slack left
HOVER = 0.09  # m above the drag's start where the planned motion ends: the blade clears a 5 cm block
CLEARANCE = 0.005  # m between the tool's lowest point and the table in the drag (closed loop: _level_off)
GAP = 0.012  # m between the face and the object before the drag (free travel, no contact on the way down)
SLACK = 0.03  # m the guarded drag runs past its goal, so servo lag and slip never stop it short
BACK_OFF = 0.012  # m the face moves back off the object before the tool rises, so it does not rub it up
LIFT = 0.04  # m the tool rises before it moves aside: clear of the table however much the arm sags there
ASIDE_MARGIN = 0.03  # m between the blade's end and the object where the tool is set down
HEIGHT_TOL = 0.0015  # m of the tool's height error left as it is
SETTLE_TICKS = 6  # the servos catch up with the end of the move down before the tool's height is read
SET_DOWN_GAP = 0.002  # m the tool drops when the jaw lets go of it
# Where the straight drag would cross a wrist singularity (no single IK branch holds the whole line), the arm
# tries a drag heading a little off the line to its first joint, and the tool turned a little off square to it
# (the block turns square to the face as it is pushed); more would turn the block against the handle beside it.
HEADINGS = np.deg2rad([0.0, 8.0, -8.0])
FACE_TURNS = np.deg2rad([0.0, 4.0, -4.0])
DRAG_SPEED = 0.3  # fraction of the joint limits: ~3 cm/s, slow enough that the object never jumps ahead


def hook_pull(ctx: SynthContext, binding: SkillBinding, arm: str) -> Iterator[Segment]:
    obj = binding.target_object
    if obj is None or obj not in ctx.backend.object_names:
        raise SkillFailure("target unreachable", f"hook_pull needs an object target, got {binding.target!r}")
    tool, face = _held_tool(ctx, arm, binding)
    reach = binding.number("reach", REACH)
    world = ctx.world()
    world.attach(tool, arm)
    try:
        heading = yield from _to_drag_start(ctx, arm, tool, face, obj, reach)
        yield from _drag(ctx, arm, tool, obj, reach, heading)
        yield from _set_down(ctx, arm, tool, face, obj, heading)
    finally:
        ctx.world().clear_allowed()
    if not released(ctx, arm, tool):
        raise SkillFailure("predicate false", f"{tool} still touches the {arm} fingers after the release")


def _held_tool(ctx: SynthContext, arm: str, binding: SkillBinding) -> tuple[str, str]:
    """(tool object, its face site): the `tool` param's object, else the held object that has a blade."""
    named = binding.params.get("tool")
    candidates = [str(named)] if named is not None else list(ctx.backend.object_names)
    for tool in candidates:
        face = part_site(ctx, tool, TOOL_PART) if tool in ctx.backend.object_names else None
        if face is not None and holding(ctx, arm, tool):
            return tool, face
    what = f"tool {named!r}" if named is not None else f"a tool with a {TOOL_PART} part"
    raise SkillFailure("grasp lost", f"the {arm} gripper does not hold {what}")


def _toward_arm(ctx: SynthContext, arm: str, obj: str) -> Floats:
    delta = np.asarray(ctx.backend.arm_root_pos(arm)) - np.asarray(ctx.backend.object_pos(obj))
    return unit(np.array([delta[0], delta[1], 0.0]))


def _live_pose(ctx: SynthContext, site: str) -> tuple[Floats, Floats]:
    m, d = ctx.backend.model, ctx.backend.data
    sid = m.site(site).id
    return d.site_xpos[sid].copy(), d.site_xmat[sid].reshape(3, 3).copy()


def _to_drag_start(ctx: SynthContext, arm: str, tool: str, face: str, obj: str,
                   reach: float) -> Generator[Segment, None, Floats]:
    """Steps 1 and 2: the face GAP behind the object, the tool level and CLEARANCE above the table, in an arm
    pose from which the whole drag is one straight line. Returns the drag's heading (unit, horizontal)."""
    backend = ctx.backend
    start = np.asarray(backend.object_pos(obj), dtype=np.float64)
    face_pos, face_rot = _live_pose(ctx, face)
    tcp_pos, tcp_rot = _live_pose(ctx, ctx.env.robot.arm(arm).tcp_site)
    below = object_reach(ctx, tool, face_pos, -UP)  # the tool's lowest point under the face's centre
    normal = unit(np.array([face_rot[0, 0], face_rot[1, 0], 0.0]))
    home = np.array(ctx.env.robot.arm(arm).home)
    world = ctx.world()
    errors = []
    for off, face_turn in ((h, f) for h in HEADINGS for f in FACE_TURNS):
        heading = rot_about(UP, float(off)) @ _toward_arm(ctx, arm, obj)
        goal = start - heading * (object_reach(ctx, obj, start, -heading) + GAP)
        goal[2] = backend.table_height + CLEARANCE + below
        square = float(np.arctan2(np.cross(normal, heading)[2], normal @ heading))
        turn = rot_about(UP, square + float(face_turn))
        rot = turn @ tcp_rot
        pos = goal + turn @ (tcp_pos - face_pos)
        drag = heading * (_distance_to_go(ctx, arm, obj, reach) / np.cos(off) + GAP + SLACK)
        try:
            # the drag's end first (the arm folded near the body, the hard pose): the hover pose in its branch
            q_end = solve_pose(ctx, arm, pos + drag, rot, [ctx.executor.arm_target(arm), home])
            q_hover = solve_pose(ctx, arm, pos + UP * HOVER, rot, [q_end, home])
            down = straight_line(world, arm, q_hover, -UP * HOVER)
            world.allow([(tool, obj)])
            straight_line(world, arm, down[-1], drag)  # the whole drag in one branch, or another pose
        except (SkillFailure, PlanningError) as exc:
            errors.append(f"heading {np.rad2deg(off):+.0f} deg, face {np.rad2deg(face_turn):+.0f} deg: {exc}"[:140])
            continue
        finally:
            world.clear_allowed()
        yield from ctx.move_to(arm, q_hover)
        yield ctx.timed(arm, down, NEAR_CONTACT)
        yield from _level_off(ctx, arm, tool)
        return heading
    raise SkillFailure("ik infeasible", f"the {tool}'s {TOOL_PART} behind {obj}: " + "; ".join(errors[:3]))


def _distance_to_go(ctx: SynthContext, arm: str, obj: str, reach: float) -> float:
    """How much nearer the arm's first joint (horizontally) the object must come to be within `reach`."""
    root = np.asarray(ctx.backend.arm_root_pos(arm))[:2]
    return float(np.linalg.norm(np.asarray(ctx.backend.object_pos(obj))[:2] - root)) - reach


def _level_off(ctx: SynthContext, arm: str, tool: str) -> Iterator[Segment]:
    """Closed loop on the tool's height: the arm sags more stretched out than where the tool's pose was read,
    so once it has settled, the hand moves the tool's lowest point back to CLEARANCE above the table."""
    yield Wait(SETTLE_TICKS)
    table = np.array([0.0, 0.0, ctx.backend.table_height])
    error = CLEARANCE + object_reach(ctx, tool, table, -UP)  # (the reach below the table: minus the gap)
    if abs(error) < HEIGHT_TOL:
        return
    try:
        path = straight_line(ctx.world(), arm, ctx.executor.arm_target(arm), UP * error)
    except PlanningError as exc:
        raise SkillFailure("no plan", f"levelling the {tool} off the table: {exc}") from None
    yield ctx.timed(arm, path, NEAR_CONTACT)


def _drag(ctx: SynthContext, arm: str, tool: str, obj: str, reach: float, heading: Floats) -> Iterator[Segment]:
    """Step 3: along `heading` until the object is within `reach` of the arm's first joint."""
    turned = float(np.arccos(np.clip(heading @ _toward_arm(ctx, arm, obj), -1.0, 1.0)))
    world = ctx.world()
    world.allow([(tool, obj)])  # the point of the skill: the blade drags the object
    try:
        path = straight_line(world, arm, ctx.executor.arm_target(arm),
                             heading * (_distance_to_go(ctx, arm, obj, reach) / np.cos(turned) + GAP + SLACK))
    except PlanningError as exc:
        raise SkillFailure("no plan", f"dragging {obj}: {exc}") from None
    yield Guarded(ctx.timed(arm, path, DRAG_SPEED), until=lambda: _distance_to_go(ctx, arm, obj, reach) <= 0.0,
                  name=f"{obj} within {reach:.2f} m")


def _set_down(ctx: SynthContext, arm: str, tool: str, face: str, obj: str, toward: Floats) -> Iterator[Segment]:
    """Step 4: off the object (back along the drag's heading `toward`), up, aside until the blade clears it,
    down, let go, hand up."""
    backend = ctx.backend
    world = ctx.world()
    world.allow([(tool, obj)])  # the face may still rest against the object as it backs off
    q = ctx.executor.arm_target(arm)
    try:
        back = straight_line(world, arm, q, -toward * BACK_OFF)
        up = straight_line(world, arm, back[-1], UP * LIFT)
    except PlanningError as exc:
        raise SkillFailure("no plan", f"lifting the {tool} off {obj}: {exc}") from None
    yield ctx.timed(arm, back, NEAR_CONTACT)
    yield ctx.timed(arm, up, NEAR_CONTACT)
    world = ctx.world()
    world.clear_allowed()
    obj_pos = np.asarray(backend.object_pos(obj), dtype=np.float64)
    face_pos, face_rot = _live_pose(ctx, face)
    tcp_pos, _ = _live_pose(ctx, ctx.env.robot.arm(arm).tcp_site)
    side: Floats = tcp_pos - obj_pos
    side = unit(side - (side @ toward) * toward - (side @ UP) * UP)  # the handle's side of the object
    half = float(np.abs(face_rot[:, 1] @ side)) * float(backend.site_box(face)[2][1])
    shift = half + object_reach(ctx, obj, obj_pos, side) + ASIDE_MARGIN - float((face_pos - obj_pos) @ side)
    below = object_reach(ctx, tool, face_pos, -UP)
    drop = face_pos[2] - below - backend.table_height - SET_DOWN_GAP
    try:
        aside = straight_line(world, arm, ctx.executor.arm_target(arm), side * max(shift, 0.0))
        down = straight_line(world, arm, aside[-1], -UP * drop)
    except PlanningError as exc:
        raise SkillFailure("no plan", f"setting the {tool} down beside {obj}: {exc}") from None
    yield ctx.timed(arm, aside, NEAR_CONTACT)
    yield ctx.timed(arm, down, NEAR_CONTACT)
    yield Gripper(arm, 1.0, ticks=2)
    yield Wait(OPEN_TICKS + RELEASE_TICKS, until=lambda: released(ctx, arm, tool), name="let go of the tool")
    world = ctx.world()
    world.detach(tool)
    world.allow((tool, f) for f in backend.finger_bodies(arm))  # the open fingers rise past it
    # as far up as one IK branch goes: what follows is planned from anywhere the fingers are clear of the tool
    away = straight_line(world, arm, ctx.executor.arm_target(arm), UP * HOVER, partial=True)
    world.clear_allowed()
    if len(away) < 2 or world.in_collision({arm: away[-1]}):
        raise SkillFailure("no plan", f"the {arm} hand cannot rise clear of the {tool}")
    yield ctx.timed(arm, away, NEAR_CONTACT)
