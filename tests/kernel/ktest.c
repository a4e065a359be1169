// SPDX-License-Identifier: MIT
/* ktest: the in-guest kernel test harness (see ktest.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ktest.h"

int kt_failures;
int kt_checks;

static void vline(const char *prefix, const char *fmt, va_list ap, const char *suffix)
{
	fputs(prefix, stdout);
	vprintf(fmt, ap);
	fputs(suffix, stdout);
	fflush(stdout);
}

void kt_check(bool cond, const char *fmt, ...)
{
	va_list ap;

	kt_checks++;
	if (!cond)
		kt_failures++;
	va_start(ap, fmt);
	vline(cond ? "ok - " : "not ok - ", fmt, ap, "\n");
	va_end(ap);
}

void kt_expect_eq_(long long got, long long want, const char *fmt, ...)
{
	va_list ap;
	bool ok = got == want;

	kt_checks++;
	if (!ok)
		kt_failures++;
	va_start(ap, fmt);
	vline(ok ? "ok - " : "not ok - ", fmt, ap, "");
	va_end(ap);
	if (ok)
		printf(" (%s)\n", kt_errname(got));
	else
		printf(": got %s (%lld), want %s (%lld)\n", kt_errname(got), got, kt_errname(want), want);
	fflush(stdout);
}

void kt_note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("# ", fmt, ap, "\n");
	va_end(ap);
}

void kt_skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("SKIP: ", fmt, ap, "\n");
	va_end(ap);
	/* A check already failed: the run failed, whatever comes after it. */
	if (kt_failures) {
		printf("# %d checks, %d failed before the skip: reporting failure\n", kt_checks,
		       kt_failures);
		exit(1);
	}
	exit(KT_SKIP);
}

void kt_fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("FATAL: ", fmt, ap, "\n");
	va_end(ap);
	exit(1);
}

int kt_done(void)
{
	printf("# %d checks, %d failed\n", kt_checks, kt_failures);
	return kt_failures ? 1 : 0;
}

const char *kt_errname(long long err)
{
	static char buf[32];

	if (err < 0)
		err = -err;
	switch (err) {
	case 0: return "0";
	case EINVAL: return "EINVAL";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EBADF: return "EBADF";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case ENOSPC: return "ENOSPC";
	case EDQUOT: return "EDQUOT";
	case EIO: return "EIO";
	case EFBIG: return "EFBIG";
	case ENODEV: return "ENODEV";
	case EROFS: return "EROFS";
	case EBUSY: return "EBUSY";
	case ENOTTY: return "ENOTTY";
	case EOVERFLOW: return "EOVERFLOW";
	case ENOSYS: return "ENOSYS";
	default:
		snprintf(buf, sizeof(buf), "errno %lld", err);
		return buf;
	}
}

int kt_fallocate(int fd, int mode, uint64_t off, uint64_t len)
{
	return fallocate(fd, mode, (off_t)off, (off_t)len) ? -errno : 0;
}

int kt_blkzeroout(int fd, uint64_t off, uint64_t len)
{
	uint64_t range[2] = { off, len };

	return ioctl(fd, BLKZEROOUT, range) ? -errno : 0;
}

uint64_t kt_dev_size(int fd)
{
	uint64_t size;

	if (ioctl(fd, BLKGETSIZE64, &size))
		kt_fatal("BLKGETSIZE64: %s", strerror(errno));
	return size;
}

unsigned int kt_lbs(int fd)
{
	int lbs;

	if (ioctl(fd, BLKSSZGET, &lbs))
		kt_fatal("BLKSSZGET: %s", strerror(errno));
	return (unsigned int)lbs;
}

long long kt_queue_attr(const char *devpath, const char *attr)
{
	char path[256], buf[64];
	struct stat st;

	if (stat(devpath, &st) || !S_ISBLK(st.st_mode))
		return -1;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s", major(st.st_rdev),
		 minor(st.st_rdev), attr);
	if (kt_read_file(path, buf, sizeof(buf)) < 0) {
		/* A partition or dm device: queue/ may live on the parent. */
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/%s",
			 major(st.st_rdev), minor(st.st_rdev), attr);
		if (kt_read_file(path, buf, sizeof(buf)) < 0)
			return -1;
	}
	return strtoll(buf, NULL, 10);
}

uint8_t kt_pattern_byte(uint32_t seed, uint64_t off)
{
	uint64_t x;

	if (!seed)
		return 0;
	/* Offset-dependent so that misplaced data is caught, never zero. */
	x = (off >> 3) * 0x9E3779B97F4A7C15ull ^ seed * 0xBF58476D1CE4E5B9ull;
	x ^= x >> 31;
	return (uint8_t)((x >> ((off & 7) * 8)) | 1);
}

#define KT_CHUNK (1u << 20)

void kt_fill(int fd, uint64_t off, uint64_t len, uint32_t seed)
{
	uint8_t *buf;
	uint64_t done = 0;

	if (posix_memalign((void **)&buf, 4096, KT_CHUNK))
		kt_fatal("out of memory");
	while (done < len) {
		size_t n = len - done < KT_CHUNK ? (size_t)(len - done) : KT_CHUNK;
		ssize_t w;

		for (size_t i = 0; i < n; i++)
			buf[i] = kt_pattern_byte(seed, off + done + i);
		w = pwrite(fd, buf, n, (off_t)(off + done));
		if (w != (ssize_t)n)
			kt_fatal("pwrite at %llu: %s", (unsigned long long)(off + done),
				 w < 0 ? strerror(errno) : "short write");
		done += n;
	}
	free(buf);
}

uint64_t kt_verify(int fd, uint64_t off, uint64_t len, uint32_t seed)
{
	uint8_t *buf;
	uint64_t done = 0, bad = UINT64_MAX;

	if (posix_memalign((void **)&buf, 4096, KT_CHUNK))
		kt_fatal("out of memory");
	while (done < len && bad == UINT64_MAX) {
		size_t n = len - done < KT_CHUNK ? (size_t)(len - done) : KT_CHUNK;
		ssize_t r = pread(fd, buf, n, (off_t)(off + done));

		if (r != (ssize_t)n)
			kt_fatal("pread at %llu: %s", (unsigned long long)(off + done),
				 r < 0 ? strerror(errno) : "short read");
		for (size_t i = 0; i < n; i++) {
			if (buf[i] != kt_pattern_byte(seed, off + done + i)) {
				bad = off + done + i;
				break;
			}
		}
		done += n;
	}
	free(buf);
	return bad;
}

void kt_expect_range(int fd, uint64_t off, uint64_t len, uint32_t seed, const char *what)
{
	uint64_t bad = kt_verify(fd, off, len, seed);
	const char *want = seed ? "the pattern" : "zeros";

	if (bad == UINT64_MAX)
		kt_check(true, "%s: [%llu, +%llu) reads %s", what, (unsigned long long)off,
			 (unsigned long long)len, want);
	else
		kt_check(false, "%s: [%llu, +%llu) reads %s, first mismatch at %llu", what,
			 (unsigned long long)off, (unsigned long long)len, want,
			 (unsigned long long)bad);
}

int kt_sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	fflush(stdout);
	rc = system(cmd);
	if (rc == -1)
		return -1;
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

long kt_read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0)
		n = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

int kt_dmesg_count(const char *ere)
{
	char line[1024];
	regex_t re;
	int n = 0;
	FILE *f;

	if (regcomp(&re, ere, REG_EXTENDED | REG_NOSUB))
		return -1;
	f = popen("dmesg", "r");
	if (!f) {
		regfree(&re);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (regexec(&re, line, 0, NULL, 0) == 0) {
			kt_note("dmesg: %s", line);
			n++;
		}
	}
	pclose(f);
	regfree(&re);
	return n;
}

void kt_fiemap_each(int fd, uint64_t off, uint64_t len, kt_extent_fn fn, void *arg)
{
	enum { N = 64 };
	struct fiemap *fm = calloc(1, sizeof(*fm) + N * sizeof(struct fiemap_extent));
	uint64_t pos = off, end = off + len;
	bool last = false;

	if (!fm)
		kt_fatal("out of memory");
	while (pos < end && !last) {
		memset(fm, 0, sizeof(*fm));
		fm->fm_start = pos;
		fm->fm_length = end - pos;
		fm->fm_flags = FIEMAP_FLAG_SYNC;
		fm->fm_extent_count = N;
		if (ioctl(fd, FS_IOC_FIEMAP, fm))
			kt_fatal("FS_IOC_FIEMAP: %s", strerror(errno));
		if (!fm->fm_mapped_extents)
			break;
		for (unsigned int i = 0; i < fm->fm_mapped_extents; i++) {
			const struct fiemap_extent *x = &fm->fm_extents[i];
			uint64_t s = x->fe_logical > off ? x->fe_logical : off;
			uint64_t t = x->fe_logical + x->fe_length < end ? x->fe_logical + x->fe_length
									 : end;

			if (t > s)
				fn(x, t - s, arg);
			pos = x->fe_logical + x->fe_length;
			if (x->fe_flags & FIEMAP_EXTENT_LAST)
				last = true;
		}
	}
	free(fm);
}

static void count_extent(const struct fiemap_extent *x, uint64_t inside, void *arg)
{
	struct kt_extents *e = arg;

	e->count++;
	e->mapped += inside;
	if (x->fe_flags & FIEMAP_EXTENT_UNWRITTEN) {
		e->unwritten++;
		e->unwritten_bytes += inside;
	}
}

struct kt_extents kt_fiemap(int fd, uint64_t off, uint64_t len)
{
	struct kt_extents e = { 0 };

	kt_fiemap_each(fd, off, len, count_extent, &e);
	return e;
}

void kt_expect_extents(int fd, uint64_t off, uint64_t len, bool unwritten, const char *what)
{
	struct kt_extents e = kt_fiemap(fd, off, len);

	kt_check(e.mapped == len && (unwritten ? e.unwritten_bytes == len : e.unwritten == 0),
		 "%s: FIEMAP of [%llu, +%llu): %u extents mapping %llu bytes, %u unwritten (%llu bytes)"
		 ", want all %s",
		 what, (unsigned long long)off, (unsigned long long)len, e.count,
		 (unsigned long long)e.mapped, e.unwritten, (unsigned long long)e.unwritten_bytes,
		 unwritten ? "unwritten" : "written");
}
