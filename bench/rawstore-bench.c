// SPDX-License-Identifier: MIT
/*
 * rawstore-bench: core workloads of librawstore and the allocator
 * micro-benchmark.  Reports latency percentiles, throughput and device
 * flushes / RocksDB syncs per transaction.  Results are for comparing runs
 * on the same machine, never pass/fail thresholds.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rawstore/rawstore.h"
#include "alloc.h"
#include "bench.h"
#include "util.h"

static void perf_delta(struct result *r, const struct rawstore_perf *p0,
		       const struct rawstore_perf *p1)
{
	r->txns = p1->txns_committed - p0->txns_committed;
	r->flushes = p1->dev_flushes - p0->dev_flushes;
	r->syncs = p1->db_syncs - p0->db_syncs;
	r->copies = p1->data_copies - p0->data_copies;
	r->copy_bytes = p1->data_copy_bytes - p0->data_copy_bytes;
	r->fresh = p1->iobuf_fresh - p0->iobuf_fresh;
	r->have_copies = true;
}

/* ---- async submission with a bounded number in flight ---- */

struct inflight {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int n;
	int err;
	uint64_t *lat;		/* cap entries; grown under @lock */
	uint64_t cap;
};

struct slot {
	struct inflight *in;
	struct rawstore_txn *t;
	uint64_t start;
	uint64_t idx;
	bool busy;
};

static void done_cb(struct rawstore_txn *t, int result, void *arg)
{
	struct slot *s = arg;
	struct inflight *in = s->in;

	(void)t;
	pthread_mutex_lock(&in->lock);
	in->lat[s->idx] = rs_now_ns() - s->start;
	if (result && !in->err)
		in->err = result;
	in->n--;
	s->busy = false;
	pthread_cond_broadcast(&in->cond);
	pthread_mutex_unlock(&in->lock);
}

typedef int (*fill_fn)(struct rawstore_txn *t, uint64_t i, void *arg);

/* ---- synchronous submission from qd threads (--submit sync) ---- */

struct sync_run {
	struct rawstore *st;
	struct inflight *in;	/* lock, err, lat */
	fill_fn fill;
	void *arg;
	uint64_t count, next, min_ns, t0;
};

/* One of qd threads: take the next index, build (under the lock: the
 * workloads' generators are not thread-safe), submit and wait. */
static void *sync_main(void *arg)
{
	struct sync_run *sr = arg;
	struct inflight *in = sr->in;
	struct rawstore_txn *t;
	uint64_t i, start;
	int ret;

	ret = rawstore_txn_new(&t);
	for (;;) {
		pthread_mutex_lock(&in->lock);
		if (ret && !in->err)
			in->err = ret;
		i = sr->next;
		if (in->err || (i >= sr->count && (!sr->min_ns ||
						   rs_now_ns() - sr->t0 >= sr->min_ns))) {
			pthread_mutex_unlock(&in->lock);
			break;
		}
		if (i >= in->cap) {
			uint64_t *lat = realloc(in->lat, 2 * in->cap * sizeof(*lat));

			if (!lat) {
				in->err = -ENOMEM;
				pthread_mutex_unlock(&in->lock);
				break;
			}
			in->lat = lat;
			in->cap *= 2;
		}
		sr->next++;
		rawstore_txn_reset(t);
		ret = sr->fill(t, i, sr->arg);
		pthread_mutex_unlock(&in->lock);
		if (ret)
			continue;
		start = rs_now_ns();
		ret = rawstore_submit(sr->st, t);
		pthread_mutex_lock(&in->lock);
		in->lat[i] = rs_now_ns() - start;
		pthread_mutex_unlock(&in->lock);
	}
	rawstore_txn_free(t);
	return NULL;
}

/* run_txns with --submit sync: c->qd threads each submit and wait. */
static int run_txns_sync(struct rawstore *st, const struct cfg *c, uint64_t count, fill_fn fill,
			 void *arg, struct result *r)
{
	struct inflight in = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, r->lat,
			       count };
	struct sync_run sr = { st, &in, fill, arg, count, 0, r->min_ns, 0 };
	pthread_t *tid = calloc(c->qd, sizeof(*tid));
	struct rawstore_perf p0, p1;
	uint64_t c0;
	unsigned int k, n;

	if (!tid)
		return -ENOMEM;
	p0.struct_size = p1.struct_size = sizeof(p0);
	rawstore_perf_get(st, &p0);
	c0 = cpu_ns();
	sr.t0 = rs_now_ns();
	for (n = 0; n < c->qd; n++)
		if (pthread_create(&tid[n], NULL, sync_main, &sr))
			break;
	if (n < c->qd) {
		pthread_mutex_lock(&in.lock);
		in.err = -EAGAIN;
		pthread_mutex_unlock(&in.lock);
	}
	for (k = 0; k < n; k++)
		pthread_join(tid[k], NULL);
	free(tid);
	r->ns = rs_now_ns() - sr.t0;
	r->cpu_ns = cpu_ns() - c0;
	r->qd = c->qd;
	r->lat = in.lat;
	r->ops = sr.next;
	rawstore_perf_get(st, &p1);
	perf_delta(r, &p0, &p1);
	return in.err;
}

/*
 * Run @count transactions built by @fill with c->qd in flight; with
 * r->min_ns, go on until that long has passed too (r->lat, of @count
 * entries, grows).  r->ops is the number submitted.
 */
static int run_txns(struct rawstore *st, const struct cfg *c, uint64_t count, fill_fn fill,
		    void *arg, struct result *r)
{
	struct inflight in = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, r->lat,
			       count };
	struct slot *slots = calloc(c->qd, sizeof(*slots));
	struct rawstore_perf p0, p1;
	uint64_t i, t0, c0, f0;
	unsigned int k;
	int ret = 0;

	if (c->sync_submit) {
		free(slots);
		return run_txns_sync(st, c, count, fill, arg, r);
	}
	if (!slots)
		return -ENOMEM;
	for (k = 0; k < c->qd; k++) {
		slots[k].in = &in;
		if (rawstore_txn_new(&slots[k].t))
			return -ENOMEM;
	}
	p0.struct_size = p1.struct_size = sizeof(p0);
	rawstore_perf_get(st, &p0);
	c0 = cpu_ns();
	f0 = page_faults();
	t0 = rs_now_ns();
	for (i = 0; !ret; i++) {
		struct slot *s = &slots[i % c->qd];

		if (i >= count && (!r->min_ns || rs_now_ns() - t0 >= r->min_ns))
			break;
		pthread_mutex_lock(&in.lock);
		/* completions come in order: wait for this slot's previous one */
		while (s->busy)
			pthread_cond_wait(&in.cond, &in.lock);
		ret = in.err;
		if (!ret && i >= in.cap) {
			uint64_t *lat = realloc(in.lat, 2 * in.cap * sizeof(*lat));

			if (lat) {
				in.lat = lat;
				in.cap *= 2;
			} else {
				ret = -ENOMEM;
			}
		}
		pthread_mutex_unlock(&in.lock);
		if (ret)
			break;
		rawstore_txn_reset(s->t);
		ret = fill(s->t, i, arg);
		if (ret)
			break;
		s->idx = i;
		s->start = rs_now_ns();
		pthread_mutex_lock(&in.lock);
		s->busy = true;
		in.n++;
		pthread_mutex_unlock(&in.lock);
		ret = rawstore_submit_async(st, s->t, done_cb, s);
		if (ret) {
			pthread_mutex_lock(&in.lock);
			s->busy = false;
			in.n--;
			pthread_mutex_unlock(&in.lock);
		}
	}
	pthread_mutex_lock(&in.lock);
	while (in.n)
		pthread_cond_wait(&in.cond, &in.lock);
	if (!ret)
		ret = in.err;
	pthread_mutex_unlock(&in.lock);
	r->ns = rs_now_ns() - t0;
	r->cpu_ns = cpu_ns() - c0;
	r->faults = page_faults() - f0;
	r->qd = c->qd;
	r->lat = in.lat;
	r->ops = i;
	rawstore_perf_get(st, &p1);
	perf_delta(r, &p0, &p1);
	for (k = 0; k < c->qd; k++)
		rawstore_txn_free(slots[k].t);
	free(slots);
	return ret;
}

struct wl {
	const char *coll;
	uint64_t size, objects, obj_size, seed;
	char *data;
	const char *prefix;
	bool nocopy;		/* @data is 4096-aligned, @size a multiple */
};

static int fill_create(struct rawstore_txn *t, uint64_t i, void *arg)
{
	struct wl *w = arg;
	char name[64];

	obj_name(name, sizeof(name), w->prefix, i);
	if (w->nocopy)
		return rawstore_txn_write_nocopy(t, w->coll, name, strlen(name), 0, w->data,
						 w->size);
	return rawstore_txn_write(t, w->coll, name, strlen(name), 0, w->data, w->size);
}

static int fill_overwrite(struct rawstore_txn *t, uint64_t i, void *arg)
{
	struct wl *w = arg;
	uint64_t o = rnd(&w->seed) % w->objects;
	uint64_t off = (rnd(&w->seed) % (w->obj_size / w->size)) * w->size;
	char name[64];

	(void)i;
	obj_name(name, sizeof(name), w->prefix, o);
	return rawstore_txn_write(t, w->coll, name, strlen(name), off, w->data, w->size);
}

static int setup_coll(struct rawstore *st, const char *coll)
{
	struct rawstore_txn *t;
	int ret;

	if (rawstore_coll_exists(st, coll) == 1)
		return 0;
	ret = rawstore_txn_new(&t);
	if (ret)
		return ret;
	rawstore_txn_coll_create(t, coll);
	ret = rawstore_submit(st, t);
	rawstore_txn_free(t);
	return ret;
}

/* Remove @count objects named prefix+i so the next workload has room. */
static int remove_objects(struct rawstore *st, const char *prefix, uint64_t count)
{
	struct rawstore_txn *t;
	uint64_t i;
	int ret;

	ret = rawstore_txn_new(&t);
	for (i = 0; i < count && !ret; i++) {
		char name[64];

		obj_name(name, sizeof(name), prefix, i);
		rawstore_txn_remove(t, "bench", name, strlen(name));
		if (rawstore_txn_count(t) == 64 || i + 1 == count) {
			ret = rawstore_submit(st, t);
			rawstore_txn_reset(t);
		}
	}
	rawstore_txn_free(t);
	return ret;
}

/* Aging: how many pieces the allocator gave the objects just created. */
static int mean_extents(struct rawstore *st, const char *prefix, uint64_t count, double *out)
{
	uint64_t i, sum = 0;
	int ret = 0;

	for (i = 0; i < count && !ret; i++) {
		struct rawstore_stat s = { .struct_size = sizeof(s) };
		char name[64];

		obj_name(name, sizeof(name), prefix, i);
		ret = rawstore_stat(st, "bench", name, strlen(name), &s);
		sum += s.extents;
	}
	*out = count ? (double)sum / (double)count : 0;
	return ret;
}

static int bench_create(struct rawstore *st, const struct cfg *c, uint64_t size, uint64_t count)
{
	struct result r = { .name = "create", .size = size, .ops = count, .bytes = size * count };
	char prefix[32];
	struct wl w = { "bench", size, 0, 0, 1, NULL, prefix, false };
	int ret;

	snprintf(prefix, sizeof(prefix), "c%" PRIu64 "-", size);
	/* --nocopy: every create writes from this one aligned buffer, which
	 * stays unchanged until all have completed */
	w.nocopy = r.nocopy = c->nocopy && size && size % 4096 == 0;
	if (posix_memalign((void **)&w.data, 4096, size ? size : 1))
		w.data = NULL;
	r.lat = calloc(count, sizeof(uint64_t));
	if (!w.data || !r.lat)
		return -ENOMEM;
	memset(w.data, 0x5a, size);
	ret = setup_coll(st, "bench");
	r.min_ns = c->seconds * 1000000000ULL;
	if (!ret)
		ret = run_txns(st, c, count, fill_create, &w, &r);
	count = r.ops;
	r.bytes = size * count;
	if (!ret && c->phase && size > c->inline_max)
		ret = mean_extents(st, prefix, count, &r.extents_per_obj);
	if (!ret)
		report(c, &r);
	if (!ret)
		ret = remove_objects(st, prefix, count);
	free(w.data);
	free(r.lat);
	return ret;
}

static int bench_overwrite(struct rawstore *st, const struct cfg *c, uint64_t size,
			   uint64_t count)
{
	struct result r = { .name = "overwrite", .size = size, .ops = count,
			    .bytes = size * count };
	struct result setup = { .name = "setup" };
	struct wl w = { "bench", 4 << 20, c->objects, 4 << 20, 7, NULL, "ow-", false };
	struct cfg c1 = *c;
	int ret;

	w.data = malloc(w.obj_size);
	r.lat = calloc(count, sizeof(uint64_t));
	setup.lat = calloc(w.objects, sizeof(uint64_t));
	if (!w.data || !r.lat || !setup.lat)
		return -ENOMEM;
	memset(w.data, 0x33, w.obj_size);
	ret = setup_coll(st, "bench");
	c1.qd = c->qd < 4 ? c->qd : 4;
	if (!ret)
		ret = run_txns(st, &c1, w.objects, fill_create, &w, &setup);
	w.size = size;
	if (!ret)
		ret = run_txns(st, c, count, fill_overwrite, &w, &r);
	if (!ret)
		report(c, &r);
	if (!ret)
		ret = remove_objects(st, "ow-", w.objects);
	free(w.data);
	free(r.lat);
	free(setup.lat);
	return ret;
}

struct reader {
	struct rawstore *st;
	uint64_t size, objects, obj_size, seed, n;
	uint64_t *lat;
	int ret;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	char *buf = NULL;
	uint64_t i;

	/* aligned, as a server reading with O_DIRECT would have it (and as
	 * the files backend's O_DIRECT preads need) */
	if (posix_memalign((void **)&buf, 4096, rd->size))
		rd->ret = -ENOMEM;
	for (i = 0; i < rd->n && !rd->ret; i++) {
		char name[64];
		uint64_t o = rnd(&rd->seed) % rd->objects;
		uint64_t off = (rnd(&rd->seed) % (rd->obj_size / rd->size)) * rd->size;
		uint64_t s = rs_now_ns();
		ssize_t n;

		obj_name(name, sizeof(name), "rd-", o);
		n = rawstore_read(rd->st, "bench", name, strlen(name), off, buf, rd->size);
		rd->lat[i] = rs_now_ns() - s;
		if (n != (ssize_t)rd->size)
			rd->ret = n < 0 ? (int)n : -EIO;
	}
	free(buf);
	return NULL;
}

static int bench_read(struct rawstore *st, const struct cfg *c, uint64_t size, uint64_t count)
{
	struct result r = { .name = "read", .size = size, .ops = count, .bytes = size * count };
	uint64_t objects = c->objects, obj_size = 4 << 20, seed = 3, i, t0, c0;
	struct result setup = { .name = "setup" };
	struct wl w = { "bench", obj_size, objects, obj_size, 9, NULL, "rd-", false };
	struct cfg c1 = *c;
	char *buf;
	int ret;

	w.data = malloc(obj_size);
	if (posix_memalign((void **)&buf, 4096, size))	/* as reader_main's */
		buf = NULL;
	r.lat = calloc(count, sizeof(uint64_t));
	setup.lat = calloc(objects, sizeof(uint64_t));
	if (!w.data || !buf || !r.lat || !setup.lat)
		return -ENOMEM;
	memset(w.data, 0x44, obj_size);
	ret = setup_coll(st, "bench");
	c1.qd = c->qd < 4 ? c->qd : 4;
	if (!ret)
		ret = run_txns(st, &c1, objects, fill_create, &w, &setup);
	c0 = cpu_ns();
	t0 = rs_now_ns();
	if (!ret && c->threads > 1) {
		/* --threads: that many threads each read count / threads */
		unsigned int k, nt = c->threads;
		pthread_t *tid = calloc(nt, sizeof(*tid));
		struct reader *rd = calloc(nt, sizeof(*rd));

		if (!tid || !rd)
			ret = -ENOMEM;
		for (k = 0; !ret && k < nt; k++) {
			rd[k] = (struct reader){ st, size, objects, obj_size, 3 + k, count / nt,
						 r.lat + k * (count / nt), 0 };
			pthread_create(&tid[k], NULL, reader_main, &rd[k]);
		}
		for (k = 0; !ret && k < nt; k++) {
			pthread_join(tid[k], NULL);
			if (rd[k].ret && !ret)
				ret = rd[k].ret;
		}
		r.ops = count / nt * nt;
		r.bytes = r.ops * size;
		free(tid);
		free(rd);
		i = r.ops;
	}
	for (i = 0; i < count && !ret && c->threads <= 1; i++) {
		char name[64];
		uint64_t o = rnd(&seed) % objects, off = (rnd(&seed) % (obj_size / size)) * size;
		uint64_t s = rs_now_ns();
		ssize_t n;

		obj_name(name, sizeof(name), "rd-", o);
		n = rawstore_read(st, "bench", name, strlen(name), off, buf, size);
		r.lat[i] = rs_now_ns() - s;
		if (n != (ssize_t)size)
			ret = n < 0 ? (int)n : -EIO;
	}
	r.ns = rs_now_ns() - t0;
	r.cpu_ns = cpu_ns() - c0;
	/* reads run in the callers' threads, one at a time each */
	r.qd = c->threads > 1 ? c->threads : 1;
	if (!ret) {
		report(c, &r);
		ret = remove_objects(st, "rd-", objects);
	}
	free(w.data);
	free(buf);
	free(r.lat);
	free(setup.lat);
	return ret;
}

static int fill_remove(struct rawstore_txn *t, uint64_t i, void *arg)
{
	struct wl *w = arg;
	char name[64];

	obj_name(name, sizeof(name), w->prefix, i);
	return rawstore_txn_remove(t, w->coll, name, strlen(name));
}

/* Used data blocks of a dm-thin pool (`dmsetup status POOL`), or -1. */
static long long thin_used(const char *pool)
{
	char cmd[300], line[512], used[64];
	long long n = -1;
	FILE *f;

	if (!pool)
		return -1;
	snprintf(cmd, sizeof(cmd), "dmsetup status '%s' 2>/dev/null", pool);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	/* 0 LEN thin-pool TRANSACTION META_USED/META_TOTAL DATA_USED/DATA_TOTAL ... */
	if (fgets(line, sizeof(line), f) &&
	    sscanf(line, "%*s %*s thin-pool %*s %*s %63s", used) == 1)
		n = strtoll(used, NULL, 10);
	pclose(f);
	return n;
}

/* Create count objects of size (untimed), time removing each in its own
 * transaction, then time reclaiming (punching) the freed space.  On a
 * thin pool the used data blocks are read before the creates, after them
 * (before the removes), before reclaim and after it, so the report can
 * tell whether removing and reclaiming gave blocks back. */
static int bench_remove(struct rawstore *st, const struct cfg *c, uint64_t size, uint64_t count)
{
	struct result r = { .name = "remove", .size = size, .ops = count };
	struct result rc = { .name = "reclaim", .size = size, .ops = 1 };
	struct result setup = { .name = "setup" };
	struct wl w = { "bench", size, 0, 0, 5, NULL, "rm-", false };
	struct rawstore_perf p0, p1;
	uint64_t t0, c0;
	long long thin0, thinc = -1, thin1 = -1, thin2 = -1;
	int ret;

	thin0 = thin_used(c->thin_pool);
	w.data = malloc(size);
	r.lat = calloc(count, sizeof(uint64_t));
	setup.lat = calloc(count, sizeof(uint64_t));
	rc.lat = calloc(1, sizeof(uint64_t));
	if (!w.data || !r.lat || !setup.lat || !rc.lat)
		return -ENOMEM;
	memset(w.data, 0x66, size);
	ret = setup_coll(st, "bench");
	if (!ret)
		ret = run_txns(st, c, count, fill_create, &w, &setup);
	/* punch what earlier workloads freed, so reclaim measures this one */
	if (!ret && rawstore_reclaim(st) == -EOPNOTSUPP)
		ret = 0;
	if (!ret)
		thinc = thin_used(c->thin_pool);
	if (!ret)
		ret = run_txns(st, c, count, fill_remove, &w, &r);
	if (!ret)
		report(c, &r);
	if (!ret) {
		p0.struct_size = p1.struct_size = sizeof(p0);
		rawstore_perf_get(st, &p0);
		c0 = cpu_ns();
		t0 = rs_now_ns();
		thin1 = thin_used(c->thin_pool);
		ret = rawstore_reclaim(st);
		rc.ns = rc.lat[0] = rs_now_ns() - t0;
		thin2 = thin_used(c->thin_pool);
		rc.cpu_ns = cpu_ns() - c0;
		rawstore_perf_get(st, &p1);
		rc.bytes = p1.bytes_punched - p0.bytes_punched;
		rc.qd = 1;
		if (ret == -EOPNOTSUPP) {
			report_missing(c, "reclaim", size, "the device refuses PUNCH_HOLE "
				       "(EOPNOTSUPP): freed ranges stay tracked");
		} else if (!ret) {
			report(c, &rc);
		}
		if (c->thin_pool && !c->json)
			printf("thin pool %s: used data blocks %lld before the creates, %lld "
			       "after them, %lld before reclaim, %lld after\n", c->thin_pool, thin0,
			       thinc, thin1, thin2);
		else if (c->thin_pool)
			printf("{%s%s\"kind\": \"thin_pool\", \"pool\": \"%s\", \"size\": %"
			       PRIu64 ", \"used_blocks_before_creates\": %lld"
			       ", \"used_blocks_after_creates\": %lld"
			       ", \"used_blocks_before_reclaim\": %lld"
			       ", \"used_blocks_after_reclaim\": %lld, \"reclaim\": \"%s\"}\n",
			       c->tag ? c->tag : "", c->tag && *c->tag ? ", " : "", c->thin_pool,
			       size, thin0, thinc, thin1, thin2, ret ? rawstore_strerror(ret) : "ok");
		if (ret == -EOPNOTSUPP)
			ret = 0;
	}
	free(w.data);
	free(r.lat);
	free(setup.lat);
	free(rc.lat);
	return ret;
}

/* ---- allocator micro-benchmark ---- */

static int bench_alloc(const struct cfg *c, double fullness)
{
	const uint64_t U = 4096, units = 1 << 20; /* a 4 GiB space */
	uint64_t held_cap = units, n_held = 0, i, seed = 42, ops = c->count * 10, t0, ns;
	struct pext *held = malloc(held_cap * sizeof(*held));
	struct extset s;
	uint64_t *lat = calloc(ops, sizeof(uint64_t));

	if (!held || !lat)
		return -ENOMEM;
	extset_init(&s, true);
	extset_insert(&s, 0, units * U);
	/* fill to the target with random sizes, freeing at random: fragmented */
	while ((double)(units * U - s.total) < fullness * (double)(units * U)) {
		struct pext *p;
		int n, j;

		if (n_held && rnd(&seed) % 3 == 0) {
			uint64_t k = rnd(&seed) % n_held;

			extset_insert(&s, held[k].off, held[k].len);
			held[k] = held[--n_held];
			continue;
		}
		n = extset_alloc(&s, (rnd(&seed) % 16 + 1) * U, 0, 0, &p);
		if (n < 0)
			break;
		for (j = 0; j < n && n_held < held_cap; j++)
			held[n_held++] = p[j];
		free(p);
	}
	/* steady state: free a random extent, allocate a random size */
	t0 = rs_now_ns();
	for (i = 0; i < ops; i++) {
		uint64_t k = rnd(&seed) % n_held, s0 = rs_now_ns();
		struct pext *p;
		int n, j;

		extset_insert(&s, held[k].off, held[k].len);
		held[k] = held[--n_held];
		n = extset_alloc(&s, (rnd(&seed) % 16 + 1) * U, 0, 0, &p);
		lat[i] = rs_now_ns() - s0;
		if (n < 0)
			continue;
		for (j = 0; j < n && n_held < held_cap; j++)
			held[n_held++] = p[j];
		free(p);
	}
	ns = rs_now_ns() - t0;
	sort_u64(lat, ops);
	if (c->json)
		printf("{\"workload\": \"alloc\", \"fullness\": %.2f, \"ops\": %" PRIu64
		       ", \"ns_per_op\": %.1f, \"p99_ns\": %" PRIu64 ", \"free_extents\": %" PRIu64
		       ", \"frag_score\": %.4f}\n", fullness, ops, (double)ns / (double)ops / 2,
		       pct(lat, ops, 0.99), s.count, extset_frag_score(&s));
	else
		printf("alloc      %3.0f%% full  %8" PRIu64 " free+alloc pairs  %7.1f ns/op  "
		       "p99 pair %6" PRIu64 " ns  %7" PRIu64 " free extents  frag score %.4f\n",
		       fullness * 100, ops, (double)ns / (double)ops / 2, pct(lat, ops, 0.99),
		       s.count, extset_frag_score(&s));
	extset_destroy(&s);
	free(held);
	free(lat);
	return 0;
}

/* The child of bench_recovery: fill the ring up to its next trim, die. */
static void recovery_child(const struct cfg *c, uint64_t size, int fd)
{
	struct rawstore_perf p = { .struct_size = sizeof(p) };
	struct rawstore_info info = { .struct_size = sizeof(info) };
	uint64_t n = 0, base, trims, last = 0, prev;
	struct rawstore *st;
	uint8_t *buf;

	if (rawstore_open(c->dev, c->meta, c->oo, &st) || rawstore_get_info(st, &info) ||
	    rawstore_perf_get(st, &p) || setup_coll(st, "bench"))
		_exit(1);
	buf = malloc(size ? size : 1);
	if (!buf)
		_exit(1);
	memset(buf, 0x6b, size);
	base = prev = p.journal_bytes;
	trims = p.journal_trims;
	/* A trim frees the ring once a record would take it past half full:
	 * stop while two more records of the last one's size still fit. */
	for (;;) {
		struct rawstore_txn *t;
		char name[64];

		obj_name(name, sizeof(name), "rec-", n);
		if (rawstore_txn_new(&t))
			_exit(1);
		rawstore_txn_write(t, "bench", name, strlen(name), 0, buf, size);
		if (rawstore_submit(st, t) || rawstore_perf_get(st, &p))
			_exit(1);
		rawstore_txn_free(t);
		n++;
		last = p.journal_bytes - prev;
		prev = p.journal_bytes;
		if (p.journal_trims != trims) {
			trims = p.journal_trims;
			base = p.journal_bytes - last;
		}
		if (p.journal_bytes - base + 2 * last > info.journal_size / 2)
			break;
	}
	if (write(fd, &n, sizeof(n)) != sizeof(n))
		_exit(1);
	_exit(0);	/* no close: RocksDB's unsynced writes die with us */
}

/*
 * recovery: how long an open takes to replay a full journal ring.  A
 * child process opens the store, creates objects of @size until the ring
 * holds all it can before its next trim (which comes at half full), and
 * exits without closing, and the timed reopen replays every record since
 * the trim point (those RocksDB already holds again: the process's death
 * loses only what RocksDB did not write yet, a power cut more, and replay
 * reads and applies the same records either way).  A clean
 * open of the same store is timed after it: the part that is not replay.
 */
static int bench_recovery(struct rawstore **stp, const struct cfg *c, uint64_t size)
{
	struct rawstore_records rec = { .struct_size = sizeof(rec) };
	uint64_t n = 0, t0, t_crash, t_clean, span;
	int fds[2], status = 0, ret;
	pid_t pid;

	if (strcmp(c->backend, "rawstore") || strcmp(c->journal, "device")) {
		fprintf(stderr, "rawstore-bench: recovery: needs the device journal "
			"(this store: %s, journal %s)\n", c->backend, c->journal);
		return -EINVAL;
	}
	rawstore_close(*stp);
	*stp = NULL;
	if (pipe(fds))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		recovery_child(c, size, fds[1]);
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], &n, sizeof(n)) != sizeof(n))
		n = 0;
	close(fds[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (!n || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "rawstore-bench: recovery: the filling process failed\n");
		ret = -EIO;
		goto out_reopen;
	}
	t0 = rs_now_ns();
	ret = rawstore_open(c->dev, c->meta, c->oo, stp);
	t_crash = rs_now_ns() - t0;
	if (ret)
		return ret;
	ret = rawstore_records_get(*stp, &rec);
	/* from the trim point to the head: the records replay read and
	 * applied (those up to J again), and the open's own */
	span = rec.journal_head - rec.journal_start;
	rawstore_close(*stp);
	*stp = NULL;
	t0 = rs_now_ns();
	if (!ret)
		ret = rawstore_open(c->dev, c->meta, c->oo, stp);
	t_clean = rs_now_ns() - t0;
	if (ret)
		return ret;
	if (c->json)
		printf("{\"workload\": \"recovery\", \"size\": %" PRIu64 ", \"objects\": %" PRIu64
		       ", \"journal_size\": %" PRIu64 ", \"replayed_bytes\": %" PRIu64
		       ", \"records_after_j\": %" PRIu64 ", \"open_ms\": %.2f"
		       ", \"clean_open_ms\": %.2f%s%s}\n", size, n, rec.journal_size,
		       span, rec.journal_replayed, (double)t_crash / 1e6,
		       (double)t_clean / 1e6, c->tag && *c->tag ? ", " : "", c->tag ? c->tag : "");
	else
		printf("recovery   %8" PRIu64 " B %8" PRIu64 " creates, %" PRIu64 " bytes of a %"
		       PRIu64 "-byte ring replayed (%" PRIu64 " records past J): open %.1f ms, "
		       "a clean open %.1f ms\n", size, n, span, rec.journal_size,
		       rec.journal_replayed, (double)t_crash / 1e6, (double)t_clean / 1e6);
	return remove_objects(*stp, "rec-", n);

out_reopen:
	if (rawstore_open(c->dev, c->meta, c->oo, stp))
		*stp = NULL;
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rawstore-bench [options] <workload>...\n"
		"Each result: ops/s, MB/s, p50/p99/p999 latency, CPU us per operation\n"
		"(getrusage(RUSAGE_SELF) user+sys over the timed phase / ops; JSON\n"
		"cpu_us_per_op), flushes and RocksDB syncs per transaction.\n"
		"workloads (each NAME:SIZE[,qd=N][,n=N] overrides --qd and --count):\n"
		"  create:SIZE     new objects of SIZE bytes (4k, 64k, 1m, 4m)\n"
		"  overwrite:SIZE  random SIZE overwrites in 4 MiB objects\n"
		"  read:SIZE       random SIZE reads from 4 MiB objects (one at a time)\n"
		"  remove:SIZE     remove N objects of SIZE, each its own transaction,\n"
		"                  then reclaim (punch) the freed space\n"
		"  alloc:PCT       allocator free+alloc at PCT%% fullness, fragmented\n"
		"  age:PCT         fill the store to PCT%% of its data space with mixed sizes\n"
		"                  (4 KiB..4 MiB) and interleaved removes; print the\n"
		"                  fragmentation score; later workloads are tagged \"aged\",\n"
		"                  earlier ones \"fresh\"\n"
		"  load:SECONDS    --threads clients (default 8) submit independent\n"
		"                  transactions mixed with reads and removes, one thread\n"
		"                  reclaims; sustained ops/s and latency percentiles\n"
		"  recovery:SIZE   a child fills the device journal's ring with SIZE creates\n"
		"                  up to its next trim and dies without closing; the\n"
		"                  reopen that replays them is timed (ms), and a clean one\n"
		"  core            create:4k create:64k create:1m create:4m overwrite:4k\n"
		"                  read:4k read:64k alloc:50 alloc:90\n"
		"options:\n"
		"  --dev PATH --meta DIR  use this store (mkfs'd with --mkfs), else a temporary\n"
		"                         file-backed store in $TMPDIR\n"
		"  --mkfs                 mkfs --dev/--meta first (destroys data)\n"
		"  --dev-size SIZE        size of the temporary device (default 4g)\n"
		"  --store-size SIZE      --mkfs: use only the first SIZE bytes of --dev\n"
		"  --count N              operations per workload (default 1000)\n"
		"  --seconds S            create: go on past --count until S seconds have\n"
		"                         passed (report the objects created)\n"
		"  --qd N                 transactions in flight (default 1)\n"
		"  --submit async|sync    async (default): one thread keeps --qd in flight\n"
		"                         with rawstore_submit_async; sync: --qd threads\n"
		"                         each call rawstore_submit (as --backend files's\n"
		"                         threads each write synchronously)\n"
		"  --threads N            read: N threads read at once (default 1)\n"
		"  --deferred-new-max N   open option: new data up to N bytes per allocation\n"
		"                         through the RocksDB WAL (default: 16 KiB on a\n"
		"                         rotational device, else 0)\n"
		"  --deferred-max N       open option: overwrites of mapped units up to N bytes\n"
		"                         through the journal, applied in place after the\n"
		"                         commit (default 32768; 0: every overwrite goes to\n"
		"                         new units, copy-on-write)\n"
		"  --objects N            4 MiB objects for overwrite/read (default 64)\n"
		"  --min-alloc N --inline-max N  mkfs options (default 4096 / 4096)\n"
		"  --journal device|rocksdb  mkfs: the metadata journal on the device (the\n"
		"                         default) or RocksDB's own WAL in --meta\n"
		"  --journal-size SIZE    mkfs: the device journal's size (default: the\n"
		"                         library's, 1/64 of the device, 4m to 256m)\n"
		"  --wal-recycle N        --journal rocksdb: RocksDB recycles N WAL files\n"
		"                         (reported as journal \"rocksdb-recycle\")\n"
		"  --backend rawstore|files  files: one file per object in the directory\n"
		"                         --dev, records in RocksDB at --meta (default rawstore)\n"
		"  --files-hint           files: fallocate each new object's size first\n"
		"  --nocopy               create: rawstore_txn_write_nocopy from one aligned\n"
		"                         buffer (sizes that are multiples of 4 KiB)\n"
		"  --fio-mbs MB/s         fio's bandwidth for the same shape and depth (its\n"
		"                         bw_bytes / 1e6): print each result's MB/s as a ratio\n"
		"                         to it (JSON: fio_mb_per_sec, ratio_to_fio)\n"
		"  --space-policy Z[,P]   space policy at mkfs and open: zero policy Z (auto,\n"
		"                         prepare, pad), punch policy P (operator, background,\n"
		"                         inline)\n"
		"  --prealloc-policy P    mkfs of a store in a file: none, unwritten,\n"
		"                         write-zeroes, stale\n"
		"  --tag JSON             JSON members added to every --json line\n"
		"  --thin-pool NAME       remove: report the dm-thin pool's used data blocks\n"
		"                         before the creates, before and after reclaim\n"
		"  --json                 one JSON object per result line\n");
}

static int run_one(struct rawstore **stp, const struct cfg *c0, const char *w)
{
	struct cfg c = *c0;
	char name[32];
	uint64_t arg;

	struct rawstore *st = *stp;

	if (parse_workload(w, name, sizeof(name), &arg, &c.qd, &c.count)) {
		fprintf(stderr, "rawstore-bench: bad workload '%s'\n", w);
		return -EINVAL;
	}
	if (!strcmp(name, "recovery") && arg)
		return bench_recovery(stp, &c, arg);
	if (!strcmp(name, "create") && arg)
		return bench_create(st, &c, arg, c.count);
	if (!strcmp(name, "overwrite") && arg)
		return bench_overwrite(st, &c, arg, c.count);
	if (!strcmp(name, "read") && arg)
		return bench_read(st, &c, arg, c.count);
	if (!strcmp(name, "remove") && arg)
		return bench_remove(st, &c, arg, c.count);
	if (!strcmp(name, "alloc") && arg)
		return bench_alloc(&c, (double)arg / 100.0);
	if (!strcmp(name, "age") && arg && arg < 100)
		return bench_age(st, &c, (unsigned int)arg);
	if (!strcmp(name, "load") && arg)
		return bench_load(st, &c, arg);
	fprintf(stderr, "rawstore-bench: unknown workload '%s'\n", w);
	return -EINVAL;
}

/* The enum value whose name (name_fn) is the @len bytes at @s, or -EINVAL. */
static int policy_by_name(const char *(*name_fn)(int), int max, const char *s, size_t len)
{
	int v;

	for (v = 1; v <= max; v++)
		if (strlen(name_fn(v)) == len && !strncmp(name_fn(v), s, len))
			return v;
	return -EINVAL;
}

/*
 * --space-policy ZERO[,PUNCH]: the zero policy (auto, prepare, pad) and
 * optionally the punch policy (operator, background, inline), by the
 * library's own names; recorded at mkfs and asked for at open.
 */
static int set_space_policy(struct rawstore_mkfs_opts *mo, struct rawstore_open_opts *oo,
			    const char *name)
{
	const char *comma = strchr(name, ',');
	size_t zlen = comma ? (size_t)(comma - name) : strlen(name);
	int z = policy_by_name(rawstore_zero_policy_name, RAWSTORE_ZERO_PAD, name, zlen);
	int p = comma ? policy_by_name(rawstore_punch_policy_name, RAWSTORE_PUNCH_INLINE,
				      comma + 1, strlen(comma + 1)) : 0;

	if (z < 0 || p < 0)
		return -EINVAL;
	mo->zero_policy = oo->zero_policy = z;
	mo->punch_policy = oo->punch_policy = p;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dev", required_argument, 0, 'd' }, { "meta", required_argument, 0, 'm' },
		{ "mkfs", no_argument, 0, 'M' }, { "dev-size", required_argument, 0, 's' },
		{ "count", required_argument, 0, 'n' }, { "qd", required_argument, 0, 'q' },
		{ "min-alloc", required_argument, 0, 'a' },
		{ "inline-max", required_argument, 0, 'i' }, { "json", no_argument, 0, 'j' },
		{ "objects", required_argument, 0, 'o' }, { "backend", required_argument, 0, 'b' },
		{ "files-hint", no_argument, 0, 'H' }, { "tag", required_argument, 0, 't' },
		{ "nocopy", no_argument, 0, 'C' }, { "fio-mbs", required_argument, 0, 'F' },
		{ "space-policy", required_argument, 0, 'p' },
		{ "thin-pool", required_argument, 0, 'T' },
		{ "prealloc-policy", required_argument, 0, 'P' },
		{ "threads", required_argument, 0, 'r' },
		{ "store-size", required_argument, 0, 'S' },
		{ "deferred-new-max", required_argument, 0, 'D' },
		{ "deferred-max", required_argument, 0, 'X' },
		{ "seconds", required_argument, 0, 'E' },
		{ "journal", required_argument, 0, 'J' },
		{ "journal-size", required_argument, 0, 'L' },
		{ "wal-recycle", required_argument, 0, 'W' },
		{ "submit", required_argument, 0, 'U' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	static const char *const core[] = { "create:4k", "create:64k", "create:1m", "create:4m",
					    "overwrite:4k", "read:4k", "read:64k", "alloc:50",
					    "alloc:90" };
	struct cfg c = { .backend = "rawstore", .dev_size = 4ULL << 30, .count = 1000,
			 .objects = 64, .qd = 1, .min_alloc = 4096, .inline_max = 4096,
			 .deferred_new_max = -1, .deferred_max = -1 };
	char tmpdir[256] = "", devp[300], metap[300];
	struct rawstore_mkfs_opts mo;
	struct rawstore_open_opts oo;
	struct rawstore_info info;
	struct rawstore *st;
	bool do_mkfs = false;
	int opt, ret = 0, i;

	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'd':
			c.dev = optarg;
			break;
		case 'm':
			c.meta = optarg;
			break;
		case 'M':
			do_mkfs = true;
			break;
		case 's':
			c.dev_size = parse_size(optarg);
			break;
		case 'n':
			c.count = parse_size(optarg);
			break;
		case 'q':
			c.qd = (unsigned int)atoi(optarg);
			break;
		case 'a':
			c.min_alloc = (uint32_t)parse_size(optarg);
			break;
		case 'i':
			c.inline_max = (uint32_t)parse_size(optarg);
			break;
		case 'j':
			c.json = true;
			break;
		case 'o':
			c.objects = parse_size(optarg);
			break;
		case 'b':
			c.backend = optarg;
			break;
		case 'H':
			c.files_hint = true;
			break;
		case 'C':
			c.nocopy = true;
			break;
		case 'U':
			if (strcmp(optarg, "sync") && strcmp(optarg, "async")) {
				fprintf(stderr, "rawstore-bench: --submit takes async or sync, "
					"not '%s'\n", optarg);
				return 2;
			}
			c.sync_submit = !strcmp(optarg, "sync");
			break;
		case 'F': {
			char *end;

			c.fio_mbs = strtod(optarg, &end);
			if (*end || !(c.fio_mbs > 0)) {
				fprintf(stderr, "rawstore-bench: --fio-mbs takes fio's bandwidth in "
					"MB/s (a number > 0), not '%s'\n", optarg);
				return 2;
			}
			break;
		}
		case 't':
			c.tag = optarg;
			break;
		case 'p':
			c.space_policy = optarg;
			break;
		case 'T':
			c.thin_pool = optarg;
			break;
		case 'P':
			c.prealloc_policy = optarg;
			break;
		case 'r':
			c.threads = (unsigned int)atoi(optarg);
			break;
		case 'S':
			c.store_size = parse_size(optarg);
			break;
		case 'D':
			c.deferred_new_max = (int)parse_size(optarg);
			break;
		case 'X':
			c.deferred_max = (int64_t)parse_size(optarg);
			break;
		case 'J':
			if (strcmp(optarg, "device") && strcmp(optarg, "rocksdb")) {
				fprintf(stderr, "rawstore-bench: --journal %s: want device or "
					"rocksdb\n", optarg);
				return 2;
			}
			c.journal = optarg;
			break;
		case 'L':
			c.journal_size = parse_size(optarg);
			break;
		case 'W':
			c.wal_recycle = atoi(optarg);
			break;
		case 'E': {
			char *end;

			c.seconds = strtoull(optarg, &end, 10);
			if (*end || !c.seconds) {
				fprintf(stderr, "rawstore-bench: --seconds takes a whole number "
					"of seconds > 0, not '%s'\n", optarg);
				return 2;
			}
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc || !c.count || !c.qd || !c.objects || (!c.dev != !c.meta)) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(c.backend, "files")) {
		if (!c.dev || c.space_policy || c.seconds) {
			fprintf(stderr, "rawstore-bench: --backend files needs --dev DIR "
				"--meta DIR and takes no --space-policy or --seconds\n");
			return 2;
		}
		return files_run(&c, argv + optind, argc - optind) ? 1 : 0;
	}
	if (strcmp(c.backend, "rawstore")) {
		fprintf(stderr, "rawstore-bench: unknown backend '%s'\n", c.backend);
		return 2;
	}
	rawstore_open_opts_init(&oo);
	oo.deferred_new_max = c.deferred_new_max;
	if (c.deferred_max >= 0)
		oo.deferred_max = (uint32_t)c.deferred_max;
	oo.rocksdb_wal_recycle = c.wal_recycle;
	rawstore_mkfs_opts_init(&mo);
	if (c.space_policy && set_space_policy(&mo, &oo, c.space_policy)) {
		fprintf(stderr, "rawstore-bench: --space-policy %s: want ZERO[,PUNCH] with ZERO "
			"auto, prepare or pad and PUNCH operator, background or inline\n",
			c.space_policy);
		return 2;
	}
	if (c.prealloc_policy) {
		int p = policy_by_name(rawstore_prealloc_policy_name, RAWSTORE_PREALLOC_STALE,
				       c.prealloc_policy, strlen(c.prealloc_policy));

		if (p < 0) {
			fprintf(stderr, "rawstore-bench: --prealloc-policy %s: want none, "
				"unwritten, write-zeroes or stale\n", c.prealloc_policy);
			return 2;
		}
		mo.prealloc_policy = p;
	}
	mo.min_alloc_size = c.min_alloc;
	if (c.journal)
		mo.journal = strcmp(c.journal, "rocksdb") ? RAWSTORE_JOURNAL_DEVICE :
							    RAWSTORE_JOURNAL_ROCKSDB;
	mo.journal_size = c.journal_size;
	mo.device_size = c.store_size;
	mo.inline_max = c.inline_max;
	mo.force = 1;
	if (!c.dev) {
		const char *t = getenv("TMPDIR");
		FILE *f;

		snprintf(tmpdir, sizeof(tmpdir), "%s/rawstore-bench-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(tmpdir)) {
			perror("mkdtemp");
			return 1;
		}
		snprintf(devp, sizeof(devp), "%s/dev", tmpdir);
		snprintf(metap, sizeof(metap), "%s/meta", tmpdir);
		f = fopen(devp, "w");
		if (!f || ftruncate(fileno(f), (off_t)c.dev_size)) {
			perror(devp);
			return 1;
		}
		fclose(f);
		c.dev = devp;
		c.meta = metap;
		do_mkfs = true;
	}
	if (do_mkfs) {
		ret = rawstore_mkfs(c.dev, c.meta, &mo);
		if (ret) {
			fprintf(stderr, "mkfs: %s: %s\n", rawstore_strerror(ret),
				rawstore_errmsg());
			goto out_rm;
		}
	}
	c.oo = &oo;
	ret = rawstore_open(c.dev, c.meta, &oo, &st);
	if (ret) {
		fprintf(stderr, "open: %s: %s\n", rawstore_strerror(ret), rawstore_errmsg());
		goto out_rm;
	}
	info.struct_size = sizeof(info);
	rawstore_get_info(st, &info);
	c.journal = !strcmp(info.journal, "rocksdb") && c.wal_recycle > 0 ? "rocksdb-recycle" :
									    info.journal;
	if (!c.json)
		printf("# rawstore-bench %s on %s (%s, %s I/O, %s), min_alloc %u, inline_max %u, "
		       "journal %s\n", rawstore_version(), c.dev,
		       info.is_block_device ? "block device" : "file",
		       info.direct_io ? "direct" : "buffered", info.io_engine, info.min_alloc_size,
		       info.inline_max, info.journal);
	if (!c.json)
		printf("# space: zero %s (offload %d), punch %s, prealloc %s, provisioning %d; "
		       "crc32c by %s\n", info.zero_policy, info.zero_offload, info.punch_policy,
		       info.prealloc_policy, info.provisioning, rs_crc32c_variant());
	else
		printf("{%s%s\"kind\": \"store_info\", \"zero_policy\": \"%s\""
		       ", \"zero_offload\": %d, \"punch_policy\": \"%s\""
		       ", \"prealloc_policy\": \"%s\", \"provisioning\": %d"
		       ", \"io_engine\": \"%s\", \"direct_io\": %d, \"rotational\": %d"
		       ", \"deferred_max\": %u, \"deferred_new_max\": %u, \"crc32c\": \"%s\""
		       ", \"crc32c_variant\": \"%s\"}\n",
		       c.tag ? c.tag : "", c.tag && *c.tag ? ", " : "", info.zero_policy,
		       info.zero_offload, info.punch_policy, info.prealloc_policy,
		       info.provisioning, info.io_engine, info.direct_io, info.rotational,
		       info.deferred_max, info.deferred_new_max, rs_crc32c_impl(),
		       rs_crc32c_variant());
	for (i = optind; i < argc; i++)
		if (!strncmp(argv[i], "age:", 4))
			c.phase = "fresh";
	for (i = optind; i < argc && !ret; i++) {
		if (!strncmp(argv[i], "age:", 4)) {
			ret = run_one(&st, &c, argv[i]);
			c.phase = "aged";
		} else if (!strcmp(argv[i], "core")) {
			size_t k;

			for (k = 0; k < sizeof(core) / sizeof(core[0]) && !ret; k++)
				ret = run_one(&st, &c, core[k]);
		} else {
			ret = run_one(&st, &c, argv[i]);
		}
	}
	/* aging: the free space after the workloads on the aged store */
	if (!ret && c.phase && !strcmp(c.phase, "aged"))
		ret = space_report(st, &c, "after");
	if (ret)
		fprintf(stderr, "rawstore-bench: %s: %s\n", rawstore_strerror(ret),
			rawstore_errmsg());
	rawstore_close(st);
out_rm:
	if (*tmpdir) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return ret ? 1 : 0;
}
