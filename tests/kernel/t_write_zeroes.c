// SPDX-License-Identifier: MIT
/*
 * t_write_zeroes: fallocate(FALLOC_FL_WRITE_ZEROES) as kernel patches 0003
 * (VFS and block devices) and 0004 (ext4) define it, with Linux 6.17's
 * semantics:
 *  ext4    on a device with write-zeroes: written extents (FIEMAP) that
 *          read zeros, even over a deleted file's blocks; written data,
 *          dirty pages, holes and unwritten extents in the range become
 *          zeros, data around the range is kept; i_size grows like mode 0;
 *          unaligned edges; umount/mount; e2fsck -fn clean; refused mode
 *          combinations; block-mapped files get EOPNOTSUPP;
 *  variants ext4 with 1 KiB blocks and with bigalloc: written extents that
 *          read zeros over deleted data, data beyond the range kept,
 *          unaligned ends, e2fsck -fn clean;
 *  jbd2    ext4: the first 4 KiB O_DIRECT|O_DSYNC writes into a
 *          WRITE_ZEROES range commit no jbd2 transaction (into a plain
 *          preallocation: one per write);
 *  nowz    ext4 on a device without write-zeroes: EOPNOTSUPP, nothing
 *          allocated (no fallback to writing zeros);
 *  nounmap ext4 on a device with write-zeroes but without discard, whose
 *          write-zeroes cannot unmap: EOPNOTSUPP as in 6.17, nothing
 *          allocated;
 *  fault   ext4 on a dm target that fails write-zeroes on demand (test
 *          module t_wzfault): WRITE_ZEROES over deleted data fails with EIO
 *          and the range reads zeros, also after umount/mount (unwritten
 *          extents); once the device works again a retry succeeds;
 *  other   xfs and tmpfs refuse it (EOPNOTSUPP), nothing allocated;
 *  big     ext4 on a sparse 8 GiB device (loop over a sparse file, or a
 *          sparse virtio disk in the i386 guest): a 4 GiB range and a
 *          2 GiB + 64 KiB one (0 and negative as 32-bit byte counts)
 *          become written zeros, the whole 4 GiB reads zeros, data on both
 *          sides is kept and the preallocation right after each range, over
 *          stale data written through the device, stays unwritten and reads
 *          zeros, also after umount/mount; e2fsck -fn clean;
 *  journal ext4 with data=journal, and a chattr +j file under
 *          data=ordered,nodelalloc (the flag counts only without delalloc):
 *          EOPNOTSUPP with the data (written and dirty) and size unchanged;
 *  blkdev  a block device: zeros the range (0) with write-zeroes, or
 *          EOPNOTSUPP without it and then keeps even dirty cached data;
 *          the page cache is dropped; alignment, range and mode checks.
 *
 * Usage: t_write_zeroes ext4|variants|jbd2|nowz|nounmap|fault|other|big|journal DEVICE
 *        MOUNTPOINT
 *        t_write_zeroes blkdev DEVICE --expect=zeroes|eopnotsupp
 * DESTROYS the data on DEVICE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "ktest.h"

#define BS 4096u

#define WZ FALLOC_FL_WRITE_ZEROES
#define KEEP FALLOC_FL_KEEP_SIZE
#define PUNCH FALLOC_FL_PUNCH_HOLE
#define ZERO FALLOC_FL_ZERO_RANGE
#define NHS FALLOC_FL_NO_HIDE_STALE

static const char *dev, *mnt;

/* ---- set-up helpers ---- */

static void mkfs_ext4(const char *size, const char *extra)
{
	if (kt_sh("mkfs.ext4 -q -F -b 4096 -E nodiscard %s %s %s > /tmp/wz-mkfs.log 2>&1", extra,
		  dev, size)) {
		kt_sh("sed 's/^/# mkfs.ext4: /' /tmp/wz-mkfs.log | head -5");
		kt_fatal("mkfs.ext4 %s %s failed", extra, dev);
	}
}

static void mount_or_die(const char *fstype, const char *opts)
{
	if (mount(dev, mnt, fstype, 0, opts))
		kt_fatal("mount -t %s -o '%s' %s %s: %s", fstype, opts, dev, mnt, strerror(errno));
}

static void umount_or_die(void)
{
	if (umount(mnt))
		kt_fatal("umount %s: %s", mnt, strerror(errno));
}

static char *path_in(const char *name)
{
	static char buf[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", mnt, name);
	return buf[i];
}

static int create_file(const char *name)
{
	int fd = open(path_in(name), O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		kt_fatal("create %s: %s", path_in(name), strerror(errno));
	return fd;
}

static int open_direct(const char *name, int flags)
{
	int fd = open(path_in(name), flags | O_DIRECT);

	if (fd < 0)
		kt_fatal("open %s O_DIRECT: %s", name, strerror(errno));
	return fd;
}

static struct stat fstat_or_die(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		kt_fatal("fstat: %s", strerror(errno));
	return st;
}

/*
 * Skip unless the VFS knows the flag: then a block device answers WRITE_ZEROES
 * starting at its end with EINVAL (range check); an unpatched VFS refuses the
 * unknown flag with EOPNOTSUPP first.
 */
static void probe_vfs(const char *blkdev)
{
	int fd = open(blkdev, O_RDWR);
	int rc;

	if (fd < 0)
		kt_fatal("open %s: %s", blkdev, strerror(errno));
	rc = kt_fallocate(fd, WZ, kt_dev_size(fd), 4096);
	close(fd);
	if (rc == -EOPNOTSUPP)
		kt_skip("the VFS refuses FALLOC_FL_WRITE_ZEROES (kernel patch 0003 missing)");
	if (rc != -EINVAL)
		kt_fatal("WRITE_ZEROES past the end of %s: %s, want EINVAL", blkdev,
			 kt_errname(rc));
}

/*
 * The first offset in [off, off + len) where an O_DIRECT read of fd differs from
 * seed's pattern (0: zeros), reading whole aligned blocks; UINT64_MAX if none.
 */
static uint64_t direct_mismatch(int fd, uint64_t off, uint64_t len, uint32_t seed)
{
	uint64_t start = off & ~(uint64_t)(BS - 1),
		 end = (off + len + BS - 1) & ~(uint64_t)(BS - 1);
	uint8_t *buf;

	if (posix_memalign((void **)&buf, BS, MiB))
		kt_fatal("out of memory");
	for (uint64_t pos = start; pos < end; pos += MiB) {
		size_t n = end - pos < MiB ? (size_t)(end - pos) : MiB;
		ssize_t got = pread(fd, buf, n, (off_t)pos);

		if (got < 0)
			kt_fatal("O_DIRECT pread at %llu: %s", (unsigned long long)pos,
				 strerror(errno));
		for (uint64_t i = 0; i < n; i++) {
			uint64_t at = pos + i;

			if (at < off || at >= off + len)
				continue;
			if (i >= (uint64_t)got || buf[i] != kt_pattern_byte(seed, at)) {
				free(buf);
				return at;
			}
		}
	}
	free(buf);
	return UINT64_MAX;
}

/* [off, off + len) of name reads as seed's pattern (0: zeros) buffered and O_DIRECT. */
static void expect_both(const char *name, uint64_t off, uint64_t len, uint32_t seed,
			const char *what)
{
	int bfd = open(path_in(name), O_RDONLY), dfd = open_direct(name, O_RDONLY);
	char w[256];
	uint64_t bad;

	if (bfd < 0)
		kt_fatal("open %s: %s", name, strerror(errno));
	snprintf(w, sizeof(w), "%s (buffered)", what);
	kt_expect_range(bfd, off, len, seed, w);
	bad = direct_mismatch(dfd, off, len, seed);
	kt_check(bad == UINT64_MAX, "%s (O_DIRECT)%s%llu", what,
		 bad == UINT64_MAX ? "" : ": first mismatch at ",
		 bad == UINT64_MAX ? 0ull : (unsigned long long)bad);
	close(bfd);
	close(dfd);
}

/* ---- ext4 ---- */

/* Fill the free space of the mounted filesystem with a file of seed 31, then delete it. */
static uint64_t leave_deleted_data(void)
{
	struct statfs sf;
	uint64_t len;
	int fd;

	if (statfs(mnt, &sf))
		kt_fatal("statfs: %s", strerror(errno));
	len = (sf.f_bavail * sf.f_bsize - 4 * MiB) & ~(MiB - 1);
	fd = create_file("victim");
	kt_fill(fd, 0, len, 31);
	if (fsync(fd))
		kt_fatal("fsync victim: %s", strerror(errno));
	close(fd);
	if (unlink(path_in("victim")))
		kt_fatal("unlink victim: %s", strerror(errno));
	sync();
	return len;
}

static void test_ext4(void)
{
	uint64_t victim;
	struct stat st;
	int fd, bfd;

	/* A 64 MiB filesystem whose free blocks all hold a deleted file's data. */
	bfd = open(dev, O_RDWR);
	if (bfd < 0 || kt_blkzeroout(bfd, 0, 64 * MiB))
		kt_fatal("zeroing the first 64 MiB of %s failed", dev);
	close(bfd);
	mkfs_ext4("64M", "");
	mount_or_die("ext4", "");
	victim = leave_deleted_data();
	kt_note("deleted a %llu MiB file filling the free space",
		(unsigned long long)(victim / MiB));

	/* A new file over the freed blocks: written extents, zeros. */
	fd = create_file("w");
	kt_expect_eq(kt_fallocate(fd, WZ, 0, 16 * MiB), 0, "WRITE_ZEROES 16 MiB into a new file");
	st = fstat_or_die(fd);
	kt_check(st.st_size == (off_t)(16 * MiB), "size is 16 MiB (%lld)", (long long)st.st_size);
	kt_check(st.st_blocks * 512 == (off_t)(16 * MiB), "i_blocks covers exactly 16 MiB (%lld)",
		 (long long)st.st_blocks * 512);
	kt_expect_extents(fd, 0, 16 * MiB, false, "after WRITE_ZEROES");
	close(fd);
	expect_both("w", 0, 16 * MiB, 0,
		    "WRITE_ZEROES range over a deleted file's blocks reads zeros");

	/* Written data (synced, and dirty in the page cache) inside the range is zeroed. */
	fd = create_file("d");
	kt_fill(fd, 0, 4 * MiB, 21);
	fsync(fd);
	kt_fill(fd, 2 * MiB, 256 * KiB, 22); /* dirty, not written back */
	kt_expect_eq(kt_fallocate(fd, WZ, MiB, 2 * MiB), 0,
		     "WRITE_ZEROES over [1, 3) MiB of written and dirty data");
	kt_expect_extents(fd, 0, 4 * MiB, false, "written file after WRITE_ZEROES");
	st = fstat_or_die(fd);
	kt_check(st.st_size == (off_t)(4 * MiB), "size kept at 4 MiB (%lld)",
		 (long long)st.st_size);
	close(fd);
	expect_both("d", 0, MiB, 21, "data below the range is kept");
	expect_both("d", MiB, 2 * MiB, 0, "the range reads zeros");
	expect_both("d", 3 * MiB, MiB, 21, "data above the range is kept");

	/* Unwritten extents (cached as zeros) and a hole become written zeros. */
	fd = create_file("u");
	kt_expect_eq(kt_fallocate(fd, 0, 0, 4 * MiB), 0, "plain fallocate 4 MiB");
	kt_expect_extents(fd, 0, 4 * MiB, true, "plain fallocate");
	kt_check(kt_verify(fd, 0, 4 * MiB, 0) == UINT64_MAX,
		 "unwritten extents read zeros (cached)");
	kt_expect_eq(kt_fallocate(fd, WZ, 0, 8 * MiB), 0,
		     "WRITE_ZEROES over 4 MiB unwritten + 4 MiB beyond the end");
	kt_expect_extents(fd, 0, 8 * MiB, false, "unwritten + hole after WRITE_ZEROES");
	st = fstat_or_die(fd);
	kt_check(st.st_size == (off_t)(8 * MiB), "size grew to 8 MiB (%lld)",
		 (long long)st.st_size);
	close(fd);
	expect_both("u", 0, 8 * MiB, 0, "converted range reads zeros");

	/* Unaligned edges: zeros exactly in the range, data around it kept. */
	fd = create_file("e");
	kt_fill(fd, 0, 64 * KiB, 23);
	fsync(fd);
	kt_expect_eq(kt_fallocate(fd, WZ, 1000, 20000), 0, "WRITE_ZEROES of [1000, +20000)");
	close(fd);
	expect_both("e", 0, 1000, 23, "unaligned: bytes below kept");
	expect_both("e", 1000, 20000, 0, "unaligned: range zeroed");
	expect_both("e", 21000, 64 * KiB - 21000, 23, "unaligned: bytes above kept");

	/* Mode checks: the flag goes alone; read-only fds are refused. */
	fd = open(path_in("w"), O_RDWR);
	{
		static const struct {
			const char *name;
			int mode;
			int want;
		} combos[] = {
			{"WRITE_ZEROES|KEEP_SIZE", WZ | KEEP, -EOPNOTSUPP},
			{"WRITE_ZEROES|ZERO_RANGE", WZ | ZERO, -EOPNOTSUPP},
			{"WRITE_ZEROES|PUNCH_HOLE|KEEP_SIZE", WZ | PUNCH | KEEP, -EOPNOTSUPP},
			{"WRITE_ZEROES|NO_HIDE_STALE", WZ | NHS, -EOPNOTSUPP},
			{"WRITE_ZEROES|UNSHARE_RANGE", WZ | FALLOC_FL_UNSHARE_RANGE, -EOPNOTSUPP},
		};

		for (size_t i = 0; i < sizeof(combos) / sizeof(combos[0]); i++)
			kt_expect_eq(kt_fallocate(fd, combos[i].mode, 16 * MiB, MiB),
				     combos[i].want, "%s", combos[i].name);
	}
	st = fstat_or_die(fd);
	kt_check(st.st_size == (off_t)(16 * MiB) && st.st_blocks * 512 == (off_t)(16 * MiB),
		 "refused combinations changed nothing (size %lld, %lld bytes allocated)",
		 (long long)st.st_size, (long long)st.st_blocks * 512);
	close(fd);
	fd = open(path_in("w"), O_RDONLY);
	kt_expect_eq(kt_fallocate(fd, WZ, 0, MiB), -EBADF, "WRITE_ZEROES on a read-only fd");
	close(fd);

	/* Everything survives umount/mount; e2fsck agrees. */
	umount_or_die();
	kt_check(kt_sh("e2fsck -fn %s > /tmp/wz-fsck.log 2>&1", dev) == 0, "e2fsck -fn is clean");
	kt_sh("grep -v '^e2fsck' /tmp/wz-fsck.log | sed 's/^/# fsck: /' | head -20");
	mount_or_die("ext4", "");
	fd = open(path_in("w"), O_RDONLY);
	if (fd < 0)
		kt_fatal("reopen: %s", strerror(errno));
	kt_expect_extents(fd, 0, 16 * MiB, false, "after umount and mount");
	close(fd);
	expect_both("w", 0, 16 * MiB, 0, "after umount and mount");
	expect_both("d", MiB, 2 * MiB, 0, "zeroed data after umount and mount");
	umount_or_die();

	/* Block-mapped files: EOPNOTSUPP, as ZERO_RANGE. */
	mkfs_ext4("64M", "-O ^extent,^64bit");
	mount_or_die("ext4", "");
	fd = create_file("indirect");
	kt_expect_eq(kt_fallocate(fd, WZ, 0, MiB), -EOPNOTSUPP,
		     "WRITE_ZEROES on a block-mapped (non-extent) file");
	close(fd);
	umount_or_die();
}

/* ---- ext4 variants: 1 KiB blocks, bigalloc ---- */

static void variant(const char *what, const char *mkfs_extra)
{
	struct stat st;
	int fd, bfd;

	bfd = open(dev, O_RDWR);
	if (bfd < 0 || kt_blkzeroout(bfd, 0, 64 * MiB))
		kt_fatal("zeroing the first 64 MiB of %s failed", dev);
	close(bfd);
	mkfs_ext4("64M", mkfs_extra);
	mount_or_die("ext4", "");
	leave_deleted_data();
	fd = create_file("w");
	kt_fill(fd, 4 * MiB, 64 * KiB, 24);
	fsync(fd);
	kt_expect_eq(kt_fallocate(fd, WZ, 0, 4 * MiB + 32 * KiB), 0,
		     "%s: WRITE_ZEROES over deleted blocks and half of 64 KiB of data", what);
	st = fstat_or_die(fd);
	kt_check(st.st_size == (off_t)(4 * MiB + 64 * KiB), "%s: size kept (%lld)", what,
		 (long long)st.st_size);
	kt_expect_extents(fd, 0, 4 * MiB + 64 * KiB, false, what);
	kt_expect_eq(kt_fallocate(fd, WZ, 5 * MiB + 1000, 3000), 0,
		     "%s: WRITE_ZEROES of an unaligned [5 MiB + 1000, +3000)", what);
	close(fd);
	expect_both("w", 0, 4 * MiB + 32 * KiB, 0, "zeroed range reads zeros");
	expect_both("w", 4 * MiB + 32 * KiB, 32 * KiB, 24, "data after the range is kept");
	expect_both("w", 4 * MiB + 64 * KiB, MiB + 4000 - 64 * KiB, 0, "the rest reads zeros");
	umount_or_die();
	kt_check(kt_sh("e2fsck -fn %s > /tmp/wz-fsck.log 2>&1", dev) == 0,
		 "%s: e2fsck -fn is clean", what);
	kt_sh("grep -v '^e2fsck' /tmp/wz-fsck.log | sed 's/^/# fsck: /' | head -20");
}

static void test_variants(void)
{
	variant("1 KiB blocks", "-b 1024");
	variant("bigalloc, 64 KiB clusters", "-O bigalloc -C 65536");
}

/* ---- jbd2 transactions of first writes ---- */

static char jbd2_info[PATH_MAX];

static long long jbd2_transactions(void)
{
	char buf[4096];
	long long n;

	if (kt_read_file(jbd2_info, buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%lld transactions", &n) != 1)
		kt_fatal("cannot read the transaction count from %s", jbd2_info);
	return n;
}

/* O_DIRECT|O_DSYNC 4 KiB writes into blocks 0, 4, 8, ... of name; transactions committed. */
static long long first_writes(const char *name, unsigned int count)
{
	int fd = open_direct(name, O_WRONLY | O_DSYNC);
	long long before, after;
	uint8_t *buf;

	if (posix_memalign((void **)&buf, BS, BS))
		kt_fatal("out of memory");
	memset(buf, 0x5a, BS);
	syncfs(fd);
	before = jbd2_transactions();
	for (unsigned int i = 0; i < count; i++)
		if (pwrite(fd, buf, BS, (off_t)i * 4 * BS) != BS)
			kt_fatal("pwrite %s: %s", name, strerror(errno));
	after = jbd2_transactions();
	kt_note("%s: %u first writes: jbd2 transactions %lld before, %lld after", name, count,
		before, after);
	free(buf);
	close(fd);
	return after - before;
}

static void test_jbd2(void)
{
	char real[PATH_MAX];
	const unsigned int writes = 64;
	long long wz, plain;
	int fd;

	if (!realpath(dev, real))
		kt_fatal("realpath %s: %s", dev, strerror(errno));
	snprintf(jbd2_info, sizeof(jbd2_info), "/proc/fs/jbd2/%s-8/info", strrchr(real, '/') + 1);
	mkfs_ext4("256M", "");
	/* commit=600: no periodic commit; noinit_itable: no lazy itable zeroing. */
	mount_or_die("ext4", "commit=600,noinit_itable");
	if (access(jbd2_info, R_OK))
		kt_fatal("%s: %s", jbd2_info, strerror(errno));

	fd = create_file("wz");
	kt_expect_eq(kt_fallocate(fd, WZ, 0, 4 * MiB), 0, "WRITE_ZEROES 4 MiB");
	close(fd);
	fd = create_file("plain");
	kt_expect_eq(kt_fallocate(fd, 0, 0, 4 * MiB), 0, "plain fallocate 4 MiB");
	close(fd);

	wz = first_writes("wz", writes);
	plain = first_writes("plain", writes);
	kt_check(wz == 0,
		 "first writes into a WRITE_ZEROES range committed %lld transactions "
		 "(want 0)",
		 wz);
	kt_check(plain >= writes,
		 "first writes into a plain preallocation committed %lld "
		 "transactions (want at least one per write: %u)",
		 plain, writes);
	fd = open(path_in("wz"), O_RDONLY);
	kt_expect_extents(fd, 0, 4 * MiB, false, "WRITE_ZEROES file after the writes");
	kt_check(kt_verify(fd, BS, 3 * BS, 0) == UINT64_MAX &&
			 kt_verify(fd, 61 * 4 * BS + BS, 3 * BS, 0) == UINT64_MAX,
		 "blocks between the writes still read zeros");
	close(fd);
	umount_or_die();
}

/* ---- refusals: ext4 without write-zeroes, xfs, tmpfs ---- */

static void refused(const char *fs, int fd)
{
	struct stat st;

	kt_expect_eq(kt_fallocate(fd, WZ, 0, MiB), -EOPNOTSUPP, "%s: WRITE_ZEROES", fs);
	kt_expect_eq(kt_fallocate(fd, WZ | KEEP, 0, MiB), -EOPNOTSUPP, "%s: WRITE_ZEROES|KEEP_SIZE",
		     fs);
	st = fstat_or_die(fd);
	kt_check(st.st_size == 0 && st.st_blocks == 0,
		 "%s: nothing was allocated (size %lld, "
		 "blocks %lld)",
		 fs, (long long)st.st_size, (long long)st.st_blocks);
	kt_expect_eq(kt_fallocate(fd, 0, 0, MiB), 0, "%s: mode 0 still works (reference)", fs);
}

static void test_nowz(bool has_wz)
{
	long long wz = kt_queue_attr(dev, "write_zeroes_max_bytes");
	long long dis = kt_queue_attr(dev, "discard_max_bytes");
	int fd;

	kt_note("%s: write_zeroes_max_bytes %lld, discard_max_bytes %lld", dev, wz, dis);
	if (has_wz && (wz <= 0 || dis != 0))
		kt_fatal("%s must have write-zeroes and no discard", dev);
	mkfs_ext4("64M", "");
	mount_or_die("ext4", "");
	fd = create_file("f");
	refused(has_wz ? "ext4 on a device whose write-zeroes cannot unmap" :
		"ext4 on a device without write-zeroes", fd);
	close(fd);
	umount_or_die();
}

/*
 * DEVICE is /dev/mapper/NAME, a rs_wzfault target (tests/kernel/module)
 * over a disk with write-zeroes and discard: with its write-zeroes failing,
 * WRITE_ZEROES over deleted data must fail (EIO, no fallback to writing
 * zero pages) and leave nothing readable but zeros, also once the
 * extent-status cache is gone (umount/mount); a retry then succeeds.
 */
static void test_fault(void)
{
	const char *name = strrchr(dev, '/') ? strrchr(dev, '/') + 1 : dev;
	int fd, bfd, rc;

	bfd = open(dev, O_RDWR);
	if (bfd < 0 || kt_blkzeroout(bfd, 0, 64 * MiB))
		kt_fatal("zeroing the first 64 MiB of %s failed", dev);
	close(bfd);
	mkfs_ext4("64M", "");
	mount_or_die("ext4", "");
	leave_deleted_data();
	fd = create_file("f");
	if (kt_sh("dmsetup message %s 0 fail 1", name))
		kt_fatal("dmsetup message %s 0 fail 1 failed", name);
	rc = kt_fallocate(fd, WZ, 0, 16 * MiB);
	if (kt_sh("dmsetup message %s 0 fail 0", name))
		kt_fatal("dmsetup message %s 0 fail 0 failed", name);
	kt_sh("dmsetup status %s | sed 's/^/# status: /'", name);
	kt_expect_eq(rc, -EIO, "WRITE_ZEROES while the device fails write-zeroes (no fallback "
		     "to writing zero pages)");
	close(fd);
	expect_both("f", 0, 16 * MiB, 0, "after the failed WRITE_ZEROES the range reads zeros");
	umount_or_die();
	mount_or_die("ext4", "");
	expect_both("f", 0, 16 * MiB, 0,
		    "after the failed WRITE_ZEROES and umount/mount the range reads zeros");
	fd = open(path_in("f"), O_RDWR);
	if (fd < 0)
		kt_fatal("open f: %s", strerror(errno));
	kt_expect_extents(fd, 0, 16 * MiB, true, "the failed range stayed unwritten");
	kt_expect_eq(kt_fallocate(fd, WZ, 0, 16 * MiB), 0, "WRITE_ZEROES again, the device healed");
	kt_expect_extents(fd, 0, 16 * MiB, false, "the retried range is written");
	close(fd);
	expect_both("f", 0, 16 * MiB, 0, "the retried range reads zeros");
	umount_or_die();
	kt_check(kt_sh("e2fsck -fn %s > /tmp/wz-fsck.log 2>&1", dev) == 0, "e2fsck -fn is clean");
}

static void test_other(void)
{
	int fd;

	if (kt_sh("mkfs.xfs -q -f -d size=512m %s > /tmp/wz-mkfs.log 2>&1", dev)) {
		kt_sh("sed 's/^/# mkfs.xfs: /' /tmp/wz-mkfs.log | head -5");
		kt_fatal("mkfs.xfs %s failed", dev);
	}
	mount_or_die("xfs", "");
	fd = create_file("f");
	refused("xfs", fd);
	close(fd);
	umount_or_die();

	if (mount("tmpfs", mnt, "tmpfs", 0, "size=64m"))
		kt_fatal("mount tmpfs: %s", strerror(errno));
	fd = create_file("f");
	refused("tmpfs", fd);
	close(fd);
	umount_or_die();
}

/* ---- a range of 4 GiB and more ---- */

/*
 * The first offset in [off, off + len) of fd where a buffered read is not
 * zero, UINT64_MAX if none: 1 MiB reads compared with memcmp (the range is
 * gigabytes long, too long for a byte-wise pattern check under TCG).
 */
static uint64_t first_nonzero(int fd, uint64_t off, uint64_t len)
{
	static uint8_t zeros[MiB];
	uint8_t *buf = malloc(MiB);

	if (!buf)
		kt_fatal("out of memory");
	for (uint64_t pos = off; pos < off + len;) {
		size_t n = off + len - pos < MiB ? (size_t)(off + len - pos) : MiB;
		ssize_t got = pread(fd, buf, n, (off_t)pos);

		if (got <= 0)
			kt_fatal("pread at %llu: %s", (unsigned long long)pos,
				 got < 0 ? strerror(errno) : "end of file");
		if (memcmp(buf, zeros, (size_t)got)) {
			for (ssize_t i = 0; i < got; i++)
				if (buf[i]) {
					free(buf);
					return pos + (uint64_t)i;
				}
		}
		pos += (uint64_t)got;
	}
	free(buf);
	return UINT64_MAX;
}

/*
 * Another user's deleted data, made certain: write a pattern (seed) through
 * the block device into the blocks that FIEMAP maps at [off, +len) of fd,
 * which must be unwritten extents (a read of the file sees zeros there
 * until something marks them written).
 */
struct plant {
	int dfd;
	uint32_t seed;
	uint64_t planted;
};

static void plant_extent(const struct fiemap_extent *x, uint64_t inside, void *arg)
{
	struct plant *p = arg;

	(void)inside;
	if (!(x->fe_flags & FIEMAP_EXTENT_UNWRITTEN))
		kt_fatal("plant_stale: extent at %llu is not unwritten",
			 (unsigned long long)x->fe_logical);
	kt_fill(p->dfd, x->fe_physical, x->fe_length, p->seed);
	p->planted += x->fe_length;
}

static void plant_stale(int fd, uint64_t off, uint64_t len, uint32_t seed)
{
	struct plant p = { .dfd = open(dev, O_RDWR), .seed = seed };

	if (p.dfd < 0)
		kt_fatal("plant_stale: open %s: %s", dev, strerror(errno));
	kt_fiemap_each(fd, off, len, plant_extent, &p);
	if (fsync(p.dfd))
		kt_fatal("fsync %s: %s", dev, strerror(errno));
	close(p.dfd);
	kt_check(p.planted >= len, "%llu bytes of stale data planted under the preallocation",
		 (unsigned long long)p.planted);
}

/*
 * One file: data (seed) in [0, 1 MiB), a WRITE_ZEROES range [1 MiB, +len)
 * holding data at its start, around its middle and at its end, then 1 MiB
 * of data (seed + 1) and 64 MiB of plain preallocation (unwritten) right
 * after it, over blocks that hold stale data (seed + 3, plant_stale).  The
 * range must become written zeros; the data on both sides must be kept and
 * the preallocation after it must stay unwritten and read zeros: a
 * conversion that runs past the range (a length that overflowed) would
 * mark it written over the stale data, and reads would return it.
 */
#define BIG_OFF MiB
static void big_layout(const char *name, uint64_t len, uint32_t seed)
{
	uint64_t end = BIG_OFF + len;
	struct stat st;
	int fd = create_file(name);

	kt_fill(fd, 0, MiB, seed);
	kt_fill(fd, BIG_OFF, MiB, seed + 2);
	kt_fill(fd, BIG_OFF + len / 2 - MiB / 2, MiB, seed + 2);
	kt_fill(fd, end - MiB, MiB, seed + 2);
	kt_fill(fd, end, MiB, seed + 1);
	kt_expect_eq(kt_fallocate(fd, 0, end + MiB, 64 * MiB), 0,
		     "%s: plain fallocate of 64 MiB after the range", name);
	if (fsync(fd))
		kt_fatal("fsync %s: %s", name, strerror(errno));
	plant_stale(fd, end + MiB, 64 * MiB, seed + 3);
	kt_expect_eq(kt_fallocate(fd, WZ, BIG_OFF, len), 0, "%s: WRITE_ZEROES of %llu MiB",
		     name, (unsigned long long)(len / MiB));
	st = fstat_or_die(fd);
	kt_check(st.st_size == (off_t)(end + 65 * MiB), "%s: size unchanged (%lld)", name,
		 (long long)st.st_size);
	close(fd);
}

static void big_check(const char *name, uint64_t len, uint32_t seed, bool whole, const char *when)
{
	uint64_t end = BIG_OFF + len, bad;
	int fd = open(path_in(name), O_RDONLY);

	if (fd < 0)
		kt_fatal("open %s: %s", name, strerror(errno));
	kt_expect_extents(fd, BIG_OFF, len, false, name);
	kt_expect_extents(fd, end + MiB, 64 * MiB, true, name);
	if (whole) {
		bad = first_nonzero(fd, BIG_OFF, len);
		if (bad == UINT64_MAX)
			kt_check(true, "%s %s: all %llu MiB of the range read zeros", name, when,
				 (unsigned long long)(len / MiB));
		else
			kt_check(false, "%s %s: the range reads zeros: not at %llu", name, when,
				 (unsigned long long)bad);
	}
	close(fd);
	expect_both(name, 0, MiB, seed, "data before the range is kept");
	expect_both(name, BIG_OFF, MiB, 0, "the start of the range reads zeros");
	expect_both(name, BIG_OFF + len / 2 - MiB / 2, MiB, 0, "the middle of the range reads zeros");
	expect_both(name, end - MiB, MiB, 0, "the end of the range reads zeros");
	expect_both(name, end, MiB, seed + 1, "data right after the range is kept");
	expect_both(name, end + MiB, 64 * MiB, 0, "the preallocation after the range reads zeros");
}

/*
 * DEVICE: a sparse device of 8 GiB with write-zeroes that unmaps (a loop
 * device over a sparse file).  A 4 GiB range (as a byte count, 0 in
 * 32 bits) and a 2 GiB + 64 KiB one (negative in 32 bits) on ext4: each
 * must become written zeros, exactly.
 */
static void test_big(void)
{
	const uint64_t four = 4096 * MiB, two = 2048 * MiB + 64 * KiB;
	long long wz = kt_queue_attr(dev, "write_zeroes_max_bytes");
	long long dis = kt_queue_attr(dev, "discard_max_bytes");
	uint64_t victim;

	kt_note("%s: write_zeroes_max_bytes %lld, discard_max_bytes %lld", dev, wz, dis);
	if (kt_sh("mkfs.ext4 -q -F -b 4096 -J size=16 -E nodiscard,lazy_itable_init=1 %s "
		  "> /tmp/wz-mkfs.log 2>&1", dev)) {
		kt_sh("sed 's/^/# mkfs.ext4: /' /tmp/wz-mkfs.log | head -5");
		kt_fatal("mkfs.ext4 %s failed", dev);
	}
	mount_or_die("ext4", "noinit_itable");
	/* Deleted data in the free space the preallocations will take. */
	victim = 64 * MiB;
	{
		int fd = create_file("victim");

		kt_fill(fd, 0, victim, 31);
		if (fsync(fd))
			kt_fatal("fsync victim: %s", strerror(errno));
		close(fd);
		if (unlink(path_in("victim")))
			kt_fatal("unlink victim: %s", strerror(errno));
		sync();
	}
	big_layout("four", four, 41);
	big_check("four", four, 41, true, "right after");
	big_layout("two", two, 51);
	big_check("two", two, 51, false, "right after");
	umount_or_die();
	kt_check(kt_sh("e2fsck -fn %s > /tmp/wz-fsck.log 2>&1", dev) == 0, "e2fsck -fn is clean");
	kt_sh("grep -v '^e2fsck' /tmp/wz-fsck.log | sed 's/^/# fsck: /' | head -20");
	mount_or_die("ext4", "noinit_itable");
	big_check("four", four, 41, false, "after umount/mount");
	big_check("two", two, 51, false, "after umount/mount");
	umount_or_die();
}

/* ---- data=journal ---- */

/*
 * The device's zeroes bypass jbd2, which with data=journal may still hold
 * data blocks of the range to write back over them: EOPNOTSUPP, whether the
 * mount journals data or the inode does (chattr +j), with nothing changed.
 */
static void journal_refused(const char *what)
{
	struct stat st;
	int fd = create_file("j");

	kt_fill(fd, 0, MiB, 61);
	if (fsync(fd))
		kt_fatal("fsync: %s", strerror(errno));
	kt_fill(fd, 256 * KiB, 64 * KiB, 62); /* dirty, journaled on writeback */
	kt_expect_eq(kt_fallocate(fd, WZ, 0, 2 * MiB), -EOPNOTSUPP,
		     "%s: WRITE_ZEROES over written, dirty and new blocks", what);
	st = fstat_or_die(fd);
	kt_check(st.st_size == (off_t)MiB && st.st_blocks * 512 == (off_t)MiB,
		 "%s: nothing changed (size %lld, %lld bytes allocated)", what,
		 (long long)st.st_size, (long long)st.st_blocks * 512);
	close(fd);
	expect_both("j", 0, 256 * KiB, 61, "data kept");
	expect_both("j", 256 * KiB, 64 * KiB, 62, "dirty data kept");
	expect_both("j", 320 * KiB, MiB - 320 * KiB, 61, "data kept");
}

static void test_journal(void)
{
	int fd, flags;

	mkfs_ext4("64M", "");
	mount_or_die("ext4", "data=journal");
	journal_refused("data=journal");
	umount_or_die();

	/* The journal-data flag counts only without delayed allocation. */
	mount_or_die("ext4", "nodelalloc");
	fd = create_file("j");
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags))
		kt_fatal("FS_IOC_GETFLAGS: %s", strerror(errno));
	flags |= FS_JOURNAL_DATA_FL;
	if (ioctl(fd, FS_IOC_SETFLAGS, &flags))
		kt_fatal("chattr +j: %s", strerror(errno));
	close(fd);
	/* create_file() truncates: the inode keeps its flag. */
	journal_refused("data=ordered,nodelalloc, chattr +j");
	fd = create_file("o");
	kt_expect_eq(kt_fallocate(fd, WZ, 0, MiB), 0,
		     "data=ordered,nodelalloc, a file without +j: WRITE_ZEROES works (reference)");
	close(fd);
	umount_or_die();
	kt_check(kt_sh("e2fsck -fn %s > /tmp/wz-fsck.log 2>&1", dev) == 0, "e2fsck -fn is clean");
}

/* ---- block device ---- */

static void test_blkdev(bool zeroes)
{
	int dfd = open(dev, O_RDWR | O_DIRECT), bfd = open(dev, O_RDWR), rfd = open(dev, O_RDONLY);
	uint64_t base = 16 * MiB, size;
	unsigned int lbs;
	int rc;

	if (dfd < 0 || bfd < 0 || rfd < 0)
		kt_fatal("open %s: %s", dev, strerror(errno));
	size = kt_dev_size(dfd);
	lbs = kt_lbs(dfd);
	kt_note("%s: %llu bytes, %u-byte sectors, write_zeroes_max_bytes %lld: expecting %s", dev,
		(unsigned long long)size, lbs, kt_queue_attr(dev, "write_zeroes_max_bytes"),
		zeroes ? "zeros" : "EOPNOTSUPP");

	/* Data on the device, then newer data dirty in the page cache over the middle. */
	kt_fill(dfd, base, MiB, 51);
	kt_fill(bfd, base + 256 * KiB, 512 * KiB, 52);
	rc = kt_fallocate(bfd, WZ, base + 384 * KiB, 256 * KiB);
	kt_expect_eq(rc, zeroes ? 0 : -EOPNOTSUPP, "WRITE_ZEROES of 256 KiB");
	if (fsync(bfd))
		kt_fatal("fsync %s: %s", dev, strerror(errno));
	kt_check(kt_verify(dfd, base, 256 * KiB, 51) == UINT64_MAX &&
			 kt_verify(dfd, base + 768 * KiB, 256 * KiB, 51) == UINT64_MAX,
		 "the data on the device around the range is untouched");
	kt_check(kt_verify(dfd, base + 256 * KiB, 128 * KiB, 52) == UINT64_MAX &&
			 kt_verify(dfd, base + 640 * KiB, 128 * KiB, 52) == UINT64_MAX,
		 "dirty cached data around the range reached the device");
	if (zeroes) {
		kt_expect_range(dfd, base + 384 * KiB, 256 * KiB, 0,
				"the range reads zeros (O_DIRECT)");
		kt_expect_range(bfd, base + 384 * KiB, 256 * KiB, 0,
				"the range reads zeros (buffered: the dirty pages were dropped)");
	} else {
		kt_expect_range(
			dfd, base + 384 * KiB, 256 * KiB, 52,
			"refused: the dirty cached data in the range was kept and written back");
	}

	kt_expect_eq(kt_fallocate(dfd, WZ, base + lbs / 2, lbs), -EINVAL,
		     "WRITE_ZEROES at a misaligned offset");
	kt_expect_eq(kt_fallocate(dfd, WZ, base, lbs + lbs / 2), -EINVAL,
		     "WRITE_ZEROES of a misaligned length");
	kt_expect_eq(kt_fallocate(dfd, WZ, size, lbs), -EINVAL, "WRITE_ZEROES at the device end");
	kt_expect_eq(kt_fallocate(dfd, WZ, size - lbs, 4 * lbs), -EINVAL,
		     "WRITE_ZEROES crossing the device end (no KEEP_SIZE to clamp)");
	kt_expect_eq(kt_fallocate(dfd, WZ, size - 4 * lbs, 4 * lbs), zeroes ? 0 : -EOPNOTSUPP,
		     "WRITE_ZEROES of the last 4 sectors");
	kt_expect_eq(kt_fallocate(rfd, WZ, base, lbs), -EBADF, "WRITE_ZEROES on a read-only fd");

	kt_fill(dfd, base, MiB, 53);
	{
		static const struct {
			const char *name;
			int mode;
			int want;
		} modes[] = {
			{"WRITE_ZEROES|KEEP_SIZE", WZ | KEEP, -EOPNOTSUPP},
			{"WRITE_ZEROES|PUNCH_HOLE|KEEP_SIZE", WZ | PUNCH | KEEP, -EOPNOTSUPP},
			{"WRITE_ZEROES|ZERO_RANGE", WZ | ZERO, -EOPNOTSUPP},
			{"WRITE_ZEROES|NO_HIDE_STALE", WZ | NHS, -EOPNOTSUPP},
		};

		for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
			kt_expect_eq(kt_fallocate(dfd, modes[i].mode, base, MiB), modes[i].want,
				     "%s", modes[i].name);
	}
	kt_check(kt_verify(dfd, base, MiB, 53) == UINT64_MAX, "refused modes changed nothing");
	close(dfd);
	close(bfd);
	close(rfd);
}

int main(int argc, char **argv)
{
	const char *what;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		kt_fatal("usage: t_write_zeroes "
			 "ext4|variants|jbd2|nowz|nounmap|fault|other|big|journal DEVICE "
			 "MOUNTPOINT | "
			 "blkdev DEVICE --expect=zeroes|eopnotsupp");
	what = argv[1];
	dev = argv[2];
	mnt = argc > 3 ? argv[3] : NULL;

	probe_vfs(dev);
	if (!strcmp(what, "blkdev")) {
		bool zeroes;

		if (argc > 3 && !strcmp(argv[3], "--expect=zeroes"))
			zeroes = true;
		else if (argc > 3 && !strcmp(argv[3], "--expect=eopnotsupp"))
			zeroes = false;
		else
			kt_fatal("blkdev needs --expect=zeroes or --expect=eopnotsupp");
		test_blkdev(zeroes);
		return kt_done();
	}
	if (!mnt)
		kt_fatal("%s needs a mount point", what);
	if (mkdir(mnt, 0755) && errno != EEXIST)
		kt_fatal("mkdir %s: %s", mnt, strerror(errno));
	if (!strcmp(what, "ext4"))
		test_ext4();
	else if (!strcmp(what, "jbd2"))
		test_jbd2();
	else if (!strcmp(what, "nowz"))
		test_nowz(false);
	else if (!strcmp(what, "nounmap"))
		test_nowz(true);
	else if (!strcmp(what, "fault"))
		test_fault();
	else if (!strcmp(what, "variants"))
		test_variants();
	else if (!strcmp(what, "other"))
		test_other();
	else if (!strcmp(what, "big"))
		test_big();
	else if (!strcmp(what, "journal"))
		test_journal();
	else
		kt_fatal("unknown test %s", what);
	return kt_done();
}
