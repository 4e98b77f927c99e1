"""`x2 tasks ...`: list, inspect, preview and start tasks; list the predicates and skills a task may use."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, TypedDict

import typer
from rich.columns import Columns
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from x2 import envspec as spec
from x2.base.errors import X2Error
from x2.cli._common import console
from x2.cli.group_class import typer_group
from x2.cli.options import GripperOpt, RendererOpt, RobotOpt, VariantOpt
from x2.cli.progress import progress
from x2.envspec.env import NodeSpec
from x2.envspec.schema import DIMENSIONS
from x2.envspec.source import display_path
from x2.labeling import topological_order
from x2.recorded.frames import DEFAULT_SIZE
from x2.sim.camera import ImageSize, choose_renderer

tasks_app = typer_group(
    "tasks", "List and inspect tasks and their subtask DAGs.",
    "  x2 tasks ls\n\n  x2 tasks show fruit_in_microwave --graph\n\n  x2 tasks show pick_place --robot artixon-h\n\n"
    "  x2 tasks preview fruit_in_microwave --out preview.png\n\n  x2 tasks predicates\n\n  x2 tasks skills --json",
)

ROLE_STYLE = {"source": "bold green", "inner": "bold yellow", "sink": "bold magenta"}
NODE_WIDTH = 36  # one DAG node's panel in `tasks show --graph`


@tasks_app.command("ls")
def tasks_ls(
    dimension: Annotated[str | None, typer.Option(
        "--dimension", help="only tasks exercising this capability dimension: " + ", ".join(DIMENSIONS))] = None,
) -> None:
    """List tasks with the capability dimensions they exercise.

    Example: [cyan]x2 tasks ls[/cyan]

    Only the bimanual ones: [cyan]x2 tasks ls --dimension bimanual_coordination[/cyan]
    """
    if dimension is not None and dimension not in DIMENSIONS:
        raise X2Error(f"--dimension: found {dimension!r}; allowed: {', '.join(DIMENSIONS)}")
    table = Table(title="tasks" if dimension is None else f"tasks exercising {dimension}", title_justify="left")
    for col in ("name", "dimensions", "robot", "scene", "subtasks", "instruction"):
        table.add_column(col)
    for name in spec.names("tasks"):
        env = spec.load_env(name)
        assert env.task is not None
        if dimension is not None and dimension not in env.task.dimensions:
            continue
        table.add_row(*map(escape, (env.task.name, ", ".join(env.task.dimensions), env.robot.name, env.scene_name,
                                    str(len(env.task.nodes)), env.task.instruction)))
    console.print(table)


@tasks_app.command("show")
def tasks_show(
    name: Annotated[str, typer.Argument(help="task name or path to a task YAML")],
    graph: Annotated[bool, typer.Option("--graph", help="draw the DAG")] = False,
    robot: Annotated[str | None, typer.Option("--robot", help="compile for this robot instead")] = None,
    variant: Annotated[str, typer.Option("--variant", help="scene variant")] = "default",
) -> None:
    """Show a compiled task: subtasks, predicates, order.

    The task is compiled as `x2 synth` compiles it (its skill bindings checked, its world built in MuJoCo), so
    a task shown here is one synthesis accepts, and a refusal is the line synthesis would give.

    Example: [cyan]x2 tasks show fruit_in_microwave --graph[/cyan]
    """
    from x2.synth.options import SessionOptions  # (MuJoCo: only when a task is shown)

    env, backend = SessionOptions(name, robot=robot, variant=variant).compile(every_node=False)
    backend.close()
    task = env.task
    assert task is not None
    unbound = [n.id for n in task.nodes if n.skill is None]
    console.print(f"[bold]{escape(task.name)}[/bold]: {escape(task.instruction)}")
    console.print(escape(f"robot {env.robot.name}, scene {env.scene_name} (variant {env.variant}, split {env.split}), "
                         f"horizon {task.horizon_s:g} s at {env.fps} Hz"))
    objects = Table(title="objects", title_justify="left")
    for col in ("name", "assets", "tags", "placement"):
        objects.add_column(col)
    for obj in env.objects:
        where = f"region {obj.region.name}" if obj.region else f"pose {obj.pose}"
        objects.add_row(*map(escape, (obj.name, ", ".join(a.name for a in obj.candidates), ", ".join(obj.tags), where)))
    console.print(objects)
    if env.roles:
        roles = Table(title="roles (bound to one of their objects at every reset)", title_justify="left")
        for col in ("role", "one of", "never the same as"):
            roles.add_column(col)
        for role in env.roles:
            roles.add_row(*map(escape, (role.name, ", ".join(role.one_of), role.unlike or "")))
        console.print(roles)
    order = topological_order(task.node_ids, task.edges)
    nodes = {n.id: n for n in task.nodes}
    table = Table(title="subtasks (topological order)", title_justify="left")
    for col in ("node", "success", "failure", "timeout", "score", "skill"):
        table.add_column(col)
    for nid in order:
        n = nodes[nid]
        skill = "-"
        if n.skill is not None:
            skill = " ".join([n.skill.name, f"arm={n.skill.arm}", *([f"target={n.skill.target}"] if n.skill.target
                              else []), *(f"{k}={v}" for k, v in n.skill.params.items())])
        table.add_row(Text(nid, style=ROLE_STYLE[_role(nid, task.edges)]),
                      escape("\n".join(c.describe() for c in n.success)),
                      escape("\n".join(c.describe() for c in n.failure)),
                      f"{n.timeout_s:g} s" if n.timeout_s else "-", f"{n.score:g}", escape(skill))
    console.print(table)
    if unbound:
        console.print(escape(f"teleoperation only: x2 synth refuses it (no skill on {', '.join(unbound)}); "
                             "`x2 collect teleop` records it"), soft_wrap=True)
    if graph:
        console.print(_draw(task.node_ids, task.edges, {n.id: n for n in task.nodes}))


@tasks_app.command("preview")
def tasks_preview(
    name: Annotated[str, typer.Argument(help="task name or path to a task YAML")],
    out: Annotated[Path, typer.Option("--out", "-o", help="the PNG to write", dir_okay=False)],
    seeds: Annotated[int, typer.Option("--seeds", help="tiles: attempt slots 0..N-1")] = 12,
    master_seed: Annotated[int, typer.Option("--master-seed", help="the master seed, as `x2 synth --seed` "
                                             "takes it")] = 0,
    camera: Annotated[str | None, typer.Option("--camera", help="camera to draw (default: the robot's head "
                                               "camera, or the booth's front one)", show_default=False)] = None,
    size: Annotated[str, typer.Option("--size", help="tile size HxW")] = str(DEFAULT_SIZE),
    robot: RobotOpt = None,
    gripper: GripperOpt = None,
    variant: VariantOpt = "default",
    columns: Annotated[int | None, typer.Option("--columns", help="tiles per row (default: 4, more for many "
                                                "seeds)", show_default=False)] = None,
    axis: Annotated[str | None, typer.Option("--axis", help="vary one randomisation axis only: appearance (the "
                                             "look), task (assets, layout, instruction) or embodiment (the "
                                             "cameras, the table's height); the rest stays slot 0's",
                                             show_default=False)] = None,
    look: Annotated[str | None, typer.Option("--look", help="draw every tile in this look: a scenery block of "
                                             "the task's scene, or x2's built-in lab (textured table, walls and "
                                             "floor, shadows; docs/looks.md)", show_default=False)] = None,
    renderer: RendererOpt = "classic",
) -> None:
    """Draw the worlds of many seeded resets of a task in one PNG: layouts, asset draws, scenery.

    Tile k is the world `x2 synth --seed S` starts its attempt k from in a new dataset (slot k of master
    seed S), labelled with the slot, its seed and the assets drawn for objects that have several.

    Example: [cyan]x2 tasks preview fruit_in_microwave --out preview.png[/cyan]

    More seeds, the booth's camera, another scene variant:
    [cyan]x2 tasks preview fruit_in_microwave --out eval.png --seeds 24 --camera front --variant eval_fruit[/cyan]

    Only the look changes from tile to tile:
    [cyan]x2 tasks preview pick_place --variant randomized --axis appearance --out looks.png[/cyan]

    The textured lab instead of the green booth:
    [cyan]x2 tasks preview hook_pull --look lab --out lab.png[/cyan]
    """
    from x2.render.task_preview import task_preview  # (the world builder and renderer: only when asked)

    choose_renderer(renderer)
    tile_size = ImageSize.parse(size)
    # Off a terminal, a line every 2 s rather than the usual 10: a whole preview often takes less than 10 s.
    with progress("rendering", "tiles", every_s=2.0) as update:
        preview = task_preview(name, out, seeds=seeds, master_seed=master_seed, camera=camera, size=tile_size,
                               robot=robot, variant=variant, gripper=gripper, columns=columns, axis=axis,
                               look=look, on_tile=lambda done, total: update(done, total))
    n = len(preview.tiles)
    console.print(escape(f"wrote {preview.path}: {n} tile{'' if n == 1 else 's'} of {preview.task} "
                         f"({preview.camera} at {tile_size}, master seed {master_seed})"), soft_wrap=True)


class ArgRow(TypedDict):
    name: str
    type: str
    default: object  # None: none (a predicate's required argument), or the skill works it out
    doc: str


class RegistryRow(TypedDict):
    name: str
    doc: str
    args: list[ArgRow]


@tasks_app.command("new")
def tasks_new(
    name: Annotated[str, typer.Argument(help="the new task's name (letters, digits, _ - .)")],
    source: Annotated[str, typer.Option("--from", help="the task to start from: a name or a path to a task "
                                        "YAML")] = "pick_place",
    scene: Annotated[str | None, typer.Option("--scene", help="set its scene to this one (built-in or "
                                              "./specs/scenes; default: the source task's)",
                                              show_default=False)] = None,
    robot: Annotated[str | None, typer.Option("--robot", help="set the robot it runs with (x2 robots ls, or "
                                              "./specs/robots; default: the source task's)",
                                              show_default=False)] = None,
) -> None:
    """Start a task of your own: write ./specs/tasks/NAME.yaml, a copy of another task to edit.

    The copy has its name changed and a header saying what to edit; an existing file is never written over.

    Example: [cyan]x2 tasks new my_task --from pick_place[/cyan], then [cyan]x2 tasks show my_task[/cyan]

    In a scene of your own: [cyan]x2 tasks new my_task --from pick_place --scene my_booth[/cyan]

    Run by a robot of your own: [cyan]x2 tasks new my_task --from pick_place --robot my-arm[/cyan]
    """
    from x2.envspec.scaffold import new_task

    made = new_task(name, source, scene, robot)
    console.print(escape(f"wrote {display_path(made.path)}, a copy of the task {made.source.stem}: edit it, then "
                         f"`x2 tasks show {name}`"), soft_wrap=True)


JsonFlag = Annotated[bool, typer.Option("--json", help="print JSON instead of a table")]


@tasks_app.command("predicates")
def tasks_predicates(as_json: JsonFlag = False) -> None:
    """List every predicate a task's `success:` or `failure:` may name, with its arguments.

    An argument's type says what it takes: object (a scene object or @role), part (OBJECT/PART, a site),
    joint (OBJECT/JOINT or a robot joint), arm (left, right or both), float (a number). An argument with
    a default may be left out.

    Example: [cyan]x2 tasks predicates[/cyan]
    """
    from x2.tasks.predicates import PREDICATES

    rows = [RegistryRow(name=d.name, doc=d.doc, args=[ArgRow(name=a, type=kind, default=d.defaults.get(a), doc="")
                                                      for a, kind in d.params.items()]) for d in PREDICATES.values()]
    _print_registry("predicates", rows, as_json)


@tasks_app.command("skills")
def tasks_skills(as_json: JsonFlag = False) -> None:
    """List every skill a task node's `skill:` may name, with its parameters.

    A binding is `skill: {name: NAME, arm: ARM, target: TARGET, PARAMETER: VALUE, ...}`; the parameters may be
    left out (a default of "-": the skill works it out, as the meaning says).

    Example: [cyan]x2 tasks skills[/cyan]
    """
    from x2.synth.skills import SKILLS

    rows: list[RegistryRow] = []
    for d in SKILLS.values():
        arms = "both" if d.needs_base else "left, right, auto" + (", both" if d.both_arms else "")
        bound = [ArgRow(name="arm", type=arms, default="auto" if "auto" in arms else "both",
                        doc="the arm it runs on (auto: the one nearest the target)")]
        if d.needs_target:
            bound.append(ArgRow(name="target", type="OBJECT, @role or OBJECT/PART", default=None,
                                doc="what it acts on (required)"))
        rows.append(RegistryRow(name=d.name, doc=d.doc, args=bound + [
            ArgRow(name=a, type=p.kind.__name__, default=p.default, doc=p.doc) for a, p in d.params.items()]))
    _print_registry("skills", rows, as_json)


def _print_registry(title: str, rows: list[RegistryRow], as_json: bool) -> None:
    """One table (or JSON list) of a registry: a row per entry with its meaning, a row per argument below it."""
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title=title, title_justify="left")
    for col in ("name", "argument", "type", "default", "meaning"):
        table.add_column(col)
    for row in rows:
        args = row["args"]
        table.add_row(Text(row["name"], style="bold"), "", "", "", escape(row["doc"]), end_section=not args)
        for i, a in enumerate(args):
            default = "-" if a["default"] is None else str(a["default"])
            table.add_row("", escape(a["name"]), escape(a["type"]), escape(default), escape(a["doc"]),
                          end_section=i == len(args) - 1)
    console.print(table)


def _role(node: str, edges: tuple[tuple[str, str], ...]) -> str:
    if not any(b == node for _, b in edges):
        return "source"
    return "sink" if not any(a == node for a, _ in edges) else "inner"


def _draw(nodes: tuple[str, ...], edges: tuple[tuple[str, str], ...], specs: Mapping[str, NodeSpec]) -> Panel:
    """Layers by longest path from a source; each node a panel listing what it waits for."""
    depth: dict[str, int] = {}
    for nid in topological_order(nodes, edges):
        depth[nid] = max((depth[a] + 1 for a, b in edges if b == nid), default=0)
    rows: list[Columns | Text] = []
    widest = 0  # cells in the fullest layer
    for layer in range(max(depth.values()) + 1):
        cells = []
        for nid in (n for n in nodes if depth[n] == layer):
            preds = [a for a, b in edges if b == nid]
            body = Text(specs[nid].description or nid)
            if preds:
                body.append("\nafter " + " + ".join(preds), style="dim")
            cells.append(Panel(body, title=escape(nid), border_style=ROLE_STYLE[_role(nid, edges)], width=NODE_WIDTH))
        widest = max(widest, len(cells))
        rows.append(Columns(cells))
        if layer < max(depth.values()):
            rows.append(Text("        │\n        ▼", style="dim"))
    legend = Text.assemble(("■ source  ", ROLE_STYLE["source"]), ("■ inner  ", ROLE_STYLE["inner"]),
                           ("■ sink", ROLE_STYLE["sink"]))
    from rich.console import Group

    # As wide as the fullest layer (node panels and Columns' 1-column gaps, the frame's borders and padding),
    # not the console's width: off a terminal that is a width no line should fill. A narrower terminal
    # caps it and Columns flows a layer's nodes onto more rows.
    width = max(widest * (NODE_WIDTH + 1) - 1, legend.cell_len) + 4
    return Panel(Group(*rows, legend), title="task DAG", title_align="left", width=width)
