// SPDX-License-Identifier: MIT
/*
 * rawstored: the per-host broker of rawstore devices (docs/swift.md).
 *
 * A store is opened by one process only (O_EXCL and flock), and a handle
 * cannot be used across fork(); OpenStack Swift runs many processes that
 * all need the same devices.  So this daemon opens every configured store
 * once and serves the framed protocol of broker/proto.h on one unix socket
 * per store.  One thread per connection, at most --max-clients of them:
 * the library's calls block (reads in the caller's thread, submits until
 * durable) and a thread each keeps every call plain and every connection
 * independent; the commit thread still groups the submits of all
 * connections into one device flush.  The main thread only accepts
 * connections and waits for SIGTERM/SIGINT (a signalfd), then shuts every
 * connection down, waits for their threads and closes the stores.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "rawstore/rawstore.h"
#include "proto.h"

#define DEFAULT_MAX_CLIENTS	256
#define DEFAULT_MODE		0660
#define DEFAULT_IO_TIMEOUT	120		/* seconds */
#define DEFAULT_TXN_MEMORY	(1ULL << 30)	/* bytes */

struct store {
	char *name, *dev, *meta, *sock;
	mode_t mode;
	gid_t gid;
	bool has_gid;
	struct rawstore *st;
	int lfd;
};

static struct store *stores;
static unsigned int nstores;
static unsigned int max_clients = DEFAULT_MAX_CLIENTS;
static int open_buffered;
/* A frame begun (or a TXN's chunks) must go on within this: milliseconds. */
static int io_timeout_ms = DEFAULT_IO_TIMEOUT * 1000;

/*
 * Write data of the transactions being built, over all connections: a
 * TXN reserves what its records declare before it reads any of it, so
 * max-clients connections streaming at once cannot take
 * max-clients x RSB_TXN_DATA_MAX of memory.
 */
static pthread_mutex_t budget_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t budget_freed = PTHREAD_COND_INITIALIZER;
static uint64_t budget_max = DEFAULT_TXN_MEMORY, budget_used;

/* The connections' sockets, so that shutdown can wake their threads. */
static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t conn_gone = PTHREAD_COND_INITIALIZER;
static int *conn_fds;
static unsigned int nconns;
static bool stopping;

struct conn {
	int fd;
	struct store *s;
	int version;		/* 0 until HELLO */
	uint8_t *in, *out, *chunk;
};

static void logmsg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void logmsg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("rawstored: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- frames ---- */

/* @wait: a client that stops mid-frame is dropped after io_timeout_ms. */
static int read_full(int fd, void *buf, size_t n, bool wait)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t *p = buf;

	while (n) {
		ssize_t r;

		if (wait) {
			r = poll(&pfd, 1, io_timeout_ms);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				return r ? -errno : -ETIMEDOUT;
		}
		r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ECONNRESET;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		/* MSG_NOSIGNAL: a client gone away is an error, not SIGPIPE */
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/*
 * Send a reply whose payload is the @len bytes at c->out + RSB_HDR_SIZE
 * (handlers build it there, so a reply goes out in one write).
 */
static int reply(struct conn *c, const struct rsb_hdr *req, int32_t result, uint32_t flags,
		 size_t len)
{
	struct rsb_hdr h = {
		.magic = RSB_MAGIC,
		.version = (uint16_t)(c->version ? c->version : RSB_VERSION_MAX),
		.op = (uint16_t)(req->op | RSB_REPLY),
		.len = (uint32_t)len,
		.tag = req->tag,
		.result = result,
		.flags = flags,
	};

	rsb_hdr_encode(c->out, &h);
	return write_full(c->fd, c->out, RSB_HDR_SIZE + len);
}

/*
 * Read one frame into @buf.  -ECONNRESET at end of stream; -EPROTO (bad
 * magic) and -EMSGSIZE (length over RSB_FRAME_MAX) leave the stream out of
 * step, so the caller answers and closes the connection.  An idle
 * connection waits for its next request as long as it likes (@idle);
 * once a frame has begun, or within a TXN, the rest must come in time.
 */
static int read_frame(struct conn *c, struct rsb_hdr *h, uint8_t *buf, bool idle)
{
	uint8_t raw[RSB_HDR_SIZE];
	int ret;

	ret = read_full(c->fd, raw, 1, !idle);
	if (!ret)
		ret = read_full(c->fd, raw + 1, sizeof(raw) - 1, true);
	if (ret == -ETIMEDOUT)
		logmsg("%s: a client stopped in the middle of a frame: dropped", c->s->name);
	if (ret)
		return ret;
	rsb_hdr_decode(raw, h);
	if (h->magic != RSB_MAGIC)
		return -EPROTO;
	if (h->len > RSB_FRAME_MAX)
		return -EMSGSIZE;
	ret = read_full(c->fd, buf, h->len, true);
	if (ret == -ETIMEDOUT)
		logmsg("%s: a client stopped in the middle of a frame: dropped", c->s->name);
	return ret;
}

/* ---- reply payloads ---- */

struct out {
	uint8_t *p;
	size_t len;
	int err;		/* -E2BIG once something did not fit */
};

static uint8_t *out_take(struct out *o, size_t n)
{
	uint8_t *p;

	if (o->err || n > RSB_FRAME_MAX - o->len) {
		o->err = -E2BIG;
		return NULL;
	}
	p = o->p + o->len;
	o->len += n;
	return p;
}

static void out_u16(struct out *o, uint16_t v)
{
	uint8_t *p = out_take(o, 2);

	if (p)
		rsb_put16(p, v);
}

static void out_u32(struct out *o, uint32_t v)
{
	uint8_t *p = out_take(o, 4);

	if (p)
		rsb_put32(p, v);
}

static void out_u64(struct out *o, uint64_t v)
{
	uint8_t *p = out_take(o, 8);

	if (p)
		rsb_put64(p, v);
}

static void out_bytes32(struct out *o, const void *b, size_t n)
{
	uint8_t *p = out_take(o, 4 + n);

	if (p) {
		rsb_put32(p, (uint32_t)n);
		memcpy(p + 4, b, n);
	}
}

static void out_str16(struct out *o, const void *b, size_t n)
{
	uint8_t *p = n > UINT16_MAX ? NULL : out_take(o, 2 + n);

	if (p) {
		rsb_put16(p, (uint16_t)n);
		memcpy(p + 2, b, n);
	} else {
		o->err = -E2BIG;
	}
}

static void out_init(struct out *o, struct conn *c)
{
	o->p = c->out + RSB_HDR_SIZE;
	o->len = 0;
	o->err = 0;
}

/* ---- read-side requests ---- */

/* The (coll, name) that starts most requests. */
struct target {
	char coll[RAWSTORE_COLL_NAME_MAX + 1];
	const uint8_t *name;
	size_t nlen;
};

static int get_target(struct rsb_cur *cur, struct target *t)
{
	int ret = rsb_str(cur, t->coll, sizeof(t->coll));

	t->name = rsb_bytes(cur, &t->nlen);
	if (cur->err)
		return cur->err;
	if (ret)
		return ret;
	if (!t->nlen || t->nlen > RAWSTORE_NAME_MAX)
		return -EINVAL;
	return 0;
}

static int do_hello(struct conn *c, struct rsb_cur *cur, struct out *o)
{
	uint16_t lo = rsb_u16(cur), hi = rsb_u16(cur);

	if (cur->err)
		return cur->err;
	/* the server's range either way, so a client can say what it lacks */
	if (lo > RSB_VERSION_MAX || hi < RSB_VERSION_MIN || lo > hi) {
		out_u16(o, RSB_VERSION_MIN);
		out_u16(o, RSB_VERSION_MAX);
		return -EPROTONOSUPPORT;
	}
	c->version = hi < RSB_VERSION_MAX ? hi : RSB_VERSION_MAX;
	out_u16(o, (uint16_t)c->version);
	out_u32(o, RSB_FRAME_MAX);
	out_u64(o, RSB_TXN_DATA_MAX);
	return 0;
}

static int do_statfs(struct conn *c, struct out *o)
{
	struct rawstore_statfs s;
	int ret;

	s.struct_size = sizeof(s);
	ret = rawstore_statfs(c->s->st, &s);
	if (ret)
		return ret;
	out_u64(o, s.device_size);
	out_u64(o, s.data_size);
	out_u64(o, s.allocated);
	out_u64(o, s.free);
	out_u64(o, s.unpunched);
	out_u64(o, s.free_extents);
	out_u64(o, s.largest_free);
	out_u64(o, s.objects);
	out_u64(o, s.collections);
	out_u64(o, s.min_alloc_size);
	return 0;
}

static int do_stat(struct conn *c, struct rsb_cur *cur, struct out *o)
{
	struct rawstore_stat s;
	struct target t;
	int ret = get_target(cur, &t);

	if (ret)
		return ret;
	s.struct_size = sizeof(s);
	ret = rawstore_stat(c->s->st, t.coll, t.name, t.nlen, &s);
	if (ret)
		return ret;
	out_u64(o, s.size);
	out_u64(o, s.allocated);
	out_u64(o, s.extents);
	out_u64(o, s.nid);
	out_u64(o, (uint64_t)s.is_inline);
	return 0;
}

/*
 * READ answers with frames of at most RSB_CHUNK bytes, each result the
 * bytes it carries, RSB_F_MORE on all but the last; a short frame is the
 * end of the object.  An error is a last frame with -errno.  Returns 1
 * when the replies went out (or the socket's error).
 */
static int do_read(struct conn *c, const struct rsb_hdr *h, struct rsb_cur *cur)
{
	struct target t;
	uint64_t off, len, done = 0;
	int ret = get_target(cur, &t);

	off = rsb_u64(cur);
	len = rsb_u64(cur);
	if (!ret && cur->err)
		ret = cur->err;
	if (ret)
		return reply(c, h, ret, 0, 0) ?: 1;
	for (;;) {
		size_t n = len - done < RSB_CHUNK ? (size_t)(len - done) : RSB_CHUNK;
		ssize_t r = rawstore_read(c->s->st, t.coll, t.name, t.nlen, off + done,
					  c->out + RSB_HDR_SIZE, n);
		bool last;

		if (r < 0)
			return reply(c, h, (int32_t)r, 0, 0) ?: 1;
		done += (uint64_t)r;
		last = (size_t)r < n || done == len;
		ret = reply(c, h, (int32_t)r, last ? 0 : RSB_F_MORE, (size_t)r);
		if (ret || last)
			return ret ?: 1;
	}
}

struct list_arg {
	struct out *o;
	const uint8_t *after;
	size_t alen;
	uint32_t n, max;
	bool kv;		/* omap: key and value */
};

static int list_name(void *arg, const void *name, size_t nlen)
{
	struct list_arg *a = arg;
	size_t mark = a->o->len;

	if (a->after && nlen == a->alen && !memcmp(name, a->after, nlen))
		return 0;	/* start is inclusive in the library */
	out_bytes32(a->o, name, nlen);
	if (a->o->err) {	/* full: the client goes on after the last one */
		a->o->err = 0;
		a->o->len = mark;
		return 1;
	}
	return ++a->n >= a->max;
}

static int list_kv(void *arg, const void *key, size_t klen, const void *val, size_t vlen)
{
	struct list_arg *a = arg;
	size_t mark = a->o->len;

	if (a->kv)
		out_bytes32(a->o, key, klen);
	else
		out_str16(a->o, key, klen);
	out_bytes32(a->o, val, vlen);
	if (a->o->err && a->kv) {	/* omap: a page, the client goes on */
		a->o->err = 0;
		a->o->len = mark;
		return 1;
	}
	if (a->o->err)		/* attributes: all or -E2BIG */
		return 1;
	return ++a->n >= a->max;
}

static uint32_t clamp_max(uint32_t max)
{
	return max == 0 || max > 100000 ? 100000 : max;
}

static int do_list(struct conn *c, struct rsb_cur *cur, struct out *o)
{
	char coll[RAWSTORE_COLL_NAME_MAX + 1];
	struct list_arg a = { .o = o };
	int ret = rsb_str(cur, coll, sizeof(coll));
	uint8_t *count;

	a.after = rsb_bytes(cur, &a.alen);
	a.max = clamp_max(rsb_u32(cur));
	if (cur->err)
		return cur->err;
	if (ret)
		return ret;
	if (!a.alen)
		a.after = NULL;
	count = out_take(o, 4);
	ret = rawstore_list(c->s->st, coll, a.after, a.alen, 0, list_name, &a);
	if (ret < 0)
		return ret;
	rsb_put32(count, a.n);
	return 0;
}

static int do_getattr(struct conn *c, struct rsb_cur *cur, struct out *o)
{
	char attr[1024];
	struct target t;
	int ret = get_target(cur, &t), ret2 = rsb_str(cur, attr, sizeof(attr));
	ssize_t r;

	if (ret || (ret = ret2) || (ret = cur->err))
		return ret;
	r = rawstore_getattr(c->s->st, t.coll, t.name, t.nlen, attr, o->p, RSB_FRAME_MAX);
	if (r < 0)
		return (int)r;
	if ((size_t)r > RSB_FRAME_MAX)
		return -E2BIG;
	o->len = (size_t)r;
	return 0;
}

static int do_listattr(struct conn *c, struct rsb_cur *cur, struct out *o)
{
	struct list_arg a = { .o = o, .max = UINT32_MAX };
	struct target t;
	int ret = get_target(cur, &t);
	uint8_t *count;

	if (ret)
		return ret;
	count = out_take(o, 4);
	ret = rawstore_attr_iterate(c->s->st, t.coll, t.name, t.nlen, list_kv, &a);
	if (ret < 0)
		return ret;
	if (o->err)
		return o->err;
	rsb_put32(count, a.n);
	return 0;
}

static int do_omap_get(struct conn *c, struct rsb_cur *cur, struct out *o)
{
	struct target t;
	const uint8_t *key;
	size_t klen;
	int ret = get_target(cur, &t);
	ssize_t r;

	key = rsb_bytes(cur, &klen);
	if (ret || (ret = cur->err))
		return ret;
	r = rawstore_omap_get(c->s->st, t.coll, t.name, t.nlen, key, klen, o->p, RSB_FRAME_MAX);
	if (r < 0)
		return (int)r;
	if ((size_t)r > RSB_FRAME_MAX)
		return -E2BIG;
	o->len = (size_t)r;
	return 0;
}

static int do_omap_list(struct conn *c, struct rsb_cur *cur, struct out *o)
{
	struct list_arg a = { .o = o, .kv = true };
	struct target t;
	const uint8_t *start;
	size_t slen;
	int ret = get_target(cur, &t);
	uint8_t *count;

	start = rsb_bytes(cur, &slen);
	a.max = clamp_max(rsb_u32(cur));
	if (ret || (ret = cur->err))
		return ret;
	count = out_take(o, 4);
	ret = rawstore_omap_iterate(c->s->st, t.coll, t.name, t.nlen, slen ? start : NULL, slen,
				    list_kv, &a);
	if (ret < 0)
		return ret;
	rsb_put32(count, a.n);
	return 0;
}

static int coll_name(void *arg, const void *name, size_t nlen)
{
	struct out *o = arg;

	out_str16(o, name, nlen);
	return o->err != 0;
}

static int do_coll_list(struct conn *c, struct out *o)
{
	struct list_arg a = { .o = o };
	uint8_t *count = out_take(o, 4);
	int ret = rawstore_coll_list(c->s->st, coll_name, o);

	if (ret < 0)
		return ret;
	if (o->err)
		return o->err;
	a.n = (uint32_t)ret;
	rsb_put32(count, a.n);
	return 0;
}

/* ---- transactions ---- */

/*
 * What one TXN record needs besides its fields: @berr is the first
 * builder error (-EINVAL bad name, -EFBIG too much data, ...): from then
 * on records are only decoded, and streamed data only read, so that the
 * stream stays in step and the reply names the record that failed.
 */
struct txn_ctx {
	struct conn *c;
	struct rawstore_txn *t;
	uint64_t data;		/* write bytes so far (saturating) */
	int berr;
	bool scan;		/* first pass: only decode and count data */
};

static void add_data(struct txn_ctx *x, uint64_t n)
{
	x->data = n > UINT64_MAX - x->data ? UINT64_MAX : x->data + n;
}

/* Reserve @n bytes of the budget; one reservation may take it all. */
static uint64_t budget_get(uint64_t n)
{
	if (n > budget_max)
		n = budget_max;
	pthread_mutex_lock(&budget_lock);
	while (budget_used && n > budget_max - budget_used)
		pthread_cond_wait(&budget_freed, &budget_lock);
	budget_used += n;
	pthread_mutex_unlock(&budget_lock);
	return n;
}

static void budget_put(uint64_t n)
{
	pthread_mutex_lock(&budget_lock);
	budget_used -= n;
	pthread_cond_broadcast(&budget_freed);
	pthread_mutex_unlock(&budget_lock);
}

/* Read the WRITE_CHUNK frames of a WRITE_STREAM record of @len bytes. */
static int txn_stream(struct txn_ctx *x, const struct target *tg, uint64_t off, uint64_t len)
{
	struct conn *c = x->c;
	struct rsb_hdr ch;
	int ret;

	add_data(x, len);
	if (x->data > RSB_TXN_DATA_MAX && !x->berr)
		x->berr = -EFBIG;
	if (!len && !x->berr)
		x->berr = rawstore_txn_touch(x->t, tg->coll, tg->name, tg->nlen);
	while (len) {
		ret = read_frame(c, &ch, c->chunk, false);
		if (ret)
			return ret;
		if (ch.op != RSB_OP_WRITE_CHUNK || !ch.len || ch.len > len)
			return -EPROTO;
		if (!x->berr)
			x->berr = rawstore_txn_write(x->t, tg->coll, tg->name, tg->nlen, off,
						     c->chunk, ch.len);
		off += ch.len;
		len -= ch.len;
	}
	return 0;
}

/* Records of a (coll, name) and what follows; 0 or a fatal -errno. */
static int txn_object_op(struct txn_ctx *x, uint8_t type, struct rsb_cur *cur)
{
	char attr[1024], dcoll[RAWSTORE_COLL_NAME_MAX + 1];
	struct rawstore_txn *t = x->t;
	const uint8_t *k = NULL, *v = NULL;
	size_t klen = 0, vlen = 0;
	uint64_t a = 0, b = 0;
	struct target tg;
	int ret = get_target(cur, &tg), ret2 = 0;

	switch (type) {
	case RSB_T_WRITE:
		a = rsb_u64(cur);
		v = rsb_bytes(cur, &vlen);
		break;
	case RSB_T_WRITE_STREAM:
		a = rsb_u64(cur);
		b = rsb_u64(cur);
		break;
	case RSB_T_TRUNCATE:
		a = rsb_u64(cur);
		break;
	case RSB_T_SETATTR:
		ret2 = rsb_str(cur, attr, sizeof(attr));
		v = rsb_bytes(cur, &vlen);
		break;
	case RSB_T_RMATTR:
		ret2 = rsb_str(cur, attr, sizeof(attr));
		break;
	case RSB_T_OMAP_SET:
		k = rsb_bytes(cur, &klen);
		v = rsb_bytes(cur, &vlen);
		break;
	case RSB_T_OMAP_RM:
		k = rsb_bytes(cur, &klen);
		break;
	case RSB_T_RENAME:
		ret2 = rsb_str(cur, dcoll, sizeof(dcoll));
		k = rsb_bytes(cur, &klen);
		break;
	}
	if (cur->err)
		return cur->err;
	if (x->scan) {
		add_data(x, type == RSB_T_WRITE ? vlen : type == RSB_T_WRITE_STREAM ? b : 0);
		return 0;
	}
	if (!x->berr)
		x->berr = ret ?: ret2;
	if (type == RSB_T_WRITE_STREAM)
		return txn_stream(x, &tg, a, b);
	if (x->berr)
		return 0;
	switch (type) {
	case RSB_T_TOUCH:
		ret = rawstore_txn_touch(t, tg.coll, tg.name, tg.nlen);
		break;
	case RSB_T_WRITE:
		add_data(x, vlen);
		ret = x->data > RSB_TXN_DATA_MAX ? -EFBIG :
		      rawstore_txn_write(t, tg.coll, tg.name, tg.nlen, a, v, vlen);
		break;
	case RSB_T_TRUNCATE:
		ret = rawstore_txn_truncate(t, tg.coll, tg.name, tg.nlen, a);
		break;
	case RSB_T_REMOVE:
		ret = rawstore_txn_remove(t, tg.coll, tg.name, tg.nlen);
		break;
	case RSB_T_SETATTR:
		ret = rawstore_txn_setattr(t, tg.coll, tg.name, tg.nlen, attr, v, vlen);
		break;
	case RSB_T_RMATTR:
		ret = rawstore_txn_rmattr(t, tg.coll, tg.name, tg.nlen, attr);
		break;
	case RSB_T_OMAP_SET:
		ret = rawstore_txn_omap_set(t, tg.coll, tg.name, tg.nlen, k, klen, v, vlen);
		break;
	case RSB_T_OMAP_RM:
		ret = rawstore_txn_omap_rm(t, tg.coll, tg.name, tg.nlen, k, klen);
		break;
	case RSB_T_RENAME:
		ret = rawstore_txn_rename(t, tg.coll, tg.name, tg.nlen, dcoll, k, klen);
		break;
	}
	x->berr = ret;
	return 0;
}

/* One record; 0 (builder errors in x->berr) or a fatal -errno. */
static int txn_record(struct txn_ctx *x, struct rsb_cur *cur)
{
	char coll[RAWSTORE_COLL_NAME_MAX + 1];
	uint8_t type = rsb_u8(cur);
	int ret;

	switch (type) {
	case RSB_T_COLL_CREATE:
	case RSB_T_COLL_REMOVE:
		ret = rsb_str(cur, coll, sizeof(coll));
		if (cur->err)
			return cur->err;
		if (x->scan || x->berr)
			return 0;
		if (!ret)
			ret = type == RSB_T_COLL_CREATE ? rawstore_txn_coll_create(x->t, coll) :
			      rawstore_txn_coll_remove(x->t, coll);
		x->berr = ret;
		return 0;
	case RSB_T_TOUCH:
	case RSB_T_WRITE:
	case RSB_T_WRITE_STREAM:
	case RSB_T_TRUNCATE:
	case RSB_T_REMOVE:
	case RSB_T_SETATTR:
	case RSB_T_RMATTR:
	case RSB_T_OMAP_SET:
	case RSB_T_OMAP_RM:
	case RSB_T_RENAME:
		return txn_object_op(x, type, cur);
	default:
		/* an unknown record's length is unknown: out of step */
		return cur->err ?: -EPROTO;
	}
}

/* First pass: decode every record, count the write data it declares. */
static int txn_scan(struct conn *c, struct rsb_cur cur, uint32_t nops, uint64_t *data)
{
	struct txn_ctx x = { .c = c, .scan = true };
	uint32_t i;
	int ret;

	for (i = 0; i < nops; i++) {
		ret = txn_record(&x, &cur);
		if (ret)
			return ret;
	}
	/*
	 * Over the limit: refused before any chunk is read.  Staying in step
	 * would mean reading (and dropping) all the data the records
	 * declare, as much as 2^64 bytes: the connection is closed instead.
	 */
	if (x.data > RSB_TXN_DATA_MAX)
		return -EFBIG;
	*data = x.data;
	return 0;
}

/* Build the records into @x->t; the failed record's index, or none. */
static int txn_build(struct txn_ctx *x, struct rsb_cur *cur, uint32_t nops, uint32_t *start,
		     uint32_t *failed)
{
	uint32_t i;
	int ret;

	for (i = 0; i < nops; i++) {
		int before = x->berr;

		start[i] = rawstore_txn_count(x->t);
		ret = txn_record(x, cur);
		if (ret)
			return ret;
		if (x->berr && !before)
			*failed = i;
	}
	if (cur->left && !x->berr) {	/* trailing bytes: a client bug */
		x->berr = -EPROTO;
		*failed = RSB_NO_FAILED_OP;
	}
	return 0;
}

/* Submit; the library's failed op index mapped back to a record's. */
static int txn_submit(struct txn_ctx *x, uint32_t nops, const uint32_t *start, uint32_t *failed)
{
	int k, ret = rawstore_submit(x->c->s->st, x->t);
	uint32_t i;

	if (!ret)
		return 0;
	k = rawstore_txn_failed_op(x->t);
	/* a streamed record is several library ops */
	for (i = nops; k >= 0 && i-- > 0;)
		if (start[i] <= (uint32_t)k) {
			*failed = i;
			break;
		}
	return ret;
}

/*
 * Build the records into one rawstore transaction and submit it.  The
 * reply's result is the builder's or the submit's error, its payload the
 * index of the record that failed.  Returns 0, or a fatal -errno after
 * which the connection is closed (its reply already sent if possible).
 */
static int do_txn(struct conn *c, const struct rsb_hdr *h, struct rsb_cur *cur)
{
	struct txn_ctx x = { .c = c };
	uint32_t nops, *start = NULL, failed = RSB_NO_FAILED_OP;
	uint64_t data = 0, reserved;
	struct out o;
	int ret;

	nops = rsb_u32(cur);
	ret = cur->err || nops > RSB_TXN_OPS_MAX ? -EPROTO : txn_scan(c, *cur, nops, &data);
	if (ret)
		goto out_reply;
	start = malloc((nops + 1) * sizeof(*start));
	ret = start ? rawstore_txn_new(&x.t) : -ENOMEM;
	if (ret)	/* unread WRITE_CHUNK frames may follow: out of step */
		goto out_free_start;
	reserved = budget_get(data);
	ret = txn_build(&x, cur, nops, start, &failed);
	if (ret)
		goto out_put_budget;
	ret = x.berr;
	if (!ret && nops)
		ret = txn_submit(&x, nops, start, &failed);
	rawstore_txn_free(x.t);
	budget_put(reserved);
	free(start);
	out_init(&o, c);
	out_u32(&o, failed);
	return reply(c, h, ret, 0, o.len);

out_put_budget:
	rawstore_txn_free(x.t);
	budget_put(reserved);
out_free_start:
	free(start);
out_reply:
	out_init(&o, c);
	out_u32(&o, RSB_NO_FAILED_OP);
	reply(c, h, ret, 0, o.len);
	return ret;
}

/* ---- a connection ---- */

/* Answer one frame; 0 to go on, or -errno to close the connection. */
static int serve_frame(struct conn *c, const struct rsb_hdr *h)
{
	struct rsb_cur cur = { .p = c->in, .left = h->len };
	struct out o;
	int ret;

	out_init(&o, c);
	if (h->op == RSB_OP_HELLO) {
		ret = do_hello(c, &cur, &o);
		if (reply(c, h, ret, 0, o.len) || ret)
			return ret ?: -EPIPE;
		return 0;
	}
	if (!c->version) {	/* HELLO first: the version of everything after */
		reply(c, h, -EPROTO, 0, 0);
		return -EPROTO;
	}
	if (h->version != c->version)
		return reply(c, h, -EPROTONOSUPPORT, 0, 0);
	switch (h->op) {
	case RSB_OP_READ:
		ret = do_read(c, h, &cur);
		return ret < 0 ? ret : 0;
	case RSB_OP_TXN:
		return do_txn(c, h, &cur);
	case RSB_OP_STATFS:
		ret = do_statfs(c, &o);
		break;
	case RSB_OP_STAT:
		ret = do_stat(c, &cur, &o);
		break;
	case RSB_OP_LIST:
		ret = do_list(c, &cur, &o);
		break;
	case RSB_OP_GETATTR:
		ret = do_getattr(c, &cur, &o);
		break;
	case RSB_OP_LISTATTR:
		ret = do_listattr(c, &cur, &o);
		break;
	case RSB_OP_OMAP_GET:
		ret = do_omap_get(c, &cur, &o);
		break;
	case RSB_OP_OMAP_LIST:
		ret = do_omap_list(c, &cur, &o);
		break;
	case RSB_OP_COLL_LIST:
		ret = do_coll_list(c, &o);
		break;
	default:
		/* the frame was read whole: the stream is still in step */
		ret = -EOPNOTSUPP;
		break;
	}
	if (!ret && o.err)
		ret = o.err;
	return reply(c, h, ret, 0, ret ? 0 : o.len);
}

static void conn_serve(struct conn *c)
{
	struct rsb_hdr h;
	int ret;

	for (;;) {
		ret = read_frame(c, &h, c->in, true);
		if (ret == -EPROTO || ret == -EMSGSIZE) {
			/* answer (the header's tag may be garbage), then close */
			reply(c, &h, ret, 0, 0);
			break;
		}
		if (ret || serve_frame(c, &h))
			break;
	}
}

static void *conn_thread(void *arg)
{
	struct conn *c = arg;
	unsigned int i;

	c->in = malloc(RSB_FRAME_MAX);
	c->out = malloc(RSB_HDR_SIZE + RSB_FRAME_MAX);
	c->chunk = malloc(RSB_FRAME_MAX);
	if (c->in && c->out && c->chunk)
		conn_serve(c);
	else
		logmsg("%s: out of memory for a connection", c->s->name);
	free(c->chunk);
	free(c->out);
	free(c->in);

	pthread_mutex_lock(&conn_lock);
	for (i = 0; i < max_clients; i++)
		if (conn_fds[i] == c->fd)
			conn_fds[i] = -1;
	nconns--;
	pthread_cond_broadcast(&conn_gone);
	pthread_mutex_unlock(&conn_lock);
	close(c->fd);
	free(c);
	return NULL;
}

/* Refuse a connection beyond --max-clients with one frame saying why. */
static void conn_refuse(int fd)
{
	uint8_t raw[RSB_HDR_SIZE];
	struct rsb_hdr h = {
		.magic = RSB_MAGIC, .version = RSB_VERSION_MAX,
		.op = RSB_OP_HELLO | RSB_REPLY, .result = -EUSERS,
	};

	rsb_hdr_encode(raw, &h);
	write_full(fd, raw, sizeof(raw));
	close(fd);
}

static void conn_start(struct store *s, int fd)
{
	pthread_attr_t attr;
	pthread_t tid;
	struct conn *c;
	unsigned int i;
	int ret;

	pthread_mutex_lock(&conn_lock);
	if (stopping || nconns >= max_clients) {
		pthread_mutex_unlock(&conn_lock);
		logmsg("%s: %u clients: refusing another", s->name, nconns);
		conn_refuse(fd);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto out_unlock;
	c->fd = fd;
	c->s = s;
	for (i = 0; i < max_clients; i++)
		if (conn_fds[i] < 0) {
			conn_fds[i] = fd;
			break;
		}
	nconns++;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&tid, &attr, conn_thread, c);
	pthread_attr_destroy(&attr);
	if (!ret) {
		pthread_mutex_unlock(&conn_lock);
		return;
	}
	logmsg("%s: cannot start a thread: %s", s->name, strerror(ret));
	conn_fds[i] = -1;
	nconns--;
	free(c);
out_unlock:
	pthread_mutex_unlock(&conn_lock);
	close(fd);
}

/* Wake every connection's thread (reads return 0) and wait for them. */
static void conns_stop(void)
{
	unsigned int i;

	pthread_mutex_lock(&conn_lock);
	stopping = true;
	for (i = 0; i < max_clients; i++)
		if (conn_fds[i] >= 0)
			shutdown(conn_fds[i], SHUT_RDWR);
	while (nconns)
		pthread_cond_wait(&conn_gone, &conn_lock);
	pthread_mutex_unlock(&conn_lock);
}

/* ---- sockets ---- */

static int sock_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

/*
 * A socket file left by a daemon that died is replaced; one that still
 * has a listener (another rawstored) or a file that is not a socket is
 * left alone: -EADDRINUSE, -EEXIST.
 */
static int sock_clear_stale(const struct sockaddr_un *sa)
{
	struct stat sb;
	int fd, ret;

	if (lstat(sa->sun_path, &sb))
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(sb.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	ret = connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) ? -errno : -EADDRINUSE;
	close(fd);
	if (ret != -ECONNREFUSED)
		return ret;
	if (unlink(sa->sun_path))
		return -errno;
	logmsg("%s: replaced a stale socket (nobody listened)", sa->sun_path);
	return 0;
}

static int sock_listen(struct store *s)
{
	struct sockaddr_un sa;
	mode_t old;
	int fd, ret;

	ret = sock_addr(s->sock, &sa);
	if (ret)
		return ret;
	ret = sock_clear_stale(&sa);
	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* no moment where the socket is more open than configured */
	old = umask(0777 & ~(s->mode & 0700));
	ret = bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old);
	if (ret)
		goto out_close;
	if (s->has_gid && chown(s->sock, (uid_t)-1, s->gid)) {
		ret = -errno;
		goto out_unlink;
	}
	if (chmod(s->sock, s->mode) || listen(fd, 128)) {
		ret = -errno;
		goto out_unlink;
	}
	s->lfd = fd;
	return 0;

out_unlink:
	unlink(s->sock);
out_close:
	close(fd);
	return ret;
}

/* ---- configuration ---- */

static struct store *store_add(const char *name)
{
	struct store *n = realloc(stores, (nstores + 1) * sizeof(*stores));

	if (!n)
		return NULL;
	stores = n;
	n = &stores[nstores++];
	memset(n, 0, sizeof(*n));
	n->name = strdup(name);
	n->mode = DEFAULT_MODE;
	n->lfd = -1;
	return n->name ? n : NULL;
}

static int parse_mode(const char *v, mode_t *mode)
{
	char *end;
	unsigned long m = strtoul(v, &end, 8);

	if (!*v || *end || m > 07777)
		return -EINVAL;
	*mode = (mode_t)m;
	return 0;
}

static int parse_group(const char *v, gid_t *gid)
{
	struct group *g = getgrnam(v);
	char *end;
	unsigned long n;

	if (g) {
		*gid = g->gr_gid;
		return 0;
	}
	n = strtoul(v, &end, 10);
	if (!*v || *end)
		return -ENOENT;
	*gid = (gid_t)n;
	return 0;
}

static int store_set(struct store *s, const char *key, const char *val)
{
	char **field = NULL;

	if (!strcmp(key, "dev"))
		field = &s->dev;
	else if (!strcmp(key, "meta"))
		field = &s->meta;
	else if (!strcmp(key, "socket"))
		field = &s->sock;
	else if (!strcmp(key, "mode"))
		return parse_mode(val, &s->mode);
	else if (!strcmp(key, "group")) {
		s->has_gid = true;
		return parse_group(val, &s->gid);
	} else
		return -EINVAL;
	free(*field);
	*field = strdup(val);
	return *field ? 0 : -ENOMEM;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && strchr(" \t\r\n", e[-1]))
		*--e = 0;
	return s;
}

/* [store NAME] sections of key = value lines; # and ; start comments. */
static int config_read(const char *path)
{
	struct store *s = NULL;
	char line[4096], *l, *eq;
	unsigned int ln = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		logmsg("%s: %s", path, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		ln++;
		l = trim(line);
		if (!*l || *l == '#' || *l == ';')
			continue;
		if (!strncmp(l, "[store ", 7) && l[strlen(l) - 1] == ']') {
			l[strlen(l) - 1] = 0;
			s = store_add(trim(l + 7));
			if (!s)
				goto out_bad;
			continue;
		}
		eq = strchr(l, '=');
		if (!s || !eq)
			goto out_bad;
		*eq = 0;
		if (store_set(s, trim(l), trim(eq + 1)))
			goto out_bad;
	}
	fclose(f);
	return 0;

out_bad:
	logmsg("%s:%u: bad line (want [store NAME] or dev|meta|socket|mode|group = VALUE)",
	       path, ln);
	fclose(f);
	return -EINVAL;
}

/* --store NAME:DEV:META:SOCKET */
static int store_arg(const char *arg, mode_t mode, const char *group)
{
	char *a = strdup(arg), *p[4], *save = NULL;
	struct store *s;
	int i, ret = -EINVAL;

	if (!a)
		return -ENOMEM;
	for (i = 0; i < 4; i++)
		if (!(p[i] = strtok_r(i ? NULL : a, ":", &save)))
			goto out_free;
	if (strtok_r(NULL, ":", &save))
		goto out_free;
	s = store_add(p[0]);
	ret = -ENOMEM;
	if (!s || store_set(s, "dev", p[1]) || store_set(s, "meta", p[2]) ||
	    store_set(s, "socket", p[3]))
		goto out_free;
	s->mode = mode;
	ret = group ? store_set(s, "group", group) : 0;
out_free:
	free(a);
	return ret;
}

/* ---- main ---- */

static const char usage_text[] =
	"usage: rawstored [options] (--config FILE | --store NAME:DEV:META:SOCKET ...)\n"
	"Serve rawstore devices to local processes over unix sockets.\n"
	"\n"
	"options:\n"
	"  -c, --config FILE       read [store NAME] sections (dev, meta, socket, mode, group)\n"
	"  -s, --store N:D:M:S     serve store N (device D, metadata M) on socket S\n"
	"  -m, --mode MODE         octal mode of --store sockets (default 0660)\n"
	"  -g, --group GROUP       group of --store sockets (name or number)\n"
	"  -n, --max-clients N     connections served at once (default 256)\n"
	"  -t, --io-timeout SECS   drop a client stopped mid-frame or mid-TXN (default 120)\n"
	"  -M, --max-txn-memory B  write data of TXNs being built, all clients (default 1G)\n"
	"  -b, --buffered          open the stores without O_DIRECT (regular files only)\n"
	"  -h, --help              this text\n"
	"  -V, --version           the library version\n";

static int usage(int status)
{
	fputs(usage_text, status ? stderr : stdout);
	return status;
}

static int stores_open(void)
{
	struct rawstore_open_opts oo;
	unsigned int i;
	int ret;

	rawstore_open_opts_init(&oo);
	oo.buffered = open_buffered;
	for (i = 0; i < nstores; i++) {
		struct store *s = &stores[i];

		ret = rawstore_open(s->dev, s->meta, &oo, &s->st);
		if (ret) {
			/* -EBUSY: another rawstored (or rawstore) has it */
			logmsg("%s: cannot open %s: %s (%s)", s->name, s->dev,
			       rawstore_strerror(ret), rawstore_errmsg());
			return ret;
		}
		ret = sock_listen(s);
		if (ret) {
			logmsg("%s: cannot listen on %s: %s", s->name, s->sock, strerror(-ret));
			return ret;
		}
		logmsg("%s: %s serving on %s", s->name, s->dev, s->sock);
	}
	return 0;
}

/* Close what stores_open() opened; 0, or the first close's error. */
static int stores_close(void)
{
	unsigned int i;
	int ret = 0, r;

	for (i = 0; i < nstores; i++) {
		struct store *s = &stores[i];

		if (s->lfd >= 0) {
			close(s->lfd);
			unlink(s->sock);
		}
		if (!s->st)
			continue;
		r = rawstore_close(s->st);
		if (r) {
			logmsg("%s: close: %s (%s)", s->name, rawstore_strerror(r),
			       rawstore_errmsg());
			ret = ret ?: r;
		}
	}
	return ret;
}

/* Accept connections until SIGTERM or SIGINT. */
static int serve(int sfd)
{
	struct pollfd *p = calloc(nstores + 1, sizeof(*p));
	struct signalfd_siginfo si;
	unsigned int i;

	if (!p)
		return -ENOMEM;
	p[0].fd = sfd;
	p[0].events = POLLIN;
	for (i = 0; i < nstores; i++) {
		p[i + 1].fd = stores[i].lfd;
		p[i + 1].events = POLLIN;
	}
	for (;;) {
		if (poll(p, nstores + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents) {
			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				logmsg("%s: closing the stores", strsignal((int)si.ssi_signo));
			break;
		}
		for (i = 0; i < nstores; i++) {
			int fd;

			if (!p[i + 1].revents)
				continue;
			fd = accept4(stores[i].lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0)
				conn_start(&stores[i], fd);
			else if (errno == EMFILE || errno == ENFILE)
				usleep(10000);	/* let connections end */
		}
	}
	free(p);
	return 0;
}

/* Bytes, with an optional k, m or g (powers of 1024). */
static int parse_size(const char *v, uint64_t *out)
{
	static const char units[] = "kKmMgG";
	unsigned int shift = 0;
	const char *u;
	char *end;
	unsigned long long n = strtoull(v, &end, 10);

	if (end == v)
		return -EINVAL;
	u = *end ? strchr(units, *end) : NULL;
	if (u) {
		shift = 10 * (1 + (unsigned int)(u - units) / 2);
		end++;
	}
	if (*end || !n || n > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)n << shift;
	return 0;
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "store", required_argument, NULL, 's' },
		{ "mode", required_argument, NULL, 'm' },
		{ "group", required_argument, NULL, 'g' },
		{ "max-clients", required_argument, NULL, 'n' },
		{ "io-timeout", required_argument, NULL, 't' },
		{ "max-txn-memory", required_argument, NULL, 'M' },
		{ "buffered", no_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 }
	};
	const char *config = NULL, *group = NULL;
	mode_t mode = DEFAULT_MODE;
	unsigned long n;
	char *end;
	int o, i;

	while ((o = getopt_long(argc, argv, "c:s:m:g:n:t:M:bhV", lo, NULL)) != -1) {
		switch (o) {
		case 'c':
			config = optarg;
			break;
		case 's':
			break;	/* after --mode and --group, below */
		case 'm':
			if (parse_mode(optarg, &mode))
				return usage(2);
			break;
		case 'g':
			group = optarg;
			break;
		case 'n':
			max_clients = (unsigned int)strtoul(optarg, &end, 10);
			if (!*optarg || *end || !max_clients || max_clients > 65536)
				return usage(2);
			break;
		case 't':
			n = strtoul(optarg, &end, 10);
			if (!*optarg || *end || !n || n > 86400)
				return usage(2);
			io_timeout_ms = (int)n * 1000;
			break;
		case 'M':
			if (parse_size(optarg, &budget_max))
				return usage(2);
			break;
		case 'b':
			open_buffered = 1;
			break;
		case 'h':
			exit(usage(0));
		case 'V':
			printf("rawstored %s\n", rawstore_version());
			exit(0);
		default:
			return usage(2);
		}
	}
	if (optind != argc)
		return usage(2);
	if (config && config_read(config))
		return 2;
	for (optind = 1; (o = getopt_long(argc, argv, "c:s:m:g:n:t:M:bhV", lo, NULL)) != -1;)
		if (o == 's' && store_arg(optarg, mode, group)) {
			logmsg("bad --store %s (want NAME:DEV:META:SOCKET, group known)", optarg);
			return 2;
		}
	if (!nstores)
		return usage(2);
	for (i = 0; i < (int)nstores; i++)
		if (!stores[i].dev || !stores[i].meta || !stores[i].sock) {
			logmsg("store %s: dev, meta and socket are all needed", stores[i].name);
			return 2;
		}
	return 0;
}

int main(int argc, char **argv)
{
	sigset_t set;
	int ret, sfd, i;

	ret = parse_args(argc, argv);
	if (ret)
		return ret;
	conn_fds = malloc(max_clients * sizeof(*conn_fds));
	if (!conn_fds)
		return 1;
	for (i = 0; i < (int)max_clients; i++)
		conn_fds[i] = -1;
	/*
	 * Blocked before any thread exists (the stores' own included), so
	 * that only the signalfd sees them and the main thread decides.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	sigdelset(&set, SIGPIPE);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		logmsg("signalfd: %s", strerror(errno));
		return 1;
	}
	ret = stores_open();
	if (!ret)
		ret = serve(sfd);
	conns_stop();
	if (stores_close() && !ret)
		ret = -EIO;
	close(sfd);
	if (!ret)
		logmsg("stores closed");
	return ret ? 1 : 0;
}
