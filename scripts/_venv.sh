# Sourced by run.sh and test.sh: create .venv on first use and keep it in sync with
# pyproject.toml (idempotent: reinstalls only when pyproject.toml changed).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PY="${PYTHON:-python3}"
# Each step that takes time says so, once, on stderr (a first run takes minutes).
say() { echo "pykraft set-up [${SECONDS}s]: $*" >&2; }
if [ ! -x "$VENV/bin/python" ]; then
    say "creating the virtual environment .venv"
    "$PY" -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip
fi
STAMP="$VENV/.pykraft-installed"
INSTALL=0
if [ ! -f "$STAMP" ] || [ "$ROOT/pyproject.toml" -nt "$STAMP" ]; then
    INSTALL=1
    say "installing pykraft and its development tools into .venv (pip; about a minute the first time)"
    # The package and its development tools first: the compiled core's build (below) needs
    # no more, so it starts while Spark's packages (the pipeline extra) install after it.
    "$VENV/bin/pip" install -q -e "$ROOT[dev]"
fi
export PATH="$VENV/bin:$PATH"
cd "$ROOT"
# The consensus core compiled by mypyc (pykraft.native; a minute or two, only when its
# sources changed). Without a compiler everything runs interpreted, as it says.
# PYKRAFT_NATIVE_BACKGROUND=1 (test.sh): build in the background while the caller does
# other set-up, and call native_build_wait before anything runs pykraft's processes.
native_build() {
    if ! "$VENV/bin/python" -m pykraft.native status 2>/dev/null | grep -q ': on '; then
        say "compiling the consensus core with mypyc (a minute or two; only when its sources changed)"
    fi
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
if [ "$INSTALL" = 1 ]; then
    # The pipeline extra's packages by name (the package itself stays as installed above,
    # under the build that may be reading it).
    mapfile -t PIPELINE < <("$VENV/bin/python" -c 'import tomllib, sys
print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["project"]["optional-dependencies"]["pipeline"]))' "$ROOT/pyproject.toml")
    say "installing the Spark pipeline's packages (PySpark and its peers; a minute or two)"
    "$VENV/bin/pip" install -q "${PIPELINE[@]}"
    touch "$STAMP"
fi
