/* SPDX-License-Identifier: MIT */
/*
 * meta.h: the RocksDB side.  Key builders for the schema in ondisk.h, point
 * reads (committed state, or committed + a pending indexed batch), prefix
 * iteration, and synced commits.
 */
#ifndef RAWSTORE_META_H
#define RAWSTORE_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

struct rawstore;
struct rs_journal;
struct rs_journal_stat;
struct rs_jdata_vec;

struct rs_meta {
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wsync;
	rocksdb_writeoptions_t *wnosync;	/* commit pipeline: synced by meta_sync_wal */
	rocksdb_readoptions_t *ro;
	struct rawstore *st;
	struct rs_journal *j;		/* device journal (RS_SB_F_JOURNAL), else NULL */
	rocksdb_writebatch_wi_t *overlay;	/* read-only + journal: records not in RocksDB */
	bool read_only;
};

#define KEY_MAX (3 + 255 + 2048 + 16)

struct rs_key {
	size_t len;
	char buf[KEY_MAX + 8];
};

/* -EEXIST if @create and a database exists there, -ENOENT if !@create and
 * none does, -EBUSY if locked by another opener. */
int meta_open(struct rawstore *st, const char *dir, bool create, struct rs_meta **out);
/* META_RO: rocksdb_open_for_read_only (the WAL is read into memory only;
 * commits fail). */
enum meta_mode { META_RW, META_CREATE, META_RO };
int meta_open_mode(struct rawstore *st, const char *dir, enum meta_mode mode,
		   struct rs_meta **out);
void meta_close(struct rs_meta *m);
/* Destroy the database in @dir (mkfs --force). */
int meta_destroy(const char *dir);

/* Read @key; *val is malloc'd.  @wb may be NULL (committed state only). */
int meta_get(struct rs_meta *m, rocksdb_writebatch_wi_t *wb, const struct rs_key *k,
	     char **val, size_t *vlen);
int meta_commit(struct rs_meta *m, rocksdb_writebatch_wi_t *wb);
/* Write @wb to the WAL and memtable without syncing it: durable after the
 * next meta_sync_wal() (or synced write) returned 0. */
int meta_commit_nosync(struct rs_meta *m, rocksdb_writebatch_wi_t *wb);
/* meta_commit_nosync(), and with the device journal the record carries
 * @d: checks of new data written beside it and not flushed (NULL: none). */
int meta_commit_data(struct rs_meta *m, rocksdb_writebatch_wi_t *wb,
		     const struct rs_jdata_vec *d);
/* Replay the device journal of m->st's superblock (journal.h) into the
 * database (read-only: into an overlay of every read); from then on the
 * commits go through it. */
int meta_journal_open(struct rs_meta *m);
/* Does the metadata go through the device journal (journal.h)? */
bool meta_journaled(const struct rs_meta *m);
/* What the journal's replay at open found; false without a journal. */
bool meta_journal_stat(struct rs_meta *m, struct rs_journal_stat *s);
/* Sync every write made so far to stable storage (FlushWAL(sync)); the
 * message goes into @msg (may be called from any thread). */
int meta_sync_wal(struct rs_meta *m, char *msg, size_t msglen);
/* Commit a plain put synchronously (mkfs). */
int meta_put_sync(struct rs_meta *m, const struct rs_key *k, const void *v, size_t vlen);

/* Iterator over keys starting with @prefix (through @wb if not NULL). */
struct rs_iter;
int meta_iter_new(struct rs_meta *m, rocksdb_writebatch_wi_t *wb, const void *prefix,
		  size_t plen, struct rs_iter **out);
/* Position at the first key >= prefix+@start. */
void meta_iter_seek(struct rs_iter *it, const void *start, size_t slen);
/* True if positioned on a key within the prefix. */
bool meta_iter_valid(struct rs_iter *it);
void meta_iter_next(struct rs_iter *it);
/* Key without the prefix, and value. */
const char *meta_iter_key(struct rs_iter *it, size_t *len);
const char *meta_iter_full_key(struct rs_iter *it, size_t *len);
const char *meta_iter_val(struct rs_iter *it, size_t *len);
int meta_iter_error(struct rs_iter *it);
void meta_iter_free(struct rs_iter *it);

/*
 * Call @fn for every committed record whose key starts with @prefix, in key
 * order, with the key after the prefix and the value.  A nonzero return of
 * @fn ends the walk and is returned; else an iterator error, or 0.
 */
int meta_each(struct rs_meta *m, const void *prefix, size_t plen,
	      int (*fn)(void *arg, const char *k, size_t kl, const char *v, size_t vl),
	      void *arg);

/*
 * Call @fn for each extent record ("F", "P", "Z", "W", "V") of kind @type in
 * the committed metadata, in offset order, with the validating decoder's
 * result: @err is 0 and @r valid, or -EUCLEAN (message in rawstore_errmsg()).
 * A nonzero return of @fn ends the walk and is returned.
 */
struct rs_limits;
struct rs_ext_rec;
int meta_each_ext(struct rs_meta *m, char type, const struct rs_limits *lim,
		  int (*fn)(void *arg, const struct rs_ext_rec *r, int err), void *arg);

/* Key builders. */
void key_super(struct rs_key *k);
void key_nid(struct rs_key *k);
void key_counts(struct rs_key *k);
void key_coll(struct rs_key *k, const char *coll);
void key_onode(struct rs_key *k, const char *coll, const void *name, size_t nlen);
/* Prefix of all onodes of @coll. */
void key_onode_prefix(struct rs_key *k, const char *coll);
/* @type is 'X', 'M' or 'H'. */
void key_nid_sub(struct rs_key *k, char type, uint64_t nid, const void *sub, size_t slen);
void key_ext(struct rs_key *k, char type, uint64_t off);

#endif /* RAWSTORE_META_H */
