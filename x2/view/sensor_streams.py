"""An episode's stored depth and segmentation (`x2 render --streams`, `x2 collect ... --streams`: docs/format.md,
"Camera streams") in its rerun recording, beside the pictures:

    depth/<cam>               /observations/depth/<cam> as rerun's depth image (metres: meter 1), one per frame
    segmentation/<cam>        /observations/segmentation/<cam> as rerun's segmentation image, one per frame; a static
                              annotation context names its ids (the stored table: robot links, objects, scenery)

As stored, never drawn: an episode without them gets none, and its recording is what it always was. Sent raw, so
the viewer shows the stored values exactly (rerun's EncodedDepthImage would round the metres to a 16-bit code), in
batches like the pictures to bound memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from x2 import format as fmt
from x2.datasets import Episode

if TYPE_CHECKING:
    import rerun

_BATCH = 32  # frames per chunk, as the pictures'


def stored_sensor_cameras(ep: Episode, cameras: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Of `cameras`, those whose depth and those whose segmentation the episode stores, for every frame."""
    def stored(path: str) -> bool:
        return path in ep and ep.dataset(path).shape[0] == ep.frames
    return (tuple(c for c in cameras if stored(fmt.depth_path(c))),
            tuple(c for c in cameras if stored(fmt.segmentation_path(c))))


def log_sensor_streams(rec: rerun.RecordingStream, ep: Episode, cameras: Sequence[str],
                       index: Callable[[slice], list[rerun.TimeColumn]]) -> dict[str, tuple[str, ...]]:
    """Log the stored depth and segmentation of `cameras` on the time columns `index` gives a slice of rows; camera ->
    the streams logged ("depth", "segmentation")."""
    import rerun as rr

    depth, segmentation = stored_sensor_cameras(ep, cameras)
    logged: dict[str, tuple[str, ...]] = {}
    for cam in depth:
        stored = ep.dataset(fmt.depth_path(cam))
        h, w = int(stored.shape[1]), int(stored.shape[2])
        entity = f"depth/{rr.escape_entity_path_part(cam)}"
        rec.log(entity, rr.DepthImage.from_fields(
            format=rr.components.ImageFormat(w, h, channel_datatype=rr.ChannelDatatype.F32), meter=1.0), static=True)
        for start in range(0, ep.frames, _BATCH):
            rows = np.asarray(stored[start:start + _BATCH], np.float32)
            rec.send_columns(entity, indexes=index(slice(start, start + len(rows))),
                             columns=rr.DepthImage.columns(buffer=[r.tobytes() for r in rows]))
        logged[cam] = ("depth",)
    for cam in segmentation:
        stored = ep.dataset(fmt.segmentation_path(cam))
        h, w = int(stored.shape[1]), int(stored.shape[2])
        entity = f"segmentation/{rr.escape_entity_path_part(cam)}"
        names = [str(n) for n in ep.dataset_attrs(fmt.segmentation_path(cam)).get(fmt.NAMES_ATTR, [])]
        rec.log(entity, rr.AnnotationContext([rr.AnnotationInfo(id=i, label=n) for i, n in enumerate(names)]),
                static=True)
        rec.log(entity, rr.SegmentationImage.from_fields(
            format=rr.components.ImageFormat(w, h, channel_datatype=rr.ChannelDatatype.U16)), static=True)
        for start in range(0, ep.frames, _BATCH):
            rows = np.asarray(stored[start:start + _BATCH], np.uint16)
            rec.send_columns(entity, indexes=index(slice(start, start + len(rows))),
                             columns=rr.SegmentationImage.columns(buffer=[r.tobytes() for r in rows]))
        logged[cam] = (*logged.get(cam, ()), "segmentation")
    return logged
