# v_powercut.sh: power cuts at the device level, replayed from a
# dm-log-writes log (issue 13 item 1, quick subset).
#
# One dm-log-writes device over a zeroed region of /dev/disk/scratch records,
# in completion order with their flush/FUA boundaries, every write of both
# halves of the store: the raw data device (dm-linear, first 64 MiB) and an
# ext4 file system holding the RocksDB directory (dm-linear, next 128 MiB).
# A single log orders the two devices' writes against each other.
# t_powercut runs a write-heavy workload on it (mkfs, then PC_TXNS
# transactions: large writes, deferred small overwrites, removes, clones,
# truncates, omap, a reclaim every 8) and marks each acknowledgement in the
# log ("ack-N"). Then, for PC_CUTS cut points chosen among the log entries
# after mkfs (every flush, FUA and mark entry is a candidate, spread evenly,
# plus random entries between flushes, which keep only part of the
# un-flushed writes), the log is replayed up to the cut onto a zeroed
# region (incrementally), copied to a check region, ext4 mounted (its
# journal recovers) and t_powercut check asserts that the store opens,
# holds exactly the state after the last acknowledged transaction (or the
# next one, durable before its mark), byte for byte with its omap, and that
# a deep fsck is clean.
#
# The checker must be able to fail: at the last cut it is also asked for
# the state two transactions back, which must be refused.
#
# Env (read in the guest): PC_TXNS (default 40), PC_CUTS (default 24;
# "all": every entry after mkfs), PC_SEED (default 1). A longer campaign:
#   vm/run --mem 2G --disk scratch:4G -- \
#       env PC_TXNS=200 PC_CUTS=all /opt/rawstore/tests/suite.sh v_powercut

pc_txns=${PC_TXNS:-40}
pc_cuts=${PC_CUTS:-24}
pc_seed=${PC_SEED:-1}
pc_dm=/usr/sbin/dmsetup
pc_scratch=/dev/disk/scratch
# 512-byte sectors
pc_data=131072			# 64 MiB raw data device
pc_meta=262144			# 128 MiB ext4 for RocksDB
pc_size=$((pc_data + pc_meta))
pc_log=3145728			# 1.5 GiB log
pc_orig=$pc_log
pc_rep=$((pc_orig + pc_size))
pc_chk=$((pc_rep + pc_size))

pc_cleanup() {
	umount /mnt/pc 2> /dev/null
	umount /mnt/pcc 2> /dev/null
	for d in pc-cdata pc-cmeta pc-chk pc-data pc-meta pc-lw pc-rep pc-orig pc-log; do
		$pc_dm remove "$d" 2> /dev/null
	done
}

pc_split() { # pc_split UNDER PREFIX: PREFIX-data and PREFIX-meta over UNDER
	$pc_dm create "$2data" --table "0 $pc_data linear $1 0" &&
		$pc_dm create "$2meta" --table "0 $pc_meta linear $1 $pc_data"
}

pc_main() {
	local log=/tmp/pc.log entries=/tmp/pc.entries cuts=/tmp/pc.cuts
	local start n prev cut acked fails=0 checked=0 states_next=0 out

	pc_cleanup
	mkdir -p /mnt/pc /mnt/pcc
	$pc_dm create pc-log --table "0 $pc_log linear $pc_scratch 0" &&
		$pc_dm create pc-orig --table "0 $pc_size linear $pc_scratch $pc_orig" &&
		$pc_dm create pc-rep --table "0 $pc_size linear $pc_scratch $pc_rep" &&
		$pc_dm create pc-chk --table "0 $pc_size linear $pc_scratch $pc_chk" ||
		{ kt_result powercut/setup FAIL "dmsetup linear failed"; return; }
	for d in pc-log pc-orig pc-rep; do
		t_lwreplay zero /dev/mapper/$d ||
			{ kt_result powercut/setup FAIL "cannot zero $d"; return; }
	done
	if ! $pc_dm create pc-lw --table \
		"0 $pc_size log-writes /dev/mapper/pc-orig /dev/mapper/pc-log" 2> /tmp/pc.err; then
		kt_result powercut/setup FAIL "dm-log-writes: $(cat /tmp/pc.err)"
		return
	fi
	pc_split /dev/mapper/pc-lw pc- &&
		/usr/sbin/mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 \
			/dev/mapper/pc-meta &&
		mount -t ext4 /dev/mapper/pc-meta /mnt/pc ||
		{ kt_result powercut/setup FAIL "ext4 on the logged device"; return; }
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
		pc_cleanup
		return
	fi
	kt_result powercut/workload PASS

	t_lwreplay list /dev/mapper/pc-log > "$entries" ||
		{ kt_result powercut/replay FAIL "cannot read the log"; pc_cleanup; return; }
	n=$(wc -l < "$entries")
	start=$(awk '$5 == "ack-0" { print $1; exit }' "$entries")
	echo "    log: $n entries, $(grep -c ' F' "$entries") flushes," \
		"$(grep -c 'ack-' "$entries") ack marks; mkfs done at entry $start"
	[ -n "$start" ] || { kt_result powercut/replay FAIL "no ack-0 mark"; pc_cleanup; return; }
	# Candidates: the entry after each flush/FUA/mark, and random entries.
	if [ "$pc_cuts" = all ]; then
		seq $((start + 1)) "$n" > "$cuts"
	else {
		awk -v s="$start" '$1 > s && $2 ~ /[FUM]/ { print $1 + 1 }' "$entries" |
			awk -v k="$((pc_cuts * 2 / 3))" '{ a[NR] = $1 } END {
				if (NR == 0) exit; step = NR / k; if (step < 1) step = 1;
				for (i = 1; i <= NR; i += step) print a[int(i)]; print a[NR] }'
		awk -v s="$start" -v n="$n" -v k="$((pc_cuts / 3))" -v seed="$pc_seed" \
			'BEGIN { srand(seed); for (i = 0; i < k; i++)
				print s + 1 + int(rand() * (n - s)) }'
	} | sort -n -u > "$cuts"
	fi

	prev=0
	t_lwreplay zero /dev/mapper/pc-rep
	while read -r cut; do
		t_lwreplay replay /dev/mapper/pc-log /dev/mapper/pc-rep "$prev" "$cut" || break
		prev=$cut
		acked=$(awk -v c="$cut" '$1 < c && $5 ~ /^ack-/ { sub("ack-", "", $5); a = $5 }
			END { print a + 0 }' "$entries")
		t_lwreplay copy /dev/mapper/pc-rep /dev/mapper/pc-chk || break
		pc_split /dev/mapper/pc-chk pc-c || break
		checked=$((checked + 1))
		if ! mount -t ext4 /dev/mapper/pc-cmeta /mnt/pcc 2> /tmp/pc.err; then
			echo "    cut $cut (acked $acked): ext4 does not mount: $(cat /tmp/pc.err)"
			fails=$((fails + 1))
		else
			out=$(t_powercut check /dev/mapper/pc-cdata /mnt/pcc/meta "$acked" \
				"$pc_seed" 2>&1)
			if [ $? != 0 ]; then
				echo "    cut $cut (acked $acked): FAIL"
				echo "$out" | sed 's/^/        /'
				fails=$((fails + 1))
			else
				echo "    cut $cut (acked $acked): ok$(echo "$out" |
					sed -n 's/^# state after transaction [0-9]* (durable.*/, next one durable/p')"
				echo "$out" | grep -q 'durable before' && states_next=$((states_next + 1))
			fi
			umount /mnt/pcc
		fi
		last_acked=$acked
		$pc_dm remove pc-cdata; $pc_dm remove pc-cmeta
	done < "$cuts"
	# Control: the final state is not the one two transactions back.
	control=FAIL
	if [ "${last_acked:-0}" -ge 2 ] && pc_split /dev/mapper/pc-chk pc-c &&
		mount -t ext4 /dev/mapper/pc-cmeta /mnt/pcc; then
		t_powercut check /dev/mapper/pc-cdata /mnt/pcc/meta $((last_acked - 2)) \
			"$pc_seed" > /tmp/pc.control 2>&1 || control=PASS
		umount /mnt/pcc
		$pc_dm remove pc-cdata; $pc_dm remove pc-cmeta
	fi
	kt_result powercut/checker-refuses-old-state $control
	if [ "$checked" = 0 ] || [ "$checked" != "$(wc -l < "$cuts")" ]; then
		kt_result powercut/replay FAIL "replayed $checked of $(wc -l < "$cuts") cut points"
	elif [ "$fails" != 0 ]; then
		kt_result powercut/replay FAIL "$fails of $checked cut points lost or mangled data"
	else
		echo "    $checked cut points, $pc_txns transactions, all consistent" \
			"($states_next held the next, not yet acknowledged transaction)"
		kt_result powercut/replay PASS
	fi
	pc_cleanup
}

pc_main
