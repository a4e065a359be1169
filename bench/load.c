// SPDX-License-Identifier: MIT
/*
 * Sustained load: c->threads clients, each owning its own collection,
 * submit independent durable transactions (whole-object writes of 4 KiB
 * and 64 KiB objects, 4 KiB overwrites inside them, removes) mixed with
 * reads of their own objects, while one more thread reclaims freed space
 * every half second, for a bounded time.  The figure is the sustained
 * rate (ops/s over the run and per second), latency percentiles of the
 * transactions and of the reads, and the process's resident memory.
 *
 * Reads are checked against each client's model (every 4 KiB block of an
 * object holds one generation byte): a mismatch fails the cell.  The
 * correctness test with the full operation mix is tests/unit/test_load.cc;
 * this one is shaped for a rate figure.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rawstore/rawstore.h"
#include "bench.h"

#define LOAD_NAMES 24		/* objects per client */
#define LOAD_BLK 4096ULL
#define LOAD_MAX_BLKS 16	/* 64 KiB */
#define LOAD_TIMELINE 3600

struct lobj {
	uint8_t gen[LOAD_MAX_BLKS];	/* 0: the object does not exist */
};

struct lat {
	uint64_t *v, n, cap;
};

struct client {
	struct rawstore *st;
	int id;
	uint64_t seed;
	struct lobj obj[LOAD_NAMES];
	struct lat txn, rd;
	uint64_t removes, mismatches, verified;
	int err;
	pthread_t tid;
};

static atomic_bool load_stop;
static atomic_uint_fast64_t load_ops;

static void lat_add(struct lat *l, uint64_t ns)
{
	if (l->n == l->cap) {
		uint64_t nc = l->cap ? l->cap * 2 : 4096;
		uint64_t *v = realloc(l->v, nc * sizeof(*v));

		if (!v)
			return;	/* keep running; this sample is lost */
		l->v = v;
		l->cap = nc;
	}
	l->v[l->n++] = ns;
}

/* Object i has 16 blocks (64 KiB) when i % 3 == 0, else one (4 KiB). */
static unsigned int blocks_of(unsigned int i)
{
	return i % 3 ? 1 : LOAD_MAX_BLKS;
}

static uint8_t next_gen(struct client *c)
{
	return (uint8_t)(1 + rnd(&c->seed) % 255);
}

static int load_submit(struct client *c, struct rawstore_txn *t)
{
	uint64_t s = rs_now_ns();
	int ret = rawstore_submit(c->st, t);

	lat_add(&c->txn, rs_now_ns() - s);
	return ret;
}

static int load_read(struct client *c, const char *coll, const char *name, unsigned int i,
		     unsigned int blk, unsigned int nblk, uint8_t *buf)
{
	const struct lobj *o = &c->obj[i];
	uint64_t s = rs_now_ns();
	ssize_t n = rawstore_read(c->st, coll, name, strlen(name), blk * LOAD_BLK, buf,
				  nblk * LOAD_BLK);
	unsigned int b;
	uint64_t k;

	lat_add(&c->rd, rs_now_ns() - s);
	if (!o->gen[0]) {
		if (n != -ENOENT)
			c->mismatches++;
		return 0;
	}
	if (n != (ssize_t)(nblk * LOAD_BLK)) {
		c->mismatches++;
		return n < 0 ? (int)n : 0;
	}
	for (b = 0; b < nblk; b++)
		for (k = 0; k < LOAD_BLK; k++)
			if (buf[b * LOAD_BLK + k] != o->gen[blk + b]) {
				c->mismatches++;
				return 0;
			}
	c->verified += (uint64_t)n;
	return 0;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	uint8_t *buf = malloc(LOAD_MAX_BLKS * LOAD_BLK);
	struct rawstore_txn *t = NULL;
	char coll[32], name[32];

	snprintf(coll, sizeof(coll), "ld%d", c->id);
	if (!buf || rawstore_txn_new(&t)) {
		c->err = -ENOMEM;
		goto out;
	}
	while (!atomic_load(&load_stop) && !c->err) {
		unsigned int i = (unsigned int)(rnd(&c->seed) % LOAD_NAMES), nb = blocks_of(i);
		struct lobj *o = &c->obj[i];
		unsigned int op = (unsigned int)(rnd(&c->seed) % 100), b;

		snprintf(name, sizeof(name), "o%u", i);
		rawstore_txn_reset(t);
		if (op < 30 || (op < 45 && !o->gen[0])) {
			/* write the whole object (create or rewrite) */
			uint8_t g = next_gen(c);

			for (b = 0; b < nb; b++)
				memset(buf + b * LOAD_BLK, g, LOAD_BLK);
			rawstore_txn_write(t, coll, name, strlen(name), 0, buf, nb * LOAD_BLK);
			c->err = load_submit(c, t);
			if (!c->err)
				memset(o->gen, g, nb);
		} else if (op < 45) {
			/* overwrite one 4 KiB block in place */
			uint8_t g = next_gen(c);

			b = (unsigned int)(rnd(&c->seed) % nb);
			memset(buf, g, LOAD_BLK);
			rawstore_txn_write(t, coll, name, strlen(name), b * LOAD_BLK, buf, LOAD_BLK);
			c->err = load_submit(c, t);
			if (!c->err)
				o->gen[b] = g;
		} else if (op < 55) {
			if (!o->gen[0])
				continue;
			rawstore_txn_remove(t, coll, name, strlen(name));
			c->err = load_submit(c, t);
			if (!c->err) {
				memset(o->gen, 0, sizeof(o->gen));
				c->removes++;
			}
		} else if (op < 90) {
			/* 4 KiB random read */
			b = (unsigned int)(rnd(&c->seed) % nb);
			c->err = load_read(c, coll, name, i, b, 1, buf);
		} else {
			/* whole-object read */
			c->err = load_read(c, coll, name, i, 0, nb, buf);
		}
		atomic_fetch_add(&load_ops, 1);
	}
out:
	if (t)
		rawstore_txn_free(t);
	free(buf);
	return NULL;
}

struct reclaimer {
	struct rawstore *st;
	uint64_t calls;
	int err, unsupported;
	pthread_t tid;
};

static void *reclaim_main(void *arg)
{
	struct reclaimer *r = arg;

	while (!atomic_load(&load_stop) && !r->err) {
		int ret;

		usleep(500000);
		ret = rawstore_reclaim(r->st);
		if (ret == -EOPNOTSUPP) {
			r->unsupported = 1;
			break;
		}
		r->err = ret;
		r->calls++;
	}
	return NULL;
}

static uint64_t rss_kb(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
}

static int load_setup(struct rawstore *st, unsigned int n)
{
	struct rawstore_txn *t;
	unsigned int k;
	int ret;

	ret = rawstore_txn_new(&t);
	if (ret)
		return ret;
	for (k = 0; k < n; k++) {
		char coll[32];

		snprintf(coll, sizeof(coll), "ld%u", k);
		if (rawstore_coll_exists(st, coll) != 1)
			rawstore_txn_coll_create(t, coll);
	}
	ret = rawstore_txn_count(t) ? rawstore_submit(st, t) : 0;
	rawstore_txn_free(t);
	return ret;
}

int bench_load(struct rawstore *st, const struct cfg *c, uint64_t seconds)
{
	unsigned int nt = c->threads > 1 ? c->threads : 8, k;
	struct rawstore_perf p0 = { .struct_size = sizeof(p0) }, p1 = { .struct_size = sizeof(p1) };
	uint64_t timeline[LOAD_TIMELINE], sorted[LOAD_TIMELINE], nsec = 0, last = 0;
	uint64_t t0, c0, ns, rss0, rss_max, ops, txns = 0, reads = 0, removes = 0, bad = 0;
	uint64_t verified = 0;
	struct reclaimer rc = { .st = st };
	struct client *cl;
	struct lat all_txn = { 0 }, all_rd = { 0 };
	int ret;

	if (seconds > LOAD_TIMELINE)
		seconds = LOAD_TIMELINE;
	cl = calloc(nt, sizeof(*cl));
	if (!cl)
		return -ENOMEM;
	ret = load_setup(st, nt);
	if (ret)
		goto out;
	atomic_store(&load_stop, false);
	atomic_store(&load_ops, 0);
	rss0 = rss_max = rss_kb();
	rawstore_perf_get(st, &p0);
	c0 = cpu_ns();
	t0 = rs_now_ns();
	for (k = 0; k < nt; k++) {
		cl[k].st = st;
		cl[k].id = (int)k;
		cl[k].seed = 0x10adULL + k * 7919;
		pthread_create(&cl[k].tid, NULL, client_main, &cl[k]);
	}
	pthread_create(&rc.tid, NULL, reclaim_main, &rc);
	/* one sample of the completed operations per second */
	while (nsec < seconds) {
		uint64_t now, r;

		usleep(1000000);
		now = atomic_load(&load_ops);
		timeline[nsec++] = now - last;
		last = now;
		r = rss_kb();
		if (r > rss_max)
			rss_max = r;
	}
	atomic_store(&load_stop, true);
	for (k = 0; k < nt; k++)
		pthread_join(cl[k].tid, NULL);
	ns = rs_now_ns() - t0;
	pthread_join(rc.tid, NULL);
	rawstore_perf_get(st, &p1);
	ops = atomic_load(&load_ops);
	for (k = 0; k < nt; k++) {
		struct lat *src[2] = { &cl[k].txn, &cl[k].rd }, *dst[2] = { &all_txn, &all_rd };
		int j;

		for (j = 0; j < 2; j++) {
			uint64_t i;

			for (i = 0; i < src[j]->n; i++)
				lat_add(dst[j], src[j]->v[i]);
		}
		txns += cl[k].txn.n;
		reads += cl[k].rd.n;
		removes += cl[k].removes;
		bad += cl[k].mismatches;
		verified += cl[k].verified;
		if (cl[k].err && !ret)
			ret = cl[k].err;
	}
	if (!ret && rc.err)
		ret = rc.err;
	if (!ret && bad) {
		fprintf(stderr, "rawstore-bench: load: %" PRIu64 " reads differ from what the "
			"clients wrote\n", bad);
		ret = -EIO;
	}
	if (ret)
		goto out;
	sort_u64(all_txn.v, all_txn.n);
	sort_u64(all_rd.v, all_rd.n);
	memcpy(sorted, timeline, nsec * sizeof(*sorted));
	sort_u64(sorted, nsec);
	if (c->json) {
		double secs = (double)ns / 1e9;
		uint64_t i;

		json_head(c);
		printf("\"kind\": \"load\", \"threads\": %u, \"seconds\": %.3f, \"ops\": %" PRIu64
		       ", \"ops_per_sec\": %.1f, \"txns\": %" PRIu64 ", \"txns_per_sec\": %.1f"
		       ", \"reads\": %" PRIu64 ", \"reads_per_sec\": %.1f, \"removes\": %" PRIu64
		       ", \"p50_us\": %.1f, \"p99_us\": %.1f, \"p999_us\": %.1f"
		       ", \"read_p50_us\": %.1f, \"read_p99_us\": %.1f, \"read_p999_us\": %.1f"
		       ", \"per_sec_min\": %" PRIu64 ", \"per_sec_median\": %" PRIu64
		       ", \"per_sec_max\": %" PRIu64 ", \"reclaims\": %" PRIu64
		       ", \"reclaim\": \"%s\", \"bytes_punched\": %" PRIu64
		       ", \"flushes_per_txn\": %.3f, \"db_syncs_per_txn\": %.3f"
		       ", \"cpu_us_per_op\": %.1f, \"rss_start_kb\": %" PRIu64
		       ", \"rss_max_kb\": %" PRIu64 ", \"bytes_verified\": %" PRIu64
		       ", \"mismatches\": 0",
		       nt, secs, ops, (double)ops / secs, txns, (double)txns / secs, reads,
		       (double)reads / secs, removes, (double)pct(all_txn.v, all_txn.n, 0.5) / 1e3,
		       (double)pct(all_txn.v, all_txn.n, 0.99) / 1e3,
		       (double)pct(all_txn.v, all_txn.n, 0.999) / 1e3,
		       (double)pct(all_rd.v, all_rd.n, 0.5) / 1e3,
		       (double)pct(all_rd.v, all_rd.n, 0.99) / 1e3,
		       (double)pct(all_rd.v, all_rd.n, 0.999) / 1e3, pct(sorted, nsec, 0),
		       pct(sorted, nsec, 0.5), pct(sorted, nsec, 1), rc.calls,
		       rc.unsupported ? "unsupported" : "ok",
		       p1.bytes_punched - p0.bytes_punched,
		       txns ? (double)(p1.dev_flushes - p0.dev_flushes) / (double)txns : 0,
		       txns ? (double)(p1.db_syncs - p0.db_syncs) / (double)txns : 0,
		       ops ? (double)(cpu_ns() - c0) / (double)ops / 1e3 : 0, rss0, rss_max,
		       verified);
		print_cdf("cdf_us", all_txn.v, all_txn.n);
		print_cdf("read_cdf_us", all_rd.v, all_rd.n);
		printf(", \"timeline\": [");
		for (i = 0; i < nsec; i++)
			printf("%s%" PRIu64, i ? ", " : "", timeline[i]);
		printf("]}\n");
	} else {
		printf("load       %u threads %.1f s: %.1f ops/s (%" PRIu64 " txns, %" PRIu64
		       " reads, %" PRIu64 " removes), per second min %" PRIu64 " median %" PRIu64
		       " max %" PRIu64 "; txn p50 %.1f us p99 %.1f us; read p50 %.1f us p99 %.1f us;"
		       " %" PRIu64 " reclaims; RSS %" PRIu64 " -> max %" PRIu64 " KiB\n", nt,
		       (double)ns / 1e9, (double)ops / ((double)ns / 1e9), txns, reads, removes,
		       pct(sorted, nsec, 0), pct(sorted, nsec, 0.5), pct(sorted, nsec, 1),
		       (double)pct(all_txn.v, all_txn.n, 0.5) / 1e3,
		       (double)pct(all_txn.v, all_txn.n, 0.99) / 1e3,
		       (double)pct(all_rd.v, all_rd.n, 0.5) / 1e3,
		       (double)pct(all_rd.v, all_rd.n, 0.99) / 1e3, rc.calls, rss0, rss_max);
	}
	fflush(stdout);
out:
	for (k = 0; k < nt; k++) {
		free(cl[k].txn.v);
		free(cl[k].rd.v);
	}
	free(all_txn.v);
	free(all_rd.v);
	free(cl);
	return ret;
}
