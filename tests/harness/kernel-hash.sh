#!/usr/bin/env bash
# The kernel cache key names a build's inputs; the image is checked against
# the sha256sums kernel/build recorded beside it. A copy of the committed
# kernel's directory with one byte of bzImage flipped, with a module file
# changed, or without sha256sums is refused by vm/run before it boots (exit
# 125, naming the mismatch), and by kernel/build when it is the cache entry
# of the key (a cache under a temporary RAWSTORE_CACHE). The untouched copy
# passes the same check (it gets as far as booting: a guest `true`).
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
committed=$(env -u RAWSTORE_SERIES "$repo/kernel/build" --print) || exit 1
kdir=${RAWSTORE_KERNEL_DIR:-$committed}
[ "${kdir%/}" = "$committed" ] ||
	{ echo "RAWSTORE_KERNEL_DIR=$kdir is not the committed series' kernel $committed"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

[ -f "$kdir/sha256sums" ] || { echo "$kdir has no sha256sums"; exit 1; }

# vm/run on a directory; the rest of the arguments are the guest command.
boot() { # boot DIR -> sets rc and err
	local d=$1
	err=$("$repo/vm/run" --kernel "$d" --timeout 120 -- true 2>&1 >/dev/null)
	rc=$?
}
refused() { # refused WHAT PATTERN
	echo "$1: exit $rc; stderr: $(echo "$err" | head -3)"
	if [ "$rc" != 125 ] || [[ $err != *"$2"* ]]; then
		echo "FAIL: $1 was not refused with '$2'"
		fail=1
	fi
}

cp -a "$kdir" "$tmp/good"
boot "$tmp/good"
echo "untouched copy: exit $rc"
[ "$rc" = 0 ] || { echo "FAIL: the untouched copy did not boot: $err"; fail=1; }

cp -a "$kdir" "$tmp/flip"
size=$(stat -c %s "$tmp/flip/bzImage")
off=$((size / 2))
byte=$(od -An -tu1 -j "$off" -N1 "$tmp/flip/bzImage" | tr -d ' ')
printf "\\$(printf '%03o' $(((byte + 1) % 256)))" |
	dd of="$tmp/flip/bzImage" bs=1 seek="$off" conv=notrunc 2> /dev/null
cmp -s "$kdir/bzImage" "$tmp/flip/bzImage" && { echo "could not change the copy"; exit 1; }
boot "$tmp/flip"
refused "bzImage with one byte changed" "does not match the sha256sums"
[[ $err == *"bzImage: FAILED"* ]] || { echo "FAIL: the refusal does not name bzImage"; fail=1; }

cp -a "$kdir" "$tmp/mod"
m=$(cd "$tmp/mod" && find modules -type f -name '*.ko' | head -1)
[ -n "$m" ] || { echo "no module file in $kdir"; exit 1; }
echo x >> "$tmp/mod/$m"
boot "$tmp/mod"
refused "module $m changed" "does not match the sha256sums"

cp -a "$kdir" "$tmp/nosum"
rm "$tmp/nosum/sha256sums"
boot "$tmp/nosum"
refused "no sha256sums" "has no sha256sums"

# kernel/build refuses a changed cache entry under its own key.
key=${kdir##*/}
mkdir -p "$tmp/cache/kernel"
cp -a "$tmp/flip" "$tmp/cache/kernel/$key"
err=$(env -u RAWSTORE_SERIES RAWSTORE_CACHE="$tmp/cache" "$repo/kernel/build" --print 2>&1 >/dev/null)
rc=$?
echo "kernel/build over the changed cache entry: exit $rc; stderr: $err"
if [ "$rc" = 0 ] || [[ $err != *"does not match the sha256sums"* ]]; then
	echo "FAIL: kernel/build used a cache entry that does not match its sha256sums"
	fail=1
fi
exit $fail
