#!/usr/bin/env bash
# The Swift backend (integrations/swift, docs/swift.md#the-swift-backend):
# its unit tests pass against a real rawstored on a file-backed store
# (Swift's DiskFile API and object server: PUT/GET/HEAD/POST/DELETE,
# expiry, quarantine, >4 KiB metadata, suffix hashes by Swift's recipe,
# fork, a killed writer, eventlet; the hash cache in the store and equal
# to Swift's file backend's, the replicator's and auditor's walks), and
# `cmake --install` puts the package where Debian's python3 and Swift's
# entry-point loader find it, and the replicator's start script runs.
# Debian's python3 (/usr/bin/python3), not a python3 of another origin
# first on PATH: python3-swift is installed for it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=${RAWSTORE_BUILD:-$repo/build}
py=/usr/bin/python3
$py -c 'import swift, eventlet' 2> /dev/null ||
	{ echo "SKIP: python3-swift or python3-eventlet is not installed (scripts/install-deps)"; exit 77; }
for b in store/cli/rawstore store/broker/rawstored; do
	[ -x "$build/$b" ] || { echo "FAIL: $build/$b is not built"; exit 1; }
done
tmp=$(mktemp -d /tmp/swift-backend.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# 1. The unit tests (each class starts its own rawstored).
RAWSTORE_BUILD=$build timeout 600 $py -W ignore::DeprecationWarning -m unittest discover \
	-s "$repo/integrations/swift/tests" -v > "$tmp/unit.log" 2>&1 ||
	{ grep -vE 'ResourceWarning|tracemalloc' "$tmp/unit.log" | tail -60; echo "FAIL: unit tests"; exit 1; }
grep -E '^Ran [0-9]+ tests' "$tmp/unit.log"
grep -qE '^OK$' "$tmp/unit.log" || { tail -20 "$tmp/unit.log"; echo "FAIL: no OK"; exit 1; }
if grep -qE '(skipped|SKIP)' "$tmp/unit.log"; then
	grep -E 'skipped' "$tmp/unit.log"; echo "FAIL: a unit test skipped"; exit 1
fi

# 2. The installed package: Swift loads the entry point from it alone
# (run from / with only the installed tree added, not the source tree).
DESTDIR=$tmp/root cmake --install "$build" > "$tmp/install.log" 2>&1 ||
	{ tail -20 "$tmp/install.log"; echo "FAIL: cmake --install"; exit 1; }
f=$(find "$tmp/root" -path '*dist-packages/rawstore_swift/diskfile.py' | head -1)
[ -n "$f" ] || { echo "FAIL: rawstore_swift not installed"; exit 1; }
site=$(dirname "$(dirname "$f")")
(cd / && PYTHONPATH=$site $py -W ignore -c '
from swift.common.utils import load_pkg_resource
c = load_pkg_resource("swift.diskfile", "egg:rawstore_swift#replication.rawstore")
assert c.__module__ == "rawstore_swift.diskfile", c
import rawstore_swift
assert rawstore_swift.__file__.startswith("'"$site"'"), rawstore_swift.__file__
print("installed entry point:", c.__name__, "from", rawstore_swift.__file__)
from paste.deploy import loadwsgi
ctx = loadwsgi.loadcontext(loadwsgi.FILTER, "egg:rawstore_swift#recon")
assert ctx.object.__module__ == "rawstore_swift.recon", ctx.object
print("installed filter: recon from", ctx.object.__module__)
') || { echo "FAIL: Swift cannot load the installed backend"; exit 1; }
bin=$(find "$tmp/root" -path '*bin/rawstore-object-replicator' | head -1)
[ -n "$bin" ] || { echo "FAIL: rawstore-object-replicator not installed"; exit 1; }
(cd / && PYTHONPATH=$site $py -W ignore "$bin" --help | grep -q -- --partitions) ||
	{ echo "FAIL: the installed rawstore-object-replicator does not run"; exit 1; }
echo "swift-backend: ok"
