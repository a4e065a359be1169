#!/usr/bin/env bash
# The module map stays a map: in store/ and in bench/, the graph of which
# module's .c includes which other module's header has no circle, and no
# function in store/ is longer than 120 lines (docs/DESIGN.md's module
# list; a long function is split into named stages).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
python3 - "$repo" <<'PY'
import glob, os, re, sys
repo = sys.argv[1]
bad = 0
for d in ("store", "bench"):
    mods = {os.path.basename(f)[:-2] for f in glob.glob(os.path.join(repo, d, "*.c"))}
    graph = {}
    for m in mods:
        src = open(os.path.join(repo, d, m + ".c")).read()
        graph[m] = {i for i in re.findall(r'#include "([a-z_]+)\.h"', src)
                    if i in mods and i != m}
    cycles = set()
    def walk(n, path):
        for x in graph[n]:
            if x in path:
                c = path[path.index(x):]
                k = c.index(min(c))
                cycles.add(" -> ".join(c[k:] + c[:k] + [min(c)]))
            else:
                walk(x, path + [x])
    for m in sorted(mods):
        walk(m, [m])
    for c in sorted(cycles):
        print("not ok - %s/: a circle of includes: %s" % (d, c))
        bad = 1
    if not cycles:
        print("ok - %s/: %d modules, no circle of includes" % (d, len(mods)))
long_fns = []
for f in sorted(glob.glob(os.path.join(repo, "store", "*.c"))):
    lines = open(f).read().split("\n")
    start = None
    for i, l in enumerate(lines):
        if re.match(r"^[a-zA-Z].*\)\s*$", l) and i + 1 < len(lines) and lines[i + 1] == "{":
            start, name = i, l
        elif l == "}" and start is not None:
            if i - start > 120:
                long_fns.append("%s: %s (%d lines)" % (os.path.basename(f), name, i - start))
            start = None
for x in long_fns:
    print("not ok - longer than 120 lines: " + x)
    bad = 1
if not long_fns:
    print("ok - no function in store/ is longer than 120 lines")
sys.exit(bad)
PY
