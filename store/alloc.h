/* SPDX-License-Identifier: MIT */
/*
 * alloc.h: a set of disjoint, maximally merged extents (bytes), indexed by
 * offset and (optionally) by size, each index a treap whose priorities are
 * hashes of the key, so the shape depends only on the contents: behaviour
 * is deterministic.  Insert, remove and allocate are O(log n) expected.
 *
 * The free-space allocator is an extent set indexed by size; the set of
 * freed-but-unpunched ranges is one indexed by offset only.  Observers see
 * every change of the merged representation (key offset -> length), which
 * the store mirrors into RocksDB in the same batch.
 */
#ifndef RAWSTORE_ALLOC_H
#define RAWSTORE_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ext_node;

struct extset_observer {
	void (*put)(void *arg, uint64_t off, uint64_t len);
	void (*del)(void *arg, uint64_t off);
	void *arg;
	/* Optional: the extent at @off only changed its length (else put). */
	void (*resize)(void *arg, uint64_t off, uint64_t len);
};

struct extset {
	struct ext_node *root[2];	/* [0] by offset, [1] by (len, offset) */
	bool by_size;
	uint64_t total;			/* bytes in the set */
	uint64_t count;			/* extents */
	const struct extset_observer *obs;
};

struct pext {
	uint64_t off;			/* bytes */
	uint64_t len;			/* bytes */
};

void extset_init(struct extset *s, bool by_size);
void extset_destroy(struct extset *s);
/* Add [off, off+len); -EEXIST if any byte is already in the set. */
int extset_insert(struct extset *s, uint64_t off, uint64_t len);
/* Remove every byte of [off, off+len) that is in the set; returns bytes removed. */
uint64_t extset_remove(struct extset *s, uint64_t off, uint64_t len);
/* Bytes of [off, off+len) present in the set. */
uint64_t extset_overlap(const struct extset *s, uint64_t off, uint64_t len);
/* Largest extent length (0 if empty). */
uint64_t extset_largest(const struct extset *s);
/* Visit extents in offset order; stop when @fn returns non-zero. */
int extset_walk(const struct extset *s, int (*fn)(void *arg, uint64_t off, uint64_t len),
		void *arg);
/* First extent at or after @off; false if none. */
bool extset_next(const struct extset *s, uint64_t off, struct pext *out);
/* First extent that ends after @off (it may contain @off); false if none. */
bool extset_find(const struct extset *s, uint64_t off, struct pext *out);

/*
 * Allocate @len bytes (a multiple of the caller's unit) as one or more
 * extents, preferring: the free space starting at @hint (contiguity with
 * the previous extent), then the smallest extent that holds @want bytes
 * (@want >= @len: room for an expected object size), then the smallest
 * that holds @len, then the largest extents.  Returns the number of pieces
 * stored in *@out (malloc'd), or -ENOSPC with nothing allocated.
 */
int extset_alloc(struct extset *s, uint64_t len, uint64_t hint, uint64_t want,
		 struct pext **out);

/* As extset_alloc, but one extent or -ENOSPC. */
int extset_alloc_contig(struct extset *s, uint64_t len, uint64_t hint, uint64_t want,
			struct pext **out);

/* 1 - largest / total: 0 for one free extent, towards 1 when fragmented. */
double extset_frag_score(const struct extset *s);

#endif /* RAWSTORE_ALLOC_H */
