#!/usr/bin/env bash
# Regenerates the small test corpus of tests/tests/search_app.rs from the
# full corpus (./x search-corpus): every 2nd python3.11-doc document, at most
# 300 of them, bodies cut to 1,500 characters (Python documentation,
# PSF licence); and its 50 queries, derived from its titles as
# bench/search/queries.py derives titles.txt.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=${1:-target/search/corpus/docs.tsv}
mkdir -p tests/search
python3 - "$src" > tests/search/corpus.tsv <<'PY'
import sys
n = 0
with open(sys.argv[1], encoding="utf-8") as f:
    for l in f:
        if not l.startswith("python3.11-doc/"):
            continue
        n += 1
        if n % 2 != 1:
            continue
        d = l.rstrip("\n").split("\t", 3)
        d[3] = d[3][:1500]
        sys.stdout.write("\t".join(d) + "\n")
        if n >= 2 * 299 + 1:
            break
PY
tmp=$(mktemp -d)
cp tests/search/corpus.tsv "$tmp/docs.tsv"
python3 bench/search/queries.py "$tmp" "$tmp/q" 50 --no-tb05 2>/dev/null
cp "$tmp/q/titles.txt" tests/search/queries.txt
rm -rf "$tmp"
wc -l tests/search/corpus.tsv tests/search/queries.txt
