"""Write the block-stacking task for N blocks: its scene and its task YAML (a pick and a place node per block).

    .venv/bin/python scripts/stack_task.py --blocks 15     # x2/tasks/stack_blocks_15.yaml and its scene

The three-block task (x2/tasks/stack_blocks.yaml, 5 cm blocks) is written by hand. A tall tower needs smaller
blocks to stay within the arm's reach (15 of 3 cm make 45 cm, the top block placed 1.2 m above the floor), so
these are 3 cm cubes (x2/assets/objects/cube_3cm.xml): the base one stands in front of the robot, the others
on a grid of slots on the right arm's side, shared out in a new order every reset. Running it again writes the
same bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from task_chain import Node, chain

ROOT = Path(__file__).resolve().parents[1]
SCENES, TASKS = ROOT / "x2/assets/scenes", ROOT / "x2/tasks"
BASE = (0.34, 0.0)  # the tower's spot: its top (1.2 m high) still well inside the right arm's reach
# the supply: cubes 10 cm apart (the open jaw and its fingers fit between two), within the right arm's reach
SLOTS = [(x, y) for y in (-0.20, -0.30, -0.40, -0.50) for x in (0.26, 0.36, 0.46)] + [(0.36, -0.10), (0.46, -0.10)]
MAX_BLOCKS = 1 + len(SLOTS)


def scene(n: int) -> str:
    slots = ", ".join(f"[{x}, {y}]" for x, y in SLOTS)
    lines = [f"# stack_blocks_{n}'s scene (written by scripts/stack_task.py): a 3 cm cube to build on in front of",
             f"# the robot and {n - 1} more on a grid of slots on its right, shared out in a new order every reset.",
             "include: green_booth.yaml", f"name: stack_booth_{n}",
             f"description: Green booth with {n} small cubes, one to build a tower on.", "regions:",
             f"  supply: {{center: [0.36, -0.3], half_size: [0.004, 0.004], yaw: [-0.1, 0.1], slots: [{slots}]}}",
             "objects:", f"  cube1: {{asset: cube_3cm, tags: [bottom], pose: [{BASE[0]}, {BASE[1]}, 0.75, 0.0]}}"]
    lines += [f"  cube{k}: {{asset: cube_3cm, region: supply}}" for k in range(2, n + 1)]
    return "\n".join(lines) + "\n"


def task(n: int) -> str:
    out = [f"# Challenge (precision): a tower of {n} 3 cm cubes, each set on the one below within a few millimetres",
           "# (written by scripts/stack_task.py).", f"name: stack_blocks_{n}",
           f'instruction: "Stack all {n} cubes into one tower on the first."', f"scene: stack_booth_{n}",
           "dimensions: [precision, challenge]", "robot: artixon-g", f"horizon_s: {12 * (n - 1) + 15}"]
    nodes = []
    for k in range(2, n + 1):
        fallen = f"object_fallen: {{obj: cube{k}}}"
        nodes += [Node(f"pick{k}", f"Grasp cube {k} and lift it.",
                       [f"object_lifted: {{obj: cube{k}, height: 0.025}}",
                        f"gripper_holding: {{arm: right, obj: cube{k}}}"],
                       fallen, 15, f"{{name: pick, arm: right, target: cube{k}, lift: 0.04}}"),
                  Node(f"stack{k}", f"Set cube {k} on cube {k - 1} and let go.",
                       [f"object_on: {{obj: cube{k}, target: cube{k - 1}, distance: 0.01}}",
                        f"gripper_released: {{arm: right, obj: cube{k}}}"], fallen, 15,
                       f"{{name: place, arm: right, target: cube{k - 1}, approach: 0.05}}")]
    nodes.append(Node("retract", "Bring the arm back home.", ["arm_at_home: {arm: right, tolerance: 0.15}"], None,
                      10, "{name: retract, arm: right}"))
    out += chain(nodes)
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--blocks", type=int, required=True, help=f"2 to {MAX_BLOCKS}")
    args = parser.parse_args()
    n = args.blocks
    if not 2 <= n <= MAX_BLOCKS:
        print(f"error: --blocks: found {n}; allowed: 2 to {MAX_BLOCKS} (the supply's slots)", file=sys.stderr)
        return 2
    (SCENES / f"stack_booth_{n}.yaml").write_text(scene(n))
    (TASKS / f"stack_blocks_{n}.yaml").write_text(task(n))
    print(f"wrote x2/tasks/stack_blocks_{n}.yaml ({n - 1} blocks to stack) and x2/assets/scenes/stack_booth_{n}.yaml")
    return 0


if __name__ == "__main__":
    sys.exit(main())
