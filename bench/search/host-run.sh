#!/usr/bin/env bash
# Runs the search deployment on host JVMs (no partitions): N shard servers and
# the front end on free ports, then the closed-loop client at each
# concurrency, and checks every run's digest against SearchCli's direct
# search. Needs ./x search-build, search-corpus, search-queries.
#
#   bench/search/host-run.sh [SHARDS=4] [QUERIES=tb05] [LIMIT=5000] [DIR=mmap] [CONCURRENCY="1 2 4"]
#
# (as environment variables; JAVA_HOME selects the JDK, default JDK 17). The
# index is built once into target/search/index-SHARDS.
set -euo pipefail
cd "$(dirname "$0")/../.."
SHARDS=${SHARDS:-4} QUERIES=${QUERIES:-tb05} LIMIT=${LIMIT:-5000} DIR=${DIR:-mmap}
CONCURRENCY=${CONCURRENCY:-"1 2 4"}
JAVA=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}/bin/java
CP="target/search/classes:target/javalibs/search/*"
Q=target/search/queries/$QUERIES.txt
IX=target/search/index-$SHARDS
if [ ! -f "$IX/.complete" ]; then
    rm -rf "$IX"
    "$JAVA" -cp "$CP" SearchIndexer --corpus target/search/corpus/docs.tsv --out "$IX" --shards "$SHARDS"
    touch "$IX/.complete"
fi
dirs=$(for ((s = 0; s < SHARDS; s++)); do printf '%s/shard-%d,' "$IX" "$s"; done)
dirs=${dirs%,}
want=$("$JAVA" -cp "$CP" SearchCli --index "$dirs" --queries "$Q" --limit "$LIMIT" --dir "$DIR" | tail -1 | awk '{print $4}')
echo "SearchCli digest $want"

logs=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$logs"; }
trap cleanup EXIT
port_of() { # waits for "listening PORT" in a log
    local i
    for ((i = 0; i < 600; i++)); do
        if grep -q '^listening ' "$1" 2>/dev/null; then awk '/^listening /{print $2; exit}' "$1"; return; fi
        sleep 0.1
    done
    echo "no port in $1" >&2; exit 1
}
addrs=""
for ((s = 0; s < SHARDS; s++)); do
    "$JAVA" -cp "$CP" ShardServer --index "$IX/shard-$s" --shard "$s" --dir "$DIR" >"$logs/s$s" 2>"$logs/s$s.err" &
    pids+=($!)
done
for ((s = 0; s < SHARDS; s++)); do addrs+="127.0.0.1:$(port_of "$logs/s$s"),"; done
"$JAVA" -cp "$CP" FrontEnd --shards "${addrs%,}" >"$logs/f" 2>"$logs/f.err" &
pids+=($!)
url="http://127.0.0.1:$(port_of "$logs/f")"
for c in $CONCURRENCY; do
    line=$("$JAVA" -cp "$CP" SearchBench --url "$url" --queries "$Q" --limit "$LIMIT" --concurrency "$c" --warmup 1000)
    echo "shards $SHARDS dir $DIR $line"
    [[ $line == *"digest $want"* ]] || { echo "digest differs from SearchCli's" >&2; exit 1; }
done
