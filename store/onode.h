/* SPDX-License-Identifier: MIT */
/*
 * onode.h: the in-memory object record and its extent map.  Extents map
 * unit-aligned logical ranges of the object to unit-aligned device ranges,
 * are sorted by logical offset and never overlap; each carries one crc32c
 * per checksum block.
 */
#ifndef RAWSTORE_ONODE_H
#define RAWSTORE_ONODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "decode.h"

struct rs_extent {
	uint64_t lofs;			/* bytes in the object */
	uint64_t pofs;			/* bytes on the device */
	uint32_t len;			/* bytes */
	uint32_t *crcs;			/* len / csum_block entries */
};

struct rs_onode {
	uint64_t nid;
	uint64_t size;			/* bytes */
	uint64_t alloc_hint;		/* bytes */
	uint8_t *inl;			/* inline data (inline_len bytes) */
	uint32_t inline_len;
	uint32_t n_ext, cap_ext;
	struct rs_extent *ext;
};

/* Freed device ranges collected while editing a map. */
struct pext_vec {
	struct pext *v;
	size_t n, cap;
};

int pext_push(struct pext_vec *pv, uint64_t off, uint64_t len);
void pext_vec_free(struct pext_vec *pv);

void onode_free(struct rs_onode *o);
/* Encode into a malloc'd buffer. */
int onode_encode(const struct rs_onode *o, uint32_t csum_block, char **out, size_t *outlen);
/*
 * Decode and validate every field: crc, version, reserved bits, object id,
 * sizes, and each extent (unit aligned, inside the data area of @lim, within
 * the size, sorted and not overlapping), overflow-safe.  -EUCLEAN with a
 * message naming the record and the field if it is damaged.
 */
int onode_decode(const char *buf, size_t len, const struct rs_limits *lim, struct rs_onode *o);

/* Index of the first extent whose end is > @lofs (n_ext if none). */
uint32_t onode_find(const struct rs_onode *o, uint64_t lofs);
/* Unmap [a, b) (unit aligned), pushing freed device ranges to @freed. */
int onode_punch(struct rs_onode *o, uint64_t a, uint64_t b, uint32_t csum_block,
		struct pext_vec *freed);
/* Map @e (takes ownership of e->crcs); the range must be unmapped. */
int onode_insert(struct rs_onode *o, struct rs_extent *e, uint32_t csum_block);
uint64_t onode_allocated(const struct rs_onode *o);

#endif /* RAWSTORE_ONODE_H */
