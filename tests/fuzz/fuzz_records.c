// SPDX-License-Identifier: MIT
/*
 * fuzz_records: the validating decoders of the small RocksDB records
 * (store/decode.c) on arbitrary keys and values: the free ('F') and
 * unpunched ('P') extents, deferred writes ('D'), reference records ('R')
 * and the counts ('K'). Each must return 0 or -EUCLEAN with a message,
 * never read outside the key and value it was given, and what it accepts
 * must hold (checked here without wrap-around): ranges non-empty, unit
 * aligned and inside the data area, a deferred write's data exactly the
 * rest of its value, a reference with at least one extra user.
 *
 * Input: control byte, key length byte, key, value (the rest).
 *   control bits 0-2  record: F, P, D, R, K (others: F)
 *   control bit 3     allocation unit 64 KiB instead of 4 KiB
 * The data area is [1 MiB, 1 GiB).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rawstore/rawstore.h"
#include "decode.h"

static void must(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz_records: accepted a record that %s\n", what);
		abort();
	}
}

static void range_ok(const struct rs_limits *lim, uint64_t off, uint64_t len, const char *what)
{
	must(len && off % lim->min_alloc == 0 && len % lim->min_alloc == 0, what);
	must(off >= lim->data_start &&
	     (unsigned __int128)off + len <= (unsigned __int128)lim->data_end, what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char types[] = "FPDRK";
	struct rs_limits lim = { 1u << 20, 1u << 30, 4096, 4096 };
	size_t klen, vlen;
	char *key, *val;
	int type, ret;

	if (size < 2)
		return 0;
	type = data[0] & 7;
	if (type > 4)
		type = 0;
	if (data[0] & 8)
		lim.min_alloc = 65536;
	klen = data[1];
	if (klen > size - 2)
		klen = size - 2;
	vlen = size - 2 - klen;
	/* Exact-size copies, so ASan sees any read past either. */
	key = malloc(klen ? klen : 1);
	val = malloc(vlen ? vlen : 1);
	if (!key || !val)
		goto out;
	memcpy(key, data + 2, klen);
	memcpy(val, data + 2 + klen, vlen);

	switch (types[type]) {
	case 'F':
	case 'P': {
		struct rs_ext_rec r;

		ret = decode_ext_rec(types[type], key, klen, val, vlen, &lim, &r);
		if (!ret)
			range_ok(&lim, r.off, r.len, "has a bad extent");
		break;
	}
	case 'D': {
		struct rs_deferred_rec r;

		ret = decode_deferred_rec(key, klen, val, vlen, &lim, &r);
		if (!ret) {
			range_ok(&lim, r.pofs, r.len, "defers a write to a bad range");
			must((const char *)r.data >= val &&
			     (const char *)r.data + r.len == val + vlen,
			     "has data that is not exactly the rest of its value");
			/* Touch every byte the caller would write to the device. */
			volatile uint8_t sum = 0;
			for (uint32_t i = 0; i < r.len; i++)
				sum ^= ((const uint8_t *)r.data)[i];
			(void)sum;
		}
		break;
	}
	case 'R': {
		struct rs_ref_rec r;

		ret = decode_ref_rec(key, klen, val, vlen, &lim, &r);
		if (!ret) {
			range_ok(&lim, r.off, lim.min_alloc, "references a bad unit");
			must(r.extra >= 1, "has no extra user");
		}
		break;
	}
	default: {
		struct rs_counts_rec r;

		ret = decode_counts_rec(val, vlen, &r);
		break;
	}
	}
	if (ret && (ret != -EUCLEAN || !*rawstore_errmsg())) {
		fprintf(stderr, "fuzz_records: %c record gave %d (%s)\n", types[type], ret,
			rawstore_errmsg());
		abort();
	}
out:
	free(key);
	free(val);
	return 0;
}
