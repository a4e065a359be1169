// SPDX-License-Identifier: MIT
/*
 * t_store: librawstore on a real block device in the patched guest.
 * Checks that the store opens the device O_DIRECT|O_EXCL through io_uring
 * (a second opener gets EBUSY), that objects survive close/reopen, that
 * never-written ranges read as zeros although the device holds stale data
 * there, that a new-object transaction costs exactly one device flush
 * (skipped on a write-through cache) and one RocksDB sync (plus one per
 * claim of zeroed space), that reclaim
 * punches freed space exactly when the device can zero it (the freed range
 * then reads zeros on the device; else EOPNOTSUPP, ranges kept, data
 * untouched), and that a deep fsck is clean.
 *
 * Usage: t_store DEVICE [--expect-punch=ok|eopnotsupp]
 * DESTROYS the data on DEVICE; metadata goes to /tmp/t_store-meta.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ktest.h"
#include "rawstore/fsck.h"
#include "rawstore/object.h"
#include "rawstore/rawstore.h"
#include "rawstore/store.h"
#include "rawstore/txn.h"

#define META "/tmp/t_store-meta"
#define STALE_SEED 0x5a

static const char *dev;

static struct rawstore *open_store(void)
{
	struct rawstore_open_opts o;
	struct rawstore *st = NULL;
	int rc;

	rawstore_open_opts_init(&o);
	rc = rawstore_open(dev, META, &o, &st);
	if (rc)
		kt_fatal("rawstore_open %s: %s (%s)", dev, rawstore_strerror(rc), rawstore_errmsg());
	return st;
}

static uint8_t *pattern(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len);

	if (!b)
		kt_fatal("out of memory");
	for (size_t i = 0; i < len; i++)
		b[i] = kt_pattern_byte(seed, i);
	return b;
}

static int submit_write(struct rawstore *st, const char *name, uint64_t off, const void *buf,
			size_t len, bool create_coll)
{
	struct rawstore_txn *t;
	int rc;

	if (rawstore_txn_new(&t))
		kt_fatal("rawstore_txn_new");
	if (create_coll)
		rawstore_txn_coll_create(t, "c");
	rawstore_txn_write(t, "c", name, strlen(name), off, buf, len);
	rc = rawstore_submit(st, t);
	rawstore_txn_free(t);
	return rc;
}

static void expect_read(struct rawstore *st, const char *name, uint64_t off, size_t len,
			const uint8_t *want, const char *what)
{
	uint8_t *got = malloc(len);
	ssize_t n;

	if (!got)
		kt_fatal("out of memory");
	n = rawstore_read(st, "c", name, strlen(name), off, got, len);
	kt_check(n == (ssize_t)len && !memcmp(got, want, len), "%s: read %zd of %zu bytes, %s",
		 what, n, len, n == (ssize_t)len && !memcmp(got, want, len) ? "equal" : "DIFFERENT");
	free(got);
}

/*
 * The device offset of len bytes equal to want (the store keeps a 1 MiB
 * object in one extent), searched block by block; UINT64_MAX if absent.
 * The store holds the device O_EXCL; a plain open for reading is allowed.
 */
static uint64_t find_on_device(const uint8_t *want, size_t len)
{
	int fd = open(dev, O_RDONLY | O_DIRECT);
	uint64_t size, found = UINT64_MAX;
	uint8_t *buf;

	if (fd < 0)
		kt_fatal("open %s: %s", dev, strerror(errno));
	size = kt_dev_size(fd);
	if (posix_memalign((void **)&buf, 4096, MiB))
		kt_fatal("out of memory");
	for (uint64_t off = 0; off + 4096 <= size && found == UINT64_MAX; off += MiB) {
		size_t n = size - off < MiB ? (size_t)(size - off) : MiB;

		if (pread(fd, buf, n, (off_t)off) != (ssize_t)n)
			kt_fatal("pread %s at %llu: %s", dev, (unsigned long long)off,
				 strerror(errno));
		for (size_t i = 0; i + 4096 <= n; i += 4096)
			if (!memcmp(buf + i, want, 4096)) {
				found = off + i;
				break;
			}
	}
	free(buf);
	if (found != UINT64_MAX) {
		uint8_t *all = NULL;

		if (found + len > size || posix_memalign((void **)&all, 4096, len) ||
		    pread(fd, all, len, (off_t)found) != (ssize_t)len || memcmp(all, want, len))
			found = UINT64_MAX;
		free(all);
	}
	close(fd);
	return found;
}

int main(int argc, char **argv)
{
	struct rawstore_perf p0, p1;
	struct rawstore_statfs sf;
	struct rawstore_info info;
	struct rawstore_fsck_opts fo;
	struct rawstore_fsck_result fr;
	struct rawstore *st, *st2 = NULL;
	uint8_t *big, *small, *zeros;
	uint64_t big_off, claims, want;
	bool jdev;
	long long wz;
	bool punch_ok;
	int fd, rc;

	if (argc < 2)
		kt_fatal("usage: t_store DEVICE [--expect-punch=ok|eopnotsupp]");
	dev = argv[1];
	wz = kt_queue_attr(dev, "write_zeroes_max_bytes");
	punch_ok = wz > 0;
	if (argc > 2)
		punch_ok = !strcmp(argv[2], "--expect-punch=ok");
	kt_check(punch_ok == (wz > 0), "device set-up: write_zeroes_max_bytes=%lld, punch %s", wz,
		 punch_ok ? "expected to work" : "expected to be refused");

	/* Stale data everywhere the store may allocate. */
	fd = open(dev, O_RDWR | O_DIRECT);
	if (fd < 0)
		kt_fatal("open %s: %s", dev, strerror(errno));
	kt_fill(fd, 0, 32 * MiB, STALE_SEED);
	close(fd);

	kt_sh("rm -rf " META);
	rc = rawstore_mkfs(dev, META, NULL);
	kt_expect_eq(rc, 0, "mkfs on %s", dev);
	if (rc)
		return kt_done();
	st = open_store();

	info.struct_size = sizeof(info);
	kt_expect_eq(rawstore_get_info(st, &info), 0, "get_info");
	kt_check(info.is_block_device == 1 && info.direct_io == 1,
		 "opened as a block device with O_DIRECT (block=%d direct=%d)", info.is_block_device,
		 info.direct_io);
	kt_check(!strcmp(info.io_engine, "io_uring"), "I/O engine is io_uring (got %s)",
		 info.io_engine);
	kt_note("logical block %u, min_alloc %u, write cache %d, discard_max %llu, "
		"write_zeroes_max %llu", info.logical_block_size, info.min_alloc_size,
		info.write_cache, (unsigned long long)info.discard_max_bytes,
		(unsigned long long)info.write_zeroes_max_bytes);
	kt_expect_eq(rawstore_open(dev, META, NULL, &st2), -EBUSY, "a second opener");

	big = pattern(MiB, 1);
	small = pattern(100, 2);
	zeros = calloc(1, 2 * MiB);
	p0.struct_size = p1.struct_size = sizeof(p0);
	rawstore_perf_get(st, &p0);
	kt_expect_eq(submit_write(st, "big", 0, big, MiB, true), 0, "write a 1 MiB object");
	rawstore_perf_get(st, &p1);
	/*
	 * Data before metadata: exactly one device flush per transaction that
	 * wrote data (issued with a volatile write cache, skipped without),
	 * then exactly one RocksDB sync.
	 */
	/*
	 * Plus one synced batch per claim of zeroed space (amortized over many
	 * writes): with the device journal (the default) each is a record and
	 * its flush, and the transaction's record flush is its only flush;
	 * with RocksDB's WAL each is a WAL sync.
	 */
	claims = p1.zero_claims - p0.zero_claims;
	jdev = !strcmp(info.journal, "device");
	want = jdev ? 1 + claims : 1;
	kt_check(p1.dev_flushes - p0.dev_flushes == (info.write_cache ? want : 0u) &&
			 p1.dev_flushes_skipped - p0.dev_flushes_skipped ==
				 (info.write_cache ? 0u : want),
		 "new-object transaction: %llu device flushes issued, %llu skipped (want exactly "
		 "%llu, %s: the write cache is %s; journal %s)",
		 (unsigned long long)(p1.dev_flushes - p0.dev_flushes),
		 (unsigned long long)(p1.dev_flushes_skipped - p0.dev_flushes_skipped),
		 (unsigned long long)want, info.write_cache ? "issued" : "skipped",
		 info.write_cache ? "volatile" : "write-through", info.journal);
	kt_check(jdev ? p1.journal_records - p0.journal_records == 1 + claims :
			p1.db_syncs - p0.db_syncs == 1 + claims,
		 "new-object transaction: %llu journal records, %llu RocksDB syncs (want 1 + %llu "
		 "zeroed-space claims of the %s journal)",
		 (unsigned long long)(p1.journal_records - p0.journal_records),
		 (unsigned long long)(p1.db_syncs - p0.db_syncs), (unsigned long long)claims,
		 info.journal);
	kt_expect_eq(submit_write(st, "sparse", 2 * MiB, small, 100, false), 0,
		     "write 100 bytes at 2 MiB of a new object");
	kt_expect_eq(submit_write(st, "unaligned", 777, big, 5000, false), 0,
		     "write 5000 bytes at offset 777 of a new object");

	/* Reopen: everything is still there, holes read as zeros, not stale bytes. */
	kt_expect_eq(rawstore_close(st), 0, "close");
	st = open_store();
	expect_read(st, "big", 0, MiB, big, "big after reopen");
	expect_read(st, "sparse", 0, 2 * MiB, zeros, "sparse: the never-written 2 MiB");
	expect_read(st, "sparse", 2 * MiB, 100, small, "sparse: the data");
	expect_read(st, "unaligned", 0, 777, zeros, "unaligned: the head it never wrote");
	expect_read(st, "unaligned", 777, 5000, big, "unaligned: the data");

	/* Where "big" lives on the device, to read the freed range back later. */
	big_off = find_on_device(big, MiB);
	kt_check(big_off != UINT64_MAX, "the 1 MiB object is on the device in one piece (at %llu)",
		 (unsigned long long)big_off);

	/* Remove and reclaim: punch exactly when the device zeroes. */
	/* From before the remove: a background punch may run at any time after it. */
	rawstore_perf_get(st, &p0);
	{
		struct rawstore_txn *t;

		rawstore_txn_new(&t);
		rawstore_txn_remove(t, "c", "big", 3);
		kt_expect_eq(rawstore_submit(st, t), 0, "remove big");
		rawstore_txn_free(t);
	}
	sf.struct_size = sizeof(sf);
	rawstore_statfs(st, &sf);
	rawstore_perf_get(st, &p1);
	kt_check(sf.unpunched + (p1.bytes_punched - p0.bytes_punched) >= MiB,
		 "statfs: %llu bytes freed and not yet punched, %llu already punched in the "
		 "background", (unsigned long long)sf.unpunched,
		 (unsigned long long)(p1.bytes_punched - p0.bytes_punched));
	rc = rawstore_reclaim(st);
	kt_expect_eq(rc, punch_ok ? 0 : -EOPNOTSUPP, "reclaim");
	rawstore_perf_get(st, &p1);
	rawstore_statfs(st, &sf);
	if (punch_ok)
		kt_check(sf.unpunched == 0 && p1.bytes_punched - p0.bytes_punched >= MiB,
			 "freed space punched since the remove (reclaim or background): %llu bytes, "
			 "%llu left",
			 (unsigned long long)(p1.bytes_punched - p0.bytes_punched),
			 (unsigned long long)sf.unpunched);
	else
		kt_check(sf.unpunched >= MiB, "refused reclaim keeps %llu bytes tracked",
			 (unsigned long long)sf.unpunched);
	/* The device itself: the freed range reads zeros after a punch, else the old data. */
	if (big_off != UINT64_MAX) {
		fd = open(dev, O_RDONLY | O_DIRECT);
		if (fd < 0)
			kt_fatal("open %s: %s", dev, strerror(errno));
		if (punch_ok) {
			kt_expect_range(fd, big_off, MiB, 0, "the punched range on the device");
		} else {
			uint8_t *got;

			if (posix_memalign((void **)&got, 4096, MiB) ||
			    pread(fd, got, MiB, (off_t)big_off) != (ssize_t)MiB)
				kt_fatal("pread %s: %s", dev, strerror(errno));
			kt_check(!memcmp(got, big, MiB),
				 "refused reclaim left the freed range untouched on the device");
			free(got);
		}
		close(fd);
	}

	rawstore_fsck_opts_init(&fo);
	fo.deep = 1;
	fr.struct_size = sizeof(fr);
	kt_expect_eq(rawstore_fsck(st, &fo, &fr), 0, "deep fsck");
	kt_check(fr.errors == 0 && fr.bytes_checked > 0,
		 "fsck: %llu objects, %llu bytes verified, %llu errors",
		 (unsigned long long)fr.objects, (unsigned long long)fr.bytes_checked,
		 (unsigned long long)fr.errors);
	kt_expect_eq(rawstore_close(st), 0, "close");
	free(big);
	free(small);
	free(zeros);
	return kt_done();
}
