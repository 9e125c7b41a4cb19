#!/usr/bin/env bash
# Set everything up (first run only) and run the whole default test suite:
# lint, strict type check, then pytest. The tests against Apache Kafka need its jars, fetched
# once from Maven Central through scripts/kafka.sh (Java 17 and Maven on the machine).
set -euo pipefail
echo "== system packages [${SECONDS}s]"
# The fault run (tests/faults) puts nodes in network namespaces: iproute2's `ip`.
if ! command -v ip >/dev/null 2>&1 && [ ! -x /usr/sbin/ip ] && [ ! -x /sbin/ip ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq iproute2 >/dev/null
    else
        echo "iproute2 (ip) is missing: install it (the fault-run tests need it)" >&2
    fi
fi
# pykraft.native compiles the consensus core with a C compiler (built by _venv.sh, below).
if ! command -v cc >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq gcc >/dev/null
    else
        echo "a C compiler (cc) is missing: the compiled core (pykraft.native) cannot be built" >&2
    fi
fi
# What downloads (Chromium's packages, Kafka's jars) runs in the background while the
# virtualenv installs and the checks run, each logged to a file and waited for before pytest.
SETUP_LOGS="$(mktemp -d)"
background_pids=()
background_names=()
in_background() {  # in_background NAME COMMAND...
    local name="$1"
    shift
    ("$@" >"$SETUP_LOGS/$name.log" 2>&1; echo "($name done at ${SECONDS}s)" >>"$SETUP_LOGS/$name.log") &
    background_pids+=("$!")
    background_names+=("$name")
}
wait_background() {
    local i failed=0
    for i in "${!background_pids[@]}"; do
        echo "== ${background_names[$i]} [${SECONDS}s]"
        if wait "${background_pids[$i]}"; then
            cat "$SETUP_LOGS/${background_names[$i]}.log"
        else
            cat "$SETUP_LOGS/${background_names[$i]}.log" >&2
            echo "${background_names[$i]} failed" >&2
            failed=1
        fi
    done
    return "$failed"
}
# The cluster history report's test renders the page in a real browser (headless Chromium).
install_chromium() {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
}
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        in_background chromium install_chromium
    else
        echo "chromium is missing: install it (the history report's render test needs it)" >&2
    fi
fi
# The virtualenv, then the compiled core built in the background while the jars download
# and the checks run (it is waited for before pytest starts any process).
PYKRAFT_NATIVE_BACKGROUND=1
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
in_background "kafka jars" ./scripts/kafka.sh fetch all
# SeaweedFS, the S3-compatible store the metadata backup's S3 target is tested against, built
# from its Go module (about 8 minutes the first time; instant after).
in_background "seaweedfs" ./scripts/seaweedfs.sh build
echo "== ruff [${SECONDS}s]"; ruff check src tests bench
echo "== mypy [${SECONDS}s]"; mypy
echo "== generated codecs [${SECONDS}s]"; python -m pykraft.schema.generate --check
python -m pykraft.protocol.view_gen --check
echo "== docs/RULES.md [${SECONDS}s]"; python scripts/rules.py --check
# The slowest tests are listed at the end (the CI budget is watched by them): in phase 2 every
# test phase over two seconds, so the time can be summed per module.
echo "== compiled core [${SECONDS}s]"; native_build_wait; python -m pykraft.native status
if [ $# -gt 0 ]; then
    wait_background
    echo "== pytest [${SECONDS}s]"; exec python -m pytest -q --durations=20 "$@"
fi
# The in-process suites (no JVM, no cluster of processes, no wall-clock bounds that a busy
# core could break) run on both cores through pytest-xdist, a file per worker at a time. Then
# the suites of real processes, Kafka's JVMs and Spark, two files at a time as well: most of
# their time is waiting (a JVM's start, a session timeout, a client's retry), and each
# worker's clusters listen on ports of their own (tests/conftest.py). Last, one test at a
# time with the machine to itself, the tests marked ``alone``: wall-clock bounds (the
# quorum's 150 ms timers, the loop-lag sampler), a million partitions, the fault runs.
# Together they are the whole of tests/.
IN_PROCESS=(tests/admin tests/controller tests/metadata tests/protocol tests/raft tests/records tests/schema
            tests/sim tests/storage tests/test_layering.py tests/test_size_budget.py)
ignored=()
for path in "${IN_PROCESS[@]}"; do ignored+=(--ignore "$path"); done
rc=0
echo "== pytest: in-process suites, two workers [${SECONDS}s]"
python -m pytest -q --durations=20 -n 2 --dist loadfile "${IN_PROCESS[@]}" || rc=$?
# Kafka's jars and Chromium downloaded meanwhile (the in-process suites need neither).
wait_background
echo "== pytest: processes, clusters and Kafka, two workers [${SECONDS}s]"
python -m pytest -q --durations=0 --durations-min=2 -n 2 --dist loadfile -m "not alone" \
    "${ignored[@]}" tests || rc=$?
echo "== pytest: alone [${SECONDS}s]"
python -m pytest -q --durations=0 --durations-min=2 -m alone "${ignored[@]}" tests || rc=$?
echo "== done [${SECONDS}s]"
exit "$rc"
