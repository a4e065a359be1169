# v_space.sh: the space layer (t_space) on the guest's devices: virtio-blk
# with write-zeroes (mkfs zeroes: partial units write only their blocks)
# and without (free space dirty: partial units pad), scsi_debug with and
# without WRITE SAME/UNMAP, a loop device over a
# sparse file (reclaim punches the backing file by exactly the freed bytes),
# dm-thin (ENOSPC at provision time; reclaim returns pool blocks; 2 GiB
# through the rawstore command, reclaim showing its progress), and a
# store inside a NO_HIDE_STALE file on ext4 (no stale byte reaches a read).
# Carves /dev/disk/scratch and leaves it unused at the end.

sp_losetup=/usr/sbin/losetup
[ -x $sp_losetup ] || sp_losetup=/sbin/losetup
sp_scratch=/dev/disk/scratch

kt_run space/virtio-wz t_space zeroed /dev/disk/vblk yes
kt_run space/virtio-nowz t_space zeroed /dev/disk/vnowz no

# scsi_debug with WRITE SAME + UNMAP (zeroing), then with neither
for sd in "lbpu=1 lbpws=1 lbprz=1:wsame" "lbpu=0 lbpws=0 lbpws10=0 lbprz=0:plain"; do
	params=${sd%%:*} tag=${sd##*:}
	if modprobe scsi_debug dev_size_mb=64 sector_size=512 $params 2> /tmp/kt-modprobe; then
		if dev=$(scsi_debug_dev); then
			kt_run space/scsi_debug-$tag t_space zeroed "$dev" auto
		else
			kt_result space/scsi_debug-$tag FAIL "no scsi_debug disk appeared"
		fi
		rmmod scsi_debug
	else
		kt_result space/scsi_debug-$tag FAIL "modprobe scsi_debug: $(cat /tmp/kt-modprobe)"
	fi
done

# loop over a sparse file on ext4 (a slice of the scratch disk)
dmsetup create space-fs --table "0 $((512 * 2048)) linear $sp_scratch 0"
mkdir -p /mnt/space-ext4
if mkfs.ext4 -q -F /dev/mapper/space-fs && mount -o nohide_stale_gid=0 /dev/mapper/space-fs /mnt/space-ext4; then
	/usr/sbin/truncate -s 64M /mnt/space-ext4/loop.img
	if dev=$($sp_losetup -f --show /mnt/space-ext4/loop.img); then
		kt_run space/loop t_space loop "$dev" /mnt/space-ext4/loop.img
		$sp_losetup -d "$dev"
	else
		kt_result space/loop FAIL "losetup failed"
	fi
	rm -f /mnt/space-ext4/loop.img
	kt_run space/ext4-stale t_space stale /mnt/space-ext4/store.img
	umount /mnt/space-ext4
else
	kt_result space/loop FAIL "mkfs.ext4 or mount -o nohide_stale_gid=0 failed"
	kt_result space/ext4-stale FAIL "mkfs.ext4 or mount -o nohide_stale_gid=0 failed"
fi
dmsetup remove space-fs

# dm-thin: 24 MiB of pool data (64 KiB blocks, zeroing, error_if_no_space)
# under a 64 MiB thin device
dmsetup create space-meta --table "0 $((4 * 2048)) linear $sp_scratch $((600 * 2048))"
dmsetup create space-data --table "0 $((24 * 2048)) linear $sp_scratch $((608 * 2048))"
dd if=/dev/zero of=/dev/mapper/space-meta bs=4096 count=1 conv=fsync 2> /dev/null
if dmsetup create space-pool --table "0 $((24 * 2048)) thin-pool /dev/mapper/space-meta \
/dev/mapper/space-data 128 0 1 error_if_no_space" &&
	dmsetup message space-pool 0 "create_thin 1" &&
	dmsetup create space-thin --table "0 $((64 * 2048)) thin /dev/mapper/space-pool 1"; then
	kt_run space/dm-thin t_space thin /dev/mapper/space-thin space-pool
else
	kt_result space/dm-thin FAIL "dm-thin setup failed"
fi
for d in space-thin space-pool space-meta space-data; do
	[ -e /dev/mapper/$d ] && dmsetup remove $d
done
blkdiscard $sp_scratch 2> /dev/null || true

# dm-thin through the rawstore command (issue 10, "done when"): 2 GiB of
# objects put, removed, and 'rawstore reclaim --progress' returns their
# pool blocks. 16 MiB of pool metadata, 2.5 GiB of pool data (64 KiB
# blocks) on the scratch disk past the slices above.
dmsetup create space-meta --table "0 $((16 * 2048)) linear $sp_scratch $((640 * 2048))"
dmsetup create space-data --table "0 $((2560 * 2048)) linear $sp_scratch $((1024 * 2048))"
dd if=/dev/zero of=/dev/mapper/space-meta bs=4096 count=1 conv=fsync 2> /dev/null
if dmsetup create space-pool --table "0 $((2560 * 2048)) thin-pool /dev/mapper/space-meta \
/dev/mapper/space-data 128 0 1 error_if_no_space" &&
	dmsetup message space-pool 0 "create_thin 1" &&
	dmsetup create space-thin --table "0 $((2560 * 2048)) thin /dev/mapper/space-pool 1"; then
	kt_run space/dm-thin-cli t_space thin-cli /dev/mapper/space-thin space-pool 2
else
	kt_result space/dm-thin-cli FAIL "dm-thin setup failed"
fi
for d in space-thin space-pool space-meta space-data; do
	[ -e /dev/mapper/$d ] && dmsetup remove $d
done
blkdiscard $sp_scratch 2> /dev/null || true
