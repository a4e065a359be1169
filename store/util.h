/* SPDX-License-Identifier: MIT */
/* util.h: logging, error messages, units and byte-order helpers. */
#ifndef RAWSTORE_UTIL_H
#define RAWSTORE_UTIL_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "rawstore/store.h"

struct rawstore;

/* Log through the store's log function (@st may be NULL: stderr). */
void rs_log(struct rawstore *st, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Record the thread's last error message, log it, and return @err. */
int rs_err(struct rawstore *st, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void rs_clear_err(void);
/* Set the thread's last error message to @msg (a message carried back from
 * the commit thread). */
void rs_set_errmsg(const char *msg);

/* Units: all offsets/lengths are bytes; these round to a power of two @a. */
static inline uint64_t round_down(uint64_t x, uint64_t a)
{
	return x & ~(a - 1);
}

static inline uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

static inline bool is_aligned(uint64_t x, uint64_t a)
{
	return (x & (a - 1)) == 0;
}

static inline bool is_pow2(uint64_t x)
{
	return x && !(x & (x - 1));
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static inline void put_be16(void *p, uint16_t v)
{
	v = htobe16(v);
	memcpy(p, &v, 2);
}

static inline void put_be64(void *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static inline uint64_t get_be64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

static inline void put_le32(void *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void put_le64(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static inline uint32_t get_le32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint64_t get_le64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

/* CLOCK_MONOTONIC in ns. */
static inline uint64_t rs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* crc32c (Castagnoli) of @len bytes, standard parameters; by the faster
 * of isa-l and slice-by-8 tables on this CPU (util.c). */
uint32_t rs_crc32c(const void *buf, size_t len);
/* The two implementations, and the name of the one rs_crc32c() uses
 * ("isa-l" or "tables"). */
uint32_t rs_crc32c_isal(const void *buf, size_t len);
uint32_t rs_crc32c_tables(const void *buf, size_t len);
const char *rs_crc32c_impl(void);
/* Which of isa-l's routines does the work ("isa-l by16_10 (...)" ...), or
 * "tables". */
const char *rs_crc32c_variant(void);
/* crc32c of A||B from crc32c(A) = @crc1 and crc32c(B) = @crc2, B being
 * @len2 bytes long (as zlib's crc32_combine, for crc32c).  For many B of
 * one length: rs_crc32c_combine_gen(len2) once, then _op() per B (zlib's
 * crc32_combine_gen/_op). */
uint32_t rs_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2);
uint32_t rs_crc32c_combine_gen(uint64_t len2);
uint32_t rs_crc32c_combine_op(uint32_t crc1, uint32_t crc2, uint32_t op);

/* Aligned (4096) allocation for O_DIRECT buffers; NULL on failure. */
void *rs_alloc_aligned(size_t len);
/*
 * I/O buffers of @len bytes (4096-aligned) from a small process-wide cache,
 * so big buffers are not mapped, faulted in and unmapped each time.  Free
 * with the same @len.
 */
void *rs_iobuf_alloc(size_t len);
/* As rs_iobuf_alloc; *@fresh tells whether the buffer is newly mapped
 * (its pages faulted in anew) rather than reused; buffers of 32 KiB or
 * less come from malloc's heap and count as reused. */
void *rs_iobuf_get(size_t len, bool *fresh);
void rs_iobuf_free(void *p, size_t len);
/* @p lies in one of the cache's huge-page slabs or buffers (physically
 * contiguous in 2 MiB pieces where the system gave huge pages). */
bool rs_iobuf_huge(const void *p);

/* The errno for a RocksDB error message: -EUCLEAN "Corruption", -EBUSY the
 * LOCK file is held, -ENOSPC, -ENOENT, -EEXIST, else -EIO. */
int rs_db_errno(const char *err);

#endif /* RAWSTORE_UTIL_H */
