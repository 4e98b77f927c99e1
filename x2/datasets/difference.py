"""The first difference between two JSON values, named by its path: what refusals and notes quote."""

from __future__ import annotations

from typing import Any


def first_difference(have: Any, new: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """(dotted path, value in `have`, value in `new`) of the first place they differ, or None.

    Mappings are walked key by key (keys of `have` first, in order), sequences element by element;
    a missing key shows as `None`. Tuples and lists compare alike, as they do once written as JSON."""
    if isinstance(have, dict) and isinstance(new, dict):
        for key in [*have, *(k for k in new if k not in have)]:
            found = first_difference(have.get(key), new.get(key), f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
        return None
    if isinstance(have, list | tuple) and isinstance(new, list | tuple):
        for i, (a, b) in enumerate(zip(have, new, strict=False)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found is not None:
                return found
        if len(have) != len(new):
            return f"{path} (length)", len(have), len(new)
        return None
    if have != new or type(have) is not type(new) and not (_number(have) and _number(new)):
        return path or "<root>", have, new
    return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def describe(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
