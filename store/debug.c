// SPDX-License-Identifier: MIT
/* debug.c: crash points and failure injection for the tests (debug.h). */
#include <unistd.h>

#include "debug.h"
#include "internal.h"

int rs_crash_point;
int rs_crash_countdown;
static int fail_point, fail_countdown;

void rs_debug_set_crash_point(int point, int countdown)
{
	rs_crash_point = point;
	rs_crash_countdown = countdown > 0 ? countdown : 1;
}

void rs_crash_check(struct rawstore *st, int point)
{
	(void)st;
	if (rs_crash_point != point)
		return;
	if (--rs_crash_countdown > 0)
		return;
	_exit(RS_CRASH_EXIT);
}

void rs_debug_set_fail_point(int point, int countdown)
{
	__atomic_store_n(&fail_countdown, countdown > 0 ? countdown : 1, __ATOMIC_RELAXED);
	__atomic_store_n(&fail_point, point, __ATOMIC_RELEASE);
}

bool rs_fail_check(int point)
{
	if (__atomic_load_n(&fail_point, __ATOMIC_ACQUIRE) != point)
		return false;
	if (__atomic_sub_fetch(&fail_countdown, 1, __ATOMIC_RELAXED) > 0)
		return false;
	__atomic_store_n(&fail_point, RS_FAIL_NONE, __ATOMIC_RELAXED);
	return true;
}
