// SPDX-License-Identifier: MIT
/* object.c: object reads, attributes, omap and listings. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "commit.h"
#include "deferred.h"
#include "internal.h"
#include "util.h"

static int onode_load_key(struct rawstore *st, rocksdb_writebatch_wi_t *wb,
			  const struct rs_key *k, const char *coll, const void *name, size_t nlen,
			  struct rs_onode *o)
{
	char *v;
	size_t vl;
	int ret;

	ret = meta_get(st->meta, wb, k, &v, &vl);
	if (ret)
		return ret;
	ret = onode_decode(v, vl, &st->lim, o);
	rocksdb_free(v);
	if (ret == -EUCLEAN) {
		char why[256];

		snprintf(why, sizeof(why), "%s", rawstore_errmsg());
		rs_err(st, ret, "onode record of %s/%.*s is corrupt (%s)", coll,
		       (int)(nlen > 64 ? 64 : nlen), (const char *)name, why);
	}
	return ret;
}

int onode_load(struct rawstore *st, rocksdb_writebatch_wi_t *wb, const char *coll,
	       const void *name, size_t nlen, struct rs_onode *o)
{
	struct rs_key k;

	key_onode(&k, coll, name, nlen);
	return onode_load_key(st, wb, &k, coll, name, nlen, o);
}

/*
 * The committed onode of coll/name from the cache, loaded into it on a
 * miss; st->rwlock held for reading (ocache.h).  Release with ocache_put.
 */
static int onode_get_cached(struct rawstore *st, const char *coll, const void *name,
			    size_t nlen, struct rs_ocache_ent **out)
{
	struct rs_ocache_ent *e;
	struct rs_onode o;
	struct rs_key k;
	int ret;

	key_onode(&k, coll, name, nlen);
	e = ocache_get(st->ocache, &k);
	if (!e) {
		ret = onode_load_key(st, NULL, &k, coll, name, nlen, &o);
		if (ret)
			return ret;
		e = ocache_add(st->ocache, &k, &o);
		if (!e)
			return -ENOMEM;
	}
	*out = e;
	return 0;
}

/*
 * One bounce buffer per reading thread for reads of up to TBUF_MAX bytes,
 * kept between reads (freed when the thread exits): the common small read
 * allocates nothing.
 */
#define TBUF_MAX (64U << 10)
#define SEGS_ON_STACK 4

static pthread_key_t tbuf_key;
static pthread_once_t tbuf_once = PTHREAD_ONCE_INIT;
static bool tbuf_ok;

static void tbuf_init(void)
{
	tbuf_ok = !pthread_key_create(&tbuf_key, free);
}

/* This thread's bounce buffer (TBUF_MAX bytes, aligned), or NULL. */
static uint8_t *tbuf_get(void)
{
	uint8_t *p;

	pthread_once(&tbuf_once, tbuf_init);
	if (!tbuf_ok)
		return NULL;
	p = pthread_getspecific(tbuf_key);
	if (!p) {
		p = rs_alloc_aligned(TBUF_MAX);
		if (p && pthread_setspecific(tbuf_key, p)) {
			free(p);
			p = NULL;
		}
	}
	return p;
}

struct seg {
	uint8_t *bounce;
	uint64_t copy_from;		/* bytes into bounce */
	uint64_t copy_to;		/* bytes into the caller's buffer */
	uint64_t copy_len;
	uint64_t pofs, len;		/* the device read */
	const uint32_t *crcs;		/* first crc of the read */
	bool direct;			/* @bounce is the caller's buffer */
};

/* Device reads land in the caller's buffer where it is aligned for them. */
#define READ_ALIGN 4096U

int obj_read(struct rawstore *st, const struct rs_onode *o, uint64_t off, void *out,
	     size_t len, bool overlay)
{
	uint8_t *buf = out;
	uint64_t end = off + len, cb = st->csum_block, covered = 0;
	struct seg seg_st[SEGS_ON_STACK], *segs = seg_st;
	struct rs_io io_st[SEGS_ON_STACK], *ios = io_st;
	uint8_t *tbuf = NULL;
	uint32_t i, first, n = 0;
	int ret = 0;

	first = onode_find(o, off);
	for (i = first; i < o->n_ext && o->ext[i].lofs < end; i++)
		n++;
	if (!n) {
		memset(buf, 0, len);
		if (o->inline_len && off < o->inline_len)
			memcpy(buf, o->inl + off, min_u64(len, o->inline_len - off));
		return 0;
	}
	if (n > SEGS_ON_STACK) {
		segs = calloc(n, sizeof(*segs));
		ios = calloc(n, sizeof(*ios));
		if (!segs || !ios) {
			ret = -ENOMEM;
			goto out_free;
		}
	} else {
		memset(segs, 0, n * sizeof(*segs));
	}
	for (i = 0; i < n; i++) {
		const struct rs_extent *e = &o->ext[first + i];
		uint64_t s = max_u64(e->lofs, off), t = min_u64(e->lofs + e->len, end);
		uint64_t cs = round_down(s - e->lofs, cb), ct = round_up(t - e->lofs, cb);

		segs[i].copy_from = s - e->lofs - cs;
		segs[i].copy_to = s - off;
		segs[i].copy_len = t - s;
		segs[i].pofs = e->pofs + cs;
		segs[i].len = ct - cs;
		segs[i].crcs = e->crcs + cs / cb;
		covered += t - s;
		/* Whole checksum blocks into an aligned part of the caller's
		 * buffer: read there, no copy (zeroed again on a bad check). */
		if (!segs[i].copy_from && segs[i].copy_len == segs[i].len &&
		    !((uintptr_t)(buf + segs[i].copy_to) % READ_ALIGN)) {
			segs[i].bounce = buf + segs[i].copy_to;
			segs[i].direct = true;
			PERF_ADD(st, read_direct_bytes, segs[i].len);
		} else {
			if (n == 1 && ct - cs <= TBUF_MAX)
				tbuf = tbuf_get();
			segs[i].bounce = tbuf ? tbuf : rs_alloc_aligned(ct - cs);
			if (!segs[i].bounce) {
				ret = -ENOMEM;
				goto out_free;
			}
		}
		ios[i] = (struct rs_io){ false, segs[i].bounce, segs[i].pofs, segs[i].len, false };
		/* A read on the commit thread may need data still being written. */
		if (overlay) {
			ret = dev_wq_wait_range(st->dev, segs[i].pofs, segs[i].len);
			if (ret)
				goto out_free;
		}
	}
	/* Holes and inline bytes first: the device reads land on top. */
	if (covered < len || o->inline_len) {
		memset(buf, 0, len);
		if (o->inline_len && off < o->inline_len)
			memcpy(buf, o->inl + off, min_u64(len, o->inline_len - off));
	}
	ret = dev_submit(st->dev, ios, n);
	if (ret) {
		rs_err(st, ret, "data read of object nid %llu failed", (unsigned long long)o->nid);
		goto out_free;
	}
	for (i = 0; i < n; i++) {
		uint64_t b;

		/* In-place writes in flight, and the queue: a committed group's
		 * (defq_visible), the commit thread's own group (overlay), or
		 * a read-only store's unreplayed records. */
		deferred_overlay(st, segs[i].bounce, segs[i].pofs, segs[i].len,
				 overlay || st->opts.read_only || st->defq_visible);
		for (b = 0; b < segs[i].len; b += cb) {
			if (rs_crc32c(segs[i].bounce + b, cb) == segs[i].crcs[b / cb])
				continue;
			PERF_ADD(st, csum_errors, 1);
			ret = rs_err(st, -EIO, "checksum mismatch in object nid %llu at device "
				     "offset %llu", (unsigned long long)o->nid,
				     (unsigned long long)(segs[i].pofs + b));
			goto out_free;
		}
		if (!segs[i].direct)
			memcpy(buf + segs[i].copy_to, segs[i].bounce + segs[i].copy_from,
			       segs[i].copy_len);
	}
out_free:
	if (ret)
		memset(buf, 0, len);
	for (i = 0; segs && i < n; i++)
		if (segs[i].bounce != tbuf && !segs[i].direct)
			free(segs[i].bounce);
	if (segs != seg_st)
		free(segs);
	if (ios != io_st)
		free(ios);
	return ret;
}

static int check_args(struct rawstore *st, const char *coll, const void *name, size_t nlen)
{
	if (!st || !coll || !*coll || strlen(coll) > RAWSTORE_COLL_NAME_MAX || !name || !nlen ||
	    nlen > RAWSTORE_NAME_MAX)
		return -EINVAL;
	return 0;
}

int rawstore_stat(struct rawstore *st, const char *coll, const void *name, size_t nlen,
		  struct rawstore_stat *out)
{
	struct rawstore_stat s;
	struct rs_onode o;
	int ret = check_args(st, coll, name, nlen);

	if (ret)
		return ret;
	if (!out || out->struct_size < sizeof(size_t) || out->struct_size > sizeof(s))
		return -EINVAL;
	ret = onode_load(st, NULL, coll, name, nlen, &o);
	if (ret)
		return ret;
	memset(&s, 0, sizeof(s));
	s.struct_size = out->struct_size;
	s.size = o.size;
	s.allocated = onode_allocated(&o);
	s.extents = o.n_ext;
	s.alloc_hint = o.alloc_hint;
	s.nid = o.nid;
	s.is_inline = o.n_ext == 0 && o.size <= st->inline_max;
	memcpy(out, &s, s.struct_size);
	onode_free(&o);
	return 0;
}

struct extent_walk {
	const char *coll;
	const void *name;
	size_t nlen;
	int verify;
	struct rawstore_extent *v;
	uint32_t n;
};

/* Checksum blocks of @e whose data on the device does not match. */
static int64_t extent_bad_blocks(struct rawstore *st, const struct rs_extent *e)
{
	uint64_t cb = st->csum_block, chunk = min_u64(e->len, 8U << 20), done, pos;
	uint8_t *buf = rs_alloc_aligned(chunk);
	int64_t bad = 0;

	if (!buf)
		return -ENOMEM;
	for (done = 0; done < e->len; done += chunk) {
		uint64_t len = min_u64(chunk, e->len - done);

		if (dev_read(st->dev, buf, e->pofs + done, len)) {
			bad += (int64_t)(len / cb);
			continue;
		}
		/* pending deferred overwrites, as a read sees them */
		deferred_overlay(st, buf, e->pofs + done, len, true);
		for (pos = 0; pos < len; pos += cb)
			if (rs_crc32c(buf + pos, cb) != e->crcs[(done + pos) / cb])
				bad++;
	}
	free(buf);
	return bad;
}

/* On the commit thread (rs_run_job), as fsck: no write moves under it. */
static int extent_walk_job(struct rawstore *st, void *arg)
{
	struct extent_walk *w = arg;
	struct rs_onode o;
	uint32_t i;
	int64_t bad;
	int ret;

	ret = onode_load(st, NULL, w->coll, w->name, w->nlen, &o);
	if (ret)
		return ret;
	w->v = calloc(o.n_ext ? o.n_ext : 1, sizeof(*w->v));
	if (!w->v) {
		ret = -ENOMEM;
		goto out_free_onode;
	}
	for (i = 0; i < o.n_ext; i++) {
		const struct rs_extent *e = &o.ext[i];

		bad = w->verify ? extent_bad_blocks(st, e) : -1;
		if (bad < -1) {
			ret = (int)bad;
			goto out_free_onode;
		}
		w->v[i] = (struct rawstore_extent){ sizeof(w->v[i]), e->lofs, e->pofs, e->len,
						    e->len / st->csum_block, bad };
	}
	w->n = o.n_ext;
out_free_onode:
	onode_free(&o);
	return ret;
}

int rawstore_extent_iterate(struct rawstore *st, const char *coll, const void *name,
			    size_t nlen, int verify, rawstore_extent_fn fn, void *arg)
{
	struct extent_walk w = { coll, name, nlen, verify, NULL, 0 };
	uint32_t i;
	int ret = check_args(st, coll, name, nlen);

	if (ret)
		return ret;
	if (!fn)
		return -EINVAL;
	ret = rs_run_job(st, extent_walk_job, &w);
	for (i = 0; !ret && i < w.n; i++)
		if (fn(arg, &w.v[i])) {
			i++;
			break;
		}
	free(w.v);
	return ret ? ret : (int)i;
}

ssize_t rawstore_read(struct rawstore *st, const char *coll, const void *name, size_t nlen,
		      uint64_t off, void *buf, size_t len)
{
	struct rs_ocache_ent *e;
	const struct rs_onode *o;
	int ret = check_args(st, coll, name, nlen);

	if (ret)
		return ret;
	if ((!buf && len) || off + len < off)
		return -EINVAL;
	pthread_rwlock_rdlock(&st->rwlock);
	ret = onode_get_cached(st, coll, name, nlen, &e);
	if (ret)
		goto out_unlock;
	o = ocache_onode(e);
	if (off >= o->size) {
		len = 0;
	} else {
		len = min_u64(len, o->size - off);
		ret = obj_read(st, o, off, buf, len, false);
	}
	ocache_put(st->ocache, e);
out_unlock:
	pthread_rwlock_unlock(&st->rwlock);
	return ret ? ret : (ssize_t)len;
}

static ssize_t get_sub(struct rawstore *st, const char *coll, const void *name, size_t nlen,
		       char type, const void *sub, size_t slen, void *buf, size_t size)
{
	struct rs_onode o;
	struct rs_key k;
	char *v;
	size_t vl;
	int ret = check_args(st, coll, name, nlen);

	if (ret)
		return ret;
	if (slen > RAWSTORE_NAME_MAX || (!buf && size))
		return -EINVAL;
	ret = onode_load(st, NULL, coll, name, nlen, &o);
	if (ret)
		return ret;
	key_nid_sub(&k, type, o.nid, sub, slen);
	onode_free(&o);
	ret = meta_get(st->meta, NULL, &k, &v, &vl);
	if (ret)
		return ret == -ENOENT ? -ENODATA : ret;
	memcpy(buf, v, min_u64(vl, size));
	rocksdb_free(v);
	return (ssize_t)vl;
}

ssize_t rawstore_getattr(struct rawstore *st, const char *coll, const void *name, size_t nlen,
			 const char *attr, void *buf, size_t size)
{
	if (!attr || !*attr)
		return -EINVAL;
	return get_sub(st, coll, name, nlen, 'X', attr, strlen(attr), buf, size);
}

ssize_t rawstore_omap_get(struct rawstore *st, const char *coll, const void *name, size_t nlen,
			  const void *key, size_t klen, void *buf, size_t size)
{
	if (!key && klen)
		return -EINVAL;
	return get_sub(st, coll, name, nlen, 'M', key, klen, buf, size);
}

ssize_t rawstore_omap_get_header(struct rawstore *st, const char *coll, const void *name,
				 size_t nlen, void *buf, size_t size)
{
	return get_sub(st, coll, name, nlen, 'H', NULL, 0, buf, size);
}

static int iterate(struct rawstore *st, const struct rs_key *prefix, const void *start,
		   size_t slen, unsigned int limit, rawstore_kv_fn kv, rawstore_name_fn nf,
		   void *arg)
{
	struct rs_iter *it;
	int ret, n = 0;

	ret = meta_iter_new(st->meta, NULL, prefix->buf, prefix->len, &it);
	if (ret)
		return ret;
	if (start)
		meta_iter_seek(it, start, slen);
	for (; meta_iter_valid(it); meta_iter_next(it)) {
		size_t kl, vl;
		const char *k = meta_iter_key(it, &kl);
		const char *v = meta_iter_val(it, &vl);
		int stop;

		n++;
		stop = kv ? kv(arg, k, kl, v, vl) : nf(arg, k, kl);
		if (stop || (limit && (unsigned int)n >= limit))
			break;
	}
	ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret ? ret : n;
}

static int iterate_sub(struct rawstore *st, const char *coll, const void *name, size_t nlen,
		       char type, const void *start, size_t slen, rawstore_kv_fn fn, void *arg)
{
	struct rs_onode o;
	struct rs_key k;
	int ret = check_args(st, coll, name, nlen);

	if (ret)
		return ret;
	if (!fn || slen > RAWSTORE_NAME_MAX)
		return -EINVAL;
	ret = onode_load(st, NULL, coll, name, nlen, &o);
	if (ret)
		return ret;
	key_nid_sub(&k, type, o.nid, NULL, 0);
	onode_free(&o);
	return iterate(st, &k, start, slen, 0, fn, NULL, arg);
}

int rawstore_omap_iterate(struct rawstore *st, const char *coll, const void *name, size_t nlen,
			  const void *start, size_t slen, rawstore_kv_fn fn, void *arg)
{
	return iterate_sub(st, coll, name, nlen, 'M', start, slen, fn, arg);
}

int rawstore_attr_iterate(struct rawstore *st, const char *coll, const void *name, size_t nlen,
			  rawstore_kv_fn fn, void *arg)
{
	return iterate_sub(st, coll, name, nlen, 'X', NULL, 0, fn, arg);
}

int rawstore_coll_exists(struct rawstore *st, const char *coll)
{
	struct rs_key k;
	char *v;
	size_t vl;
	int ret;

	if (!st || !coll || !*coll || strlen(coll) > RAWSTORE_COLL_NAME_MAX)
		return -EINVAL;
	key_coll(&k, coll);
	ret = meta_get(st->meta, NULL, &k, &v, &vl);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	rocksdb_free(v);
	return 1;
}

int rawstore_list(struct rawstore *st, const char *coll, const void *start, size_t slen,
		  unsigned int limit, rawstore_name_fn fn, void *arg)
{
	struct rs_key k;
	int ret;

	if (!fn || slen > RAWSTORE_NAME_MAX)
		return -EINVAL;
	ret = rawstore_coll_exists(st, coll);
	if (ret <= 0)
		return ret ? ret : -ENOENT;
	key_onode_prefix(&k, coll);
	return iterate(st, &k, start, slen, limit, NULL, fn, arg);
}

int rawstore_coll_list(struct rawstore *st, rawstore_name_fn fn, void *arg)
{
	struct rs_key k = { 1, "C" };

	if (!st || !fn)
		return -EINVAL;
	return iterate(st, &k, NULL, 0, 0, NULL, fn, arg);
}
