#!/usr/bin/env bash
# Downloads, on a Debian 12 machine with apt, the few C++ packages a GPU
# host lacks for the data plane (Abseil, CLI11, GoogleTest: about 2 MB) into
# .gpu-debs/ (ignored by git). tests/gpu/run.sh unpacks them into a prefix
# on the GPU host; carry .gpu-debs with the source tree.
# Usage: tests/gpu/fetch_debs.sh [DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.gpu-debs}
mkdir -p "$dir"
cd "$dir"
rm -f ./*.deb
# -o APT::Sandbox::User=root: apt's download user cannot write to a
# folder that root owns.
apt-get -q -o APT::Sandbox::User=root download \
  libabsl-dev libabsl20220623 libcli11-dev libgtest-dev
ls -l ./*.deb
du -sh .
