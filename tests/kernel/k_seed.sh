# k_seed.sh: the stock 6.1 block-device fallocate semantics (t_seed) on
# virtio-blk and scsi_debug, with zeroing (write-same/write-zeroes)
# enabled and disabled, 512- and 4096-byte logical sectors.

kt_run seed/virtio-512 t_seed /dev/disk/vblk --expect-punch=ok
kt_run seed/virtio-4096 t_seed /dev/disk/vblk4k --expect-punch=ok
kt_run seed/virtio-nowz t_seed /dev/disk/vnowz --expect-punch=eopnotsupp

# scsi_debug: WRITE SAME(16) with UNMAP and LBPRZ (zeroing discard), then the
# same device with write-same switched off through sd's sysfs knob.
for ss in 512 4096; do
	for ws in on off; do
		name=seed/scsi_debug-$ss-ws-$ws
		if ! modprobe scsi_debug dev_size_mb=64 sector_size=$ss lbpu=1 lbpws=1 lbprz=1 \
			2> /tmp/kt-modprobe; then
			kt_result "$name" FAIL "modprobe scsi_debug: $(cat /tmp/kt-modprobe)"
			continue
		fi
		dev=$(scsi_debug_dev) || { kt_result "$name" FAIL "no scsi_debug disk appeared"; rmmod scsi_debug; continue; }
		expect=ok
		if [ $ws = off ]; then
			for f in /sys/class/scsi_disk/*/max_write_same_blocks; do echo 0 > "$f"; done
			expect=eopnotsupp
		fi
		kt_run "$name" t_seed "$dev" --expect-punch=$expect
		rmmod scsi_debug
	done
done
