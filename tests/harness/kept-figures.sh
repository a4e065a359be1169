#!/usr/bin/env bash
# Figures the docs quote from the kept benchmark run are in its report:
# in docs/*.md, every paragraph that names the kept run ("the kept run" or
# its bench/results/ directory), and the table right after it, may quote
# ratios (1.90×, 6.32x) only if the kept report.md has each of them. The
# README's results block has its own check (readme-results.sh). First on
# a made-up doc that quotes a ratio the report lacks, which must be
# reported, then on the repository.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# check REPORT DOC...: print each quoted ratio that REPORT lacks; 1 if any
check() {
	local report=$1 doc bad=0 f
	shift
	for doc in "$@"; do
		# the paragraph naming the kept run and the table after it
		for f in $(awk '
			/^[[:space:]]*$/ { if (in_par) { in_par = 0; after = 1 } else if (in_tab) in_tab = 0; next }
			/kept (benchmark )?run|bench\/results\/20/ { in_par = 1 }
			after && /^\|/ { in_tab = 1 }
			{ if (!/^\|/) after = 0 }
			in_par || in_tab { print }
		' "$doc" | grep -oE '[0-9]+\.[0-9]+(×|x)' | sed 's/x$/×/' | sort -u); do
			if ! grep -qF -- "$f" "$report" && ! grep -qF -- "${f%×}x" "$report"; then
				echo "$doc: quotes $f from the kept run; $report has no such figure"
				bad=1
			fi
		done
	done
	return $bad
}

# self-check: a figure the report lacks is reported
cat > "$tmp/report.md" <<'M'
| create 4 KiB QD1 | 514 | 270 | 1.90× |
M
cat > "$tmp/doc.md" <<'M'
In the kept run the device journal wins:

| | QD1 |
|---|---|
| create 4 KiB | 1.90× |
| create 64 KiB | 1.80× |

Elsewhere 9.99× is from another run.
M
if out=$(check "$tmp/report.md" "$tmp/doc.md"); then
	echo "FAIL: a figure missing from the report was not reported"
	exit 1
fi
grep -q "quotes 1.80×" <<< "$out" || { echo "$out"; echo "FAIL: 1.80× not named"; exit 1; }
if grep -q "1.90×\|9.99×" <<< "$out"; then
	echo "$out"; echo "FAIL: a figure the report has, or one outside the kept run, reported"
	exit 1
fi
echo "self-check: a figure missing from the report reported"

runs=("$repo"/bench/results/20*/report.md)
[ ${#runs[@]} = 1 ] && [ -f "${runs[0]}" ] ||
	{ echo "FAIL: expected one kept run under bench/results, found ${#runs[@]}"; exit 1; }
if ! check "${runs[0]}" "$repo"/docs/*.md; then
	echo "FAIL: the docs quote figures that the kept report does not have"
	exit 1
fi
echo "ok - every ratio the docs quote from the kept run is in ${runs[0]#$repo/}"
