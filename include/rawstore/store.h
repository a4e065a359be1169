/* SPDX-License-Identifier: MIT */
/*
 * rawstore/store.h: store lifecycle (mkfs, open, close), geometry and
 * engine information, space accounting and performance counters.
 *
 * Units: offsets and sizes are in bytes unless a name says otherwise.  The
 * "allocation unit" is min_alloc_size bytes; the "checksum block" is
 * csum_block_size bytes; both are powers of two and multiples of the
 * device's logical block size.
 */
#ifndef RAWSTORE_STORE_H
#define RAWSTORE_STORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An open store.  Opaque. */
struct rawstore;

/* Longest collection name in bytes (names are NUL-terminated strings). */
#define RAWSTORE_COLL_NAME_MAX 255
/* Longest object name in bytes (object names are arbitrary bytes). */
#define RAWSTORE_NAME_MAX 2048
/* Largest object size in bytes. */
#define RAWSTORE_OBJECT_MAX (1ULL << 44)

struct rawstore_mkfs_opts {
	size_t struct_size;		/* sizeof(struct rawstore_mkfs_opts) */
	uint32_t min_alloc_size;	/* bytes, power of two, default 4096 */
	uint32_t csum_block_size;	/* bytes, divides min_alloc_size, default 4096 */
	uint32_t inline_max;		/* objects up to this size stay in RocksDB;
					 * bytes, default 4096, 0 disables */
	uint32_t reserved0;
	uint64_t device_size;		/* bytes to use, 0 = the whole device */
	int force;			/* overwrite an existing store */
};

/* Fill @o with defaults and set struct_size. */
void rawstore_mkfs_opts_init(struct rawstore_mkfs_opts *o);

/*
 * Create a store on @dev with metadata in directory @meta_dir (created if
 * missing; must be empty or absent unless force).  @o may be NULL.
 * Errors: -EINVAL bad options or a device whose logical block exceeds
 * 4096 bytes (refused before anything is created), -ENOTBLK @dev is
 * neither a block device nor a regular file, -ENOSPC device too small, -EEXIST @dev already holds a
 * rawstore superblock or @meta_dir a database (pass force), -EBUSY in use,
 * or an I/O error.
 */
int rawstore_mkfs(const char *dev, const char *meta_dir, const struct rawstore_mkfs_opts *o);

enum rawstore_io_engine {
	RAWSTORE_ENGINE_AUTO = 0,	/* io_uring, else libaio (logged) */
	RAWSTORE_ENGINE_IO_URING = 1,
	RAWSTORE_ENGINE_LIBAIO = 2,
};

enum rawstore_log_level {
	RAWSTORE_LOG_ERR = 3,
	RAWSTORE_LOG_WARNING = 4,
	RAWSTORE_LOG_INFO = 6,
	RAWSTORE_LOG_DEBUG = 7,
};

typedef void (*rawstore_log_fn)(void *arg, int level, const char *msg);

struct rawstore_open_opts {
	size_t struct_size;		/* sizeof(struct rawstore_open_opts) */
	enum rawstore_io_engine engine;	/* default AUTO */
	unsigned int queue_depth;	/* I/Os in flight per batch, default 64 */
	unsigned int max_group;		/* transactions per commit group, default 64 */
	int buffered;			/* 1: no O_DIRECT (regular files only) */
	int log_level;			/* messages up to this level are logged,
					 * default RAWSTORE_LOG_WARNING */
	rawstore_log_fn log_fn;		/* default: stderr */
	void *log_arg;
	uint32_t deferred_max;		/* overwrites of mapped units up to this many
					 * bytes go through the RocksDB WAL and are
					 * applied after the commit (no device flush
					 * in the transaction); default 32768, 0 off */
	int rebuild_freelist;		/* 1: ignore the recorded free and unpunched
					 * lists and rebuild the free list from the
					 * object records (repair of a corrupt free
					 * list; refused if any record is corrupt) */
	int read_only;			/* 1: open the device O_RDONLY and RocksDB
					 * read-only; nothing is written to either,
					 * and deferred writes left by a crash are not
					 * replayed: reads see them from their records.
					 * Transactions, reclaim, fsck repair and
					 * rebuild_freelist get -EROFS. */
};

/* Fill @o with defaults and set struct_size. */
void rawstore_open_opts_init(struct rawstore_open_opts *o);

/*
 * Open (mount) the store on @dev with metadata in @meta_dir.  @o may be
 * NULL.  The device is opened O_DIRECT|O_EXCL and locked; a second opener
 * gets -EBUSY (read-only openers share a lock that excludes writers).
 * Errors: -ENOENT missing device or metadata, -ENOTBLK not a device or
 * file, -EMEDIUMTYPE no rawstore superblock, -EUCLEAN both superblock
 * copies corrupt or corrupt metadata, -EPROTO newer format version, -ENXIO
 * device smaller than recorded, -EXDEV uuid mismatch between device and
 * metadata, -EBUSY already open, -ENODEV the requested I/O engine is not
 * available.
 */
int rawstore_open(const char *dev, const char *meta_dir, const struct rawstore_open_opts *o,
		  struct rawstore **out);

/*
 * Wait for queued transactions, then close the store and free @st.
 * Returns the sticky error of the store if a metadata commit ever failed,
 * or -EDEADLK (store left open) if called from a completion callback.
 */
int rawstore_close(struct rawstore *st);

struct rawstore_statfs {
	size_t struct_size;
	uint64_t device_size;		/* bytes recorded at mkfs */
	uint64_t data_size;		/* bytes available for object data */
	uint64_t allocated;		/* bytes in use by objects */
	uint64_t free;			/* bytes free */
	uint64_t unpunched;		/* free bytes not yet punched/discarded */
	uint64_t free_extents;		/* number of free extents */
	uint64_t largest_free;		/* bytes in the largest free extent */
	uint64_t objects;
	uint64_t collections;
	uint32_t min_alloc_size;	/* bytes */
	uint32_t reserved0;
};

/* Set st->struct_size = sizeof(*st) before calling. */
int rawstore_statfs(struct rawstore *st, struct rawstore_statfs *out);

struct rawstore_info {
	size_t struct_size;
	const char *io_engine;		/* "io_uring" or "libaio" */
	int direct_io;			/* 1 if O_DIRECT is in use */
	int is_block_device;
	int write_cache;		/* 1 volatile cache (flushes needed) */
	uint32_t logical_block_size;	/* bytes */
	uint32_t min_alloc_size;	/* bytes */
	uint32_t csum_block_size;	/* bytes */
	uint32_t inline_max;		/* bytes */
	uint32_t format_version;
	unsigned int queue_depth;
	uint64_t device_size;		/* bytes recorded in the superblock */
	uint64_t data_start;		/* bytes, first allocatable offset */
	uint64_t discard_max_bytes;	/* from sysfs, 0 if unknown/none */
	uint64_t write_zeroes_max_bytes;	/* from sysfs, 0 if unknown/none */
	char uuid[37];			/* text form */
};

/* Set info->struct_size = sizeof(*info) before calling. */
int rawstore_get_info(struct rawstore *st, struct rawstore_info *info);

struct rawstore_perf {
	size_t struct_size;
	uint64_t txns_committed;	/* successful transactions */
	uint64_t txns_failed;		/* rejected transactions (no effect) */
	uint64_t commit_groups;		/* synced RocksDB batches */
	uint64_t dev_flushes;		/* device cache flushes issued */
	uint64_t dev_flushes_skipped;	/* write-through cache: not needed */
	uint64_t db_syncs;		/* synced RocksDB writes */
	uint64_t dev_write_ops, dev_write_bytes;
	uint64_t dev_read_ops, dev_read_bytes;
	uint64_t inline_writes;		/* write ops kept inline in RocksDB */
	uint64_t csum_errors;		/* data checksum mismatches seen */
	uint64_t bytes_punched;		/* by rawstore_reclaim() */
	uint64_t deferred_writes;	/* overwrites committed through the WAL */
	uint64_t deferred_bytes;
	uint64_t deferred_replayed;	/* records replayed at open */
};

/* Snapshot the counters.  Set p->struct_size = sizeof(*p) first. */
int rawstore_perf_get(struct rawstore *st, struct rawstore_perf *p);

/*
 * Punch (discard, with zeroes guaranteed) every freed range not yet
 * punched.  Returns 0, or -EOPNOTSUPP if the device refuses punch-hole
 * (the ranges stay tracked), or an I/O error.
 */
int rawstore_reclaim(struct rawstore *st);

#ifdef __cplusplus
}
#endif

#endif /* RAWSTORE_STORE_H */
