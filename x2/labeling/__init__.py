"""Subtask labelling: a gated, latched DAG of subtask predicates (report section 3.3).

Pure Python + numpy; no simulator import, so `x2 label` can re-run it offline on stored episodes.
"""

from x2.labeling.dag import Dag, DagError, find_cycle, topological_order
from x2.labeling.labels import DONE, UNFINISHED, UNFINISHED_INDEX, label_arrays, segment_owners
from x2.labeling.runtime import DagRuntime, Event, Failure, FailurePredicates, Predicates

__all__ = [
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
    "find_cycle",
    "label_arrays",
    "segment_owners",
    "topological_order",
]
