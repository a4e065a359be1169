// SPDX-License-Identifier: MIT
/* debug.c: crash points and failure injection for the tests (debug.h). */
#include <errno.h>
#include <string.h>
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
	if (rs_crash_point != point)
		return;
	if (--rs_crash_countdown > 0)
		return;
	/*
	 * The kernel finishes a dead process's queued writes anyway; waiting
	 * for them here only keeps its io_uring from holding the device (and
	 * its lock) a moment after the exit, when the test reopens it.
	 */
	if (st && st->dev)
		dev_wq_wait(st->dev);
	_exit(RS_CRASH_EXIT);
}

static void (*sync_hook)(int done, void *arg);
static void *sync_hook_arg;

void rs_debug_set_sync_hook(void (*fn)(int done, void *arg), void *arg)
{
	sync_hook_arg = arg;
	sync_hook = fn;
}

void rs_debug_sync_point(int done)
{
	if (sync_hook)
		sync_hook(done, sync_hook_arg);
}

static const struct dev_hooks hooks;

/* Every setter of a device fault hands the device the hooks below. */
static void install(void)
{
	dev_set_hooks(&hooks);
}

void rs_debug_set_fail_point(int point, int countdown)
{
	install();
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

/* Device faults (rs_debug_fail_io); the device calls rs_fault_io as each
 * operation completes (dev_hooks.done). */
static unsigned int io_kinds, io_faults;
static int io_countdown, io_err, io_times;

void rs_debug_fail_io(unsigned int kinds, int countdown, int err, int times)
{
	install();
	__atomic_store_n(&io_kinds, 0, __ATOMIC_RELEASE);
	io_countdown = countdown > 0 ? countdown : 1;
	io_err = err > 0 ? err : EIO;
	io_times = times > 0 ? times : -1;
	io_faults = 0;
	__atomic_store_n(&io_kinds, kinds, __ATOMIC_RELEASE);
}

unsigned int rs_debug_io_faults(void)
{
	return __atomic_load_n(&io_faults, __ATOMIC_RELAXED);
}

static unsigned int refused_kinds;

void rs_debug_refuse_space(unsigned int kinds)
{
	install();
	__atomic_store_n(&refused_kinds, kinds, __ATOMIC_RELEASE);
}

static bool rs_space_refused(unsigned int kind)
{
	return __atomic_load_n(&refused_kinds, __ATOMIC_ACQUIRE) & kind;
}

static int rs_fault_io(unsigned int kind, int ret, struct rs_io *ios, unsigned int n)
{
	unsigned int i;

	if (!(__atomic_load_n(&io_kinds, __ATOMIC_ACQUIRE) & kind))
		return ret;
	if (__atomic_sub_fetch(&io_countdown, 1, __ATOMIC_ACQ_REL) > 0)
		return ret;
	/* fire: this one and the next io_times - 1 (io_countdown stays <= 0) */
	if (io_times > 0 && __atomic_sub_fetch(&io_times, 1, __ATOMIC_ACQ_REL) == 0)
		__atomic_store_n(&io_kinds, 0, __ATOMIC_RELEASE);
	__atomic_add_fetch(&io_faults, 1, __ATOMIC_RELAXED);
	for (i = 0; kind == RS_IO_READ && i < n; i++)
		memset(ios[i].buf, 0xe1, ios[i].len);
	return -io_err;
}

static int garbling;

void rs_debug_garble_failed_writes(int on)
{
	install();
	__atomic_store_n(&garbling, on, __ATOMIC_RELEASE);
}

static bool rs_debug_garbling(void)
{
	return __atomic_load_n(&garbling, __ATOMIC_ACQUIRE);
}

static bool fail_reap(void)
{
	return rs_fail_check(RS_FAIL_WQ_REAP);
}

static const struct dev_hooks hooks = {
	.done = rs_fault_io,
	.refuse_space = rs_space_refused,
	.garble_failed_write = rs_debug_garbling,
	.fail_reap = fail_reap,
};

void rs_debug_file_logical_block(unsigned int bytes)
{
	dev_set_file_block(bytes);
}

void rs_debug_disable_uring(int disable)
{
	dev_set_no_uring(disable != 0);
}

static void (*write_hook)(void *buf, size_t len, void *arg);
static void *write_hook_arg;

void rs_debug_set_write_hook(void (*fn)(void *buf, size_t len, void *arg), void *arg)
{
	write_hook_arg = arg;
	write_hook = fn;
}

void rs_debug_write_hook(void *buf, size_t len)
{
	if (write_hook)
		write_hook(buf, len, write_hook_arg);
}
