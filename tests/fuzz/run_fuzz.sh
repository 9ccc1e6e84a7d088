#!/usr/bin/env bash
# Builds the coordinator's libFuzzer targets with clang + AddressSanitizer
# (LeakSanitizer on) in build-fuzz/ and runs them from generated seed
# corpora: coordinator_fuzzer (its handlers and gRPC services) for SECONDS
# (default 60), then monitoring_fuzzer (the monitoring port's request
# handling) for half as long. Any crash, leak, broken authorization rule
# or input slower than 10 s fails the run; libFuzzer saves the input to build-fuzz/ for replay:
#   build-fuzz/bin/coordinator_fuzzer build-fuzz/crash-<sha>
# CI runs it briefly; run it longer as a benchmark: run_fuzz.sh 3600.
# Usage: tests/fuzz/run_fuzz.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-60}
start=$(date +%s)
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DGRADSYNC_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" >/dev/null
echo "fuzz: built in $(( $(date +%s) - start )) s"
build-fuzz/bin/coordinator_fuzz_seeds build-fuzz/corpus
# Seeds of the monitoring port: requests as a client would send them (the
# first byte 0 sends them over a socket, 1 straight to Respond).
mkdir -p build-fuzz/corpus-http
seed() { printf '%b' "$2" > "build-fuzz/corpus-http/$1"; }
seed scrape '\x00GET /metrics HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer fuzz-metrics-token\r\n\r\n'
seed user '\x00GET /api/jobs HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer fuzz-user-token\r\n\r\n'
seed body '\x00GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello'
seed chunked '\x00POST /api/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n'
seed pipelined '\x00GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /dashboard.js HTTP/1.1\r\nHost: x\r\n\r\n'
seed respond '\x01GET\n/api/jobs/job-000001/logs\nBearer fuzz-metrics-token\nlocalhost\nlines=5'
seed basic '\x01GET\n/metrics\nBasic YTpmdXp6LW1ldHJpY3MtdG9rZW4=\nlocalhost'
cd build-fuzz
rc=0
fuzz() {  # fuzz TARGET CORPUS DICT SECONDS
  ASAN_OPTIONS=detect_leaks=1 "bin/$1" "$2" -dict="../tests/fuzz/$3" \
    -max_total_time="$4" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    >"$1.log" 2>&1 || rc=$?
  # libFuzzer's progress and stats, and any sanitizer report (the
  # coordinator's own log lines are left out; all of it is in
  # build-fuzz/TARGET.log).
  grep -aE '^(#[0-9]+[[:space:]]+(INITED|DONE|pulse)|stat::|==[0-9]+==|SUMMARY|ERROR|INFO|    #|monitoring fuzzer)' "$1.log" \
    | tail -40
}
fuzz coordinator_fuzzer corpus coordinator.dict "$seconds"
[ "$rc" -eq 0 ] && fuzz monitoring_fuzzer corpus-http monitoring.dict $(( (seconds + 1) / 2 ))
echo "fuzz: $( [ "$rc" -eq 0 ] && echo PASSED || echo FAILED ) after $(( $(date +%s) - start )) s"
exit "$rc"
