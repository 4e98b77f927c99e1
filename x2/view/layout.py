"""The viewer layout a recording opens with: cameras and the 3D world on the left, per-arm joint plots
and the subtask timeline on the right. It only arranges the entities `x2.view.recording` logs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import rerun.blueprint


@dataclass(frozen=True)
class ArmJoints:
    arm: str
    names: tuple[str, ...]  # qpos and action names of this arm (joints, gripper actuator, fingers)


def default_blueprint(cameras: Sequence[str], arms: Sequence[ArmJoints], has_labels: bool,
                      depth: Sequence[str] = (), segmentation: Sequence[str] = ()) -> rerun.blueprint.Blueprint:
    """The layout; `depth` and `segmentation`: the cameras whose stored streams the recording shows beside them."""
    import rerun as rr
    import rerun.blueprint as rrb

    def part(name: str) -> str:
        return rr.escape_entity_path_part(name)

    pictures = [rrb.Spatial2DView(origin=f"cameras/{part(c)}", name=c) for c in cameras]
    pictures += [rrb.Spatial2DView(origin=f"depth/{part(c)}", name=f"{c} depth") for c in depth]
    pictures += [rrb.Spatial2DView(origin=f"segmentation/{part(c)}", name=f"{c} segmentation") for c in segmentation]
    left = rrb.Vertical(rrb.Grid(*pictures), rrb.Spatial3DView(origin="world", name="world"),
                        row_shares=[1, 1]) if pictures else rrb.Spatial3DView(origin="world", name="world")
    plots = [rrb.TimeSeriesView(origin="joints", contents=[f"joints/{part(n)}/**" for n in arm.names],
                                name=f"{arm.arm} arm") for arm in arms]
    joints = rrb.Tabs(*plots) if plots else rrb.TimeSeriesView(origin="joints", name="joints")
    right: list[rrb.Container | rrb.View] = [joints]
    if has_labels:
        right += [
            rrb.TimeSeriesView(origin="subtask", contents=["subtask/index", "subtask/event_markers"],
                               name="subtask"),
            rrb.Horizontal(rrb.TextDocumentView(origin="subtask/name", name="current subtask"),
                           rrb.TextLogView(origin="subtask/events", name="DAG events"),
                           rrb.TextDocumentView(origin="episode", name="episode")),
        ]
    else:
        right.append(rrb.TextDocumentView(origin="episode", name="episode"))
    shares = [3, 2, 2] if has_labels else [3, 1]
    return rrb.Blueprint(rrb.Horizontal(left, rrb.Vertical(*right, row_shares=shares)),
                         rrb.TimePanel(state="expanded"), collapse_panels=False)
