"""A pool initializer's module that notes, when it is imported, whether the process already has its
parent-death signal armed (x2.processes.life must arm it before importing the initializer)."""

from __future__ import annotations

import ctypes

_PR_GET_PDEATHSIG = 2


def _pdeathsig() -> int:
    signal_number = ctypes.c_int(0)
    ctypes.CDLL(None).prctl(_PR_GET_PDEATHSIG, ctypes.byref(signal_number), 0, 0, 0)
    return signal_number.value


ARMED_AT_IMPORT = _pdeathsig()
_initialised = False


def initialise() -> None:
    global _initialised
    _initialised = True


def armed_at_import() -> tuple[bool, int]:
    return _initialised, ARMED_AT_IMPORT
