// SPDX-License-Identifier: MIT
/*
 * dump.c: rawstore_records_get, the metadata summary behind `rawstore dump`:
 * how many records of each kind the store holds and the bytes the extent
 * records cover.  Reads everything; runs as a job on the commit thread so
 * that no group or space round changes the records meanwhile.
 */
#include <errno.h>
#include <string.h>

#include "commit.h"
#include "decode.h"
#include "internal.h"
#include "meta.h"
#include "onode.h"
#include "space.h"
#include "util.h"

/* Count the records with key prefix @type; with @recs and @bytes, decode
 * them as extent records and sum their lengths. */
static int count_prefix(struct rawstore *st, char type, uint64_t *recs, uint64_t *bytes)
{
	struct rs_iter *it;
	int ret;

	ret = meta_iter_new(st->meta, NULL, &type, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it); meta_iter_next(it)) {
		size_t kl, vl;
		const char *k = meta_iter_key(it, &kl), *v = meta_iter_val(it, &vl);
		struct rs_ext_rec e;
		struct rs_deferred_rec d;

		(*recs)++;
		if (!bytes)
			continue;
		if (type == 'D') {
			if (!decode_deferred_rec(k, kl, v, vl, &st->lim, &d))
				*bytes += d.len;
		} else if (!decode_ext_rec(type, k, kl, v, vl, &st->lim, &e)) {
			*bytes += e.len;
		}
	}
	ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}

static int count_onodes(struct rawstore *st, struct rawstore_records *r)
{
	struct rs_iter *it;
	char p = 'O';
	int ret = 0;

	ret = meta_iter_new(st->meta, NULL, &p, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it) && !ret; meta_iter_next(it)) {
		size_t vl;
		const char *v = meta_iter_val(it, &vl);
		struct rs_onode o;
		int d;

		r->onodes++;
		d = onode_decode(v, vl, &st->lim, &o);
		if (d == -ENOMEM)
			ret = d;
		if (d)
			continue;	/* fsck reports it */
		r->onode_extents += o.n_ext;
		if (o.inline_len)
			r->inline_objects++;
		onode_free(&o);
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}

static int records_job(struct rawstore *st, void *arg)
{
	struct rawstore_records *r = arg;
	int ret;

	ret = space_quiesce(st);	/* no range out of the free list */
	if (!ret)
		ret = count_onodes(st, r);
	if (!ret)
		ret = count_prefix(st, 'C', &r->collections, NULL);
	if (!ret)
		ret = count_prefix(st, 'X', &r->attrs, NULL);
	if (!ret)
		ret = count_prefix(st, 'M', &r->omap_keys, NULL);
	if (!ret)
		ret = count_prefix(st, 'H', &r->omap_headers, NULL);
	if (!ret)
		ret = count_prefix(st, 'R', &r->shared_units, NULL);
	if (!ret)
		ret = count_prefix(st, 'F', &r->free_records, &r->free_bytes);
	if (!ret)
		ret = count_prefix(st, 'Z', &r->zeroed_records, &r->zeroed_bytes);
	if (!ret)
		ret = count_prefix(st, 'P', &r->unpunched_records, &r->unpunched_bytes);
	if (!ret)
		ret = count_prefix(st, 'W', &r->in_flight_records, &r->in_flight_bytes);
	if (!ret)
		ret = count_prefix(st, 'V', &r->provisioned_records, &r->provisioned_bytes);
	if (!ret)
		ret = count_prefix(st, 'D', &r->deferred_records, &r->deferred_bytes);
	if (ret)
		return ret;
	/* Free space not recorded as zeroed is dirty (zeroed space readied for
	 * writes has no "Z" record any more, so an open store counts it here). */
	r->dirty_bytes = r->free_bytes - min_u64(r->free_bytes, r->zeroed_bytes);
	r->generation = rocksdb_get_latest_sequence_number(st->meta->db);
	r->mkfs_time = le64toh(st->sb.mkfs_time);
	space_records(st, r);
	return 0;
}

int rawstore_records_get(struct rawstore *st, struct rawstore_records *out)
{
	struct rawstore_records r;
	int ret;

	if (!st || !out || out->struct_size < sizeof(size_t) || out->struct_size > sizeof(r))
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	ret = rs_run_job(st, records_job, &r);
	if (ret)
		return ret;
	r.struct_size = out->struct_size;
	memcpy(out, &r, out->struct_size);
	return 0;
}
