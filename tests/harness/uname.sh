#!/usr/bin/env bash
# The guest runs the patched kernel of the committed series: `vm/run --
# uname -r` prints the release kernel/build recorded, `uname -v` starts with
# "#<key>" where <key> is the cache key of kernel/patches/series + config
# (RAWSTORE_SERIES is ignored here), and the command's exit status comes back.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
committed=$(env -u RAWSTORE_SERIES "$repo/kernel/build" --print)
key=${committed##*/}
kdir=${RAWSTORE_KERNEL_DIR:-$committed}
[ "${kdir%/}" = "$committed" ] ||
	{ echo "RAWSTORE_KERNEL_DIR=$kdir is not the committed series' kernel $committed"; exit 1; }
want=$(cat "$kdir/release")
got=$("$repo/vm/run" --kernel "$kdir" -- sh -c 'uname -r; uname -v')
rel=$(echo "$got" | sed -n 1p)
ver=$(echo "$got" | sed -n 2p)
echo "guest uname -r: '$rel', kernel/build release: '$want'"
echo "guest uname -v: '$ver', committed series key: '$key'"
[ "$rel" = "$want" ] || { echo "release mismatch"; exit 1; }
case $want in *-rawstore) ;; *) echo "release lacks the -rawstore tag"; exit 1 ;; esac
case $ver in "#$key "*) ;; *) echo "uname -v does not start with '#$key': not the committed series"; exit 1 ;; esac
set +e
"$repo/vm/run" --kernel "$kdir" -- sh -c 'exit 7'
rc=$?
set -e
echo "exit status of 'sh -c \"exit 7\"' in the guest: $rc"
[ "$rc" = 7 ]
