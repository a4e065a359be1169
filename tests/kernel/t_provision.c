// SPDX-License-Identifier: MIT
/*
 * t_provision: "ensure space exists" on block devices (REQ_OP_PROVISION,
 * reached through fallocate mode 0 and FALLOC_FL_KEEP_SIZE), on devices
 * that cannot provision and on loop devices over files:
 *
 *  t_provision none DEV
 *    queue/provision_max_bytes reads 0; mode 0, KEEP_SIZE and
 *    UNSHARE_RANGE (with and without KEEP_SIZE) give EOPNOTSUPP and change
 *    nothing (virtio-blk, scsi_debug, dm-linear over them).
 *  t_provision loop DEV FILE
 *    DEV maps FILE (a sparse file) from offset 0: provision_max_bytes > 0;
 *    provisioning grows FILE's st_blocks by exactly the unallocated part
 *    of the range, keeps data already written (on the device and dirty or
 *    clean in the page cache), unwritten parts read zeros, a second
 *    provision is a no-op; misaligned ranges -> EINVAL, ranges at/after
 *    the end -> EINVAL, ranges crossing the end are clamped with KEEP_SIZE
 *    and refused without; UNSHARE_RANGE stays EOPNOTSUPP; a read-only fd
 *    gets EBADF, a read-only device (BLKROSET) EPERM.
 *  t_provision enospc DEV FILE FILLER
 *    FILE lives on a nearly full file system where FILLER takes the space:
 *    provisioning more than is free gives ENOSPC (not EIO, and nothing
 *    logged as an I/O error), data on DEV is
 *    unchanged and the range still reads zeros; once FILLER is gone the
 *    same range provisions, takes a full write and reads it back.
 *  t_provision partition DEV FILE START
 *    DEV is partition 1 (starting START bytes into the disk) of a loop
 *    device over FILE: provision is remapped by the partition's offset
 *    (FILE is allocated at START + off, not at off), reads zeros, and the
 *    partition's end bounds it (EINVAL without KEEP_SIZE, clamped with).
 *  t_provision stats DEV
 *    provision is accounted like discard: after provisioning 1 MiB,
 *    /sys/block/<dev>/stat shows no new written sectors and exactly 2048
 *    more discard sectors, in at least one more discard request.
 *  t_provision misaligned DEV FILE
 *    DEV is a loop device with 512-byte sectors over a block device with
 *    4096-byte sectors (a loop over FILE): a provision that is 512- but
 *    not 4096-aligned gives EINVAL, logs no I/O error and allocates
 *    nothing; an aligned one succeeds and allocates in FILE.
 *  t_provision errno DEV FILE
 *    The same stack as misaligned: a discard (BLKDISCARD) of DEV that is
 *    512- but not 4096-aligned reaches the lower loop, whose fallocate of
 *    the 4Kn device refuses it with -EINVAL; loop completes the request
 *    with that errno, which errno_to_blk_status() must still map to an
 *    I/O error (EIO), as before the series: only provision sets
 *    BLK_STS_INVAL, and only explicitly (0005).  The provision of the
 *    same range is EINVAL.
 *  t_provision frozen DEV FILE MNT
 *    DEV is a loop device over FILE on the file system mounted at MNT,
 *    which the test freezes (FIFREEZE): a provision and a discard of DEV
 *    wait for the thaw instead of changing the frozen file system (FILE's
 *    st_blocks stays put while frozen; the kernel logs no warning), then
 *    complete with 0 and allocate or free the range.
 *  t_provision immutable DEV FILE
 *    DEV is a loop device over FILE; FILE is then made immutable
 *    (FS_IMMUTABLE_FL): a provision of DEV fails and allocates nothing in
 *    FILE, as fallocate() of FILE itself does (EPERM).
 *  t_provision swapfile DEV FILE
 *    DEV is a loop device over FILE, a fully allocated file made a swap
 *    area (mkswap) and activated (swapon): fallocate() of FILE itself is
 *    ETXTBSY, and a provision of DEV must fail too, even over blocks that
 *    are already allocated (without the check, ext4 would answer 0 and
 *    could allocate under the swap code, which mapped the file's blocks
 *    once).  After swapoff the same provision succeeds.
 *
 * DESTROYS the data on DEV.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ktest.h"

static const char *dev;
static int dfd; /* O_DIRECT */
static unsigned int lbs;
static uint64_t size;

/* st_blocks (512-byte units) of path, after flushing the device to it. */
static long long file_blocks(const char *path)
{
	struct stat st;

	if (fsync(dfd))
		kt_fatal("fsync %s: %s", dev, strerror(errno));
	if (stat(path, &st))
		kt_fatal("stat %s: %s", path, strerror(errno));
	return (long long)st.st_blocks;
}

static void open_dev(const char *path)
{
	dev = path;
	dfd = open(dev, O_RDWR | O_DIRECT);
	if (dfd < 0)
		kt_fatal("open %s: %s", dev, strerror(errno));
	lbs = kt_lbs(dfd);
	size = kt_dev_size(dfd);
	kt_note("%s: %llu bytes, %u-byte logical blocks, provision_max_bytes %lld", dev,
		(unsigned long long)size, lbs, kt_queue_attr(dev, "provision_max_bytes"));
}

static int cmd_none(void)
{
	static const struct { const char *name; int mode; } modes[] = {
		{ "mode 0", 0 },
		{ "KEEP_SIZE", FALLOC_FL_KEEP_SIZE },
		{ "UNSHARE_RANGE", FALLOC_FL_UNSHARE_RANGE },
		{ "UNSHARE_RANGE|KEEP_SIZE", FALLOC_FL_UNSHARE_RANGE | FALLOC_FL_KEEP_SIZE },
	};
	uint64_t base = 2 * MiB;
	long long max = kt_queue_attr(dev, "provision_max_bytes");

	/* Patch 0003 adds the attribute to every queue: absent (-1) is a broken series. */
	kt_check(max == 0, "queue/provision_max_bytes exists and reads 0 on a device without "
		 "provision (%lld%s)", max, max == -1 ? ": absent, kernel patch 0003 missing?" : "");
	kt_fill(dfd, base, MiB, 31);
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		kt_expect_eq(kt_fallocate(dfd, modes[i].mode, base, MiB), -EOPNOTSUPP, "%s",
			     modes[i].name);
	kt_expect_range(dfd, base, MiB, 31, "refused provision changed nothing");
	return kt_done();
}

/*
 * Provision [off, +len) with mode and check how much FILE grew: by exactly
 * grow_bytes of data, plus at most one file system block (4 KiB) when the
 * backing file's extent map needs a block of its own.
 */
static void provision_grows(const char *file, int mode, uint64_t off, uint64_t len,
			    uint64_t grow_bytes, const char *what)
{
	long long before = file_blocks(file), after, want = (long long)(grow_bytes / 512);

	kt_expect_eq(kt_fallocate(dfd, mode, off, len), 0, "%s: provision [%llu, +%llu)", what,
		     (unsigned long long)off, (unsigned long long)len);
	after = file_blocks(file);
	if (!grow_bytes)
		kt_check(after == before, "%s: backing file st_blocks unchanged (%lld -> %lld)",
			 what, before, after);
	else
		kt_check(after - before >= want && after - before <= want + 8,
			 "%s: backing file st_blocks grew by %lld sectors (want %lld, +8 for "
			 "extent metadata)", what, after - before, want);
}

static void loop_basic(const char *file)
{
	uint64_t base = MiB;

	kt_check(kt_queue_attr(dev, "provision_max_bytes") > 0,
		 "queue/provision_max_bytes is non-zero (%lld)",
		 kt_queue_attr(dev, "provision_max_bytes"));

	/* 64 KiB of data in the middle of a 1 MiB hole. */
	kt_fill(dfd, base + 64 * KiB, 64 * KiB, 41);
	provision_grows(file, 0, base, MiB, MiB - 64 * KiB, "mode 0 around written data");
	kt_expect_range(dfd, base + 64 * KiB, 64 * KiB, 41, "data written before provision");
	kt_expect_range(dfd, base, 64 * KiB, 0, "unwritten part before the data");
	kt_expect_range(dfd, base + 128 * KiB, MiB - 128 * KiB, 0, "unwritten part after the data");
	provision_grows(file, 0, base, MiB, 0, "second provision of the same range");
	provision_grows(file, FALLOC_FL_KEEP_SIZE, 3 * MiB, 512 * KiB, 512 * KiB, "KEEP_SIZE");
	kt_expect_range(dfd, 3 * MiB, 512 * KiB, 0, "provisioned range");

	/* A write into provisioned space needs no allocation. */
	provision_grows(file, 0, 4 * MiB, 256 * KiB, 256 * KiB, "mode 0 before a write");
	{
		long long before = file_blocks(file);

		kt_fill(dfd, 4 * MiB, 256 * KiB, 42);
		kt_expect_eq(file_blocks(file) - before, 0,
			     "writing provisioned space grows the backing file by nothing");
		kt_expect_range(dfd, 4 * MiB, 256 * KiB, 42, "data written into provisioned space");
	}
}

static void loop_checks(const char *file)
{
	uint64_t half = lbs / 2, base = 6 * MiB, last = size - lbs;
	int rfd;

	kt_fill(dfd, base, MiB, 43);
	kt_expect_eq(kt_fallocate(dfd, 0, base + half, lbs), -EINVAL, "misaligned offset +%llu",
		     (unsigned long long)half);
	kt_expect_eq(kt_fallocate(dfd, 0, base, lbs + half), -EINVAL, "misaligned length %llu",
		     (unsigned long long)(lbs + half));
	if (lbs > 512)
		kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_KEEP_SIZE, base + 512, lbs), -EINVAL,
			     "512-aligned offset on a %u-byte-sector device", lbs);
	kt_expect_eq(kt_fallocate(dfd, 0, base, 0), -EINVAL, "length 0");
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_UNSHARE_RANGE, base, MiB), -EOPNOTSUPP,
		     "UNSHARE_RANGE");
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_UNSHARE_RANGE | FALLOC_FL_KEEP_SIZE, base, MiB),
		     -EOPNOTSUPP, "UNSHARE_RANGE|KEEP_SIZE");
	kt_expect_range(dfd, base, MiB, 43, "refused requests changed nothing");

	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_KEEP_SIZE, size, lbs), -EINVAL,
		     "KEEP_SIZE starting at the device end");
	kt_expect_eq(kt_fallocate(dfd, 0, size + MiB, lbs), -EINVAL,
		     "mode 0 starting past the device end");
	kt_fill(dfd, last, lbs, 44);
	kt_expect_eq(kt_fallocate(dfd, 0, last, 2 * lbs), -EINVAL,
		     "mode 0 crossing the end without KEEP_SIZE");
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_KEEP_SIZE, last - lbs, 8 * lbs), 0,
		     "KEEP_SIZE crossing the end is clamped");
	kt_expect_range(dfd, last, lbs, 44, "last block keeps its data");
	kt_expect_range(dfd, last - lbs, lbs, 0, "block before it reads zeros");

	rfd = open(dev, O_RDONLY);
	if (rfd < 0)
		kt_fatal("open %s read-only: %s", dev, strerror(errno));
	kt_expect_eq(kt_fallocate(rfd, 0, base, MiB), -EBADF, "mode 0 on a read-only fd");
	close(rfd);

	/* A read-only device (BLKROSET), through an fd opened for writing: EPERM. */
	{
		int ro = 1;
		long long before = file_blocks(file);

		if (ioctl(dfd, BLKROSET, &ro))
			kt_fatal("BLKROSET 1 on %s: %s", dev, strerror(errno));
		kt_expect_eq(kt_fallocate(dfd, 0, 10 * MiB, MiB), -EPERM,
			     "mode 0 on a read-only device");
		kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_KEEP_SIZE, 10 * MiB, MiB), -EPERM,
			     "KEEP_SIZE on a read-only device");
		ro = 0;
		if (ioctl(dfd, BLKROSET, &ro))
			kt_fatal("BLKROSET 0 on %s: %s", dev, strerror(errno));
		kt_expect_eq(file_blocks(file) - before, 0,
			     "the read-only refusals allocated nothing in the backing file");
	}
}

/* Provisioning does not invalidate the page cache: cached data survives. */
static void loop_page_cache(bool sync_first)
{
	uint64_t base = 8 * MiB + (sync_first ? MiB : 0);
	int bfd = open(dev, O_RDWR);
	uint64_t bad;

	if (bfd < 0)
		kt_fatal("open %s buffered: %s", dev, strerror(errno));
	kt_fill(bfd, base + 64 * KiB, 64 * KiB, 45);
	if (sync_first) {
		fsync(bfd);
		kt_verify(bfd, base + 64 * KiB, 64 * KiB, 45);
	}
	kt_expect_eq(kt_fallocate(bfd, 0, base, 256 * KiB), 0, "provision over %s cached pages",
		     sync_first ? "clean" : "dirty");
	bad = kt_verify(bfd, base + 64 * KiB, 64 * KiB, 45);
	kt_check(bad == UINT64_MAX, "buffered read after provision returns the %s data",
		 sync_first ? "clean" : "dirty");
	fsync(bfd);
	kt_expect_range(dfd, base + 64 * KiB, 64 * KiB, 45, "after fsync the device holds the data");
	kt_expect_range(dfd, base, 64 * KiB, 0, "the rest of the range reads zeros");
	close(bfd);
}

static int cmd_loop(const char *file)
{
	/* The guest boots the patched kernel: a loop device that cannot provision fails. */
	if (kt_queue_attr(dev, "provision_max_bytes") <= 0)
		kt_fatal("%s: queue/provision_max_bytes is %lld: kernel patches 0003/0004 missing "
			 "or broken", dev, kt_queue_attr(dev, "provision_max_bytes"));
	if (size < 16 * MiB)
		kt_fatal("%s: need at least 16 MiB", dev);
	loop_basic(file);
	loop_checks(file);
	loop_page_cache(false);
	loop_page_cache(true);
	return kt_done();
}

static int cmd_enospc(const char *file, const char *filler)
{
	uint64_t len = size, data = 64 * KiB;
	struct stat st;
	int rc, logged;

	if (kt_queue_attr(dev, "provision_max_bytes") <= 0)
		kt_fatal("%s: queue/provision_max_bytes is %lld: kernel patches 0003/0004 missing "
			 "or broken", dev, kt_queue_attr(dev, "provision_max_bytes"));
	kt_fill(dfd, 0, data, 51);
	fsync(dfd);
	logged = kt_dmesg_count(KT_DMESG_IO_ERROR);
	rc = kt_fallocate(dfd, 0, 0, len);
	kt_expect_eq(rc, -ENOSPC, "provision of %llu MiB with less free gives ENOSPC",
		     (unsigned long long)(len / MiB));
	logged = kt_dmesg_count(KT_DMESG_IO_ERROR) - logged;
	kt_check(logged == 0, "ENOSPC is not logged as an I/O error (%d new kernel lines match "
		 "'%s')", logged, KT_DMESG_IO_ERROR);
	kt_expect_range(dfd, 0, data, 51, "data written before the failed provision");
	kt_expect_range(dfd, data, len - data, 0, "the rest of the device still reads zeros");
	if (stat(file, &st))
		kt_fatal("stat %s: %s", file, strerror(errno));
	kt_note("after ENOSPC the backing file has %llu bytes allocated (kept, like fallocate)",
		(unsigned long long)st.st_blocks * 512);
	/* The file system is full, yet data already there can be overwritten. */
	kt_fill(dfd, 0, data, 53);
	kt_expect_eq(fsync(dfd) ? -errno : 0, 0, "overwrite of existing data on the full fs");
	kt_expect_range(dfd, 0, data, 53, "overwritten data");

	/* Free the space: the range now provisions and takes a full write. */
	if (unlink(filler))
		kt_fatal("unlink %s: %s", filler, strerror(errno));
	sync();
	kt_expect_eq(kt_fallocate(dfd, 0, 0, len), 0, "provision after freeing space");
	if (stat(file, &st))
		kt_fatal("stat %s: %s", file, strerror(errno));
	kt_check((uint64_t)st.st_blocks * 512 >= len,
		 "backing file holds the whole range (%llu bytes allocated)",
		 (unsigned long long)st.st_blocks * 512);
	kt_fill(dfd, 0, len, 52);
	kt_expect_eq(fsync(dfd) ? -errno : 0, 0, "fsync after writing the whole device");
	kt_expect_range(dfd, 0, len, 52, "whole device written after provision");
	return kt_done();
}

/* Bytes of path's [off, off + len) that FIEMAP maps. */
static uint64_t file_mapped(const char *path, uint64_t off, uint64_t len)
{
	enum { N = 32 };
	struct fiemap *fm = calloc(1, sizeof(*fm) + N * sizeof(struct fiemap_extent));
	int fd = open(path, O_RDONLY);
	uint64_t mapped = 0;

	if (!fm || fd < 0)
		kt_fatal("fiemap %s: %s", path, strerror(errno));
	fm->fm_start = off;
	fm->fm_length = len;
	fm->fm_flags = FIEMAP_FLAG_SYNC;
	fm->fm_extent_count = N;
	if (ioctl(fd, FS_IOC_FIEMAP, fm))
		kt_fatal("FS_IOC_FIEMAP %s: %s", path, strerror(errno));
	for (unsigned int i = 0; i < fm->fm_mapped_extents; i++) {
		struct fiemap_extent *x = &fm->fm_extents[i];
		uint64_t a = x->fe_logical > off ? x->fe_logical : off;
		uint64_t b = x->fe_logical + x->fe_length < off + len ? x->fe_logical + x->fe_length
								       : off + len;

		if (b > a)
			mapped += b - a;
	}
	free(fm);
	close(fd);
	return mapped;
}

/* dev is partition 1 of a loop device over file, starting at part_start bytes. */
static int cmd_partition(const char *file, uint64_t part_start)
{
	provision_grows(file, 0, MiB, MiB, MiB, "partition, mode 0");
	kt_check(file_mapped(file, part_start + MiB, MiB) == MiB,
		 "the backing file is allocated at the partition's offset + 1 MiB (%llu bytes)",
		 (unsigned long long)file_mapped(file, part_start + MiB, MiB));
	kt_check(file_mapped(file, MiB, MiB) == 0,
		 "nothing allocated at the same offset without the partition's (%llu bytes)",
		 (unsigned long long)file_mapped(file, MiB, MiB));
	kt_expect_range(dfd, MiB, MiB, 0, "the provisioned range reads zeros");
	kt_expect_eq(kt_fallocate(dfd, 0, size - 4096, 8192), -EINVAL,
		     "provision crossing the partition's end (no KEEP_SIZE)");
	provision_grows(file, FALLOC_FL_KEEP_SIZE, size - 4096, 8192, 4096,
			"KEEP_SIZE clamped at the partition's end");
	return kt_done();
}

/* The 17 counters of /sys/dev/block/M:m/stat for the open device. */
static void dev_stat(unsigned long long v[17])
{
	char path[128], buf[512];
	struct stat st;
	int n;

	if (fstat(dfd, &st))
		kt_fatal("fstat %s: %s", dev, strerror(errno));
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/stat", major(st.st_rdev),
		 minor(st.st_rdev));
	if (kt_read_file(path, buf, sizeof(buf)) < 0)
		kt_fatal("read %s", path);
	memset(v, 0, 17 * sizeof(v[0]));
	n = sscanf(buf, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		   "%llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8],
		   &v[9], &v[10], &v[11], &v[12], &v[13], &v[14], &v[15], &v[16]);
	if (n < 15)
		kt_fatal("%s: %d fields: %s", path, n, buf);
}

/* Fields of the stat file (Documentation/block/stat.rst). */
enum { ST_WRITE_IOS = 4, ST_WRITE_SECTORS = 6, ST_DISCARD_IOS = 11, ST_DISCARD_SECTORS = 13 };

static int cmd_stats(void)
{
	unsigned long long a[17], b[17];
	uint64_t off = 2 * MiB;

	if (kt_queue_attr(dev, "provision_max_bytes") <= 0)
		kt_fatal("%s cannot provision", dev);
	fsync(dfd);
	dev_stat(a);
	kt_expect_eq(kt_fallocate(dfd, 0, off, MiB), 0, "provision of 1 MiB");
	/*
	 * The block layer completes the bio (waking us, and adding the
	 * sectors) before it counts the finished request (the I/O count, in
	 * __blk_mq_end_request()): give the count up to a second to follow.
	 */
	for (int i = 0; i < 100; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		dev_stat(b);
		if (b[ST_DISCARD_IOS] > a[ST_DISCARD_IOS])
			break;
		nanosleep(&ts, NULL);
	}
	kt_note("write ios %llu -> %llu, sectors %llu -> %llu; discard ios %llu -> %llu, "
		"sectors %llu -> %llu", a[ST_WRITE_IOS], b[ST_WRITE_IOS], a[ST_WRITE_SECTORS],
		b[ST_WRITE_SECTORS], a[ST_DISCARD_IOS], b[ST_DISCARD_IOS], a[ST_DISCARD_SECTORS],
		b[ST_DISCARD_SECTORS]);
	kt_expect_eq(b[ST_WRITE_SECTORS] - a[ST_WRITE_SECTORS], 0,
		     "provision adds no written sectors");
	kt_expect_eq(b[ST_WRITE_IOS] - a[ST_WRITE_IOS], 0, "provision adds no write requests");
	kt_expect_eq(b[ST_DISCARD_SECTORS] - a[ST_DISCARD_SECTORS], MiB / 512,
		     "provision adds its sectors to the discard column");
	kt_check(b[ST_DISCARD_IOS] > a[ST_DISCARD_IOS], "discard requests %llu -> %llu",
		 a[ST_DISCARD_IOS], b[ST_DISCARD_IOS]);
	return kt_done();
}

static int cmd_misaligned(const char *file)
{
	long long before, logged;

	if (kt_queue_attr(dev, "provision_max_bytes") <= 0)
		kt_fatal("%s: provision_max_bytes is %lld: the loop over a provisioning device "
			 "must offer provision", dev, kt_queue_attr(dev, "provision_max_bytes"));
	kt_expect_eq(lbs, 512, "the upper loop has 512-byte sectors");
	before = file_blocks(file);
	logged = kt_dmesg_count(KT_DMESG_IO_ERROR);
	kt_expect_eq(kt_fallocate(dfd, 0, MiB + 512, 4096), -EINVAL,
		     "provision at a 512- but not 4096-aligned offset");
	kt_expect_eq(kt_fallocate(dfd, FALLOC_FL_KEEP_SIZE, MiB, 4096 + 512), -EINVAL,
		     "provision of a 512- but not 4096-aligned length");
	kt_expect_eq(kt_dmesg_count(KT_DMESG_IO_ERROR) - logged, 0,
		     "the refusals log no I/O error");
	kt_expect_eq(file_blocks(file) - before, 0, "the refusals allocate nothing");
	provision_grows(file, 0, 2 * MiB, 64 * KiB, 64 * KiB, "an aligned provision");
	kt_expect_range(dfd, 2 * MiB, 64 * KiB, 0, "the provisioned range reads zeros");
	return kt_done();
}

static int cmd_errno(const char *file)
{
	uint64_t r[2] = { MiB + 512, 4096 };
	long long before = file_blocks(file), logged;
	int rc;

	kt_expect_eq(lbs, 512, "the upper loop has 512-byte sectors");
	if (kt_queue_attr(dev, "discard_max_bytes") <= 0)
		kt_fatal("%s: discard_max_bytes is %lld: the loop over a loop must offer discard",
			 dev, kt_queue_attr(dev, "discard_max_bytes"));
	logged = kt_dmesg_count(KT_DMESG_IO_ERROR);
	rc = ioctl(dfd, BLKDISCARD, r) ? -errno : 0;
	kt_expect_eq(rc, -EIO, "a 512- but not 4096-aligned discard the lower device refuses "
		     "with -EINVAL is an I/O error, as before the series");
	kt_check(kt_dmesg_count(KT_DMESG_IO_ERROR) > logged,
		 "the kernel logs it as an I/O error of the discard");
	kt_expect_eq(kt_fallocate(dfd, 0, MiB + 512, 4096), -EINVAL,
		     "the provision of the same range is EINVAL (set explicitly)");
	kt_expect_eq(file_blocks(file) - before, 0, "neither allocated anything");
	return kt_done();
}

/* st_blocks of path without syncing anything (the file system may be frozen). */
static long long st_blocks_of(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		kt_fatal("stat %s: %s", path, strerror(errno));
	return (long long)st.st_blocks;
}

/*
 * Run op (0: provision, 1: discard) of [off, +len) on DEV in a child while
 * the file system at mnt is frozen: the child must still be waiting after
 * a second, FILE unchanged; after the thaw it must finish with 0.
 */
static void frozen_op(const char *file, int mfd, int op, uint64_t off, uint64_t len,
		      const char *what)
{
	long long before = st_blocks_of(file), during;
	struct timespec ts = { 1, 0 };
	int status, rc;
	pid_t pid;

	if (ioctl(mfd, FIFREEZE, 0))
		kt_fatal("FIFREEZE: %s", strerror(errno));
	pid = fork();
	if (pid < 0) {
		ioctl(mfd, FITHAW, 0);
		kt_fatal("fork: %s", strerror(errno));
	}
	if (pid == 0) {
		uint64_t r[2] = { off, len };

		if (op == 0)
			rc = kt_fallocate(dfd, 0, off, len);
		else
			rc = ioctl(dfd, BLKDISCARD, r) ? -errno : 0;
		_exit(rc == 0 ? 0 : 100 + (-rc & 0x7f));
	}
	nanosleep(&ts, NULL);
	rc = waitpid(pid, &status, WNOHANG);
	during = st_blocks_of(file);
	if (ioctl(mfd, FITHAW, 0))
		kt_fatal("FITHAW: %s", strerror(errno));
	kt_check(rc == 0, "%s waits while the backing file system is frozen (%s)", what,
		 rc == 0 ? "still waiting after 1 s" : "finished while frozen");
	kt_check(during == before, "%s: backing file unchanged while frozen (st_blocks %lld -> "
		 "%lld)", what, before, during);
	if (rc == 0 && waitpid(pid, &status, 0) != pid)
		kt_fatal("waitpid: %s", strerror(errno));
	kt_check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "%s completes with 0 after the thaw (exit %d: 100 + errno)", what,
		 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static int cmd_frozen(const char *file, const char *mnt)
{
	int mfd = open(mnt, O_RDONLY | O_DIRECTORY);
	long long before;

	if (mfd < 0)
		kt_fatal("open %s: %s", mnt, strerror(errno));
	if (kt_queue_attr(dev, "provision_max_bytes") <= 0)
		kt_fatal("%s: no provision on a loop over a file", dev);
	before = file_blocks(file);
	frozen_op(file, mfd, 0, 0, MiB, "provision of 1 MiB");
	kt_check(file_blocks(file) - before >= 2048,
		 "the provision allocated 1 MiB after the thaw (%lld sectors)",
		 file_blocks(file) - before);
	kt_fill(dfd, 4 * MiB, MiB, 41);
	before = file_blocks(file);
	frozen_op(file, mfd, 1, 4 * MiB, MiB, "discard of 1 MiB");
	kt_check(before - file_blocks(file) >= 2048,
		 "the discard freed 1 MiB after the thaw (%lld sectors)",
		 before - file_blocks(file));
	close(mfd);
	return kt_done();
}

/*
 * Set or clear FS_IMMUTABLE_FL only: writing 0 would also clear ext4's
 * EXTENTS_FL, which migrates the file to block mapping (no fallocate).
 */
static int set_immutable(const char *file, bool on)
{
	int fd = open(file, O_RDONLY), rc, flags;

	if (fd < 0)
		return -errno;
	rc = ioctl(fd, FS_IOC_GETFLAGS, &flags) ? -errno : 0;
	if (!rc) {
		flags = on ? flags | FS_IMMUTABLE_FL : flags & ~FS_IMMUTABLE_FL;
		rc = ioctl(fd, FS_IOC_SETFLAGS, &flags) ? -errno : 0;
	}
	close(fd);
	return rc;
}

static int cmd_immutable(const char *file)
{
	long long before = file_blocks(file);
	int rc;

	if (kt_queue_attr(dev, "provision_max_bytes") <= 0)
		kt_fatal("%s: no provision on a loop over a file", dev);
	if (set_immutable(file, true))
		kt_fatal("chattr +i %s: %s", file, strerror(errno));
	rc = kt_fallocate(dfd, 0, 0, MiB);
	kt_check(rc != 0, "provision of a loop over an immutable file fails (%s)",
		 kt_errname(rc));
	kt_expect_eq(file_blocks(file) - before, 0, "nothing was allocated in the immutable file");
	if (set_immutable(file, false))
		kt_fatal("chattr -i %s: %s", file, strerror(errno));
	provision_grows(file, 0, 0, MiB, MiB, "after chattr -i");
	return kt_done();
}

static int cmd_swapfile(const char *file)
{
	int ffd, rc;

	if (kt_queue_attr(dev, "provision_max_bytes") <= 0)
		kt_fatal("%s: no provision on a loop over a file", dev);
	if (kt_sh("mkswap %s > /dev/null 2>&1 && swapon %s", file, file))
		kt_fatal("mkswap/swapon %s failed (is CONFIG_SWAP in kernel/config?)", file);
	ffd = open(file, O_RDWR);
	if (ffd < 0)
		kt_fatal("open %s: %s", file, strerror(errno));
	kt_expect_eq(kt_fallocate(ffd, FALLOC_FL_KEEP_SIZE, 0, MiB), -ETXTBSY,
		     "fallocate() of the active swap file itself");
	close(ffd);
	rc = kt_fallocate(dfd, 0, 0, MiB);
	kt_check(rc != 0, "provision of a loop over an active swap file fails (%s)",
		 kt_errname(rc));
	if (kt_sh("swapoff %s", file))
		kt_fatal("swapoff %s failed", file);
	kt_expect_eq(kt_fallocate(dfd, 0, 0, MiB), 0, "the same provision after swapoff");
	return kt_done();
}

int main(int argc, char **argv)
{
	if (argc < 3)
		kt_fatal("usage: t_provision none DEV | loop DEV FILE | enospc DEV FILE FILLER");
	open_dev(argv[2]);
	if (!strcmp(argv[1], "none"))
		return cmd_none();
	if (!strcmp(argv[1], "loop") && argc == 4)
		return cmd_loop(argv[3]);
	if (!strcmp(argv[1], "enospc") && argc == 5)
		return cmd_enospc(argv[3], argv[4]);
	if (!strcmp(argv[1], "stats"))
		return cmd_stats();
	if (!strcmp(argv[1], "frozen") && argc == 5)
		return cmd_frozen(argv[3], argv[4]);
	if (!strcmp(argv[1], "immutable") && argc == 4)
		return cmd_immutable(argv[3]);
	if (!strcmp(argv[1], "swapfile") && argc == 4)
		return cmd_swapfile(argv[3]);
	if (!strcmp(argv[1], "misaligned") && argc == 4)
		return cmd_misaligned(argv[3]);
	if (!strcmp(argv[1], "errno") && argc == 4)
		return cmd_errno(argv[3]);
	if (!strcmp(argv[1], "partition") && argc == 5)
		return cmd_partition(argv[3], strtoull(argv[4], NULL, 0));
	kt_fatal("unknown command or wrong arguments: %s", argv[1]);
}
