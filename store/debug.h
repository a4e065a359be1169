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
	RS_CRASH_SPACE_PICKED = 7,	/* space round: ranges taken out, not yet
					 * zeroed/punched */
	RS_CRASH_SPACE_IO_DONE = 8,	/* zeroed/punched and flushed, not recorded */
	RS_CRASH_SPACE_CLAIM = 9,	/* zeroed space claimed for writes (synced) */
	RS_CRASH_SPACE_RECORDED = 10,	/* the round's result committed */
	RS_CRASH_MAX = 11,
};

#define RS_CRASH_EXIT 86

void rs_debug_set_crash_point(int point, int countdown);
/* Make io_uring setup fail (as on kernels or sandboxes without it). */
void rs_debug_disable_uring(int disable);

struct rawstore;
/* Read every free range the store holds as zeroed (recorded, ready or
 * pending) from the device: 0 if all read zeros, -EUCLEAN (message names
 * the offset) if one does not.  Runs on the commit thread. */
int rs_debug_check_zeroed(struct rawstore *st);

#ifdef __cplusplus
}
#endif

#endif /* RAWSTORE_DEBUG_H */
