// SPDX-License-Identifier: MIT
/* deferred.c: queue, apply and replay small overwrites through the journal. */
#include <errno.h>
#include <stdlib.h>

#include "debug.h"
#include "decode.h"
#include "deferred.h"
#include "internal.h"
#include "util.h"

/* Append a copy of @data to the in-memory queue; the caller sets the key. */
static struct rs_deferred *defq_push(struct rawstore *st, uint64_t pofs, const void *data,
				     uint64_t len, uint64_t seq)
{
	struct rs_deferred *d;

	if (st->defq.n == st->defq.cap) {
		size_t cap = st->defq.cap ? st->defq.cap * 2 : 16;
		struct rs_deferred *nv = realloc(st->defq.q, cap * sizeof(*nv));

		if (!nv)
			return NULL;
		st->defq.q = nv;
		st->defq.cap = cap;
	}
	d = &st->defq.q[st->defq.n];
	d->data = rs_alloc_aligned(len);
	if (!d->data)
		return NULL;
	memcpy(d->data, data, len);
	d->pofs = pofs;
	d->len = len;
	d->seq = seq;
	st->defq.n++;
	return d;
}

int deferred_queue(struct rawstore *st, uint64_t pofs, const uint8_t *data, uint64_t len)
{
	struct rs_disk_deferred h = { htole64(pofs), htole32((uint32_t)len), 0 };
	struct rs_key k;
	char *v;

	v = malloc(sizeof(h) + len);
	if (!v || !defq_push(st, pofs, data, len, st->defq.seq)) {
		free(v);
		return -ENOMEM;
	}
	memcpy(v, &h, sizeof(h));
	memcpy(v + sizeof(h), data, len);
	key_ext(&k, 'D', st->defq.seq++);
	rocksdb_writebatch_wi_put(st->wb, k.buf, k.len, v, sizeof(h) + len);
	free(v);
	return 0;
}

/* Drop this group's deferred writes from index @from on (not committed). */
void deferred_truncate(struct rawstore *st, size_t from)
{
	size_t i;

	for (i = from; i < st->defq.n; i++)
		free(st->defq.q[i].data);
	st->defq.n = from;
}

int deferred_write(struct rawstore *st)
{
	struct rs_io *ios;
	size_t i, n;
	int ret = 0;

	if (!st->defq.n)
		return 0;
	if (st->defq.fly_n)
		return -EBUSY;
	ios = calloc(st->defq.n, sizeof(*ios));
	if (!ios)
		return -ENOMEM;
	/*
	 * Writes in one batch complete in any order, so a later write to the
	 * same units goes into a later batch: the last one must win.  All
	 * but the last batch are written before this returns.
	 */
	for (i = 0, n = 0; i < st->defq.n && !ret; i++) {
		const struct rs_deferred *d = &st->defq.q[i];
		size_t j;

		for (j = 0; j < n; j++)
			if (d->pofs < ios[j].off + ios[j].len && ios[j].off < d->pofs + d->len)
				break;
		if (j < n) {
			ret = dev_submit(st->dev, ios, (unsigned int)n);
			n = 0;
		}
		ios[n++] = (struct rs_io){ true, d->data, d->pofs, d->len, false };
	}
	if (!ret && n)
		ret = dev_aq_submit(st->dev, ios, (unsigned int)n);
	if (ret) {
		free(ios);
		return rs_err(st, ret, "applying deferred writes failed (replayed at next open)");
	}
	st->defq.fly_ios = ios;
	return 0;
}

void deferred_started(struct rawstore *st)
{
	struct rs_deferred *q = st->defq.fly;
	size_t cap = st->defq.fly_cap;

	/* the writes in flight are none: swap the arrays */
	st->defq.fly = st->defq.q;
	st->defq.fly_cap = st->defq.cap;
	st->defq.fly_n = st->defq.n;
	st->defq.q = q;
	st->defq.cap = cap;
	st->defq.n = 0;
	PERF_ADD(st, deferred_writes, st->defq.fly_n);
}

int deferred_wait(struct rawstore *st)
{
	int ret;

	if (!st->defq.fly_n)
		return 0;
	ret = dev_aq_wait(st->dev);
	if (ret)
		rs_err(st, ret, "applying deferred writes failed (replayed at next open)");
	return ret;
}

int deferred_landed(struct rawstore *st, bool ok)
{
	struct rs_defq *q = &st->defq;
	size_t i;
	int ret = 0;

	if (!q->fly_n)
		return 0;
	if (ok && q->done_n + q->fly_n > q->done_cap) {
		size_t cap = (q->done_n + q->fly_n) * 2;
		struct rs_deferred_done *nv = realloc(q->done, cap * sizeof(*nv));

		if (nv) {
			q->done = nv;
			q->done_cap = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	for (i = 0; i < q->fly_n; i++) {
		if (ok && !ret)
			q->done[q->done_n++] = (struct rs_deferred_done){
				q->fly[i].seq, q->fly[i].pofs, q->fly[i].len };
		free(q->fly[i].data);
	}
	q->fly_n = 0;
	free(q->fly_ios);
	q->fly_ios = NULL;
	return ret;
}

/* Delete the records of applied deferred writes (after a device flush). */
void deferred_done_delete(struct rawstore *st, size_t from, size_t to)
{
	struct rs_key k;
	size_t i;

	for (i = from; i < to; i++) {
		key_ext(&k, 'D', st->defq.done[i].seq);
		rocksdb_writebatch_wi_delete(st->wb, k.buf, k.len);
	}
}

void deferred_done_forget(struct rawstore *st, size_t n)
{
	if (!n)
		return;
	memmove(st->defq.done, st->defq.done + n,
		(st->defq.done_n - n) * sizeof(*st->defq.done));
	st->defq.done_n -= n;
}

/*
 * Call @fn for every deferred record of a previous run, in sequence order,
 * each decoded and validated; stops at the first error (the decoder's
 * message names a bad record).
 */
static int deferred_walk(struct rawstore *st,
			 int (*fn)(struct rawstore *st, const struct rs_deferred_rec *r,
				   const char *key, size_t klen, void *arg),
			 void *arg)
{
	struct rs_iter *it;
	char p = 'D';
	int ret;

	ret = meta_iter_new(st->meta, NULL, &p, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it); meta_iter_next(it)) {
		size_t kl, vl;
		const char *k = meta_iter_key(it, &kl), *v = meta_iter_val(it, &vl);
		struct rs_deferred_rec r;

		ret = decode_deferred_rec(k, kl, v, vl, &st->lim, &r);
		if (!ret)
			ret = fn(st, &r, k - 1, kl + 1, arg);
		if (ret)
			break;
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}

struct replay_ctx {
	rocksdb_writebatch_wi_t *wb;
	uint64_t n;
};

static int replay_one(struct rawstore *st, const struct rs_deferred_rec *r, const char *key,
		      size_t klen, void *arg)
{
	struct replay_ctx *c = arg;
	void *buf;
	int ret;

	buf = rs_alloc_aligned(r->len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, r->data, r->len);
	ret = dev_write(st->dev, buf, r->pofs, r->len);
	free(buf);
	if (ret) {
		rs_err(st, ret, "replaying a deferred write failed");
		return ret;
	}
	rs_crash_check(st, RS_CRASH_REPLAY_MID);	/* test hook (debug.h) */
	st->defq.seq = max_u64(st->defq.seq, r->seq + 1);
	rocksdb_writebatch_wi_delete(c->wb, key, klen);
	c->n++;
	return 0;
}

/* At open: apply the deferred records of a previous run, flush, delete. */
int deferred_replay(struct rawstore *st)
{
	struct replay_ctx c = { rocksdb_writebatch_wi_create(0, 1), 0 };
	int ret;

	ret = deferred_walk(st, replay_one, &c);
	if (!ret && c.n) {
		ret = dev_flush(st->dev) < 0 ? -EIO : 0;
		rs_crash_check(st, RS_CRASH_REPLAY_FLUSHED);	/* test hook (debug.h) */
		if (!ret)
			ret = meta_commit(st->meta, c.wb);
		if (!ret)
			rs_log(st, RAWSTORE_LOG_INFO, "replayed %llu deferred writes",
			       (unsigned long long)c.n);
	}
	PERF_ADD(st, deferred_replayed, c.n);
	rocksdb_writebatch_wi_destroy(c.wb);
	return ret;
}

static int overlay_one(struct rawstore *st, const struct rs_deferred_rec *r, const char *key,
		       size_t klen, void *arg)
{
	(void)key;
	(void)klen;
	(void)arg;
	return defq_push(st, r->pofs, r->data, r->len, r->seq) ? 0 : -ENOMEM;
}

/*
 * Read-only open: the records of a previous run cannot be replayed, so keep
 * them in the queue, in sequence order, where deferred_overlay() lays them
 * over every read (nothing else uses the queue of a read-only store).
 */
int deferred_load_overlay(struct rawstore *st)
{
	int ret = deferred_walk(st, overlay_one, NULL);

	if (!ret && st->defq.n)
		rs_log(st, RAWSTORE_LOG_WARNING, "read-only: %zu deferred writes of a previous "
		       "run are not replayed; reads lay them over the device data",
		       st->defq.n);
	return ret;
}

static void overlay_some(const struct rs_deferred *q, size_t n, uint8_t *buf, uint64_t pofs,
			 uint64_t len)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct rs_deferred *d = &q[i];
		uint64_t s = max_u64(d->pofs, pofs), t = min_u64(d->pofs + d->len, pofs + len);

		if (s < t)
			memcpy(buf + (s - pofs), d->data + (s - d->pofs), t - s);
	}
}

void deferred_overlay(const struct rawstore *st, uint8_t *buf, uint64_t pofs, uint64_t len,
		      bool queue)
{
	overlay_some(st->defq.fly, st->defq.fly_n, buf, pofs, len);
	if (queue)
		overlay_some(st->defq.q, st->defq.n, buf, pofs, len);
}

bool deferred_applied_busy(const struct rawstore *st, uint64_t pofs, uint64_t len)
{
	size_t i;

	for (i = 0; i < st->defq.done_n; i++)
		if (st->defq.done[i].pofs < pofs + len &&
		    pofs < st->defq.done[i].pofs + st->defq.done[i].len)
			return true;
	for (i = 0; i < st->defq.fly_n; i++)
		if (st->defq.fly[i].pofs < pofs + len &&
		    pofs < st->defq.fly[i].pofs + st->defq.fly[i].len)
			return true;
	return false;
}

bool deferred_queued_busy(const struct rawstore *st, uint64_t pofs, uint64_t len)
{
	size_t i;

	for (i = 0; i < st->defq.n; i++)
		if (st->defq.q[i].pofs < pofs + len && pofs < st->defq.q[i].pofs + st->defq.q[i].len)
			return true;
	return false;
}

bool deferred_busy(const struct rawstore *st, uint64_t pofs, uint64_t len)
{
	return deferred_queued_busy(st, pofs, len) || deferred_applied_busy(st, pofs, len);
}

int deferred_retire(struct rawstore *st)
{
	size_t n = st->defq.done_n;
	int ret;

	if (!n)
		return 0;
	ret = dev_flush(st->dev);
	if (ret < 0) {
		/* The applied writes may be lost: their records must stay,
		 * so nothing may commit (and delete them) after this. */
		rs_err(st, ret, "device flush before deleting deferred records failed; "
		       "store stopped");
		rs_store_stop(st, ret);
		return ret;
	}
	rocksdb_writebatch_wi_clear(st->wb);
	deferred_done_delete(st, 0, n);
	ret = meta_commit(st->meta, st->wb);
	rocksdb_writebatch_wi_clear(st->wb);
	if (ret) {
		rs_err(st, ret, "metadata commit deleting deferred records failed; store stopped");
		rs_store_stop(st, ret);
		return ret;
	}
	deferred_done_forget(st, n);
	return 0;
}

void deferred_close(struct rawstore *st, bool healthy)
{
	if (healthy && st->defq.done_n) {
		rocksdb_writebatch_wi_clear(st->wb);
		if (dev_flush(st->dev) >= 0) {
			deferred_done_delete(st, 0, st->defq.done_n);
			meta_commit(st->meta, st->wb);
		}
	}
	free(st->defq.done);
	deferred_truncate(st, 0);
	free(st->defq.q);
	free(st->defq.fly);	/* empty: commit_stop() waited for its writes */
}
