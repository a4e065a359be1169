/* SPDX-License-Identifier: MIT */
/*
 * rawstore: an object store backend that keeps object data on a raw block
 * device (or a regular file standing in for one) and object metadata in
 * RocksDB, in the manner of Ceph's BlueStore.  Link with librawstore
 * (pkg-config rawstore, or CMake find_package(rawstore) and the target
 * rawstore::rawstore).  Man pages: rawstore(7) for the model, one page per
 * call in section 3; docs/API.md is the guide.
 *
 * Read this before the first call.
 *
 * Errors.  Every call returns 0 (or a count) or a negative errno; errno
 * itself is never left set for the caller.  Bad input gets an error and
 * changes nothing; the library never falls back silently (a device that
 * cannot punch says -EOPNOTSUPP).  Store-specific meanings:
 *     -EUCLEAN      corrupt superblock or metadata record; fsck found problems
 *     -EPROTO       on-disk format version newer than this library
 *     -EMEDIUMTYPE  the device holds no rawstore superblock (foreign)
 *     -EXDEV        device and metadata directory belong to different stores
 *     -ENXIO        device is smaller than the size recorded at mkfs
 *     -EBUSY        the store is already open (by this or another process)
 *     -EIO          device error, or a data checksum mismatch (counted in
 *                   rawstore_perf.csum_errors); bad bytes are never returned
 *     -EDEADLK      a blocking call made from a completion callback
 *   rawstore_strerror() explains a code; rawstore_errmsg() returns the
 *   detailed message of the last failure in the calling thread.
 *
 * Threads.  A store handle may be used from any number of threads at once.
 *   Reads (object.h) and the statistics calls run in the caller's thread,
 *   in parallel with each other and with the commit thread's work (they
 *   wait only while a group's metadata commits).  Transactions are applied
 *   by one commit thread per store, in submission order; it submits each
 *   one's data writes without waiting, takes every queued transaction (up
 *   to max_group) and commits the group with one device flush and one
 *   synced RocksDB write, so many transactions in flight
 *   (rawstore_submit_async(), or rawstore_submit() from many threads) cost
 *   few flushes each and their writes overlap.  The queue is bounded
 *   (back-pressure: max_queued_txns, max_queued_bytes, submit_nonblock in
 *   rawstore_open_opts).  Completion callbacks run on the commit
 *   thread: keep them short; rawstore_submit_async() and reads are allowed
 *   there, rawstore_submit(), rawstore_fsck(), rawstore_reclaim(),
 *   rawstore_prepare() and rawstore_close() return -EDEADLK.  fork(): do
 *   not use a handle in a forked child; open the store again there.
 *
 * Which calls block.  rawstore_mkfs, rawstore_open and rawstore_close (I/O,
 *   waiting for queued transactions); rawstore_submit (until the transaction
 *   is durable); reads (device I/O, and the commit lock above);
 *   rawstore_fsck (it runs on the commit thread and waits its turn;
 *   transactions wait for it); rawstore_reclaim and rawstore_prepare (they
 *   pick ranges on the commit thread, then punch or zero them in the
 *   caller's thread while transactions go on).  rawstore_submit_async()
 *   only queues (it waits for room when the queue is full, unless
 *   submit_nonblock); transaction builders do no I/O.
 *
 * Durability.  When rawstore_submit() returns 0 (or the async callback is
 *   called with 0) the transaction is on stable storage; a crash at any
 *   point loses no acknowledged transaction, applies a transaction either
 *   entirely or not at all, and leaks no space.  If a device flush or a
 *   metadata commit fails the store stops (every later transaction gets
 *   that error): reopen it and run fsck.
 *
 * Reads never return bytes an object did not write: holes, zeroed ranges
 *   and never-written ranges read as zeros, whatever the device held.
 *
 * Versions.  Options and output structs begin with struct_size: fill
 *   options with their _opts_init() and set output structs' struct_size to
 *   sizeof before the call, so that a newer library accepts an older
 *   caller.  Units are bytes unless a name says otherwise (store.h).
 *
 * Choosing a space policy.  Free space is zeroed (punched or zero-ranged:
 *   reads as zeros on the device) or dirty (old bytes); the extent map, not
 *   the device, decides what a read returns, so no policy can expose stale
 *   data.  Policies decide where the device's work goes:
 *   - punch freed space (inline, in the background, or by the operator
 *     with rawstore_reclaim()) on thin devices, SSDs and store files whose
 *     space should go back to the pool;
 *   - zero ahead in the background (or now, with rawstore_prepare()), so
 *     that writes covering part of an allocation unit write only their own
 *     blocks instead of padding, where zeroing is offloaded (the auto
 *     policy probes this at each open: rawstore_info.zero_offload);
 *   - provision every allocation before writing on thin devices that
 *     support it (and store files made sparse), so that a full pool fails
 *     a transaction with -ENOSPC before anything is written;
 *   - preallocate a store file at mkfs (none, unwritten, write-zeroes, or
 *     stale on the patched ext4).
 *   Policies are set by rawstore_mkfs_opts and rawstore_open_opts,
 *   recorded in the metadata, and reported by rawstore_get_info(); the
 *   defaults (auto zeroing, punching by the operator, or in the background
 *   on a thin block device) suit most devices.  rawstore(7) and docs/API.md
 *   ("Space policies") say what each does and when to pick it.
 */
#ifndef RAWSTORE_RAWSTORE_H
#define RAWSTORE_RAWSTORE_H

#include <rawstore/store.h>
#include <rawstore/txn.h>
#include <rawstore/object.h>
#include <rawstore/fsck.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library version as "MAJOR.MINOR.PATCH". */
const char *rawstore_version(void);

/*
 * Explain a negative errno returned by the library, including the
 * store-specific meanings listed above.
 */
const char *rawstore_strerror(int err);

/*
 * The detailed message of the last failed call in this thread (for example
 * "superblock uuid 1234... does not match metadata uuid 5678..."), or "" if
 * none.  Valid until the next library call in this thread.
 */
const char *rawstore_errmsg(void);

#ifdef __cplusplus
}
#endif

#endif /* RAWSTORE_RAWSTORE_H */
