"""The option and argument types more than one command takes, so that each reads and behaves the same
everywhere (`x2 ... --help`)."""

from __future__ import annotations

from typing import Annotated

import typer

from x2.base.errors import X2Error
from x2.datasets.select import Selection, parse_episode_list
from x2.processes.pool import RayTarget

# A dataset that exists, read by the command.
DatasetArg = Annotated[str | None, typer.Argument(
    help="Dataset path or name under ./data (default: the last one used).", show_default=False)]
DatasetOpt = Annotated[str | None, typer.Option(
    "--dataset", "-d", help="Dataset path or name under ./data (default: the last one used).", show_default=False)]
# One episode of the dataset, by its index (x2 datasets show | view).
EpisodeArg = Annotated[int, typer.Argument(help="Episode index (see x2 datasets info).", show_default=False)]
# The dataset a collector writes into: made when it does not exist, appended to when it does.
OutputDatasetOpt = Annotated[str | None, typer.Option(
    "--dataset", "-d", help="Dataset name under ./data or folder (default: data/<task>, or data/<task>-<robot> for "
    "a robot other than the task's own).", show_default=False)]

TaskOpt = Annotated[str, typer.Option("--task", "-t", help="Task name or path to a task YAML.")]
RobotOpt = Annotated[str | None, typer.Option("--robot", "-r", help="Robot (default: the task's).",
                                              show_default=False)]
# A twin calibration (specs/calibrations/<name>.yaml, docs/calibration.md) for the robot: the same as ROBOT@NAME.
CalibrationOpt = Annotated[str | None, typer.Option(
    "--calibration", help="twin calibration NAME (specs/calibrations/NAME.yaml) or path: the same as --robot "
    "ROBOT@NAME", show_default=False)]
VariantOpt = Annotated[str, typer.Option("--variant", help="Scene variant.")]
AllowEvalOpt = Annotated[bool, typer.Option(
    "--allow-eval", help="Allow a configuration held out for evaluation (an eval scene variant or seed).")]
GripperOpt = Annotated[str | None, typer.Option("--gripper", help="Put this gripper (robots/grippers: G, H, "
                                                "franka-hand, ...) on the robot instead of its own.",
                                                show_default=False)]

# Which episodes of a dataset a command reads (x2 export *, x2 datasets filter | stats).
SuccessOnly = Annotated[bool, typer.Option("--success-only", help="Only episodes whose task succeeded.")]
SourceOpt = Annotated[list[str] | None, typer.Option(
    "--source", help="Only episodes from this source (teleop, synth, augment, scripted, policy, real); repeatable.",
    show_default=False)]
PartOpt = Annotated[str | None, typer.Option(
    "--part", help="Only episodes in this part of the dataset's partition (train, val, ...; x2 datasets partition).",
    show_default=False)]
# --part's spelling before the partition had its name (a "split" is now a configuration's train or eval only):
# still taken, so command lines typed before run as they did; hidden from --help.
OlderPartOpt = Annotated[str | None, typer.Option("--split", hidden=True, show_default=False)]
EpisodesOpt = Annotated[str | None, typer.Option(
    "--episodes", help="Only these episode indices, e.g. 0-9,12.", show_default=False)]
OverwriteOpt = Annotated[bool, typer.Option("--overwrite", help="Replace an existing target.")]
ActionKindOpt = Annotated[str, typer.Option(
    "--action", help="The exported action: joint (the recorded joint targets), ee_pose or ee_delta (their "
                     "end-effector poses in the robot's base frame; docs/format.md, 'End-effector actions').")]


def one_spelling[T](new: T | None, old: T | None, new_name: str, old_name: str) -> T | None:
    """An option given under its name or under its old spelling, never under both."""
    if new is not None and old is not None:
        raise X2Error(f"{new_name}: found both {new_name} and {old_name} (its old spelling); allowed: one of them")
    return old if new is None else new


def selection(success_only: bool, source: list[str] | None, part: str | None, older_part: str | None,
              episodes: str | None) -> Selection:
    """The episodes chosen by the shared options; `older_part` is --part given as --split."""
    return Selection(success_only=success_only, sources=tuple(source or ()),
                     part=one_spelling(part, older_part, "--part", "--split"),
                     episodes=None if episodes is None else parse_episode_list(episodes))

# Where a command's workers run (x2 synth, x2 render): local processes, or Ray actors with --ray.
RayOpt = Annotated[str | None, typer.Option(
    "--ray", help="Run the workers as Ray actors (needs x2[ray]): local (a Ray instance on this machine, for this "
                  "run), auto (RAY_ADDRESS or the cluster started here with `ray start`) or a cluster's address. "
                  "This process still writes the dataset; the bytes are those of a local run.", show_default=False)]
CpusPerWorkerOpt = Annotated[float, typer.Option(
    "--num-cpus-per-worker", min=0.01, help="CPUs each Ray worker reserves (with --ray).")]


def ray_target(address: str | None, cpus_per_worker: float) -> RayTarget | None:
    return None if address is None else RayTarget(address, cpus_per_worker)


RendererOpt = Annotated[str, typer.Option(
    "--renderer", help="the engine that draws the cameras: classic (MuJoCo's OpenGL renderer) or filament "
                       "(MuJoCo 4's physically based one; needs an X display, e.g. xvfb-run -a; docs/looks.md)")]
