// SPDX-License-Identifier: MIT
/* meta.c: RocksDB through its C API. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "debug.h"
#include "decode.h"
#include "internal.h"
#include "journal.h"
#include "meta.h"
#include "util.h"

struct rs_iter {
	rocksdb_iterator_t *it;
	char prefix[KEY_MAX];
	size_t plen;
};

static int db_error(struct rawstore *st, char *err, const char *what)
{
	int ret = rs_db_errno(err);

	rs_err(st, ret, "RocksDB %s: %s", what, err);
	rocksdb_free(err);
	return ret;
}

int meta_open(struct rawstore *st, const char *dir, bool create, struct rs_meta **out)
{
	return meta_open_mode(st, dir, create ? META_CREATE : META_RW, out);
}

int meta_open_mode(struct rawstore *st, const char *dir, enum meta_mode mode,
		   struct rs_meta **out)
{
	bool create = mode == META_CREATE;
	bool journaled = st && (le32toh(st->sb.flags) & RS_SB_F_JOURNAL);
	struct rs_meta *m;
	char *err = NULL;
	int ret;

	if (create && mkdir(dir, 0755) && errno != EEXIST)
		return rs_err(st, -errno, "%s: cannot create metadata directory", dir);
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->st = st;
	m->opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(m->opts, create);
	rocksdb_options_set_error_if_exists(m->opts, create);
	rocksdb_options_set_paranoid_checks(m->opts, 1);
	/*
	 * FATAL only: RocksDB 7.8 (Debian, built with assertions) aborts the
	 * process when it logs into its LOG file after a write to it failed,
	 * e.g. on a full file system (test_faults.cc, MetaEnospcTest).  Our
	 * own messages say what failed.
	 */
	rocksdb_options_set_info_log_level(m->opts, 4 /* FATAL */);
	rocksdb_options_set_keep_log_file_num(m->opts, 2);
	/*
	 * The device journal is the write-ahead log: RocksDB keeps its WAL in
	 * memory until the journal trims (FlushWAL(sync), journal.c), instead
	 * of a write() per batch.  (Not the WAL off: its trim would be a
	 * memtable flush, which runs on RocksDB's background threads.)
	 */
	if (journaled)
		rocksdb_options_set_manual_wal_flush(m->opts, 1);
	else if (st && st->opts.rocksdb_wal_recycle > 0) {
		rocksdb_options_set_recycle_log_file_num(m->opts,
							 (size_t)st->opts.rocksdb_wal_recycle);
		rocksdb_options_set_wal_recovery_mode(m->opts, 0 /* kTolerateCorruptedTailRecords */);
	}
	if (mode == META_RO)	/* no LOCK, no WAL replay to disk, no new files */
		m->db = rocksdb_open_for_read_only(m->opts, dir, 0, &err);
	else
		m->db = rocksdb_open(m->opts, dir, &err);
	if (err) {
		ret = db_error(st, err, "open");
		if (ret == -EIO && !create && strstr(rawstore_errmsg(), "CURRENT"))
			ret = rs_err(st, -ENOENT, "%s: no rawstore metadata here", dir);
		goto out_free;
	}
	m->wsync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(m->wsync, 1);
	m->wnosync = rocksdb_writeoptions_create();
	m->ro = rocksdb_readoptions_create();
	rocksdb_readoptions_set_verify_checksums(m->ro, 1);
	m->read_only = mode == META_RO;
	*out = m;
	return 0;

out_free:
	rocksdb_options_destroy(m->opts);
	free(m);
	return ret;
}

void meta_close(struct rs_meta *m)
{
	if (!m)
		return;
	journal_close(m->j, true);
	if (m->overlay)
		rocksdb_writebatch_wi_destroy(m->overlay);
	rocksdb_close(m->db);
	rocksdb_writeoptions_destroy(m->wsync);
	rocksdb_writeoptions_destroy(m->wnosync);
	rocksdb_readoptions_destroy(m->ro);
	rocksdb_options_destroy(m->opts);
	free(m);
}

int meta_destroy(const char *dir)
{
	rocksdb_options_t *o = rocksdb_options_create();
	char *err = NULL;

	rocksdb_destroy_db(o, dir, &err);
	rocksdb_options_destroy(o);
	if (err)
		return db_error(NULL, err, "destroy");
	return 0;
}

int meta_get(struct rs_meta *m, rocksdb_writebatch_wi_t *wb, const struct rs_key *k,
	     char **val, size_t *vlen)
{
	char *err = NULL, *v;

	if (!wb)
		wb = m->overlay;
	if (wb)
		v = rocksdb_writebatch_wi_get_from_batch_and_db(wb, m->db, m->ro, k->buf, k->len,
								 vlen, &err);
	else
		v = rocksdb_get(m->db, m->ro, k->buf, k->len, vlen, &err);
	if (err)
		return db_error(m->st, err, "get");
	if (!v)
		return -ENOENT;
	*val = v;
	return 0;
}

static int write_wb(struct rs_meta *m, const rocksdb_writeoptions_t *wo,
		    rocksdb_writebatch_wi_t *wb)
{
	char *err = NULL;

	rocksdb_write_writebatch_wi(m->db, wo, wb, &err);
	if (err)
		return db_error(m->st, err, "write");
	return 0;
}

int meta_commit(struct rs_meta *m, rocksdb_writebatch_wi_t *wb)
{
	char msg[256];
	int ret;

	if (!m->j)
		return write_wb(m, m->wsync, wb);
	ret = journal_append(m->j, wb, NULL);
	if (!ret && (ret = journal_sync(m->j, msg, sizeof(msg))))
		rs_err(m->st, ret, "%s", msg);
	return ret;
}

int meta_commit_nosync(struct rs_meta *m, rocksdb_writebatch_wi_t *wb)
{
	return meta_commit_data(m, wb, NULL);
}

int meta_commit_data(struct rs_meta *m, rocksdb_writebatch_wi_t *wb,
		     const struct rs_jdata_vec *d)
{
	if (!m->j)
		return write_wb(m, m->wnosync, wb);
	return journal_append(m->j, wb, d);
}

int meta_journal_open(struct rs_meta *m)
{
	if (m->read_only)
		m->overlay = rocksdb_writebatch_wi_create(0, 1);
	return journal_open(m->st, m->db, m->overlay, &m->j);
}

bool meta_journaled(const struct rs_meta *m)
{
	return m->j != NULL;
}

bool meta_journal_stat(struct rs_meta *m, struct rs_journal_stat *s)
{
	if (m->j)
		journal_stat(m->j, s);
	return m->j != NULL;
}

/* debug.h: where the next journal record goes (tests). */
uint64_t rs_debug_journal_head(struct rawstore *st, uint64_t *len)
{
	struct rs_journal_stat js;

	*len = 0;
	if (!meta_journal_stat(st->meta, &js))
		return 0;
	*len = js.len;
	return js.head;
}

int meta_sync_wal(struct rs_meta *m, char *msg, size_t msglen)
{
	char *err = NULL;
	int ret;

	if (m->j)
		return journal_sync(m->j, msg, msglen);
	rocksdb_flush_wal(m->db, 1, &err);
	if (!err)
		return 0;
	/* Not rs_err(): the caller may be another thread than the commit's. */
	ret = rs_db_errno(err);
	snprintf(msg, msglen, "RocksDB WAL sync: %s", err);
	rocksdb_free(err);
	return ret;
}

int meta_put_sync(struct rs_meta *m, const struct rs_key *k, const void *v, size_t vlen)
{
	char *err = NULL;

	if (m->j) {
		rocksdb_writebatch_wi_t *wb = rocksdb_writebatch_wi_create(0, 1);
		int ret;

		rocksdb_writebatch_wi_put(wb, k->buf, k->len, v, vlen);
		ret = meta_commit(m, wb);
		rocksdb_writebatch_wi_destroy(wb);
		return ret;
	}
	rocksdb_put(m->db, m->wsync, k->buf, k->len, v, vlen, &err);
	if (err)
		return db_error(m->st, err, "put");
	return 0;
}

int meta_iter_new(struct rs_meta *m, rocksdb_writebatch_wi_t *wb, const void *prefix,
		  size_t plen, struct rs_iter **out)
{
	struct rs_iter *it = calloc(1, sizeof(*it));
	rocksdb_iterator_t *base;

	if (!it || plen > sizeof(it->prefix)) {
		free(it);
		return -ENOMEM;
	}
	memcpy(it->prefix, prefix, plen);
	it->plen = plen;
	base = rocksdb_create_iterator(m->db, m->ro);
	if (!wb)
		wb = m->overlay;
	it->it = wb ? rocksdb_writebatch_wi_create_iterator_with_base(wb, base) : base;
	rocksdb_iter_seek(it->it, it->prefix, plen);
	*out = it;
	return 0;
}

void meta_iter_seek(struct rs_iter *it, const void *start, size_t slen)
{
	char k[KEY_MAX * 2];

	memcpy(k, it->prefix, it->plen);
	if (slen > sizeof(k) - it->plen)
		slen = sizeof(k) - it->plen;
	memcpy(k + it->plen, start, slen);
	rocksdb_iter_seek(it->it, k, it->plen + slen);
}

bool meta_iter_valid(struct rs_iter *it)
{
	const char *k;
	size_t len;

	if (!rocksdb_iter_valid(it->it))
		return false;
	k = rocksdb_iter_key(it->it, &len);
	return len >= it->plen && !memcmp(k, it->prefix, it->plen);
}

void meta_iter_next(struct rs_iter *it)
{
	rocksdb_iter_next(it->it);
}

const char *meta_iter_key(struct rs_iter *it, size_t *len)
{
	const char *k = rocksdb_iter_key(it->it, len);

	*len -= it->plen;
	return k + it->plen;
}

const char *meta_iter_full_key(struct rs_iter *it, size_t *len)
{
	return rocksdb_iter_key(it->it, len);
}

const char *meta_iter_val(struct rs_iter *it, size_t *len)
{
	return rocksdb_iter_value(it->it, len);
}

int meta_iter_error(struct rs_iter *it)
{
	char *err = NULL;

	rocksdb_iter_get_error(it->it, &err);
	if (err)
		return db_error(NULL, err, "iterate");
	return 0;
}

void meta_iter_free(struct rs_iter *it)
{
	if (!it)
		return;
	rocksdb_iter_destroy(it->it);
	free(it);
}

void key_super(struct rs_key *k)
{
	k->buf[0] = 'S';
	k->len = 1;
}

void key_nid(struct rs_key *k)
{
	k->buf[0] = 'N';
	k->len = 1;
}

void key_counts(struct rs_key *k)
{
	k->buf[0] = 'K';
	k->len = 1;
}

void key_coll(struct rs_key *k, const char *coll)
{
	size_t cl = strlen(coll);

	k->buf[0] = 'C';
	memcpy(k->buf + 1, coll, cl);
	k->len = 1 + cl;
}

void key_onode_prefix(struct rs_key *k, const char *coll)
{
	size_t cl = strlen(coll);

	k->buf[0] = 'O';
	put_be16(k->buf + 1, (uint16_t)cl);
	memcpy(k->buf + 3, coll, cl);
	k->len = 3 + cl;
}

void key_onode(struct rs_key *k, const char *coll, const void *name, size_t nlen)
{
	key_onode_prefix(k, coll);
	memcpy(k->buf + k->len, name, nlen);
	k->len += nlen;
}

void key_nid_sub(struct rs_key *k, char type, uint64_t nid, const void *sub, size_t slen)
{
	k->buf[0] = type;
	put_be64(k->buf + 1, nid);
	if (slen)
		memcpy(k->buf + 9, sub, slen);
	k->len = 9 + slen;
}

void key_ext(struct rs_key *k, char type, uint64_t off)
{
	k->buf[0] = type;
	put_be64(k->buf + 1, off);
	k->len = 9;
}

int meta_each(struct rs_meta *m, const void *prefix, size_t plen,
	      int (*fn)(void *arg, const char *k, size_t kl, const char *v, size_t vl),
	      void *arg)
{
	struct rs_iter *it;
	int ret;

	ret = meta_iter_new(m, NULL, prefix, plen, &it);
	if (ret)
		return ret;
	for (; !ret && meta_iter_valid(it); meta_iter_next(it)) {
		size_t kl, vl;
		const char *k = meta_iter_key(it, &kl), *v = meta_iter_val(it, &vl);

		ret = fn(arg, k, kl, v, vl);
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}

struct each_ext {
	char type;
	const struct rs_limits *lim;
	int (*fn)(void *arg, const struct rs_ext_rec *r, int err);
	void *arg;
};

static int each_ext_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
	const struct each_ext *c = arg;
	struct rs_ext_rec r;

	return c->fn(c->arg, &r, decode_ext_rec(c->type, k, kl, v, vl, c->lim, &r));
}

int meta_each_ext(struct rs_meta *m, char type, const struct rs_limits *lim,
		  int (*fn)(void *arg, const struct rs_ext_rec *r, int err), void *arg)
{
	struct each_ext c = { type, lim, fn, arg };

	return meta_each(m, &type, 1, each_ext_one, &c);
}
