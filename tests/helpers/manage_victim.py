"""The victim of the kill -9 tests in tests/test_datasets_manage.py: one dataset-management operation.

    manage_victim.py merge OUT SOURCE...   |  filter SOURCE OUT  |  rm DATASET EPISODES  |  partition DATASET SEED

It prints "started" once imported and "step DONE/TOTAL" at every progress report of the real library
call (the same callback the CLI's progress bar uses), so the test can kill it in the middle of the work.
"""

from __future__ import annotations

import sys

from x2.datasets.manage import Filter, filter_dataset, merge, remove
from x2.datasets.select import Selection, parse_episode_list
from x2.datasets.stratified_partition import assign_partition


def _step(done: int, total: int) -> None:
    print(f"step {done}/{total}", flush=True)


def main(argv: list[str]) -> None:
    op, args = argv[0], argv[1:]
    print("started", flush=True)
    if op == "merge":
        merge(args[1:], args[0], progress=_step)
    elif op == "filter":
        filter_dataset(args[0], args[1], Filter(Selection(success_only=True)), progress=_step)
    elif op == "rm":
        remove(args[0], parse_episode_list(args[1]), progress=_step)
    elif op == "partition":
        assign_partition(args[0], 0.25, 0.0, int(args[1]), progress=_step)
    else:
        raise SystemExit(f"unknown operation {op!r}")
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
