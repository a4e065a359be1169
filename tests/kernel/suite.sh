#!/bin/sh
# suite.sh: the in-guest kernel test suite (runs inside vm/run, busybox sh).
#
# Sources every k_*.sh case file next to it (or the ones named on the command
# line, e.g. "suite.sh k_seed"); each case file calls kt_run for its tests.
# Prints one line per test for the host to count:
#   RESULT <name> PASS|FAIL|SKIP [reason]
# Disks vm/run attaches for this suite (see tests/kernel/run):
#   /dev/disk/vblk    virtio-blk, 512-byte sectors, discard + write-zeroes
#   /dev/disk/vblk4k  virtio-blk, 4096-byte sectors, discard + write-zeroes
#   /dev/disk/vnowz   virtio-blk, 512-byte sectors, no discard, no write-zeroes
#   /dev/disk/scratch virtio-blk, large, for filesystems / loop / dm-thin
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$here:$PATH"

# kt_run NAME CMD [ARGS...]: run one test program (killed after $KT_TIMEOUT
# seconds, default 600), indent its output, map exit 0/77/other to
# PASS/SKIP/FAIL.
kt_run() {
	name=$1
	shift
	echo "=== $name: $*"
	out=/tmp/kt-out.$$
	timeout -s KILL "${KT_TIMEOUT:-600}" "$@" > "$out" 2>&1
	rc=$?
	sed 's/^/    /' "$out"
	case $rc in
	0) echo "RESULT $name PASS" ;;
	77) echo "RESULT $name SKIP $(sed -n 's/^SKIP: //p' "$out" | head -1)" ;;
	137) echo "RESULT $name FAIL (killed after ${KT_TIMEOUT:-600} s)" ;;
	*) echo "RESULT $name FAIL (exit $rc)" ;;
	esac
	rm -f "$out"
}

# kt_result NAME PASS|FAIL|SKIP [reason]: report a test decided in shell.
kt_result() {
	name=$1 res=$2
	shift 2
	echo "RESULT $name $res $*"
}

# The scsi_debug device's /dev node after `modprobe scsi_debug ...`.
scsi_debug_dev() {
	for i in 1 2 3 4 5 6 7 8 9 10; do
		for b in /sys/bus/pseudo/drivers/scsi_debug/adapter*/host*/target*/*/block/*; do
			[ -e "$b" ] && { echo "/dev/${b##*/}"; return 0; }
		done
		sleep 0.5
	done
	return 1
}

dmesg -c > /dev/null
cases=$*
[ -n "$cases" ] || cases=$(cd "$here" && ls k_*.sh | sed 's/\.sh$//')
for c in $cases; do
	echo "##### case file $c"
	. "$here/$c.sh"
done

# New kernel warnings during the suite fail it (as liburing's runner does).
if dmesg | grep -E 'WARNING:|BUG:|Oops|general protection|Call Trace' > /tmp/kt-dmesg; then
	sed 's/^/    /' /tmp/kt-dmesg
	kt_result kernel-warnings FAIL "the kernel logged warnings during the suite"
else
	kt_result kernel-warnings PASS
fi
