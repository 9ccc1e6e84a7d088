#!/usr/bin/env bash
# The main job on one machine: install, build, fetch the real Fashion-MNIST,
# start a coordinator and two workers on localhost, train fashion_cnn for 2
# epochs while `gradsync watch` shows progress, print the final test accuracy,
# and stop everything again (or, with --keep-running, leave the coordinator
# and workers running for more `gradsync` commands).
# Usage: deploy/quickstart.sh [--keep-running] [extra `gradsync submit` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0
if [ "${1:-}" = --keep-running ]; then
  keep=1
  shift
fi
PORT=${GRADSYNC_PORT:-50051}
echo "quickstart: installs Debian packages (with sudo unless run as root),"
echo "  builds into build/, fetches Fashion-MNIST into data/, and runs a"
echo "  coordinator on 127.0.0.1:$PORT (set GRADSYNC_PORT for another port)"
bash deploy/build.sh
B=build/bin
export GRADSYNC_COORDINATOR=127.0.0.1:$PORT
mkdir -p logs
"$B/gradsync" data fetch fashion-mnist data/fashion-mnist

pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
"$B/gradsync-coordinator" --listen "127.0.0.1:$PORT" --state-dir state \
  2>logs/coordinator.log &
pids+=($!)
for i in 0 1; do
  "$B/gradsync-worker" 2>"logs/worker$i.log" &
  pids+=($!)
done
# Wait (at most 30 s) until the coordinator answers.
for _ in $(seq 150); do
  "$B/gradsync" --timeout 1 list >/dev/null 2>&1 && break
  sleep 0.2
done
"$B/gradsync" --timeout 5 list >/dev/null
echo "quickstart: coordinator on 127.0.0.1:$PORT, 2 workers (logs in logs/)"

job=$("$B/gradsync" --json submit --name fashion-mnist \
  --dataset data/fashion-mnist --eval-split test --model fashion_cnn \
  --epochs 2 --batch-size 100 --optimizer adam --lr 0.001 -n 2 \
  --checkpoint-dir checkpoints "$@" | sed -E 's/.*"id":"([^"]+)".*/\1/')
echo "quickstart: submitted $job"
"$B/gradsync" watch "$job"
echo
"$B/gradsync" status "$job" | grep -E "^(State|Eval):"
if [ "$keep" = 1 ]; then
  trap - EXIT
  echo "quickstart: still running (coordinator and 2 workers, pids ${pids[*]});"
  echo "  export GRADSYNC_COORDINATOR=127.0.0.1:$PORT to use build/bin/gradsync,"
  echo "  stop them with: kill ${pids[*]}"
fi
