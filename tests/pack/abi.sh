#!/usr/bin/env bash
# abi.sh LIBSO LIBA INCLUDEDIR CC
# The ABI of librawstore.so: its soname is librawstore.so.0; it exports
# rawstore_* functions and nothing else (no internal helper, no rs_debug_*
# test hook, which only the static library keeps for the unit tests); every
# exported function is declared in the public headers, and every function
# the headers declare is exported.
set -u
so=$1 a=$2 inc=$3 cc=$4
fail=0
bad() { echo "FAIL: $*"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$soname" = librawstore.so.0 ] || bad "soname is '$soname', expected librawstore.so.0"

# "name type version", one per line (nm prints name@@version); the
# version node RAWSTORE_0 itself is an absolute symbol.
nm -D --defined-only "$so" | awk '{ v = $3; sub(/^[^@]*@*/, "", v); sub(/@.*/, "", $3);
	print $3, $2, v }' > "$tmp/defined"
awk '$1 !~ /^rawstore_/ && !($1 == "RAWSTORE_0" && $2 == "A") { print $1 }' "$tmp/defined" > "$tmp/others"
if [ -s "$tmp/others" ]; then
	bad "exported symbols outside rawstore_*:"
	sed 's/^/    /' "$tmp/others"
fi
awk '$1 ~ /^rawstore_/ && $2 != "T" { print $1, $2 }' "$tmp/defined" > "$tmp/nonfunc"
if [ -s "$tmp/nonfunc" ]; then
	bad "exported rawstore_* symbols that are not functions:"
	sed 's/^/    /' "$tmp/nonfunc"
fi
awk '$1 ~ /^rawstore_/ { print $1 }' "$tmp/defined" | sort -u > "$tmp/exported"
n=$(wc -l < "$tmp/exported")
echo "librawstore.so: soname $soname, $n exported functions"
grep -qx rawstore_open "$tmp/exported" || bad "rawstore_open is not exported"
awk '$1 ~ /^rawstore_/ && $3 != "RAWSTORE_0" { print $1 "@" $3 }' "$tmp/defined" > "$tmp/unversioned"
if [ -s "$tmp/unversioned" ]; then
	bad "functions without the version RAWSTORE_0:"
	sed 's/^/    /' "$tmp/unversioned"
fi

# The test hooks stay in the static library only.
nm --defined-only "$a" 2> /dev/null | grep -q ' T rs_debug_set_crash_point$' ||
	bad "librawstore.a lacks rs_debug_set_crash_point (unit tests need it)"
grep -q '^rs_debug_' "$tmp/others" && bad "a test hook (rs_debug_*) is exported"

# Every exported function is declared: take its address in a strict C11
# translation unit that includes only the public header.
{
	echo '#include <rawstore/rawstore.h>'
	echo 'typedef void (*any_fn)(void);'
	echo 'any_fn rawstore_abi_check[] = {'
	sed 's/.*/\t(any_fn)\&&,/' "$tmp/exported"
	echo '};'
} > "$tmp/decl.c"
if ! "$cc" -std=c11 -pedantic-errors -Wall -Wextra -Werror -I"$inc" -c "$tmp/decl.c" \
	-o "$tmp/decl.o" 2> "$tmp/decl.err"; then
	bad "exported functions without a declaration in include/rawstore/:"
	grep -E 'error' "$tmp/decl.err" | head -40 | sed 's/^/    /'
fi

# Every function the headers declare is exported (comments stripped by
# the preprocessor; function-pointer typedefs read "(*name)(", not "name(").
echo '#include <rawstore/rawstore.h>' | "$cc" -E -P -I"$inc" -x c - |
	grep -oE '\brawstore_[a-z0-9_]+ *\(' | sed 's/ *($//' | sort -u > "$tmp/declared"
comm -23 "$tmp/declared" "$tmp/exported" > "$tmp/missing"
if [ -s "$tmp/missing" ]; then
	bad "declared in the headers but not exported:"
	sed 's/^/    /' "$tmp/missing"
fi
echo "headers declare $(wc -l < "$tmp/declared") functions"
[ $fail = 0 ] && echo "abi: ok"
exit $fail
