#!/usr/bin/env bash
# The linearizability checker (tools/linearize: Porcupine, MIT, a Go module), built into
# .cache/linearize/linearize (git-ignored). Nothing is downloaded but through the Go module
# proxy. The fault runs and `pykraft verify` call it on the histories they record.
#
#   scripts/linearize.sh build   build it when its source changed (else instant); prints its path
#   scripts/linearize.sh path    its path, or nothing when it is not built from this source
#
# Needs Go (1.26); a few seconds.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${PYKRAFT_KAFKA_CACHE:-$ROOT/.cache}"
SRC="$ROOT/tools/linearize"
DIR="$CACHE/linearize"

die() { echo "linearize.sh: $*" >&2; exit 2; }

source_hash() { cat "$SRC"/go.mod "$SRC"/go.sum "$SRC"/*.go | sha256sum | cut -d' ' -f1; }

built() { [ -x "$DIR/linearize" ] && [ "$(cat "$DIR/.version" 2>/dev/null)" = "$(source_hash)" ]; }

build() {
    if built; then echo "$DIR/linearize"; return 0; fi
    local go
    go="$(command -v go || true)"
    [ -n "$go" ] || go=/usr/local/go/bin/go
    [ -x "$go" ] || die "Go is needed to build the linearizability checker"
    export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
    mkdir -p "$DIR"
    (cd "$SRC" && "$go" build -o "$DIR/linearize.tmp.$$" .)  # (two builds at once: each its own)
    mv "$DIR/linearize.tmp.$$" "$DIR/linearize"
    source_hash >"$DIR/.version"
    echo "$DIR/linearize"
}

case "${1:-build}" in
    build) build ;;
    path) if built; then echo "$DIR/linearize"; fi ;;
    *) die "usage: scripts/linearize.sh build|path" ;;
esac
