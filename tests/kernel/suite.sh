#!/bin/sh
# suite.sh: the in-guest kernel test suite (runs inside vm/run, busybox sh).
#
# Usage: suite.sh [--expect-key=KEY] [CASE...]
# Sources every k_*.sh case file next to it (or the ones named on the command
# line, e.g. "suite.sh k_seed"); each case file calls kt_run for its tests.
# Prints one line per test for the host to count:
#   RESULT <name> PASS|FAIL|SKIP [reason]
# --expect-key=KEY (tests/run passes the key of the committed series):
# `uname -v` must start with "#KEY", else RESULT kernel-key FAIL.
# After every case file, RESULT scratch-clean/<case> checks that nothing
# holds /dev/disk/scratch (mounts, dm or loop devices on it) and that no
# loop or dm device is left over. Kernel errors and warnings logged during
# a test fail that test; those logged elsewhere fail "kernel-warnings".
# Disks vm/run attaches for this suite (see tests/kernel/run):
#   /dev/disk/vblk    virtio-blk, 512-byte sectors, discard + write-zeroes
#   /dev/disk/vblk4k  virtio-blk, 4096-byte sectors, discard + write-zeroes
#   /dev/disk/vnowz   virtio-blk, 512-byte sectors, no discard, no write-zeroes
#   /dev/disk/vwzonly virtio-blk, 512-byte sectors, write-zeroes, no discard
#   /dev/disk/scratch virtio-blk, large, for filesystems / loop / dm-thin
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$here:$PATH"

# What the kernel must not log: warnings, oopses, file system errors, block
# layer I/O errors ("I/O error, dev ...", "critical space allocation error,
# dev ..." and the older blk_update_request form), hung tasks.
KT_DMESG_BAD='WARNING:|BUG:|Oops|general protection|Call Trace|EXT4-fs error|XFS .*(error|Corruption)|I/O error| error, dev |blk_update_request|blocked for more than|hung_task'
# kt_allow_dmesg ERE: the next kt_run may log lines matching ERE (and only
# those) among the lines above, e.g. a test that provokes exactly one I/O
# error on purpose. Cleared by kt_run.
kt_dmesg_allow=
kt_allow_dmesg() { kt_dmesg_allow=$1; }

# kt_run NAME CMD [ARGS...]: run one test program (killed after $KT_TIMEOUT
# seconds, default 600), indent its output, map exit 0/77/other to
# PASS/SKIP/FAIL. Kernel messages matching KT_DMESG_BAD logged while it ran
# (and not allowed by kt_allow_dmesg) turn the result into FAIL.
kt_run() {
	name=$1
	shift
	echo "=== $name: $*"
	out=/tmp/kt-out.$$
	dmesg -c >> /tmp/kt-dmesg-outside
	timeout -s KILL "${KT_TIMEOUT:-600}" "$@" > "$out" 2>&1
	rc=$?
	sed 's/^/    /' "$out"
	dmesg -c > /tmp/kt-dmesg-test
	grep -E "$KT_DMESG_BAD" /tmp/kt-dmesg-test > /tmp/kt-dmesg-bad
	if [ -n "$kt_dmesg_allow" ] && [ -s /tmp/kt-dmesg-bad ]; then
		grep -vE "$kt_dmesg_allow" /tmp/kt-dmesg-bad > /tmp/kt-dmesg-bad2
		mv /tmp/kt-dmesg-bad2 /tmp/kt-dmesg-bad
	fi
	kt_dmesg_allow=
	if [ -s /tmp/kt-dmesg-bad ]; then
		sed 's/^/    dmesg: /' /tmp/kt-dmesg-bad
		kt_result "$name" FAIL "(the kernel logged: $(head -1 /tmp/kt-dmesg-bad | cut -c1-120))"
		rm -f "$out"
		return
	fi
	case $rc in
	0) kt_result "$name" PASS ;;
	77) kt_result "$name" SKIP "$(sed -n 's/^SKIP: //p' "$out" | head -1)" ;;
	137) kt_result "$name" FAIL "(killed after ${KT_TIMEOUT:-600} s)" ;;
	*) kt_result "$name" FAIL "(exit $rc)" ;;
	esac
	rm -f "$out"
}

# kt_result NAME PASS|FAIL|SKIP [reason]: report a test decided in shell.
# The suite exits 1 if any result failed, 0 otherwise.
kt_nfail=0
kt_result() {
	kt_rname=$1 kt_res=$2
	shift 2
	[ "$kt_res" = PASS ] || [ "$kt_res" = SKIP ] || kt_nfail=$((kt_nfail + 1))
	echo "RESULT $kt_rname $kt_res${*:+ $*}"
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

# kt_scratch_clean CASE: nothing holds /dev/disk/scratch and no loop or dm
# device is left over after a case file.
kt_scratch_clean() {
	sd=$(readlink -f /dev/disk/scratch)
	sd=${sd##*/}
	left=
	grep -q "^/dev/$sd " /proc/mounts && left="$left mounted"
	for h in /sys/block/$sd/holders/*; do
		[ -e "$h" ] && left="$left held-by:${h##*/}"
	done
	for l in /sys/block/loop*/loop/backing_file; do
		[ -e "$l" ] && left="$left loop:$(cat "$l")"
	done
	[ -n "$(dmsetup ls 2> /dev/null | grep -v 'No devices found')" ] &&
		left="$left dm:$(dmsetup ls | awk '{ printf "%s,", $1 }')"
	if [ -z "$left" ]; then
		kt_result "scratch-clean/$1" PASS
	else
		kt_result "scratch-clean/$1" FAIL "left behind:$left"
	fi
}

dmesg -c > /dev/null
: > /tmp/kt-dmesg-outside
expect_key=
case ${1:-} in --expect-key=*) expect_key=${1#--expect-key=}; shift ;; esac
if [ -n "$expect_key" ]; then
	v=$(uname -v)
	case $v in
	"#$expect_key "*) kt_result kernel-key PASS ;;
	*) kt_result kernel-key FAIL "uname -v is '$v', want '#$expect_key ...' (the committed series)" ;;
	esac
fi
cases=$*
[ -n "$cases" ] || cases=$(cd "$here" && ls k_*.sh | sed 's/\.sh$//')
for c in $cases; do
	echo "##### case file $c"
	. "$here/$c.sh"
	kt_scratch_clean "$c"
done

# Kernel warnings logged outside any test (case-file set-up and clean-up).
dmesg -c >> /tmp/kt-dmesg-outside
if grep -E "$KT_DMESG_BAD" /tmp/kt-dmesg-outside > /tmp/kt-dmesg; then
	sed 's/^/    /' /tmp/kt-dmesg
	kt_result kernel-warnings FAIL "the kernel logged warnings or errors outside the tests"
else
	kt_result kernel-warnings PASS
fi
[ "$kt_nfail" = 0 ]
