# k_provision.sh: the provision operation ("ensure space exists", fallocate
# mode 0 / KEEP_SIZE on block devices) from kernel/patches 0005-0008:
# unsupported devices (virtio-blk, scsi_debug, dm-linear over virtio-blk)
# keep EOPNOTSUPP and a zero queue/provision_max_bytes; loop devices over
# sparse files (512 and 4096-byte sectors, and dm-linear over loop),
# loop on a nearly full file system (ENOSPC); dm-thin (used-block counts,
# partial blocks, snapshots, ENOSPC in error and queue mode, pools without
# block zeroing refuse it, read-only and fail pool modes).
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

# pv_pool NAME META_MIB DATA_MIB DATA_SIZE_MIB THIN_MIB [FEATURES...]: a pool
# with 64 KiB blocks and block zeroing, and one thin device NAME-thin (id 1).
pv_pool() {
	name=$1 meta=$2 data=$3 dsize=$4 tsize=$5
	shift 5
	pv_slice "$name-meta" "$meta" 4 && pv_slice "$name-data" "$data" "$dsize" &&
		dd if=/dev/zero of="/dev/mapper/$name-meta" bs=4096 count=1 conv=fsync 2> /dev/null &&
		dmsetup create "$name" --table "0 $((dsize * 2048)) thin-pool /dev/mapper/$name-meta \
/dev/mapper/$name-data 128 0 $# $*" &&
		dmsetup message "$name" 0 "create_thin 1" &&
		dmsetup create "$name-thin" --table "0 $((tsize * 2048)) thin /dev/mapper/$name 1"
}

pv_cleanup() {
	[ -e /dev/mapper/prov-lin-loop ] && dmsetup remove prov-lin-loop
	[ -e /dev/mapper/prov-lin-noext ] && dmsetup remove prov-lin-noext
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
		prov-pf-data prov-pg-thin prov-pg prov-pg-meta prov-pg-data prov-noext prov-virt; do
		[ -e "/dev/mapper/$d" ] && dmsetup remove "$d"
	done
	return 0
}

pv_cleanup

# --- devices without provision: unchanged 6.1 behaviour ---
kt_run provision/none-virtio-512 t_provision none /dev/disk/vblk
kt_run provision/none-virtio-4096 t_provision none /dev/disk/vblk4k
kt_run provision/none-virtio-nowz t_provision none /dev/disk/vnowz
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

# --- dm-linear over a loop whose limit gets cleared ---
# The backing file is block-mapped (ext4 without extents), so its fallocate
# answers EOPNOTSUPP: loop clears its limit on the first provision, and
# dm-linear, which copied the limit at table load, must pass EOPNOTSUPP on
# (not EIO) then and afterwards, while writes keep working.
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
		# The loop completes the refused provision with BLK_STS_NOTSUPP, which
		# the block layer logs: exactly that line is expected here; anything
		# else goes on to the suite's kernel-warnings check.
		dmesg -c | grep -vE "operation not supported error, dev ${l#/dev/}, .*\(PROVISION\)" \
			>> /tmp/kt-dmesg-outside
		after=$(cat $q)
		echo "    # loop limit $before -> $after; first: $r1; second: $r2"
		if dd if=/dev/urandom of=/dev/mapper/prov-lin-noext bs=64k count=4 oflag=direct \
			conv=fsync 2> /dev/null &&
			echo "$r1" | grep -q 'not supported' && echo "$r2" | grep -q 'not supported' &&
			[ "$before" != 0 ] && [ "$after" = 0 ]; then
			kt_result provision/dm-linear-over-cleared-loop PASS
		else
			kt_result provision/dm-linear-over-cleared-loop FAIL \
				"want EOPNOTSUPP twice, the loop limit cleared, writes working"
		fi
		dmsetup remove prov-lin-noext
		$pv_losetup -d "$l"
	else
		kt_result provision/dm-linear-over-cleared-loop FAIL "losetup/dmsetup failed"
	fi
	umount /mnt/prov-noext
else
	kt_result provision/dm-linear-over-cleared-loop FAIL "could not make ext4 without extents"
fi

# --- dm-thin ---
if pv_pool prov-pa 320 324 128 64; then
	kt_run provision/thin-basic t_provision_thin basic /dev/mapper/prov-pa-thin prov-pa
	kt_run provision/thin-snapshot t_provision_thin snap prov-pa 10
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

# Read-only and fail pool modes, from C (t_provision_thin modes).
if pv_pool prov-pg 564 568 2 16 error_if_no_space; then
	kt_run provision/thin-modes t_provision_thin modes /dev/mapper/prov-pg-thin prov-pg
else
	kt_result provision/thin-modes FAIL "could not create pool prov-pg"
fi

pv_cleanup
