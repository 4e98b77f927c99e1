"""`x2 import lerobot PATH --robot R`: a real robot's LeRobot recording made an x2 dataset (x2.ingest)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from x2.cli._common import console
from x2.cli.group_class import typer_group
from x2.cli.progress import progress
from x2.datasets import workspace
from x2.ingest import default_name, import_lerobot

app = typer_group(
    "import",
    help="Read real recordings in: a real robot's LeRobot v3.0 dataset becomes an x2 dataset of source `real` "
         "(commanded and measured joints in x2's layout and units, camera frames, timestamps as recorded; no world).",
    examples="  x2 import lerobot ~/recordings/aloha_cups --robot aloha\n\n"
             "  x2 import lerobot ./pick_red --robot aloha --dataset real_picks",
)


@app.command("lerobot")
def lerobot(
    path: Annotated[Path, typer.Argument(help="the LeRobot v3.0 dataset folder (meta/info.json, data/, videos/)",
                                         show_default=False)],
    robot: Annotated[str, typer.Option("--robot", "-r", help="the robot it was recorded on: its robot file's "
                                       "`lerobot:` table maps the columns and units, or x2's own export layout is read "
                                       "as it is (docs/robots.md)")],
    dataset: Annotated[str | None, typer.Option("--dataset", "-d", help="Dataset name under ./data or folder "
                                                "(default: data/<the recording folder's name>); run again on the "
                                                "same recording, the import resumes", show_default=False)] = None,
) -> None:
    """Import a real robot's LeRobot v3.0 recording: `action` (commanded) and `observation.state` (measured) become
    /action and /observations/qpos in the robot's action layout, mapped by its robot file's `lerobot:` table (x2's
    own `x2 export lerobot` is read back with no table: a stand-in for a real recording); camera
    videos are decoded into /observations/images/<cam>; timestamps, episode boundaries and task text are kept. Gaps
    and irregular timestamps are reported, never filled. A recording whose joints do not match the table is refused
    with nothing written.

    Example: [cyan]x2 import lerobot ~/recordings/aloha_cups --robot aloha[/cyan]
    """
    out = workspace.resolve_output(dataset, default_name(path))
    console.print(f"importing {escape(str(path))} as robot {escape(robot)} into {escape(str(out))}", soft_wrap=True)
    with progress("importing", unit="episodes") as update:
        result = import_lerobot(path, robot, out, lambda done, total, note: update(done, total, note))
    workspace.remember_dataset(result.dataset)
    table = Table(title=f"{result.dataset}: {len(result.imported)} episodes imported at {result.fps:g} fps",
                  title_justify="left")
    for col in ("episode", "from", "frames", "timestamps", "instruction"):
        table.add_column(col)
    for ep in result.imported:
        table.add_row(str(ep.index), f"LeRobot episode {ep.source_index}", str(ep.frames), ep.timing.summary(),
                      escape(ep.instruction))
    console.print(table)
    gaps = sum(len(ep.timing.gaps) for ep in result.imported)
    irregular = sum(ep.timing.irregular for ep in result.imported)
    if result.skipped:
        console.print(f"already imported by an earlier run, skipped: {len(result.skipped)} episodes", soft_wrap=True)
    if result.not_imported:
        console.print(f"not imported (no place in an x2 episode): {escape(', '.join(result.not_imported))}",
                      soft_wrap=True)
    cams = ", ".join(result.cameras) or "none"
    console.print(f"[green]imported[/green] {len(result.imported)} of {result.episodes_in_source} episodes, source "
                  f"real, robot {result.robot}; cameras: {cams} (no intrinsics known); timestamps: {gaps} gaps, "
                  f"{irregular} irregular steps (kept as recorded)", soft_wrap=True)
