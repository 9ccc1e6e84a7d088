#!/usr/bin/env bash
# Installs Debian 12's Slurm (slurmctld, slurmd, the client commands) and
# munge, what tests/integration/slurm_e2e.py runs a one-node cluster with.
# It configures nothing system-wide: the test writes its own slurm.conf and
# munge key under the build tree. Idempotent.
# Usage: sudo deploy/slurm/install-slurm.sh   (or as root)
set -euo pipefail
packages=(slurm-wlm munge)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-slurm: ${packages[*]} already installed"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq \
  --no-install-recommends "${missing[@]}"
echo "install-slurm: installed ${missing[*]}"
