// SPDX-License-Identifier: MIT
/*
 * txn.c: building transactions and applying them on the commit thread.
 *
 * Applying a transaction never overwrites committed data: new data goes to
 * newly allocated units (read-modify-write for partly written mapped units;
 * zeroed space spares the writes of never-written blocks), the old
 * units are queued to be freed when the batch commits, and every metadata
 * change (onode, attrs, omap, free list) goes into the store's indexed
 * batch, whose save point lets a failed transaction vanish.
 */
#include <errno.h>
#include <stdlib.h>

#include "debug.h"
#include "decode.h"
#include "deferred.h"
#include "internal.h"
#include "space.h"
#include "util.h"

#define CHUNK (8U << 20)	/* bytes written per allocation round */

enum op_type {
	OP_COLL_CREATE, OP_COLL_REMOVE, OP_TOUCH, OP_WRITE, OP_ZERO, OP_TRUNCATE, OP_REMOVE,
	OP_CLONE, OP_SETATTR, OP_RMATTR, OP_OMAP_SET, OP_OMAP_RM, OP_OMAP_RMRANGE,
	OP_OMAP_SETHEADER, OP_ALLOC_HINT, OP_RENAME,
};

struct rs_op {
	enum op_type type;
	char *coll, *coll2;		/* @coll2: the destination of a rename */
	void *name, *name2, *data, *key, *key2;
	size_t nlen, n2len, dlen, klen, k2len;
	uint64_t off, len;
	/* Write data lives in an I/O buffer: @dbuf (4096-aligned) holds it at
	 * offset off % RS_IO_ALIGN, so whole units go to the device from it. */
	void *dbuf;
	/* crc32c of each RS_IO_ALIGN block of @dbuf, computed at build time
	 * (in the caller's thread, not the commit thread's); valid for the
	 * blocks the data covers wholly.  NULL for short writes. */
	uint32_t *crc4k;
	bool aligned;
	bool borrowed;		/* @data is the caller's (rawstore_txn_write_nocopy) */
	bool fresh;		/* @dbuf was newly allocated (cold), not reused */
};

#define RS_IO_ALIGN 4096U

/* ---- building ---- */

int rawstore_txn_new(struct rawstore_txn **out)
{
	struct rawstore_txn *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->failed_op = -1;
	*out = t;
	return 0;
}

static void op_free(struct rs_op *op)
{
	free(op->coll);
	free(op->coll2);
	free(op->name);
	free(op->name2);
	if (!op->dbuf)
		free(op->data);
	else if (!op->borrowed)
		rs_iobuf_free(op->dbuf, round_up(op->off % RS_IO_ALIGN + op->dlen, RS_IO_ALIGN));
	free(op->crc4k);
	free(op->key);
	free(op->key2);
}

void rawstore_txn_reset(struct rawstore_txn *t)
{
	unsigned int i;

	for (i = 0; i < t->n; i++)
		op_free(&t->ops[i]);
	t->n = 0;
	t->bytes = 0;
	t->failed_op = -1;
}

void rawstore_txn_free(struct rawstore_txn *t)
{
	if (!t)
		return;
	rawstore_txn_reset(t);
	jdata_free(&t->borrowed);
	free(t->ops);
	free(t);
}

unsigned int rawstore_txn_count(const struct rawstore_txn *t)
{
	return t->n;
}

int rawstore_txn_failed_op(const struct rawstore_txn *t)
{
	return t->failed_op;
}

const char *rawstore_txn_errmsg(const struct rawstore_txn *t)
{
	return t->errmsg;
}

static int dup_bytes(void **dst, const void *src, size_t len)
{
	*dst = malloc(len ? len : 1);
	if (!*dst)
		return -ENOMEM;
	if (len)
		memcpy(*dst, src, len);
	return 0;
}

static bool coll_ok(const char *coll)
{
	size_t l;

	if (!coll)
		return false;
	l = strnlen(coll, RAWSTORE_COLL_NAME_MAX + 1);
	return l >= 1 && l <= RAWSTORE_COLL_NAME_MAX;
}

static bool name_ok(const void *name, size_t nlen)
{
	return name && nlen >= 1 && nlen <= RAWSTORE_NAME_MAX;
}

/*
 * Checksums of the blocks of @op->dbuf its data covers wholly, now, in the
 * caller's thread and while the data is warm in the cache (write_extents
 * uses them when the store's checksum block is RS_IO_ALIGN).  Writes of
 * one block or less are skipped: with the default inline_max they stay in
 * RocksDB, unchecksummed.
 */
static int op_checksums(struct rs_op *op)
{
	const uint8_t *b = op->dbuf;
	size_t head = op->off % RS_IO_ALIGN;
	uint64_t i = head ? 1 : 0, n = (head + op->dlen) / RS_IO_ALIGN;

	/* A caller's buffer (nocopy) always: its checksums are the only
	 * record of what it held at the call. */
	if (op->dlen <= RS_IO_ALIGN && !op->borrowed)
		return 0;
	op->crc4k = malloc(n * sizeof(*op->crc4k));
	if (!op->crc4k)
		return op->borrowed ? -ENOMEM : 0;
	for (; i < n; i++)
		op->crc4k[i] = rs_crc32c(b + i * RS_IO_ALIGN, RS_IO_ALIGN);
	return 0;
}

/* The one copy of write data: into an aligned I/O buffer, at off % 4096. */
static int dup_aligned(struct rs_op *op, const void *src, size_t len)
{
	size_t head = op->off % RS_IO_ALIGN;
	uint8_t *b = rs_iobuf_get(round_up(head + len, RS_IO_ALIGN), &op->fresh);

	if (!b)
		return -ENOMEM;
	memcpy(b + head, src, len);
	op->dbuf = b;
	op->data = b + head;
	return op_checksums(op);
}

/*
 * The crc32c of the @cb bytes at @p, which hold the checksum block at
 * logical offset @lofs: from the op's build-time checksums when @p is in
 * the op's own buffer and the block is wholly the op's data.
 */
static uint32_t block_crc(const struct rs_op *op, bool in_op_buf, const uint8_t *p,
			  uint64_t lofs, uint32_t cb)
{
	if (in_op_buf && op->crc4k && cb == RS_IO_ALIGN && lofs >= op->off &&
	    lofs + cb <= op->off + op->dlen)
		return op->crc4k[(lofs - round_down(op->off, RS_IO_ALIGN)) / RS_IO_ALIGN];
	return rs_crc32c(p, cb);
}

/* Append an op; the pointer arguments are copied. */
static int add_op(struct rawstore_txn *t, const struct rs_op *tmpl)
{
	struct rs_op op = *tmpl;
	int ret = 0;

	if (!t || !coll_ok(tmpl->coll))
		return -EINVAL;
	if (t->in_flight)
		return -EBUSY;
	op.coll = op.coll2 = op.name = op.name2 = op.data = op.key = op.key2 = op.dbuf = NULL;
	op.crc4k = NULL;
	op.coll = strdup(tmpl->coll);
	if (!op.coll)
		return -ENOMEM;
	if (tmpl->coll2 && !(op.coll2 = strdup(tmpl->coll2)))
		ret = -ENOMEM;
	if (!ret && tmpl->name)
		ret = dup_bytes(&op.name, tmpl->name, tmpl->nlen);
	if (!ret && tmpl->name2)
		ret = dup_bytes(&op.name2, tmpl->name2, tmpl->n2len);
	if (!ret && tmpl->data && tmpl->borrowed) {
		op.data = op.dbuf = tmpl->data;
		op.borrowed = true;
		ret = op_checksums(&op);
	} else if (!ret && tmpl->data && tmpl->aligned) {
		ret = dup_aligned(&op, tmpl->data, tmpl->dlen);
	} else if (!ret && tmpl->data) {
		ret = dup_bytes(&op.data, tmpl->data, tmpl->dlen);
	}
	if (!ret && tmpl->key)
		ret = dup_bytes(&op.key, tmpl->key, tmpl->klen);
	if (!ret && tmpl->key2)
		ret = dup_bytes(&op.key2, tmpl->key2, tmpl->k2len);
	if (!ret && t->n == t->cap) {
		unsigned int cap = t->cap ? t->cap * 2 : 8;
		struct rs_op *v = realloc(t->ops, cap * sizeof(*v));

		if (!v)
			ret = -ENOMEM;
		else {
			t->ops = v;
			t->cap = cap;
		}
	}
	if (ret) {
		op_free(&op);
		return ret;
	}
	t->ops[t->n++] = op;
	if (op.type == OP_WRITE)
		t->bytes += op.dlen;
	return 0;
}

static int obj_op(struct rawstore_txn *t, enum op_type type, const char *coll, const void *name,
		  size_t nlen, struct rs_op *op)
{
	if (!name_ok(name, nlen))
		return -EINVAL;
	op->type = type;
	op->coll = (char *)coll;
	op->name = (void *)name;
	op->nlen = nlen;
	return add_op(t, op);
}

static int range_ok(uint64_t off, uint64_t len)
{
	if (off + len < off)
		return -EINVAL;
	if (off + len > RAWSTORE_OBJECT_MAX)
		return -EFBIG;
	return 0;
}

int rawstore_txn_coll_create(struct rawstore_txn *t, const char *coll)
{
	struct rs_op op = { .type = OP_COLL_CREATE, .coll = (char *)coll };

	return add_op(t, &op);
}

int rawstore_txn_coll_remove(struct rawstore_txn *t, const char *coll)
{
	struct rs_op op = { .type = OP_COLL_REMOVE, .coll = (char *)coll };

	return add_op(t, &op);
}

int rawstore_txn_touch(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen)
{
	struct rs_op op = { 0 };

	return obj_op(t, OP_TOUCH, coll, name, nlen, &op);
}

int rawstore_txn_write(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen,
		       uint64_t off, const void *buf, size_t len)
{
	struct rs_op op = { .off = off, .len = len, .data = (void *)buf, .dlen = len,
			    .aligned = true };
	int ret = range_ok(off, len);

	if (ret)
		return ret;
	if (!buf && len)
		return -EINVAL;
	return obj_op(t, OP_WRITE, coll, name, nlen, &op);
}

int rawstore_txn_write_nocopy(struct rawstore_txn *t, const char *coll, const void *name,
			      size_t nlen, uint64_t off, const void *buf, size_t len)
{
	struct rs_op op = { .off = off, .len = len, .data = (void *)buf, .dlen = len,
			    .borrowed = true };
	int ret = range_ok(off, len);

	if (ret)
		return ret;
	if (!buf || !len || (uintptr_t)buf % RS_IO_ALIGN || off % RS_IO_ALIGN ||
	    len % RS_IO_ALIGN)
		return -EINVAL;
	return obj_op(t, OP_WRITE, coll, name, nlen, &op);
}

int rawstore_txn_zero(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen,
		      uint64_t off, uint64_t len)
{
	struct rs_op op = { .off = off, .len = len };
	int ret = range_ok(off, len);

	if (ret)
		return ret;
	return obj_op(t, OP_ZERO, coll, name, nlen, &op);
}

int rawstore_txn_truncate(struct rawstore_txn *t, const char *coll, const void *name,
			  size_t nlen, uint64_t size)
{
	struct rs_op op = { .off = size };
	int ret = range_ok(size, 0);

	if (ret)
		return ret;
	return obj_op(t, OP_TRUNCATE, coll, name, nlen, &op);
}

int rawstore_txn_remove(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen)
{
	struct rs_op op = { 0 };

	return obj_op(t, OP_REMOVE, coll, name, nlen, &op);
}

int rawstore_txn_clone(struct rawstore_txn *t, const char *coll, const void *src, size_t slen,
		       const void *dst, size_t dlen)
{
	struct rs_op op = { .name2 = (void *)dst, .n2len = dlen };

	if (!name_ok(dst, dlen))
		return -EINVAL;
	return obj_op(t, OP_CLONE, coll, src, slen, &op);
}

int rawstore_txn_rename(struct rawstore_txn *t, const char *src_coll, const void *src_name,
			size_t src_len, const char *dst_coll, const void *dst_name, size_t dst_len)
{
	struct rs_op op = { .coll2 = (char *)dst_coll, .name2 = (void *)dst_name,
			    .n2len = dst_len };

	if (!coll_ok(src_coll) || !coll_ok(dst_coll) || !name_ok(dst_name, dst_len))
		return -EINVAL;
	/* Renaming an object to itself is a caller's mistake, not a no-op. */
	if (!strcmp(src_coll, dst_coll) && name_ok(src_name, src_len) && src_len == dst_len &&
	    !memcmp(src_name, dst_name, src_len))
		return -EINVAL;
	return obj_op(t, OP_RENAME, src_coll, src_name, src_len, &op);
}

static bool attr_ok(const char *attr)
{
	return attr && *attr && strlen(attr) <= RAWSTORE_NAME_MAX;
}

int rawstore_txn_setattr(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen,
			 const char *attr, const void *val, size_t vlen)
{
	struct rs_op op = { .data = (void *)(val ? val : ""), .dlen = vlen };

	if (!attr_ok(attr) || (!val && vlen))
		return -EINVAL;
	op.key = (void *)attr;
	op.klen = strlen(attr);
	return obj_op(t, OP_SETATTR, coll, name, nlen, &op);
}

int rawstore_txn_rmattr(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen,
			const char *attr)
{
	struct rs_op op = { 0 };

	if (!attr_ok(attr))
		return -EINVAL;
	op.key = (void *)attr;
	op.klen = strlen(attr);
	return obj_op(t, OP_RMATTR, coll, name, nlen, &op);
}

static bool okey_ok(const void *key, size_t klen)
{
	return key && klen <= RAWSTORE_NAME_MAX;
}

int rawstore_txn_omap_set(struct rawstore_txn *t, const char *coll, const void *name,
			  size_t nlen, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct rs_op op = { .key = (void *)key, .klen = klen, .data = (void *)(val ? val : ""),
			    .dlen = vlen };

	if (!okey_ok(key, klen) || (!val && vlen))
		return -EINVAL;
	return obj_op(t, OP_OMAP_SET, coll, name, nlen, &op);
}

int rawstore_txn_omap_rm(struct rawstore_txn *t, const char *coll, const void *name, size_t nlen,
			 const void *key, size_t klen)
{
	struct rs_op op = { .key = (void *)key, .klen = klen };

	if (!okey_ok(key, klen))
		return -EINVAL;
	return obj_op(t, OP_OMAP_RM, coll, name, nlen, &op);
}

int rawstore_txn_omap_rmrange(struct rawstore_txn *t, const char *coll, const void *name,
			      size_t nlen, const void *first, size_t flen, const void *last,
			      size_t llen)
{
	struct rs_op op = { .key = (void *)first, .klen = flen, .key2 = (void *)last,
			    .k2len = llen };

	if (!okey_ok(first, flen) || !okey_ok(last, llen))
		return -EINVAL;
	return obj_op(t, OP_OMAP_RMRANGE, coll, name, nlen, &op);
}

int rawstore_txn_omap_setheader(struct rawstore_txn *t, const char *coll, const void *name,
				size_t nlen, const void *val, size_t vlen)
{
	struct rs_op op = { .data = (void *)(val ? val : ""), .dlen = vlen };

	if (!val && vlen)
		return -EINVAL;
	return obj_op(t, OP_OMAP_SETHEADER, coll, name, nlen, &op);
}

int rawstore_txn_alloc_hint(struct rawstore_txn *t, const char *coll, const void *name,
			    size_t nlen, uint64_t expected_size)
{
	struct rs_op op = { .len = expected_size };

	if (expected_size > RAWSTORE_OBJECT_MAX)
		return -EFBIG;
	return obj_op(t, OP_ALLOC_HINT, coll, name, nlen, &op);
}

/* ---- applying ---- */

struct actx {
	struct rawstore *st;
	struct rs_txn_ctx *c;
	rocksdb_writebatch_wi_t *wb;
	const struct rs_op *wop;	/* the write op being applied, if any */
};

/*
 * Where the device image of the units [a0, b0) is built: inside the
 * aligned buffer of the write op being applied when @data is its data and
 * the buffer spans those units (whole units; or partial ones when units
 * are no larger than the buffer's 4 KiB alignment, the buffer then has
 * room around the data for the old bytes).  NULL otherwise.
 */
static uint8_t *op_io_buf(const struct actx *a, const uint8_t *data, uint64_t a0, uint64_t b0,
			  uint64_t pos, uint64_t cend)
{
	const struct rs_op *op = a->wop;
	uint64_t base;

	if (!op || !op->dbuf || data != op->data)
		return NULL;
	/* A caller's buffer (nocopy) is 4096-aligned data only, so the room
	 * test below never lets old bytes into it. */
	base = round_down(op->off, RS_IO_ALIGN);
	if ((pos != a0 || cend != b0) &&
	    (a0 < base || b0 > round_up(op->off + op->dlen, RS_IO_ALIGN)))
		return NULL;
	return (uint8_t *)op->dbuf + (a0 - base);
}

/*
 * A nocopy write's bytes [pos, cend) are about to be copied (inline,
 * deferred, a private buffer) or checksummed again (checksum blocks other
 * than 4 KiB): -EIO unless they still match the checksums taken at the
 * call, so a caller's buffer changed too early is never committed as if
 * it had been written so.  Other data: 0.
 */
static int op_verify(struct rawstore *st, const struct rs_op *op, const uint8_t *data,
		     uint64_t pos, uint64_t cend)
{
	uint64_t b;

	if (!op || !op->borrowed || data != op->data)
		return 0;
	if (!op->crc4k)
		return -ENOMEM;
	for (b = round_down(pos, RS_IO_ALIGN); b < cend; b += RS_IO_ALIGN)
		if (rs_crc32c((const uint8_t *)op->data + (b - op->off), RS_IO_ALIGN) !=
		    op->crc4k[(b - op->off) / RS_IO_ALIGN])
			return rs_err(st, -EIO, "the buffer of a nocopy write changed before "
				      "the transaction was applied (object offset %llu)",
				      (unsigned long long)b);
	return 0;
}

static bool is_inline(const struct rawstore *st, const struct rs_onode *o)
{
	return o->n_ext == 0 && o->size <= st->inline_max;
}

static bool au_mapped(const struct rs_onode *o, uint64_t lofs)
{
	uint32_t i = onode_find(o, lofs);

	return i < o->n_ext && o->ext[i].lofs <= lofs;
}

static int store_onode(struct actx *a, const char *coll, const void *name, size_t nlen,
		       struct rs_onode *o)
{
	struct rs_key k;
	char *buf;
	size_t len;
	int ret;

	/* Keep the inline invariant: inline objects hold exactly size bytes. */
	if (is_inline(a->st, o) && o->inline_len != o->size) {
		uint8_t *p = realloc(o->inl, o->size ? o->size : 1);

		if (!p)
			return -ENOMEM;
		if (o->size > o->inline_len)
			memset(p + o->inline_len, 0, o->size - o->inline_len);
		o->inl = p;
		o->inline_len = (uint32_t)o->size;
	}
	ret = onode_encode(o, a->st->csum_block, &buf, &len);
	if (ret)
		return ret;
	key_onode(&k, coll, name, nlen);
	rocksdb_writebatch_wi_put(a->wb, k.buf, k.len, buf, len);
	keyvec_push(&a->st->ocache_dirty, &k);
	free(buf);
	return 0;
}

static int coll_check(struct actx *a, const char *coll)
{
	struct rawstore *st = a->st;
	struct rs_key k;
	char *v;
	size_t vl;
	int ret;

	if (st->coll_seen_ok && !strcmp(st->coll_seen, coll))
		return 0;
	key_coll(&k, coll);
	ret = meta_get(st->meta, a->wb, &k, &v, &vl);
	if (ret)
		return ret;
	rocksdb_free(v);
	if (strlen(coll) < sizeof(st->coll_seen)) {
		strcpy(st->coll_seen, coll);
		st->coll_seen_ok = true;
	}
	return 0;
}

void txn_forget(struct rawstore *st)
{
	st->coll_seen_ok = false;
}

/* True if every unit of [a, b) is mapped. */
static bool range_mapped(const struct rs_onode *o, uint64_t a, uint64_t b)
{
	uint32_t i = onode_find(o, a);
	uint64_t pos = a;

	for (; i < o->n_ext && pos < b; i++) {
		if (o->ext[i].lofs > pos)
			return false;
		pos = o->ext[i].lofs + o->ext[i].len;
	}
	return pos >= b;
}

/* ---- shared units: "R" be64(unit offset) -> le32 extra references ---- */

static int ref_get(struct actx *a, uint64_t pofs, uint32_t *extra)
{
	struct rs_key k;
	char *v;
	size_t vl;
	int ret;

	*extra = 0;
	if (!a->st->shared_any)
		return 0;
	key_ext(&k, 'R', pofs);
	ret = meta_get(a->st->meta, a->wb, &k, &v, &vl);
	if (ret == -ENOENT)
		return 0;
	if (ret)
		return ret;
	{
		struct rs_ref_rec r;

		/* the key without its type byte; the decoder names what is wrong */
		ret = decode_ref_rec(k.buf + 1, k.len - 1, v, vl, &a->st->lim, &r);
		if (!ret)
			*extra = r.extra;
	}
	rocksdb_free(v);
	return ret;
}

static void ref_set(struct actx *a, uint64_t pofs, uint32_t extra)
{
	struct rs_key k;
	char v[4];

	key_ext(&k, 'R', pofs);
	if (!extra) {
		rocksdb_writebatch_wi_delete(a->wb, k.buf, k.len);
		return;
	}
	put_le32(v, extra);
	rocksdb_writebatch_wi_put(a->wb, k.buf, k.len, v, 4);
}

/* True if any unit of device range [pofs, pofs+len) is shared. */
static int range_shared(struct actx *a, uint64_t pofs, uint64_t len)
{
	uint64_t u;
	uint32_t extra;
	int ret;

	if (!a->st->shared_any)
		return 0;
	for (u = pofs; u < pofs + len; u += a->st->min_alloc) {
		ret = ref_get(a, u, &extra);
		if (ret)
			return ret;
		if (extra)
			return 1;
	}
	return 0;
}

/* Drop one reference to [pofs, pofs+len): shared units lose a count, the
 * others are freed at commit. */
static int release_range(struct actx *a, uint64_t pofs, uint64_t len)
{
	uint64_t U = a->st->min_alloc, u, run = pofs;
	uint32_t extra;
	int ret;

	if (!a->st->shared_any)
		return pext_push(&a->c->frees, pofs, len);
	for (u = pofs; u < pofs + len; u += U) {
		ret = ref_get(a, u, &extra);
		if (ret)
			return ret;
		if (!extra)
			continue;
		ref_set(a, u, extra - 1);
		if (u > run) {
			ret = pext_push(&a->c->frees, run, u - run);
			if (ret)
				return ret;
		}
		run = u + U;
	}
	if (pofs + len > run)
		return pext_push(&a->c->frees, run, pofs + len - run);
	return 0;
}

/* Unmap [s, e) of @o and release what it referenced. */
static int punch_release(struct actx *a, struct rs_onode *o, uint64_t s, uint64_t e)
{
	struct pext_vec freed = { 0 };
	size_t i;
	int ret;

	ret = onode_punch(o, s, e, a->st->csum_block, &freed);
	for (i = 0; !ret && i < freed.n; i++)
		ret = release_range(a, freed.v[i].off, freed.v[i].len);
	pext_vec_free(&freed);
	return ret;
}

/* True if the units [a0, b0) of @o are mapped to units nobody else uses. */
static int overwritable_in_place(struct actx *a, const struct rs_onode *o, uint64_t a0,
				 uint64_t b0)
{
	uint32_t i = onode_find(o, a0);
	int ret;

	if (!range_mapped(o, a0, b0))
		return 0;
	for (; i < o->n_ext && o->ext[i].lofs < b0; i++) {
		uint64_t s = max_u64(o->ext[i].lofs, a0), e = min_u64(o->ext[i].lofs +
								   o->ext[i].len, b0);

		ret = range_shared(a, o->ext[i].pofs + (s - o->ext[i].lofs), e - s);
		if (ret)
			return ret < 0 ? ret : 0;
	}
	return 1;
}

/*
 * Overwrite the mapped units [a0, b0) in place, later: the data goes into
 * the batch as a deferred record and is written to the device after the
 * commit; the checksums change now.  No allocation, no device flush.
 */
static int defer_overwrite(struct actx *a, struct rs_onode *o, uint64_t a0, uint64_t b0,
			   const uint8_t *buf)
{
	struct rawstore *st = a->st;
	uint32_t cb = st->csum_block, i = onode_find(o, a0);
	uint64_t pos = a0;
	int ret;

	for (; pos < b0; i++) {
		struct rs_extent *e = &o->ext[i];
		uint64_t end = min_u64(e->lofs + e->len, b0), b;

		for (b = pos; b < end; b += cb)
			e->crcs[(b - e->lofs) / cb] = rs_crc32c(buf + (b - a0), cb);
		ret = deferred_queue(st, e->pofs + (pos - e->lofs), buf + (pos - a0), end - pos);
		if (ret)
			return ret;
		pos = end;
	}
	a->c->deferred = true;
	PERF_ADD(st, deferred_bytes, b0 - a0);
	return 0;
}

/*
 * Allocate the units for [@a0, @b0) of @o (next to the extent before it
 * where possible) and record them in the transaction: how many pieces, in
 * *@pieces (the caller frees it), or -errno.  A piece that cannot be
 * recorded fails the write: the pieces recorded before it go back with the
 * failed transaction, the rest at once.
 */
static int alloc_units(struct actx *a, const struct rs_onode *o, uint64_t a0, uint64_t b0,
		       bool partial, struct pext **pieces, bool *zeroed)
{
	struct rawstore *st = a->st;
	uint64_t U = st->min_alloc, hint = 0, want = 0;
	int n, i, ret = 0;

	*pieces = NULL;
	if (a0) {
		uint32_t j = onode_find(o, a0 - 1);

		if (j < o->n_ext && o->ext[j].lofs + o->ext[j].len == a0)
			hint = o->ext[j].pofs + o->ext[j].len;
	}
	if (!o->n_ext && o->alloc_hint > a0)
		want = round_up(o->alloc_hint - a0, U);
	n = space_alloc(st, b0 - a0, hint, want, partial, pieces, zeroed);
	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		ret = rs_fail_check(RS_FAIL_ALLOC_RECORD) ? -ENOMEM :
		      pext_push(&a->c->allocs, (*pieces)[i].off, (*pieces)[i].len);
		if (ret)
			break;
	}
	if (ret) {
		/* Pieces [0, i) are recorded and go back with the failed
		 * transaction; the rest, never written, go back now. */
		space_unalloc(st, *pieces + i, (size_t)(n - i));
		return ret;
	}
	return n;
}

/* The checksums of @buf's blocks, [a0, a0 + len) of the object (the op's
 * own buffer if @ops_buf: the call's checksums where it gave them);
 * *@from_bytes says whether all were computed here from the bytes. */
static uint32_t *block_crcs(struct actx *a, uint64_t a0, uint64_t len, const uint8_t *buf,
			    bool ops_buf, bool *from_bytes)
{
	uint32_t cb = a->st->csum_block, j, nc = (uint32_t)(len / cb);
	uint32_t *crcs = malloc(4 * (size_t)nc);

	*from_bytes = !(ops_buf && a->wop->crc4k && cb == RS_IO_ALIGN);
	for (j = 0; crcs && j < nc; j++)
		crcs[j] = block_crc(a->wop, ops_buf, buf + (uint64_t)j * cb,
				    a0 + (uint64_t)j * cb, cb);
	return crcs;
}

/* Map the @n allocated pieces at @a0 in @o, with the checksums @crcs of
 * their blocks (block_crcs()). */
static int map_units(struct actx *a, struct rs_onode *o, uint64_t a0, const struct pext *pieces,
		     int n, const uint32_t *crcs)
{
	uint32_t cb = a->st->csum_block;
	uint64_t cur = 0;
	int i, ret = 0;

	for (i = 0; !ret && i < n; cur += pieces[i].len, i++) {
		struct rs_extent e = { a0 + cur, pieces[i].off, (uint32_t)pieces[i].len, NULL };
		uint32_t nc = (uint32_t)(pieces[i].len / cb);

		e.crcs = malloc(4 * (size_t)nc);
		if (!e.crcs)
			return -ENOMEM;
		memcpy(e.crcs, crcs + cur / cb, 4 * (size_t)nc);
		ret = onode_insert(o, &e, cb);
		if (ret)
			free(e.crcs);
	}
	return ret;
}

/*
 * Device journal: the record will carry a check of each new write, so
 * that replay knows whether the data landed (journal.h): the crc32c of
 * the write's bytes.  Where the block checksums @crcs of @buf were
 * computed from those bytes (@from_bytes), it is combined from them
 * instead of reading the bytes again; a write that does not cover whole
 * blocks, or checksums the call gave, take the bytes.
 */
static int journal_checks(struct rawstore *st, struct rs_txn_ctx *c, const struct rs_io *ios,
			  unsigned int n, const uint8_t *buf, const uint32_t *crcs,
			  bool from_bytes, bool borrowed)
{
	uint32_t cb = st->csum_block, op;
	unsigned int i;
	int ret = 0;

	if (!meta_journaled(st->meta))
		return 0;
	op = rs_crc32c_combine_gen(cb);
	for (i = 0; i < n && !ret; i++) {
		uint64_t rel = (uint64_t)((const uint8_t *)ios[i].buf - buf), k;
		uint32_t crc;

		if (from_bytes && rel % cb == 0 && ios[i].len % cb == 0 && ios[i].len) {
			crc = crcs[rel / cb];
			for (k = 1; k < ios[i].len / cb; k++)
				crc = rs_crc32c_combine_op(crc, crcs[rel / cb + k], op);
		} else {
			crc = rs_crc32c(ios[i].buf, ios[i].len);
		}
		ret = jdata_push(&c->jdata, ios[i].off, (uint32_t)ios[i].len, crc);
		/* The caller may change its buffer while the device reads it:
		 * the commit checks it again once written (a changed one fails
		 * its transaction, never the record of the whole group). */
		if (!ret && borrowed)
			ret = jdata_push(&c->borrowed, (uint64_t)(uintptr_t)ios[i].buf,
					 (uint32_t)ios[i].len, crc);
	}
	return ret;
}

/* Write @len bytes (NULL data: zeros) at @off into newly allocated units. */
static int write_extents(struct actx *a, struct rs_onode *o, uint64_t off, const uint8_t *data,
			 uint64_t len)
{
	struct rawstore *st = a->st;
	uint64_t U = st->min_alloc, end = off + len, pos = off;
	uint32_t cb = st->csum_block;
	int ret = 0;

	while (pos < end) {
		uint64_t a0 = round_down(pos, U);
		uint64_t b0 = min_u64(round_up(end, U), a0 + CHUNK);
		uint64_t cend = min_u64(end, b0), cur, wa, wb;
		bool head_mapped = pos > a0 && au_mapped(o, a0);
		bool tail_mapped = cend < b0 && au_mapped(o, b0 - U);
		struct pext *pieces = NULL;
		struct rs_io *ios = NULL;
		uint32_t *crcs = NULL;
		bool from_bytes = false;
		unsigned int nio = 0;
		uint8_t *buf, *own = NULL;	/* @own: allocated here */
		bool zeroed, defer;
		int n, i;

		/* One copy: whole units go to the device from the op's buffer. */
		buf = op_io_buf(a, data, a0, b0, pos, cend);
		/* A caller's buffer that is copied, checksummed again or may
		 * go through the log: still what it was at the call? */
		if (!buf || cb != RS_IO_ALIGN || b0 - a0 <= st->opts.deferred_max ||
		    b0 - a0 <= (uint64_t)st->opts.deferred_new_max) {
			ret = op_verify(st, a->wop, data, pos, cend);
			if (ret)
				return ret;
		}
		if (!buf) {
			bool fresh;

			buf = own = rs_iobuf_get(b0 - a0, &fresh);
			if (!buf)
				return -ENOMEM;
			PERF_ADD(st, iobuf_fresh, fresh);
		}
		/* Old data of partly written units: read-modify-write (an
		 * unmapped unit reads as zeros without I/O).  In the op's
		 * buffer only the bytes around the data are read. */
		if (pos > a0)
			ret = obj_read(st, o, a0, buf, own ? U : pos - a0, true);
		if (!ret && !own && cend < b0)
			ret = obj_read(st, o, cend, buf + (cend - a0), b0 - cend, true);
		else if (!ret && cend < b0 && (b0 - U != a0 || pos == a0))
			ret = obj_read(st, o, b0 - U, buf + (b0 - U - a0), U, true);
		if (ret)
			goto out_free_buf;
		PERF_ADD(st, rmw_reads, (uint64_t)head_mapped +
			 (tail_mapped && (b0 - U != a0 || pos == a0)));
		/* [wa, wb) holds data or old bytes; the rest of the units is
		 * zeros, which zeroed space already holds. */
		wa = head_mapped ? a0 : round_down(pos, cb);
		wb = tail_mapped ? b0 : round_up(cend, cb);
		if (own && data) {
			memcpy(buf + (pos - a0), data + (pos - off), cend - pos);
			PERF_ADD(st, data_copies, 1);
			PERF_ADD(st, data_copy_bytes, cend - pos);
		} else if (own)
			memset(buf + (pos - a0), 0, cend - pos);
		ret = b0 - a0 <= st->opts.deferred_max ? overwritable_in_place(a, o, a0, b0) : 0;
		if (ret < 0) {
			rs_iobuf_free(own, b0 - a0);
			return ret;
		}
		if (ret) {
			ret = defer_overwrite(a, o, a0, b0, buf);
			rs_iobuf_free(own, b0 - a0);
			if (ret)
				return ret;
			pos = cend;
			continue;
		}
		n = alloc_units(a, o, a0, b0, wa > a0 || wb < b0, &pieces, &zeroed);
		if (n < 0) {
			ret = n;
			goto out_free_pieces;
		}
		/* Small new data: whole units through the WAL ([a0, b0) of @buf
		 * holds data, old bytes or zeros throughout). */
		defer = b0 - a0 <= (uint64_t)st->opts.deferred_new_max;
		if (!defer) {
			ios = calloc((size_t)n, sizeof(*ios));
			if (!ios) {
				ret = -ENOMEM;
				goto out_free_pieces;
			}
			nio = space_plan_writes(st, pieces, n, zeroed, a0, wa, wb, buf, ios);
		}
		ret = punch_release(a, o, a0, b0);
		if (!ret) {
			crcs = block_crcs(a, a0, b0 - a0, buf, !own, &from_bytes);
			ret = crcs ? map_units(a, o, a0, pieces, n, crcs) : -ENOMEM;
		}
		/* Deferred: the records go into the batch (copies), the data to
		 * the device after the commit.  Else queued, not waited for: the
		 * commit stage waits before its flush.  The buffer goes with the
		 * writes (or is the op's, which lives until the transaction
		 * completes). */
		for (i = 0, cur = 0; !ret && defer && i < n; cur += pieces[i].len, i++)
			ret = deferred_queue(st, pieces[i].off, buf + cur, pieces[i].len);
		if (!ret && defer) {
			a->c->deferred = true;
			PERF_ADD(st, deferred_bytes, b0 - a0);
			PERF_ADD(st, deferred_new_bytes, b0 - a0);
		} else if (!ret) {
			ret = journal_checks(st, a->c, ios, nio, buf, crcs, from_bytes,
					     !own && a->wop && a->wop->borrowed);
			if (!ret)
				rs_debug_write_hook(buf, b0 - a0);
			if (!ret)
				ret = dev_wq_write(st->dev, ios, nio, own, b0 - a0);
			own = NULL;
			if (!ret) {
				a->c->wrote_data = true;
				rs_crash_check(st, RS_CRASH_MID_DATA);
			}
		}
		free(ios);
		free(crcs);
out_free_pieces:
		free(pieces);
out_free_buf:
		rs_iobuf_free(own, b0 - a0);
		if (ret)
			return ret;
		pos = cend;
	}
	o->size = max_u64(o->size, end);
	return 0;
}

/* Move inline data to extents if the object is about to outgrow inline_max. */
static int leave_inline(struct actx *a, struct rs_onode *o, uint64_t new_end)
{
	uint8_t *data = o->inl;
	uint64_t sz = o->size;
	int ret = 0;

	if (!is_inline(a->st, o) || new_end <= a->st->inline_max)
		return 0;
	o->inl = NULL;
	o->inline_len = 0;
	if (sz && data)
		ret = write_extents(a, o, 0, data, sz);
	free(data);
	return ret;
}

static int grow_inline(struct rs_onode *o, uint64_t size)
{
	uint8_t *p;

	if (size <= o->inline_len)
		return 0;
	p = realloc(o->inl, size);
	if (!p)
		return -ENOMEM;
	memset(p + o->inline_len, 0, size - o->inline_len);
	o->inl = p;
	o->inline_len = (uint32_t)size;
	return 0;
}

static int do_write(struct actx *a, struct rs_onode *o, uint64_t off, const uint8_t *data,
		    uint64_t len)
{
	uint64_t end = off + len;
	int ret;

	if (!len)
		return 0;
	ret = leave_inline(a, o, end);
	if (ret)
		return ret;
	if (is_inline(a->st, o) && end <= a->st->inline_max) {
		ret = op_verify(a->st, a->wop, data, off, end);
		if (!ret)
			ret = grow_inline(o, max_u64(o->size, end));
		if (ret)
			return ret;
		if (data)
			memcpy(o->inl + off, data, len);
		else
			memset(o->inl + off, 0, len);
		o->size = max_u64(o->size, end);
		PERF_ADD(a->st, inline_writes, 1);
		return 0;
	}
	return write_extents(a, o, off, data, len);
}

static int do_zero(struct actx *a, struct rs_onode *o, uint64_t off, uint64_t len)
{
	uint64_t U = a->st->min_alloc, end = off + len, ha, tb;
	int ret;

	if (!len)
		return 0;
	ret = leave_inline(a, o, end);
	if (ret)
		return ret;
	if (is_inline(a->st, o) && end <= a->st->inline_max)
		return do_write(a, o, off, NULL, len);
	ha = round_up(off, U);
	tb = round_down(end, U);
	if (ha > tb) {
		if (au_mapped(o, round_down(off, U)))
			ret = write_extents(a, o, off, NULL, len);
	} else {
		if (off < ha && au_mapped(o, round_down(off, U)))
			ret = write_extents(a, o, off, NULL, ha - off);
		if (!ret && tb > ha)
			ret = punch_release(a, o, ha, tb);
		if (!ret && end > tb && au_mapped(o, tb))
			ret = write_extents(a, o, tb, NULL, end - tb);
	}
	o->size = max_u64(o->size, end);
	return ret;
}

static int do_truncate(struct actx *a, struct rs_onode *o, uint64_t ns)
{
	uint64_t U = a->st->min_alloc, nsu = round_up(ns, U);
	int ret;

	ret = leave_inline(a, o, ns);
	if (ret)
		return ret;
	/* An empty object stays "inline" after leave_inline: check @ns too. */
	if (is_inline(a->st, o) && ns <= a->st->inline_max) {
		if (ns > o->size)
			ret = grow_inline(o, ns);
		o->size = ns;
		return ret;
	}
	if (ns < o->size) {
		if (o->n_ext) {
			struct rs_extent *last = &o->ext[o->n_ext - 1];

			ret = punch_release(a, o, nsu, max_u64(nsu, last->lofs + last->len));
		}
		if (!ret && ns % U && au_mapped(o, round_down(ns, U)))
			ret = write_extents(a, o, ns, NULL, nsu - ns);
	}
	o->size = ns;
	return ret;
}

/* Collect the keys under @prefix (through the batch), then call @fn on each. */
struct keylist {
	char **k;
	size_t *len;
	size_t n, cap;
};

static void keylist_free(struct keylist *kl)
{
	size_t i;

	for (i = 0; i < kl->n; i++)
		free(kl->k[i]);
	free(kl->k);
	free(kl->len);
}

static int collect_keys(struct actx *a, const struct rs_key *prefix, const void *from,
			size_t flen, const void *to, size_t tlen, bool with_vals,
			struct keylist *kl, struct keylist *vl)
{
	struct rs_iter *it;
	int ret;

	ret = meta_iter_new(a->st->meta, a->wb, prefix->buf, prefix->len, &it);
	if (ret)
		return ret;
	if (from)
		meta_iter_seek(it, from, flen);
	for (; meta_iter_valid(it); meta_iter_next(it)) {
		size_t klen, sklen, vlen = 0;
		const char *k = meta_iter_full_key(it, &klen);
		const char *sk = meta_iter_key(it, &sklen);
		const char *v = with_vals ? meta_iter_val(it, &vlen) : NULL;

		if (to) {
			int c = memcmp(sk, to, min_u64(sklen, tlen));

			if (c > 0 || (c == 0 && sklen >= tlen))
				break;
		}
		if (kl->n == kl->cap) {
			size_t cap = kl->cap ? kl->cap * 2 : 16;

			if (!(kl->k = realloc(kl->k, cap * sizeof(char *))) ||
			    !(kl->len = realloc(kl->len, cap * sizeof(size_t)))) {
				ret = -ENOMEM;
				break;
			}
			if (with_vals && (!(vl->k = realloc(vl->k, cap * sizeof(char *))) ||
					  !(vl->len = realloc(vl->len, cap * sizeof(size_t))))) {
				ret = -ENOMEM;
				break;
			}
			kl->cap = cap;
			if (with_vals)
				vl->cap = cap;
		}
		kl->k[kl->n] = malloc(klen);
		if (!kl->k[kl->n]) {
			ret = -ENOMEM;
			break;
		}
		memcpy(kl->k[kl->n], k, klen);
		kl->len[kl->n++] = klen;
		if (with_vals) {
			vl->k[vl->n] = malloc(vlen ? vlen : 1);
			if (!vl->k[vl->n]) {
				ret = -ENOMEM;
				break;
			}
			memcpy(vl->k[vl->n], v, vlen);
			vl->len[vl->n++] = vlen;
		}
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}

static int delete_prefix(struct actx *a, char type, uint64_t nid)
{
	struct keylist kl = { 0 }, vl = { 0 };
	struct rs_key p;
	size_t i;
	int ret;

	key_nid_sub(&p, type, nid, NULL, 0);
	ret = collect_keys(a, &p, NULL, 0, NULL, 0, false, &kl, &vl);
	for (i = 0; !ret && i < kl.n; i++)
		rocksdb_writebatch_wi_delete(a->wb, kl.k[i], kl.len[i]);
	keylist_free(&kl);
	return ret;
}

static int copy_prefix(struct actx *a, char type, uint64_t from, uint64_t to)
{
	struct keylist kl = { 0 }, vl = { 0 };
	struct rs_key p, k;
	size_t i;
	int ret;

	key_nid_sub(&p, type, from, NULL, 0);
	ret = collect_keys(a, &p, NULL, 0, NULL, 0, true, &kl, &vl);
	for (i = 0; !ret && i < kl.n; i++) {
		key_nid_sub(&k, type, to, kl.k[i] + 9, kl.len[i] - 9);
		rocksdb_writebatch_wi_put(a->wb, k.buf, k.len, vl.k[i], vl.len[i]);
	}
	keylist_free(&kl);
	keylist_free(&vl);
	return ret;
}

static int remove_object(struct actx *a, const char *coll, const void *name, size_t nlen,
			 struct rs_onode *o)
{
	struct rs_key k;
	uint32_t i;
	int ret = 0;

	for (i = 0; !ret && i < o->n_ext; i++)
		ret = release_range(a, o->ext[i].pofs, o->ext[i].len);
	if (!ret)
		ret = delete_prefix(a, 'X', o->nid);
	if (!ret)
		ret = delete_prefix(a, 'M', o->nid);
	if (ret)
		return ret;
	key_nid_sub(&k, 'H', o->nid, NULL, 0);
	rocksdb_writebatch_wi_delete(a->wb, k.buf, k.len);
	key_onode(&k, coll, name, nlen);
	rocksdb_writebatch_wi_delete(a->wb, k.buf, k.len);
	keyvec_push(&a->st->ocache_dirty, &k);
	a->c->d_objects--;
	return 0;
}

static void new_onode(struct actx *a, struct rs_onode *o)
{
	memset(o, 0, sizeof(*o));
	o->nid = a->st->next_nid++;
	a->c->d_objects++;
}

static int do_clone(struct actx *a, const struct rs_op *op, struct rs_onode *src)
{
	struct rs_onode dst;
	uint32_t i;
	int ret;

	if (op->nlen == op->n2len && !memcmp(op->name, op->name2, op->nlen))
		return 0;
	ret = onode_load(a->st, a->wb, op->coll, op->name2, op->n2len, &dst);
	if (!ret) {
		ret = remove_object(a, op->coll, op->name2, op->n2len, &dst);
		onode_free(&dst);
		if (ret)
			return ret;
	} else if (ret != -ENOENT) {
		return ret;
	}
	ret = 0;
	new_onode(a, &dst);
	dst.alloc_hint = src->alloc_hint;
	if (src->inline_len) {
		ret = grow_inline(&dst, src->inline_len);
		if (!ret)
			memcpy(dst.inl, src->inl, src->inline_len);
	}
	/* Share the units: one more reference each, no data copied. */
	if (src->n_ext)
		a->st->shared_any = true;
	for (i = 0; !ret && i < src->n_ext; i++) {
		const struct rs_extent *se = &src->ext[i];
		struct rs_extent e = { se->lofs, se->pofs, se->len, NULL };
		size_t nc = se->len / a->st->csum_block;
		uint64_t u;
		uint32_t extra;

		for (u = se->pofs; !ret && u < se->pofs + se->len; u += a->st->min_alloc) {
			ret = ref_get(a, u, &extra);
			if (!ret)
				ref_set(a, u, extra + 1);
		}
		e.crcs = ret ? NULL : malloc(4 * nc);
		if (!ret && !e.crcs)
			ret = -ENOMEM;
		if (ret)
			break;
		memcpy(e.crcs, se->crcs, 4 * nc);
		ret = onode_insert(&dst, &e, a->st->csum_block);
		if (ret)
			free(e.crcs);
	}
	dst.size = src->size;
	if (!ret)
		ret = copy_prefix(a, 'X', src->nid, dst.nid);
	if (!ret)
		ret = copy_prefix(a, 'M', src->nid, dst.nid);
	if (!ret)
		ret = copy_prefix(a, 'H', src->nid, dst.nid);
	if (!ret)
		ret = store_onode(a, op->coll, op->name2, op->n2len, &dst);
	onode_free(&dst);
	return ret;
}

/*
 * Move @src, the object op->coll/op->name, to op->coll2/op->name2.  Only
 * its record moves: it is put under the new key with its object id, so its
 * attributes, omap and header (keyed by that id) and its units (in its
 * extent map) go with it, and no data is copied or read.  An object already
 * at the destination is removed first, as by rawstore_txn_remove(): its
 * units are freed (or lose a reference, if shared) when the batch commits.
 * Both keys go to the group's list of changed records, so the onode cache
 * drops them at the commit.
 */
static int do_rename(struct actx *a, const struct rs_op *op, struct rs_onode *src)
{
	struct rs_onode old;
	struct rs_key k;
	int ret;

	ret = coll_check(a, op->coll2);
	if (ret == -ENOENT)
		return rs_err(a->st, ret, "rename: destination collection %s does not exist",
			      op->coll2);
	if (ret)
		return ret;
	ret = onode_load(a->st, a->wb, op->coll2, op->name2, op->n2len, &old);
	if (!ret) {
		ret = remove_object(a, op->coll2, op->name2, op->n2len, &old);
		onode_free(&old);
		if (ret)
			return ret;
	} else if (ret != -ENOENT) {
		return ret;
	}
	key_onode(&k, op->coll, op->name, op->nlen);
	rocksdb_writebatch_wi_delete(a->wb, k.buf, k.len);
	keyvec_push(&a->st->ocache_dirty, &k);
	return store_onode(a, op->coll2, op->name2, op->n2len, src);
}

static int coll_op(struct actx *a, const struct rs_op *op)
{
	struct rs_key k;
	struct rs_iter *it;
	int ret = coll_check(a, op->coll);

	/* the collection's existence changes now */
	txn_forget(a->st);

	if (op->type == OP_COLL_CREATE) {
		struct rs_disk_coll c = { htole32(RS_COLL_VERSION), 0 };

		if (!ret)
			return -EEXIST;
		if (ret != -ENOENT)
			return ret;
		key_coll(&k, op->coll);
		rocksdb_writebatch_wi_put(a->wb, k.buf, k.len, (const char *)&c, sizeof(c));
		a->c->d_colls++;
		return 0;
	}
	if (ret)
		return ret;
	key_onode_prefix(&k, op->coll);
	ret = meta_iter_new(a->st->meta, a->wb, k.buf, k.len, &it);
	if (ret)
		return ret;
	if (meta_iter_valid(it))
		ret = -ENOTEMPTY;
	meta_iter_free(it);
	if (ret)
		return ret;
	key_coll(&k, op->coll);
	rocksdb_writebatch_wi_delete(a->wb, k.buf, k.len);
	a->c->d_colls--;
	return 0;
}

static bool op_creates(enum op_type t)
{
	return t == OP_TOUCH || t == OP_WRITE || t == OP_ZERO || t == OP_ALLOC_HINT;
}

static int apply_op(struct actx *a, const struct rs_op *op)
{
	struct rs_onode o;
	struct rs_key k;
	char *v;
	size_t vl;
	bool dirty = true;
	int ret;

	if (op->type == OP_COLL_CREATE || op->type == OP_COLL_REMOVE)
		return coll_op(a, op);
	ret = coll_check(a, op->coll);
	if (ret)
		return ret;
	ret = onode_load(a->st, a->wb, op->coll, op->name, op->nlen, &o);
	if (ret == -ENOENT && op_creates(op->type)) {
		new_onode(a, &o);
		ret = 0;
	} else if (ret) {
		return ret;
	}

	switch (op->type) {
	case OP_TOUCH:
		break;
	case OP_WRITE:
		if (op->dbuf && !op->borrowed) {
			PERF_ADD(a->st, data_copies, 1);
			PERF_ADD(a->st, data_copy_bytes, op->dlen);
			PERF_ADD(a->st, iobuf_fresh, op->fresh);
		}
		a->wop = op;
		ret = do_write(a, &o, op->off, op->data, op->len);
		a->wop = NULL;
		break;
	case OP_ZERO:
		ret = do_zero(a, &o, op->off, op->len);
		break;
	case OP_TRUNCATE:
		ret = do_truncate(a, &o, op->off);
		break;
	case OP_ALLOC_HINT:
		o.alloc_hint = op->len;
		break;
	case OP_REMOVE:
		ret = remove_object(a, op->coll, op->name, op->nlen, &o);
		dirty = false;
		break;
	case OP_CLONE:
		ret = do_clone(a, op, &o);
		dirty = false;
		break;
	case OP_RENAME:
		ret = do_rename(a, op, &o);
		dirty = false;
		break;
	case OP_SETATTR:
	case OP_RMATTR:
		key_nid_sub(&k, 'X', o.nid, op->key, op->klen);
		dirty = false;
		if (op->type == OP_SETATTR) {
			rocksdb_writebatch_wi_put(a->wb, k.buf, k.len, op->data, op->dlen);
			break;
		}
		ret = meta_get(a->st->meta, a->wb, &k, &v, &vl);
		if (ret == -ENOENT)
			ret = -ENODATA;
		if (ret)
			break;
		rocksdb_free(v);
		rocksdb_writebatch_wi_delete(a->wb, k.buf, k.len);
		break;
	case OP_OMAP_SET:
		key_nid_sub(&k, 'M', o.nid, op->key, op->klen);
		rocksdb_writebatch_wi_put(a->wb, k.buf, k.len, op->data, op->dlen);
		dirty = false;
		break;
	case OP_OMAP_RM:
		key_nid_sub(&k, 'M', o.nid, op->key, op->klen);
		rocksdb_writebatch_wi_delete(a->wb, k.buf, k.len);
		dirty = false;
		break;
	case OP_OMAP_RMRANGE: {
		struct keylist kl = { 0 }, unused = { 0 };
		size_t i;

		key_nid_sub(&k, 'M', o.nid, NULL, 0);
		ret = collect_keys(a, &k, op->key, op->klen, op->key2, op->k2len, false, &kl,
				   &unused);
		for (i = 0; !ret && i < kl.n; i++)
			rocksdb_writebatch_wi_delete(a->wb, kl.k[i], kl.len[i]);
		keylist_free(&kl);
		dirty = false;
		break;
	}
	case OP_OMAP_SETHEADER:
		key_nid_sub(&k, 'H', o.nid, NULL, 0);
		rocksdb_writebatch_wi_put(a->wb, k.buf, k.len, op->data, op->dlen);
		dirty = false;
		break;
	default:
		ret = -EINVAL;
	}
	if (!ret && dirty)
		ret = store_onode(a, op->coll, op->name, op->nlen, &o);
	onode_free(&o);
	return ret;
}

int txn_apply(struct rawstore *st, struct rawstore_txn *t, struct rs_txn_ctx *ctx)
{
	struct actx a = { st, ctx, st->wb, NULL };
	unsigned int i;
	int ret;

	t->failed_op = -1;
	for (i = 0; i < t->n; i++) {
		ret = apply_op(&a, &t->ops[i]);
		if (ret) {
			t->failed_op = (int)i;
			return ret;
		}
	}
	return 0;
}
