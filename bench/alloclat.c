// SPDX-License-Identifier: MIT
/*
 * alloclat: allocation latency by path, in the patched guest.
 *
 * For one preparation path (zero-range, punch, provision, NO_HIDE_STALE,
 * plain fallocate, written zeros, FALLOC_FL_WRITE_ZEROES) it times how long
 * it takes to prepare each requested size, durably (the fallocate or the
 * writes, then fsync), and then the first N 4 KiB O_DIRECT|O_DSYNC writes
 * into a freshly prepared 16 MiB range, one every 16 KiB (so that every
 * write lands in a block of its own extent), with the number of jbd2
 * transactions the journal named by --jbd2 committed during those writes.
 *
 * The target is a block device (ranges at increasing offsets, never
 * overlapping) or a directory on a file system (a new file per size).
 * A path the kernel or device refuses (EOPNOTSUPP, EINVAL) is reported as
 * "unsupported" with the errno, never as a failure and never by falling
 * back to another path.  Output: one JSON object per line.
 *
 * Usage:
 *   alloclat [--sizes 1m,16m,256m] [--writes N] [--jbd2 INFO] [--tag JSON]
 *            MODE TARGET
 *   alloclat prepare MODE FILE SIZE     (prepare one file; for the
 *                                        prealloc-file benchmark backend)
 * MODE: none zero-range punch provision nohide-stale fallocate written-zeros
 *       write-zeroes
 * Exit: 0 (results printed, including "unsupported" cells), 1 on errors,
 * 2 on bad usage.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef FALLOC_FL_NO_HIDE_STALE
#define FALLOC_FL_NO_HIDE_STALE 0x04
#endif
#ifndef FALLOC_FL_WRITE_ZEROES
#define FALLOC_FL_WRITE_ZEROES 0x80
#endif

#define BS 4096u
#define MiB (1024ull * 1024ull)
#define WRITE_STRIDE (4ull * BS)
#define WRITE_REGION (16 * MiB)
/* The latency CDF is reported at these percentiles (bench/report.py knows them). */
static const double cdf_pct[] = { 0, 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.9, 100 };
#define CDF_POINTS (sizeof(cdf_pct) / sizeof(cdf_pct[0]))

struct mode {
	const char *name;
	int fl_mode;	/* fallocate mode; -1: written zeros; -2: nothing */
	bool bdev_ok, file_ok;
};

static const struct mode modes[] = {
	{ "none", -2, true, true },
	{ "zero-range", FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, true, true },
	{ "punch", FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, true, false },
	{ "provision", FALLOC_FL_KEEP_SIZE, true, false },
	/* ext4 refuses NO_HIDE_STALE|KEEP_SIZE: the file is extended with it */
	{ "nohide-stale", FALLOC_FL_NO_HIDE_STALE, false, true },
	{ "fallocate", 0, false, true },
	{ "written-zeros", -1, true, true },
	{ "write-zeroes", FALLOC_FL_WRITE_ZEROES, true, true },
};

static const char *tag = "";
static bool target_is_bdev;
static const char *target;
static uint64_t bdev_next;	/* next unused offset on a block device */
static unsigned int file_seq;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

static uint64_t pct(const uint64_t *v, uint64_t n, double p)
{
	return n ? v[(uint64_t)(p * (double)(n - 1) + 0.5)] : 0;
}

static const char *errname(int e)
{
	switch (e) {
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EINVAL: return "EINVAL";
	case EPERM: return "EPERM";
	case ENOSPC: return "ENOSPC";
	case EIO: return "EIO";
	case EBADF: return "EBADF";
	case ENODEV: return "ENODEV";
	default: return strerror(e);
	}
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	return *end ? 0 : v;
}

static const struct mode *find_mode(const char *name)
{
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(modes[i].name, name))
			return &modes[i];
	return NULL;
}

/* Write zeros over [off, off+len) with O_DIRECT 1 MiB writes; 0 or errno. */
static int write_zeros(int fd, uint64_t off, uint64_t len)
{
	static void *zeros;
	uint64_t done;

	if (!zeros) {
		if (posix_memalign(&zeros, BS, MiB))
			return ENOMEM;
		memset(zeros, 0, MiB);
	}
	for (done = 0; done < len;) {
		size_t n = len - done < MiB ? (size_t)(len - done) : MiB;
		ssize_t w = pwrite(fd, zeros, n, (off_t)(off + done));

		if (w < 0)
			return errno;
		if (w == 0)
			return EIO;
		done += (uint64_t)w;
	}
	return 0;
}

/*
 * Prepare [off, off+len) of fd by mode and make it durable.  Returns 0 or
 * an errno; *ns gets the time taken.
 */
static int prepare(int fd, const struct mode *m, uint64_t off, uint64_t len, uint64_t *ns)
{
	uint64_t t0 = now_ns();
	int err = 0;

	if (m->fl_mode == -1)
		err = write_zeros(fd, off, len);
	else if (m->fl_mode >= 0 && fallocate(fd, m->fl_mode, (off_t)off, (off_t)len))
		err = errno;
	if (!err && m->fl_mode != -2 && fsync(fd))
		err = errno;
	*ns = now_ns() - t0;
	return err;
}

/* A fresh range of len bytes: a new file in the target directory, or the
 * next unused range of the target block device.  Returns an fd or -errno. */
static int fresh_range(uint64_t len, uint64_t *off)
{
	char path[4096];
	int fd;

	if (target_is_bdev) {
		fd = open(target, O_RDWR | O_DIRECT);
		if (fd < 0)
			return -errno;
		*off = bdev_next;
		bdev_next += len;
		if (bdev_next > (uint64_t)lseek(fd, 0, SEEK_END)) {
			close(fd);
			return -ENOSPC;
		}
		return fd;
	}
	snprintf(path, sizeof(path), "%s/alloclat-%u-%d", target, file_seq++, (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	if (fd < 0)
		return -errno;
	*off = 0;
	return fd;
}

static long long jbd2_transactions(const char *info)
{
	char buf[256];
	long long n = -1;
	FILE *f;

	if (!info)
		return -1;
	f = fopen(info, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%lld transactions", &n) != 1)
		n = -1;
	fclose(f);
	return n;
}

static void print_unsupported(const char *kind, const struct mode *m, uint64_t size, int err)
{
	printf("{%s%s\"kind\": \"%s\", \"mode\": \"%s\", \"size\": %" PRIu64
	       ", \"status\": \"unsupported\", \"errno\": \"%s\"}\n",
	       tag, *tag ? ", " : "", kind, m->name, size, errname(err));
}

static int time_sizes(const struct mode *m, const uint64_t *sizes, int nsizes)
{
	for (int i = 0; i < nsizes; i++) {
		uint64_t off, ns;
		int fd = fresh_range(sizes[i], &off), err;

		if (fd < 0) {
			fprintf(stderr, "alloclat: %s: no room for %" PRIu64 " bytes: %s\n", target,
				sizes[i], strerror(-fd));
			return 1;
		}
		err = prepare(fd, m, off, sizes[i], &ns);
		close(fd);
		if (err == EOPNOTSUPP || err == EINVAL) {
			print_unsupported("alloc_prepare", m, sizes[i], err);
			continue;
		}
		if (err) {
			fprintf(stderr, "alloclat: %s %s %" PRIu64 " bytes: %s\n", m->name, target,
				sizes[i], strerror(err));
			return 1;
		}
		printf("{%s%s\"kind\": \"alloc_prepare\", \"mode\": \"%s\", \"size\": %" PRIu64
		       ", \"status\": \"ok\", \"ns\": %" PRIu64 ", \"mb_per_sec\": %.2f}\n", tag,
		       *tag ? ", " : "", m->name, sizes[i], ns,
		       ns ? (double)sizes[i] / ((double)ns / 1e9) / 1e6 : 0.0);
		fflush(stdout);
	}
	return 0;
}

static int first_writes(const struct mode *m, unsigned int writes, const char *jbd2)
{
	uint64_t off, ns, *lat, sum = 0;
	long long j0, j1;
	void *buf;
	int fd, err;

	if ((uint64_t)writes * WRITE_STRIDE > WRITE_REGION) {
		fprintf(stderr, "alloclat: at most %llu writes fit the 16 MiB region\n",
			WRITE_REGION / WRITE_STRIDE);
		return 2;
	}
	fd = fresh_range(WRITE_REGION, &off);
	if (fd < 0) {
		fprintf(stderr, "alloclat: %s: %s\n", target, strerror(-fd));
		return 1;
	}
	err = prepare(fd, m, off, WRITE_REGION, &ns);
	if (err == EOPNOTSUPP || err == EINVAL) {
		print_unsupported("alloc_first_writes", m, WRITE_REGION, err);
		close(fd);
		return 0;
	}
	if (err) {
		fprintf(stderr, "alloclat: %s %s: %s\n", m->name, target, strerror(err));
		close(fd);
		return 1;
	}
	close(fd);
	/* the writes go through a new O_DSYNC descriptor, as a server's would */
	if (target_is_bdev) {
		fd = open(target, O_RDWR | O_DIRECT | O_DSYNC);
	} else {
		char path[4096];

		snprintf(path, sizeof(path), "%s/alloclat-%u-%d", target, file_seq - 1,
			 (int)getpid());
		fd = open(path, O_RDWR | O_DIRECT | O_DSYNC);
	}
	lat = calloc(writes, sizeof(*lat));
	if (fd < 0 || !lat || posix_memalign(&buf, BS, BS)) {
		fprintf(stderr, "alloclat: open O_DSYNC %s: %s\n", target, strerror(errno));
		return 1;
	}
	memset(buf, 0x5a, BS);
	sync();
	j0 = jbd2_transactions(jbd2);
	for (unsigned int i = 0; i < writes; i++) {
		uint64_t t0 = now_ns();

		if (pwrite(fd, buf, BS, (off_t)(off + i * WRITE_STRIDE)) != BS) {
			fprintf(stderr, "alloclat: write %u: %s\n", i, strerror(errno));
			return 1;
		}
		lat[i] = now_ns() - t0;
		sum += lat[i];
	}
	j1 = jbd2_transactions(jbd2);
	close(fd);
	qsort(lat, writes, sizeof(*lat), cmp_u64);
	printf("{%s%s\"kind\": \"alloc_first_writes\", \"mode\": \"%s\", \"size\": %llu"
	       ", \"status\": \"ok\", \"writes\": %u, \"prepare_ns\": %" PRIu64
	       ", \"p50_us\": %.1f, \"p99_us\": %.1f, \"max_us\": %.1f, \"mean_us\": %.1f",
	       tag, *tag ? ", " : "", m->name, WRITE_REGION, writes, ns,
	       (double)pct(lat, writes, 0.5) / 1e3, (double)pct(lat, writes, 0.99) / 1e3,
	       (double)lat[writes - 1] / 1e3, (double)sum / writes / 1e3);
	if (j0 >= 0 && j1 >= 0)
		printf(", \"jbd2_commits\": %lld", j1 - j0);
	else
		printf(", \"jbd2_commits\": null");
	printf(", \"cdf_us\": [");
	for (size_t k = 0; k < CDF_POINTS; k++)
		printf("%s%.1f", k ? ", " : "",
		       (double)pct(lat, writes, cdf_pct[k] / 100) / 1e3);
	printf("]}\n");
	free(lat);
	free(buf);
	return 0;
}

/* alloclat prepare MODE FILE SIZE */
static int prepare_file(int argc, char **argv)
{
	const struct mode *m;
	uint64_t size, ns;
	int fd, err;

	m = argc == 5 ? find_mode(argv[2]) : NULL;
	size = argc == 5 ? parse_size(argv[4]) : 0;
	if (!m || !m->file_ok || !size) {
		fprintf(stderr, "usage: alloclat prepare none|nohide-stale|fallocate|written-zeros|"
				"write-zeroes FILE SIZE\n");
		return 2;
	}
	fd = open(argv[3], O_RDWR | O_CREAT | O_TRUNC | O_DIRECT, 0600);
	if (fd < 0) {
		fprintf(stderr, "alloclat: %s: %s\n", argv[3], strerror(errno));
		return 1;
	}
	err = prepare(fd, m, 0, size, &ns);
	if (!err && m->fl_mode == -2 && ftruncate(fd, (off_t)size))
		err = errno;
	/* NO_HIDE_STALE and the others extend i_size themselves; check it */
	if (!err) {
		struct stat s;

		if (fstat(fd, &s) || (uint64_t)s.st_size < size)
			err = ftruncate(fd, (off_t)size) ? errno : 0;
	}
	close(fd);
	if (err) {
		fprintf(stderr, "alloclat: prepare %s %s: %s\n", m->name, argv[3], errname(err));
		return err == EOPNOTSUPP || err == EINVAL ? 3 : 1;
	}
	printf("%" PRIu64 "\n", ns);
	return 0;
}

int main(int argc, char **argv)
{
	const char *jbd2 = NULL;
	uint64_t sizes[16];
	int nsizes = 0, i, ret;
	unsigned int writes = 1000;
	const struct mode *m;
	struct stat st;
	char *list = NULL;

	if (argc > 1 && !strcmp(argv[1], "prepare"))
		return prepare_file(argc, argv);
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] == '-'; i += 2) {
		if (i + 1 >= argc)
			goto usage;
		if (!strcmp(argv[i], "--sizes"))
			list = argv[i + 1];
		else if (!strcmp(argv[i], "--writes"))
			writes = (unsigned int)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--jbd2"))
			jbd2 = argv[i + 1];
		else if (!strcmp(argv[i], "--tag"))
			tag = argv[i + 1];
		else
			goto usage;
	}
	if (argc - i != 2 || !(m = find_mode(argv[i])))
		goto usage;
	target = argv[i + 1];
	if (stat(target, &st)) {
		fprintf(stderr, "alloclat: %s: %s\n", target, strerror(errno));
		return 1;
	}
	target_is_bdev = S_ISBLK(st.st_mode);
	if (!target_is_bdev && !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "alloclat: %s is neither a block device nor a directory\n", target);
		return 2;
	}
	if (target_is_bdev ? !m->bdev_ok : !m->file_ok) {
		fprintf(stderr, "alloclat: mode %s does not apply to a %s\n", m->name,
			target_is_bdev ? "block device" : "directory");
		return 2;
	}
	if (jbd2 && jbd2_transactions(jbd2) < 0) {
		fprintf(stderr, "alloclat: cannot read a transaction count from %s\n", jbd2);
		return 1;
	}
	for (char *s = list ? strtok(list, ",") : NULL; s && nsizes < 16; s = strtok(NULL, ","))
		if (!(sizes[nsizes++] = parse_size(s)) || sizes[nsizes - 1] % BS)
			goto usage;
	if (!list) {
		sizes[nsizes++] = 1 * MiB;
		sizes[nsizes++] = 16 * MiB;
		sizes[nsizes++] = 256 * MiB;
	}
	if (!writes)
		goto usage;
	bdev_next = 1 * MiB;
	ret = time_sizes(m, sizes, nsizes);
	if (!ret)
		ret = first_writes(m, writes, jbd2);
	return ret;
usage:
	fprintf(stderr, "usage: alloclat [--sizes 1m,16m,256m] [--writes N] [--jbd2 INFO] "
			"[--tag JSON] MODE TARGET\n"
			"       alloclat prepare MODE FILE SIZE\n"
			"MODE: none zero-range punch provision nohide-stale fallocate "
			"written-zeros write-zeroes\n");
	return 2;
}
