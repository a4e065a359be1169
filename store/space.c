// SPDX-License-Identifier: MIT
/*
 * space.c: the space layer's policy, loading and attaching its sets, allocation
 * for transactions (with the write plan of partial units and provisioning)
 * and mkfs preallocation.  The records of the sets are in space_rec.c; the
 * rounds, the background worker, reclaim, prepare and the zeroed-space check
 * (a test hook) in space_work.c, which calls into this file, not back; see
 * space.h for the sets and their records.
 */

#include "space_int.h"

/* ---- policy ---- */

static const char *const zero_names[] = { "default", "auto", "prepare", "pad" };
static const char *const punch_names[] = { "default", "operator", "background", "inline" };
static const char *const prealloc_names[] = { "default", "none", "unwritten", "write-zeroes",
					      "stale" };

const char *rawstore_zero_policy_name(int p)
{
	return p >= 0 && p <= RAWSTORE_ZERO_PAD ? zero_names[p] : "?";
}

const char *rawstore_punch_policy_name(int p)
{
	return p >= 0 && p <= RAWSTORE_PUNCH_INLINE ? punch_names[p] : "?";
}

const char *rawstore_prealloc_policy_name(int p)
{
	return p >= 0 && p <= RAWSTORE_PREALLOC_STALE ? prealloc_names[p] : "?";
}

void sp_key_policy(struct rs_key *k)
{
	k->buf[0] = 'Y';
	k->len = 1;
}

static int load_policy(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	struct rs_key k;
	char *v;
	size_t vl;
	int ret;

	sp->rec = (struct rs_disk_space_policy){ htole32(RS_SPACE_POLICY_VERSION),
						 RAWSTORE_ZERO_AUTO, RAWSTORE_PUNCH_OPERATOR,
						 RAWSTORE_PREALLOC_DEFAULT, 0, 0 };
	sp_key_policy(&k);
	ret = meta_get(st->meta, NULL, &k, &v, &vl);
	if (ret == -ENOENT)
		return 0;	/* a store made before space policies */
	if (ret)
		return ret;
	if (vl == sizeof(sp->rec))
		memcpy(&sp->rec, v, vl);
	rocksdb_free(v);
	if (vl != sizeof(sp->rec) || le32toh(sp->rec.version) != RS_SPACE_POLICY_VERSION ||
	    sp->rec.zero < RAWSTORE_ZERO_AUTO || sp->rec.zero > RAWSTORE_ZERO_PAD ||
	    sp->rec.punch < RAWSTORE_PUNCH_OPERATOR || sp->rec.punch > RAWSTORE_PUNCH_INLINE ||
	    sp->rec.prealloc > RAWSTORE_PREALLOC_STALE)
		return rs_err(st, -EUCLEAN, "space policy record is corrupt");
	return 0;
}

/* ---- load, attach, snapshot ---- */

/* Put back what a crash left in flight, and drop "Z" claims that are not
 * sure: outside the free list, awaiting a punch, or under a deferred write
 * that replay will redo. */
static int load_fixup(struct rawstore *st, struct extset *w)
{
	struct rs_space *sp = st->space;
	rocksdb_writebatch_wi_t *wb = rocksdb_writebatch_wi_create(0, 1);
	struct space_batch b;
	struct rs_iter *it;
	struct pext p;
	uint64_t pos;
	char d = 'D';
	int ret = 0;

	space_batch_open(st, &b, wb, UINT64_MAX);
	space_attach(st);
	for (pos = 0; !ret && extset_next(w, pos, &p); pos = p.off + p.len) {
		sp_rec_del(st, 'W', p.off);
		if (extset_overlap(&st->freeset, p.off, p.len))
			ret = rs_err(st, -EUCLEAN, "in-flight range [%llu, +%llu) is also free",
				     (unsigned long long)p.off, (unsigned long long)p.len);
		else
			ret = extset_insert(&st->freeset, p.off, p.len);
	}
	for (pos = 0; !ret && extset_next(&sp->zeroed, pos, &p);) {
		if (extset_overlap(&st->freeset, p.off, p.len) != p.len ||
		    extset_overlap(&st->unpunched, p.off, p.len)) {
			rs_log(st, RAWSTORE_LOG_WARNING, "zeroed range [%llu, +%llu) is not free "
			       "or awaits a punch: treated as dirty", (unsigned long long)p.off,
			       (unsigned long long)p.len);
			extset_remove(&sp->zeroed, p.off, p.len);
		}
		pos = p.off + p.len;
	}
	if (!ret)
		ret = meta_iter_new(st->meta, NULL, &d, 1, &it);
	if (!ret) {
		for (; meta_iter_valid(it); meta_iter_next(it)) {
			size_t vl;
			const char *v = meta_iter_val(it, &vl);
			struct rs_disk_deferred h;

			if (vl < sizeof(h))
				continue;	/* replay reports it */
			memcpy(&h, v, sizeof(h));
			extset_remove(&sp->zeroed, le64toh(h.pofs), le32toh(h.len));
		}
		ret = meta_iter_error(it);
		meta_iter_free(it);
	}
	space_detach(st);
	space_batch_close(st, &b);
	/* Read-only: the fixes hold in memory, nothing is written. */
	if (!ret && rocksdb_writebatch_wi_count(wb) && !st->opts.read_only)
		ret = meta_commit(st->meta, wb);
	rocksdb_writebatch_wi_destroy(wb);
	return ret;
}

static int dirty_from_free(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	struct pext p;
	uint64_t pos;
	int ret = 0;

	for (pos = 0; !ret && extset_next(&st->freeset, pos, &p); pos = p.off + p.len)
		ret = extset_insert(&sp->dirty, p.off, p.len);
	for (pos = 0; !ret && extset_next(&sp->zeroed, pos, &p); pos = p.off + p.len)
		extset_remove(&sp->dirty, p.off, p.len);
	return ret;
}

int space_load(struct rawstore *st)
{
	struct rs_space *sp;
	struct extset w;
	int ret;

	extset_init(&st->freeset, true);
	extset_init(&st->unpunched, false);
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	st->space = sp;
	extset_init(&sp->zeroed, true);
	extset_init(&sp->ready, true);
	extset_init(&sp->pending, false);
	extset_init(&sp->dirty, true);
	extset_init(&sp->inflight, false);
	extset_init(&sp->provisioned, false);
	pthread_mutex_init(&sp->lock, NULL);
	pthread_cond_init(&sp->cond, NULL);
	pthread_mutex_init(&sp->round_lock, NULL);
	ret = load_policy(st);
	if (ret)
		return ret;
	if (st->opts.rebuild_freelist) {
		ret = sp_rebuild_freelist(st);
		return ret ? ret : dirty_from_free(st);
	}
	extset_init(&w, false);
	ret = sp_load_extents(st, 'F', &st->freeset);
	if (!ret)
		ret = sp_load_extents(st, 'P', &st->unpunched);
	if (!ret)
		ret = sp_load_extents(st, 'Z', &sp->zeroed);
	if (!ret)
		ret = sp_load_extents(st, 'W', &w);
	if (!ret)
		ret = sp_load_extents(st, 'V', &sp->provisioned);
	sp->prov_recs = sp->provisioned.count;
	if (!ret)
		ret = load_fixup(st, &w);
	extset_destroy(&w);
	if (!ret)
		ret = dirty_from_free(st);
	return ret;
}

void space_detach(struct rawstore *st)
{
	st->freeset.obs = NULL;
	st->unpunched.obs = NULL;
	if (st->space) {
		st->space->zeroed.obs = NULL;
		st->space->inflight.obs = NULL;
	}
}

void space_destroy(struct rawstore *st)
{
	struct rs_space *sp = st->space;

	space_detach(st);
	extset_destroy(&st->freeset);
	extset_destroy(&st->unpunched);
	if (!sp)
		return;
	extset_destroy(&sp->zeroed);
	extset_destroy(&sp->ready);
	extset_destroy(&sp->pending);
	extset_destroy(&sp->dirty);
	extset_destroy(&sp->inflight);
	extset_destroy(&sp->provisioned);
	pext_vec_free(&sp->round.r);
	free(sp->round.res);
	free(sp->stage.v);
	pthread_mutex_destroy(&sp->lock);
	pthread_cond_destroy(&sp->cond);
	pthread_mutex_destroy(&sp->round_lock);
	free(sp);
	st->space = NULL;
}

void space_snapshot(struct rawstore *st)
{
	struct rs_space *sp = st->space;

	/* Ranges being zeroed or punched are free (and dirty until done). */
	st->snap.free = st->freeset.total + sp->inflight.total;
	st->snap.free_extents = st->freeset.count;
	st->snap.largest_free = extset_largest(&st->freeset);
	st->snap.unpunched = st->unpunched.total;
	sp->snap.zeroed = sp->zeroed.total + sp->ready.total + sp->pending.total;
	sp->snap.dirty = st->snap.free - min_u64(st->snap.free, sp->snap.zeroed);
	sp->snap.in_flight = sp->inflight.total;
	sp->snap.provisioned = sp->provisioned.total;
}

void space_statfs(struct rawstore *st, struct rawstore_statfs *s)
{
	struct rs_space *sp = st->space;

	s->zeroed = sp->snap.zeroed;
	s->dirty = sp->snap.dirty;
	s->in_flight = sp->snap.in_flight;
	s->provisioned = sp->snap.provisioned;
}

void space_info(struct rawstore *st, struct rawstore_info *i)
{
	struct rs_space *sp = st->space;

	i->zero_policy = rawstore_zero_policy_name(sp->zero_mode);
	i->punch_policy = rawstore_punch_policy_name(sp->punch_mode);
	i->prealloc_policy = dev_geom(st->dev)->is_bdev ? "none" :
			     rawstore_prealloc_policy_name(sp->rec.prealloc ? sp->rec.prealloc :
							   RAWSTORE_PREALLOC_NONE);
	i->zero_offload = sp->offload;
	i->provisioning = sp->provisioning;
	i->zero_probe_ns = sp->probe_ns;
	i->provision_max_bytes = dev_geom(st->dev)->provision_max;
}

/* ---- allocation ---- */

/* Remove [off, off+len) from every set of free space. */
void sp_unfree(struct rawstore *st, uint64_t off, uint64_t len)
{
	struct rs_space *sp = st->space;

	extset_remove(&st->freeset, off, len);
	extset_remove(&sp->dirty, off, len);
	extset_remove(&sp->ready, off, len);
}

static int take(struct rawstore *st, struct extset *from, bool contig, uint64_t len,
		uint64_t hint, uint64_t want, struct pext **out)
{
	int n, i;

	n = contig ? extset_alloc_contig(from, len, hint, want, out) :
		     extset_alloc(from, len, hint, want, out);

	for (i = 0; i < n; i++)
		sp_unfree(st, (*out)[i].off, (*out)[i].len);
	return n;
}

/*
 * Make @len bytes (at least) of zeroed space writable: delete their "Z"
 * records in a synced batch of their own, so that a crash after data went
 * there cannot leave them recorded as zeroed.  On the commit thread, while
 * a group is applied (the group's batch holds no "Z" record then).
 */
int sp_claim(struct rawstore *st, uint64_t len)
{
	struct rs_space *sp = st->space;
	uint64_t want = min_u64(max_u64(len, sp->ready_target), sp->zeroed.total);
	rocksdb_writebatch_wi_t *wb;
	struct space_batch b;
	struct pext *v;
	int n, i, ret;

	if (sp->zeroed.total < len || !want)
		return -ENOSPC;
	wb = rocksdb_writebatch_wi_create(0, 1);
	space_batch_open(st, &b, wb, UINT64_MAX);
	n = rs_fail_check(RS_FAIL_CLAIM_TAKE) ? -ENOMEM :
	    extset_alloc(&sp->zeroed, want, 0, 0, &v);
	space_batch_close(st, &b);
	if (n < 0) {
		rocksdb_writebatch_wi_destroy(wb);
		return rs_err(st, n, "claiming %llu bytes of zeroed space failed: %s",
			      (unsigned long long)want, strerror(-n));
	}
	ret = rs_fail_check(RS_FAIL_CLAIM_COMMIT) ? -EIO : meta_commit(st->meta, wb);
	rocksdb_writebatch_wi_destroy(wb);
	PERF_ADD(st, db_syncs, 1);
	if (ret) {
		/* The ranges are out of the zeroed set, their records maybe
		 * not: memory and disk may disagree now. */
		rs_err(st, ret, "claiming zeroed space: metadata commit failed (%s); store "
		       "stopped", strerror(-ret));
		rs_store_stop(st, ret);
		free(v);
		return ret;
	}
	rs_crash_check(st, RS_CRASH_SPACE_CLAIM);
	for (i = 0; i < n; i++)
		extset_insert(&sp->ready, v[i].off, v[i].len);
	free(v);
	PERF_ADD(st, zero_claims, 1);
	return 0;
}

/* Provision the parts of @v not yet provisioned (thin devices, files). */
static int provision(struct rawstore *st, const struct pext *v, int n)
{
	struct rs_space *sp = st->space;
	int i, ret;

	for (i = 0; i < n && sp->provisioning; i++) {
		if (extset_overlap(&sp->provisioned, v[i].off, v[i].len) == v[i].len)
			continue;
		ret = dev_provision(st->dev, v[i].off, v[i].len);
		if (ret == -EOPNOTSUPP) {
			rs_log(st, RAWSTORE_LOG_WARNING, "the device refuses to provision; "
			       "allocations are no longer provisioned");
			sp->provisioning = false;
			break;
		}
		if (ret == -ENOSPC || ret == -EDQUOT) {
			PERF_ADD(st, provision_enospc, 1);
			return rs_err(st, -ENOSPC, "the device has no space to provision "
				      "[%llu, +%llu); nothing was written",
				      (unsigned long long)v[i].off, (unsigned long long)v[i].len);
		}
		if (ret)
			return rs_err(st, ret, "provisioning [%llu, +%llu) failed",
				      (unsigned long long)v[i].off, (unsigned long long)v[i].len);
		PERF_ADD(st, provisioned_bytes,
			 v[i].len - extset_overlap(&sp->provisioned, v[i].off, v[i].len));
		extset_remove(&sp->provisioned, v[i].off, v[i].len);
		extset_insert(&sp->provisioned, v[i].off, v[i].len);
		sp_prov_changed(sp);
	}
	return 0;
}

/* Put pieces that were never written back where they came from. */
static void give_back(struct rawstore *st, const struct pext *v, int n, bool zeroed)
{
	struct space_batch none;
	int i;

	/* Their "F" deletions are staged (or in the batch): put back in
	 * memory only, recording nothing. */
	space_batch_open(st, &none, NULL, 0);
	for (i = 0; i < n; i++) {
		extset_insert(&st->freeset, v[i].off, v[i].len);
		extset_insert(zeroed ? &st->space->ready : &st->space->dirty, v[i].off, v[i].len);
	}
	space_batch_close(st, &none);
	/* The records: re-put what the allocation deleted. */
	for (i = 0; i < n; i++) {
		extset_remove(&st->freeset, v[i].off, v[i].len);
		extset_insert(&st->freeset, v[i].off, v[i].len);
	}
}

static int alloc_once(struct rawstore *st, uint64_t len, uint64_t hint, uint64_t want,
		      bool partial, struct pext **out, bool *zeroed)
{
	struct rs_space *sp = st->space;
	struct pext p;
	uint64_t pos;
	int n = -ENOSPC, ret;

	*zeroed = false;
	/* Continue the previous extent where it is free and usable. */
	if (hint && extset_overlap(&sp->ready, hint, len) == len) {
		n = take(st, &sp->ready, true, len, hint, 0, out);
		*zeroed = n >= 0;
	} else if (hint && !partial && extset_overlap(&sp->dirty, hint, len) == len) {
		n = take(st, &sp->dirty, true, len, hint, 0, out);
	}
	if (n == -ENOSPC && partial) {
		n = take(st, &sp->ready, true, len, hint, want, out);
		if (n == -ENOSPC && sp_claim(st, len) == 0)
			n = take(st, &sp->ready, true, len, hint, want, out);
		*zeroed = n >= 0;
	}
	if (n == -ENOSPC)
		n = take(st, &sp->dirty, true, len, hint, want, out);
	if (n == -ENOSPC) {
		n = take(st, &sp->ready, true, len, hint, want, out);
		if (n == -ENOSPC && sp_claim(st, len) == 0)
			n = take(st, &sp->ready, true, len, hint, want, out);
		*zeroed = n >= 0;
	}
	/* No single extent: pieces, dirty first. */
	if (n == -ENOSPC && !partial)
		n = take(st, &sp->dirty, false, len, hint, want, out);
	if (n == -ENOSPC) {
		n = take(st, &sp->ready, false, len, hint, want, out);
		*zeroed = n >= 0;
	}
	if (n == -ENOSPC && sp->ready.total + sp->dirty.total + sp->zeroed.total >= len) {
		/* Nearly full: neither kind alone holds @len; use both as dirty. */
		if (sp->zeroed.total)
			sp_claim(st, sp->zeroed.total);
		for (pos = 0; extset_next(&sp->ready, pos, &p); pos = p.off + p.len)
			extset_insert(&sp->dirty, p.off, p.len);
		extset_destroy(&sp->ready);
		n = take(st, &sp->dirty, false, len, hint, want, out);
		*zeroed = false;
	}
	if (n <= 0)
		return n;
	if (*zeroed)
		PERF_ADD(st, zeroed_alloc_bytes, len);
	ret = provision(st, *out, n);
	if (ret) {
		give_back(st, *out, n, *zeroed);
		free(*out);
		*out = NULL;
		return ret;
	}
	return n;
}

int space_alloc(struct rawstore *st, uint64_t len, uint64_t hint, uint64_t want, bool partial,
		struct pext **out, bool *zeroed)
{
	struct rs_space *sp = st->space;
	int n = alloc_once(st, len, hint, want, partial, out, zeroed);

	/* Space freed by batches still being synced: wait for them, retry. */
	if (n == -ENOSPC && sp->held && sp->jobs.drain && sp->jobs.drain(st))
		n = alloc_once(st, len, hint, want, partial, out, zeroed);
	return n;
}

unsigned int space_plan_writes(struct rawstore *st, const struct pext *pieces, int n,
			       bool zeroed, uint64_t a0, uint64_t wa, uint64_t wb, uint8_t *buf,
			       struct rs_io *ios)
{
	uint64_t cur = 0, pad = 0;
	unsigned int k = 0;
	int i;

	for (i = 0; i < n; cur += pieces[i].len, i++) {
		uint64_t ls = a0 + cur, le = ls + pieces[i].len;
		uint64_t s = max_u64(ls, wa), e = min_u64(le, wb);

		if (!zeroed) {
			ios[k++] = (struct rs_io){ true, buf + cur, pieces[i].off, pieces[i].len, false };
			pad += pieces[i].len - (s < e ? e - s : 0);
		} else if (s < e) {
			ios[k++] = (struct rs_io){ true, buf + (s - a0), pieces[i].off + (s - ls),
						   e - s, false };
		}
	}
	if (pad)
		PERF_ADD(st, pad_bytes, pad);
	return k;
}

void space_unalloc(struct rawstore *st, const struct pext *v, size_t n)
{
	struct space_batch none;
	size_t i;

	/* Written, maybe: dirty.  Its allocation's "F" changes are staged
	 * (space_stage_begin): so is their undoing.  Else they are still in
	 * the open batch, to be rolled back or cleared: put back without a
	 * record. */
	if (!st->space->stage.on)
		space_batch_open(st, &none, NULL, 0);
	for (i = 0; i < n; i++) {
		if (!v[i].len)
			continue;
		extset_insert(&st->freeset, v[i].off, v[i].len);
		extset_insert(&st->space->dirty, v[i].off, v[i].len);
	}
	if (!st->space->stage.on)
		space_batch_close(st, &none);
}

int space_commit(struct rawstore *st, const struct pext_vec *allocs,
		 const struct pext_vec *frees, struct space_hold *h)
{
	struct rs_space *sp = st->space;
	uint64_t have, amount;
	struct pext *v;
	size_t i;
	int n, k, ret;

	ret = sp_prov_sync(st);
	if (ret)
		return ret;
	for (i = 0; i < allocs->n; i++)
		extset_remove(&st->unpunched, allocs->v[i].off, allocs->v[i].len);
	for (i = 0; i < frees->n; i++) {
		ret = extset_insert(&st->freeset, frees->v[i].off, frees->v[i].len);
		if (!ret)
			ret = extset_insert(&st->unpunched, frees->v[i].off, frees->v[i].len);
		/* Not dirty (allocatable, punchable) before the batch is durable. */
		if (!ret) {
			ret = pext_push(&h->frees, frees->v[i].off, frees->v[i].len);
			if (!ret)
				sp->held += frees->v[i].len;
		}
		if (ret)
			return rs_err(st, -EUCLEAN, "freeing [%llu, +%llu) twice: %s",
				      (unsigned long long)frees->v[i].off,
				      (unsigned long long)frees->v[i].len, strerror(-ret));
	}
	/* Ready some zeroed space for the next groups: its "Z" records go
	 * with this batch, so it is writable once the batch committed.  At
	 * most SP_READY_PIECES extents, largest first: space_batch_bound()
	 * counts on it. */
	have = sp->ready.total + sp->pending.total;
	for (k = 0; k < SP_READY_PIECES && have < sp->ready_target && sp->zeroed.total; k++) {
		amount = min_u64(sp->ready_target - have, extset_largest(&sp->zeroed));
		n = extset_alloc_contig(&sp->zeroed, amount, 0, 0, &v);
		if (n <= 0)
			break;
		for (i = 0; i < (size_t)n; i++) {
			extset_insert(&sp->pending, v[i].off, v[i].len);
			/* On failure it stays pending: never written, and
			 * recorded as zeroed again at close. */
			pext_push(&h->ready, v[i].off, v[i].len);
			have += v[i].len;
		}
		free(v);
	}
	return 0;
}

/*
 * Batch entries space_commit() and space_stage_end() may add for one
 * transaction's @allocs and @frees: a freed extent changes at most two
 * "F" and two "P" records (a put or resize, and a neighbour merged away);
 * an allocation deletes the "P" records inside it and splits at most one
 * more at each end.
 */
uint64_t space_txn_entries(struct rawstore *st, const struct pext *allocs, size_t na,
			   size_t nfrees)
{
	uint64_t e = 4 * (uint64_t)nfrees;
	struct pext p;
	size_t i;

	for (i = 0; i < na; i++) {
		uint64_t pos = allocs[i].off, end = allocs[i].off + allocs[i].len;

		e += 2;
		while (extset_next(&st->unpunched, pos, &p) && p.off < end) {
			e++;
			pos = p.off + p.len;
		}
	}
	return e;
}

/* Batch entries of the group being applied beyond its transactions'
 * (space_txn_entries): the staged "F"/"P" changes, the readied "Z"
 * records, and the "V" records rewritten when provisioning changed. */
uint64_t space_group_entries(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	uint64_t e;

	if (!sp)
		return 0;
	e = sp->stage.n + 2 * SP_READY_PIECES;
	if (sp->prov_dirty)
		e += sp->prov_recs + sp->provisioned.count;
	return e;
}

void space_release(struct rawstore *st, struct space_hold *h)
{
	struct rs_space *sp = st->space;
	size_t i;

	for (i = 0; i < h->frees.n; i++)
		extset_insert(&sp->dirty, h->frees.v[i].off, h->frees.v[i].len);
	for (i = 0; i < h->ready.n; i++) {
		extset_remove(&sp->pending, h->ready.v[i].off, h->ready.v[i].len);
		extset_insert(&sp->ready, h->ready.v[i].off, h->ready.v[i].len);
	}
	space_hold_free(st, h);
}

void space_hold_free(struct rawstore *st, struct space_hold *h)
{
	struct rs_space *sp = st->space;
	size_t i;

	/* Released or not, they are held no longer. */
	for (i = 0; i < h->frees.n; i++)
		sp->held -= h->frees.v[i].len;
	pext_vec_free(&h->frees);
	pext_vec_free(&h->ready);
}

uint64_t rs_debug_space_held(struct rawstore *st)
{
	return st->space->held;
}

void rs_debug_space_batches(struct rawstore *st, uint64_t *unbatched, uint64_t *overruns,
			    uint64_t *misnested)
{
	*unbatched = st->space->unbatched;
	*overruns = st->space->overruns;
	*misnested = st->space->misnested;
}

/* ---- mkfs ---- */

static int chunked(int (*verb)(struct rs_dev *, uint64_t, uint64_t), struct rs_dev *d,
		   uint64_t start, uint64_t end)
{
	uint64_t pos, len;
	int ret = 0;

	for (pos = start; pos < end && !ret; pos += len) {
		len = min_u64(end - pos, 1ULL << 30);
		ret = verb(d, pos, len);
	}
	return ret;
}

int space_mkfs(struct rs_dev *d, const struct rawstore_mkfs_opts *o, uint64_t start,
	       uint64_t end, struct rs_disk_space_policy *pol, bool *zeroed)
{
	const struct rs_dev_geom *g = dev_geom(d);
	int pre = o->prealloc_policy, ret;

	if (o->zero_policy < 0 || o->zero_policy > RAWSTORE_ZERO_PAD || o->punch_policy < 0 ||
	    o->punch_policy > RAWSTORE_PUNCH_INLINE || pre < 0 || pre > RAWSTORE_PREALLOC_STALE)
		return rs_err(NULL, -EINVAL, "mkfs: unknown space policy");
	if (g->is_bdev && pre > RAWSTORE_PREALLOC_NONE)
		return rs_err(NULL, -EINVAL, "mkfs: preallocation policy %s is for a store in a "
			      "regular file", rawstore_prealloc_policy_name(pre));
	memset(pol, 0, sizeof(*pol));
	pol->version = htole32(RS_SPACE_POLICY_VERSION);
	pol->zero = (uint8_t)(o->zero_policy ? o->zero_policy : RAWSTORE_ZERO_AUTO);
	pol->punch = (uint8_t)(o->punch_policy ? o->punch_policy :
			       g->is_bdev && g->provision_max ? RAWSTORE_PUNCH_BACKGROUND :
			       RAWSTORE_PUNCH_OPERATOR);
	pol->prealloc = (uint8_t)(g->is_bdev ? RAWSTORE_PREALLOC_NONE :
				  pre ? pre : RAWSTORE_PREALLOC_NONE);
	*zeroed = false;
	switch (pol->prealloc) {
	case RAWSTORE_PREALLOC_NONE:
	case RAWSTORE_PREALLOC_UNWRITTEN:
		/* Block device: punch is a write-zeroes (with unmap) that never
		 * falls back to writing zeros: cheap or EOPNOTSUPP.  File: holes. */
		ret = chunked(dev_punch_hole, d, start, end);
		if (ret && ret != -EOPNOTSUPP)
			return rs_err(NULL, ret, "mkfs: punching the data area failed");
		*zeroed = !ret;
		if (ret)
			rs_log(NULL, RAWSTORE_LOG_INFO, "mkfs: the device cannot punch (zero "
			       "cheaply); free space starts dirty");
		if (pol->prealloc == RAWSTORE_PREALLOC_UNWRITTEN) {
			ret = chunked(dev_provision, d, start, end);
			if (ret)
				return rs_err(NULL, ret, "mkfs: preallocating the file "
					      "(fallocate) failed");
		}
		break;
	case RAWSTORE_PREALLOC_WRITE_ZEROES:
		ret = chunked(dev_write_zeroes, d, start, end);
		if (ret)
			return rs_err(NULL, ret, "mkfs: FALLOC_FL_WRITE_ZEROES failed%s",
				      ret == -EOPNOTSUPP ? " (not supported by this kernel or "
				      "file system)" : "");
		*zeroed = true;
		break;
	case RAWSTORE_PREALLOC_STALE:
		ret = chunked(dev_prealloc_stale, d, start, end);
		if (ret)
			return rs_err(NULL, ret, "mkfs: FALLOC_FL_NO_HIDE_STALE failed%s",
				      ret == -EOPNOTSUPP ? " (needs the patched ext4 mounted with "
				      "nohide_stale_gid)" : ret == -EPERM ? " (not in the "
				      "nohide_stale group and no CAP_SYS_RAWIO)" : "");
		break;
	}
	return 0;
}

int space_grow(struct rawstore *st, rocksdb_writebatch_wi_t *wb, uint64_t off, uint64_t len)
{
	struct space_batch b;
	int ret;

	space_batch_open(st, &b, wb, UINT64_MAX);
	ret = extset_insert(&st->freeset, off, len);
	if (!ret)
		ret = extset_insert(&st->unpunched, off, len);
	if (!ret)
		ret = extset_insert(&st->space->dirty, off, len);
	space_batch_close(st, &b);
	if (ret)
		return rs_err(st, -EUCLEAN, "grow: [%llu, +%llu) is already free space",
			      (unsigned long long)off, (unsigned long long)len);
	return 0;
}
