#!/usr/bin/env bash
# The BlueStore peer's parsing and verdicts (bench/peer.py, bench/report.py)
# on made-up output: `rados bench` text gives its objects, seconds, objects/s
# and MB/s, and a bench that wrote pieces of larger objects is refused;
# rawstore-bench JSON gives its create cells; medians and the per-repetition
# ratio over three repetitions make the verdict, and a cell whose median
# ratio clears the target while one repetition's does not is NOT met; every
# depth and profile is its own target row (no best-of). `ceph tell osd.N
# bench` JSON gives its objects (bytes / block) and rates, and a block size
# that does not divide the bytes is refused; the backend-to-backend rows
# (rawstore at each depth against BlueStore's ObjectStore) come first in
# the section, one target row per depth, with the same verdict rule.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v gnuplot > /dev/null || { echo "no gnuplot (apt-get install gnuplot-nox)"; exit 1; }
py=$repo/bench/peer.py
bad=0
check() { # check NAME GOT WANT
	if [ "$2" = "$3" ]; then
		echo "ok - $1"
	else
		echo "not ok - $1"
		echo "    got:  $2"
		echo "    want: $3"
		bad=1
	fi
}

# fields PARSER FILE: what peer.py PARSER makes of FILE: objects, seconds,
# objects/s, MB/s and size
fields() {
	python3 "$py" "$1" "$2" | python3 -c 'import json,sys
j = json.load(sys.stdin)
print("%d %.4f %.1f %.3f %d" % (j["count"], j["seconds"], j["ops_per_sec"], j["mb_per_sec"], j["size"]))'
}

# --- rados bench text (Ceph 16's layout, with its progress table) ---
cat > "$tmp/rados.txt" <<'T'
hints = 1
Maintaining 16 concurrent writes of 4096 bytes to objects of size 4096 for up to 10 seconds or 0 objects
Object prefix: benchmark_data_host_4242
  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)
    0       0         0         0         0         0           -           0
    1      16      9001      8985   35.0977   35.0977  0.00171935  0.00177467
Total time run:         10.0004
Total writes made:      100004
Write size:             4096
Object size:            4096
Bandwidth (MB/sec):     38.0623
Stddev Bandwidth:       2.3
Max bandwidth (MB/sec): 40.1
Min bandwidth (MB/sec): 34.2
Average IOPS:           9744
Stddev IOPS:            589
Max IOPS:               10265
Min IOPS:               8755
Average Latency(s):     0.00164
Stddev Latency(s):      0.0004
Max latency(s):         0.03
Min latency(s):         0.0005
Cleaning up (deleting benchmark objects)
Removed 100004 objects
Clean up completed and total clean up time :3.1
T
got=$(fields rados "$tmp/rados.txt")
check "rados bench: objects, seconds, objects/s and MB/s (not its MiB/s)" "$got" \
	"100004 10.0004 10000.0 40.960 4096"
sed 's/^Object size: .*/Object size:            4194304/' "$tmp/rados.txt" > "$tmp/rados-obj.txt"
if python3 "$py" rados "$tmp/rados-obj.txt" > /dev/null 2> "$tmp/err"; then
	check "rados bench writing pieces of 4 MiB objects is refused" "accepted" "refused"
else
	check "rados bench writing pieces of 4 MiB objects is refused" \
		"$(grep -c 'not one object per write' "$tmp/err")" 1
fi
grep -v '^Total writes made' "$tmp/rados.txt" > "$tmp/rados-cut.txt"
if python3 "$py" rados "$tmp/rados-cut.txt" > /dev/null 2> "$tmp/err"; then
	check "truncated rados bench output is refused" "accepted" "refused"
else
	check "truncated rados bench output is refused" "$(grep -c 'lacks count' "$tmp/err")" 1
fi

# --- rawstore-bench --json: create cells only ---
cat > "$tmp/rs.json" <<'J'
{"kind": "store_info", "rotational": false}
{"kind": "object", "backend_impl": "rawstore", "workload": "create", "size": 4096, "ops": 130000, "qd": 16, "seconds": 10.5, "ops_per_sec": 12381.0, "mb_per_sec": 50.71}
{"kind": "object", "backend_impl": "rawstore", "workload": "read", "size": 4096, "ops": 10, "qd": 1, "seconds": 1, "ops_per_sec": 10, "mb_per_sec": 0.04}
J
got=$(python3 "$py" rawstore "$tmp/rs.json" | python3 -c 'import json,sys
for l in sys.stdin:
    j = json.loads(l); print(j["size"], j["qd"], j["count"], j["seconds"], j["ops_per_sec"])')
check "rawstore-bench: the create cells, with objects and seconds" "$got" \
	"4096 16 130000 10.5 12381.0"

# --- ceph tell osd.N bench JSON: every block a new object ---
cat > "$tmp/osdbench.json" <<'J'
{
    "bytes_written": 1073741824,
    "blocksize": 4096,
    "elapsed_sec": 13.1072,
    "bytes_per_sec": 81920000,
    "iops": 20000
}
J
got=$(fields osdbench "$tmp/osdbench.json")
check "osd bench: objects (bytes / block), seconds, objects/s and MB/s" "$got" \
	"262144 13.1072 20000.0 81.920 4096"
sed 's/"blocksize": 4096/"blocksize": 4095/' "$tmp/osdbench.json" > "$tmp/osdbench-bad.json"
if python3 "$py" osdbench "$tmp/osdbench-bad.json" > /dev/null 2> "$tmp/err"; then
	check "osd bench whose bytes are not whole blocks is refused" "accepted" "refused"
else
	check "osd bench whose bytes are not whole blocks is refused" \
		"$(grep -c 'in blocks of 4095' "$tmp/err")" 1
fi
# With the OSD's perf dump before and after: BlueStore's throttle gave
# 262144 transactions 8096 bytes each (4096 + cost per io 4000) out of a
# max of 64 MiB: 8289 in flight at most; 12 waits in 1.5 s.
cat > "$tmp/perf-before.json" <<'J'
{"bluestore": {"kv_flush_lat": {"avgcount": 1}},
 "throttle-bluestore_throttle_bytes": {"val": 0, "max": 67108864, "get_started": 0,
  "get": 1000, "get_sum": 8096000, "get_or_fail_fail": 0, "get_or_fail_success": 0,
  "take": 0, "take_sum": 0, "put": 1000, "put_sum": 8096000,
  "wait": {"avgcount": 3, "sum": 0.5, "avgtime": 0.16}}}
J
cat > "$tmp/perf-after.json" <<'J'
{"bluestore": {"kv_flush_lat": {"avgcount": 2}},
 "throttle-bluestore_throttle_bytes": {"val": 0, "max": 67108864, "get_started": 0,
  "get": 263144, "get_sum": 2130403424, "get_or_fail_fail": 0, "get_or_fail_success": 0,
  "take": 0, "take_sum": 0, "put": 263144, "put_sum": 2130403424,
  "wait": {"avgcount": 15, "sum": 2.0, "avgtime": 0.13}}}
J
got=$(python3 "$py" osdbench "$tmp/osdbench.json" "$tmp/perf-before.json" "$tmp/perf-after.json" |
	python3 -c 'import json,sys; t = json.load(sys.stdin)["throttle"]
print(t["throttle_max_bytes"], t["throttle_bytes_per_txc"], t["inflight_bound"], t["throttle_waits"], t["throttle_wait_s"])')
check "osd bench with perf dumps: the throttle's max, bytes per transaction, in-flight bound, waits" \
	"$got" "67108864 8096.0 8289 12 1.5"
echo '{"bluestore": {}}' > "$tmp/perf-none.json"
got=$(python3 "$py" osdbench "$tmp/osdbench.json" "$tmp/perf-none.json" "$tmp/perf-none.json" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["throttle"])')
check "osd bench with perf dumps that lack the throttle: none, not made up" "$got" "None"

# --- verdicts through bench/report.py ---
mkdir -p "$tmp/run/raw"
cat > "$tmp/run/raw/env.json" <<'J'
{"kernel": "6.1.0-test", "kernel_version": "#1", "cpus": 2, "mem_kb": 1048576,
 "clocksource": "tsc", "mode": "full", "reps": 3, "disks": {}}
J
: > "$tmp/run/raw/results.jsonl"
python3 - > "$tmp/peer.jsonl" <<'PY'
import json
def line(system, profile, shape, qd, rep, v, size, kind="peer_create"):
    mb = v if shape == "4m" else v * size / 1e6
    ops = v * 1e6 / size if shape == "4m" else v
    print(json.dumps({"kind": kind, "system": system, "profile": profile,
                      "shape": shape, "qd": qd, "rep": rep, "count": int(ops * 10),
                      "seconds": 10.2, "size": size, "ops_per_sec": ops, "mb_per_sec": mb}))
print(json.dumps({"kind": "peer_env", "store": "bluestore", "profile": "ssd",
                  "ceph_version": "ceph version 16.2.15", "rotational": "0",
                  "bluestore_bdev_rotational": "0"}))
# ssd 4k QD16: ratios 1.30, 1.25, 1.40: met (median 1.30, lowest 1.25)
for rep, (b, r) in enumerate([(1000, 1300), (1000, 1250), (1000, 1400)], 1):
    line("bluestore", "ssd", "4k", 16, rep, b, 4096); line("rawstore", "ssd", "4k", 16, rep, r, 4096)
# ssd 4k QD64: ratios 1.30, 1.10, 1.25: median 1.25 clears 1.2, one
# repetition does not: the spread crosses the threshold, not met
for rep, (b, r) in enumerate([(1000, 1300), (1000, 1100), (1000, 1250)], 1):
    line("bluestore", "ssd", "4k", 64, rep, b, 4096); line("rawstore", "ssd", "4k", 64, rep, r, 4096)
# hdd 4k QD16: ratios 2.0, 1.9, 2.1 but BlueStore's medians differ per rep
for rep, (b, r) in enumerate([(500, 1000), (1000, 1900), (800, 1680)], 1):
    line("bluestore", "hdd", "4k", 16, rep, b, 4096); line("rawstore", "hdd", "4k", 16, rep, r, 4096)
# ssd 4m QD1 in MB/s: ratios 0.9, 0.95, 1.1: not met (median 0.95 < 1.0)
for rep, (b, r) in enumerate([(1000, 900), (1000, 950), (1000, 1100)], 1):
    line("bluestore", "ssd", "4m", 1, rep, b, 4194304); line("rawstore", "ssd", "4m", 1, rep, r, 4194304)
# memstore beside ssd 4k QD16
for rep, v in enumerate([5000, 5100, 4900], 1):
    line("memstore", "memstore", "4k", 16, rep, v, 4096)
# backend to backend: BlueStore's ObjectStore (osd bench, all queued)
# against rawstore at each depth, per repetition
def backend(system, shape, qd, rep, v, size):
    line(system, "ssd", shape, qd, rep, v, size, "peer_backend")
for rep in (1, 2, 3):
    # with its in-flight bound (peer.py throttle()), medians 8289 and 3 waits
    print(json.dumps({"kind": "peer_backend", "system": "bluestore", "profile": "ssd",
                      "shape": "4k", "qd": "queued", "rep": rep, "count": 200000,
                      "seconds": 10.2, "size": 4096, "ops_per_sec": 20000,
                      "mb_per_sec": 81.92,
                      "throttle": {"throttle_max_bytes": 67108864,
                                   "throttle_bytes_per_txc": 8096.0 + rep,
                                   "inflight_bound": 8290 - rep, "throttle_waits": rep + 1,
                                   "throttle_wait_s": 0.1}}))
    backend("bluestore", "4m", "queued", rep, 2000, 4194304)
# 4k QD16 0.80x: not met (1.0); QD64 1.80/1.70/1.55x: met (1.5); QD256
# median 1.60x but one repetition 1.45x: not met; 4m QD16 1.05/1.10/1.00x: met
for rep, (a, b, c) in enumerate([(16000, 36000, 32000), (16000, 34000, 29000),
                                 (16000, 31000, 33000)], 1):
    backend("rawstore", "4k", 16, rep, a, 4096)
    backend("rawstore", "4k", 64, rep, b, 4096)
    backend("rawstore", "4k", 256, rep, c, 4096)
for rep, v in enumerate([2100, 2200, 2000], 1):
    backend("rawstore", "4m", 16, rep, v, 4194304)
PY
python3 "$repo/bench/report.py" "$tmp/run" --accel tcg --git test --peer "$tmp/peer.jsonl" > /dev/null
python3 - "$tmp/run/report.md" <<'PY' || bad=1
import sys
md = open(sys.argv[1]).read()
rows = [l for l in md.splitlines() if l.startswith("| ") and "Against BlueStore (" in l]
brows = [l for l in md.splitlines() if l.startswith("| ") and "Against BlueStore's" in l]
bad = 0
def want(what, status, detail, name):
    global bad
    r = [l for l in rows + brows if what + " |" in l]
    ok = len(r) == 1 and r[0].startswith("| %s |" % status) and \
        r[0].rstrip().endswith("| %s |" % detail)
    print("%s - %s" % ("ok" if ok else "not ok", name))
    if not ok:
        print("    got:  %s\n    want: | %s | %s | %s |" % (r, status, what, detail))
        bad = 1
want("Against BlueStore (host, SSD profile), 4 KiB creates at QD16, objects/s: ≥ 1.2×",
     "**met**", "1.30×, 3 repetitions 1.25–1.40× (BlueStore 1000, rawstore 1300 objects/s; "
     "memstore OSD 5000)", "median and lowest repetition above 1.2x: met, memstore beside it")
want("Against BlueStore (host, SSD profile), 4 KiB creates at QD64, objects/s: ≥ 1.2×",
     "**not met**", "1.25×, 3 repetitions 1.10–1.30× (BlueStore 1000, rawstore 1250 objects/s)",
     "median 1.25x but a repetition at 1.10x: the spread crosses 1.2x, not met")
want("Against BlueStore (host, HDD profile), 4 KiB creates at QD16, objects/s: ≥ 1.2×",
     "**met**", "2.00×, 3 repetitions 1.90–2.10× (BlueStore 800, rawstore 1680 objects/s; "
     "memstore OSD 5000)",
     "the ratio is taken per repetition, each profile its own row, one memstore run beside both")
want("Against BlueStore (host, SSD profile), 4 MiB creates at QD1, MB/s: ≥ 1.0×",
     "**not met**", "0.95×, 3 repetitions 0.90–1.10× (BlueStore 1000, rawstore 950 MB/s)",
     "4 MiB in MB/s, median below 1.0x: not met")
BK = "Against BlueStore's ObjectStore, backend to backend (host, SSD profile), "
want(BK + "4 KiB creates, rawstore at QD16, objects/s: ≥ 1.0×", "**not met**",
     "0.80×, 3 repetitions 0.80–0.80× (ObjectStore 20000, rawstore 16000 objects/s)",
     "backend: QD16 below 1.0x, not met")
want(BK + "4 KiB creates, rawstore at QD64, objects/s: ≥ 1.5×", "**met**",
     "1.70×, 3 repetitions 1.55–1.80× (ObjectStore 20000, rawstore 34000 objects/s)",
     "backend: QD64 every repetition above 1.5x, met")
want(BK + "4 KiB creates, rawstore at QD256, objects/s: ≥ 1.5×", "**not met**",
     "1.60×, 3 repetitions 1.45–1.65× (ObjectStore 20000, rawstore 32000 objects/s)",
     "backend: QD256 median 1.60x but a repetition at 1.45x, not met")
want(BK + "4 MiB creates, rawstore at QD16, MB/s: ≥ 1.0×", "**met**",
     "1.05×, 3 repetitions 1.00–1.10× (ObjectStore 2000, rawstore 2100 MB/s)",
     "backend: 4 MiB in MB/s, met at 1.0x")
if len(brows) != 4:
    print("not ok - one backend target row per depth (got %d)" % len(brows))
    bad = 1
else:
    print("ok - one backend target row per depth")
bt = md.find("**Backend to backend**"); ot = md.find("**What a Ceph user sees**")
if 0 <= bt < ot:
    print("ok - the section opens with the backend table, the OSD-level one follows")
else:
    print("not ok - backend table at %d, OSD-level at %d" % (bt, ot))
    bad = 1
if len(rows) != 4:
    print("not ok - one target row per measured cell, no best-of (got %d)" % len(rows))
    bad = 1
else:
    print("ok - one target row per measured cell, no best-of")
cell = [l for l in md.splitlines() if l.startswith("| 4 KiB objects/s | 64 |")]
if len(cell) == 1 and "| 1000 (±0%) | 1250 (±16%) | 1.25× (1.10–1.30×) |" in cell[0] and \
        cell[0].rstrip().endswith("| not met (≥ 1.2×) |"):
    print("ok - the profile table gives medians, spread and the ratio's range")
else:
    print("not ok - the profile table row for 4 KiB QD64: %s" % cell)
    bad = 1
th = [l for l in md.splitlines() if l.startswith("| SSD | 4 KiB | 67108864 |")]
if th == ["| SSD | 4 KiB | 67108864 | 8098 | 8288 | 3 |"] and \
        "| SSD | 4 MiB | " not in md.split("in-flight bound (transactions)")[1].split("\n\n")[0]:
    print("ok - BlueStore's in-flight bound: medians per profile and shape, none made up")
else:
    print("not ok - the in-flight table: %s" % th)
    bad = 1
if "over a sparse file on the same host file system" in md and "written in full" not in md:
    print("ok - peer_env without a backing: the devices are said to be sparse")
else:
    print("not ok - peer_env without a backing: the report does not say sparse")
    bad = 1
sys.exit(bad)
PY
# The same with the peer_env lines of a run whose devices were written in
# full ("backing": "written", as bench/peer-bluestore writes them now).
sed 's/"kind": "peer_env", /&"backing": "written", /' "$tmp/peer.jsonl" > "$tmp/peer-written.jsonl"
grep -q '"backing": "written"' "$tmp/peer-written.jsonl" || { echo "not ok - sed made no written peer_env"; bad=1; }
python3 "$repo/bench/report.py" "$tmp/run" --accel tcg --git test --peer "$tmp/peer-written.jsonl" > /dev/null
if grep -q "over a file on the same host file system, written in full beforehand" "$tmp/run/report.md" &&
	! grep -q "over a sparse file" "$tmp/run/report.md"; then
	echo "ok - peer_env with backing written: the devices are said to be written in full"
else
	echo "not ok - peer_env with backing written: the report does not say so"
	bad=1
fi
[ -d "$repo/bench/__pycache__" ] && { echo "not ok - bench/__pycache__ was written"; bad=1; }
exit $bad
