#!/usr/bin/env bash
# A host I/O error on a disk's backing file never reaches the guest as an
# error of its disk: vm/run pauses the guest, names the disk and the host's
# reason, and resumes it (the request is retried); a host that keeps
# failing ends the run (exit 125) with the reason named.
# The backing files sit on a small tmpfs, so the host's writes fail with
# ENOSPC once it is full: first grown while the guest waits (the retried
# writes land, and the guest reads back what it wrote), then left full.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
kdir=${RAWSTORE_KERNEL_DIR:-$("$repo/kernel/build" --print)}
mnt=$(mktemp -d /tmp/hostio.XXXXXX) errf=$(mktemp /tmp/hostio-err.XXXXXX)
cleanup() { umount "$mnt" 2> /dev/null; rmdir "$mnt"; rm -f "$errf"; }
trap cleanup EXIT
mount -t tmpfs -o size=8m tmpfs "$mnt" || { echo "cannot mount a tmpfs"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }

# The guest writes 24 MiB of a pattern (not zeros: QEMU turns zero writes
# into holes) with O_DIRECT and compares the disk with it.
guest='yes rawstore-host-io | head -c 25165824 > /tmp/p &&
dd if=/tmp/p of=/dev/disk/x bs=1M oflag=direct status=none &&
cmp -n 25165824 /tmp/p /dev/disk/x && echo WROTE-AND-READ-BACK'

# 1. Transient: once the tmpfs is full, let the guest fail a few times,
# then grow it.
(
	for _ in $(seq 600); do
		[ "$(df --output=avail "$mnt" | tail -1)" -lt 64 ] && break
		sleep 0.2
	done
	sleep 3
	mount -o remount,size=64m "$mnt"
) &
grower=$!
out=$(VMRUN_HOST_IO_RETRIES=1000 "$repo/vm/run" --kernel "$kdir" --timeout 300 \
	--disk "x:32M:file=$mnt/x.img" \
	-- sh -c "$guest" 2> "$errf")
rc=$?
wait "$grower"
err=$(cat "$errf")
echo "transient: exit $rc; stdout: $out"
echo "stderr: $err"
[ "$rc" = 0 ] || fail "the guest did not finish after the host recovered (exit $rc)"
[[ $out == *WROTE-AND-READ-BACK* ]] || fail "the guest did not read back what it wrote"
[[ $err == *"host I/O error 1 on disk x: write failed: No space left on device"* ]] ||
	fail "the host error was not named"
[[ $err == *"requests retried"* ]] || fail "the retry was not said"

# 2. Persistent: the tmpfs stays full; past 3 errors the run ends.
rm -f "$mnt/x.img"
mount -o remount,size=8m "$mnt"
out=$(VMRUN_HOST_IO_RETRIES=3 "$repo/vm/run" --kernel "$kdir" --timeout 300 \
	--disk "x:32M:file=$mnt/x.img" -- sh -c "$guest" 2> "$errf")
rc=$?
err=$(cat "$errf")
echo "persistent: exit $rc; stdout: $out"
echo "stderr: $err"
[ "$rc" = 125 ] || fail "a host that keeps failing did not end the run with 125 (exit $rc)"
# Several of the guest's requests can fail in one pause (one BLOCK_IO_ERROR
# each before QEMU's STOP), so the watcher gives up at the first pause after
# the third error, having counted 4 or more: the count it gives must be the
# last error it named.
[[ $err =~ "gave up after "([0-9]+)" host I/O errors" ]] || fail "giving up was not said"
n=${BASH_REMATCH[1]}
[ "$n" -ge 4 ] || fail "gave up after $n errors, not after more than 3"
[[ $err == *"host I/O error $n on disk x: write failed: No space left on device"* ]] ||
	fail "error $n, the last, was not named"
[[ $err != *"host I/O error $((n + 1)) on disk"* ]] || fail "errors went on after giving up at $n"
[[ $err == *"the host kept failing the guest's disks"* ]] || fail "no error line"
[[ $out != *WROTE-AND-READ-BACK* ]] || fail "the guest finished although its writes never landed"
echo PASS
