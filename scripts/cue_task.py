"""Write the long memory task: N cues (N > 10) shown at the start, then N presses of four buttons in that order.

    .venv/bin/python scripts/cue_task.py --cues 12      # x2/tasks/press_sequence_12.yaml and its scene

Four buttons (red, green, blue, yellow) stand in a row, in a new order every reset. A cue board shows N lamps in
two rows, the far row first and each row from the robot's left to its right, until its cover shuts (2.6 s in).
The sequence is drawn at every reset: the scene's roles step_1 .. step_N each name one of the four buttons, never
the one before it (so every cue asks for a new press), and each lamp takes the colour of its step's button. Node
k presses step_k's button; pressing any other button (but the one pressed just before, which may still be coming
back up) fails it. Running it again writes the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from task_chain import Node, chain

ROOT = Path(__file__).resolve().parents[1]
SCENES, TASKS = ROOT / "x2/assets/scenes", ROOT / "x2/tasks"
BUTTONS = {"red": "button_panel", "green": "button_green", "blue": "button_blue", "yellow": "button_yellow"}
LAMPS = ", ".join(f"lamp_{colour}" for colour in BUTTONS)  # in the order of the buttons: a step's place in both
SLOTS_Y = (-0.36, -0.12, 0.12, 0.36)  # the row of buttons at x = 0.5, 24 cm apart (each panel is 14 cm wide)
BOARD = (0.84, 0.0, 0.75)  # the cue board (x2/assets/objects/cue_board.xml): 12 x 26 cm, its cover 12 cm tall
PER_ROW = 6
MAX_CUES = 2 * PER_ROW  # two rows of 4 cm lamps fit under the board's cover


def lamp_pose(k: int) -> tuple[float, float, float]:
    """Lamp k (from 1): the far row first; in a row from +y (the robot's left) to -y, 4.2 cm apart."""
    row, col = divmod(k - 1, PER_ROW)
    x = BOARD[0] + (0.025 if row == 0 else -0.025)
    y = round(0.105 - 0.042 * col, 3)
    return round(x, 3), y, round(BOARD[2] + 0.01, 3)


def scene(n: int) -> str:
    buttons = ", ".join(BUTTONS)
    lines = [f"# press_sequence_{n}'s scene (written by scripts/cue_task.py): four buttons in a row, in a new order",
             f"# every reset; a cue board whose {n} lamps show the order to press them in until its cover shuts.",
             "include: green_booth.yaml", f"name: sequence_booth_{n}",
             f"description: Green booth with four push buttons in a row and a cue board of {n} lamps, then covered.",
             "regions:", "  button_row:", "    center: [0.5, 0.0]", "    half_size: [0.01, 0.01]",
             "    yaw: [-0.1, 0.1]", "    slots: [" + ", ".join(f"[0.5, {y}]" for y in SLOTS_Y) + "]",
             "# step_k: the button the k-th cue asks for, drawn at every reset, never the one step_(k-1) drew",
             "roles:"]
    for k in range(1, n + 1):
        unlike = f", unlike: step_{k - 1}" if k > 1 else ""
        lines.append(f"  step_{k}: {{one_of: [{buttons}]{unlike}}}")
    lines.append("objects:")
    lines += [f"  {colour}: {{asset: {asset}, region: button_row}}" for colour, asset in BUTTONS.items()]
    lines.append(f"  cue_board: {{asset: cue_board, pose: [{BOARD[0]}, {BOARD[1]}, {BOARD[2]}, 0.0]}}")
    lines.append("  # the lamps, each the colour of its step's button (follows), the far row first, left to right")
    for k in range(1, n + 1):
        x, y, z = lamp_pose(k)
        lines.append(f"  cue_{k}: {{pool: [{LAMPS}], follows: step_{k}, pose: [{x}, {y}, {z}, 0.0]}}")
    return "\n".join(lines) + "\n"


def task(n: int) -> str:
    out = [f"# Challenge (memory): {n} cues, shown at the start and then covered, pressed in order on four buttons",
           "# (written by scripts/cue_task.py). Which button each step is was drawn at the reset (the scene's roles),",
           "# so only what was seen says which is next.",
           f"name: press_sequence_{n}",
           f'instruction: "Press the buttons in the order of the {n} lamps you saw: the far row first, each row from '
           'left to right."',
           "paraphrases:", "  train:",
           f'    - "Remember the {n} lights, far row then near row, left to right, and press the matching buttons '
           'in that order."',
           "  eval:",
           f'    - "Repeat the sequence of {n} coloured lights on the buttons, row by row."',
           f"scene: sequence_booth_{n}", "dimensions: [memory, challenge]", "robot: artixon-g",
           f"horizon_s: {8 * n + 20}"]
    nodes = []
    for k in range(1, n + 1):
        last = f", last: step_{k - 1}/button" if k > 1 else ""
        wrong = [f"pressed_instead: {{joint: {colour}/button, due: step_{k}/button{last}}}" for colour in BUTTONS]
        nodes.append(Node(f"press_{k}", f"Press the button of cue {k} of {n}.",
                          [f"button_pressed: {{joint: step_{k}/button}}"], wrong, 15,
                          f"{{name: press, arm: auto, target: step_{k}/button_top}}"))
    nodes.append(Node("retract", "Bring both arms back home.", ["arm_at_home: {arm: both, tolerance: 0.15}"], None,
                      15, "{name: retract, arm: both}"))
    out += chain(nodes)
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cues", type=int, required=True, help=f"2 to {MAX_CUES}")
    args = parser.parse_args()
    n = args.cues
    if not 2 <= n <= MAX_CUES:
        print(f"error: --cues: found {n}; allowed: 2 to {MAX_CUES} (the lamps that fit under the board's cover)",
              file=sys.stderr)
        return 2
    (SCENES / f"sequence_booth_{n}.yaml").write_text(scene(n))
    (TASKS / f"press_sequence_{n}.yaml").write_text(task(n))
    print(f"wrote x2/tasks/press_sequence_{n}.yaml ({n} presses) and x2/assets/scenes/sequence_booth_{n}.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
