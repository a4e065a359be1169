// SPDX-License-Identifier: MIT
/* debug.c: crash points for the crash-consistency tests (debug.h). */
#include <unistd.h>

#include "debug.h"
#include "internal.h"

int rs_crash_point;
int rs_crash_countdown;

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
