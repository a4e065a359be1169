/* SPDX-License-Identifier: MIT */
/*
 * journal.h: the metadata journal on the data device (mkfs --journal
 * device).  Each metadata batch becomes one record, written sequentially
 * into a ring reserved at mkfs.  One device flush makes a record durable
 * together with the data written beside it; only then does RocksDB get
 * the batch, into its memtable and its WAL, which is not synced: the
 * journal is the durable log (docs/DESIGN.md, "The device journal").
 *
 * Rules the callers rely on:
 *  - a record is written only once every record before it is durable, so
 *    at most the last record of the ring can be torn or point to data
 *    that did not reach the device; replay checks that one's data;
 *  - every batch puts "J" = {its seq, where the next record goes}, so
 *    RocksDB's recovered state says where replay starts;
 *  - the ring is trimmed by syncing RocksDB's WAL, never by anything else.
 */
#ifndef RAWSTORE_JOURNAL_H
#define RAWSTORE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

struct rawstore;
struct rs_dev;
struct pext;
struct rs_journal;

/* Data written beside a record (new units), checked at replay. */
struct rs_jdata {
	uint64_t off;
	uint32_t len;
	uint32_t crc;
};

struct rs_jdata_vec {
	struct rs_jdata *v;
	size_t n, cap;
};

int jdata_push(struct rs_jdata_vec *v, uint64_t off, uint32_t len, uint32_t crc);
int jdata_append(struct rs_jdata_vec *dst, const struct rs_jdata_vec *src);
/*
 * Drop the checks of data in the @nf ranges @f: ranges the record's own
 * group frees may be punched, zeroed or written again as soon as the
 * record is durable, before any later record, and replay must not take
 * their new contents for data that did not land.
 */
void jdata_drop_freed(struct rs_jdata_vec *v, const struct pext *f, size_t nf);
void jdata_free(struct rs_jdata_vec *v);

/* What replay (or a read-only scan) found. */
struct rs_journal_stat {
	uint64_t off, len;		/* bytes on the device */
	uint64_t durable_seq;		/* "J" in RocksDB's durable state */
	uint64_t durable_next;		/* vpos after J's record */
	uint64_t trim_seq;		/* "T", the synced trim point: replay */
	uint64_t trim_next;		/* starts at its next vpos */
	uint64_t reapplied;		/* records up to J applied again */
	uint64_t records;		/* valid records found after J */
	uint64_t bytes;			/* their length */
	uint64_t last_seq;		/* seq of the last record (now) */
	uint64_t head;			/* vpos of the next record (now) */
	int dropped;			/* 1: the last record's data did not read back */
	uint64_t dropped_seq;
};

/*
 * Open the journal described by st->sb on st->dev for RocksDB @db and
 * replay it: records newer than "J" are applied to @db (read-write) or,
 * with @overlay (read-only open), put into @overlay only.  The last
 * record is applied only if its data checks read back; else it is
 * dropped (it was never acknowledged) and, read-write, erased.
 */
int journal_open(struct rawstore *st, rocksdb_t *db, rocksdb_writebatch_wi_t *overlay,
		 struct rs_journal **out);
/* @clean: sync RocksDB's WAL first (the next open replays nothing); else
 * leave the records for replay. */
void journal_close(struct rs_journal *j, bool clean);
void journal_stat(struct rs_journal *j, struct rs_journal_stat *s);

/*
 * Append @wb as one record (after putting "J" into it), flush the device,
 * then write the batch to RocksDB; @d: new data written beside it and not
 * flushed yet, checked at replay (NULL: none).  Durable when it returns 0.
 * -E2BIG if the record is more than half the journal, else 0 or a
 * device/RocksDB error (sticky: the journal stops).
 */
int journal_append(struct rs_journal *j, rocksdb_writebatch_wi_t *wb,
		   const struct rs_jdata_vec *d);
/* Every record appended so far is durable (appends flush): 0, or the
 * journal's sticky error with its message in @msg. */
int journal_sync(struct rs_journal *j, char *msg, size_t msglen);

#endif /* RAWSTORE_JOURNAL_H */
