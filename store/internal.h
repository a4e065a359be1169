/* SPDX-License-Identifier: MIT */
/* internal.h: the store handle and the interfaces between store modules. */
#ifndef RAWSTORE_INTERNAL_H
#define RAWSTORE_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "rawstore/rawstore.h"
#include "alloc.h"
#include "deferred.h"
#include "device.h"
#include "journal.h"
#include "meta.h"
#include "ocache.h"
#include "ondisk.h"
#include "onode.h"

struct rs_space;
struct rs_pipe;

struct rawstore {
	struct rawstore_open_opts opts;
	struct rs_dev *dev;
	struct rs_meta *meta;
	struct rs_disk_super sb;	/* as read (little-endian) */
	bool sb_from_meta;		/* sb is META's copy (opts.repair_super) */
	uint64_t device_size;		/* bytes, from the superblock */
	uint64_t data_start, data_end;	/* bytes */
	uint32_t min_alloc, csum_block, inline_max;
	struct rs_limits lim;		/* the above, for the record decoders */

	/* Changed by the commit thread only; readers hold rwlock. */
	struct extset freeset;		/* free space */
	struct extset unpunched;	/* freed, not yet punched */
	pthread_rwlock_t rwlock;	/* frees become reusable under the write lock */
	bool shared_any;		/* some unit may be shared by clones ("R") */
	uint64_t next_nid;		/* the next object id handed out */
	uint64_t stored_nid;		/* "N" as written: above every id in use */
	uint64_t n_objects, n_colls;
	/* Committed space figures for statfs, refreshed under the write lock
	 * (the trees themselves change while transactions are applied). */
	struct {
		uint64_t free, free_extents, largest_free, unpunched;
	} snap;

	/* Commit thread and its queue.  The commit role (applying and
	 * committing groups, running jobs and callbacks) is held by one
	 * thread at a time: the commit thread, or a submitter leading its
	 * own group while the role was free (commit.c). */
	pthread_t worker;
	pthread_mutex_t qlock;
	pthread_cond_t qcond;		/* wakes the role's holder: work, a sync */
	pthread_cond_t wcond;		/* wakes the commit thread: work, role free */
	bool leading;			/* the role is held (qlock) */
	struct rawstore_txn *qhead, *qtail;
	pthread_cond_t qroom;		/* back-pressure: room in the queue */
	unsigned int q_txns;		/* submitted, not completed */
	uint64_t q_bytes;		/* their write data */
	bool stopping;
	int failed;			/* sticky error after a failed commit, a failed
					 * flush (rs_store_stop; read: rs_failed) */
	char failed_msg[256];		/* and its message (fixed once failed is set) */
	rocksdb_writebatch_wi_t *wb;
	struct rs_pipe *pipe;		/* written batches awaiting their sync (commit.c) */
	struct extset_observer free_obs, unpunched_obs;
	struct rs_defq defq;		/* deferred writes (deferred.c) */
	/* Readers lay defq's queue over their reads: a group with deferred
	 * writes is committed, its writes not yet started.  Set and cleared
	 * under the write lock; the queue does not change while set.  The
	 * writes in flight (defq.fly) they lay over every read. */
	bool defq_visible;
	struct rs_space *space;		/* zeroed/dirty state, policy, worker (space.c) */
	struct rs_ocache *ocache;	/* decoded onodes (ocache.h) */
	struct rs_keyvec ocache_dirty;	/* onode keys the group changes (commit thread) */
	/* A collection that exists, as the group applied so far sees it
	 * (txn.c, commit thread): checked once, not per operation. */
	char coll_seen[64];
	bool coll_seen_ok;

	struct rawstore_perf perf;	/* updated atomically */
};

struct rs_op;

/* Jobs other than transactions run on the commit thread via a txn. */
typedef int (*rs_job_fn)(struct rawstore *st, void *arg);

struct rawstore_txn {
	struct rs_op *ops;
	unsigned int n, cap;
	int failed_op;
	rs_job_fn job;
	void *job_arg;
	rawstore_txn_cb cb;
	void *cb_arg;
	int result;
	bool write_failed;		/* its data write failed (commit group retry) */
	struct rs_jdata_vec borrowed;	/* checks of its nocopy writes, verified
					 * once written (commit group) */
	uint64_t bytes;			/* write data carried (back-pressure) */
	uint64_t q_bytes;		/* as counted in the queue */
	bool in_flight;
	struct rawstore_txn *next;
	char errmsg[256];		/* message of the last failed submit */
};

void rs_vlog(struct rawstore *st, int level, const char *fmt, va_list ap);

/* txn.c: apply one transaction into st->wb; frees and allocations are
 * collected in @ctx and become effective at commit. */
struct rs_txn_ctx {
	struct pext_vec allocs;		/* allocated by this txn */
	struct pext_vec frees;		/* to free after commit */
	struct rs_jdata_vec jdata;	/* device journal: checks of new data written */
	struct rs_jdata_vec borrowed;	/* those of them written from a caller's
					 * buffer (nocopy): off is its address */
	int64_t d_objects, d_colls;
	bool wrote_data;
	bool deferred;
};

int txn_apply(struct rawstore *st, struct rawstore_txn *t, struct rs_txn_ctx *ctx);
/* Forget what txn_apply() learnt about the batch: at the start of a group
 * and when a transaction's part of the batch is rolled back. */
void txn_forget(struct rawstore *st);

/* store.c: bit 0 primary, bit 1 backup superblock differs from the one in
 * use; with @repair rewrite the bad copies (and flush).  Returns the mask
 * still bad, or -errno. */
int rs_check_supers(struct rawstore *st, bool repair);

/* object.c: read [off, off+len) of @o into @buf (no size clamp). */
int obj_read(struct rawstore *st, const struct rs_onode *o, uint64_t off, void *buf,
	     size_t len, bool overlay);
/* Load the onode of coll/name (through @wb if not NULL). */
int onode_load(struct rawstore *st, rocksdb_writebatch_wi_t *wb, const char *coll,
	       const void *name, size_t nlen, struct rs_onode *o);

/*
 * commit.c: stop the store (any thread): later transactions and jobs fail
 * with @err and a message naming this thread's last error.  The first
 * failure sticks (error and message).  After any failed device flush or
 * failed metadata commit, whatever thread saw it.
 */
void rs_store_stop(struct rawstore *st, int err);
/* The sticky error, 0 while the store works. */
static inline int rs_failed(const struct rawstore *st)
{
	return __atomic_load_n(&st->failed, __ATOMIC_ACQUIRE);
}

/* debug.c: crash points for tests (store/debug.h). */
extern int rs_crash_point;
extern int rs_crash_countdown;
void rs_crash_check(struct rawstore *st, int point);
/* Test hook (debug.h, rs_debug_set_write_hook). */
void rs_debug_write_hook(void *buf, size_t len);
/* True when failure point @point fires (debug.h, enum rs_fail). */
bool rs_fail_check(int point);

#define PERF_ADD(st, field, v) __atomic_add_fetch(&(st)->perf.field, (v), __ATOMIC_RELAXED)

#endif /* RAWSTORE_INTERNAL_H */
