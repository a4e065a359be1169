#!/usr/bin/env bash
# The README's results block is the kept run's target table, every miss
# included: bench/readme-results --check fails when the block between the
# README's results markers differs from what bench/readme-results writes
# from bench/results/<run>/report.md (and raw/host-journal/report.txt),
# quotes a figure the kept report does not have, or leaves out a target the
# report marks as missed. First on a made-up tree, where each fault alone
# must be reported (and a README without the block, whose table was picked
# by hand), then on the repository.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONDONTWRITEBYTECODE=1
gen=$repo/bench/readme-results

t=$tmp/t
mkdir -p "$t/bench/results/2026-01-01-full-abc1234/raw/host-journal"
cat > "$t/bench/results/2026-01-01-full-abc1234/report.md" <<'M'
# rawstore benchmark report

- accelerator: **tcg**; mode: full; repetitions: 3; git revision: `abc123456789`

## 5. Targets

| | target | this run |
|---|---|---|
| **met** | First writes commit nothing | 0 commits (plain fallocate: 1000) |
| **not met** | 1 MiB object creates ≥ 0.9× fio at QD1 | 0.15× (139.5 vs 937.9 MB/s) |
| **met** | 4 KiB reads ≥ 0.8× fio | 1.08× |

## 6. Missing cells
M
cat > "$t/bench/results/2026-01-01-full-abc1234/raw/host-journal/report.txt" <<'M'
Issue 23's host targets (rawstore with the device journal):
| verdict | target | median | worst repetition |
|---|---|---|---|
| missed | overwrite 4 KiB QD1 ≥ 1.0× files | 0.65× | 0.61× |
M
printf '# T\n\n## Latest results\n\n<!-- results:begin -->\n<!-- results:end -->\n\nmore\n' \
	> "$t/README.md"
"$gen" --root "$t"
out=$("$gen" --root "$t" --check) || { echo "$out"; echo "FAIL: the written block refused"; exit 1; }
grep -q '| \*\*not met\*\* | 1 MiB object creates' "$t/README.md" ||
	{ cat "$t/README.md"; echo "FAIL: the miss is not in the block"; exit 1; }
grep -q 'overwrite 4 KiB QD1 ≥ 1.0× files | 0.65× (worst repetition 0.61×)' "$t/README.md" ||
	{ cat "$t/README.md"; echo "FAIL: the host-journal miss is not in the block"; exit 1; }
cp "$t/README.md" "$tmp/good.md"

expect_bad() { # expect_bad WHAT PATTERN: the changed README must be refused, naming PATTERN
	if out=$("$gen" --root "$t" --check); then
		echo "FAIL: $1 not reported"
		exit 1
	fi
	grep -qF -- "$2" <<< "$out" || { echo "$out"; echo "FAIL: $1 reported without '$2'"; exit 1; }
	echo "self-check: $1 reported"
	cp "$tmp/good.md" "$t/README.md"
}
grep -v '1 MiB object creates' "$tmp/good.md" > "$t/README.md"
expect_bad "a missed target left out" "leaves out a missed target: 1 MiB object creates"
sed 's/0\.15×/0.51×/' "$tmp/good.md" > "$t/README.md"
expect_bad "a figure not in the report" "quotes 0.51, a figure not in"
sed 's/| \*\*not met\*\* | 1 MiB/| met | 1 MiB/' "$tmp/good.md" > "$t/README.md"
expect_bad "a block that differs" "differs from what bench/readme-results writes"
printf '# T\n\n## Latest results\n\n| measured | result |\n|---|---|\n| reads | 1.08×, 351 cuts |\n' \
	> "$t/README.md"
expect_bad "a hand-picked table without the block" "no results block"
printf '# T\n\n## Latest results\n\n| measured | result |\n|---|---|\n| reads | 1.08×, 351 cuts |\n' \
	> "$t/README.md"
expect_bad "a hand-picked table quoting a sum" "quotes 351"

"$gen" --root "$repo" --check
echo "README.md's results block is bench/readme-results' output"
