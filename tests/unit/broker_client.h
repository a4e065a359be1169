/*
 * A tiny client of rawstored's protocol (store/broker/proto.h), in C so
 * that it is also the sketch of the one the Swift backend will carry:
 * connect, HELLO, build a payload, send a frame, read the reply frames.
 * Every call returns 0 or -errno; a reply's own result is separate.
 */
#ifndef RAWSTORE_BROKER_CLIENT_H
#define RAWSTORE_BROKER_CLIENT_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "broker/proto.h"

/* A growing payload. */
struct rsbc_buf {
	uint8_t *p;
	size_t len, cap;
};

static inline uint8_t *rsbc_grow(struct rsbc_buf *b, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *p;

		while (cap < b->len + n)
			cap *= 2;
		p = (uint8_t *)realloc(b->p, cap);
		if (!p)
			abort();
		b->p = p;
		b->cap = cap;
	}
	b->len += n;
	return b->p + b->len - n;
}

static inline void rsbc_u8(struct rsbc_buf *b, uint8_t v)
{
	*rsbc_grow(b, 1) = v;
}

static inline void rsbc_u16(struct rsbc_buf *b, uint16_t v)
{
	rsb_put16(rsbc_grow(b, 2), v);
}

static inline void rsbc_u32(struct rsbc_buf *b, uint32_t v)
{
	rsb_put32(rsbc_grow(b, 4), v);
}

static inline void rsbc_u64(struct rsbc_buf *b, uint64_t v)
{
	rsb_put64(rsbc_grow(b, 8), v);
}

static inline void rsbc_str16(struct rsbc_buf *b, const char *s)
{
	size_t n = strlen(s);

	rsbc_u16(b, (uint16_t)n);
	memcpy(rsbc_grow(b, n), s, n);
}

static inline void rsbc_bytes32(struct rsbc_buf *b, const void *p, size_t n)
{
	rsbc_u32(b, (uint32_t)n);
	if (n)
		memcpy(rsbc_grow(b, n), p, n);
}

static inline void rsbc_free(struct rsbc_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static inline int rsbc_write(int fd, const void *buf, size_t n)
{
	const uint8_t *p = (const uint8_t *)buf;

	while (n) {
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

static inline int rsbc_readn(int fd, void *buf, size_t n)
{
	uint8_t *p = (uint8_t *)buf;

	while (n) {
		ssize_t r = read(fd, p, n);

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

/* Connect to the socket at @path: the descriptor or -errno. */
static inline int rsbc_connect(const char *path)
{
	struct sockaddr_un sa;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = -errno;

		close(fd);
		return e;
	}
	return fd;
}

static inline int rsbc_send(int fd, uint16_t op, uint16_t version, uint32_t tag, uint32_t flags,
			    const void *p, size_t len)
{
	uint8_t raw[RSB_HDR_SIZE];
	struct rsb_hdr h = {};
	int ret;

	h.magic = RSB_MAGIC;
	h.version = version;
	h.op = op;
	h.len = (uint32_t)len;
	h.tag = tag;
	h.result = 0;
	h.flags = flags;
	rsb_hdr_encode(raw, &h);
	ret = rsbc_write(fd, raw, sizeof(raw));
	return ret ? ret : rsbc_write(fd, p, len);
}

/* Read one reply frame; its payload is appended to @out (may be NULL). */
static inline int rsbc_recv(int fd, struct rsb_hdr *h, struct rsbc_buf *out)
{
	uint8_t raw[RSB_HDR_SIZE];
	struct rsbc_buf junk = { NULL, 0, 0 };
	int ret = rsbc_readn(fd, raw, sizeof(raw));

	if (ret)
		return ret;
	rsb_hdr_decode(raw, h);
	if (h->magic != RSB_MAGIC || h->len > RSB_FRAME_MAX)
		return -EPROTO;
	if (!out)
		out = &junk;
	ret = rsbc_readn(fd, rsbc_grow(out, h->len), h->len);
	rsbc_free(&junk);
	return ret;
}

/* HELLO offering versions [@lo, @hi]: the reply's result, or -errno. */
static inline int rsbc_hello(int fd, uint16_t lo, uint16_t hi, uint16_t *version)
{
	struct rsbc_buf b = { NULL, 0, 0 }, r = { NULL, 0, 0 };
	struct rsb_hdr h = {};
	int ret;

	rsbc_u16(&b, lo);
	rsbc_u16(&b, hi);
	ret = rsbc_send(fd, RSB_OP_HELLO, hi, 1, 0, b.p, b.len);
	if (!ret)
		ret = rsbc_recv(fd, &h, &r);
	if (!ret) {
		ret = h.result;
		if (version && r.len >= 2)
			*version = rsb_get16(r.p);
	}
	rsbc_free(&b);
	rsbc_free(&r);
	return ret;
}

/*
 * One request, one reply (every op but READ): the reply's result in
 * *@result, its payload in @out.
 */
static inline int rsbc_call(int fd, uint16_t op, const struct rsbc_buf *req, int *result,
			    struct rsbc_buf *out)
{
	struct rsb_hdr h = {};
	int ret = rsbc_send(fd, op, RSB_VERSION_MAX, 7, 0, req ? req->p : NULL,
			    req ? req->len : 0);

	if (!ret)
		ret = rsbc_recv(fd, &h, out);
	if (!ret && h.op != (op | RSB_REPLY))
		ret = -EPROTO;
	if (!ret)
		*result = h.result;
	return ret;
}

/* READ: the frames' data appended to @out; *@result the error, or 0. */
static inline int rsbc_read(int fd, const char *coll, const void *name, size_t nlen,
			    uint64_t off, uint64_t len, int *result, struct rsbc_buf *out)
{
	struct rsbc_buf b = { NULL, 0, 0 };
	struct rsb_hdr h = {};
	int ret;

	rsbc_str16(&b, coll);
	rsbc_bytes32(&b, name, nlen);
	rsbc_u64(&b, off);
	rsbc_u64(&b, len);
	ret = rsbc_send(fd, RSB_OP_READ, RSB_VERSION_MAX, 9, 0, b.p, b.len);
	rsbc_free(&b);
	do {
		if (!ret)
			ret = rsbc_recv(fd, &h, out);
	} while (!ret && h.result >= 0 && (h.flags & RSB_F_MORE));
	if (!ret)
		*result = h.result < 0 ? h.result : 0;
	return ret;
}

#endif /* RAWSTORE_BROKER_CLIENT_H */
