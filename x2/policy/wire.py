"""openpi's message encoding, written for x2: msgpack, with numpy arrays and scalars as tagged maps.

An array is `{b"__ndarray__": True, b"data": raw bytes, b"dtype": dtype.str, b"shape": shape}` and a numpy
scalar `{b"__npgeneric__": True, b"data": its Python value, b"dtype": dtype.str}`, the keys packed as bytes.
The bytes are openpi_client.msgpack_numpy's both ways (tests/test_policy_wire.py checks against the real
package), so a stock openpi client or server reads x2's messages and x2 reads theirs. x2 cannot import
openpi_client itself: it pins numpy below 2.

Object, void and complex arrays are refused, as openpi refuses them: nothing on this wire may need pickle.
"""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

_ARRAY, _SCALAR = b"__ndarray__", b"__npgeneric__"
_REFUSED_KINDS = ("V", "O", "c")


def _encode(obj: object) -> object:
    if isinstance(obj, np.ndarray | np.generic) and obj.dtype.kind in _REFUSED_KINDS:
        raise ValueError(f"cannot send a numpy {obj.dtype} value (object, void and complex dtypes are refused)")
    if isinstance(obj, np.ndarray):
        return {_ARRAY: True, b"data": obj.tobytes(), b"dtype": obj.dtype.str, b"shape": obj.shape}
    if isinstance(obj, np.generic):
        return {_SCALAR: True, b"data": obj.item(), b"dtype": obj.dtype.str}
    # msgpack raises TypeError itself when the default hook hands an unknown object back
    return obj


def _decode(obj: dict[Any, Any]) -> object:  # (msgpack ships no types: its hook's map is what the bytes said)
    if _ARRAY in obj:
        dtype = np.dtype(obj[b"dtype"])
        if dtype.kind in _REFUSED_KINDS:
            raise ValueError(f"refusing a received numpy {dtype} array")
        # a copy: the receiver may write into it (torch.from_numpy warns about read-only buffers)
        return np.frombuffer(obj[b"data"], dtype=dtype).reshape(obj[b"shape"]).copy()
    if _SCALAR in obj:
        return np.dtype(obj[b"dtype"]).type(obj[b"data"])
    return obj


def pack(obj: object) -> bytes:
    """`obj` (dicts, lists, str, bytes, numbers, numpy arrays and scalars) as one message."""
    packed: bytes = msgpack.packb(obj, default=_encode)
    return packed


def unpack(data: bytes) -> object:
    """One message back into Python values with numpy arrays (writable copies); ValueError for bytes that
    are no such message."""
    try:
        message: object = msgpack.unpackb(data, object_hook=_decode)
    except (ValueError, TypeError, KeyError) as exc:  # msgpack's errors are ValueErrors; a bad tag map the others
        raise ValueError(f"not a msgpack message: {type(exc).__name__}: {exc}") from exc
    return message
