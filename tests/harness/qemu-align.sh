#!/usr/bin/env bash
# vm/run's disk files let QEMU take every 512-byte-aligned guest request as
# it is (vm/disk-file). QEMU opens them as vm/run does (raw, cache=none,
# aio=threads) under qemu-io, which writes one request of 1024 (IOV_MAX)
# 512-byte segments at offset 512: what QEMU 7.2 builds when it merges the
# guest's requests. On a file whose first block is a hole, QEMU probes a
# 4096-byte alignment, pads that request to 1026 segments and pwritev()
# refuses it with EINVAL: the "host I/O error ... Invalid argument" that
# stopped power-cut campaigns on 2026-12-06. A disk file from vm/disk-file
# must take the request and read back what it wrote, and vm/disk-file must
# not change a kept file's contents.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
command -v qemu-io > /dev/null || { echo "FAIL: qemu-io missing (qemu-utils; scripts/install-deps)"; exit 1; }
# Where vm/run puts its disks.
dir=$(mktemp -d "${TMPDIR:-/tmp}/qemu-align.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

segs=$(printf ' 512%.0s' $(seq 1024))
qio() { qemu-io --cache none --aio threads -f raw "$@" 2>&1; }

# The bare sparse file, as vm/run made them before: said, not asserted (a
# QEMU from 8.1 takes the request).
truncate -s 64M "$dir/bare.img"
echo "bare sparse file, QEMU $(qemu-io --version | head -1 | awk '{print $3}'):" \
	"$(qio "$dir/bare.img" -c "writev -P 0x5a 512$segs" | head -1)"

"$repo/vm/disk-file" "$dir/disk.img" 64M || fail "vm/disk-file failed"
[ "$(stat -c %s "$dir/disk.img")" = 67108864 ] || fail "disk.img is not 64 MiB"
cmp -s -n 67108864 "$dir/disk.img" /dev/zero || fail "a new disk file does not read as zeros"
out=$(qio "$dir/disk.img" -c "writev -P 0x5a 512$segs")
echo "vm/disk-file: $(echo "$out" | head -1)"
[[ $out == *"wrote 524288/524288 bytes at offset 512"* ]] ||
	fail "QEMU refused a 1024-segment request at offset 512 on a vm/disk-file disk"
out=$(qio "$dir/disk.img" -c "read -P 0x5a 512 524288" -c "read -P 0 0 512" -c "read -P 0 524800 4096")
echo "$out" | grep -q "Pattern verification failed" && fail "read back: $out"
[ "$(echo "$out" | grep -c '^read ')" = 3 ] || fail "read back: $out"

# A kept file: its first block holds data, which vm/disk-file leaves as it is
# (and its size, though another SIZE is given).
printf 'rawstore-kept' > "$dir/kept.img"
truncate -s 1M "$dir/kept.img"
sum=$(md5sum < "$dir/kept.img")
"$repo/vm/disk-file" "$dir/kept.img" 64M || fail "vm/disk-file failed on a kept file"
[ "$(md5sum < "$dir/kept.img")" = "$sum" ] || fail "vm/disk-file changed a kept file"
echo PASS
