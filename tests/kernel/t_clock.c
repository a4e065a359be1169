// SPDX-License-Identifier: MIT
/*
 * t_clock: the guest can time I/O. Latency figures are only meaningful if
 * the kernel has high-resolution timers and a real clocksource: with
 * jiffies (what a TCG guest without ACPI falls back to) every latency reads
 * as a multiple of the 4 ms tick. Checks that the current clocksource is not
 * jiffies, that CLOCK_MONOTONIC's resolution is 1 ns (hrtimers), and that
 * back-to-back clock reads advance by less than a millisecond.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ktest.h"

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

int main(void)
{
	char cs[64] = "";
	struct timespec res;
	long long t0, t, step_min = -1;
	int advanced = 0;

	if (kt_read_file("/sys/devices/system/clocksource/clocksource0/current_clocksource", cs,
			 sizeof(cs)) < 0)
		kt_fatal("cannot read the current clocksource");
	cs[strcspn(cs, "\n")] = '\0';
	kt_check(!strstr(cs, "jiffies"), "current clocksource is '%s', not jiffies", cs);

	clock_getres(CLOCK_MONOTONIC, &res);
	kt_check(res.tv_sec == 0 && res.tv_nsec == 1,
		 "CLOCK_MONOTONIC resolution is 1 ns with high-resolution timers (got %lld ns)",
		 res.tv_sec * 1000000000ll + res.tv_nsec);

	/* The smallest non-zero step between consecutive reads. */
	t0 = now_ns();
	for (int i = 0; i < 100000 && advanced < 1000; i++) {
		t = now_ns();
		if (t != t0) {
			if (step_min < 0 || t - t0 < step_min)
				step_min = t - t0;
			advanced++;
		}
		t0 = t;
	}
	kt_check(step_min > 0 && step_min < 1000000,
		 "the clock advances in steps below 1 ms (smallest step %lld ns, %d steps seen)",
		 step_min, advanced);
	return kt_done();
}
