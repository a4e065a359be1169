# k_nohide_stale.sh: FALLOC_FL_NO_HIDE_STALE (kernel patches 0001-0002).
# ext4 on /dev/disk/scratch (gate and its edges, data=journal, 1 KiB blocks,
# bigalloc, ENOSPC, concurrent mmap and AIO writers, FIEMAP, stale exposure,
# the stale tail past a new EOF (and an unreadable EOF block), sub-page blocks and the page cache, the
# owner check through an idmapped mount, jbd2 commits, quota), xfs, tmpfs
# and overlayfs over gated ext4 (refused), fsx-style operation mixes
# (t_opmix, 4 KiB and 1 KiB blocks), a dm-log-writes replay of the flag at
# marks and flush points (t_nhs_replay), and the block device path (plain
# discard) on the virtio disks. Leaves /dev/disk/scratch unmounted and
# discarded.

nhs_mnt=/mnt/nhs
nhs_dev=/dev/disk/scratch

for t in gate edges journal variants concurrent fiemap stale tail taileio subpage idmap jbd2 quota \
	other overlay; do
	# taileio's own direct read of the block it maps to dm-error may log
	# that read's error; ext4 must log none (its read would be the bug)
	[ "$t" != taileio ] || kt_allow_dmesg 'I/O error, dev dm-[0-9]+, sector [0-9]+ op 0x0:\(READ\)'
	kt_run nohide_stale/$t t_nohide_stale $t $nhs_dev $nhs_mnt
	# A failed test may leave its filesystems mounted.
	while grep -q " $nhs_mnt-ovl " /proc/mounts; do umount $nhs_mnt-ovl || break; done
	while grep -q " $nhs_mnt-idmap " /proc/mounts; do umount $nhs_mnt-idmap || break; done
	while grep -q " $nhs_mnt " /proc/mounts; do umount $nhs_mnt || break; done
	[ ! -e /dev/mapper/nhs-eio ] || { dmsetup resume nhs-eio; dmsetup remove nhs-eio; }
done

# fsx-style randomized operation mixes with both new modes and the mount
# option (Debian 12 packages neither fsx nor fsstress).
kt_run nohide_stale/opmix-4k t_opmix $nhs_dev $nhs_mnt 4096 3000 1
while grep -q " $nhs_mnt " /proc/mounts; do umount $nhs_mnt || break; done
kt_run nohide_stale/opmix-1k t_opmix $nhs_dev $nhs_mnt 1024 2000 2
while grep -q " $nhs_mnt " /proc/mounts; do umount $nhs_mnt || break; done

# dm-log-writes replay at every mark and at flush points (generic/482).
kt_run nohide_stale/log-replay t_nhs_replay $nhs_dev $nhs_mnt
while grep -q " $nhs_mnt " /proc/mounts; do umount $nhs_mnt || break; done
for d in nhr-lw nhr-chk nhr-rep nhr-log nhr-orig; do
	[ -e /dev/mapper/$d ] && dmsetup remove $d
done

kt_run nohide_stale/blkdev-virtio-512 t_nohide_stale blkdev /dev/disk/vblk --expect=discard
kt_run nohide_stale/blkdev-virtio-4096 t_nohide_stale blkdev /dev/disk/vblk4k --expect=discard
kt_run nohide_stale/blkdev-virtio-nodiscard t_nohide_stale blkdev /dev/disk/vnowz --expect=eopnotsupp

rmdir $nhs_mnt $nhs_mnt-ovl $nhs_mnt-idmap 2> /dev/null
blkdiscard -f $nhs_dev 2> /dev/null || blkdiscard $nhs_dev 2> /dev/null ||
	dd if=/dev/zero of=$nhs_dev bs=1M count=4 2> /dev/null
