#!/usr/bin/env bash
# Set everything up (first run only) and run the whole default test suite:
# lint, strict type check, then pytest. The tests against Apache Kafka need its jars, fetched
# once from Maven Central through scripts/kafka.sh (Java 17 and Maven on the machine).
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
echo "== system packages"
# The fault run (tests/faults) puts nodes in network namespaces: iproute2's `ip`.
if ! command -v ip >/dev/null 2>&1 && [ ! -x /usr/sbin/ip ] && [ ! -x /sbin/ip ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq iproute2 >/dev/null
    else
        echo "iproute2 (ip) is missing: install it (the fault-run tests need it)" >&2
    fi
fi
# The cluster history report's test renders the page in a real browser (headless Chromium).
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
        echo "chromium is missing: install it (the history report's render test needs it)" >&2
    fi
fi
echo "== kafka jars"; ./scripts/kafka.sh fetch all
echo "== ruff"; ruff check src tests bench
echo "== mypy"; mypy
echo "== generated codecs"; python -m pykraft.schema.generate --check
echo "== docs/RULES.md"; python scripts/rules.py --check
# The slowest tests are listed at the end (the CI budget is watched by them).
echo "== pytest"; python -m pytest -q --durations=20 "$@"
