// SPDX-License-Identifier: MIT
/*
 * t_seed: the 2016 block-device fallocate semantics that Linux 6.1 ships,
 * pinned down on one device:
 *  - ZERO_RANGE (with and without KEEP_SIZE) and PUNCH_HOLE|KEEP_SIZE zero
 *    exactly the requested range and leave the rest untouched;
 *  - misaligned offset/length -> EINVAL; ranges at/after the end -> EINVAL,
 *    ranges crossing the end are clamped with KEEP_SIZE, EINVAL without;
 *  - mode 0, KEEP_SIZE alone, COLLAPSE, INSERT, UNSHARE -> EOPNOTSUPP;
 *  - PUNCH_HOLE needs a zeroing (write-zeroes) device, else EOPNOTSUPP,
 *    while ZERO_RANGE falls back to writing zeros;
 *  - the page cache stays coherent across BLKZEROOUT, zero-range, punch;
 *  - a read-only open gets EBADF.
 *
 * Usage: t_seed DEVICE [--expect-punch=ok|eopnotsupp]
 * Without --expect-punch, the expectation comes from the device's
 * queue/write_zeroes_max_bytes and is printed.
 * DESTROYS the data on DEVICE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktest.h"

static const char *dev;
static int dfd;       /* O_DIRECT, for filling and verifying */
static unsigned lbs;
static uint64_t size;
static bool punch_ok;

/* Fill 1 MiB at base, apply mode on an inner range, check inner + both sides. */
static void zero_exact(const char *name, int mode, uint64_t base, uint64_t ioff, uint64_t ilen,
		       bool expect_ok)
{
	int rc;

	kt_fill(dfd, base, MiB, 7);
	rc = kt_fallocate(dfd, mode, base + ioff, ilen);
	kt_expect_eq(rc, expect_ok ? 0 : -EOPNOTSUPP, "%s on [+%llu, +%llu)", name,
		     (unsigned long long)ioff, (unsigned long long)ilen);
	kt_expect_range(dfd, base, ioff, 7, "before the range");
	kt_expect_range(dfd, base + ioff, ilen, expect_ok ? 0 : 7,
		     expect_ok ? "the range" : "the refused range (untouched)");
	kt_expect_range(dfd, base + ioff + ilen, MiB - ioff - ilen, 7, "after the range");
}

static void test_zeroing(void)
{
	uint64_t base = 4 * MiB;

	zero_exact("ZERO_RANGE", FALLOC_FL_ZERO_RANGE, base, 64 * KiB, 128 * KiB, true);
	zero_exact("ZERO_RANGE|KEEP_SIZE", FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, base,
		   3 * lbs, lbs, true);
	zero_exact("PUNCH_HOLE|KEEP_SIZE", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, base,
		   256 * KiB, 192 * KiB, punch_ok);
	zero_exact("PUNCH_HOLE|KEEP_SIZE one block", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		   base, 5 * lbs, lbs, punch_ok);
	/* BLKZEROOUT: the ioctl the 2016 interface sits beside. */
	kt_fill(dfd, base, MiB, 9);
	kt_expect_eq(kt_blkzeroout(dfd, base + 2 * lbs, 4 * lbs), 0, "BLKZEROOUT of 4 blocks");
	kt_expect_range(dfd, base, 2 * lbs, 9, "BLKZEROOUT: before");
	kt_expect_range(dfd, base + 2 * lbs, 4 * lbs, 0, "BLKZEROOUT: the range");
	kt_expect_range(dfd, base + 6 * lbs, MiB - 6 * lbs, 9, "BLKZEROOUT: after");
}

static void test_alignment(void)
{
	/* Half a logical block: 256 on 512-byte devices, 2048 on 4096-byte ones. */
	uint64_t half = lbs / 2, base = 8 * MiB;
	static const struct { const char *name; int mode; } modes[] = {
		{ "ZERO_RANGE", FALLOC_FL_ZERO_RANGE },
		{ "ZERO_RANGE|KEEP_SIZE", FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE },
		{ "PUNCH_HOLE|KEEP_SIZE", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE },
	};

	kt_fill(dfd, base, MiB, 3);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		kt_expect_eq(kt_fallocate(dfd, modes[i].mode, base + half, lbs), -EINVAL,
			     "%s at offset +%llu (misaligned)", modes[i].name, (unsigned long long)half);
		kt_expect_eq(kt_fallocate(dfd, modes[i].mode, base, lbs + half), -EINVAL,
			     "%s of length %llu (misaligned)", modes[i].name,
			     (unsigned long long)(lbs + half));
		if (lbs > 512)
			kt_expect_eq(kt_fallocate(dfd, modes[i].mode, base + 512, lbs), -EINVAL,
				     "%s at a 512-aligned offset on a %u-byte-sector device",
				     modes[i].name, lbs);
		kt_expect_eq(kt_fallocate(dfd, modes[i].mode, base, 0), -EINVAL,
			     "%s of length 0", modes[i].name);
	}
	kt_expect_eq(kt_blkzeroout(dfd, base + 512 * (lbs > 512), lbs), lbs > 512 ? -EINVAL : 0,
		     "BLKZEROOUT at offset %u", 512 * (lbs > 512));
	kt_expect_eq(kt_blkzeroout(dfd, base + half, lbs), -EINVAL, "BLKZEROOUT misaligned");
	kt_fill(dfd, base, MiB, 3);
	kt_expect_range(dfd, base, MiB, 3, "refused misaligned requests changed nothing");
}

static void test_range(void)
{
	uint64_t last = size - lbs;

	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, size, lbs),
		     -EINVAL, "ZERO_RANGE|KEEP_SIZE starting at the device end");
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_ZERO_RANGE, size + MiB, lbs), -EINVAL,
		     "ZERO_RANGE starting past the device end");
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, size, lbs),
		     -EINVAL, "PUNCH_HOLE|KEEP_SIZE starting at the device end");
	kt_fill(dfd, last - lbs, 2 * lbs, 5);
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_ZERO_RANGE, last, 2 * lbs), -EINVAL,
		     "ZERO_RANGE crossing the end without KEEP_SIZE");
	kt_expect_range(dfd, last, lbs, 5, "last block untouched after the refused request");
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, last, 2 * lbs), 0,
		     "ZERO_RANGE|KEEP_SIZE crossing the end is clamped");
	kt_expect_range(dfd, last, lbs, 0, "clamped zero-range zeroed the last block");
	kt_expect_range(dfd, last - lbs, lbs, 5, "clamped zero-range left the block before it");
	kt_fill(dfd, last, lbs, 6);
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, last, 8 * lbs),
		     punch_ok ? 0 : -EOPNOTSUPP, "PUNCH_HOLE|KEEP_SIZE crossing the end");
	kt_expect_range(dfd, last, lbs, punch_ok ? 0 : 6, "punch crossing the end: last block");
	kt_expect_eq(kt_blkzeroout(dfd, last, 2 * lbs), -EINVAL, "BLKZEROOUT crossing the end");
}

static void test_modes(void)
{
	static const struct { const char *name; int mode; int want; } modes[] = {
		{ "mode 0", 0, -EOPNOTSUPP },
		{ "KEEP_SIZE alone", FALLOC_FL_KEEP_SIZE, -EOPNOTSUPP },
		{ "COLLAPSE_RANGE", FALLOC_FL_COLLAPSE_RANGE, -EOPNOTSUPP },
		{ "INSERT_RANGE", FALLOC_FL_INSERT_RANGE, -EOPNOTSUPP },
		{ "UNSHARE_RANGE", FALLOC_FL_UNSHARE_RANGE, -EOPNOTSUPP },
		{ "PUNCH_HOLE without KEEP_SIZE", FALLOC_FL_PUNCH_HOLE, -EOPNOTSUPP },
		/* vfs_fallocate: punch and zero-range are mutually exclusive. */
		{ "PUNCH_HOLE|ZERO_RANGE|KEEP_SIZE",
		  FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, -EOPNOTSUPP },
	};
	uint64_t base = 10 * MiB;

	kt_fill(dfd, base, MiB, 4);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		kt_expect_eq(kt_fallocate(dfd, modes[i].mode, base, MiB), modes[i].want, "%s",
			     modes[i].name);
	kt_expect_range(dfd, base, MiB, 4, "refused modes changed nothing");
}

/* Write through a buffered fd (dirty, then clean-cached), zero via op, read buffered. */
static void cache_case(const char *name, int mode, bool use_ioctl, bool expect_ok, bool sync_first)
{
	uint64_t base = 12 * MiB, off = base + 64 * KiB, len = 64 * KiB;
	int bfd = open(dev, O_RDWR);
	int rc;

	if (bfd < 0)
		kt_fatal("open %s buffered: %s", dev, strerror(errno));
	kt_fill(bfd, base, 256 * KiB, 11);
	if (sync_first) {
		fsync(bfd);
		kt_verify(bfd, base, 256 * KiB, 11); /* now clean and cached */
	}
	rc = use_ioctl ? kt_blkzeroout(bfd, off, len) : kt_fallocate(bfd, mode, off, len);
	kt_expect_eq(rc, expect_ok ? 0 : -EOPNOTSUPP, "%s over %s cached pages", name,
		     sync_first ? "clean" : "dirty");
	if (rc == 0) {
		uint64_t bad = kt_verify(bfd, off, len, 0);

		kt_check(bad == UINT64_MAX, "%s: buffered read of the range returns zeros (%s pages)",
			 name, sync_first ? "clean" : "dirty");
		bad = kt_verify(bfd, base, 64 * KiB, 11);
		kt_check(bad == UINT64_MAX, "%s: cached data before the range survives", name);
		bad = kt_verify(bfd, off + len, 128 * KiB, 11);
		kt_check(bad == UINT64_MAX, "%s: cached data after the range survives", name);
		fsync(bfd);
		kt_expect_range(dfd, off, len, 0, "after fsync the device holds zeros in the range");
		kt_expect_range(dfd, base, 64 * KiB, 11, "after fsync the device holds data before it");
	}
	close(bfd);
}

static void test_page_cache(void)
{
	for (int s = 0; s < 2; s++) {
		cache_case("BLKZEROOUT", 0, true, true, s);
		cache_case("ZERO_RANGE", FALLOC_FL_ZERO_RANGE, false, true, s);
		cache_case("PUNCH_HOLE|KEEP_SIZE", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, false,
			   punch_ok, s);
	}
}

static void test_readonly(void)
{
	int rfd = open(dev, O_RDONLY);

	if (rfd < 0)
		kt_fatal("open %s read-only: %s", dev, strerror(errno));
	kt_expect_eq(kt_fallocate(rfd, FALLOC_FL_ZERO_RANGE, 0, lbs), -EBADF,
		     "ZERO_RANGE on a read-only fd");
	kt_expect_eq(kt_fallocate(rfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, lbs), -EBADF,
		     "PUNCH_HOLE on a read-only fd");
	kt_expect_eq(kt_blkzeroout(rfd, 0, lbs), -EBADF, "BLKZEROOUT on a read-only fd");
	close(rfd);
}

int main(int argc, char **argv)
{
	long long wz;

	if (argc < 2)
		kt_fatal("usage: t_seed DEVICE [--expect-punch=ok|eopnotsupp]");
	dev = argv[1];
	dfd = open(dev, O_RDWR | O_DIRECT);
	if (dfd < 0)
		kt_fatal("open %s: %s", dev, strerror(errno));
	lbs = kt_lbs(dfd);
	size = kt_dev_size(dfd);
	if (size < 16 * MiB)
		kt_fatal("%s is %llu bytes; t_seed needs at least 16 MiB", dev,
			 (unsigned long long)size);
	wz = kt_queue_attr(dev, "write_zeroes_max_bytes");
	punch_ok = wz > 0;
	if (argc > 2) {
		if (!strcmp(argv[2], "--expect-punch=ok"))
			punch_ok = true;
		else if (!strcmp(argv[2], "--expect-punch=eopnotsupp"))
			punch_ok = false;
		else
			kt_fatal("unknown argument %s", argv[2]);
		kt_check(punch_ok == (wz > 0),
			 "device set-up: write_zeroes_max_bytes=%lld matches --expect-punch", wz);
	}
	kt_note("%s: %llu bytes, logical block %u, write_zeroes_max_bytes %lld, "
		"discard_max_bytes %lld: punch expected to %s",
		dev, (unsigned long long)size, lbs, wz, kt_queue_attr(dev, "discard_max_bytes"),
		punch_ok ? "zero" : "fail with EOPNOTSUPP");

	test_zeroing();
	test_alignment();
	test_range();
	test_modes();
	test_page_cache();
	test_readonly();
	close(dfd);
	return kt_done();
}
