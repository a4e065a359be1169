// SPDX-License-Identifier: MIT
/*
 * t_powercut: the workload and the checker of v_powercut.sh (power cuts
 * replayed from a dm-log-writes log).
 *
 *   t_powercut run DEV META N SEED LWNAMES [JSIZE]
 *       mkfs a store on DEV with metadata in META (on an ext4 on a logged
 *       device), its device journal JSIZE bytes (0: mkfs's default), then
 *       submit N transactions generated from SEED (each starting with a
 *       write of 40 to 200 KiB of new units; writes large and small,
 *       deferred in-place overwrites, removes, clones, renames, truncates,
 *       omap), with a reclaim every 8. After each acknowledged transaction i it
 *       inserts the mark "ack-i" into the log of every dm-log-writes device
 *       of the comma-separated list LWNAMES ("-": none) and prints "ACK i".
 *       "ack-0" follows mkfs and the collection. The journal's sync hook
 *       marks "ts-N" and "td-N" around the N-th sync of its trim point
 *       (debug.h, rs_debug_set_sync_hook) in the same logs. Prints
 *       "JOURNAL device offset O size S" (bytes) and "SYNCS N".
 *   t_powercut more DEV META FROM SEED K
 *       reopen a store that check found after transaction FROM, acknowledge
 *       transactions FROM + 1 .. FROM + K and die without closing (the
 *       crash of a reopen-twice check; check FROM + K follows).
 *   t_powercut cont DEV META ACKED SEED K LWNAMES
 *       a logged recovery that goes on: marks "rstart", opens, marks
 *       "rdone", checks the state is ACKED's or the next (prints
 *       "# recovered R") with a clean deep fsck, acknowledges R + 1 ..
 *       R + K (marks "ack-i", and "ts-N"/"td-N" as run), marks "cdone".
 *   t_powercut check DEV META ACKED SEED
 *       open the store as a crash left it and check that it holds exactly
 *       the state after transaction ACKED or after ACKED + 1 (the one that
 *       may have been durable before its acknowledgement was marked): every
 *       object's existence, size, bytes and omap; then a deep fsck must be
 *       clean. Nothing half-applied, nothing acknowledged lost. Notes
 *       what the open's journal replay did ("# journal replayed ...,
 *       dropped D").
 *
 *   t_powercut crun DEV META CONFIG SEED LWNAME
 *       the concurrent workload: mkfs with CONFIG's policies, then several
 *       submitter threads with asynchronous transactions in flight; each
 *       acknowledgement of thread s's transaction i is marked "a-s-i",
 *       and before it "wrap-L" when the device journal's head entered lap
 *       L (its first record there is durable).  Prints SUB (submission
 *       order), FAILED (transactions a write error failed), POLICY, PERF
 *       and JOURNAL lines, then CDONE.
 *   t_powercut ccheck DEV META CONFIG SEED ACKS RUNLOG
 *       check a cut of it: ACKS is each thread's last acknowledged
 *       transaction before the cut ("3,5,4"), RUNLOG the output of crun.
 *       Notes what the open's journal replay did ("# journal replayed").
 *   t_powercut copen DEV META LWNAME
 *       open the store as a crash left it (the recovery), marking "rstart"
 *       before the open and "rdone" after it in LWNAME's log, then close
 *       it: a log of the recovery, to cut it (a crash during replay).
 *
 * The transactions depend only on SEED, so check regenerates the model.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/dm-ioctl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "debug.h"		/* rs_debug_fail_io: write errors (store/) */
#include "ktest.h"
#include "rawstore/rawstore.h"

#define NOBJ 8
#define NKEY 4
#define MAXLEN (512 * 1024)
#define COLL "pc"

struct obj {
	bool exists;
	uint64_t len;
	bool has[NKEY];
	uint32_t val[NKEY];		/* omap value: decimal text of this */
	uint8_t *data;			/* MAXLEN bytes; last (see offsetof below) */
};

struct model {
	struct obj o[NOBJ];
};

static __thread uint64_t rng;	/* submitter threads generate concurrently */

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? rng % n : 0;
}

static void model_init(struct model *m)
{
	int i;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < NOBJ; i++) {
		m->o[i].data = calloc(1, MAXLEN);
		if (!m->o[i].data)
			kt_fatal("out of memory");
	}
}

static void model_copy(struct model *d, const struct model *s)
{
	int i;

	for (i = 0; i < NOBJ; i++) {
		uint8_t *keep = d->o[i].data;

		d->o[i] = s->o[i];
		d->o[i].data = keep;
		memcpy(keep, s->o[i].data, MAXLEN);
	}
}

static void name_of(int i, char *n)
{
	snprintf(n, 32, "obj%d", i);
}

/*
 * Generate transaction @seq into @t (may be NULL) and apply it to @m.
 * Only ops that succeed on the model's state are generated.
 */
static void gen_txn(struct model *m, struct rawstore_txn *t, uint64_t seq)
{
	int nops = 1 + (int)rnd(3), k;

	for (k = 0; k < nops; k++) {
		int i = (int)rnd(NOBJ);
		struct obj *o = &m->o[i];
		unsigned op = (unsigned)rnd(100);
		char n[32];

		name_of(i, n);
		/* Every transaction's first op writes new units past the
		 * deferred limits (32 KiB), so that its journal record carries
		 * checks of new data: the record that follows a trim is then
		 * one that a cut can keep without its data. */
		if (!o->exists || k == 0)
			op = 0;			/* create it first */
		if (op < 35) {			/* large write: new units */
			uint64_t len = k ? 4096 + rnd(192 * 1024) : 40960 + rnd(160 * 1024);
			uint64_t off = rnd(MAXLEN - len);
			uint32_t x = (uint32_t)(seq * 7919 + k);
			uint64_t j;

			for (j = 0; j < len; j++)
				o->data[off + j] = (uint8_t)(x + j * 31 + (j >> 9));
			if (t)
				rawstore_txn_write(t, COLL, n, strlen(n), off, o->data + off, len);
			o->exists = true;
			if (o->len < off + len)
				o->len = off + len;
		} else if (op < 60) {		/* small overwrite inside: deferred */
			uint64_t len = 1 + rnd(8192);
			uint64_t off = o->len > len ? rnd(o->len - len) : 0;
			uint64_t j;

			for (j = 0; j < len; j++)
				o->data[off + j] = (uint8_t)(seq + j * 13);
			if (t)
				rawstore_txn_write(t, COLL, n, strlen(n), off, o->data + off, len);
			if (o->len < off + len)
				o->len = off + len;
		} else if (op < 70) {		/* remove */
			if (t)
				rawstore_txn_remove(t, COLL, n, strlen(n));
			memset(o->data, 0, MAXLEN);
			memset(o, 0, offsetof(struct obj, data));
		} else if (op < 76) {		/* clone over another object */
			int d = (int)rnd(NOBJ);
			char dn[32];

			if (d == i)
				continue;
			name_of(d, dn);
			if (t)
				rawstore_txn_clone(t, COLL, n, strlen(n), dn, strlen(dn));
			memcpy(m->o[d].data, o->data, MAXLEN);
			memcpy(&m->o[d], o, offsetof(struct obj, data));
		} else if (op < 80) {		/* rename over another object, if any */
			int d = (int)rnd(NOBJ);
			char dn[32];

			if (d == i)
				continue;
			name_of(d, dn);
			if (t)
				rawstore_txn_rename(t, COLL, n, strlen(n), COLL, dn, strlen(dn));
			memcpy(m->o[d].data, o->data, MAXLEN);
			memcpy(&m->o[d], o, offsetof(struct obj, data));
			memset(o->data, 0, MAXLEN);
			memset(o, 0, offsetof(struct obj, data));
		} else if (op < 88) {		/* truncate */
			uint64_t sz = rnd(o->len + 1);

			if (t)
				rawstore_txn_truncate(t, COLL, n, strlen(n), sz);
			memset(o->data + sz, 0, MAXLEN - sz);
			o->len = sz;
		} else {			/* omap */
			int key = (int)rnd(NKEY);
			char kb[8], vb[16];

			snprintf(kb, sizeof(kb), "k%d", key);
			o->has[key] = true;
			o->val[key] = (uint32_t)(seq * 100 + k);
			snprintf(vb, sizeof(vb), "%u", o->val[key]);
			if (t)
				rawstore_txn_omap_set(t, COLL, n, strlen(n), kb, strlen(kb), vb,
						      strlen(vb));
		}
	}
}

static int dm_message(const char *lw, const char *msg);

/*
 * Insert the mark @msg into the log of every dm-log-writes device of the
 * comma-separated list @lws ("-": none), in list order and under one lock:
 * marks from the main thread (acknowledgements) and from the journal's
 * sync hook (trims, on the commit thread) appear in the same order in
 * every log, so a mark is a point the logs agree on (v_powercut.sh).
 */
static int mark_all(const char *lws, const char *msg)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	char name[128];
	const char *p = lws;
	int ret = 0;

	if (!strcmp(lws, "-"))		/* no log: a plain run */
		return 0;
	pthread_mutex_lock(&lock);
	while (*p && !ret) {
		size_t n = strcspn(p, ",");

		snprintf(name, sizeof(name), "%.*s", (int)(n < 127 ? n : 127), p);
		ret = dm_message(name, msg);
		p += n;
		if (*p == ',')
			p++;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

static int mark(const char *lw, uint64_t i)
{
	char msg[32];

	snprintf(msg, sizeof(msg), "ack-%llu", (unsigned long long)i);
	return mark_all(lw, msg);
}

/* Transaction @i of the model: submit it, mark its acknowledgement. */
static void submit_one(struct rawstore *st, struct rawstore_txn *t, struct model *m,
		       uint64_t i, const char *lw)
{
	int ret;

	rawstore_txn_reset(t);
	gen_txn(m, t, i);
	ret = rawstore_submit(st, t);
	if (ret)
		kt_fatal("transaction %llu: %s (op %d)", (unsigned long long)i,
			 rawstore_errmsg(), rawstore_txn_failed_op(t));
	if (mark(lw, i))
		kt_fatal("dmsetup message %s mark failed", lw);
	printf("ACK %llu\n", (unsigned long long)i);
	fflush(stdout);
}

/*
 * The journal's sync hook: "ts-N" before the N-th WAL sync that makes the
 * trim point durable, "td-N" once it is. Between the two the metadata
 * device is written and flushed; the data device's ring is written again
 * only after "td-N".
 */
static uint64_t nsync;
static int sync_mark_failed;

static void sync_marks(int done, void *arg)
{
	char msg[32];

	if (!done)
		nsync++;
	snprintf(msg, sizeof(msg), "%s-%llu", done ? "td" : "ts", (unsigned long long)nsync);
	if (mark_all(arg, msg))
		sync_mark_failed = 1;
}

static int run(const char *dev, const char *meta, uint64_t n, uint64_t seed, const char *lw,
	       uint64_t jsize)
{
	struct rawstore_mkfs_opts mo;
	struct rawstore_info info;
	struct rawstore_perf pf;
	struct rawstore *st;
	struct rawstore_txn *t;
	struct model m;
	char rmark[64];
	uint64_t i;
	int ret;

	rawstore_mkfs_opts_init(&mo);
	mo.force = 1;
	mo.journal_size = jsize;
	ret = rawstore_mkfs(dev, meta, &mo);
	if (ret)
		kt_fatal("mkfs: %s", rawstore_errmsg());
	rs_debug_set_sync_hook(sync_marks, (void *)lw);
	ret = rawstore_open(dev, meta, NULL, &st);
	if (ret)
		kt_fatal("open: %s", rawstore_errmsg());
	info.struct_size = sizeof(info);
	if (rawstore_get_info(st, &info))
		kt_fatal("info: %s", rawstore_errmsg());
	/* Where the ring is (v_powercut.sh tells records from data by it). */
	printf("JOURNAL %s offset %llu size %llu\n", info.journal,
	       (unsigned long long)info.journal_offset, (unsigned long long)info.journal_size);
	/* The log keeps it too (a failure is redone on its own log). */
	snprintf(rmark, sizeof(rmark), "ring-%llu-%llu",
		 (unsigned long long)info.journal_offset / 512,
		 (unsigned long long)info.journal_size / 512);
	if (mark_all(lw, rmark))
		kt_fatal("mark %s on %s failed", rmark, lw);
	rawstore_txn_new(&t);
	rawstore_txn_coll_create(t, COLL);
	ret = rawstore_submit(st, t);
	if (ret || mark(lw, 0))
		kt_fatal("collection: %d %s", ret, rawstore_errmsg());
	printf("ACK 0\n");
	model_init(&m);
	rng = seed | 1;
	for (i = 1; i <= n; i++) {
		submit_one(st, t, &m, i, lw);
		if (i % 8 == 0) {
			ret = rawstore_reclaim(st);
			if (ret && ret != -EOPNOTSUPP)
				kt_fatal("reclaim: %s", rawstore_errmsg());
		}
	}
	rawstore_txn_free(t);
	/* What the cuts can hit: deferred new data and overwrites through the
	 * WAL (the guest's virtio disks report themselves rotational, so
	 * deferred_new_max is on) and data written in place. */
	info.struct_size = sizeof(info);
	pf.struct_size = sizeof(pf);
	if (!rawstore_get_info(st, &info) && !rawstore_perf_get(st, &pf))
		printf("DEFERRED new_max %u new_bytes %llu overwrite_bytes %llu other_bytes %llu\n",
		       info.deferred_new_max, (unsigned long long)pf.deferred_new_bytes,
		       (unsigned long long)(pf.deferred_bytes - pf.deferred_new_bytes),
		       (unsigned long long)(pf.dev_write_bytes - pf.deferred_bytes));
	ret = rawstore_close(st);
	if (ret)
		kt_fatal("close: %d", ret);
	rs_debug_set_sync_hook(NULL, NULL);
	if (sync_mark_failed)
		kt_fatal("a trim's mark could not be written to %s", lw);
	printf("SYNCS %llu\n", (unsigned long long)nsync);
	return 0;
}

struct omap_seen {
	const struct obj *o;
	int n;
	bool bad;
};

static int omap_cb(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct omap_seen *s = arg;
	char kb[8], vb[16];
	int key;

	s->n++;
	if (kl < 2 || kl > 2 || ((const char *)k)[0] != 'k') {
		s->bad = true;
		return 1;
	}
	key = ((const char *)k)[1] - '0';
	if (key < 0 || key >= NKEY || !s->o->has[key]) {
		s->bad = true;
		return 1;
	}
	snprintf(kb, sizeof(kb), "k%d", key);
	snprintf(vb, sizeof(vb), "%u", s->o->val[key]);
	if (vl != strlen(vb) || memcmp(v, vb, vl))
		s->bad = true;
	return 0;
}

/*
 * 0 if the store holds exactly @m, else a description in @why. Adds the
 * object bytes read and compared to *@verified.
 */
static int matches(struct rawstore *st, const struct model *m, uint8_t *buf, char *why,
		   size_t wlen, uint64_t *verified)
{
	int i, k;

	for (i = 0; i < NOBJ; i++) {
		const struct obj *o = &m->o[i];
		struct rawstore_stat s;
		struct omap_seen seen = { o, 0, false };
		char n[32];
		int ret, want = 0;
		ssize_t r;

		name_of(i, n);
		s.struct_size = sizeof(s);
		ret = rawstore_stat(st, COLL, n, strlen(n), &s);
		if (!o->exists) {
			if (ret != -ENOENT) {
				snprintf(why, wlen, "%s: stat %d, want ENOENT", n, ret);
				return 1;
			}
			continue;
		}
		if (ret || s.size != o->len) {
			snprintf(why, wlen, "%s: stat %d size %llu, want size %llu", n, ret,
				 (unsigned long long)s.size, (unsigned long long)o->len);
			return 1;
		}
		r = rawstore_read(st, COLL, n, strlen(n), 0, buf, MAXLEN);
		if (r != (ssize_t)o->len || memcmp(buf, o->data, o->len)) {
			snprintf(why, wlen, "%s: read %zd bytes that differ from the %llu written",
				 n, r, (unsigned long long)o->len);
			return 1;
		}
		*verified += o->len;
		ret = rawstore_omap_iterate(st, COLL, n, strlen(n), NULL, 0, omap_cb, &seen);
		for (k = 0; k < NKEY; k++)
			want += o->has[k];
		if (ret < 0 || seen.bad || seen.n != want) {
			snprintf(why, wlen, "%s: omap differs (%d keys, want %d)", n, seen.n, want);
			return 1;
		}
	}
	return 0;
}

static void note_replay(struct rawstore *st);

/* @a: the model after transaction @acked of @seed's workload; @b: after the next. */
static void models_at(struct model *a, struct model *b, uint64_t acked, uint64_t seed)
{
	uint64_t i;

	model_init(a);
	model_init(b);
	rng = seed | 1;
	for (i = 1; i <= acked; i++)
		gen_txn(a, NULL, i);
	model_copy(b, a);
	gen_txn(b, NULL, acked + 1);
}

static int check(const char *dev, const char *meta, uint64_t acked, uint64_t seed)
{
	struct rawstore_fsck_opts fo;
	struct rawstore_fsck_result fr;
	struct model a, b;
	struct rawstore *st;
	uint8_t *buf = malloc(MAXLEN);
	char why_a[200] = "", why_b[200] = "";
	uint64_t verified = 0;
	int ret, ma, mb;

	models_at(&a, &b, acked, seed);

	ret = rawstore_open(dev, meta, NULL, &st);
	kt_expect_eq(ret, 0, "open after the cut (%s)", ret ? rawstore_errmsg() : "ok");
	if (ret)
		return kt_done();
	note_replay(st);
	ma = matches(st, &a, buf, why_a, sizeof(why_a), &verified);
	if (ma)
		verified = 0;
	mb = ma ? matches(st, &b, buf, why_b, sizeof(why_b), &verified) : 1;
	if (ma && mb)
		verified = 0;
	kt_check(!ma || !mb, "state is transaction %llu's or %llu's (%s; %s)",
		 (unsigned long long)acked, (unsigned long long)acked + 1, why_a, why_b);
	if (!ma)
		kt_note("state after transaction %llu", (unsigned long long)acked);
	else if (!mb)
		kt_note("state after transaction %llu (durable before its ack mark)",
			(unsigned long long)acked + 1);
	kt_note("verified %llu bytes", (unsigned long long)verified);
	rawstore_fsck_opts_init(&fo);
	fo.deep = 1;
	fr.struct_size = sizeof(fr);
	ret = rawstore_fsck(st, &fo, &fr);
	kt_expect_eq(ret, 0, "deep fsck runs");
	kt_check(fr.errors == 0 && fr.leaks == 0, "deep fsck clean (%llu errors, %llu leaks)",
		 (unsigned long long)fr.errors, (unsigned long long)fr.leaks);
	kt_expect_eq(rawstore_close(st), 0, "close");
	free(buf);
	return kt_done();
}

/* Transactions @from + 1 .. @to on @st, whose state is after @from. */
static void submit_range(struct rawstore *st, uint64_t seed, uint64_t from, uint64_t to,
			 const char *lw)
{
	struct rawstore_txn *t;
	struct model m;
	uint64_t i;

	model_init(&m);
	rng = seed | 1;
	for (i = 1; i <= from; i++)
		gen_txn(&m, NULL, i);
	rawstore_txn_new(&t);
	for (i = from + 1; i <= to; i++)
		submit_one(st, t, &m, i, lw);
	rawstore_txn_free(t);
}

/*
 * The second half of a reopen-twice check: open the store (after
 * transaction @from, as check found it), acknowledge @k more and die
 * without closing, as a crash right after the last acknowledgement: what
 * RocksDB holds only in its unsynced WAL buffer is lost. check must then
 * find every one of them.
 */
static int more(const char *dev, const char *meta, uint64_t from, uint64_t seed, uint64_t k)
{
	struct rawstore *st;
	int ret = rawstore_open(dev, meta, NULL, &st);

	if (ret)
		kt_fatal("reopen after transaction %llu: %s", (unsigned long long)from,
			 rawstore_errmsg());
	note_replay(st);
	fflush(stdout);
	submit_range(st, seed, from, from + k, "-");
	fflush(stdout);
	_exit(0);
}

/*
 * A logged recovery that goes on (a double crash): marks "rstart", opens
 * the store as a cut left it (the replay, its trim point synced between
 * "ts-N" and "td-N"), marks "rdone", checks that it holds the state after
 * @acked or @acked + 1 (printed: "# recovered R") with a clean deep fsck,
 * then acknowledges @k more transactions (marks "ack-i"), marks "cdone"
 * and closes. v_powercut.sh cuts this log in turn.
 */
static int cont(const char *dev, const char *meta, uint64_t acked, uint64_t seed,
		uint64_t k, const char *lws)
{
	struct rawstore_fsck_opts fo;
	struct rawstore_fsck_result fr;
	struct model a, b;
	struct rawstore *st;
	uint8_t *buf = malloc(MAXLEN);
	char why_a[200] = "", why_b[200] = "";
	uint64_t r, verified = 0;
	int ret, ma, mb;

	models_at(&a, &b, acked, seed);

	rs_debug_set_sync_hook(sync_marks, (void *)lws);
	if (mark_all(lws, "rstart"))
		kt_fatal("mark rstart on %s failed", lws);
	ret = rawstore_open(dev, meta, NULL, &st);
	if (ret)
		kt_fatal("open: %s", rawstore_errmsg());
	note_replay(st);
	if (mark_all(lws, "rdone"))
		kt_fatal("mark rdone on %s failed", lws);
	ma = matches(st, &a, buf, why_a, sizeof(why_a), &verified);
	mb = ma ? matches(st, &b, buf, why_b, sizeof(why_b), &verified) : 1;
	if (ma && mb)
		kt_fatal("recovered neither transaction %llu's state nor %llu's (%s; %s)",
			 (unsigned long long)acked, (unsigned long long)acked + 1, why_a, why_b);
	r = ma ? acked + 1 : acked;
	kt_note("recovered %llu", (unsigned long long)r);
	rawstore_fsck_opts_init(&fo);
	fo.deep = 1;
	fr.struct_size = sizeof(fr);
	ret = rawstore_fsck(st, &fo, &fr);
	if (ret || fr.errors || fr.leaks)
		kt_fatal("deep fsck after the recovery: %d, %llu errors, %llu leaks", ret,
			 (unsigned long long)fr.errors, (unsigned long long)fr.leaks);
	submit_range(st, seed, r, r + k, lws);
	if (mark_all(lws, "cdone"))
		kt_fatal("mark cdone on %s failed", lws);
	ret = rawstore_close(st);
	if (ret)
		kt_fatal("close: %d", ret);
	rs_debug_set_sync_hook(NULL, NULL);
	if (sync_mark_failed)
		kt_fatal("a trim's mark could not be written to %s", lws);
	free(buf);
	return 0;
}

/*
 * The concurrent campaign (crun / ccheck).
 *
 * Several submitter threads, each with up to "d" asynchronous transactions
 * in flight on objects of its own ("c<s>-<j>"), so that groups join and the
 * commit pipeline is full. A transaction depends only on (SEED, thread,
 * index), never on the state it meets: every op that needs its object
 * touches it first, so any subset of a thread's transactions applies
 * cleanly and the checker can rebuild the state after any prefix, minus
 * the transactions that failed (write errors, reported with FAILED lines).
 * The completion callback marks each success in the log ("a-<s>-<i>") with
 * a DM_TARGET_MSG ioctl: it runs once the transaction is durable, so the
 * mark follows it in the log.
 */
#define CNOBJ 3
#define CMAXLEN (256 * 1024)
#define CMAXT 8
#define CMAXN 4096

struct ccfg {
	int threads, depth, txns;
	uint32_t mau;
	int punch, zero;
	int64_t dmax, dnew;
	int errors;			/* arm a write error every "errors" txns of thread 0 */
	int journal;			/* enum rawstore_journal_mode */
	uint64_t jsize;			/* device journal bytes, 0: mkfs's default */
};

static int policy_of(const char *v, const char *const *names)
{
	int i;

	for (i = 1; names[i - 1]; i++)
		if (!strcmp(v, names[i - 1]))
			return i;
	kt_fatal("unknown policy %s", v);
}

static void ccfg_parse(struct ccfg *c, const char *s)
{
	static const char *const punch[] = { "operator", "background", "inline", NULL };
	static const char *const zero[] = { "auto", "prepare", "pad", NULL };
	static const char *const journal[] = { "device", "rocksdb", NULL };
	char *dup = strdup(s), *tok, *save = NULL;

	*c = (struct ccfg){ 3, 4, 24, 0, 0, 0, 32768, -1, 0, 0, 0 };
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *v = strchr(tok, '=');

		if (!v)
			kt_fatal("bad config item %s", tok);
		*v++ = 0;
		if (!strcmp(tok, "t"))
			c->threads = atoi(v);
		else if (!strcmp(tok, "d"))
			c->depth = atoi(v);
		else if (!strcmp(tok, "n"))
			c->txns = atoi(v);
		else if (!strcmp(tok, "mau"))
			c->mau = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(tok, "punch"))
			c->punch = policy_of(v, punch);
		else if (!strcmp(tok, "zero"))
			c->zero = policy_of(v, zero);
		else if (!strcmp(tok, "dmax"))
			c->dmax = strtoll(v, NULL, 0);
		else if (!strcmp(tok, "dnew"))
			c->dnew = strtoll(v, NULL, 0);
		else if (!strcmp(tok, "err"))
			c->errors = atoi(v);
		else if (!strcmp(tok, "journal"))
			c->journal = policy_of(v, journal);
		else if (!strcmp(tok, "jsize"))
			c->jsize = strtoull(v, NULL, 0);
		else
			kt_fatal("unknown config item %s", tok);
	}
	free(dup);
	if (c->threads < 1 || c->threads > CMAXT || c->depth < 1 || c->depth > 64 ||
	    c->txns < 1 || c->txns > CMAXN)
		kt_fatal("config %s out of range", s);
}

struct cobj {
	bool exists;
	uint64_t len;
	bool has[NKEY];
	uint32_t val[NKEY];
	uint8_t data[CMAXLEN];
};

struct cstate {
	struct cobj o[CNOBJ];
};

static uint64_t crng_of(uint64_t seed, int s, uint64_t i)
{
	uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)s << 48) ^
		     (i * 0xbf58476d1ce4e5b9ULL);

	x ^= x >> 31;
	return x ? x : 1;
}

static void cname(int s, int j, char *n)
{
	snprintf(n, 32, "c%d-%d", s, j);
}

static void ctouch(struct cobj *o, struct rawstore_txn *t, const char *n)
{
	if (t)
		rawstore_txn_touch(t, COLL, n, strlen(n));
	if (o)
		o->exists = true;
}

/*
 * Transaction @i of thread @s: build it into @t (may be NULL) and apply it
 * to @m (may be NULL). Returns 1 if it writes data (a write op).
 */
static int cgen(uint64_t seed, int s, uint64_t i, struct cstate *m, struct rawstore_txn *t)
{
	int nops, k, wrote = 0;

	rng = crng_of(seed, s, i);
	nops = 1 + (int)rnd(3);
	for (k = 0; k < nops; k++) {
		int j = (int)rnd(CNOBJ);
		struct cobj *o = m ? &m->o[j] : NULL;
		unsigned op = (unsigned)rnd(100);
		char n[32];

		cname(s, j, n);
		if (op < 50) {		/* large (new units) or small write */
			uint64_t len = op < 30 ? 4096 + rnd(96 * 1024) : 1 + rnd(8192);
			uint64_t off = rnd(CMAXLEN - len), x;
			uint8_t *buf = malloc(len);

			if (!buf)
				kt_fatal("out of memory");
			for (x = 0; x < len; x++)
				buf[x] = (uint8_t)(i * 131 + (uint64_t)s * 17 + k * 7 + x * 31 +
						   (x >> 9));
			if (t)
				rawstore_txn_write(t, COLL, n, strlen(n), off, buf, len);
			if (m) {
				memcpy(o->data + off, buf, len);
				o->exists = true;
				if (o->len < off + len)
					o->len = off + len;
			}
			free(buf);
			wrote = 1;
		} else if (op < 58) {		/* zero a range: frees whole units */
			uint64_t off = rnd(CMAXLEN / 2), len = 1 + rnd(64 * 1024);

			if (t)
				rawstore_txn_zero(t, COLL, n, strlen(n), off, len);
			if (m) {
				memset(o->data + off, 0, len);
				o->exists = true;
				if (o->len < off + len)
					o->len = off + len;
			}
		} else if (op < 66) {		/* remove */
			ctouch(o, t, n);
			if (t)
				rawstore_txn_remove(t, COLL, n, strlen(n));
			if (m)
				memset(o, 0, sizeof(*o));
		} else if (op < 71) {		/* clone over another object */
			int d = (int)rnd(CNOBJ);
			char dn[32];

			if (d == j)
				continue;
			cname(s, d, dn);
			ctouch(o, t, n);
			if (t)
				rawstore_txn_clone(t, COLL, n, strlen(n), dn, strlen(dn));
			if (m)
				m->o[d] = *o;
		} else if (op < 74) {		/* rename over another object, if any */
			int d = (int)rnd(CNOBJ);
			char dn[32];

			if (d == j)
				continue;
			cname(s, d, dn);
			ctouch(o, t, n);
			if (t)
				rawstore_txn_rename(t, COLL, n, strlen(n), COLL, dn, strlen(dn));
			if (m) {
				m->o[d] = *o;
				memset(o, 0, sizeof(*o));
			}
		} else if (op < 84) {		/* truncate */
			uint64_t sz = rnd(CMAXLEN + 1);

			ctouch(o, t, n);
			if (t)
				rawstore_txn_truncate(t, COLL, n, strlen(n), sz);
			if (m) {
				if (sz < o->len)
					memset(o->data + sz, 0, CMAXLEN - sz);
				o->len = sz;
			}
		} else {			/* omap */
			int key = (int)rnd(NKEY);
			char kb[8], vb[24];
			uint32_t val = (uint32_t)(i * 100 + (uint64_t)s * 10 + k);

			ctouch(o, t, n);
			snprintf(kb, sizeof(kb), "k%d", key);
			snprintf(vb, sizeof(vb), "%u", val);
			if (t)
				rawstore_txn_omap_set(t, COLL, n, strlen(n), kb, strlen(kb), vb,
						      strlen(vb));
			if (m) {
				o->has[key] = true;
				o->val[key] = val;
			}
		}
	}
	return wrote;
}

/* dmsetup message LW 0 MSG, without a fork (callbacks run on the commit thread). */
static int dm_message(const char *lw, const char *msg)
{
	union {
		struct dm_ioctl io;
		char b[sizeof(struct dm_ioctl) + sizeof(struct dm_target_msg) + 64];
	} u;
	struct dm_target_msg *tm;
	static int fd = -1;

	if (!strcmp(lw, "-"))
		return 0;
	if (fd < 0)
		fd = open("/dev/mapper/control", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	memset(&u, 0, sizeof(u));
	u.io.version[0] = DM_VERSION_MAJOR;
	u.io.data_size = sizeof(u);
	u.io.data_start = sizeof(struct dm_ioctl);
	snprintf(u.io.name, sizeof(u.io.name), "%s", lw);
	tm = (struct dm_target_msg *)(u.b + sizeof(struct dm_ioctl));
	tm->sector = 0;
	snprintf(tm->message, 64, "mark %s", msg);
	return ioctl(fd, DM_TARGET_MSG, &u) ? -errno : 0;
}

struct csub;

struct cslot {
	struct csub *u;
	struct rawstore_txn *t;
	bool busy;
	uint64_t i;
};

struct csub {
	int s;
	pthread_t tid;
	struct rawstore *st;
	const struct ccfg *c;
	uint64_t seed;
	const char *lw;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct cslot *slot;
	uint64_t acked, nfailed;
	uint64_t failed[CMAXN];
	int bad;			/* unexpected results */
	char why[200];
};

static pthread_mutex_t csub_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t cgseq;
static uint64_t clap, cwraps;	/* the journal lap marked last; wraps marked */
static struct rawstore *cstore;
static struct csubrec { int s; uint64_t i; } csubs[CMAXT * CMAXN];

/* On the commit thread, once the transaction is durable or rejected. */
static void ccb(struct rawstore_txn *t, int result, void *arg)
{
	struct cslot *sl = arg;
	struct csub *u = sl->u;
	char mk[32];
	int ret = 0;

	(void)t;
	if (!result) {
		uint64_t len, lap = rs_debug_journal_head(cstore, &len);

		/* Callbacks run on the commit thread only: clap needs no lock. */
		lap = len ? lap / len : 0;
		if (lap > clap) {
			clap = lap;
			cwraps++;
			snprintf(mk, sizeof(mk), "wrap-%llu", (unsigned long long)lap);
			ret = dm_message(u->lw, mk);
		}
		snprintf(mk, sizeof(mk), "a-%d-%llu", u->s, (unsigned long long)sl->i);
		if (!ret)
			ret = dm_message(u->lw, mk);
	}
	pthread_mutex_lock(&u->lock);
	if (!result) {
		u->acked++;
	} else if (result == -EIO && u->c->errors) {
		u->failed[u->nfailed++] = sl->i;	/* an injected write error */
	} else if (!u->bad++) {
		snprintf(u->why, sizeof(u->why), "transaction %d/%llu: %s", u->s,
			 (unsigned long long)sl->i, rawstore_txn_errmsg(t));
	}
	if (ret && !u->bad++)
		snprintf(u->why, sizeof(u->why), "mark %s: %s", mk, strerror(-ret));
	sl->busy = false;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

static void *csubmitter(void *arg)
{
	struct csub *u = arg;
	uint64_t i, frng = u->seed * 7 + 3;
	int ret;

	for (i = 1; i <= (uint64_t)u->c->txns; i++) {
		struct cslot *sl = &u->slot[i % (uint64_t)u->c->depth];

		pthread_mutex_lock(&u->lock);
		while (sl->busy)
			pthread_cond_wait(&u->cond, &u->lock);
		sl->busy = true;
		sl->i = i;
		pthread_mutex_unlock(&u->lock);
		rawstore_txn_reset(sl->t);
		cgen(u->seed, u->s, i, NULL, sl->t);
		if (u->s == 0 && u->c->errors && i % (uint64_t)u->c->errors == 0) {
			/* One of the next few device writes fails (after landing). */
			frng ^= frng << 13;
			frng ^= frng >> 7;
			frng ^= frng << 17;
			rs_debug_fail_io(RS_IO_WRITE, 1 + (int)(frng % 6), EIO, 1);
		}
		pthread_mutex_lock(&csub_lock);
		csubs[cgseq].s = u->s;
		csubs[cgseq].i = i;
		cgseq++;
		ret = rawstore_submit_async(u->st, sl->t, ccb, sl);
		pthread_mutex_unlock(&csub_lock);
		if (ret)
			kt_fatal("submit %d/%llu: %d", u->s, (unsigned long long)i, ret);
	}
	pthread_mutex_lock(&u->lock);
	for (i = 0; i < (uint64_t)u->c->depth; i++)
		while (u->slot[i].busy)
			pthread_cond_wait(&u->cond, &u->lock);
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

static int crun(const char *dev, const char *meta, const char *cfgs, uint64_t seed,
		const char *lw)
{
	struct rawstore_mkfs_opts mo;
	struct rawstore_open_opts oo;
	struct rawstore_info info;
	struct rawstore_perf pf;
	struct rawstore_txn *t;
	struct rawstore *st;
	static struct csub u[CMAXT];
	struct ccfg c;
	uint64_t g, nfailed = 0;
	int s, ret, bad = 0;
	unsigned k;

	ccfg_parse(&c, cfgs);
	rawstore_mkfs_opts_init(&mo);
	mo.force = 1;
	if (c.mau)
		mo.min_alloc_size = c.mau;
	mo.punch_policy = c.punch;
	mo.zero_policy = c.zero;
	mo.journal = c.journal;
	mo.journal_size = c.jsize;
	ret = rawstore_mkfs(dev, meta, &mo);
	if (ret)
		kt_fatal("mkfs: %s", rawstore_errmsg());
	rawstore_open_opts_init(&oo);
	oo.deferred_max = (uint32_t)c.dmax;
	oo.deferred_new_max = (int32_t)c.dnew;
	ret = rawstore_open(dev, meta, &oo, &st);
	if (ret)
		kt_fatal("open: %s", rawstore_errmsg());
	cstore = st;
	rawstore_txn_new(&t);
	rawstore_txn_coll_create(t, COLL);
	ret = rawstore_submit(st, t);
	if (ret || mark(lw, 0))
		kt_fatal("collection: %d %s", ret, rawstore_errmsg());
	rawstore_txn_free(t);
	{
		uint64_t len, head = rs_debug_journal_head(st, &len);

		clap = len ? head / len : 0;
	}
	printf("ACK 0\n");
	fflush(stdout);
	for (s = 0; s < c.threads; s++) {
		u[s].s = s;
		u[s].st = st;
		u[s].c = &c;
		u[s].seed = seed;
		u[s].lw = lw;
		pthread_mutex_init(&u[s].lock, NULL);
		pthread_cond_init(&u[s].cond, NULL);
		u[s].slot = calloc((size_t)c.depth, sizeof(*u[s].slot));
		if (!u[s].slot)
			kt_fatal("out of memory");
		for (k = 0; k < (unsigned)c.depth; k++) {
			u[s].slot[k].u = &u[s];
			if (rawstore_txn_new(&u[s].slot[k].t))
				kt_fatal("out of memory");
		}
	}
	for (s = 0; s < c.threads; s++)
		if (pthread_create(&u[s].tid, NULL, csubmitter, &u[s]))
			kt_fatal("pthread_create");
	for (s = 0; s < c.threads; s++)
		pthread_join(u[s].tid, NULL);
	rs_debug_fail_io(0, 0, 0, 0);
	for (g = 0; g < cgseq; g++)
		printf("SUB %llu %d %llu\n", (unsigned long long)g, csubs[g].s,
		       (unsigned long long)csubs[g].i);
	for (s = 0; s < c.threads; s++) {
		for (g = 0; g < u[s].nfailed; g++)
			printf("FAILED %d %llu\n", s, (unsigned long long)u[s].failed[g]);
		printf("THREAD %d acked %llu failed %llu\n", s, (unsigned long long)u[s].acked,
		       (unsigned long long)u[s].nfailed);
		nfailed += u[s].nfailed;
		if (u[s].bad) {
			printf("BAD thread %d: %d unexpected results, first: %s\n", s, u[s].bad,
			       u[s].why);
			bad = 1;
		}
		for (k = 0; k < (unsigned)c.depth; k++)
			rawstore_txn_free(u[s].slot[k].t);
		free(u[s].slot);
	}
	info.struct_size = sizeof(info);
	pf.struct_size = sizeof(pf);
	if (rawstore_get_info(st, &info) || rawstore_perf_get(st, &pf))
		kt_fatal("info: %s", rawstore_errmsg());
	printf("POLICY punch %s zero %s provisioning %d rotational %d deferred_max %u "
	       "deferred_new_max %u\n", info.punch_policy, info.zero_policy, info.provisioning,
	       info.rotational, info.deferred_max, info.deferred_new_max);
	printf("PERF txns %llu groups %llu failed %llu punched %llu punched_bg %llu "
	       "zero_claims %llu zeroed_alloc %llu prepared %llu provisioned %llu "
	       "deferred_new %llu deferred %llu join_waits %llu\n",
	       (unsigned long long)pf.txns_committed, (unsigned long long)pf.commit_groups,
	       (unsigned long long)nfailed, (unsigned long long)pf.bytes_punched,
	       (unsigned long long)pf.punched_background, (unsigned long long)pf.zero_claims,
	       (unsigned long long)pf.zeroed_alloc_bytes, (unsigned long long)pf.prepared_bytes,
	       (unsigned long long)pf.provisioned_bytes,
	       (unsigned long long)pf.deferred_new_bytes, (unsigned long long)pf.deferred_bytes,
	       (unsigned long long)rs_debug_join_waits());
	{
		uint64_t len, head = rs_debug_journal_head(st, &len);

		printf("JOURNAL %s size %llu head %llu records %llu trims %llu wraps %llu\n",
		       info.journal, (unsigned long long)len, (unsigned long long)head,
		       (unsigned long long)pf.journal_records,
		       (unsigned long long)pf.journal_trims, (unsigned long long)cwraps);
	}
	ret = rawstore_close(st);
	if (ret)
		kt_fatal("close: %d", ret);
	if (bad)
		return 1;
	printf("CDONE\n");
	return 0;
}

static int comap_cb(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	struct cobj *o = arg;
	char vb[24];
	int key;

	key = kl == 2 && ((const char *)k)[0] == 'k' ? ((const char *)k)[1] - '0' : -1;
	if (key < 0 || key >= NKEY || vl >= sizeof(vb)) {
		o->len = UINT64_MAX;	/* not a key the workload sets */
		return 1;
	}
	memcpy(vb, v, vl);
	vb[vl] = 0;
	o->has[key] = true;
	o->val[key] = (uint32_t)strtoul(vb, NULL, 10);
	return 0;
}

/* What the store holds of thread @s's objects. */
static int csnap(struct rawstore *st, int s, struct cstate *m, char *why, size_t wlen,
		 uint64_t *verified)
{
	int j;

	memset(m, 0, sizeof(*m));
	for (j = 0; j < CNOBJ; j++) {
		struct cobj *o = &m->o[j];
		struct rawstore_stat sb;
		char n[32];
		ssize_t r;
		int ret;

		cname(s, j, n);
		sb.struct_size = sizeof(sb);
		ret = rawstore_stat(st, COLL, n, strlen(n), &sb);
		if (ret == -ENOENT)
			continue;
		if (ret || sb.size > CMAXLEN) {
			snprintf(why, wlen, "%s: stat %d size %llu", n, ret,
				 (unsigned long long)sb.size);
			return 1;
		}
		o->exists = true;
		o->len = sb.size;
		r = rawstore_read(st, COLL, n, strlen(n), 0, o->data, CMAXLEN);
		if (r != (ssize_t)o->len) {
			snprintf(why, wlen, "%s: read %zd of %llu bytes", n, r,
				 (unsigned long long)o->len);
			return 1;
		}
		*verified += o->len;
		ret = rawstore_omap_iterate(st, COLL, n, strlen(n), NULL, 0, comap_cb, o);
		if (ret < 0 || o->len == UINT64_MAX) {
			snprintf(why, wlen, "%s: omap iterate %d, or a key it should not have",
				 n, ret);
			return 1;
		}
	}
	return 0;
}

static bool csame(const struct cstate *a, const struct cstate *b)
{
	int j, k;

	for (j = 0; j < CNOBJ; j++) {
		const struct cobj *x = &a->o[j], *y = &b->o[j];

		if (x->exists != y->exists || x->len != y->len ||
		    memcmp(x->data, y->data, x->len))
			return false;
		for (k = 0; k < NKEY; k++)
			if (x->has[k] != y->has[k] || (x->has[k] && x->val[k] != y->val[k]))
				return false;
	}
	return true;
}

/* What the open's journal replay did (v_powercut.sh reads this line). */
static void note_replay(struct rawstore *st)
{
	struct rawstore_records r;

	memset(&r, 0, sizeof(r));
	r.struct_size = sizeof(r);
	if (rawstore_records_get(st, &r) || !r.journal_size)
		return;
	kt_note("journal replayed %llu records (%llu bytes, seq %llu..%llu) from %llu to "
		"%llu, lap %llu to %llu, dropped %llu",
		(unsigned long long)r.journal_replayed,
		(unsigned long long)r.journal_replayed_bytes,
		(unsigned long long)r.journal_durable_seq + 1,
		(unsigned long long)r.journal_last_seq, (unsigned long long)r.journal_start,
		(unsigned long long)r.journal_head,
		(unsigned long long)(r.journal_start / r.journal_size),
		(unsigned long long)(r.journal_head / r.journal_size),
		(unsigned long long)r.journal_dropped);
}

/*
 * The state after a cut: for each thread s, its objects hold exactly its
 * state after some prefix k_s >= acked_s of its transactions (those that
 * failed left out), and the prefixes agree with the submission order: no
 * transaction is visible while one submitted before it (and not failed)
 * is not. Then a deep fsck must be clean.
 */
static int ccheck(const char *dev, const char *meta, const char *cfgs, uint64_t seed,
		  const char *acks, const char *runlog)
{
	static uint64_t gseq[CMAXT][CMAXN + 2];
	static bool failed[CMAXT][CMAXN + 2];
	struct rawstore_fsck_opts fo;
	struct rawstore_fsck_result fr;
	struct cstate *m = malloc(sizeof(*m)), *have = malloc(sizeof(*have));
	uint64_t acked[CMAXT], lo[CMAXT], hi[CMAXT], verified = 0, firstinv = UINT64_MAX;
	int64_t lastvis = -1;
	uint64_t ntx = 0, i, g, x;
	struct rawstore *st;
	struct ccfg c;
	char line[256], why[200];
	const char *p = acks;
	int s, ret, ahead = 0, y;
	FILE *f;

	if (!m || !have)
		kt_fatal("out of memory");
	ccfg_parse(&c, cfgs);
	for (s = 0; s < c.threads; s++) {
		char *e;

		acked[s] = strtoull(p, &e, 10);
		if (e == p || (*e != ',' && *e) || acked[s] > (uint64_t)c.txns)
			kt_fatal("bad acknowledgement list %s", acks);
		p = *e ? e + 1 : e;
		for (i = 0; i <= (uint64_t)c.txns + 1; i++)
			gseq[s][i] = UINT64_MAX;
	}
	f = fopen(runlog, "r");
	if (!f)
		kt_fatal("%s: %s", runlog, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "SUB %llu %d %llu", (unsigned long long *)&g, &y,
			   (unsigned long long *)&x) == 3 && y >= 0 && y < c.threads &&
		    x >= 1 && x <= (uint64_t)c.txns)
			gseq[y][x] = g;
		else if (sscanf(line, "FAILED %d %llu", &y, (unsigned long long *)&x) == 2 &&
			 y >= 0 && y < c.threads && x >= 1 && x <= (uint64_t)c.txns)
			failed[y][x] = true;
	}
	fclose(f);

	ret = rawstore_open(dev, meta, NULL, &st);
	kt_expect_eq(ret, 0, "open after the cut (%s)", ret ? rawstore_errmsg() : "ok");
	if (ret)
		return kt_done();
	note_replay(st);
	for (s = 0; s < c.threads; s++) {
		bool found = false;

		if (csnap(st, s, have, why, sizeof(why), &verified)) {
			kt_check(false, "thread %d: %s", s, why);
			continue;
		}
		memset(m, 0, sizeof(*m));
		for (i = 0; i <= (uint64_t)c.txns; i++) {
			if (i && !failed[s][i])
				cgen(seed, s, i, m, NULL);
			if (i < acked[s] || !csame(m, have))
				continue;
			if (!found)
				lo[s] = i;
			hi[s] = i;
			found = true;
		}
		kt_check(found, "thread %d: its objects hold its state after transaction "
			 "%llu or a later one", s, (unsigned long long)acked[s]);
		if (!found)
			continue;
		for (i = 1; i <= acked[s]; i++)
			ntx += !failed[s][i];
		ahead += lo[s] > acked[s];
		for (i = lo[s]; i >= 1; i--)
			if (!failed[s][i]) {
				if ((int64_t)gseq[s][i] > lastvis)
					lastvis = (int64_t)gseq[s][i];
				break;
			}
		for (i = hi[s] + 1; i <= (uint64_t)c.txns; i++)
			if (!failed[s][i]) {
				if (gseq[s][i] < firstinv)
					firstinv = gseq[s][i];
				break;
			}
		kt_note("thread %d: acknowledged %llu, state after %llu..%llu", s,
			(unsigned long long)acked[s], (unsigned long long)lo[s],
			(unsigned long long)hi[s]);
	}
	kt_check(lastvis < 0 || (uint64_t)lastvis < firstinv,
		 "visible transactions are a prefix of the submission order "
		 "(last visible %lld, first missing %llu)",
		 (long long)lastvis, (unsigned long long)firstinv);
	if (ahead)
		kt_note("%d threads durable past their last ack mark", ahead);
	kt_note("verified %llu bytes, %llu acknowledged transactions (distinct)",
		(unsigned long long)verified, (unsigned long long)ntx);
	rawstore_fsck_opts_init(&fo);
	fo.deep = 1;
	fr.struct_size = sizeof(fr);
	ret = rawstore_fsck(st, &fo, &fr);
	kt_expect_eq(ret, 0, "deep fsck runs");
	kt_check(fr.errors == 0 && fr.leaks == 0, "deep fsck clean (%llu errors, %llu leaks)",
		 (unsigned long long)fr.errors, (unsigned long long)fr.leaks);
	kt_expect_eq(rawstore_close(st), 0, "close");
	free(m);
	free(have);
	return kt_done();
}

/* The recovery alone, logged: marks around the open, then a clean close. */
static int copen(const char *dev, const char *meta, const char *lw)
{
	struct rawstore *st;
	int ret;

	if (dm_message(lw, "rstart"))
		kt_fatal("mark rstart on %s failed", lw);
	ret = rawstore_open(dev, meta, NULL, &st);
	if (ret)
		kt_fatal("open: %s", rawstore_errmsg());
	note_replay(st);
	if (dm_message(lw, "rdone"))
		kt_fatal("mark rdone on %s failed", lw);
	ret = rawstore_close(st);
	if (ret)
		kt_fatal("close: %d", ret);
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 7 || argc == 8) && !strcmp(argv[1], "run"))
		return run(argv[2], argv[3], strtoull(argv[4], NULL, 0),
			   strtoull(argv[5], NULL, 0), argv[6],
			   argc == 8 ? strtoull(argv[7], NULL, 0) : 0);
	if (argc == 7 && !strcmp(argv[1], "more"))
		return more(argv[2], argv[3], strtoull(argv[4], NULL, 0),
			    strtoull(argv[5], NULL, 0), strtoull(argv[6], NULL, 0));
	if (argc == 8 && !strcmp(argv[1], "cont"))
		return cont(argv[2], argv[3], strtoull(argv[4], NULL, 0),
			    strtoull(argv[5], NULL, 0), strtoull(argv[6], NULL, 0), argv[7]);
	if (argc == 6 && !strcmp(argv[1], "check"))
		return check(argv[2], argv[3], strtoull(argv[4], NULL, 0),
			     strtoull(argv[5], NULL, 0));
	if (argc == 7 && !strcmp(argv[1], "crun"))
		return crun(argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 0), argv[6]);
	if (argc == 8 && !strcmp(argv[1], "ccheck"))
		return ccheck(argv[2], argv[3], argv[4], strtoull(argv[5], NULL, 0), argv[6],
			      argv[7]);
	if (argc == 5 && !strcmp(argv[1], "copen"))
		return copen(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: t_powercut run DEV META N SEED LWNAMES [JSIZE] | "
		"more DEV META FROM SEED K | cont DEV META ACKED SEED K LWNAMES | "
		"check DEV META ACKED SEED | crun DEV META CONFIG SEED LWNAME | "
		"ccheck DEV META CONFIG SEED ACKS RUNLOG | copen DEV META LWNAME\n");
	return 2;
}
