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
#include <time.h>
#include <unistd.h>

#include "rawstore/rawstore.h"
#include "alloc.h"

struct cfg {
	const char *dev, *meta;
	uint64_t dev_size;		/* bytes, for a temporary file device */
	uint64_t count;
	unsigned int qd;		/* transactions in flight */
	uint32_t min_alloc, inline_max;
	bool json;
	bool keep_tmp;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int cmp_u64(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

static uint64_t pct(const uint64_t *v, uint64_t n, double p)
{
	uint64_t i = (uint64_t)(p * (double)(n - 1) + 0.5);

	return n ? v[i] : 0;
}

struct result {
	const char *name;
	uint64_t size, ops, bytes, ns;
	uint64_t *lat;
	struct rawstore_perf p0, p1;
};

static void report(const struct cfg *c, struct result *r)
{
	double secs = (double)r->ns / 1e9;
	uint64_t txns = r->p1.txns_committed - r->p0.txns_committed;
	double fl = txns ? (double)(r->p1.dev_flushes - r->p0.dev_flushes) / (double)txns : 0;
	double sy = txns ? (double)(r->p1.db_syncs - r->p0.db_syncs) / (double)txns : 0;
	uint64_t p50, p99, p999;

	qsort(r->lat, r->ops, sizeof(uint64_t), cmp_u64);
	p50 = pct(r->lat, r->ops, 0.50);
	p99 = pct(r->lat, r->ops, 0.99);
	p999 = pct(r->lat, r->ops, 0.999);
	if (c->json) {
		printf("{\"workload\": \"%s\", \"size\": %" PRIu64 ", \"ops\": %" PRIu64
		       ", \"qd\": %u, \"seconds\": %.6f, \"ops_per_sec\": %.1f"
		       ", \"mb_per_sec\": %.2f"
		       ", \"p50_us\": %.1f, \"p99_us\": %.1f, \"p999_us\": %.1f"
		       ", \"flushes_per_txn\": %.3f, \"db_syncs_per_txn\": %.3f}\n",
		       r->name, r->size, r->ops, c->qd, secs, (double)r->ops / secs,
		       (double)r->bytes / secs / 1e6, (double)p50 / 1e3, (double)p99 / 1e3,
		       (double)p999 / 1e3, fl, sy);
		return;
	}
	printf("%-10s %8" PRIu64 " B  %7" PRIu64 " ops  qd %-3u %10.1f ops/s %9.2f MB/s  "
	       "p50 %8.1f us  p99 %8.1f us  p999 %8.1f us", r->name, r->size, r->ops, c->qd,
	       (double)r->ops / secs, (double)r->bytes / secs / 1e6, (double)p50 / 1e3,
	       (double)p99 / 1e3, (double)p999 / 1e3);
	if (txns)
		printf("  flushes/txn %.2f  syncs/txn %.2f", fl, sy);
	putchar('\n');
}

/* ---- async submission with a bounded number in flight ---- */

struct inflight {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int n;
	int err;
	uint64_t *lat;
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
	in->lat[s->idx] = now_ns() - s->start;
	if (result && !in->err)
		in->err = result;
	in->n--;
	s->busy = false;
	pthread_cond_broadcast(&in->cond);
	pthread_mutex_unlock(&in->lock);
}

typedef int (*fill_fn)(struct rawstore_txn *t, uint64_t i, void *arg);

/* Run @count transactions built by @fill with c->qd in flight. */
static int run_txns(struct rawstore *st, const struct cfg *c, uint64_t count, fill_fn fill,
		    void *arg, struct result *r)
{
	struct inflight in = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, r->lat };
	struct slot *slots = calloc(c->qd, sizeof(*slots));
	uint64_t i, t0;
	unsigned int k;
	int ret = 0;

	if (!slots)
		return -ENOMEM;
	for (k = 0; k < c->qd; k++) {
		slots[k].in = &in;
		if (rawstore_txn_new(&slots[k].t))
			return -ENOMEM;
	}
	r->p0.struct_size = r->p1.struct_size = sizeof(r->p0);
	rawstore_perf_get(st, &r->p0);
	t0 = now_ns();
	for (i = 0; i < count && !ret; i++) {
		struct slot *s = &slots[i % c->qd];

		pthread_mutex_lock(&in.lock);
		/* completions come in order: wait for this slot's previous one */
		while (s->busy)
			pthread_cond_wait(&in.cond, &in.lock);
		ret = in.err;
		pthread_mutex_unlock(&in.lock);
		if (ret)
			break;
		rawstore_txn_reset(s->t);
		ret = fill(s->t, i, arg);
		if (ret)
			break;
		s->idx = i;
		s->start = now_ns();
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
	r->ns = now_ns() - t0;
	rawstore_perf_get(st, &r->p1);
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
};

static void obj_name(char *buf, size_t len, const char *prefix, uint64_t i)
{
	snprintf(buf, len, "%s%08" PRIu64, prefix, i);
}

static int fill_create(struct rawstore_txn *t, uint64_t i, void *arg)
{
	struct wl *w = arg;
	char name[64];

	obj_name(name, sizeof(name), w->prefix, i);
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

static int bench_create(struct rawstore *st, const struct cfg *c, uint64_t size, uint64_t count)
{
	struct result r = { "create", size, count, size * count, 0, NULL, { 0 }, { 0 } };
	char prefix[32];
	struct wl w = { "bench", size, 0, 0, 1, NULL, prefix };
	int ret;

	snprintf(prefix, sizeof(prefix), "c%" PRIu64 "-", size);
	w.data = malloc(size);
	r.lat = calloc(count, sizeof(uint64_t));
	if (!w.data || !r.lat)
		return -ENOMEM;
	memset(w.data, 0x5a, size);
	ret = setup_coll(st, "bench");
	if (!ret)
		ret = run_txns(st, c, count, fill_create, &w, &r);
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
	struct result r = { "overwrite", size, count, size * count, 0, NULL, { 0 }, { 0 } };
	struct result setup = { "setup", 0, 0, 0, 0, NULL, { 0 }, { 0 } };
	struct wl w = { "bench", 4 << 20, 16, 4 << 20, 7, NULL, "ow-" };
	int ret;

	w.data = malloc(w.obj_size);
	r.lat = calloc(count, sizeof(uint64_t));
	setup.lat = calloc(w.objects, sizeof(uint64_t));
	if (!w.data || !r.lat || !setup.lat)
		return -ENOMEM;
	memset(w.data, 0x33, w.obj_size);
	ret = setup_coll(st, "bench");
	if (!ret)
		ret = run_txns(st, c, w.objects, fill_create, &w, &setup);
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

static int bench_read(struct rawstore *st, const struct cfg *c, uint64_t size, uint64_t count)
{
	struct result r = { "read", size, count, size * count, 0, NULL, { 0 }, { 0 } };
	uint64_t objects = 64, obj_size = 4 << 20, seed = 3, i, t0;
	struct result setup = { "setup", 0, 0, 0, 0, NULL, { 0 }, { 0 } };
	struct wl w = { "bench", obj_size, objects, obj_size, 9, NULL, "rd-" };
	char *buf;
	int ret;

	w.data = malloc(obj_size);
	buf = malloc(size);
	r.lat = calloc(count, sizeof(uint64_t));
	setup.lat = calloc(objects, sizeof(uint64_t));
	if (!w.data || !buf || !r.lat || !setup.lat)
		return -ENOMEM;
	memset(w.data, 0x44, obj_size);
	ret = setup_coll(st, "bench");
	if (!ret)
		ret = run_txns(st, c, objects, fill_create, &w, &setup);
	r.p0.struct_size = r.p1.struct_size = sizeof(r.p0);
	t0 = now_ns();
	for (i = 0; i < count && !ret; i++) {
		char name[64];
		uint64_t o = rnd(&seed) % objects, off = (rnd(&seed) % (obj_size / size)) * size;
		uint64_t s = now_ns();
		ssize_t n;

		obj_name(name, sizeof(name), "rd-", o);
		n = rawstore_read(st, "bench", name, strlen(name), off, buf, size);
		r.lat[i] = now_ns() - s;
		if (n != (ssize_t)size)
			ret = n < 0 ? (int)n : -EIO;
	}
	r.ns = now_ns() - t0;
	if (!ret) {
		struct cfg c1 = *c;

		c1.qd = 1;
		report(&c1, &r);
		ret = remove_objects(st, "rd-", objects);
	}
	free(w.data);
	free(buf);
	free(r.lat);
	free(setup.lat);
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
	t0 = now_ns();
	for (i = 0; i < ops; i++) {
		uint64_t k = rnd(&seed) % n_held, s0 = now_ns();
		struct pext *p;
		int n, j;

		extset_insert(&s, held[k].off, held[k].len);
		held[k] = held[--n_held];
		n = extset_alloc(&s, (rnd(&seed) % 16 + 1) * U, 0, 0, &p);
		lat[i] = now_ns() - s0;
		if (n < 0)
			continue;
		for (j = 0; j < n && n_held < held_cap; j++)
			held[n_held++] = p[j];
		free(p);
	}
	ns = now_ns() - t0;
	qsort(lat, ops, sizeof(uint64_t), cmp_u64);
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

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rawstore-bench [options] <workload>...\n"
		"workloads:\n"
		"  create:SIZE     new objects of SIZE bytes (4k, 64k, 1m, 4m)\n"
		"  overwrite:SIZE  random SIZE overwrites in 4 MiB objects\n"
		"  read:SIZE       random SIZE reads from 4 MiB objects\n"
		"  alloc:PCT       allocator free+alloc at PCT%% fullness, fragmented\n"
		"  core            create:4k create:64k create:1m create:4m overwrite:4k\n"
		"                  read:4k read:64k alloc:50 alloc:90\n"
		"options:\n"
		"  --dev PATH --meta DIR  use this store (mkfs'd with --mkfs), else a temporary\n"
		"                         file-backed store in $TMPDIR\n"
		"  --mkfs                 mkfs --dev/--meta first (destroys data)\n"
		"  --dev-size SIZE        size of the temporary device (default 4g)\n"
		"  --count N              operations per workload (default 1000)\n"
		"  --qd N                 transactions in flight (default 1)\n"
		"  --min-alloc N --inline-max N  mkfs options (default 4096 / 4096)\n"
		"  --json                 one JSON object per result line\n");
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (*end == 'k' || *end == 'K')
		v <<= 10;
	else if (*end == 'm' || *end == 'M')
		v <<= 20;
	else if (*end == 'g' || *end == 'G')
		v <<= 30;
	return v;
}

static int run_one(struct rawstore *st, const struct cfg *c, const char *w)
{
	const char *colon = strchr(w, ':');
	uint64_t arg = colon ? parse_size(colon + 1) : 0;
	size_t len = colon ? (size_t)(colon - w) : strlen(w);

	if (!strncmp(w, "create", len) && arg)
		return bench_create(st, c, arg, c->count);
	if (!strncmp(w, "overwrite", len) && arg)
		return bench_overwrite(st, c, arg, c->count);
	if (!strncmp(w, "read", len) && arg)
		return bench_read(st, c, arg, c->count);
	if (!strncmp(w, "alloc", len) && arg)
		return bench_alloc(c, (double)arg / 100.0);
	fprintf(stderr, "rawstore-bench: unknown workload '%s'\n", w);
	return -EINVAL;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dev", required_argument, 0, 'd' }, { "meta", required_argument, 0, 'm' },
		{ "mkfs", no_argument, 0, 'M' }, { "dev-size", required_argument, 0, 's' },
		{ "count", required_argument, 0, 'n' }, { "qd", required_argument, 0, 'q' },
		{ "min-alloc", required_argument, 0, 'a' },
		{ "inline-max", required_argument, 0, 'i' }, { "json", no_argument, 0, 'j' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	static const char *const core[] = { "create:4k", "create:64k", "create:1m", "create:4m",
					    "overwrite:4k", "read:4k", "read:64k", "alloc:50",
					    "alloc:90" };
	struct cfg c = { NULL, NULL, 4ULL << 30, 1000, 1, 4096, 4096, false, false };
	char tmpdir[256] = "", devp[300], metap[300];
	struct rawstore_mkfs_opts mo;
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
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc || !c.count || !c.qd || (!c.dev != !c.meta)) {
		usage(stderr);
		return 2;
	}
	rawstore_mkfs_opts_init(&mo);
	mo.min_alloc_size = c.min_alloc;
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
	ret = rawstore_open(c.dev, c.meta, NULL, &st);
	if (ret) {
		fprintf(stderr, "open: %s: %s\n", rawstore_strerror(ret), rawstore_errmsg());
		goto out_rm;
	}
	info.struct_size = sizeof(info);
	rawstore_get_info(st, &info);
	if (!c.json)
		printf("# rawstore-bench %s on %s (%s, %s I/O, %s), min_alloc %u, inline_max %u\n",
		       rawstore_version(), c.dev, info.is_block_device ? "block device" : "file",
		       info.direct_io ? "direct" : "buffered", info.io_engine, info.min_alloc_size,
		       info.inline_max);
	if (!c.json)
		printf("# space: zero %s (offload %d), punch %s, prealloc %s, provisioning %d\n",
		       info.zero_policy, info.zero_offload, info.punch_policy, info.prealloc_policy,
		       info.provisioning);
	for (i = optind; i < argc && !ret; i++) {
		if (!strcmp(argv[i], "core")) {
			size_t k;

			for (k = 0; k < sizeof(core) / sizeof(core[0]) && !ret; k++)
				ret = run_one(st, &c, core[k]);
		} else {
			ret = run_one(st, &c, argv[i]);
		}
	}
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
