#!/usr/bin/env bash
# Installs the dependencies (deploy/install-deps.sh), then configures and
# builds gradsync into ./build (Release). Re-running rebuilds incrementally.
# Usage: deploy/build.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
echo "build: programs are in build/bin"
