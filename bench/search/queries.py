#!/usr/bin/env python3
"""The query sets of the search application (docs/search.md), reproducibly.

OUT/tb05.txt    TREC 2005 Terabyte track efficiency-task queries (50,000,
                "id:query"), from topics-and-qrels/topics.terabyte05.efficiency.txt
                inside io.anserini:anserini:0.13.3 on Maven Central (fetched
                with `mvn dependency:get`; later Anserini jars no longer
                bundle the topics). Skipped with --no-tb05 or without mvn.
OUT/titles.txt  COUNT queries (default 5000) derived from the corpus's titles
                with a fixed seed: pick a document uniformly, a length L of
                1, 2 or 3 terms (weights 3:4:3), and L distinct words of its
                title in title order (words = runs of [a-z0-9] of 3+
                characters, lower-cased, not in STOP, not all digits); the
                title has at least L such words. Every query term therefore
                occurs in at least one document. Duplicates are kept (a
                query log repeats popular queries too).
OUT/manifest.txt sources, counts and SHA-256 of each file.

Usage: queries.py CORPUS_DIR OUT_DIR [COUNT] [--no-tb05]
"""
import glob
import hashlib
import os
import random
import re
import subprocess
import sys
import zipfile

SEED = 20051
STOP = set("""the and for with from that this are was were but not you your its into
onto over under about class method function module package interface
documentation manual guide reference html page index overview summary
python java jdk django rust postgresql uses""".split())
# Lucene's English stop words (EnglishAnalyzer.ENGLISH_STOP_WORDS_SET).
LUCENE_STOP = set("""a an and are as at be but by for if in into is it no not of on or such
that the their then there these they this to was will with""".split())
PUNCT = "()[]{}<>,;:!?'\"`|—–-."
TB05 = "topics-and-qrels/topics.terabyte05.efficiency.txt"


def tb05(out):
    dest = os.path.join(out, "tb05.txt")
    if os.path.exists(dest):
        return dest
    jar = os.path.expanduser("~/.m2/repository/io/anserini/anserini/0.13.3/anserini-0.13.3.jar")
    if not os.path.exists(jar):
        try:
            subprocess.run(["mvn", "-q", "-B", "dependency:get",
                            "-Dartifact=io.anserini:anserini:0.13.3", "-Dtransitive=false"],
                           check=True, stdout=subprocess.DEVNULL)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"queries: cannot fetch anserini 0.13.3 ({e}); no tb05.txt", file=sys.stderr)
            return None
    with zipfile.ZipFile(jar) as z:
        data = z.read(TB05)
    with open(dest + ".tmp", "wb") as f:
        f.write(data)
    os.replace(dest + ".tmp", dest)
    return dest


def titles(corpus, out, count):
    dest = os.path.join(out, "titles.txt")
    docs = []
    with open(os.path.join(corpus, "docs.tsv"), encoding="utf-8") as f:
        for line in f:
            parts = line.split("\t", 3)
            if len(parts) == 4:
                words = []
                for w in parts[2].lower().split():
                    w = w.strip(PUNCT)
                    if (re.fullmatch(r"[a-z0-9]+", w) and len(w) >= 3 and w not in STOP
                            and w not in LUCENE_STOP and not w.isdigit() and w not in words):
                        words.append(w)
                docs.append(words)
    rng = random.Random(SEED)
    qs = []
    tries = 0
    while len(qs) < count and tries < count * 100:
        tries += 1
        words = docs[rng.randrange(len(docs))]
        n = rng.choices([1, 2, 3], weights=[3, 4, 3])[0]
        if len(words) < n:
            continue
        pick = sorted(rng.sample(range(len(words)), n))
        qs.append(" ".join(words[i] for i in pick))
    with open(dest, "w", encoding="utf-8") as f:
        f.write("".join(q + "\n" for q in qs))
    return dest


def sha(p):
    with open(p, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) < 2:
        sys.exit(__doc__)
    corpus, out = args[0], args[1]
    count = int(args[2]) if len(args) > 2 else 5000
    os.makedirs(out, exist_ok=True)
    made = []
    if "--no-tb05" not in sys.argv:
        t = tb05(out)
        if t:
            made.append((t, "io.anserini:anserini:0.13.3 " + TB05))
    made.append((titles(corpus, out, count), f"titles of {corpus}/docs.tsv, seed {SEED}"))
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        for p, src in made:
            with open(p, encoding="utf-8") as g:
                n = sum(1 for _ in g)
            f.write(f"{os.path.basename(p)} queries={n} sha256={sha(p)} source: {src}\n")
    for p, _ in made:
        print(f"queries: {p}", file=sys.stderr)


if __name__ == "__main__":
    main()
