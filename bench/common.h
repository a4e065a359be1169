/* SPDX-License-Identifier: MIT */
/*
 * rawstore-bench's shared helpers (common.c): the configuration, one
 * result per workload cell reported as a text line or one JSON object, and
 * what every backend needs to produce it.  Includes nothing of bench/.
 */
#ifndef RAWSTORE_BENCH_COMMON_H
#define RAWSTORE_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util.h"	/* rs_now_ns */

struct cfg {
	const char *dev, *meta;
	const char *backend;		/* "rawstore" or "files" */
	const char *space_policy;	/* "ZERO[,PUNCH]"; NULL: the library's default */
	const char *prealloc_policy;	/* mkfs of a store in a file; NULL: default */
	const char *tag;		/* JSON members copied into every result line */
	const char *thin_pool;		/* dm-thin pool whose usage remove: reports */
	const char *phase;		/* "fresh"/"aged" around an age: workload, else NULL */
	const char *journal;		/* mkfs --journal (NULL: default); after open, the
					 * store's ("device", "rocksdb") */
	uint64_t journal_size;		/* mkfs --journal-size (0: default) */
	int wal_recycle;		/* open rocksdb_wal_recycle */
	uint64_t dev_size;		/* bytes, for a temporary file device */
	uint64_t store_size;		/* mkfs: bytes of the device to use (0: all) */
	uint64_t count;
	uint64_t seconds;		/* create: go on past count until this long */
	uint64_t objects;		/* 4 MiB objects for overwrite/read */
	unsigned int qd;		/* transactions in flight */
	unsigned int threads;		/* read: threads reading at once; load: clients */
	int deferred_new_max;		/* open option; -1: the library's default */
	int64_t deferred_max;		/* open option; -1: the library's default */
	uint32_t min_alloc, inline_max;
	bool json;
	bool files_hint;		/* files: fallocate the object size first */
	bool nocopy;			/* creates: rawstore_txn_write_nocopy */
	bool sync_submit;		/* --submit sync: qd threads, rawstore_submit */
	double fio_mbs;			/* --fio-mbs: fio's figure, 0 if none */
	const struct rawstore_open_opts *oo;	/* how the store was opened */
};

/* One measured cell. */
struct result {
	const char *name;
	uint64_t size, ops, bytes, ns;
	uint64_t *lat;			/* ops latencies, ns; sorted by report() */
	uint64_t min_ns;		/* run_txns: submit until this long, at least */
	uint64_t txns, flushes, syncs;	/* durable transactions and what they cost */
	uint64_t cpu_ns;		/* user + system time of the process */
	uint64_t faults;		/* page faults of the process (minor + major) */
	uint64_t copies, copy_bytes;	/* rawstore_perf data_copies, data_copy_bytes */
	uint64_t fresh;			/* rawstore_perf iobuf_fresh */
	bool have_copies;		/* the four above were measured */
	double extents_per_obj;		/* aging: mean extent map entries of the
					 * objects created (0: not measured) */
	unsigned int qd;
	bool nocopy;			/* creates by rawstore_txn_write_nocopy */
};

uint64_t cpu_ns(void);
/* Page faults (minor + major) of the process so far. */
uint64_t page_faults(void);
uint64_t rnd(uint64_t *s);
void obj_name(char *buf, size_t len, const char *prefix, uint64_t i);
/*
 * Parse a workload "NAME[:SIZE][,qd=N][,n=N]" into its parts; *qd and
 * *count keep their values unless given.  0 or -EINVAL.
 */
int parse_workload(const char *w, char *name, size_t nlen, uint64_t *size, unsigned int *qd,
		   uint64_t *count);
uint64_t parse_size(const char *s);
void report(const struct cfg *c, struct result *r);
/* Sort @n latencies and read percentile @p (0..1) of the sorted array. */
void sort_u64(uint64_t *v, uint64_t n);
uint64_t pct(const uint64_t *v, uint64_t n, double p);
/* Print ", \"NAME\": [...]" with the latency CDF of sorted @v, in µs. */
void print_cdf(const char *name, const uint64_t *v, uint64_t n);
/* The "{TAG, " that starts every JSON line. */
void json_head(const struct cfg *c);
/* Text or JSON line for a cell that could not run, with the reason. */
void report_missing(const struct cfg *c, const char *workload, uint64_t size,
		    const char *why);

#endif
