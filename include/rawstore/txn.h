/* SPDX-License-Identifier: MIT */
/*
 * rawstore/txn.h: transactions.
 *
 * A transaction is an ordered list of operations that is applied
 * atomically and durably by rawstore_submit() / rawstore_submit_async().
 * Each operation sees the effect of the ones before it.  If any operation
 * fails, the whole transaction has no effect and the submit returns that
 * operation's error; rawstore_txn_failed_op() tells which.
 *
 * Builder calls copy their arguments and return 0, -EINVAL (bad name,
 * range overflow), -EFBIG (beyond RAWSTORE_OBJECT_MAX) or -ENOMEM; a
 * failed builder call adds nothing.  Object names are (pointer, length)
 * pairs of arbitrary bytes, 1..RAWSTORE_NAME_MAX long; collection names
 * are NUL-terminated strings, 1..RAWSTORE_COLL_NAME_MAX bytes.
 *
 * Errors reported at submit, per operation:
 *   -ENOENT     the collection (or, where noted, the object) does not exist
 *   -EEXIST     collection create of an existing collection
 *   -ENOTEMPTY  collection remove of a collection holding objects
 *   -ENODATA    rmattr of a missing attribute
 *   -ENOSPC     the device is full (nothing was written; store usable)
 *   -EIO        device error or checksum mismatch on a read-modify-write
 */
#ifndef RAWSTORE_TXN_H
#define RAWSTORE_TXN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rawstore;
struct rawstore_txn;

int rawstore_txn_new(struct rawstore_txn **out);
/* Free a transaction that is not in flight. */
void rawstore_txn_free(struct rawstore_txn *t);
/* Drop all operations so @t can be reused. */
void rawstore_txn_reset(struct rawstore_txn *t);
/* Number of operations in @t. */
unsigned int rawstore_txn_count(const struct rawstore_txn *t);
/* Index of the operation that failed the last submit, or -1. */
int rawstore_txn_failed_op(const struct rawstore_txn *t);
/*
 * The detailed message of the last failed submit of @t (what
 * rawstore_errmsg() says after a failed rawstore_submit()), or "".  For
 * rawstore_submit_async() callers: valid from the callback on, until @t is
 * submitted again.  Inside the callback rawstore_errmsg() says the same.
 */
const char *rawstore_txn_errmsg(const struct rawstore_txn *t);

int rawstore_txn_coll_create(struct rawstore_txn *t, const char *coll);
/* The collection must be empty (-ENOTEMPTY). */
int rawstore_txn_coll_remove(struct rawstore_txn *t, const char *coll);

/* Create the object if missing. */
int rawstore_txn_touch(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen);
/* Write @len bytes at @off (any alignment); creates the object if missing. */
int rawstore_txn_write(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen,
		       uint64_t off, const void *buf, size_t len);
/*
 * As rawstore_txn_write(), without copying @buf: the device writes whole
 * allocation units straight from it (units the write covers partly go
 * through a private buffer, and small objects still live in RocksDB).
 * @buf, @off and @len must be multiples of 4096 (-EINVAL).  @buf stays the
 * caller's, and must stay valid and unchanged until the transaction
 * completes (its callback has run, or rawstore_submit() has returned) or
 * is reset or freed unsubmitted.  Checksums are computed from @buf by this
 * call: if it changes before completion, the object holds undefined bytes
 * and reads of them may fail their checksum (-EIO).
 */
int rawstore_txn_write_nocopy(struct rawstore_txn *t, const char *coll, const void *name,
			      size_t nlen, uint64_t off, const void *buf, size_t len);
/* Make [off, off+len) read as zeros, freeing whole allocation units; extends
 * the size if needed; creates the object if missing. */
int rawstore_txn_zero(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen,
		      uint64_t off, uint64_t len);
/* Set the size; the object must exist (-ENOENT). */
int rawstore_txn_truncate(struct rawstore_txn *t, const char *coll, const void *name,
			  size_t nlen, uint64_t size);
/* Remove the object with its attributes and omap; -ENOENT if missing. */
int rawstore_txn_remove(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen);
/* Replace object @dst (same collection) with a copy of @src: data,
 * attributes, omap and header.  The data units are shared, not copied;
 * a later write to either object redirects the units it touches.
 * -ENOENT if @src is missing. */
int rawstore_txn_clone(struct rawstore_txn *t, const char *coll, const void *src, size_t slen,
		       const void *dst, size_t dlen);
/*
 * Move object @src_name of @src_coll to the name @dst_name in @dst_coll
 * (the same or another collection): its data, attributes, omap and header
 * go with it, and the source name no longer exists.  Only metadata moves;
 * no data is copied.  An object already at the destination is replaced:
 * it is removed as by rawstore_txn_remove(), and its space is freed when
 * the transaction commits.  Later operations of the transaction see the
 * object under its new name; one that creates an object under the old
 * name (a write, touch, zero or alloc hint) creates a new one there, with
 * none of the moved object's data, attributes or omap.
 * Builder: -EINVAL for a bad collection or object name, or if source and
 * destination are the same object.  At submit: -ENOENT if @src_coll or
 * the source object does not exist, or if @dst_coll does not exist.
 */
int rawstore_txn_rename(struct rawstore_txn *t, const char *src_coll, const void *src_name,
			size_t src_len, const char *dst_coll, const void *dst_name,
			size_t dst_len);
/* Object must exist (-ENOENT). */
int rawstore_txn_setattr(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen,
			 const char *attr, const void *val, size_t vlen);
/* -ENOENT missing object, -ENODATA missing attribute. */
int rawstore_txn_rmattr(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen,
			const char *attr);
/* omap operations: the object must exist (-ENOENT).  Keys are bytes. */
int rawstore_txn_omap_set(struct rawstore_txn *t, const char *coll, const void *name,
			  size_t nlen, const void *key, size_t klen, const void *val, size_t vlen);
int rawstore_txn_omap_rm(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen,
			 const void *key, size_t klen);
/* Remove keys in [first, last) (bytewise order). */
int rawstore_txn_omap_rmrange(struct rawstore_txn *t, const char *coll, const void *name,
			      size_t nlen, const void *first, size_t flen, const void *last,
			      size_t llen);
int rawstore_txn_omap_setheader(struct rawstore_txn *t, const char *coll, const void *name,
				size_t nlen, const void *val, size_t vlen);
/* Expected final object size in bytes; placement uses it so that later
 * appends stay contiguous.  Creates the object if missing. */
int rawstore_txn_alloc_hint(struct rawstore_txn *t, const char *coll, const void *name,
			    size_t nlen, uint64_t expected_size);

/*
 * Apply @t atomically and durably; returns when it is on stable storage.
 * @t is not consumed and may be resubmitted or freed afterwards.
 * -EDEADLK if called from a completion callback (the commit thread).
 */
int rawstore_submit(struct rawstore *st, struct rawstore_txn *t);

typedef void (*rawstore_txn_cb)(struct rawstore_txn *t, int result, void *arg);

/*
 * Queue @t and return at once (0, or -EBUSY if @t is already in flight,
 * -ESHUTDOWN if the store is closing).  @cb is called from the commit
 * thread with the result once @t is durable or rejected; @t must stay
 * alive and unmodified until then (the callback may free it): its write
 * data is sent to the device from @t's own buffers.  Several transactions
 * may be in flight together; they are applied in submission order.
 * The queue is bounded (open options max_queued_txns, max_queued_bytes):
 * when full, this waits for room, or returns -EAGAIN with
 * submit_nonblock.  Called from a completion callback it never waits.
 */
int rawstore_submit_async(struct rawstore *st, struct rawstore_txn *t, rawstore_txn_cb cb,
			  void *arg);

#ifdef __cplusplus
}
#endif

#endif /* RAWSTORE_TXN_H */
