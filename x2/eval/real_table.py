"""The real robot's side of `x2 eval correlate`: a CSV of success counts, one row per policy and task.

Columns (a header row, any order): `policy`, `task`, `real_successes`, `real_trials`, and optionally `note`
(free text kept in the JSON). Any other column is refused, so a misspelt one is not silently ignored.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from x2.base.errors import SpecError

REQUIRED = ("policy", "task", "real_successes", "real_trials")
OPTIONAL = ("note",)


@dataclass(frozen=True)
class RealRow:
    policy: str  # as the lab names it; matched to an x2 eval report's policy (x2.eval.correlate)
    task: str  # an x2 task name, as the x2 eval reports name it
    successes: int
    trials: int
    note: str
    line: int  # in the CSV, for error lines


def read_real_table(path: Path) -> list[RealRow]:
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's BOM is no part of the first column's name
    except FileNotFoundError:
        raise SpecError(where, None, "--real", "no such file", "a CSV with columns " + ", ".join(REQUIRED)) from None
    except UnicodeDecodeError:
        raise SpecError(where, None, "--real", "a file that is not UTF-8 text", "a CSV") from None
    reader = csv.reader(text.splitlines())
    header = [h.strip() for h in next(reader, [])]
    allowed = f"columns {', '.join(REQUIRED)} and optionally {', '.join(OPTIONAL)}"
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise SpecError(where, 1, "header", f"no column {missing[0]!r} (columns: {', '.join(header) or 'none'})",
                        allowed)
    extra = [c for c in header if c not in REQUIRED + OPTIONAL]
    if extra or len(set(header)) != len(header):
        raise SpecError(where, 1, "header", f"column {(extra or header)[0]!r}" if extra else "a repeated column",
                        allowed)
    rows: list[RealRow] = []
    seen: dict[tuple[str, str], int] = {}
    for line, cells in enumerate(reader, start=2):
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise SpecError(where, line, "row", f"{len(cells)} cells", f"{len(header)}, one per column")
        row = {h: c.strip() for h, c in zip(header, cells, strict=True)}
        for column in ("policy", "task"):
            if not row[column]:
                raise SpecError(where, line, column, "an empty cell", "a name")
        successes = _count(row["real_successes"], where, line, "real_successes")
        trials = _count(row["real_trials"], where, line, "real_trials")
        if trials == 0:
            raise SpecError(where, line, "real_trials", "0", "at least 1 trial")
        if successes > trials:
            raise SpecError(where, line, "real_successes", f"{successes} > real_trials {trials}",
                            f"0 to {trials}")
        key = (row["policy"], row["task"])
        if key in seen:
            raise SpecError(where, line, "row", f"policy {key[0]!r} on task {key[1]!r} again (line {seen[key]})",
                            "one row per policy and task")
        seen[key] = line
        rows.append(RealRow(row["policy"], row["task"], successes, trials, row.get("note", ""), line))
    if not rows:
        raise SpecError(where, None, "rows", "none", "one row per policy and task")
    return rows


def _count(cell: str, where: str, line: int, column: str) -> int:
    if not cell.isdigit():
        raise SpecError(where, line, column, repr(cell), "a whole number >= 0")
    return int(cell)
