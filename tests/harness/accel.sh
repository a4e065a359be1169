#!/usr/bin/env bash
# --accel auto runs the guest either way: KVM only if a short probe boots,
# otherwise TCG with a message saying so.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
kdir=${RAWSTORE_KERNEL_DIR:-$("$repo/kernel/build" --print)}
out=$("$repo/vm/run" --kernel "$kdir" --accel auto -- echo booted 2>&1)
rc=$?
echo "$out"
[ "$rc" = 0 ] && echo "$out" | grep -qx booted
