"""Looking at one episode: a rerun recording of its cameras, joints, poses and subtask timeline.

Only `x2.cli` imports this package (an import-linter contract holds it); rerun itself is imported lazily.
"""

from x2.view.recording import (
    VIEWER_PORT,
    CameraPlan,
    RecordingSummary,
    default_rrd_path,
    plan_cameras,
    record_rerun,
    wants_viewer,
)

__all__ = ["VIEWER_PORT", "CameraPlan", "RecordingSummary", "default_rrd_path",
           "plan_cameras", "record_rerun", "wants_viewer"]
