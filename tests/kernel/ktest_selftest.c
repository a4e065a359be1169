// SPDX-License-Identifier: MIT
/*
 * ktest_selftest: the ktest harness's exit statuses, on the host (ctest).
 * Usage: ktest_selftest pass|fail|skip|fail-then-skip
 * ctest runs each mode and expects 0, 1, 77 and 1: a check that failed
 * before kt_skip() must make the program fail, not skip.
 */
#include <string.h>

#include "ktest.h"

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	kt_check(true, "a passing check");
	if (!strcmp(mode, "pass"))
		return kt_done();
	if (!strcmp(mode, "skip"))
		kt_skip("skipping on purpose");
	kt_check(false, "a failing check (on purpose)");
	if (!strcmp(mode, "fail-then-skip"))
		kt_skip("skipping after a failure");
	if (!strcmp(mode, "fail"))
		return kt_done();
	kt_fatal("unknown mode '%s'", mode);
}
