#!/usr/bin/env bash
# One command to check a GPU machine (issue 16): builds the data plane
# (loader, communicators, reducer, trainer, models, gradsync-launch; no
# gRPC, Protobuf, SQLite, OpenCV or gloo) against the CUDA LibTorch of the
# machine's PyTorch (its CMake config) and the NCCL of its nvidia-nccl
# wheel, with Abseil, CLI11 and GoogleTest unpacked from the Debian packages
# tests/gpu/fetch_debs.sh downloaded (.gpu-debs/, carried with the tree);
# then runs the CUDA tests, the GPU benchmark and the CPU tests (in that
# order: what only a GPU machine can run first) and writes everything to
# OUT_DIR (default $OUT, else build-gpu/results).
#
# The target machine: CUDA 13, PyTorch 2.11 (CUDA 13 build), CMake, ninja,
# a C++ compiler, no network. Without a GPU (this script on a CPU machine)
# the build runs and the GPU steps are skipped, saying so.
#
# Usage: tests/gpu/run.sh [--build-only | --profile]
#   --profile: after the benchmark, also profile steps 31-40 of both sides
#   in precision 32 and print where their GPU time per step differs
#   (bench/train_vs_ddp.py --profile; tables in OUT_DIR/profile)
#   GRADSYNC_PYTHON   the python3 with torch (default python3)
#   GRADSYNC_GPU_DEBS the .deb folder (default .gpu-debs)
#   GRADSYNC_GPU_BUILD the build folder (default build-gpu)
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
build_only=0 profile=0
[ "${1:-}" = --build-only ] && build_only=1
[ "${1:-}" = --profile ] && profile=1
py=${GRADSYNC_PYTHON:-python3}
debs=${GRADSYNC_GPU_DEBS:-$root/.gpu-debs}
build=${GRADSYNC_GPU_BUILD:-$root/build-gpu}
out=${OUT_DIR:-${OUT:-$build/results}}
prefix=$build/prefix
mkdir -p "$out" "$build"
log() { echo "gpu/run.sh: $*" | tee -a "$out/summary.txt"; }
fail() { log "FAILED: $*"; exit 1; }
: > "$out/summary.txt"
start=$(date +%s)

# 1. What this machine has.
{
  echo "== nvidia-smi"; nvidia-smi -L 2>&1 || echo "(no nvidia-smi)"
  echo "== compiler"; ${CXX:-c++} --version 2>&1 | head -1
  echo "== cmake"; cmake --version | head -1
  echo "== ninja"; ninja --version 2>&1 || echo "(no ninja)"
} > "$out/machine.txt" 2>&1
torch_info=$("$py" - <<'PY' 2>/dev/null
import os, torch
prefix = torch.utils.cmake_prefix_path
print(torch.__version__)
print(prefix if os.path.isdir(os.path.join(prefix, "Torch")) else "")
print(int(torch.cuda.is_available()), torch.cuda.device_count())
try:
    import nvidia.nccl
    print(list(nvidia.nccl.__path__)[0])
except Exception:
    print("")
PY
)
torch_version=$(sed -n 1p <<< "$torch_info")
torch_prefix=$(sed -n 2p <<< "$torch_info")
read -r cuda_ok gpus <<< "$(sed -n 3p <<< "$torch_info")"
nccl_dir=$(sed -n 4p <<< "$torch_info")
log "python $py: torch ${torch_version:-none}, CMake config ${torch_prefix:-none}, CUDA ${cuda_ok:-0}, GPUs ${gpus:-0}, NCCL wheel ${nccl_dir:-none}"

# 2. Abseil, CLI11 and GoogleTest from the carried .debs, into a prefix.
if ls "$debs"/*.deb > /dev/null 2>&1; then
  rm -rf "$prefix"
  mkdir -p "$prefix"
  for deb in "$debs"/*.deb; do
    dpkg -x "$deb" "$prefix" || fail "cannot unpack $deb (dpkg -x)"
  done
  log "unpacked $(ls "$debs"/*.deb | wc -l) package(s) from $debs into $prefix"
else
  log "no .debs in $debs: Abseil, CLI11 and GoogleTest must be installed"
fi
libdir=$prefix/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# 3. Configure and build the data plane alone.
std=17
case "$torch_version" in
  2.1[2-9]*|2.[2-9][0-9]*|[3-9].*) std=20 ;;  # ATen needs C++20 from 2.12
esac
args=(-S "$root" -B "$build/cmake" -DCMAKE_BUILD_TYPE=Release
      -DCMAKE_CXX_STANDARD=$std
      -DGRADSYNC_BUILD_CONTROL_PLANE=OFF -DGRADSYNC_WITH_OPENCV=OFF
      -DGRADSYNC_WITH_GLOO=OFF -DGRADSYNC_WITH_TURBOJPEG=OFF
      -DGRADSYNC_PYTHON_TESTS=OFF
      "-DCMAKE_PREFIX_PATH=${torch_prefix:+$torch_prefix;}$prefix/usr;$libdir/cmake;$prefix/usr/share/cmake")
keep_going=()  # every compile error in one build.log, not just the first
command -v ninja > /dev/null && args+=(-G Ninja) && keep_going=(-- -k 0)
if [ -n "$nccl_dir" ]; then
  nccl_lib=$(ls "$nccl_dir"/lib/libnccl.so* 2>/dev/null | head -1)
  args+=("-DNCCL_INCLUDE_DIR=$nccl_dir/include" "-DNCCL_LIBRARY=$nccl_lib")
fi
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0}
log "configure: cmake ${args[*]}"
cmake "${args[@]}" > "$out/configure.log" 2>&1 \
  || { tail -40 "$out/configure.log"; fail "configure (see configure.log)"; }
grep "gradsync:" "$out/configure.log" | tee -a "$out/summary.txt"
# gradsync itself looks for none of these here (LibTorch's own config may).
if grep -i "found" "$out/configure.log" | grep -v "Caffe2\|gradsync:" |
    grep -qiE "grpc|protobuf|sqlite|opencv|gloo"; then
  log "note: configure found a control-plane or optional library (configure.log)"
fi
cmake --build "$build/cmake" -j"$(nproc)" "${keep_going[@]}" > "$out/build.log" 2>&1 \
  || { grep -E "error" "$out/build.log" | head -40; fail "build (see build.log)"; }
log "built after $(( $(date +%s) - start )) s"
bin=$build/cmake/bin
"$bin/gradsync-devices" > "$out/devices.txt" 2>&1
cat "$out/devices.txt"
[ "$build_only" = 1 ] && { log "done (--build-only)"; exit 0; }

# 4. The CUDA tests first: they and the benchmark are what only this machine
# can run, so they come before the CPU tests (which CI also runs) in case a
# time limit ends the script early.
ctest --test-dir "$build/cmake" --output-on-failure -L gpu \
  > "$out/ctest-gpu.log" 2>&1
gpu_rc=$?
log "GPU tests after $(( $(date +%s) - start )) s: $(grep -E 'tests passed|tests failed' "$out/ctest-gpu.log" | tail -1); skipped: $(grep -c 'Skipped' "$out/ctest-gpu.log")"
bench_rc=0
# bench WHAT LINES ARGS...: bench/train_vs_ddp.py --device cuda ARGS, its
# output in OUT_DIR/WHAT.log, of which it shows the last LINES.
bench() {
  local what=$1 lines=$2
  shift 2
  "$py" "$root/bench/train_vs_ddp.py" --device cuda --bin "$bin" "$@" \
    > "$out/$what.log" 2>&1
  local rc=$?
  [ "$rc" = 0 ] || bench_rc=$rc
  tail -"$lines" "$out/$what.log"
  log "$what exit $rc after $(( $(date +%s) - start )) s ($what.log)"
}
if [ "${cuda_ok:-0}" != 1 ]; then
  log "no usable GPU (torch.cuda.is_available() is false): GPU tests skipped, no benchmark"
elif [ -f "$root/bench/train_vs_ddp.py" ]; then
  # 5. The GPU benchmark: gradsync against PyTorch DDP on this GPU, in
  # bf16-mixed (the issue's figure) and in 32; with --profile, where their
  # GPU time differs in 32 (tables in OUT_DIR/profile).
  for precision in bf16-mixed 32; do
    bench "bench-$precision" 5 --precision "$precision" --results "$out"
  done
  [ "$profile" = 1 ] &&
    bench profile 25 --precision 32 --profile --results "$out/profile"
fi

# 6. The CPU tests this build has (the data plane against this LibTorch).
ctest --test-dir "$build/cmake" --output-on-failure -j4 -LE gpu \
  > "$out/ctest-cpu.log" 2>&1
cpu_rc=$?
log "CPU tests after $(( $(date +%s) - start )) s: $(grep -E 'tests passed|tests failed' "$out/ctest-cpu.log" | tail -1)"
log "done after $(( $(date +%s) - start )) s"
exit $(( cpu_rc || gpu_rc || bench_rc ))
