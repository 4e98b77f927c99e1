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
    "  x2 robots ls\n\n  x2 robots show franka-panda\n\n  x2 robots fetch\n\n"
    "  x2 robots new my-arm --urdf ~/arm_description/urdf/arm.urdf\n\n  x2 robots check my-arm",
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
    """Show a robot's parts, sources and licenses, arms, home pose and action layout, and how its real recordings'
    columns map onto it (its `lerobot:` table).

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
    if info.recording is not None:
        rec = info.recording
        lerobot = Table(title=f"real recordings (x2 import lerobot): {rec.action_feature} and {rec.state_feature} "
                              f"columns; {rec.source}", title_justify="left")
        for col in ("column", "becomes", "unit", "x2 = value x scale + shift"):
            lerobot.add_column(col)
        for c in rec.columns:
            lerobot.add_row(escape(c.name), escape(c.target), c.unit, f"x {c.scale:.6g} + {c.shift + 0.0:.6g}")
        for c in rec.state_columns:
            lerobot.add_row(escape(f"{c.name} (measured)"), escape(c.target), c.unit,
                            f"x {c.scale:.6g} + {c.shift + 0.0:.6g}")
        if rec.ignored:
            lerobot.add_row(escape(", ".join(rec.ignored)), "(not imported)", "", "")
        console.print(lerobot)
    if picture is not None:
        from x2.render.robot_picture import robot_picture  # (renders: MuJoCo's GL only when asked)

        console.print(f"picture: {robot_picture(name, picture)}")


@robots_app.command("fetch")
def robots_fetch(
    names: Annotated[list[str] | None, typer.Argument(help="packages to fetch (default: all but those fetched "
                                                      "on demand)")] = None,
) -> None:
    """Download the pinned vendor packages robot parts come from (PyPI, once; offline afterwards).

    Each wheel's sha256 is checked against its pin; only its robot files and licenses are unpacked
    (its code is never installed). `make` runs this. A big package no built-in robot needs is fetched
    only by name. Examples: [cyan]x2 robots fetch[/cyan], [cyan]x2 robots fetch pybullet[/cyan]"""
    for name in names or []:
        if name not in vendor.PACKAGES:
            raise X2Error(f"package: found {name!r}; allowed: one of {', '.join(vendor.PACKAGES)}")
    table = Table(title=f"vendor files in {vendor.vendor_root()}", title_justify="left")
    for col in ("package", "license", "used for", "state"):
        table.add_column(col)
    for name, pkg in vendor.PACKAGES.items():
        was = vendor.fetched(name)
        if names and name not in names or not names and pkg.on_demand:
            state = "present" if was else f"on demand: x2 robots fetch {name}"
        else:
            vendor.fetch(name)
            state = "present" if was else "fetched, sha256 checked"
        table.add_row(*map(escape, (pkg.key, pkg.license, pkg.what, state)))
    console.print(table)


@robots_app.command("new")
def robots_new(
    name: Annotated[str, typer.Argument(help="the new robot's name (specs/robots/NAME.yaml)")],
    urdf: Annotated[Path | None, typer.Option("--urdf", help="the arm's URDF", dir_okay=False)] = None,
    mjcf: Annotated[Path | None, typer.Option("--mjcf", help="the arm's MJCF (instead of a URDF)",
                                              dir_okay=False)] = None,
    gripper: Annotated[str, typer.Option("--gripper", help="one of x2's grippers (robots/grippers)")] = "franka-hand",
    meshdir: Annotated[Path | None, typer.Option("--meshdir", help="where the file's meshes are, when not "
                                                 "beside it or in its package folder", file_okay=False)] = None,
    bimanual: Annotated[bool, typer.Option("--bimanual", help="two of the arm side by side (x2's "
                                           "mounts/side_by_side.xml) instead of one on a stand")] = False,
    task: Annotated[str, typer.Option("--task", help="its reference task: the arm must reach every target of "
                                      "its scene (x2 robots check looks at the same ones)")] = "pick_place",
) -> None:
    """Write a starting robot from an arm's URDF or MJCF: specs/robots/NAME.yaml and specs/robots/parts/NAME-arm.yaml.

    x2 finds the chain (root, joints, flange body), the limits, a home pose and the reach; it says what you
    must still decide. Never overwrites; refuses an arm that cannot reach a target of its reference task
    (--task) from x2's stand, naming the target and its distance. Examples:
    [cyan]x2 robots new iiwa --urdf kuka_iiwa/model.urdf[/cyan],
    [cyan]x2 robots new xarm-pair --urdf xarm/xarm6_robot.urdf --gripper G --bimanual[/cyan]"""
    from x2.sim.mujoco.robot_new import new_robot  # (MuJoCo and the IK: only for this command)

    if (urdf is None) == (mjcf is None):
        raise X2Error("--urdf/--mjcf: found " + ("neither" if urdf is None else "both") + "; allowed: exactly one "
                      "of them, the arm's file")
    made = new_robot(name, urdf or mjcf or Path(), gripper=gripper, bimanual=bimanual, meshdir=meshdir, task=task)
    c = made.chain
    console.print(escape(f"wrote {made.robot_file}\nwrote {made.part_file}"))
    console.print(escape(f"chain: {c.root} -> {c.flange_body}, {len(c.joints)} joints: {', '.join(c.joints)}"))
    console.print(escape(f"home: {list(made.home)}; shoulders {made.shoulders}; reach {made.reach} m"))
    console.print("[bold]still yours to decide:[/bold]")
    for line in made.todo:
        console.print(escape(f"  - {line}"))
    console.print(escape(f"then: x2 robots check {name}"))


@robots_app.command("check")
def robots_check(
    name: Annotated[str, typer.Argument(help="robot name or path to a robot YAML")],
    task: Annotated[str | None, typer.Option("--task", help="the task whose targets it must reach (default: "
                                             "its reference task, else pick_place)")] = None,
    configs: Annotated[int, typer.Option("--configs", min=1, help="random configurations for the "
                                         "forward-kinematics comparison with the source file")] = 100,
) -> None:
    """Check a robot: chain and DoF, limits, servos, the TCP at home, contacts at home, the reach of its
    task's targets, and its forward kinematics against its source file compiled alone by plain MuJoCo.

    Exits 1 when it finds a problem. Example: [cyan]x2 robots check franka-panda[/cyan]"""
    from x2.sim.mujoco.robot_check import check_robot  # (MuJoCo and the IK: only for this command)

    r = check_robot(name, task, configs)
    console.print(escape(f"{r.robot}: {r.dof} DoF in {len(r.arms)} arm(s), checked against task {r.task}"))
    for a in r.arms:
        src = f" (part {a.part}: {a.source}; root {a.root}, flange {a.flange})" if a.part else ""
        console.print(escape(f"arm {a.arm}{src}"))
        table = Table(show_header=True, box=None, pad_edge=False)
        for col in ("joint", "type", "limits", "home", "kp", "kv", "force"):
            table.add_column(col)
        for j in a.joints:
            table.add_row(escape(j.name), j.kind, f"{j.lo:+.3f} .. {j.hi:+.3f}", f"{j.home:+.3f}", f"{j.kp:g}",
                          f"{j.kv:g}", f"{j.force:g}")
        console.print(table)
        if a.defaulted:
            console.print(escape(f"  servo {', '.join(a.defaulted)}: x2's defaults (not in the part file)"))
        reached = sum(t.reached for t in a.targets)
        console.print(escape(f"  TCP at home {list(a.home_tcp)}; reach {a.max_reach} m from joint 1; table top "
                             f"reached {a.table_cover:.0%}; {r.task} targets reached {reached}/{len(a.targets)}"))
        for t in a.targets:
            if not t.reached:
                console.print(escape(f"    not reached: {t.where} {list(t.pos)}: {t.detail}"))
        if a.fk_max_error_mm is not None:
            console.print(escape(f"  forward kinematics vs {a.source.rsplit('/', 1)[-1]} alone (plain MuJoCo), "
                                 f"{a.fk_configs} configurations: max {a.fk_max_error_mm:.4f} mm, "
                                 f"{a.fk_max_angle_deg:.4f} deg"))
    console.print(escape(f"contacts at home: {len(r.self_contacts)} within the robot, {len(r.booth_contacts)} "
                         "with the booth"))
    for p in r.problems:
        console.print(escape(f"problem: {p}"))
    console.print("[green]ok[/green]" if r.ok else f"[red]{len(r.problems)} problem(s)[/red]")
    if not r.ok:
        raise typer.Exit(1)
