// SPDX-License-Identifier: MIT
/*
 * t_lwreplay: read and replay a dm-log-writes log (the format of
 * Documentation/admin-guide/device-mapper/log-writes.rst and
 * drivers/md/dm-log-writes.c in Linux 6.1), for v_powercut.sh.
 *
 *   t_lwreplay list LOG                 one line per entry:
 *                                       "INDEX FLAGS SECTOR NR_SECTORS [MARK]"
 *                                       (FLAGS: F flush, U fua, D discard,
 *                                       M mark, m metadata, - none)
 *   t_lwreplay replay LOG DEV FROM TO   write entries [FROM, TO) to DEV
 *                                       (discards become zeroes), then fsync
 *   t_lwreplay zero DEV                 zero all of DEV (BLKZEROOUT)
 *   t_lwreplay copy SRC DST             make DST a copy of SRC (zero DST,
 *                                       then copy the non-zero 64 KiB chunks)
 *
 * Log layout: the super in the first sector (sectorsize = the logical block
 * size of the logged device), then for each entry one sector holding
 * struct log_write_entry (and a mark's name after it), followed by
 * nr_sectors sectors of data unless the entry is a discard or a mark.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define LOG_FLUSH_FLAG (1 << 0)
#define LOG_FUA_FLAG (1 << 1)
#define LOG_DISCARD_FLAG (1 << 2)
#define LOG_MARK_FLAG (1 << 3)
#define LOG_METADATA_FLAG (1 << 4)
#define WRITE_LOG_VERSION 1ULL
#define WRITE_LOG_MAGIC 0x6a736677736872ULL

struct log_write_super {
	uint64_t magic;
	uint64_t version;
	uint64_t nr_entries;
	uint32_t sectorsize;
} __attribute__((packed));

struct log_write_entry {
	uint64_t sector;		/* in sectorsize units */
	uint64_t nr_sectors;		/* in sectorsize units */
	uint64_t flags;
	uint64_t data_len;		/* mark: name length */
} __attribute__((packed));

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "t_lwreplay: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, ": %s\n", strerror(errno));
	exit(1);
}

static int open_or_die(const char *path, int flags)
{
	int fd = open(path, flags);

	if (fd < 0)
		die("cannot open %s", path);
	return fd;
}

static void pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (r <= 0) {
			errno = r < 0 ? errno : EIO;
			die("%s", "short read");
		}
		done += (size_t)r;
	}
}

static void pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pwrite(fd, (const char *)buf + done, len - done,
				   (off_t)(off + done));

		if (r <= 0) {
			errno = r < 0 ? errno : EIO;
			die("%s", "short write");
		}
		done += (size_t)r;
	}
}

static uint64_t dev_size(int fd)
{
	uint64_t sz = 0;

	if (ioctl(fd, BLKGETSIZE64, &sz)) {
		off_t e = lseek(fd, 0, SEEK_END);

		if (e < 0)
			die("%s", "size");
		sz = (uint64_t)e;
	}
	return sz;
}

static void zero_range(int fd, uint64_t off, uint64_t len)
{
	uint64_t r[2] = { off, len };
	static char zeros[1 << 16];

	if (!ioctl(fd, BLKZEROOUT, r))
		return;
	while (len) {
		size_t n = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);

		pwrite_all(fd, zeros, n, off);
		off += n;
		len -= n;
	}
}

/* Walk the log; for each entry in [from, to) call fn. */
static void walk(int log, uint64_t from, uint64_t to, int dev)
{
	struct log_write_super s;
	uint64_t pos, i;
	uint32_t ss;
	char *hdr, *buf = NULL;
	size_t bufcap = 0;

	pread_all(log, &s, sizeof(s), 0);
	if (s.magic != WRITE_LOG_MAGIC || s.version != WRITE_LOG_VERSION || !s.sectorsize ||
	    s.sectorsize % 512) {
		errno = EINVAL;
		die("%s", "not a dm-log-writes log");
	}
	ss = s.sectorsize;
	hdr = malloc(ss);
	if (to > s.nr_entries)
		to = s.nr_entries;
	pos = ss;
	for (i = 0; i < to; i++) {
		struct log_write_entry e;
		uint64_t datalen;

		pread_all(log, hdr, ss, pos);
		memcpy(&e, hdr, sizeof(e));
		pos += ss;
		datalen = (e.flags & (LOG_DISCARD_FLAG | LOG_MARK_FLAG)) ? 0 : e.nr_sectors * ss;
		if (i >= from) {
			if (dev < 0) {
				printf("%llu %s%s%s%s%s%s %llu %llu", (unsigned long long)i,
				       e.flags & LOG_FLUSH_FLAG ? "F" : "",
				       e.flags & LOG_FUA_FLAG ? "U" : "",
				       e.flags & LOG_DISCARD_FLAG ? "D" : "",
				       e.flags & LOG_MARK_FLAG ? "M" : "",
				       e.flags & LOG_METADATA_FLAG ? "m" : "",
				       e.flags & 31 ? "" : "-", (unsigned long long)e.sector,
				       (unsigned long long)e.nr_sectors);
				if ((e.flags & LOG_MARK_FLAG) && e.data_len < ss - sizeof(e))
					printf(" %.*s", (int)e.data_len, hdr + sizeof(e));
				printf("\n");
			} else if (e.flags & LOG_DISCARD_FLAG) {
				zero_range(dev, e.sector * ss, e.nr_sectors * ss);
			} else if (datalen) {
				if (datalen > bufcap) {
					free(buf);
					bufcap = datalen;
					buf = malloc(bufcap);
					if (!buf)
						die("%s", "malloc");
				}
				pread_all(log, buf, datalen, pos);
				pwrite_all(dev, buf, datalen, e.sector * ss);
			}
		}
		pos += datalen;
	}
	if (dev >= 0 && fsync(dev))
		die("%s", "fsync");
	free(buf);
	free(hdr);
}

static void copy(int src, int dst)
{
	static char buf[1 << 16], zeros[1 << 16];
	uint64_t sz = dev_size(src), off;

	if (dev_size(dst) < sz) {
		errno = ENOSPC;
		die("%s", "destination smaller than source");
	}
	zero_range(dst, 0, sz);
	for (off = 0; off < sz; off += sizeof(buf)) {
		size_t n = sz - off < sizeof(buf) ? (size_t)(sz - off) : sizeof(buf);

		pread_all(src, buf, n, off);
		if (memcmp(buf, zeros, n))
			pwrite_all(dst, buf, n, off);
	}
	if (fsync(dst))
		die("%s", "fsync");
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "list")) {
		walk(open_or_die(argv[2], O_RDONLY), 0, UINT64_MAX, -1);
	} else if (argc == 6 && !strcmp(argv[1], "replay")) {
		walk(open_or_die(argv[2], O_RDONLY), strtoull(argv[4], NULL, 0),
		     strtoull(argv[5], NULL, 0), open_or_die(argv[3], O_RDWR));
	} else if (argc == 3 && !strcmp(argv[1], "zero")) {
		int fd = open_or_die(argv[2], O_RDWR);

		zero_range(fd, 0, dev_size(fd));
		if (fsync(fd))
			die("%s", "fsync");
	} else if (argc == 4 && !strcmp(argv[1], "copy")) {
		copy(open_or_die(argv[2], O_RDONLY), open_or_die(argv[3], O_RDWR));
	} else {
		fprintf(stderr, "usage: t_lwreplay list LOG | replay LOG DEV FROM TO | zero DEV | "
			"copy SRC DST\n");
		return 2;
	}
	return 0;
}
