#!/usr/bin/env bash
# headers.sh INCLUDEDIR CC CXX
# Each public header compiles on its own, twice in a row (include guard),
# as strict C11 and as C++11 and C++17, with every warning an error.
set -u
inc=$1 cc=$2 cxx=$3
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
for h in "$inc"/rawstore/*.h; do
	name=rawstore/$(basename "$h")
	printf '#include <%s>\n#include <%s>\nint rawstore_header_check;\n' "$name" "$name" > "$tmp/t.c"
	cp "$tmp/t.c" "$tmp/t.cc"
	for std in "$cc -std=c11 $tmp/t.c" "$cxx -std=c++11 $tmp/t.cc" "$cxx -std=c++17 $tmp/t.cc"; do
		# shellcheck disable=SC2086
		if ! $std -pedantic-errors -Wall -Wextra -Werror -I"$inc" -c -o "$tmp/t.o" \
			> "$tmp/err" 2>&1; then
			echo "FAIL: $name does not compile on its own: ${std%% $tmp*}"
			sed 's/^/    /' "$tmp/err"
			fail=1
		fi
		n=$((n + 1))
	done
done
echo "$n header compilations"
[ $fail = 0 ] && echo "headers: ok"
exit $fail
