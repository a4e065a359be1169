#!/usr/bin/env bash
# man.sh MANDIR RAWSTORE RAWSTORE_BENCH INCLUDEDIR CC RAWSTORED
# Every man page renders without a warning (man --warnings) and has the
# sections its kind needs; rawstore(1) documents every subcommand and
# option that `rawstore --help` (and `rawstore CMD --help`, where a
# subcommand has one) lists; rawstore-bench(1) every workload and option of
# `rawstore-bench --help`; rawstored(8) every option of `rawstored --help`.  When a command grows, this fails and names what
# the page lacks.  Likewise every field of every public struct must be named
# on the section 3 page that documents the struct.
set -u
mandir=$1 rs=$2 bench=$3 inc=$4 cc=$5 rsd=$6
fail=0
bad() { echo "FAIL: $*"; fail=1; }
export LC_ALL=C.UTF-8 MANWIDTH=80

n=0
for p in "$mandir"/*.[1378]; do
	err=$(man --warnings -E UTF-8 -l "$p" 2>&1 > /dev/null)
	st=$?
	if [ $st != 0 ] || [ -n "$err" ]; then
		bad "$(basename "$p"): man --warnings (status $st):"
		printf '%s\n' "$err" | sed 's/^/    /'
	fi
	need=(NAME DESCRIPTION)
	case $p in
	*.1) need+=(SYNOPSIS "EXIT STATUS" EXAMPLES "SEE ALSO") ;;
	*.3) need+=(SYNOPSIS "RETURN VALUE" ERRORS "SEE ALSO") ;;
	*.7) need+=("SEE ALSO") ;;
	*.8) need+=(SYNOPSIS "EXIT STATUS" EXAMPLES "SEE ALSO") ;;
	esac
	for s in "${need[@]}"; do
		grep -qE "^\.SH \"?$s\"?\$" "$p" || bad "$(basename "$p") has no $s section"
	done
	n=$((n + 1))
done
[ $n -ge 10 ] || bad "only $n man pages in $mandir"
echo "$n pages rendered"

# has_option PAGE OPT: the page mentions --OPT (roff writes \-\-OPT, and
# \- inside it).
has_option() { sed 's/\\-/-/g' "$1" | grep -qE -- "--$2([^a-z0-9-]|\$)"; }

# rawstore(1): one .SS heading per subcommand, every option mentioned.
page=$mandir/rawstore.1
help=$("$rs" --help 2>&1) || bad "rawstore --help failed"
cmds=$(printf '%s\n' "$help" | sed -n '/^commands/,/^[^ ]/s/^  \([a-z][a-z0-9-]*\)\( .*\)\{0,1\}$/\1/p')
[ -n "$cmds" ] || bad "no subcommands found in rawstore --help"
opts=$(printf '%s\n' "$help" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
for c in $cmds; do
	grep -qE "^\.SS \"?$c( |\"|\$)" "$page" || bad "rawstore.1 has no section for subcommand '$c'"
	# A subcommand's own --help, where it has one, lists its options too.
	if sub=$(timeout 10 "$rs" "$c" --help < /dev/null 2>&1); then
		opts="$opts $(printf '%s\n' "$sub" | grep -oE -- '--[a-z][a-z0-9-]*')"
	fi
done
# ... and no section for a subcommand the command no longer has.
for c in $(sed -n '/^\.SH COMMANDS/,/^\.SH [^C]/s/^\.SS "\{0,1\}\([a-z][a-z0-9-]*\).*/\1/p' "$page"); do
	[ "$c" = help ] && continue
	printf '%s\n' $cmds | grep -qx -- "$c" ||
		bad "rawstore.1 documents subcommand '$c', which rawstore --help does not list"
done
for o in $(printf '%s\n' $opts | sort -u); do
	has_option "$page" "${o#--}" || bad "rawstore.1 does not mention option $o"
done
echo "rawstore.1: $(echo $cmds | wc -w) subcommands, $(printf '%s\n' $opts | sort -u | wc -l) options checked"

# rawstore-bench(1): every workload and option.
page=$mandir/rawstore-bench.1
help=$("$bench" --help 2>&1) || bad "rawstore-bench --help failed"
works=$(printf '%s\n' "$help" | sed -n '/^workloads/,/^[^ ]/s/^  \([a-z][a-z0-9-]*\).*/\1/p')
[ -n "$works" ] || bad "no workloads found in rawstore-bench --help"
for w in $works; do
	grep -qE "^\\\\fB$w(:|\\\\f)" "$page" || bad "rawstore-bench.1 does not describe workload '$w'"
done
bopts=$(printf '%s\n' "$help" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
for o in $bopts; do
	has_option "$page" "${o#--}" || bad "rawstore-bench.1 does not mention option $o"
done
echo "rawstore-bench.1: $(echo $works | wc -w) workloads, $(echo $bopts | wc -w) options checked"
# rawstored(8): every option.
page=$mandir/rawstored.8
help=$("$rsd" --help 2>&1) || bad "rawstored --help failed"
dopts=$(printf '%s\n' "$help" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
[ -n "$dopts" ] || bad "no options found in rawstored --help"
for o in $dopts; do
	has_option "$page" "${o#--}" || bad "rawstored.8 does not mention option $o"
done
echo "rawstored.8: $(echo $dopts | wc -w) options checked"
# Section 3: every field of every public struct, on its page.
declare -A struct_page=(
	[rawstore_mkfs_opts]=rawstore_open.3 [rawstore_open_opts]=rawstore_open.3
	[rawstore_statfs]=rawstore_statfs.3 [rawstore_info]=rawstore_statfs.3
	[rawstore_perf]=rawstore_statfs.3 [rawstore_stat]=rawstore_read.3
	[rawstore_extent]=rawstore_read.3
	[rawstore_fsck_opts]=rawstore_fsck.3 [rawstore_fsck_result]=rawstore_fsck.3
	[rawstore_fsck_problem]=rawstore_fsck.3
	[rawstore_space_opts]=rawstore_statfs.3 [rawstore_records]=rawstore_statfs.3
)
# "struct field" per member, from the preprocessed headers (comments gone):
# the last word of each declarator, or the name of a function pointer.
fields=$(echo '#include <rawstore/rawstore.h>' | "$cc" -E -P -I"$inc" -x c - | tr '\n' ' ' |
	sed 's/;/;\n/g; s/{/{\n/g; s/}/}\n/g' | awk '
	/struct rawstore_[a-z_]+ *\{/ {
		match($0, /struct rawstore_[a-z_]+/); cur = substr($0, RSTART + 7, RLENGTH - 7); next
	}
	/^ *\}/ { cur = ""; next }
	cur != "" && /;/ {
		line = $0; sub(/;.*/, "", line); sub(/\[.*\]/, "", line)
		if (line ~ /\(\*/) {
			match(line, /\(\* *[a-z_0-9]+/); n = substr(line, RSTART, RLENGTH)
			sub(/\(\* */, "", n); print cur, n; next
		}
		k = split(line, parts, ",")
		for (i = 1; i <= k; i++) {
			p = parts[i]; gsub(/\*/, " ", p); m = split(p, w, " "); print cur, w[m]
		}
	}')
[ "$(wc -l <<< "$fields")" -ge 50 ] || bad "only $(wc -l <<< "$fields") struct fields found in the headers"
nf=0
while read -r st field; do
	case $field in reserved* | '') continue ;; esac
	pg=${struct_page[$st]:-}
	if [ -z "$pg" ]; then
		bad "no man page is assigned to struct $st (tests/pack/man.sh struct_page)"
		struct_page[$st]=none
		continue
	fi
	[ "$pg" = none ] && continue
	sed 's/\\-/-/g; s/\\f[BIRP]//g' "$mandir/$pg" | grep -qw -- "$field" ||
		bad "$pg does not mention field $field of struct $st"
	nf=$((nf + 1))
done <<< "$fields"
echo "section 3: $nf struct fields checked"
[ $fail = 0 ] && echo "man: ok"
exit $fail
