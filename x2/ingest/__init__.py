"""Real recordings read in: a real robot's LeRobot v3.0 dataset made an x2 dataset of source `real`
(`x2 import lerobot`; docs/format.md, "Real recordings"). LeRobot is imported lazily, by `lerobot_source` only."""

from x2.ingest.real import ImportedEpisode, ImportResult, default_name, import_lerobot
from x2.ingest.timing import TimingReport

__all__ = ["ImportResult", "ImportedEpisode", "TimingReport", "default_name", "import_lerobot"]
