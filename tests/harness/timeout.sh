#!/usr/bin/env bash
# vm/run enforces its timeout: a guest command that outlives it is killed,
# vm/run says so and exits 124.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
kdir=${RAWSTORE_KERNEL_DIR:-$("$repo/kernel/build" --print)}
err=$("$repo/vm/run" --kernel "$kdir" --timeout 25 -- sleep 600 2>&1 >/dev/null)
rc=$?
echo "exit $rc; stderr: $err"
[ "$rc" = 124 ] && [[ $err == *"timed out after 25 s"* ]]
