#!/usr/bin/env bash
# The most complete main job that exists today, in an empty workspace (demo-workspace/), with the
# commands exactly as a user types them:
#
#   x2 synth --task fruit_in_microwave -n 3    demonstrations from the skills and the motion planner
#   x2 augment replay                          each one again in new scenery (states and labels kept)
#   x2 export lerobot                          the augmented dataset, rendered and read back by LeRobot
#   x2 eval --policy expert                    the synthesis teacher as a policy service, scored by the DAG in and
#                                              out of distribution (a held-out fruit), every rollout kept
#
# then the checks a stranger holding the data could run: the physics replays exactly in the augmented
# worlds, every contact is recomputed, LeRobot loads the export with its cameras, and a preview shows a
# source episode next to its variant with the envelope the distractors were kept out of.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WS="$ROOT/demo-workspace"
export PATH="$ROOT/.venv/bin:$PATH" MUJOCO_GL=${MUJOCO_GL:-egl} HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
SECONDS=0

rm -rf "$WS" && mkdir -p "$WS" && cd "$WS"
x2 tasks show fruit_in_microwave
x2 synth --task fruit_in_microwave -n 3
x2 augment replay
x2 export lerobot
x2 eval --task fruit_in_microwave --policy expert -n 2 --dataset eval-expert

SRC=data/fruit_in_microwave AUG=data/fruit_in_microwave-aug LEROBOT=exports/fruit_in_microwave-aug-lerobot
x2 augment replay "$SRC" --preview augment_preview.png      # every augmented episode exists: only draws the preview
x2 replay 0 --dataset "$AUG" --check
x2 datasets validate "$AUG" --physics
x2 datasets info "$AUG"
python - "$LEROBOT" <<'EOF'
import json, sys
from pathlib import Path
from lerobot.datasets.lerobot_dataset import LeRobotDataset

root = Path(sys.argv[1])
ds = LeRobotDataset(f"x2/{root.name}", root=root, video_backend="pyav")
cameras = [k for k in ds.meta.features if k.startswith("observation.images.")]
sources = {e["source"] for e in json.loads((root / "meta" / "x2.json").read_text())["episodes"]}
frame = ds[0]
print(f"LeRobot reads {root}: {ds.num_episodes} episodes, {ds.num_frames} frames, cameras "
      f"{', '.join(c.rsplit('.', 1)[-1] for c in cameras)}, sources {sorted(sources)}, "
      f"frame 0 task: {frame['task']!r}, {tuple(frame[cameras[0]].shape)} images")
EOF
echo
echo "done in ${SECONDS} s, in $WS"
echo "source dataset:    $WS/$SRC  (synthesised; manifest.json, episodes.jsonl, episodes/*.h5)"
echo "augmented dataset: $WS/$AUG  (augmentation.json lists every augmented episode; docs/augmentation.md)"
echo "preview:           $WS/augment_preview.png  (source | augmented episode at the same frame | envelope from above)"
echo "evaluation:        $WS/data/eval-expert  (train/ and eval/ rollouts, eval_report.json and .png; docs/evaluation.md)"
echo "LeRobot export:    $WS/$LEROBOT  (LeRobotDataset('x2/fruit_in_microwave-aug-lerobot', root=..., video_backend='pyav'))"
