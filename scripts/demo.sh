#!/usr/bin/env bash
# The most complete main job that exists today: compile the reference task, record a few scripted
# episodes through the real loop into a native dataset, inspect, plot, relabel offline and validate.
set -euo pipefail
cd "$(dirname "$0")/.."
X2=.venv/bin/x2
DS=data/demo-fruit_in_microwave
export MUJOCO_GL=${MUJOCO_GL:-egl}

rm -rf "$DS"   # the demo's own dataset only
$X2 robots ls
$X2 tasks show fruit_in_microwave --graph
$X2 collect waypoints --task fruit_in_microwave --episodes 3 --seed 7 --dataset "$DS"
$X2 datasets info "$DS"
$X2 datasets show 0 --dataset "$DS" --plot "$DS/timeline_episode_0.png"
$X2 label 0 --dataset "$DS"
$X2 datasets validate "$DS"
echo
echo "dataset:  $DS  (manifest.json, episodes.jsonl, episodes/*.h5)"
echo "timeline: $DS/timeline_episode_0.png"
