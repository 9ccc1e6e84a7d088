#!/usr/bin/env bash
# Builds the coordinator's libFuzzer target (its handlers and its gRPC
# services, see coordinator_fuzzer.cc) with clang + AddressSanitizer
# (LeakSanitizer on) in build-fuzz/ and runs it for SECONDS (default 60)
# from a generated seed corpus. Any crash, leak, broken authorization rule
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
corpus=build-fuzz/corpus
build-fuzz/bin/coordinator_fuzz_seeds "$corpus"
cd build-fuzz
rc=0
ASAN_OPTIONS=detect_leaks=1 bin/coordinator_fuzzer corpus \
  -dict=../tests/fuzz/coordinator.dict -max_total_time="$seconds" \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 >fuzz.log 2>&1 || rc=$?
# libFuzzer's progress and stats, and any sanitizer report (the coordinator's
# own log lines are left out; all of it is in build-fuzz/fuzz.log).
grep -aE '^(#[0-9]+[[:space:]]+(INITED|DONE|pulse)|stat::|==[0-9]+==|SUMMARY|ERROR|INFO|    #)' fuzz.log \
  | tail -40
echo "fuzz: $( [ "$rc" -eq 0 ] && echo PASSED || echo FAILED ) after $(( $(date +%s) - start )) s"
exit "$rc"
