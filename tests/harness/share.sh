#!/usr/bin/env bash
# `vm/run --share DIR -- DIR/prog` runs a dynamically linked program of
# one's own from a host directory in the guest; its output, its exit
# status and a file it writes into DIR all come back to the host.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
kdir=${RAWSTORE_KERNEL_DIR:-$("$repo/kernel/build" --print)}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/prog.c" <<'C'
#include <stdio.h>
#include <sys/utsname.h>
int main(int argc, char **argv)
{
	struct utsname u;
	FILE *f = fopen(argc > 1 ? argv[1] : "out.txt", "w");

	uname(&u);
	if (!f)
		return 1;
	fprintf(f, "written in %s\n", u.release);
	fclose(f);
	printf("hello from %s with %d args\n", u.release, argc);
	return 3;
}
C
cc -O1 -o "$dir/prog" "$dir/prog.c"
set +e
out=$("$repo/vm/run" --kernel "$kdir" --share "$dir" -- "$dir/prog" "$dir/out.txt" 'an arg')
rc=$?
set -e
echo "guest said: $out (exit $rc)"
release=$(cat "$kdir/release")
[ "$rc" = 3 ] || { echo "want exit status 3"; exit 1; }
[ "$out" = "hello from $release with 3 args" ] || { echo "unexpected output"; exit 1; }
[ "$(cat "$dir/out.txt")" = "written in $release" ] || { echo "file in share not written"; exit 1; }
