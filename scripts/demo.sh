#!/usr/bin/env bash
# The most complete main job that exists today: synthesise a few fruit_in_microwave demonstrations
# with the skills and the motion planner (two worker processes), and a few more in a second run that
# continues the first; inspect, plot, relabel offline from the files, replay the stored actions exactly,
# validate the dataset and its physics; then replay the first demonstration through the teleop path (its
# actions played as a leader arm, at 30 Hz against the wall clock, in its own scene) into a teleop dataset.
set -euo pipefail
cd "$(dirname "$0")/.."
X2=.venv/bin/x2
DS=data/demo-fruit_in_microwave
TELE=data/demo-teleop
export MUJOCO_GL=${MUJOCO_GL:-egl}

rm -rf "$DS" "$TELE"   # the demo's own datasets only
$X2 tasks show fruit_in_microwave --graph
$X2 synth --task fruit_in_microwave -n 3 --workers 2 --seed 7 --dataset "$DS"
$X2 synth --task fruit_in_microwave -n 2 --workers 2 --seed 7 --dataset "$DS"   # continues after run 1's attempts
$X2 datasets info "$DS"
$X2 datasets show 0 --dataset "$DS" --plot "$DS/timeline_episode_0.png"
$X2 label 0 --dataset "$DS"
$X2 replay 0 --dataset "$DS" --check
$X2 datasets validate "$DS" --physics
$X2 collect teleop --device "replay:$DS/episodes/episode_000000.h5" --episodes 1 --dataset "$TELE"
$X2 datasets info "$TELE"
echo
echo "dataset:      $DS  (manifest.json, episodes.jsonl, episodes/*.h5)"
echo "synth report: $DS/synth_report.json"
echo "timeline:     $DS/timeline_episode_0.png"
echo "teleop:       $TELE  (episode 0 replays synthesised episode 0 as a leader arm; /device/master-arm holds the stream)"
