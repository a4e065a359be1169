#!/usr/bin/env bash
# install.sh BUILDDIR SRCDIR VERSION CMAKE CC CXX
# cmake --install into a temporary prefix puts every promised file there;
# the installed commands run; a program is built against the installed tree
# (not the source tree) twice, with pkg-config and with find_package (shared
# and static library, C and C++), and each runs against a file-backed store
# made by the installed `rawstore mkfs`; the installed `rawstore cat` reads
# back what the programs wrote.
set -u
build=$1 src=$2 version=$3 cmake=$4 cc=$5 cxx=$6
fail=0
bad() { echo "FAIL: $*"; fail=1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rawstore-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

if ! "$cmake" --install "$build" --prefix "$prefix" > "$tmp/install.log" 2>&1; then
	cat "$tmp/install.log"
	echo "FAIL: cmake --install"
	exit 1
fi
libdir=$(cd "$prefix" && dirname "$(find . -name 'librawstore.so.0' | head -1)")
libdir=$prefix/${libdir#./}
[ -d "$libdir" ] || { echo "FAIL: no librawstore.so.0 installed"; exit 1; }
echo "installed into $prefix (libdir ${libdir#"$prefix"/})"

for f in "$libdir/librawstore.so.$version" "$libdir/librawstore.a" \
	"$libdir/pkgconfig/rawstore.pc" "$libdir/cmake/rawstore/rawstoreConfig.cmake" \
	"$libdir/cmake/rawstore/rawstoreConfigVersion.cmake" \
	"$libdir/cmake/rawstore/rawstoreTargets.cmake" \
	"$prefix/bin/rawstore" "$prefix/bin/rawstore-bench" \
	"$prefix/share/man/man1/rawstore.1" "$prefix/share/man/man1/rawstore-bench.1" \
	"$prefix/share/man/man7/rawstore.7" "$prefix/share/man/man3/rawstore_open.3" \
	"$prefix/share/man/man3/rawstore_submit.3" "$prefix/share/man/man3/rawstore_txn_new.3" \
	"$prefix/share/man/man3/rawstore_read.3" "$prefix/share/man/man3/rawstore_fsck.3" \
	"$prefix/share/man/man3/rawstore_statfs.3" "$prefix/share/doc/rawstore/DESIGN.md"; do
	[ -f "$f" ] || bad "not installed: ${f#"$prefix"/}"
done
[ "$(readlink "$libdir/librawstore.so.0")" = "librawstore.so.$version" ] ||
	bad "librawstore.so.0 does not point at librawstore.so.$version"
[ "$(readlink "$libdir/librawstore.so")" = librawstore.so.0 ] ||
	bad "librawstore.so does not point at librawstore.so.0"
for h in "$src"/include/rawstore/*.h; do
	cmp -s "$h" "$prefix/include/rawstore/$(basename "$h")" ||
		bad "header not installed: include/rawstore/$(basename "$h")"
done
# The Swift backend (integrations/swift): the package and the egg-info
# whose entry_points.txt Swift's pkg_resources reads.
for f in rawstore_swift/diskfile.py rawstore_swift/broker.py \
	rawstore_swift/replicator.py rawstore_swift/recon.py \
	rawstore_swift-0.1.egg-info/entry_points.txt; do
	compgen -G "$prefix/lib/python3*/dist-packages/$f" > /dev/null ||
		bad "not installed: lib/python3*/dist-packages/$f"
done
# Only what was promised: no test programs, no internal headers.
find "$prefix" -type f | sed "s|^$prefix/||" | sort > "$tmp/files"
if grep -vE '^(bin/rawstore(-bench|-object-replicator)?|sbin/rawstored|lib/systemd/system/(rawstored|rawstore-object-replicator)\.service|lib[^/]*(/[^/]*-linux-gnu[^/]*)?/(librawstore\.(a|so\..*)|pkgconfig/rawstore\.pc|cmake/rawstore/rawstore[A-Za-z-]*\.cmake)|include/rawstore/[a-z]+\.h|share/man/man[1378]/rawstore[a-z_-]*\.[1378]|share/doc/rawstore/.*|lib/python3[.0-9]*/dist-packages/(rawstore_swift/[a-z_]+\.py|rawstore_swift-[0-9.]+\.egg-info/(PKG-INFO|[a-z_]+\.txt)))$' \
	"$tmp/files" > "$tmp/extra"; then
	bad "unexpected installed files:"
	sed 's/^/    /' "$tmp/extra"
fi
echo "$(wc -l < "$tmp/files") files installed"

out=$("$prefix/bin/rawstore" version 2>&1)
[ "$out" = "rawstore $version" ] || bad "installed rawstore version says '$out'"
"$prefix/bin/rawstore-bench" --help > /dev/null 2>&1 || bad "installed rawstore-bench --help"
"$prefix/sbin/rawstored" --help > /dev/null 2>&1 || bad "installed rawstored --help"
[ -f "$prefix/lib/systemd/system/rawstored.service" ] || bad "rawstored.service not installed"
[ -x "$prefix/bin/rawstore-object-replicator" ] || bad "rawstore-object-replicator not installed"
grep -q "^ExecStart=/.*/bin/rawstore-object-replicator " \
	"$prefix/lib/systemd/system/rawstore-object-replicator.service" ||
	bad "rawstore-object-replicator.service not installed or not naming the script"
# Every exported function has a man page (its own, or a link to the page
# that documents it: man/CMakeLists.txt).
nopage=()
for f in $(nm -D --defined-only "$libdir/librawstore.so.0" | awk '$3 ~ /^rawstore_/ { sub(/@.*/, "", $3); print $3 }'); do
	MANPATH=$prefix/share/man man -w 3 "$f" > /dev/null 2>&1 || nopage+=("$f")
done
[ ${#nopage[@]} = 0 ] || bad "no man page for: ${nopage[*]} (add it to man/CMakeLists.txt)"

# A file-backed store made by the installed command.
dev=$tmp/dev meta=$tmp/meta
truncate -s 64M "$dev"
"$prefix/bin/rawstore" mkfs "$dev" "$meta" > /dev/null || bad "installed rawstore mkfs"

run() { # run NAME PROGRAM OBJECT: PROGRAM writes OBJECT, read back with rawstore cat
	local name=$1 prog=$2 obj=$3 out
	if ! out=$("$prog" "$dev" "$meta" "$obj" "written by $name" 2>&1); then
		bad "$name: $out"
		return
	fi
	echo "$name: $out"
	[ "$out" = "consumer $version: read $((11 + ${#name})) bytes: written by $name" ] ||
		bad "$name printed '$out'"
	out=$("$prefix/bin/rawstore" cat "$dev" "$meta" c "$obj" 2>&1)
	[ "$out" = "written by $name" ] || bad "$name: rawstore cat says '$out'"
}
uses_installed_so() { # uses_installed_so PROGRAM
	ldd "$1" | grep -q "librawstore.so.0 => $libdir/librawstore.so.0" ||
		{ bad "$(basename "$1") does not load $libdir/librawstore.so.0:"; ldd "$1"; }
}

# 1. pkg-config
export PKG_CONFIG_PATH=$libdir/pkgconfig
v=$(pkg-config --modversion rawstore 2>&1)
[ "$v" = "$version" ] || bad "pkg-config --modversion rawstore: '$v'"
flags=$(pkg-config --cflags --libs rawstore)
echo "pkg-config --cflags --libs rawstore: $flags"
case " $flags " in *" -I$prefix/include "*) ;; *) bad "pkg-config cflags lack -I$prefix/include" ;; esac
# shellcheck disable=SC2086
if "$cc" -std=c11 -Wall -Wextra -Werror -o "$tmp/pc-consumer" "$src/tests/pack/consumer/consumer.c" \
	$flags -Wl,-rpath,"$libdir" 2> "$tmp/cc.log"; then
	uses_installed_so "$tmp/pc-consumer"
	run pkg-config "$tmp/pc-consumer" pc
else
	cat "$tmp/cc.log"
	bad "building with pkg-config"
fi
# shellcheck disable=SC2086
static_libs=$(pkg-config --static --libs rawstore)
static_libs=${static_libs/-lrawstore/$libdir/librawstore.a}
# shellcheck disable=SC2086
if "$cc" -std=c11 -o "$tmp/pc-static" "$src/tests/pack/consumer/consumer.c" \
	$(pkg-config --cflags rawstore) $static_libs 2> "$tmp/cc.log"; then
	ldd "$tmp/pc-static" | grep -q librawstore && bad "pkg-config static consumer loads librawstore.so"
	run pkg-config-static "$tmp/pc-static" pcs
else
	cat "$tmp/cc.log"
	bad "building statically with pkg-config --static"
fi
unset PKG_CONFIG_PATH

# 2. find_package(rawstore)
if "$cmake" -S "$src/tests/pack/consumer" -B "$tmp/cb" -DCMAKE_PREFIX_PATH="$prefix" \
	-DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" > "$tmp/cb.log" 2>&1 &&
	"$cmake" --build "$tmp/cb" >> "$tmp/cb.log" 2>&1; then
	grep -q "$prefix/" "$tmp/cb/CMakeCache.txt" || bad "find_package did not use $prefix"
	grep -rqF "$src/include" "$tmp/cb/CMakeFiles" &&
		bad "the find_package consumer used the source tree's headers"
	uses_installed_so "$tmp/cb/consumer"
	run find_package "$tmp/cb/consumer" cm
	run find_package-static "$tmp/cb/consumer_static" cms
	ldd "$tmp/cb/consumer_static" | grep -q librawstore && bad "consumer_static loads librawstore.so"
	out=$("$tmp/cb/consumer_cxx" 2>&1) || bad "c++ consumer: $out"
	echo "$out"
	[ "$out" = "c++ consumer $version: min_alloc_size 4096" ] || bad "c++ consumer printed '$out'"
else
	cat "$tmp/cb.log"
	bad "building with find_package(rawstore)"
fi
# A version the package does not satisfy is refused.
mkdir -p "$tmp/v2"
cat > "$tmp/v2/CMakeLists.txt" << 'EOC'
cmake_minimum_required(VERSION 3.18)
project(v2 LANGUAGES C)
find_package(rawstore 1.0 REQUIRED)
EOC
"$cmake" -S "$tmp/v2" -B "$tmp/v2/b" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/v2.log" 2>&1 &&
	bad "find_package(rawstore 1.0) accepted version $version"

"$prefix/bin/rawstore" fsck "$dev" "$meta" > "$tmp/fsck.log" 2>&1 || {
	cat "$tmp/fsck.log"
	bad "fsck of the store the consumers wrote"
}
[ $fail = 0 ] && echo "install: ok"
exit $fail
