/* SPDX-License-Identifier: MIT */
/*
 * commit.h: the commit thread.  Transactions queue up, are applied into
 * the store's indexed write batch in groups, the device is flushed once
 * per group, the batch is written, a sync thread makes it durable while
 * the next group is applied, and then callbacks run.  Other work
 * that must not race a commit (reclaim, fsck) runs on the same thread as a
 * job.
 */
#ifndef RAWSTORE_COMMIT_H
#define RAWSTORE_COMMIT_H

#include <stdbool.h>

#include "internal.h"

struct rawstore;


int commit_start(struct rawstore *st);
/* Finish the queue and stop the thread. */
void commit_stop(struct rawstore *st);
/* True on the thread holding the commit role: the commit thread, or a
 * submitter leading its group (blocking calls from callbacks would
 * deadlock). */
bool commit_on_thread(struct rawstore *st);
/* Run @fn on the commit thread and wait for it. */
int rs_run_job(struct rawstore *st, rs_job_fn fn, void *arg);
/* Commit st->wb synchronously (jobs only). */
int rs_commit_wb(struct rawstore *st);
/* Commit thread, while a group is applied: wait for every written batch to
 * be durable and release the space they hold (space.h, jobs.drain). */
bool commit_drain(struct rawstore *st);

#endif /* RAWSTORE_COMMIT_H */
