"""The raw device stream: what an episode stores under /device/<name>/ and `playback:FILE` plays.

Layout (one HDF5 group; a stream file has it at /device/<name>/, as an episode does):

    t (N,) float64            seconds since the stream's start (first tick of the episode)
    seq (N,) int64            the device's sample counter (gaps = samples the reader lost)
    <field> (N, ...) float64  the sample values (see x2.devices.base)
    event_t (E,) float64, event_code (E,) int16 (index into EVENTS), event_arm (E,) int16
    tick_seq (T,) int64       episodes only: the sample each control tick used (-1 none yet)
    attrs: kind, fields (JSON list), events (JSON list of EVENTS)

An episode recorded without a device (synthesis, scripted) plays back too: its /action is played as a
leader arm's joints at the episode's fps (`joint_stream`). A stream read from an episode carries the
episode's task, robot, seed and variant (`Stream.source`), so teleop can play it back in the same scene.

Only numbers are read back; nothing in a stream is evaluated (docs/format.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import h5py
import numpy as np
import numpy.typing as npt

from x2 import format as fmt
from x2.base.arrays import Floats, Ints
from x2.devices.base import EVENTS, KINDS, DeviceError, DeviceEvent, Sample
from x2.envspec.action import ActionLayout
from x2.files.atomic import replacing
from x2.files.hdf5_guard import kept_if_complete


@dataclass(frozen=True)
class Stream:
    kind: str
    t: Floats  # (N,) seconds from the stream's start
    seq: Ints  # (N,)
    values: dict[str, Floats]  # field -> (N, ...)
    events: list[tuple[float, str, int]]  # (t, kind, arm), t from the stream's start
    # The recorded episode's task, robot, seed, ... (SOURCE_ATTRS), of whatever type its root attributes have:
    # x2.teleop.run reads them as it needs them.
    source: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.t)

    @property
    def duration(self) -> float:
        last = [float(self.t[-1])] if len(self.t) else []
        last += [self.events[-1][0]] if self.events else []
        return max(last, default=0.0)


class StreamBuilder:
    """Collects one episode's samples and events as the loop drains them; times relative to `t0`.

    Samples are unpacked into flat lists of numbers and arrays as they arrive: a long episode keeps
    tens of thousands of samples, and as objects the garbage collector would walk them all in every
    full collection, a pause the real-time loop would feel."""

    def __init__(self, kind: str, t0: float):
        self.kind, self.t0 = kind, t0
        self._t: list[float] = []
        self._seq: list[int] = []
        self._values: dict[str, list[Floats]] = {}
        self._events: list[tuple[float, int, int]] = []
        self.tick_seq: list[int] = []

    def add(self, samples: Iterable[Sample], events: Iterable[DeviceEvent] = ()) -> None:
        for x in samples:
            self._t.append(x.t)
            self._seq.append(x.seq)
            for key, value in x.values.items():
                self._values.setdefault(key, []).append(value)
        self._events.extend((e.t, EVENTS.index(e.kind), e.arm) for e in events)

    def arrays(self) -> dict[str, Floats | Ints]:
        """Numeric arrays for `EpisodeWriter.finish(device={name: arrays})`."""
        ev = self._events
        out: dict[str, Floats | Ints] = {
            "t": np.array(self._t, np.float64) - self.t0,
            "seq": np.array(self._seq, np.int64),
            "event_t": np.array([e[0] for e in ev], np.float64) - self.t0,
            "event_code": np.array([e[1] for e in ev], np.int16),
            "event_arm": np.array([e[2] for e in ev], np.int16),
            "tick_seq": np.array(self.tick_seq, np.int64),
        }
        for key in sorted(self._values):
            out[key] = np.stack(self._values[key]).astype(np.float64, copy=False)
        return out

    def attrs(self) -> dict[str, str]:
        return stream_attrs(self.kind, sorted(self._values))


def stream_attrs(kind: str, fields: Sequence[str]) -> dict[str, str]:
    """The attributes of a stream group (see the module docstring)."""
    return {"kind": kind, "fields": json.dumps(fields), "events": json.dumps(list(EVENTS))}


def write_stream(path: Path, name: str, arrays: Mapping[str, Floats | Ints], attrs: Mapping[str, str]) -> None:
    """A standalone stream file (temporary name, then renamed into place)."""
    with replacing(path) as tmp, kept_if_complete(tmp, "w") as f:
        group = f.create_group(fmt.device_path(name))
        for key, arr in arrays.items():
            group.create_dataset(key, data=arr, track_times=False)
        for key, value in attrs.items():
            group.attrs[key] = value


def _fail(path: Path, field: str, found: str, allowed: str) -> DeviceError:
    return DeviceError(f"{path}: {field}: found {found}; allowed: {allowed}")


def read_stream(path: Path, name: str | None = None) -> Stream:
    """Read a stream file, an episode's /device/<name>/ (the first one when `name` is None), or, for an
    episode recorded without a device (synthesis, scripted), its /action played as a leader arm's joints."""
    path = Path(path)
    if not path.is_file():
        raise _fail(path, "playback file", "no such file", "a stream .h5 or an episode file")
    try:
        f = h5py.File(path, "r")
    except OSError:
        raise _fail(path, "playback file", "not an HDF5 file", "a stream .h5 or an episode file") from None
    with f:
        source = {k: _plain(f.attrs[k]) for k in SOURCE_ATTRS if k in f.attrs}
        names = sorted(f[fmt.DEVICE]) if isinstance(f.get(fmt.DEVICE), h5py.Group) else []
        if not names:
            if name is None and isinstance(f.get(fmt.ACTION), h5py.Dataset) and fmt.FPS_ATTR in f.attrs:
                return _from_actions(f, path, source)
            raise _fail(path, "device", "no /device group and no /action",
                        "a file recorded by x2 collect teleop, or any x2 episode")
        name = name or names[0]
        if name not in names:
            raise _fail(path, "device", repr(name), ", ".join(names))
        g = f[fmt.DEVICE][name]
        return _parse(g, dict(g.attrs), path, fmt.device_path(name), source)


# Where a recorded episode came from.
SOURCE_ATTRS = (fmt.TASK_ATTR, fmt.ROBOT_ATTR, fmt.SEED_ATTR, fmt.SCENE_VARIANT_ATTR, fmt.INDEX_ATTR)


def _plain(value: object) -> object:
    """An attribute as h5py gives it, with bytes decoded and numpy scalars made Python numbers."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value.item() if isinstance(value, np.generic) else value


def _from_actions(f: h5py.File, path: Path, source: dict[str, object]) -> Stream:
    actions = _read(f, fmt.ACTION, path, "", np.float64, ndim=2)
    names = [_plain(n) for n in f[fmt.ACTION].attrs.get(fmt.NAMES_ATTR, [])]
    texts = [n for n in names if isinstance(n, str)]
    layout = ActionLayout.from_names(texts) if len(texts) == len(names) else None
    if layout is None or layout.dim != actions.shape[1] or not len(actions):
        raise _fail(path, "action", f"shape {actions.shape} named {names[:8]}",
                    "(T, A) actions named per arm: its joints, then <arm>_gripper (x2.envspec.action)")
    arrays, attrs = joint_stream(actions, float(f.attrs[fmt.FPS_ATTR]), layout)
    return _parse(arrays, attrs, path, fmt.ACTION, source)


def _json_list(text: object) -> list[object]:
    """A JSON list from a text attribute; TypeError or ValueError for anything else."""
    if not isinstance(text, str | bytes | bytearray):
        raise TypeError(f"found {type(text).__name__}")
    value = json.loads(text)
    if not isinstance(value, list):
        raise ValueError(f"found a JSON {type(value).__name__}")
    return value


def _parse(g: Mapping[str, object], attrs: Mapping[str, object], path: Path, where: str,
           source: dict[str, object]) -> Stream:
    kind = _plain(attrs.get("kind", ""))
    if not isinstance(kind, str) or kind not in KINDS:
        raise _fail(path, f"{where}.kind", repr(kind), ", ".join(KINDS))
    try:
        fields = _json_list(attrs.get("fields", "[]"))
        events = _json_list(attrs.get("events", "[]"))
    except (TypeError, ValueError, RecursionError):  # RecursionError: [[[[... nested past the decoder's stack
        raise _fail(path, f"{where} attrs", "malformed JSON", "fields and events as JSON lists") from None
    known = {code: e for code, e in enumerate(events) if isinstance(e, str) and e in EVENTS}  # code -> event
    codes = _read(g, "event_code", path, where, np.int64, ndim=1)
    if any(int(c) not in known for c in codes):
        raise _fail(path, f"{where}/event_code", "an unknown event", ", ".join(EVENTS))
    t = _read(g, "t", path, where, np.float64, ndim=1)
    values: dict[str, Floats] = {k: _read(g, k, path, where, np.float64) for k in fields if isinstance(k, str)}
    for key, arr in values.items():
        if len(arr) != len(t):
            raise _fail(path, f"{where}/{key}", f"{len(arr)} rows", f"{len(t)} (one per sample)")
    if len(t) and (not np.all(np.isfinite(t)) or np.any(np.diff(t) < 0)):
        raise _fail(path, f"{where}/t", "non-increasing or non-finite times", "increasing seconds")
    ev_t = _read(g, "event_t", path, where, np.float64, ndim=1)
    ev_arm = _read(g, "event_arm", path, where, np.int64, ndim=1)
    if not (len(ev_t) == len(codes) == len(ev_arm)):
        raise _fail(path, f"{where}/event_*", "different lengths", "one row per event")
    return Stream(kind, t, _read(g, "seq", path, where, np.int64, ndim=1), values,
                  [(float(a), known[int(c)], int(b)) for a, c, b in zip(ev_t, codes, ev_arm, strict=True)], source)


@runtime_checkable
class _Column(Protocol):
    """A stored column as `_read` takes it: an h5py dataset or a numpy array."""

    @property
    def dtype(self) -> np.dtype[np.generic]: ...

    def __getitem__(self, key: tuple[()], /) -> object: ...


def _read[S: np.generic](g: Mapping[str, object], key: str, path: Path, where: str, dtype: type[S],
                         ndim: int | None = None) -> npt.NDArray[S]:
    ds = g.get(key)
    if not isinstance(ds, _Column) or ds.dtype.kind not in "biuf":
        raise _fail(path, f"{where}/{key}", "missing or not numeric", "a numeric array")
    arr = np.asarray(ds[()], dtype=dtype)
    if ndim is not None and arr.ndim != ndim:
        raise _fail(path, f"{where}/{key}", f"{arr.ndim} dimensions", str(ndim))
    return arr


def joint_stream(actions: Floats, fps: float, layout: ActionLayout, rate_hz: float = 120.0,
                 events: Sequence[tuple[float, str, int]] = ()) -> tuple[dict[str, Floats | Ints], dict[str, str]]:
    """A master-arm stream whose leader follows actions (T, A) laid out as `layout`, given at `fps` and
    sampled at `rate_hz` (linear in between): playing back a synthesised or recorded action stream as if a
    leader arm moved."""
    actions = np.asarray(actions, dtype=np.float64)
    t_src = np.arange(len(actions)) / fps
    t = np.arange(0.0, t_src[-1] + 1e-9, 1.0 / rate_hz)
    joints = np.stack([np.interp(t, t_src, actions[:, j]) for j in range(actions.shape[1])], axis=1)
    # Raw ticks as the default leader calibration reads them: 2048 = 0 rad, 4096 a turn; grippers
    # 2048..3072 = closed..open.
    grip = np.isin(np.arange(joints.shape[1]), layout.gripper_slots)
    ticks = np.round(np.where(grip, 2048 + joints * 1024, 2048 + joints * 4096 / (2 * np.pi)))
    ev = sorted(events)
    arrays: dict[str, Floats | Ints] = {
        "t": t, "seq": np.arange(len(t), dtype=np.int64), "joints": joints, "ticks": ticks,
        "event_t": np.array([e[0] for e in ev], np.float64),
        "event_code": np.array([EVENTS.index(e[1]) for e in ev], np.int16),
        "event_arm": np.array([e[2] for e in ev], np.int16)}
    return arrays, stream_attrs("master-arm", ["joints", "ticks"])
