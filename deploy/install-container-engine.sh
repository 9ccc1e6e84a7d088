#!/usr/bin/env bash
# Prepares a container engine that can build deploy/Dockerfile and run
# deploy/docker-compose.yml on a machine where Docker's engine does not run
# (the project's build and CI machines, see ENVIRONMENT.md "Containers").
#
# Usage: deploy/install-container-engine.sh      (as root, or with sudo rights)
#
# Idempotent, and does nothing when `docker info` succeeds. Otherwise:
#   1. installs podman, podman-compose, runc and debootstrap (if podman is missing);
#   2. writes /etc/containers/containers.conf: runtime runc (crun refuses the
#      hybrid cgroup layout here) and default ulimits root may actually set;
#   3. makes the base image docker.io/library/debian:bookworm-slim locally with
#      debootstrap (no image registry is reachable), unless it already exists.
# Environment: DEBIAN_MIRROR (default: the Debian archive this machine's
# own apt sources name).
set -euo pipefail

BASE_IMAGE=docker.io/library/debian:bookworm-slim
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
log() { echo "install-container-engine: $*"; }

# The first Debian archive (not its security archive) in this machine's apt
# sources: deb822 .sources files (URIs:) or one-line .list entries. Prints
# nothing when there is none. A subshell without pipefail: a missing
# sources.list must not end the script.
apt_mirror() (
  set +o pipefail
  {
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
      | awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }'
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
      | sed -e 's/#.*//' -e 's/\[[^]]*\]//' \
      | awk '$1 == "deb" { print $2 }'
  } | grep -v -e security -e '^$' | head -1
  true
)
MIRROR=${DEBIAN_MIRROR:-$(apt_mirror)}

if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  log "a Docker engine is running; nothing to do"
  exit 0
fi

# 1. Packages.
if ! command -v podman >/dev/null 2>&1 || ! command -v podman-compose >/dev/null 2>&1; then
  log "installing podman podman-compose runc debootstrap"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q podman podman-compose runc debootstrap
else
  log "podman $(podman --version | awk '{print $3}') already installed"
fi

# 2. Engine configuration (rewritten only when it differs).
CONF=/etc/containers/containers.conf
WANTED='# Written by gradsync deploy/install-container-engine.sh
[containers]
default_ulimits = ["nofile=16384:16384", "nproc=8192:8192"]

[engine]
runtime = "runc"'
if [ "$(cat "$CONF" 2>/dev/null)" != "$WANTED" ]; then
  if [ -s "$CONF" ] && ! grep -q "gradsync deploy/install-container-engine.sh" "$CONF"; then
    $SUDO cp "$CONF" "$CONF.bak"
    log "kept the previous $CONF as $CONF.bak"
  fi
  $SUDO mkdir -p /etc/containers
  printf '%s\n' "$WANTED" | $SUDO tee "$CONF" >/dev/null
  log "wrote $CONF"
fi

# 3. Base image.
if $SUDO podman image exists "$BASE_IMAGE"; then
  log "base image $BASE_IMAGE exists"
else
  if ! command -v debootstrap >/dev/null 2>&1; then
    $SUDO apt-get install -y -q debootstrap
  fi
  root=$(mktemp -d /tmp/gradsync-bookworm.XXXXXX)
  trap '$SUDO rm -rf "$root"' EXIT
  if [ -z "$MIRROR" ]; then
    log "no Debian archive in this machine's apt sources: set DEBIAN_MIRROR"
    exit 1
  fi
  log "debootstrap --variant=minbase bookworm ($MIRROR), about 2 minutes"
  $SUDO debootstrap --variant=minbase bookworm "$root" "$MIRROR" >/dev/null
  # Like the official slim image: no package lists or caches inside.
  $SUDO rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin \
    "$root"/var/cache/apt/archives/*.deb
  $SUDO tar -C "$root" -c . | $SUDO podman import --quiet \
    --change 'CMD ["bash"]' - "$BASE_IMAGE" >/dev/null
  log "imported $BASE_IMAGE ($($SUDO podman image inspect --format '{{.Size}}' "$BASE_IMAGE") bytes)"
fi
log "ready: $($SUDO podman --version)"
