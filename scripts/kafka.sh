#!/usr/bin/env bash
# Apache Kafka's jars from Maven Central, for pykraft's interoperability tests, benchmarks and
# the local cluster of the main job. Nothing is downloaded but through Maven (interop/*/pom.xml);
# the jars land in .cache/kafka-<dist>/lib (git-ignored).
#
#   scripts/kafka.sh fetch [4|4.4|4.1|4.0|3.9|all]  resolve and copy the jars (idempotent: a second run
#                                               is offline and instant); prints the classpath
#   scripts/kafka.sh classpath [4|4.4|4.1|4.0|3.9]  the classpath (fetches first when needed)
#   scripts/kafka.sh version [4|4.4|4.1|4.0|3.9]    the Kafka version a distribution pins
#   scripts/kafka.sh run TOOL [ARGS...]         one of Kafka's tools by its usual name over
#                                               Kafka 4.4.0's jars (kafka-topics,
#                                               kafka-console-producer, ...; --list names them)
#
# Needs Java 17+ and Maven; PYKRAFT_KAFKA_CACHE moves the cache directory.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${PYKRAFT_KAFKA_CACHE:-$ROOT/.cache}"

die() { echo "kafka.sh: $*" >&2; exit 2; }

pom_of() {
    local pom="$ROOT/interop/kafka-$1/pom.xml"
    [ -f "$pom" ] || die "unknown distribution '$1' (have: 4, 4.4, 4.1, 4.0, 3.9, jmx-exporter)"
    echo "$pom"
}

version_of() {
    sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$(pom_of "$1")" | head -n 1
}

fetch() {
    local dist="$1" pom dir
    pom="$(pom_of "$dist")"
    dir="$CACHE/kafka-$dist"
    # The stamp is written last and only after a complete copy: a run that was cut off
    # (network, Ctrl-C) is simply redone.
    if [ -f "$dir/.stamp" ] && [ "$dir/.stamp" -nt "$pom" ] && [ -f "$dir/classpath" ]; then
        return 0
    fi
    command -v mvn >/dev/null || die "Maven (mvn) is needed to fetch Kafka's jars"
    command -v java >/dev/null || die "Java 17+ is needed to run Kafka"
    echo "kafka.sh: fetching Apache Kafka $(version_of "$dist") from Maven Central into $dir/lib" >&2
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp/lib"
    mvn -B -q -Dstyle.color=never -f "$pom" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$dir.tmp/lib" >&2 \
        || die "mvn could not resolve $pom (is Maven Central reachable?)"
    (cd "$dir.tmp/lib" && ls ./*.jar | sed "s:^\./:$dir/lib/:" | sort | paste -sd: -) >"$dir.tmp/classpath"
    version_of "$dist" >"$dir.tmp/version"
    # The classpath already names the final directory, which the copy now becomes.
    rm -rf "$dir"
    mv "$dir.tmp" "$dir"
    touch "$dir/.stamp"
}

cmd="${1:-}"
dist="${2:-4}"
case "$cmd" in
    fetch)
        if [ "$dist" = all ]; then
            fetch 4
            fetch 4.4
            fetch 4.1
            fetch 4.0
            fetch 3.9
            fetch jmx-exporter
            exit 0
        fi
        fetch "$dist"
        cat "$CACHE/kafka-$dist/classpath"
        ;;
    classpath)
        fetch "$dist"
        cat "$CACHE/kafka-$dist/classpath"
        ;;
    version)
        version_of "$dist"
        ;;
    run)
        shift
        # The project's environment (created on first use), then the tool in its place, in
        # the caller's directory (relative paths in the tool's arguments stay the caller's).
        HERE="$PWD"
        PYKRAFT_NATIVE=0 source "$ROOT/scripts/_venv.sh" >&2  # (a Java tool: no compiled core)
        cd "$HERE"
        exec "$ROOT/.venv/bin/python" -m pykraft.interop.tools "$@"
        ;;
    *)
        sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
esac
