"""Write the Tower of Hanoi task for N discs: its disc assets, its scene and its task YAML (2^N - 1 moves).

    .venv/bin/python scripts/hanoi_task.py --discs 5      # x2/tasks/hanoi_tower_5.yaml and what it needs

A task is a YAML DAG, and a Hanoi DAG is long (a pick and a place node per move), so it is written by the
recursive solution rather than by hand. The discs are 50 mm tall wooden cylinders whose radii step by 5 mm from
18 mm (the sixth, 42 mm, is 84 mm across: within the 90 mm G jaw's fit clearance); they stand on the
same three spots as the three-disc task (x2/tasks/hanoi_tower.yaml, whose hand-written discs stay as they are).
Running it again writes the same bytes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from task_chain import Node, chain

ROOT = Path(__file__).resolve().parents[1]
OBJECTS, SCENES, TASKS = ROOT / "x2/assets/objects", ROOT / "x2/assets/scenes", ROOT / "x2/tasks"
HEIGHT = 0.05  # m per disc
SPOT_TOP = 0.003  # m: a peg spot's surface above the table
RADII_MM = (18, 23, 28, 33, 38, 42)  # smallest first, 18 as the three-disc task's smallest
COLOURS = ("0.85 0.25 0.2", "0.9 0.6 0.15", "0.85 0.8 0.2", "0.3 0.7 0.3", "0.3 0.35 0.8", "0.55 0.3 0.7")
SPOTS = {"a": -0.36, "b": -0.14, "c": 0.08}  # y of each spot at x = 0.5: the right arm's side of the table


def disc_asset(radius_mm: int, colour: str) -> tuple[str, str, str]:
    name = f"hanoi_disc_{radius_mm}"
    r = radius_mm / 1000
    xml = f"""<!--
  A Hanoi disc for scripts/hanoi_task.py: a wooden cylinder {2 * radius_mm} mm across and 50 mm tall (tall enough that
  a gripper's pads closing on its upper part stay above the disc below). Origin at the bottom centre; site
  "grasp" 35 mm up, where the pads close.
-->
<mujoco model="{name}">
  <compiler angle="radian"/>
  <worldbody>
    <body name="object">
      <geom name="disc" type="cylinder" size="{r:g} 0.025" pos="0 0 0.025" mass="{0.02 + 1.2 * r:.3f}" condim="4"
            friction="0.9 0.01 0.001" rgba="{colour} 1"/>
      <site name="grasp" pos="0 0 0.035" size="0.005" group="4"/>
    </body>
  </worldbody>
</mujoco>
"""
    yaml = f"""name: {name}
mjcf: {name}.xml
tags: [pickable, disc]
footprint_radius: {r + 0.01:.3f}
height: 0.0
free: true
parts: {{grasp: grasp}}
joints: []
"""
    return name, xml, yaml


def moves(n: int, src: str = "a", dst: str = "c", via: str = "b") -> list[tuple[int, str, str]]:
    """(disc, from, to) of the optimal solution, disc 1 the smallest."""
    if n == 0:
        return []
    return [*moves(n - 1, src, via, dst), (n, src, dst), *moves(n - 1, via, dst, src)]


def scene(n: int, assets: list[str]) -> str:
    lines = [f"# hanoi_tower_{n}'s scene (written by scripts/hanoi_task.py): three spots in a row on the robot's",
             f"# right and {n} discs stacked on the first, the largest at the bottom.",
             "include: green_booth.yaml", f"name: hanoi_booth_{n}",
             f"description: Green booth with three Hanoi spots and a tower of {n} discs on the first.", "objects:"]
    lines += [f"  spot_{s}: {{asset: peg_spot, pose: [0.5, {y}, 0.75, 0.0]}}" for s, y in SPOTS.items()]
    for level, disc in enumerate(range(n, 0, -1)):
        z = round(0.75 + SPOT_TOP + level * HEIGHT, 3)
        lines.append(f"  disc{disc}: {{asset: {assets[disc - 1]}, pose: [0.5, {SPOTS['a']}, {z}, 0.0]}}")
    return "\n".join(lines) + "\n"


def task(n: int) -> str:
    plan = moves(n)
    total = len(plan)
    pegs: dict[str, list[int]] = {"a": list(range(n, 0, -1)), "b": [], "c": []}
    out = [f"# Challenge: the Tower of Hanoi with {n} discs, 2^{n} - 1 = {total} moves from spot A to spot C, never a",
           "# larger disc on a smaller one (written by scripts/hanoi_task.py from the recursive solution). Each move",
           "# is a pick and a place onto a spot or onto the disc it may go on.",
           f"name: hanoi_tower_{n}",
           'instruction: "Move the tower of discs from the first spot to the third, one disc at a time, never a '
           'larger disc on a smaller one."',
           f"scene: hanoi_booth_{n}", "dimensions: [challenge]", "robot: artixon-g",
           f"horizon_s: {20 * total + 20}"]
    nodes = []
    for k, (disc, src, dst) in enumerate(plan, start=1):
        pegs[src].pop()
        target = f"disc{pegs[dst][-1]}" if pegs[dst] else f"spot_{dst}"
        pegs[dst].append(disc)
        onto = f"disc {target[4:]}" if target.startswith("disc") else f"spot {dst}"
        fallen = f"object_fallen: {{obj: disc{disc}}}"
        nodes += [Node(f"move{k}_pick", f"Move {k} of {total}, grasp disc {disc}.",
                       [f"gripper_holding: {{arm: right, obj: disc{disc}}}"], fallen, 20,
                       f"{{name: pick, arm: right, target: disc{disc}}}"),
                  Node(f"move{k}_place", f"Move {k} of {total}, set disc {disc} on {onto}.",
                       [f"object_on: {{obj: disc{disc}, target: {target}, distance: 0.02}}",
                        f"gripper_released: {{arm: right, obj: disc{disc}}}"], fallen, 20,
                       f"{{name: place, arm: right, target: {target}}}")]
    nodes.append(Node("retract", "Bring the arm back home.", ["arm_at_home: {arm: right, tolerance: 0.15}"], None,
                      15, "{name: retract, arm: right}"))
    out += chain(nodes)
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--discs", type=int, required=True, help=f"2 to {len(RADII_MM)}")
    args = parser.parse_args()
    n = args.discs
    if not 2 <= n <= len(RADII_MM):
        print(f"error: --discs: found {n}; allowed: 2 to {len(RADII_MM)} (wider discs do not fit the jaw)",
              file=sys.stderr)
        return 2
    assets = []
    for radius, colour in zip(RADII_MM[:n], COLOURS, strict=False):
        name, xml, yaml = disc_asset(radius, colour)
        (OBJECTS / f"{name}.xml").write_text(xml)
        (OBJECTS / f"{name}.yaml").write_text(yaml)
        assets.append(name)
    (SCENES / f"hanoi_booth_{n}.yaml").write_text(scene(n, assets))
    (TASKS / f"hanoi_tower_{n}.yaml").write_text(task(n))
    print(f"wrote x2/tasks/hanoi_tower_{n}.yaml ({2 ** n - 1} moves), x2/assets/scenes/hanoi_booth_{n}.yaml and "
          f"{n} disc assets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
