# k_provision.sh: the provision operation ("ensure space exists", fallocate
# mode 0 / KEEP_SIZE on block devices) from kernel/patches 0005-0008:
# unsupported devices (virtio-blk, scsi_debug, dm-linear over virtio-blk)
# keep EOPNOTSUPP and a zero queue/provision_max_bytes; loop devices over
# sparse files (512 and 4096-byte sectors, and dm-linear over loop),
# loop on a nearly full file system (ENOSPC); dm-thin (used-block counts,
# partial blocks, snapshots, ENOSPC in error and queue mode, pools without
# block zeroing refuse it, read-only and fail pool modes, requests larger
# than provision_max_bytes (entering dm as bios of at most 256 blocks), a
# provision waiting on a full pool (readers not
# stalled, SIGKILL, completion once the pool grows), races with writes and
# discards, an external origin, a pool out of metadata space); accounting
# (diskstats discard columns, blkcg io.stat discard bytes, rwbs 'P' in
# block traces, blk-throttle charges it like a discard); a
# misaligned provision on a loop over a 4Kn device (EINVAL), and a
# misaligned discard there still EIO (a driver's -EINVAL keeps its old
# mapping: the errno regression check for 0005); md raid0 over
# loop devices (limit 0); zero-length provision bios (built by the test
# module t_provbio) refused in submit_bio_noacct() before any driver.
#
# Carves /dev/disk/scratch into dm-linear slices (MiB offsets below) and
# removes everything it set up at the end, so later case files get the
# scratch disk back unused.

pv_scratch=/dev/disk/scratch
# util-linux losetup (--show, --sector-size), not busybox's applet.
pv_losetup=/usr/sbin/losetup
[ -x $pv_losetup ] || pv_losetup=/sbin/losetup

# pv_slice NAME START_MIB SIZE_MIB: a dm-linear slice of the scratch disk.
pv_slice() {
	dmsetup create "$1" --table "0 $(($3 * 2048)) linear $pv_scratch $(($2 * 2048))"
}

# (pv_block=SECTORS sets the pool's block size, default 128: 64 KiB.)
# pv_pool NAME META_MIB DATA_MIB DATA_SIZE_MIB THIN_MIB [FEATURES...]: a pool
# with 64 KiB blocks and block zeroing, and one thin device NAME-thin (id 1).
pv_pool() {
	name=$1 meta=$2 data=$3 dsize=$4 tsize=$5
	shift 5
	pv_slice "$name-meta" "$meta" 4 && pv_slice "$name-data" "$data" "$dsize" &&
		dd if=/dev/zero of="/dev/mapper/$name-meta" bs=4096 count=1 conv=fsync 2> /dev/null &&
		dmsetup create "$name" --table "0 $((dsize * 2048)) thin-pool /dev/mapper/$name-meta \
/dev/mapper/$name-data ${pv_block:-128} 0 $# $*" &&
		dmsetup message "$name" 0 "create_thin 1" &&
		dmsetup create "$name-thin" --table "0 $((tsize * 2048)) thin /dev/mapper/$name 1"
}

# pv_devno DEV [SEP]: DEV's major and minor numbers in decimal, joined by
# SEP (default ':', as in /sys/dev/block and cgroup io.max; ',' as in block
# traces).
pv_devno() {
	stat -L -c '%t %T' "$1" | while read -r ma mi; do printf "%d${2:-:}%d" "0x$ma" "0x$mi"; done
}

# pv_trace_rwbs DEV: a provision of [3 MiB, +1 MiB) on DEV shows in the
# block:block_bio_queue trace event with rwbs "P".
pv_trace_rwbs() {
	tr=/sys/kernel/tracing
	[ -e $tr/events ] || mount -t tracefs nodev $tr 2> /dev/null
	if [ ! -e $tr/events/block/block_bio_queue/enable ]; then
		kt_result provision/trace-rwbs FAIL "no block:block_bio_queue event in $tr (tracefs)"
		return
	fi
	echo 0 > $tr/tracing_on
	: > $tr/trace
	echo 1 > $tr/events/block/block_bio_queue/enable
	echo 1 > $tr/tracing_on
	r=$(/usr/sbin/fallocate -o 3M -l 1M "$1" 2>&1) && r=ok
	echo 0 > $tr/tracing_on
	echo 0 > $tr/events/block/block_bio_queue/enable
	mm=$(pv_devno "$1" ,)
	line=$(grep "block_bio_queue: $mm " $tr/trace | grep " 6144 + 2048 ")
	: > $tr/trace
	echo "    # fallocate: $r; trace: $line"
	case $r/$line in
	"ok/"*"block_bio_queue: $mm P 6144 + 2048 "*) kt_result provision/trace-rwbs PASS ;;
	*) kt_result provision/trace-rwbs FAIL "want a block_bio_queue line '$mm P 6144 + 2048'" ;;
	esac
}

# pv_trace_split DEV: a provision of 2.5 x provision_max_bytes from 68 KiB
# on a dm-thin DEV enters it as 3 bios (block:block_bio_queue, rwbs "P") of
# at most provision_max_bytes = 256 blocks each; dm core splits each at the
# block (provision_granularity), so no provision has more than 256 dm_io.
pv_trace_split() {
	tr=/sys/kernel/tracing
	[ -e $tr/events ] || mount -t tracefs nodev $tr 2> /dev/null
	max=$(cat /sys/dev/block/$(pv_devno "$1")/queue/provision_max_bytes)
	len=$((max * 5 / 2))
	echo 0 > $tr/tracing_on
	: > $tr/trace
	echo 1 > $tr/events/block/block_bio_queue/enable
	echo 1 > $tr/tracing_on
	r=$(/usr/sbin/fallocate -o 68K -l $len "$1" 2>&1) && r=ok
	echo 0 > $tr/tracing_on
	echo 0 > $tr/events/block/block_bio_queue/enable
	mm=$(pv_devno "$1" ,)
	sizes=$(grep "block_bio_queue: $mm P " $tr/trace | sed 's/.* + \([0-9]*\) .*/\1/' | tr '\n' ' ')
	: > $tr/trace
	n=0 sum=0 big=0
	for x in $sizes; do
		n=$((n + 1)) sum=$((sum + x))
		[ $((x * 512)) -le "$max" ] || big=$((big + 1))
	done
	echo "    # provision of $len bytes (provision_max_bytes $max): $r; bios (sectors): $sizes"
	if [ "$r" = ok ] && [ "$max" = $((256 * 65536)) ] && [ $n = 3 ] && [ $big = 0 ] &&
		[ $((sum * 512)) = "$len" ]; then
		kt_result provision/thin-split-bound PASS
	else
		kt_result provision/thin-split-bound FAIL \
			"want 3 bios of <= 256 blocks covering $len bytes"
	fi
}

# pv_discard_ios DEV: discard I/Os completed on DEV (diskstats field 12,
# where provision is accounted).
pv_discard_ios() {
	awk '{ print $12 }' "/sys/dev/block/$(pv_devno "$1")/stat"
}

# pv_provbio DEV SECTOR SECTORS: submit one provision bio to DEV through the
# test module t_provbio (tests/kernel/module); prints the bio's status as a
# negative errno, 0 on success.
pv_provbio() {
	if modprobe t_provbio dev="$1" sector="$2" sectors="$3" 2> /tmp/kt-modprobe; then
		cat /sys/module/t_provbio/parameters/status
		rmmod t_provbio
	else
		echo "modprobe t_provbio failed: $(cat /tmp/kt-modprobe)"
	fi
}

# pv_zero_bio NAME DEV ERRNO [SECTORS]: a zero-length provision bio to DEV
# completes with ERRNO without reaching the driver (DEV's discard I/O count
# stays put: submit_bio_noacct() refused it); the control, a provision bio
# of SECTORS at sector 0, succeeds and is counted once.
pv_zero_bio() {
	name=$1 dev=$2 want=$3 okn=${4:-}
	d0=$(pv_discard_ios "$dev")
	r0=$(pv_provbio "$dev" 0 0)
	d1=$(pv_discard_ios "$dev")
	r1=0 d2=$((d1 + 1))
	if [ -n "$okn" ]; then
		r1=$(pv_provbio "$dev" 0 "$okn")
		d2=$(pv_discard_ios "$dev")
	fi
	echo "    # $dev: zero-length bio: $r0, discard I/Os $d0 -> $d1;" \
		"${okn:-no} control: $r1, discard I/Os -> $d2"
	if [ "$r0" = "$want" ] && [ "$d1" = "$d0" ] && [ "$r1" = 0 ] && [ "$d2" = $((d1 + 1)) ]; then
		kt_result "$name" PASS
	else
		kt_result "$name" FAIL "want the zero-length bio $want and not counted," \
			"the control 0 and counted once"
	fi
}

# pv_throttle DEV: in a cgroup limited to 1 MiB/s of writes on DEV, a 2 MiB
# direct write takes >= 1 s (the limit works) while a 24 MiB provision takes
# < 3 s: blk-throttle charges provision like a discard, not by its size.
pv_throttle() {
	cg=/sys/fs/cgroup
	grep -q " $cg cgroup2 " /proc/mounts || mount -t cgroup2 none $cg 2> /dev/null
	mm=$(pv_devno "$1")
	if ! echo +io > $cg/cgroup.subtree_control || ! mkdir -p $cg/prov-thr ||
		! echo "$mm wbps=1048576" > $cg/prov-thr/io.max; then
		kt_result provision/throttle FAIL "cannot set io.max in a cgroup2 group on $mm"
		rmdir $cg/prov-thr 2> /dev/null
		return
	fi
	out=$(sh -c "echo \$\$ > $cg/prov-thr/cgroup.procs
		t0=\$(cut -d' ' -f1 /proc/uptime)
		dd if=/dev/zero of=$1 bs=1M count=2 seek=4 oflag=direct 2> /dev/null || echo dd-failed
		t1=\$(cut -d' ' -f1 /proc/uptime)
		/usr/sbin/fallocate -o 8M -l 24M $1 || echo fallocate-failed
		t2=\$(cut -d' ' -f1 /proc/uptime)
		echo \$t0 \$t1 \$t2")
	iostat=$(grep "^$mm " $cg/prov-thr/io.stat)
	rmdir $cg/prov-thr
	# blkcg io.stat counts the provision as discard bytes, not written ones.
	echo "    # io.stat of the group: $iostat"
	wb=$(echo "$iostat" | sed -n 's/.* wbytes=\([0-9]*\).*/\1/p')
	db=$(echo "$iostat" | sed -n 's/.* dbytes=\([0-9]*\).*/\1/p')
	if [ -n "$wb" ] && [ -n "$db" ] && [ "$wb" -ge 2097152 ] && [ "$wb" -lt 3145728 ] &&
		[ "$db" -ge 25165824 ]; then
		kt_result provision/blkcg-io-stat PASS
	else
		kt_result provision/blkcg-io-stat FAIL \
			"want wbytes in [2 MiB, 3 MiB) (the write only) and dbytes >= 24 MiB (the provision)"
	fi
	echo "    # in the throttled group: $out"
	set -- $out
	if [ $# = 3 ] &&
		awk -v a="$1" -v b="$2" -v c="$3" 'BEGIN { exit !(b - a >= 1 && c - b < 3) }'; then
		kt_result provision/throttle PASS
	else
		kt_result provision/throttle FAIL "want the 2 MiB write >= 1 s and the 24 MiB provision < 3 s"
	fi
}

pv_cleanup() {
	[ -e /dev/md9 ] && mdadm --stop /dev/md9 > /dev/null 2>&1
	[ -e /dev/mapper/prov-lin-loop ] && dmsetup remove prov-lin-loop
	[ -e /dev/mapper/prov-lin-noext ] && dmsetup remove prov-lin-noext
	# Loops over loops first, then loops over files.
	for l in $($pv_losetup -a 2> /dev/null | sed -n 's,^\(/dev/loop[0-9]*\):.*(/dev/loop.*,\1,p'); do
		$pv_losetup -d "$l"
	done
	for l in $($pv_losetup -a 2> /dev/null | sed -n 's,^\(/dev/loop[0-9]*\):.*/mnt/prov-.*,\1,p'); do
		$pv_losetup -d "$l"
	done
	for m in /mnt/prov-fs /mnt/prov-small /mnt/prov-noext; do
		grep -q " $m " /proc/mounts && umount "$m"
	done
	for d in prov-pa-s11 prov-pa-o10 prov-pa-thin prov-pa prov-pb-thin prov-pb prov-pc-thin \
		prov-pc prov-pd-thin prov-pd prov-fs prov-small prov-pa-meta prov-pa-data \
		prov-pb-meta prov-pb-data prov-pc-meta prov-pc-data prov-pd-meta prov-pd-data \
		prov-pe-thin prov-pe prov-pe-meta prov-pe-data prov-pf-thin prov-pf prov-pf-meta \
		prov-pf-data prov-pg-thin prov-pg prov-pg-meta prov-pg-data prov-noext prov-virt \
		prov-ph-thin prov-ph prov-ph-meta prov-ph-data prov-pi-thin prov-pi prov-pi-meta \
		prov-pi-data prov-pj-thin prov-pj prov-pj-meta prov-pj-data prov-pk-thin prov-pk \
		prov-pk-meta prov-pk-data prov-eo prov-pl-thin prov-pl prov-pl-meta prov-pl-data \
		prov-pm-thin prov-pm prov-pm-meta prov-pm-data prov-po-thin prov-po prov-po-meta \
		prov-po-data prov-pq-thin prov-pq prov-pq-meta prov-pq-data prov-pr-lin prov-pr-thin \
		prov-pr prov-pr-meta prov-pr-data prov-ps-thin prov-ps prov-ps-meta prov-ps-data; do
		[ -e "/dev/mapper/$d" ] && dmsetup remove "$d"
	done
	return 0
}

pv_cleanup

# --- devices without provision: unchanged 6.1 behaviour ---
kt_run provision/none-virtio-512 t_provision none /dev/disk/vblk
kt_run provision/none-virtio-4096 t_provision none /dev/disk/vblk4k
kt_run provision/none-virtio-nowz t_provision none /dev/disk/vnowz
# A device without provision refuses even an empty one as unsupported.
pv_zero_bio provision/zero-length-bio-virtio /dev/disk/vblk -95
if modprobe scsi_debug dev_size_mb=64 lbpu=1 lbpws=1 lbprz=1 2> /tmp/kt-modprobe; then
	if dev=$(scsi_debug_dev); then
		kt_run provision/none-scsi_debug t_provision none "$dev"
	else
		kt_result provision/none-scsi_debug FAIL "no scsi_debug disk appeared"
	fi
	rmmod scsi_debug
else
	kt_result provision/none-scsi_debug FAIL "modprobe scsi_debug: $(cat /tmp/kt-modprobe)"
fi
if pv_slice prov-virt 0 64; then
	kt_run provision/none-dm-linear t_provision none /dev/mapper/prov-virt
	dmsetup remove prov-virt
else
	kt_result provision/none-dm-linear FAIL "dmsetup create prov-virt failed"
fi

# --- loop over sparse files on ext4 ---
if pv_slice prov-fs 0 256 && mkfs.ext4 -q -F -b 4096 /dev/mapper/prov-fs &&
	mkdir -p /mnt/prov-fs && mount /dev/mapper/prov-fs /mnt/prov-fs; then
	for v in 512 4096; do
		f=/mnt/prov-fs/loop-$v.img
		truncate -s 32M "$f"
		if l=$($pv_losetup -f --show --sector-size $v "$f"); then
			kt_run provision/loop-$v t_provision loop "$l" "$f"
			$pv_losetup -d "$l"
			lim=$(cat "/sys/block/${l#/dev/}/queue/provision_max_bytes" 2> /dev/null)
			if [ -z "$lim" ]; then
				kt_result provision/loop-$v-detached FAIL "no queue/provision_max_bytes (kernel patch 0003 missing?)"
			elif [ "$lim" = 0 ]; then
				kt_result provision/loop-$v-detached PASS
			else
				kt_result provision/loop-$v-detached FAIL "provision_max_bytes $lim after losetup -d"
			fi
		else
			kt_result provision/loop-$v FAIL "losetup --sector-size $v failed"
		fi
	done
	# Through a partition: an MBR with partition 1 at sectors 2048..65535.
	f=/mnt/prov-fs/part.img
	truncate -s 32M "$f"
	printf '\000\040\041\000\203\000\000\000\000\010\000\000\000\370\000\000' |
		dd of="$f" bs=1 seek=446 conv=notrunc 2> /dev/null
	printf '\125\252' | dd of="$f" bs=1 seek=510 conv=notrunc 2> /dev/null
	if l=$($pv_losetup -f --show -P "$f"); then
		for i in 1 2 3 4 5 6 7 8 9 10; do [ -b "${l}p1" ] && break; sleep 0.5; done
		if [ -b "${l}p1" ]; then
			kt_run provision/loop-partition t_provision partition "${l}p1" "$f" 1048576
		else
			kt_result provision/loop-partition FAIL "no ${l}p1 after losetup -P"
		fi
		$pv_losetup -d "$l"
	else
		kt_result provision/loop-partition FAIL "losetup -P failed"
	fi
	f=/mnt/prov-fs/linear.img
	truncate -s 32M "$f"
	if l=$($pv_losetup -f --show "$f") &&
		dmsetup create prov-lin-loop --table "0 $((32 * 2048)) linear $l 0"; then
		kt_run provision/dm-linear-over-loop t_provision loop /dev/mapper/prov-lin-loop "$f"
		dmsetup remove prov-lin-loop
		$pv_losetup -d "$l"
	else
		kt_result provision/dm-linear-over-loop FAIL "losetup/dmsetup failed"
	fi
	# Accounting: diskstats, block trace rwbs, blk-throttle.
	f=/mnt/prov-fs/stats.img
	truncate -s 32M "$f"
	if l=$($pv_losetup -f --show "$f"); then
		kt_run provision/accounting-loop t_provision stats "$l"
		pv_zero_bio provision/zero-length-bio-loop "$l" -22 8
		pv_trace_rwbs "$l"
		pv_throttle "$l"
		$pv_losetup -d "$l"
	else
		kt_result provision/accounting-loop FAIL "losetup failed"
	fi
	# A loop with 512-byte sectors over a 4Kn block device (a loop with
	# 4096-byte sectors over a file): misaligned provision is EINVAL.
	f=/mnt/prov-fs/lower4k.img
	truncate -s 32M "$f"
	if lo=$($pv_losetup -f --show --sector-size 4096 "$f"); then
		if up=$($pv_losetup -f --show "$lo"); then
			kt_run provision/loop-over-4kn-misaligned t_provision misaligned "$up" "$f"
			# The discard fails as an I/O error, which the kernel logs.
			kt_allow_dmesg 'I/O error, dev loop[0-9]+, sector 2049 op 0x3:.DISCARD.'
			kt_run provision/errno-einval-is-eio t_provision errno "$up" "$f"
			$pv_losetup -d "$up"
		else
			kt_result provision/loop-over-4kn-misaligned FAIL "losetup over $lo failed"
		fi
		$pv_losetup -d "$lo"
	else
		kt_result provision/loop-over-4kn-misaligned FAIL "losetup --sector-size 4096 failed"
	fi
	# The backing file system frozen: provision and discard wait for the thaw.
	f=/mnt/prov-fs/frozen.img
	truncate -s 32M "$f"
	if l=$($pv_losetup -f --show "$f"); then
		kt_run provision/loop-frozen-backing t_provision frozen "$l" "$f" /mnt/prov-fs
		$pv_losetup -d "$l"
	else
		kt_result provision/loop-frozen-backing FAIL "losetup failed"
	fi
	# An immutable backing file: provision allocates nothing (the request
	# fails as an I/O error, which the kernel logs).
	f=/mnt/prov-fs/immutable.img
	truncate -s 32M "$f"
	if l=$($pv_losetup -f --show "$f"); then
		kt_allow_dmesg 'I/O error|blk_update_request| error, dev '
		kt_run provision/loop-immutable-backing t_provision immutable "$l" "$f"
		$pv_losetup -d "$l"
	else
		kt_result provision/loop-immutable-backing FAIL "losetup failed"
	fi
	# An active swap file as the backing file: provision fails as
	# fallocate() of the file does (ETXTBSY; the request fails as an I/O
	# error, which the kernel logs), and succeeds after swapoff.
	f=/mnt/prov-fs/swap.img
	if dd if=/dev/zero of="$f" bs=1M count=16 2> /dev/null && chmod 600 "$f" &&
		l=$($pv_losetup -f --show "$f"); then
		kt_allow_dmesg 'I/O error|blk_update_request| error, dev '
		kt_run provision/loop-swapfile-backing t_provision swapfile "$l" "$f"
		swapoff "$f" 2> /dev/null
		$pv_losetup -d "$l"
	else
		kt_result provision/loop-swapfile-backing FAIL "dd or losetup failed"
	fi
	# md raid0 over two loop devices: md leaves the limit at 0.
	f1=/mnt/prov-fs/md1.img f2=/mnt/prov-fs/md2.img
	truncate -s 32M "$f1" "$f2"
	if ! command -v mdadm > /dev/null; then
		kt_result provision/md-raid0-over-loop FAIL "mdadm is not in the guest (vm/mkinitramfs)"
	elif l1=$($pv_losetup -f --show "$f1") && l2=$($pv_losetup -f --show "$f2") &&
		mdadm --create /dev/md9 --run --level=0 --raid-devices=2 --metadata=1.2 \
			--chunk=64 "$l1" "$l2" > /tmp/kt-mdadm 2>&1; then
		echo "    # loop limits $(cat /sys/block/${l1#/dev/}/queue/provision_max_bytes)," \
			"$(cat /sys/block/${l2#/dev/}/queue/provision_max_bytes)"
		kt_run provision/md-raid0-over-loop t_provision none /dev/md9
		mdadm --stop /dev/md9 > /dev/null 2>&1
	else
		sed 's/^/    /' /tmp/kt-mdadm 2> /dev/null
		kt_result provision/md-raid0-over-loop FAIL "losetup or mdadm --create failed"
	fi
	[ -n "${l2:-}" ] && $pv_losetup -d "$l2"
	[ -n "${l1:-}" ] && $pv_losetup -d "$l1"
	umount /mnt/prov-fs
else
	kt_result provision/loop FAIL "could not make ext4 on a slice of $pv_scratch"
fi

# --- loop over a file on a nearly full file system: ENOSPC ---
if pv_slice prov-small 256 64 && mkfs.ext4 -q -F -b 4096 -m 0 /dev/mapper/prov-small &&
	mkdir -p /mnt/prov-small && mount /dev/mapper/prov-small /mnt/prov-small; then
	f=/mnt/prov-small/file.img
	truncate -s 16M "$f"
	avail=$(df -P -k /mnt/prov-small | awk 'NR == 2 { print $4 }')
	fallocate -l $(((avail - 4096) * 1024)) /mnt/prov-small/filler
	echo "    # prov-small: $(df -P -k /mnt/prov-small | awk 'NR == 2 { print $4 }') KiB free after the filler"
	if l=$($pv_losetup -f --show "$f"); then
		kt_run provision/loop-enospc t_provision enospc "$l" "$f" /mnt/prov-small/filler
		$pv_losetup -d "$l"
	else
		kt_result provision/loop-enospc FAIL "losetup failed"
	fi
	umount /mnt/prov-small
	if e2fsck -fn /dev/mapper/prov-small > /tmp/kt-fsck 2>&1; then
		kt_result provision/loop-enospc-fsck PASS
	else
		sed 's/^/    /' /tmp/kt-fsck
		kt_result provision/loop-enospc-fsck FAIL "e2fsck found errors after ENOSPC"
	fi
else
	kt_result provision/loop-enospc FAIL "could not make the small ext4"
fi

# --- dm-linear over a loop whose backing file cannot preallocate ---
# The backing file is block-mapped (ext4 without extents), so its fallocate
# answers EOPNOTSUPP: loop passes EOPNOTSUPP on for every provision (its
# limit stays: a queue limit is not changed from the I/O path, which cannot
# freeze the queue), and dm-linear over it must pass EOPNOTSUPP on (not
# EIO) each time, while writes keep working.
if pv_slice prov-noext 488 64 && mkfs.ext4 -q -F -b 4096 -O ^extent,^64bit /dev/mapper/prov-noext &&
	mkdir -p /mnt/prov-noext && mount /dev/mapper/prov-noext /mnt/prov-noext; then
	f=/mnt/prov-noext/file.img
	truncate -s 16M "$f"
	if l=$($pv_losetup -f --show "$f") &&
		dmsetup create prov-lin-noext --table "0 $((16 * 2048)) linear $l 0"; then
		q=/sys/block/${l#/dev/}/queue/provision_max_bytes
		before=$(cat $q)
		dmesg -c >> /tmp/kt-dmesg-outside
		r1=$(/usr/sbin/fallocate -o 0 -l 1M /dev/mapper/prov-lin-noext 2>&1)
		r2=$(/usr/sbin/fallocate -o 1M -l 1M /dev/mapper/prov-lin-noext 2>&1)
		# The loop completes the refused provision with BLK_STS_NOTSUPP and
		# RQF_QUIET (an answer, not a device error, as for ENOSPC): the block
		# layer must log nothing for it. The log goes on, unfiltered, to the
		# suite's kernel-warnings check as well.
		dmesg -c > /tmp/kt-prov-noext
		cat /tmp/kt-prov-noext >> /tmp/kt-dmesg-outside
		logged=$(grep -cE " error, dev ${l#/dev/}," /tmp/kt-prov-noext)
		after=$(cat $q)
		echo "    # loop limit $before -> $after; first: $r1; second: $r2; lines logged: $logged"
		if dd if=/dev/urandom of=/dev/mapper/prov-lin-noext bs=64k count=4 oflag=direct \
			conv=fsync 2> /dev/null &&
			echo "$r1" | grep -q 'not supported' && echo "$r2" | grep -q 'not supported' &&
			[ "$before" != 0 ] && [ "$after" = "$before" ] && [ "$logged" = 0 ]; then
			kt_result provision/dm-linear-over-noprealloc-loop PASS
		else
			sed -n "/ error, dev ${l#/dev/},/s/^/    dmesg: /p" /tmp/kt-prov-noext
			kt_result provision/dm-linear-over-noprealloc-loop FAIL \
				"want EOPNOTSUPP twice, the loop limit unchanged, writes working, nothing logged ($logged lines)"
		fi
		dmsetup remove prov-lin-noext
		$pv_losetup -d "$l"
	else
		kt_result provision/dm-linear-over-noprealloc-loop FAIL "losetup/dmsetup failed"
	fi
	umount /mnt/prov-noext
else
	kt_result provision/dm-linear-over-noprealloc-loop FAIL "could not make ext4 without extents"
fi

# --- dm-thin ---
if pv_pool prov-pa 320 324 128 64; then
	kt_run provision/thin-basic t_provision_thin basic /dev/mapper/prov-pa-thin prov-pa
	kt_run provision/thin-snapshot t_provision_thin snap prov-pa 10
	pv_zero_bio provision/zero-length-bio-thin /dev/mapper/prov-pa-thin -22 128
else
	kt_result provision/thin FAIL "could not create pool prov-pa"
fi
if pv_pool prov-pb 452 456 2 16 error_if_no_space; then
	kt_run provision/thin-enospc-error t_provision_thin enospc /dev/mapper/prov-pb-thin prov-pb
else
	kt_result provision/thin-enospc-error FAIL "could not create pool prov-pb"
fi
nst=/sys/module/dm_thin_pool/parameters/no_space_timeout
if [ -w $nst ] && old_nst=$(cat $nst) && echo 3 > $nst && pv_pool prov-pc 460 464 2 16; then
	kt_run provision/thin-enospc-queue t_provision_thin enospc /dev/mapper/prov-pc-thin prov-pc \
		--min-wait=2
	echo "$old_nst" > $nst
else
	kt_result provision/thin-enospc-queue FAIL "no $nst or could not create pool prov-pc"
fi
if pv_pool prov-pd 468 472 2 16 error_if_no_space; then
	kt_run provision/thin-fit t_provision_thin fit /dev/mapper/prov-pd-thin prov-pd
else
	kt_result provision/thin-fit FAIL "could not create pool prov-pd"
fi
# Without block zeroing, provision would map blocks holding other volumes'
# deleted data: such a pool does not offer it (EOPNOTSUPP, limit 0).
if pv_pool prov-pe 476 480 4 16 skip_block_zeroing; then
	kt_run provision/thin-skip-zeroing t_provision none /dev/mapper/prov-pe-thin
else
	kt_result provision/thin-skip-zeroing FAIL "could not create pool prov-pe"
fi
# A pool reloaded with skip_block_zeroing under a live thin device: the
# thin device keeps its limit (its table was not reloaded), and provision
# is refused with EOPNOTSUPP all the same; reloaded back, it works again.
if pv_pool prov-ps 1544 1548 8 16; then
	tbl=$(dmsetup table prov-ps)
	skip=$(echo "$tbl" | awk '{ $8 = $8 + 1; print $0 " skip_block_zeroing" }')
	echo "    # pool table '$tbl' -> '$skip'"
	if dmsetup suspend prov-ps-thin && dmsetup reload prov-ps --table "$skip" &&
		dmsetup suspend prov-ps && dmsetup resume prov-ps && dmsetup resume prov-ps-thin; then
		kt_run provision/thin-skip-zeroing-reload t_provision_thin refused \
			/dev/mapper/prov-ps-thin prov-ps
		dmsetup suspend prov-ps-thin && dmsetup reload prov-ps --table "$tbl" &&
			dmsetup suspend prov-ps && dmsetup resume prov-ps && dmsetup resume prov-ps-thin
		if /usr/sbin/fallocate -o 0 -l 256K /dev/mapper/prov-ps-thin; then
			kt_result provision/thin-zeroing-reloaded PASS
		else
			kt_result provision/thin-zeroing-reloaded FAIL "provision after reloading with zeroing"
		fi
	else
		dmsetup resume prov-ps 2> /dev/null
		dmsetup resume prov-ps-thin 2> /dev/null
		kt_result provision/thin-skip-zeroing-reload FAIL "could not reload prov-ps"
	fi
else
	kt_result provision/thin-skip-zeroing-reload FAIL "could not create pool prov-ps"
fi
# A thin block size that is not a power of two (384 sectors, 192 KiB).
pv_block=384
if pv_pool prov-pq 1400 1404 96 96; then
	pv_block=
	kt_run provision/thin-odd-block t_provision_thin oddblock /dev/mapper/prov-pq-thin prov-pq 384
else
	pv_block=
	kt_result provision/thin-odd-block FAIL "could not create pool prov-pq"
fi
# dm-linear over thin, starting 8 sectors (4 KiB) into it.
if pv_pool prov-pr 1504 1508 32 32 &&
	dmsetup create prov-pr-lin --table "0 $((32 * 2048 - 8)) linear /dev/mapper/prov-pr-thin 8"; then
	kt_run provision/thin-linear-offset t_provision_thin offset /dev/mapper/prov-pr-lin prov-pr 128 8
else
	kt_result provision/thin-linear-offset FAIL "could not create pool prov-pr or the linear device"
fi
# Read-only pool: provision of a block already mapped (and not shared)
# succeeds, of an unmapped block fails with EIO like a write; back in
# write mode the same request succeeds.
if pv_pool prov-pf 552 556 4 16; then
	thin=/dev/mapper/prov-pf-thin
	pf_table() { # pf_table FEATURES...
		echo "0 $((4 * 2048)) thin-pool /dev/mapper/prov-pf-meta /dev/mapper/prov-pf-data 128 0 $# $*"
	}
	r0=$(/usr/sbin/fallocate -o 0 -l 64K $thin 2>&1) && r0=ok
	dmsetup reload prov-pf --table "$(pf_table read_only)" && dmsetup suspend prov-pf &&
		dmsetup resume prov-pf
	st=$(dmsetup status prov-pf)
	r1=$(/usr/sbin/fallocate -o 0 -l 64K $thin 2>&1) && r1=ok
	r2=$(/usr/sbin/fallocate -o 1M -l 64K $thin 2>&1) && r2=ok
	dmsetup reload prov-pf --table "$(pf_table)" && dmsetup suspend prov-pf &&
		dmsetup resume prov-pf
	r3=$(/usr/sbin/fallocate -o 1M -l 64K $thin 2>&1) && r3=ok
	echo "    # status in read-only: $st"
	echo "    # before: $r0; ro mapped: $r1; ro unmapped: $r2; rw again: $r3"
	if [ "$r0" = ok ] && echo "$st" | grep -q ' ro ' && [ "$r1" = ok ] &&
		echo "$r2" | grep -q 'Input/output error' && [ "$r3" = ok ]; then
		kt_result provision/thin-read-only PASS
	else
		kt_result provision/thin-read-only FAIL \
			"want: mapped block ok, unmapped EIO in read-only mode, ok after"
	fi
else
	kt_result provision/thin-read-only FAIL "could not create pool prov-pf"
fi

# A request larger than provision_max_bytes (split and chained).
if pv_pool prov-ph 576 580 48 64; then
	kt_run provision/thin-big t_provision_thin big /dev/mapper/prov-ph-thin prov-ph
	pv_trace_split /dev/mapper/prov-ph-thin
	kt_run provision/accounting-thin t_provision stats /dev/mapper/prov-ph-thin
else
	kt_result provision/thin-big FAIL "could not create pool prov-ph"
fi
# A provision waiting on a full pool in queue mode: readers go on, SIGKILL
# ends it, and a queued one completes once the pool is extended (2 -> 4 MiB).
if [ -w $nst ] && old_nst=$(cat $nst) && echo 60 > $nst && pv_pool prov-pi 632 636 2 16; then
	kt_run provision/thin-blocked t_provision_thin blocked /dev/mapper/prov-pi-thin prov-pi \
		"dmsetup reload prov-pi-data --table '0 8192 linear $pv_scratch $((636 * 2048))' &&
dmsetup resume prov-pi-data && dmsetup reload prov-pi --table '0 8192 thin-pool \
/dev/mapper/prov-pi-meta /dev/mapper/prov-pi-data 128 0 0' && dmsetup resume prov-pi"
	echo "$old_nst" > $nst
else
	kt_result provision/thin-blocked FAIL "no $nst or could not create pool prov-pi"
fi
# Provision racing with writes, discards and other provisions on one block.
if pv_pool prov-pj 644 648 8 16; then
	kt_run provision/thin-race t_provision_thin race /dev/mapper/prov-pj-thin prov-pj
else
	kt_result provision/thin-race FAIL "could not create pool prov-pj"
fi
# An external origin: provision copies the origin's data into the blocks.
if pv_slice prov-eo 660 16 && pv_slice prov-pk-meta 680 4 && pv_slice prov-pk-data 684 8 &&
	dd if=/dev/zero of=/dev/mapper/prov-pk-meta bs=4096 count=1 conv=fsync 2> /dev/null &&
	dmsetup create prov-pk --table "0 $((8 * 2048)) thin-pool /dev/mapper/prov-pk-meta \
/dev/mapper/prov-pk-data 128 0 0" && dmsetup message prov-pk 0 "create_thin 1" &&
	t_provision_thin fill-origin /dev/mapper/prov-eo > /dev/null &&
	dmsetup create prov-pk-thin --table "0 $((16 * 2048)) thin /dev/mapper/prov-pk 1 \
/dev/mapper/prov-eo"; then
	kt_run provision/thin-external-origin t_provision_thin extorigin /dev/mapper/prov-pk-thin \
		prov-pk /dev/mapper/prov-eo
else
	kt_result provision/thin-external-origin FAIL "could not create prov-eo / pool prov-pk"
fi

# Fail mode: the metadata device fails under the pool; provision then gets
# EIO at once. dm-thin reports the failed commit (allowed below); tearing
# the failed pool down reports more, filtered the same way.
if pv_pool prov-pl 700 704 4 16; then
	pv_dm_thin_errors='device-mapper: (thin|block manager|space map|transaction manager|btree|bufio)'
	kt_allow_dmesg "$pv_dm_thin_errors"
	kt_run provision/thin-fail-mode t_provision_thin failmode /dev/mapper/prov-pl-thin prov-pl \
		prov-pl-meta
	dmsetup remove prov-pl-thin && dmsetup remove prov-pl
	dmesg -c | grep -vE "$pv_dm_thin_errors" >> /tmp/kt-dmesg-outside
else
	kt_result provision/thin-fail-mode FAIL "could not create pool prov-pl"
fi

# Out of metadata space: a pool whose metadata device is 128 KiB runs out
# of metadata blocks part way through a 512 MiB provision (t_provision_thin
# outofmeta). dm-thin reports the failed commit (allowed).
if pv_slice prov-po-data 804 512 && dmsetup create prov-po-meta \
		--table "0 256 linear $pv_scratch $((800 * 2048))" &&
	dd if=/dev/zero of=/dev/mapper/prov-po-meta bs=4096 count=1 conv=fsync 2> /dev/null &&
	dmsetup create prov-po --table "0 $((512 * 2048)) thin-pool /dev/mapper/prov-po-meta \
/dev/mapper/prov-po-data 128 0 0" && dmsetup message prov-po 0 "create_thin 1" &&
	dmsetup create prov-po-thin --table "0 $((512 * 2048)) thin /dev/mapper/prov-po 1"; then
	pv_dm_thin_errors='device-mapper: (thin|block manager|space map|transaction manager|btree|bufio)'
	kt_allow_dmesg "$pv_dm_thin_errors"
	kt_run provision/thin-out-of-metadata t_provision_thin outofmeta /dev/mapper/prov-po-thin \
		prov-po
	dmsetup remove prov-po-thin && dmsetup remove prov-po
	dmesg -c | grep -vE "$pv_dm_thin_errors" >> /tmp/kt-dmesg-outside
else
	kt_result provision/thin-out-of-metadata FAIL "could not create pool prov-po"
fi

# A crash without a flush: from a commit on, the metadata device drops
# every write (dm-flakey drop_writes); a provision after it is never
# committed. After the pool is torn down and rebuilt from its metadata, the
# committed blocks are mapped with their data, the uncommitted ones are
# not and read zeros, and they provision again.
if pv_pool prov-pm 720 724 4 16; then
	thin=/dev/mapper/prov-pm-thin
	pm_used() { dmsetup status prov-pm | awk '{ split($6, a, "/"); print a[1] }'; }
	pm_meta() { # pm_meta TARGET-ARGS: reload prov-pm-meta over the same slice
		dmsetup suspend prov-pm-meta && dmsetup load prov-pm-meta --table "0 8192 $*" &&
			dmsetup resume prov-pm-meta
	}
	pm_zeros() { # pm_zeros BLOCK COUNT: non-zero bytes in 64 KiB blocks of $thin
		dd if=$thin bs=64k skip="$1" count="$2" iflag=direct 2> /dev/null | tr -d '\000' |
			wc -c | awk '{ print $1 }'
	}
	dd if=/dev/urandom of=/tmp/kt-pm.dat bs=64k count=1 2> /dev/null
	r0=$(/usr/sbin/fallocate -o 0 -l 256K $thin 2>&1) && r0=ok
	dd if=/tmp/kt-pm.dat of=$thin bs=64k count=1 oflag=direct conv=fsync 2> /dev/null
	u0=$(pm_used)
	pm_meta flakey $pv_scratch $((720 * 2048)) 0 3600 1 drop_writes
	r1=$(/usr/sbin/fallocate -o 512K -l 256K $thin 2>&1) && r1=ok
	u1=$(pm_used)
	sleep 2
	dmsetup remove prov-pm-thin && dmsetup remove prov-pm
	pm_meta linear $pv_scratch $((720 * 2048))
	dmsetup create prov-pm --table "0 8192 thin-pool /dev/mapper/prov-pm-meta \
/dev/mapper/prov-pm-data 128 0 0" &&
		dmsetup create prov-pm-thin --table "0 32768 thin /dev/mapper/prov-pm 1"
	u2=$(pm_used)
	d0=$(dd if=$thin bs=64k count=1 iflag=direct 2> /dev/null |
		cmp - /tmp/kt-pm.dat > /dev/null 2>&1 && echo same)
	z1=$(pm_zeros 8 4)
	r3=$(/usr/sbin/fallocate -o 512K -l 256K $thin 2>&1) && r3=ok
	u3=$(pm_used)
	echo "    # committed: $r0, used $u0; uncommitted: $r1, used $u1; after the crash: used $u2," \
		"block 0 ${d0:-differs}, $z1 non-zero bytes in the uncommitted blocks; again: $r3, used $u3"
	if [ "$r0/$r1/$r3" = ok/ok/ok ] && [ "$u0/$u1/$u2/$u3" = 4/8/4/8 ] && [ "$d0" = same ] &&
		[ "$z1" = 0 ]; then
		kt_result provision/thin-crash-no-flush PASS
	else
		kt_result provision/thin-crash-no-flush FAIL \
			"want used 4/8/4/8, block 0 kept, uncommitted blocks reading zeros"
	fi
	rm -f /tmp/kt-pm.dat
else
	kt_result provision/thin-crash-no-flush FAIL "could not create pool prov-pm"
fi

# Read-only and fail pool modes, from C (t_provision_thin modes).
if pv_pool prov-pg 564 568 2 16 error_if_no_space; then
	kt_run provision/thin-modes t_provision_thin modes /dev/mapper/prov-pg-thin prov-pg
else
	kt_result provision/thin-modes FAIL "could not create pool prov-pg"
fi

pv_cleanup
