#!/usr/bin/env bash
# Every patch in kernel/patches/series passes scripts/checkpatch.pl
# --strict --no-tree from the Debian 6.1 tree (no errors, no warnings, no
# checks). CAMELCASE is ignored: it flags the Opt_* mount-option enum
# names that ext4's parser uses for every option.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tarball=${RAWSTORE_KERNEL_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
patches=$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$repo/kernel/patches/series" | grep -v '^$')
if [ -z "$patches" ]; then
	echo "series is empty: nothing to check"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xf "$tarball" -C "$tmp" --strip-components=1 --wildcards \
	'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch'
bad=0
# From the temporary directory: in a git tree checkpatch --strict writes a
# CamelCase cache file into the current directory.
cd "$tmp" || exit 1
for p in $patches; do
	if out=$(perl "$tmp/scripts/checkpatch.pl" --strict --no-tree --terse --show-types \
		--ignore FILE_PATH_CHANGES,CAMELCASE "$repo/kernel/patches/$p" 2>&1); then
		echo "clean: $p"
	else
		echo "checkpatch: $p"
		echo "$out" | sed 's/^/    /'
		bad=1
	fi
done
exit $bad
