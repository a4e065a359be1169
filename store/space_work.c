// SPDX-License-Identifier: MIT
/*
 * space_work.c: rounds that zero or punch free ranges, the background worker
 * that runs them (zero ahead, punch freed space), and reclaim and prepare on
 * the caller's thread (space.h), and the test hook that checks zeroed space.
 */

#include "space_int.h"

/* ---- rounds: zero or punch free ranges ---- */

static void round_reset(struct space_round *r)
{
	r->r.n = 0;
	r->done = 0;
	r->err = 0;
}

static int round_push(struct rawstore *st, struct space_round *r, uint64_t off, uint64_t len,
		      uint64_t *left)
{
	uint64_t U = st->min_alloc, u, run = off;
	int ret = 0;

	len = min_u64(len, *left);
	*left -= len;
	if (!deferred_busy(st, off, len))
		return pext_push(&r->r, off, len);
	/* Never a unit a pending deferred write targets: replay would write it. */
	for (u = off; u < off + len && !ret; u += U) {
		if (!deferred_busy(st, u, U))
			continue;
		if (u > run)
			ret = pext_push(&r->r, run, u - run);
		run = u + U;
	}
	if (!ret && off + len > run)
		ret = pext_push(&r->r, run, off + len - run);
	return ret;
}

/* Candidates: for punch, unpunched ranges that are dirty free space; for
 * zero, dirty free space that awaits no punch. */
static int round_collect(struct rawstore *st, struct space_round *r, uint64_t max)
{
	struct rs_space *sp = st->space;
	struct extset *base = r->kind == ROUND_PUNCH ? &st->unpunched : &sp->dirty;
	uint64_t left = max, pos = 0;
	struct pext b, d;
	int ret = 0;

	while (!ret && left && extset_next(base, pos, &b)) {
		uint64_t p = b.off, end = b.off + b.len;

		while (!ret && left && p < end) {
			if (r->kind == ROUND_PUNCH) {
				if (!extset_find(&sp->dirty, p, &d) || d.off >= end)
					break;
				p = max_u64(p, d.off);
				ret = round_push(st, r, p, min_u64(end, d.off + d.len) - p, &left);
				p = min_u64(end, d.off + d.len);
			} else {
				if (extset_find(&st->unpunched, p, &d) && d.off <= p) {
					p = d.off + d.len;
					continue;
				}
				if (extset_find(&st->unpunched, p, &d) && d.off < end) {
					ret = round_push(st, r, p, d.off - p, &left);
					p = d.off + d.len;
				} else {
					ret = round_push(st, r, p, end - p, &left);
					p = end;
				}
			}
		}
		pos = end;
	}
	return ret;
}

/* Commit thread: choose the ranges; with @take_out, move them out of the
 * free list into the in-flight set and commit that. */
static int round_pick(struct rawstore *st, struct space_round *r, uint64_t max, bool take_out)
{
	struct rs_space *sp = st->space;
	struct space_batch b;
	size_t i;
	int ret;

	round_reset(r);
	r->took_out = take_out;
	ret = round_collect(st, r, max);
	if (!ret && r->r.n) {
		int *res = realloc(r->res, r->r.n * sizeof(*res));

		if (!res)
			ret = -ENOMEM;
		else
			r->res = res;
	}
	if (ret || !r->r.n || !take_out)
		return ret;
	rocksdb_writebatch_wi_clear(st->wb);
	space_batch_open(st, &b, st->wb, UINT64_MAX);
	for (i = 0; i < r->r.n; i++) {
		sp_unfree(st, r->r.v[i].off, r->r.v[i].len);
		extset_insert(&sp->inflight, r->r.v[i].off, r->r.v[i].len);
	}
	space_batch_close(st, &b);
	return st->space->jobs.commit_wb(st);
}

/*
 * Zero free space: on a block device with punch-hole, which is a write-zeroes
 * that never falls back to writing zeros (ZERO_RANGE would: an offload can
 * only be asked for this way on a 6.1 block device); on a file with
 * FALLOC_FL_WRITE_ZEROES where the kernel has it, else ZERO_RANGE (unwritten
 * extents, cheap).
 */
static int zero_verb(struct rawstore *st, uint64_t off, uint64_t len)
{
	struct rs_space *sp = st->space;
	int ret;

	if (dev_geom(st->dev)->is_bdev)
		return dev_punch_hole(st->dev, off, len);
	if (!sp->wz_refused) {
		ret = dev_write_zeroes(st->dev, off, len);
		if (ret != -EOPNOTSUPP && ret != -EINVAL)
			return ret;
		sp->wz_refused = true;
	}
	return dev_zero_range(st->dev, off, len);
}

/* Any thread: zero or punch the ranges, then flush so the zeros are durable
 * before they are recorded. */
static void round_io(struct rawstore *st, struct space_round *r)
{
	struct rs_space *sp = st->space;
	size_t i;
	int ret;

	for (i = 0; i < r->r.n; i++) {
		const struct pext *p = &r->r.v[i];

		if (r->kind == ROUND_PUNCH && sp->discard_only) {
			ret = dev_discard(st->dev, p->off, p->len);
			ret = ret ? ret : 1;
		} else if (r->kind == ROUND_PUNCH) {
			ret = sp->punch_refused ? -EOPNOTSUPP : dev_punch_hole(st->dev, p->off, p->len);
			if (ret == -EOPNOTSUPP && dev_geom(st->dev)->provision_max &&
			    !dev_discard(st->dev, p->off, p->len)) {
				/* A thin device without write-zeroes (dm-thin): the
				 * discard returns the space, zeros not promised. */
				rs_log(st, RAWSTORE_LOG_INFO, "punch-hole refused; freed space "
				       "is discarded instead (returned to the pool, still dirty)");
				sp->discard_only = true;
				ret = 1;
			}
		} else {
			ret = sp->zero_refused ? -EOPNOTSUPP : zero_verb(st, p->off, p->len);
		}
		r->res[i] = ret;
		if (ret == -EOPNOTSUPP && r->kind == ROUND_PUNCH && !sp->punch_refused) {
			sp->punch_refused = true;
			rs_log(st, RAWSTORE_LOG_WARNING, "the device refuses punch-hole "
			       "(EOPNOTSUPP); freed ranges stay tracked as unpunched");
		} else if (ret == -EOPNOTSUPP && !sp->zero_refused && r->kind == ROUND_ZERO) {
			sp->zero_refused = true;
			rs_log(st, RAWSTORE_LOG_WARNING, "the device refuses zero-range "
			       "(EOPNOTSUPP); partial-unit writes pad");
		}
		if (ret < 0 && !r->err)
			r->err = ret;
		if (ret >= 0)
			r->done += p->len;
	}
	if (r->done) {
		ret = dev_flush(st->dev);
		if (ret < 0) {
			/* The device may have dropped its cache, with data
			 * written before (a deferred write whose record a later
			 * flush would delete): stop, as the commit path does. */
			rs_err(st, ret, "device flush after zeroing/punching failed; store stopped");
			rs_store_stop(st, ret);
			for (i = 0; i < r->r.n; i++)
				r->res[i] = ret;
			r->err = ret;
			r->done = 0;
		}
	}
	if (r->kind == ROUND_PUNCH) {
		PERF_ADD(st, bytes_punched, r->done);
	} else {
		PERF_ADD(st, prepared_bytes, r->done);
	}
}

/* Commit thread: record the results; failed ranges return dirty. */
static int round_finish(struct rawstore *st, struct space_round *r)
{
	struct rs_space *sp = st->space;
	uint64_t unbatched = sp->unbatched;
	struct space_batch b;
	size_t i;
	int ret;

	rocksdb_writebatch_wi_clear(st->wb);
	/* RS_FAIL_BATCH_OPEN (a test): a writer that forgot its batch; b is
	 * then never opened, and its changes count as unbatched. */
	if (!rs_fail_check(RS_FAIL_BATCH_OPEN))
		space_batch_open(st, &b, st->wb, UINT64_MAX);
	for (i = 0; i < r->r.n; i++) {
		const struct pext *p = &r->r.v[i];

		if (r->took_out) {
			extset_remove(&sp->inflight, p->off, p->len);
			extset_insert(&st->freeset, p->off, p->len);
		}
		if (r->res[i] == 1) {
			/* Discarded: space returned, contents unknown (dirty). */
			if (r->took_out)
				extset_insert(&sp->dirty, p->off, p->len);
			extset_remove(&st->unpunched, p->off, p->len);
			if (extset_overlap(&sp->provisioned, p->off, p->len)) {
				extset_remove(&sp->provisioned, p->off, p->len);
				sp_prov_changed(sp);
			}
			continue;
		}
		if (r->res[i]) {
			if (r->took_out)
				extset_insert(&sp->dirty, p->off, p->len);
			continue;
		}
		extset_remove(&sp->dirty, p->off, p->len);
		extset_insert(&sp->zeroed, p->off, p->len);
		/* Punched (or zeroed by a punch): provision again before use. */
		if (extset_overlap(&sp->provisioned, p->off, p->len)) {
			extset_remove(&sp->provisioned, p->off, p->len);
			sp_prov_changed(sp);
		}
		if (r->kind == ROUND_PUNCH)
			extset_remove(&st->unpunched, p->off, p->len);
	}
	ret = sp_prov_sync(st);
	if (st->space->out == &b)
		space_batch_close(st, &b);
	if (!ret && st->space->unbatched != unbatched)
		ret = -EUCLEAN;	/* a change found no batch: not committed */
	if (!ret)
		ret = st->space->jobs.commit_wb(st);
	if (!ret)
		rs_crash_check(st, RS_CRASH_SPACE_RECORDED);
	r->r.n = 0;
	return ret;
}

static bool round_kind_ok(struct rawstore *st, enum round_kind kind)
{
	return kind == ROUND_PUNCH ? !st->space->punch_refused : !st->space->zero_refused;
}

/* The inline policy, on the commit thread right after a commit: punch in
 * place (nothing allocates meanwhile), flush, record. */
static void punch_inline(struct rawstore *st)
{
	struct space_round r = { .kind = ROUND_PUNCH };
	int ret;

	if (!st->unpunched.total || st->space->punch_refused)
		return;
	ret = round_pick(st, &r, UINT64_MAX, false);
	if (!ret && r.r.n) {
		round_io(st, &r);
		rs_crash_check(st, RS_CRASH_SPACE_IO_DONE);
		ret = round_finish(st, &r);
		if (!ret)
			PERF_ADD(st, punched_background, r.done);
	}
	pext_vec_free(&r.r);
	free(r.res);
}

bool space_punches_inline(const struct rawstore *st)
{
	return st->space->punch_mode == RAWSTORE_PUNCH_INLINE;
}

void space_after_commit(struct rawstore *st)
{
	struct rs_space *sp = st->space;

	if (sp->punch_mode == RAWSTORE_PUNCH_INLINE) {
		punch_inline(st);
		rocksdb_writebatch_wi_clear(st->wb);
	}
	if ((sp->punch_mode == RAWSTORE_PUNCH_BACKGROUND && st->unpunched.total) ||
	    (sp->zero_mode == RAWSTORE_ZERO_PREPARE &&
	     sp->zeroed.total + sp->ready.total < sp->target / 2)) {
		pthread_mutex_lock(&sp->lock);
		sp->kick = true;
		pthread_cond_signal(&sp->cond);
		pthread_mutex_unlock(&sp->lock);
	}
}

struct pick_arg {
	enum round_kind kind;
	uint64_t max;
	bool retire;			/* delete applied deferred records first */
};

static int pick_job(struct rawstore *st, void *arg)
{
	struct pick_arg *a = arg;
	struct rs_space *sp = st->space;
	int ret;

	if (rs_failed(st))
		return rs_failed(st);
	if (a->retire) {
		ret = deferred_retire(st);
		if (ret)
			return ret;
	}
	sp->round.kind = a->kind;
	ret = round_pick(st, &sp->round, a->max, true);
	pthread_mutex_lock(&sp->lock);
	sp->round.state = !ret && sp->round.r.n ? R_PICKED : R_IDLE;
	pthread_mutex_unlock(&sp->lock);
	return ret;
}

static int finish_job(struct rawstore *st, void *arg)
{
	struct rs_space *sp = st->space;
	int ret = 0;

	(void)arg;
	pthread_mutex_lock(&sp->lock);
	if (sp->round.state == R_IO_DONE) {
		ret = round_finish(st, &sp->round);
		sp->round.state = R_IDLE;
	}
	pthread_mutex_unlock(&sp->lock);
	return ret;
}

int space_quiesce(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	int ret = 0;

	pthread_mutex_lock(&sp->lock);
	while (sp->round.state == R_PICKED)
		pthread_cond_wait(&sp->cond, &sp->lock);
	if (sp->round.state == R_IO_DONE) {
		ret = round_finish(st, &sp->round);
		sp->round.state = R_IDLE;
	}
	pthread_mutex_unlock(&sp->lock);
	return ret;
}

/*
 * One round off the commit thread: take ranges out (job), zero or punch
 * them here, record the result (job).  Returns the bytes done, or -errno
 * (*@err gets the first I/O error, e.g. -EOPNOTSUPP).
 */
static int64_t run_round(struct rawstore *st, enum round_kind kind, uint64_t max, bool retire,
			 int *err)
{
	struct rs_space *sp = st->space;
	struct pick_arg a = { kind, min_u64(max, ROUND_MAX), retire };
	int64_t done;
	int ret;

	*err = 0;
	if (!round_kind_ok(st, kind)) {
		*err = -EOPNOTSUPP;
		return 0;
	}
	pthread_mutex_lock(&sp->round_lock);
	ret = st->space->jobs.run(st, pick_job, &a);
	if (ret || sp->round.state != R_PICKED) {
		pthread_mutex_unlock(&sp->round_lock);
		return ret;
	}
	rs_crash_check(st, RS_CRASH_SPACE_PICKED);
	round_io(st, &sp->round);
	rs_crash_check(st, RS_CRASH_SPACE_IO_DONE);
	done = (int64_t)sp->round.done;
	*err = sp->round.err;
	pthread_mutex_lock(&sp->lock);
	sp->round.state = R_IO_DONE;
	pthread_cond_broadcast(&sp->cond);
	pthread_mutex_unlock(&sp->lock);
	ret = st->space->jobs.run(st, finish_job, NULL);
	pthread_mutex_unlock(&sp->round_lock);
	return ret ? ret : done;
}

/* ---- the background worker ---- */

static void snap_get(struct rawstore *st, uint64_t *unpunched, uint64_t *zeroed,
		     uint64_t *dirty)
{
	pthread_rwlock_rdlock(&st->rwlock);
	*unpunched = st->snap.unpunched;
	*zeroed = st->space->snap.zeroed;
	*dirty = st->space->snap.dirty;
	pthread_rwlock_unlock(&st->rwlock);
}

/* Sleep @ms or until kicked or stopped; true if stopping. */
static bool worker_wait(struct rs_space *sp, uint64_t ms, bool kickable)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&sp->lock);
	while (!sp->stop && !(kickable && sp->kick))
		if (pthread_cond_timedwait(&sp->cond, &sp->lock, &ts))
			break;
	if (kickable)
		sp->kick = false;
	stop = sp->stop;
	pthread_mutex_unlock(&sp->lock);
	return stop;
}

static void *worker_main(void *arg)
{
	struct rawstore *st = arg;
	struct rs_space *sp = st->space;
	uint64_t wait_ms = TICK_MS;
	bool filling = true;

	while (!worker_wait(sp, wait_ms, true)) {
		uint64_t unp, zeroed, dirty, rate = 0;
		int64_t done = 0;
		int err;

		wait_ms = TICK_MS;
		if (rs_failed(st))
			continue;
		snap_get(st, &unp, &zeroed, &dirty);
		if (sp->punch_mode == RAWSTORE_PUNCH_BACKGROUND && unp &&
		    round_kind_ok(st, ROUND_PUNCH)) {
			done = run_round(st, ROUND_PUNCH, ROUND_MAX, false, &err);
			if (done > 0)
				PERF_ADD(st, punched_background, (uint64_t)done);
			rate = sp->punch_rate;
		}
		/* Below half the target, zero up to the target: few large rounds. */
		if (zeroed < sp->target / 2)
			filling = true;
		else if (zeroed >= sp->target)
			filling = false;
		if (done <= 0 && sp->zero_mode == RAWSTORE_ZERO_PREPARE && filling &&
		    zeroed < sp->target && dirty > unp && round_kind_ok(st, ROUND_ZERO)) {
			done = run_round(st, ROUND_ZERO, sp->target - zeroed, false, &err);
			rate = sp->prepare_rate;
		}
		if (done > 0) {
			/* Rate limit: the next round after done / rate seconds. */
			wait_ms = (uint64_t)done * 1000 / rate;
			if (worker_wait(sp, wait_ms, false))
				break;
			wait_ms = 0;
		}
	}
	return NULL;
}

/* Zero-range 1 MiB of free space (harmless: it is free and stays labelled
 * as it was) and time it; the block layer writes zeros itself where the
 * device has no write-zeroes offload (sysfs says 0). */
static void probe_zero(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	const struct rs_dev_geom *g = dev_geom(st->dev);
	struct pext p;
	uint64_t len, t0;
	int ret;

	if (!extset_next(&sp->dirty, 0, &p) && !extset_next(&sp->zeroed, 0, &p))
		return;
	len = min_u64(p.len, PROBE_LEN);
	t0 = rs_now_ns();
	/* Block device: punch never falls back, so success is offload. */
	ret = zero_verb(st, p.off, len);
	sp->probe_ns = rs_now_ns() - t0;
	/* A punch (block device) gives the range back to a thin pool: it is
	 * not provisioned any more, and an allocation there must provision
	 * it again (a full pool is then -ENOSPC, not a failed data write).
	 * Recorded with the next batch; forgetting a range that stayed
	 * provisioned (a file) only costs a provisioning call. */
	if (ret != -EOPNOTSUPP && extset_overlap(&sp->provisioned, p.off, len)) {
		extset_remove(&sp->provisioned, p.off, len);
		sp_prov_changed(sp);
	}
	sp->offload = !ret;
	if (ret == -EOPNOTSUPP && !g->is_bdev)
		sp->zero_refused = true;
	if (!sp->offload)
		rs_log(st, sp->rec.zero == RAWSTORE_ZERO_PREPARE ? RAWSTORE_LOG_WARNING :
		       RAWSTORE_LOG_INFO, "zero-range is not offloaded on this device (%s; "
		       "%llu bytes took %llu us)%s", ret ? strerror(-ret) :
		       "the kernel writes zeros", (unsigned long long)len,
		       (unsigned long long)(sp->probe_ns / 1000),
		       sp->rec.zero == RAWSTORE_ZERO_PREPARE ? "; preparing anyway, as recorded" :
		       "; partial-unit writes pad instead");
	else
		rs_log(st, RAWSTORE_LOG_INFO, "zero-range offloaded: %llu bytes in %llu us",
		       (unsigned long long)len, (unsigned long long)(sp->probe_ns / 1000));
}

static int record_policy(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	struct rs_disk_space_policy rec = sp->rec;
	int z = st->opts.zero_policy, p = st->opts.punch_policy;
	struct rs_key k;

	if (z < 0 || z > RAWSTORE_ZERO_PAD || p < 0 || p > RAWSTORE_PUNCH_INLINE)
		return rs_err(st, -EINVAL, "open: zero_policy %d / punch_policy %d invalid", z, p);
	if (z)
		rec.zero = (uint8_t)z;
	if (p)
		rec.punch = (uint8_t)p;
	if (!memcmp(&rec, &sp->rec, sizeof(rec)))
		return 0;
	sp->rec = rec;
	sp_key_policy(&k);
	return meta_put_sync(st->meta, &k, &rec, sizeof(rec));
}

int space_start(struct rawstore *st, const struct rs_job_runner *jobs)
{
	struct rs_space *sp = st->space;
	const struct rs_dev_geom *g = dev_geom(st->dev);
	uint64_t data = st->data_end - st->data_start;
	int ret;

	sp->jobs = *jobs;
	if (st->opts.read_only) {
		/* Nothing is written: no policy record, no probe, no worker;
		 * info shows the recorded policies ("auto" unresolved). */
		sp->punch_mode = sp->rec.punch;
		sp->zero_mode = sp->rec.zero;
		space_snapshot(st);
		return 0;
	}
	ret = record_policy(st);
	if (ret)
		return ret;
	sp->target = st->opts.zeroed_target ? st->opts.zeroed_target :
		     min_u64(data / 8, 1ULL << 30);
	sp->target = round_down(sp->target, st->min_alloc);
	sp->ready_target = min_u64(max_u64(round_down(sp->target / 4, st->min_alloc),
					   16ULL * st->min_alloc), 64ULL << 20);
	sp->prepare_rate = st->opts.prepare_rate ? st->opts.prepare_rate : 256ULL << 20;
	sp->punch_rate = st->opts.punch_rate ? st->opts.punch_rate : 1ULL << 30;
	sp->punch_mode = sp->rec.punch;
	sp->provisioning = g->is_bdev ? g->provision_max > 0 :
			   sp->rec.prealloc <= RAWSTORE_PREALLOC_NONE;
	if (sp->rec.zero != RAWSTORE_ZERO_PAD)
		probe_zero(st);	/* padding needs no probe (nor its write) */
	if (sp->prov_dirty) {
		/* The probe unprovisioned a range: record it before anything
		 * can be allocated there (open has not returned yet). */
		struct space_batch b;

		rocksdb_writebatch_wi_clear(st->wb);
		space_batch_open(st, &b, st->wb, UINT64_MAX);
		ret = sp_prov_sync(st);
		space_batch_close(st, &b);
		if (!ret)
			ret = meta_commit(st->meta, st->wb);
		rocksdb_writebatch_wi_clear(st->wb);
		if (ret)
			return rs_err(st, ret, "open: recording the range the zero probe "
				      "unprovisioned failed");
	}
	sp->zero_mode = sp->rec.zero;
	if (sp->zero_mode == RAWSTORE_ZERO_AUTO)
		sp->zero_mode = sp->offload ? RAWSTORE_ZERO_PREPARE : RAWSTORE_ZERO_PAD;
	if (sp->zero_refused)
		sp->zero_mode = RAWSTORE_ZERO_PAD;
	/* Ready space for the first groups now, not in their commit path
	 * (nothing is queued yet: open has not returned). */
	if (sp->zeroed.total) {
		ret = sp_claim(st, min_u64(sp->ready_target, sp->zeroed.total));
		if (ret) {
			char m[200];

			snprintf(m, sizeof(m), "%s", rawstore_errmsg());
			return rs_err(st, ret, "open: %s", m);
		}
	}
	space_snapshot(st);
	if (sp->zero_mode != RAWSTORE_ZERO_PREPARE && sp->punch_mode != RAWSTORE_PUNCH_BACKGROUND)
		return 0;
	ret = -pthread_create(&sp->thread, NULL, worker_main, st);
	if (!ret) {
		sp->running = true;
		pthread_mutex_lock(&sp->lock);
		sp->kick = true;
		pthread_cond_signal(&sp->cond);
		pthread_mutex_unlock(&sp->lock);
	}
	return ret;
}

void space_stop(struct rawstore *st)
{
	struct rs_space *sp = st->space;

	if (!sp || !sp->running)
		return;
	pthread_mutex_lock(&sp->lock);
	sp->stop = true;
	pthread_cond_broadcast(&sp->cond);
	pthread_mutex_unlock(&sp->lock);
	pthread_join(sp->thread, NULL);
	sp->running = false;
}

void space_close(struct rawstore *st, bool healthy)
{
	struct rs_space *sp = st->space;
	struct space_batch b;
	struct pext p;
	uint64_t pos;

	if (!healthy || !sp || !(sp->ready.total + sp->pending.total))
		return;
	/* Ready space was written by nobody: record it as zeroed again. */
	rocksdb_writebatch_wi_clear(st->wb);
	space_batch_open(st, &b, st->wb, UINT64_MAX);
	for (pos = 0; extset_next(&sp->ready, pos, &p); pos = p.off + p.len)
		extset_insert(&sp->zeroed, p.off, p.len);
	for (pos = 0; extset_next(&sp->pending, pos, &p); pos = p.off + p.len)
		extset_insert(&sp->zeroed, p.off, p.len);
	space_batch_close(st, &b);
	extset_destroy(&sp->ready);
	extset_destroy(&sp->pending);
	meta_commit(st->meta, st->wb);
	rocksdb_writebatch_wi_clear(st->wb);
}

/* ---- reclaim and prepare (caller's thread) ---- */

void rawstore_space_opts_init(struct rawstore_space_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->struct_size = sizeof(*o);
}

struct count_arg {
	enum round_kind kind;
	uint64_t max, bytes;
};

/* Commit thread: the bytes a run would zero or punch now. */
static int count_job(struct rawstore *st, void *arg)
{
	struct count_arg *a = arg;
	struct space_round r = { .kind = a->kind };
	size_t i;
	int ret;

	ret = space_quiesce(st);
	if (!ret)
		ret = round_collect(st, &r, a->max);
	for (i = 0; !ret && i < r.r.n; i++)
		a->bytes += r.r.v[i].len;
	pext_vec_free(&r.r);
	return ret;
}

/*
 * Zero or punch free space in rounds on the caller's thread: at most
 * o->max_bytes (unit aligned), at most o->rate bytes/s, reporting progress.
 * Returns the bytes done, or (dry run) the bytes that would be.
 */
static int64_t space_run(struct rawstore *st, enum round_kind kind,
			 const struct rawstore_space_opts *uo, const char *what)
{
	struct rawstore_space_opts o;
	struct count_arg ca = { kind, 0, 0 };
	uint64_t total = 0, left, step, t0;
	int64_t done = 0;
	int err, ret;

	if (!st)
		return -EINVAL;
	rawstore_space_opts_init(&o);
	if (uo) {
		if (uo->struct_size < sizeof(size_t) || uo->struct_size > sizeof(o))
			return rs_err(st, -EINVAL, "%s: bad options struct_size", what);
		memcpy(&o, uo, uo->struct_size);
	}
	if (st->opts.read_only && !o.dry_run)
		return rs_err(st, -EROFS, "%s: the store is open read-only", what);
	if (st->space->jobs.on_thread(st))
		return -EDEADLK;
	rs_clear_err();
	left = UINT64_MAX;
	if (o.max_bytes)
		left = max_u64(round_down(o.max_bytes, st->min_alloc), st->min_alloc);
	ca.max = left;
	if (o.dry_run || o.progress) {
		ret = st->space->jobs.run(st, count_job, &ca);
		if (ret)
			return ret;
		if (o.dry_run)
			return (int64_t)ca.bytes;
	}
	/* Rounds small enough that the rate limit paces smoothly. */
	step = ROUND_MAX;
	if (o.rate)
		step = min_u64(step, max_u64(round_down(o.rate / 4, st->min_alloc),
					     st->min_alloc));
	if (o.progress)
		o.progress(o.progress_arg, 0, ca.bytes);
	t0 = rs_now_ns();
	do {
		if (o.stop && *o.stop)
			break;
		done = run_round(st, kind, min_u64(left, step), true, &err);
		if (err)
			return rs_err(st, err, "%s: %s failed: %s", what,
				      kind == ROUND_PUNCH ? "punching freed space" : "zero-range",
				      strerror(-err));
		if (done <= 0)
			break;
		total += (uint64_t)done;
		left -= min_u64(left, (uint64_t)done);
		if (o.progress)
			o.progress(o.progress_arg, total, max_u64(ca.bytes, total));
		if (o.rate && left) {
			uint64_t due = (uint64_t)((double)total / (double)o.rate * 1e9);
			uint64_t el = rs_now_ns() - t0;

			if (due > el) {
				struct timespec ts = { (time_t)((due - el) / 1000000000ULL),
						       (long)((due - el) % 1000000000ULL) };

				while (nanosleep(&ts, &ts) && errno == EINTR && !(o.stop && *o.stop))
					;
			}
		}
	} while (left);
	return done < 0 ? done : (int64_t)total;
}

int64_t rawstore_space_reclaim(struct rawstore *st, const struct rawstore_space_opts *o)
{
	return space_run(st, ROUND_PUNCH, o, "reclaim");
}

int64_t rawstore_space_prepare(struct rawstore *st, const struct rawstore_space_opts *o)
{
	return space_run(st, ROUND_ZERO, o, "prepare");
}

int rawstore_reclaim(struct rawstore *st)
{
	int64_t ret = space_run(st, ROUND_PUNCH, NULL, "reclaim");

	return ret < 0 ? (int)ret : 0;
}

int64_t rawstore_prepare(struct rawstore *st, uint64_t max_bytes)
{
	struct rawstore_space_opts o;

	rawstore_space_opts_init(&o);
	o.max_bytes = max_bytes;
	return space_run(st, ROUND_ZERO, &o, "prepare");
}

/* rawstore_records_get: the in-memory parts (commit thread or read-only). */
void space_records(struct rawstore *st, struct rawstore_records *r)
{
	struct rs_space *sp = st->space;

	r->dirty_extents = sp->dirty.count;
	r->zero_policy = rawstore_zero_policy_name(sp->rec.zero);
	r->punch_policy = rawstore_punch_policy_name(sp->rec.punch);
	r->prealloc_policy = rawstore_prealloc_policy_name(sp->rec.prealloc ? sp->rec.prealloc :
							   RAWSTORE_PREALLOC_NONE);
}

/* ---- test hook (debug.h) ---- */

static int check_zero_set(struct rawstore *st, const struct extset *set, const char *name)
{
	const size_t chunk = 1U << 20;
	uint8_t *buf = rs_alloc_aligned(chunk);
	struct pext p;
	uint64_t pos, o;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (pos = 0; !ret && extset_next(set, pos, &p); pos = p.off + p.len) {
		for (o = p.off; !ret && o < p.off + p.len; o += chunk) {
			size_t n = (size_t)min_u64(chunk, p.off + p.len - o), i;

			ret = dev_read(st->dev, buf, o, n);
			for (i = 0; !ret && i < n; i++)
				if (buf[i])
					ret = rs_err(st, -EUCLEAN, "%s range [%llu, +%llu): byte at "
						     "%llu is not zero", name,
						     (unsigned long long)p.off,
						     (unsigned long long)p.len,
						     (unsigned long long)(o + i));
		}
	}
	free(buf);
	return ret;
}

static int check_zeroed_job(struct rawstore *st, void *arg)
{
	struct rs_space *sp = st->space;
	int ret;

	(void)arg;
	ret = space_quiesce(st);
	if (!ret)
		ret = check_zero_set(st, &sp->zeroed, "zeroed");
	if (!ret)
		ret = check_zero_set(st, &sp->ready, "ready");
	if (!ret)
		ret = check_zero_set(st, &sp->pending, "pending");
	return ret;
}

int rs_debug_check_zeroed(struct rawstore *st)
{
	return st->space->jobs.run(st, check_zeroed_job, NULL);
}
