/* SPDX-License-Identifier: MIT */
/*
 * device.h: the block device (or a regular file standing in for one):
 * geometry, batched I/O through io_uring or libaio, flush, and the space
 * verbs that the space policy builds on.  Offsets and lengths in bytes.
 */
#ifndef RAWSTORE_DEVICE_H
#define RAWSTORE_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rawstore/store.h"

struct rawstore;
struct rs_dev;

struct rs_dev_geom {
	uint64_t size;			/* bytes */
	uint32_t logical_block;		/* bytes */
	uint32_t physical_block;	/* bytes */
	uint64_t discard_max;		/* bytes, 0 = none/unknown */
	uint64_t write_zeroes_max;	/* bytes, 0 = none/unknown */
	uint64_t provision_max;		/* bytes, 0 = none (queue/provision_max_bytes) */
	uint64_t max_io;		/* bytes the queue takes in one request
					 * (queue/max_sectors_kb), 0 = unknown */
	uint64_t max_segments;		/* segments per request (queue/max_segments) */
	bool is_bdev;
	bool write_cache;		/* volatile cache: flush needed */
	bool rotational;		/* sysfs queue/rotational (files: false) */
	bool direct;			/* O_DIRECT in use */
};

struct rs_io {
	bool write;
	void *buf;			/* 4096-aligned */
	uint64_t off;			/* bytes, logical-block aligned */
	size_t len;			/* bytes, logical-block aligned */
	bool journal;			/* a journal record (RS_IO_JOURNAL to the hooks) */
};

/* The kinds of device operation, as bits (fault injection selects them). */
enum rs_io_kind {
	RS_IO_READ = 1 << 0,
	RS_IO_WRITE = 1 << 1,
	RS_IO_FLUSH = 1 << 2,
	RS_IO_ZERO = 1 << 3,		/* dev_zero_range */
	RS_IO_PUNCH = 1 << 4,		/* dev_punch_hole */
	RS_IO_PROVISION = 1 << 5,	/* dev_provision, dev_prealloc_stale */
	RS_IO_JOURNAL = 1 << 6,		/* dev_write_journal (a write, counted apart) */
};

/*
 * Fault injection for the tests: debug.c fills these in (debug.h) and the
 * device calls them; the device never calls into debug.c.  Without hooks
 * (the default) every operation reports what the kernel said.
 */
struct dev_hooks {
	/* An operation of @kind completed with @ret: the result to report. */
	int (*done)(unsigned int kind, int ret, struct rs_io *ios, unsigned int n);
	/* Answer a space verb of @kind with -EOPNOTSUPP, not doing it? */
	bool (*refuse_space)(unsigned int kind);
	/* Leave garbage where a failed queued write went? */
	bool (*garble_failed_write)(void);
	/* Fail this reap of the write queue, so that the queue breaks? */
	bool (*fail_reap)(void);
};
void dev_set_hooks(const struct dev_hooks *h);
/* Regular files opened from now on stand in for a device with this logical
 * block size (0: 4096). */
void dev_set_file_block(unsigned int bytes);
/* Devices opened from now on use libaio even where io_uring works. */
void dev_set_no_uring(bool no_uring);

/*
 * Open @path O_DIRECT|O_EXCL (+ flock) with the engine chosen by @engine.
 * @st is used for logging only.
 */
int dev_open(struct rawstore *st, const char *path, enum rawstore_io_engine engine,
	     unsigned int qd, bool buffered, struct rs_dev **out);
/* dev_open with DEV_* flags.  DEV_READ_ONLY opens O_RDONLY without O_EXCL,
 * takes a shared flock (a writer's exclusive one excludes it), and refuses
 * writes and space verbs with -EROFS. */
#define DEV_BUFFERED	(1U << 0)
#define DEV_READ_ONLY	(1U << 1)
int dev_open_flags(struct rawstore *st, const char *path, enum rawstore_io_engine engine,
		   unsigned int qd, unsigned int flags, struct rs_dev **out);
void dev_close(struct rs_dev *d);
const struct rs_dev_geom *dev_geom(const struct rs_dev *d);
const char *dev_engine_name(const struct rs_dev *d);

/* Submit @n I/Os and wait for all of them; 0 or the first error. */
int dev_submit(struct rs_dev *d, struct rs_io *ios, unsigned int n);
int dev_read(struct rs_dev *d, void *buf, uint64_t off, size_t len);
int dev_write(struct rs_dev *d, const void *buf, uint64_t off, size_t len);
/* dev_write of a journal record: the hooks see RS_IO_JOURNAL. */
int dev_write_journal(struct rs_dev *d, const void *buf, uint64_t off, size_t len);
/*
 * The write queue of the commit thread (one thread only): submit @n
 * writes and return without waiting.  @owned (may be NULL) is a buffer
 * of @owned_len bytes (from rs_iobuf_alloc) holding the data of all @n
 * writes; it is freed once the last of them completed (also on error).
 * Without it the caller keeps the data alive until dev_wq_wait().  A full
 * queue is reaped first.  Errors of writes are reported by dev_wq_wait();
 * returns 0 or -errno (nothing more queued).
 */
int dev_wq_write(struct rs_dev *d, const struct rs_io *ios, unsigned int n, void *owned,
		 size_t owned_len);
/* Wait for the queued writes that overlap [off, off+len); -EIO if one of
 * them (since dev_wq_reset()) failed, or the queue broke with writes in
 * flight: what the range holds is unknown. */
int dev_wq_wait_range(struct rs_dev *d, uint64_t off, uint64_t len);
/*
 * Wait for every queued write; the first error since dev_wq_reset(), or 0.
 * Returns with none in flight (dev_wq_inflight() 0) unless the queue
 * broke (its completions can no longer be reaped): then writes may still
 * land, and their units must never be handed out again.
 */
int dev_wq_wait(struct rs_dev *d);
/* Wait at most @usec (< 1 s) for a queued write to complete (errors go to
 * dev_wq_wait()); true when none is in flight any more. */
bool dev_wq_wait_for(struct rs_dev *d, unsigned int usec);
/* Writes queued from now on carry @tag (a transaction of the group). */
void dev_wq_tag(struct rs_dev *d, unsigned int tag);
/* Can every write error since dev_wq_reset() be pinned on its tag (no
 * overflow of the per-tag list, queue not broken)? */
bool dev_wq_errors_tagged(const struct rs_dev *d);
/* The error of a write carrying @tag since dev_wq_reset(), or 0. */
int dev_wq_tag_err(const struct rs_dev *d, unsigned int tag);
/* Wait for every queued write and forget their errors. */
void dev_wq_reset(struct rs_dev *d);
unsigned int dev_wq_inflight(const struct rs_dev *d);
/*
 * The commit role's queue of in-place writes (one thread at a time): submit
 * a batch of @n writes and return without waiting; @ios and their data
 * stay the caller's until dev_aq_wait().  One batch at a time: -EBUSY
 * while one is pending.  Writes in a batch complete in any order.
 * Returns 0 or -errno (nothing submitted); errors of the writes are
 * reported by dev_aq_wait().
 */
int dev_aq_submit(struct rs_dev *d, struct rs_io *ios, unsigned int n);
/* Wait for the pending batch: 0 (also with none pending) or its first
 * error; with a broken ring its writes may still land. */
int dev_aq_wait(struct rs_dev *d);
/* Flush the volatile write cache; returns 1 if skipped (write-through). */
int dev_flush(struct rs_dev *d);

/*
 * Space verbs.  Each returns 0, -EINVAL if not logical-block aligned or out
 * of range, or the kernel's answer (-EOPNOTSUPP when the device or kernel
 * cannot do it).  None of them falls back to another method.
 *   zero_range:     FALLOC_FL_ZERO_RANGE | KEEP_SIZE: later reads see zeros,
 *                   space stays allocated.
 *   punch_hole:     FALLOC_FL_PUNCH_HOLE | KEEP_SIZE: discard, reads zeros.
 *   provision:      mode KEEP_SIZE (0): ensure space exists (thin devices).
 *   prealloc_stale: FALLOC_FL_NO_HIDE_STALE: allocate written extents without
 *                   zeroing; reads may return stale data (privileged: the
 *                   patched ext4 mounted with nohide_stale_gid=N).  Without
 *                   KEEP_SIZE, which that ext4 refuses (it would leave written
 *                   blocks past i_size); ranges inside the device size change
 *                   no size anyway.
 */
#ifndef FALLOC_FL_NO_HIDE_STALE
#define FALLOC_FL_NO_HIDE_STALE 0x04
#endif
/*   write_zeroes:   FALLOC_FL_WRITE_ZEROES (0x80, Linux 6.17 semantics): written
 *                   extents that read zeros, zeroed by the device, never by
 *                   writing zeros (block devices: with KEEP_SIZE). */
#ifndef FALLOC_FL_WRITE_ZEROES
#define FALLOC_FL_WRITE_ZEROES 0x80
#endif
int dev_zero_range(struct rs_dev *d, uint64_t off, uint64_t len);
int dev_punch_hole(struct rs_dev *d, uint64_t off, uint64_t len);
int dev_provision(struct rs_dev *d, uint64_t off, uint64_t len);
int dev_prealloc_stale(struct rs_dev *d, uint64_t off, uint64_t len);
int dev_write_zeroes(struct rs_dev *d, uint64_t off, uint64_t len);
/*   discard:        block devices only: PUNCH_HOLE|KEEP_SIZE|NO_HIDE_STALE (patch
 *                   0001), a plain discard that returns thin space but promises
 *                   no zeros (dm-thin has no write-zeroes, so punch_hole fails). */
int dev_discard(struct rs_dev *d, uint64_t off, uint64_t len);

#endif /* RAWSTORE_DEVICE_H */
