"""A policy service as a child process of the run that uses it: `x2 serve` started, waited for, stopped.

The child binds port 0 and writes its URL to a ready file (atomically: the parent never reads half a URL),
so no port is ever guessed. It arms x2.processes.life's parent-death signal before it loads its policy
(`arm_parent_death`, the parent named in its environment): a SIGKILLed evaluator leaves no service behind
holding a GPU. The child runs in its own process group, so a Ctrl-C at the terminal reaches the
evaluator alone, which then stops the service in order (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import collections
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from x2.base.errors import PolicyError, one_line
from x2.files.atomic import write_bytes
from x2.policy.services import ServeOptions
from x2.processes.life import ParentProcess, child_environment

_READY = "ready"
_POLL_S = 0.05
_STOP_S = 5.0  # SIGTERM's grace before SIGKILL


def write_ready(path: str | Path, url: str) -> None:
    """In a service child, once it accepts connections: tell the parent where."""
    write_bytes(path, f"{url}\n".encode())


def serve_argv(spec: str, options: ServeOptions, host: str, ready_file: Path) -> list[str]:
    """The `x2 serve` command that serves `spec` with `options` on a free port of `host`."""
    argv = [sys.executable, "-m", "x2", "serve", spec, "--host", host, "--port", "0", "--ready-file", str(ready_file),
            "--variant", options.variant, "--device", options.device]
    for flag, value in (("--task", options.task), ("--robot", options.robot),
                        ("--chunk-exec", options.execution.describe())):
        if value is not None:
            argv += [flag, value]
    return argv


class ServiceProcess:
    """A running service child; `url` is where it listens. Stop it with stop() or `with`."""

    def __init__(self, process: subprocess.Popen[bytes], name: str, folder: Path):
        self.process, self.name, self.url = process, name, ""
        self._folder = folder
        self._stderr: collections.deque[str] = collections.deque(maxlen=50)
        # read as it comes: a pipe nobody reads would block a chatty child once the kernel's buffer is full
        self._reader = threading.Thread(target=self._drain, name="x2-service-stderr", daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        if self.process.stderr is None:
            return
        with self.process.stderr as pipe:
            for raw in pipe:
                if line := raw.decode(errors="replace").rstrip():
                    self._stderr.append(line)

    @classmethod
    def start(cls, spec: str, options: ServeOptions, host: str = "127.0.0.1",
              startup_timeout_s: float = 120.0) -> ServiceProcess:
        """`x2 serve SPEC` in a child process, returned once it accepts connections."""
        return cls.launch(lambda ready: serve_argv(spec, options, host, ready), spec, startup_timeout_s)

    @classmethod
    def launch(cls, command: Callable[[Path], Sequence[str]], name: str,
               startup_timeout_s: float = 120.0) -> ServiceProcess:
        """Run `command(ready_file)`, a process that calls x2.processes.life.arm_parent_death() first and
        write_ready(ready_file, url) once it serves; wait for that. PolicyError, with the child's last stderr
        line, when it exits first or takes longer than `startup_timeout_s`."""
        folder = Path(tempfile.mkdtemp(prefix="x2-serve-"))
        ready = folder / _READY
        env = child_environment(ParentProcess.here())
        try:
            process = subprocess.Popen(list(command(ready)), env=env, stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, process_group=0)
        except OSError as exc:
            shutil.rmtree(folder, ignore_errors=True)
            raise PolicyError(f"policy service {name}: cannot start it: {exc}") from None
        service = cls(process, name, folder)
        until = time.monotonic() + startup_timeout_s
        while not ready.exists():
            if process.poll() is not None or time.monotonic() > until:
                started = process.poll() is None
                service.stop()
                why = (f"not serving after {startup_timeout_s:g} s" if started
                       else f"exited with code {process.returncode} before serving")
                raise PolicyError(one_line(f"policy service {name}: {why}: {service.last_error()}"))
            time.sleep(_POLL_S)
        service.url = ready.read_text().strip()
        return service

    def last_error(self) -> str:
        """The child's last non-empty stderr line so far (waits briefly for the pipe's end when it exited)."""
        if self.process.poll() is not None:
            self._reader.join(timeout=2.0)
        return self._stderr[-1] if self._stderr else "(it wrote nothing to stderr)"

    def stderr_tail(self) -> list[str]:
        return list(self._stderr)

    def stop(self) -> None:
        """SIGTERM, and SIGKILL when it has not ended within a few seconds. Idempotent."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(_STOP_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> ServiceProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

