"""Running the real `x2` on a machine that refuses writes: a failing disk, a read-only folder, a tiny tmpfs.

Only the transport is replaced. A failing disk is tests/helpers/fault_writes.c (LD_PRELOAD): the n-th write
under a path fails with ENOSPC or EIO, below Python, HDF5, zarr and the video encoder alike. A read-only
folder is a read-only bind mount, and a full disk a small tmpfs, each in a private user and mount namespace
(`unshare`), so no privilege is needed and nothing outlives the command.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path

from helpers.x2_cli import HEADLESS_ENV

SOURCE = Path(__file__).with_name("fault_writes.c")


@functools.cache
def fault_library(build_dir: Path) -> Path:
    out = build_dir / "libfault_writes.so"
    compiler = shutil.which("cc") or shutil.which("gcc")
    assert compiler, "a C compiler is needed for the fault-injection tests (make system-deps installs gcc)"
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(out), str(SOURCE), "-ldl"], check=True)
    return out


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=timeout)


def run_failing_disk(args: list[str], cwd: Path, library: Path, under: Path, errno: str = "ENOSPC",
                     after: int = 1, timeout: float = 240) -> subprocess.CompletedProcess:
    """`x2 ARGS` where the `after`-th write (and every later one) to a file under `under` fails."""
    env = {**HEADLESS_ENV, "LD_PRELOAD": str(library), "X2_FAULT_PATH": str(under.resolve()),
           "X2_FAULT_AFTER": str(after), "X2_FAULT_ERRNO": errno}
    return _run([sys.executable, "-m", "x2", *args], cwd, env, timeout)


def run_read_only(args: list[str], cwd: Path, folder: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """`x2 ARGS` with `folder` (and everything under it) read-only."""
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
    cmd = ["unshare", "-r", "-m", "sh", "-c", script, "sh", str(folder), sys.executable, "-m", "x2", *args]
    return _run(cmd, cwd, dict(HEADLESS_ENV), timeout)


def run_without_permission(args: list[str], cwd: Path, folder: Path,
                           timeout: float = 240) -> subprocess.CompletedProcess:
    """`x2 ARGS` by a user who may not write `folder`: mode 555, and the command runs without root's right to
    ignore modes (a user namespace where this user is an ordinary one)."""
    folder.chmod(0o555)
    try:
        cmd = ["unshare", "-U", "--map-user=1000", "--map-group=1000", sys.executable, "-m", "x2", *args]
        return _run(cmd, cwd, dict(HEADLESS_ENV), timeout)
    finally:
        folder.chmod(0o755)


def run_tiny_tmpfs(args: list[str], cwd: Path, folder: Path, size_kb: int, keep: Path,
                   timeout: float = 240) -> subprocess.CompletedProcess:
    """`x2 ARGS` with a `size_kb` tmpfs mounted at `folder`; what it holds afterwards is copied to `keep`
    (the mount ends with the namespace)."""
    keep.mkdir(parents=True, exist_ok=True)
    script = ('mount -t tmpfs -o size="$2"k tmpfs "$1" || exit 97; d="$1"; k="$3"; shift 3; "$@"; rc=$?; '
              'cp -a "$d"/. "$k"/; exit $rc')
    cmd = ["unshare", "-r", "-m", "sh", "-c", script, "sh", str(folder), str(size_kb), str(keep),
           sys.executable, "-m", "x2", *args]
    return _run(cmd, cwd, dict(HEADLESS_ENV), timeout)


def one_error_line(run: subprocess.CompletedProcess, cause: str) -> str:
    """The run ended in exactly one `error: <cause> writing <path>: ...` line on stderr, exit 2, no signal,
    no traceback; that line."""
    where = f"exit {run.returncode}\nstdout: {run.stdout[-2000:]}\nstderr: {run.stderr[-4000:]}"
    assert run.returncode == 2, where
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, where
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, where
    assert lines[0].startswith(f"error: {cause} writing "), where
    return lines[0]
