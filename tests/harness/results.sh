#!/usr/bin/env bash
# tests/run's bookkeeping (tests/lib/results.sh) cannot hide a failure:
# a skip fails unless the allowlist names it; a listed result name that
# does not come back fails; a new one is reported; ctest with no JUnit file,
# with zero cases, or exiting non-zero with no failed case fails; a guest
# suite with no RESULT line, or failing without a failed result, fails.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad=0
expect() { # expect WHAT WANT GOT
	if [ "$2" = "$3" ]; then
		echo "ok - $1 ($3)"
	else
		echo "not ok - $1: got '$3', want '$2'"
		bad=1
	fi
}
# Run a snippet against fresh bookkeeping; print "passed failed skipped".
counts() { # counts SNIPPET
	(
		allowlist=$tmp/allow expected_dir=$tmp/expected update=0 known_list=$tmp/known
		# shellcheck source=tests/lib/results.sh
		. "$repo/tests/lib/results.sh"
		eval "$1" > "$tmp/out" 2>&1
		echo "$passed $failed $skipped"
	)
}
mkdir -p "$tmp/expected"
printf 'ctest/Host.*\tneeds a host feature\n' > "$tmp/allow"

expect "a pass counts as passed" "1 0 0" "$(counts 'result kernel a PASS')"
expect "a skip not in the allowlist fails" "0 1 0" "$(counts 'result kernel a SKIP "no provision"')"
grep -q 'FAIL kernel/a skipped, and tests/skip-allowlist does not allow it: no provision' "$tmp/out" ||
	{ echo "not ok - the failure does not give the skip reason"; cat "$tmp/out"; bad=1; }
expect "an allowlisted skip is a skip" "0 0 1" "$(counts 'result ctest Host.loop SKIP "no root"')"

printf 'swift/t.xxe_*\tfails on the stock backend too\n' > "$tmp/known"
expect "a known failure is neither passed nor failed" "0 0 0" "$(counts 'result swift t.xxe_1 FAIL "400 != 200"')"
grep -q 'KNOWN-FAIL swift/t.xxe_1: 400 != 200 (known: fails on the stock backend too)' "$tmp/out" ||
	{ echo "not ok - a known failure is not printed with its reason"; cat "$tmp/out"; bad=1; }
expect "a known failure is counted as one" "1" "$( (allowlist=$tmp/allow expected_dir=$tmp/expected known_list=$tmp/known
	. "$repo/tests/lib/results.sh"; result swift t.xxe_1 FAIL > /dev/null; echo "$known") )"
expect "a known failure that passes is a pass" "1 0 0" "$(counts 'result swift t.xxe_1 PASS')"
expect "a known-failure name does not excuse a skip" "0 1 0" "$(counts 'result swift t.xxe_1 SKIP "no xxe"')"
expect "a failure not on the list fails" "0 1 0" "$(counts 'result swift t.other FAIL')"

printf 'a\nb\n' > "$tmp/expected/kernel"
expect "every listed name came back" "2 0 0" \
	"$(counts 'result kernel a PASS; result kernel b PASS; check_expected kernel')"
expect "a listed name that did not come back fails" "1 1 0" \
	"$(counts 'result kernel a PASS; check_expected kernel')"
grep -q 'FAIL kernel/b missing' "$tmp/out" || { echo "not ok - no 'missing' line"; bad=1; }
expect "a new name passes, and is reported" "3 0 0" \
	"$(counts 'result kernel a PASS; result kernel b PASS; result kernel c PASS; check_expected kernel')"
grep -q '^NEW kernel/c' "$tmp/out" || { echo "not ok - the new name is not reported"; bad=1; }
expect "a suite without a list fails" "1 1 0" "$(counts 'result vm a PASS; check_expected vm')"

cat > "$tmp/ok.xml" <<'X'
<testsuite><testcase name="T.a" classname="T" time="0.1" status="run"></testcase>
<testcase name="T.b" classname="T" time="0.1" status="run"></testcase></testsuite>
X
cat > "$tmp/none.xml" <<'X'
<testsuite tests="0"></testsuite>
X
expect "ctest: two cases" "2 0 0" "$(counts "ctest_results $tmp/ok.xml 0 log")"
expect "ctest: no JUnit file (ctest died)" "0 1 0" "$(counts "ctest_results $tmp/missing.xml 0 log")"
expect "ctest: zero cases" "0 1 0" "$(counts "ctest_results $tmp/none.xml 0 log")"
expect "ctest: exit 8 with no failed case" "2 1 0" "$(counts "ctest_results $tmp/ok.xml 8 log")"

printf 'RESULT a PASS\nRESULT b SKIP no provision_max_bytes\n' > "$tmp/g1.log"
expect "guest: a non-allowlisted skip fails" "1 1 0" "$(counts "guest_results kernel $tmp/g1.log 0")"
printf 'booting\n' > "$tmp/g2.log"
expect "guest: no RESULT line" "0 1 0" "$(counts "guest_results kernel $tmp/g2.log 0")"
printf 'RESULT a PASS\n' > "$tmp/g3.log"
expect "guest: exit 1 without a failed result" "1 1 0" "$(counts "guest_results kernel $tmp/g3.log 1")"

# tests/run itself: a stale ctest.xml is deleted before ctest runs, the
# guest suites are started with bash (not their mode bit), RAWSTORE_SERIES
# is dropped, and every suite's names are checked.
grep -q 'rm -f "$logdir/ctest.xml"' "$repo/tests/run" &&
	grep -q 'run_suite kernel bash tests/kernel/run' "$repo/tests/run" &&
	grep -q 'run_suite vm bash tests/vm/run' "$repo/tests/run" &&
	grep -q '^unset RAWSTORE_SERIES' "$repo/tests/run" &&
	grep -q 'check_expected "$s"' "$repo/tests/run" ||
	{ echo "not ok - tests/run lost a safeguard (stale ctest.xml, bash, RAWSTORE_SERIES, lists)"; bad=1; }
grep -q 'run_suite swift bash tests/swift/run' "$repo/tests/run" ||
	{ echo "not ok - tests/run does not run the swift suite"; bad=1; }
for s in ctest harness kernel vm swift; do
	[ -s "$repo/tests/expected/$s" ] || { echo "not ok - tests/expected/$s is missing or empty"; bad=1; }
done
exit $bad
