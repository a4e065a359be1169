#!/usr/bin/env bash
# Kills under Swift on rawstore devices (docs/swift.md#what-a-kill-leaves),
# on swift-replication's small cluster: rawstored killed with SIGKILL
# while six clients PUT; restarted, every replica the object server had
# answered 201 for reads back identical (0 lost, 0 differing) and every
# store passes a deep fsck.  A client killed mid-PUT leaves no visible
# object (its first 8 MiB already staged in the store), and after a reopen
# the store's allocated bytes and object count
# are what they were before the PUT.  The test itself is
# tests/harness/swift-kill.py.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${RAWSTORE_BUILD:-$repo/build}
py=/usr/bin/python3
$py -c 'import swift.obj.server, eventlet' 2> /dev/null ||
	{ echo "SKIP: python3-swift or python3-eventlet is not installed (scripts/install-deps)"; exit 77; }
for b in store/cli/rawstore store/broker/rawstored; do
	[ -x "$build/$b" ] || { echo "FAIL: $build/$b is not built"; exit 1; }
done
out=$(mktemp /tmp/swift-kill.XXXXXX)
trap 'rm -f "$out"' EXIT
rc=0
RAWSTORE_BUILD=$build timeout 300 $py -W ignore "$repo/tests/harness/swift-kill.py" > "$out" 2>&1 || rc=$?
if [ $rc != 0 ]; then
	tail -100 "$out"
	[ $rc = 124 ] && echo "FAIL: timed out after 300 s"
	echo "FAIL: swift-kill (exit $rc)"
	exit 1
fi
grep -vE '^(rawstored|repl): ' "$out"
