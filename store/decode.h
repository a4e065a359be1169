/* SPDX-License-Identifier: MIT */
/*
 * decode.h: validating decoders of the small RocksDB records (see ondisk.h).
 * Pure functions: bytes in, a struct out, or -EUCLEAN with a message naming
 * the record in rawstore_errmsg().  No RocksDB, no I/O.  Every range check
 * is overflow-safe (len > end - off, never off + len > end).
 */
#ifndef RAWSTORE_DECODE_H
#define RAWSTORE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The geometry records are checked against (from the superblock). */
struct rs_limits {
	uint64_t data_start, data_end;	/* bytes: the data area */
	uint32_t min_alloc;		/* bytes: the allocation unit, power of two */
	uint32_t csum_block;		/* bytes: divides min_alloc, power of two */
};

/* True if [off, off + len) is a non-empty unit-aligned range inside the
 * data area of @lim. */
bool decode_range_ok(const struct rs_limits *lim, uint64_t off, uint64_t len);

/* A free ('F') or freed-not-yet-punched ('P') extent: key be64 offset, value
 * le64 length.  @type names the record in the message. */
struct rs_ext_rec {
	uint64_t off, len;		/* bytes on the device */
};
int decode_ext_rec(char type, const void *key, size_t klen, const void *val, size_t vlen,
		   const struct rs_limits *lim, struct rs_ext_rec *out);

/* A deferred write ('D'): key be64 sequence, value struct rs_disk_deferred
 * and the data.  out->data points into @val. */
struct rs_deferred_rec {
	uint64_t seq;
	uint64_t pofs;			/* bytes on the device */
	uint32_t len;			/* bytes */
	const void *data;
};
int decode_deferred_rec(const void *key, size_t klen, const void *val, size_t vlen,
			const struct rs_limits *lim, struct rs_deferred_rec *out);

/* A reference record ('R'): key be64 unit offset, value le32 extra users
 * (>= 1: a unit with no extra user has no record). */
struct rs_ref_rec {
	uint64_t off;			/* bytes on the device */
	uint32_t extra;
};
int decode_ref_rec(const void *key, size_t klen, const void *val, size_t vlen,
		   const struct rs_limits *lim, struct rs_ref_rec *out);

/* The object and collection counts ('K'): struct rs_disk_counts. */
struct rs_counts_rec {
	uint64_t objects, collections;
};
int decode_counts_rec(const void *val, size_t vlen, struct rs_counts_rec *out);

#endif /* RAWSTORE_DECODE_H */
