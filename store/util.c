// SPDX-License-Identifier: MIT
/* util.c: logging, per-thread error messages, crc32c. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

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

uint32_t rs_crc32c(const void *buf, size_t len)
{
	return ~crc32_iscsi((unsigned char *)buf, (int)len, 0xffffffffU);
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

static struct {
	pthread_mutex_t lock;
	void *free[IOBUF_CLASS_BYTES >> IOBUF_MIN_SHIFT];
	unsigned int n;
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

void *rs_iobuf_alloc(size_t len)
{
	int c = iobuf_class(len);
	void *p = NULL;

	if (c < 0)
		return rs_alloc_aligned(len);
	pthread_mutex_lock(&iobufs[c].lock);
	if (iobufs[c].n)
		p = iobufs[c].free[--iobufs[c].n];
	pthread_mutex_unlock(&iobufs[c].lock);
	return p ? p : rs_alloc_aligned((size_t)1 << (IOBUF_MIN_SHIFT + c));
}

void rs_iobuf_free(void *p, size_t len)
{
	int c = iobuf_class(len);

	if (!p)
		return;
	if (c >= 0) {
		pthread_mutex_lock(&iobufs[c].lock);
		if (iobufs[c].n < (IOBUF_CLASS_BYTES >> (IOBUF_MIN_SHIFT + c))) {
			iobufs[c].free[iobufs[c].n++] = p;
			p = NULL;
		}
		pthread_mutex_unlock(&iobufs[c].lock);
	}
	free(p);
}
