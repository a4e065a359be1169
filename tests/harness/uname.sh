#!/usr/bin/env bash
# The guest runs the patched kernel: `vm/run -- uname -r` prints the release
# kernel/build recorded, and the command's exit status comes back.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
kdir=${RAWSTORE_KERNEL_DIR:-$("$repo/kernel/build" --print)}
want=$(cat "$kdir/release")
got=$("$repo/vm/run" --kernel "$kdir" -- uname -r)
echo "guest uname -r: '$got', kernel/build release: '$want'"
[ "$got" = "$want" ] || { echo "release mismatch"; exit 1; }
case $want in *-rawstore) ;; *) echo "release lacks the -rawstore tag"; exit 1 ;; esac
set +e
"$repo/vm/run" --kernel "$kdir" -- sh -c 'exit 7'
rc=$?
set -e
echo "exit status of 'sh -c \"exit 7\"' in the guest: $rc"
[ "$rc" = 7 ]
