#!/usr/bin/env bash
# Two Ray nodes on this machine (1 CPU each) and `x2 synth --ray ADDRESS` on them, with faults:
#   1. the second node's raylet killed (-9) mid-run: the run goes on, on the head node alone; every episode is
#      produced once and the dataset equals a local run with the same seed (all but /timing);
#   2. the driver killed (-9) mid-run, then run again for the rest: the dataset equals the local run again.
# Usage: bench/ray_two_nodes.sh   (env: PYTHON=.venv/bin/python N=40 SEED=0 PORT=6390)
# Only the processes of these two nodes are ended (found by their temp dir, and their children), by pid.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$REPO/.venv/bin/python}
RAY="$(dirname "$PY")/ray"
N=${N:-40}; SEED=${SEED:-0}; PORT=${PORT:-6390}
export MUJOCO_GL=egl OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
# Ray's token authentication, with a token of this cluster's own for its nodes and the driver
export RAY_AUTH_MODE=token RAY_AUTH_TOKEN=${RAY_AUTH_TOKEN:-$("$PY" -c 'import secrets; print(secrets.token_hex(32))')}
WORK=$(mktemp -d /tmp/x2two-XXXXXX)  # short: Ray's socket paths live under the nodes' temp dirs
PIDS=$WORK/pids
touch "$PIDS"
ADDRESS=127.0.0.1:$PORT
x2() { "$PY" -m x2 "$@"; }  # (not for a run sent to the background: $! would be the subshell's pid)
say() { echo "[$(date +%H:%M:%S)] $*"; }

remember() {  # every process naming $WORK in its command line, and all their descendants, into $PIDS
  local found
  found=$(ps -eo pid=,args= | awk -v w="$WORK" 'index($0, w) {print $1}')
  while [ -n "$found" ]; do
    echo "$found" >> "$PIDS"
    found=$(ps -eo pid=,ppid= | awk -v p="$(echo $found | tr ' ' '|')" '$2 ~ "^(" p ")$" {print $1}' \
            | grep -vxF -f "$PIDS" || true)
  done
  sort -u -o "$PIDS" "$PIDS"
}
cleanup() {
  remember
  for pid in $(cat "$PIDS"); do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

start_node() {  # $1: its temp dir; the rest: ray start's arguments
  local dir=$1; shift
  "$RAY" start --num-cpus=1 --temp-dir="$dir" --disable-usage-stats --include-log-monitor=false "$@" >/dev/null
  remember
}
raylet_of() { ps -eo pid=,comm=,args= | awk -v d="$1" '$2 == "raylet" && index($0, d) {print $1; exit}'; }
episodes() { if [ -f "$1/episodes.jsonl" ]; then wc -l < "$1/episodes.jsonl"; else echo 0; fi; }  # (while running)
committed() {  # what a reader finds, the index healed (a killed writer may have committed more than it listed)
  "$PY" -c "import sys; from x2.datasets import Dataset; print(len(Dataset.open(sys.argv[1]).episodes()))" "$1"
}
same() {  # the datasets $1 and $2: every episode's deterministic contents and index line
  "$PY" - "$1" "$2" <<'PYEOF'
import sys
sys.path.insert(0, "tests")
from helpers.dataset_contents import deterministic_contents
a, b = deterministic_contents(sys.argv[1]), deterministic_contents(sys.argv[2])
assert len(a) == len(b) and a == b, f"{len(a)} vs {len(b)} episodes, or their contents differ"
print(f"identical: {len(a)} episodes")
PYEOF
}
cd "$REPO"

say "local reference: x2 synth -n $N --seed $SEED --workers 2"
x2 synth --task pick_place -n "$N" --seed "$SEED" --workers 2 --dataset "$WORK/local" >/dev/null

say "two nodes: head on port $PORT, and a second one"
start_node "$WORK/h" --head --port="$PORT" --include-dashboard=false
start_node "$WORK/n" --address="$ADDRESS" --dashboard-agent-listen-port=$((PORT + 1))

say "1. x2 synth --ray $ADDRESS -n $N; the second node's raylet killed once N/4 episodes are in"
"$PY" -m x2 synth --task pick_place -n "$N" --seed "$SEED" --workers 2 --ray "$ADDRESS" --dataset "$WORK/ray" \
  > "$WORK/ray.log" 2>&1 &
driver=$!
while [ "$(episodes "$WORK/ray")" -lt $((N / 4)) ] && kill -0 $driver 2>/dev/null; do sleep 0.5; done
remember
victim=$(raylet_of "$WORK/n")
say "killing raylet $victim (node 2) at $(episodes "$WORK/ray") episodes"
kill -9 "$victim"
wait $driver && status=0 || status=$?
tail -n 3 "$WORK/ray.log"
say "exit $status"
"$PY" - "$WORK/ray/synth_report.json" <<'PYEOF'
import collections, json, sys
r = json.load(open(sys.argv[1]))
indices = [a["index"] for a in r["attempts"]]
assert indices == list(range(r["first_attempt"], r["first_attempt"] + len(indices))), "an attempt missing or twice"
print(f"attempts {len(indices)} (each once, in order), accepted {r['accepted']}, "
      f"outcomes {dict(collections.Counter(a['reason'] for a in r['attempts']))}, Ray: {r['ray']}")
PYEOF
same "$WORK/local" "$WORK/ray" || echo "DIFFERENT (an attempt recorded as 'worker lost' would explain it: see above)"

say "2. a second node again; the driver killed (-9) mid-run, then run again for the rest"
start_node "$WORK/m" --address="$ADDRESS" --dashboard-agent-listen-port=$((PORT + 2))
"$PY" -m x2 synth --task pick_place -n "$N" --seed "$SEED" --workers 2 --ray "$ADDRESS" --dataset "$WORK/resume" \
  > "$WORK/resume.log" 2>&1 &
driver=$!
while [ "$(episodes "$WORK/resume")" -lt $((N / 3)) ] && kill -0 $driver 2>/dev/null; do sleep 0.5; done
kill -9 $driver; wait $driver 2>/dev/null || true
done_before=$(committed "$WORK/resume")
say "driver killed at $done_before episodes; running again for the other $((N - done_before))"
x2 synth --task pick_place -n $((N - done_before)) --seed "$SEED" --workers 2 --ray "$ADDRESS" \
  --dataset "$WORK/resume" > "$WORK/resume2.log" 2>&1
tail -n 1 "$WORK/resume2.log"
same "$WORK/local" "$WORK/resume"
say "done"
