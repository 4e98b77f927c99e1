"""Issue 43's proof, one chain from `x2 synth` to the report: an ACT trained with LeRobot's trainer on x2's rendered
images alone (head and right-wrist cameras plus the robot's own joints; no object poses), scored by `x2 eval` in
and out of distribution next to `expert`, `random` and `hold` on the same seeds; then the same recipe on the
demonstrations plus their `x2 augment replay` variants, to see whether replay augmentation moves the
out-of-distribution score.

    .venv/bin/python bench/bench_visuomotor.py --out runs/visuomotor --steps 6000

Stages, each skipped when its output is already complete, so a stopped run continues where it stopped:

1. `x2 synth --task T -n N --grasp-variety 1` -> OUT/data/demos
2. `x2 render` of the demonstrations' cameras at the policy's size
3. `x2 augment replay --per-episode K --render` -> OUT/data/demos-aug (new distractors, tables, lights, walls)
4. `x2 export lerobot` of both, then LeRobot's own `aggregate_datasets` joins them (no re-encoding) into the
   ablation's training set
5. `lerobot-train` of both policies side by side (the same recipe, seed and step count; the cores shared out), until
   `--steps` or until `--train-until` (UTC HH:MM): then both stop and the newest checkpoint both have is scored
6. `x2 eval` of both checkpoints and the bounds, both splits, the same master seed and `--max-ticks`; the
   checkpoints' chunks run as `--chunk-exec` says (default: the whole chunk, as trained; `ensemble`: ACT's temporal
   ensembling, each in its own eval folder, the bounds' shared)
7. the report: OUT/report.md (report-cosine.md, report-chunk50.md, report-<chunk-exec>.md for the others), printed
   too

The recipe is docs/policies.md's state ACT with cameras: the ResNet-18 backbone trains from scratch
(`--policy.pretrained_backbone_weights=null`: no weights can be downloaded here) at the transformer's learning
rate, 1e-4, not ACT's fine-tuning 1e-5. Its chunk of 50 actions (1.67 s) runs whole: with chunks of 20 (the state
recipe's; `--chunk-size 20`, the runs named without the suffix) the arm was re-planned in the motion's slow phases
and the best checkpoint succeeded 43 % in distribution, with 50 (runs named NAME-chunk50) 80 % (bench/RESULTS.md,
"Chunks of 50").
`--velocity-state` exports again with the joints' velocities in the state (OUT/exports-vel, runs named NAME-vel).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PY = sys.executable
BIN = Path(PY).parent
BOUNDS = ("expert", "random", "hold")


def log(msg: str) -> None:
    print(f"[{dt.datetime.now(dt.UTC):%H:%M:%S}] {msg}", flush=True)


def run(cmd: list[str], logfile: Path, ok: tuple[int, ...] = (0,)) -> float:
    """Run one stage's command, its output into `logfile`; any other exit code than `ok` ends the bench with the
    log's tail (x2's 1 is an internal error, except where a stage says otherwise)."""
    log(" ".join(cmd) + f"   (log: {logfile})")
    t0 = time.perf_counter()
    with logfile.open("w") as f:
        done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if done.returncode not in ok:
        tail = logfile.read_text()[-2000:]
        raise SystemExit(f"{cmd[0]} exited {done.returncode}; the end of {logfile}:\n{tail}")
    return time.perf_counter() - t0


def x2(*args: str) -> list[str]:
    return [PY, "-m", "x2", *args]


def episodes_in(dataset: Path) -> int:
    from x2.base.errors import X2Error
    from x2.datasets import Dataset

    try:
        return len(Dataset.open(dataset).episodes())
    except X2Error:  # no dataset yet: the stage is not done
        return 0


LR = 1e-4  # the transformer's and, from scratch, the backbone's


# The policies' own settings. ACT: docs/policies.md's state recipe with cameras. Diffusion: two observation steps (the
# policy sees its own motion, which one picture and the joints do not tell: bench/RESULTS.md, "Continued to step
# 8250"), group norm in place of the batch norm a from-scratch ResNet cannot use, a smaller U-Net than LeRobot's
# default (down_dims 512-2048) for a CPU, a horizon of 32 run 16 at a time (drop_n_last_frames = horizon -
# n_action_steps - n_obs_steps + 1), and DDIM's 10 denoising steps at inference instead of DDPM's 100.
POLICY_ARGS = {
    "act": ["--policy.type=act", "--policy.dim_model=256", "--policy.dim_feedforward=1024", "--policy.chunk_size=20",
            "--policy.n_action_steps=20", f"--policy.optimizer_lr={LR}", f"--policy.optimizer_lr_backbone={LR}"],
    "diffusion": ["--policy.type=diffusion", "--policy.n_obs_steps=2", "--policy.horizon=32",
                  "--policy.n_action_steps=16", "--policy.drop_n_last_frames=15", "--policy.use_group_norm=true",
                  "--policy.down_dims=[256,512,1024]", "--policy.noise_scheduler_type=DDIM",
                  "--policy.num_inference_steps=10", f"--policy.optimizer_lr={LR}"],
}


def train_cmd(export: Path, repo_id: str, out: Path, args: argparse.Namespace) -> list[str]:
    policy = POLICY_ARGS[args.policy_type]
    if args.policy_type == "act":  # the chunk is run whole
        policy = [a for a in policy if not a.startswith(("--policy.chunk_size=", "--policy.n_action_steps="))] + \
            [f"--policy.chunk_size={args.chunk_size}", f"--policy.n_action_steps={args.chunk_size}"]
    cmd = [str(BIN / "lerobot-train"), f"--dataset.repo_id={repo_id}", f"--dataset.root={export}",
           *policy, f"--policy.device={args.device}", "--policy.push_to_hub=false",
           "--policy.pretrained_backbone_weights=null",
           f"--batch_size={args.batch}", "--num_workers=1", f"--steps={args.steps}",
           f"--save_freq={args.save_every}", "--log_freq=50", "--wandb.enable=false", f"--seed={args.train_seed}",
           f"--output_dir={out}"]
    if args.lr_schedule == "cosine":
        # ACT's preset is a constant rate: the weights keep moving at 1e-4 and two checkpoints succeed on different
        # worlds. LeRobot's cosine decay (its AdamW, ACT's weight decay) settles them by --steps; the per-group
        # rates (backbone, transformer) scale together.
        cmd += ["--use_policy_training_preset=false", "--optimizer.type=adamw", f"--optimizer.lr={LR}",
                "--optimizer.weight_decay=1e-4", "--scheduler.type=cosine_decay_with_warmup",
                f"--scheduler.num_warmup_steps={min(250, args.steps // 10)}",
                f"--scheduler.num_decay_steps={args.steps}", f"--scheduler.peak_lr={LR}",
                f"--scheduler.decay_lr={LR / 100}"]
    return cmd


def checkpoints(run_dir: Path) -> set[int]:
    """Steps whose checkpoint is complete: LeRobot moves `checkpoints/last` only after a save has finished, so a
    save cut short (a stop at --train-until) is never counted."""
    root = run_dir / "checkpoints"
    if not (root / "last").is_symlink():
        return set()
    last = int(os.readlink(root / "last").rstrip("/").rsplit("/", 1)[-1])
    return {int(p.name) for p in root.iterdir() if p.name.isdigit() and int(p.name) <= last}


def group_cpu_s(pgid: int) -> float:
    """CPU seconds of every live process in process group `pgid`, with what each has reaped of its children (the
    trainer and its data-loading worker). Linux's /proc; 0 elsewhere."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # (gone meanwhile)
        if int(fields[2]) == pgid:
            total += sum(int(v) for v in fields[11:15]) / tick  # utime stime cutime cstime
    return total


def parse_deadline(text: str | None) -> dt.datetime | None:
    """`--train-until`: an ISO date and time (UTC), or HH:MM, the nearest such time: one passed less than 12 hours
    ago is past (a rerun to report a finished run trains nothing), else the next one (tonight's 01:00 from 23:00)."""
    if not text:
        return None
    if "T" in text:
        return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)
    hh, mm = (int(x) for x in text.split(":"))
    now = dt.datetime.now(dt.UTC)
    at = now.replace(hour=hh, minute=mm, second=0, microsecond=0)
    if at > now + dt.timedelta(hours=12):
        return at - dt.timedelta(days=1)
    return at if at >= now - dt.timedelta(hours=12) else at + dt.timedelta(days=1)


def train_both(jobs: dict[str, tuple[Path, str]], args: argparse.Namespace, work: Path) -> tuple[int, dict[str, Any]]:
    """Train every policy side by side; returns the step all of them reached and each run's cost (wall and CPU,
    summed over the invocations that trained it: train/<name>/costs.json)."""
    threads = str(max(1, (os.cpu_count() or 1) // len(jobs)))  # the cores shared out: side by side, one each
    env = dict(os.environ, OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads,
               HF_HUB_OFFLINE="1")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    cpu: dict[str, float] = {}
    deadline = parse_deadline(args.train_until)
    past = deadline is not None and dt.datetime.now(dt.UTC) >= deadline
    t0 = time.time()
    why = "stopped: the bench was interrupted"

    def costs_of(name: str) -> dict[str, Any]:
        path = work / "train" / name / "costs.json"
        return dict(json.loads(path.read_text())) if path.exists() else {"wall_s": 0, "cpu_s": 0, "runs": []}

    def finish(name: str, why: str) -> None:
        costs = costs_of(name)
        wall, used = round(time.time() - t0), round(cpu.get(name, 0.0))
        costs["wall_s"] += wall
        costs["cpu_s"] += used
        costs["runs"].append({"wall_s": wall, "cpu_s": used, "end": why})
        (work / "train" / name / "costs.json").write_text(json.dumps(costs))

    try:
        for name, (export, repo_id) in jobs.items():
            out = work / "train" / name
            if past or args.steps in checkpoints(out):
                continue
            cmd = train_cmd(export, repo_id, out, args)
            if checkpoints(out):  # continue a stopped run from its newest complete checkpoint
                cmd = [c for c in cmd if not c.startswith("--output_dir")]
                cmd += [f"--config_path={out}/checkpoints/last/pretrained_model/train_config.json", "--resume=true"]
            elif out.exists():
                shutil.rmtree(out)  # stopped before its first checkpoint: nothing to continue from
            log(f"train {name}: " + " ".join(cmd))
            procs[name] = subprocess.Popen(cmd, stdout=(work / f"train-{name}.log").open("a"),
                                           stderr=subprocess.STDOUT, env=env, start_new_session=True)
        while procs:
            time.sleep(20)
            for name, p in list(procs.items()):
                cpu[name] = max(cpu.get(name, 0.0), group_cpu_s(p.pid))
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    p.returncode = os.waitstatus_to_exitcode(status)
                    cpu[name] = max(cpu[name], usage.ru_utime + usage.ru_stime + 0.0)
                    del procs[name]
                    finish(name, f"exit {p.returncode}")
            steps = {n: max(checkpoints(work / "train" / n), default=0) for n in jobs}
            log("training: " + ", ".join(f"{n} step {_last_logged(work / f'train-{n}.log')} (saved {steps[n]})"
                                         for n in jobs))
            if deadline is not None and dt.datetime.now(dt.UTC) >= deadline and procs:
                log(f"--train-until {args.train_until} reached: stopping the trainings")
                why = f"stopped at --train-until {args.train_until}"
                break
    finally:  # at the deadline, on an error or Ctrl-C: no trainer outlives the bench
        for name, p in procs.items():
            cpu[name] = max(cpu.get(name, 0.0), group_cpu_s(p.pid))
            os.killpg(p.pid, signal.SIGTERM)
            p.wait()
            finish(name, why)
    common = set.intersection(*(checkpoints(work / "train" / n) for n in jobs))
    if not common:
        raise SystemExit("no checkpoint that every training reached: raise --train-until or lower --save-every")
    return max(common), {n: costs_of(n) for n in jobs}


def _last_logged(logfile: Path) -> str:
    if not logfile.exists():
        return "0"
    found = re.findall(r"step:(\S+) smpl:\S+ ep:\S+ epch:\S+ loss:(\S+)", logfile.read_text()[-20000:])
    return f"{found[-1][0]} loss {found[-1][1]}" if found else "0"


def evaluate(name: str, policy: str, train_datasets: list[Path], args: argparse.Namespace,
             work: Path, chunk_exec: str = "chunk") -> dict[str, Any]:
    """`x2 eval` of one policy into eval/<name> (a checkpoint's name carries its step and a chunk execution other
    than the default), reused when it is there."""
    folder = work / "eval" / name
    report = folder / "eval_report.json"
    if not report.exists():
        cmd = x2("eval", "--task", args.task, "--policy", policy, "-n", str(args.eval_episodes), "--seed",
                 str(args.eval_seed), "--workers", str(args.workers), "--max-ticks", str(args.max_ticks),
                 "--device", args.device, "--chunk-exec", chunk_exec, "--dataset", str(folder))
        for d in train_datasets:
            cmd += ["--train-dataset", str(d)]
        wall = run(cmd, work / f"eval-{name}.log")
        log(f"eval {name}: {wall:.0f} s")
    result: dict[str, Any] = json.loads(report.read_text())
    return result


def closest_cm(run: Path, obj: str) -> str:
    """The median over a split's episodes of how near any tcp came to `obj`'s centre (cm): how far a policy that does
    not yet succeed is from a grasp (the expert's row is the distance a grasp comes to)."""
    import numpy as np

    from x2 import format as fmt
    from x2.datasets import Dataset

    if not (run / "episodes").is_dir():
        return "-"
    closest = []
    ds = Dataset.open(run)
    for record in ds.episodes():
        with ds.load(record.index) as ep:
            k = list(ep.json_attr(fmt.OBJECT_NAMES_ATTR)).index(obj)
            tcp, at = np.asarray(ep[fmt.EE_POSE])[:, :, :3], np.asarray(ep[fmt.OBJECT_POSES])[:, k, None, :3]
            closest.append(float(np.linalg.norm(tcp - at, axis=-1).min()))
    return f"{100 * float(np.median(closest)):.1f}" if closest else "-"


def cells(report: dict[str, Any], task: str, split: str) -> list[str]:
    v = report["tasks"][task].get(split)
    if v is None:
        return ["-", "-"]
    lo, hi = v["success_ci95"]
    subtasks = ", ".join(f"{n} {r:.0%}" for n, r in v["subtask_completion"].items())
    return [f"{v['successes']}/{v['episodes']} ({v['success_rate']:.0%}, {lo:.0%}-{hi:.0%})",
            f"{v['mean_progress']:.2f} ({subtasks})"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/visuomotor"))
    ap.add_argument("--task", default="pick_place")
    ap.add_argument("-n", "--demos", type=int, default=200, help="demonstrations synthesised")
    ap.add_argument("--per-episode", type=int, default=1, help="augmented variants of each demonstration")
    ap.add_argument("--cameras", default="head,right_wrist")
    ap.add_argument("--size", default="72x96")
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--save-every", type=int, default=250)
    ap.add_argument("--train-seed", type=int, default=1000)
    ap.add_argument("--train-until", default=None, help="UTC HH:MM (the nearest such time: one passed less than 12 h "
                                                         "ago trains nothing) or an ISO time: stop training then")
    ap.add_argument("--eval-episodes", type=int, default=50, help="per split")
    ap.add_argument("--eval-seed", type=int, default=1)
    ap.add_argument("--max-ticks", type=int, default=600, help="an episode ends here (pick_place's expert: ~280)")
    ap.add_argument("--chunk-exec", default="chunk", help="how the checkpoints run their chunks in x2 eval: chunk "
                    "(as trained), K, or ensemble (ACT's temporal ensembling)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--policies", default="images,images+aug", help="which to train and score: images (the "
                    "demonstrations), images+aug (with their replay variants), or both")
    ap.add_argument("--policy-type", choices=tuple(POLICY_ARGS), default="act", help="act (the reported runs) or "
                    "diffusion (its trainings are named NAME-diffusion; its own preset schedules the rate: a cosine "
                    "after 500 warm-up steps)")
    ap.add_argument("--lr-schedule", choices=("constant", "cosine"), default="constant",
                    help="constant: ACT's preset (1e-4 throughout); cosine: warm-up, then decay to 1e-6 at --steps "
                         "(its trainings are named NAME-cosine, beside the constant ones)")
    ap.add_argument("--chunk-size", type=int, default=None, help="ACT's chunk, run whole (default 50; its trainings "
                    "are named NAME-chunkN where N is not 20): fewer re-plans carry the arm through the motion's "
                    "slow phases")
    ap.add_argument("--velocity-state", action="store_true", help="the policies also observe the joints' "
                    "velocities (exports-vel/: x2 export lerobot --velocity-state; runs named NAME-vel)")
    ap.add_argument("--approach-object", default="block", help="the object the report measures the tcp's closest "
                                                               "approach to")
    ap.add_argument("--device", default="cpu", help="torch device of the trainings and the served checkpoints "
                                                     "(cuda where a GPU is)")
    args = ap.parse_args()
    wanted = args.policies.split(",")
    if not wanted or set(wanted) - {"images", "images+aug"}:
        ap.error(f"--policies: found {args.policies!r}; allowed: images, images+aug, or both joined by a comma")
    if args.policy_type == "diffusion" and args.lr_schedule != "constant":
        ap.error("--lr-schedule: found cosine with --policy-type diffusion; allowed: constant (diffusion's own preset "
                 "already decays the rate)")
    if args.policy_type != "act" and args.chunk_size is not None:
        ap.error(f"--chunk-size: found {args.chunk_size} with --policy-type {args.policy_type}; allowed: none "
                 "(diffusion's horizon is its own)")
    if args.chunk_size is None:
        args.chunk_size = 50 if args.policy_type == "act" else 20  # (20: no suffix on a diffusion run's name)
    if args.chunk_size < 1:
        ap.error(f"--chunk-size: found {args.chunk_size}; allowed: 1 or more")
    # a SIGTERM unwinds like Ctrl-C, through train_both's `finally`: the trainers (own sessions) stop with the bench
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work: Path = args.out.resolve()
    (work / "data").mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("MUJOCO_GL", "egl")
    log(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} cores, python "
        f"{platform.python_version()}; out {work}")
    times_file = work / "stage_times.json"  # every invocation's stages, so a resumed run reports them all
    times: dict[str, float] = json.loads(times_file.read_text()) if times_file.exists() else {}

    def timed(stage: str, seconds: float) -> None:
        times[stage] = seconds
        times_file.write_text(json.dumps(times))

    demos, aug = work / "data" / "demos", work / "data" / "demos-aug"
    cams = ["--cameras", args.cameras, "--size", args.size]

    have = episodes_in(demos)
    if have < args.demos:  # (synth -n K into a dataset adds K: only what is missing)
        timed("synth", run(x2("synth", "--task", args.task, "-n", str(args.demos - have), "--workers",
                                str(args.workers), "--grasp-variety", "1", "--dataset", str(demos)),
                             work / "synth.log", ok=(0, 1)))
        if episodes_in(demos) < args.demos:
            raise SystemExit(f"synth stopped at {episodes_in(demos)} of {args.demos} demonstrations: {work}/synth.log")
    if "render" not in times:  # (x2 render skips what is stored: a rerun would time nothing)
        timed("render", run(x2("render", str(demos), *cams, "--workers", str(args.workers)), work / "render.log"))
    exported = work / ("exports-vel" if args.velocity_state else "exports")
    exports = {"demos": exported / "demos"}
    if "images+aug" in wanted:
        if episodes_in(aug) == 0:  # (a variant the checker rejects is not made: fewer is a finished run)
            timed("augment", run(x2("augment", "replay", str(demos), "--per-episode", str(args.per_episode),
                                      "--render", *cams, "--workers", str(args.workers), "--out", str(aug)),
                                   work / "augment.log"))
        exports["aug"] = exported / "aug"
    for name, export in exports.items():
        if not (export / "meta" / "info.json").exists():
            source = demos if name == "demos" else aug
            vel = ["--velocity-state"] if args.velocity_state else []
            timed(f"export {name}{'-vel' if vel else ''}",
                  run(x2("export", "lerobot", str(source), *cams, *vel, "--out", str(export), "--repo-id",
                         f"x2/{name}"), work / f"export-{name}{'-vel' if vel else ''}.log"))
    trainings = {"images": (exports["demos"], "x2/demos")}
    if "images+aug" in wanted:
        joined = exported / "demos-plus-aug"
        if not (joined / "meta" / "info.json").exists():
            from lerobot.datasets.aggregate import aggregate_datasets

            t0 = time.perf_counter()
            staging = joined.with_name(joined.name + ".partial")  # renamed into place once whole
            shutil.rmtree(staging, ignore_errors=True)
            aggregate_datasets(["x2/demos", "x2/aug"], "x2/demos-plus-aug", roots=[exports["demos"], exports["aug"]],
                               aggr_root=staging)
            staging.rename(joined)
            timed("aggregate" + ("-vel" if args.velocity_state else ""), time.perf_counter() - t0)
        trainings["images+aug"] = (joined, "x2/demos-plus-aug")
    suffix = ("" if args.policy_type == "act" else f"-{args.policy_type}") + \
        ("" if args.lr_schedule == "constant" else f"-{args.lr_schedule}") + \
        ("" if args.chunk_size == 20 else f"-chunk{args.chunk_size}") + ("-vel" if args.velocity_state else "")
    jobs = {name + suffix: trainings[name] for name in wanted}
    step, costs = train_both(jobs, args, work)
    log(f"scoring step {step} of every training")

    reports: dict[str, dict[str, Any]] = {}
    trained_on = {"images" + suffix: [demos], "images+aug" + suffix: [demos, aug]}
    scored = {name: f"{name}-step{step}" + ("" if args.chunk_exec == "chunk" else f"-{args.chunk_exec}")
              for name in jobs}
    for name in jobs:
        ckpt = work / "train" / name / "checkpoints" / f"{step:06d}" / "pretrained_model"
        reports[name] = evaluate(scored[name], f"lerobot:{ckpt}", trained_on[name], args, work, args.chunk_exec)
    for bound in BOUNDS:
        reports[bound] = evaluate(bound, bound, [demos], args, work)

    kind = {"act": "ACT", "diffusion": "Diffusion"}[args.policy_type]
    chunk = f", chunk {args.chunk_size}" if args.policy_type == "act" else ""
    lines = [f"pick_place from images: {kind} at step {step} (batch {args.batch}, {args.lr_schedule} learning rate to "
             f"--steps {args.steps}{chunk}), cameras {args.cameras} at "
             f"{args.size}; {args.eval_episodes} episodes per split, master seed {args.eval_seed}, "
             f"--max-ticks {args.max_ticks}, the checkpoints' chunks run --chunk-exec {args.chunk_exec}", "",
             "| policy | ID success (95 % CI) | ID progress (subtasks) | OOD success (95 % CI) | OOD progress | "
             f"closest tcp to the {args.approach_object}, median cm (ID / OOD) |",
             "|---|---|---|---|---|---|"]
    n_demos, n_aug = episodes_in(demos), episodes_in(aug)
    state = "joints and their velocities" if args.velocity_state else "joints"
    labels = {"images" + suffix: f"{kind}, images + {state}, {n_demos} demos",
              "images+aug" + suffix: f"{kind}, images + {state}, {n_demos} demos + {n_aug} replay variants"}
    folders = {name: work / "eval" / scored.get(name, name) for name in reports}
    for name, report in reports.items():
        near = " / ".join(closest_cm(folders[name] / split, args.approach_object) for split in ("train", "eval"))
        lines.append("| " + " | ".join([labels.get(name, name), *cells(report, args.task, "train"),
                                         *cells(report, args.task, "eval"), near]) + " |")
    lines += ["", "stage times (s): " + ", ".join(f"{k} {v:.0f}" for k, v in times.items()),
              "training (wall and CPU seconds, all invocations): " + json.dumps(costs)]
    report_name = "report" + suffix + ("" if args.chunk_exec == "chunk" else f"-{args.chunk_exec}")
    (work / f"{report_name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
