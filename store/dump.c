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

struct count_ctx {
	struct rawstore *st;
	char type;
	uint64_t *recs, *bytes;
};

/* One record of a count_prefix() walk. */
static int count_one(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
	struct count_ctx *c = arg;
	struct rs_ext_rec e;
	struct rs_deferred_rec d;

	(*c->recs)++;
	if (!c->bytes)
		return 0;
	if (c->type == 'D') {
		if (!decode_deferred_rec(k, kl, v, vl, &c->st->lim, &d))
			*c->bytes += d.len;
	} else if (!decode_ext_rec(c->type, k, kl, v, vl, &c->st->lim, &e)) {
		*c->bytes += e.len;
	}
	return 0;
}

/* Count the records with key prefix @type; with @bytes, decode them as
 * extent (or deferred) records and sum their lengths. */
static int count_prefix(struct rawstore *st, char type, uint64_t *recs, uint64_t *bytes)
{
	struct count_ctx c = { st, type, recs, bytes };

	return meta_each(st->meta, &type, 1, count_one, &c);
}

struct onode_ctx {
	struct rawstore *st;
	struct rawstore_records *r;
};

static int count_onode(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
	struct onode_ctx *c = arg;
	struct rs_onode o;
	int d;

	(void)k;
	(void)kl;
	c->r->onodes++;
	d = onode_decode(v, vl, &c->st->lim, &o);
	if (d)
		return d == -ENOMEM ? d : 0;	/* fsck reports a bad one */
	c->r->onode_extents += o.n_ext;
	if (o.inline_len)
		c->r->inline_objects++;
	onode_free(&o);
	return 0;
}

static int count_onodes(struct rawstore *st, struct rawstore_records *r)
{
	struct onode_ctx c = { st, r };
	char p = 'O';

	return meta_each(st->meta, &p, 1, count_onode, &c);
}

static int records_job(struct rawstore *st, void *arg)
{
	struct rawstore_records *r = arg;
	struct rs_journal_stat js;
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
	if (meta_journal_stat(st->meta, &js)) {
		r->journal_offset = js.off;
		r->journal_size = js.len;
		r->journal_durable_seq = js.durable_seq;
		r->journal_start = js.trim_next;
		r->journal_replayed = js.records;
		r->journal_replayed_bytes = js.bytes;
		r->journal_last_seq = js.last_seq;
		r->journal_head = js.head;
		r->journal_dropped = (uint64_t)js.dropped;
	}
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
