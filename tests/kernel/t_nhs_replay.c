// SPDX-License-Identifier: MIT
/*
 * t_nhs_replay: FALLOC_FL_NO_HIDE_STALE under dm-log-writes, replayed at
 * every mark and at flush and FUA points, in the manner of xfstests
 * generic/482.
 *
 * Usage: t_nhs_replay SCRATCH MNT
 *   Carves SCRATCH into dm-linear slices (orig 32 MiB, log 160 MiB, rep and
 *   chk 32 MiB each), fills orig with a non-zero pattern (the "stale" disk)
 *   and copies it to rep, then logs orig through dm-log-writes while ext4
 *   (4 KiB blocks, mkfs without discard, mounted nohide_stale_gid=1001)
 *   runs the workload: for each file i, a plain fallocate over part of the
 *   range (unwritten extents), then NO_HIDE_STALE of [0, len_i) with len_i
 *   not block-aligned (holes and unwritten extents become written, except
 *   the block that holds EOF, which is allocated unwritten), a pattern
 *   write over the first half, fsync, and a mark "synced-i".
 *
 *   Each checked point p of the log is replayed onto rep (incrementally),
 *   copied to chk, mounted there (journal recovery) and unmounted, and
 *   e2fsck -fn must find chk clean.  At mark synced-i, every file j <= i
 *   must also have its size len_j, its written pattern, and the rest of
 *   its EOF block must read zeros after a truncate up (the tail the flag
 *   must not expose).  The tail is checked at every point, between marks
 *   too: the EOF block is never written stale (0002 allocates it
 *   unwritten), so no cut may show a stale byte past EOF.
 *
 *   FALLOC_FL_WRITE_ZEROES cannot be logged this way: dm-log-writes in 6.1
 *   does not pass write-zeroes, so ext4 on it refuses the mode
 *   (EOPNOTSUPP, checked here) and its durability is covered by
 *   t_write_zeroes (jbd2, fault) instead.
 *
 * DESTROYS the data on SCRATCH.  Removes its dm devices at the end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "ktest.h"

#define NFILES 6
#define MAXPOINTS 32
#define STALE_SEED 0x5au

static const char *mnt;

static uint64_t file_len(int i)
{
	return (uint64_t)(i + 1) * 64 * KiB + 1000 + 97 * (uint64_t)i;
}

static uint64_t file_written(int i)
{
	return file_len(i) / 2;
}

static void setup(const char *scratch)
{
	static const struct { const char *name; unsigned int start, size; } s[] = {
		{ "nhr-orig", 0, 32 }, { "nhr-log", 32, 160 },
		{ "nhr-rep", 192, 32 }, { "nhr-chk", 224, 32 },
	};
	int fd;

	for (size_t k = 0; k < sizeof(s) / sizeof(s[0]); k++)
		if (kt_sh("dmsetup create %s --table '0 %u linear %s %u'", s[k].name,
			  s[k].size * 2048, scratch, s[k].start * 2048))
			kt_fatal("dmsetup create %s failed", s[k].name);
	fd = open("/dev/mapper/nhr-orig", O_WRONLY);
	if (fd < 0)
		kt_fatal("open nhr-orig: %s", strerror(errno));
	kt_fill(fd, 0, 32 * MiB, STALE_SEED);
	if (fsync(fd))
		kt_fatal("fsync nhr-orig: %s", strerror(errno));
	close(fd);
	if (kt_sh("t_lwreplay copy /dev/mapper/nhr-orig /dev/mapper/nhr-rep") ||
	    kt_sh("dd if=/dev/zero of=/dev/mapper/nhr-log bs=1M count=1 oflag=direct 2> /dev/null") ||
	    kt_sh("dmsetup create nhr-lw --table '0 %llu log-writes /dev/mapper/nhr-orig "
		  "/dev/mapper/nhr-log'", 32 * MiB / 512))
		kt_fatal("setting up dm-log-writes failed");
}

static void workload(void)
{
	char path[256];
	int fd, rc;

	if (kt_sh("mkfs.ext4 -q -F -b 4096 -E nodiscard /dev/mapper/nhr-lw > /tmp/nhr-mkfs.log 2>&1"))
		kt_fatal("mkfs.ext4 on nhr-lw failed");
	if (mount("/dev/mapper/nhr-lw", mnt, "ext4", 0, "nohide_stale_gid=1001,noinit_itable"))
		kt_fatal("mount nhr-lw: %s", strerror(errno));
	kt_sh("dmsetup message nhr-lw 0 mark mkfs");
	for (int i = 0; i < NFILES; i++) {
		snprintf(path, sizeof(path), "%s/f%d", mnt, i);
		fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			kt_fatal("create %s: %s", path, strerror(errno));
		if (i == 0) {
			rc = kt_fallocate(fd, FALLOC_FL_WRITE_ZEROES, 0, 64 * KiB);
			kt_expect_eq(rc, -EOPNOTSUPP,
				     "WRITE_ZEROES on ext4 over dm-log-writes (no write-zeroes) is refused");
		}
		/* Unwritten extents over the middle; holes around them. */
		kt_expect_eq(kt_fallocate(fd, FALLOC_FL_KEEP_SIZE, 16 * KiB, 32 * KiB), 0,
			     "f%d: plain fallocate of [16K, 48K)", i);
		kt_expect_eq(kt_fallocate(fd, FALLOC_FL_NO_HIDE_STALE, 0, file_len(i)), 0,
			     "f%d: NO_HIDE_STALE of [0, %llu)", i, (unsigned long long)file_len(i));
		kt_fill(fd, 0, file_written(i), (uint32_t)(i + 1));
		if (fsync(fd))
			kt_fatal("fsync %s: %s", path, strerror(errno));
		close(fd);
		kt_sh("dmsetup message nhr-lw 0 mark synced-%d", i);
	}
	if (umount(mnt))
		kt_fatal("umount nhr-lw: %s", strerror(errno));
	if (kt_sh("dmsetup remove nhr-lw"))
		kt_fatal("dmsetup remove nhr-lw failed");
}

/* The tail of f's EOF block after a truncate up: UINT64_MAX if it reads zeros, else
 * the offset of the first byte that does not. */
static uint64_t tail_stale(int fd, uint64_t len)
{
	uint64_t end = (len + 4095) & ~4095ull, bad;

	if (ftruncate(fd, (off_t)(end + 4096)))
		kt_fatal("truncate up: %s", strerror(errno));
	bad = kt_verify(fd, len, end - len, 0);
	return bad;
}

/* Mount chk, check the files a mark promises (synced = -1: none), unmount, fsck. */
static void check_point(unsigned long long entry, int synced)
{
	char path[256];
	int fd;

	if (mount("/dev/mapper/nhr-chk", mnt, "ext4", 0, "nohide_stale_gid=1001,noinit_itable")) {
		kt_check(false, "entry %llu: the replayed file system mounts: %s", entry,
			 strerror(errno));
		return;
	}
	for (int i = 0; i < NFILES; i++) {
		uint64_t bad;
		off_t size;

		snprintf(path, sizeof(path), "%s/f%d", mnt, i);
		fd = open(path, O_RDWR);
		if (fd < 0) {
			kt_check(i > synced, "entry %llu: f%d exists (synced)", entry, i);
			continue;
		}
		size = lseek(fd, 0, SEEK_END);
		if (i <= synced) {
			kt_expect_eq(size, file_len(i), "entry %llu: f%d has its size", entry, i);
			bad = kt_verify(fd, 0, file_written(i), (uint32_t)(i + 1));
			kt_check(bad == UINT64_MAX, "entry %llu: f%d has its fsynced data "
				 "(first bad byte %lld)", entry, i,
				 bad == UINT64_MAX ? -1LL : (long long)bad);
		}
		if (size > 0 && (size & 4095)) {
			bad = tail_stale(fd, (uint64_t)size);
			kt_check(bad == UINT64_MAX, "entry %llu: f%d%s: its EOF block past %lld reads "
				 "zeros after a truncate up (first bad byte %llu)", entry, i,
				 i <= synced ? "" : " (not yet synced)", (long long)size,
				 (unsigned long long)bad);
		}
		close(fd);
	}
	if (umount(mnt))
		kt_fatal("umount chk: %s", strerror(errno));
	kt_check(kt_sh("e2fsck -fn /dev/mapper/nhr-chk > /tmp/nhr-fsck.log 2>&1") == 0,
		 "entry %llu: e2fsck -fn is clean after replay and recovery", entry);
}

/* A point to check: a synced-N mark, or a flush with N files synced before it. */
struct point { unsigned long long entry; int synced; bool mark; };

static void replay(void)
{
	static struct point all[4096], pts[MAXPOINTS + NFILES + 2];
	unsigned long long idx, sector, nr, from = 0, mkfs = 0;
	char flags[16], mark[64], line[256];
	size_t nall = 0, npts = 0, nflush = 0, step;
	int synced = -1, have_mkfs = 0;
	FILE *p = popen("t_lwreplay list /dev/mapper/nhr-log", "r");

	if (!p)
		kt_fatal("t_lwreplay list: %s", strerror(errno));
	while (fgets(line, sizeof(line), p) && nall < sizeof(all) / sizeof(all[0])) {
		int n = sscanf(line, "%llu %15s %llu %llu %63s", &idx, flags, &sector, &nr, mark);

		if (n < 4)
			continue;
		if (strchr(flags, 'M') && n == 5) {
			if (!strcmp(mark, "mkfs"))
				mkfs = idx, have_mkfs = 1;
			else if (!strncmp(mark, "synced-", 7))
				synced = atoi(mark + 7), all[nall++] = (struct point){ idx, synced, true };
		} else if (have_mkfs && (strchr(flags, 'F') || strchr(flags, 'U'))) {
			all[nall++] = (struct point){ idx, synced, false };
			nflush++;
		}
	}
	if (pclose(p))
		kt_fatal("t_lwreplay list /dev/mapper/nhr-log failed");
	kt_check(have_mkfs, "the log holds the mkfs mark");
	kt_check(synced == NFILES - 1, "the log holds every synced mark (the last: %d)", synced);
	kt_note("log: %zu flush/FUA points after mkfs, mkfs mark at entry %llu", nflush, mkfs);
	/* Every mark, and at most MAXPOINTS flush points spread over the log. */
	step = nflush > MAXPOINTS ? (nflush + MAXPOINTS - 1) / MAXPOINTS : 1;
	for (size_t k = 0, f = 0; k < nall; k++) {
		if (all[k].mark || f++ % step == 0 || k + 1 == nall)
			pts[npts++] = all[k];
	}
	for (size_t k = 0; k < npts; k++) {
		/* A flush point's synced count is what was synced before it. */
		int s = pts[k].synced;

		if (kt_sh("t_lwreplay replay /dev/mapper/nhr-log /dev/mapper/nhr-rep %llu %llu",
			  from, pts[k].entry + 1) ||
		    kt_sh("t_lwreplay copy /dev/mapper/nhr-rep /dev/mapper/nhr-chk"))
			kt_fatal("replaying to entry %llu failed", pts[k].entry);
		from = pts[k].entry + 1;
		check_point(pts[k].entry, s);
	}
	kt_note("checked %zu points (%d marks)", npts, NFILES);
}

int main(int argc, char **argv)
{
	if (argc != 3)
		kt_fatal("usage: t_nhs_replay SCRATCH MNT");
	mnt = argv[2];
	kt_sh("mkdir -p %s", mnt);
	setup(argv[1]);
	workload();
	replay();
	kt_sh("dmsetup remove nhr-lw 2> /dev/null; for d in nhr-chk nhr-rep nhr-log nhr-orig; do "
	      "dmsetup remove $d; done");
	return kt_done();
}
