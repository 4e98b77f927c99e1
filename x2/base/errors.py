"""The one exception root. The library raises these; `x2.cli` turns them into one-line errors."""

from __future__ import annotations

import re

# Line breaks and other control characters (a key or a name written with "\n" in a spec) would break
# the one-line form of an error; they are shown escaped.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """`text` with its line breaks and control characters escaped, as Python writes them in a repr."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class X2Error(Exception):
    """An error caused by the user's input or environment, shown as one line with exit code 2."""

    exit_code = 2


class SpecError(X2Error):
    """A robot, scene or task spec is invalid.

    Rendered as ``file:line: field: found X; allowed: Y``.
    """

    def __init__(self, file: str | None, line: int | None, field: str, found: str, allowed: str):
        self.file, self.line, self.field, self.found, self.allowed = file, line, field, found, allowed
        where = f"{file}:{line}" if file and line else (file or "<spec>")
        super().__init__(one_line(f"{where}: {field}: found {found}; allowed: {allowed}"))

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:
        # Raised in a worker process, it must unpickle in the parent that reports it.
        return type(self), (self.file, self.line, self.field, self.found, self.allowed)


class NotFoundError(X2Error):
    """A named thing (robot, task, dataset, episode) does not exist; the message lists what does."""


class DatasetError(X2Error):
    """A dataset or episode file breaks the on-disk contract."""


class ExportError(X2Error):
    """An export cannot be made as asked (target exists, no episodes selected, reader refused it)."""


class StorageError(X2Error):
    """The machine refused a write (disk full, read-only, permission denied, a file in the way, the folder gone,
    an I/O error). The message names the path, the cause, what is safe and what to do (``x2.files.disk``)."""


class PolicyError(X2Error):
    """A policy cannot be evaluated as asked: an unknown kind, a folder that is no policy, a service whose
    actions do not fit the robot (found before the first step)."""


# ---- the motion layer (IK in x2/sim/mujoco/ik.py, planning in x2/synth/motion): skills catch MotionError to
# fail an attempt cleanly.
class MotionError(X2Error):
    """The motion layer could not produce a motion for the request."""


class IKError(MotionError):
    """No joint configuration reaches the target pose within tolerance and joint limits."""


class PlanningError(MotionError):
    """No collision-free path (or timed trajectory) was found within the budget."""


class PathBreak(PlanningError):
    """A tcp path (x2/synth/motion/paths.py) breaks off before its end. `cause`: "ik" (a pose the iteration from the
    previous waypoint does not reach), "jump" (an IK branch switch) or "collision"; `reached`: the path
    parameter of the last waypoint kept."""

    def __init__(self, message: str, cause: str, reached: float):
        super().__init__(message)
        self.cause, self.reached = cause, reached
