# v_store.sh: librawstore (t_store) on the guest's real block devices:
# virtio-blk (512/4096-byte sectors, with and without write-zeroes),
# scsi_debug with WRITE SAME, and a loop device over a sparse tmpfs file.

kt_run store/virtio-512 t_store /dev/disk/vblk --expect-punch=ok
kt_run store/virtio-4096 t_store /dev/disk/vblk4k --expect-punch=ok
kt_run store/virtio-nowz t_store /dev/disk/vnowz --expect-punch=eopnotsupp

if modprobe scsi_debug dev_size_mb=64 sector_size=512 lbpu=1 lbpws=1 lbprz=1 2> /tmp/kt-modprobe; then
	if dev=$(scsi_debug_dev); then
		kt_run store/scsi_debug t_store "$dev" --expect-punch=ok
	else
		kt_result store/scsi_debug FAIL "no scsi_debug disk appeared"
	fi
	rmmod scsi_debug
else
	kt_result store/scsi_debug FAIL "modprobe scsi_debug: $(cat /tmp/kt-modprobe)"
fi

# Loop over tmpfs: punch-hole reaches the backing file as a hole punch.
/usr/sbin/truncate -s 64M /tmp/store-loop.img
if dev=$(/usr/sbin/losetup -f --show /tmp/store-loop.img); then
	# tmpfs has no FALLOC_FL_ZERO_RANGE: the store's write-zeroes to the loop
	# device fail with EOPNOTSUPP (handled), and 6.1 logs each such request.
	kt_allow_dmesg 'operation not supported error, dev loop[0-9]+, sector [0-9]+ op 0x9:\(WRITE_ZEROES\)'
	kt_run store/loop-tmpfs t_store "$dev" --expect-punch=ok
	/usr/sbin/losetup -d "$dev"
else
	kt_result store/loop-tmpfs FAIL "losetup failed"
fi
rm -f /tmp/store-loop.img
