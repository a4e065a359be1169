/* SPDX-License-Identifier: MIT */
/*
 * rawstore: an object store backend that keeps object data on a raw block
 * device (or a regular file standing in for one) and object metadata in
 * RocksDB, in the manner of Ceph's BlueStore.
 *
 * Design and caveats, read before the first call:
 *
 * - Every call returns 0 (or a count) or a negative errno.  errno itself is
 *   never left set for the caller.  Store-specific meanings:
 *     -EUCLEAN      corrupt superblock or metadata record
 *     -EPROTO       on-disk format version newer than this library
 *     -EMEDIUMTYPE  the device holds no rawstore superblock (foreign)
 *     -EXDEV        device and metadata directory belong to different stores
 *     -ENXIO        device is smaller than the size recorded at mkfs
 *     -EBUSY        the store is already open (by this or another process)
 *     -EIO          device error, or a data checksum mismatch (counted in
 *                   rawstore_perf.csum_errors); bad bytes are never returned
 *   rawstore_strerror() explains a code; rawstore_errmsg() returns the
 *   detailed message of the last failure in the calling thread.
 * - Threads: a store handle may be used from any number of threads.  Reads
 *   run in the caller's thread; transactions are applied by one commit
 *   thread per store, which groups queued transactions into one device
 *   flush and one synced RocksDB write.  Completion callbacks run on that
 *   thread and must not call rawstore_submit() (use rawstore_submit_async()).
 * - fork(): do not use a store handle in a forked child; open it again.
 * - Durability: when rawstore_submit() returns 0 (or the async callback is
 *   called with 0) the transaction is on stable storage; a crash at any
 *   point loses no acknowledged transaction, applies a transaction either
 *   entirely or not at all, and leaks no space.
 * - Reads never return bytes an object did not write: holes, zeroed ranges
 *   and never-written ranges read as zeros.
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
