/* SPDX-License-Identifier: MIT */
/*
 * ktest: a tiny harness for the in-guest kernel tests.
 *
 * Each t_*.c is one program; it prints "ok"/"not ok" lines per check and
 * exits 0 (all passed), 1 (a check failed) or 77 (skipped: the machine or
 * kernel lacks something, reason printed).  Features are detected from
 * results (-EOPNOTSUPP, -EINVAL), never from the kernel version.
 */
#ifndef KTEST_H
#define KTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef FALLOC_FL_NO_HIDE_STALE
#define FALLOC_FL_NO_HIDE_STALE 0x04
#endif
#ifndef FALLOC_FL_WRITE_ZEROES
#define FALLOC_FL_WRITE_ZEROES 0x80
#endif

#define KiB 1024ull
#define MiB (1024ull * KiB)

#define KT_SKIP 77

extern int kt_failures;
extern int kt_checks;

/* Record one check; print "ok - what" or "not ok - what: detail". */
void kt_check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Check that an int result equals the expected one; names errnos. */
#define kt_expect_eq(got, want, ...) kt_expect_eq_((long long)(got), (long long)(want), __VA_ARGS__)
void kt_expect_eq_(long long got, long long want, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Print a note line ("# ..."). */
void kt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print the reason and exit KT_SKIP, or 1 if a check already failed. */
void kt_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Print the reason and exit 1 (setup failed: not a skip). */
void kt_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Exit with 0 if every check passed, else 1. */
int kt_done(void);

/* "EINVAL" for -EINVAL or EINVAL, "0" for 0. */
const char *kt_errname(long long err);

/* fallocate(2) returning 0 or -errno. */
int kt_fallocate(int fd, int mode, uint64_t off, uint64_t len);
/* ioctl(BLKZEROOUT) returning 0 or -errno. */
int kt_blkzeroout(int fd, uint64_t off, uint64_t len);

/* Geometry of an open block device (exit via kt_fatal on failure). */
uint64_t kt_dev_size(int fd);
unsigned int kt_lbs(int fd);
/* /sys/block/<dev>/queue/<attr> for the device at path; -1 if absent. */
long long kt_queue_attr(const char *devpath, const char *attr);

/* Fill [off, off+len) with a pattern derived from seed (pwrite; fatal on error). */
void kt_fill(int fd, uint64_t off, uint64_t len, uint32_t seed);
/*
 * Compare [off, off+len) against the pattern for seed (seed 0 means zeros).
 * Returns the offset of the first mismatch, or UINT64_MAX if all match.
 */
uint64_t kt_verify(int fd, uint64_t off, uint64_t len, uint32_t seed);
/*
 * Record one check: [off, off+len) of fd holds the pattern for seed (zeros
 * for seed 0); names the first mismatching offset otherwise.
 */
void kt_expect_range(int fd, uint64_t off, uint64_t len, uint32_t seed, const char *what);
/* The byte the pattern for seed has at absolute offset off (0 for seed 0). */
uint8_t kt_pattern_byte(uint32_t seed, uint64_t off);

/*
 * Kernel log lines of block-layer I/O errors ("I/O error, dev ...",
 * "critical space allocation error, dev ...", blk_update_request) and file
 * system errors.
 */
#define KT_DMESG_IO_ERROR "I/O error| error, dev |blk_update_request|EXT4-fs error"
/*
 * Lines of the kernel log (dmesg) matching the extended regex ere, printed
 * as notes; compare counts before and after an operation.  -1 on failure.
 */
int kt_dmesg_count(const char *ere);

/* Run a shell command; returns its exit status (or -1). */
int kt_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Read a whole small file into buf (NUL-terminated); returns length or -errno. */
long kt_read_file(const char *path, char *buf, size_t size);

/* The extents of a file within a range, from FIEMAP. */
struct kt_extents {
	unsigned int count, unwritten;
	uint64_t mapped, unwritten_bytes;	/* bytes inside the range */
};
struct fiemap_extent;
/* Called for each extent of a file that overlaps a range: the extent as
 * FIEMAP returned it, and how many of its bytes lie inside the range. */
typedef void (*kt_extent_fn)(const struct fiemap_extent *x, uint64_t inside, void *arg);
/* Walk the extents of fd that overlap [off, off + len), in order, past any
 * number of them (FIEMAP_FLAG_SYNC: synced first); kt_fatal() if FIEMAP
 * fails. */
void kt_fiemap_each(int fd, uint64_t off, uint64_t len, kt_extent_fn fn, void *arg);
/* Summarize the extents of fd within [off, off + len) (FIEMAP_FLAG_SYNC:
 * synced first); kt_fatal() if FIEMAP fails. */
struct kt_extents kt_fiemap(int fd, uint64_t off, uint64_t len);
/* Check that FIEMAP maps all of [off, +len), all unwritten or all written. */
void kt_expect_extents(int fd, uint64_t off, uint64_t len, bool unwritten, const char *what);

#endif /* KTEST_H */
