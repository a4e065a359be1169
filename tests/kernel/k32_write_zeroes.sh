# k32_write_zeroes.sh: FALLOC_FL_WRITE_ZEROES on a 32-bit kernel (i386),
# where long and ssize_t are 32 bits: only tests/kernel/run-i386 runs it
# (suite.sh runs k_*.sh by default, not k32_*.sh). A byte count of 4 GiB
# is 0 there and one of 2 GiB + 64 KiB is negative: the big test's ranges,
# here on a sparse 8 GiB virtio disk (/dev/disk/big) whose write-zeroes
# punch holes in the host's file. Also the block device itself and ext4's
# plain cases, on /dev/disk/vblk and /dev/disk/scratch.

case $(uname -m) in
i?86) kt_result arch/i386 PASS ;;
*) kt_result arch/i386 FAIL "uname -m is $(uname -m), not i386-i686: not the 32-bit guest" ;;
esac

wz_mnt=/mnt/wz
kt_run write_zeroes/blkdev t_write_zeroes blkdev /dev/disk/vblk --expect=zeroes
for t in ext4 variants; do
	kt_run write_zeroes/$t t_write_zeroes $t /dev/disk/scratch $wz_mnt
	while grep -q " $wz_mnt " /proc/mounts; do umount $wz_mnt || break; done
done
KT_TIMEOUT=1800
kt_run write_zeroes/big t_write_zeroes big /dev/disk/big $wz_mnt
unset KT_TIMEOUT
while grep -q " $wz_mnt " /proc/mounts; do umount $wz_mnt || break; done
