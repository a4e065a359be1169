// SPDX-License-Identifier: MIT
/*
 * t_opmix: a randomized operation mix on one ext4 file, checked against a
 * model, in the manner of fsx (which Debian 12 does not package, nor
 * fsstress): pwrite, mmap writes, truncate up and down, fallocate mode 0,
 * KEEP_SIZE, PUNCH_HOLE, ZERO_RANGE, FALLOC_FL_WRITE_ZEROES and
 * FALLOC_FL_NO_HIDE_STALE, fsync, and dropping the page cache.  After
 * every operation the size must match, and after every few the whole file
 * is read back (buffered, and after a cache drop) and compared with the
 * model.
 *
 * The model keeps each byte's value or "unknown" and each block's state
 * (hole, unwritten, written).  Only NO_HIDE_STALE makes bytes unknown:
 * the hole and unwritten blocks it covers become written with whatever
 * the disk held, except the range's last block when it holds the end of
 * file (allocated as by mode 0: it reads zeros).  Everything else is
 * exact: written data, zeros from holes, unwritten extents, punches,
 * zeroing, and the zeros a file shows when it grows over its old tail.
 *
 * Usage: t_opmix DEVICE MOUNTPOINT BLOCKSIZE OPS SEED
 *   mkfs.ext4 -b BLOCKSIZE on DEVICE, mount with nohide_stale_gid=1001,
 *   run OPS operations from SEED.  Prints the last operations on failure.
 * DESTROYS the data on DEVICE.  OPMIX_STOCK=1 (for checking the model on a
 * stock kernel) mounts without the option and leaves out the two new modes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ktest.h"

#define MAXLEN (1024 * 1024)
#define LOGN 24

enum bstate { HOLE, UNWRITTEN, WRITTEN };

static const char *dev, *mnt;
static unsigned int bs;
static uint8_t data[MAXLEN], known[MAXLEN], buf[MAXLEN];
static uint8_t state[MAXLEN / 1024];
static uint64_t size;
static int fd;
static char path[4096];
static char oplog[LOGN][128];
static unsigned int nops;
static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

static void logop(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logop(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(oplog[nops % LOGN], sizeof(oplog[0]), fmt, ap);
	va_end(ap);
	nops++;
}

static void dump_log(void)
{
	unsigned int first = nops > LOGN ? nops - LOGN : 0;

	for (unsigned int i = first; i < nops; i++)
		kt_note("op %u: %s", i, oplog[i % LOGN]);
}

static void fail(const char *what, unsigned long long a, unsigned long long b)
{
	kt_check(false, "%s (%llu, %llu) after %u operations (seed in the usage line)", what, a,
		 b, nops);
	dump_log();
	exit(kt_done());
}

/* Bytes [from, to) become known value v. */
static void set_known(uint64_t from, uint64_t to, uint8_t v)
{
	if (to > from) {
		memset(data + from, v, to - from);
		memset(known + from, 1, to - from);
	}
}

/* The file grows to n: what it exposes reads zeros (holes, unwritten, zeroed tails). */
static void grow(uint64_t n)
{
	if (n > size) {
		set_known(size, n, 0);
		size = n;
	}
}

static void op_write(uint64_t off, uint64_t len)
{
	uint8_t v = (uint8_t)(rnd() | 1);

	memset(buf, v, len);
	for (uint64_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(v + i);
	logop("pwrite off %llu len %llu", (unsigned long long)off, (unsigned long long)len);
	if (pwrite(fd, buf, len, (off_t)off) != (ssize_t)len)
		fail("pwrite failed", off, len);
	grow(off + len);
	memcpy(data + off, buf, len);
	memset(known + off, 1, len);
	for (uint64_t b = off / bs; b <= (off + len - 1) / bs; b++)
		state[b] = WRITTEN;
}

static void op_mmap_write(uint64_t off, uint64_t len)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), start = off / pg * pg;
	uint8_t *m;

	if (!size)
		return;
	if (off >= size)
		off = below(size);
	if (off + len > size)
		len = size - off;
	start = off / pg * pg;
	logop("mmap write off %llu len %llu", (unsigned long long)off, (unsigned long long)len);
	m = mmap(NULL, off + len - start, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)start);
	if (m == MAP_FAILED)
		fail("mmap failed", off, len);
	for (uint64_t i = 0; i < len; i++) {
		m[off - start + i] = (uint8_t)(0x5a + i);
		data[off + i] = (uint8_t)(0x5a + i);
		known[off + i] = 1;
	}
	if (msync(m, off + len - start, MS_SYNC))
		fail("msync failed", off, len);
	munmap(m, off + len - start);
	/* page_mkwrite allocates the blocks of the touched pages inside the file */
	for (uint64_t b = start / bs; b * bs < size && b * bs < (off + len + pg - 1) / pg * pg; b++)
		state[b] = WRITTEN;
}

static void op_truncate(uint64_t n)
{
	logop("ftruncate %llu", (unsigned long long)n);
	if (ftruncate(fd, (off_t)n))
		fail("ftruncate failed", n, 0);
	if (n < size) {
		/* Blocks past the new end are freed; the rest of the last block reads zero. */
		for (uint64_t b = (n + bs - 1) / bs; b < MAXLEN / bs; b++)
			state[b] = HOLE;
		set_known(n, MAXLEN, 0);
		size = n;
	} else {
		grow(n);
	}
}

static void op_falloc(int mode, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, fb = (off + bs - 1) / bs, lb = end / bs; /* whole blocks */
	int rc;

	logop("fallocate %s off %llu len %llu",
	      mode == 0 ? "0" : mode == FALLOC_FL_KEEP_SIZE ? "KEEP_SIZE" :
	      mode == (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) ? "PUNCH_HOLE|KEEP_SIZE" :
	      mode == FALLOC_FL_ZERO_RANGE ? "ZERO_RANGE" :
	      mode == FALLOC_FL_WRITE_ZEROES ? "WRITE_ZEROES" : "NO_HIDE_STALE",
	      (unsigned long long)off, (unsigned long long)len);
	rc = kt_fallocate(fd, mode, off, len);
	if (rc)
		fail(kt_errname(rc), off, len);
	switch (mode) {
	case 0:
	case FALLOC_FL_KEEP_SIZE:
		if (!mode)
			grow(end);
		for (uint64_t b = off / bs; b <= (end - 1) / bs; b++)
			if (state[b] == HOLE)
				state[b] = UNWRITTEN;
		break;
	case FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE:
		set_known(off, end, 0);
		for (uint64_t b = fb; b < lb; b++)
			state[b] = HOLE;
		break;
	case FALLOC_FL_ZERO_RANGE:
	case FALLOC_FL_WRITE_ZEROES:
		grow(end);
		set_known(off, end, 0);
		for (uint64_t b = off / bs; b <= (end - 1) / bs; b++) {
			if (b >= fb && b < lb)
				state[b] = mode == FALLOC_FL_ZERO_RANGE ? UNWRITTEN : WRITTEN;
			else if (state[b] != WRITTEN)
				/*
				 * An edge block is zeroed through the page cache
				 * and may stay unwritten (reads zeros; a later
				 * NO_HIDE_STALE exposes the disk under it).
				 */
				state[b] = UNWRITTEN;
		}
		break;
	default: /* NO_HIDE_STALE */
		grow(end);
		for (uint64_t b = off / bs; b <= (end - 1) / bs; b++) {
			uint64_t s = b * bs, e = s + bs < size ? s + bs : size;

			/*
			 * The range's last block, when it holds the end of
			 * file, is allocated as by mode 0: it never shows
			 * stale bytes (they would lie past EOF).
			 */
			if (b == (end - 1) / bs && (size % bs) && size / bs == b) {
				if (state[b] == HOLE)
					state[b] = UNWRITTEN;
				continue;
			}
			if (state[b] != WRITTEN && e > s)
				memset(known + s, 0, e - s);
			state[b] = WRITTEN;
		}
		break;
	}
}

static void check(const char *when)
{
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) || (uint64_t)st.st_size != size)
		fail("size differs from the model", (unsigned long long)st.st_size, size);
	n = pread(fd, buf, size, 0);
	if (n != (ssize_t)size)
		fail("short read", (unsigned long long)n, size);
	for (uint64_t i = 0; i < size; i++)
		if (known[i] && buf[i] != data[i]) {
			kt_note("%s: byte %llu is %u, the model says %u (block %llu, state %d)", when,
				(unsigned long long)i, buf[i], data[i],
				(unsigned long long)(i / bs), state[i / bs]);
			fail("content differs from the model", i, buf[i]);
		}
}

static void drop_cache(void)
{
	if (fsync(fd))
		fail("fsync failed", 0, 0);
	if (posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED))
		fail("posix_fadvise DONTNEED failed", 0, 0);
}

int main(int argc, char **argv)
{
	unsigned long ops;
	unsigned long long seed;
	unsigned long long unknown = 0;
	bool stock = getenv("OPMIX_STOCK") != NULL;
	const char *opts = stock ? "" : "nohide_stale_gid=1001";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 6)
		kt_fatal("usage: t_opmix DEVICE MOUNTPOINT BLOCKSIZE OPS SEED");
	dev = argv[1];
	mnt = argv[2];
	bs = (unsigned int)strtoul(argv[3], NULL, 0);
	ops = strtoul(argv[4], NULL, 0);
	seed = strtoull(argv[5], NULL, 0);
	if (bs != 1024 && bs != 4096)
		kt_fatal("BLOCKSIZE must be 1024 or 4096");
	rng = seed * 2654435761u + 1;
	kt_note("t_opmix %s %s %u %lu %llu", dev, mnt, bs, ops, seed);
	if (kt_sh("mkfs.ext4 -q -F -b %u -E nodiscard %s 256M > /tmp/opmix-mkfs.log 2>&1", bs, dev))
		kt_fatal("mkfs.ext4 failed");
	if (mkdir(mnt, 0755) && errno != EEXIST)
		kt_fatal("mkdir %s: %s", mnt, strerror(errno));
	if (mount(dev, mnt, "ext4", 0, opts))
		kt_fatal("mount: %s", strerror(errno));
	/* Stale data to find: a deleted file of a known pattern. */
	snprintf(path, sizeof(path), "%s/victim", mnt);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		kt_fatal("create %s: %s", path, strerror(errno));
	kt_fill(fd, 0, 64 * 1024 * 1024, 77);
	fsync(fd);
	close(fd);
	unlink(path);
	sync();
	snprintf(path, sizeof(path), "%s/f", mnt);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		kt_fatal("create %s: %s", path, strerror(errno));

	for (unsigned long i = 0; i < ops; i++) {
		uint64_t off = below(MAXLEN - 1), len = 1 + below(64 * 1024);
		unsigned int op = (unsigned int)below(100);

		if (off + len > MAXLEN)
			len = MAXLEN - off;
		if (op < 25)
			op_write(off, len);
		else if (op < 33)
			op_mmap_write(off, len);
		else if (op < 41)
			op_truncate(below(MAXLEN));
		else if (op < 49)
			op_falloc(0, off, len);
		else if (op < 57)
			op_falloc(FALLOC_FL_KEEP_SIZE, off, len);
		else if (op < 65)
			op_falloc(FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len);
		else if (op < 72)
			op_falloc(FALLOC_FL_ZERO_RANGE, off, len);
		else if (op < 88 && stock)
			op_write(off, len);
		else if (op < 79)
			op_falloc(FALLOC_FL_WRITE_ZEROES, off, len);
		else if (op < 88)
			op_falloc(FALLOC_FL_NO_HIDE_STALE, off, len);
		else if (op < 94) {
			logop("drop cache");
			drop_cache();
		} else {
			logop("fsync");
			if (fsync(fd))
				fail("fsync failed", 0, 0);
		}
		if (i % 8 == 7) {
			check("buffered");
			drop_cache();
			check("after a cache drop");
		}
	}
	check("at the end");
	close(fd);
	if (umount(mnt))
		kt_fatal("umount: %s", strerror(errno));
	if (mount(dev, mnt, "ext4", 0, opts))
		kt_fatal("mount: %s", strerror(errno));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		kt_fatal("reopen: %s", strerror(errno));
	check("after umount and mount");
	close(fd);
	for (uint64_t i = 0; i < size; i++)
		unknown += !known[i];
	kt_check(true, "%lu operations (seed %llu, %u-byte blocks) matched the model; file %llu "
		 "bytes, %llu of them stale", ops, seed, bs, (unsigned long long)size, unknown);
	if (umount(mnt))
		kt_fatal("umount: %s", strerror(errno));
	kt_check(kt_sh("e2fsck -fn %s > /tmp/opmix-fsck.log 2>&1", dev) == 0, "e2fsck -fn is clean");
	return kt_done();
}
