#!/usr/bin/env bash
# rawstore-bench recovery:4k times the replay of a full device journal: a
# child fills an 8 MiB ring with 4 KiB creates up to its next trim (half
# full) and dies without closing; the reopen must replay nearly half the
# ring (at least 90% of it: a trim came no earlier than two records before
# half) and no more than half plus one record, and report both opens. A
# store with RocksDB's WAL is refused with the reason, not measured.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${RAWSTORE_BUILD:-$repo/build}
rsb=$build/bench/rawstore-bench
[ -x "$rsb" ] || { echo "no $rsb (build first)"; exit 1; }
out=$("$rsb" --json --dev-size 512m --journal-size 8m recovery:4k)
echo "$out" | grep '"recovery"'
echo "$out" | python3 -c '
import json, sys
r = [json.loads(l) for l in sys.stdin if "\"recovery\"" in l]
assert len(r) == 1, "want one recovery line, got %d" % len(r)
r = r[0]
half = r["journal_size"] / 2
assert r["journal_size"] == 8 << 20, r
assert r["objects"] > 100, r
assert 0.9 * half <= r["replayed_bytes"] <= half + 16384, \
    "replayed %d bytes, want about half the ring (%d)" % (r["replayed_bytes"], half)
assert r["open_ms"] > 0 and r["clean_open_ms"] > 0, r
print("replayed %d of %d ring bytes: open %.1f ms, clean open %.1f ms" % (
    r["replayed_bytes"], r["journal_size"], r["open_ms"], r["clean_open_ms"]))
'
set +e
err=$("$rsb" --dev-size 512m --journal rocksdb recovery:4k 2>&1 > /dev/null)
rc=$?
set -e
echo "with --journal rocksdb: exit $rc: $err"
[ "$rc" != 0 ] || { echo "a store without the device journal was measured"; exit 1; }
echo "$err" | grep -q "needs the device journal" || { echo "no reason given"; exit 1; }
