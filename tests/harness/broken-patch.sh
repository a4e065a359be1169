#!/usr/bin/env bash
# A patch that does not apply stops kernel/build, which names the patch.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -a "$repo/kernel" "$tmp/kernel"
mkdir -p "$tmp/tests/kernel"
cp -a "$repo/tests/kernel/module" "$tmp/tests/kernel/module"
cat > "$tmp/kernel/patches/9999-broken-on-purpose.patch" <<'P'
From: rawstore test <test@rawstore.invalid>
Subject: [PATCH] test: a patch that cannot apply

---
 Makefile | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/Makefile b/Makefile
--- a/Makefile
+++ b/Makefile
@@ -1,3 +1,3 @@
 # SPDX-License-Identifier: GPL-2.0
-VERSION = 99
+VERSION = 100
 PATCHLEVEL = 1
P
echo "9999-broken-on-purpose.patch" >> "$tmp/kernel/patches/series"
err=$(RAWSTORE_CACHE="$tmp/cache" "$tmp/kernel/build" 2>&1)
rc=$?
echo "$err" | tail -5
[ "$rc" != 0 ] || { echo "kernel/build succeeded with a broken patch"; exit 1; }
echo "$err" | grep -q "patch [0-9]* '9999-broken-on-purpose.patch' does not apply" ||
	{ echo "the error does not name the patch"; exit 1; }
