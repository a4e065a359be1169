// SPDX-License-Identifier: MIT
/*
 * space_rec.c: the free-space sets' records ("F", "P", "Z", "W", "V"), their
 * staging per commit group, and the free-list rebuild (space.h).
 */

#include "space_int.h"

/* ---- records ---- */

static const char *set_name(char type);

static void obs_put(rocksdb_writebatch_wi_t *wb, char type, uint64_t off, uint64_t len)
{
	struct rs_key k;
	char v[8];

	key_ext(&k, type, off);
	put_le64(v, len);
	rocksdb_writebatch_wi_put(wb, k.buf, k.len, v, 8);
}

static void obs_del(rocksdb_writebatch_wi_t *wb, char type, uint64_t off)
{
	struct rs_key k;

	key_ext(&k, type, off);
	rocksdb_writebatch_wi_delete(wb, k.buf, k.len);
}

/* The open batch, or NULL (and the store stopped) if there is none. */
static struct space_batch *out_of(struct rawstore *st, char type)
{
	struct rs_space *sp = st->space;

	if (sp->out)
		return sp->out;
	sp->unbatched++;
	rs_store_stop(st, rs_err(st, -EUCLEAN, "the %s list changed with no batch open to "
				 "record it (a bug): store stopped, nothing was committed "
				 "without it", set_name(type)));
	return NULL;
}

void sp_rec_put(struct rawstore *st, char type, uint64_t off, uint64_t len)
{
	struct space_batch *b = out_of(st, type);

	if (b && b->wb) {
		obs_put(b->wb, type, off, len);
		b->entries++;
	}
}

void sp_rec_del(struct rawstore *st, char type, uint64_t off)
{
	struct space_batch *b = out_of(st, type);

	if (b && b->wb) {
		obs_del(b->wb, type, off);
		b->entries++;
	}
}

void space_batch_open(struct rawstore *st, struct space_batch *b, rocksdb_writebatch_wi_t *wb,
		      uint64_t bound)
{
	*b = (struct space_batch){ wb, bound, 0, st->space->out };
	st->space->out = b;
}

int space_batch_close(struct rawstore *st, struct space_batch *b)
{
	struct rs_space *sp = st->space;

	if (sp->out != b) {
		/* Closed out of order: a bug; keep the records where they
		 * went, and say so. */
		sp->misnested++;
		rs_log(st, RAWSTORE_LOG_ERR, "space batch closed out of order (a bug)");
	}
	sp->out = b->prev;
	if (b->entries <= b->bound)
		return 0;
	sp->overruns++;
	rs_log(st, RAWSTORE_LOG_ERR, "the space layer wrote %llu records into a batch sized "
	       "for %llu (a bug in the sizing)", (unsigned long long)b->entries,
	       (unsigned long long)b->bound);
	return -EOVERFLOW;
}

static int stage_cmp(const void *a, const void *b)
{
	const struct stage_ent *x = a, *y = b;

	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Into the group's batch: the last staged change of each record, in order; a record
 * that did not exist before its first change and is deleted by its last
 * (an extent carved away within the group) needs nothing.
 */
static void stage_write(struct rawstore *st)
{
	struct stage *sg = &st->space->stage;
	uint32_t i, first = 0;

	if (!sg->n)
		return;
	qsort(sg->v, sg->n, sizeof(*sg->v), stage_cmp);
	for (i = 0; i < sg->n; i++) {
		const struct stage_ent *e = &sg->v[i];

		if (i && (sg->v[i - 1].type != e->type || sg->v[i - 1].off != e->off))
			first = i;
		if (i + 1 < sg->n && sg->v[i + 1].type == e->type && sg->v[i + 1].off == e->off)
			continue;
		if (!e->del)
			sp_rec_put(st, e->type, e->off, e->len);
		else if (sg->v[first].existed)
			sp_rec_del(st, e->type, e->off);
	}
	sg->n = 0;
}

/* A change of an "F" or "P" record: staged while a group is applied, else
 * straight into the open batch. */
static void rec_change(struct rawstore *st, char type, uint64_t off, uint64_t len, bool del,
		       bool existed)
{
	struct stage *sg = &st->space->stage;

	if (!sg->on || st->space->out != sg->batch) {
		/* not staged: outside a group, or in a batch of its own (the
		 * sets' changes are recorded where their caller said) */
		if (del)
			sp_rec_del(st, type, off);
		else
			sp_rec_put(st, type, off, len);
		return;
	}
	if (sg->n == sg->cap) {
		uint32_t cap = sg->cap ? sg->cap * 2 : 256;
		struct stage_ent *v = rs_fail_check(RS_FAIL_STAGE) ? NULL :
				      realloc(sg->v, cap * sizeof(*v));

		if (!v) {
			/*
			 * The change cannot be recorded, and writing it into
			 * the batch now could be undone by a transaction's
			 * rollback: the group must not commit.  The store
			 * stops (space_stage_end fails); a reopen reloads the
			 * lists from their records.
			 */
			if (!sg->lost)
				rs_err(st, -ENOMEM, "no memory to stage a free-list change of the "
				       "commit group");
			sg->lost = true;
			return;
		}
		sg->v = v;
		sg->cap = cap;
	}
	sg->v[sg->n] = (struct stage_ent){ off, len, sg->n, type, del, existed };
	sg->n++;
}

static void free_put(void *a, uint64_t off, uint64_t len)
{
	rec_change(a, 'F', off, len, false, false);
}

static void free_resize(void *a, uint64_t off, uint64_t len)
{
	rec_change(a, 'F', off, len, false, true);
}

static void free_del(void *a, uint64_t off)
{
	rec_change(a, 'F', off, 0, true, true);
}

static void unp_put(void *a, uint64_t off, uint64_t len)
{
	rec_change(a, 'P', off, len, false, false);
}

static void unp_resize(void *a, uint64_t off, uint64_t len)
{
	rec_change(a, 'P', off, len, false, true);
}

static void unp_del(void *a, uint64_t off)
{
	rec_change(a, 'P', off, 0, true, true);
}

void space_stage_begin(struct rawstore *st, struct space_batch *b, rocksdb_writebatch_wi_t *wb)
{
	struct stage *sg;

	if (!st->space)
		return;
	sg = &st->space->stage;
	/* A group applied again (a pass after write errors) starts over on
	 * a cleared batch: its batch is opened anew, not nested in itself. */
	if (sg->on)
		st->space->out = sg->batch->prev;
	space_batch_open(st, b, wb, UINT64_MAX);
	sg->batch = b;
	sg->n = 0;
	sg->on = true;
	sg->lost = false;
}

void space_stage_size(struct rawstore *st, uint64_t bound)
{
	if (st->space && st->space->stage.on)
		st->space->stage.batch->bound = bound;
}

int space_stage_end(struct rawstore *st, bool write)
{
	struct stage *sg;
	int ret = 0;

	if (!st->space || !st->space->stage.on)
		return 0;
	sg = &st->space->stage;
	if (write && sg->lost)
		ret = rs_err(st, -ENOMEM, "no memory to stage a free-list change of the commit "
			     "group; group not committed");
	else if (write)
		stage_write(st);
	sg->n = 0;
	sg->on = false;
	sg->lost = false;
	/* Past its bound the batch may not fit the record it was sized for:
	 * the journal refuses it then (-E2BIG); here the sizing bug is
	 * named and counted. */
	space_batch_close(st, sg->batch);
	sg->batch = NULL;
	return ret;
}

static void zero_put(void *a, uint64_t off, uint64_t len)
{
	sp_rec_put(a, 'Z', off, len);
}

static void zero_del(void *a, uint64_t off)
{
	sp_rec_del(a, 'Z', off);
}

static void infl_put(void *a, uint64_t off, uint64_t len)
{
	sp_rec_put(a, 'W', off, len);
}

static void infl_del(void *a, uint64_t off)
{
	sp_rec_del(a, 'W', off);
}

/* Delete every key with prefix @type into @wb (counted in *@n if not NULL). */
static int delete_all(struct rawstore *st, rocksdb_writebatch_wi_t *wb, char type, uint64_t *n)
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
		if (n)
			(*n)++;
	}
	ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}

/*
 * The provisioned set has no observer: a range stays provisioned on the
 * device even when the transaction that provisioned it fails and its batch
 * is rolled back, so record-by-record updates would drift from the set
 * (and overlap after a later merge or split).  Instead the "V" records are
 * rewritten from the set, as a whole, into the batch of the next commit
 * after it changed.  Under-reporting is safe (a range is provisioned
 * again); claiming a punched range is not, and cannot happen this way.
 */
void sp_prov_changed(struct rs_space *sp)
{
	sp->prov_dirty = true;
}

int sp_prov_sync(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	struct space_batch *b;
	struct pext p;
	uint64_t pos;
	int ret;

	if (!sp->prov_dirty)
		return 0;
	b = out_of(st, 'V');
	if (!b)
		return -EUCLEAN;
	if (!b->wb)
		return 0;	/* records nothing: they stay to be written */
	ret = delete_all(st, b->wb, 'V', &b->entries);
	if (ret)
		return ret;
	for (pos = 0; extset_next(&sp->provisioned, pos, &p); pos = p.off + p.len)
		sp_rec_put(st, 'V', p.off, p.len);
	sp->prov_recs = sp->provisioned.count;
	sp->prov_dirty = false;
	return 0;
}

static const char *set_name(char type)
{
	switch (type) {
	case 'F':
		return "free";
	case 'P':
		return "unpunched";
	case 'Z':
		return "zeroed";
	case 'V':
		return "provisioned";
	default:
		return "in-flight";
	}
}

struct load_ctx {
	struct rawstore *st;
	char type;
	struct extset *s;
	uint64_t last_end;
};

static int load_one(void *arg, const struct rs_ext_rec *r, int err)
{
	struct load_ctx *c = arg;
	char why[256];

	if (!err && r->off < c->last_end)
		err = rs_err(NULL, -EUCLEAN, "record [%llu, +%llu) overlaps the one before it",
			     (unsigned long long)r->off, (unsigned long long)r->len);
	if (err) {
		snprintf(why, sizeof(why), "%s", rawstore_errmsg());
		return rs_err(c->st, err, "%s list in metadata is corrupt: %s",
			      set_name(c->type), why);
	}
	c->last_end = r->off + r->len;
	return extset_insert(c->s, r->off, r->len);
}

int sp_load_extents(struct rawstore *st, char type, struct extset *s)
{
	struct load_ctx c = { st, type, s, 0 };

	return meta_each_ext(st->meta, type, &st->lim, load_one, &c);
}

static int cmp_pext(const void *a, const void *b)
{
	const struct pext *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
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
 * punches that are still free, and replace the recorded free, unpunched,
 * zeroed and in-flight lists in one synced batch: the rebuilt free space
 * is dirty.
 */
int sp_rebuild_freelist(struct rawstore *st)
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
	ret = delete_all(st, wb, 'F', NULL);
	if (!ret)
		ret = delete_all(st, wb, 'Z', NULL);
	if (!ret)
		ret = delete_all(st, wb, 'W', NULL);
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
		ret = delete_all(st, wb, 'P', NULL);
	if (!ret)
		ret = rebuild_unpunched(st, wb, &freev);
	if (!ret)
		rs_crash_check(st, RS_CRASH_REBUILD_FREELIST);	/* test hook (debug.h) */
	if (!ret)
		ret = meta_commit(st->meta, wb);
	if (!ret)
		rs_log(st, RAWSTORE_LOG_WARNING, "rebuilt the free list from %zu object extents: "
		       "%llu bytes free in %llu extents (all dirty), %llu bytes await punching", used.n,
		       (unsigned long long)st->freeset.total,
		       (unsigned long long)st->freeset.count,
		       (unsigned long long)st->unpunched.total);
	rocksdb_writebatch_wi_destroy(wb);
out_free:
	pext_vec_free(&used);
	pext_vec_free(&freev);
	return ret;
}

void space_attach(struct rawstore *st)
{
	struct rs_space *sp = st->space;

	st->free_obs = (struct extset_observer){ free_put, free_del, st, free_resize };
	st->unpunched_obs = (struct extset_observer){ unp_put, unp_del, st, unp_resize };
	sp->zobs = (struct extset_observer){ zero_put, zero_del, st, NULL };
	sp->wobs = (struct extset_observer){ infl_put, infl_del, st, NULL };
	st->freeset.obs = &st->free_obs;
	st->unpunched.obs = &st->unpunched_obs;
	sp->zeroed.obs = &sp->zobs;
	sp->inflight.obs = &sp->wobs;
}
