"""`x2 serve KIND[:ARG]`: one of x2's policies behind openpi's websocket protocol (x2.policy.server)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from x2.cli._common import console
from x2.cli.options import RobotOpt, VariantOpt


def serve(
    spec: Annotated[str, typer.Argument(metavar="KIND[:ARG]", show_default=False, help=(
        "random, hold, expert, replay:DATASET or lerobot:PATH (a pretrained_model folder)"))],
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="port to listen on (0: a free one, "
                                      "printed)")] = 8000,
    host: Annotated[str, typer.Option("--host", help="address to listen on (0.0.0.0: every interface)")] = "127.0.0.1",
    task: Annotated[str | None, typer.Option("--task", "-t", help="the task it will be asked about (expert needs "
                                             "it)", show_default=False)] = None,
    robot: RobotOpt = None,
    variant: VariantOpt = "default",
    device: Annotated[str, typer.Option("--device", help="torch device of a lerobot policy (cpu, cuda, "
                                        "cuda:1, mps)")] = "cpu",
    chunk_exec: Annotated[str, typer.Option("--chunk-exec", help="how a lerobot policy runs its own action chunks: "
                                            "chunk (as trained), K (the first K of each: its n_action_steps) or "
                                            "ensemble (ACT's temporal ensembling, asked every tick)")] = "chunk",
    ready_file: Annotated[Path | None, typer.Option("--ready-file", help="write the URL here once serving (for a "
                                                    "program that started this one)", show_default=False)] = None,
) -> None:
    """Serve a policy over openpi's websocket protocol until Ctrl-C or SIGTERM.

    Any openpi client can drive it (metadata on connect, then one answer holding "actions" per observation);
    x2's evaluator also sends each episode's start and end. Each connection (an evaluator worker) gets a policy
    instance of its own, so episode state never mixes; all calls are made one at a time. GET /healthz answers 200.

    Example: [cyan]x2 serve lerobot:outputs/train/act/checkpoints/last/pretrained_model --device cuda[/cyan]

    ACT's temporal ensembling (a forward pass a tick): [cyan]x2 serve lerobot:PATH --chunk-exec ensemble[/cyan]

    A lower bound on a free port: [cyan]x2 serve hold --port 0[/cyan]

    The teacher, for a task: [cyan]x2 serve expert --task fruit_in_microwave[/cyan]
    """
    from x2.processes.life import arm_parent_death

    arm_parent_death()  # first: a service started by `x2 eval` must not outlive it, even while it loads
    from x2.policy.chunks import ChunkExecution
    from x2.policy.process import write_ready
    from x2.policy.server import PolicyServer
    from x2.policy.services import ServeOptions, make_service, parse_kind

    kind, _ = parse_kind(spec, where="KIND[:ARG]")
    options = ServeOptions(task=task, robot=robot, variant=variant, device=device,
                           execution=ChunkExecution.parse(chunk_exec))
    server = PolicyServer(make_service(spec, options), host, port, fresh=lambda: make_service(spec, options))
    console.print(f"serving {kind} on {server.url}", markup=False)
    console.file.flush()
    if ready_file is not None:
        write_ready(ready_file, server.url)
    server.run_until_stopped()
