"""`x2 robots ...`: list and inspect the built-in and user robots; fetch vendor files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from x2 import envspec as spec
from x2.base.errors import X2Error
from x2.cli._common import console
from x2.cli.group_class import typer_group
from x2.envspec import vendor
from x2.envspec.env import ArmPart, GripperPart

robots_app = typer_group(
    "robots", "List and inspect robots; fetch the vendor files some are made of.",
    "  x2 robots ls\n\n  x2 robots show franka-panda\n\n  x2 robots fetch",
)
@robots_app.command("ls")
def robots_ls() -> None:
    """List robots. Example: [cyan]x2 robots ls[/cyan]"""
    table = Table(title="robots", title_justify="left")
    for col in ("name", "gripper", "arms", "action dim", "cameras", "fps", "description"):
        table.add_column(col)
    for name in spec.names("robots"):
        try:
            info = spec.load_robot(name)
        except X2Error as exc:  # (a robot made of vendor parts before `x2 robots fetch`: say so, list the rest)
            table.add_row(escape(name), "", "", "", "", "", escape(f"unavailable: {exc}"))
            continue
        m = info.model
        table.add_row(*map(escape, (m.name, m.gripper.kind, ", ".join(a.name for a in m.arms), str(m.action_dim),
                                    ", ".join(m.cameras), str(info.fps), info.description)))
    console.print(table)


@robots_app.command("show")
def robots_show(
    name: Annotated[str, typer.Argument(help="robot name or path to a robot YAML (NAME+GRIPPER: another gripper)")],
    picture: Annotated[Path | None, typer.Option("--picture", help="also draw the robot from three sides with its "
                                                 "cameras' frusta into this PNG", dir_okay=False)] = None,
) -> None:
    """Show a robot's parts, sources and licenses, arms, home pose and action layout.

    Example: [cyan]x2 robots show franka-panda --picture panda.png[/cyan]"""
    info = spec.load_robot(name)
    m = info.model
    console.print(f"[bold]{escape(m.name)}[/bold]  {escape(info.description)}")
    unit = " m" if m.gripper.drive == "slide" else " (the vendor's command; its jaw is measured on the linkage)"
    console.print(escape(f"file {info.file}\nMJCF {m.mjcf}\ngripper {m.gripper.kind} ({m.gripper.mjcf.name}), ctrl "
                         f"closed {m.gripper.closed_ctrl} .. open {m.gripper.open_ctrl}{unit}; control {info.fps} Hz x "
                         f"{info.substeps} substeps; reach {info.reach} m; reference task {info.reference_task}"))
    parts: list[tuple[str, ArmPart | GripperPart]] = [(f"arm {a.name}", a.part) for a in m.arms if a.part]
    parts += [("gripper", m.gripper.part)] if m.gripper.part is not None else []
    if parts:
        ptable = Table(title="parts from vendor files and your own", title_justify="left")
        for col in ("part", "name", "package", "license", "file", "license files"):
            ptable.add_column(col)
        for role, part in parts:
            if part.source.package is None:
                ptable.add_row(*map(escape, (role, part.name, "(your own file)", "", str(part.source.file), "")))
                continue
            pkg = vendor.PACKAGES[part.source.package]
            ptable.add_row(*map(escape, (role, part.name, pkg.key, pkg.license, str(part.source.file),
                                         ", ".join(str(f) for f in vendor.license_paths(pkg.name)))))
        console.print(ptable)
        for role, part in parts:
            if isinstance(part, ArmPart) and part.defaulted:
                console.print(escape(f"warning: {role} ({part.name}): {', '.join(part.defaulted)} not in its part "
                                     "file; x2's defaults are used (x2 robots check shows them)"))
    table = Table(title="action vector", title_justify="left")
    for col in ("index", "name", "home"):
        table.add_column(col)
    i = 0
    for arm in m.arms:
        for joint, home in zip(arm.joints, arm.home, strict=True):
            table.add_row(str(i), escape(joint), f"{home:+.3f} rad")
            i += 1
        table.add_row(str(i), escape(f"{arm.name}_gripper"), "1.0 (0 = closed, 1 = open)")
        i += 1
    if m.base is not None:
        for joint, home, (lo, hi), unit in zip(m.base.joints, m.base.home, m.base.range, ("m", "m", "rad"),
                                               strict=True):
            table.add_row(str(i), escape(joint), f"{home:+.3f} {unit} (mobile base, {lo:+.2f} .. {hi:+.2f})")
            i += 1
    console.print(table)
    if picture is not None:
        from x2.render.robot_picture import robot_picture  # (renders: MuJoCo's GL only when asked)

        console.print(f"picture: {robot_picture(name, picture)}")


@robots_app.command("fetch")
def robots_fetch() -> None:
    """Download the pinned vendor packages robot parts come from (PyPI, once; offline afterwards).

    Each wheel's sha256 is checked against its pin; only its robot files and licenses are unpacked
    (its code is never installed). `make` runs this. Example: [cyan]x2 robots fetch[/cyan]"""
    table = Table(title=f"vendor files in {vendor.vendor_root()}", title_justify="left")
    for col in ("package", "license", "used for", "state"):
        table.add_column(col)
    for name, pkg in vendor.PACKAGES.items():
        was = vendor.fetched(name)
        vendor.fetch(name)
        table.add_row(*map(escape, (pkg.key, pkg.license, pkg.what, "present" if was else "fetched, sha256 checked")))
    console.print(table)
