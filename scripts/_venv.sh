# Sourced by run.sh and test.sh: create .venv on first use and keep it in sync with
# pyproject.toml (idempotent: reinstalls only when pyproject.toml changed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
fi
STAMP="$VENV/.pykraft-installed"
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
    "$VENV/bin/pip" install -q -e "$ROOT[dev,pipeline]"
    touch "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
cd "$ROOT"
# The consensus core compiled by mypyc (pykraft.native; a minute or two, only when its
# sources changed). Without a compiler everything runs interpreted, as it says.
# PYKRAFT_NATIVE_BACKGROUND=1 (test.sh): build in the background while the caller does
# other set-up, and call native_build_wait before anything runs pykraft's processes.
native_build() {
    "$VENV/bin/python" -m pykraft.native build >/dev/null \
        || echo "pykraft.native: the build failed; the interpreted core runs" >&2
    if [ "${PYKRAFT_NATIVE_BACKGROUND:-0}" = 1 ]; then echo "(pykraft.native built at ${SECONDS}s)"; fi
}
NATIVE_BUILD_PID=""
native_build_wait() {
    if [ -n "$NATIVE_BUILD_PID" ]; then
        wait "$NATIVE_BUILD_PID" || true
        NATIVE_BUILD_PID=""
    fi
}
if [ "${PYKRAFT_NATIVE:-1}" != 0 ]; then
    if [ "${PYKRAFT_NATIVE_BACKGROUND:-0}" = 1 ]; then
        native_build &
        NATIVE_BUILD_PID=$!
    else
        native_build
    fi
fi
