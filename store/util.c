// SPDX-License-Identifier: MIT
/* util.c: logging, per-thread error messages, crc32c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <isa-l.h>
#include <pthread.h>

#include "internal.h"
#include "util.h"

static __thread char last_err[512];

void rs_vlog(struct rawstore *st, int level, const char *fmt, va_list ap)
{
	char msg[600];
	int max = st ? st->opts.log_level : RAWSTORE_LOG_WARNING;

	if (level > max)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (st && st->opts.log_fn) {
		st->opts.log_fn(st->opts.log_arg, level, msg);
		return;
	}
	fprintf(stderr, "rawstore: %s\n", msg);
}

void rs_log(struct rawstore *st, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rs_vlog(st, level, fmt, ap);
	va_end(ap);
}

int rs_err(struct rawstore *st, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_err, sizeof(last_err), fmt, ap);
	va_end(ap);
	/* The caller gets the error and rawstore_errmsg(); log it at info only. */
	rs_log(st, RAWSTORE_LOG_INFO, "%s (%s)", last_err, rawstore_strerror(err));
	return err;
}

void rs_clear_err(void)
{
	last_err[0] = 0;
}

void rs_set_errmsg(const char *msg)
{
	snprintf(last_err, sizeof(last_err), "%s", msg);
}

const char *rawstore_errmsg(void)
{
	return last_err;
}

/*
 * crc32c, from isa-l (SSE4.2 crc32 and PCLMULQDQ folding) or from
 * slice-by-8 tables, whichever is faster on this CPU: chosen once, by
 * timing both (as the kernel picks its RAID-6 and xor routines).  On the
 * project's host isa-l runs at ~70 GB/s, the tables at ~2 GB/s; under
 * QEMU's TCG, which emulates crc32 and PCLMULQDQ in helpers, isa-l runs at
 * ~125 MB/s and the tables at ~650 MB/s, and the guest's writes and reads
 * spend most of their CPU in checksums.  RAWSTORE_CRC32C=isa-l|tables
 * overrides the choice.
 */
static uint32_t crc_tab[8][256];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void tab_init(void)
{
	uint32_t k, c;
	int t;

	for (k = 0; k < 256; k++) {
		for (c = k, t = 0; t < 8; t++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78U : c >> 1;
		crc_tab[0][k] = c;
	}
	for (k = 0; k < 256; k++)
		for (t = 1; t < 8; t++)
			crc_tab[t][k] = (crc_tab[t - 1][k] >> 8) ^ crc_tab[0][crc_tab[t - 1][k] & 0xff];
}

uint32_t rs_crc32c_tables(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t crc = 0xffffffffU;

	pthread_once(&tab_once, tab_init);

	for (; len >= 8; p += 8, len -= 8) {
		uint64_t v = get_le64(p) ^ crc;

		crc = crc_tab[7][v & 0xff] ^ crc_tab[6][(v >> 8) & 0xff] ^
		      crc_tab[5][(v >> 16) & 0xff] ^ crc_tab[4][(v >> 24) & 0xff] ^
		      crc_tab[3][(v >> 32) & 0xff] ^ crc_tab[2][(v >> 40) & 0xff] ^
		      crc_tab[1][(v >> 48) & 0xff] ^ crc_tab[0][v >> 56];
	}
	while (len--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

uint32_t rs_crc32c_isal(const void *buf, size_t len)
{
	return ~crc32_iscsi((unsigned char *)buf, (int)len, 0xffffffffU);
}

static uint32_t (*crc_fn)(const void *, size_t) = rs_crc32c_isal;
static const char *crc_name = "isa-l";
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

/* Best of 3 runs of @fn over @buf, in ns. */
static uint64_t crc_time(uint32_t (*fn)(const void *, size_t), const void *buf, size_t len)
{
	uint64_t best = UINT64_MAX;
	volatile uint32_t sink = 0;
	int i;

	for (i = 0; i < 3; i++) {
		uint64_t t0 = rs_now_ns(), ns;

		sink ^= fn(buf, len);
		ns = rs_now_ns() - t0;
		if (ns < best)
			best = ns;
	}
	(void)sink;
	return best;
}

static void crc_choose(void)
{
	const char *env = getenv("RAWSTORE_CRC32C");
	size_t len = 64 << 10, i;
	uint8_t *buf;

	bool tables = env && !strcmp(env, "tables");

	if (!tables && !(env && !strcmp(env, "isa-l"))) {
		buf = malloc(len);
		if (!buf)
			return;		/* isa-l */
		for (i = 0; i < len; i++)
			buf[i] = (uint8_t)(i * 131 + 7);
		tables = crc_time(rs_crc32c_tables, buf, len) < crc_time(rs_crc32c_isal, buf, len);
		free(buf);
	}
	if (tables) {
		crc_fn = rs_crc32c_tables;
		crc_name = "tables";
	}
}

uint32_t rs_crc32c(const void *buf, size_t len)
{
	pthread_once(&crc_once, crc_choose);
	return crc_fn(buf, len);
}

const char *rs_crc32c_impl(void)
{
	pthread_once(&crc_once, crc_choose);
	return crc_name;
}

/*
 * isa-l's crc32_iscsi dispatches, at its first call, to the fastest
 * routine the CPU has: by16_10 (AVX-512 with VPCLMULQDQ, 16 lanes of
 * carry-less folding), 01 (SSE4.2 crc32 with PCLMULQDQ), 00 (SSE4.2 crc32)
 * or base (tables).  The name of the one it picks here, from the same CPU
 * features (the profile names it too: crc32_iscsi_by16_10 on the project's
 * host); "tables" for the slice-by-8 tables.
 */
const char *rs_crc32c_variant(void)
{
	if (strcmp(rs_crc32c_impl(), "isa-l"))
		return "tables";
#if !defined(__x86_64__) && !defined(__i386__)
	return "isa-l";
#else
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("vpclmulqdq"))
		return "isa-l by16_10 (AVX-512 VPCLMULQDQ)";
	if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul"))
		return "isa-l 01 (SSE4.2 crc32 + PCLMULQDQ)";
	if (__builtin_cpu_supports("sse4.2"))
		return "isa-l 00 (SSE4.2 crc32)";
	return "isa-l base (tables)";
#endif
}

/* a * b modulo the reflected crc32c polynomial (bit 31 is x^0). */
static uint32_t crc_mulmod(uint32_t a, uint32_t b)
{
	uint32_t m = 1U << 31, p = 0;

	if (!a)
		return 0;
	for (;;) {
		if (a & m) {
			p ^= b;
			if (!(a & (m - 1)))
				break;
		}
		m >>= 1;
		b = b & 1 ? (b >> 1) ^ 0x82F63B78U : b >> 1;
	}
	return p;
}

/* x^(8 * @n) modulo the polynomial: squarings of x^8 (0x00800000 is x^8). */
static uint32_t crc_x8n(uint64_t n)
{
	uint32_t p = 1U << 31, sq = 0x00800000U;

	for (; n; n >>= 1) {
		if (n & 1)
			p = crc_mulmod(sq, p);
		sq = crc_mulmod(sq, sq);
	}
	return p;
}

uint32_t rs_crc32c_combine_gen(uint64_t len2)
{
	return crc_x8n(len2);
}

uint32_t rs_crc32c_combine_op(uint32_t crc1, uint32_t crc2, uint32_t op)
{
	return crc_mulmod(op, crc1) ^ crc2;
}

uint32_t rs_crc32c_combine(uint32_t crc1, uint32_t crc2, uint64_t len2)
{
	return rs_crc32c_combine_op(crc1, crc2, crc_x8n(len2));
}

void *rs_alloc_aligned(size_t len)
{
	void *p;

	if (posix_memalign(&p, 4096, len ? len : 4096))
		return NULL;
	return p;
}

/* ---- the I/O buffer cache: power-of-two classes from 64 KiB to 8 MiB ---- */

#define IOBUF_MIN_SHIFT 16
#define IOBUF_CLASSES 8
#define IOBUF_CLASS_BYTES (32U << 20)	/* cached per class */

/*
 * Large buffers live in transparent huge pages where the system offers
 * them (also in THP "madvise" mode): a 1 MiB buffer inside one huge page
 * is physically contiguous, so a 1 MiB direct write is one request of a
 * few segments instead of 256 pages (a loop device takes 128 segments per
 * request: such a write became two) and pinning it costs one page
 * reference instead of 256.  Host loop device, 1 MiB creates at QD16:
 * 1482-1564 -> 1884-2005 MB/s.  The 256 KiB..1 MiB classes are carved
 * from 2 MiB slabs that stay in the cache (IOBUF_CLASS_BYTES per class;
 * past that, plain buffers that are freed, not cached).  The 2..8 MiB
 * classes take whole huge-page buffers, faulted in at allocation
 * (MADV_POPULATE_WRITE), up to IOBUF_BIG_BYTES per class (32 of 4 MiB:
 * 16 creates in flight, each buffer held by the caller's transaction and
 * by the device write, fit; with 32 MiB, 4 MiB creates at QD16 took
 * 506 page faults each), and these are never given back: a 4 MiB write
 * from 4 KiB pages was 1024 pages to pin, more segments than a loop
 * device's request takes, and io_uring sent it to an io-wq worker.  Past
 * the cap the buffers are plain and freed, not cached: with more of them
 * in flight than the cache holds (4 MiB creates at QD256), a fresh
 * huge-page buffer each time cost milliseconds of CPU in page clearing
 * (perf: clear_page_erms 43 %), and creates ran at a quarter of the
 * speed; malloc's reuse of freed memory avoids that.
 */
#define IOBUF_HUGE (2U << 20)
#define IOBUF_SLAB_MIN_CLASS 2		/* 256 KiB */
#define IOBUF_BIG_BYTES (128U << 20)	/* huge-page buffers kept per 2..8 MiB class */
#define IOBUF_SLABS (IOBUF_BIG_BYTES / IOBUF_HUGE)

static struct {
	pthread_mutex_t lock;
	void *free[IOBUF_CLASS_BYTES >> IOBUF_MIN_SHIFT];
	unsigned int n;
	char *slab[IOBUF_SLABS];	/* slab classes: the slabs carved so far;
					 * big classes: their huge-page buffers */
	unsigned int n_slab;
} iobufs[IOBUF_CLASSES] = {
	[0 ... IOBUF_CLASSES - 1] = { .lock = PTHREAD_MUTEX_INITIALIZER },
};

static int iobuf_class(size_t len)
{
	int c = 0;

	if (len <= (1U << (IOBUF_MIN_SHIFT - 1)))
		return -1;
	while (c < IOBUF_CLASSES && ((size_t)1 << (IOBUF_MIN_SHIFT + c)) < len)
		c++;
	return c < IOBUF_CLASSES ? c : -1;
}

static size_t class_bytes(int c)
{
	return (size_t)1 << (IOBUF_MIN_SHIFT + c);
}

static bool slab_class(int c)
{
	return c >= IOBUF_SLAB_MIN_CLASS && class_bytes(c) < IOBUF_HUGE;
}

/* Classes of whole huge-page buffers, kept once allocated. */
static bool big_class(int c)
{
	return class_bytes(c) >= IOBUF_HUGE;
}

/* Bytes of one entry of iobufs[c].slab. */
static size_t slab_bytes(int c)
{
	return big_class(c) ? class_bytes(c) : IOBUF_HUGE;
}

/* @len bytes (a multiple of 2 MiB) in huge pages if the system has them. */
static void *huge_alloc(size_t len)
{
	void *p;

	if (posix_memalign(&p, IOBUF_HUGE, len))
		return NULL;
	(void)madvise(p, len, MADV_HUGEPAGE);	/* a hint: EINVAL without THP */
	return p;
}

/* Class @c (a slab class, lock held): carve a new slab into the free list. */
static void slab_carve(int c)
{
	size_t b = class_bytes(c), i;
	char *s;

	if (iobufs[c].n_slab == IOBUF_CLASS_BYTES / IOBUF_HUGE)
		return;
	s = huge_alloc(IOBUF_HUGE);
	if (!s)
		return;
	iobufs[c].slab[iobufs[c].n_slab++] = s;
	for (i = 0; i < IOBUF_HUGE / b; i++)
		iobufs[c].free[iobufs[c].n++] = s + i * b;
}

static bool in_slab(int c, const void *p)
{
	unsigned int i;

	for (i = 0; i < iobufs[c].n_slab; i++)
		if ((const char *)p >= iobufs[c].slab[i] &&
		    (const char *)p < iobufs[c].slab[i] + slab_bytes(c))
			return true;
	return false;
}

/* Class @c (a big class, lock held): one more huge-page buffer, faulted
 * in now, if the class is under its cap; NULL otherwise. */
static void *big_alloc(int c)
{
	size_t b = class_bytes(c);
	char *p;

	if (iobufs[c].n_slab >= IOBUF_BIG_BYTES / b)
		return NULL;
	p = huge_alloc(b);
	if (!p)
		return NULL;
#ifdef MADV_POPULATE_WRITE
	(void)madvise(p, b, MADV_POPULATE_WRITE);	/* else faulted in on first use */
#endif
	iobufs[c].slab[iobufs[c].n_slab++] = p;
	return p;
}

void *rs_iobuf_get(size_t len, bool *fresh)
{
	int c = iobuf_class(len);
	bool carved = false;
	void *p = NULL;

	/* Below the classes: malloc's heap, whose memory is reused. */
	*fresh = len > (1U << (IOBUF_MIN_SHIFT - 1));
	if (c < 0)
		return rs_alloc_aligned(len);
	pthread_mutex_lock(&iobufs[c].lock);
	if (!iobufs[c].n && slab_class(c)) {
		slab_carve(c);
		carved = true;
	}
	if (iobufs[c].n)
		p = iobufs[c].free[--iobufs[c].n];
	else if (big_class(c))
		carved = (p = big_alloc(c)) != NULL;
	pthread_mutex_unlock(&iobufs[c].lock);
	if (p) {
		*fresh = carved;	/* a new slab's pages are untouched */
		return p;
	}
	return rs_alloc_aligned(class_bytes(c));
}

bool rs_iobuf_huge(const void *p)
{
	bool huge = false;
	int c;

	for (c = IOBUF_SLAB_MIN_CLASS; c < IOBUF_CLASSES && !huge; c++) {
		pthread_mutex_lock(&iobufs[c].lock);
		huge = in_slab(c, p);
		pthread_mutex_unlock(&iobufs[c].lock);
	}
	return huge;
}

void *rs_iobuf_alloc(size_t len)
{
	bool fresh;

	return rs_iobuf_get(len, &fresh);
}

void rs_iobuf_free(void *p, size_t len)
{
	int c = iobuf_class(len);

	if (!p)
		return;
	if (c >= 0) {
		pthread_mutex_lock(&iobufs[c].lock);
		/* Slab and huge-page buffers always go back (the list has
		 * room for all of them); in those classes, others are freed. */
		if (slab_class(c) || big_class(c) ? in_slab(c, p) :
				    iobufs[c].n < IOBUF_CLASS_BYTES / class_bytes(c)) {
			iobufs[c].free[iobufs[c].n++] = p;
			p = NULL;
		}
		pthread_mutex_unlock(&iobufs[c].lock);
	}
	free(p);
}

/* The errno for a RocksDB error string (meta.c, journal.c). */
int rs_db_errno(const char *err)
{
	/* Corruption first: "block checksum mismatch" contains "lock". */
	if (strstr(err, "Corruption"))
		return -EUCLEAN;
	/* Another process holds LOCK, or this one opened the database already. */
	if (strstr(err, "While lock file") || strstr(err, "lock hold by current process"))
		return -EBUSY;
	/* A full file system under the database (the WAL or an SST file). */
	if (strstr(err, "No space left on device"))
		return -ENOSPC;
	if (strstr(err, "does not exist"))
		return -ENOENT;
	if (strstr(err, "exists"))
		return -EEXIST;
	return -EIO;
}
