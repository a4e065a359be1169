// SPDX-License-Identifier: MIT
/*
 * space.c: the free list and the unpunched list, their records, the
 * free-list rebuild, allocation for transactions, and reclaim (punch).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "decode.h"
#include "internal.h"
#include "space.h"
#include "util.h"

static void obs_put(struct rawstore *st, char type, uint64_t off, uint64_t len)
{
	struct rs_key k;
	char v[8];

	key_ext(&k, type, off);
	put_le64(v, len);
	rocksdb_writebatch_wi_put(st->wb, k.buf, k.len, v, 8);
}

static void obs_del(struct rawstore *st, char type, uint64_t off)
{
	struct rs_key k;

	key_ext(&k, type, off);
	rocksdb_writebatch_wi_delete(st->wb, k.buf, k.len);
}

static void free_put(void *a, uint64_t off, uint64_t len)
{
	obs_put(a, 'F', off, len);
}

static void free_del(void *a, uint64_t off)
{
	obs_del(a, 'F', off);
}

static void unp_put(void *a, uint64_t off, uint64_t len)
{
	obs_put(a, 'P', off, len);
}

static void unp_del(void *a, uint64_t off)
{
	obs_del(a, 'P', off);
}


static int load_extents(struct rawstore *st, char type, struct extset *s)
{
	struct rs_iter *it;
	uint64_t last_end = 0;
	int ret;

	ret = meta_iter_new(st->meta, NULL, &type, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it); meta_iter_next(it)) {
		size_t kl, vl;
		const char *k = meta_iter_key(it, &kl), *v = meta_iter_val(it, &vl);
		struct rs_ext_rec r;
		char why[256];

		ret = decode_ext_rec(type, k, kl, v, vl, &st->lim, &r);
		if (!ret && r.off < last_end)
			ret = rs_err(NULL, -EUCLEAN, "record [%llu, +%llu) overlaps the one "
				     "before it", (unsigned long long)r.off,
				     (unsigned long long)r.len);
		if (ret) {
			snprintf(why, sizeof(why), "%s", rawstore_errmsg());
			rs_err(st, ret, "%s list in metadata is corrupt: %s",
			       type == 'F' ? "free" : "unpunched", why);
			break;
		}
		last_end = r.off + r.len;
		ret = extset_insert(s, r.off, r.len);
		if (ret)
			break;
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}


static int cmp_pext(const void *a, const void *b)
{
	const struct pext *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* Delete every key with prefix @type into @wb. */
static int delete_all(struct rawstore *st, rocksdb_writebatch_wi_t *wb, char type)
{
	struct rs_iter *it;
	int ret;

	ret = meta_iter_new(st->meta, NULL, &type, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it); meta_iter_next(it)) {
		size_t kl;
		const char *k = meta_iter_full_key(it, &kl);

		rocksdb_writebatch_wi_delete(wb, k, kl);
	}
	ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}

/*
 * Units used by k > 1 object extents must be clones: each needs an "R"
 * record saying k - 1 extra users.  @used is sorted by offset.  -EUCLEAN,
 * naming the unit, for an overlap that no reference record explains.
 */
static int check_overlaps(struct rawstore *st, const struct pext_vec *used)
{
	uint64_t U = st->min_alloc, u, end = 0, checked = 0;
	size_t i, j;

	for (i = 0; i < used->n; i++) {
		const struct pext *e = &used->v[i];
		uint64_t e_end = e->off + e->len;

		/* the units of e that an earlier extent covers too, each once */
		for (u = max_u64(e->off, checked); u < min_u64(end, e_end); u += U) {
			struct rs_ref_rec ref = { 0, 0 };
			uint64_t users = 0;
			struct rs_key k;
			char *v;
			size_t vl;
			int r;

			for (j = 0; j < used->n && used->v[j].off <= u; j++)
				if (u < used->v[j].off + used->v[j].len)
					users++;
			key_ext(&k, 'R', u);
			r = meta_get(st->meta, NULL, &k, &v, &vl);
			if (r && r != -ENOENT)
				return r;
			if (!r) {
				r = decode_ref_rec(k.buf + 1, 8, v, vl, &st->lim, &ref);
				rocksdb_free(v);
			}
			if (r || ref.extra != users - 1)
				return rs_err(st, -EUCLEAN, "cannot rebuild the free list: unit %llu "
					      "is used by %llu object extents, but %s",
					      (unsigned long long)u, (unsigned long long)users,
					      r == -ENOENT ? "no reference record says it is shared" :
					      "its reference record does not match");
		}
		checked = max_u64(checked, min_u64(end, e_end));
		end = max_u64(end, e_end);
	}
	return 0;
}

/*
 * Keep what awaits punching: the recorded "P" ranges that are free in the
 * rebuilt list.  If a "P" record is corrupt, every free byte awaits
 * punching (punching free space is always safe; forgetting it is not).
 */
static int rebuild_unpunched(struct rawstore *st, rocksdb_writebatch_wi_t *wb,
			     const struct pext_vec *freev)
{
	struct pext_vec pv = { 0 };
	struct rs_iter *it;
	bool all = false;
	size_t i, f = 0;
	char p = 'P';
	int ret;

	ret = meta_iter_new(st->meta, NULL, &p, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it) && !ret && !all; meta_iter_next(it)) {
		size_t kl, vl;
		const char *k = meta_iter_key(it, &kl), *v = meta_iter_val(it, &vl);
		struct rs_ext_rec r;

		if (decode_ext_rec('P', k, kl, v, vl, &st->lim, &r))
			all = true;
		else
			ret = pext_push(&pv, r.off, r.len);
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	if (all)
		rs_log(st, RAWSTORE_LOG_WARNING, "the unpunched list is corrupt (%s): all free "
		       "space will be punched", rawstore_errmsg());
	for (i = 0; !ret && i < (all ? freev->n : pv.n); i++) {
		uint64_t a = all ? freev->v[i].off : pv.v[i].off;
		uint64_t b = a + (all ? freev->v[i].len : pv.v[i].len);

		/* both lists are sorted and not overlapping */
		while (f < freev->n && freev->v[f].off + freev->v[f].len <= a)
			f++;
		for (size_t g = f; !ret && g < freev->n && freev->v[g].off < b; g++) {
			uint64_t s = max_u64(a, freev->v[g].off);
			uint64_t t = min_u64(b, freev->v[g].off + freev->v[g].len);
			struct rs_key k;
			char v[8];

			ret = extset_insert(&st->unpunched, s, t - s);
			if (ret)
				break;
			key_ext(&k, 'P', s);
			put_le64(v, t - s);
			rocksdb_writebatch_wi_put(wb, k.buf, k.len, v, 8);
		}
	}
	pext_vec_free(&pv);
	return ret;
}

/*
 * The free list is the complement of the extents the objects use.  Rebuild
 * it from the onodes (all must decode, and extents may overlap only on
 * units whose reference records say they are shared), keep the pending
 * punches that are still free, and replace the recorded free and unpunched
 * lists in one synced batch.
 */
static int rebuild_freelist(struct rawstore *st)
{
	struct pext_vec used = { 0 }, freev = { 0 };
	rocksdb_writebatch_wi_t *wb;
	struct rs_iter *it;
	uint64_t pos = st->data_start;
	char p = 'O';
	size_t i;
	int ret;

	ret = meta_iter_new(st->meta, NULL, &p, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it) && !ret; meta_iter_next(it)) {
		size_t vl;
		const char *v = meta_iter_val(it, &vl);
		struct rs_onode o;
		uint32_t j;

		ret = onode_decode(v, vl, &st->lim, &o);
		if (ret) {
			char why[256];

			snprintf(why, sizeof(why), "%s", rawstore_errmsg());
			ret = rs_err(st, -EUCLEAN, "cannot rebuild the free list: an object "
				     "record is corrupt (%s)", why);
			break;
		}
		for (j = 0; j < o.n_ext && !ret; j++)
			ret = pext_push(&used, o.ext[j].pofs, o.ext[j].len);
		onode_free(&o);
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	if (ret)
		goto out_free;
	if (used.n)
		qsort(used.v, used.n, sizeof(*used.v), cmp_pext);
	ret = check_overlaps(st, &used);
	if (ret)
		goto out_free;
	wb = rocksdb_writebatch_wi_create(0, 1);
	ret = delete_all(st, wb, 'F');
	for (i = 0; !ret && i <= used.n; i++) {
		uint64_t next = i < used.n ? used.v[i].off : st->data_end;

		if (next > pos) {
			struct rs_key k;
			char v[8];

			key_ext(&k, 'F', pos);
			put_le64(v, next - pos);
			rocksdb_writebatch_wi_put(wb, k.buf, k.len, v, 8);
			ret = extset_insert(&st->freeset, pos, next - pos);
			if (!ret)
				ret = pext_push(&freev, pos, next - pos);
		}
		if (i < used.n)	/* clones share units: extents may overlap */
			pos = max_u64(pos, next + used.v[i].len);
	}
	if (!ret)
		ret = delete_all(st, wb, 'P');
	if (!ret)
		ret = rebuild_unpunched(st, wb, &freev);
	if (!ret)
		ret = meta_commit(st->meta, wb);
	if (!ret)
		rs_log(st, RAWSTORE_LOG_WARNING, "rebuilt the free list from %zu object extents: "
		       "%llu bytes free in %llu extents, %llu bytes await punching", used.n,
		       (unsigned long long)st->freeset.total,
		       (unsigned long long)st->freeset.count,
		       (unsigned long long)st->unpunched.total);
	rocksdb_writebatch_wi_destroy(wb);
out_free:
	pext_vec_free(&used);
	pext_vec_free(&freev);
	return ret;
}

void space_snapshot(struct rawstore *st)
{
	st->snap.free = st->freeset.total;
	st->snap.free_extents = st->freeset.count;
	st->snap.largest_free = extset_largest(&st->freeset);
	st->snap.unpunched = st->unpunched.total;
}


int space_reclaim(struct rawstore *st, uint64_t *punched_out)
{
	struct pext p;
	uint64_t pos = 0, punched = 0;
	int ret = 0;

	while (extset_next(&st->unpunched, pos, &p)) {
		ret = dev_punch_hole(st->dev, p.off, p.len);
		if (ret) {
			rs_err(st, ret, "punching [%llu, +%llu) failed",
			       (unsigned long long)p.off, (unsigned long long)p.len);
			break;
		}
		extset_remove(&st->unpunched, p.off, p.len);
		punched += p.len;
		pos = p.off + p.len;
	}
	PERF_ADD(st, bytes_punched, punched);
	*punched_out = punched;
	return ret;
}

int space_load(struct rawstore *st)
{
	int ret;

	extset_init(&st->freeset, true);
	extset_init(&st->unpunched, false);
	if (st->opts.rebuild_freelist)
		return rebuild_freelist(st);
	ret = load_extents(st, 'F', &st->freeset);
	if (!ret)
		ret = load_extents(st, 'P', &st->unpunched);
	return ret;
}

void space_attach(struct rawstore *st)
{
	st->free_obs = (struct extset_observer){ free_put, free_del, st };
	st->unpunched_obs = (struct extset_observer){ unp_put, unp_del, st };
	st->freeset.obs = &st->free_obs;
	st->unpunched.obs = &st->unpunched_obs;
}

void space_detach(struct rawstore *st)
{
	st->freeset.obs = NULL;
	st->unpunched.obs = NULL;
}

void space_destroy(struct rawstore *st)
{
	space_detach(st);
	extset_destroy(&st->freeset);
	extset_destroy(&st->unpunched);
}

int space_alloc(struct rawstore *st, uint64_t len, uint64_t hint, uint64_t want,
		struct pext **out)
{
	return extset_alloc(&st->freeset, len, hint, want, out);
}

void space_unalloc(struct rawstore *st, const struct pext *v, size_t n)
{
	const struct extset_observer *obs = st->freeset.obs;
	size_t i;

	/* Never recorded as allocated: put back without a record. */
	st->freeset.obs = NULL;
	for (i = 0; i < n; i++)
		if (v[i].len)
			extset_insert(&st->freeset, v[i].off, v[i].len);
	st->freeset.obs = obs;
}

int space_commit(struct rawstore *st, const struct pext_vec *allocs,
		 const struct pext_vec *frees)
{
	size_t i;
	int ret;

	for (i = 0; i < allocs->n; i++)
		extset_remove(&st->unpunched, allocs->v[i].off, allocs->v[i].len);
	for (i = 0; i < frees->n; i++) {
		ret = extset_insert(&st->freeset, frees->v[i].off, frees->v[i].len);
		if (!ret)
			ret = extset_insert(&st->unpunched, frees->v[i].off, frees->v[i].len);
		if (ret)
			return rs_err(st, -EUCLEAN, "freeing [%llu, +%llu) twice: %s",
				      (unsigned long long)frees->v[i].off,
				      (unsigned long long)frees->v[i].len, strerror(-ret));
	}
	return 0;
}
