#!/usr/bin/env bash
# expect.sh [--status N] REGEX... -- COMMAND [ARGS...]
# Runs COMMAND, prints its output, and fails unless it exits with status N
# (default 0) and every extended REGEX matches a line of its stdout+stderr.
# (ctest's PASS_REGULAR_EXPRESSION alone would ignore the exit status.)
set -u
want=0
if [ "${1:-}" = --status ]; then
	want=$2
	shift 2
fi
res=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	res+=("$1")
	shift
done
[ "${1:-}" = -- ] || { echo "expect.sh: missing -- COMMAND" >&2; exit 2; }
shift
out=$("$@" 2>&1)
st=$?
printf '%s\n' "$out"
fail=0
if [ "$st" != "$want" ]; then
	echo "expect.sh: exit status $st, expected $want" >&2
	fail=1
fi
for re in "${res[@]}"; do
	if ! grep -Eq -- "$re" <<< "$out"; then
		echo "expect.sh: no line matches /$re/" >&2
		fail=1
	fi
done
exit $fail
