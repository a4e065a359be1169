# v_powercut.sh: power cuts at the device level, replayed from a
# dm-log-writes log, with lost, reordered and torn un-flushed writes
# (issue 13 item 1).
#
# One dm-log-writes device over a zeroed region of the scratch disk records,
# with their flush/FUA boundaries, every write of both halves of the store:
# the raw data device (dm-linear, first 64 MiB) and an ext4 file system
# holding the RocksDB directory (dm-linear, next 128 MiB). A single log
# orders the two devices' writes against each other, so RocksDB's directory
# loses, reorders and tears its un-synced writes exactly like the data
# device. t_powercut runs a write-heavy workload on it (mkfs, then PC_TXNS
# transactions: large writes, deferred small overwrites, removes, clones,
# renames, truncates, omap, a reclaim every 8) and marks each
# acknowledgement in the log ("ack-N"; the log is outside the replayed
# devices).
#
# Cut points are chosen among the log entries after mkfs: just before each
# flush (the writes of its group completed but are not yet durable), just
# after each FUA write and acknowledgement mark, and random entries. For a
# cut, t_lwreplay window finds the volatile window (the writes since the
# last flush that are not FUA; see t_lwreplay.c); the log up to the window
# is replayed (incrementally) onto a zeroed region, copied to a check
# region, and one variant of the window is applied on top:
#   prefix   the window in log order (a plain replay up to the cut)
#   reorder  a random subset of the volatile writes in a random order
#   torn     as reorder, and some multi-sector writes torn (a random prefix
#            or a random set of their sectors)
# Then ext4 is mounted (its journal recovers) and t_powercut check asserts
# that the store opens, holds exactly the state after the last acknowledged
# transaction (or the next one, durable before its mark), byte for byte with
# its omap, and that a deep fsck is clean (no leak, no double use, every
# checksum). Each variant prints its seed and the command that redoes it.
#
# The checker must be able to fail: at the last cut it is also asked for
# the state two transactions back, which must be refused. A variant that
# cannot be built (or brought up) is a failure of its cut, never skipped:
# powercut/unbuilt-variant-fails runs the counting with a variant that
# t_lwreplay refuses and checks that it comes back as one more failure.
#
# At the end one JSON line sums the run:
#   {"kind":"powercut","mode":"quick"|"full","cut_points":N,"variants":N,
#    "txns_checked":N,"bytes_verified":N,"failures":N,"seconds":S}
# (variants: checks run; txns_checked: acknowledged transactions verified,
# summed over the checks; bytes_verified: object bytes read and compared).
#
# Env (read in the guest):
#   PC_MODE      quick (default, CI) or full (the benchmark's campaign)
#   PC_TXNS      transactions (quick 40, full 100)
#   PC_CUTS      at most that many cut points, two thirds flush/FUA/mark
#                points spread evenly, one third random (quick 16);
#                "points" (full): every flush, FUA and mark point and 100
#                random ones; "all": every entry after mkfs
#   PC_REORDER   reorder variants per cut that has volatile writes (1)
#   PC_TORN      torn variants per cut that has a write that can tear (1)
#   PC_ATOM      "FROM UNIT" (512-byte sectors): writes at or past FROM tear
#                only at multiples of UNIT (default: the ext4 part at 4 KiB)
#   PC_CUTLIST   only these cut points (to redo a failure)
#   PC_REUSE=1   skip the workload and replay the log already on the scratch
#                disk (the log depends on timing, not only on PC_SEED, so a
#                failure is redone on its own log: keep the disk with
#                vm/run --disk scratch:4G:file=PATH)
#   PC_SEED      the workload's seed (1); each variant's seed is printed
#   PC_SCRATCH   the disk to use (/dev/disk/scratch, at least 2.5 GiB)
#   PC_ONLY      "serial": this campaign alone (no concurrent one); names of
#                concurrent configurations: those alone (see below)
# A full campaign by hand (100 transactions: about 350 points and 100
# random cuts, 600 variants, over an hour under TCG):
#   vm/run --mem 2G --timeout 14400 --disk scratch:4G -- \
#       env PC_MODE=full /opt/rawstore/tests/suite.sh v_powercut
# (the journal's shapes alone, PC_ONLY=thin-wrap-deferred,
# file-rocksdb-inline-errors,file-wrap-background: about 130 cut points,
# 50 of them at wrap-around, and 48 cuts of 12 recoveries, 17 minutes)

pc_mode=${PC_MODE:-quick}
case $pc_mode in
full) pc_txns=${PC_TXNS:-100} pc_cuts=${PC_CUTS:-points} pc_nre=${PC_REORDER:-1} pc_nto=${PC_TORN:-1} ;;
*) pc_mode=quick
	pc_txns=${PC_TXNS:-40} pc_cuts=${PC_CUTS:-16} pc_nre=${PC_REORDER:-1} pc_nto=${PC_TORN:-1} ;;
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
	for d in pc-rdata pc-rmeta pc-rpool pc-rpdata pc-rpmeta pc-lw2 pc-log2 pc-pre \
		pc-cdata pc-cmeta pc-chk pc-data pc-meta pc-lw pc-rep pc-orig pc-log; do
		$pc_dm remove "$d" 2> /dev/null
	done
}

pc_split() { # pc_split UNDER PREFIX: PREFIX-data and PREFIX-meta over UNDER
	$pc_dm create "$2data" --table "0 $pc_data linear $1 0" &&
		$pc_dm create "$2meta" --table "0 $pc_meta linear $1 $pc_data"
}

pc_workload() { # the logged workload; 0 when it ran to its last ack
	local log=$pc_tmp/pc.log rc

	for d in pc-log pc-orig pc-rep; do
		t_lwreplay zero /dev/mapper/$d ||
			{ kt_result powercut/setup FAIL "cannot zero $d"; return 1; }
	done
	if ! $pc_dm create pc-lw --table \
		"0 $pc_size log-writes /dev/mapper/pc-orig /dev/mapper/pc-log" 2> $pc_tmp/pc.err; then
		kt_result powercut/setup FAIL "dm-log-writes: $(cat $pc_tmp/pc.err)"
		return 1
	fi
	pc_split /dev/mapper/pc-lw pc- &&
		/usr/sbin/mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 \
			/dev/mapper/pc-meta &&
		mount -t ext4 /dev/mapper/pc-meta /mnt/pc ||
		{ kt_result powercut/setup FAIL "ext4 on the logged device"; return 1; }
	kt_result powercut/setup PASS

	echo "=== powercut/workload: $pc_txns transactions, seed $pc_seed"
	timeout -s KILL 900 t_powercut run /dev/mapper/pc-data /mnt/pc/meta \
		"$pc_txns" "$pc_seed" pc-lw > "$log" 2>&1
	rc=$?
	tail -3 "$log" | sed 's/^/    /'
	umount /mnt/pc
	$pc_dm remove pc-data; $pc_dm remove pc-meta; $pc_dm remove pc-lw
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

# The serial campaign's hooks: the store's halves are pc-cdata and pc-cmeta
# (ext4, at /mnt/pcc) over the check region.
pc_up_serial() {
	pc_split /dev/mapper/pc-chk pc-c && mount -t ext4 /dev/mapper/pc-cmeta /mnt/pcc
}
pc_down_serial() {
	umount /mnt/pcc 2> /dev/null
	$pc_dm remove pc-cdata; $pc_dm remove pc-cmeta
}
pc_check_serial() {
	t_powercut check /dev/mapper/pc-cdata /mnt/pcc/meta "$1" "$pc_seed"
}
pc_acks_serial() {
	awk -v c="$1" '$1 < c && $5 ~ /^ack-/ { sub("ack-", "", $5); a = $5 }
		END { print a + 0 }' $pc_tmp/pc.entries
}

pc_main() {
	local log=$pc_tmp/pc.log entries=$pc_tmp/pc.entries cuts=$pc_tmp/pc.cuts
	local n start t0 secs m f c control rc

	pc_name=
	pc_cleanup
	mkdir -p /mnt/pc /mnt/pcc
	pc_regions || { kt_result powercut/setup FAIL "dmsetup linear failed"; return; }
	if [ "${PC_REUSE:-0}" = 1 ]; then
		kt_result powercut/setup PASS
		kt_result powercut/workload SKIP "PC_REUSE=1: the log already on $pc_scratch is replayed"
	elif ! pc_workload; then
		pc_cleanup
		return
	fi

	t_lwreplay list /dev/mapper/pc-log > "$entries" ||
		{ kt_result powercut/replay FAIL "cannot read the log"; pc_cleanup; return; }
	n=$(wc -l < "$entries")
	start=$(awk '$5 == "ack-0" { print $1; exit }' "$entries")
	echo "    log: $n entries, $(grep -c ' F' "$entries") flushes," \
		"$(grep -c 'ack-' "$entries") ack marks; mkfs done at entry $start"
	[ -n "$start" ] || { kt_result powercut/replay FAIL "no ack-0 mark"; pc_cleanup; return; }
	pc_cut_points "$entries" "$start" "$pc_cuts" > "$cuts"

	t0=$(date +%s)
	pc_up=pc_up_serial pc_down=pc_down_serial pc_check=pc_check_serial pc_acks=pc_acks_serial
	pc_after=: pc_redo=
	pc_cuts "$cuts"
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
	rc=$( (pc_run_variant "${last_cut:-0}" bogus 1 "${last_acks:-0}" \
		"self-check: cut ${last_cut:-0}, a variant that cannot be built" > /dev/null
		echo "$nfail $nvar") )
	if [ "$rc" = "$((nfail + 1)) $((nvar + 1))" ]; then
		kt_result powercut/unbuilt-variant-fails PASS
	else
		kt_result powercut/unbuilt-variant-fails FAIL "failures, variants went from" \
			"$nfail $nvar to $rc, want one more of each"
	fi
	echo "    $ncut cut points, $nvar variants ($n_reorder reorder, $n_torn torn)," \
		"$pc_txns transactions, $nfail failures, $secs s ($states_next held the next," \
		"not yet acknowledged transaction)"
	if [ "$ncut" = 0 ] || [ "$ncut" != "$(wc -l < "$cuts")" ]; then
		kt_result powercut/replay FAIL "checked $ncut of $(wc -l < "$cuts") cut points"
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
	pc_json="$(printf '{"kind":"powercut","mode":"%s","cut_points":%d,"variants":%d,' \
		"$pc_mode" "$ncut" "$nvar")$(printf \
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
