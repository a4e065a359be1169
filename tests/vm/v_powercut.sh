# v_powercut.sh: power cuts at the device level, replayed from dm-log-writes
# logs, with lost, reordered and torn un-flushed writes (issue 13 item 1;
# the split flush domains, in-flight writes, targeted cuts, double crashes
# and reopen-twice checks: issue 36 part 5).
#
# The serial campaign: two devices, two logs, two flush domains. The store
# has two halves on two devices, each with a volatile cache of its own: the
# raw data device (64 MiB) and an ext4 file system holding the RocksDB
# directory (128 MiB). Each sits on its own dm-log-writes device with its
# own log (pc-lwd logs the data device into pc-logd, pc-lwm the metadata
# device into pc-logm), so a flush of one (an fsync on ext4, a device
# flush of the store) makes only that device's writes durable, as on real
# hardware. (One log under both, as before issue 36, let an ext4 flush make
# the data device's writes durable too, and the reverse.) t_powercut runs a
# write-heavy workload on them (mkfs with a 1 MiB journal, PC_JSIZE, so that
# it trims often, then PC_TXNS transactions: large writes, deferred small
# overwrites, removes, clones, renames, truncates, omap, a reclaim every 8).
#
# Marks the logs agree on. Two logs have no common clock, so the workload
# writes every mark into both logs, in the same order, under one lock: each
# acknowledgement ("ack-N", after transaction N is acknowledged) and, from
# the store's sync hook (debug.h, rs_debug_set_sync_hook), "ts-N" before
# and "td-N" after the N-th RocksDB WAL sync that makes the journal's trim
# point "T" durable (a trim, an open that replayed, a clean close). A mark
# is logged when it is sent; a write or a flush is logged when it completes
# (a non-FUA write with the next flush, see t_lwreplay.c). So whatever a
# log holds before a mark happened before the mark was sent, and whatever
# is issued after the mark is logged after it.
#
# Why a cut is a pair of points between the same two marks. The store
# makes one device's writes depend on the other's durability only across a
# wait: the journal writes a record, flushes the data device, and only then
# gives the batch to RocksDB, which writes it to the metadata device when
# the next trim syncs the WAL (between "ts-N" and "td-N"); a trim makes "T"
# durable (by "td-N") before the ring behind it is written again. These
# waits are exactly where the marks are: every write of one device that
# depends on the other's state lies after a mark in its own log that in
# the other's log follows everything it depends on. A power cut at time t
# leaves (the data device's state at t) x (the metadata device's state at
# t), each being: everything up to its own last flush completed before t,
# plus any subset (in any order, torn at its atoms) of its writes since
# (completed or still in flight at t, not yet covered by a flush of its
# own). Take t between marks g and g'. In each log, the entries logged
# before t are those before g plus some prefix of the entries between g and
# g'; no entry between g and g' of one log depends on an entry between g
# and g' of the other (a dependence crosses a mark). So a cut chooses, per
# device, a point between g and g' (no later than g' and, as a flush is
# logged when it completes, its state is what that device had made durable
# by t plus its volatile window), and any two such points together form a
# state some power cut (some timing of the same run) leaves: no pair
# between the same two marks is impossible, and every power cut is such a
# pair. Pairs across a mark are not taken (they could be impossible: the
# ring overwritten after a trim whose "T" the other device lost).
# Limit: a write that RocksDB issues on its own (a background memtable
# flush or compaction, or the kernel writing back the WAL's pages before
# the trim syncs them) holds only batches of records the data device had
# already flushed; it is not marked, and the model assumes it happens
# after the mark that follows their acknowledgement (a memtable flush in
# the microseconds between a group's batch and its acknowledgement's mark
# would break that; the workload's metadata is far too small to flush a
# memtable).
#
# In-flight writes. dm-log-writes logs a write when it completes and holds
# a completed non-FUA write back until the next flush, so a write in flight
# at a cut (or completed but not yet flushed, and logged behind a mark) is
# after the cut's entry in the log. The log cannot tell when a write of a
# flush's group was issued, only that it completed before the flush was
# issued. So t_lwreplay's "inflight" option adds the writes from the cut up
# to the next flush of that device to its volatile window, but only when no
# mark lies between (every such write was then issued before the next
# mark, and by the argument above may have landed at the cut or at a later
# time between the same marks, which is an equally valid cut). Past a mark
# the log cannot say which of them came before it, and they are left out:
# they never land (as before issue 36). Every variant but prefix takes it.
#
# Cuts (kinds; "XD:YM" names a cut: the data log cut before entry XD, the
# metadata log before entry YM):
#   mark     right after a mark (an acknowledgement or a trim's start) in
#            both logs, each with its volatile window
#   split    before a flush of one device (its group written, not durable)
#            with the other device just before the next mark (everything
#            of its interval done): the cuts one log could not give
#   random   a random entry of one log, the other right after the mark
#            before it
#   trim     right after each trim ("td-N", the WAL sync that made "T"
#            durable): PC_TCUTS of them (quick 2, full all)
#   trimrec  the data device just before its first flush after "td-N" (the
#            record that follows the trim and its data written, not
#            flushed), the metadata device right after "td-N"
#   rec      a double crash's recovery (see below) cut: right after its
#            trim point's sync, right after "rdone", and (full) before each
#            of its flushes
#   dc       the double crash: after the acknowledgements and before the
#            flushes of the transactions that follow the recovery (quick: 2
#            of each, spread evenly; full: all)
# Each cut is replayed from both logs (incrementally onto pc-rep, then
# copied to pc-chk) and one variant of both windows applied on top:
#   prefix   the windows in log order (a plain replay up to the cut)
#   reorder  a random subset of each window's volatile writes (in-flight
#            ones included) in a random order
#   torn     as reorder, and some multi-sector writes torn (a random prefix
#            or a random set of their sectors)
#   nodata   (trim, trimrec, rec, dc: when the data device's window holds a
#            write into the journal's ring and another) every ring write
#            lands, every other write of the data window is lost: a record
#            kept, its data dropped (the replay must drop the record)
#   halfdata as nodata, each non-ring write lost with probability 1/2
# Then ext4 is mounted (its journal recovers) and t_powercut check asserts
# that the store opens, holds exactly the state after the last acknowledged
# transaction (or the next one, durable before its mark), byte for byte with
# its omap, and that a deep fsck is clean (no leak, no double use, every
# checksum; a finding fails the variant). Then the reopen-twice check
# (PC_AGAIN transactions, 2): t_powercut more acknowledges PC_AGAIN more
# transactions on the recovered store and dies without closing (a crash
# right after its last acknowledgement: RocksDB's unsynced WAL buffer is
# lost), and check runs again: every one of them must be there, with a
# clean deep fsck. Every variant of every kind takes both checks.
#
# The double crash (PC_DCRASH of the trimrec nodata variants whose recovery
# dropped a record: quick 1, full 3). The sequence of the dropped-record
# bug: crash 1 leaves the record after a trim without its data; the
# recovery drops it; the reopened store acknowledges more; crash 2 comes
# before the next trim. The variant is built again and saved (pc-pre); its
# recovery and PC_DTXNS (3) more transactions run on two more dm-log-writes
# devices (pc-lw2d into pc-log2d, pc-lw2m into pc-log2m; t_powercut cont
# marks "rstart", "rdone", each "ack-N", "ts-N"/"td-N" and "cdone"); those
# logs are cut as above (kinds rec and dc) on top of pc-pre, and each cut
# must hold the last acknowledgement before it (crash 1's, or the
# recovered state, or the continuation's), pass a deep fsck and the
# reopen-twice check. With the fix of the dropped-record bug reverted,
# crash 2 loses the transactions acknowledged after crash 1.
#
# The checker must be able to fail: at the last cut it is also asked for
# the state two transactions back, which must be refused. A variant that
# cannot be built (or brought up) is a failure of its cut, never skipped:
# powercut/unbuilt-variant-fails runs the counting with a variant that
# t_lwreplay refuses and checks that it comes back as one more failure.
# Results: powercut/setup, /workload, /write-paths, /replay (every prefix
# variant), /reorder, /torn, /split-domains (every variant of the split
# cuts), /after-trim (trim and trimrec), /record-without-data (the nodata
# and halfdata variants, and at least one recovery dropped a record),
# /after-dropped-record (rec), /double-crash (dc), /reopen-twice (one for
# every variant that passed), /checker-refuses-old-state,
# /unbuilt-variant-fails.
#
# At the end one JSON line sums the run:
#   {"kind":"powercut","mode":"quick"|"full","cut_points":N,"variants":N,
#    "split_cut_points":N,"trim_cut_points":N,"after_drop_cut_points":N,
#    "double_crash_cut_points":N,"reopen_twice":N,
#    "txns_checked":N,"bytes_verified":N,"failures":N,"seconds":S}
# (variants: checks run; txns_checked: acknowledged transactions verified,
# summed over the checks; bytes_verified: object bytes read and compared).
#
# The concurrent campaign below keeps one log under both halves (one flush
# domain; its configurations' stores are files on ext4 or dm-thin volumes,
# whose own flushes reach the whole logged device).
#
# Env (read in the guest):
#   PC_MODE      quick (default, CI) or full (the benchmark's campaign)
#   PC_TXNS      transactions (quick 160, full 240: the 1 MiB journal trims
#                about every 70 of them)
#   PC_CUTS      serial: that many mark, split and random cuts, a third
#                each, marks and splits spread evenly (quick 9);
#                "points" or "all" (full): every mark and split cut and 100
#                random ones. Concurrent: at most that many cut points, two
#                thirds flush/FUA/mark points spread evenly, one third
#                random; "points": every flush, FUA and mark point and 100
#                random ones; "all": every entry after mkfs
#   PC_TCUTS     trims cut (trim and trimrec cuts; quick 2, full all)
#   PC_DCRASH    double crashes (quick 1, full 3); PC_DTXNS transactions
#                after its first recovery (3)
#   PC_AGAIN     reopen-twice: transactions before the second crash (2; 0
#                skips the check)
#   PC_JSIZE     the serial store's journal, bytes (1048576)
#   PC_REORDER   reorder variants per cut that has volatile writes (1)
#   PC_TORN      torn variants per cut that has a write that can tear (1)
#   PC_ATOM      concurrent: "FROM UNIT" (512-byte sectors): writes at or
#                past FROM tear only at multiples of UNIT (default: the ext4
#                part at 4 KiB); serial: the data log tears at every sector,
#                the metadata log at 4 KiB
#   PC_CUTLIST   only these cut points (to redo a failure; serial: "XD:YM")
#   PC_REUSE=1   skip the workload and replay the logs already on the scratch
#                disk (the log depends on timing, not only on PC_SEED, so a
#                failure is redone on its own log: keep the disk with
#                vm/run --disk scratch:4G:file=PATH)
#   PC_SEED      the workload's seed (1); each variant's seed is printed
#   PC_SCRATCH   the disk to use (/dev/disk/scratch, at least 2.5 GiB)
#   PC_ONLY      "serial": this campaign alone (no concurrent one); names of
#                concurrent configurations: those alone (see below)
# A full campaign by hand (240 transactions, every mark and split cut, 100
# random cuts, every trim, three double crashes: not timed since issue 36
# part 5; the serial campaign of 100 transactions before it, about 350
# points and 100 random cuts and 600 variants, took over an hour under TCG):
#   vm/run --mem 2G --timeout 14400 --disk scratch:4G -- \
#       env PC_MODE=full /opt/rawstore/tests/suite.sh v_powercut
# (the journal's shapes alone, PC_ONLY=thin-wrap-deferred,
# file-rocksdb-inline-errors,file-wrap-background: about 130 cut points,
# 50 of them at wrap-around, and 48 cuts of 12 recoveries, 17 minutes)

pc_mode=${PC_MODE:-quick}
case $pc_mode in
full) pc_txns=${PC_TXNS:-240} pc_cuts=${PC_CUTS:-points} pc_nre=${PC_REORDER:-1} pc_nto=${PC_TORN:-1} ;;
*) pc_mode=quick
	pc_txns=${PC_TXNS:-160} pc_cuts=${PC_CUTS:-9} pc_nre=${PC_REORDER:-1} pc_nto=${PC_TORN:-1} ;;
esac
pc_seed=${PC_SEED:-1}
# The campaign's scratch files live in a directory of its own: a caller that
# captured the suite's output in a file of the same name (bench-guest.sh did,
# /tmp/pc.out) had it truncated by every variant, and the failure path's
# "sed ... pc.out" then read the capture while appending to it, doubling it
# per failure (15.7 GB of NULs in the guest log, grep killed by the OOM).
pc_tmp=$(mktemp -d /tmp/powercut.XXXXXX)
pc_dm=/usr/sbin/dmsetup
pc_scratch=${PC_SCRATCH:-/dev/disk/scratch}
# 512-byte sectors
pc_data=131072			# 64 MiB raw data device
pc_meta=262144			# 128 MiB ext4 for RocksDB
pc_size=$((pc_data + pc_meta))
pc_log=3145728			# 1.5 GiB log
pc_orig=$pc_log
pc_rep=$((pc_orig + pc_size))
pc_chk=$((pc_rep + pc_size))
pc_pre=$((pc_chk + pc_size))	# a variant before its recovery (crash in replay)
pc_log2=$((pc_pre + pc_size))	# the recovery's log (256 MiB)
pc_log2_size=524288
# Torn writes: the data device tears at every 512-byte sector (the store
# must survive that); the ext4 holding RocksDB at its 4 KiB block. With
# PC_ATOM="0 1" ext4 tears at 512 bytes too, and then a torn write of its
# superblock (1 KiB at byte 1024, rewritten in place without FUA) leaves an
# ext4 that refuses to mount (EBADMSG, superblock checksum): ext4's limit,
# not the store's (seen in 4 of 165 such torn variants).
pc_atom=${PC_ATOM:-"$pc_data 8"}

pc_cleanup() {
	umount /mnt/pc 2> /dev/null
	umount /mnt/pcc 2> /dev/null
	umount /mnt/pcd 2> /dev/null
	for d in pc-rdata pc-rmeta pc-rpool pc-rpdata pc-rpmeta pc-lw2 pc-lw2d pc-lw2m \
		pc-lwd pc-lwm pc-log2d pc-log2m pc-logd pc-logm pc-origdata pc-origmeta \
		pc-repdata pc-repmeta pc-chkdata pc-chkmeta pc-log2 pc-pre \
		pc-cdata pc-cmeta pc-chk pc-data pc-meta pc-lw pc-rep pc-orig pc-log; do
		$pc_dm remove "$d" 2> /dev/null
	done
}

pc_split() { # pc_split UNDER PREFIX: PREFIX-data and PREFIX-meta over UNDER
	$pc_dm create "$2data" --table "0 $pc_data linear $1 0" &&
		$pc_dm create "$2meta" --table "0 $pc_meta linear $1 $pc_data"
}

# pc_build_main CUT MODE VSEED: one variant of the cut on pc-chk (the
# prefix replayed on pc-rep, then the window as MODE says).
pc_build_main() {
	t_lwreplay copy /dev/mapper/pc-rep /dev/mapper/pc-chk &&
		t_lwreplay variant /dev/mapper/pc-log /dev/mapper/pc-chk "$1" "$2" "$3" $pc_atom
}
pc_build=pc_build_main

# pc_variant CUT MODE VSEED ACKS: build one variant of the cut on pc-chk
# ($pc_build: by default pc_build_main), bring it up
# ($pc_up), run the checker ($pc_check ACKS, output in $pc_tmp/pc.out) and take
# it down ($pc_down). Returns 0 if the check passed, 1 if it failed, 2 if
# the variant could not be built or brought up (a failure as well).
pc_variant() {
	if ! $pc_build "$1" "$2" "$3" > $pc_tmp/pc.var 2>&1; then
		echo "cannot build the variant: $(cat $pc_tmp/pc.var)" > $pc_tmp/pc.out
		return 2
	fi
	if ! $pc_up 2> $pc_tmp/pc.err; then
		echo "cannot bring the variant up: $(cat $pc_tmp/pc.err)" > $pc_tmp/pc.out
		$pc_down 2> /dev/null
		return 2
	fi
	$pc_check "$4" > $pc_tmp/pc.out 2>&1
	rc=$?
	$pc_down
	[ $rc = 0 ] || return 1
}

# pc_run_variant CUT MODE VSEED ACKS WHAT: pc_variant, counted. A variant
# that cannot be built is a failure like a check that fails (it is not
# skipped: the cut would be silently unchecked).
pc_run_variant() {
	pc_variant "$1" "$2" "$3" "$4"
	rc=$?
	nvar=$((nvar + 1))
	[ "$2" = prefix ] || eval "n_$2=\$((n_$2 + 1))"
	if [ $rc = 0 ]; then
		t=$(sed -n 's/^# verified [0-9]* bytes, \([0-9]*\) acknowledged.*/\1/p' $pc_tmp/pc.out)
		ntx=$((ntx + ${t:-$4}))
		nbytes=$((nbytes + $(sed -n 's/^# verified \([0-9]*\) bytes.*/\1/p' \
			$pc_tmp/pc.out | head -1) + 0))
		grep -q 'durable' $pc_tmp/pc.out && states_next=$((states_next + 1))
		[ "$2" = prefix ] && [ "$pc_mode" = full ] ||
			echo "    $5: ok$(grep -q durable $pc_tmp/pc.out && echo ', durable past its mark')"
		return 0
	fi
	nfail=$((nfail + 1))
	eval "fail_$2=\$((fail_$2 + 1))"
	echo "    $5: FAIL"
	sed 's/^/        /' $pc_tmp/pc.var $pc_tmp/pc.out
	echo "        redo (on this log): env PC_REUSE=1 PC_CUTLIST=$1" \
		"PC_MODE=$pc_mode PC_REORDER=$pc_nre PC_TORN=$pc_nto" \
		"PC_SEED=$pc_seed PC_ONLY=${pc_name:-serial}$pc_redo suite.sh v_powercut;" \
		"variant $2 seed $3"
	return 1
}

# pc_cut_points ENTRIES START K: K cut points (two thirds among the flush,
# FUA and mark points, spread evenly, one third random; "points": all of
# those and 100 random ones; "all": every entry after START).
pc_cut_points() {
	if [ -n "${PC_CUTLIST:-}" ]; then
		for cut in $PC_CUTLIST; do echo "$cut"; done | sort -n -u
		return
	fi
	if [ "$3" = all ]; then
		seq $(($2 + 1)) "$(wc -l < "$1")"
		return
	fi
	if [ "$3" = points ]; then
		npoint=1000000000 nrand=100
	else
		npoint=$(($3 * 2 / 3)) nrand=$(($3 / 3))
	fi
	{
		awk -v s="$2" '$1 > s && $2 ~ /F/ { print $1 }
			$1 > s && $2 ~ /[UM]/ { print $1 + 1 }' "$1" | sort -n -u |
			awk -v k="$npoint" '{ a[NR] = $1 } END {
				if (NR == 0) exit; step = NR / k; if (step < 1) step = 1;
				for (i = 1; i <= NR; i += step) print a[int(i)]; print a[NR] }'
		awk -v s="$2" -v n="$(wc -l < "$1")" -v k="$nrand" -v seed="$pc_seed" \
			'BEGIN { srand(seed); for (i = 0; i < k; i++)
				print s + 1 + int(rand() * (n - s)) }'
	} | sort -n -u
}

# pc_cuts CUTS: replay the log to each cut point of the file CUTS
# (incrementally on pc-rep) and run its variants through pc_run_variant.
# $pc_acks CUT prints the acknowledgements the checker gets. Sets ncut,
# nvar, ntx, nbytes, nfail, fail_*, n_reorder, n_torn, states_next,
# last_cut, last_acks.
pc_cuts() {
	prev=0 ncut=0 nvar=0 ntx=0 nbytes=0 nfail=0 states_next=0
	fail_prefix=0 fail_reorder=0 fail_torn=0 n_reorder=0 n_torn=0 last_cut='' last_acks=''
	t_lwreplay zero /dev/mapper/pc-rep
	while read -r cut; do
		set -- $(t_lwreplay window /dev/mapper/pc-log "$cut" $pc_atom)
		w=$1 nvol=$2 nmulti=$3
		[ -n "$w" ] && [ "$w" -ge "$prev" ] || { echo "    cut $cut: no window"; break; }
		t_lwreplay replay /dev/mapper/pc-log /dev/mapper/pc-rep "$prev" "$w" || break
		prev=$w
		acks=$($pc_acks "$cut")
		variants="prefix:0"
		if [ "$nvol" -gt 0 ]; then
			i=1
			while [ $i -le "$pc_nre" ]; do variants="$variants reorder:$i"; i=$((i + 1)); done
			if [ "$nmulti" -gt 0 ]; then
				i=1
				while [ $i -le "$pc_nto" ]; do
					variants="$variants torn:$((pc_nre + i))"; i=$((i + 1))
				done
			fi
		fi
		ncut=$((ncut + 1))
		for v in $variants; do
			mode=${v%:*}
			vseed=$((pc_seed * 1000003 + cut * 16 + ${v#*:}))
			pc_run_variant "$cut" "$mode" "$vseed" "$acks" \
				"cut $cut (window $w, $nvol volatile, acked $acks) $mode seed $vseed" &&
				$pc_after "$cut" "$mode" "$vseed" "$acks"
		done
		last_cut=$cut last_acks=$acks
	done < "$1"
}

# --- The serial campaign: two devices, two logs, two flush domains ----------
#
# Layout (512-byte sectors) inside the regions above: pc-log holds the data
# device's log (pc-logd, its first pc_logd sectors) and the metadata
# device's (pc-logm, the rest); pc-log2 likewise the logs of a double
# crash's recovery (pc-log2d, pc-log2m). pc-orig, pc-rep, pc-chk are seen
# as their two halves too (pc-origdata, pc-origmeta, ...).
pc_logd=2097152			# 1 GiB
pc_log2d=393216			# 192 MiB
pc_jsize=${PC_JSIZE:-1048576}	# the serial store's device journal (mkfs --journal-size)
pc_again=${PC_AGAIN:-2}		# reopen-twice: transactions before the second crash
pc_dtxns=${PC_DTXNS:-3}		# double crash: transactions after the first recovery
if [ "$pc_mode" = full ]; then
	pc_tcuts=${PC_TCUTS:-all} pc_dcrash=${PC_DCRASH:-3} pc_drcuts=all pc_dccuts=all pc_dmcuts=all
else
	pc_tcuts=${PC_TCUTS:-2} pc_dcrash=${PC_DCRASH:-1} pc_drcuts=0 pc_dccuts=2 pc_dmcuts=2
fi

ps_regions() {
	$pc_dm create pc-logd --table "0 $pc_logd linear /dev/mapper/pc-log 0" &&
		$pc_dm create pc-logm --table \
			"0 $((pc_log - pc_logd)) linear /dev/mapper/pc-log $pc_logd" &&
		$pc_dm create pc-log2d --table "0 $pc_log2d linear /dev/mapper/pc-log2 0" &&
		$pc_dm create pc-log2m --table \
			"0 $((pc_log2_size - pc_log2d)) linear /dev/mapper/pc-log2 $pc_log2d" &&
		pc_split /dev/mapper/pc-orig pc-orig && pc_split /dev/mapper/pc-rep pc-rep &&
		pc_split /dev/mapper/pc-chk pc-chk
}

pc_workload() { # the logged workload; 0 when it ran to its last ack
	local log=$pc_tmp/pc.log rc

	for d in pc-log pc-orig pc-rep; do
		t_lwreplay zero /dev/mapper/$d ||
			{ kt_result powercut/setup FAIL "cannot zero $d"; return 1; }
	done
	if ! $pc_dm create pc-lwd --table \
		"0 $pc_data log-writes /dev/mapper/pc-origdata /dev/mapper/pc-logd" 2> $pc_tmp/pc.err ||
		! $pc_dm create pc-lwm --table \
		"0 $pc_meta log-writes /dev/mapper/pc-origmeta /dev/mapper/pc-logm" 2>> $pc_tmp/pc.err; then
		kt_result powercut/setup FAIL "dm-log-writes: $(cat $pc_tmp/pc.err)"
		return 1
	fi
	/usr/sbin/mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 \
		/dev/mapper/pc-lwm && mount -t ext4 /dev/mapper/pc-lwm /mnt/pc ||
		{ kt_result powercut/setup FAIL "ext4 on the logged metadata device"; return 1; }
	kt_result powercut/setup PASS

	echo "=== powercut/workload: $pc_txns transactions, seed $pc_seed, journal $pc_jsize bytes"
	timeout -s KILL 900 t_powercut run /dev/mapper/pc-lwd /mnt/pc/meta \
		"$pc_txns" "$pc_seed" pc-lwd,pc-lwm "$pc_jsize" > "$log" 2>&1
	rc=$?
	grep '^JOURNAL\|^SYNCS' "$log" | sed 's/^/    /'
	tail -3 "$log" | sed 's/^/    /'
	umount /mnt/pc
	$pc_dm remove pc-lwd; $pc_dm remove pc-lwm
	if [ $rc != 0 ] || ! grep -qx "ACK $pc_txns" "$log"; then
		kt_result powercut/workload FAIL "(exit $rc)"
		return 1
	fi
	kt_result powercut/workload PASS
	# The cuts hit all three write paths: new data deferred through the WAL
	# (deferred_new_max is on: the disks report themselves rotational),
	# deferred overwrites, and data written in place (device bytes beyond the
	# deferred ones).
	set -- $(sed -n 's/^DEFERRED new_max \([0-9]*\) new_bytes \([0-9]*\) overwrite_bytes \([0-9]*\) other_bytes \([0-9]*\)$/\1 \2 \3 \4/p' "$log")
	if [ $# = 4 ] && [ "$1" -gt 0 ] && [ "$2" -gt 0 ] && [ "$3" -gt 0 ] && [ "$4" -gt 0 ]; then
		kt_result powercut/write-paths PASS
	else
		kt_result powercut/write-paths FAIL \
			"want deferred new data, deferred overwrites and direct writes: $(grep '^DEFERRED' "$log")"
	fi
}

# ps_marks DLIST MLIST OUT: "NAME D M" per mark, D and M its entries in the
# two logs; fails if the logs do not hold the same marks in the same order.
ps_marks() {
	awk '$2 ~ /M/ { print $5, $1 }' "$1" > $pc_tmp/ps.md
	awk '$2 ~ /M/ { print $5, $1 }' "$2" > $pc_tmp/ps.mm
	[ "$(wc -l < $pc_tmp/ps.md)" = "$(wc -l < $pc_tmp/ps.mm)" ] &&
		paste -d' ' $pc_tmp/ps.md $pc_tmp/ps.mm |
		awk '$1 != $3 { bad = 1 } { print $1, $2, $4 } END { exit bad }' > "$3"
}

# ps_candidates MARKS DLIST MLIST FROM TO: every candidate cut between the
# marks FROM and TO (names; the cuts lie after FROM's entries, up to TO's),
# one a line: "KIND XD YM ACKS" (cut the data log before entry XD and the
# metadata log before YM; ACKS the last acknowledgement before the cut,
# ACK0 before the first ack mark; "rstart", "rdone" count as in between).
# The two cuts always lie between the same two marks (see the header):
#   mark     a mark (an ack, ts-N): both logs cut right after it
#   trim     a td-N mark (a trim point just durable): both cut right after it
#   trimrec  the data log before its first flush after td-N (the record
#            that follows the trim, written but not flushed), the metadata
#            log right after td-N
#   split    a flush of one log: cut before it, the other log just before
#            the next mark (every write and flush of its interval done)
#   random   a random entry of the data log, the metadata log right after
#            the mark before it; or the other way round
ps_candidates() {
	awk -v from="$4" -v to="$5" -v ack0="${ACK0:-0}" -v nrand="$ps_nrand" \
		-v seed="$pc_seed" '
	FILENAME == ARGV[1] { n++; nm[n] = $1; d[n] = $2; m[n] = $3
		if ($1 == from) s = n; if ($1 == to) e = n; next }
	FILENAME == ARGV[2] { if ($2 ~ /F/) fd[++nfd] = $1; next }
	FILENAME == ARGV[3] { if ($2 ~ /F/) fm[++nfm] = $1; next }
	END {
		if (!s || !e) exit 1
		a = ack0
		for (i = s; i < e; i++) {
			if (nm[i] ~ /^ack-/) { a = nm[i]; sub("ack-", "", a) }
			ack[i] = a
			if (nm[i] ~ /^td-/) {
				print "trim", d[i] + 1, m[i] + 1, a
				for (k = 1; k <= nfd; k++)
					if (fd[k] > d[i] && fd[k] < d[i + 1]) {
						print "trimrec", fd[k], m[i] + 1, a; break }
			} else if (i > s || nm[i] ~ /^ack-/) {
				print "mark", d[i] + 1, m[i] + 1, a
			}
			for (k = 1; k <= nfd; k++)
				if (fd[k] > d[i] && fd[k] < d[i + 1]) print "split", fd[k], m[i + 1], a
			for (k = 1; k <= nfm; k++)
				if (fm[k] > m[i] && fm[k] < m[i + 1]) print "split", d[i + 1], fm[k], a
		}
		srand(seed)
		for (k = 0; k < nrand; k++) {
			i = s + int(rand() * (e - s))
			if (rand() < 0.5) {
				x = d[i] + 1 + int(rand() * (d[i + 1] - d[i]))
				print "random", x, m[i] + 1, ack[i]
			} else {
				y = m[i] + 1 + int(rand() * (m[i + 1] - m[i]))
				print "random", d[i] + 1, y, ack[i]
			}
		}
	}' "$1" "$2" "$3"
}

# ps_pick KIND K: K of the candidates of KIND on stdin, spread evenly
# ("all": every one).
ps_pick() {
	awk -v kind="$1" -v k="$2" '$1 == kind { a[++n] = $0 } END {
		if (n == 0) exit; if (k == "all" || k >= n) { for (i = 1; i <= n; i++) print a[i]; exit }
		if (k + 0 < 1) exit; step = n / k
		for (i = 0; i < k; i++) print a[int(1 + i * step)] }'
}

# ps_build CUT MODE VSEED: one variant of the cut "XD:YM" on pc-chk: the
# base ($ps_base, holding $ps_logd up to $ps_repd and $ps_logm up to
# $ps_repm), the logs replayed up to their windows ($ps_wd, $ps_wm), then
# each window as MODE says (the data log: nodata and halfdata keep its ring
# writes; the metadata log: prefix then), in-flight writes included.
ps_build() {
	local xd=${1%:*} ym=${1#*:} md=$2 mm=$2 fl=inflight
	case $2 in prefix) fl= ;; nodata|halfdata) mm=prefix ;; esac
	t_lwreplay copy "$ps_base" /dev/mapper/pc-chk &&
		{ [ "$ps_wd" -le "$ps_repd" ] ||
			t_lwreplay replay "$ps_logd" /dev/mapper/pc-chkdata "$ps_repd" "$ps_wd"; } &&
		{ [ "$ps_wm" -le "$ps_repm" ] ||
			t_lwreplay replay "$ps_logm" /dev/mapper/pc-chkmeta "$ps_repm" "$ps_wm"; } &&
		t_lwreplay variant "$ps_logd" /dev/mapper/pc-chkdata "$xd" "$md" "$3" $pc_ring $fl &&
		t_lwreplay variant "$ps_logm" /dev/mapper/pc-chkmeta "$ym" "$mm" "$(($3 + 7))" 0 8 $fl
}

# ps_check ACKS: t_powercut check, then the reopen-twice check: $pc_again
# more transactions on the recovered store, a crash right after the last
# acknowledgement (t_powercut more), and the check again.
ps_check() {
	local r rc
	t_powercut check /dev/mapper/pc-cdata /mnt/pcc/meta "$1" "$pc_seed" > $pc_tmp/ps.c1 2>&1
	rc=$?
	cat $pc_tmp/ps.c1
	[ $rc = 0 ] || return 1
	[ "$pc_again" -gt 0 ] || return 0
	r=$(sed -n 's/^# state after transaction \([0-9]*\).*/\1/p' $pc_tmp/ps.c1 | head -1)
	[ -n "$r" ] || { echo "reopen-twice: no state in the check's output"; return 1; }
	t_powercut more /dev/mapper/pc-cdata /mnt/pcc/meta "$r" "$pc_seed" "$pc_again" \
		> $pc_tmp/ps.c2 2>&1
	rc=$?
	sed 's/^/    reopen-twice: /' $pc_tmp/ps.c2
	[ $rc = 0 ] || { echo "reopen-twice: the reopen after transaction $r failed (exit $rc)"; return 1; }
	t_powercut check /dev/mapper/pc-cdata /mnt/pcc/meta $((r + pc_again)) "$pc_seed" \
		> $pc_tmp/ps.c3 2>&1
	rc=$?
	sed -e 's/^/    reopen-twice: /' -e 's/verified/read/' $pc_tmp/ps.c3
	[ $rc = 0 ] || return 1
	echo "# reopen-twice ok: state after transaction $((r + pc_again)) after the second crash"
}

# ps_cuts CUTS: the cuts of the file CUTS ("KIND XD YM ACKS") on the logs
# $ps_logd, $ps_logm over the base $ps_base; with ps_adv=1 the base (pc-rep)
# is replayed up to the windows as the cuts go (sorted by their windows).
ps_cuts() {
	local kind xd ym acks wd vd td rd xfd wm vm tm rm xfm mwm variants v mode vseed rc i
	while read -r kind xd ym acks; do
		echo "$kind $xd $ym $acks $(t_lwreplay window "$ps_logd" "$xd" $pc_ring inflight)" \
			"$(t_lwreplay window "$ps_logm" "$ym" 0 8 inflight)"
	done < "$1" | sort -n -k5,5 -k2,2 -k3,3 |
		awk '{ l[NR] = $0; w[NR] = $10 } END { m = -1
			for (i = NR; i >= 1; i--) { if (m < 0 || w[i] < m) m = w[i]; s[i] = m }
			for (i = 1; i <= NR; i++) print l[i], s[i] }' > "$1.win"
	while read -r kind xd ym acks wd vd td rd xfd wm vm tm rm xfm mwm; do
		[ -n "$mwm" ] || { echo "    $kind cut $xd:$ym: no window"; continue; }
		if [ "$ps_adv" = 1 ]; then
			if [ "$wd" -gt "$ps_repd" ]; then
				t_lwreplay replay "$ps_logd" /dev/mapper/pc-repdata "$ps_repd" "$wd" || break
				ps_repd=$wd
			fi
			if [ "$mwm" -gt "$ps_repm" ]; then
				t_lwreplay replay "$ps_logm" /dev/mapper/pc-repmeta "$ps_repm" "$mwm" || break
				ps_repm=$mwm
			fi
		fi
		ps_wd=$wd ps_wm=$wm
		variants="prefix:0"
		if [ $((vd + vm)) -gt 0 ]; then
			i=1
			while [ $i -le "$pc_nre" ]; do variants="$variants reorder:$i"; i=$((i + 1)); done
			if [ $((td + tm)) -gt 0 ]; then
				i=1
				while [ $i -le "$pc_nto" ]; do
					variants="$variants torn:$((pc_nre + i))"; i=$((i + 1))
				done
			fi
		fi
		case $kind in
		trim|trimrec|rec|dc) [ "$rd" -gt 0 ] && [ "$vd" -gt "$rd" ] &&
			variants="$variants nodata:8 halfdata:9" ;;
		esac
		ncut=$((ncut + 1))
		eval "nk_$kind=\$((nk_$kind + 1))"
		for v in $variants; do
			mode=${v%:*}
			vseed=$((pc_seed * 1000003 + xd * 16 + ym * 4 + ${v#*:}))
			eval "nv_$kind=\$((nv_$kind + 1))"
			pc_run_variant "$xd:$ym" "$mode" "$vseed" "$acks" \
				"$kind cut $xd:$ym (windows $wd:$wm, $vd+$vm volatile, $xfd+$xfm in flight, $rd in the ring, acked $acks) $mode seed $vseed"
			rc=$?
			if [ $rc != 0 ]; then
				eval "nf_$kind=\$((nf_$kind + 1))"
			else
				grep -q '^# reopen-twice ok' $pc_tmp/pc.out &&
					ps_again_ok=$((ps_again_ok + 1))
				case $mode in nodata|halfdata)
					grep -q 'dropped 1$' $pc_tmp/pc.out &&
						ps_dropped=$((ps_dropped + 1)) ;;
				esac
			fi
			# A double crash from a recovery that dropped a record (even
			# when a later check of that variant failed).
			if [ "$kind" = trimrec ] && [ "$mode" = nodata ] && [ "$ps_dc" = 0 ] &&
				[ "$ps_dc_done" -lt "$pc_dcrash" ] &&
				grep -q '^# journal replayed .* dropped 1$' $pc_tmp/pc.out; then
				ps_dcrash "$xd:$ym" "$mode" "$vseed" "$acks"
				ps_wd=$wd ps_wm=$wm
			fi
		done
		last_cut=$xd:$ym last_acks=$acks
	done < "$1.win"
}

# ps_dcrash CUT MODE VSEED ACKS: a double crash. The variant (crash 1, whose
# recovery dropped a record) is built again and saved on pc-pre; its
# recovery and $pc_dtxns more transactions run under two more logs
# (t_powercut cont on pc-lw2d, pc-lw2m); those logs are cut in turn: "rec"
# cuts inside the recovery (its flushes, its trim point's sync, right after
# it), "dc" cuts after it (each acknowledgement, each flush: crash 2 before
# the next trim, every variant that keeps a record and drops its data).
ps_dcrash() {
	local e2d=$pc_tmp/ps2.d e2m=$pc_tmp/ps2.m m2=$pc_tmp/ps2.marks c2=$pc_tmp/ps2.cuts r rc
	local sbase=$ps_base sld=$ps_logd slm=$ps_logm srd=$ps_repd srm=$ps_repm sadv=$ps_adv
	ps_dc_done=$((ps_dc_done + 1))
	if ! { ps_build "$1" "$2" "$3" && t_lwreplay copy /dev/mapper/pc-chk /dev/mapper/pc-pre &&
		t_lwreplay zero /dev/mapper/pc-log2; } > $pc_tmp/ps2.err 2>&1; then
		ps_dc_broken "cut $1 $2 seed $3: cannot build it again: $(cat $pc_tmp/ps2.err)"
		return
	fi
	rc=0
	if ! $pc_dm create pc-lw2d --table \
		"0 $pc_data log-writes /dev/mapper/pc-chkdata /dev/mapper/pc-log2d" 2> $pc_tmp/ps2.err ||
		! $pc_dm create pc-lw2m --table \
		"0 $pc_meta log-writes /dev/mapper/pc-chkmeta /dev/mapper/pc-log2m" 2>> $pc_tmp/ps2.err ||
		! mount -t ext4 /dev/mapper/pc-lw2m /mnt/pcc 2>> $pc_tmp/ps2.err; then
		rc=1
	else
		timeout -s KILL 600 t_powercut cont /dev/mapper/pc-lw2d /mnt/pcc/meta "$4" \
			"$pc_seed" "$pc_dtxns" pc-lw2d,pc-lw2m > $pc_tmp/ps2.err 2>&1 || rc=1
	fi
	umount /mnt/pcc 2> /dev/null
	$pc_dm remove pc-lw2d 2> /dev/null; $pc_dm remove pc-lw2m 2> /dev/null
	if [ $rc != 0 ]; then
		ps_dc_broken "cut $1 $2 seed $3: the logged recovery and $pc_dtxns more: $(cat $pc_tmp/ps2.err)"
		return
	fi
	r=$(sed -n 's/^# recovered //p' $pc_tmp/ps2.err)
	t_lwreplay list /dev/mapper/pc-log2d > "$e2d" && t_lwreplay list /dev/mapper/pc-log2m > "$e2m" &&
		ps_marks "$e2d" "$e2m" "$m2" ||
		{ ps_dc_broken "the recovery's logs cannot be read or disagree"; return; }
	echo "    double crash from $2 cut $1 seed $3: $(grep '^# journal' $pc_tmp/ps2.err | sed 's/^# //');" \
		"recovered $r, then $pc_dtxns more; logs $(wc -l < "$e2d") + $(wc -l < "$e2m") entries," \
		"marks: $(awk '{ printf "%s ", $1 }' "$m2")"
	ACK0=$4 ps_nrand=0 ps_candidates "$m2" "$e2d" "$e2m" rstart rdone > "$c2.rec"
	ACK0=$r ps_nrand=0 ps_candidates "$m2" "$e2d" "$e2m" rdone cdone > "$c2.dc"
	{
		# Right after the replay's trim point is durable and right after
		# the open, then some of the recovery's flushes.
		ps_pick trim all < "$c2.rec"
		awk '$1 == "rdone" { print "rec", $2 + 1, $3 + 1, a }' a="$r" "$m2"
		ps_pick split "$pc_drcuts" < "$c2.rec"
	} | awk '{ $1 = "rec"; print }' > "$c2"
	{
		ps_pick mark "$pc_dmcuts" < "$c2.dc"
		ps_pick split "$pc_dccuts" < "$c2.dc"
		ps_pick trim all < "$c2.dc"
		ps_pick trimrec all < "$c2.dc"
	} | awk '{ $1 = "dc"; print }' >> "$c2"
	sort -u -k2,2n -k3,3n -o "$c2" "$c2"
	ps_dc=1 ps_base=/dev/mapper/pc-pre ps_logd=/dev/mapper/pc-log2d ps_logm=/dev/mapper/pc-log2m
	ps_repd=0 ps_repm=0 ps_adv=0
	ps_cuts "$c2"
	ps_dc=0 ps_base=$sbase ps_logd=$sld ps_logm=$slm ps_repd=$srd ps_repm=$srm ps_adv=$sadv
}

ps_dc_broken() { # the double crash could not be set up: a failure
	echo "    double crash: FAIL: $*"
	nfail=$((nfail + 1)) nvar=$((nvar + 1)) nf_dc=$((nf_dc + 1)) nv_dc=$((nv_dc + 1))
}

pc_up_serial() {
	pc_split /dev/mapper/pc-chk pc-c && mount -t ext4 /dev/mapper/pc-cmeta /mnt/pcc
}
pc_down_serial() {
	umount /mnt/pcc 2> /dev/null
	$pc_dm remove pc-cdata; $pc_dm remove pc-cmeta
}

# ps_result NAME KIND...: PASS if the kinds had cuts and no failure.
ps_result() {
	local name=$1 k c=0 v=0 f=0
	shift
	for k; do
		eval "c=\$((c + nk_$k)) v=\$((v + nv_$k)) f=\$((f + nf_$k))"
	done
	if [ "$c" = 0 ]; then
		kt_result "powercut/$name" FAIL "no cut of kind $*"
	elif [ "$f" != 0 ]; then
		kt_result "powercut/$name" FAIL "$f of $v variants of $c cuts ($*) failed"
	else
		kt_result "powercut/$name" PASS
	fi
}

pc_main() {
	local log=$pc_tmp/pc.log ed=$pc_tmp/pc.d em=$pc_tmp/pc.m marks=$pc_tmp/pc.marks
	local cuts=$pc_tmp/pc.cuts cand=$pc_tmp/pc.cand t0 secs m f c control rc last nmark nsplit
	local k

	pc_name=
	pc_cleanup
	mkdir -p /mnt/pc /mnt/pcc
	pc_regions && ps_regions || { kt_result powercut/setup FAIL "dmsetup linear failed"; return; }
	if [ "${PC_REUSE:-0}" = 1 ]; then
		kt_result powercut/setup PASS
		kt_result powercut/workload SKIP "PC_REUSE=1: the logs already on $pc_scratch are replayed"
	elif ! pc_workload; then
		pc_cleanup
		return
	fi

	t_lwreplay list /dev/mapper/pc-logd > "$ed" && t_lwreplay list /dev/mapper/pc-logm > "$em" ||
		{ kt_result powercut/replay FAIL "cannot read the logs"; pc_cleanup; return; }
	ps_marks "$ed" "$em" "$marks" ||
		{ kt_result powercut/replay FAIL "the two logs do not hold the same marks"; pc_cleanup; return; }
	pc_ring=$(awk '$1 ~ /^ring-/ { split($1, f, "-"); print "ring=" f[2] ":" f[3]; exit }' "$marks")
	last=$(tail -1 "$marks" | cut -d' ' -f1)
	echo "    data log: $(wc -l < "$ed") entries, $(grep -c ' F' "$ed") flushes;" \
		"metadata log: $(wc -l < "$em") entries, $(grep -c ' F' "$em") flushes;" \
		"$(wc -l < "$marks") marks ($(grep -c '^ack-' "$marks") acks," \
		"$(grep -c '^td-' "$marks") trims); journal $pc_ring"
	grep -q '^ack-0 ' "$marks" && [ -n "$pc_ring" ] ||
		{ kt_result powercut/replay FAIL "no ack-0 or ring mark"; pc_cleanup; return; }
	case $pc_cuts in
	points|all) nmark=all nsplit=all ps_nrand=100 ;;
	*) nmark=$((pc_cuts / 3)) nsplit=$((pc_cuts / 3)) ps_nrand=$((pc_cuts - 2 * (pc_cuts / 3))) ;;
	esac
	ACK0=0 ps_candidates "$marks" "$ed" "$em" ack-0 "$last" > "$cand" ||
		{ kt_result powercut/replay FAIL "no cut candidates"; pc_cleanup; return; }
	{
		ps_pick mark "$nmark" < "$cand"
		ps_pick split "$nsplit" < "$cand"
		ps_pick random all < "$cand"
		ps_pick trim "$pc_tcuts" < "$cand"
		ps_pick trimrec "$pc_tcuts" < "$cand"
	} | sort -u > "$cuts"
	if [ -n "${PC_CUTLIST:-}" ]; then
		for c in $PC_CUTLIST; do echo "$c"; done |
			awk -F: 'NR == FNR { want[$1 ":" $2] = 1; next } want[$2 ":" $3]' - "$cand" |
			sort -u > "$cuts"
	fi
	echo "    $(wc -l < "$cuts") cut points:" \
		"$(awk '{ n[$1]++ } END { for (k in n) printf "%s %d, ", k, n[k] }' "$cuts")" \
		"of $(wc -l < "$cand") candidates"

	t0=$(date +%s)
	pc_up=pc_up_serial pc_down=pc_down_serial pc_check=ps_check pc_build=ps_build
	pc_after=: pc_redo=
	ncut=0 nvar=0 ntx=0 nbytes=0 nfail=0 states_next=0 last_cut='' last_acks=''
	fail_prefix=0 fail_reorder=0 fail_torn=0 fail_nodata=0 fail_halfdata=0
	n_reorder=0 n_torn=0 n_nodata=0 n_halfdata=0
	for k in mark split random trim trimrec rec dc; do
		eval "nk_$k=0 nv_$k=0 nf_$k=0"
	done
	ps_again_ok=0 ps_dropped=0 ps_dc=0 ps_dc_done=0
	ps_base=/dev/mapper/pc-rep ps_logd=/dev/mapper/pc-logd ps_logm=/dev/mapper/pc-logm
	ps_repd=0 ps_repm=0 ps_adv=1
	t_lwreplay zero /dev/mapper/pc-rep
	ps_cuts "$cuts"
	secs=$(($(date +%s) - t0))
	# Control: the final state is not the one two transactions back.
	control=FAIL
	if [ "${last_acks:-0}" -ge 2 ] && pc_up_serial; then
		t_powercut check /dev/mapper/pc-cdata /mnt/pcc/meta $((last_acks - 2)) \
			"$pc_seed" > $pc_tmp/pc.control 2>&1 || control=PASS
	fi
	pc_down_serial 2> /dev/null
	kt_result powercut/checker-refuses-old-state $control
	# A variant that cannot be built counts as a failure: the last cut
	# again, with a mode t_lwreplay refuses, must come back counted.
	rc=$( (pc_run_variant "${last_cut:-0:0}" bogus 1 "${last_acks:-0}" \
		"self-check: cut ${last_cut:-0:0}, a variant that cannot be built" > /dev/null
		echo "$nfail $nvar") )
	if [ "$rc" = "$((nfail + 1)) $((nvar + 1))" ]; then
		kt_result powercut/unbuilt-variant-fails PASS
	else
		kt_result powercut/unbuilt-variant-fails FAIL "failures, variants went from" \
			"$nfail $nvar to $rc, want one more of each"
	fi
	echo "    $ncut cut points, $nvar variants ($n_reorder reorder, $n_torn torn," \
		"$n_nodata nodata, $n_halfdata halfdata), $pc_txns transactions, $nfail failures," \
		"$secs s ($states_next held the next, not yet acknowledged transaction;" \
		"$ps_again_ok reopen-twice checks passed; $ps_dropped recoveries dropped a record)"
	for k in mark split random trim trimrec rec dc; do
		eval "echo \"    $k: \$nk_$k cuts, \$nv_$k variants, \$nf_$k failures\""
	done
	if [ "$ncut" = 0 ]; then
		kt_result powercut/replay FAIL "no cut point checked"
	elif [ "$fail_prefix" != 0 ]; then
		kt_result powercut/replay FAIL "$fail_prefix of $ncut cut points lost or mangled data"
	else
		kt_result powercut/replay PASS
	fi
	for m in reorder torn; do
		eval "f=\$fail_$m c=\$n_$m"
		if [ "$c" = 0 ]; then
			kt_result powercut/$m FAIL "no cut point had volatile writes to $m"
		elif [ "$f" != 0 ]; then
			kt_result powercut/$m FAIL "$f of $c $m variants lost or mangled data"
		else
			kt_result powercut/$m PASS
		fi
	done
	ps_result split-domains split
	ps_result after-trim trim trimrec
	if [ $((n_nodata + n_halfdata)) = 0 ] || [ "$ps_dropped" = 0 ]; then
		kt_result powercut/record-without-data FAIL "$n_nodata nodata and $n_halfdata" \
			"halfdata variants, $ps_dropped recoveries that dropped a record: want both"
	elif [ $((fail_nodata + fail_halfdata)) != 0 ]; then
		kt_result powercut/record-without-data FAIL "$((fail_nodata + fail_halfdata)) of" \
			"$((n_nodata + n_halfdata)) variants that keep a record and drop its data failed"
	else
		kt_result powercut/record-without-data PASS
	fi
	ps_result after-dropped-record rec
	ps_result double-crash dc
	if [ "$pc_again" = 0 ]; then
		kt_result powercut/reopen-twice SKIP "PC_AGAIN=0"
	elif [ "$ps_again_ok" = 0 ] || [ "$ps_again_ok" != $((nvar - nfail)) ]; then
		kt_result powercut/reopen-twice FAIL "$ps_again_ok reopen-twice checks passed," \
			"want one for each of the $((nvar - nfail)) variants that passed"
	else
		kt_result powercut/reopen-twice PASS
	fi
	pc_json="$(printf '{"kind":"powercut","mode":"%s","cut_points":%d,"variants":%d,' \
		"$pc_mode" "$ncut" "$nvar")$(printf \
		'"split_cut_points":%d,"trim_cut_points":%d,"after_drop_cut_points":%d,' \
		"$nk_split" $((nk_trim + nk_trimrec)) "$nk_rec")$(printf \
		'"double_crash_cut_points":%d,"reopen_twice":%d,' "$nk_dc" "$ps_again_ok")$(printf \
		'"txns_checked":%d,"bytes_verified":%d,"failures":%d,"seconds":%d}' "$ntx" \
		"$nbytes" "$nfail" "$secs")"
	pc_cleanup
}

pc_regions() {
	$pc_dm create pc-log --table "0 $pc_log linear $pc_scratch 0" &&
		$pc_dm create pc-orig --table "0 $pc_size linear $pc_scratch $pc_orig" &&
		$pc_dm create pc-rep --table "0 $pc_size linear $pc_scratch $pc_rep" &&
		$pc_dm create pc-chk --table "0 $pc_size linear $pc_scratch $pc_chk" &&
		$pc_dm create pc-pre --table "0 $pc_size linear $pc_scratch $pc_pre" &&
		$pc_dm create pc-log2 --table "0 $pc_log2_size linear $pc_scratch $pc_log2"
}

# --- The concurrent campaign: submitters in parallel, every policy ---------
#
# Issue 24: "a power-cut campaign under concurrency and every policy". The
# same log, cuts and variants, but t_powercut crun: PC_THREADS submitter
# threads (4), each with up to PC_DEPTH (4) asynchronous transactions in
# flight on objects of its own, PC_CTXNS (quick 32, full 48) transactions
# each, so that groups join and the pipeline is full (the workload prints
# its commit groups; fewer groups than transactions is checked). The
# callback marks each acknowledgement "a-<thread>-<index>" in the log; at
# a cut, each thread's objects must hold its state after its last
# acknowledged transaction or a later one, the threads' states together
# must be a prefix of the submission order, and a deep fsck must be clean
# (see t_powercut.c, ccheck). One configuration per line of pc_configs:
#   NAME KIND WHEN CONFIG
# WHEN quick: in both modes; quick=N: in quick mode with N cut points (and
#   the wrap cuts below); full: in full mode only (or named by PC_ONLY).
# KIND file: the store in a file on ext4 (the data half is an ext4 too, so
#   punch-hole and zero-range work and the inline and background punch
#   policies and prepare's claims of zeroed space run: dm-log-writes passes
#   no write-zeroes, so a store on the raw logged device can do neither);
# KIND thin: the store on a dm-thin device whose pool sits on the logged
#   device (provisioning, freed space discarded back to the pool), the
#   device marked non-rotational and deferred new data forced on.
# CONFIG is t_powercut's: t threads, d depth, n transactions per thread,
# mau allocation unit, punch and zero policies, dmax deferred_max, dnew
# deferred_new_max, err a write error (it lands, then fails: the retry
# applies the rest of the group again) armed every err transactions of
# thread 0 (deferred writes off there: a failed deferred write is not a
# transaction's and stops the store), journal device|rocksdb (mkfs
# --journal), jsize the device journal's size (mkfs --journal-size; 1 MiB,
# the minimum, makes it wrap). Each configuration checks, as
# powercut/NAME/paths, that the workload took its paths (a jsize
# configuration: that the journal wrapped at least twice).
#
# Wrap-around. The workload marks "wrap-L" in the log (before the next ack
# mark) once the journal's head entered lap L; the entries since the mark
# before it hold the record that starts the lap (the last one of the lap
# before skips to it when it does not fit), its data, its flush and, as a
# trim falls every half lap, usually the trim (RocksDB's WAL synced on
# ext4) that freed the ring for it. Every flush, FUA and mark point
# of those windows is a cut point at wrap-around; PC_WCUTS of them (quick 8,
# full "all") join each configuration's cut points, and the cut points
# inside a window, whichever way chosen, are counted as wrap cuts.
#
# A crash during replay. For PC_RCRASH variants per configuration (full 4;
# quick 1 in a jsize configuration, else 0), spread over its cut points
# (the first after each share of them whose open replayed at least two
# journal records, or any with --journal rocksdb), the variant is built
# again and saved (pc-pre), and its recovery runs under a second
# dm-log-writes log (pc-log2): t_powercut copen marks "rstart", opens (the
# replay), marks "rdone" and closes. PC_RCUTS flush, FUA and mark points
# between the two marks (quick 3, full 4; spread evenly) cut that log:
# pc-pre, plus the recovery's log replayed up to the cut, plus the
# window's prefix variant and one torn (or reorder) variant, must again
# hold each thread's acknowledged state (the acks of the first cut) and
# pass a deep fsck. These count as variants of the configuration's cuts
# (a failure fails /cuts) and as /crash-in-recovery; PC_RFORCE=MODE:VSEED
# takes that variant of PC_CUTLIST's cuts (to redo one).
# Results: powercut/NAME/workload, /paths, /cuts (every variant of every
# cut point), /checker-refuses-wrong-model (the last cut checked against
# the model of another seed must be refused), /crash-in-recovery (when
# PC_RCRASH is not 0 there: every recovery cut passed, and there was one).
# Env: PC_CCUTS cut points per configuration (quick 12, full 24; "points",
# "all"), PC_ONLY=NAME[,NAME...] only those configurations (and not the
# serial campaign unless one NAME is "serial"), PC_THREADS, PC_DEPTH,
# PC_CTXNS, PC_WTXNS (transactions per thread in a jsize configuration:
# quick 64, full 96), PC_WCUTS, PC_RCRASH, PC_RCUTS.
pc_cthreads=${PC_THREADS:-4} pc_cdepth=${PC_DEPTH:-4}
if [ "$pc_mode" = full ]; then
	pc_ctxns=${PC_CTXNS:-48} pc_ccuts=${PC_CCUTS:-24} pc_wtxns=${PC_WTXNS:-96}
	pc_wcuts=${PC_WCUTS:-all} pc_rcuts=${PC_RCUTS:-4}
else
	pc_ctxns=${PC_CTXNS:-32} pc_ccuts=${PC_CCUTS:-12} pc_wtxns=${PC_WTXNS:-64}
	pc_wcuts=${PC_WCUTS:-8} pc_rcuts=${PC_RCUTS:-3}
fi
pc_cbase="t=$pc_cthreads,d=$pc_cdepth,n=$pc_ctxns"
pc_wbase="t=$pc_cthreads,d=$pc_cdepth,n=$pc_wtxns,jsize=1048576"
pc_configs="file-inline-errors file quick $pc_cbase,mau=16384,punch=inline,zero=prepare,dmax=0,dnew=0,err=5
file-background-deferred file quick $pc_cbase,mau=16384,punch=background,zero=prepare,dmax=32768,dnew=16384
thin-nonrot-deferred thin quick $pc_cbase,punch=inline,dmax=32768,dnew=16384
thin-wrap-deferred thin full $pc_wbase,punch=background,dmax=32768,dnew=16384
file-rocksdb-inline-errors file full $pc_cbase,mau=16384,punch=inline,zero=prepare,dmax=0,dnew=0,err=5,journal=rocksdb
file-wrap-background file quick=6 $pc_wbase,mau=16384,punch=background,zero=prepare,dmax=32768,dnew=16384"
pc_pmeta=8192		# thin: pool metadata (4 MiB) at the start of the meta half

# pcx_up UNDER PREFIX: the configuration's devices over UNDER, mounted at
# /mnt/pc (or /mnt/pcc for the check region) and /mnt/pcd (file: the data
# ext4); the store's device is then $pcx_dev.
pcx_up() {
	local mnt=/mnt/pc
	[ "$2" = pc- ] || mnt=/mnt/pcc
	case $pc_kind in
	file)
		pc_split "$1" "$2" &&
			mount -t ext4 "/dev/mapper/$2data" /mnt/pcd &&
			mount -t ext4 "/dev/mapper/$2meta" $mnt || return 1
		pcx_dev=/mnt/pcd/data.img pcx_meta=$mnt/meta
		;;
	thin)
		$pc_dm create "$2pdata" --table "0 $pc_data linear $1 0" &&
			$pc_dm create "$2pmeta" --table "0 $pc_pmeta linear $1 $pc_data" &&
			$pc_dm create "$2meta" --table \
				"0 $((pc_meta - pc_pmeta)) linear $1 $((pc_data + pc_pmeta))" &&
			$pc_dm create "$2pool" --table "0 $pc_data thin-pool /dev/mapper/$2pmeta \
/dev/mapper/$2pdata 128 0 1 error_if_no_space" || return 1
		if [ "$2" = pc- ]; then
			$pc_dm message pc-pool 0 "create_thin 1" || return 1
		fi
		$pc_dm create "$2data" --table "0 $pc_data thin /dev/mapper/$2pool 1" &&
			mount -t ext4 "/dev/mapper/$2meta" $mnt || return 1
		pcx_dev=/dev/mapper/$2data pcx_meta=$mnt/meta
		;;
	esac
}

pcx_down() { # pcx_down PREFIX
	umount /mnt/pcd 2> /dev/null
	umount /mnt/pc 2> /dev/null
	umount /mnt/pcc 2> /dev/null
	for d in data meta pool pdata pmeta; do
		[ -e "/dev/mapper/$1$d" ] && $pc_dm remove "$1$d"
	done
	return 0
}

pcx_mkfs() { # the file systems (and the thin device) of a fresh workload
	case $pc_kind in
	file)
		pc_split /dev/mapper/pc-lw pc- &&
			for h in data meta; do
				/usr/sbin/mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 \
					/dev/mapper/pc-$h || return 1
			done &&
			$pc_dm remove pc-data && $pc_dm remove pc-meta
		;;
	thin)
		$pc_dm create pc-pmeta --table "0 $pc_pmeta linear /dev/mapper/pc-lw $pc_data" &&
			dd if=/dev/zero of=/dev/mapper/pc-pmeta bs=4096 count=1 conv=fsync 2> /dev/null &&
			$pc_dm remove pc-pmeta &&
			$pc_dm create pc-meta --table \
				"0 $((pc_meta - pc_pmeta)) linear /dev/mapper/pc-lw $((pc_data + pc_pmeta))" &&
			/usr/sbin/mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 \
				/dev/mapper/pc-meta &&
			$pc_dm remove pc-meta
		;;
	esac
}

pc_up_conc() { pcx_up /dev/mapper/pc-chk pc-c; }
pc_down_conc() { pcx_down pc-c; }
pc_check_conc() {
	t_powercut ccheck "$pcx_dev" "$pcx_meta" "$pc_cfg" "$pc_cseed" "$1" $pc_tmp/pcc.run
}
# The last acknowledgement of each thread before the cut: "A0,A1,...".
pc_acks_conc() {
	awk -v c="$1" -v t="$pc_cthreads" '$1 < c && $5 ~ /^a-/ {
			split($5, f, "-"); if (f[3] + 0 > a[f[2]]) a[f[2]] = f[3] + 0 }
		END { for (i = 0; i < t; i++) printf "%s%d", i ? "," : "", a[i] }' $pc_tmp/pc.entries
}

pcx_perf() { # pcx_perf KEY: the value after KEY on the workload's PERF line
	awk -v k="$1" '$1 == "PERF" { for (i = 2; i < NF; i += 2) if ($i == k) print $(i + 1) }' \
		$pc_tmp/pcc.run
}

# pcx_paths: the workload took the configuration's paths ("" if so).
pcx_paths() {
	local why=
	[ -n "$(pcx_perf txns)" ] || { echo "no PERF line"; return; }
	[ "$(pcx_perf groups)" -lt "$(pcx_perf txns)" ] ||
		why="$why; $(pcx_perf txns) transactions in $(pcx_perf groups) groups (none joined)"
	case $pc_cfg in *err=*) [ "$(pcx_perf failed)" -gt 0 ] ||
		why="$why; no transaction met a write error" ;; esac
	case $pc_cfg in *punch=inline*|*punch=background*) [ "$(pcx_perf punched_bg)" -gt 0 ] ||
		why="$why; nothing punched by the punch policy" ;; esac
	case $pc_cfg in *zero=prepare*) [ "$(pcx_perf zero_claims)" -gt 0 ] ||
		why="$why; no claim of zeroed space" ;; esac
	case $pc_cfg in *dnew=16384*) [ "$(pcx_perf deferred_new)" -gt 0 ] ||
		why="$why; no deferred new data" ;; esac
	case $pc_cfg in *jsize=*) set -- $(grep '^JOURNAL ' $pc_tmp/pcc.run)
		[ "$2" = device ] && [ "${12:-0}" -ge 2 ] ||
			why="$why; want a device journal that wrapped at least twice: $*" ;; esac
	case $pc_cfg in *journal=rocksdb*) grep -q '^JOURNAL rocksdb ' $pc_tmp/pcc.run ||
		why="$why; want --journal rocksdb: $(grep '^JOURNAL ' $pc_tmp/pcc.run)" ;; esac
	if [ "$pc_kind" = thin ]; then
		[ "$(pcx_perf provisioned)" -gt 0 ] || why="$why; nothing provisioned"
		grep -q '^POLICY .* provisioning 1 rotational 0 .* deferred_new_max 16384$' \
			$pc_tmp/pcc.run || why="$why; want provisioning, non-rotational, deferred new data"
	fi
	echo "${why#; }"
}

# pc_wrap_windows ENTRIES START: "P W" per wrap mark at entry W after
# START, P the mark before it: cut points in (P, W] are at wrap-around.
pc_wrap_windows() {
	awk -v s="$2" '$2 ~ /M/ && $5 ~ /^wrap-/ && $1 > s { print p, $1 }
		$2 ~ /M/ { p = $1 }' "$1"
}

# pc_wrap_points ENTRIES WINDOWS K: K of the flush, FUA and mark points in
# the wrap windows, spread evenly ("all": every one).
pc_wrap_points() {
	[ -s "$2" ] || return 0
	awk 'NR == FNR { lo[NR] = $1; hi[NR] = $2; nw = NR; next }
		{ for (i = 1; i <= nw; i++) {
			if ($2 ~ /F/ && $1 > lo[i] && $1 <= hi[i]) print $1
			if ($2 ~ /[UM]/ && $1 + 1 > lo[i] && $1 + 1 <= hi[i]) print $1 + 1
			if ($1 == hi[i]) print $1 } }' "$2" "$1" | sort -n -u |
		awk -v k="$3" '{ a[NR] = $1 } END {
			if (NR == 0) exit; if (k == "all" || k >= NR) { for (i = 1; i <= NR; i++) print a[i]; exit }
			if (k + 0 < 1) exit; step = NR / k
			for (i = 0; i < k; i++) print a[int(1 + i * step)] }'
}

# pc_in_windows WINDOWS CUTS: how many of the cut points are at wrap-around.
pc_in_windows() {
	[ -s "$1" ] || { echo 0; return; }
	awk 'NR == FNR { lo[NR] = $1; hi[NR] = $2; nw = NR; next }
		{ for (i = 1; i <= nw; i++) if ($1 > lo[i] && $1 <= hi[i]) { n++; break } }
		END { print n + 0 }' "$1" "$2"
}

# A crash during replay (see above). pcr_build CUT MODE VSEED: a variant of
# the recovery's log on pc-chk: the saved variant, the recovery up to the
# window, the window as MODE says.
pcr_build() {
	local w
	w=$(t_lwreplay window /dev/mapper/pc-log2 "$1" $pc_atom | cut -d' ' -f1)
	[ -n "$w" ] && t_lwreplay copy /dev/mapper/pc-pre /dev/mapper/pc-chk &&
		t_lwreplay replay /dev/mapper/pc-log2 /dev/mapper/pc-chk 0 "$w" &&
		t_lwreplay variant /dev/mapper/pc-log2 /dev/mapper/pc-chk "$1" "$2" "$3" $pc_atom
}

# pcr_broken WHY: the recovery of a variant could not be logged (a failure).
pcr_broken() {
	echo "    crash in recovery: FAIL: $*"
	nfail=$((nfail + 1)) nvar=$((nvar + 1)) pcr_var=$((pcr_var + 1))
	pcr_fail=$((pcr_fail + 1))
}

# pcr_maybe CUT MODE VSEED ACKS ($pc_after of the concurrent campaign):
# cut the recovery of this variant if it is its turn.
pcr_maybe() {
	local jrep
	if [ -n "${PC_RFORCE:-}" ]; then
		[ "$PC_RFORCE" = "$2:$3" ] || return 0
	else
		[ "$pcr_done" -lt "$pcr_n" ] &&
			[ $((ncut * (pcr_n + 1))) -ge $(((pcr_done + 1) * pcr_total)) ] || return 0
		jrep=$(sed -n 's/^# journal replayed \([0-9]*\) records.*/\1/p' $pc_tmp/pc.out)
		case $pc_cfg in
		*journal=rocksdb*) ;;
		*) [ "${jrep:-0}" -ge 2 ] || return 0 ;;
		esac
	fi
	pcr_done=$((pcr_done + 1))
	pcr_run "$@"
}

pcr_run() { # pcr_run CUT MODE VSEED ACKS
	local e2=$pc_tmp/pcr.entries rs rd c2 w2 nv2 nm2 m2 s2 v2
	if ! { pc_build_main "$1" "$2" "$3" &&
		t_lwreplay copy /dev/mapper/pc-chk /dev/mapper/pc-pre &&
		t_lwreplay zero /dev/mapper/pc-log2; } > $pc_tmp/pcr.err 2>&1; then
		pcr_broken "cut $1 $2 seed $3: cannot build it again: $(cat $pc_tmp/pcr.err)"
		return
	fi
	if ! $pc_dm create pc-lw2 --table \
		"0 $pc_size log-writes /dev/mapper/pc-chk /dev/mapper/pc-log2" 2> $pc_tmp/pcr.err ||
		! pcx_up /dev/mapper/pc-lw2 pc-r 2> $pc_tmp/pcr.err ||
		! t_powercut copen "$pcx_dev" "$pcx_meta" pc-lw2 > $pc_tmp/pcr.err 2>&1; then
		pcx_down pc-r; $pc_dm remove pc-lw2 2> /dev/null
		pcr_broken "cut $1 $2 seed $3: the logged recovery: $(cat $pc_tmp/pcr.err)"
		return
	fi
	pcx_down pc-r
	$pc_dm remove pc-lw2
	t_lwreplay list /dev/mapper/pc-log2 > "$e2" || { pcr_broken "cannot read pc-log2"; return; }
	rs=$(awk '$5 == "rstart" { print $1; exit }' "$e2")
	rd=$(awk '$5 == "rdone" { print $1; exit }' "$e2")
	[ -n "$rs" ] && [ -n "$rd" ] || { pcr_broken "no rstart/rdone mark in pc-log2"; return; }
	echo "    crash in recovery of cut $1 $2 seed $3: $(sed -n 's/^# //p' $pc_tmp/pcr.err);" \
		"its log: $(wc -l < "$e2") entries, $(awk -v a="$rs" -v b="$rd" \
		'$1 > a && $1 < b && $2 ~ /F/' "$e2" | wc -l) flushes in the open"
	pc_build=pcr_build
	pc_redo=" PC_RFORCE=$2:$3 PC_RCUTS=$pc_rcuts"
	for c2 in $(awk -v a="$rs" -v b="$rd" '$1 > a && $1 <= b && $2 ~ /F/ { print $1 }
			$1 > a && $1 < b && $2 ~ /[UM]/ { print $1 + 1 }' "$e2" | sort -n -u |
			awk -v k="$pc_rcuts" '{ a[NR] = $1 } END { if (NR == 0) exit
				if (k >= NR) { for (i = 1; i <= NR; i++) print a[i]; exit }
				step = NR / k; for (i = 0; i < k; i++) print a[int(1 + i * step)] }'); do
		set -- "$1" "$2" "$3" "$4" $(t_lwreplay window /dev/mapper/pc-log2 "$c2" $pc_atom)
		w2=$5 nv2=$6 nm2=$7
		pcr_cut=$((pcr_cut + 1))
		m2=prefix
		[ "${nv2:-0}" -gt 0 ] && m2="prefix reorder"
		[ "${nm2:-0}" -gt 0 ] && m2="prefix torn"
		for v2 in $m2; do
			s2=$((pc_seed * 1000003 + $1 * 16 + 8 + c2 * 4))
			[ $v2 = prefix ] || s2=$((s2 + 1))
			pcr_var=$((pcr_var + 1))
			pc_run_variant "$c2" "$v2" "$s2" "$4" \
				"  recovery cut $c2 (window $w2, $nv2 volatile) $v2 seed $s2" ||
				pcr_fail=$((pcr_fail + 1))
		done
	done
	pc_build=pc_build_main pc_redo=
}

pc_conc_one() { # pc_conc_one NAME KIND WHEN CONFIG
	local entries=$pc_tmp/pc.entries cuts=$pc_tmp/pc.cuts wraps=$pc_tmp/pc.wraps start n t0 secs why rc rdev
	local ccuts=$pc_ccuts nwcut=0
	pc_name=$1 pc_kind=$2 pc_cfg=$4 pc_cseed=$pc_seed
	case $pc_mode:$3 in quick:quick=*) [ -n "${PC_CCUTS:-}" ] || ccuts=${3#quick=} ;; esac
	pcr_n=0
	[ "$pc_mode" = full ] && pcr_n=4
	case $pc_mode:$pc_cfg in quick:*jsize=*) pcr_n=1 ;; esac
	pcr_n=${PC_RCRASH:-$pcr_n}
	[ -z "${PC_RFORCE:-}" ] || pcr_n=1
	pcr_done=0 pcr_cut=0 pcr_var=0 pcr_fail=0
	case $pc_kind in
	file) pc_atom="0 8" ;;		# both halves are ext4: 4 KiB blocks
	thin) pc_atom="$pc_data 8" ;;	# the pool's data tears at 512 bytes
	esac
	echo "=== powercut/$pc_name: $pc_kind, $pc_cfg, seed $pc_seed"
	pcc_t1=$(date +%s)
	pcx_down pc-; pcx_down pc-c; pc_cleanup
	mkdir -p /mnt/pc /mnt/pcc /mnt/pcd
	pc_regions || { kt_result powercut/$pc_name/workload FAIL "dmsetup linear failed"; return; }
	for d in pc-log pc-orig pc-rep; do
		t_lwreplay zero /dev/mapper/$d ||
			{ kt_result powercut/$pc_name/workload FAIL "cannot zero $d"; pc_cleanup; return; }
	done
	if ! $pc_dm create pc-lw --table \
		"0 $pc_size log-writes /dev/mapper/pc-orig /dev/mapper/pc-log" 2> $pc_tmp/pc.err ||
		! pcx_mkfs || ! pcx_up /dev/mapper/pc-lw pc- 2> $pc_tmp/pc.err; then
		kt_result powercut/$pc_name/workload FAIL "setting up: $(cat $pc_tmp/pc.err)"
		pcx_down pc-; pc_cleanup
		return
	fi
	[ "$pc_kind" != file ] || /usr/sbin/truncate -s 40M "$pcx_dev"
	if [ "$pc_kind" = thin ]; then
		rdev=dm-$($pc_dm info -c --noheadings -o minor pc-data | tr -d ' ')
		echo 0 > "/sys/block/$rdev/queue/rotational" ||
			echo "    cannot mark $rdev non-rotational"
	fi
	timeout -s KILL 900 t_powercut crun "$pcx_dev" "$pcx_meta" "$pc_cfg" "$pc_seed" pc-lw \
		> $pc_tmp/pcc.run 2>&1
	rc=$?
	grep -v '^SUB ' $pc_tmp/pcc.run | grep -v '^FAILED ' | sed 's/^/    /'
	pcx_down pc-
	$pc_dm remove pc-lw
	if [ $rc != 0 ] || ! grep -qx CDONE $pc_tmp/pcc.run; then
		kt_result powercut/$pc_name/workload FAIL "(exit $rc)"
		pc_cleanup
		return
	fi
	kt_result powercut/$pc_name/workload PASS
	why=$(pcx_paths)
	if [ -n "$why" ]; then
		kt_result powercut/$pc_name/paths FAIL "$why"
	else
		kt_result powercut/$pc_name/paths PASS
	fi

	t_lwreplay list /dev/mapper/pc-log > "$entries" ||
		{ kt_result powercut/$pc_name/cuts FAIL "cannot read the log"; pc_cleanup; return; }
	n=$(wc -l < "$entries")
	start=$(awk '$5 == "ack-0" { print $1; exit }' "$entries")
	echo "    log: $n entries, $(grep -c ' F' "$entries") flushes," \
		"$(grep -c ' a-' "$entries") ack marks; mkfs done at entry $start"
	[ -n "$start" ] ||
		{ kt_result powercut/$pc_name/cuts FAIL "no ack-0 mark"; pc_cleanup; return; }
	pc_wrap_windows "$entries" "$start" > "$wraps"
	{
		pc_cut_points "$entries" "$start" "$ccuts"
		[ -n "${PC_CUTLIST:-}" ] || pc_wrap_points "$entries" "$wraps" "$pc_wcuts"
	} | sort -n -u > "$cuts"
	nwcut=$(pc_in_windows "$wraps" "$cuts")
	echo "    $(wc -l < "$wraps") journal wraps marked; $(wc -l < "$cuts") cut points," \
		"$nwcut at wrap-around"
	pcr_total=$(wc -l < "$cuts")
	t0=$(date +%s)
	pc_up=pc_up_conc pc_down=pc_down_conc pc_check=pc_check_conc pc_acks=pc_acks_conc
	pc_after=pcr_maybe pc_build=pc_build_main pc_redo=
	pc_cuts "$cuts"
	pc_after=:
	secs=$(($(date +%s) - t0))
	# Control: the last cut against another seed's model is refused.
	rc=FAIL
	if [ -n "$last_cut" ] && pc_up_conc 2> /dev/null; then
		pc_cseed=$((pc_seed + 1))
		pc_check_conc "$last_acks" > $pc_tmp/pc.control 2>&1 || rc=PASS
		pc_cseed=$pc_seed
	fi
	pc_down_conc
	kt_result powercut/$pc_name/checker-refuses-wrong-model $rc
	echo "    $pc_name: $ncut cut points ($nwcut at wrap-around), $nvar variants" \
		"($n_reorder reorder, $n_torn torn; $pcr_var in $pcr_cut cuts of $pcr_done" \
		"recoveries), $ntx acknowledged transactions checked, $nfail failures, $secs s" \
		"($states_next checks found threads durable past their marks)"
	if [ "$pcr_n" != 0 ]; then
		if [ "$pcr_fail" != 0 ]; then
			kt_result powercut/$pc_name/crash-in-recovery FAIL \
				"$pcr_fail of $pcr_var variants of $pcr_cut recovery cuts failed"
		elif [ "$pcr_cut" = 0 ]; then
			kt_result powercut/$pc_name/crash-in-recovery FAIL \
				"no recovery was cut (no variant's open replayed two records?)"
		else
			kt_result powercut/$pc_name/crash-in-recovery PASS
		fi
	fi
	if [ "$ncut" = 0 ] || [ "$ncut" != "$(wc -l < "$cuts")" ]; then
		kt_result powercut/$pc_name/cuts FAIL "checked $ncut of $(wc -l < "$cuts") cut points"
	elif [ "$nfail" != 0 ]; then
		kt_result powercut/$pc_name/cuts FAIL "$nfail of $nvar variants lost or mangled" \
			"data ($fail_prefix prefix, $fail_reorder reorder, $fail_torn torn)"
	else
		kt_result powercut/$pc_name/cuts PASS
	fi
	pcc_cut=$((pcc_cut + ncut)) pcc_var=$((pcc_var + nvar)) pcc_fail=$((pcc_fail + nfail))
	pcc_wcut=$((pcc_wcut + nwcut)) pcc_rcut=$((pcc_rcut + pcr_cut)) pcc_rvar=$((pcc_rvar + pcr_var))
	pcc_secs="$pcc_secs $pc_name:$(($(date +%s) - pcc_t1))s"
	pcc_tx=$((pcc_tx + ntx)) pcc_bytes=$((pcc_bytes + nbytes)) pcc_n=$((pcc_n + 1))
	pcc_distinct=$((pcc_distinct + $(grep -c '^SUB ' $pc_tmp/pcc.run)))
	pc_cleanup
}

pc_conc_main() {
	local t0 name kind when cfg
	t0=$(date +%s)
	pcc_cut=0 pcc_var=0 pcc_fail=0 pcc_tx=0 pcc_bytes=0 pcc_n=0 pcc_distinct=0
	pcc_wcut=0 pcc_rcut=0 pcc_rvar=0 pcc_secs=
	echo "$pc_configs" > $pc_tmp/pc.configs
	while read -r name kind when cfg; do
		if [ -n "${PC_ONLY:-}" ]; then
			case ,$PC_ONLY, in *,"$name",*) ;; *) continue ;; esac
		elif [ "$pc_mode" = quick ] && [ "$when" = full ]; then
			continue
		fi
		pcc_before=$pcc_n
		pc_conc_one "$name" "$kind" "$when" "$cfg"
		# A configuration that stopped before its cuts (setup, workload or
		# log unusable; its RESULT line says why, and the next one starts
		# with pc_cleanup) is a failure, never a silent absence from the counts.
		if [ "$pcc_n" = "$pcc_before" ]; then
			pcc_fail=$((pcc_fail + 1)) pcc_n=$((pcc_n + 1))
			pcc_secs="$pcc_secs $name:unchecked"
		fi
	done < $pc_tmp/pc.configs
	echo "    concurrent campaign: $pcc_n configurations, $pcc_cut cut points" \
		"($pcc_wcut at wrap-around), $pcc_var variants ($pcc_rvar in $pcc_rcut cuts of" \
		"recoveries), $pcc_distinct transactions submitted," \
		"$pcc_tx acknowledged transactions checked, $pcc_fail failures;$pcc_secs"
	printf '{"kind":"powercut_concurrent","mode":"%s","configurations":%d,"cut_points":%d,' \
		"$pc_mode" "$pcc_n" "$pcc_cut"
	printf '"wrap_cut_points":%d,"recovery_cut_points":%d,"recovery_variants":%d,' \
		"$pcc_wcut" "$pcc_rcut" "$pcc_rvar"
	printf '"variants":%d,"txns_submitted":%d,"txns_checked":%d,"bytes_verified":%d,' \
		"$pcc_var" "$pcc_distinct" "$pcc_tx" "$pcc_bytes"
	printf '"failures":%d,"seconds":%d,"per_configuration":"%s"}\n' "$pcc_fail" \
		"$(($(date +%s) - t0))" "${pcc_secs# }"
}

pc_json=
case ,${PC_ONLY:-}, in ,,|*,serial,*) pc_main ;; esac
pc_conc_main
[ -z "$pc_json" ] || echo "$pc_json"
rm -rf "$pc_tmp"
