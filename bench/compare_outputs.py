"""Prove that a change of x2's code changed no output byte: one fixed workload, two versions, fingerprints.

    .venv/bin/python bench/compare_outputs.py                    # 88fbca4 (before the format module) vs this tree
    .venv/bin/python bench/compare_outputs.py --before e31c6fa   # the house plan's first step vs this tree
    .venv/bin/python bench/compare_outputs.py --before REV --keep
    .venv/bin/python bench/compare_outputs.py --after 88fbca4 --no-exclusions   # one version twice, raw

The "before" version is a git revision checked out with `git worktree add --detach` into a temporary
folder (removed afterwards); the "after" version is the working tree this script lives in (or `--after
REV`, checked out the same way). Both run `python -m x2` with this interpreter, PYTHONPATH pointing at
their own checkout, each in its own empty workspace; the steps alternate between the two sides, so a
load change on this shared machine hits both.

Every output file is fingerprinted: its sha256, and for structured files a walk of their contents
(HDF5: every group, dataset (dtype, shape, storage, decoded bytes) and attribute; JSON: every field;
zarr: every array's decoded bytes; parquet: every column; mp4: the decoded frames). The absolute paths of
each side's workspace and checkout are replaced by placeholders first. EXCLUDED lists what differs between
two runs of the same version (measured with `--no-exclusions`), each with its reason; an excluded entry
still has to exist on both sides. Exit code 0: all the same; 1: something differs; 2: could not run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

# The workload, run in order in each side's empty workspace (paths relative to it).
STEPS: tuple[tuple[str, ...], ...] = (
    ("synth", "--task", "pick_place", "-n", "2", "--seed", "7", "--workers", "1"),
    ("synth", "--task", "pick_place", "-n", "2", "--seed", "7", "--workers", "2", "--dataset", "data/pick_place-w2"),
    ("collect", "waypoints", "--task", "pick_place", "-n", "1", "--seed", "7",
     "--dataset", "data/pick_place-waypoints"),
    ("render", "data/pick_place", "--cameras", "head,left_wrist", "--size", "48x64"),
    ("augment", "replay", "data/pick_place", "--variants", "2", "--seed", "7", "--render", "--cameras", "head",
     "--size", "48x64"),
    ("export", "lerobot", "data/pick_place"),
    ("export", "zarr", "data/pick_place"),
    ("export", "hdf5", "data/pick_place"),
    ("export", "zarr", "data/pick_place-aug", "--state-only", "--zarr-format", "3"),
    ("export", "hdf5", "data/pick_place-aug", "--state-only"),
    ("export", "lerobot", "data/pick_place-waypoints", "--state-only"),
    # x2 eval: synthesis's teacher behind the policy protocol on synthesis's seeds, and the recorded actions
    # served back (each run is a folder of split datasets and a report)
    ("eval", "--task", "pick_place", "--policy", "expert", "-n", "1", "--split", "train", "--seed", "7",
     "--workers", "1", "--dataset", "data/eval-expert"),
    ("eval", "--task", "pick_place", "--policy", "replay:data/pick_place", "-n", "2", "--split", "train",
     "--seed", "7", "--workers", "1", "--dataset", "data/eval-replay"),
)


@dataclass(frozen=True)
class Exclusion:
    pattern: str  # over fingerprint keys: `*` = any text without / . : [ ] @ #, `**` = any text
    reason: str

    def regex(self) -> re.Pattern[str]:
        parts = re.split(r"(\*\*|\*)", self.pattern)
        return re.compile("".join(".*" if p == "**" else r"[^/.:\[\]@#]*" if p == "*" else re.escape(p)
                                  for p in parts) + r"\Z")


# What differs between two runs of the same version (found with --no-exclusions, `--after` = `--before`).
WHOLE_FILE = "sha256 of a whole episode file as committed, so of its /timing too"
EXCLUDED: tuple[Exclusion, ...] = (
    Exclusion("data/*/.lock", "the pid of the last process that held the dataset's lock"),
    Exclusion("data/*/episodes/*.h5", "the file holds /timing; compared object by object instead"),
    Exclusion("data/*/episodes/*.h5:/timing/*", "wall-clock stage times and lateness (docs/format.md)"),
    Exclusion("data/*/episodes/*.h5:/timing@*", "created_utc, missed_slots: decided by the wall clock"),
    Exclusion("data/*/episodes.jsonl", "its lines carry digests; compared field by field"),
    Exclusion("data/*/episodes.jsonl:*.digest", WHOLE_FILE),
    Exclusion("data/*/manifest.json", "holds `created`; compared field by field"),
    Exclusion("data/*/manifest.json:created", "wall-clock time the dataset was created"),
    Exclusion("data/*/synth_report.json", "holds wall-clock figures; compared field by field"),
    Exclusion("data/*/synth_report.json:accepted_per_minute", "throughput: wall clock"),
    Exclusion("data/*/synth_report.json:wall_s", "wall-clock duration of the run"),
    Exclusion("data/*/synth_report.json:attempt_time_s.*", "wall-clock time of the attempts' stages, summed"),
    Exclusion("data/*/synth_report.json:attempts[*].timing_s.*", "wall-clock time of each attempt's stages"),
    Exclusion("data/*/synth_report.json:finished", "wall-clock time the run finished"),
    # an x2 eval run: data/<run>/<split> is a dataset like the others, data/<run>/eval_report.json its report
    Exclusion("data/*/*/.lock", "the pid of the last process that held the dataset's lock"),
    Exclusion("data/*/*/episodes/*.h5", "the file holds /timing; compared object by object instead"),
    Exclusion("data/*/*/episodes/*.h5:/timing/*", "wall-clock stage times and lateness (docs/format.md)"),
    Exclusion("data/*/*/episodes/*.h5:/timing@*", "created_utc, missed_slots: decided by the wall clock"),
    Exclusion("data/*/*/episodes.jsonl", "its lines carry digests; compared field by field"),
    Exclusion("data/*/*/episodes.jsonl:*.digest", WHOLE_FILE),
    Exclusion("data/*/*/manifest.json", "holds `created`; compared field by field"),
    Exclusion("data/*/*/manifest.json:created", "wall-clock time the dataset was created"),
    Exclusion("data/*/eval_report.json", "holds wall-clock figures; compared field by field"),
    Exclusion("data/*/eval_report.json:episodes[*].time_ms.*", "wall-clock time of each rollout's stages"),
    Exclusion("data/*/eval_report.json:runs[*].per_minute", "throughput: wall clock"),
    Exclusion("data/*/eval_report.json:tasks.*.*.time_share.*", "shares of the wall-clock stage times"),
    # the replay service names what it serves by a digest of the dataset's index digests, which cover /timing
    Exclusion("data/eval-replay/eval_report.json:policies[*].digest", "the replayed dataset's digest: " + WHOLE_FILE),
    Exclusion("data/eval-replay/eval_report.json:episodes[*].policy.digest",
              "the replayed dataset's digest: " + WHOLE_FILE),
    Exclusion("data/eval-replay/*/episodes/*.h5:/@policy",
              "holds the replayed dataset's digest; compared field by field"),
    Exclusion("data/eval-replay/*/episodes/*.h5:/@policy:digest", "the replayed dataset's digest: " + WHOLE_FILE),
    Exclusion("exports/*.hdf5", "holds x2_provenance; compared object by object"),
    Exclusion("exports/*.hdf5:/@x2_provenance", "JSON text with the export time; compared field by field"),
    Exclusion("exports/*.hdf5:/@x2_provenance:exported_utc", "wall-clock time of the export"),
    Exclusion("exports/*.hdf5:/@x2_provenance:episodes[*].digest", WHOLE_FILE),
    Exclusion("exports/*.zarr/.zattrs", "holds x2_provenance; compared field by field"),
    Exclusion("exports/*.zarr/.zattrs:x2_provenance.exported_utc", "wall-clock time of the export"),
    Exclusion("exports/*.zarr/.zattrs:x2_provenance.episodes[*].digest", WHOLE_FILE),
    Exclusion("exports/*.zarr/zarr.json", "holds x2_provenance; compared field by field"),
    Exclusion("exports/*.zarr/zarr.json:attributes.x2_provenance.exported_utc", "wall-clock time of the export"),
    Exclusion("exports/*.zarr/zarr.json:attributes.x2_provenance.episodes[*].digest", WHOLE_FILE),
    Exclusion("exports/*/meta/x2.json", "holds the export time; compared field by field"),
    Exclusion("exports/*/meta/x2.json:exported_utc", "wall-clock time of the export"),
    Exclusion("exports/*/meta/x2.json:episodes[*].digest", WHOLE_FILE),
    Exclusion("exports/*/meta/stats.json", "features in a run-dependent order; compared field by field, sorted"),
)
# JSON files whose top-level keys come in a different order from run to run: compared sorted by key.
UNORDERED = re.compile(r"exports/[^/]+/meta/stats\.json\Z")  # LeRobot's stats of each feature


@dataclass
class Side:
    name: str
    source: Path  # the checkout PYTHONPATH points at
    workspace: Path
    wall_s: float = 0.0
    failures: int = 0

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(PYTHONPATH=str(self.source), MUJOCO_GL="egl", HF_HUB_OFFLINE="1", OMP_NUM_THREADS="1",
                   OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        return env

    def paths(self) -> list[tuple[str, str]]:
        """Absolute paths that differ between the sides by construction, longest first."""
        pairs = {str(self.source): "<x2 source>", str(self.workspace): "<workspace>"}
        for path, label in list(pairs.items()):
            pairs[os.path.realpath(path)] = label
        return sorted(pairs.items(), key=lambda kv: -len(kv[0]))


def progress(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


# ---------------------------------------------------------------- fingerprints

Entries = list[tuple[str, str]]


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def short(value: str, limit: int = 120) -> str:
    return value if len(value) <= limit else f"{sha(value.encode())} ({len(value)} chars)"


class Normaliser:
    def __init__(self, side: Side) -> None:
        self.pairs = side.paths()

    def text(self, value: str) -> str:
        for path, label in self.pairs:
            value = value.replace(path, label)
        return value

    def raw(self, data: bytes) -> bytes:
        for path, label in self.pairs:
            data = data.replace(path.encode(), label.encode())
        return data


def json_leaves(key: str, value: Any, norm: Normaliser) -> Iterator[tuple[str, str]]:
    """Every field of a JSON value in document order; containers are entries too (their keys, in order)."""
    if isinstance(value, dict):
        yield key, "{" + ",".join(json.dumps(norm.text(k)) for k in value) + "}"
        for k, v in value.items():
            yield from json_leaves(f"{key}.{norm.text(k)}", v, norm)
    elif isinstance(value, list):
        yield key, f"[{len(value)} items]"
        for i, v in enumerate(value):
            yield from json_leaves(f"{key}[{i}]", v, norm)
    else:
        yield key, short(norm.text(json.dumps(value)))


def json_text_entries(key: str, text: str, norm: Normaliser) -> Iterator[tuple[str, str]]:
    """A JSON document or JSON lines as text: its hash, then its fields (nothing more if it is not JSON)."""
    yield key, sha(norm.text(text).encode())
    try:
        if key.endswith(".jsonl"):
            for i, line in enumerate(line for line in text.splitlines() if line.strip()):
                yield from json_leaves(f"{key}:{i}", json.loads(line), norm)
            return
        doc = json.loads(text)
    except ValueError:
        return
    if isinstance(doc, dict) and UNORDERED.match(key):
        doc = dict(sorted(doc.items()))
    if isinstance(doc, dict | list):
        for k, v in json_leaves(key + ":", doc, norm):
            yield k.replace(":.", ":", 1), v


def array_digest(value: Any) -> str:
    import numpy as np

    arr = np.asarray(value)
    if arr.dtype.kind == "O":
        body = repr([x.decode() if isinstance(x, bytes) else x for x in arr.ravel().tolist()]).encode()
    else:
        body = np.ascontiguousarray(arr).tobytes()
    return f"{arr.dtype.str} {arr.shape} {sha(body)}"


def attr_entries(key: str, value: Any, dtype: Any, norm: Normaliser) -> Iterator[tuple[str, str]]:
    """An attribute's type and shape, then its value (JSON text field by field too)."""
    import numpy as np

    yield key + "#type", f"{dtype} {np.shape(value)}"
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        yield from json_text_entries(key, value, norm)
    elif isinstance(value, np.ndarray) and value.dtype.kind in "OSU":
        yield key, short(norm.text(repr([x.decode() if isinstance(x, bytes) else x for x in value.ravel().tolist()])))
    elif isinstance(value, np.ndarray) and value.size > 16:
        yield key, array_digest(value)
    else:
        yield key, repr(np.asarray(value).tolist())


def hdf5_entries(key: str, path: Path, norm: Normaliser) -> Iterator[tuple[str, str]]:
    import h5py
    import hdf5plugin  # noqa: F401  (registers the Zstd filter of image streams)

    out: Entries = []

    def attrs(prefix: str, obj: Any) -> None:
        for name in obj.attrs:
            out.extend(attr_entries(f"{prefix}@{name}", obj.attrs[name], obj.attrs.get_id(name).dtype, norm))

    def visit(name: str, obj: Any) -> None:
        where = f"{key}:/{name}"
        if isinstance(obj, h5py.Dataset):
            plist = obj.id.get_create_plist()
            filters = [plist.get_filter(i)[::2] for i in range(plist.get_nfilters())]
            out.append((where + "#storage", f"{obj.dtype.str} {obj.shape} chunks {obj.chunks} filters {filters}"))
            out.append((where, "null" if obj.shape is None else array_digest(obj[()])))
        else:
            out.append((where, "group"))
        attrs(where, obj)

    with h5py.File(path, "r") as f:
        attrs(f"{key}:/", f)
        f.visititems(visit)
    yield from out


def zarr_entries(key: str, path: Path) -> Iterator[tuple[str, str]]:
    """Decoded arrays (the files themselves, chunks and metadata, are fingerprinted one by one too)."""
    import zarr

    root = zarr.open_group(str(path), mode="r")
    for name, arr in sorted(_zarr_arrays(root), key=lambda kv: kv[0]):
        yield f"{key}#{name}", array_digest(arr[...])


def _zarr_arrays(group: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name, member in group.members():
        if hasattr(member, "shape"):
            yield prefix + name, member
        else:
            yield from _zarr_arrays(member, prefix + name + "/")


def parquet_entries(key: str, path: Path, norm: Normaliser) -> Iterator[tuple[str, str]]:
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    yield f"{key}#schema", short(str(table.schema.remove_metadata()))
    for k, v in (table.schema.metadata or {}).items():
        yield from json_text_entries(f"{key}#meta[{k.decode()}]", v.decode(), norm)
    yield f"{key}#rows", str(table.num_rows)
    for name in table.column_names:
        yield f"{key}#{name}", sha(norm.text(repr(table.column(name).to_pylist())).encode())


def mp4_entries(key: str, path: Path) -> Iterator[tuple[str, str]]:
    import av

    with av.open(str(path)) as box:
        for stream in box.streams.video:
            ctx = stream.codec_context
            digest, frames = hashlib.sha256(), 0
            for frame in box.decode(stream):
                digest.update(frame.to_ndarray(format="rgb24").tobytes())
                frames += 1
            yield f"{key}#{stream.index}", f"{ctx.name} {ctx.width}x{ctx.height} {ctx.pix_fmt} {frames} frames"
            yield f"{key}#{stream.index}/frames", "sha256:" + digest.hexdigest()


def file_entries(rel: str, path: Path, norm: Normaliser) -> Iterator[tuple[str, str]]:
    data = path.read_bytes()
    name = path.name
    if name.endswith((".json", ".jsonl")) or name in {".zattrs", ".zgroup", ".zarray"}:
        yield from json_text_entries(rel, data.decode("utf-8", "replace"), norm)
        return
    yield rel, sha(norm.raw(data))
    if data[:8] == b"\x89HDF\r\n\x1a\n":
        yield from hdf5_entries(rel, path, norm)
    elif name.endswith(".parquet"):
        yield from parquet_entries(rel, path, norm)
    elif name.endswith(".mp4"):
        yield from mp4_entries(rel, path)


def fingerprint(side: Side) -> Entries:
    norm = Normaliser(side)
    out: Entries = []
    for path in sorted(side.workspace.rglob("*")):
        rel = path.relative_to(side.workspace).as_posix()
        if path.is_dir():
            out.append((rel + "/", "folder"))
            if path.name.endswith(".zarr"):
                out.extend(zarr_entries(rel, path))
        elif path.is_symlink():
            out.append((rel, "link -> " + norm.text(os.readlink(path))))
        else:
            out.extend(file_entries(rel, path, norm))
    return out


# ---------------------------------------------------------------- comparison

def artefact(key: str) -> str:
    """The table row an entry belongs to: an episode file, a dataset's own files, an export, the rest."""
    path = re.split(r"[:#]", key, maxsplit=1)[0].rstrip("/")
    parts = path.split("/")
    if parts[0] == "data" and len(parts) >= 4 and parts[2] == "episodes":
        return "episode " + "/".join(parts[:4])
    if parts[0] == "data" and len(parts) >= 5 and parts[3] == "episodes":  # an x2 eval run's split dataset
        return "episode " + "/".join(parts[:5])
    if parts[0] in {"data", "exports"} and len(parts) >= 2:
        return ("dataset " if parts[0] == "data" else "export ") + "/".join(parts[:2])
    return "workspace (.x2/state.json, folders)"


def mask(entries: Entries, exclusions: tuple[Exclusion, ...]) -> tuple[Entries, set[int]]:
    compiled = [(e, e.regex()) for e in exclusions]
    used: set[int] = set()
    masked: Entries = []
    for key, value in entries:
        for i, (_, regex) in enumerate(compiled):
            if regex.match(key):
                used.add(i)
                value = "<excluded>"
                break
        masked.append((key, value))
    return masked, used


def group(entries: Entries) -> dict[str, Entries]:
    rows: dict[str, Entries] = {}
    for key, value in entries:
        rows.setdefault(artefact(key), []).append((key, value))
    return rows


def differences(before: Entries, after: Entries) -> list[str]:
    """Every entry that differs or exists on one side only, in document order; else a change of order."""
    b, a = dict(before), dict(after)
    found = []
    for key in [*b, *(k for k in a if k not in b)]:
        if key not in a or key not in b:
            found.append(f"{key} only {'before' if key in b else 'after'}")
        elif b[key] != a[key]:
            found.append(f"{key}: before {b[key][:70]!r}, after {a[key][:70]!r}")
    if not found and list(b) != list(a):
        at = next(i for i, (kb, ka) in enumerate(zip(b, a, strict=False)) if kb != ka)
        found.append(f"order of entries: {list(b)[at]!r} (before) vs {list(a)[at]!r} (after)")
    return found


def compare(before: Side, after: Side, exclusions: tuple[Exclusion, ...], show: int) -> int:
    b_entries, b_used = mask(fingerprint(before), exclusions)
    a_entries, a_used = mask(fingerprint(after), exclusions)
    b_rows, a_rows = group(b_entries), group(a_entries)
    names = sorted(set(b_rows) | set(a_rows))
    width = max(len(n) for n in names)
    print(f"\n{'artefact':<{width}}  entries  result")
    differing = 0
    for name in names:
        b, a = b_rows.get(name, []), a_rows.get(name, [])
        extra: list[str] = []
        if not b or not a:
            result = f"DIFFERENT: only {'before' if b else 'after'}"
        else:
            found = differences(b, a)
            result = "same" if not found else f"DIFFERENT: {found[0]}"
            extra = found[1:show]
        differing += result != "same"
        print(f"{name:<{width}}  {max(len(b), len(a)):>7}  {result}")
        for line in extra:
            print(f"{'':<{width}}           and {line}")
    if exclusions:
        print("\nexcluded (the entry must exist on both sides; its value is not compared):")
        for e in exclusions:
            print(f"  {e.pattern}: {e.reason}")
    unused = [e.pattern for i, e in enumerate(exclusions) if i not in b_used | a_used]
    if unused:
        print("exclusions that matched nothing: " + ", ".join(unused))
    ratio = after.wall_s / before.wall_s if before.wall_s else float("nan")
    print(f"\nwall time of the workload: before {before.wall_s:.1f} s, after {after.wall_s:.1f} s, "
          f"after / before {ratio:.2f}")
    failed = before.failures + after.failures
    verdict = "all the same" if not differing and not failed else \
        f"{differing} of {len(names)} artefacts differ" + (f", {failed} commands failed" if failed else "")
    print(f"{len(names)} artefacts, {len(b_entries)} / {len(a_entries)} entries: {verdict}")
    return 0 if not differing and not failed else 1


# ---------------------------------------------------------------- running

def run_step(side: Side, step: tuple[str, ...], logs: Path, number: int) -> None:
    progress(f"step {number}/{len(STEPS)} {side.name}: x2 {' '.join(step)}")
    log = logs / f"{side.name}-{number:02d}-{step[0]}.log"
    start = time.perf_counter()
    with log.open("wb") as out:
        done = subprocess.run([sys.executable, "-m", "x2", *step], cwd=side.workspace, env=side.env(),
                              stdout=out, stderr=subprocess.STDOUT, check=False)
    took = time.perf_counter() - start
    side.wall_s += took
    if done.returncode != 0:
        side.failures += 1
        tail = log.read_text(errors="replace").strip().splitlines()[-5:]
        progress(f"  {side.name} FAILED (exit {done.returncode}) after {took:.1f} s; {log}:")
        print("    " + "\n    ".join(tail), flush=True)
    else:
        progress(f"  {side.name} done in {took:.1f} s")


def imported_from(side: Side) -> Path:
    done = subprocess.run([sys.executable, "-c", "import x2; print(x2.__file__)"], cwd=side.workspace,
                          env=side.env(), capture_output=True, text=True, check=True)
    return Path(done.stdout.strip()).resolve().parent.parent


def checkout(rev: str, into: Path) -> None:
    subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", rev + "^{commit}"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--quiet", str(into), rev], check=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--before", default="88fbca4",
                        help="git revision of the old version (default: 88fbca4, the last before the format module)")
    parser.add_argument("--after", default=None, help="git revision of the new version (default: this working tree)")
    parser.add_argument("--keep", action="store_true", help="keep the workspaces (and their logs) for inspection")
    parser.add_argument("--show", type=int, default=1, metavar="N",
                        help="differing entries to print per artefact (default: the first)")
    parser.add_argument("--no-exclusions", action="store_true", help="compare everything, wall-clock fields too")
    args = parser.parse_args()
    # A SIGTERM (a timeout, a kill) unwinds like an exception: the checkout and workspaces are removed.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    top = Path(tempfile.mkdtemp(prefix="x2-compare-")).resolve()
    checkouts: list[Path] = []
    try:
        sides = []
        for name, rev in (("before", args.before), ("after", args.after)):
            source = REPO
            if rev is not None:
                source = top / f"src-{name}"
                progress(f"checking out {rev} for {name} into {source}")
                try:
                    checkout(rev, source)
                except subprocess.CalledProcessError:
                    print(f"error: --{name}: found {rev!r}; allowed: a git revision of {REPO}", file=sys.stderr)
                    return 2
                checkouts.append(source)
            (top / f"ws-{name}").mkdir()
            side = Side(name, source, top / f"ws-{name}")
            if imported_from(side) != source.resolve():
                print(f"error: {name}: x2 imports from {imported_from(side)}, not {source}", file=sys.stderr)
                return 2
            sides.append(side)
        before, after = sides
        (top / "logs").mkdir()
        progress(f"before = {args.before} ({before.source}), after = {args.after or 'working tree'} "
                 f"({after.source}); workspaces under {top}")
        for number, step in enumerate(STEPS, 1):
            for side in sides:
                run_step(side, step, top / "logs", number)
        progress("fingerprinting both workspaces")
        return compare(before, after, () if args.no_exclusions else EXCLUDED, args.show)
    finally:
        for source in checkouts:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(source)], check=False)
        if args.keep:
            print(f"kept: {top}")
        else:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
