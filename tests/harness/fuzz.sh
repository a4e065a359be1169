#!/usr/bin/env bash
# Bounded libFuzzer run of every decoder of stored metadata (tests/fuzz/):
# each target starts from its seed corpus (tests/fuzz/corpus/<target>/) and
# fuzzes for RAWSTORE_FUZZ_SECONDS (default 25) under ASan + UBSan + LSan.
# Any crash, sanitizer report, leak, timeout (10 s per input) or
# out-of-memory fails the check; the reproducer is kept in
# build-fuzz/artifacts/ and the command to replay it is printed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
secs=${RAWSTORE_FUZZ_SECONDS:-25}
jobs=${RAWSTORE_JOBS:-2}
if ! command -v clang > /dev/null; then
	echo "FAIL: clang is missing (scripts/install-deps installs it)"
	exit 1
fi
targets=$(sed -n 's/^set(FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/CMakeLists.txt)
[ -n "$targets" ] || { echo "FAIL: no FUZZ_TARGETS in tests/fuzz/CMakeLists.txt"; exit 1; }
mkdir -p build-fuzz
if ! { cmake --preset fuzz > build-fuzz/cmake.log 2>&1 &&
	cmake --build build-fuzz -j"$jobs" --target $targets > build-fuzz/build.log 2>&1; }; then
	tail -n 30 build-fuzz/cmake.log build-fuzz/build.log
	echo "FAIL: building the fuzz targets"
	exit 1
fi
rm -rf build-fuzz/artifacts build-fuzz/work
mkdir -p build-fuzz/artifacts
fail=0
for t in $targets; do
	seeds=tests/fuzz/corpus/$t
	if [ ! -d "$seeds" ] || [ -z "$(ls -A "$seeds")" ]; then
		echo "FAIL: $t has no seed corpus in $seeds"
		fail=1
		continue
	fi
	# New inputs go to a scratch corpus; the checked-in seeds stay as they are.
	work=build-fuzz/work/$t
	mkdir -p "$work"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		"build-fuzz/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/$t-" \
		"$work" "$seeds" > "build-fuzz/$t.log" 2>&1
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build-fuzz/$t.log")
	cov=$(grep -oE 'cov: [0-9]+' "build-fuzz/$t.log" | tail -1)
	if [ $rc = 0 ]; then
		echo "ok: $t: ${runs:-?} inputs in ${secs} s, $cov, corpus $(ls "$work" | wc -l) new"
	else
		grep -E -A30 'ERROR: |runtime error|ALARM|out-of-memory|==[0-9]+==' \
			"build-fuzz/$t.log" | head -60
		for a in build-fuzz/artifacts/$t-*; do
			[ -e "$a" ] && echo "reproduce: build-fuzz/fuzz/$t $a"
		done
		echo "FAIL: $t (exit $rc, log build-fuzz/$t.log)"
		fail=1
	fi
done
exit $fail
