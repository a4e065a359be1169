// SPDX-License-Identifier: MIT
/*
 * t_provision_thin: provision (fallocate mode 0 / KEEP_SIZE) on dm-thin,
 * counted in the pool's used data blocks (`dmsetup status POOL`):
 *
 *  t_provision_thin basic THIN POOL
 *    provision_max_bytes > 0 on THIN and 0 on the pool device; provisioning
 *    N unmapped thin blocks uses N more data blocks, a second provision
 *    none; a request covering part of a block provisions the whole block
 *    (one block for 4 KiB, two for 8 KiB straddling a boundary); blocks
 *    already mapped complete without allocating and keep their data;
 *    provisioned blocks read zeros and later writes to them allocate
 *    nothing; dirty page-cache data survives; misaligned -> EINVAL,
 *    UNSHARE_RANGE -> EOPNOTSUPP.
 *  t_provision_thin snap POOL ID
 *    creates thin ID with data, snapshots it (ID+1), provisions the
 *    snapshot: every shared block gets its own copy (used grows by the
 *    shared count), data on both sides unchanged, and afterwards writes
 *    to either device allocate nothing.  Removes both devices.
 *  t_provision_thin enospc THIN POOL [--min-wait=SEC]
 *    on a fresh pool smaller than THIN, before any write: provisioning more
 *    than the pool holds fails with ENOSPC (after at least SEC seconds, for
 *    a pool queueing with a no_space_timeout of SEC), the pool reports
 *    out_of_data_space with every block used, and THIN reads zeros.
 *  t_provision_thin modes THIN POOL
 *    on a fresh pool: with the pool reloaded read-only, provision of mapped
 *    blocks succeeds without allocating and anything needing a new block
 *    gets EIO; reloaded read-write, the same request allocates.
 *  t_provision_thin fit THIN POOL
 *    on a fresh pool: provisioning exactly the pool's size succeeds, the
 *    whole range then takes writes; one block more gives ENOSPC at once
 *    (error_if_no_space) and the written data stays intact.
 *  t_provision_thin big THIN POOL
 *    on a fresh pool: provision_max_bytes is bounded (256 blocks); one
 *    request of 2.5 times that, starting inside a block, is split into
 *    chunks and per-block clones, and maps exactly the blocks it covers,
 *    which read zeros and take writes without allocating.
 *  t_provision_thin outofmeta THIN POOL
 *    on a fresh pool whose metadata device is far too small for THIN: a
 *    provision of all of THIN fails with EIO at once when the metadata
 *    runs out, the pool is read-only with needs_check and keeps what it
 *    committed: provision of the first block succeeds, of the last one
 *    fails with EIO, and the first block takes direct writes.
 *  t_provision_thin blocked THIN POOL EXTEND_CMD
 *    on a fresh pool in queue mode (no_space_timeout well above the test's
 *    waits): once the pool is full, a provision that needs a block waits;
 *    meanwhile buffered reads and mmap faults of uncached parts of THIN
 *    complete (provision holds no page-cache lock), and SIGKILL ends the
 *    waiting process at once.  A second waiting provision completes with
 *    success after EXTEND_CMD (a shell command) grows the pool, and its
 *    blocks are then mapped.
 *  t_provision_thin race THIN POOL
 *    on a fresh pool: two provisioners, a writer and a discarder hammer
 *    the same 8 blocks; no call fails, every block then holds either
 *    zeros or exactly one whole write, and after a last provision of the
 *    8 blocks the pool uses exactly 8 data blocks (nothing leaked).
 *  t_provision_thin failmode THIN POOL META
 *    on a fresh pool whose metadata device META (a dm device of 4 MiB)
 *    is then switched to the error target: a flush makes the pool fail
 *    its commit and leave write mode (Fail, or ro); provision of an
 *    unmapped block then fails with EIO at once, allocating nothing,
 *    and never hangs.
 *  t_provision_thin oddblock THIN POOL BLOCK_SECTORS
 *    on a fresh pool whose block size (BLOCK_SECTORS) is not a power of
 *    two: the limit is a multiple of the block; provisions inside, across
 *    and past block boundaries map exactly the blocks they cover; one
 *    request of 1.5 times the limit starting inside a block maps every
 *    block it touches, which read zeros.
 *  t_provision_thin offset DEV POOL BLOCK_SECTORS OFFSET_SECTORS
 *    DEV is dm-linear over a fresh thin device starting OFFSET_SECTORS
 *    into it (not a multiple of the thin block): one block's worth of DEV
 *    maps the two thin blocks it straddles, a request of the full limit
 *    maps every thin block it touches, and all of it reads zeros.
 *  t_provision_thin refused THIN POOL
 *    THIN's pool was reloaded with skip_block_zeroing while THIN stayed
 *    live: provision (mode 0 and KEEP_SIZE) fails with EOPNOTSUPP,
 *    allocates nothing, and the range still reads zeros.
 *  t_provision_thin extorigin THIN POOL ORIGIN
 *    THIN has the external origin ORIGIN (holding pattern 95): provision
 *    of unmapped blocks copies the origin's data into them (reads still
 *    return it), allocates one block per block, and later writes to them
 *    allocate nothing and leave ORIGIN unchanged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ktest.h"

static const char *dev, *pool;
static int dfd; /* O_DIRECT */
static unsigned int lbs;
static uint64_t size;

struct pool_status {
	long long used, total; /* data blocks */
	char mode[32];         /* rw, ro, out_of_data_space, Fail */
};

/* Parse `dmsetup status POOL`: "0 LEN thin-pool TX M/M D/D ROOT MODE ...". */
static struct pool_status pool_status(void)
{
	struct pool_status ps = { -1, -1, "" };
	char cmd[256], line[512];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "dmsetup status %s", pool);
	f = popen(cmd, "r");
	if (!f || !fgets(line, sizeof(line), f))
		kt_fatal("%s failed", cmd);
	pclose(f);
	if (sscanf(line, "%*s %*s thin-pool %*s %*s %lld/%lld %*s %31s", &ps.used, &ps.total,
		   ps.mode) != 3)
		kt_fatal("cannot parse pool status: %s", line);
	return ps;
}

static long long used(void)
{
	return pool_status().used;
}

static int open_direct(const char *path)
{
	int fd = open(path, O_RDWR | O_DIRECT);

	if (fd < 0)
		kt_fatal("open %s: %s", path, strerror(errno));
	return fd;
}

static void open_dev(const char *path)
{
	dev = path;
	dfd = open_direct(dev);
	lbs = kt_lbs(dfd);
	size = kt_dev_size(dfd);
	kt_note("%s: %llu bytes, %u-byte logical blocks, provision_max_bytes %lld", dev,
		(unsigned long long)size, lbs, kt_queue_attr(dev, "provision_max_bytes"));
}

/* Provision [off, +len) on fd and check the pool's used count grows by blocks. */
static void provision_uses(int fd, int mode, uint64_t off, uint64_t len, long long blocks,
			   const char *what)
{
	long long before = used(), after;

	kt_expect_eq(kt_fallocate(fd, mode, off, len), 0, "%s: provision [%llu, +%llu)", what,
		     (unsigned long long)off, (unsigned long long)len);
	after = used();
	kt_check(after - before == blocks, "%s: used data blocks %lld -> %lld (+%lld, want +%lld)",
		 what, before, after, after - before, blocks);
}

/* The guest boots the patched kernel: a thin device that cannot provision fails. */
static void require_provision(void)
{
	if (kt_queue_attr(dev, "provision_max_bytes") <= 0)
		kt_fatal("%s: queue/provision_max_bytes is %lld: kernel patches 0003/0005/0006 "
			 "missing or broken", dev, kt_queue_attr(dev, "provision_max_bytes"));
}

static int cmd_basic(void)
{
	const uint64_t blk = 64 * KiB; /* the pool's block size (k_provision.sh) */
	char pooldev[128];
	long long before;
	int bfd;

	require_provision();
	snprintf(pooldev, sizeof(pooldev), "/dev/mapper/%s", pool);
	kt_check(kt_queue_attr(dev, "provision_max_bytes") > 0,
		 "queue/provision_max_bytes is non-zero on thin (%lld)",
		 kt_queue_attr(dev, "provision_max_bytes"));
	kt_expect_eq(kt_queue_attr(pooldev, "provision_max_bytes"), 0,
		     "queue/provision_max_bytes is 0 on the pool device");

	provision_uses(dfd, 0, 0, 16 * blk, 16, "mode 0, 16 unmapped blocks");
	kt_expect_range(dfd, 0, 16 * blk, 0, "provisioned blocks");
	provision_uses(dfd, 0, 0, 16 * blk, 0, "second provision of the same range");
	provision_uses(dfd, FALLOC_FL_KEEP_SIZE, 16 * blk, 8 * blk, 8, "KEEP_SIZE, 8 blocks");
	provision_uses(dfd, 0, 32 * blk + 4 * KiB, 4 * KiB, 1, "4 KiB inside one block");
	provision_uses(dfd, 0, 32 * blk + 8 * KiB, 4 * KiB, 0, "4 KiB more of that block");
	provision_uses(dfd, 0, 34 * blk - 4 * KiB, 8 * KiB, 2, "8 KiB across a block boundary");

	/* Data already there: a written block is kept, its neighbour provisioned. */
	kt_fill(dfd, 40 * blk + 16 * KiB, 16 * KiB, 61);
	provision_uses(dfd, 0, 40 * blk, 2 * blk, 1, "a written block and an unmapped one");
	kt_expect_range(dfd, 40 * blk + 16 * KiB, 16 * KiB, 61, "data written before provision");
	kt_expect_range(dfd, 40 * blk, 16 * KiB, 0, "written block, unwritten part before");
	kt_expect_range(dfd, 40 * blk + 32 * KiB, blk + 32 * KiB, 0,
		     "written block's rest and the provisioned block");

	/* Writes into provisioned blocks need no allocation. */
	before = used();
	kt_fill(dfd, 0, 24 * blk, 62);
	fsync(dfd);
	kt_check(used() == before, "writing 24 provisioned blocks allocates nothing (used %lld -> %lld)",
		 before, used());
	kt_expect_range(dfd, 0, 24 * blk, 62, "data written into provisioned blocks");

	/* Dirty page-cache data is neither dropped nor zeroed. */
	bfd = open(dev, O_RDWR);
	if (bfd < 0)
		kt_fatal("open %s buffered: %s", dev, strerror(errno));
	kt_fill(bfd, 48 * blk + 4 * KiB, 8 * KiB, 63);
	kt_expect_eq(kt_fallocate(bfd, 0, 48 * blk, blk), 0, "provision over dirty cached pages");
	kt_check(kt_verify(bfd, 48 * blk + 4 * KiB, 8 * KiB, 63) == UINT64_MAX,
		 "buffered read after provision returns the dirty data");
	fsync(bfd);
	close(bfd);
	kt_expect_range(dfd, 48 * blk + 4 * KiB, 8 * KiB, 63, "after fsync the device holds it");

	kt_expect_eq(kt_fallocate(dfd, 0, 50 * blk + lbs / 2, lbs), -EINVAL, "misaligned offset");
	kt_expect_eq(kt_fallocate(dfd, 0, 50 * blk, lbs + lbs / 2), -EINVAL, "misaligned length");
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_UNSHARE_RANGE, 50 * blk, blk), -EOPNOTSUPP,
		     "UNSHARE_RANGE");
	kt_expect_eq(kt_fallocate(dfd, 0, size, blk), -EINVAL, "starting at the device end");
	return kt_done();
}

static int sh_ok(const char *what, int rc)
{
	if (rc != 0)
		kt_fatal("%s failed (exit %d)", what, rc);
	return rc;
}

static int cmd_snap(unsigned int id)
{
	const uint64_t blk = 64 * KiB, len = 32 * blk, vsize = 16 * MiB;
	char origin[64], snap[64], opath[96], spath[96];
	long long before;
	int ofd, sfd;

	snprintf(origin, sizeof(origin), "%s-o%u", pool, id);
	snprintf(snap, sizeof(snap), "%s-s%u", pool, id + 1);
	snprintf(opath, sizeof(opath), "/dev/mapper/%s", origin);
	snprintf(spath, sizeof(spath), "/dev/mapper/%s", snap);

	sh_ok("create_thin", kt_sh("dmsetup message %s 0 'create_thin %u' && "
				   "dmsetup create %s --table '0 %llu thin /dev/mapper/%s %u'",
				   pool, id, origin, (unsigned long long)(vsize / 512), pool, id));
	ofd = open_direct(opath);
	dev = opath;
	dfd = ofd;
	lbs = kt_lbs(ofd);
	size = kt_dev_size(ofd);
	require_provision();
	kt_fill(ofd, 0, len, 71);
	fsync(ofd);
	sh_ok("create_snap", kt_sh("dmsetup suspend %s && dmsetup message %s 0 'create_snap %u %u'"
				   " && dmsetup resume %s && dmsetup create %s --table "
				   "'0 %llu thin /dev/mapper/%s %u'", origin, pool, id + 1, id,
				   origin, snap, (unsigned long long)(vsize / 512), pool, id + 1));
	sfd = open_direct(spath);
	kt_expect_range(sfd, 0, len, 71, "snapshot shares the origin's data");

	provision_uses(sfd, 0, 0, len, 32, "provision of 32 shared blocks on the snapshot");
	kt_expect_range(sfd, 0, len, 71, "snapshot data after unsharing");
	kt_expect_range(ofd, 0, len, 71, "origin data after unsharing");
	provision_uses(sfd, 0, 0, len, 0, "second provision on the snapshot");
	provision_uses(ofd, 0, 0, len, 0, "provision on the origin afterwards");

	before = used();
	kt_fill(sfd, 0, len, 72);
	fsync(sfd);
	kt_fill(ofd, 0, len, 73);
	fsync(ofd);
	kt_check(used() == before,
		 "writes to snapshot and origin afterwards allocate nothing (used %lld -> %lld)",
		 before, used());
	kt_expect_range(sfd, 0, len, 72, "snapshot has its own data");
	kt_expect_range(ofd, 0, len, 73, "origin has its own data");

	close(sfd);
	close(ofd);
	kt_sh("dmsetup remove %s; dmsetup remove %s", snap, origin);
	return kt_done();
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmd_enospc(double min_wait)
{
	struct pool_status ps = pool_status();
	uint64_t blk, len;
	double t;
	int rc;

	require_provision();
	if (ps.used != 0)
		kt_fatal("pool %s is not fresh: %lld/%lld blocks used", pool, ps.used, ps.total);
	blk = 64 * KiB;
	len = 2 * (uint64_t)ps.total * blk;
	if (len > size)
		kt_fatal("%s (%llu bytes) is not larger than twice the pool", dev,
			 (unsigned long long)size);
	t = now();
	rc = kt_fallocate(dfd, 0, 0, len);
	t = now() - t;
	kt_expect_eq(rc, -ENOSPC, "provision of %llu blocks on a pool of %lld",
		     (unsigned long long)(len / blk), ps.total);
	kt_check(t >= min_wait, "failed after %.1f s (queue mode waits >= %.0f s)", t, min_wait);
	ps = pool_status();
	kt_check(!strcmp(ps.mode, "out_of_data_space"), "pool mode is %s", ps.mode);
	kt_check(ps.used == ps.total, "every data block used (%lld/%lld)", ps.used, ps.total);
	kt_expect_range(dfd, 0, len, 0, "thin device still reads zeros");
	return kt_done();
}

/* Reload POOL with its table and the given feature arguments ("0" or "1 read_only"). */
static void pool_reload(const char *thin, const char *features)
{
	int rc = kt_sh("t=$(dmsetup table %s | awk '{ print $1, $2, $3, $4, $5, $6, $7 }') && "
		       "dmsetup suspend %s && dmsetup suspend %s && "
		       "dmsetup reload %s --table \"$t %s\" && dmsetup resume %s && dmsetup resume %s",
		       pool, thin, pool, pool, features, pool, thin);

	if (rc)
		kt_fatal("reloading pool %s with features '%s' failed (exit %d)", pool, features, rc);
}

/*
 * Read-only pool mode: provision of blocks already mapped (and unshared)
 * succeeds without allocating, anything that needs a new block gets EIO;
 * back in read-write mode the same request succeeds.
 */
static int cmd_modes(void)
{
	const uint64_t blk = 64 * KiB;
	const char *thin = strrchr(dev, '/') + 1;
	struct pool_status ps;
	long long before;

	require_provision();
	kt_fill(dfd, 0, blk, 91);
	fsync(dfd);
	provision_uses(dfd, 0, blk, blk, 1, "read-write pool, one unmapped block");
	pool_reload(thin, "1 read_only");
	ps = pool_status();
	kt_check(!strcmp(ps.mode, "ro"), "the pool is read-only (mode %s)", ps.mode);
	before = ps.used;
	kt_expect_eq(kt_fallocate(dfd, 0, 0, 2 * blk), 0,
		     "read-only pool: provision of two mapped blocks");
	kt_expect_eq(kt_fallocate(dfd, 0, 0, 3 * blk), -EIO,
		     "read-only pool: a range that needs one new block");
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_KEEP_SIZE, 5 * blk, blk), -EIO,
		     "read-only pool: KEEP_SIZE of an unmapped block");
	kt_check(used() == before, "read-only pool: used data blocks unchanged (%lld -> %lld)",
		 before, used());
	kt_expect_range(dfd, 0, blk, 91, "read-only pool: written data intact");
	pool_reload(thin, "0");
	ps = pool_status();
	kt_check(!strcmp(ps.mode, "rw"), "the pool is read-write again (mode %s)", ps.mode);
	provision_uses(dfd, 0, 0, 3 * blk, 1, "read-write again: the range with one new block");
	kt_expect_range(dfd, 0, blk, 91, "written data intact");
	kt_expect_range(dfd, blk, 2 * blk, 0, "provisioned blocks read zeros");
	return kt_done();
}

static int cmd_fit(void)
{
	struct pool_status ps = pool_status();
	uint64_t blk = 64 * KiB, len;
	double t;
	int rc;

	require_provision();
	if (ps.used != 0)
		kt_fatal("pool %s is not fresh: %lld/%lld blocks used", pool, ps.used, ps.total);
	len = (uint64_t)ps.total * blk;
	provision_uses(dfd, 0, 0, len, ps.total, "provision of exactly the pool's size");
	kt_fill(dfd, 0, len, 81);
	kt_expect_eq(fsync(dfd) ? -errno : 0, 0, "writes to the whole provisioned range");
	t = now();
	rc = kt_fallocate(dfd, 0, len, blk);
	t = now() - t;
	kt_expect_eq(rc, -ENOSPC, "one block more");
	kt_check(t < 5, "ENOSPC came at once (%.2f s)", t);
	ps = pool_status();
	kt_check(!strcmp(ps.mode, "out_of_data_space"), "pool mode is %s", ps.mode);
	provision_uses(dfd, 0, 0, len, 0, "provision of mapped blocks on a full pool");
	kt_expect_range(dfd, 0, len, 81, "written data intact");
	kt_fill(dfd, 0, blk, 82);
	kt_expect_eq(fsync(dfd) ? -errno : 0, 0, "a write to a provisioned block on a full pool");
	return kt_done();
}

static int cmd_big(void)
{
	const uint64_t blk = 64 * KiB;
	long long max = kt_queue_attr(dev, "provision_max_bytes");
	uint64_t off = blk + 4 * KiB, len;
	long long before, nblocks;

	require_provision();
	kt_expect_eq(max, 256 * blk, "provision_max_bytes is bounded to 256 thin blocks");
	if (max <= 0)
		return kt_done();
	len = 2 * (uint64_t)max + (uint64_t)max / 2;
	if (off + len > size)
		kt_fatal("%s is too small for a %llu-byte provision", dev, (unsigned long long)len);
	/* Blocks 1 .. (off + len - 1) / blk: the first starts inside block 1. */
	nblocks = (long long)((off + len - 1) / blk) - 1 + 1;
	provision_uses(dfd, 0, off, len, nblocks, "one request of 2.5 times provision_max_bytes");
	kt_expect_range(dfd, blk, nblocks * blk, 0, "every provisioned block reads zeros");
	provision_uses(dfd, 0, off, len, 0, "the same request again");
	before = used();
	kt_fill(dfd, blk, nblocks * blk, 96);
	kt_expect_eq(fsync(dfd) ? -errno : 0, 0, "writes over the whole range");
	kt_check(used() == before, "the writes allocate nothing (used %lld -> %lld)", before,
		 used());
	kt_expect_range(dfd, blk, nblocks * blk, 96, "data written over the range");
	kt_expect_range(dfd, 0, blk, 0, "the block before the range is untouched");
	return kt_done();
}

/* Blocks of size blk that [off, off + len) touches. */
static long long blocks_touched(uint64_t off, uint64_t len, uint64_t blk)
{
	return (long long)((off + len - 1) / blk - off / blk + 1);
}

static int cmd_oddblock(unsigned int block_sectors)
{
	const uint64_t blk = (uint64_t)block_sectors * 512;
	long long max = kt_queue_attr(dev, "provision_max_bytes");
	uint64_t off, len;

	require_provision();
	kt_check((block_sectors & (block_sectors - 1)) != 0,
		 "the pool's block (%u sectors) is not a power of two", block_sectors);
	kt_check(max > 0 && max % (long long)blk == 0,
		 "provision_max_bytes (%lld) is a multiple of the %llu-byte block", max,
		 (unsigned long long)blk);
	if (max <= 0)
		return kt_done();
	provision_uses(dfd, 0, 0, 4 * blk, 4, "4 whole blocks");
	provision_uses(dfd, 0, 5 * blk + 4 * KiB, 4 * KiB, 1, "4 KiB inside block 5");
	provision_uses(dfd, 0, 8 * blk - 4 * KiB, 8 * KiB, 2, "8 KiB across blocks 7 and 8");
	provision_uses(dfd, 0, 10 * blk + blk / 2, blk, 2, "one block's length from mid-block");
	kt_expect_range(dfd, 0, 12 * blk, 0, "provisioned blocks read zeros");
	off = 16 * blk + 4 * KiB;
	len = (uint64_t)max + (uint64_t)max / 2;
	if (off + len > size)
		kt_fatal("%s is too small for a %llu-byte provision", dev, (unsigned long long)len);
	provision_uses(dfd, 0, off, len, blocks_touched(off, len, blk),
		       "one request of 1.5 times the limit, starting inside a block");
	kt_expect_range(dfd, 16 * blk, (uint64_t)blocks_touched(off, len, blk) * blk, 0,
			"every block of the big request reads zeros");
	return kt_done();
}

static int cmd_offset(unsigned int block_sectors, unsigned int offset_sectors)
{
	const uint64_t blk = (uint64_t)block_sectors * 512, shift = (uint64_t)offset_sectors * 512;
	long long max = kt_queue_attr(dev, "provision_max_bytes");
	uint64_t off, len;

	require_provision();
	kt_check(shift % blk != 0, "dm-linear starts %llu bytes into thin, inside a block",
		 (unsigned long long)shift);
	provision_uses(dfd, 0, 0, blk, blocks_touched(shift, blk, blk),
		       "one block's length at offset 0 of the linear device");
	provision_uses(dfd, 0, 4 * blk, 4 * KiB, blocks_touched(shift + 4 * blk, 4 * KiB, blk),
		       "4 KiB at a linear offset that is a thin block multiple");
	if (max <= 0)
		return kt_done();
	off = 8 * blk;
	len = (uint64_t)max;
	if (off + len > size)
		kt_fatal("%s is too small for a %llu-byte provision", dev, (unsigned long long)len);
	provision_uses(dfd, 0, off, len, blocks_touched(shift + off, len, blk),
		       "one request of the full limit");
	kt_expect_range(dfd, 0, off + len, 0, "everything provisioned reads zeros");
	return kt_done();
}

static int cmd_refused(void)
{
	long long before = used();

	kt_expect_eq(kt_fallocate(dfd, 0, 0, 4 * 64 * KiB), -EOPNOTSUPP,
		     "provision after the pool was reloaded with skip_block_zeroing");
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_KEEP_SIZE, 0, 64 * KiB), -EOPNOTSUPP,
		     "KEEP_SIZE provision after the reload");
	kt_check(used() == before, "nothing was allocated (used %lld -> %lld)", before, used());
	kt_expect_range(dfd, 0, 4 * 64 * KiB, 0, "the range still reads zeros");
	return kt_done();
}

/* Fork a child that provisions [off, +len) and exits with the errno (0: success). */
static pid_t spawn_provision(uint64_t off, uint64_t len)
{
	pid_t pid = fork();

	if (pid < 0)
		kt_fatal("fork: %s", strerror(errno));
	if (pid == 0) {
		int rc = kt_fallocate(dfd, 0, off, len);

		_exit(rc < 0 ? -rc : 0);
	}
	return pid;
}

/* Wait up to secs for pid; returns its wait status, or -1 if it is still running. */
static int wait_for(pid_t pid, double secs)
{
	double end = now() + secs;
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return status;
		if (r < 0)
			kt_fatal("waitpid: %s", strerror(errno));
		if (now() >= end)
			return -1;
		usleep(20000);
	}
}

/*
 * In a child (so that a hang cannot hang the test): buffered reads of
 * [off, +len) of the device with a cold page cache, and mmap faults on
 * [off2, +len); exit 0 if both return the expected zeros.
 */
static pid_t spawn_reader(uint64_t off, uint64_t off2, uint64_t len)
{
	pid_t pid = fork();

	if (pid < 0)
		kt_fatal("fork: %s", strerror(errno));
	if (pid == 0) {
		int fd = open(dev, O_RDONLY);
		unsigned char *p;

		if (fd < 0)
			_exit(10);
		if (kt_verify(fd, off, len, 0) != UINT64_MAX)
			_exit(11);
		p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)off2);
		if (p == MAP_FAILED)
			_exit(12);
		for (uint64_t i = 0; i < len; i += 4096)
			if (p[i])
				_exit(13);
		_exit(0);
	}
	return pid;
}

static int cmd_blocked(const char *extend_cmd)
{
	const uint64_t blk = 64 * KiB;
	struct pool_status ps = pool_status();
	uint64_t full;
	long long total = ps.total;
	pid_t a, b, r;
	int st;

	require_provision();
	if (ps.used != 0)
		kt_fatal("pool %s is not fresh: %lld/%lld blocks used", pool, ps.used, ps.total);
	full = (uint64_t)total * blk;
	if (full + 8 * MiB > size)
		kt_fatal("%s must be at least 8 MiB larger than the pool", dev);
	provision_uses(dfd, 0, 0, full, total, "provision of the whole pool");
	/* Cold page cache for the reader below. */
	if (ioctl(dfd, BLKFLSBUF, 0))
		kt_fatal("BLKFLSBUF %s: %s", dev, strerror(errno));

	a = spawn_provision(full, blk);
	st = wait_for(a, 1.5);
	kt_check(st == -1, "a provision needing a block on the full pool waits (queue mode)%s",
		 st == -1 ? "" : ": it returned");
	ps = pool_status();
	kt_check(!strcmp(ps.mode, "out_of_data_space"), "pool mode is %s", ps.mode);
	if (st == -1) {
		double t = now();

		r = spawn_reader(0, MiB, MiB);
		st = wait_for(r, 10);
		kt_check(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
			 "buffered reads and mmap faults of uncached blocks complete meanwhile "
			 "(%s after %.2f s)", st == -1 ? "still blocked" : "done", now() - t);
		if (st == -1) {
			kill(r, SIGKILL);
			wait_for(r, 600);
		}
		t = now();
		kill(a, SIGKILL);
		st = wait_for(a, 5);
		kt_check(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
			 "SIGKILL ends the waiting provision (%s after %.2f s)",
			 st == -1 ? "still running" : "ended", now() - t);
		if (st == -1)
			wait_for(a, 600);
	}

	b = spawn_provision(full + 2 * blk, 2 * blk);
	st = wait_for(b, 1.5);
	kt_check(st == -1, "a second provision waits for space");
	kt_expect_eq(kt_sh("%s", extend_cmd), 0, "growing the pool: %s", extend_cmd);
	st = wait_for(b, 20);
	kt_check(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		 "the queued provision completes with success once the pool has grown (%s, "
		 "errno %d)", st == -1 ? "still waiting" : "ended",
		 st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	if (st == -1) {
		kill(b, SIGKILL);
		wait_for(b, 600);
	}
	ps = pool_status();
	kt_check(ps.total > total, "the pool grew (%lld -> %lld blocks)", total, ps.total);
	/* The killed provision's block was queued too: it may have been mapped. */
	kt_check(ps.used >= total + 2 && ps.used <= total + 3,
		 "the queued blocks are mapped (used %lld, want %lld or %lld)", ps.used,
		 total + 2, total + 3);
	kt_check(!strcmp(ps.mode, "rw"), "pool mode is rw again (%s)", ps.mode);
	provision_uses(dfd, 0, full + 2 * blk, 2 * blk, 0, "provision of the queued range again");
	kt_expect_range(dfd, full, 4 * blk, 0, "the queued range reads zeros");
	return kt_done();
}

static atomic_bool race_stop;
static atomic_int race_errors;

struct racer {
	int kind; /* 0, 1: provision, 2: write, 3: discard */
	unsigned int seed;
	long ops;
};

enum { RACE_BLOCKS = 8 };

static void *racer_main(void *arg)
{
	const uint64_t blk = 64 * KiB;
	struct racer *r = arg;
	void *buf = NULL;
	int fd = open_direct(dev);

	if (r->kind == 2 && posix_memalign(&buf, 4096, blk))
		kt_fatal("posix_memalign");
	while (!atomic_load(&race_stop)) {
		unsigned int b = (unsigned int)rand_r(&r->seed) % RACE_BLOCKS;
		unsigned int n = 1 + (unsigned int)rand_r(&r->seed) % (RACE_BLOCKS - b);
		uint64_t range[2] = { b * blk, blk };
		int rc = 0;

		switch (r->kind) {
		case 0:
		case 1:
			rc = kt_fallocate(fd, r->kind ? FALLOC_FL_KEEP_SIZE : 0, b * blk, n * blk);
			break;
		case 2: {
			uint32_t seed = 100 + (unsigned int)rand_r(&r->seed) % 50;

			for (uint64_t i = 0; i < blk; i++)
				((uint8_t *)buf)[i] = kt_pattern_byte(seed, b * blk + i);
			rc = pwrite(fd, buf, blk, (off_t)(b * blk)) == (ssize_t)blk ? 0 : -errno;
			break;
		}
		case 3:
			rc = ioctl(fd, BLKDISCARD, range) ? -errno : 0;
			break;
		}
		if (rc) {
			printf("not ok - racer %d: %s\n", r->kind, kt_errname(rc));
			atomic_fetch_add(&race_errors, 1);
		}
		r->ops++;
	}
	free(buf);
	close(fd);
	return NULL;
}

/* The seed (100..149) whose pattern fills block b, 0 for zeros, -1 for neither. */
static int block_seed(unsigned int b)
{
	const uint64_t blk = 64 * KiB;

	if (kt_verify(dfd, b * blk, blk, 0) == UINT64_MAX)
		return 0;
	for (int seed = 100; seed < 150; seed++)
		if (kt_verify(dfd, b * blk, 512, seed) == UINT64_MAX)
			return kt_verify(dfd, b * blk, blk, seed) == UINT64_MAX ? seed : -1;
	return -1;
}

static int cmd_race(void)
{
	struct racer r[4] = { { 0, 1, 0 }, { 1, 2, 0 }, { 2, 3, 0 }, { 3, 4, 0 } };
	pthread_t th[4];
	struct pool_status ps = pool_status();

	require_provision();
	if (ps.used != 0)
		kt_fatal("pool %s is not fresh: %lld/%lld blocks used", pool, ps.used, ps.total);
	for (int i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, racer_main, &r[i]))
			kt_fatal("pthread_create");
	sleep(4);
	atomic_store(&race_stop, true);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	kt_note("operations: provision %ld, provision(KEEP_SIZE) %ld, write %ld, discard %ld",
		r[0].ops, r[1].ops, r[2].ops, r[3].ops);
	kt_check(r[0].ops > 3 && r[1].ops > 3 && r[2].ops > 3 && r[3].ops > 3,
		 "every racer made progress");
	kt_expect_eq(atomic_load(&race_errors), 0, "no provision, write or discard failed");
	for (unsigned int b = 0; b < RACE_BLOCKS; b++) {
		int seed = block_seed(b);

		kt_check(seed >= 0, "block %u holds zeros or one whole write (seed %d)", b, seed);
	}
	kt_expect_eq(kt_fallocate(dfd, 0, 0, RACE_BLOCKS * 64 * KiB), 0,
		     "a last provision of the 8 blocks");
	kt_expect_eq(used(), RACE_BLOCKS, "the pool uses exactly 8 data blocks (nothing leaked)");
	return kt_done();
}

static int cmd_failmode(const char *meta)
{
	const uint64_t blk = 64 * KiB;
	double t;
	int rc;

	require_provision();
	provision_uses(dfd, 0, 0, blk, 1, "provision of one block while the pool is healthy");
	kt_fill(dfd, 0, blk, 98);
	kt_expect_eq(fsync(dfd) ? -errno : 0, 0, "fsync commits it");
	if (kt_sh("dmsetup suspend %s && dmsetup load %s --table '0 8192 error' && "
		  "dmsetup resume %s", meta, meta, meta))
		kt_fatal("cannot switch %s to the error target", meta);
	/* A new mapping and a flush: the commit fails, the pool leaves write mode. */
	rc = kt_fallocate(dfd, 0, blk, blk);
	kt_note("provision after the metadata device failed, before a commit: %s",
		kt_errname(rc));
	kt_fill(dfd, 0, 4096, 99);
	rc = fsync(dfd) ? -errno : 0;
	kt_note("fsync with the metadata device failing: %s", kt_errname(rc));
	/* In fail mode the status is just "Fail": pool_status() cannot parse it. */
	kt_sh("echo \"# status: $(dmsetup status %s)\"", pool);
	kt_check(kt_sh("dmsetup status %s | grep -qE ' thin-pool Fail| ro '", pool) == 0,
		 "the pool left write mode (Fail or ro)");
	t = now();
	rc = kt_fallocate(dfd, 0, 8 * blk, blk);
	t = now() - t;
	kt_expect_eq(rc, -EIO, "provision of an unmapped block on the failed pool");
	kt_check(t < 10, "it failed at once (%.2f s)", t);
	rc = kt_fallocate(dfd, FALLOC_FL_KEEP_SIZE, 8 * blk, 4 * blk);
	kt_expect_eq(rc, -EIO, "KEEP_SIZE provision of unmapped blocks on the failed pool");
	return kt_done();
}

static int cmd_extorigin(const char *origin)
{
	const uint64_t blk = 64 * KiB, len = 16 * blk;
	int ofd = open(origin, O_RDONLY | O_DIRECT);
	long long before;

	if (ofd < 0)
		kt_fatal("open %s: %s", origin, strerror(errno));
	require_provision();
	kt_expect_range(dfd, 0, len, 95, "an unmapped thin range reads the external origin");
	provision_uses(dfd, 0, 0, len, 16, "provision of 16 blocks over the external origin");
	kt_expect_range(dfd, 0, len, 95, "the provisioned blocks hold the origin's data");
	provision_uses(dfd, 0, 0, len, 0, "second provision of the same range");
	before = used();
	kt_fill(dfd, 4 * KiB, 8 * KiB, 97);
	kt_expect_eq(fsync(dfd) ? -errno : 0, 0, "a partial write into a provisioned block");
	kt_check(used() == before, "the write allocates nothing (used %lld -> %lld)", before,
		 used());
	kt_expect_range(dfd, 0, 4 * KiB, 95, "the rest of that block keeps the origin's data");
	kt_expect_range(dfd, 4 * KiB, 8 * KiB, 97, "the written part");
	kt_expect_range(ofd, 0, len, 95, "the external origin is unchanged");
	close(ofd);
	return kt_done();
}

static int cmd_outofmeta(void)
{
	const uint64_t blk = 64 * KiB;
	struct pool_status ps = pool_status();
	char cmd[256], line[512] = "";
	uint64_t mapped;
	double t;
	FILE *f;
	int rc;

	require_provision();
	if (ps.used != 0)
		kt_fatal("pool %s is not fresh: %lld/%lld blocks used", pool, ps.used, ps.total);
	t = now();
	rc = kt_fallocate(dfd, 0, 0, size);
	t = now() - t;
	kt_expect_eq(rc, -EIO, "provision of the whole %llu-byte device, metadata runs out",
		     (unsigned long long)size);
	kt_check(t < 60, "the provision ended in %.2f s", t);
	ps = pool_status();
	kt_check(!strcmp(ps.mode, "ro"), "the pool turned read-only (mode %s)", ps.mode);
	kt_check(ps.used > 0 && ps.used < ps.total, "part of the range was committed (%lld/%lld)",
		 ps.used, ps.total);
	snprintf(cmd, sizeof(cmd), "dmsetup status %s", pool);
	f = popen(cmd, "r");
	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = 0;
		pclose(f);
	}
	line[strcspn(line, "\n")] = 0;
	kt_check(strstr(line, "needs_check") != NULL, "the pool needs a check: %s", line);
	if (ps.used <= 1)
		return kt_done();
	/* The first blocks are the first provisioned and committed. */
	mapped = blk;
	kt_expect_eq(kt_fallocate(dfd, 0, 0, mapped), 0, "provision of the committed first block");
	kt_expect_eq(kt_fallocate(dfd, 0, size - blk, blk), -EIO,
		     "provision of the last, unmapped block");
	kt_fill(dfd, 0, mapped, 73);
	kt_expect_range(dfd, 0, mapped, 73, "a direct write to the committed block");
	kt_check(used() == ps.used, "nothing more allocated (%lld -> %lld)", ps.used, used());
	return kt_done();
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "fill-origin")) {
		/* Set-up for extorigin: pattern 95 over the whole device. */
		open_dev(argv[2]);
		kt_fill(dfd, 0, size, 95);
		return fsync(dfd) ? 1 : 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "snap")) {
		pool = argv[2];
		return cmd_snap((unsigned int)strtoul(argv[3], NULL, 0));
	}
	if (argc < 4)
		kt_fatal("usage: t_provision_thin basic|enospc|fit|modes|big|race|outofmeta|refused "
			 "THIN POOL | oddblock THIN POOL BLOCK | offset DEV POOL BLOCK OFFSET | "
			 "blocked THIN POOL CMD | extorigin THIN POOL ORIGIN | failmode THIN POOL META | "
			 "snap POOL ID");
	pool = argv[3];
	open_dev(argv[2]);
	if (!strcmp(argv[1], "basic"))
		return cmd_basic();
	if (!strcmp(argv[1], "fit"))
		return cmd_fit();
	if (!strcmp(argv[1], "modes"))
		return cmd_modes();
	if (!strcmp(argv[1], "big"))
		return cmd_big();
	if (!strcmp(argv[1], "race"))
		return cmd_race();
	if (!strcmp(argv[1], "blocked") && argc == 5)
		return cmd_blocked(argv[4]);
	if (!strcmp(argv[1], "failmode") && argc == 5)
		return cmd_failmode(argv[4]);
	if (!strcmp(argv[1], "outofmeta"))
		return cmd_outofmeta();
	if (!strcmp(argv[1], "oddblock") && argc == 5)
		return cmd_oddblock((unsigned int)strtoul(argv[4], NULL, 0));
	if (!strcmp(argv[1], "offset") && argc == 6)
		return cmd_offset((unsigned int)strtoul(argv[4], NULL, 0),
				  (unsigned int)strtoul(argv[5], NULL, 0));
	if (!strcmp(argv[1], "refused"))
		return cmd_refused();
	if (!strcmp(argv[1], "extorigin") && argc == 5)
		return cmd_extorigin(argv[4]);
	if (!strcmp(argv[1], "enospc")) {
		double min_wait = 0;

		if (argc > 4 && !strncmp(argv[4], "--min-wait=", 11))
			min_wait = atof(argv[4] + 11);
		return cmd_enospc(min_wait);
	}
	kt_fatal("unknown command %s", argv[1]);
}
