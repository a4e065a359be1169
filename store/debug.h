/* SPDX-License-Identifier: MIT */
/*
 * debug.h: test hooks, not part of the public API.  A crash point makes
 * the process _exit(RS_CRASH_EXIT) when the commit thread reaches it for
 * the countdown-th time, to test crash consistency in a forked child.
 */
#ifndef RAWSTORE_DEBUG_H
#define RAWSTORE_DEBUG_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"	/* enum rs_io_kind */

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
	RS_CRASH_WRITES_IN_FLIGHT = 11,	/* a group applied, its data writes still in
					 * flight (not waited for) */
	RS_CRASH_BEFORE_SYNC = 12,	/* flushed, batch written to RocksDB, not
					 * synced by the store */
	RS_CRASH_JOURNAL_TORN = 13,	/* device journal: a record written torn
					 * (a byte of it wrong) */
	RS_CRASH_JOURNAL_NODATA = 14,	/* device journal: a record written whole,
					 * the new data beside it lost */
	RS_CRASH_JOURNAL_WRITTEN = 15,	/* device journal: a record written, not
					 * flushed */
	/* Not on the commit path (numbers from 16: the commit path may grow). */
	RS_CRASH_REPLAY_MID = 16,	/* open: a deferred record replayed, more to go */
	RS_CRASH_REPLAY_FLUSHED = 17,	/* open: replayed and flushed, records kept */
	/* 18: reclaim between punch and record is RS_CRASH_SPACE_IO_DONE */
	RS_CRASH_FSCK_REPAIR = 19,	/* fsck: repairs staged, not committed */
	RS_CRASH_REBUILD_FREELIST = 20,	/* open: free list rebuilt, not committed */
	RS_CRASH_MKFS_META = 21,	/* mkfs: metadata written, no superblock */
	RS_CRASH_MKFS_BACKUP_SB = 22,	/* mkfs: backup superblock written, not the
					 * primary */
	RS_CRASH_JOURNAL_REPLAY = 23,	/* open: a journal record replayed into the
					 * memtable, more to go, nothing flushed */
	RS_CRASH_GROW_SUPER = 24,	/* grow: the metadata says the new size,
					 * the device superblocks not yet */
	RS_CRASH_MAX = 25,
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
	RS_FAIL_SYNC = 3,		/* the sync thread's WAL sync: -EIO */
	RS_FAIL_STAGE = 4,		/* growing the staged free-list changes of a
					 * group: -ENOMEM */
	RS_FAIL_ALLOC_RECORD = 5,	/* recording a piece a write allocated in its
					 * transaction: -ENOMEM */
	RS_FAIL_CLAIM_TAKE = 6,		/* taking zeroed ranges to claim: -ENOMEM */
	RS_FAIL_CLAIM_COMMIT = 7,	/* the claim's synced metadata commit: -EIO */
	RS_FAIL_WQ_REAP = 8,		/* reaping the write queue's completions:
					 * -EBADR, none reaped (the queue breaks) */
	RS_FAIL_BATCH_OPEN = 9,		/* a zero/punch round records its results
					 * with no space batch open (a bug) */
	RS_FAIL_BATCH_SIZE = 10,	/* a group's space batch is sized one entry
					 * short (a bug in the sizing) */
	RS_FAIL_MAX = 11,
};

void rs_debug_set_fail_point(int point, int countdown);
/*
 * Device faults: the countdown-th device operation of a kind in @kinds
 * (RS_IO_* bits) and the next @times - 1 ones (all later ones for @times 0)
 * report -@err (a positive errno).  A failing read also overwrites the
 * caller's buffer (0xe1), so bytes of a failed read are never correct by
 * chance.  The operation itself is done first, like a device that fails
 * after a transfer.  kinds 0 turns injection off.
 */
void rs_debug_fail_io(unsigned int kinds, int countdown, int err, int times);
/*
 * Make the space verbs of @kinds (RS_IO_ZERO, RS_IO_PUNCH, RS_IO_PROVISION)
 * answer -EOPNOTSUPP without touching the device, as a device or file
 * system that cannot do them; 0 turns it off.
 */
void rs_debug_refuse_space(unsigned int kinds);
/* While @on, a queued data write that fails (injected or not) leaves
 * 0xe1 bytes where it went, as a device that failed mid-transfer. */
void rs_debug_garble_failed_writes(int on);
/* Faults injected since the last rs_debug_fail_io(). */
unsigned int rs_debug_io_faults(void);

/*
 * Call @fn(buf, len, @arg) on the commit thread right before a new data
 * write of a transaction is queued from @buf (its journal check already
 * taken): a test changes a caller's nocopy buffer "while the device
 * writes it".  NULL: none.
 */
void rs_debug_set_write_hook(void (*fn)(void *buf, size_t len, void *arg), void *arg);

/* Make io_uring setup fail (as on kernels or sandboxes without it). */
void rs_debug_disable_uring(int disable);
/* Make regular files report this logical block size (0: the usual 4096). */
void rs_debug_file_logical_block(unsigned int bytes);

struct rawstore;
/*
 * While @hold is set, the sync thread does not sync the WAL: groups stay
 * written but not durable (their frees held, callbacks not run).  A store
 * closes only after it is cleared again.
 */
void rs_debug_hold_sync(int hold);
/*
 * Return once the commit thread finished everything submitted before (an
 * empty job behind it): the in-place writes of deferred overwrites that
 * completed early (device journal) included.
 */
void rs_debug_commit_settle(struct rawstore *st);
/* Commit batches written to RocksDB since open (synced or not). */
uint64_t rs_debug_batches_written(struct rawstore *st);
/* In-place writes of deferred overwrites started and not yet waited for
 * (the commit role waits for them only when it must). */
size_t rs_debug_deferred_in_flight(struct rawstore *st);
/*
 * While @hold is set, the commit thread treats the data writes of the group
 * it applies as still in flight (it goes on taking transactions into the
 * group and completing durable groups, as it does while writes are in
 * flight).
 */
void rs_debug_hold_writes(int hold);
/* How often, since the process started, the commit thread looked for
 * transactions to join a group while its writes were in flight. */
uint64_t rs_debug_join_waits(void);
/*
 * The device journal's head (bytes since mkfs: where the next record goes;
 * head / *len is the lap) and its size in *len; 0 and *len = 0 with
 * RocksDB's WAL.  Safe from a completion callback.
 */
uint64_t rs_debug_journal_head(struct rawstore *st, uint64_t *len);
/* Entries (puts and deletes) in the last commit batch written. */
uint64_t rs_debug_last_batch_entries(void);
/*
 * The device journal calls @fn (when set) around the RocksDB WAL sync that
 * makes its trim point "T" durable (a trim, an open that replayed, a clean
 * close): done 0 before the sync is asked for, done 1 once it succeeded.
 * Every write RocksDB makes durable for the store goes through that sync,
 * so the hook sees each point where the store's metadata device becomes
 * durable and the data device may be written on the strength of it (the
 * power-cut campaign marks both devices' logs there).  Called under the
 * journal's lock, on whichever thread trims.
 */
void rs_debug_set_sync_hook(void (*fn)(int done, void *arg), void *arg);
void rs_debug_sync_point(int done);

/* Bytes freed by batches written but not yet durable (held back from
 * allocation); read after the transactions of interest completed. */
uint64_t rs_debug_space_held(struct rawstore *st);

/* Space-layer records written with no batch open (each stopped the store)
 * and batches closed past the entries they were sized for: both are bugs,
 * counted since open. */
void rs_debug_space_batches(struct rawstore *st, uint64_t *unbatched, uint64_t *overruns,
			    uint64_t *misnested);

/* Read every free range the store holds as zeroed (recorded, ready or
 * pending) from the device: 0 if all read zeros, -EUCLEAN (message names
 * the offset) if one does not.  Runs on the commit thread. */
int rs_debug_check_zeroed(struct rawstore *st);

#ifdef __cplusplus
}
#endif

#endif /* RAWSTORE_DEBUG_H */
