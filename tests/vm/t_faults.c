// SPDX-License-Identifier: MIT
/*
 * t_faults: librawstore on a real block device that fails, in the patched
 * guest (issue 13, item 3).  The case file builds the failing device
 * (dm-flakey, scsi_debug medium errors, a small dm-thin pool) and passes
 * two shell commands: FAIL makes the device fail, HEAL makes it work again.
 *
 *   write-eio:   writes fail.  A new object's transaction fails with -EIO,
 *                the store stays usable and consistent.  With the device
 *                journal (the default) a small overwrite fails too (its
 *                record goes to the failing device), the store stops
 *                (sticky) and reopening shows the old bytes.  Then on a
 *                store made with --journal rocksdb: a deferred overwrite
 *                commits (RocksDB's WAL is on another device), its
 *                in-place write fails, the store stops, and reopening
 *                replays it.
 *   read-eio:    reads fail.  Reads return -EIO (never bytes), a deep fsck
 *                does not pass; after HEAL everything reads back.
 *   drop-writes: writes are silently dropped (the device lies).  The lost
 *                object reads -EIO from its checksums, never the stale
 *                bytes under it, and a deep fsck reports it.
 *   nospace:     the device runs out of space (thin pool in error mode):
 *                -ENOSPC, earlier objects intact, fsck clean; after HEAL
 *                (the pool grows) the same write succeeds.
 *
 * The device is filled with a pattern first; no read may return it.
 * Usage: t_faults MODE DEVICE FAIL_CMD HEAL_CMD
 * DESTROYS the data on DEVICE; metadata goes to /tmp/t_faults-meta.
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

#define META "/tmp/t_faults-meta"
#define STALE_SEED 0x77

static const char *dev, *fail_cmd, *heal_cmd;

static struct rawstore *open_store(void)
{
	struct rawstore *st = NULL;
	int rc = rawstore_open(dev, META, NULL, &st);

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

static int put(struct rawstore *st, const char *name, uint64_t off, const void *buf, size_t len)
{
	struct rawstore_txn *t;
	int rc;

	if (rawstore_txn_new(&t))
		kt_fatal("rawstore_txn_new");
	rawstore_txn_write(t, "c", name, strlen(name), off, buf, len);
	rc = rawstore_submit(st, t);
	rawstore_txn_free(t);
	return rc;
}

static int rm(struct rawstore *st, const char *name)
{
	struct rawstore_txn *t;
	int rc;

	if (rawstore_txn_new(&t))
		kt_fatal("rawstore_txn_new");
	rawstore_txn_remove(t, "c", name, strlen(name));
	rc = rawstore_submit(st, t);
	rawstore_txn_free(t);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Would a read at object offset 0 have shown the stale pattern?  Units are
 * 4 KiB aligned on the device, so compare the first 8 bytes of every 4 KiB
 * block of @b with those of every device block.
 */
static bool has_stale(const uint8_t *b, size_t len, uint64_t dev_len)
{
	size_t nb = (size_t)(dev_len / 4096), i;
	uint64_t *heads = calloc(nb, 8);
	bool found = false;

	if (!heads)
		kt_fatal("out of memory");
	for (i = 0; i < nb; i++)
		for (int j = 0; j < 8; j++)
			heads[i] |= (uint64_t)kt_pattern_byte(STALE_SEED, i * 4096 + j) << (8 * j);
	qsort(heads, nb, 8, cmp_u64);
	for (size_t off = 0; off + 8 <= len && !found; off += 4096) {
		uint64_t w = 0;

		for (int j = 0; j < 8; j++)
			w |= (uint64_t)b[off + j] << (8 * j);
		found = bsearch(&w, heads, nb, 8, cmp_u64) != NULL;
	}
	free(heads);
	return found;
}

/* The object reads back as @want ("what"), with no stale bytes. */
static void expect_obj(struct rawstore *st, const char *name, const uint8_t *want, size_t len,
		       const char *what)
{
	uint8_t *got = malloc(len + 4096);
	ssize_t n;

	if (!got)
		kt_fatal("out of memory");
	n = rawstore_read(st, "c", name, strlen(name), 0, got, len + 4096);
	kt_check(n == (ssize_t)len && !memcmp(got, want, len), "%s: %s read %zd of %zu bytes, %s",
		 what, name, n, len, n == (ssize_t)len && !memcmp(got, want, len) ? "equal" :
		 "DIFFERENT");
	free(got);
}

static bool exists(struct rawstore *st, const char *name)
{
	struct rawstore_stat s = { .struct_size = sizeof(s) };

	return rawstore_stat(st, "c", name, strlen(name), &s) == 0;
}

static int fsck(struct rawstore *st, bool deep, struct rawstore_fsck_result *r)
{
	struct rawstore_fsck_opts o;

	rawstore_fsck_opts_init(&o);
	o.deep = deep;
	r->struct_size = sizeof(*r);
	return rawstore_fsck(st, &o, r);
}

static void expect_clean(struct rawstore *st, const char *what)
{
	struct rawstore_fsck_result r;
	int rc = fsck(st, true, &r);

	kt_check(rc == 0 && r.errors == 0 && r.leaks == 0,
		 "%s: deep fsck %s: %llu objects, %llu bytes verified, %llu errors, %llu leaks",
		 what, kt_errname(rc), (unsigned long long)r.objects,
		 (unsigned long long)r.bytes_checked, (unsigned long long)r.errors,
		 (unsigned long long)r.leaks);
}

static void run(const char *cmd, const char *what)
{
	int rc = kt_sh("%s", cmd);

	if (rc)
		kt_fatal("%s: '%s' exited %d", what, cmd, rc);
}

/* The objects every mode starts from. */
static uint8_t *big, *small;

static void base(struct rawstore *st)
{
	struct rawstore_txn *t;

	if (!big) {
		big = pattern(4 * MiB, 1);
		small = pattern(20000, 2);
	}
	rawstore_txn_new(&t);
	rawstore_txn_coll_create(t, "c");
	kt_expect_eq(rawstore_submit(st, t), 0, "create the collection");
	rawstore_txn_free(t);
	kt_expect_eq(put(st, "big", 0, big, 4 * MiB), 0, "write big (4 MiB)");
	kt_expect_eq(put(st, "small", 0, small, 20000), 0, "write small (20000 bytes)");
}

/* mkfs @dev again (metadata in META) with journal @mode. */
static void remkfs(enum rawstore_journal_mode mode)
{
	struct rawstore_mkfs_opts o;

	rawstore_mkfs_opts_init(&o);
	o.journal = mode;
	o.force = 1;
	kt_sh("rm -rf " META);
	if (rawstore_mkfs(dev, META, &o))
		kt_fatal("mkfs --journal %s on %s: %s", rawstore_journal_mode_name(mode), dev,
			 rawstore_errmsg());
}

/* The first half of write-eio, the same in both journal modes. */
static struct rawstore *write_eio_new_object(const uint8_t *n)
{
	struct rawstore *st = open_store();
	int rc;

	base(st);
	run(fail_cmd, "fail");
	rc = put(st, "new", 0, n, 65536);
	kt_expect_eq(rc, -EIO, "a new object on a device whose writes fail");
	kt_note("message: %s", rawstore_errmsg());
	kt_check(!exists(st, "new"), "the failed object does not exist");
	expect_obj(st, "big", big, 4 * MiB, "while writes fail");
	run(heal_cmd, "heal");
	expect_clean(st, "after the failed write");
	kt_expect_eq(put(st, "new", 0, n, 65536), 0, "the same write after the device healed");
	expect_obj(st, "new", n, 65536, "healed");
	return st;
}

/* The store stopped: sticky after HEAL, close reports it, the reopened
 * store holds @small and what write_eio_new_object() wrote. */
static void write_eio_reopen(struct rawstore *st, const uint8_t *n, const char *what)
{
	run(heal_cmd, "heal");
	kt_expect_eq(put(st, "later", 0, n, 8192), -EIO, "stopped is sticky");
	kt_expect_eq(rawstore_close(st), -EIO, "close reports the error");
	st = open_store();
	expect_obj(st, "small", small, 20000, what);
	expect_obj(st, "big", big, 4 * MiB, "after reopen");
	expect_obj(st, "new", n, 65536, "after reopen");
	kt_check(!exists(st, "later"), "the refused object does not exist");
	expect_clean(st, "after reopen");
	kt_expect_eq(rawstore_close(st), 0, "close");
}

static void mode_write_eio(void)
{
	uint8_t *n = pattern(65536, 3), *upd = pattern(3000, 4);
	struct rawstore *st;
	int rc;

	kt_note("device journal (the default)");
	st = write_eio_new_object(n);
	run(fail_cmd, "fail");
	kt_expect_eq(put(st, "small", 5000, upd, 3000), -EIO,
		     "a small overwrite fails: its journal record is on the failing device");
	kt_note("message: %s", rawstore_errmsg());
	rc = put(st, "later", 0, n, 8192);
	kt_expect_eq(rc, -EIO, "the store stopped after its journal write failed");
	write_eio_reopen(st, n, "after reopen (the failed overwrite is not there)");

	kt_note("--journal rocksdb");
	remkfs(RAWSTORE_JOURNAL_ROCKSDB);
	st = write_eio_new_object(n);
	/* a deferred overwrite: committed in RocksDB, its in-place write fails */
	run(fail_cmd, "fail");
	kt_expect_eq(put(st, "small", 5000, upd, 3000), 0,
		     "a small overwrite commits (its data is in the metadata log)");
	/* Its in-place write is started, not waited for: the next point
	 * that waits for it (here a job, reclaim) finds it failed. */
	kt_expect_eq(rawstore_reclaim(st), -EIO,
		     "reclaim waits for the in-place write: the store stopped");
	rc = put(st, "later", 0, n, 8192);
	kt_expect_eq(rc, -EIO, "the store stopped after its in-place write failed");
	memcpy(small + 5000, upd, 3000);
	write_eio_reopen(st, n, "after reopen (deferred write replayed)");
	free(n);
	free(upd);
}

static void mode_read_eio(void)
{
	struct rawstore *st = open_store();
	struct rawstore_fsck_result r;
	uint8_t *buf = malloc(4 * MiB);
	ssize_t n;
	int rc;

	base(st);
	kt_expect_eq(rawstore_close(st), 0, "close");
	st = open_store();
	run(fail_cmd, "fail");
	memset(buf, 0, 4 * MiB);
	n = rawstore_read(st, "c", "big", 3, 0, buf, 4 * MiB);
	kt_expect_eq(n, -EIO, "reading big while reads fail");
	n = rawstore_read(st, "c", "big", 3, 2 * MiB + 1000, buf, 100000);
	kt_expect_eq(n, -EIO, "reading a piece of big in the failing range");
	rc = fsck(st, true, &r);
	kt_check(rc == -EIO || (rc == -EUCLEAN && r.errors > 0),
		 "deep fsck while reads fail does not pass: %s, %llu errors", kt_errname(rc),
		 (unsigned long long)r.errors);
	run(heal_cmd, "heal");
	expect_obj(st, "big", big, 4 * MiB, "healed");
	expect_obj(st, "small", small, 20000, "healed");
	expect_clean(st, "healed");
	kt_expect_eq(rawstore_close(st), 0, "close");
	free(buf);
}

static void mode_drop_writes(uint64_t dev_len)
{
	struct rawstore *st = open_store();
	struct rawstore_perf p = { .struct_size = sizeof(p) };
	struct rawstore_fsck_result r;
	uint8_t *ghost = pattern(MiB, 5), *buf = malloc(MiB + 4096);
	ssize_t n;
	int rc;

	base(st);
	run(fail_cmd, "fail");
	kt_expect_eq(put(st, "ghost", 0, ghost, MiB), 0,
		     "a write the device drops is acknowledged (the device lied)");
	run(heal_cmd, "heal");
	n = rawstore_read(st, "c", "ghost", 5, 0, buf, MiB);
	kt_expect_eq(n, -EIO, "the dropped object reads -EIO (checksums), not stale bytes");
	kt_check(n < 0 || !has_stale(buf, (size_t)n, dev_len), "no stale bytes returned");
	for (uint64_t off = 0; off < MiB; off += 256 * 1024) {
		n = rawstore_read(st, "c", "ghost", 5, off + 17, buf, 4000);
		kt_check(n == -EIO, "dropped object at %llu: %s", (unsigned long long)off + 17,
			 kt_errname(n));
	}
	rawstore_perf_get(st, &p);
	kt_check(p.csum_errors > 0, "%llu checksum errors counted",
		 (unsigned long long)p.csum_errors);
	rc = fsck(st, true, &r);
	kt_check(rc == -EUCLEAN && r.errors > 0, "deep fsck reports the lost data: %s, %llu "
		 "errors", kt_errname(rc), (unsigned long long)r.errors);
	expect_obj(st, "big", big, 4 * MiB, "the other objects");
	kt_expect_eq(rm(st, "ghost"), 0, "remove the lost object");
	expect_clean(st, "after removing it");
	kt_expect_eq(rawstore_close(st), 0, "close");
	free(ghost);
	free(buf);
}

static void mode_nospace(void)
{
	struct rawstore *st = open_store();
	uint8_t *o = pattern(MiB, 6);
	char name[32];
	int i, rc = 0;

	base(st);
	for (i = 0; i < 256; i++) {
		snprintf(name, sizeof(name), "o%d", i);
		rc = put(st, name, 0, o, MiB);
		if (rc)
			break;
	}
	kt_expect_eq(rc, -ENOSPC, "writing 1 MiB objects until the device is full (%d written)",
		     i);
	kt_note("message: %s", rawstore_errmsg());
	kt_check(!exists(st, name), "the failed object %s does not exist", name);
	expect_obj(st, "big", big, 4 * MiB, "device full");
	expect_obj(st, "o0", o, MiB, "device full");
	expect_clean(st, "device full");
	run(heal_cmd, "heal");
	kt_expect_eq(put(st, name, 0, o, MiB), 0, "the same write once the device has space");
	kt_expect_eq(rawstore_close(st), 0, "close");
	st = open_store();
	expect_obj(st, name, o, MiB, "after reopen");
	expect_obj(st, "small", small, 20000, "after reopen");
	expect_clean(st, "after reopen");
	kt_expect_eq(rawstore_close(st), 0, "close");
	free(o);
}

int main(int argc, char **argv)
{
	uint64_t len;
	int fd, rc;

	if (argc != 5)
		kt_fatal("usage: t_faults write-eio|read-eio|drop-writes|nospace DEVICE FAIL HEAL");
	dev = argv[2];
	fail_cmd = argv[3];
	heal_cmd = argv[4];
	fd = open(dev, O_RDWR | O_DIRECT);
	if (fd < 0)
		kt_fatal("open %s: %s", dev, strerror(errno));
	len = kt_dev_size(fd);
	if (len > 64 * MiB)
		len = 64 * MiB;
	/* a thin device allocates what is written: mark only what mkfs needs */
	if (strcmp(argv[1], "nospace"))
		kt_fill(fd, 0, len, STALE_SEED);
	close(fd);
	kt_sh("rm -rf " META);
	rc = rawstore_mkfs(dev, META, NULL);
	kt_expect_eq(rc, 0, "mkfs on %s", dev);
	if (rc)
		return kt_done();
	if (!strcmp(argv[1], "write-eio"))
		mode_write_eio();
	else if (!strcmp(argv[1], "read-eio"))
		mode_read_eio();
	else if (!strcmp(argv[1], "drop-writes"))
		mode_drop_writes(len);
	else if (!strcmp(argv[1], "nospace"))
		mode_nospace();
	else
		kt_fatal("unknown mode %s", argv[1]);
	free(big);
	free(small);
	return kt_done();
}
