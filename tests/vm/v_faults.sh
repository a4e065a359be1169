# v_faults.sh: librawstore (t_faults) on block devices that fail: dm-flakey
# over virtio-blk (writes failing with EIO, all I/O failing, writes silently
# dropped), scsi_debug medium errors on reads, and a small dm-thin pool in
# error_if_no_space mode (ENOSPC, then the pool grows).  Each test gets a
# FAIL and a HEAL shell command that switch the device under the open
# store (dmsetup reload of a live table, scsi_debug's opts).

vf_sect=$((64 * 2048))	# 64 MiB in 512-byte sectors
vf_bk=/dev/disk/vblk
vf_lin="0 $vf_sect linear $vf_bk 0"

vf_cleanup() {
	for d in vf-flakey vf-thin vf-pool vf-pool-meta vf-pool-data; do
		[ -e "/dev/mapper/$d" ] && dmsetup remove "$d"
	done
	return 0
}

# vf_swap TABLE: the shell command that puts TABLE under /dev/mapper/vf-flakey.
vf_swap() {
	echo "dmsetup suspend vf-flakey && dmsetup reload vf-flakey --table '$1' && dmsetup resume vf-flakey"
}

vf_cleanup
# flakey with up interval 0 and down interval 1: always "down"
for mode in write-eio read-eio drop-writes; do
	case $mode in
	write-eio) feat="1 error_writes" ;;
	read-eio) feat="" ;;	# no feature: every read and write fails
	drop-writes) feat="1 drop_writes" ;;
	esac
	if dmsetup create vf-flakey --table "$vf_lin"; then
		kt_run "faults/dm-flakey-$mode" t_faults "$mode" /dev/mapper/vf-flakey \
			"$(vf_swap "0 $vf_sect flakey $vf_bk 0 0 1 $feat")" "$(vf_swap "$vf_lin")"
		dmsetup remove vf-flakey
	else
		kt_result "faults/dm-flakey-$mode" FAIL "dmsetup create vf-flakey failed"
	fi
done

# scsi_debug: reads of 256 KiB at 7 MiB fail with a medium error once opts has
# bit 2 (SDEBUG_OPT_MEDIUM_ERR).  On 64 MiB the journal takes [1, 5) MiB, so
# the first object ("big", 4 MiB) is at 5 MiB and the error 2 MiB into it.
sd_opts=/sys/bus/pseudo/drivers/scsi_debug/opts
if modprobe scsi_debug dev_size_mb=64 sector_size=512 medium_error_start=14336 \
	medium_error_count=512 opts=0 2> /tmp/kt-modprobe; then
	if dev=$(scsi_debug_dev); then
		kt_allow_dmesg "critical medium error, dev ${dev#/dev/}|I/O error, dev ${dev#/dev/}"
		kt_run faults/scsi_debug-medium-error t_faults read-eio "$dev" \
			"echo 2 > $sd_opts" "echo 0 > $sd_opts"
	else
		kt_result faults/scsi_debug-medium-error FAIL "no scsi_debug disk appeared"
	fi
	rmmod scsi_debug
else
	kt_result faults/scsi_debug-medium-error FAIL "modprobe scsi_debug: $(cat /tmp/kt-modprobe)"
fi

# dm-thin: a 64 MiB thin device on a 16 MiB pool that errors when full;
# HEAL grows the pool's data device to 64 MiB and reloads the pool.
vf_scr=/dev/disk/scratch
vf_pool_tab() {
	echo "0 $(($1 * 2048)) thin-pool /dev/mapper/vf-pool-meta /dev/mapper/vf-pool-data 128 0 1 error_if_no_space"
}
if dmsetup create vf-pool-meta --table "0 8192 linear $vf_scr 0" &&
	dmsetup create vf-pool-data --table "0 $((16 * 2048)) linear $vf_scr 8192" &&
	dd if=/dev/zero of=/dev/mapper/vf-pool-meta bs=4096 count=1 conv=fsync 2> /dev/null &&
	dmsetup create vf-pool --table "$(vf_pool_tab 16)" &&
	dmsetup message vf-pool 0 "create_thin 1" &&
	dmsetup create vf-thin --table "0 $vf_sect thin /dev/mapper/vf-pool 1"; then
	grow="dmsetup reload vf-pool-data --table '0 $vf_sect linear $vf_scr 8192' &&"
	grow="$grow dmsetup resume vf-pool-data && dmsetup reload vf-pool --table '$(vf_pool_tab 64)'"
	grow="$grow && dmsetup suspend vf-pool && dmsetup resume vf-pool"
	kt_run faults/dm-thin-nospace t_faults nospace /dev/mapper/vf-thin true "$grow"
else
	kt_result faults/dm-thin-nospace FAIL "setting up the thin pool failed"
fi
vf_cleanup
