"""The x2 dataset format in one place: names on disk, paths inside an episode, typed records, checks.

One sentence: a dataset is a folder with ``manifest.json``, the commit log ``episodes.jsonl`` and one
self-contained HDF5 file per finished episode under ``episodes/``, whose time-first datasets all have
``T`` rows. docs/format.md describes it for people; tests/test_format.py checks that every name
defined here is described there, and that no other module of x2 spells one of them.

Everything else in x2 reads and writes datasets through these names, the typed records (``Tick``,
``EpisodeStart``, ``EpisodeEnd``, ``Manifest``) and the writer-side checks, which refuse what may not go into
a file before its first byte is written: `names.py`, `records.py` and `checks.py`, all of them importable from
here (``from x2 import format as fmt; fmt.STATES``). A leaf: it imports nothing from x2 but its base layer.
"""

from x2.format.checks import *  # noqa: F403
from x2.format.names import *  # noqa: F403
from x2.format.records import *  # noqa: F403
