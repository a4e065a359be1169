// SPDX-License-Identifier: MIT
/*
 * rawstore-bench's shared helpers: the result line (text or JSON), the
 * latency percentiles and CDF, the workload parser, the PRNG and the
 * object names.  The backends (files.c, age.c, load.c) and the program
 * (rawstore-bench.c) sit on top of these; this file imports none of them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "common.h"

uint64_t rnd(uint64_t *s)
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

uint64_t pct(const uint64_t *v, uint64_t n, double p)
{
	uint64_t i = (uint64_t)(p * (double)(n - 1) + 0.5);

	return n ? v[i] : 0;
}

void sort_u64(uint64_t *v, uint64_t n)
{
	qsort(v, n, sizeof(uint64_t), cmp_u64);
}

uint64_t cpu_ns(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return ((uint64_t)u.ru_utime.tv_sec + (uint64_t)u.ru_stime.tv_sec) * 1000000000ULL +
	       ((uint64_t)u.ru_utime.tv_usec + (uint64_t)u.ru_stime.tv_usec) * 1000ULL;
}

uint64_t page_faults(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (uint64_t)u.ru_minflt + (uint64_t)u.ru_majflt;
}

/* The latency CDF is reported at these percentiles (bench/report.py knows them). */
static const double cdf_pct[] = { 0, 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99, 99.9, 100 };
#define CDF_POINTS (sizeof(cdf_pct) / sizeof(cdf_pct[0]))

void print_cdf(const char *name, const uint64_t *v, uint64_t n)
{
	int k;

	printf(", \"%s\": [", name);
	for (k = 0; k < (int)CDF_POINTS; k++)
		printf("%s%.1f", k ? ", " : "", (double)pct(v, n, cdf_pct[k] / 100) / 1e3);
	printf("]");
}

void json_head(const struct cfg *c)
{
	printf("{%s%s", c->tag ? c->tag : "", c->tag && *c->tag ? ", " : "");
	if (c->phase)
		printf("\"phase\": \"%s\", ", c->phase);
}

void report(const struct cfg *c, struct result *r)
{
	double secs = (double)r->ns / 1e9, mbs = (double)r->bytes / secs / 1e6;
	double fl = r->txns ? (double)r->flushes / (double)r->txns : 0;
	double sy = r->txns ? (double)r->syncs / (double)r->txns : 0;
	/* Device round trips: flushes (the device journal's too); with
	 * RocksDB's WAL each sync flushes the metadata's device as well. */
	double rt = fl + (c->journal && !strncmp(c->journal, "rocksdb", 7) ? sy : 0);
	double cpu = r->ops ? (double)r->cpu_ns / (double)r->ops / 1e3 : 0;
	uint64_t p50, p99, p999;
	int k;

	qsort(r->lat, r->ops, sizeof(uint64_t), cmp_u64);
	p50 = pct(r->lat, r->ops, 0.50);
	p99 = pct(r->lat, r->ops, 0.99);
	p999 = pct(r->lat, r->ops, 0.999);
	if (c->json) {
		json_head(c);
		if (r->extents_per_obj > 0)
			printf("\"extents_per_obj\": %.2f, ", r->extents_per_obj);
		if (c->fio_mbs > 0)
			printf("\"fio_mb_per_sec\": %.2f, \"ratio_to_fio\": %.6f, ", c->fio_mbs,
			       mbs / c->fio_mbs);
		if (c->journal)
			printf("\"journal\": \"%s\", \"round_trips_per_txn\": %.3f, ", c->journal,
			       rt);
		if (r->have_copies && r->ops)
			printf("\"page_faults_per_op\": %.2f, \"copies_per_op\": %.3f, "
			       "\"copy_bytes_per_op\": %.0f, \"fresh_bufs_per_op\": %.3f, ",
			       (double)r->faults / (double)r->ops,
			       (double)r->copies / (double)r->ops,
			       (double)r->copy_bytes / (double)r->ops,
			       (double)r->fresh / (double)r->ops);
		printf("\"kind\": \"object\", \"backend_impl\": \"%s\", \"workload\": \"%s\""
		       ", \"size\": %" PRIu64 ", \"ops\": %" PRIu64
		       ", \"qd\": %u, \"seconds\": %.6f, \"ops_per_sec\": %.1f"
		       ", \"mb_per_sec\": %.2f"
		       ", \"p50_us\": %.1f, \"p99_us\": %.1f, \"p999_us\": %.1f"
		       ", \"txns\": %" PRIu64 ", \"flushes_per_txn\": %.3f"
		       ", \"db_syncs_per_txn\": %.3f, \"cpu_us_per_op\": %.1f, \"nocopy\": %s"
		       ", \"cdf_us\": [",
		       c->backend, r->name,
		       r->size, r->ops, r->qd, secs, (double)r->ops / secs,
		       mbs, (double)p50 / 1e3, (double)p99 / 1e3,
		       (double)p999 / 1e3, r->txns, fl, sy, cpu,
		       r->nocopy ? "true" : "false");
		for (k = 0; k < (int)CDF_POINTS; k++)
			printf("%s%.1f", k ? ", " : "",
			       (double)pct(r->lat, r->ops, cdf_pct[k] / 100) / 1e3);
		printf("]}\n");
		fflush(stdout);
		return;
	}
	printf("%-10s %8" PRIu64 " B  %7" PRIu64 " ops  qd %-3u %10.1f ops/s %9.2f MB/s  "
	       "p50 %8.1f us  p99 %8.1f us  p999 %8.1f us  cpu %6.1f us/op", r->name, r->size,
	       r->ops, r->qd, (double)r->ops / secs, mbs,
	       (double)p50 / 1e3, (double)p99 / 1e3, (double)p999 / 1e3, cpu);
	if (r->txns)
		printf("  flushes/txn %.2f  syncs/txn %.2f", fl, sy);
	if (r->txns && c->journal)
		printf("  round trips/txn %.2f (journal %s)", rt, c->journal);
	if (r->have_copies && r->ops)
		printf("  faults/op %.1f  copies/op %.2f  fresh bufs/op %.2f",
		       (double)r->faults / (double)r->ops,
		       (double)r->copies / (double)r->ops,
		       (double)r->fresh / (double)r->ops);
	if (r->extents_per_obj > 0)
		printf("  extents/obj %.2f", r->extents_per_obj);
	if (c->fio_mbs > 0)
		printf("  %.2fx fio", mbs / c->fio_mbs);
	if (c->phase)
		printf("  [%s]", c->phase);
	putchar('\n');
	fflush(stdout);
}

void report_missing(const struct cfg *c, const char *workload, uint64_t size, const char *why)
{
	if (c->json) {
		json_head(c);
		printf("\"kind\": \"object\", \"backend_impl\": \"%s\", \"workload\": \"%s\""
		       ", \"size\": %" PRIu64 ", \"qd\": %u, \"status\": \"missing\""
		       ", \"why\": \"%s\"}\n", c->backend, workload, size, c->qd, why);
	}
	else
		printf("%-10s %8" PRIu64 " B  not measured: %s\n", workload, size, why);
	fflush(stdout);
}

void obj_name(char *buf, size_t len, const char *prefix, uint64_t i)
{
	snprintf(buf, len, "%s%08" PRIu64, prefix, i);
}

uint64_t parse_size(const char *s)
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

int parse_workload(const char *w, char *name, size_t nlen, uint64_t *size, unsigned int *qd,
		   uint64_t *count)
{
	const char *colon = strchr(w, ':'), *p;
	char buf[64];
	size_t len;

	len = colon ? (size_t)(colon - w) : strlen(w);
	if (!len || len >= nlen)
		return -EINVAL;
	memcpy(name, w, len);
	name[len] = 0;
	*size = 0;
	if (!colon)
		return 0;
	p = strchr(colon + 1, ',');
	len = p ? (size_t)(p - colon - 1) : strlen(colon + 1);
	if (!len || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, colon + 1, len);
	buf[len] = 0;
	*size = parse_size(buf);
	while (p && *p == ',') {
		char *end;

		if (!strncmp(p, ",qd=", 4)) {
			*qd = (unsigned int)strtoul(p + 4, &end, 0);
			if (end == p + 4)
				return -EINVAL;
		} else if (!strncmp(p, ",n=", 3)) {
			*count = strtoull(p + 3, &end, 0);
			if (end == p + 3)
				return -EINVAL;
			if (*end == 'k' || *end == 'K')
				*count *= 1000;
			if (*end == 'k' || *end == 'K')
				end++;
		} else {
			return -EINVAL;
		}
		p = end;
	}
	if (p && *p)
		return -EINVAL;
	return *qd && *count ? 0 : -EINVAL;
}
