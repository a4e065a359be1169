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
	int force;			/* overwrite a store, file system or partition
					 * table on the device, and a non-empty
					 * meta_dir */
	/* Space policy (docs/API.md, "Space policies"); 0 = probe the device. */
	int zero_policy;		/* enum rawstore_zero_policy */
	int punch_policy;		/* enum rawstore_punch_policy */
	int prealloc_policy;		/* enum rawstore_prealloc_policy (files) */
	int journal;			/* enum rawstore_journal_mode */
	uint32_t reserved1;
	uint64_t journal_size;		/* bytes (device journal); 0 = default:
					 * 1/64 of the device, 4 MiB to 256 MiB */
};

/* Where the metadata's write-ahead log lives (docs/DESIGN.md, "The device
 * journal"). */
enum rawstore_journal_mode {
	RAWSTORE_JOURNAL_DEFAULT = 0,	/* DEVICE */
	RAWSTORE_JOURNAL_DEVICE = 1,	/* a ring on the data device, reserved at
					 * mkfs: one device flush per commit */
	RAWSTORE_JOURNAL_ROCKSDB = 2,	/* RocksDB's own WAL in the metadata
					 * directory (fdatasync there) */
};
const char *rawstore_journal_mode_name(int mode);

/*
 * How a write that covers only part of an allocation unit finds zeros for
 * the rest of the unit.  Free space is tracked as zeroed (reads zeros on
 * the device) or dirty; such writes go to zeroed space when there is some
 * and write only their own checksum blocks, else they pad with zeros.
 */
enum rawstore_zero_policy {
	RAWSTORE_ZERO_DEFAULT = 0,	/* mkfs: AUTO; open: as recorded */
	RAWSTORE_ZERO_AUTO = 1,		/* PREPARE if zero-range is offloaded (probed at
					 * each open), else PAD */
	RAWSTORE_ZERO_PREPARE = 2,	/* a background preparer keeps zeroed space
					 * ready (zeroes dirty space: rawstore_prepare) */
	RAWSTORE_ZERO_PAD = 3,		/* no preparing: use zeroed space that exists
					 * (mkfs, punched), else write zeros */
};

/* When freed space is punched (PUNCH_HOLE: discard with zeros guaranteed). */
enum rawstore_punch_policy {
	RAWSTORE_PUNCH_DEFAULT = 0,	/* mkfs: BACKGROUND on a thin (provisioning)
					 * block device, else OPERATOR; open: as recorded */
	RAWSTORE_PUNCH_OPERATOR = 1,	/* only by rawstore_reclaim() */
	RAWSTORE_PUNCH_BACKGROUND = 2,	/* a background queue, merged, rate-limited */
	RAWSTORE_PUNCH_INLINE = 3,	/* right after each commit that frees space */
};

/* How mkfs prepares a store that lives in a regular file. */
enum rawstore_prealloc_policy {
	RAWSTORE_PREALLOC_DEFAULT = 0,	/* NONE for files; block devices have none */
	RAWSTORE_PREALLOC_NONE = 1,	/* sparse: the data area is punched */
	RAWSTORE_PREALLOC_UNWRITTEN = 2,	/* punched, then fallocate (unwritten extents) */
	RAWSTORE_PREALLOC_WRITE_ZEROES = 3,	/* FALLOC_FL_WRITE_ZEROES: written, zeroed */
	RAWSTORE_PREALLOC_STALE = 4,	/* FALLOC_FL_NO_HIDE_STALE: written, not zeroed
					 * (patched ext4 with nohide_stale_gid) */
};

/* The policy's name ("auto", "background", "stale", ...), or "?". */
const char *rawstore_zero_policy_name(int policy);
const char *rawstore_punch_policy_name(int policy);
const char *rawstore_prealloc_policy_name(int policy);

/* Fill @o with defaults and set struct_size. */
void rawstore_mkfs_opts_init(struct rawstore_mkfs_opts *o);

/*
 * Create a store on @dev with metadata in directory @meta_dir (created if
 * missing; must be empty or absent unless force).  @o may be NULL.
 * Without force, mkfs refuses, before it writes anything, a device that
 * holds a rawstore superblock or a file system, partition table or other
 * signature libblkid knows (as mkfs.ext4 does), and a @meta_dir that is
 * not empty: -EEXIST, rawstore_errmsg() naming what was found ("holds a
 * file system (ext4)").  force overwrites all of them.
 * Errors: -EINVAL bad options or a device whose logical block exceeds
 * 4096 bytes (refused before anything is created), -ENOTBLK @dev is
 * neither a block device nor a regular file, -ENOSPC device too small,
 * -EEXIST as above, -ENOTDIR @meta_dir is not a directory, -EBUSY in use,
 * or an I/O error (also when the signature probe fails).
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
	unsigned int max_group;		/* transactions per commit group, default 256 */
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
	/* Space policy; 0 keeps what mkfs (or the last change) recorded, another
	 * value is recorded. */
	int zero_policy;		/* enum rawstore_zero_policy */
	int punch_policy;		/* enum rawstore_punch_policy */
	uint64_t zeroed_target;		/* bytes of zeroed free space the preparer keeps;
					 * default data size / 8, at most 1 GiB */
	uint64_t prepare_rate;		/* bytes/s the preparer zeroes at most;
					 * default 256 MiB/s */
	uint64_t punch_rate;		/* bytes/s the background queue punches at most;
					 * default 1 GiB/s */
	/* Back-pressure: transactions submitted and not yet completed, and the
	 * bytes of write data they carry, are bounded.  Past a limit,
	 * rawstore_submit_async() waits for room, or with submit_nonblock = 1
	 * returns -EAGAIN.  A single transaction larger than max_queued_bytes
	 * is admitted when nothing else is queued. */
	unsigned int max_queued_txns;	/* default 1024, 0 = no limit */
	uint64_t max_queued_bytes;	/* bytes, default 256 MiB, 0 = no limit */
	int submit_nonblock;		/* 1: -EAGAIN instead of waiting */
	/* New data of at most this many bytes per allocation (whole units)
	 * goes through the RocksDB WAL like a deferred overwrite: the commit
	 * group syncs RocksDB but does not flush the device for it; the data
	 * is written after the commit and its record deleted after a later
	 * flush (as BlueStore's prefer_deferred_size).  -1 (default): 16384
	 * on a device that reports itself rotational, else 0; 0 off; at most
	 * 1 MiB.  It trades a device flush for WAL bytes that RocksDB
	 * checksums and copies: docs/API.md gives the measured crossover. */
	int32_t deferred_new_max;
	/* --journal rocksdb only: RocksDB reuses this many written WAL files
	 * (recycle_log_file_num, with wal_recovery_mode
	 * kTolerateCorruptedTailRecords, which recycling needs), so that a WAL
	 * sync overwrites allocated blocks instead of extending a file.  0
	 * (default) off; the device journal ignores it. */
	int32_t rocksdb_wal_recycle;
	/* 1: when neither superblock copy on the device is usable (both
	 * missing, or corrupt) and the metadata holds its copy (written at
	 * mkfs), open with that copy, once it is verified against the device
	 * (geometry, size); rawstore_fsck() with repair then rewrites both
	 * device copies.  0 (default): such an open fails with -EUCLEAN and
	 * a message naming 'rawstore fsck --repair'. */
	int repair_super;
};

/* Fill @o with defaults and set struct_size. */
void rawstore_open_opts_init(struct rawstore_open_opts *o);

/*
 * Open (mount) the store on @dev with metadata in @meta_dir.  @o may be
 * NULL.  The device is opened O_DIRECT|O_EXCL and locked; a second opener
 * gets -EBUSY (read-only openers share a lock that excludes writers).
 * Errors: -ENOENT missing device or metadata, -ENOTBLK not a device or
 * file, -EMEDIUMTYPE no rawstore superblock (and none in the metadata),
 * -EUCLEAN both superblock copies corrupt or missing while the metadata
 * holds a copy (see repair_super), or corrupt metadata, -EPROTO newer format version, -ENXIO
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
	uint64_t zeroed;		/* free bytes known to read zeros */
	uint64_t dirty;			/* free bytes holding old data (incl. unpunched
					 * and in_flight); zeroed + dirty = free */
	uint64_t in_flight;		/* free bytes being zeroed or punched right now */
	uint64_t provisioned;		/* bytes this store provisioned (thin devices
					 * and files) and has not punched or discarded
					 * since; recorded, so it survives a reopen */
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
	const char *zero_policy;	/* in effect: "prepare" or "pad" */
	const char *punch_policy;	/* "operator", "background" or "inline" */
	const char *prealloc_policy;	/* recorded at mkfs: "none", "unwritten", ... */
	int zero_offload;		/* 1: zero-range is offloaded (no data written) */
	int provisioning;		/* 1: allocations are provisioned first */
	uint64_t zero_probe_ns;		/* time of the 1 MiB zero-range probe at open */
	uint64_t provision_max_bytes;	/* from sysfs, 0 if none */
	int rotational;			/* 1: the device reports itself rotational */
	uint32_t deferred_max;		/* in effect (open option) */
	uint32_t deferred_new_max;	/* in effect (-1 resolved) */
	const char *journal;		/* "device" or "rocksdb" */
	uint64_t journal_offset;	/* bytes on the device (device journal) */
	uint64_t journal_size;		/* bytes (device journal), else 0 */
};

/* Set info->struct_size = sizeof(*info) before calling. */
int rawstore_get_info(struct rawstore *st, struct rawstore_info *info);

struct rawstore_perf {
	size_t struct_size;
	uint64_t txns_committed;	/* successful transactions */
	uint64_t txns_failed;		/* rejected transactions (no effect) */
	uint64_t commit_groups;		/* synced RocksDB batches */
	uint64_t dev_flushes;		/* device cache flushes issued (journal_flushes
					 * too): device round trips */
	uint64_t dev_flushes_skipped;	/* write-through cache: not needed */
	uint64_t db_syncs;		/* synced RocksDB writes */
	uint64_t dev_write_ops, dev_write_bytes;	/* data: journal records apart */
	uint64_t dev_read_ops, dev_read_bytes;
	uint64_t inline_writes;		/* write ops kept inline in RocksDB */
	uint64_t csum_errors;		/* data checksum mismatches seen */
	uint64_t bytes_punched;		/* freed space punched (every policy) */
	uint64_t deferred_writes;	/* overwrites committed through the WAL */
	uint64_t deferred_bytes;
	uint64_t deferred_replayed;	/* records replayed at open */
	uint64_t rmw_reads;		/* device reads of old data for partial units */
	uint64_t pad_bytes;		/* zeros written to fill partial units */
	uint64_t zeroed_alloc_bytes;	/* bytes allocated from zeroed space */
	uint64_t prepared_bytes;	/* zero-ranged ahead (preparer, rawstore_prepare) */
	uint64_t zero_claims;		/* synced claims of zeroed space on the commit path */
	uint64_t provisioned_bytes;	/* provisioned at allocation */
	uint64_t provision_enospc;	/* transactions refused: provision said ENOSPC */
	uint64_t punched_background;	/* of bytes_punched: by the background queue or inline */
	uint64_t deferred_new_bytes;	/* new data committed through the WAL
					 * (deferred_new_max; also in deferred_bytes) */
	uint64_t journal_records;	/* device journal: records written */
	uint64_t journal_bytes;		/* their bytes (4 KiB blocks) */
	uint64_t journal_flushes;	/* device flushes that made records durable */
	uint64_t journal_trims;		/* RocksDB flushes that freed the ring */
	uint64_t deferred_early_acks;	/* device journal: groups completed before
					 * their deferred in-place writes */
	uint64_t journal_escapes;	/* device journal: record blocks that began
					 * with the record magic, written escaped */
	uint64_t data_copies;		/* writes whose data the store copied into
					 * an I/O buffer of its own */
	uint64_t data_copy_bytes;	/* their bytes */
	uint64_t iobuf_fresh;		/* write buffers the store newly allocated,
					 * not reused (cold: faulted in on first touch) */
	uint64_t read_direct_bytes;	/* read from the device straight into the
					 * caller's buffer (no bounce, no copy) */
	uint64_t dev_write_pieces;	/* device requests the data writes went as:
					 * a write larger than the queue takes in one
					 * request (max_sectors_kb, max_segments) is
					 * issued in pieces, never split by the block
					 * layer (which would hand it to io-wq) */
};

/* Snapshot the counters.  Set p->struct_size = sizeof(*p) first. */
int rawstore_perf_get(struct rawstore *st, struct rawstore_perf *p);

/*
 * Punch (discard, with zeroes guaranteed) every freed range not yet
 * punched; punched ranges become zeroed free space.  Units that a pending
 * deferred write targets are punched only after its record was deleted
 * (the device is flushed first).  On a thin device without write-zeroes
 * (dm-thin) the ranges are discarded instead: returned to the pool, still
 * dirty.  Returns 0, or -EOPNOTSUPP if the device refuses punch-hole (the
 * ranges stay tracked), or an I/O error.
 */
int rawstore_reclaim(struct rawstore *st);

/*
 * Use the space of a grown device: the data area ends at @size bytes (0:
 * the device's size at open), rounded down to the allocation unit; the
 * new range joins the free list as dirty space, unpunched (reclaim zeroes
 * it).  The metadata records the new size first, then both device
 * superblocks are rewritten; a crash in between is finished by the next
 * open.  *@new_size (may be NULL): the data area's end now.  Returns 0
 * (also when there is nothing to grow), -EINVAL for a size below the
 * current one (a store never shrinks) or past the device, -EROFS on a
 * read-only open, or an I/O error.
 */
int rawstore_grow(struct rawstore *st, uint64_t size, uint64_t *new_size);

/*
 * Zero up to @max_bytes of dirty free space now, so that partial-unit
 * writes find zeroed space; 0 means all.  A block device is zeroed with
 * FALLOC_FL_PUNCH_HOLE (never falls back to writing zeros), a file with
 * FALLOC_FL_WRITE_ZEROES, else FALLOC_FL_ZERO_RANGE.  Returns the
 * bytes zeroed (>= 0), -EOPNOTSUPP if the device cannot zero-range, or an
 * I/O error.
 */
int64_t rawstore_prepare(struct rawstore *st, uint64_t max_bytes);

/* Progress of rawstore_space_reclaim() / rawstore_space_prepare(): @done
 * bytes so far of @total planned (done may pass total when ranges freed
 * meanwhile join in).  Called on the caller's thread, once with done = 0
 * before the first round and after each round. */
typedef void (*rawstore_progress_fn)(void *arg, uint64_t done, uint64_t total);

struct rawstore_space_opts {
	size_t struct_size;		/* sizeof(struct rawstore_space_opts) */
	uint64_t max_bytes;		/* stop after about this many bytes (rounded
					 * down to allocation units, at least one);
					 * 0 = all */
	uint64_t rate;			/* bytes/s at most, 0 = no limit */
	int dry_run;			/* 1: only count the bytes that would be
					 * punched or zeroed; nothing is written, and a
					 * store opened read-only is fine */
	rawstore_progress_fn progress;	/* NULL: none */
	void *progress_arg;
	/* NULL, or a flag (a signal handler's, say) read before each round
	 * and while waiting for the rate: once it is nonzero the call stops
	 * at the end of the round in progress and returns the bytes done,
	 * leaving the store as consistent as a finished call would. */
	const volatile int *stop;
};

/* Fill @o with defaults (everything, no rate limit, no callback). */
void rawstore_space_opts_init(struct rawstore_space_opts *o);

/*
 * rawstore_reclaim() and rawstore_prepare() with a limit, a rate, a
 * progress callback, or as a dry run.  @o may be NULL.  Return the bytes
 * punched (reclaim; discarded on a thin device without write-zeroes) or
 * zeroed (prepare), or with dry_run the bytes that would be, >= 0; or
 * -EINVAL bad options, -EROFS read-only store (unless dry_run),
 * -EOPNOTSUPP the device refuses the verb, -EDEADLK called from a
 * completion callback, or an I/O error.
 */
int64_t rawstore_space_reclaim(struct rawstore *st, const struct rawstore_space_opts *o);
int64_t rawstore_space_prepare(struct rawstore *st, const struct rawstore_space_opts *o);

/* What the metadata holds: counts of records by kind (rawstore dump). */
struct rawstore_records {
	size_t struct_size;
	uint64_t generation;		/* metadata sequence number: grows with every
					 * committed batch */
	uint64_t mkfs_time;		/* seconds since the epoch */
	uint64_t collections;		/* "C" records */
	uint64_t onodes;		/* object records ("O") */
	uint64_t onode_extents;		/* extents in the object records */
	uint64_t inline_objects;	/* objects whose data is in RocksDB */
	uint64_t attrs;			/* attribute records */
	uint64_t omap_keys;		/* omap records */
	uint64_t omap_headers;
	uint64_t shared_units;		/* reference records of clone-shared units */
	uint64_t free_records, free_bytes;		/* "F" */
	uint64_t zeroed_records, zeroed_bytes;		/* "Z" */
	uint64_t dirty_extents, dirty_bytes;		/* free, not zeroed (in memory) */
	uint64_t unpunched_records, unpunched_bytes;	/* "P" */
	uint64_t in_flight_records, in_flight_bytes;	/* "W": a crash left them */
	uint64_t provisioned_records, provisioned_bytes;	/* "V" */
	uint64_t deferred_records, deferred_bytes;	/* "D": pending overwrites */
	const char *zero_policy;	/* as recorded ("auto", "prepare", "pad") */
	const char *punch_policy;	/* as recorded */
	const char *prealloc_policy;	/* as recorded */
	/* The device journal (all 0 with RocksDB's WAL).  At open, "J" said
	 * RocksDB held every record up to journal_durable_seq; replay
	 * started at journal_start (bytes since mkfs: the synced trim point
	 * "T", applying the records up to J again) and found
	 * journal_replayed records (journal_replayed_bytes) after J.  A
	 * read-only open lays them over RocksDB; a read-write open applied
	 * them.  journal_dropped: the last record's new data did not read
	 * back, so it was dropped (never acknowledged).  journal_last_seq and
	 * journal_head: the last record written and where the next goes. */
	uint64_t journal_offset, journal_size;	/* bytes on the device */
	uint64_t journal_durable_seq, journal_start;
	uint64_t journal_replayed, journal_replayed_bytes, journal_last_seq;
	uint64_t journal_head;		/* bytes since mkfs */
	uint64_t journal_dropped;	/* 1, or 0 */
};

/* Count the records (reads all of the metadata; a diagnostic, not a fast
 * path).  Set r->struct_size = sizeof(*r) first.  0 or -errno. */
int rawstore_records_get(struct rawstore *st, struct rawstore_records *r);

#ifdef __cplusplus
}
#endif

#endif /* RAWSTORE_STORE_H */
