/* SPDX-License-Identifier: MIT */
/*
 * deferred.h: small overwrites in place, made durable through the RocksDB
 * WAL ("D" records) and written to the device after the commit that holds
 * their records.  A record is deleted only after a device flush that
 * follows its write; at open, records left by a previous run are replayed.
 */
#ifndef RAWSTORE_DEFERRED_H
#define RAWSTORE_DEFERRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rawstore;
struct rs_io;

/* A deferred overwrite of this commit group, applied after the commit. */
struct rs_deferred {
	uint64_t pofs;			/* bytes */
	uint64_t len;			/* bytes */
	uint8_t *data;			/* aligned */
	uint64_t seq;
};

/* An applied deferred write whose record awaits a flush and its deletion. */
struct rs_deferred_done {
	uint64_t seq;
	uint64_t pofs, len;		/* bytes */
};

/* A commit group flushes the device and deletes the records of applied
 * writes once this many await it (or when it flushes for new data anyway). */
#define RS_DEFERRED_RETIRE 32

struct rs_defq {
	struct rs_deferred *q;		/* this group's, not yet on the device */
	size_t n, cap;
	/* An earlier group's, being written in place (dev_aq_submit): their
	 * records are committed, their writes not yet known to have landed.
	 * Changed only under the write lock, by the commit role. */
	struct rs_deferred *fly;
	size_t fly_n, fly_cap;
	struct rs_io *fly_ios;		/* the batch in flight */
	struct rs_deferred_done *done;	/* applied, records await a flush */
	size_t done_n, done_cap;
	uint64_t seq;			/* next record's sequence number */
};

/* Queue a write of @len bytes of @data (copied) at @pofs; record into st->wb. */
int deferred_queue(struct rawstore *st, uint64_t pofs, const uint8_t *data, uint64_t len);
/* Drop this group's queued writes from index @from on (not committed). */
void deferred_truncate(struct rawstore *st, size_t from);
/*
 * After the commit, with none in flight (deferred_landed): start writing
 * the group's queued data in place, and return without waiting for it.
 * Writes to units an earlier write of the queue also targets wait for
 * that one first (the last must win).  The queue is left as it is
 * (readers may overlay it meanwhile); 0 or -errno (then nothing is in
 * flight, and the records are replayed at the next open).
 */
int deferred_write(struct rawstore *st);
/* Once deferred_write() started: the queue becomes the writes in flight,
 * and is empty (under the write lock: readers overlay both). */
void deferred_started(struct rawstore *st);
/* The writes in flight: wait for them (0 or the first error).  With
 * @ok, they join the applied writes whose records await a flush; else
 * they are forgotten (their records stay: replayed at open).  Call the
 * second half, deferred_landed(), under the write lock. */
int deferred_wait(struct rawstore *st);
int deferred_landed(struct rawstore *st, bool ok);
/* Delete the records of applied writes [@from, @to) (into st->wb); forget
 * the first @n once the batches that deleted them are durable. */
void deferred_done_delete(struct rawstore *st, size_t from, size_t to);
void deferred_done_forget(struct rawstore *st, size_t n);
/* Lay the writes in flight and, with @queue, the queued ones (newer) over
 * a device read of [pofs, +len). */
void deferred_overlay(const struct rawstore *st, uint8_t *buf, uint64_t pofs, uint64_t len,
		      bool queue);
/* At open: apply the records of a previous run, flush, delete them. */
int deferred_replay(struct rawstore *st);
/* At a read-only open: queue the records of a previous run for
 * deferred_overlay() instead (no write). */
int deferred_load_overlay(struct rawstore *st);
/*
 * True if a deferred write that is queued, or applied with its record not
 * yet deleted, targets a byte of [pofs, pofs+len): replay after a crash
 * would write there, so the space layer must not punch or zero it.
 */
bool deferred_busy(const struct rawstore *st, uint64_t pofs, uint64_t len);
/* As deferred_busy(), only this group's queued writes. */
bool deferred_queued_busy(const struct rawstore *st, uint64_t pofs, uint64_t len);
/* As deferred_busy(), only the records already applied in place or being
 * applied (not the queue, whose new data may sit in units its own group
 * allocated). */
bool deferred_applied_busy(const struct rawstore *st, uint64_t pofs, uint64_t len);
/* Commit thread, between groups: flush the device and delete the records
 * of every applied write (in a batch of their own). */
int deferred_retire(struct rawstore *st);
/* At close, after commit_stop() (no in-place write in flight): flush and
 * delete the records of applied writes; free memory. */
void deferred_close(struct rawstore *st, bool healthy);

#endif /* RAWSTORE_DEFERRED_H */
