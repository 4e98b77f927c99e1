"""What `x2 render` and every exporter draw when not told otherwise: the one place these are decided.

Cameras: the robot's own views. A policy runs on the robot, so it trains on what the robot sees: the head
camera for the scene and both wrist cameras for the fingers and the grasp (the booth's `front` camera
exists for people watching, and the robot never has it).

Size: 240x320 (height x width). Policy trainers downsample anyway (diffusion policy and robomimic train on
84-240 pixel crops, LeRobot's ACT/diffusion configs resize on load), so larger frames only cost render
time and disk. Measured on this 2-core machine (llvmpipe, three cameras, one fruit_in_microwave
episode): 17 ms a frame at 96x128, 31 ms at 240x320, 69 ms at 480x640; stored with Zstd level 1 they
take ~9, ~26 and ~59 KiB a frame. 240x320 renders a 865-frame episode in ~27 s on one core (~22 MB)
and still shows the fingertips and the fruit clearly in the wrist views; 480x640 would more than
double both for detail the trainers throw away.
"""

from __future__ import annotations

from x2.render.frames import ImageSize

DEFAULT_CAMERAS: tuple[str, ...] = ("head", "left_wrist", "right_wrist")
DEFAULT_SIZE = ImageSize(240, 320)
