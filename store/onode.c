// SPDX-License-Identifier: MIT
/* onode.c: onode records and extent map editing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ondisk.h"
#include "onode.h"
#include "util.h"

/* Merged extents stay below this so that len fits in 32 bits. */
#define EXTENT_MAX (1U << 30)

int pext_push(struct pext_vec *pv, uint64_t off, uint64_t len)
{
	if (pv->n == pv->cap) {
		size_t cap = pv->cap ? pv->cap * 2 : 16;
		struct pext *v = realloc(pv->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		pv->v = v;
		pv->cap = cap;
	}
	pv->v[pv->n].off = off;
	pv->v[pv->n].len = len;
	pv->n++;
	return 0;
}

void pext_vec_free(struct pext_vec *pv)
{
	free(pv->v);
	memset(pv, 0, sizeof(*pv));
}

void onode_free(struct rs_onode *o)
{
	uint32_t i;

	if (!o)
		return;
	for (i = 0; i < o->n_ext; i++)
		free(o->ext[i].crcs);
	free(o->ext);
	free(o->inl);
	memset(o, 0, sizeof(*o));
}

int onode_encode(const struct rs_onode *o, uint32_t csum_block, char **out, size_t *outlen)
{
	size_t len = sizeof(struct rs_disk_onode) + o->inline_len + 4;
	struct rs_disk_onode h;
	uint32_t i;
	char *p, *buf;

	for (i = 0; i < o->n_ext; i++)
		len += sizeof(struct rs_disk_extent) + 4 * (o->ext[i].len / csum_block);
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	memset(&h, 0, sizeof(h));
	h.version = RS_ONODE_VERSION;
	h.n_extents = htole32(o->n_ext);
	h.nid = htole64(o->nid);
	h.size = htole64(o->size);
	h.alloc_hint = htole64(o->alloc_hint);
	h.inline_len = htole32(o->inline_len);
	memcpy(buf, &h, sizeof(h));
	p = buf + sizeof(h);
	if (o->inline_len)
		memcpy(p, o->inl, o->inline_len);
	p += o->inline_len;
	for (i = 0; i < o->n_ext; i++) {
		struct rs_disk_extent de = {
			.lofs = htole64(o->ext[i].lofs),
			.pofs = htole64(o->ext[i].pofs),
			.len = htole32(o->ext[i].len),
		};

		memcpy(p, &de, sizeof(de));
		p += sizeof(de);
	}
	for (i = 0; i < o->n_ext; i++) {
		uint32_t j, nc = o->ext[i].len / csum_block;

		for (j = 0; j < nc; j++, p += 4)
			put_le32(p, o->ext[i].crcs[j]);
	}
	put_le32(p, rs_crc32c(buf, (size_t)(p - buf)));
	*out = buf;
	*outlen = len;
	return 0;
}

#define BAD(...) rs_err(NULL, -EUCLEAN, "object record: " __VA_ARGS__)

/* Check extent @i of @o against @lim and the extent before it. */
static int extent_ok(const struct rs_onode *o, uint32_t i, const struct rs_limits *lim)
{
	const struct rs_extent *e = &o->ext[i];
	uint64_t U = lim->min_alloc;

	if (!e->len || !is_aligned(e->lofs | e->pofs | e->len, U) || e->len % lim->csum_block)
		return BAD("extent %u (object offset %llu, device offset %llu, %u bytes) is "
			   "empty or not aligned to the %llu-byte unit", i,
			   (unsigned long long)e->lofs, (unsigned long long)e->pofs, e->len,
			   (unsigned long long)U);
	if (e->pofs < lim->data_start || e->pofs > lim->data_end ||
	    e->len > lim->data_end - e->pofs)
		return BAD("extent %u [%llu, +%u) lies outside the data area [%llu, %llu)", i,
			   (unsigned long long)e->pofs, e->len,
			   (unsigned long long)lim->data_start, (unsigned long long)lim->data_end);
	/* lofs is bounded by the size, so these sums cannot wrap */
	if (e->lofs > o->size || e->len > round_up(o->size, U) - e->lofs)
		return BAD("extent %u at object offset %llu lies past the size %llu", i,
			   (unsigned long long)e->lofs, (unsigned long long)o->size);
	if (i && e->lofs < o->ext[i - 1].lofs + o->ext[i - 1].len)
		return BAD("extent %u at object offset %llu is unsorted or overlaps extent %u",
			   i, (unsigned long long)e->lofs, i - 1);
	return 0;
}

int onode_decode(const char *buf, size_t len, const struct rs_limits *lim, struct rs_onode *o)
{
	struct rs_disk_onode h;
	const char *p, *end;
	uint32_t i, n;

	memset(o, 0, sizeof(*o));
	if (len < sizeof(h) + 4)
		return BAD("%zu bytes, shorter than its header", len);
	if (get_le32(buf + len - 4) != rs_crc32c(buf, len - 4))
		return BAD("crc mismatch");
	memcpy(&h, buf, sizeof(h));
	if (h.version != RS_ONODE_VERSION || h.flags || h.reserved0 || h.reserved1)
		return BAD("version %u, flags %#x or reserved bits unknown", h.version, h.flags);
	end = buf + len - 4;
	p = buf + sizeof(h);
	o->nid = le64toh(h.nid);
	o->size = le64toh(h.size);
	o->alloc_hint = le64toh(h.alloc_hint);
	o->inline_len = le32toh(h.inline_len);
	n = le32toh(h.n_extents);
	if (!o->nid)
		return BAD("object id 0");
	if (o->size > RAWSTORE_OBJECT_MAX || o->alloc_hint > RAWSTORE_OBJECT_MAX)
		return BAD("size %llu or allocation hint %llu beyond the object limit",
			   (unsigned long long)o->size, (unsigned long long)o->alloc_hint);
	if (o->inline_len > o->size || (o->inline_len && n))
		return BAD("%u inline bytes with size %llu and %u extents", o->inline_len,
			   (unsigned long long)o->size, n);
	if ((size_t)(end - p) < o->inline_len ||
	    (size_t)(end - p) - o->inline_len < (size_t)n * sizeof(struct rs_disk_extent))
		return BAD("%u inline bytes and %u extents do not fit in %zu bytes",
			   o->inline_len, n, len);
	if (o->inline_len) {
		o->inl = malloc(o->inline_len);
		if (!o->inl)
			return -ENOMEM;
		memcpy(o->inl, p, o->inline_len);
	}
	p += o->inline_len;
	o->ext = calloc(n ? n : 1, sizeof(*o->ext));
	if (!o->ext)
		goto out_nomem;
	o->cap_ext = n ? n : 1;
	for (i = 0; i < n; i++) {
		struct rs_disk_extent de;

		memcpy(&de, p, sizeof(de));
		p += sizeof(de);
		o->ext[i].lofs = le64toh(de.lofs);
		o->ext[i].pofs = le64toh(de.pofs);
		o->ext[i].len = le32toh(de.len);
		o->n_ext = i + 1;
		if (de.reserved) {
			BAD("extent %u has reserved bits set", i);
			goto out_corrupt;
		}
		if (extent_ok(o, i, lim))
			goto out_corrupt;
	}
	for (i = 0; i < n; i++) {
		uint32_t j, nc = o->ext[i].len / lim->csum_block;

		if ((size_t)(end - p) < 4 * (size_t)nc) {
			BAD("checksums of extent %u do not fit", i);
			goto out_corrupt;
		}
		o->ext[i].crcs = malloc(4 * (size_t)nc);
		if (!o->ext[i].crcs)
			goto out_nomem;
		for (j = 0; j < nc; j++, p += 4)
			o->ext[i].crcs[j] = get_le32(p);
	}
	if (p != end) {
		BAD("%zu bytes after the checksums", (size_t)(end - p));
		goto out_corrupt;
	}
	return 0;

out_corrupt:
	onode_free(o);
	return -EUCLEAN;
out_nomem:
	onode_free(o);
	return -ENOMEM;
}

uint32_t onode_find(const struct rs_onode *o, uint64_t lofs)
{
	uint32_t lo = 0, hi = o->n_ext;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (o->ext[mid].lofs + o->ext[mid].len > lofs)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static int ext_reserve(struct rs_onode *o, uint32_t extra)
{
	if (o->n_ext + extra > o->cap_ext) {
		uint32_t cap = (o->n_ext + extra) * 2;
		struct rs_extent *v = realloc(o->ext, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		o->ext = v;
		o->cap_ext = cap;
	}
	return 0;
}

int onode_punch(struct rs_onode *o, uint64_t a, uint64_t b, uint32_t csum_block,
		struct pext_vec *freed)
{
	uint32_t i = onode_find(o, a);
	int ret;

	ret = ext_reserve(o, 1);
	if (ret)
		return ret;
	while (i < o->n_ext && o->ext[i].lofs < b) {
		struct rs_extent *e = &o->ext[i];
		uint64_t eend = e->lofs + e->len;
		uint64_t s = max_u64(e->lofs, a), t = min_u64(eend, b);

		ret = pext_push(freed, e->pofs + (s - e->lofs), t - s);
		if (ret)
			return ret;
		if (e->lofs < s && t < eend) {
			/* split: keep head in place, tail in a new slot */
			struct rs_extent tail;
			uint64_t skip = t - e->lofs;
			uint32_t nc = (uint32_t)((eend - t) / csum_block);

			tail.lofs = t;
			tail.pofs = e->pofs + skip;
			tail.len = (uint32_t)(eend - t);
			tail.crcs = malloc(4 * (size_t)nc);
			if (!tail.crcs)
				return -ENOMEM;
			memcpy(tail.crcs, e->crcs + skip / csum_block, 4 * (size_t)nc);
			e->len = (uint32_t)(s - e->lofs);
			memmove(&o->ext[i + 2], &o->ext[i + 1],
				(o->n_ext - i - 1) * sizeof(*e));
			o->ext[i + 1] = tail;
			o->n_ext++;
			return 0;
		}
		if (e->lofs < s) {
			e->len = (uint32_t)(s - e->lofs);
			i++;
		} else if (t < eend) {
			uint64_t skip = t - e->lofs;

			memmove(e->crcs, e->crcs + skip / csum_block,
				4 * ((eend - t) / csum_block));
			e->pofs += skip;
			e->lofs = t;
			e->len = (uint32_t)(eend - t);
			i++;
		} else {
			free(e->crcs);
			memmove(e, e + 1, (o->n_ext - i - 1) * sizeof(*e));
			o->n_ext--;
		}
	}
	return 0;
}

/* Merge ext[i] into ext[i-1] if logically and physically contiguous. */
static int try_merge(struct rs_onode *o, uint32_t i, uint32_t csum_block)
{
	struct rs_extent *p, *e;
	uint32_t *crcs, pn, en;

	if (i == 0 || i >= o->n_ext)
		return 0;
	p = &o->ext[i - 1];
	e = &o->ext[i];
	if (p->lofs + p->len != e->lofs || p->pofs + p->len != e->pofs ||
	    (uint64_t)p->len + e->len > EXTENT_MAX)
		return 0;
	pn = p->len / csum_block;
	en = e->len / csum_block;
	crcs = realloc(p->crcs, 4 * ((size_t)pn + en));
	if (!crcs)
		return 0;	/* unmerged is still correct */
	memcpy(crcs + pn, e->crcs, 4 * (size_t)en);
	p->crcs = crcs;
	p->len += e->len;
	free(e->crcs);
	memmove(e, e + 1, (o->n_ext - i - 1) * sizeof(*e));
	o->n_ext--;
	return 1;
}

int onode_insert(struct rs_onode *o, struct rs_extent *e, uint32_t csum_block)
{
	uint32_t i = onode_find(o, e->lofs);
	int ret;

	ret = ext_reserve(o, 1);
	if (ret)
		return ret;
	memmove(&o->ext[i + 1], &o->ext[i], (o->n_ext - i) * sizeof(*e));
	o->ext[i] = *e;
	o->n_ext++;
	try_merge(o, i + 1, csum_block);
	if (try_merge(o, i, csum_block))
		return 0;
	return 0;
}

uint64_t onode_allocated(const struct rs_onode *o)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < o->n_ext; i++)
		sum += o->ext[i].len;
	return sum;
}
