/* SPDX-License-Identifier: MIT */
/*
 * rawstore/fsck.h: consistency check of an open store.
 *
 * Checks that both superblock copies are intact, that every allocated
 * unit belongs to exactly one object (or, shared by clones, has a matching
 * reference record), that no extent is both used and free, that free
 * space is recorded merged and aligned, that sizes and extent maps agree,
 * that every freed-but-unpunched range is free, that no attribute/omap
 * record is orphaned, that no two object records share an object id, and
 * with deep=1 that every data checksum matches.
 * repair=1 returns leaked space to the free list (not while an
 * undecodable onode might own it), deletes orphaned records and rewrites
 * a damaged superblock copy.  Runs on the commit thread, so concurrent
 * transactions wait for it.
 */
#ifndef RAWSTORE_FSCK_H
#define RAWSTORE_FSCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rawstore;

enum rawstore_fsck_kind {
	RAWSTORE_FSCK_CORRUPT_RECORD = 1,	/* record fails its crc or decoding */
	RAWSTORE_FSCK_BAD_EXTENT,	/* misaligned or outside the data area */
	RAWSTORE_FSCK_BAD_MAP,		/* extent map vs size / csum count; object
					 * id out of range or used twice; counts */
	RAWSTORE_FSCK_SHARED,		/* unit used by several extents without a
					 * matching reference record (clones) */
	RAWSTORE_FSCK_USED_AND_FREE,	/* extent both used and free */
	RAWSTORE_FSCK_BAD_FREELIST,	/* free list unsorted/unmerged/misaligned */
	RAWSTORE_FSCK_LEAK,		/* space neither used nor free */
	RAWSTORE_FSCK_UNPUNCHED_USED,	/* unpunched range not free */
	RAWSTORE_FSCK_ORPHAN,		/* attr/omap/object without owner */
	RAWSTORE_FSCK_CSUM,		/* data checksum mismatch (deep) */
	RAWSTORE_FSCK_IO,		/* read error (deep) */
	RAWSTORE_FSCK_ZEROED_NOT_FREE,	/* range recorded as zeroed is not free */
	RAWSTORE_FSCK_IN_FLIGHT,	/* range left being zeroed or punched by a
					 * crash (a read-write open puts it back) */
	RAWSTORE_FSCK_JOURNAL,		/* device journal: the position record "J"
					 * is missing, malformed or ahead of the ring */
};

struct rawstore_fsck_problem {
	enum rawstore_fsck_kind kind;
	const char *kind_name;		/* e.g. "leak" */
	const char *message;		/* plain words */
	const char *coll;		/* NULL if not about an object */
	const void *name;
	size_t name_len;
	uint64_t offset;		/* bytes on the device, if relevant */
	uint64_t length;		/* bytes */
	int repaired;
};

typedef void (*rawstore_fsck_fn)(void *arg, const struct rawstore_fsck_problem *p);

struct rawstore_fsck_opts {
	size_t struct_size;
	int deep;			/* read and verify every checksum */
	int repair;			/* fix leaks and orphans */
	rawstore_fsck_fn fn;		/* called per problem, may be NULL */
	void *arg;
};

void rawstore_fsck_opts_init(struct rawstore_fsck_opts *o);

struct rawstore_fsck_result {
	size_t struct_size;
	uint64_t objects;
	uint64_t extents;
	uint64_t bytes_checked;		/* deep: bytes read and verified */
	uint64_t errors;		/* problems found, leaks included */
	uint64_t leaks;
	uint64_t leaked_bytes;
	uint64_t repaired;
};

/*
 * Returns 0 if the store is consistent (or every problem was repaired),
 * -EUCLEAN if problems remain, or another -errno if the check could not
 * run.  @res may be NULL.
 */
int rawstore_fsck(struct rawstore *st, const struct rawstore_fsck_opts *o,
		  struct rawstore_fsck_result *res);

#ifdef __cplusplus
}
#endif

#endif /* RAWSTORE_FSCK_H */
