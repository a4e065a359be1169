/* SPDX-License-Identifier: MIT */
/*
 * broker/proto.h: the wire protocol of rawstored (docs/swift.md, "The
 * protocol").  Shared by the daemon and the test client, so it is plain
 * C that also compiles as C++.
 *
 * Every message is a frame: a 24-byte header, then @len payload bytes.
 * All integers are little-endian and fixed-width, whatever the host; the
 * header is encoded and decoded field by field (rsb_hdr_encode/decode),
 * never by casting a buffer, so padding and byte order cannot leak onto
 * the wire.  Payload fields are:
 *   u8 / u16 / u32 / u64      little-endian integers
 *   str16                     u16 length, then bytes (collection and
 *                             attribute names: no NUL byte inside)
 *   bytes32                   u32 length, then bytes (object names, omap
 *                             keys, values, data: any byte, \0 included)
 * A reply carries the request's op with RSB_REPLY set, its tag, and a
 * result: 0 (or a count of bytes, READ) on success, -errno on failure.
 */
#ifndef RAWSTORE_BROKER_PROTO_H
#define RAWSTORE_BROKER_PROTO_H

#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
#define RSB_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define RSB_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

#define RSB_MAGIC		0x31425352u	/* "RSB1" read as little-endian */
#define RSB_VERSION_MIN		1
#define RSB_VERSION_MAX		1
#define RSB_HDR_SIZE		24
/* Largest payload of one frame; bigger reads and writes are streamed. */
#define RSB_FRAME_MAX		(1u << 20)
/* Data of one READ or WRITE_CHUNK frame at most. */
#define RSB_CHUNK		(1u << 20)
/* Write data of one TXN at most, inline and streamed (the transaction is
 * built in the daemon's memory before it is submitted). */
#define RSB_TXN_DATA_MAX	(256ULL << 20)
/* Op records of one TXN at most. */
#define RSB_TXN_OPS_MAX		4096u

/* header flags */
#define RSB_F_MORE		0x1u	/* more reply frames follow (READ) */

#define RSB_REPLY		0x8000u

enum rsb_op {
	RSB_OP_HELLO = 1,	/* u16 min, u16 max -> u16 version, u32 frame_max,
				 * u64 txn_data_max */
	RSB_OP_STATFS = 2,	/* -> 10 x u64 (docs/swift.md) */
	RSB_OP_STAT = 3,	/* str16 coll, bytes32 name -> 5 x u64 */
	RSB_OP_READ = 4,	/* str16 coll, bytes32 name, u64 off, u64 len ->
				 * data frames, RSB_F_MORE on all but the last */
	RSB_OP_LIST = 5,	/* str16 coll, bytes32 after, u32 max ->
				 * u32 n, n x bytes32 */
	RSB_OP_GETATTR = 6,	/* str16 coll, bytes32 name, str16 attr -> value */
	RSB_OP_LISTATTR = 7,	/* str16 coll, bytes32 name -> u32 n,
				 * n x (str16 attr, bytes32 value) */
	RSB_OP_OMAP_GET = 8,	/* str16 coll, bytes32 name, bytes32 key -> value */
	RSB_OP_OMAP_LIST = 9,	/* str16 coll, bytes32 name, bytes32 start, u32 max
				 * -> u32 n, n x (bytes32 key, bytes32 value) */
	RSB_OP_COLL_LIST = 10,	/* -> u32 n, n x str16 */
	RSB_OP_TXN = 11,	/* u32 nops, nops x record -> u32 failed_op
				 * (0xffffffff: none) */
	RSB_OP_WRITE_CHUNK = 12,	/* data of a TXN's WRITE_STREAM records */
};

/* The records of a TXN; each starts with its u8 type. */
enum rsb_txn_op {
	RSB_T_COLL_CREATE = 1,	/* str16 coll */
	RSB_T_COLL_REMOVE = 2,	/* str16 coll */
	RSB_T_TOUCH = 3,	/* str16 coll, bytes32 name */
	RSB_T_WRITE = 4,	/* str16 coll, bytes32 name, u64 off, bytes32 data */
	RSB_T_WRITE_STREAM = 5,	/* str16 coll, bytes32 name, u64 off, u64 len;
				 * the data follows the TXN frame in
				 * WRITE_CHUNK frames, record by record */
	RSB_T_TRUNCATE = 6,	/* str16 coll, bytes32 name, u64 size */
	RSB_T_REMOVE = 7,	/* str16 coll, bytes32 name */
	RSB_T_SETATTR = 8,	/* str16 coll, bytes32 name, str16 attr, bytes32 val */
	RSB_T_RMATTR = 9,	/* str16 coll, bytes32 name, str16 attr */
	RSB_T_OMAP_SET = 10,	/* str16 coll, bytes32 name, bytes32 key, bytes32 val */
	RSB_T_OMAP_RM = 11,	/* str16 coll, bytes32 name, bytes32 key */
	RSB_T_RENAME = 12,	/* str16 coll, bytes32 name, str16 dcoll,
				 * bytes32 dname */
};

#define RSB_NO_FAILED_OP	0xffffffffu

struct rsb_hdr {
	uint32_t magic;		/* RSB_MAGIC */
	uint16_t version;	/* the negotiated version (HELLO: the client's max) */
	uint16_t op;		/* enum rsb_op, | RSB_REPLY in replies */
	uint32_t len;		/* payload bytes, <= RSB_FRAME_MAX */
	uint32_t tag;		/* the client's, echoed in the reply */
	int32_t result;		/* replies: 0 / count, or -errno; requests: 0 */
	uint32_t flags;		/* RSB_F_* */
};
RSB_STATIC_ASSERT(sizeof(struct rsb_hdr) == RSB_HDR_SIZE, "rsb_hdr is 24 bytes on the wire");

static inline void rsb_put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static inline void rsb_put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void rsb_put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static inline uint16_t rsb_get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static inline uint32_t rsb_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint64_t rsb_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static inline void rsb_hdr_encode(uint8_t *p, const struct rsb_hdr *h)
{
	rsb_put32(p, h->magic);
	rsb_put16(p + 4, h->version);
	rsb_put16(p + 6, h->op);
	rsb_put32(p + 8, h->len);
	rsb_put32(p + 12, h->tag);
	rsb_put32(p + 16, (uint32_t)h->result);
	rsb_put32(p + 20, h->flags);
}

static inline void rsb_hdr_decode(const uint8_t *p, struct rsb_hdr *h)
{
	h->magic = rsb_get32(p);
	h->version = rsb_get16(p + 4);
	h->op = rsb_get16(p + 6);
	h->len = rsb_get32(p + 8);
	h->tag = rsb_get32(p + 12);
	h->result = (int32_t)rsb_get32(p + 16);
	h->flags = rsb_get32(p + 20);
}

/*
 * A bounds-checked reader over a payload.  Every get sets @err (-EPROTO)
 * instead of reading past the end, and later gets return zeros, so a
 * decoder checks once at the end: a short or lying frame cannot make it
 * read out of bounds.
 */
struct rsb_cur {
	const uint8_t *p;
	size_t left;
	int err;
};

static inline const uint8_t *rsb_take(struct rsb_cur *c, size_t n)
{
	const uint8_t *p = c->p;

	if (c->err || n > c->left) {
		c->err = -EPROTO;
		return NULL;
	}
	c->p += n;
	c->left -= n;
	return p;
}

static inline uint8_t rsb_u8(struct rsb_cur *c)
{
	const uint8_t *p = rsb_take(c, 1);

	return p ? *p : 0;
}

static inline uint16_t rsb_u16(struct rsb_cur *c)
{
	const uint8_t *p = rsb_take(c, 2);

	return p ? rsb_get16(p) : 0;
}

static inline uint32_t rsb_u32(struct rsb_cur *c)
{
	const uint8_t *p = rsb_take(c, 4);

	return p ? rsb_get32(p) : 0;
}

static inline uint64_t rsb_u64(struct rsb_cur *c)
{
	const uint8_t *p = rsb_take(c, 8);

	return p ? rsb_get64(p) : 0;
}

/* A bytes32 field: its start (NULL on error) and length in *@len. */
static inline const uint8_t *rsb_bytes(struct rsb_cur *c, size_t *len)
{
	size_t n = rsb_u32(c);
	const uint8_t *p = rsb_take(c, n);

	*len = p ? n : 0;
	return p;
}

/*
 * A str16 field copied into @buf (@size bytes, NUL-terminated): -EINVAL
 * if it is empty, too long or holds a NUL, since the library's collection
 * and attribute names are C strings.
 */
static inline int rsb_str(struct rsb_cur *c, char *buf, size_t size)
{
	size_t n = rsb_u16(c);
	const uint8_t *p = rsb_take(c, n);

	buf[0] = 0;
	if (!p)
		return c->err;
	if (n == 0 || n >= size || memchr(p, 0, n))
		return -EINVAL;
	memcpy(buf, p, n);
	buf[n] = 0;
	return 0;
}

#endif /* RAWSTORE_BROKER_PROTO_H */
