#!/usr/bin/env python3
"""Builds the search corpus from Debian bookworm documentation packages.

Reproducible and cached: each package is fetched once with `apt-get download`
(no root, nothing installed) into OUT/debs/, unpacked once with `dpkg-deb -x`
into OUT/extract/PKG/, and every HTML page under usr/share/doc/ becomes one
document of OUT/docs.tsv (one line per document, tab-separated):

    id <TAB> url <TAB> title <TAB> body

id   = PKG/PATH (PATH relative to usr/share/doc/ inside the package)
url  = http://PKG.docs.invalid/PATH
title= the page's <title> (whitespace collapsed), else the file name
body = the visible text (outside script/style/head), whitespace collapsed

Pages are visited in sorted path order; a page whose body has fewer than
MIN_BODY characters (redirects, stubs) or whose body is identical to an
earlier page's is left out. OUT/manifest.txt records the packages with their
exact versions, per-package counts and the SHA-256 of docs.tsv.

Usage: corpus.py [OUT]   (default target/search/corpus)
"""
import hashlib
import html.parser
import multiprocessing
import os
import subprocess
import sys

# The package list (bookworm main); versions are recorded in the manifest.
PACKAGES = [
    "openjdk-17-doc",
    "python3.11-doc",
    "linux-doc-6.1",
    "postgresql-doc-15",
    "python-django-doc",
    "rust-doc",
]
MIN_BODY = 200
MAX_BODY = 200_000


class Text(html.parser.HTMLParser):
    SKIP = {"script", "style", "head", "noscript", "template"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title = []
        self.body = []
        self.depth = 0
        self.in_title = False

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self.in_title = True
        elif tag in self.SKIP:
            self.depth += 1

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        elif tag in self.SKIP and self.depth > 0:
            self.depth -= 1

    def handle_data(self, data):
        if self.in_title:
            self.title.append(data)
        elif self.depth == 0:
            self.body.append(data)


def clean(s):
    return " ".join(s.split())


def convert(path):
    with open(path, "rb") as f:
        raw = f.read()
    p = Text()
    try:
        p.feed(raw.decode("utf-8", errors="replace"))
        p.close()
    except Exception:  # malformed markup: keep what was parsed
        pass
    return clean("".join(p.title)), clean(" ".join(p.body))[:MAX_BODY]


def run(cmd, cwd=None):
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)


def fetch(out, pkg):
    debs = os.path.join(out, "debs")
    os.makedirs(debs, exist_ok=True)
    have = sorted(f for f in os.listdir(debs) if f.startswith(pkg + "_") and f.endswith(".deb"))
    if not have:
        print(f"corpus: apt-get download {pkg}", file=sys.stderr)
        run(["apt-get", "download", "-q", pkg], cwd=debs)
        have = sorted(f for f in os.listdir(debs) if f.startswith(pkg + "_") and f.endswith(".deb"))
    deb = os.path.join(debs, have[-1])
    version = subprocess.run(["dpkg-deb", "-f", deb, "Version"], check=True,
                             capture_output=True, text=True).stdout.strip()
    ex = os.path.join(out, "extract", pkg)
    if not os.path.exists(os.path.join(ex, ".complete")):
        print(f"corpus: dpkg-deb -x {have[-1]}", file=sys.stderr)
        run(["rm", "-rf", ex])
        os.makedirs(ex)
        run(["dpkg-deb", "-x", deb, ex])
        open(os.path.join(ex, ".complete"), "w").close()
    return version, os.path.join(ex, "usr", "share", "doc")


def pages(pkg, root):
    found = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            if (f.endswith(".html") or f.endswith(".htm")) and not os.path.islink(p) and os.path.isfile(p):
                found.append(p)
    found.sort()
    return [(pkg, os.path.relpath(p, root), p) for p in found]


def work(item):
    pkg, rel, path = item
    title, body = convert(path)
    return pkg, rel, title, body


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "target/search/corpus"
    os.makedirs(out, exist_ok=True)
    tsv = os.path.join(out, "docs.tsv")
    manifest = os.path.join(out, "manifest.txt")
    key = "packages: " + " ".join(PACKAGES)
    if os.path.exists(tsv) and os.path.exists(manifest):
        with open(manifest) as f:
            if key in f.read().splitlines():
                print(f"corpus: {tsv} is up to date", file=sys.stderr)
                return
    items, versions = [], {}
    for pkg in PACKAGES:
        versions[pkg], root = fetch(out, pkg)
        items.extend(pages(pkg, root))
    seen = set()
    counts = {p: [0, 0] for p in PACKAGES}
    h = hashlib.sha256()
    tmp = tsv + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as o, multiprocessing.Pool(2) as pool:
        for pkg, rel, title, body in pool.imap(work, items, chunksize=64):
            counts[pkg][0] += 1
            if len(body) < MIN_BODY:
                continue
            digest = hashlib.sha1(body.encode()).digest()
            if digest in seen:
                continue
            seen.add(digest)
            counts[pkg][1] += 1
            title = title or os.path.basename(rel)
            line = "\t".join([f"{pkg}/{rel}", f"http://{pkg}.docs.invalid/{rel}", title, body]).replace("\r", " ")
            line += "\n"
            o.write(line)
            h.update(line.encode())
    os.replace(tmp, tsv)
    total = sum(c[1] for c in counts.values())
    with open(manifest, "w") as f:
        f.write(key + "\n")
        for pkg in PACKAGES:
            f.write(f"{pkg} {versions[pkg]} html={counts[pkg][0]} docs={counts[pkg][1]}\n")
        f.write(f"documents {total}\n")
        f.write(f"bytes {os.path.getsize(tsv)}\n")
        f.write(f"sha256 {h.hexdigest()}\n")
    print(f"corpus: {total} documents in {tsv}", file=sys.stderr)


if __name__ == "__main__":
    main()
