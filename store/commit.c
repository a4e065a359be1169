// SPDX-License-Identifier: MIT
/*
 * commit.c: the commit thread and the sync thread.  A group of queued
 * transactions is applied into st->wb (each behind a save point, so a
 * failed one vanishes), the device is flushed once for the group's new
 * data, and the batch is written to RocksDB, not synced, under the write
 * lock.  The sync thread makes written batches durable (one WAL sync for
 * all of them) while the commit thread goes on with the next group; once
 * a group is durable, the commit thread releases its frees (reusable only
 * now) and runs its callbacks.  A group with deferred writes waits for its
 * sync before they are applied, outside the write lock: readers lay the
 * queue of deferred writes over their reads until the data is in place.
 *
 * "The commit thread" below means whoever holds the commit role: a
 * synchronous submitter that found no group in progress leads on its own
 * thread (lead_group), else the commit thread proper (worker_main).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "commit.h"
#include "debug.h"
#include "deferred.h"
#include "internal.h"
#include "journal.h"
#include "space.h"
#include "util.h"

/* How long the commit thread waits for a group's writes before it looks
 * for transactions that may join the group. */
#define JOIN_WAIT_US 200

/* Joining stops once a group carries this much write data: beyond it the
 * device is busy anyway, and later arrivals are better applied as the
 * next group while this one syncs. */
#define JOIN_MAX_BYTES (32ULL << 20)

/* Object ids are recorded this far ahead of the next one handed out, so
 * the "N" record is written once per NID_RESERVE new objects, not by every
 * group that creates one.  Ids skipped by a reopen are never used. */
#define NID_RESERVE 1024

/* Groups written and not yet durable, beyond the one being applied. */
#define PIPE_DEPTH 2
#define PIPE_SLOTS (PIPE_DEPTH + 1)

struct pipe_group {
	struct rawstore_txn **ts;	/* max_group entries */
	unsigned int n, ok;
	uint64_t seq;			/* complete once durable >= seq */
	bool wrote;			/* its batch was written */
	bool released;			/* its hold was released (commit_drain) */
	bool acked;			/* completed before its deferred writes */
	size_t n_done;			/* deferred records its batch deleted */
	struct space_hold hold;
};

struct rs_pipe {
	/* Commit thread only. */
	struct pipe_group g[PIPE_SLOTS];
	unsigned int head, count;	/* in flight: g[head], g[head + 1], ... */
	size_t done_del;		/* applied deferred records whose deletion
					 * is in a batch in flight */
	/* Under st->qlock. */
	uint64_t written, durable;	/* batches written / durable */
	uint64_t want;			/* the sync thread syncs while durable < want */
	bool syncing;			/* a thread syncs the WAL */
	int err;			/* a WAL sync failed */
	char msg[256];
	bool stop;
	pthread_cond_t cond;		/* wakes the sync thread */
	pthread_t thread;
};

static void *worker_main(void *arg);
static void *sync_main(void *arg);
static void deferred_settle(struct rawstore *st);

/* Test hook (debug.h): while set, the sync thread does not sync. */
static int sync_held;
/* Test hooks: group writes reported in flight; join waits so far. */
static int writes_held;
static uint64_t join_waits;
static uint64_t last_batch_entries;

void rs_debug_hold_writes(int hold)
{
	__atomic_store_n(&writes_held, hold, __ATOMIC_RELEASE);
}

uint64_t rs_debug_join_waits(void)
{
	return __atomic_load_n(&join_waits, __ATOMIC_ACQUIRE);
}

uint64_t rs_debug_last_batch_entries(void)
{
	return __atomic_load_n(&last_batch_entries, __ATOMIC_ACQUIRE);
}

static uint64_t group_bytes(struct rawstore_txn *const *ts, unsigned int n)
{
	uint64_t b = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		b += ts[i]->bytes;
	return b;
}

/*
 * Wait a little for the group's writes; false while some are in flight
 * (or the test hook holds them).
 */
static bool group_writes_done(struct rawstore *st)
{
	bool done = dev_wq_wait_for(st->dev, JOIN_WAIT_US);

	if (done && !__atomic_load_n(&writes_held, __ATOMIC_ACQUIRE))
		return true;
	if (done)
		usleep(JOIN_WAIT_US);
	__atomic_add_fetch(&join_waits, 1, __ATOMIC_RELEASE);
	return false;
}

void rs_debug_hold_sync(int hold)
{
	__atomic_store_n(&sync_held, hold, __ATOMIC_RELEASE);
}

static int settle_job(struct rawstore *st, void *arg)
{
	(void)st;
	(void)arg;
	return 0;
}

void rs_debug_commit_settle(struct rawstore *st)
{
	rs_run_job(st, settle_job, NULL);
}

uint64_t rs_debug_batches_written(struct rawstore *st)
{
	uint64_t w;

	pthread_mutex_lock(&st->qlock);
	w = st->pipe->written;
	pthread_mutex_unlock(&st->qlock);
	return w;
}

size_t rs_debug_deferred_in_flight(struct rawstore *st)
{
	size_t n;

	pthread_rwlock_rdlock(&st->rwlock);
	n = st->defq.fly_n;
	pthread_rwlock_unlock(&st->rwlock);
	return n;
}

static void pipe_free(struct rs_pipe *p)
{
	unsigned int i;

	for (i = 0; i < PIPE_SLOTS; i++)
		free(p->g[i].ts);
	free(p);
}

int commit_start(struct rawstore *st)
{
	struct rs_pipe *p;
	unsigned int i;
	int ret = ocache_create(&st->ocache);

	if (ret)
		return ret;
	p = calloc(1, sizeof(*p));
	for (i = 0; p && i < PIPE_SLOTS; i++) {
		p->g[i].ts = calloc(st->opts.max_group, sizeof(*p->g[i].ts));
		if (!p->g[i].ts) {
			pipe_free(p);
			p = NULL;
		}
	}
	if (!p) {
		ret = -ENOMEM;
		goto out_ocache;
	}
	st->pipe = p;
	pthread_mutex_init(&st->qlock, NULL);
	pthread_cond_init(&st->qcond, NULL);
	pthread_cond_init(&st->wcond, NULL);
	pthread_cond_init(&st->qroom, NULL);
	pthread_cond_init(&p->cond, NULL);
	ret = -pthread_create(&p->thread, NULL, sync_main, st);
	if (ret)
		goto out_pipe;
	ret = -pthread_create(&st->worker, NULL, worker_main, st);
	if (!ret)
		return 0;
	pthread_mutex_lock(&st->qlock);
	p->stop = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&st->qlock);
	pthread_join(p->thread, NULL);
out_pipe:
	pipe_free(p);
	st->pipe = NULL;
out_ocache:
	ocache_destroy(st->ocache);
	st->ocache = NULL;
	return ret;
}

void commit_stop(struct rawstore *st)
{
	struct rs_pipe *p = st->pipe;

	pthread_mutex_lock(&st->qlock);
	st->stopping = true;
	pthread_cond_broadcast(&st->qcond);
	pthread_cond_broadcast(&st->wcond);
	pthread_cond_broadcast(&st->qroom);
	pthread_mutex_unlock(&st->qlock);
	/* The commit thread finishes the queue and waits for every sync. */
	pthread_join(st->worker, NULL);
	/* and the last in-place writes (a failure stops the store) */
	deferred_settle(st);
	pthread_mutex_lock(&st->qlock);
	p->stop = true;
	pthread_cond_signal(&p->cond);
	pthread_mutex_unlock(&st->qlock);
	pthread_join(p->thread, NULL);
	pipe_free(p);
	st->pipe = NULL;
	keyvec_free(&st->ocache_dirty);
	ocache_destroy(st->ocache);
	st->ocache = NULL;
}

/* The store whose commit role this thread holds, if any. */
static __thread struct rawstore *role_of;

bool commit_on_thread(struct rawstore *st)
{
	return role_of == st;
}

/*
 * Take the commit role (call with qlock, the role free).  Returns the
 * store this thread held the role of before (a callback of another store
 * leading a group of this one), for role_give_up().  Whoever takes the
 * role under qlock sees every change its last holder made before giving
 * it up under qlock: the state "of the commit thread" passes with it.
 */
static struct rawstore *role_take(struct rawstore *st)
{
	struct rawstore *prev = role_of;

	st->leading = true;
	role_of = st;
	return prev;
}

/* Give the role up (call with qlock); wake the commit thread if work is
 * left (queued, groups in flight) or the store stops. */
static void role_give_up(struct rawstore *st, struct rawstore *prev)
{
	st->leading = false;
	role_of = prev;
	if (st->qhead || st->pipe->count || st->stopping)
		pthread_cond_signal(&st->wcond);
}

static bool sync_is_held(void)
{
	return __atomic_load_n(&sync_held, __ATOMIC_ACQUIRE);
}

/* May this thread sync the WAL now?  (Call with qlock.) */
static bool can_sync(struct rs_pipe *p)
{
	return !p->syncing && !p->err && p->durable < p->written && !sync_is_held();
}

/*
 * Sync the WAL (call with qlock, can_sync() true; drops it meanwhile) and
 * mark every batch written before the sync began durable.  RocksDB syncs
 * all that was written, so one sync serves many groups.  The commit thread
 * syncs itself when it would only wait; the sync thread when the commit
 * thread goes on with the next group (p->want).
 */
static void sync_locked(struct rawstore *st)
{
	struct rs_pipe *p = st->pipe;
	char msg[sizeof(p->msg)];
	uint64_t w = p->written;
	int ret;

	p->syncing = true;
	pthread_mutex_unlock(&st->qlock);
	if (rs_fail_check(RS_FAIL_SYNC)) {
		ret = -EIO;
		snprintf(msg, sizeof(msg), "RocksDB WAL sync: injected failure");
	} else {
		ret = meta_sync_wal(st->meta, msg, sizeof(msg));
	}
	PERF_ADD(st, db_syncs, 1);
	pthread_mutex_lock(&st->qlock);
	p->syncing = false;
	if (ret) {
		p->err = ret;
		memcpy(p->msg, msg, sizeof(msg));
	} else if (w > p->durable) {
		p->durable = w;
	}
	/* Only the role's holder waits on qcond. */
	pthread_cond_broadcast(&st->qcond);
	pthread_cond_signal(&p->cond);
}

/*
 * Commit thread, waiting for a batch to be durable or for work (call with
 * qlock): sync here if nobody does, else leave it to the sync thread
 * (held by the test hook, or syncing already) and wait.
 */
static void sync_or_wait(struct rawstore *st)
{
	struct rs_pipe *p = st->pipe;

	if (can_sync(p)) {
		sync_locked(st);
		return;
	}
	if (p->want < p->written && p->durable < p->written) {
		p->want = p->written;
		pthread_cond_signal(&p->cond);
	}
	pthread_cond_wait(&st->qcond, &st->qlock);
}

/* Commit thread: have the sync thread sync what was written so far. */
static void sync_kick(struct rawstore *st)
{
	struct rs_pipe *p = st->pipe;

	pthread_mutex_lock(&st->qlock);
	if (p->want < p->written && p->durable < p->written) {
		p->want = p->written;
		pthread_cond_signal(&p->cond);
	}
	pthread_mutex_unlock(&st->qlock);
}

static void *sync_main(void *arg)
{
	struct rawstore *st = arg;
	struct rs_pipe *p = st->pipe;

	pthread_mutex_lock(&st->qlock);
	for (;;) {
		if (p->durable < p->want && can_sync(p)) {
			sync_locked(st);
			continue;
		}
		if (p->stop)
			break;
		if (sync_is_held()) {
			/* Test hook: look again soon. */
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 2000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&p->cond, &st->qlock, &ts);
		} else {
			pthread_cond_wait(&p->cond, &st->qlock);
		}
	}
	pthread_mutex_unlock(&st->qlock);
	return NULL;
}

/* Give back @t's room in the queue (it completes now). */
static void queue_release(struct rawstore *st, const struct rawstore_txn *t)
{
	pthread_mutex_lock(&st->qlock);
	st->q_txns--;
	st->q_bytes -= t->q_bytes;
	pthread_cond_broadcast(&st->qroom);
	pthread_mutex_unlock(&st->qlock);
}

static void complete(struct rawstore *st, struct rawstore_txn *t, int result)
{
	rawstore_txn_cb cb = t->cb;
	void *arg = t->cb_arg;

	queue_release(st, t);
	t->result = result;
	/* The callback (on this thread) sees the message in rawstore_errmsg(). */
	if (result)
		rs_set_errmsg(t->errmsg);
	__atomic_store_n(&t->in_flight, false, __ATOMIC_RELEASE);
	if (cb)
		cb(t, result, arg);
}

/* Fail @t with @result and this thread's last message (or a plain one). */
static void txn_fail(struct rawstore_txn *t, int result)
{
	const char *msg = rawstore_errmsg();

	t->result = result;
	if (*msg)
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", msg);
	else if (t->failed_op >= 0)
		snprintf(t->errmsg, sizeof(t->errmsg), "transaction op %d failed: %s",
			 t->failed_op, rawstore_strerror(result));
	else
		snprintf(t->errmsg, sizeof(t->errmsg), "transaction failed: %s",
			 rawstore_strerror(result));
}

/* This thread's last message (a copy: rs_err() overwrites it), or @err's
 * name. */
static const char *cause_of(int err, char buf[200])
{
	snprintf(buf, 200, "%s", *rawstore_errmsg() ? rawstore_errmsg() : rawstore_strerror(err));
	return buf;
}

static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;

void rs_store_stop(struct rawstore *st, int err)
{
	pthread_mutex_lock(&stop_lock);
	if (!st->failed) {
		snprintf(st->failed_msg, sizeof(st->failed_msg), "store stopped: %s",
			 *rawstore_errmsg() ? rawstore_errmsg() : rawstore_strerror(err));
		/* the message first: whoever sees failed reads a whole one */
		__atomic_store_n(&st->failed, err, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&stop_lock);
}


static int append_vec(struct pext_vec *dst, const struct pext_vec *src)
{
	size_t i;
	int ret;

	for (i = 0; i < src->n; i++) {
		if (rs_fail_check(RS_FAIL_GROUP_APPEND))
			return -ENOMEM;
		ret = pext_push(dst, src->v[i].off, src->v[i].len);
		if (ret)
			return ret;
	}
	return 0;
}

static void drop_unflushed(struct rawstore *st, const struct pext_vec *allocs)
{
	size_t i;

	/* Simulate a power loss: what was not flushed is garbage now (only at
	 * the power loss itself, the countdown-th time). */
	if (rs_crash_countdown > 1) {
		rs_crash_check(st, RS_CRASH_DROP_UNFLUSHED);
		return;
	}
	for (i = 0; i < allocs->n; i++) {
		void *buf = rs_alloc_aligned(allocs->v[i].len);

		if (!buf)
			continue;
		memset(buf, 0xa5, allocs->v[i].len);
		dev_write(st->dev, buf, allocs->v[i].off, allocs->v[i].len);
		free(buf);
	}
	rs_crash_check(st, RS_CRASH_DROP_UNFLUSHED);
}

/*
 * Give back units the group allocated, but only with no write in flight:
 * a late write would land on data that reused them.  If the write queue
 * broke with writes in flight, the units stay out of the free list and
 * the store stops (a reopen finds them free again, once the writes are
 * long done).
 */
static void unalloc_settled(struct rawstore *st, const struct pext *v, size_t n)
{
	unsigned int busy;

	if (!n)
		return;
	dev_wq_wait(st->dev);
	busy = dev_wq_inflight(st->dev);
	if (busy) {
		rs_err(st, -EIO, "write queue failed with %u writes in flight; their units "
		       "are not reused, store stopped", busy);
		rs_store_stop(st, -EIO);
		return;
	}
	space_unalloc(st, v, n);
}


/*
 * After data write errors that each carry the tag of their transaction
 * (dev_wq_errors_tagged): fail the transactions whose writes failed and
 * that had not failed already (a transaction that failed while applied is
 * rolled back anyway: its failed write blames it, no one else).  Returns
 * how many it failed; 0 if every error was a failed transaction's.
 */
static unsigned int fail_write_errors(struct rawstore *st, struct rawstore_txn **ts,
				      unsigned int n)
{
	unsigned int i, failed = 0;
	int err;

	for (i = 0; i < n; i++) {
		if (ts[i]->result)
			continue;
		err = dev_wq_tag_err(st->dev, i);
		if (!err)
			continue;
		rs_err(st, err, "data write of transaction failed: %s", strerror(-err));
		txn_fail(ts[i], err);
		ts[i]->write_failed = true;
		PERF_ADD(st, txns_failed, 1);
		failed++;
	}
	return failed;
}

/* Take queued transactions (not jobs) into @ts, at most @max; how many. */
static unsigned int take_queued(struct rawstore *st, struct rawstore_txn **ts, unsigned int max)
{
	unsigned int n = 0;

	pthread_mutex_lock(&st->qlock);
	while (st->qhead && !st->qhead->job && n < max) {
		ts[n++] = st->qhead;
		st->qhead = st->qhead->next;
	}
	if (!st->qhead)
		st->qtail = NULL;
	pthread_mutex_unlock(&st->qlock);
	return n;
}

/* Put @n taken, not yet applied transactions back at the queue's head, in
 * their order: they start the next group. */
static void requeue(struct rawstore *st, struct rawstore_txn **ts, unsigned int n)
{
	unsigned int i;

	if (!n)
		return;
	pthread_mutex_lock(&st->qlock);
	ts[n - 1]->next = st->qhead;
	for (i = 0; i + 1 < n; i++)
		ts[i]->next = ts[i + 1];
	if (!st->qhead)
		st->qtail = ts[n - 1];
	st->qhead = ts[0];
	pthread_mutex_unlock(&st->qlock);
}

/*
 * Device journal: the group's batch is one record, and a record may take at
 * most half the journal.  What the batch will hold is sized before a
 * transaction joins: what its apply put into st->wb, plus what the commit
 * will add for the group's allocations and frees (the free-list records,
 * space_txn_entries and space_group_entries: they are written only at
 * commit).  A group takes no further transaction once that is an eighth
 * of the journal, so only a single transaction of more than three eighths
 * (an omap value, the onode of a huge object, a remove of many fragmented
 * objects) can make a record too big, and that one is refused (-E2BIG)
 * before it joins: the others in its group commit, the store goes on.
 */
static uint64_t batch_need(struct rawstore *st, uint64_t entries)
{
	size_t len;

	rocksdb_writebatch_wi_data(st->wb, &len);
	return len + (entries + space_group_entries(st)) * SP_REC_BYTES;
}

static bool group_batch_full(struct rawstore *st, uint64_t entries)
{
	return meta_journaled(st->meta) &&
	       batch_need(st, entries) > le64toh(st->sb.journal_len) / 8;
}

/*
 * Device journal: would the batch, with @n_data data checks and @entries
 * free-list changes still to come, fit in one record (at most half the
 * journal)?  A transaction that makes it too big fails alone with -E2BIG
 * (group_batch_full() keeps the others out).
 */
static int record_fits(struct rawstore *st, size_t n_data, uint64_t entries, size_t n_frees)
{
	uint64_t jlen = le64toh(st->sb.journal_len), need;

	if (!meta_journaled(st->meta))
		return 0;
	/* the header, the "J" entry and the rounding fit in one block */
	need = batch_need(st, entries) + n_data * sizeof(struct rs_disk_jdata) + RS_JREC_ALIGN;
	if (need <= jlen / 2)
		return 0;
	return rs_err(st, -E2BIG, "journal: the transaction needs a record of up to %llu "
		      "bytes (%zu extents freed), more than half the %llu-byte journal: split "
		      "it into smaller transactions, or mkfs with a larger --journal-size",
		      (unsigned long long)need, n_frees, (unsigned long long)jlen);
}

/* ---- the groups in flight (commit thread) ---- */

static struct pipe_group *pipe_at(struct rs_pipe *p, unsigned int i)
{
	return &p->g[(p->head + i) % PIPE_SLOTS];
}

/* The group that is applied next (a free slot: count < PIPE_SLOTS). */
static struct pipe_group *pipe_next(struct rs_pipe *p)
{
	return pipe_at(p, p->count);
}

/* Can the oldest group in flight complete?  (Call with qlock.) */
static bool pipe_reapable(struct rs_pipe *p)
{
	return p->count && (pipe_at(p, 0)->seq <= p->durable || p->err);
}

/* Run the callbacks of the @g->n transactions of @g, once. */
static void complete_group(struct rawstore *st, struct pipe_group *g)
{
	unsigned int i;

	if (g->acked)
		return;
	for (i = 0; i < g->n; i++)
		complete(st, g->ts[i], g->ts[i]->result);
	g->acked = true;
}

/*
 * The in-place writes in flight (an earlier group's deferred data, see
 * group_deferred): wait for them; they join the applied writes whose
 * records await a flush.  Before a later group's in-place writes, before
 * units they target can be handed out again (a group's frees), before a
 * job: nothing else waits for them.  A failed write stops the store (its
 * record is replayed at open).
 */
static void deferred_settle(struct rawstore *st)
{
	int err;

	if (!st->defq.fly_n)
		return;
	err = deferred_wait(st);
	if (err)
		rs_store_stop(st, err);
	pthread_rwlock_wrlock(&st->rwlock);
	err = deferred_landed(st, !err && !rs_failed(st));
	pthread_rwlock_unlock(&st->rwlock);
	if (err)
		rs_store_stop(st, rs_err(st, err, "recording applied deferred writes failed"));
}

/* A durable group: its frees become reusable, its records of applied
 * deferred writes are gone, its callbacks run. */
static void reap_ok(struct rawstore *st, struct pipe_group *g)
{
	struct rs_pipe *p = st->pipe;

	if (g->wrote) {
		/* units an in-place write in flight targets are not handed out */
		if (!g->released && g->hold.frees.n)
			deferred_settle(st);
		if (!g->released)
			space_release(st, &g->hold);
		deferred_done_forget(st, g->n_done);
		p->done_del -= g->n_done;
		PERF_ADD(st, commit_groups, 1);
		PERF_ADD(st, txns_committed, g->ok);
		if (!g->acked)
			rs_crash_check(st, RS_CRASH_AFTER_COMMIT);
		space_after_commit(st);
	}
	complete_group(st, g);
}

/* Its sync failed: the records may be on disk or not, so the store stops
 * and the group's transactions fail. */
static void reap_failed(struct rawstore *st, struct pipe_group *g, int err, const char *msg)
{
	unsigned int i;

	if (g->wrote) {
		rs_err(st, err, "%s; store stopped", msg);
		rs_store_stop(st, err);
	}
	space_hold_free(st, &g->hold);
	for (i = 0; i < g->n && !g->acked; i++)
		if (!g->ts[i]->result)
			txn_fail(g->ts[i], err);
	complete_group(st, g);
}

/*
 * Complete the groups in flight that are durable, in order, and wait
 * until at most @keep remain.  Only between groups: st->wb is empty (the
 * inline punch policy commits through it).
 */
static void pipe_reap(struct rawstore *st, unsigned int keep)
{
	struct rs_pipe *p = st->pipe;
	char msg[sizeof(p->msg)];

	while (p->count) {
		struct pipe_group *g = pipe_at(p, 0);
		uint64_t durable;
		int err;

		pthread_mutex_lock(&st->qlock);
		while (p->count > keep && g->seq > p->durable && !p->err) {
			sync_or_wait(st);
		}
		durable = p->durable;
		err = p->err;
		memcpy(msg, p->msg, sizeof(msg));
		pthread_mutex_unlock(&st->qlock);
		if (g->seq <= durable)
			reap_ok(st, g);
		else if (err)
			reap_failed(st, g, err, msg);
		else
			break;
		g->n = 0;
		p->head = (p->head + 1) % PIPE_SLOTS;
		p->count--;
	}
}

/*
 * While a group's writes are in flight: complete the groups in flight
 * that are durable (their submitters may have more, which joins this
 * group).  Not with the inline punch policy, which commits through st->wb
 * after each group (pipe_reap is between groups only then).
 */
static void pipe_reap_durable(struct rawstore *st)
{
	if (!space_punches_inline(st))
		pipe_reap(st, st->pipe->count);
}

/* Commit thread: wait until the batch of group @seq is durable; false if
 * a sync failed. */
static bool pipe_wait(struct rawstore *st, uint64_t seq)
{
	struct rs_pipe *p = st->pipe;
	bool ok;

	pthread_mutex_lock(&st->qlock);
	while (p->durable < seq && !p->err) {
		sync_or_wait(st);
	}
	ok = p->durable >= seq;
	pthread_mutex_unlock(&st->qlock);
	return ok;
}

bool commit_drain(struct rawstore *st)
{
	struct rs_pipe *p = st->pipe;
	bool released = false;
	unsigned int i;

	if (!commit_on_thread(st) || !pipe_wait(st, p->written))
		return false;
	for (i = 0; i < p->count; i++) {
		struct pipe_group *g = pipe_at(p, i);

		if (g->wrote && !g->released) {
			if (g->hold.frees.n)
				deferred_settle(st);
			released |= g->hold.frees.n || g->hold.ready.n;
			space_release(st, &g->hold);
			g->released = true;
		}
	}
	return released;
}

/* Write the group's batch (not synced): frees, allocations, counts; the
 * frees and readied space are held in @h until it is durable. */
static int commit_locked(struct rawstore *st, struct rs_txn_ctx *g, struct space_hold *h,
			 const struct rs_jdata_vec *unflushed)
{
	uint64_t nid_rec = st->stored_nid;
	struct rs_key k;
	char v[8];
	int ret;

	ret = space_commit(st, &g->allocs, &g->frees, h);
	if (!ret)
		ret = space_stage_end(st, true);
	if (ret)
		return ret;
	/* Every id in a durable record stays below the durable "N": the
	 * record moves ahead in the batch of the group that passes it. */
	if (st->next_nid > st->stored_nid) {
		nid_rec = st->next_nid + NID_RESERVE;
		key_nid(&k);
		put_le64(v, nid_rec);
		rocksdb_writebatch_wi_put(st->wb, k.buf, k.len, v, 8);
	}
	if (g->d_objects || g->d_colls) {
		char c[16];

		put_le64(c, st->n_objects + (uint64_t)g->d_objects);
		put_le64(c + 8, st->n_colls + (uint64_t)g->d_colls);
		key_counts(&k);
		rocksdb_writebatch_wi_put(st->wb, k.buf, k.len, c, 16);
	}
	__atomic_store_n(&last_batch_entries, (uint64_t)rocksdb_writebatch_wi_count(st->wb),
			 __ATOMIC_RELEASE);
	ret = meta_commit_data(st->meta, st->wb, unflushed);
	if (!ret)
		st->stored_nid = nid_rec;
	return ret;
}

/* A group on its way through the steps below (commit thread). */
struct group_run {
	struct pipe_group *pg;
	struct rs_txn_ctx g;		/* the group's allocations, frees, counts */
	unsigned int n;			/* transactions taken */
	unsigned int ok;		/* applied without error in this pass */
	unsigned int pass;		/* passes after write errors */
	size_t n_done;			/* applied deferred records the batch deletes */
	bool unflushed;			/* device journal: the new data is not
					 * flushed; the record carries its checks */
	uint64_t entries;		/* free-list changes its commit may add
					 * (space_txn_entries of those applied) */
	struct space_batch batch;	/* the space layer's records: into st->wb */
};

/* Apply transaction @i of the group into st->wb behind a save point; a
 * failed one is rolled back and leaves nothing in the group. */
static void apply_one(struct rawstore *st, struct group_run *r, unsigned int i)
{
	struct rawstore_txn *t = r->pg->ts[i];
	struct rs_txn_ctx c = { 0 };
	size_t dq_mark = st->defq.n, na = r->g.allocs.n, nf = r->g.frees.n;
	size_t nj = r->g.jdata.n;
	uint64_t entries = 0;
	char *err = NULL;
	int ret;

	dev_wq_tag(st->dev, i);
	t->errmsg[0] = 0;
	jdata_free(&t->borrowed);
	if (rs_failed(st)) {
		t->result = rs_failed(st);
		snprintf(t->errmsg, sizeof(t->errmsg), "%s", st->failed_msg);
		return;
	}
	rs_clear_err();
	rocksdb_writebatch_wi_set_save_point(st->wb);
	ret = txn_apply(st, t, &c);
	if (!ret) {
		entries = space_txn_entries(st, c.allocs.v, c.allocs.n, c.frees.n);
		ret = record_fits(st, r->g.jdata.n + c.jdata.n, r->entries + entries, c.frees.n);
	}
	if (!ret)
		ret = append_vec(&r->g.allocs, &c.allocs);
	if (!ret)
		ret = append_vec(&r->g.frees, &c.frees);
	if (!ret)
		ret = jdata_append(&r->g.jdata, &c.jdata);
	if (ret) {
		txn_fail(t, ret);
		/* Its part of the batch is rolled back below. */
		txn_forget(st);
		/* What was copied into the group before the failure goes too. */
		r->g.allocs.n = na;
		r->g.frees.n = nf;
		r->g.jdata.n = nj;
		/* Its writes finish before its units can be allocated again
		 * (their errors do not matter: it failed). */
		unalloc_settled(st, c.allocs.v, c.allocs.n);
		deferred_truncate(st, dq_mark);
		if (rs_fail_check(RS_FAIL_ROLLBACK))
			err = strdup("injected failure");
		else
			rocksdb_writebatch_wi_rollback_to_save_point(st->wb, &err);
		if (err) {
			rs_store_stop(st, rs_err(st, -EIO, "batch rollback failed: %s", err));
			free(err);
		}
		PERF_ADD(st, txns_failed, 1);
	} else {
		t->result = 0;
		r->g.d_objects += c.d_objects;
		r->g.d_colls += c.d_colls;
		r->g.wrote_data |= c.wrote_data;
		r->entries += entries;
		r->ok++;
		t->borrowed = c.borrowed;
		memset(&c.borrowed, 0, sizeof(c.borrowed));
	}
	pext_vec_free(&c.allocs);
	pext_vec_free(&c.frees);
	jdata_free(&c.jdata);
	jdata_free(&c.borrowed);
}

/* Steps 4 and 5 (docs/DESIGN.md, "The commit pipeline": Apply, Join):
 * apply the group's transactions, taking in those that arrive meanwhile
 * (first pass only); their data writes go out as they are applied. */
static void group_apply(struct rawstore *st, struct group_run *r)
{
	struct rawstore_txn **ts = r->pg->ts;
	unsigned int i;

	rocksdb_writebatch_wi_clear(st->wb);
	dev_wq_reset(st->dev);
	space_stage_begin(st, &r->batch, st->wb);
	txn_forget(st);
	for (i = 0;; i++) {
		/* Those that arrived while the group's writes were being queued
		 * join it (their writes overlap the others'), and so do those
		 * that arrive while the writes are in flight: the device gets
		 * their writes at once instead of after this group's commit. */
		if (i && !r->pass && group_batch_full(st, r->entries)) {
			requeue(st, ts + i, r->n - i);
			r->n = i;
			break;
		}
		if (i == r->n && !r->pass) {
			r->n += take_queued(st, ts + r->n, st->opts.max_group - r->n);
			while (i == r->n && r->n < st->opts.max_group &&
			       group_bytes(ts, r->n) < JOIN_MAX_BYTES && !group_writes_done(st)) {
				pipe_reap_durable(st);
				r->n += take_queued(st, ts + r->n, st->opts.max_group - r->n);
			}
		}
		if (i == r->n)
			break;
		/* Again after a write error: those whose writes failed stay
		 * failed; those that failed while applied are applied again
		 * (they may have failed on what a failed one wrote). */
		if (!ts[i]->write_failed)
			apply_one(st, r, i);
	}
}

/*
 * Device journal: the record carries the crc32c of each new write, taken
 * from the bytes before they were written.  A nocopy write goes to the
 * device from the caller's buffer: if the caller changed it meanwhile,
 * the device may hold other bytes, and replay would drop the record (the
 * whole group) as one whose data did not land.  Once the writes are done,
 * such a buffer must still read as it did; a transaction whose buffer
 * changed fails alone (-EIO) and the group is applied again without it.
 * Returns how many failed.
 */
static unsigned int fail_changed_buffers(struct rawstore *st, struct rawstore_txn **ts,
					 unsigned int n)
{
	unsigned int i, failed = 0;
	size_t k;

	for (i = 0; i < n; i++) {
		struct rs_jdata_vec *b = &ts[i]->borrowed;

		for (k = 0; !ts[i]->result && k < b->n; k++) {
			const void *p = (const void *)(uintptr_t)b->v[k].off;

			if (rs_crc32c(p, b->v[k].len) == b->v[k].crc)
				continue;
			rs_err(st, -EIO, "the buffer of a nocopy write changed while the device "
			       "was writing it (the caller must leave it unchanged until the "
			       "transaction completes); transaction failed");
			txn_fail(ts[i], -EIO);
			ts[i]->write_failed = true;
			PERF_ADD(st, txns_failed, 1);
			failed++;
		}
		jdata_free(b);
	}
	return failed;
}

/* Forget the group's allocations, frees and checks: it is applied again
 * without the transactions marked write_failed. */
static int group_again(struct rawstore *st, struct group_run *r)
{
	unalloc_settled(st, r->g.allocs.v, r->g.allocs.n);
	deferred_truncate(st, 0);
	pext_vec_free(&r->g.allocs);
	pext_vec_free(&r->g.frees);
	jdata_free(&r->g.jdata);
	memset(&r->g, 0, sizeof(r->g));
	r->ok = 0;
	r->entries = 0;
	r->pass++;
	return -EAGAIN;
}

/*
 * Step 6 (Flush), its first half: wait for every data write of the
 * group.  0 when all landed (or
 * only failed transactions' writes failed), -EAGAIN when the group must
 * be applied again without the transactions whose writes failed, else
 * the error (nothing of the group is committed).
 */
static int group_wait_writes(struct rawstore *st, struct group_run *r)
{
	int ret;

	rs_crash_check(st, RS_CRASH_WRITES_IN_FLIGHT);
	ret = dev_wq_wait(st->dev);
	if (ret && !rs_failed(st) && dev_wq_errors_tagged(st->dev) &&
	    !fail_write_errors(st, r->pg->ts, r->n)) {
		/* Every failed write was a failed transaction's: the rest
		 * of the group is intact. */
		ret = 0;
	} else if (ret && !rs_failed(st) && dev_wq_errors_tagged(st->dev) && r->pass < r->n) {
		/*
		 * A transaction's data write failed.  Its metadata is in the
		 * batch under the later ones', so apply the group again
		 * without it (the others' data is written again, elsewhere).
		 * Every write is done (the queue is not broken).
		 */
		return group_again(st, r);
	}
	if (ret) {
		/* The store stays usable: nothing of the group is committed. */
		ret = rs_err(st, ret, "data write failed; commit group of %u transactions not "
			     "committed", r->n);
		unalloc_settled(st, r->g.allocs.v, r->g.allocs.n);
		return ret;
	}
	if (rs_failed(st)) {
		/* The batch may hold part of a failed transaction: commit nothing. */
		unalloc_settled(st, r->g.allocs.v, r->g.allocs.n);
		return rs_failed(st);
	}
	if (fail_changed_buffers(st, r->pg->ts, r->n))
		return group_again(st, r);
	return 0;
}

/*
 * Does the group allocate a unit that a deferred record still targets (its
 * write applied, the record not deleted yet: the unit was freed since)?
 * Replay at open would write the record's old bytes over the group's new
 * data, so the record's deletion must be durable with the allocation.
 */
static bool allocs_hit_deferred(const struct rawstore *st, const struct pext_vec *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (deferred_applied_busy(st, a->v[i].off, a->v[i].len))
			return true;
	return false;
}

/* Does one of the group's queued deferred writes target its new units? */
static bool queued_hits_allocs(const struct rawstore *st, const struct pext_vec *a)
{
	size_t i;

	for (i = 0; st->defq.n && i < a->n; i++)
		if (deferred_queued_busy(st, a->v[i].off, a->v[i].len))
			return true;
	return false;
}

/*
 * Step 6 (Flush): flush the device for new data, and now and then so
 * deferred records can go (those whose deletion is not in a batch in
 * flight already); with the device journal the record's flush (step 7)
 * serves instead, but for the cases below.  A failed flush stops the store.
 */
static int group_flush(struct rawstore *st, struct group_run *r)
{
	struct rs_pipe *p = st->pipe;
	int ret;

	/* Without the device journal every group that wrote data deletes the
	 * applied records, in the batch that records its allocations; with it
	 * they go every RS_DEFERRED_RETIRE, or with an allocation they hit. */
	bool hit = (meta_journaled(st->meta) || st->defq.fly_n) &&
		   allocs_hit_deferred(st, &r->g.allocs);
	/* A unit an in-place write in flight targets (never handed out
	 * before it landed: reap_ok): its record must go with the rest. */
	bool hit_fly = hit && st->defq.fly_n;
	bool retire;

	if (hit_fly)
		deferred_settle(st);
	retire = st->defq.done_n - p->done_del >= RS_DEFERRED_RETIRE ||
		 (hit && (meta_journaled(st->meta) || hit_fly));
	if (!r->g.wrote_data && !retire)
		return 0;
	/*
	 * Device journal: the record carries checks of the new data, and the
	 * one flush after it serves both (replay drops a last record whose
	 * data did not land).  Not when one of the group's deferred writes
	 * lands on that data (applied in place after the record, it would
	 * change what the checks cover: replay would drop a durable record),
	 * nor when deferred records retire (their data must be in place
	 * before the record deleting them): flush first then.  Deferred
	 * writes elsewhere wait for the record's flush anyway (step 10), and
	 * every earlier group's data was flushed with its own record.
	 */
	if (!retire && meta_journaled(st->meta) && !queued_hits_allocs(st, &r->g.allocs)) {
		rs_crash_check(st, RS_CRASH_BEFORE_FLUSH);
		if (rs_crash_point == RS_CRASH_DROP_UNFLUSHED)
			drop_unflushed(st, &r->g.allocs);
		jdata_drop_freed(&r->g.jdata, r->g.frees.v, r->g.frees.n);
		r->unflushed = true;
		return 0;
	}
	r->n_done = st->defq.done_n - p->done_del;
	deferred_done_delete(st, p->done_del, st->defq.done_n);
	rs_crash_check(st, RS_CRASH_BEFORE_FLUSH);
	if (rs_crash_point == RS_CRASH_DROP_UNFLUSHED)
		drop_unflushed(st, &r->g.allocs);
	ret = dev_flush(st->dev);
	if (ret == 1) {
		PERF_ADD(st, dev_flushes_skipped, 1);
		return 0;
	}
	PERF_ADD(st, dev_flushes, 1);
	if (ret) {
		/* After a failed flush the device state is unknown: stop. */
		rs_err(st, ret, "device flush failed; group not committed, store stopped");
		unalloc_settled(st, r->g.allocs.v, r->g.allocs.n);
		r->n_done = 0;
		rs_store_stop(st, ret);
	}
	return ret;
}

/* Step 10 (Deferred apply): once the group's records are durable, its
 * deferred writes go to the device, and the commit role goes on without
 * waiting for them (deferred_settle); readers are not held up by the sync
 * meanwhile, and lay the writes over their reads until they landed. */
static void group_deferred(struct rawstore *st, struct group_run *r)
{
	bool started = false;

	/* One batch in flight, and a later write to the same units after
	 * the earlier one. */
	deferred_settle(st);
	if (pipe_wait(st, r->pg->seq) && !rs_failed(st)) {
		int err;

		rs_crash_check(st, RS_CRASH_BEFORE_DEFERRED);
		/* Committed either way: a failed write is replayed at open. */
		err = deferred_write(st);
		if (err)
			rs_store_stop(st, err);
		started = !err;
	}
	pthread_rwlock_wrlock(&st->rwlock);
	st->defq_visible = false;
	if (started)
		deferred_started(st);
	pthread_rwlock_unlock(&st->rwlock);
}

/*
 * Step 7 (Commit): write the group's batch: with --journal rocksdb its
 * data is on stable storage and the batch is not synced (durable at any
 * time from here on, and surely after the sync thread's next sync, step
 * 8); with the device journal it becomes a record whose one flush makes
 * it and the data durable.  Then its deferred writes (step 10).
 */
static int group_write_batch(struct rawstore *st, struct group_run *r)
{
	struct rs_pipe *p = st->pipe;
	struct pipe_group *pg = r->pg;
	bool deferred = st->defq.n > 0;
	char cause[200];
	int ret;

	rs_crash_check(st, RS_CRASH_BEFORE_COMMIT);
	pthread_rwlock_wrlock(&st->rwlock);
	/* what record_fits() counted on for the space layer's records */
	space_stage_size(st, rs_fail_check(RS_FAIL_BATCH_SIZE) ? 0 :
			 r->entries + space_group_entries(st));
	ret = commit_locked(st, &r->g, &pg->hold, r->unflushed ? &r->g.jdata : NULL);
	/* Readers are out: the cache forgets the records the group
	 * changed (all of them if the commit failed, too). */
	ocache_drop_keys(st->ocache, &st->ocache_dirty);
	if (!ret) {
		st->n_objects += (uint64_t)r->g.d_objects;
		st->n_colls += (uint64_t)r->g.d_colls;
		space_snapshot(st);
		pg->wrote = true;
		pg->n_done = r->n_done;
		p->done_del += r->n_done;
		rs_crash_check(st, RS_CRASH_BEFORE_SYNC);
		pthread_mutex_lock(&st->qlock);
		pg->seq = ++p->written;
		/* Device journal: the record's flush made it durable (and
		 * every batch before it); no sync step to wait for. */
		if (meta_journaled(st->meta))
			p->durable = p->written;
		pthread_mutex_unlock(&st->qlock);
		/* Readers see the new checksums now: until the data
		 * is in place they read it from the queue. */
		st->defq_visible = deferred;
	} else {
		/* In-memory and on-disk state may differ now: stop. */
		rs_err(st, ret, "metadata commit failed (%s); store stopped", cause_of(ret, cause));
		rs_store_stop(st, ret);
	}
	pthread_rwlock_unlock(&st->rwlock);
	/*
	 * Device journal: the record holds the deferred data and is durable,
	 * and no earlier group waits to complete: the transactions complete
	 * now, not after the in-place writes (readers find the data in the
	 * queue until then; a failed in-place write stops the store and is
	 * replayed at open).  Their frees wait for the writes as before.
	 */
	if (!ret && deferred && meta_journaled(st->meta) && !p->count) {
		rs_crash_check(st, RS_CRASH_AFTER_COMMIT);
		pg->n = r->n;
		complete_group(st, pg);
		PERF_ADD(st, deferred_early_acks, 1);
	}
	if (!ret && deferred)
		group_deferred(st, r);
	return ret;
}

/* Step 9 (Complete), its start: no transaction completes with its data
 * still being written; the group completes after the groups before it (at
 * once if none is in flight and it wrote nothing). */
static void group_finish(struct rawstore *st, struct group_run *r)
{
	struct rs_pipe *p = st->pipe;
	struct pipe_group *pg = r->pg;

	dev_wq_wait(st->dev);
	deferred_truncate(st, 0);
	keyvec_free(&st->ocache_dirty);
	space_stage_end(st, false);
	rocksdb_writebatch_wi_clear(st->wb);
	pext_vec_free(&r->g.allocs);
	pext_vec_free(&r->g.frees);
	jdata_free(&r->g.jdata);
	pg->n = r->n;
	pg->ok = r->ok;
	pg->released = false;
	if (!pg->wrote) {
		space_hold_free(st, &pg->hold);
		pg->seq = p->written;
	}
	p->count++;
}

/* One commit group through steps 4 to 10 (docs/DESIGN.md, "The commit
 * pipeline"; step 8, the sync, is sync_main's); its transactions
 * complete once its batch is durable. */
static void commit_group(struct rawstore *st, struct pipe_group *pg)
{
	struct group_run r = { .pg = pg };
	unsigned int i;
	int ret;

	pg->acked = false;
	do {
		group_apply(st, &r);
		ret = r.ok ? group_wait_writes(st, &r) : 0;
	} while (ret == -EAGAIN);
	if (r.ok) {
		if (!ret)
			ret = group_flush(st, &r);
		if (!ret)
			ret = group_write_batch(st, &r);
		for (i = 0; i < r.n && ret; i++)
			if (!pg->ts[i]->result)
				txn_fail(pg->ts[i], ret);
	}
	group_finish(st, &r);
}

/* Run a job (after every group in flight completed: it sees all of it). */
static void run_job(struct rawstore *st, struct rawstore_txn *t)
{
	pipe_reap(st, 0);
	deferred_settle(st);
	t->errmsg[0] = 0;
	rs_clear_err();
	t->result = t->job(st, t->job_arg);
	if (t->result)
		txn_fail(t, t->result);
	complete(st, t, t->result);
}

/*
 * One step of the commit role (call without qlock): complete the groups in
 * flight that are durable, then run the next job or commit the next group;
 * with nothing queued and groups in flight, wait for a sync (or sync here,
 * if nobody does).  False when there is nothing to do: nothing queued,
 * nothing in flight.
 */
static bool commit_step(struct rawstore *st)
{
	struct rs_pipe *p = st->pipe;
	struct pipe_group *pg;

	/* Complete what is durable; room for the next group. */
	pipe_reap(st, PIPE_DEPTH);
	pthread_mutex_lock(&st->qlock);
	if (!st->qhead && !p->count) {
		pthread_mutex_unlock(&st->qlock);
		return false;
	}
	/* Nothing else to do: sync here (no hand-off). */
	while (!st->qhead && !pipe_reapable(p))
		sync_or_wait(st);
	/* Complete what became durable first: its submitters may have more
	 * for the next group. */
	if (pipe_reapable(p) || !st->qhead) {
		pthread_mutex_unlock(&st->qlock);
		return true;
	}
	if (st->qhead->job) {
		struct rawstore_txn *t = st->qhead;

		st->qhead = t->next;
		if (!st->qhead)
			st->qtail = NULL;
		pthread_mutex_unlock(&st->qlock);
		run_job(st, t);
		return true;
	}
	pthread_mutex_unlock(&st->qlock);
	/* Batches written before: the sync thread syncs them while this
	 * group is applied. */
	sync_kick(st);
	pg = pipe_next(p);
	pg->wrote = false;
	commit_group(st, pg);
	return true;
}

/*
 * The commit thread: holds the role while there is work nobody leads
 * (asynchronous submits, jobs, what a leader left), gives it up when idle.
 */
static void *worker_main(void *arg)
{
	struct rawstore *st = arg;
	struct rs_pipe *p = st->pipe;
	struct rawstore *prev;

	for (;;) {
		pthread_mutex_lock(&st->qlock);
		while (st->leading || (!st->qhead && !p->count && !st->stopping))
			pthread_cond_wait(&st->wcond, &st->qlock);
		if (!st->qhead && !p->count) {
			/* Stopping, and every group has completed. */
			pthread_mutex_unlock(&st->qlock);
			break;
		}
		prev = role_take(st);
		pthread_mutex_unlock(&st->qlock);
		while (commit_step(st))
			;
		pthread_mutex_lock(&st->qlock);
		role_give_up(st, prev);
		pthread_mutex_unlock(&st->qlock);
	}
	return NULL;
}

/* Room for @bytes more in the queue?  (Call with qlock.) */
static bool queue_room(const struct rawstore *st, uint64_t bytes)
{
	if (!st->q_txns)
		return true;
	if (st->opts.max_queued_txns && st->q_txns >= st->opts.max_queued_txns)
		return false;
	return !st->opts.max_queued_bytes || st->q_bytes + bytes <= st->opts.max_queued_bytes;
}

/*
 * Queue @t; @wait: wait for room even with submit_nonblock.  With @lead
 * (a synchronous submit), take the commit role if it is free: the caller
 * then commits the group itself (lead_group), *@lead is true and *@prev
 * what role_take() returned.  Else the role's holder or the commit thread
 * takes @t.
 */
static int submit(struct rawstore *st, struct rawstore_txn *t, rawstore_txn_cb cb, void *arg,
		  bool wait, bool *lead, struct rawstore **prev)
{
	/* The commit thread (a callback) never waits: it is what makes room. */
	bool on_thread = commit_on_thread(st);

	if (st->opts.read_only && !t->job)
		return rs_err(st, -EROFS, "submit: the store is open read-only");
	if (__atomic_exchange_n(&t->in_flight, true, __ATOMIC_ACQ_REL))
		return -EBUSY;
	t->cb = cb;
	t->cb_arg = arg;
	t->next = NULL;
	t->failed_op = -1;
	t->write_failed = false;
	pthread_mutex_lock(&st->qlock);
	while (!st->stopping && !on_thread && !queue_room(st, t->bytes)) {
		if (!wait && st->opts.submit_nonblock) {
			pthread_mutex_unlock(&st->qlock);
			__atomic_store_n(&t->in_flight, false, __ATOMIC_RELEASE);
			return -EAGAIN;
		}
		pthread_cond_wait(&st->qroom, &st->qlock);
	}
	if (st->stopping) {
		pthread_mutex_unlock(&st->qlock);
		__atomic_store_n(&t->in_flight, false, __ATOMIC_RELEASE);
		return -ESHUTDOWN;
	}
	t->q_bytes = t->bytes;
	st->q_txns++;
	st->q_bytes += t->q_bytes;
	if (st->qtail)
		st->qtail->next = t;
	else
		st->qhead = t;
	st->qtail = t;
	if (st->leading) {
		pthread_cond_signal(&st->qcond);
	} else if (lead) {
		*lead = true;
		*prev = role_take(st);
	} else {
		pthread_cond_signal(&st->wcond);
	}
	pthread_mutex_unlock(&st->qlock);
	return 0;
}

int rawstore_submit_async(struct rawstore *st, struct rawstore_txn *t, rawstore_txn_cb cb,
			  void *arg)
{
	if (!st || !t)
		return -EINVAL;
	return submit(st, t, cb, arg, false, NULL, NULL);
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int result;
};

static void wake(struct rawstore_txn *t, int result, void *arg)
{
	struct waiter *w = arg;

	(void)t;
	pthread_mutex_lock(&w->lock);
	w->done = true;
	w->result = result;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

static bool waiter_done(struct waiter *w)
{
	bool done;

	pthread_mutex_lock(&w->lock);
	done = w->done;
	pthread_mutex_unlock(&w->lock);
	return done;
}

/*
 * A synchronous submitter that took the free commit role: commit on this
 * thread until its own transaction has completed (no hand-off to the
 * commit thread and back), then give the role up; those queued meanwhile
 * go to the commit thread (role_give_up).  Its group takes in whatever
 * else was queued, and what arrives while its writes are in flight.
 */
static void lead_group(struct rawstore *st, struct waiter *w, struct rawstore *prev)
{
	while (!waiter_done(w) && commit_step(st))
		;
	/* A group that completed before its deferred writes were in place
	 * is durable: finish it here rather than wake the commit thread. */
	pipe_reap(st, st->pipe->count);
	pthread_mutex_lock(&st->qlock);
	role_give_up(st, prev);
	pthread_mutex_unlock(&st->qlock);
}

int rawstore_submit(struct rawstore *st, struct rawstore_txn *t)
{
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0 };
	struct rawstore *prev = NULL;
	bool lead = false;
	int ret;

	if (!st || !t)
		return -EINVAL;
	/* From a completion callback this would wait for itself. */
	if (commit_on_thread(st))
		return -EDEADLK;
	/* Jobs stay with the commit thread (a space worker's job must not
	 * make that thread run other groups' callbacks). */
	ret = submit(st, t, wake, &w, true, t->job ? NULL : &lead, &prev);
	if (ret)
		return ret;
	if (lead)
		lead_group(st, &w, prev);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	/* Carry the commit thread's message back to this thread. */
	if (w.result)
		rs_set_errmsg(t->errmsg);
	return w.result;
}

int rs_run_job(struct rawstore *st, rs_job_fn fn, void *arg)
{
	struct rawstore_txn t;

	memset(&t, 0, sizeof(t));
	t.job = fn;
	t.job_arg = arg;
	return rawstore_submit(st, &t);
}


int rs_commit_wb(struct rawstore *st)
{
	char cause[200];
	int ret;

	pthread_rwlock_wrlock(&st->rwlock);
	ret = meta_commit(st->meta, st->wb);
	PERF_ADD(st, db_syncs, 1);
	/* fsck's repairs: whatever they changed, the cache forgets */
	ocache_clear(st->ocache);
	keyvec_free(&st->ocache_dirty);
	if (ret)
		rs_store_stop(st, rs_err(st, ret, "metadata commit failed (%s); store stopped",
					 cause_of(ret, cause)));
	space_snapshot(st);
	pthread_rwlock_unlock(&st->rwlock);
	rocksdb_writebatch_wi_clear(st->wb);
	return ret;
}

/* ---- queries ---- */

