// SPDX-License-Identifier: MIT
/*
 * fuzz_onode: onode_decode() on arbitrary bytes never crashes, never reads
 * out of bounds, never leaks, and either refuses the record (-EUCLEAN with
 * a message) or returns an onode that the rest of the store can trust:
 * extents non-empty, unit aligned, inside the data area, sorted, not
 * overlapping, within the size (all checked here without wrap-around), and
 * it re-encodes and decodes to the same object.
 *
 * Input: one control byte, then the record.
 *   bits 0-1  checksum block = 512 << n bytes (512..4096)
 *   bit 2     recompute the record's trailing crc32c first, so that the
 *             fuzzer reaches the field checks behind the crc
 *   bit 3     allocation unit 64 KiB instead of 4 KiB
 * The data area is [1 MiB, 1 GiB).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rawstore/rawstore.h"
#include "decode.h"
#include "ondisk.h"
#include "onode.h"
#include "util.h"

static void bad(const char *why, uint32_t i)
{
	fprintf(stderr, "onode_decode accepted a record whose extent %u %s\n", i, why);
	abort();
}

/* What every user of a decoded onode relies on, checked without overflow. */
static void check_map(const struct rs_onode *o, const struct rs_limits *lim)
{
	unsigned __int128 size_up = ((unsigned __int128)o->size + lim->min_alloc - 1) /
				    lim->min_alloc * lim->min_alloc;
	unsigned __int128 prev_end = 0;
	uint32_t i;

	if (o->inline_len && !o->inl)
		abort();
	for (i = 0; i < o->n_ext; i++) {
		const struct rs_extent *e = &o->ext[i];
		unsigned __int128 lend = (unsigned __int128)e->lofs + e->len;
		unsigned __int128 pend = (unsigned __int128)e->pofs + e->len;

		if (!e->len || (e->lofs | e->pofs | e->len) % lim->min_alloc ||
		    e->len % lim->csum_block || !e->crcs)
			bad("is empty or misaligned", i);
		if (e->pofs < lim->data_start || pend > lim->data_end)
			bad("lies outside the data area", i);
		if (lend > size_up)
			bad("lies past the size", i);
		if (e->lofs < prev_end)
			bad("is unsorted or overlaps the previous one", i);
		prev_end = lend;
	}
}

static void same_onode(const struct rs_onode *a, const struct rs_onode *b, uint32_t cb)
{
	uint32_t i;

	if (a->nid != b->nid || a->size != b->size || a->alloc_hint != b->alloc_hint ||
	    a->inline_len != b->inline_len || a->n_ext != b->n_ext ||
	    (a->inline_len && memcmp(a->inl, b->inl, a->inline_len)))
		abort();
	for (i = 0; i < a->n_ext; i++) {
		const struct rs_extent *x = &a->ext[i], *y = &b->ext[i];

		if (x->lofs != y->lofs || x->pofs != y->pofs || x->len != y->len ||
		    memcmp(x->crcs, y->crcs, 4 * (size_t)(x->len / cb)))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_onode o, o2;
	struct rs_limits lim;
	uint32_t cb;
	char *rec, *enc;
	size_t len, enclen;
	int ret;

	if (size < 1)
		return 0;
	cb = 512u << (data[0] & 3);
	lim.data_start = 1u << 20;
	lim.data_end = 1u << 30;
	lim.min_alloc = data[0] & 8 ? 65536 : 4096;
	lim.csum_block = cb;
	len = size - 1;
	/* A copy of exactly the record's size, so ASan sees any overread. */
	rec = malloc(len ? len : 1);
	if (!rec)
		return 0;
	memcpy(rec, data + 1, len);
	if ((data[0] & 4) && len >= 4)
		put_le32(rec + len - 4, rs_crc32c(rec, len - 4));
	ret = onode_decode(rec, len, &lim, &o);
	if (ret == -ENOMEM)
		goto out;
	if (ret) {
		if (ret != -EUCLEAN) {
			fprintf(stderr, "onode_decode returned %d, not 0 or -EUCLEAN\n", ret);
			abort();
		}
		/* A refused record leaves nothing to free, and says why. */
		if (o.ext || o.inl || o.n_ext || !*rawstore_errmsg())
			abort();
		goto out;
	}
	check_map(&o, &lim);
	onode_find(&o, o.size / 2);
	onode_allocated(&o);
	if (onode_encode(&o, cb, &enc, &enclen) == 0) {
		if (onode_decode(enc, enclen, &lim, &o2) != 0)
			abort();
		same_onode(&o, &o2, cb);
		onode_free(&o2);
		free(enc);
	}
	onode_free(&o);
out:
	free(rec);
	return 0;
}
