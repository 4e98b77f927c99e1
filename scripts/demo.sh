#!/usr/bin/env bash
# The most complete main job that exists today, end to end on a small fruit_in_microwave dataset:
# synthesise demonstrations with the skills and the motion planner (two worker processes, then a second
# run that continues the first), check them (labels from the files, exact action replay, physics),
# render two cameras from the recorded states (two worker processes) with a contact sheet, split and
# summarise the dataset, export it to LeRobot (read back with LeRobot before it lands), zarr and HDF5,
# write a rerun recording of one episode, and replay one demonstration through the teleop path.
set -euo pipefail
cd "$(dirname "$0")/.."
X2=.venv/bin/x2
DS=data/demo-fruit_in_microwave
TELE=data/demo-teleop
OUT=exports
export MUJOCO_GL=${MUJOCO_GL:-egl} HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
SECONDS=0

rm -rf "$DS" "$TELE"   # the demo's own datasets only; exports are replaced with --overwrite
$X2 tasks show fruit_in_microwave --graph
$X2 synth --task fruit_in_microwave -n 2 --workers 2 --seed 7 --dataset "$DS"
$X2 synth --task fruit_in_microwave -n 1 --workers 2 --seed 7 --dataset "$DS"   # continues after run 1's attempts
$X2 datasets info "$DS"
$X2 label 0 --dataset "$DS"
$X2 replay 0 --dataset "$DS" --check
$X2 datasets validate "$DS" --physics
$X2 render "$DS" --cameras head,right_wrist --workers 2
$X2 render "$DS" --contact-sheet "$DS/contact_sheet_episode_0.png" --episode 0
$X2 datasets split "$DS" --val 0.34 --seed 0
$X2 datasets stats "$DS" --plot "$DS/subtask_durations.png"
$X2 export lerobot "$DS" --overwrite
$X2 export zarr "$DS" --overwrite
$X2 export hdf5 "$DS" --overwrite
$X2 datasets view 0 --dataset "$DS" --out "$OUT/demo-episode_0.rrd"
$X2 collect teleop --device "replay:$DS/episodes/episode_000000.h5" --episodes 1 --dataset "$TELE"
$X2 datasets validate "$DS"
echo
echo "done in ${SECONDS} s"
echo "dataset:       $DS  (manifest.json, episodes.jsonl, episodes/*.h5 with camera streams, splits.json)"
echo "contact sheet: $DS/contact_sheet_episode_0.png"
echo "durations:     $DS/subtask_durations.png"
echo "LeRobot:       $OUT/demo-fruit_in_microwave-lerobot  (LeRobotDataset('x2/demo-fruit_in_microwave', root=..., video_backend='pyav'))"
echo "zarr:          $OUT/demo-fruit_in_microwave.zarr  (diffusion-policy replay buffer, zarr format 2)"
echo "HDF5:          $OUT/demo-fruit_in_microwave.hdf5  (robomimic / Isaac Lab Mimic)"
echo "rerun:         $OUT/demo-episode_0.rrd  (rerun $OUT/demo-episode_0.rrd)"
echo "teleop:        $TELE  (episode 0 replays synthesised episode 0 as a leader arm; /device/master-arm holds the stream)"
