#!/usr/bin/env bash
# Set everything up (first run only) and run the whole default test suite:
# lint, strict type check, then pytest. The tests against Apache Kafka need its jars, fetched
# once from Maven Central through scripts/kafka.sh (Java 17 and Maven on the machine).
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
echo "== kafka jars"; ./scripts/kafka.sh fetch all
echo "== ruff"; ruff check src tests bench
echo "== mypy"; mypy
echo "== generated codecs"; python -m pykraft.schema.generate --check
echo "== pytest"; python -m pytest -q "$@"
