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
