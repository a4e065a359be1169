/* SPDX-License-Identifier: MIT */
/*
 * ondisk.h: everything rawstore writes to the device or to RocksDB.
 * All integers are little-endian unless a key layout says big-endian (keys
 * use big-endian so that bytewise order is numeric order).
 *
 * Device layout (bytes):
 *   [0, 4096)                  primary superblock (struct rs_disk_super + zeros)
 *   [RS_SB_BACKUP_OFFSET, +4096) backup superblock
 *   [journal_off, +journal_len) the journal (format 2, RS_SB_F_JOURNAL only):
 *                              records of struct rs_disk_jrec (journal.h)
 *   [data_start, device_size)  allocation units of object data
 *
 * RocksDB keys (metadata directory):
 *   "S"                               struct rs_disk_super copy
 *   "N"                               le64 next object id (nid)
 *   "K"                               struct rs_disk_counts
 *   "C" coll                          struct rs_disk_coll
 *   "O" be16(len(coll)) coll name     onode record (see below)
 *   "X" be64(nid) attr                attribute value
 *   "M" be64(nid) key                 omap value
 *   "H" be64(nid)                     omap header
 *   "F" be64(offset)                  le64 length: free extent (merged)
 *   "P" be64(offset)                  le64 length: freed, not yet punched
 *   "Z" be64(offset)                  le64 length: free and known to read zeros
 *                                     (merged; always inside a free extent)
 *   "W" be64(offset)                  le64 length: free, being zeroed or punched
 *                                     (not in "F"; back into "F", dirty, at open)
 *   "V" be64(offset)                  le64 length: provisioned by the store on a
 *                                     thin device or store file, not punched since
 *                                     (merged; what statfs reports as provisioned)
 *   "Y"                               struct rs_disk_space_policy
 *   "D" be64(seq)                     deferred write: le64 device offset, le32
 *                                     length, le32 reserved, then the data;
 *                                     replayed at open, deleted once flushed
 *   "R" be64(unit offset)             le32 extra references of a unit shared
 *                                     by clones
 *   "J"                               struct rs_disk_jpos: the journal record
 *                                     that carried this batch (device journal
 *                                     only; every batch puts it last)
 *
 * Onode record:
 *   struct rs_disk_onode
 *   inline_len bytes of inline data
 *   n_extents x struct rs_disk_extent
 *   for each extent, length / csum_block le32 crc32c values
 *   le32 crc32c of everything above
 */
#ifndef RAWSTORE_ONDISK_H
#define RAWSTORE_ONDISK_H

#include <assert.h>
#include <stdint.h>

typedef uint16_t rs_le16;
typedef uint32_t rs_le32;
typedef uint64_t rs_le64;

#define RS_SB_MAGIC		0x31524f5453574152ULL	/* "RAWSTOR1" */
#define RS_FORMAT_VERSION	2	/* newest understood; 1 = no journal fields */
#define RS_FORMAT_JOURNAL	2	/* the first with RS_SB_F_JOURNAL */
#define RS_SB_F_JOURNAL		(1U << 0)	/* metadata journal on the device */
#define RS_SB_F_KNOWN		RS_SB_F_JOURNAL
#define RS_SB_BLOCK		4096			/* bytes per copy */
#define RS_SB_PRIMARY_OFFSET	0			/* bytes */
#define RS_SB_BACKUP_OFFSET	(512 * 1024)		/* bytes */
#define RS_RESERVED_BYTES	(1024 * 1024)		/* data_start >= this */
#define RS_CSUM_CRC32C		1

struct rs_disk_super {
	rs_le64 magic;
	rs_le32 version;		/* 1, or 2 with RS_SB_F_JOURNAL */
	rs_le32 flags;			/* RS_SB_F_*; version 1: 0 */
	uint8_t uuid[16];
	rs_le64 device_size;		/* bytes */
	rs_le64 data_start;		/* bytes */
	rs_le32 logical_block;		/* bytes */
	rs_le32 min_alloc;		/* bytes */
	rs_le32 csum_type;		/* RS_CSUM_* */
	rs_le32 csum_block;		/* bytes */
	rs_le32 inline_max;		/* bytes */
	rs_le32 reserved0;
	rs_le64 mkfs_time;		/* seconds since the epoch */
	rs_le64 journal_off;		/* bytes, RS_SB_F_JOURNAL only, else 0 */
	rs_le64 journal_len;		/* bytes, RS_SB_F_JOURNAL only, else 0 */
	uint8_t reserved[152];
	rs_le32 reserved1;
	rs_le32 crc;			/* crc32c of the bytes before it */
};
static_assert(sizeof(struct rs_disk_super) == 256, "superblock layout");

#define RS_COLL_VERSION 1
struct rs_disk_coll {
	rs_le32 version;
	rs_le32 flags;
};
static_assert(sizeof(struct rs_disk_coll) == 8, "collection layout");

#define RS_ONODE_VERSION 1
struct rs_disk_onode {
	uint8_t version;		/* RS_ONODE_VERSION */
	uint8_t flags;			/* none defined */
	rs_le16 reserved0;
	rs_le32 n_extents;
	rs_le64 nid;
	rs_le64 size;			/* bytes */
	rs_le64 alloc_hint;		/* bytes */
	rs_le32 inline_len;		/* bytes */
	rs_le32 reserved1;
};
static_assert(sizeof(struct rs_disk_onode) == 40, "onode layout");

struct rs_disk_extent {
	rs_le64 lofs;			/* bytes in the object, unit aligned */
	rs_le64 pofs;			/* bytes on the device, unit aligned */
	rs_le32 len;			/* bytes, multiple of min_alloc */
	rs_le32 reserved;
};
static_assert(sizeof(struct rs_disk_extent) == 24, "extent layout");

struct rs_disk_counts {
	rs_le64 objects;
	rs_le64 collections;
};
static_assert(sizeof(struct rs_disk_counts) == 16, "counts layout");

struct rs_disk_deferred {
	rs_le64 pofs;			/* bytes on the device, unit aligned */
	rs_le32 len;			/* bytes, multiple of min_alloc */
	rs_le32 reserved;
};
static_assert(sizeof(struct rs_disk_deferred) == 16, "deferred record layout");

/* Space policy, written at mkfs and when open changes it (rawstore/store.h
 * enums; a store without the record uses the defaults). */
#define RS_SPACE_POLICY_VERSION 1
struct rs_disk_space_policy {
	rs_le32 version;		/* RS_SPACE_POLICY_VERSION */
	uint8_t zero;			/* enum rawstore_zero_policy */
	uint8_t punch;			/* enum rawstore_punch_policy */
	uint8_t prealloc;		/* enum rawstore_prealloc_policy, as done at mkfs */
	uint8_t reserved0;
	rs_le64 reserved1;
};
static_assert(sizeof(struct rs_disk_space_policy) == 16, "space policy layout");

/*
 * Journal record (device journal): a header in the first bytes of a
 * 4096-aligned run of blocks, then n_data struct rs_disk_jdata, then the
 * RocksDB write-batch bytes, then zeros up to len.  crc is the crc32c of
 * the header (crc field zero) and everything up to the end of the batch.
 * A record never wraps: one that does not fit before the end of the
 * journal goes to its start (vpos skips to the next multiple of
 * journal_len).  vpos is the record's position counted since mkfs: the
 * device offset is journal_off + vpos % journal_len.
 */
#define RS_JREC_MAGIC	0x314c4e524a535200ULL	/* "\0RSJRNL1" */
#define RS_JREC_ALIGN	4096
struct rs_disk_jrec {
	rs_le64 magic;			/* RS_JREC_MAGIC */
	uint8_t uuid[16];		/* the store's */
	rs_le64 seq;			/* 1, 2, 3, ... since mkfs */
	rs_le64 vpos;			/* bytes since mkfs, where it was written */
	rs_le32 len;			/* bytes, multiple of RS_JREC_ALIGN */
	rs_le32 batch_len;		/* bytes of write batch */
	rs_le32 n_data;			/* data checks after the header */
	rs_le32 flags;			/* RS_JREC_F_* */
	rs_le32 n_escaped;		/* RS_JREC_F_ESCAPED: blocks listed */
	rs_le32 crc;
};
/*
 * Escaped blocks: no block of a record but its first begins with
 * RS_JREC_MAGIC on the device, so bytes a user stored (a deferred write,
 * an omap value) can never be taken for a record of a later lap.  A block
 * that would is written with its first 8 bytes zeroed, and its index in
 * the record (1, 2, ...) is listed as an le32 after the batch; the crc
 * covers the list.  Replay puts the magic back.
 */
#define RS_JREC_F_ESCAPED	0x1
static_assert(sizeof(struct rs_disk_jrec) == 64, "journal record layout");

/* New data the record's batch points to, written alongside the record:
 * replay applies the last record only if its data all reads back. */
struct rs_disk_jdata {
	rs_le64 off;			/* bytes on the device */
	rs_le32 len;			/* bytes */
	rs_le32 crc;			/* crc32c of the data */
};
static_assert(sizeof(struct rs_disk_jdata) == 16, "journal data check layout");

/* Value of "J": the record that carried the batch. */
struct rs_disk_jpos {
	rs_le64 seq;			/* that record's seq (0: mkfs) */
	rs_le64 next;			/* vpos right after it: where seq + 1 goes */
};
static_assert(sizeof(struct rs_disk_jpos) == 16, "journal position layout");

#endif /* RAWSTORE_ONDISK_H */
