// SPDX-License-Identifier: MIT
/*
 * Aging: fill a store to a given fraction of its data space with objects of
 * mixed sizes while removing some of them, so that the free space left is
 * scattered the way a store that has lived for a while has it; then the
 * object workloads run again on it (rawstore-bench tags them "aged").
 *
 * The fragmentation score comes from rawstore_statfs():
 *   frag_score = 1 - largest_free / free
 * 0 when the free space is one extent, towards 1 when the largest free
 * extent is a small part of it (the allocator micro-benchmark's
 * extset_frag_score()), reported with the number of free extents and their
 * mean size.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rawstore/rawstore.h"
#include "bench.h"

#define AGE_MAX_OBJ (4ULL << 20)
#define AGE_BATCH_BYTES (4ULL << 20)	/* payload per transaction, at most */
#define AGE_BATCH_OPS 16		/* creates per transaction, at most */
#define AGE_QD 4			/* transactions in flight */
/*
 * Space a remove frees is reusable once its transaction committed, so the
 * creates in flight cannot count on the removes in flight.  In the last
 * AGE_SYNC_LEFT bytes of the fill, one transaction at a time, each sized
 * from rawstore_statfs() (free space not being zeroed or punched, less
 * AGE_SLACK).
 */
#define AGE_SYNC_LEFT (AGE_QD * 2 * AGE_BATCH_BYTES + (8ULL << 20))
#define AGE_SLACK (1ULL << 20)

int space_report(struct rawstore *st, const struct cfg *c, const char *when)
{
	struct rawstore_statfs s = { .struct_size = sizeof(s) };
	double frag, mean;
	int ret;

	ret = rawstore_statfs(st, &s);
	if (ret)
		return ret;
	frag = s.free ? 1.0 - (double)s.largest_free / (double)s.free : 0.0;
	mean = s.free_extents ? (double)s.free / (double)s.free_extents : 0.0;
	if (!c->json) {
		printf("space %-6s %5.1f%% used of %" PRIu64 " MiB, %" PRIu64 " free extents "
		       "(mean %.0f KiB, largest %" PRIu64 " KiB), frag score %.4f, %" PRIu64
		       " objects\n", when, s.data_size ? 100.0 * (double)s.allocated /
		       (double)s.data_size : 0.0, s.data_size >> 20, s.free_extents, mean / 1024,
		       s.largest_free >> 10, frag, s.objects);
		fflush(stdout);
		return 0;
	}
	json_head(c);
	printf("\"kind\": \"space\", \"when\": \"%s\", \"data_size\": %" PRIu64
	       ", \"allocated\": %" PRIu64 ", \"free\": %" PRIu64 ", \"used_pct\": %.2f"
	       ", \"free_extents\": %" PRIu64 ", \"largest_free\": %" PRIu64
	       ", \"mean_free_extent\": %.0f, \"frag_score\": %.4f, \"objects\": %" PRIu64
	       ", \"unpunched\": %" PRIu64 "}\n", when, s.data_size, s.allocated, s.free,
	       s.data_size ? 100.0 * (double)s.allocated / (double)s.data_size : 0.0,
	       s.free_extents, s.largest_free, mean, frag, s.objects, s.unpunched);
	fflush(stdout);
	return 0;
}

struct ager {
	struct rawstore *st;
	const struct cfg *c;
	char *data;
	uint64_t *live;		/* ids of live objects */
	uint32_t *live_size;	/* their sizes */
	uint64_t n_live, cap, next_id, seed;
	uint64_t live_bytes;	/* device bytes the model's live objects take */
	uint64_t goal;		/* live_bytes to reach */
	uint64_t budget;	/* device bytes the next transaction may create,
				 * UINT64_MAX when not near the goal */
	uint64_t created, removed, written;
	int err;
};

/* Device bytes an object of @size takes (inline objects take none). */
static uint64_t dev_bytes(const struct cfg *c, uint64_t size)
{
	if (size <= c->inline_max)
		return 0;
	return (size + c->min_alloc - 1) / c->min_alloc * c->min_alloc;
}

/*
 * Sizes are log-uniform from 4 KiB to 4 MiB: an octave [2^k, 2^(k+1)) x 4 KiB
 * chosen uniformly among ten, a size uniform inside it; half of them end
 * inside a 4 KiB block (a partial last unit), like real object sizes.
 */
static uint64_t age_size(uint64_t *seed)
{
	uint64_t base = 4096ULL << (rnd(seed) % 10);
	uint64_t size = base + rnd(seed) % base;

	if (rnd(seed) & 1)
		return size;
	return size & ~4095ULL;
}

static void age_remove_one(struct ager *a, struct rawstore_txn *t)
{
	uint64_t k = rnd(&a->seed) % a->n_live;
	char name[64];

	obj_name(name, sizeof(name), "ag-", a->live[k]);
	rawstore_txn_remove(t, "age", name, strlen(name));
	a->live_bytes -= dev_bytes(a->c, a->live_size[k]);
	a->live[k] = a->live[a->n_live - 1];
	a->live_size[k] = a->live_size[a->n_live - 1];
	a->n_live--;
	a->removed++;
}

/*
 * One transaction: creates until AGE_BATCH_BYTES or AGE_BATCH_OPS, each
 * followed with a chance of 3 in 10 by the removal of a random live
 * object (one created earlier, possibly in a transaction still in flight:
 * transactions apply in submission order).  Returns 1 at the goal.
 */
static int age_fill(struct rawstore_txn *t, struct ager *a)
{
	uint64_t bytes = 0;
	int n = 0, ret = 0;

	if (a->live_bytes >= a->goal)
		return 1;
	while (n < AGE_BATCH_OPS && bytes < AGE_BATCH_BYTES && a->live_bytes < a->goal) {
		uint64_t size = age_size(&a->seed), left = a->goal - a->live_bytes;
		char name[64];

		if (left > a->budget)
			left = a->budget;
		if (left < 2 * a->c->min_alloc)
			break;
		/* the last object fits the goal: the fill stops at it, not past it */
		if (dev_bytes(a->c, size) > left) {
			size = left - a->c->min_alloc;
			if (size <= a->c->inline_max)
				size = a->c->inline_max + 1ULL;
			if (dev_bytes(a->c, size) > left)
				break;
		}
		if (a->budget != UINT64_MAX)
			a->budget -= dev_bytes(a->c, size);

		if (a->n_live == a->cap) {
			uint64_t nc = a->cap * 2;
			uint64_t *l = realloc(a->live, nc * sizeof(*l));
			uint32_t *ls = l ? realloc(a->live_size, nc * sizeof(*ls)) : NULL;

			if (l)
				a->live = l;
			if (!ls)
				return -ENOMEM;
			a->live_size = ls;
			a->cap = nc;
		}
		obj_name(name, sizeof(name), "ag-", a->next_id);
		ret = rawstore_txn_write(t, "age", name, strlen(name), 0, a->data, size);
		if (ret)
			return ret;
		a->live[a->n_live] = a->next_id++;
		a->live_size[a->n_live++] = (uint32_t)size;
		a->live_bytes += dev_bytes(a->c, size);
		a->created++;
		a->written += size;
		bytes += size;
		n++;
		if (a->n_live > 1 && rnd(&a->seed) % 10 < 3)
			age_remove_one(a, t);
	}
	/* no room for even one object: the store is as full as it gets */
	return n ? 0 : 1;
}

/* Completion bookkeeping for the fill's transactions in flight. */
struct age_slot {
	struct rawstore_txn *t;
	int busy;
};

struct age_q {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int n;
	int err;
};

static struct age_q age_q = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };

static void age_done(struct rawstore_txn *t, int result, void *arg)
{
	struct age_slot *s = arg;

	(void)t;
	pthread_mutex_lock(&age_q.lock);
	if (result && !age_q.err)
		age_q.err = result;
	s->busy = 0;
	age_q.n--;
	pthread_cond_broadcast(&age_q.cond);
	pthread_mutex_unlock(&age_q.lock);
}

static int age_setup(struct rawstore *st)
{
	struct rawstore_txn *t;
	int ret;

	if (rawstore_coll_exists(st, "age") == 1)
		return 0;
	ret = rawstore_txn_new(&t);
	if (ret)
		return ret;
	rawstore_txn_coll_create(t, "age");
	ret = rawstore_submit(st, t);
	rawstore_txn_free(t);
	return ret;
}

int bench_age(struct rawstore *st, const struct cfg *c, unsigned int pct)
{
	struct rawstore_statfs s = { .struct_size = sizeof(s) };
	struct rawstore_perf p0 = { .struct_size = sizeof(p0) }, p1 = { .struct_size = sizeof(p1) };
	struct age_slot slots[AGE_QD];
	struct ager a = { .st = st, .c = c, .seed = 0xa9e5eedULL, .cap = 1024 };
	uint64_t t0, c0, ns, txns = 0, i;
	unsigned int k;
	int ret;

	ret = space_report(st, c, "fresh");
	if (!ret)
		ret = rawstore_statfs(st, &s);
	if (!ret)
		ret = age_setup(st);
	if (ret)
		return ret;
	if ((double)s.allocated >= (double)s.data_size * pct / 100.0) {
		fprintf(stderr, "rawstore-bench: age:%u: the store is already %.1f%% full\n", pct,
			100.0 * (double)s.allocated / (double)s.data_size);
		return -EINVAL;
	}
	a.goal = (uint64_t)((double)s.data_size * pct / 100.0) - s.allocated;
	a.data = malloc(AGE_MAX_OBJ);
	a.live = malloc(a.cap * sizeof(*a.live));
	a.live_size = malloc(a.cap * sizeof(*a.live_size));
	if (!a.data || !a.live || !a.live_size) {
		ret = -ENOMEM;
		goto out;
	}
	memset(a.data, 0xa6, AGE_MAX_OBJ);
	memset(slots, 0, sizeof(slots));
	for (k = 0; k < AGE_QD; k++)
		if (rawstore_txn_new(&slots[k].t)) {
			ret = -ENOMEM;
			goto out_slots;
		}
	age_q.err = 0;
	age_q.n = 0;
	rawstore_perf_get(st, &p0);
	c0 = cpu_ns();
	t0 = rs_now_ns();
	for (i = 0; !ret; i++) {
		struct age_slot *sl = &slots[i % AGE_QD];

		bool near = a.goal - a.live_bytes < AGE_SYNC_LEFT;

		pthread_mutex_lock(&age_q.lock);
		while (sl->busy || (near && age_q.n))
			pthread_cond_wait(&age_q.cond, &age_q.lock);
		ret = age_q.err;
		pthread_mutex_unlock(&age_q.lock);
		if (ret)
			break;
		a.budget = UINT64_MAX;
		if (near) {
			uint64_t target = (uint64_t)((double)s.data_size * pct / 100.0);

			ret = rawstore_statfs(st, &s);
			if (ret)
				break;
			/* the model follows the store: what it really holds */
			a.goal = a.live_bytes + (target > s.allocated ? target - s.allocated : 0);
			s.free -= s.in_flight < s.free ? s.in_flight : s.free;
			a.budget = s.free > AGE_SLACK ? s.free - AGE_SLACK : 0;
		}
		rawstore_txn_reset(sl->t);
		ret = age_fill(sl->t, &a);
		if (ret)
			break;
		pthread_mutex_lock(&age_q.lock);
		sl->busy = 1;
		age_q.n++;
		pthread_mutex_unlock(&age_q.lock);
		ret = rawstore_submit_async(st, sl->t, age_done, sl);
		if (ret) {
			pthread_mutex_lock(&age_q.lock);
			sl->busy = 0;
			age_q.n--;
			pthread_mutex_unlock(&age_q.lock);
		}
		txns++;
	}
	if (ret == 1)
		ret = 0;
	pthread_mutex_lock(&age_q.lock);
	while (age_q.n)
		pthread_cond_wait(&age_q.cond, &age_q.lock);
	if (!ret)
		ret = age_q.err;
	pthread_mutex_unlock(&age_q.lock);
	ns = rs_now_ns() - t0;
	rawstore_perf_get(st, &p1);
	if (ret)
		goto out_slots;
	if (c->json) {
		json_head(c);
		printf("\"kind\": \"aging\", \"target_pct\": %u, \"objects_created\": %" PRIu64
		       ", \"objects_removed\": %" PRIu64 ", \"objects_live\": %" PRIu64
		       ", \"bytes_written\": %" PRIu64 ", \"txns\": %" PRIu64
		       ", \"seconds\": %.3f, \"mb_per_sec\": %.2f, \"cpu_seconds\": %.3f"
		       ", \"dev_write_bytes\": %" PRIu64 "}\n", pct, a.created, a.removed,
		       a.n_live, a.written, txns, (double)ns / 1e9,
		       (double)a.written / ((double)ns / 1e9) / 1e6, (double)(cpu_ns() - c0) / 1e9,
		       p1.dev_write_bytes - p0.dev_write_bytes);
	} else {
		printf("age        to %u%%: %" PRIu64 " objects created, %" PRIu64 " removed, %"
		       PRIu64 " live, %.1f MiB written in %" PRIu64 " transactions, %.1f s "
		       "(%.2f MB/s)\n", pct, a.created, a.removed, a.n_live,
		       (double)a.written / (1 << 20), txns, (double)ns / 1e9,
		       (double)a.written / ((double)ns / 1e9) / 1e6);
	}
	fflush(stdout);
	ret = space_report(st, c, "aged");
out_slots:
	for (k = 0; k < AGE_QD; k++)
		if (slots[k].t)
			rawstore_txn_free(slots[k].t);
out:
	free(a.data);
	free(a.live);
	free(a.live_size);
	return ret;
}
