"""Subtask labelling: a gated, latched DAG of subtask predicates (report section 3.3).

Pure Python + numpy; no simulator import, so `x2 label` can re-run it offline on stored episodes.
"""

from x2.labeling.dag import Dag, DagError, find_cycle, topological_order
from x2.labeling.labels import (
    ARM_SUBTASK_INDEX_KEY,
    DONE,
    UNFINISHED,
    UNFINISHED_INDEX,
    arm_label_arrays,
    arm_segment_owners,
    label_arrays,
    segment_owners,
)
from x2.labeling.runtime import DagRuntime, Event, Failure, FailurePredicates, Predicates

__all__ = [
    "ARM_SUBTASK_INDEX_KEY",
    "DONE",
    "UNFINISHED",
    "UNFINISHED_INDEX",
    "Dag",
    "DagError",
    "DagRuntime",
    "Event",
    "Failure",
    "FailurePredicates",
    "Predicates",
    "arm_label_arrays",
    "arm_segment_owners",
    "find_cycle",
    "label_arrays",
    "segment_owners",
    "topological_order",
]
