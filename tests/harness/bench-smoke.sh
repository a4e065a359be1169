#!/usr/bin/env bash
# `bench/run --smoke` (the smallest cell of every backend, in one boot of the
# patched guest) writes a report and raw JSON lines, and both cover every
# backend: the allocation paths, blockdev (with the device journal and,
# as wz-rocksdb, with RocksDB's WAL; each result names its journal),
# prealloc-file, files on ext4 and xfs, fio, and the smallest aging and
# sustained-load cells. A backend may
# be reported missing only with a reason, and the ones this kernel must
# support (blockdev, prealloc-file with NO_HIDE_STALE and plain fallocate,
# files, fio, the ext4 first-write table, aging on blockdev with its
# fragmentation score, load on blockdev) must have real measurements.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s)
"$repo/bench/run" --smoke --no-deps --out "$out" > "$out/run.log" 2>&1 ||
	{ tail -40 "$out/run.log"; echo "bench/run --smoke failed"; exit 1; }
echo "bench/run --smoke took $(($(date +%s) - start)) s"
[ -s "$out/report.md" ] || { echo "no report.md"; exit 1; }
[ -s "$out/results.jsonl" ] || { echo "no results.jsonl"; exit 1; }
python3 - "$out" <<'PY'
import json, os, sys
d = sys.argv[1]
recs = [json.loads(l) for l in open(os.path.join(d, "results.jsonl")) if l.strip()]
report = open(os.path.join(d, "report.md")).read()
bad = []
for r in recs:
    for k in ("kernel", "accel", "git_rev"):
        if not r.get(k):
            bad.append("a result line lacks %s: %s" % (k, r))
            break
    if r.get("status") not in ("ok", "missing", "unsupported"):
        bad.append("bad status: %s" % r)
    if r.get("status") == "missing" and not r.get("why"):
        bad.append("missing without a reason: %s" % r)
    if r.get("disk") and not r.get("device"):
        bad.append("no device parameters: %s" % r)
def ok(pred):
    return [r for r in recs if r.get("status") == "ok" and r.get("kind") != "store_info"
            and pred(r)]
def seen(pred):
    return [r for r in recs if pred(r)]
need_ok = {
    "blockdev/wz": lambda r: r.get("backend") == "blockdev" and r.get("variant") == "wz",
    "blockdev/wz-rocksdb": lambda r: r.get("backend") == "blockdev" and r.get("variant") == "wz-rocksdb",
    "blockdev/nowz": lambda r: r.get("backend") == "blockdev" and r.get("variant") == "nowz",
    "prealloc-file/nohide-stale": lambda r: r.get("backend") == "prealloc-file" and r.get("variant") == "nohide-stale" and r.get("kind") == "object",
    "prealloc-file/fallocate": lambda r: r.get("backend") == "prealloc-file" and r.get("variant") == "fallocate" and r.get("kind") == "object",
    "prealloc-file/written-zeros": lambda r: r.get("backend") == "prealloc-file" and r.get("variant") == "written-zeros" and r.get("kind") == "object",
    "files/ext4": lambda r: r.get("backend") == "files" and r.get("variant") == "ext4",
    "files/xfs": lambda r: r.get("backend") == "files" and r.get("variant") == "xfs",
    "fio": lambda r: r.get("kind") == "fio",
    "alloc ext4-nohide-stale first writes": lambda r: r.get("path") == "ext4-nohide-stale" and r.get("kind") == "alloc_first_writes",
    "alloc ext4-fallocate first writes": lambda r: r.get("path") == "ext4-fallocate" and r.get("kind") == "alloc_first_writes",
    "alloc blockdev-zero-range-wz": lambda r: r.get("path") == "blockdev-zero-range-wz",
    "alloc provision-loop": lambda r: r.get("path") == "provision-loop",
    "alloc provision-dm-thin": lambda r: r.get("path") == "provision-dm-thin",
    "aging blockdev fresh cells": lambda r: r.get("section") == "aging" and r.get("phase") == "fresh" and r.get("kind") == "object",
    "aging blockdev aged cells": lambda r: r.get("section") == "aging" and r.get("phase") == "aged" and r.get("kind") == "object",
    "aging fill to 90%": lambda r: r.get("section") == "aging" and r.get("kind") == "aging",
    "aging fragmentation score": lambda r: r.get("section") == "aging" and r.get("kind") == "space" and r.get("when") == "aged",
    "load blockdev": lambda r: r.get("section") == "load" and r.get("kind") == "load",
}
need_seen = {  # measured, or missing with a reason
    "prealloc-file/write-zeroes": lambda r: r.get("backend") == "prealloc-file" and r.get("variant") == "write-zeroes",
    "alloc ext4-write-zeroes": lambda r: r.get("path") == "ext4-write-zeroes",
    "blockdev/dm-thin pool usage": lambda r: r.get("kind") == "thin_pool",
}
for p in ("prepare-background", "pad-inline"):
    need_ok["blockdev/policy-" + p] = (lambda p: lambda r: r.get("variant") == "policy-" + p and r.get("kind") == "object")(p)
for name, pred in need_ok.items():
    n = len(ok(pred))
    print("%-40s %d measurement(s)" % (name, n))
    if not n:
        bad.append("no measurement for " + name)
for name, pred in need_seen.items():
    rs = seen(pred)
    print("%-40s %s" % (name, ", ".join(sorted({r["status"] for r in rs})) or "absent"))
    if not rs:
        bad.append("no line at all for " + name)
for r in ok(need_ok["aging fragmentation score"]):
    if not (85 <= r["used_pct"] <= 99 and 0 <= r["frag_score"] <= 1 and r["free_extents"] >= 1):
        bad.append("aged store not near 90%% full or a bad score: %s" % r)
for r in ok(need_ok["load blockdev"]):
    if r.get("mismatches") != 0 or not r.get("txns") or not r.get("reads") or not r.get("p99_us"):
        bad.append("load cell without transactions, reads or p99, or with mismatches: %s" % r)
for v, j in (("wz", "device"), ("wz-rocksdb", "rocksdb")):
    for r in ok(need_ok["blockdev/" + v]):
        if r.get("section") != "objects" or r.get("kind") != "object":
            continue
        if r.get("journal") != j or r.get("round_trips_per_txn") is None:
            bad.append("blockdev/%s result without journal %s or round trips: %s" % (v, j, r))
nhs = ok(need_ok["alloc ext4-nohide-stale first writes"])
if nhs and nhs[0].get("jbd2_commits") is None:
    bad.append("first writes into NO_HIDE_STALE space carry no journal commit count")
for section in ("## 1. Allocation latency", "## 2. Objects", "## 3. blockdev against",
                "## 2a. Metadata journal: device vs rocksdb", "## 3a. Aging", "## 3b. Sustained load", "## 5. Targets",
                "## 6. Missing cells", "plots/"):
    if section not in report:
        bad.append("report.md lacks '%s'" % section)
for png in [l.split("](")[1].rstrip(")") for l in report.splitlines() if l.startswith("![")]:
    if not os.path.getsize(os.path.join(d, png)):
        bad.append("empty plot " + png)
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
