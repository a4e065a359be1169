# k_write_zeroes.sh: FALLOC_FL_WRITE_ZEROES (kernel patches 0003-0004).
# ext4 on /dev/disk/scratch (written extents, zeros over deleted data, 1 KiB
# blocks, bigalloc, jbd2 commits, e2fsck), ext4 on /dev/disk/vnowz (no
# write-zeroes: refused) and on /dev/disk/vwzonly (write-zeroes that cannot
# unmap, no discard: refused), xfs and tmpfs (refused), and the block devices
# themselves; a 4 GiB range on a sparse 8 GiB loop device (big),
# and data=journal (refused). Leaves /dev/disk/scratch unmounted and
# discarded.

wz_mnt=/mnt/wz

for t in ext4 variants jbd2 other journal; do
	kt_run write_zeroes/$t t_write_zeroes $t /dev/disk/scratch $wz_mnt
	while grep -q " $wz_mnt " /proc/mounts; do umount $wz_mnt || break; done
done
kt_run write_zeroes/nowz t_write_zeroes nowz /dev/disk/vnowz $wz_mnt
while grep -q " $wz_mnt " /proc/mounts; do umount $wz_mnt || break; done
# Write-zeroes without discard: it cannot unmap, so it is refused (6.17).
kt_run write_zeroes/nounmap t_write_zeroes nounmap /dev/disk/vwzonly $wz_mnt
while grep -q " $wz_mnt " /proc/mounts; do umount $wz_mnt || break; done

# A range of 4 GiB and more (a byte count that overflows 32 bits) on a
# sparse device: a loop device over an 8 GiB sparse file on ext4 on the
# scratch disk, whose write-zeroes punches holes in the file (and whose
# ZERO_RANGE serves mkfs's BLKZEROOUT: tmpfs has none, and loop would log
# the refusal).
wz_losetup=/usr/sbin/losetup
[ -x $wz_losetup ] || wz_losetup=/sbin/losetup
wz_big=/mnt/wz-big-backing
mkdir -p $wz_big
if mkfs.ext4 -q -F /dev/disk/scratch && mount /dev/disk/scratch $wz_big &&
	truncate -s 8G $wz_big/disk.img && wz_loop=$($wz_losetup -f --show $wz_big/disk.img); then
	KT_TIMEOUT=1800
	kt_run write_zeroes/big t_write_zeroes big $wz_loop $wz_mnt
	unset KT_TIMEOUT
	while grep -q " $wz_mnt " /proc/mounts; do umount $wz_mnt || break; done
	$wz_losetup -d $wz_loop
else
	kt_result write_zeroes/big FAIL "could not set up a loop device over a sparse file on ext4"
fi
umount $wz_big 2> /dev/null
rmdir $wz_big

# A write-zeroes that fails part way: the test module's dm target rs_wzfault
# over the scratch disk fails write-zeroes bios on demand.
if modprobe t_wzfault 2> /tmp/kt-modprobe &&
	dmsetup create wz-fault --table "0 $((256 * 2048)) rs_wzfault /dev/disk/scratch"; then
	kt_allow_dmesg 'I/O error| error, dev |blk_update_request'
	kt_run write_zeroes/fault t_write_zeroes fault /dev/mapper/wz-fault $wz_mnt
	while grep -q " $wz_mnt " /proc/mounts; do umount $wz_mnt || break; done
	dmsetup remove wz-fault
	rmmod t_wzfault
else
	kt_result write_zeroes/fault FAIL "modprobe t_wzfault or dmsetup create failed: $(cat /tmp/kt-modprobe)"
fi

kt_run write_zeroes/blkdev-virtio-512 t_write_zeroes blkdev /dev/disk/vblk --expect=zeroes
kt_run write_zeroes/blkdev-virtio-4096 t_write_zeroes blkdev /dev/disk/vblk4k --expect=zeroes
kt_run write_zeroes/blkdev-virtio-nowz t_write_zeroes blkdev /dev/disk/vnowz --expect=eopnotsupp
kt_run write_zeroes/blkdev-virtio-nounmap t_write_zeroes blkdev /dev/disk/vwzonly --expect=eopnotsupp

rmdir $wz_mnt 2> /dev/null
blkdiscard -f /dev/disk/scratch 2> /dev/null || blkdiscard /dev/disk/scratch 2> /dev/null ||
	dd if=/dev/zero of=/dev/disk/scratch bs=1M count=4 2> /dev/null
