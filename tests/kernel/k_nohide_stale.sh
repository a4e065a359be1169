# k_nohide_stale.sh: FALLOC_FL_NO_HIDE_STALE (kernel patches 0001-0002).
# ext4 on /dev/disk/scratch (gate and its edges, data=journal, 1 KiB blocks,
# bigalloc, ENOSPC, concurrent mmap and AIO writers, FIEMAP, stale exposure,
# the stale tail past a new EOF, sub-page blocks and the page cache, the
# owner check through an idmapped mount, jbd2 commits, quota), xfs, tmpfs and overlayfs over gated ext4 (refused),
# and the block device path (plain discard) on the virtio disks. Leaves /dev/disk/scratch unmounted
# and discarded.

nhs_mnt=/mnt/nhs
nhs_dev=/dev/disk/scratch

for t in gate edges journal variants concurrent fiemap stale tail subpage idmap jbd2 quota other \
	overlay; do
	kt_run nohide_stale/$t t_nohide_stale $t $nhs_dev $nhs_mnt
	# A failed test may leave its filesystems mounted.
	while grep -q " $nhs_mnt-ovl " /proc/mounts; do umount $nhs_mnt-ovl || break; done
	while grep -q " $nhs_mnt-idmap " /proc/mounts; do umount $nhs_mnt-idmap || break; done
	while grep -q " $nhs_mnt " /proc/mounts; do umount $nhs_mnt || break; done
done

kt_run nohide_stale/blkdev-virtio-512 t_nohide_stale blkdev /dev/disk/vblk --expect=discard
kt_run nohide_stale/blkdev-virtio-4096 t_nohide_stale blkdev /dev/disk/vblk4k --expect=discard
kt_run nohide_stale/blkdev-virtio-nodiscard t_nohide_stale blkdev /dev/disk/vnowz --expect=eopnotsupp

rmdir $nhs_mnt $nhs_mnt-ovl $nhs_mnt-idmap 2> /dev/null
blkdiscard -f $nhs_dev 2> /dev/null || blkdiscard $nhs_dev 2> /dev/null ||
	dd if=/dev/zero of=$nhs_dev bs=1M count=4 2> /dev/null
