"""A policy service as a child process (x2.policy.process): started and waited for on a free port, stopped
with the run, a clean one-line PolicyError when it cannot start, and never outliving a SIGKILLed parent. The
child is tests/helpers/toy_policy.py, which serves the way `x2 serve` does (x2's own kinds are tested with
their services); `x2 serve` itself is started with a kind it refuses, through the same flags production uses.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers.processes import Proc, descendants, kill_all, wait_gone

from x2.base.errors import PolicyError
from x2.policy.chunks import ChunkExecution
from x2.policy.client import RemotePolicy
from x2.policy.process import ServiceProcess, serve_argv
from x2.policy.services import ServeOptions

TOY = Path(__file__).parent / "helpers" / "toy_policy.py"
START_S = 60.0  # generous: a loaded two-core machine imports numpy and websockets slowly
GONE_S = 20.0  # only so a broken build fails instead of hanging


def toy_command(ready: Path) -> list[str]:
    return [sys.executable, str(TOY), str(ready)]


def test_a_service_child_serves_and_stops_with_sigterm() -> None:
    with ServiceProcess.launch(toy_command, "toy", startup_timeout_s=START_S) as service:
        assert service.url.startswith("ws://127.0.0.1:")
        with RemotePolicy(service.url, timeout_s=START_S) as policy:
            assert policy.info.identity == "toy"
            assert policy.infer({"observation.state": np.ones(2)})["actions"].tolist() == [2.0, 2.0]
    assert service.process.returncode == 0  # SIGTERM ended it through its shutdown, not a kill


def test_a_child_that_exits_early_is_one_line_with_its_last_stderr_line() -> None:
    def failing(ready: Path) -> list[str]:
        return [sys.executable, "-c", "import sys; print('loading', file=sys.stderr); "
                "print('no policy in that folder', file=sys.stderr); sys.exit(3)"]

    with pytest.raises(PolicyError) as error:
        ServiceProcess.launch(failing, "lerobot:nowhere", startup_timeout_s=START_S)
    message = str(error.value)
    assert "lerobot:nowhere" in message and "code 3" in message and "no policy in that folder" in message
    assert "\n" not in message


def test_x2_serve_takes_the_flags_production_passes_and_refuses_an_unknown_kind(tmp_path: Path) -> None:
    options = ServeOptions(task="pick_place", robot="franka-panda", variant="default", device="cpu",
                           execution=ChunkExecution(ensemble=True))
    argv = serve_argv("nonesuch", options, "127.0.0.1", tmp_path / "ready")
    assert argv[argv.index("--task") + 1] == "pick_place" and argv[argv.index("--device") + 1] == "cpu"
    assert argv[argv.index("--chunk-exec") + 1] == "ensemble"
    with pytest.raises(PolicyError) as error:
        ServiceProcess.start("nonesuch", options, startup_timeout_s=START_S)
    # (x2 serve got past its options: the kind is what it refused, in its own one-line error)
    assert "code 2" in str(error.value) and "found 'nonesuch'" in str(error.value)


PARENT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from x2.policy.process import ServiceProcess
    toy = sys.argv[1]
    service = ServiceProcess.launch(lambda ready: [sys.executable, toy, str(ready)], "toy", startup_timeout_s=60)
    print(service.process.pid, service.url, flush=True)
    time.sleep(600)
""")


def test_the_service_dies_with_its_sigkilled_parent() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(TOY)], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[Proc] = set()
    try:
        assert parent.stdout is not None
        line = parent.stdout.readline()  # (the parent prints once its service serves, or exits)
        assert line, f"the parent ended before its service served: {parent.stderr.read()[-2000:]}"
        pid, url = line.split()
        seen = descendants(parent.pid)
        assert int(pid) in {p.pid for p in seen}
        with RemotePolicy(url, timeout_s=START_S) as policy:  # it serves: the kill below hits a live service
            assert policy.infer({"observation.state": np.zeros(1)})["actions"].tolist() == [0.0]
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        left = wait_gone(seen, GONE_S)
        assert not left, f"outlived their SIGKILLed parent: {[p.cmdline() for p in left]}"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        kill_all(seen)
