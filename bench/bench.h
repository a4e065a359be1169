/* SPDX-License-Identifier: MIT */
/*
 * rawstore-bench's backends and workloads outside rawstore-bench.c: the
 * files backend (files.c), aging (age.c) and sustained load (load.c).
 * The program calls them; they call only common.h.
 */
#ifndef RAWSTORE_BENCH_H
#define RAWSTORE_BENCH_H

#include "common.h"

/* The `files` backend: one file per object under c->dev (a directory),
 * object records in RocksDB under c->meta. */
int files_run(const struct cfg *c, char **workloads, int n);

struct rawstore;
/* Aging (age.c): fill the store to @pct % of its data space with mixed
 * sizes and interleaved removes; print its "aging" and "space" lines. */
int bench_age(struct rawstore *st, const struct cfg *c, unsigned int pct);
/* The store's free-space figures and fragmentation score, kind "space". */
int space_report(struct rawstore *st, const struct cfg *c, const char *when);
/* Sustained load (load.c): c->threads clients for @seconds, kind "load". */
int bench_load(struct rawstore *st, const struct cfg *c, uint64_t seconds);

#endif
