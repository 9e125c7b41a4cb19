#!/usr/bin/env bash
# SeaweedFS (Apache-2.0), a real S3-compatible object store, built from its Go module for the
# test of the metadata backup's S3 target (tests/node/test_backup_s3.py). Nothing is
# downloaded but through the Go module proxy; the binary lands in .cache/seaweedfs/weed
# (git-ignored).
#
#   scripts/seaweedfs.sh build   build it (idempotent: a second run is instant); prints its path
#   scripts/seaweedfs.sh path    its path, or nothing when it is not built
#
# Needs Go (1.26); about 8 minutes and 700 MB of module cache on a 2-core machine.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${PYKRAFT_KAFKA_CACHE:-$ROOT/.cache}"
MODULE=github.com/seaweedfs/seaweedfs
VERSION=v0.0.0-20261109003541-7506e5f91cd6
DIR="$CACHE/seaweedfs"

die() { echo "seaweedfs.sh: $*" >&2; exit 2; }

built() { [ -x "$DIR/weed" ] && [ "$(cat "$DIR/.version" 2>/dev/null)" = "$VERSION" ]; }

build() {
    if built; then echo "$DIR/weed"; return 0; fi
    local go src
    go="$(command -v go || true)"
    [ -n "$go" ] || go=/usr/local/go/bin/go
    [ -x "$go" ] || die "Go is needed to build SeaweedFS"
    echo "seaweedfs.sh: building $MODULE@$VERSION (its module has replace directives, so it is built in a copy of its source, not with go install)" >&2
    # The machine's own Go, whatever the user's go env says; no VCS stamping of the copy.
    export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
    src="$("$go" mod download -json "$MODULE@$VERSION" | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
    rm -rf "$DIR.tmp"
    mkdir -p "$DIR.tmp"
    cp -r "$src" "$DIR.tmp/src"
    chmod -R u+w "$DIR.tmp/src"
    (cd "$DIR.tmp/src" && "$go" build -o "$DIR.tmp/weed" ./weed)
    rm -rf "$DIR.tmp/src"
    echo "$VERSION" >"$DIR.tmp/.version"
    rm -rf "$DIR"
    mv "$DIR.tmp" "$DIR"
    echo "$DIR/weed"
}

case "${1:-build}" in
    build) build ;;
    path) if built; then echo "$DIR/weed"; fi ;;
    *) die "usage: scripts/seaweedfs.sh build|path" ;;
esac
