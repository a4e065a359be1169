#!/usr/bin/env bash
# Replication and auditing of Swift on rawstore devices
# (docs/swift.md#replication-and-auditing), on a cluster of its own: one
# rawstored serving four 256 MiB file-backed stores, a 3-replica object
# ring over two regions, one object server, and rawstore_swift's
# replicator (ssync) and Swift's auditor run once at a time.  Objects PUT
# to a handoff reach their three primaries identical and leave the
# handoff; a device made again with `rawstore mkfs` gets back every
# object (.data, tombstones, .meta) byte for byte after one replicator
# pass; an object whose bytes were overwritten in the device file is
# quarantined by one auditor pass and restored by the next replication.
# Prints the counts (objects compared, lost, differing).  The test itself
# is tests/harness/swift-replication.py.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${RAWSTORE_BUILD:-$repo/build}
py=/usr/bin/python3
$py -c 'import swift.obj.replicator, swift.obj.ssync_sender, eventlet' 2> /dev/null ||
	{ echo "SKIP: python3-swift or python3-eventlet is not installed (scripts/install-deps)"; exit 77; }
for b in store/cli/rawstore store/broker/rawstored; do
	[ -x "$build/$b" ] || { echo "FAIL: $build/$b is not built"; exit 1; }
done
out=$(mktemp /tmp/swift-replication.XXXXXX)
trap 'rm -f "$out"' EXIT
rc=0
RAWSTORE_BUILD=$build timeout 400 $py -W ignore "$repo/tests/harness/swift-replication.py" > "$out" 2>&1 || rc=$?
if [ $rc != 0 ]; then
	tail -150 "$out"
	[ $rc = 124 ] && echo "FAIL: timed out after 400 s"
	echo "FAIL: swift-replication (exit $rc)"
	exit 1
fi
# the test's own lines, not the servers' chatter on its stderr
grep -vE '^(rawstored|repl): ' "$out"
