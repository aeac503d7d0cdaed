#!/usr/bin/env bash
# Build a release of Baton, on a commit tagged vX.Y.Z with a clean work tree:
#
#   make release                 # = deploy/release.sh
#
# or check the whole build without a tag, into a temporary directory:
#
#   deploy/release.sh --dry-run [--out DIR] [--targets "linux/amd64 darwin/arm64"]
#                               [--image NAME] [--no-images]
#
# Into OUT (dist/VERSION by default) it writes, for each target GOOS/GOARCH:
#   baton_VERSION_GOOS_GOARCH[.exe]            a static binary (CGO_ENABLED=0, -trimpath)
#   baton_VERSION_GOOS_GOARCH[.exe].spdx.json  its SPDX 2.3 SBOM (internal/sbom: the
#                                              modules linked in, from its build info)
#   SHA256SUMS                                 the SHA-256 of every file above
# and, for each linux target, the image NAME:VERSION-GOARCH (deploy/image.sh,
# from that very binary; NAME is baton unless --image), gathered in the
# manifest list NAME:VERSION.
# Then it checks what it built: sha256sum -c, each SBOM names its binary's
# SHA-256 and every module `go version -m` lists, each image reports its
# architecture and the manifest lists them all. It publishes nothing: the
# last lines say how.
set -euo pipefail
cd "$(dirname "$0")/.."

targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
dry=0
images=1
image=baton
out=
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1; shift ;;
    --out) out=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    --no-images) images=0; shift ;;
    --image) image=$2; shift 2 ;;
    *) echo "release.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [ "$dry" = 1 ]; then
  version="dryrun-$(git rev-parse --short=12 HEAD)"
  [ -n "$out" ] || out=$(mktemp -d)
else
  version=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null) || {
    echo "release.sh: HEAD has no vX.Y.Z tag (tag it, or use --dry-run)" >&2; exit 1; }
  if [ -n "$(git status --porcelain)" ]; then
    echo "release.sh: the work tree has uncommitted changes" >&2; exit 1
  fi
  [ -n "$out" ] || out="dist/$version"
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
echo "release $version into $out: $targets"

tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
go build -o "$tools/sbom" ./internal/sbom

files=()
for target in $targets; do
  goos=${target%/*} goarch=${target#*/}
  ext=; [ "$goos" = windows ] && ext=.exe
  bin="baton_${version}_${goos}_${goarch}${ext}"
  echo "build $bin"
  # -buildvcs=true: the binary records its commit (for the SBOM), whatever GOFLAGS says.
  CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=true \
    -ldflags "-s -w -X github.com/baton-sqs/baton/internal/cli.Version=$version" \
    -o "$out/$bin" ./cmd/baton
  "$tools/sbom" "$out/$bin" "$version" > "$out/$bin.spdx.json"
  files+=("$bin" "$bin.spdx.json")
done
(cd "$out" && sha256sum "${files[@]}" > SHA256SUMS)

# Check the files: checksums, and each SBOM against its binary.
(cd "$out" && sha256sum --quiet -c SHA256SUMS)
for target in $targets; do
  goos=${target%/*} goarch=${target#*/}
  ext=; [ "$goos" = windows ] && ext=.exe
  bin="$out/baton_${version}_${goos}_${goarch}${ext}"
  sum=$(sha256sum "$bin" | cut -d' ' -f1)
  grep -q "\"checksumValue\": \"$sum\"" "$bin.spdx.json" || {
    echo "release.sh: $bin.spdx.json does not name the binary's SHA-256" >&2; exit 1; }
  deps=$(go version -m "$bin" | awk '$1 == "dep"' | wc -l)
  listed=$(grep -c '"SPDXID": "SPDXRef-Package-dep-' "$bin.spdx.json" || true)
  if [ "$deps" -eq 0 ] || [ "$deps" != "$listed" ]; then
    echo "release.sh: $bin links $deps modules, its SBOM lists $listed" >&2; exit 1
  fi
  go version -m "$bin" | grep -q "GOARCH=$goarch" || { echo "release.sh: $bin is not $goarch" >&2; exit 1; }
  go version -m "$bin" | grep -q "CGO_ENABLED=0" || { echo "release.sh: $bin is not static" >&2; exit 1; }
done
echo "checked: SHA256SUMS, and each SBOM against its binary ($(wc -l < "$out/SHA256SUMS") files)"

if [ "$images" = 1 ]; then
  list="$image:$version"
  podman manifest exists "$list" 2>/dev/null && podman manifest rm "$list" >/dev/null
  podman manifest create "$list" >/dev/null
  for target in $targets; do
    goos=${target%/*} goarch=${target#*/}
    [ "$goos" = linux ] || continue
    deploy/image.sh -t "$image:$version-$goarch" --arch "$goarch" --version "$version" \
      --binary "$out/baton_${version}_linux_${goarch}"
    got=$(podman image inspect --format '{{.Architecture}}' "$image:$version-$goarch")
    [ "$got" = "$goarch" ] || { echo "release.sh: image $image:$version-$goarch is $got" >&2; exit 1; }
    podman manifest add "$list" "containers-storage:$(podman image inspect --format '{{index .RepoTags 0}}' "$image:$version-$goarch")" >/dev/null
  done
  echo "manifest list $list:"
  podman manifest inspect "$list" | grep '"architecture"'
fi

echo
if [ "$images" = 1 ]; then
  echo "To publish $version: upload $out/* to the release, and"
  echo "  podman manifest push --all $list docker://REGISTRY/baton:$version"
else
  echo "To publish $version: upload $out/* to the release."
fi
exit 0
