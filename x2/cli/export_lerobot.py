"""`x2 export lerobot`: parsing, progress and the summary; the work is x2.export.lerobot's."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from x2.cli._common import console, open_dataset_arg
from x2.cli.export import app
from x2.cli.export_progress import export_progress
from x2.cli.options import (
    ActionKindOpt,
    DatasetArg,
    EpisodesOpt,
    OlderPartOpt,
    OverwriteOpt,
    PartOpt,
    SourceOpt,
    SuccessOnly,
    selection,
)
from x2.datasets.select import require_some
from x2.export.lerobot import export_lerobot
from x2.export.lerobot_plan import LeRobotOptions
from x2.export.request import ExportProgress, ExportRequest, default_target, parse_action_kind
from x2.files.staging import check_target
from x2.recorded.frames import DEFAULT_CAMERAS, DEFAULT_SIZE
from x2.sim.camera import ImageSize, parse_cameras


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


@app.command("lerobot", epilog="Example: x2 export lerobot fruit_in_microwave --cameras head,left_wrist "
                               "--size 240x320 --success-only")
def lerobot_command(
    dataset: DatasetArg = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Target folder (default: ./exports/<dataset>-lerobot).", show_default=False)] = None,
    repo_id: Annotated[str | None, typer.Option(
        "--repo-id", help="LeRobot repo id (default: x2/<dataset>).", show_default=False)] = None,
    cameras: Annotated[str | None, typer.Option(
        "--cameras", help="Cameras to export, e.g. head,left_wrist "
                          f"(default: the stored ones, else {','.join(DEFAULT_CAMERAS)}).",
        show_default=False)] = None,
    size: Annotated[str | None, typer.Option(
        "--size", help=f"Image size HxW, e.g. 240x320 (default: the stored size, else {DEFAULT_SIZE}).",
        show_default=False)] = None,
    state_only: Annotated[bool, typer.Option("--state-only", help="No images: state, action and labels only.")]
    = False,
    environment_state: Annotated[bool, typer.Option(
        "--environment-state", help="Add observation.environment_state: every object's pose per frame "
                                    "(x y z qw qx qy qz each; privileged, for state-based policies).")] = False,
    ee_state: Annotated[bool, typer.Option(
        "--ee-state", help="observation.state gains each arm's tool centre point pose (x y z qw qx qy qz, the "
                           "robot's base frame) after the joints.")] = False,
    velocity_state: Annotated[bool, typer.Option(
        "--velocity-state", help="observation.state gains the joints' velocities (observations/qvel, named "
                                 "<joint>.vel) after their positions: a policy that sees one frame then sees "
                                 "the motion it is in.")] = False,
    depth: Annotated[bool, typer.Option(
        "--depth/--no-depth", help="Export the cameras' stored depth as LeRobot's depth feature (--no-depth: RGB "
                                   "only, what LeRobot's ACT and diffusion can train on).")] = True,
    overwrite: OverwriteOpt = False,
    action: ActionKindOpt = "joint",
    success_only: SuccessOnly = False,
    source: SourceOpt = None,
    part: PartOpt = None,
    older_part: OlderPartOpt = None,
    episodes: EpisodesOpt = None,
) -> None:
    """Export finished episodes as a LeRobot v3.0 dataset, written by LeRobot's own writer: state, action,
    camera videos (stored streams, else rendered from the states), the instruction as task, x2's subtask
    labels as `subtask_index` and as `language_persistent` subtask rows; with --environment-state the
    objects' poses as `observation.environment_state`. Read back with LeRobot before it
    is renamed into place.

    Examples: [cyan]x2 export lerobot[/cyan] (the last dataset, to ./exports/<dataset>-lerobot)
    [cyan]x2 export lerobot --action ee_pose --ee-state[/cyan] (actions as end-effector poses, the tool poses in
    the state)
    [cyan]x2 export lerobot --velocity-state --no-depth[/cyan] (the joints' velocities beside their positions, for
    LeRobot's ACT)
    """
    ds = open_dataset_arg(dataset)
    target = out if out is not None else default_target(ds, "lerobot")
    check_target(target.absolute(), overwrite)  # before reading every episode to plan the export
    chosen = selection(success_only, source, part, older_part, episodes)
    records = chosen.apply(ds)
    require_some(records, ds, chosen)
    request = ExportRequest(ds, tuple(records), target, chosen.describe(), parse_cameras(cameras), state_only,
                            overwrite, parse_action_kind(action))
    options = LeRobotOptions(size=None if size is None else ImageSize.parse(size), repo_id=repo_id,
                             environment_state=environment_state, ee_state=ee_state,
                             velocity_state=velocity_state, depth=depth)

    def planned(step: ExportProgress) -> None:
        console.print(f"exporting {_count(step.episodes, 'episode')}, {_count(step.frames, 'frame')} "
                      f"({chosen.describe()}); {step.detail}")

    with export_progress(on_plan=planned) as progress:
        result = export_lerobot(request, options, progress)
    plan = result.plan
    env = ("environment state, " if plan.objects else "") + ("depth (within its encoder's quantisation), "
                                                              if plan.depth else "")
    console.print(f"[green]LeRobot dataset written[/green]: {result.target} ({_count(result.episodes, 'episode')}, "
                  f"{_count(result.frames, 'frame')} at {plan.fps} fps, {result.bytes / 1e6:.1f} MB), read back "
                  f"with LeRobot: counts, tasks, state, action, {env}subtasks and first/last frames match",
                  soft_wrap=True)
    console.print(f"load it: LeRobotDataset({result.repo_id!r}, root={str(result.target)!r})", soft_wrap=True)
