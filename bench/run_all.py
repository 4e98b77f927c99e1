"""`make bench`: run every benchmark script in this folder, one after another (chaos.py last: the longest)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

here = Path(__file__).parent
for script in [*sorted(here.glob("bench_*.py")), here / "chaos.py"]:
    print(f"== {script.name}", flush=True)
    subprocess.run([sys.executable, str(script)], check=True)
