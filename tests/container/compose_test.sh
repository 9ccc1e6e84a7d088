#!/usr/bin/env bash
# Container integration test: deploy/Dockerfile + deploy/docker-compose.yml
# end to end.
#
# Usage: tests/container/compose_test.sh        (root, or sudo rights; ~5 min
#        with a warm image cache, ~15-20 min on a fresh machine)
#
# What it does:
#  1. Uses Docker (`docker compose`) when a Docker engine runs; otherwise
#     prepares Podman + podman-compose with deploy/install-container-engine.sh.
#  2. Builds the images from deploy/Dockerfile unchanged (`compose build`;
#     the layer cache makes reruns fast).
#  3. Puts Fashion-MNIST into the project's data volume: copies a copy already
#     on this host (GRADSYNC_FASHION_MNIST, build/e2e/fashion-mnist from ctest,
#     data/fashion-mnist, else fetched once with build/bin/gradsync into
#     build/container-test/) or, with GRADSYNC_TEST_DATA=container or when no
#     host CLI exists, lets the compose file's fetch-data service download it.
#  4. Brings up deploy/docker-compose.yml (coordinator + 2 workers) with its
#     port published on 127.0.0.1:$GRADSYNC_TEST_PORT, a short heartbeat
#     timeout and no tokens given, so the coordinator creates both in the
#     tokens volume (the compose default) and the workers read theirs there;
#     the CLI takes the user token from the coordinator's container. Checks
#     the health checks and that a tokenless CLI is refused.
#  5. Job 1: fashion_cnn, 1 epoch on the real data, 2 ranks, submitted with the
#     CLI through the published port; must reach SUCCEEDED before its deadline
#     with test accuracy >= GRADSYNC_TEST_MIN_ACCURACY and metrics from rank 0
#     and rank 1.
#     A job naming /data/../etc is refused (PERMISSION_DENIED: the compose
#     file confines data sets to /data).
#  6. Job 2: a long job; once both ranks report steps, kills the container of
#     rank 1; the job must be FAILED within heartbeat timeout + margin with a
#     reason naming rank 1.
#  7. Always tears everything down (`down -v`); on failure first prints what
#     failed, `compose ps`, and every container's log.
# Prints its duration and the image size at the end.
#
# Environment (defaults): GRADSYNC_TEST_PROJECT (gradsync-ctest),
# GRADSYNC_TEST_PORT (50151), GRADSYNC_TEST_HTTP_PORT (9564),
# GRADSYNC_TEST_HEARTBEAT_TIMEOUT (5 s),
# GRADSYNC_TEST_MIN_ACCURACY (0.85), GRADSYNC_TEST_DATA (auto|host|container),
# GRADSYNC_TEST_KEEP=1 leaves the stack up for inspection.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
START=$(date +%s)

PROJECT=${GRADSYNC_TEST_PROJECT:-gradsync-ctest}
PORT=${GRADSYNC_TEST_PORT:-50151}
# No tokens given: the compose default, where the coordinator creates them
# (its --token-dir) and never serves openly. The CLI below reads the user
# token from the coordinator's container.
unset GRADSYNC_TOKEN GRADSYNC_WORKER_TOKEN GRADSYNC_TOKEN_DIR
HB_TIMEOUT=${GRADSYNC_TEST_HEARTBEAT_TIMEOUT:-5}
MIN_ACCURACY=${GRADSYNC_TEST_MIN_ACCURACY:-0.85}
DATA_MODE=${GRADSYNC_TEST_DATA:-auto}
COMPOSE_FILE=deploy/docker-compose.yml
IMAGE=gradsync:latest
FETCHER_IMAGE=gradsync-fetcher:latest

log() { echo "compose-test [$(( $(date +%s) - START ))s]: $*"; }
fail() { echo "compose-test: FAILED: $*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# ---- 1. engine -------------------------------------------------------------
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 \
   && docker compose version >/dev/null 2>&1; then
  ENGINE=(docker)
  COMPOSE=(docker compose)
else
  bash deploy/install-container-engine.sh
  ENGINE=($SUDO podman)
  COMPOSE=($SUDO podman-compose)
  # Keep HEALTHCHECK in the built images (podman's default OCI format drops it).
  export BUILDAH_FORMAT=docker
fi
log "engine: $("${ENGINE[@]}" --version)"

# The compose file's configuration, for every compose command below.
export GRADSYNC_IMAGE=$IMAGE GRADSYNC_FETCHER_IMAGE=$FETCHER_IMAGE
HTTP_PORT=${GRADSYNC_TEST_HTTP_PORT:-9564}
export GRADSYNC_BIND_ADDR=127.0.0.1 GRADSYNC_PORT=$PORT GRADSYNC_HTTP_PORT=$HTTP_PORT
export GRADSYNC_HEARTBEAT_TIMEOUT=$HB_TIMEOUT GRADSYNC_WORKERS=2
COMPOSE_FILES=(-f "$COMPOSE_FILE")
compose() { "${COMPOSE[@]}" -p "$PROJECT" "${COMPOSE_FILES[@]}" "$@"; }
# Containers of one service, by the labels both docker compose and
# podman-compose set.
containers() {
  "${ENGINE[@]}" ps -a --format '{{.Names}}' \
    --filter "label=com.docker.compose.project=$PROJECT" \
    ${1:+--filter "label=com.docker.compose.service=$1"} | sort
}

# The CLI, always through the published port: this host's build if there is
# one, else the image's CLI on the host network.
if [ -x build/bin/gradsync ]; then
  cli() { build/bin/gradsync -c "127.0.0.1:$PORT" "$@"; }
else
  cli() { "${ENGINE[@]}" run --rm --network host --no-healthcheck \
            -e GRADSYNC_TOKEN "$IMAGE" gradsync -c "127.0.0.1:$PORT" "$@"; }
fi

# ---- teardown and diagnostics ------------------------------------------------
exec 3>&1 4>&2   # the diagnostics go here even if a redirected command exits
on_exit() {
  local rc=$?
  set +e
  exec 1>&3 2>&4
  if [ "$rc" -ne 0 ]; then
    echo "=============== compose-test failed (exit $rc); diagnostics ==============="
    compose ps
    for c in $(containers); do
      echo "--------------- logs of $c ---------------"
      "${ENGINE[@]}" logs --tail 150 "$c" 2>&1
    done
    echo "--------------- gradsync list / workers ---------------"
    cli --timeout 3 list; cli --timeout 3 workers
  fi
  if [ "${GRADSYNC_TEST_KEEP:-0}" = 1 ]; then
    echo "compose-test: GRADSYNC_TEST_KEEP=1: stack left up (project $PROJECT)"
  else
    compose down -v >/dev/null 2>&1
    # Volumes made before `up` and one-off containers, if any are left.
    for c in $(containers); do "${ENGINE[@]}" rm -f "$c" >/dev/null 2>&1; done
    "${ENGINE[@]}" volume rm -f "${PROJECT}_data" "${PROJECT}_state" \
      "${PROJECT}_checkpoints" >/dev/null 2>&1
    rm -f "${override:-}"
    # podman-compose 1.0 leaves the project network behind.
    "${ENGINE[@]}" network rm -f "${PROJECT}_default" >/dev/null 2>&1
  fi
  echo "compose-test: $( [ "$rc" -eq 0 ] && echo PASSED || echo FAILED ) after $(( $(date +%s) - START )) s"
  exit "$rc"
}
trap on_exit EXIT

# json FIELD-EXPRESSION: evaluates a Python expression over the JSON on stdin (d).
json() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }
# wait_for SECONDS WHAT COMMAND...: polls COMMAND every 2 s until it succeeds.
wait_for() {
  local seconds=$1 what=$2; shift 2
  local deadline=$(( $(date +%s) + seconds ))
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "timed out after $seconds s waiting for $what"
    sleep 2
  done
}

# Start from a clean slate (an earlier run that was killed may have left some).
compose down -v >/dev/null 2>&1 || true

# ---- 2. images ----------------------------------------------------------------
t0=$(date +%s)
log "building images from deploy/Dockerfile (compose build)"
if ! compose build >"${TMPDIR:-/tmp}/$PROJECT-build.log" 2>&1; then
  tail -60 "${TMPDIR:-/tmp}/$PROJECT-build.log"
  fail "image build failed (full log: ${TMPDIR:-/tmp}/$PROJECT-build.log)"
fi
IMAGE_SIZE=$("${ENGINE[@]}" image inspect --format '{{.Size}}' "$IMAGE")
log "images built in $(( $(date +%s) - t0 )) s; $IMAGE is $(( IMAGE_SIZE / 1000000 )) MB"

# ---- 3. data ------------------------------------------------------------------
host_data=""
if [ "$DATA_MODE" != container ]; then
  for d in "${GRADSYNC_FASHION_MNIST:-}" build/e2e/fashion-mnist data/fashion-mnist \
           build/container-test/fashion-mnist; do
    if [ -n "$d" ] && [ -f "$d/manifest.json" ]; then host_data=$d; break; fi
  done
  if [ -z "$host_data" ] && [ -x build/bin/gradsync ]; then
    log "fetching Fashion-MNIST on the host into build/container-test/fashion-mnist"
    build/bin/gradsync data fetch fashion-mnist build/container-test/fashion-mnist
    host_data=build/container-test/fashion-mnist
  fi
  if [ -z "$host_data" ] && [ "$DATA_MODE" = host ]; then
    fail "GRADSYNC_TEST_DATA=host but no Fashion-MNIST on this host and no build/bin/gradsync"
  fi
fi
if [ -z "$host_data" ] && [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  # This host reaches npm through a TLS-intercepting proxy whose CA Node.js
  # is told about: give fetch-data the same CA (an override file, as README says).
  override="${TMPDIR:-/tmp}/$PROJECT-fetch-ca.yml"
  cat >"$override" <<EOF
services:
  fetch-data:
    environment:
      NODE_EXTRA_CA_CERTS: /etc/gradsync/extra-ca.crt
    volumes:
      - $(readlink -f "$NODE_EXTRA_CA_CERTS"):/etc/gradsync/extra-ca.crt:ro
EOF
  COMPOSE_FILES+=(-f "$override")
  log "fetch-data will trust the CA bundle in NODE_EXTRA_CA_CERTS ($NODE_EXTRA_CA_CERTS)"
fi
if [ -z "$host_data" ]; then
  log "fetch-data will download Fashion-MNIST inside its container"
else
  # Seed the volume compose will use; fetch-data then finds the data and exits.
  log "copying $host_data into volume ${PROJECT}_data"
  "${ENGINE[@]}" volume create --label "com.docker.compose.project=$PROJECT" \
    --label "com.docker.compose.volume=data" \
    --label "io.podman.compose.project=$PROJECT" "${PROJECT}_data" >/dev/null
  tar -C "$host_data" --exclude=./.fetch -c . \
    | "${ENGINE[@]}" run --rm -i --no-healthcheck -v "${PROJECT}_data:/data" "$IMAGE" \
        sh -c 'mkdir -p /data/fashion-mnist && tar -C /data/fashion-mnist -x' \
    || fail "cannot copy $host_data into the data volume"
fi

# ---- 4. up ----------------------------------------------------------------------
log "compose up: coordinator + 2 workers on 127.0.0.1:$PORT, heartbeat timeout ${HB_TIMEOUT} s"
compose up -d >"${TMPDIR:-/tmp}/$PROJECT-up.log" 2>&1 \
  || { tail -30 "${TMPDIR:-/tmp}/$PROJECT-up.log"; fail "compose up failed"; }

fetch_done() {
  local c state
  c=$(containers fetch-data | head -1)
  [ -n "$c" ] || return 1
  state=$("${ENGINE[@]}" inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$c")
  case "$state" in
    exited\ 0) return 0 ;;
    exited*) fail "fetch-data exited with code ${state#exited }" ;;
    *) return 1 ;;
  esac
}
wait_for 900 "the fetch-data service to finish" fetch_done
log "fetch-data: $("${ENGINE[@]}" logs "$(containers fetch-data | head -1)" 2>&1 | tail -1)"

user_token_created() {
  GRADSYNC_TOKEN=$("${ENGINE[@]}" exec "$(containers coordinator | head -1)" \
                   cat /tokens/user-token 2>/dev/null) && [ -n "$GRADSYNC_TOKEN" ]
}
wait_for 60 "the coordinator to create its tokens in /tokens" user_token_created
export GRADSYNC_TOKEN
log "the coordinator created its tokens; the CLI sends the user token"
coordinator_answers() { cli --timeout 2 list >/dev/null 2>&1; }
wait_for 60 "the coordinator on 127.0.0.1:$PORT" coordinator_answers
if refused=$(GRADSYNC_TOKEN= cli --timeout 5 list 2>&1); then
  fail "a CLI without the user token was let in: $refused"
fi
echo "$refused" | grep -q UNAUTHENTICATED \
  || fail "expected UNAUTHENTICATED without a token, got: $refused"
log "tokens on: a tokenless CLI is refused ($refused)"
idle_workers() {
  cli --json workers | json 'sum(w["state"] == "WORKER_STATE_IDLE" for w in d.get("workers", []))'
}
two_idle() { [ "$(idle_workers 2>/dev/null || echo 0)" -ge 2 ]; }
wait_for 90 "2 idle workers" two_idle
log "$(cli workers | tail -n +2 | wc -l) workers registered"

# Health checks: run them now (podman has no timer without systemd; docker's
# own timer reports them).
for c in $(containers coordinator) $(containers worker); do
  if [ "${ENGINE[0]}" = docker ]; then
    healthy() { [ "$(docker inspect --format '{{.State.Health.Status}}' "$c")" = healthy ]; }
    wait_for 60 "$c to be healthy" healthy
  else
    "${ENGINE[@]}" healthcheck run "$c" >/dev/null || fail "health check of $c failed"
  fi
done
log "health checks pass"

# ---- 5. job 1: train -------------------------------------------------------------
submit() {
  cli --json submit --model fashion_cnn --dataset /data/fashion-mnist \
    --eval-split test -n 2 --batch-size 100 --optimizer adam --lr 0.001 "$@" \
    | json 'd["id"]'
}
job_state() { cli --json status "$1" | json 'd["state"]'; }
job_reason() { cli --json status "$1" | json 'd["transitions"][-1]["reason"]'; }

JOB1=$(submit --name ctest-train --epochs 1)
log "job 1 $JOB1: fashion_cnn, 1 epoch, 2 ranks"
train_done() {
  local s
  s=$(job_state "$JOB1") || return 1
  case "$s" in
    JOB_STATE_SUCCEEDED) return 0 ;;
    JOB_STATE_FAILED|JOB_STATE_CANCELLED) fail "job 1 ended $s: $(job_reason "$JOB1")" ;;
    *) return 1 ;;
  esac
}
t0=$(date +%s)
wait_for 900 "job 1 to succeed" train_done
cli status "$JOB1" | sed 's/^/    /'
status1=$(cli --json status "$JOB1")
accuracy=$(echo "$status1" | json 'd["metrics"]["eval"][-1]["accuracy"]')
ranks=$(echo "$status1" | json '" ".join(str(r["rank"]) for r in d["metrics"]["ranks"] if int(r.get("steps_reported", 0)) > 0)')
log "job 1 SUCCEEDED in $(( $(date +%s) - t0 )) s: test accuracy $accuracy; ranks with metrics: $ranks"
python3 -c "import sys; sys.exit(0 if $accuracy >= $MIN_ACCURACY else 1)" \
  || fail "job 1 accuracy $accuracy is below $MIN_ACCURACY"
[ "$ranks" = "0 1" ] || fail "job 1: expected metrics from ranks 0 and 1, got '$ranks'"

# The published monitoring port: Prometheus text with the job, only with
# the metrics token (the coordinator created it in /tokens); the user token
# is refused on this plain-HTTP port.
metrics_url="http://127.0.0.1:$HTTP_PORT/metrics"
METRICS_TOKEN=$("${ENGINE[@]}" exec "$(containers coordinator | head -1)" \
                cat /tokens/metrics-token) || fail "no /tokens/metrics-token"
http_code() {  # http_code URL [TOKEN]
  python3 -c "import sys, urllib.request, urllib.error
h = {'Authorization': 'Bearer ' + sys.argv[2]} if len(sys.argv) > 2 else {}
try: urllib.request.urlopen(urllib.request.Request(sys.argv[1], headers=h), timeout=10); print(200)
except urllib.error.HTTPError as e: print(e.code)" "$@"
}
code=$(http_code "$metrics_url")
[ "$code" = 401 ] || fail "/metrics without a token answered $code, not 401"
code=$(http_code "$metrics_url" "$GRADSYNC_TOKEN")
[ "$code" = 401 ] || fail "/metrics over plain HTTP with the user token answered $code, not 401"
metrics=$(python3 -c "import sys, urllib.request
r = urllib.request.Request(sys.argv[1], headers={'Authorization': 'Bearer ' + sys.argv[2]})
print(urllib.request.urlopen(r, timeout=10).read().decode())" "$metrics_url" "$METRICS_TOKEN") \
  || fail "cannot read $metrics_url with the metrics token"
echo "$metrics" | grep -q "^gradsync_job_info{job_id=\"$JOB1\".*state=\"SUCCEEDED\"} 1$" \
  || fail "/metrics does not show job 1 SUCCEEDED: $(echo "$metrics" | grep gradsync_job_info)"
log "monitoring port $HTTP_PORT: 401 without a token and for the user token; /metrics with the metrics token shows job 1 SUCCEEDED"
# Workers hold the worker token alone.
worker_tokens=$("${ENGINE[@]}" exec "$(containers worker | head -1)" ls /tokens)
[ "$worker_tokens" = "worker-token" ] \
  || fail "a worker container sees these tokens: $worker_tokens"
log "a worker container holds the worker token alone"

# The coordinator's data root (/data, from the compose file) holds.
if refused=$(cli submit --name ctest-escape --model fashion_cnn \
               --dataset /data/../etc -n 1 --batch-size 10 2>&1); then
  fail "a data set outside /data was accepted: $refused"
fi
echo "$refused" | grep -q PERMISSION_DENIED \
  || fail "expected PERMISSION_DENIED for /data/../etc, got: $refused"
log "data set outside the data root refused: $refused"

# ---- 6. job 2: a worker container dies ----------------------------------------------
# (No restarts: the restart path is tested with real processes by
# tests/integration/failure_e2e.py; here the reason must name rank 1.)
JOB2=$(submit --name ctest-kill --epochs 50 --max-restarts 0)
log "job 2 $JOB2: long job; will kill the container of rank 1"
both_stepping() {
  cli --json status "$JOB2" | json '
    d["state"] == "JOB_STATE_RUNNING" and
    sorted(r["rank"] for r in d["metrics"]["ranks"] if int(r["last"]["step"]) > 0) == [0, 1]
  ' 2>/dev/null | grep -qx True
}
wait_for 180 "job 2 to run with steps from both ranks" both_stepping
# Rank 1's worker runs in the container whose hostname it registered with.
rank1_host=$(cli --json status "$JOB2" | json '[r["host"] for r in d["ranks"] if r["rank"] == 1][0]')
victim=""
for c in $(containers worker); do
  if [ "$("${ENGINE[@]}" inspect --format '{{.Config.Hostname}}' "$c")" = "$rank1_host" ]; then
    victim=$c
  fi
done
[ -n "$victim" ] || fail "no worker container has hostname $rank1_host (rank 1's host)"
log "killing $victim (rank 1, host $rank1_host)"
"${ENGINE[@]}" kill "$victim" >/dev/null
killed_at=$(date +%s)
limit=$(python3 -c "print(int($HB_TIMEOUT) + 15)")
job2_failed() {
  local s
  s=$(job_state "$JOB2") || return 1
  case "$s" in
    JOB_STATE_FAILED) return 0 ;;
    JOB_STATE_SUCCEEDED|JOB_STATE_CANCELLED) fail "job 2 ended $s, expected FAILED" ;;
    *) return 1 ;;
  esac
}
wait_for "$limit" "job 2 to fail after the kill (heartbeat timeout ${HB_TIMEOUT}s + 15s)" job2_failed
elapsed=$(( $(date +%s) - killed_at ))
reason=$(job_reason "$JOB2")
log "job 2 FAILED ${elapsed}s after the kill: $reason"
echo "$reason" | grep -Eq 'rank 1([^0-9]|$)' || fail "job 2's reason does not name rank 1: $reason"

log "image $IMAGE: $IMAGE_SIZE bytes ($(( IMAGE_SIZE / 1000000 )) MB)"
log "all checks passed in $(( $(date +%s) - START )) s"
