// SPDX-License-Identifier: MIT
/* decode.c: validating decoders of the small RocksDB records. */
#include <errno.h>

#include "decode.h"
#include "ondisk.h"
#include "util.h"

bool decode_range_ok(const struct rs_limits *lim, uint64_t off, uint64_t len)
{
	return len && is_aligned(off | len, lim->min_alloc) && off >= lim->data_start &&
	       off <= lim->data_end && len <= lim->data_end - off;
}

static const char *ext_name(char type)
{
	return type == 'F' ? "free-list" : type == 'P' ? "unpunched-list" : "extent";
}

int decode_ext_rec(char type, const void *key, size_t klen, const void *val, size_t vlen,
		   const struct rs_limits *lim, struct rs_ext_rec *out)
{
	if (klen != 8 || vlen != 8)
		return rs_err(NULL, -EUCLEAN, "%s record has a %zu-byte key and a %zu-byte "
			      "value (want 8 and 8)", ext_name(type), klen, vlen);
	out->off = get_be64(key);
	out->len = get_le64(val);
	if (!decode_range_ok(lim, out->off, out->len))
		return rs_err(NULL, -EUCLEAN, "%s record [%llu, +%llu) is empty, not aligned "
			      "to the %u-byte unit or outside the data area [%llu, %llu)",
			      ext_name(type), (unsigned long long)out->off,
			      (unsigned long long)out->len, lim->min_alloc,
			      (unsigned long long)lim->data_start,
			      (unsigned long long)lim->data_end);
	return 0;
}

int decode_deferred_rec(const void *key, size_t klen, const void *val, size_t vlen,
			const struct rs_limits *lim, struct rs_deferred_rec *out)
{
	struct rs_disk_deferred h;

	if (klen != 8 || vlen < sizeof(h))
		return rs_err(NULL, -EUCLEAN, "deferred-write record has a %zu-byte key and "
			      "a %zu-byte value (want 8 and at least %zu)", klen, vlen,
			      sizeof(h));
	memcpy(&h, val, sizeof(h));
	out->seq = get_be64(key);
	out->pofs = le64toh(h.pofs);
	out->len = le32toh(h.len);
	out->data = (const char *)val + sizeof(h);
	if (h.reserved || vlen - sizeof(h) != out->len)
		return rs_err(NULL, -EUCLEAN, "deferred-write record %llu: %zu data bytes for "
			      "a length of %u, or reserved bits set",
			      (unsigned long long)out->seq, vlen - sizeof(h), out->len);
	if (!decode_range_ok(lim, out->pofs, out->len))
		return rs_err(NULL, -EUCLEAN, "deferred-write record %llu targets [%llu, +%u), "
			      "empty, not aligned to the %u-byte unit or outside the data area",
			      (unsigned long long)out->seq, (unsigned long long)out->pofs,
			      out->len, lim->min_alloc);
	return 0;
}

int decode_ref_rec(const void *key, size_t klen, const void *val, size_t vlen,
		   const struct rs_limits *lim, struct rs_ref_rec *out)
{
	if (klen != 8 || vlen != 4)
		return rs_err(NULL, -EUCLEAN, "reference record has a %zu-byte key and a "
			      "%zu-byte value (want 8 and 4)", klen, vlen);
	out->off = get_be64(key);
	out->extra = get_le32(val);
	if (!out->extra || !decode_range_ok(lim, out->off, lim->min_alloc))
		return rs_err(NULL, -EUCLEAN, "reference record of unit %llu: %u extra users, "
			      "or the unit is not aligned or outside the data area",
			      (unsigned long long)out->off, out->extra);
	return 0;
}

int decode_counts_rec(const void *val, size_t vlen, struct rs_counts_rec *out)
{
	struct rs_disk_counts c;

	if (vlen != sizeof(c))
		return rs_err(NULL, -EUCLEAN, "counts record has %zu bytes (want %zu)", vlen,
			      sizeof(c));
	memcpy(&c, val, sizeof(c));
	out->objects = le64toh(c.objects);
	out->collections = le64toh(c.collections);
	return 0;
}
