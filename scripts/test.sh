#!/usr/bin/env bash
# Set everything up (first run only) and run the whole default test suite:
# lint, strict type check, then pytest.
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
echo "== ruff"; ruff check src tests bench
echo "== mypy"; mypy
echo "== pytest"; python -m pytest -q "$@"
