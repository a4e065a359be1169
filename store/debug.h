/* SPDX-License-Identifier: MIT */
/*
 * debug.h: test hooks, not part of the public API.  A crash point makes
 * the process _exit(RS_CRASH_EXIT) when the commit thread reaches it for
 * the countdown-th time, to test crash consistency in a forked child.
 */
#ifndef RAWSTORE_DEBUG_H
#define RAWSTORE_DEBUG_H

#ifdef __cplusplus
extern "C" {
#endif

enum rs_crash {
	RS_CRASH_NONE = 0,
	RS_CRASH_MID_DATA = 1,		/* after the first data write of a txn */
	RS_CRASH_BEFORE_FLUSH = 2,	/* data written, not flushed */
	RS_CRASH_DROP_UNFLUSHED = 3,	/* as 2, and the unflushed data is lost */
	RS_CRASH_BEFORE_COMMIT = 4,	/* flushed, metadata not committed */
	RS_CRASH_AFTER_COMMIT = 5,	/* committed, not acknowledged */
	RS_CRASH_BEFORE_DEFERRED = 6,	/* committed, deferred data not applied */
	RS_CRASH_MAX = 7,
};

#define RS_CRASH_EXIT 86

void rs_debug_set_crash_point(int point, int countdown);

/*
 * Failure injection: the countdown-th time the commit thread reaches the
 * point, the operation fails as if out of memory (or as the point says).
 */
enum rs_fail {
	RS_FAIL_NONE = 0,
	RS_FAIL_GROUP_APPEND = 1,	/* appending a txn's allocations or frees to
					 * its commit group: -ENOMEM */
	RS_FAIL_ROLLBACK = 2,		/* rolling back a failed txn's save point */
	RS_FAIL_DATA_WRITE = 3,		/* a pipelined data write completes with -EIO */
	RS_FAIL_MAX = 4,
};

void rs_debug_set_fail_point(int point, int countdown);
/* Make io_uring setup fail (as on kernels or sandboxes without it). */
void rs_debug_disable_uring(int disable);
/* Make regular files report this logical block size (0: the usual 4096). */
void rs_debug_file_logical_block(unsigned int bytes);

#ifdef __cplusplus
}
#endif

#endif /* RAWSTORE_DEBUG_H */
