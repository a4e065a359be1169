#!/usr/bin/env bash
# The library and its unit tests are clean under the sanitizers:
# AddressSanitizer + UndefinedBehaviorSanitizer (preset asan, build-asan/) run
# every test of the library, its examples and its command; ThreadSanitizer
# (preset tsan, build-tsan/) runs them too except ModelTest (single-threaded
# random ops, about 8 minutes under TSan on 2 cores), the two single-threaded
# bulk tests LargeFragmentedObject and FullDeviceIsEnospcAndStoreStaysUsable
# (40 s each under TSan) and the tests that fork a child which opens a
# store and dies at a crash point (TSan does not support threads started
# after a multi-threaded fork): the crash tests, CliReadOnlyTest,
# ReadOnlyOpenWritesNothing..., PendingDeferredTargetNotPunched (the
# tree_state.h helper), the JournalTest cases built on CrashChild or
# DieChild (RocksDB's background threads, once a flush starts them, outlive
# the parent's close)
# and crc32c.tables (StoreTest, FsckTest and a
# ModelTest again with the table checksums: over its 300 s under TSan,
# while each of its tests runs on its own); all of those run under ASan. The
# concurrency, load, async, commit, reclaim, fsck, open, CLI and server
# example tests run under TSan. Neither runs pack.* (packaging: install, man
# pages, headers) or ktest.* (the guest test runner's self-test): they check
# no library code. The load test runs 10 s here (RAWSTORE_LOAD_SECONDS).
# Any report aborts its test (halt_on_error), so a finding fails this check.
# Env: RAWSTORE_TSAN_EXCLUDE overrides the ctest -E regex of the TSan run.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
jobs=${RAWSTORE_JOBS:-2}
# journal.rocksdb: the whole unit suite again with RocksDB's WAL; the
# sanitized runs cover the suite once, with the default journal.
skip='^pack\.|^ktest\.|^journal\.rocksdb$'
tsan_exclude=${RAWSTORE_TSAN_EXCLUDE:-'ModelTest|Crash|LargeFragmentedObject|FullDeviceIsEnospc|CliReadOnlyTest|ReadOnlyOpenWritesNothing|PendingDeferredTargetNotPunched|JournalTest\.(ReplayRestores|TornRecord|LastRecordWithLostData|DataFreedInItsOwnGroup|WrapsAndTrims|ReadOnlyOpenSees|ReusedUnitsOfAnApplied|DroppedFirstRecord|DeferredWritesElsewhere|ReplayStartsAtTheSynced|ChangedNocopyBuffer|RecordBlocksNeverStart)|^crc32c\.tables$'}
export RAWSTORE_LOAD_SECONDS=${RAWSTORE_LOAD_SECONDS:-10}
t0=$(date +%s)
say() { echo "[$(($(date +%s) - t0))s] $*"; }

# The tests' scratch directories go here (TMPDIR): a test that a finding
# aborts leaves its loop devices and mounts behind, which are taken down
# after each run (only those under this directory).
scratch=$(mktemp -d "${TMPDIR:-/tmp}/rawstore-san.XXXXXX")
scratch_clean() {
	local l m n=0
	for l in $(losetup -n -O NAME,BACK-FILE 2> /dev/null |
		awk -v d="$scratch/" 'index($2, d) == 1 { print $1 }'); do
		losetup -d "$l" && n=$((n + 1))
	done
	for m in $(awk -v d="$scratch/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r); do
		umount -l "$m" && n=$((n + 1))
	done
	[ "$n" = 0 ] || say "took down $n loop devices and mounts an aborted test left"
	rm -rf "${scratch:?}"/*
}
trap 'scratch_clean; rm -rf "$scratch"' EXIT

build() { # build PRESET
	mkdir -p "build-$1"
	if ! cmake --preset "$1" > "build-$1/cmake.log" 2>&1; then
		tail -20 "build-$1/cmake.log"
		echo "FAIL: cmake --preset $1"
		return 1
	fi
	if ! cmake --build --preset "$1" -j"$jobs" > "build-$1/build.log" 2>&1; then
		tail -30 "build-$1/build.log"
		echo "FAIL: building preset $1"
		return 1
	fi
}

fail=0
say "asan: building build-asan/"
if build asan; then
	say "asan: ctest (all tests)"
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 TMPDIR=$scratch \
		ctest --test-dir build-asan -j"$jobs" --timeout 600 --output-on-failure \
		-E "$skip" > build-asan/ctest.log 2>&1
	rc=$?
	scratch_clean
	grep -E 'tests passed|tests failed' build-asan/ctest.log
	if [ $rc != 0 ]; then
		grep -E -A40 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|\*\*\*Failed|Timeout' \
			build-asan/ctest.log | head -120
		echo "FAIL: ctest under ASan+UBSan (log build-asan/ctest.log)"
		fail=1
	fi
else
	fail=1
fi

say "tsan: building build-tsan/"
if build tsan; then
	say "tsan: ctest -E '$tsan_exclude'"
	# TSan needs its fixed shadow layout: without ASLR it works whatever
	# vm.mmap_rnd_bits the host uses.
	TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$repo/tests/harness/tsan.supp" \
		TMPDIR=$scratch setarch "$(uname -m)" -R \
		ctest --test-dir build-tsan -j"$jobs" --timeout 600 --output-on-failure \
		-E "$skip|$tsan_exclude" > build-tsan/ctest.log 2>&1
	rc=$?
	scratch_clean
	grep -E 'tests passed|tests failed|No tests were found' build-tsan/ctest.log
	if grep -q 'No tests were found' build-tsan/ctest.log; then
		echo "FAIL: the TSan run found no test"
		fail=1
	elif [ $rc != 0 ]; then
		grep -E -A40 'WARNING: ThreadSanitizer|\*\*\*Failed|Timeout' build-tsan/ctest.log |
			head -120
		echo "FAIL: ctest under TSan (log build-tsan/ctest.log)"
		fail=1
	fi
else
	fail=1
fi
say "done"
exit $fail
