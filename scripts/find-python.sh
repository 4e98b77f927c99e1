#!/usr/bin/env bash
# Prints a Python >= 3.12 (LeRobot 0.6, behind x2's exporter, needs it), preferring 3.12:
# pythonX.Y on PATH when it actually runs (pyenv shims refuse versions not selected), else
# pyenv's installed interpreters.
set -u
root=$(pyenv root 2>/dev/null || true)
for minor in 12 13 14; do
  candidates=("python3.$minor")
  [ -n "$root" ] && for p in "$root"/versions/3."$minor"*/bin/python; do candidates+=("$p"); done
  for p in "${candidates[@]}"; do
    if "$p" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then
      command -v "$p" 2>/dev/null || echo "$p"
      exit 0
    fi
  done
done
echo "no Python >= 3.12 found: install one, or run make PYTHON=/path/to/python3.12" >&2
exit 1
