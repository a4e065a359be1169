# tests/lib/results.sh: result bookkeeping for tests/run (sourced by bash;
# tests/harness/results.sh checks it on its own).
#
# The caller sets:
#   allowlist     the skip allowlist file (lines: SUITE/NAME-GLOB REASON)
#   expected_dir  the directory of expected-name lists (one file per suite)
#   update        1: check_expected reports instead of failing (--update-expected)
#   known_list    optional: the known-failures file (lines: SUITE/NAME-GLOB REASON)
# and reads passed, failed, skipped, known, failures[], allowed_skips[],
# known_failures[] afterwards.
# shellcheck shell=bash

passed=0 failed=0 skipped=0 known=0
failures=() allowed_skips=() known_failures=()
known_list=${known_list:-}
declare -A seen=()
update=${update:-0}

# The reason a file of globs (the skip allowlist, the known failures)
# gives for NAME, if any.
listed() { # listed FILE NAME
	local pat reason
	[ -n "$1" ] && [ -f "$1" ] || return 1
	while read -r pat reason; do
		case $pat in '' | '#'*) continue ;; esac
		# shellcheck disable=SC2053
		if [[ $2 == $pat ]]; then
			echo "${reason:-no reason given}"
			return 0
		fi
	done < "$1"
	return 1
}

# The allowlist reason for a skipped result, if any.
allowed_skip() { # allowed_skip NAME
	listed "$allowlist" "$1"
}

# count NAME PASS|FAIL|SKIP [reason]: a skip not in the allowlist fails.
count() {
	local why
	case $2 in
	PASS) passed=$((passed + 1)) ;;
	SKIP)
		if why=$(allowed_skip "$1"); then
			skipped=$((skipped + 1))
			allowed_skips+=("$1: ${3:-} (allowlisted: $why)")
			echo "SKIP $1: ${3:-} (allowlisted: $why)"
		else
			count "$1" FAIL "skipped, and tests/skip-allowlist does not allow it: ${3:-no reason}"
		fi
		;;
	*) failed=$((failed + 1)); failures+=("$1 ${3:-}"); echo "FAIL $1 ${3:-}" ;;
	esac
}

# result SUITE NAME PASS|FAIL|SKIP [reason]: count it and remember the name.
# A failure the known-failures list names is counted as a known failure:
# neither passed nor failing the run, printed with its reason.  A known
# failure that passes is a pass, and says the list can lose it.
result() {
	local why
	seen[$1/$2]=1
	if why=$(listed "$known_list" "$1/$2"); then
		case $3 in
		FAIL)
			known=$((known + 1))
			known_failures+=("$1/$2: ${4:-} (known: $why)")
			echo "KNOWN-FAIL $1/$2: ${4:-} (known: $why)"
			return
			;;
		PASS) echo "NOTE $1/$2 passed: tests/known-failures lists it as failing ($why)" ;;
		esac
	fi
	count "$1/$2" "$3" "${4:-}"
}

# check_expected SUITE: every name in $expected_dir/SUITE must have come
# back (else FAIL); names not in the list are printed as NEW.
check_expected() {
	local suite=$1 list=$expected_dir/$1 name n_new=0
	if [ ! -f "$list" ]; then
		[ "$update" = 1 ] || count "$suite" FAIL "no list of expected results $list"
		return
	fi
	while read -r name; do
		case $name in '' | '#'*) continue ;; esac
		[ -z "${seen[$suite/$name]:-}" ] || continue
		if [ "$update" = 1 ]; then
			echo "GONE $suite/$name: listed in tests/expected/$suite, no result (dropped)"
		else
			count "$suite/$name" FAIL "missing: listed in tests/expected/$suite, no result"
		fi
	done < "$list"
	for name in "${!seen[@]}"; do
		[ "${name%%/*}" = "$suite" ] || continue
		if ! grep -qxF "${name#*/}" "$list"; then
			echo "NEW $name: not in tests/expected/$suite (tests/run --update-expected)"
			n_new=$((n_new + 1))
		fi
	done
	[ "$n_new" = 0 ] || echo "  ($n_new new result name(s) in $suite; update the list)"
}

# update_expected SUITE: write the names seen in this run.
update_expected() {
	local suite=$1 name
	for name in "${!seen[@]}"; do
		[ "${name%%/*}" = "$suite" ] && echo "${name#*/}"
	done | LC_ALL=C sort > "$expected_dir/$suite"
	echo "wrote tests/expected/$suite ($(wc -l < "$expected_dir/$suite") names)"
}

# ctest_results XML RC LOG: count the cases of a ctest JUnit file; no file,
# no case, or a non-zero exit status without a failed case is a failure.
ctest_results() {
	local xml=$1 rc=$2 log=$3 n=0 nfail=0 name status
	if [ -f "$xml" ]; then
		while IFS=$'\t' read -r name status; do
			n=$((n + 1))
			case $status in
			run) result ctest "$name" PASS ;;
			notrun|disabled) result ctest "$name" SKIP "$(grep -A3 "\"$name\"" "$xml" | sed -n 's/.*message="\([^"]*\)".*/\1/p' | head -1)" ;;
			*) nfail=$((nfail + 1)); result ctest "$name" FAIL ;;
			esac
		done < <(sed -n 's/.*<testcase name="\([^"]*\)".*status="\([a-z]*\)".*/\1\t\2/p' "$xml")
	fi
	if [ "$n" = 0 ]; then
		count ctest FAIL "ctest reported no test cases (exit $rc); see $log"
	elif [ "$rc" != 0 ] && [ "$nfail" = 0 ]; then
		count ctest FAIL "ctest exited $rc although no case failed; see $log"
	fi
}

# guest_results LABEL LOG RC: count a guest suite's RESULT lines; none, or a
# failed run without a failed result, is a failure.
guest_results() {
	local label=$1 log=$2 rc=$3 n=0 name res reason
	while read -r _ name res reason; do
		n=$((n + 1))
		result "$label" "$name" "$res" "$reason"
	done < <(grep -a '^RESULT ' "$log")
	if [ "$n" = 0 ] || { [ "$rc" != 0 ] && ! grep -aq '^RESULT .* FAIL' "$log"; }; then
		tail -30 "$log" | sed 's/^/    /'
		count "$label" FAIL "guest run exited $rc after $n result(s); log $log"
	fi
}
