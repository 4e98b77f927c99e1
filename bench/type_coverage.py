"""How much of x2 strict mypy checks, and how often `Any` is written: the figures behind docs/architecture.md's
"Types", for this tree or for an older commit side by side.

    .venv/bin/python bench/type_coverage.py                 # this tree
    .venv/bin/python bench/type_coverage.py --before REV    # REV (read with `git show`) and this tree

A module is strict when every flag of mypy's --strict that x2 sets per module holds for it under the
pyproject's `[tool.mypy]` table and its overrides, applied the way mypy does (an exact module name beats a
pattern, a longer pattern beats a shorter one, a later section beats an earlier one of the same rank);
`warn_return_any` is not required, since the modules that read MuJoCo's untyped arrays turn it off (as
x2.sim.mujoco has since strict mypy first came in, and the issue's figures count them strict). Lines are
physical lines of the .py files under x2/. `Any` is counted as `grep -row Any x2 --include=*.py | wc -l` counts
it (every whole word `Any`, comments and imports included), and also as annotations only: the `Any` names in the
code's type expressions, imports and comments left out.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import subprocess
import tokenize
import tomllib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STRICT_FLAGS = ("disallow_any_generics", "disallow_subclassing_any", "disallow_untyped_calls", "disallow_untyped_defs",
                "disallow_incomplete_defs", "disallow_untyped_decorators", "no_implicit_reexport")


@dataclass(frozen=True)
class Figures:
    files: int
    strict_files: int
    lines: int
    strict_lines: int
    any_words: int
    any_annotations: int

    def row(self, name: str) -> str:
        return (f"{name:<10} strict files {self.strict_files:>4}/{self.files:<4} strict lines {self.strict_lines:>6}/"
                f"{self.lines:<6} ({100 * self.strict_lines / self.lines:5.1f} %)   Any: {self.any_words:>4} words, "
                f"{self.any_annotations:>4} in annotations")


def _rank(pattern: str, module: str) -> tuple[int, int] | None:
    """How specifically `pattern` matches `module` (None: it does not)."""
    if pattern == module:
        return (2, len(pattern))
    if pattern.endswith(".*"):
        base = pattern[:-2]
        if module == base or module.startswith(base + "."):
            return (1, len(base))
    return None


def strict_modules(pyproject: str, modules: list[str]) -> set[str]:
    config = tomllib.loads(pyproject).get("tool", {}).get("mypy", {})
    base = {f: bool(config.get(f, config.get("strict", False))) for f in STRICT_FLAGS}
    sections = config.get("overrides", [])
    out = set()
    for module in modules:
        flags = dict(base)
        for flag in STRICT_FLAGS:
            best: tuple[tuple[int, int], int] | None = None
            for order, section in enumerate(sections):
                if flag not in section:
                    continue
                patterns = section["module"] if isinstance(section["module"], list) else [section["module"]]
                for pattern in patterns:
                    rank = _rank(pattern, module)
                    if rank is not None and (best is None or (rank, order) >= best):
                        best = (rank, order)
                        flags[flag] = bool(section[flag])
        if all(flags.values()):
            out.add(module)
    return out


def any_in_annotations(source: str) -> int:
    """`Any` written as a name in the code (annotations, casts, aliases), not in comments, strings or imports."""
    count = 0
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string == "Any":
            count += 1
    imports = sum(1 for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)
                  for alias in node.names if alias.name == "Any")
    return count - imports


def figures(read: dict[str, str], pyproject: str) -> Figures:
    """`read`: path -> text of every .py file under x2/."""
    def module(path: str) -> str:
        parts = path[:-3].split("/")
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    mods = {module(p): p for p in read}
    strict = strict_modules(pyproject, sorted(mods))
    lines = {p: len(t.splitlines()) for p, t in read.items()}
    word = re.compile(r"\bAny\b")
    return Figures(
        files=len(read), strict_files=len(strict), lines=sum(lines.values()),
        strict_lines=sum(lines[mods[m]] for m in strict),
        any_words=sum(len(word.findall(t)) for t in read.values()),
        any_annotations=sum(any_in_annotations(t) for t in read.values()))


def tree_files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted((root / "x2").rglob("*.py"))}


def rev_files(rev: str) -> tuple[dict[str, str], str]:
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "x2"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split()
    show = lambda path: subprocess.run(["git", "show", f"{rev}:{path}"], cwd=REPO, check=True,  # noqa: E731
                                       capture_output=True, text=True).stdout
    return {n: show(n) for n in names if n.endswith(".py")}, show("pyproject.toml")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="a git revision to measure beside this tree")
    args = parser.parse_args()
    if args.before:
        files, pyproject = rev_files(args.before)
        print(figures(files, pyproject).row(args.before[:10]))
    print(figures(tree_files(REPO), (REPO / "pyproject.toml").read_text()).row("this tree"))


if __name__ == "__main__":
    main()
