"""Worker processes die with their parent (x2.processes.life): a SIGKILLed `x2 synth --workers 2` leaves no
pool worker and no multiprocessing resource tracker (where one was started) behind; a pool whose workers
were spawned by a thread that then ends keeps working (the kernel's parent-death signal follows the
spawning thread, not the process); a worker whose parent is already gone when it starts exits at once; a
pool that runs beside another thread spawns its workers even when asked for forked copies.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.processes import Proc, descendants, kill_all, wait_gone
from helpers.x2_cli import HEADLESS_ENV

from x2.processes.life import process_pool

HANG_GUARD_S = 120.0  # only so a broken build fails instead of hanging; the benchmark measures the time


def _pool_processes(procs: set[Proc]) -> tuple[set[Proc], set[Proc]]:
    """(pool workers, resource trackers) among the descendants `procs` of an x2 command: x2 synth's workers are
    forked copies of it (spawned ones where it runs other threads), a resource tracker is spawned."""
    trackers = {p for p in procs if "resource_tracker" in p.cmdline()}
    return procs - trackers, trackers


@pytest.mark.parametrize("entry", ["module", "script"])
def test_sigkilled_synth_leaves_no_worker_and_no_resource_tracker(tmp_path: Path, entry: str) -> None:
    # `python -m x2` and the console script (x2 synth's workers are forked copies of either, started before its
    # progress display's thread; a spawned worker of the latter would import the script's module first).
    x2 = [sys.executable, "-m", "x2"] if entry == "module" else [str(Path(sys.executable).with_name("x2"))]
    proc = subprocess.Popen([*x2, "synth", "--task", "fruit_in_microwave", "-n", "3",
                             "--workers", "2", "--dataset", str(tmp_path / "fruit")], cwd=tmp_path,
                            env=HEADLESS_ENV, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    seen: set[Proc] = set()
    try:
        until = time.monotonic() + HANG_GUARD_S
        while proc.poll() is None and time.monotonic() < until:
            seen |= descendants(proc.pid)
            workers, trackers = _pool_processes(seen)
            if len(workers) >= 2:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"synth ended before its workers were seen: {proc.stderr.read()[-2000:]}"
        time.sleep(0.5)  # (a resource tracker, where the pool starts one, has started by now)
        seen |= descendants(proc.pid)
        workers, trackers = _pool_processes(seen)
        assert len(workers) >= 2, [p.cmdline() for p in seen]
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        left = wait_gone(seen, HANG_GUARD_S)
        assert not left, f"outlived their SIGKILLed parent: {[p.cmdline() for p in left]}"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_all(seen)


_THREAD_SPAWNED_POOL = textwrap.dedent("""
    import os, threading
    from x2.processes.life import process_pool
    box = {}
    def start():  # this thread spawns the workers, then ends
        box["pool"] = pool = process_pool(2)
        box["first"] = {pool.submit(os.getpid).result() for _ in range(4)}
    t = threading.Thread(target=start)
    t.start()
    t.join()
    with box["pool"] as pool:
        later = {pool.submit(os.getpid).result() for _ in range(8)}
    print("same workers" if later <= box["first"] else f"new workers {later} vs {box['first']}")
""")


def test_workers_spawned_by_a_thread_outlive_that_thread(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-c", _THREAD_SPAWNED_POOL], cwd=tmp_path, env=HEADLESS_ENV,
                         capture_output=True, text=True, timeout=HANG_GUARD_S)
    # With the death signal armed, the workers would be killed when the thread ends: BrokenProcessPool.
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "same workers", run.stdout


_ORPHAN = textwrap.dedent("""
    import os, sys
    from x2.processes.life import ParentProcess, die_with
    die_with(ParentProcess(int(sys.argv[1]), spawned_by_main_thread=True))
    print("still running")
""")


def test_a_worker_whose_parent_is_already_gone_exits_at_once(tmp_path: Path) -> None:
    # The pid given is not this process's parent: as if the parent died (and the worker was reparented)
    # before the death signal was armed.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    run = subprocess.run([sys.executable, "-c", _ORPHAN, gone.stdout.strip()], cwd=tmp_path, env=HEADLESS_ENV,
                         capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert run.returncode == 1 and "still running" not in run.stdout, (run.returncode, run.stdout, run.stderr)
    # The control: given its real parent (this process), the same script runs on.
    ours = subprocess.run([sys.executable, "-c", _ORPHAN, str(os.getpid())], cwd=tmp_path, env=HEADLESS_ENV,
                          capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert ours.returncode == 0 and "still running" in ours.stdout, (ours.returncode, ours.stdout, ours.stderr)


def test_the_death_signal_is_armed_before_the_initializer_is_imported() -> None:
    # Heavy initializer modules (x2.synth.runner) take seconds to import: a worker must not live that long
    # after its parent was killed, so the signal comes first.
    import signal as signals

    from helpers import armed_at_import

    with process_pool(1, armed_at_import.initialise) as pool:
        initialised, armed = pool.submit(armed_at_import.armed_at_import).result()
    assert initialised and armed == signals.SIGKILL



_STOPPED_POOL = textwrap.dedent("""
    import multiprocessing, os, time
    from x2.processes.life import process_pool, stop_workers
    pool = process_pool(2)
    tasks = [pool.submit(time.sleep, 3600) for _ in range(4)]  # two run, the rest wait
    while len(multiprocessing.active_children()) < 2:
        time.sleep(0.05)
    workers = [p.pid for p in multiprocessing.active_children()]
    stop_workers(pool)  # returns without waiting an hour for the two running
    alive = []
    for pid in workers:
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
    # none ran to its end: each queued one cancelled, or (already handed to the workers' queue) failed with them
    print(len(workers), alive, multiprocessing.active_children(),
          all(t.cancelled() or t.exception(timeout=60) is not None for t in tasks))
""")


def test_stop_workers_abandons_running_tasks_and_leaves_no_worker(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-c", _STOPPED_POOL], cwd=tmp_path, env=HEADLESS_ENV,
                         capture_output=True, text=True, timeout=HANG_GUARD_S)  # (the interpreter's exit too)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["2", "[]", "[]", "True"], run.stdout


_STOPPED_WHILE_SENDING = textwrap.dedent("""
    import sys, threading, time
    from x2.processes.life import process_pool, stop_workers

    def reading(thread):  # is the pool's manager thread in the middle of reading a result?
        frame = sys._current_frames().get(thread.ident)
        while frame is not None:
            if frame.f_code.co_name == "_recv_bytes":
                return True
            frame = frame.f_back
        return False

    def big_result():
        return b"x" * 300_000_000  # seconds to pickle, send and read back

    if __name__ == "__main__":
        pool = process_pool(1)
        task = pool.submit(big_result)
        manager = pool._executor_manager_thread
        while not reading(manager):
            time.sleep(0.001)
        stop_workers(pool)  # the worker dies mid-message: the half-read result must not block the pool's end
        print("stopped", task.done())
""")



def test_stop_workers_returns_when_a_worker_dies_in_the_middle_of_sending_its_result(tmp_path: Path) -> None:
    (tmp_path / "stopping.py").write_text(_STOPPED_WHILE_SENDING)
    run = subprocess.run([sys.executable, "stopping.py"], cwd=tmp_path, env=HEADLESS_ENV,
                         capture_output=True, text=True, timeout=HANG_GUARD_S)  # (the interpreter's exit too)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["stopped", "True"], run.stdout


_COPIES_BESIDE_A_THREAD = textwrap.dedent("""
    import multiprocessing, os, threading, time
    from x2.processes.life import process_pool

    def start_method(pool):
        return pool._mp_context.get_start_method()

    alone = process_pool(1, copies=True)
    busy = threading.Event()
    threading.Thread(target=busy.wait, daemon=True).start()  # another thread runs: a fork would copy its locks
    beside = process_pool(1, copies=True)
    for pool in (alone, beside):
        with pool:
            pool.submit(os.getpid).result()
    print(start_method(alone), start_method(beside))
    busy.set()
""")


def test_copies_are_forked_only_while_no_other_thread_runs(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-c", _COPIES_BESIDE_A_THREAD], cwd=tmp_path, env=HEADLESS_ENV,
                         capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["fork", "spawn"], run.stdout
