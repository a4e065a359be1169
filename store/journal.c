// SPDX-License-Identifier: MIT
/*
 * journal.c: the metadata journal on the data device (journal.h).
 *
 * Positions are "vpos": bytes since mkfs, growing forever; the record at
 * vpos sits at journal_off + vpos % len.  Between tail and head lie the
 * records RocksDB may not hold durably yet; a record is placed only where
 * it overwrites nothing at or after tail.  All appends, flushes and trims
 * happen under one mutex, so the memtable sees batches in record order.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "debug.h"
#include "device.h"
#include "internal.h"
#include "journal.h"
#include "ondisk.h"
#include "util.h"

struct rs_journal {
	struct rawstore *st;
	struct rs_dev *dev;
	rocksdb_t *db;
	rocksdb_writeoptions_t *wo;	/* WAL on, not synced */
	uint8_t uuid[16];
	uint64_t off, len;

	pthread_mutex_t lock;
	uint64_t head, tail;		/* vpos */
	uint64_t seq;			/* last written (and durable) */
	int err;			/* sticky */
	char msg[256];
	struct rs_journal_stat stat;	/* of the replay at open */
	uint8_t *rbuf;			/* the last record's buffer, kept for the
					 * next (under lock; up to JREC_KEEP bytes) */
	size_t rbuf_len;
};

/* Record buffers up to this size are kept for the next record: a commit
 * group's record is usually a few KiB, and allocating and zeroing it anew
 * for each showed in the profile of small transactions. */
#define JREC_KEEP (1U << 20)

int jdata_push(struct rs_jdata_vec *v, uint64_t off, uint32_t len, uint32_t crc)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 16;
		struct rs_jdata *n = realloc(v->v, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		v->v = n;
		v->cap = cap;
	}
	v->v[v->n++] = (struct rs_jdata){ off, len, crc };
	return 0;
}

int jdata_append(struct rs_jdata_vec *dst, const struct rs_jdata_vec *src)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < src->n && !ret; i++)
		ret = jdata_push(dst, src->v[i].off, src->v[i].len, src->v[i].crc);
	return ret;
}

void jdata_drop_freed(struct rs_jdata_vec *v, const struct pext *f, size_t nf)
{
	size_t i, k, n = 0;

	for (i = 0; i < v->n; i++) {
		uint64_t a = v->v[i].off, b = a + v->v[i].len;

		for (k = 0; k < nf; k++)
			if (f[k].off < b && a < f[k].off + f[k].len)
				break;
		if (k == nf)
			v->v[n++] = v->v[i];
	}
	v->n = n;
}

void jdata_free(struct rs_jdata_vec *v)
{
	free(v->v);
	memset(v, 0, sizeof(*v));
}

static uint64_t phys(const struct rs_journal *j, uint64_t vpos)
{
	return j->off + vpos % j->len;
}

/* Where a record of @rlen bytes goes if the head is at @vpos. */
static uint64_t place(const struct rs_journal *j, uint64_t vpos, uint64_t rlen)
{
	if (vpos % j->len + rlen > j->len)
		return round_up(vpos + 1, j->len);
	return vpos;
}

/* ---- escaping (ondisk.h, RS_JREC_F_ESCAPED) ---- */

static const uint8_t *magic_le(void)
{
	static uint8_t m[8];
	uint64_t v = htole64(RS_JREC_MAGIC);

	memcpy(m, &v, 8);
	return m;
}

/* The byte at @off of a record of @d's checks and batch @bd (off >= 64). */
static uint8_t rec_byte(const struct rs_jdata_vec *d, const char *bd, uint64_t off)
{
	size_t nd = d ? d->n : 0;
	uint64_t o = off - sizeof(struct rs_disk_jrec);
	struct rs_disk_jdata dd;

	if (o >= nd * sizeof(dd))
		return (uint8_t)bd[o - nd * sizeof(dd)];
	dd = (struct rs_disk_jdata){ htole64(d->v[o / sizeof(dd)].off),
				     htole32(d->v[o / sizeof(dd)].len),
				     htole32(d->v[o / sizeof(dd)].crc) };
	return ((const uint8_t *)&dd)[o % sizeof(dd)];
}

/* Blocks after the first of a record of @body0 bytes (header, @d's checks,
 * @bd) that begin with the magic; their indices into @idx if not NULL. */
static uint32_t find_escapes(const struct rs_jdata_vec *d, const char *bd, uint64_t body0,
			     uint32_t *idx)
{
	const uint8_t *m = magic_le();
	uint64_t off;
	uint32_t n = 0, k;

	for (off = RS_JREC_ALIGN; off + 8 <= body0; off += RS_JREC_ALIGN) {
		for (k = 0; k < 8 && rec_byte(d, bd, off + k) == m[k]; k++)
			;
		if (k < 8)
			continue;
		if (idx)
			idx[n] = (uint32_t)(off / RS_JREC_ALIGN);
		n++;
	}
	return n;
}

/* Put the magic back at the @n blocks listed after @body0 bytes of @buf:
 * 0, or 1 if the list is not valid. */
static int unescape(uint8_t *buf, uint64_t body0, uint32_t n)
{
	uint32_t i, k;

	for (i = 0; i < n; i++) {
		memcpy(&k, buf + body0 + 4 * (uint64_t)i, 4);
		k = le32toh(k);
		if (!k || (uint64_t)k * RS_JREC_ALIGN + 8 > body0)
			return 1;
		memcpy(buf + (uint64_t)k * RS_JREC_ALIGN, magic_le(), 8);
	}
	return 0;
}

/* ---- replay ---- */

/* A record read back: the whole run of blocks. */
struct jrec {
	uint8_t *buf;
	uint64_t vpos, seq;
	uint32_t len, batch_len, n_data;
};

static void jrec_free(struct jrec *r)
{
	free(r->buf);
	r->buf = NULL;
}

static const char *batch_of(const struct jrec *r)
{
	return (const char *)r->buf + sizeof(struct rs_disk_jrec) +
	       (size_t)r->n_data * sizeof(struct rs_disk_jdata);
}

/*
 * Read the record that should be at @vpos with @seq: 0 and @r filled, 1 if
 * none is there (end of the journal), or an I/O error.
 */
static int read_record(struct rs_journal *j, uint64_t vpos, uint64_t seq, struct jrec *r)
{
	struct rs_disk_jrec h;
	uint8_t *buf = rs_alloc_aligned(RS_JREC_ALIGN);
	uint64_t body0, body;
	uint32_t len, crc, nesc;
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = dev_read(j->dev, buf, phys(j, vpos), RS_JREC_ALIGN);
	if (ret)
		goto out_free;
	memcpy(&h, buf, sizeof(h));
	len = le32toh(h.len);
	nesc = le32toh(h.flags) == RS_JREC_F_ESCAPED ? le32toh(h.n_escaped) : 0;
	body0 = sizeof(h) + (uint64_t)le32toh(h.n_data) * sizeof(struct rs_disk_jdata) +
		le32toh(h.batch_len);
	body = body0 + 4 * (uint64_t)nesc;
	ret = 1;
	if (le64toh(h.magic) != RS_JREC_MAGIC || memcmp(h.uuid, j->uuid, 16) ||
	    le64toh(h.seq) != seq || le64toh(h.vpos) != vpos || !len ||
	    !is_aligned(len, RS_JREC_ALIGN) || vpos % j->len + len > j->len || body > len ||
	    (h.flags && !nesc) || (!h.flags && h.n_escaped))
		goto out_free;
	if (len > RS_JREC_ALIGN) {
		uint8_t *big = rs_alloc_aligned(len);

		if (!big) {
			ret = -ENOMEM;
			goto out_free;
		}
		memcpy(big, buf, RS_JREC_ALIGN);
		free(buf);
		buf = big;
		ret = dev_read(j->dev, buf + RS_JREC_ALIGN, phys(j, vpos) + RS_JREC_ALIGN,
			       len - RS_JREC_ALIGN);
		if (ret)
			goto out_free;
		ret = 1;
	}
	crc = le32toh(h.crc);
	((struct rs_disk_jrec *)buf)->crc = 0;
	if (rs_crc32c(buf, body) != crc)
		goto out_free;	/* torn or never completed */
	if (unescape(buf, body0, nesc))
		goto out_free;
	*r = (struct jrec){ buf, vpos, seq, len, le32toh(h.batch_len), le32toh(h.n_data) };
	return 0;

out_free:
	free(buf);
	return ret;
}

/* The record with @seq at @vpos, or at the start of the next lap (where the
 * writer put it if it did not fit before the end). */
static int find_record(struct rs_journal *j, uint64_t vpos, uint64_t seq, struct jrec *r)
{
	int ret = read_record(j, vpos, seq, r);

	if (ret == 1 && vpos % j->len)
		ret = read_record(j, round_up(vpos, j->len), seq, r);
	return ret;
}

/* Does the data the last record points to read back as written?  1 yes,
 * 0 no, or an I/O error. */
static int data_landed(struct rs_journal *j, const struct jrec *r)
{
	const struct rs_disk_jdata *d =
		(const void *)(r->buf + sizeof(struct rs_disk_jrec));
	uint32_t i;
	int ret = 1;

	for (i = 0; i < r->n_data && ret == 1; i++) {
		uint64_t off = le64toh(d[i].off);
		uint32_t len = le32toh(d[i].len);
		void *buf;

		if (off < j->off + j->len || off + len > dev_geom(j->dev)->size)
			return 0;
		buf = rs_alloc_aligned(len);
		if (!buf)
			return -ENOMEM;
		ret = dev_read(j->dev, buf, off, len);
		if (!ret)
			ret = rs_crc32c(buf, len) == le32toh(d[i].crc);
		free(buf);
	}
	return ret;
}

struct overlay_ctx {
	rocksdb_writebatch_wi_t *wb;
};

static void ov_put(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
	rocksdb_writebatch_wi_put(((struct overlay_ctx *)arg)->wb, k, kl, v, vl);
}

static void ov_del(void *arg, const char *k, size_t kl)
{
	rocksdb_writebatch_wi_delete(((struct overlay_ctx *)arg)->wb, k, kl);
}

static int apply_batch(struct rs_journal *j, rocksdb_writebatch_wi_t *overlay,
		       const char *batch, size_t len)
{
	rocksdb_writebatch_t *b = rocksdb_writebatch_create_from(batch, len);
	char *err = NULL;

	if (overlay) {
		struct overlay_ctx c = { overlay };

		rocksdb_writebatch_iterate(b, &c, ov_put, ov_del);
	} else {
		rocksdb_write(j->db, j->wo, b, &err);
	}
	rocksdb_writebatch_destroy(b);
	if (err) {
		int ret = rs_err(j->st, rs_db_errno(err), "journal: RocksDB write: %s", err);

		rocksdb_free(err);
		return ret;
	}
	return 0;
}

/*
 * Put the trim point "T" = {last seq, head} behind every batch RocksDB was
 * given and sync its WAL: that one sync makes them and "T" durable, so
 * replay may start at "T" whatever RocksDB recovers of its later, unsynced
 * writes.  The ring before the head is free only then.
 */
static int sync_trim_point(struct rs_journal *j, char **err)
{
	struct rs_disk_jpos t = { htole64(j->seq), htole64(j->head) };

	rs_debug_sync_point(0);
	rocksdb_put(j->db, j->wo, "T", 1, (const char *)&t, sizeof(t), err);
	if (*err)
		return -EIO;
	rocksdb_flush_wal(j->db, 1, err);
	if (*err)
		return -EIO;
	rs_debug_sync_point(1);
	return 0;
}

/* Make what replay gave RocksDB durable there (the data it points to is
 * durable first: the last record's was only read back). */
static int db_flush(struct rs_journal *j)
{
	char *err = NULL;
	int ret = dev_flush(j->dev);

	if (ret < 0)
		return rs_err(j->st, ret, "journal: device flush after replay failed");
	sync_trim_point(j, &err);
	if (err) {
		ret = rs_err(j->st, rs_db_errno(err), "journal: RocksDB WAL sync: %s", err);
		rocksdb_free(err);
		return ret;
	}
	return 0;
}

/* The position record @key ("J" or "T"): 0, 1 if absent, or an error. */
static int read_jpos(struct rs_journal *j, const char *key, struct rs_disk_jpos *p)
{
	rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
	char *err = NULL, *v;
	size_t vl = 0;
	int ret = 0;

	v = rocksdb_get(j->db, ro, key, 1, &vl, &err);
	rocksdb_readoptions_destroy(ro);
	if (err) {
		ret = rs_err(j->st, rs_db_errno(err), "journal: reading %s: %s", key, err);
		rocksdb_free(err);
		return ret;
	}
	if (!v)
		return 1;
	if (vl != sizeof(*p)) {
		rocksdb_free(v);
		return rs_err(j->st, -EUCLEAN, "journal: the metadata's journal position "
			      "\"%s\" has the wrong size (%zu bytes)", key, vl);
	}
	memcpy(p, v, sizeof(*p));
	rocksdb_free(v);
	return 0;
}

/* Overwrite the first block of a dropped record, so that no later replay
 * takes it for the next record. */
static int erase_record(struct rs_journal *j, uint64_t vpos)
{
	void *buf = rs_alloc_aligned(RS_JREC_ALIGN);
	int ret;

	if (!buf)
		return -ENOMEM;
	memset(buf, 0, RS_JREC_ALIGN);
	ret = dev_write_journal(j->dev, buf, phys(j, vpos), RS_JREC_ALIGN);
	free(buf);
	if (!ret && dev_flush(j->dev) < 0)
		ret = -EIO;
	return ret;
}

static int replay(struct rs_journal *j, rocksdb_writebatch_wi_t *overlay)
{
	struct rs_journal_stat *s = &j->stat;
	struct rs_disk_jpos p, t;
	struct jrec prev = { 0 }, cur;
	uint64_t vpos, seq;
	int ret;

	ret = read_jpos(j, "J", &p);
	if (ret == 1)
		ret = rs_err(j->st, -EUCLEAN, "journal: the metadata has no journal position "
			     "(\"J\" missing)");
	if (ret)
		return ret;
	/* The trim point: durable in RocksDB by the sync that wrote it.  A
	 * store from before it had none: "J" stands in (the old rule). */
	ret = read_jpos(j, "T", &t);
	if (ret == 1)
		t = p;
	else if (ret)
		return ret;
	s->off = j->off;
	s->len = j->len;
	s->durable_seq = le64toh(p.seq);
	s->trim_seq = seq = le64toh(t.seq);
	s->trim_next = vpos = le64toh(t.next);
	if (s->durable_seq < seq)
		return rs_err(j->st, -EUCLEAN, "journal: RocksDB recovered journal position "
			      "%llu, behind its synced trim point %llu: the metadata lost "
			      "synced writes", (unsigned long long)s->durable_seq,
			      (unsigned long long)seq);
	s->durable_next = le64toh(p.next);
	/* Until a record is applied, the last one is the trim point's: a
	 * dropped first record must leave the next seq there + 1, never 1. */
	s->last_seq = seq;
	for (;;) {
		ret = find_record(j, vpos, seq + 1, &cur);
		if (ret < 0)
			goto out;
		if (ret == 1)
			break;
		/* @prev is not the last: it was durable before @cur was written. */
		if (prev.buf) {
			ret = apply_batch(j, overlay, batch_of(&prev), prev.batch_len);
			if (ret)
				goto out;
			rs_crash_check(j->st, RS_CRASH_JOURNAL_REPLAY);
			s->last_seq = prev.seq;
			jrec_free(&prev);
		}
		/* Records up to "J" are applied again (RocksDB may hold them,
		 * or only some of them: batches of puts and deletes applied
		 * in order give the same state either way). */
		if (cur.seq > s->durable_seq) {
			s->records++;
			s->bytes += cur.len;
		} else {
			s->reapplied++;
		}
		seq = cur.seq;
		vpos = cur.vpos + cur.len;
		prev = cur;
	}
	ret = 0;
	s->head = vpos;
	if (seq < s->durable_seq) {
		ret = rs_err(j->st, -EUCLEAN, "journal: replay from the trim point (record %llu) "
			     "ends at record %llu, before RocksDB's position %llu",
			     (unsigned long long)s->trim_seq, (unsigned long long)seq,
			     (unsigned long long)s->durable_seq);
		goto out;
	}
	if (!prev.buf)
		goto out;
	/* RocksDB holds up to "J": that record was durable, nothing to check. */
	ret = prev.seq <= s->durable_seq ? 1 : data_landed(j, &prev);
	if (ret < 0)
		goto out;
	if (ret) {
		ret = apply_batch(j, overlay, batch_of(&prev), prev.batch_len);
		s->last_seq = prev.seq;
	} else {
		/* Written beside data that did not land: never acknowledged. */
		s->dropped = 1;
		s->dropped_seq = prev.seq;
		s->records--;
		s->bytes -= prev.len;
		s->head = prev.vpos;
		rs_log(j->st, RAWSTORE_LOG_WARNING, "journal: record %llu points to data that "
		       "did not reach the device; dropped (it was never acknowledged)",
		       (unsigned long long)prev.seq);
		if (!overlay)
			ret = erase_record(j, prev.vpos);
	}
out:
	jrec_free(&prev);
	return ret;
}

int journal_open(struct rawstore *st, rocksdb_t *db, rocksdb_writebatch_wi_t *overlay,
		 struct rs_journal **out)
{
	struct rs_journal *j = calloc(1, sizeof(*j));
	int ret;

	if (!j)
		return -ENOMEM;
	j->st = st;
	j->dev = st->dev;
	j->db = db;
	memcpy(j->uuid, st->sb.uuid, 16);
	j->off = le64toh(st->sb.journal_off);
	j->len = le64toh(st->sb.journal_len);
	j->wo = rocksdb_writeoptions_create();	/* WAL, not synced */
	pthread_mutex_init(&j->lock, NULL);
	ret = replay(j, overlay);
	j->seq = j->stat.last_seq;
	j->head = j->stat.head;
	/* Durable in RocksDB, with the trim point at the head, before the
	 * ring is written again. */
	if (!ret && !overlay && (j->stat.records || j->stat.dropped || j->stat.reapplied ||
				 j->stat.trim_next != j->stat.head))
		ret = db_flush(j);
	if (ret) {
		journal_close(j, false);
		return ret;
	}
	if (j->stat.records || j->stat.dropped)
		rs_log(st, RAWSTORE_LOG_INFO, "journal: replayed %llu records (seq %llu to %llu)%s",
		       (unsigned long long)j->stat.records,
		       (unsigned long long)j->stat.durable_seq + 1,
		       (unsigned long long)j->stat.last_seq,
		       j->stat.dropped ? ", dropped the last" : "");
	j->tail = j->head;
	*out = j;
	return 0;
}

void journal_stat(struct rs_journal *j, struct rs_journal_stat *s)
{
	pthread_mutex_lock(&j->lock);
	*s = j->stat;
	s->last_seq = j->seq;
	s->head = j->head;
	pthread_mutex_unlock(&j->lock);
}

/* ---- writing ---- */

static int fail_locked(struct rs_journal *j, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail_locked(struct rs_journal *j, int err, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!j->err) {
		j->err = err;
		n = snprintf(j->msg, sizeof(j->msg), "journal: ");
		va_start(ap, fmt);
		vsnprintf(j->msg + n, sizeof(j->msg) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return rs_err(j->st, err, "%s", j->msg);
}

/* A device flush for the journal; counted with the store's flushes. */
static int journal_flush(struct rs_journal *j)
{
	int ret = dev_flush(j->dev);

	if (ret == 1) {
		PERF_ADD(j->st, dev_flushes_skipped, 1);
		return 0;
	}
	PERF_ADD(j->st, dev_flushes, 1);
	PERF_ADD(j->st, journal_flushes, 1);
	return ret;
}

/* Everything RocksDB was given is durable in it: the ring is free. */
static int trim_locked(struct rs_journal *j)
{
	char *err = NULL;

	sync_trim_point(j, &err);
	PERF_ADD(j->st, journal_trims, 1);
	if (err) {
		char m[200];

		snprintf(m, sizeof(m), "%.150s", err);
		rocksdb_free(err);
		return fail_locked(j, -EIO, "RocksDB WAL sync for a trim: %s", m);
	}
	j->tail = j->head;
	return 0;
}

/* The batch bytes end with the "J" put: its value is the last 16 bytes. */
static bool ends_with_jpos(const char *b, size_t len)
{
	static const char tail[] = { 0x1 /* kTypeValue */, 1, 'J', 16 };

	return len >= 12 + sizeof(tail) + 16 &&
	       !memcmp(b + len - 16 - sizeof(tail), tail, sizeof(tail));
}

/* Test hook: the data beside the record is lost, the process dies. */
static void crash_nodata(struct rs_journal *j, const struct rs_jdata_vec *d)
{
	size_t i;

	if (rs_crash_point != RS_CRASH_JOURNAL_NODATA)
		return;
	for (i = 0; rs_crash_countdown == 1 && i < d->n; i++) {
		void *g = rs_alloc_aligned(d->v[i].len);

		if (!g)
			continue;
		memset(g, 0xa5, d->v[i].len);
		dev_write(j->dev, g, d->v[i].off, d->v[i].len);
		free(g);
	}
	rs_crash_check(j->st, RS_CRASH_JOURNAL_NODATA);
}

/* Lay out the record of @bd (@blen bytes, ending with "J") at @pos, with
 * @nesc escaped blocks (find_escapes()). */
/* A buffer for a record of @rlen bytes: the kept one if it is large
 * enough, else a new one (kept if small).  Release with record_put(). */
static uint8_t *record_get(struct rs_journal *j, uint64_t rlen)
{
	uint8_t *buf;

	if (j->rbuf && rlen <= j->rbuf_len)
		return j->rbuf;
	buf = rs_alloc_aligned(rlen);
	if (buf && rlen <= JREC_KEEP) {
		free(j->rbuf);
		j->rbuf = buf;
		j->rbuf_len = rlen;
	}
	return buf;
}

static void record_put(struct rs_journal *j, uint8_t *buf)
{
	if (buf != j->rbuf)
		free(buf);
}

static uint8_t *build_record(struct rs_journal *j, const char *bd, size_t blen,
			     const struct rs_jdata_vec *d, uint64_t pos, uint64_t rlen,
			     uint32_t nesc, size_t *body_out)
{
	size_t nd = d ? d->n : 0, body0 = sizeof(struct rs_disk_jrec) +
					  nd * sizeof(struct rs_disk_jdata) + blen, i;
	size_t body = body0 + 4 * (size_t)nesc;
	uint8_t *buf = record_get(j, rlen);
	struct rs_disk_jpos jp;
	struct rs_disk_jrec *h;
	struct rs_disk_jdata *dd;
	char *bcopy;

	if (!buf)
		return NULL;
	/* Everything between the header and the end of the body is
	 * written below; the header's unset fields and the padding after
	 * the body are zeros. */
	memset(buf, 0, sizeof(*h));
	memset(buf + body, 0, rlen - body);
	h = (struct rs_disk_jrec *)buf;
	h->magic = htole64(RS_JREC_MAGIC);
	memcpy(h->uuid, j->uuid, 16);
	h->seq = htole64(j->seq + 1);
	h->vpos = htole64(pos);
	h->len = htole32((uint32_t)rlen);
	h->batch_len = htole32((uint32_t)blen);
	h->n_data = htole32((uint32_t)nd);
	if (nesc) {
		h->flags = htole32(RS_JREC_F_ESCAPED);
		h->n_escaped = htole32(nesc);
	}
	dd = (struct rs_disk_jdata *)(h + 1);
	for (i = 0; i < nd; i++)
		dd[i] = (struct rs_disk_jdata){ htole64(d->v[i].off), htole32(d->v[i].len),
						htole32(d->v[i].crc) };
	bcopy = (char *)(dd + nd);
	memcpy(bcopy, bd, blen);
	jp.seq = htole64(j->seq + 1);
	jp.next = htole64(pos + rlen);
	memcpy(bcopy + blen - sizeof(jp), &jp, sizeof(jp));
	if (nesc) {
		uint32_t *idx = malloc(nesc * sizeof(*idx)), k;

		if (!idx) {
			record_put(j, buf);
			return NULL;
		}
		/* "J" is no magic, so the blocks are those counted before */
		find_escapes(d, bd, body0, idx);
		for (i = 0; i < nesc; i++) {
			memset(buf + (uint64_t)idx[i] * RS_JREC_ALIGN, 0, 8);
			k = htole32(idx[i]);
			memcpy(buf + body0 + 4 * i, &k, 4);	/* unaligned */
		}
		free(idx);
	}
	h->crc = htole32(rs_crc32c(buf, body));
	*body_out = body;
	return buf;
}

int journal_append(struct rs_journal *j, rocksdb_writebatch_wi_t *wb,
		   const struct rs_jdata_vec *d)
{
	static const struct rs_disk_jpos zero;
	rocksdb_writebatch_t *b;
	size_t blen, body;
	uint64_t rlen, pos, body0;
	uint32_t nesc;
	const char *bd;
	uint8_t *buf;
	char *err = NULL;
	int ret;

	pthread_mutex_lock(&j->lock);
	if (j->err) {
		ret = rs_err(j->st, j->err, "%s", j->msg);
		goto out_unlock;
	}
	rocksdb_writebatch_wi_put(wb, "J", 1, (const char *)&zero, sizeof(zero));
	bd = rocksdb_writebatch_wi_data(wb, &blen);
	body0 = sizeof(struct rs_disk_jrec) + (d ? d->n : 0) * sizeof(struct rs_disk_jdata) +
		blen;
	nesc = find_escapes(d, bd, body0, NULL);
	if (nesc)
		PERF_ADD(j->st, journal_escapes, nesc);
	rlen = round_up(body0 + 4 * (uint64_t)nesc, RS_JREC_ALIGN);
	if (!ends_with_jpos(bd, blen) || blen > UINT32_MAX) {
		ret = rs_err(j->st, -EINVAL, "journal: unexpected batch layout");
		goto out_unlock;
	}
	if (rlen > j->len / 2) {
		ret = rs_err(j->st, -E2BIG, "journal: a record of %llu bytes is more than half "
			     "the %llu-byte journal (mkfs --journal-size)",
			     (unsigned long long)rlen, (unsigned long long)j->len);
		goto out_unlock;
	}
	pos = place(j, j->head, rlen);
	/* Half full: trim (one RocksDB WAL sync), so the ring never runs out. */
	if (pos + rlen - j->tail > j->len / 2) {
		ret = trim_locked(j);
		if (ret)
			goto out_unlock;
	}
	buf = build_record(j, bd, blen, d, pos, rlen, nesc, &body);
	if (!buf) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	if (rs_crash_point == RS_CRASH_JOURNAL_TORN && rs_crash_countdown == 1)
		buf[body - 1] ^= 0xff;	/* test hook: a torn record */
	ret = dev_write_journal(j->dev, buf, phys(j, pos), rlen);
	if (!ret) {
		rs_crash_check(j->st, RS_CRASH_JOURNAL_TORN);
		if (d && d->n)
			crash_nodata(j, d);
		ret = journal_flush(j);
		if (ret) {
			/* The record may be on the device or not: take it
			 * back if the device lets us, and stop. */
			erase_record(j, pos);
			record_put(j, buf);
			ret = fail_locked(j, ret, "device flush after record %llu failed (%s); "
					  "record erased if the device allowed",
					  (unsigned long long)j->seq + 1, strerror(-ret));
			goto out_unlock;
		}
	}
	if (ret) {
		erase_record(j, pos);	/* it may have landed: take it back */
		record_put(j, buf);
		ret = fail_locked(j, ret, "record %llu write failed (%s)", (unsigned long long)j->seq + 1,
				  strerror(-ret));
		goto out_unlock;
	}
	PERF_ADD(j->st, journal_records, 1);
	PERF_ADD(j->st, journal_bytes, rlen);
	j->seq++;
	j->head = pos + rlen;
	rs_crash_check(j->st, RS_CRASH_JOURNAL_WRITTEN);
	/* Durable: now RocksDB gets exactly what replay would apply. */
	unescape(buf, body0, nesc);
	b = rocksdb_writebatch_create_from((const char *)buf + body0 - blen, blen);
	rocksdb_write(j->db, j->wo, b, &err);
	rocksdb_writebatch_destroy(b);
	record_put(j, buf);
	if (err) {
		char m[200];

		snprintf(m, sizeof(m), "%.150s", err);
		rocksdb_free(err);
		ret = fail_locked(j, rs_db_errno(m), "record %llu is durable, but RocksDB "
				  "refused it (%s); replayed at the next open",
				  (unsigned long long)j->seq, m);
	}
out_unlock:
	pthread_mutex_unlock(&j->lock);
	return ret;
}

int journal_sync(struct rs_journal *j, char *msg, size_t msglen)
{
	int ret;

	pthread_mutex_lock(&j->lock);
	ret = j->err;
	if (ret)
		snprintf(msg, msglen, "%s", j->msg);
	pthread_mutex_unlock(&j->lock);
	return ret;
}

void journal_close(struct rs_journal *j, bool clean)
{
	if (!j)
		return;
	/* The next open finds nothing to replay. */
	if (clean && !j->err && j->head != j->tail) {
		pthread_mutex_lock(&j->lock);
		trim_locked(j);
		pthread_mutex_unlock(&j->lock);
	}
	rocksdb_writeoptions_destroy(j->wo);
	pthread_mutex_destroy(&j->lock);
	free(j->rbuf);
	free(j);
}
