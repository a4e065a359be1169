#!/bin/sh
# bench-guest.sh: the benchmark matrix, inside the patched guest (busybox sh).
# bench/run boots the guest with the disks below and runs
#   bench-guest.sh smoke|quick|full OUTDIR
# OUTDIR is a host directory shared into the guest (vm/run --share). Every
# measurement is appended to OUTDIR/results.jsonl as one JSON object per
# line; fio's own JSON goes to OUTDIR/fio/; OUTDIR/env.json describes the
# guest and its disks; OUTDIR/guest.log is the full log. Progress lines go
# to stdout. A cell that cannot run is recorded with "status": "missing"
# or "unsupported" and the reason; the script fails only when the harness
# itself breaks.
#
# Disks (vm/run --disk NAME, seen as /dev/disk/NAME):
#   bwz    virtio-blk, discard + write-zeroes  blockdev backend, block alloc paths
#   bnowz  virtio-blk, no write-zeroes         blockdev backend without offload
#   fs     virtio-blk                          ext4: prealloc-file, files, ext4 alloc paths, loop
#   xfs    virtio-blk                          xfs: files
#   thin   virtio-blk                          dm-thin pool (provision path)
#   meta   virtio-blk                          ext4 for every RocksDB (never tmpfs)
#   fio    virtio-blk, like bwz                fio, the device limit
mode=${1:?usage: bench-guest.sh smoke|quick|full OUTDIR}
out=${2:?usage: bench-guest.sh smoke|quick|full OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$here:/opt/rawstore/bin:$PATH"
res=$out/results.jsonl
log=$out/guest.log
mkdir -p "$out/fio"
: > "$res"
: > "$log"
: > "$out/progress.log"
t0=$(date +%s)

say() { # progress: the console, the log, and progress.log (bench/run follows it)
	line="bench-guest: [$(($(date +%s) - t0))s] $*"
	echo "$line"
	echo "$line" >> "$log"
	echo "$line" >> "$out/progress.log"
}
die() { say "ERROR: $*"; exit 1; }
# missing TAG KIND WHY: record a cell that could not be measured.
missing() {
	echo "{$1, \"kind\": \"$2\", \"status\": \"missing\", \"why\": \"$3\"}" >> "$res"
}
# arun TAG ALLOCLAT-ARGS...: alloclat with the tag; a failure becomes a
# missing cell with alloclat's last message.
arun() {
	t=$1
	shift
	$A --tag "$t" "$@" >> "$res" 2> /tmp/al.err
	rc=$?
	cat /tmp/al.err >> "$log"
	[ $rc = 0 ] && return 0
	why=$(tail -1 /tmp/al.err | tr -d '"\\')
	echo "{$t, \"kind\": \"alloc_prepare\", \"mode\": \"$*\", \"status\": \"missing\", \"why\": \"alloclat exited $rc: $why\"}" >> "$res"
}
devname() { basename "$(readlink -f "$1")"; }

case $mode in
smoke) reps=1 ;;
quick) reps=1 ;;
full) reps=3 ;;
*) die "unknown mode '$mode'" ;;
esac

for d in bwz bnowz fs xfs thin meta fio; do
	[ -b /dev/disk/$d ] || die "disk /dev/disk/$d missing (bench/run attaches it)"
done

# --- environment ----------------------------------------------------------
{
	printf '{"kernel": "%s", "kernel_version": "%s", "cpus": %s, "mem_kb": %s' \
		"$(uname -r)" "$(uname -v)" "$(grep -c ^processor /proc/cpuinfo)" \
		"$(sed -n 's/^MemTotal: *\([0-9]*\).*/\1/p' /proc/meminfo)"
	printf ', "clocksource": "%s", "mode": "%s", "reps": %s, "disks": {' \
		"$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" "$mode" "$reps"
	sep=""
	for d in bwz bnowz fs xfs thin meta fio; do
		q=/sys/block/$(devname /dev/disk/$d)/queue
		a() { cat "$q/$1" 2> /dev/null || echo 0; }
		printf '%s"%s": {"dev": "%s", "size_bytes": %s, "logical_block_size": %s, ' \
			"$sep" "$d" "$(devname /dev/disk/$d)" \
			"$(($(cat "/sys/block/$(devname /dev/disk/$d)/size") * 512))" "$(a logical_block_size)"
		printf '"discard_max_bytes": %s, "write_zeroes_max_bytes": %s, "provision_max_bytes": %s, ' \
			"$(a discard_max_bytes)" "$(a write_zeroes_max_bytes)" "$(a provision_max_bytes)"
		printf '"write_cache": "%s"}' "$(cat "$q/write_cache" 2> /dev/null)"
		sep=", "
	done
	printf '}}\n'
} > "$out/env.json"
say "kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs, mode $mode, $reps repetition(s)"

# --- file systems -----------------------------------------------------------
mnt_meta=/mnt/meta mnt_fs=/mnt/fs mnt_xfs=/mnt/xfs
mkdir -p $mnt_meta $mnt_fs $mnt_xfs
mkfs.ext4 -q -F -E nodiscard /dev/disk/meta >> "$log" 2>&1 || die "mkfs.ext4 meta"
mount -t ext4 -o noinit_itable /dev/disk/meta $mnt_meta || die "mount meta"

# fs_ext4: a fresh ext4 on the fs disk, with the NO_HIDE_STALE gate open to
# root's group (the benchmark runs as root). commit=600 keeps the journal's
# timer out of the measurements (as k_nohide_stale does); noinit_itable
# keeps lazy inode-table zeroing out.
nhs_gate=1
fs_ext4() {
	grep -q " $mnt_fs " /proc/mounts && umount $mnt_fs
	mkfs.ext4 -q -F -E nodiscard /dev/disk/fs >> "$log" 2>&1 || die "mkfs.ext4 fs"
	if ! mount -t ext4 -o nohide_stale_gid=0,commit=600,noinit_itable /dev/disk/fs $mnt_fs \
		2>> "$log"; then
		nhs_gate=0
		mount -t ext4 -o commit=600,noinit_itable /dev/disk/fs $mnt_fs || die "mount fs"
	fi
}
fs_jbd2=/proc/fs/jbd2/$(devname /dev/disk/fs)-8/info

# --- allocation latency by path --------------------------------------------
case $mode in
smoke) sizes=1m writes=50 ;;
quick) sizes=1m,16m writes=1000 ;;
full) sizes=1m,16m,256m writes=1000 ;;
esac

thin_up() {
	blocks=$(cat "/sys/block/$(devname /dev/disk/thin)/size")
	dmsetup create bench-tmeta --table "0 32768 linear /dev/disk/thin 0" &&
		dmsetup create bench-tdata --table "0 $((blocks - 32768)) linear /dev/disk/thin 32768" &&
		dd if=/dev/zero of=/dev/mapper/bench-tmeta bs=4096 count=1 conv=fsync 2> /dev/null &&
		dmsetup create bench-pool --table "0 $((blocks - 32768)) thin-pool \
/dev/mapper/bench-tmeta /dev/mapper/bench-tdata 128 0" &&
		dmsetup message bench-pool 0 "create_thin 1" &&
		dmsetup create bench-thin --table "0 $((blocks - 32768)) thin /dev/mapper/bench-pool 1"
}
thin_down() {
	for d in bench-thin bench-pool bench-tdata bench-tmeta; do
		[ -e /dev/mapper/$d ] && dmsetup remove $d
	done
	return 0
}

alloc_paths() { # alloc_paths REP
	r=$1
	tag() { echo "\"section\": \"alloc\", \"path\": \"$1\", \"disk\": \"$2\", \"rep\": $r"; }
	A="alloclat --sizes $sizes --writes $writes"
	say "alloc (rep $r): block device paths"
	arun "$(tag blockdev-zero-range-wz bwz)" zero-range /dev/disk/bwz
	arun "$(tag blockdev-zero-range-nowz bnowz)" zero-range /dev/disk/bnowz
	arun "$(tag blockdev-punch bwz)" punch /dev/disk/bwz
	arun "$(tag blockdev-write-zeroes bwz)" write-zeroes /dev/disk/bwz
	arun "$(tag blockdev-none bwz)" none /dev/disk/bwz
	say "alloc (rep $r): provision on loop and dm-thin"
	fs_ext4
	/usr/sbin/truncate -s 1G $mnt_fs/loop.img
	if l=$(/usr/sbin/losetup -f --show --direct-io=on $mnt_fs/loop.img 2>> "$log"); then
		arun "$(tag provision-loop fs)" --jbd2 "$fs_jbd2" provision "$l"
		/usr/sbin/losetup -d "$l"
	else
		missing "$(tag provision-loop fs)" alloc_prepare "losetup failed"
	fi
	rm -f $mnt_fs/loop.img
	if thin_up >> "$log" 2>&1; then
		arun "$(tag provision-dm-thin thin)" provision /dev/mapper/bench-thin
	else
		missing "$(tag provision-dm-thin thin)" alloc_prepare "dm-thin pool setup failed"
	fi
	thin_down >> "$log" 2>&1
	say "alloc (rep $r): ext4 file paths"
	for m in nohide-stale fallocate written-zeros write-zeroes; do
		fs_ext4
		mkdir -p $mnt_fs/alloc
		arun "$(tag ext4-$m fs)" --jbd2 "$fs_jbd2" $m $mnt_fs/alloc
	done
	umount $mnt_fs
}

# --- object workloads -------------------------------------------------------
# Counts per mode: each cell should run for seconds under TCG (full) or
# long enough to be more than noise (quick).
case $mode in
smoke)
	W_ALL="create:4k,n=20"
	W_SUB=$W_ALL
	W_THIN="remove:64k,n=10"
	W_RDT=""
	W_NOCOPY=""
	W_XFS=$W_SUB
	W_JR=$W_ALL
	objects=2 ;;
quick)
	W_ALL="create:4k,n=300 create:4k,qd=16,n=600 create:64k,n=150 create:64k,qd=16,n=300
	       create:1m,n=30 create:1m,qd=16,n=60 create:4m,n=10 create:4m,qd=16,n=20
	       overwrite:4k,n=300 overwrite:4k,qd=16,n=600 read:4k,n=500 read:64k,n=300
	       remove:64k,n=200"
	W_SUB="create:4k,n=300 create:4k,qd=16,n=600 create:64k,n=150 create:1m,qd=16,n=60
	       overwrite:4k,n=300 remove:64k,n=200"
	W_THIN="create:64k,n=150 remove:1m,n=60"
	W_RDT="read:4k,n=2000"
	W_NOCOPY="create:1m,n=30 create:1m,qd=16,n=60"
	# files on xfs: W_SUB and every QD16 create and overwrite cell of W_ALL
	W_XFS="$W_SUB create:64k,qd=16,n=300 create:4m,qd=16,n=20 overwrite:4k,qd=16,n=600"
	# blockdev with RocksDB's own WAL (wz-rocksdb): W_ALL's creates and overwrites
	W_JR="create:4k,n=300 create:4k,qd=16,n=600 create:64k,n=150 create:64k,qd=16,n=300
	      create:1m,n=30 create:1m,qd=16,n=60 create:4m,n=10 create:4m,qd=16,n=20
	      overwrite:4k,n=300 overwrite:4k,qd=16,n=600"
	objects=8 ;;
full)
	W_ALL="create:4k,n=500 create:4k,qd=16,n=1000 create:4k,qd=64,n=1500
	       create:64k,n=250 create:64k,qd=16,n=500 create:64k,qd=64,n=600
	       create:1m,n=40 create:1m,qd=16,n=80 create:4m,n=12 create:4m,qd=16,n=24
	       overwrite:4k,n=500 overwrite:4k,qd=16,n=1000 read:4k,n=800 read:64k,n=500
	       remove:64k,n=300 remove:64k,qd=16,n=500"
	W_SUB="create:4k,n=500 create:4k,qd=16,n=1000 create:64k,n=250 create:1m,qd=16,n=80
	       overwrite:4k,n=500 remove:64k,n=300"
	W_THIN="create:64k,n=250 remove:1m,n=150"
	W_RDT="read:4k,n=4000"
	W_NOCOPY="create:1m,n=40 create:1m,qd=16,n=80"
	W_XFS="$W_SUB create:4k,qd=64,n=1500 create:64k,qd=16,n=500 create:64k,qd=64,n=600
	       create:4m,qd=16,n=24 overwrite:4k,qd=16,n=1000"
	W_JR=$W_ALL
	objects=8 ;;
esac

# rsbench TAG WORKLOADS ARGS...: one rawstore-bench run, metadata on the
# meta disk's ext4 (a fresh directory with --mkfs), removed afterwards.
rsbench() {
	t=$1 w=$2
	shift 2
	# a fresh database for every mkfs (written-zeros makes its store first)
	case " $* " in *" --mkfs "*) rm -rf $mnt_meta/db ;; esac
	# shellcheck disable=SC2086
	rawstore-bench --json --objects $objects --tag "$t" "$@" $w >> "$res" 2> /tmp/rsb.err
	rc=$?
	cat /tmp/rsb.err >> "$log"
	rm -rf $mnt_meta/db
	if [ $rc != 0 ] && [ $rc != 3 ]; then
		why=$(tail -1 /tmp/rsb.err | tr -d '"\\')
		case $why in
		*FALLOC_FL_WRITE_ZEROES*"not supported"*|*"not supported"*WRITE_ZEROES*)
			why="not supported by this kernel ($why)" ;;
		*"not supported"*) why="the kernel refuses it ($why)" ;;
		*) why="rawstore-bench exited $rc: $why" ;;
		esac
		echo "{$t, \"kind\": \"object\", \"workload\": \"(all)\", \"status\": \"missing\", \"why\": \"$why\"}" >> "$res"
	fi
	return $rc
}

objects_blockdev() { # REP
	r=$1
	otag() { echo "\"section\": \"objects\", \"backend\": \"blockdev\", \"variant\": \"$1\", \"disk\": \"$2\", \"rep\": $r"; }
	say "objects (rep $r): blockdev on virtio-blk with write-zeroes"
	rsbench "$(otag wz bwz)" "$W_ALL" --dev /dev/disk/bwz --meta $mnt_meta/db --mkfs ||
		say "blockdev wz failed (see guest.log)"
	# the same disk with RocksDB's own WAL (fdatasync on the meta disk's
	# ext4) instead of the device journal: the journal modes side by side
	say "objects (rep $r): blockdev on virtio-blk with write-zeroes, journal rocksdb"
	rsbench "$(otag wz-rocksdb bwz)" "$W_JR" --journal rocksdb --dev /dev/disk/bwz \
		--meta $mnt_meta/db --mkfs || say "blockdev wz-rocksdb failed (see guest.log)"
	# 4 KiB random reads from 16 threads (reads in flight: 16), against
	# fio's randread4k-qd16
	if [ -n "$W_RDT" ]; then
		say "objects (rep $r): blockdev, 4 KiB random reads from 16 threads"
		rsbench "$(otag wz bwz)" "$W_RDT" --threads 16 --dev /dev/disk/bwz \
			--meta $mnt_meta/db --mkfs || say "blockdev threaded reads failed (see guest.log)"
	fi
	# 1 MiB creates from the caller's buffer (rawstore_txn_write_nocopy), as
	# fio writes: the cells the "0.9x fio" target compares
	if [ -n "$W_NOCOPY" ]; then
		say "objects (rep $r): blockdev, 1 MiB creates from the caller's buffer"
		rsbench "$(otag wz-nocopy bwz)" "$W_NOCOPY" --nocopy --dev /dev/disk/bwz \
			--meta $mnt_meta/db --mkfs || say "blockdev nocopy creates failed (see guest.log)"
	fi
	say "objects (rep $r): blockdev on virtio-blk without write-zeroes"
	rsbench "$(otag nowz bnowz)" "$W_SUB" --dev /dev/disk/bnowz --meta $mnt_meta/db --mkfs ||
		say "blockdev nowz failed (see guest.log)"
	say "objects (rep $r): blockdev on dm-thin (reclaim: pool blocks before and after)"
	if thin_up >> "$log" 2>&1; then
		rsbench "$(otag dm-thin thin)" "$W_THIN" --dev /dev/mapper/bench-thin \
			--meta $mnt_meta/db --mkfs --thin-pool bench-pool ||
			say "blockdev dm-thin failed (see guest.log)"
	else
		missing "$(otag dm-thin thin)" object "dm-thin pool setup failed"
	fi
	thin_down >> "$log" 2>&1
	# Space policies (ZERO,PUNCH): zero-range prepared in the background with
	# background punching, against padding with inline punching.
	for p in prepare,background pad,inline; do
		v=policy-$(echo $p | tr , -)
		say "objects (rep $r): blockdev under space policy $p"
		rsbench "$(otag $v bwz)" "$W_SUB" --dev /dev/disk/bwz --meta $mnt_meta/db \
			--mkfs --space-policy $p || say "blockdev policy $p failed (see guest.log)"
	done
}

objects_prealloc() { # REP
	r=$1
	case $mode in
	smoke) fsize=256M ;;
	quick) fsize=768M ;;
	full) fsize=1G ;;
	esac
	for m in nohide-stale fallocate written-zeros write-zeroes; do
		t="\"section\": \"objects\", \"backend\": \"prealloc-file\", \"variant\": \"$m\", \"disk\": \"fs\", \"rep\": $r"
		say "objects (rep $r): prealloc-file prepared by $m ($fsize)"
		fs_ext4
		/usr/sbin/truncate -s $fsize $mnt_fs/store.img
		w=$W_SUB
		case $m in nohide-stale|fallocate) w=$W_ALL ;; esac
		# mkfs prepares the file by its preallocation policy; written zeros
		# are not a policy: mkfs (sparse), then zeros over the data area
		# (from 1 MiB, past both superblocks).
		case $m in
		nohide-stale) pp=stale ;;
		fallocate) pp=unwritten ;;
		write-zeroes) pp=write-zeroes ;;
		written-zeros) pp=none ;;
		esac
		if [ $m = written-zeros ]; then
			rm -rf $mnt_meta/db
			if rawstore mkfs --force $mnt_fs/store.img $mnt_meta/db >> "$log" 2>&1 &&
				dd if=/dev/zero of=$mnt_fs/store.img bs=1M seek=1 \
					count=$(($(stat -c %s $mnt_fs/store.img) / 1048576 - 1)) \
					conv=notrunc,fsync oflag=direct 2>> "$log"; then
				rsbench "$t" "$w" --dev $mnt_fs/store.img --meta $mnt_meta/db
			else
				missing "$t" object "mkfs or writing zeros failed (see guest.log)"
			fi
		else
			rsbench "$t" "$w" --dev $mnt_fs/store.img --meta $mnt_meta/db --mkfs \
				--prealloc-policy $pp
		fi
		rm -f $mnt_fs/store.img
	done
	umount $mnt_fs
}

objects_files() { # REP
	r=$1
	say "objects (rep $r): files on ext4"
	fs_ext4
	mkdir -p $mnt_fs/files
	rsbench "\"section\": \"objects\", \"backend\": \"files\", \"variant\": \"ext4\", \"disk\": \"fs\", \"rep\": $r" \
		"$W_ALL" --backend files --dev $mnt_fs/files --meta $mnt_meta/db ||
		say "files ext4 failed (see guest.log)"
	umount $mnt_fs
	say "objects (rep $r): files on xfs"
	mkfs.xfs -q -f -K /dev/disk/xfs >> "$log" 2>&1 || die "mkfs.xfs"
	mount -t xfs /dev/disk/xfs $mnt_xfs || die "mount xfs"
	mkdir -p $mnt_xfs/files
	rsbench "\"section\": \"objects\", \"backend\": \"files\", \"variant\": \"xfs\", \"disk\": \"xfs\", \"rep\": $r" \
		"$W_XFS" --backend files --dev $mnt_xfs/files --meta $mnt_meta/db ||
		say "files xfs failed (see guest.log)"
	umount $mnt_xfs
}

# --- aging and sustained load -------------------------------------------------
# Aging (issue 12): a store on the first AGE_SIZE of a disk runs the object
# workloads fresh, is filled to 90% of its data space with mixed sizes
# (4 KiB..4 MiB, log-uniform) and interleaved removes (rawstore-bench age:90),
# then runs the same workloads aged; rawstore-bench prints the free space
# and its fragmentation score before, after the fill and at the end.
# Sustained load (issue 13 item 7): LOAD_THREADS clients for LOAD_SECS on a
# fresh store (rawstore-bench load:SECONDS).
case $mode in
smoke)
	AGE_SIZE=64m AGE_OBJ=1 AGE_PREALLOC=0
	W_AGE="create:4k,n=10 create:64k,n=10 create:1m,n=2 overwrite:4k,n=10 read:4k,n=20"
	LOAD_SECS=3 LOAD_THREADS=4 ;;
quick)
	AGE_SIZE=384m AGE_OBJ=4 AGE_PREALLOC=0
	W_AGE="create:4k,n=150 create:64k,n=100 create:1m,n=16 overwrite:4k,n=150 read:4k,n=300"
	LOAD_SECS=15 LOAD_THREADS=8 ;;
full)
	# the quick counts, three repetitions: adds about 5 minutes
	AGE_SIZE=512m AGE_OBJ=4 AGE_PREALLOC=1
	W_AGE="create:4k,n=150 create:64k,n=100 create:1m,n=16 overwrite:4k,n=150 read:4k,n=300"
	LOAD_SECS=20 LOAD_THREADS=16 ;;
esac

aging_all() { # REP
	r=$1
	atag() { echo "\"section\": \"aging\", \"backend\": \"$1\", \"variant\": \"$2\", \"disk\": \"$3\", \"rep\": $r"; }
	say "aging (rep $r): blockdev, $AGE_SIZE store on virtio-blk, fresh, filled to 90%, aged"
	rsbench "$(atag blockdev wz bwz)" "$W_AGE age:90 $W_AGE" --dev /dev/disk/bwz \
		--meta $mnt_meta/db --mkfs --store-size $AGE_SIZE --objects $AGE_OBJ ||
		say "aging blockdev failed (see guest.log)"
	# prealloc-file (NO_HIDE_STALE) in --full, first repetition only (time)
	[ "$AGE_PREALLOC" = 1 ] && [ "$r" = 1 ] || return 0
	say "aging (rep $r): prealloc-file (nohide-stale), $AGE_SIZE"
	fs_ext4
	/usr/sbin/truncate -s $AGE_SIZE $mnt_fs/age.img
	rsbench "$(atag prealloc-file nohide-stale fs)" "$W_AGE age:90 $W_AGE" \
		--dev $mnt_fs/age.img --meta $mnt_meta/db --mkfs --prealloc-policy stale \
		--objects $AGE_OBJ || say "aging prealloc-file failed (see guest.log)"
	rm -f $mnt_fs/age.img
	umount $mnt_fs
}

load_all() { # REP
	r=$1
	say "load (rep $r): blockdev, $LOAD_THREADS clients for $LOAD_SECS s"
	rsbench "\"section\": \"load\", \"backend\": \"blockdev\", \"variant\": \"wz\", \"disk\": \"bwz\", \"rep\": $r" \
		"load:$LOAD_SECS" --dev /dev/disk/bwz --meta $mnt_meta/db --mkfs \
		--threads $LOAD_THREADS || say "load blockdev failed (see guest.log)"
}

# --- recovery: the replay of a full journal ring (issue 36) ---------------
# rawstore-bench recovery:4k: a child process fills the device journal's
# ring with 4 KiB creates up to its next trim and dies without closing;
# the reopen that replays every record since the trim point is timed
# beside a clean open of the same store.  The default ring of the bwz disk
# (1/64 of it) and the largest default ring (256 MiB, a 16 GiB device's).
recovery_all() { # REP
	r=$1
	[ "$mode" = smoke ] && return 0
	for js in default 256m; do
		more=
		[ "$js" = default ] || more="--journal-size $js"
		say "recovery (rep $r): blockdev, replay of a full ring ($js journal)"
		# shellcheck disable=SC2086
		rsbench "\"section\": \"recovery\", \"backend\": \"blockdev\", \"variant\": \"wz\", \"disk\": \"bwz\", \"journal\": \"$js\", \"rep\": $r" \
			recovery:4k --dev /dev/disk/bwz --meta $mnt_meta/db --mkfs $more ||
			say "recovery blockdev $js failed (see guest.log)"
	done
}

# --- fio: the device limit --------------------------------------------------
case $mode in
smoke) fio_rt=2 ;;
quick) fio_rt=5 ;;
full) fio_rt=10 ;;
esac
fio_one() { # fio_one REP NAME ARGS...
	r=$1 n=$2
	shift 2
	f=$out/fio/$n-rep$r.json
	fio --name="$n" --filename=/dev/disk/fio --ioengine=io_uring --direct=1 \
		--size=1G --runtime=$fio_rt --time_based --output-format=json "$@" > "$f" 2>> "$log" ||
		{ say "fio $n failed (see guest.log)"; rm -f "$f"; return 0; }
	echo "{\"section\": \"fio\", \"job\": \"$n\", \"disk\": \"fio\", \"rep\": $r, \"kind\": \"fio\", \"file\": \"fio/$n-rep$r.json\"}" >> "$res"
}
fio_all() { # REP
	r=$1
	say "fio (rep $r): 4 KiB sync writes QD1"
	fio_one "$r" sync4k-qd1 --rw=write --bs=4k --iodepth=1 --fdatasync=1
	[ "$mode" = smoke ] && return 0
	say "fio (rep $r): 4 KiB random writes QD16, 1 MiB sequential writes QD1 and QD16"
	fio_one "$r" randwrite4k-qd16 --rw=randwrite --bs=4k --iodepth=16
	fio_one "$r" seq1m-qd1 --rw=write --bs=1m --iodepth=1
	fio_one "$r" seq1m-qd16 --rw=write --bs=1m --iodepth=16
	# after the writes above: it reads written blocks, not holes; over
	# the working set of rawstore's reads (its --objects 4 MiB objects),
	# not the whole 1 GiB, so that both read from the same span of a disk
	rd_ws=$((objects * 4))M
	say "fio (rep $r): 4 KiB random reads QD16 over $rd_ws"
	fio_one "$r" randread4k-qd16 --rw=randread --bs=4k --iodepth=16 --size=$rd_ws
	# the same reads in rawstore's shape: 16 threads, one read each at a time
	fio_one "$r" randread4k-16x1 --rw=randread --bs=4k --iodepth=1 --numjobs=16 \
		--group_reporting --size=$rd_ws
}

for r in $(seq 1 $reps); do
	alloc_paths "$r"
	objects_blockdev "$r"
	objects_prealloc "$r"
	objects_files "$r"
	aging_all "$r"
	load_all "$r"
	recovery_all "$r"
	fio_all "$r"
done
umount $mnt_meta
say "done: $(wc -l < "$res") result lines"
if dmesg | grep -E 'WARNING:|BUG:|Oops|general protection' >> "$log"; then
	say "the kernel logged warnings during the run (see guest.log)"
	echo '{"section": "env", "kind": "kernel_warnings", "status": "warned"}' >> "$res"
fi

# --- power cuts: the v_powercut campaign (full only; issue 13 item 1) -------
# tests/vm/v_powercut.sh in full mode on the fs disk (free by now; the
# campaign zeroes the regions it uses). Its last line is the JSON summary;
# suite.sh checks the kernel log of the campaign itself.
powercut_campaign() {
	say "power cuts: v_powercut full campaign, ${PC_CUTS:-150} cut points, on the fs disk" \
		"(see guest.log)"
	PC_MODE=full PC_CUTS=${PC_CUTS:-150} PC_SCRATCH=/dev/disk/fs sh "$here/suite.sh" v_powercut \
		> /tmp/bench-powercut.out 2>&1
	cat /tmp/bench-powercut.out >> "$log"
	# the concurrent campaign's line first, then the serial one's (the last)
	pcc_line=$(grep '^{"kind":"powercut_concurrent"' /tmp/bench-powercut.out | tail -1)
	[ -z "$pcc_line" ] || echo "{\"section\": \"powercut\", ${pcc_line#\{}" >> "$res"
	pc_line=$(grep '^{"kind":"powercut"' /tmp/bench-powercut.out | tail -1)
	if [ -n "$pc_line" ]; then
		echo "{\"section\": \"powercut\", ${pc_line#\{}" >> "$res"
		say "power cuts: $pc_line"
	else
		missing '"section": "powercut"' powercut \
			"the campaign did not finish: $(grep '^RESULT' /tmp/bench-powercut.out | grep -v PASS |
				head -1 | tr -d '"\\')"
	fi
}
[ "$mode" = full ] && powercut_campaign
sync
exit 0
