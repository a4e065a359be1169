/* SPDX-License-Identifier: MIT */
/*
 * space.h: what free space holds and what the store does with it.  The only
 * module that changes the free list, and the only caller of the device's
 * space verbs (zero-range, punch-hole, provision, stale preallocation,
 * write-zeroes).
 *
 * Free space is partitioned, in memory, into
 *   dirty     holds old bytes (freed, or never zeroed)          "F"
 *   zeroed    known to read zeros on the device                "F" + "Z"
 *   ready     zeroed, and its "Z" record already deleted by a committed
 *             batch, so a transaction may write into it        "F"
 *   pending   moved from zeroed into this group's batch; ready once the
 *             batch committed                                   "F"
 * plus ranges taken out of the free list while they are being zeroed or
 * punched ("W"; put back as dirty at open after a crash).  Freed ranges
 * awaiting a punch are also in the unpunched set ("P").  Every change of a
 * recorded set goes, through observers, into the batch its caller opened
 * (struct space_batch, below), so it commits with whatever caused it.  After a crash everything
 * not recorded as "Z" is dirty: unsure means dirty.
 *
 * Offsets and lengths in bytes, unit aligned.
 */
#ifndef RAWSTORE_SPACE_H
#define RAWSTORE_SPACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#include "alloc.h"
#include "device.h"
#include "ondisk.h"
#include "onode.h"

struct rawstore;

/*
 * mkfs: prepare the data area [@start, @end) of @d by policy (a block
 * device is punched if it can zero cheaply; a file is preallocated by
 * o->prealloc_policy) and fill @pol.  *@zeroed says whether the data area
 * now reads zeros.  -EOPNOTSUPP (with a message) if the asked preallocation
 * is not available.
 */
int space_mkfs(struct rs_dev *d, const struct rawstore_mkfs_opts *o, uint64_t start,
	       uint64_t end, struct rs_disk_space_policy *pol, bool *zeroed);

/* Load the recorded sets (or rebuild the free list, with opts.rebuild_freelist). */
int space_load(struct rawstore *st);
/* From now on every change of the recorded sets is recorded (into the
 * open struct space_batch). */
void space_attach(struct rawstore *st);
void space_detach(struct rawstore *st);

/*
 * The batch the space layer's records go into.  Whoever changes a recorded
 * set (free "F", unpunched "P", zeroed "Z", in flight "W", provisioned
 * "V") first opens the batch those records join, and closes it before the
 * batch is committed; batches nest (the innermost takes the records).  A
 * change with no batch open is a bug: the store stops (-EUCLEAN) rather
 * than drop a record.  @wb NULL opens a batch that records nothing, on
 * purpose: ranges put back in memory whose records are still in the batch
 * that is about to be rolled back.
 *
 * @bound is what the batch was sized for: the entries the caller counted
 * on (space_txn_entries, space_group_entries) before it let the batch
 * grow, UINT64_MAX where nothing was sized (a job's batch, committed on its
 * own).  space_batch_close() says -EOVERFLOW if the space layer wrote more
 * (a writer the sizing missed), and counts it (rs_debug_space_batches:
 * overruns); a batch closed while another opened after it is still open
 * is logged and counted apart (misnested), both bugs.
 */
struct space_batch {
	rocksdb_writebatch_wi_t *wb;
	uint64_t bound;
	uint64_t entries;		/* puts and deletes written into @wb */
	struct space_batch *prev;
};
void space_batch_open(struct rawstore *st, struct space_batch *b, rocksdb_writebatch_wi_t *wb,
		      uint64_t bound);
int space_batch_close(struct rawstore *st, struct space_batch *b);
/*
 * The commit thread as the space layer sees it.  Space bookkeeping that
 * changes the recorded sets must run on the commit thread (their batches
 * are st->wb, between groups), so the background worker, reclaim and
 * prepare run their steps as jobs there.  The store hands these in at
 * space_start(): space.c does not depend on commit.c, which calls down
 * into space.c at every commit.
 */
struct rs_job_runner {
	/* Run @fn on the commit thread and wait for its result. */
	int (*run)(struct rawstore *st, int (*fn)(struct rawstore *st, void *arg), void *arg);
	/* From a job: commit st->wb synchronously (no space batch open on it). */
	int (*commit_wb)(struct rawstore *st);
	/* True on the commit thread (blocking there would deadlock). */
	bool (*on_thread)(struct rawstore *st);
	/* Commit thread, while a group is applied: wait until every written
	 * batch is durable and space_release() what they hold; false if
	 * nothing was released. */
	bool (*drain)(struct rawstore *st);
};

/* After the commit thread started: record a policy change, probe the
 * device's zero-range, start the background worker. */
int space_start(struct rawstore *st, const struct rs_job_runner *jobs);
/* Before the commit thread stops: stop the worker (its round completes). */
void space_stop(struct rawstore *st);
/* After the commit thread stopped: record ready space as zeroed again. */
void space_close(struct rawstore *st, bool healthy);
void space_destroy(struct rawstore *st);
/* Refresh the statfs snapshot; call with the write lock (or before threads). */
void space_snapshot(struct rawstore *st);
/* Fill the space fields of statfs / info (statfs: under the read lock). */
void space_statfs(struct rawstore *st, struct rawstore_statfs *s);
void space_info(struct rawstore *st, struct rawstore_info *i);

/*
 * Allocate @len bytes for a transaction: pieces (malloc'd in *@out), count
 * returned, or -ENOSPC with nothing allocated (also when a thin device
 * cannot provision them).  See extset_alloc for @hint and @want.  A
 * @partial write (one that leaves blocks of its units unwritten) gets
 * zeroed space when there is any; *@zeroed says whether it did.  On a
 * provisioning device the pieces are provisioned before this returns.
 * Nothing is recorded until space_commit.
 */
int space_alloc(struct rawstore *st, uint64_t len, uint64_t hint, uint64_t want, bool partial,
		struct pext **out, bool *zeroed);
/*
 * The writes for data placed in @n pieces at logical [a0, ...): only the
 * window [wa, wb) holds data or old bytes.  Into zeroed pieces only the
 * window is written; dirty pieces are written whole (the rest of @buf holds
 * zeros: padding).  Fills @ios (n entries at most), returns how many.
 */
unsigned int space_plan_writes(struct rawstore *st, const struct pext *pieces, int n,
			       bool zeroed, uint64_t a0, uint64_t wa, uint64_t wb, uint8_t *buf,
			       struct rs_io *ios);
/* Return allocations that will not commit (failed transaction or group):
 * they may have been written, so they are dirty now. */
void space_unalloc(struct rawstore *st, const struct pext *v, size_t n);
/*
 * What a batch that is written but not yet durable holds back: its frees
 * (free and recorded, but neither allocatable nor punched or zeroed: a
 * crash before the sync leaves them owned by their old objects) and the
 * zeroed space it readied (its "Z" records deleted in that batch).
 */
struct space_hold {
	struct pext_vec frees, ready;
};
/*
 * Into the group's batch, under the write lock: the group's allocations
 * stop being unpunched, its frees join the free and unpunched sets (held
 * in @h), and some zeroed space is readied for the next groups (held in
 * @h).  -EUCLEAN if a range is freed twice.
 */
int space_commit(struct rawstore *st, const struct pext_vec *allocs,
		 const struct pext_vec *frees, struct space_hold *h);
/*
 * The most batch entries (each at most SP_REC_BYTES) that space_commit()
 * and space_stage_end() add to the group's batch: space_txn_entries() per
 * transaction (its allocations and the number of its frees), plus
 * space_group_entries() once for the group.  The commit path sizes a
 * journal record with them before any transaction joins the group.
 */
#define SP_REC_BYTES 24		/* a "F"/"P"/"Z"/"V" put or delete in a batch */
#define SP_READY_PIECES 8	/* zeroed extents readied per commit */
uint64_t space_txn_entries(struct rawstore *st, const struct pext *allocs, size_t na,
			   size_t nfrees);
uint64_t space_group_entries(struct rawstore *st);
/*
 * Commit thread, around a group: space_stage_begin() opens @b on the
 * group's batch @wb (sized later, space_stage_size()); from then on the
 * free and unpunched records that allocations and frees change are
 * staged, and space_stage_end() puts the last change of each into @wb
 * (@write; the same records as one change at a time) or forgets them (the
 * batch is not committed; the lists in memory are as before the group
 * then), and closes @b.
 */
void space_stage_begin(struct rawstore *st, struct space_batch *b, rocksdb_writebatch_wi_t *wb);
/* The entries the group's batch was sized for (record_fits, before each
 * transaction joined): space_stage_end() checks the space layer kept to it. */
void space_stage_size(struct rawstore *st, uint64_t bound);
/* -ENOMEM (with @write) if a change could not be staged: the batch must
 * not be committed then.  A second call (the group failed after its
 * commit) does nothing. */
int space_stage_end(struct rawstore *st, bool write);
/* Commit thread, once the batch of @h is durable: its frees become
 * allocatable (dirty), its readied space writable; empties @h. */
void space_release(struct rawstore *st, struct space_hold *h);
/* Forget @h without releasing it (its batch failed: the store stopped);
 * its frees are no longer counted as held. */
void space_hold_free(struct rawstore *st, struct space_hold *h);
/* Commit thread, after a group is durable and released: the inline punch
 * policy punches the freed ranges now; the worker is kicked. */
void space_after_commit(struct rawstore *st);
/* Commit thread (a job): [@off, +@len) past the data area joins the free
 * list, dirty and unpunched; its "F" and "P" records go into @wb. */
int space_grow(struct rawstore *st, rocksdb_writebatch_wi_t *wb, uint64_t off, uint64_t len);
/* Does space_after_commit() commit through st->wb (the inline punch
 * policy)?  Then it runs only between groups. */
bool space_punches_inline(const struct rawstore *st);
/* Commit thread: finish a zero/punch round in flight (its ranges return to
 * the free list), so that a job (fsck) sees the whole free list. */
int space_quiesce(struct rawstore *st);

/* rawstore_records_get: fill the in-memory parts (dirty extents, the
 * recorded policies). */
void space_records(struct rawstore *st, struct rawstore_records *r);

#endif /* RAWSTORE_SPACE_H */
