#!/usr/bin/env bash
# Build Baton's container image (deploy/Dockerfile, FROM scratch) from a
# static binary, with podman, or docker where podman is not installed.
#
#   deploy/image.sh [-t TAG] [--arch ARCH] [--binary PATH] [--version V]
#
# -t        the image's name (default baton:dev)
# --arch    the linux architecture, amd64 or arm64 (default: go env GOARCH);
#           the image has no RUN step, so any architecture builds anywhere
# --binary  a static linux binary for that architecture, instead of building
#           one (deploy/release.sh passes the one it checksummed)
# --version the version stamped into a binary built here (default: git
#           describe) and set as the image's version label
#
# CONTAINER_ENGINE=docker picks the engine. Extra podman options (say
# --storage-driver vfs) go in PODMAN_OPTS.
set -euo pipefail
cd "$(dirname "$0")/.."

tag=baton:dev
arch=$(go env GOARCH)
binary=
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
while [ $# -gt 0 ]; do
  case "$1" in
    -t) tag=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --binary) binary=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    *) echo "image.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

engine=${CONTAINER_ENGINE:-}
if [ -z "$engine" ]; then
  if command -v podman >/dev/null 2>&1; then engine=podman; else engine=docker; fi
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
if [ -n "$binary" ]; then
  cp "$binary" "$ctx/baton"
else
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath \
    -ldflags "-s -w -X github.com/baton-sqs/baton/internal/cli.Version=$version" \
    -o "$ctx/baton" ./cmd/baton
fi
# The CA bundle `baton proxy` needs for an https upstream: the host's.
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
if [ ! -s "$ca" ]; then
  echo "image.sh: no CA bundle at $ca (install ca-certificates, or set CA_BUNDLE)" >&2
  exit 1
fi
cp "$ca" "$ctx/ca-certificates.crt"
mkdir -m 0700 "$ctx/data"
# /tmp, world-writable and sticky as on any system: copied as an entry of
# a directory, since a directory named by COPY gives only its contents and
# the destination would be made root's, mode 0755.
mkdir -p "$ctx/root/tmp" && chmod 1777 "$ctx/root/tmp"

revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
args=(build -f deploy/Dockerfile -t "$tag" --platform "linux/$arch"
  --label "org.opencontainers.image.title=baton"
  --label "org.opencontainers.image.version=$version"
  --label "org.opencontainers.image.revision=$revision"
  --label "org.opencontainers.image.source=https://github.com/baton-sqs/baton")
if [ "$engine" = podman ]; then
  # The docker format keeps the HEALTHCHECK (the OCI format has no field for it).
  # shellcheck disable=SC2086
  podman ${PODMAN_OPTS:-} "${args[@]}" --format docker "$ctx"
else
  docker "${args[@]}" "$ctx"
fi
