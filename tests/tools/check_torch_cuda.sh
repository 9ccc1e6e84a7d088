#!/bin/sh
# Compiles, syntax only, the code that is built only against a CUDA
# LibTorch (worker/comm/nccl/torch_stream.cc with GRADSYNC_TORCH_CUDA=1),
# using this machine's LibTorch headers (which ship c10/cuda) and CUDA
# toolkit: a CPU machine then catches what would otherwise break first on
# a GPU machine.
# Usage: check_torch_cuda.sh <c++ compiler> <source root> <cuda include>
#        <torch include dir>...
set -eu
cxx=$1 root=$2 cuda=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/gradsync"
printf '#pragma once\n#define GRADSYNC_WITH_NCCL 1\n#define GRADSYNC_TORCH_CUDA 1\n' \
  >"$dir/gradsync/config.h"
# A CPU LibTorch ships c10/cuda's headers but not the one its CUDA build
# generates; this is what that build writes into it.
mkdir -p "$dir/c10/cuda/impl"
printf '#pragma once\n#define C10_CUDA_BUILD_SHARED_LIBS\n' \
  >"$dir/c10/cuda/impl/cuda_cmake_macros.h"
includes="-I$dir -I$root -I$cuda"
for d in "$@"; do
  # The compiler searches /usr/include already; naming it breaks #include_next.
  [ "$d" = /usr/include ] || includes="$includes -isystem $d"
done
# shellcheck disable=SC2086
"$cxx" -std=c++17 -fsyntax-only -Wall -Werror $includes \
  "$root/worker/comm/nccl/torch_stream.cc"
echo "torch_stream.cc compiles against c10/cuda with GRADSYNC_TORCH_CUDA=1"
