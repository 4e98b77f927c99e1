"""`x2 calibrate camera`: a robot's camera set to a lab's calibration files (docs/calibration_cameras.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from x2.base.errors import X2Error
from x2.cli._common import console
from x2.cli.group_class import typer_group

app = typer_group(
    "calibrate", "Make x2's twin your robot: its dynamics fitted to your recordings, its cameras from your "
    "calibration files.",
    "  x2 calibrate dynamics --robot aloha data/lab_recordings --name lab1\n\n"
    "  x2 calibrate camera --robot aloha --camera head head_camera_info.yaml --hand-eye handeye.yaml --name lab1\n\n"
    "  x2 calibrate camera --robot aloha --camera head head.yaml --name lab1 --frame real.png --state demo:3:120 "
    "--board checkerboard:9x6:0.025",
)


@app.command("camera")
def calibrate_camera(
    intrinsics: Annotated[Path, typer.Argument(help="the camera file: a ROS camera_info YAML, an OpenCV calibration "
                                               "YAML (FileStorage) or a YAML with fx fy cx cy width height",
                                               dir_okay=False)],
    robot: Annotated[str, typer.Option("--robot", help="the robot whose camera it is, e.g. aloha")],
    camera: Annotated[str, typer.Option("--camera", help="the robot's camera, e.g. head (x2 robots show ROBOT)")],
    hand_eye: Annotated[Path | None, typer.Option("--hand-eye", help="the camera's pose: an easy_handeye YAML or a "
                                                  "4x4 matrix (text, YAML, .npy); without it the camera stays where "
                                                  "the robot file put it", dir_okay=False)] = None,
    eye_in_hand: Annotated[bool | None, typer.Option("--eye-in-hand/--eye-to-hand", help="the hand-eye result is "
                                                     "relative to the arm's flange (eye-in-hand) or to the robot's "
                                                     "base (eye-to-hand); default: the file's eye_on_hand, else "
                                                     "whether the camera moves with an arm")] = None,
    relative_to: Annotated[str | None, typer.Option("--relative-to", help="the x2 body or site the hand-eye result "
                                                    "is relative to, when it is not the default one")] = None,
    name: Annotated[str | None, typer.Option("--name", help="the calibration: specs/calibrations/NAME.yaml (or a "
                                             ".yaml path); default: the robot's name")] = None,
    frame: Annotated[Path | None, typer.Option("--frame", help="a real picture taken by this camera: the twin's "
                                               "render at --state is drawn over it", dir_okay=False)] = None,
    state: Annotated[str | None, typer.Option("--state", help="the joint state of --frame: EPISODE_FILE:FRAME or "
                                              "DATASET:EPISODE:FRAME (its /observations/qpos row)")] = None,
    board: Annotated[str | None, typer.Option("--board", help="a board the frame shows, for its reprojection error: "
                                              "checkerboard:COLSxROWS:SQUARE_M (inner corners) or "
                                              "aruco:DICT_4X4_50:COLSxROWS:MARKER_M:SEPARATION_M")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="the overlay PNG (default: FRAME's name + "
                                             "_overlay.png)", dir_okay=False)] = None,
) -> None:
    """Set a robot's camera to a calibration: intrinsics (fx, fy, cx, cy at the calibrated size, OpenCV distortion)
    and, with --hand-eye, its pose; written into the `cameras` section of the calibration file (the rest of the
    file is kept). Renders of that camera are then drawn through it, distorted as the lens distorts.

    Example: [cyan]x2 calibrate camera --robot aloha --camera head d435.yaml --hand-eye handeye.yaml --name lab1[/cyan]

    A wrist camera, its hand-eye result a 4x4 matrix: [cyan]x2 calibrate camera --robot aloha --camera left_wrist
    wrist.yaml --hand-eye wrist_T.txt --eye-in-hand --name lab1[/cyan]
    """
    from x2 import envspec as spec
    from x2.envspec.calibration import calibration_file
    from x2.render.calibration_overlay import write_calibration
    from x2.sim.mujoco.camera_twin import calibrated_camera

    model = spec.load_robot(robot).model
    mount = None if eye_in_hand is None else ("eye-in-hand" if eye_in_hand else "eye-to-hand")
    cal = calibrated_camera(model, camera, intrinsics, hand_eye, mount, relative_to)
    path = calibration_file(name or model.name)
    overlay = None
    if (frame is None) != (state is None):
        raise X2Error("--frame/--state: found one without the other; allowed: both (a real picture and the joint "
                      "state it was taken at) or neither")
    if frame is not None and state is not None:  # before anything is written: a board not found writes nothing
        from x2.render.calibration_overlay import overlay_picture
        from x2.sim.boards import Board

        shown = Board.parse(board) if board is not None else None
        overlay = overlay_picture(model, cal, frame, state, out or frame.with_name(f"{frame.stem}_overlay.png"),
                                  shown)
    elif board is not None:
        raise X2Error("--board: found it without --frame; allowed: --board with --frame and --state")
    write_calibration(path, model.name, cal, f"x2 calibrate camera --camera {camera} {intrinsics}"
                      + (f" --hand-eye {hand_eye}" if hand_eye is not None else ""), overlay)
    k = f"fx {cal.fx:.2f} fy {cal.fy:.2f} cx {cal.cx:.2f} cy {cal.cy:.2f} at {cal.width}x{cal.height}"
    dist = f", distortion {cal.distortion_model} {list(cal.distortion)}" if cal.distorted else ", no distortion"
    console.print(escape(f"{model.name} camera {camera}: {k}{dist}"))
    if hand_eye is not None:
        from x2.envspec.camera_files import frames_note, read_hand_eye

        note, warning = frames_note(read_hand_eye(hand_eye), str(hand_eye))
        console.print(escape(f"  hand-eye: {note}"))
        if warning is not None:
            console.print(escape(f"warning: {warning}"))
    if cal.pose is not None:
        p = cal.pose
        console.print(escape(f"  pose ({p.mount}) in {p.relative_to}: position "
                             f"{' '.join(f'{v:.4f}' for v in p.position)} m, quaternion w x y z "
                             f"{' '.join(f'{v:.5f}' for v in p.quaternion)} (OpenCV optical frame)"))
    console.print(escape(f"written: {path} (cameras.{camera})"))
    if overlay is not None:
        if overlay.board is not None:
            console.print(escape(f"board: {overlay.corners} corners, reprojection error under this calibration "
                                 f"rms {overlay.board.rms:.3f} px, max {overlay.board.max:.3f} px"))
        console.print(escape(f"overlay: {overlay.out} (the twin at {overlay.joints} recorded joints over the frame, "
                             "its silhouette's edges in green)"))
