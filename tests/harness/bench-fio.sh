#!/usr/bin/env bash
# rawstore-bench --fio-mbs: given fio's figure for the same shape and depth,
# every result line carries its MB/s as a ratio to it (text: "0.73x fio";
# JSON: fio_mb_per_sec, ratio_to_fio = mb_per_sec / fio_mb_per_sec), and a
# figure that is not a positive number is refused (exit 2).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bench=${RAWSTORE_BUILD:-$repo/build}/bench/rawstore-bench
[ -x "$bench" ] || { echo "no $bench (build first)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp
"$bench" --dev-size 256m --objects 8 --json --fio-mbs 250 "create:64k,n=100" "read:4k,n=200" \
	> "$tmp/out.json"
python3 - "$tmp/out.json" <<'PY'
import json, sys
rows = [j for j in map(json.loads, open(sys.argv[1])) if j.get("kind") == "object"]
assert [r["workload"] for r in rows] == ["create", "read"], rows
for r in rows:
    assert r["fio_mb_per_sec"] == 250.0, r
    want = r["mb_per_sec"] / 250.0
    assert abs(r["ratio_to_fio"] - want) <= 1e-3 * max(want, 1e-3), (r["ratio_to_fio"], want)
    print("ok - %s: %.2f MB/s, %.4fx fio" % (r["workload"], r["mb_per_sec"], r["ratio_to_fio"]))
PY
"$bench" --dev-size 256m --fio-mbs 250 "create:64k,n=20" > "$tmp/out.txt"
grep -Eq '^create .* [0-9]+\.[0-9]{2}x fio$' "$tmp/out.txt" ||
	{ cat "$tmp/out.txt"; echo "not ok - the text line has no ratio"; exit 1; }
echo "ok - text: $(grep -Eo '[0-9.]+x fio' "$tmp/out.txt")"
for bad in 0 -3 x 12abc; do
	rc=0
	"$bench" --fio-mbs "$bad" "create:64k,n=1" > "$tmp/bad.out" 2>&1 || rc=$?
	if [ "$rc" != 2 ] || ! grep -q 'fio-mbs' "$tmp/bad.out"; then
		echo "not ok - --fio-mbs '$bad': exit $rc"
		cat "$tmp/bad.out"
		exit 1
	fi
done
echo "ok - bad figures refused"
