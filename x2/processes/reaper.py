"""Clean-up after a SIGKILLed driver of a `--ray local` run: `python -m x2.processes.reaper PID FOLDER`.

`ray.init` on this machine starts Ray's own processes (GCS, raylet, agents) as the driver's children. When
the driver ends normally `ray.shutdown()` stops them; when it is killed, the GCS and raylet notice and go but
the dashboard and runtime-env agents stay, idle, for ever (measured with Ray 2.x: still there minutes later).
The driver starts this watcher beside them. It waits for the driver to go; if the driver did not first say
it shut Ray down (a line on the watcher's stdin), it kills every process that still holds a file under the
run's Ray folder (each Ray process keeps its log files there open, and the agents rename themselves, so their
names cannot be matched) and removes the folder.

Linux only (/proc); elsewhere the driver does not start it.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

_POLL_S = 0.2
_ROUNDS = 5  # processes may still be starting other ones when the driver dies: look again a few times
DONE = b"done\n"  # what the driver writes after ray.shutdown(): nothing is left to reap


def holders(folder: Path) -> list[int]:
    """Processes (other than this one) whose command line or open files name something under `folder`."""
    prefix = str(folder.resolve())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if prefix in (entry / "cmdline").read_bytes().decode("utf-8", "replace"):
                found.append(int(entry.name))
                continue
            for fd in (entry / "fd").iterdir():
                if os.readlink(fd).startswith(prefix):
                    found.append(int(entry.name))
                    break
        except OSError:  # (gone meanwhile, or not ours to read)
            continue
    return found


def reap(folder: Path) -> int:
    """Kill what still runs from `folder` and remove it; how many processes were killed."""
    killed = 0
    for _ in range(_ROUNDS):
        pids = holders(folder)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(_POLL_S)
    shutil.rmtree(folder, ignore_errors=True)
    return killed


def main(argv: list[str]) -> int:
    driver, folder = int(argv[0]), Path(argv[1])
    said_done = threading.Event()

    def listen() -> None:
        if sys.stdin.buffer.readline() == DONE:
            said_done.set()

    threading.Thread(target=listen, daemon=True).start()
    while os.getppid() == driver and not said_done.is_set():
        time.sleep(_POLL_S)
    if not said_done.is_set():
        reap(folder)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (a Ctrl-C at the terminal reaches the driver; this waits for it)
    sys.exit(main(sys.argv[1:]))
