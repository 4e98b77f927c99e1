"""x2.base.scheduling: the calling thread's policy survives code that raises it to real-time (SVT-AV1 as root)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from x2.base.scheduling import is_realtime, keeps_scheduling, leave_realtime


def _can_go_realtime() -> bool:
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except (OSError, AttributeError):
        return False
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return True


needs_realtime = pytest.mark.skipif(not _can_go_realtime(), reason="needs the right to set SCHED_FIFO (root)")


@needs_realtime
def test_inside_keeps_scheduling_a_thread_cannot_turn_realtime_and_after_it_can_again() -> None:
    with keeps_scheduling(), pytest.raises(PermissionError):
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(99))  # what SVT-AV1 does to its caller
    assert not is_realtime()
    assert _can_go_realtime()  # the right is back once the block ends


@needs_realtime
def test_encoding_av1_inside_keeps_scheduling_leaves_the_caller_as_it_was(tmp_path: Path) -> None:
    import av
    import numpy as np

    def encode(path: str) -> None:
        with av.open(path, "w") as box:
            stream = box.add_stream("libsvtav1", rate=30)
            assert isinstance(stream, av.VideoStream)
            stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
            frame = av.VideoFrame.from_ndarray(np.zeros((48, 64, 3), np.uint8), format="rgb24")
            for packet in [*stream.encode(frame), *stream.encode()]:
                box.mux(packet)

    threads_rt: list[int] = []
    try:
        with keeps_scheduling():
            encode(str(tmp_path / "a.mp4"))
            # the encoder's own threads (started in the block, alive after it) are not real-time either
            # (Mesa's disk-cache thread runs SCHED_BATCH: only the real-time policies count)
            tids = [int(t) for t in os.listdir("/proc/self/task")]
            threads_rt = [t for t in tids if os.sched_getscheduler(t) in (os.SCHED_FIFO, os.SCHED_RR)]
        assert not is_realtime()
    finally:
        leave_realtime()
    assert threads_rt == []
    with av.open(str(tmp_path / "a.mp4")) as box:
        assert sum(1 for _ in box.decode(video=0)) == 1  # and it still encodes


@needs_realtime
def test_leave_realtime_says_whether_it_was() -> None:
    os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(5))
    assert leave_realtime() is True
    assert leave_realtime() is False and not is_realtime()
