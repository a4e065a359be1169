// SPDX-License-Identifier: MIT
/*
 * t_powercut: the workload and the checker of v_powercut.sh (power cuts
 * replayed from a dm-log-writes log).
 *
 *   t_powercut run DEV META N SEED LWNAME
 *       mkfs a store on DEV with metadata in META (on the ext4 that shares
 *       the logged device), then submit N transactions generated from SEED
 *       (writes large and small, deferred in-place overwrites, removes,
 *       clones, truncates, omap), with a reclaim every 8. After each
 *       acknowledged transaction i it inserts the mark "ack-i" into the log
 *       of the dm-log-writes device LWNAME ("-": none) and prints "ACK i".
 *       "ack-0" follows mkfs and the collection.
 *   t_powercut check DEV META ACKED SEED
 *       open the store as a crash left it and check that it holds exactly
 *       the state after transaction ACKED or after ACKED + 1 (the one that
 *       may have been durable before its acknowledgement was marked): every
 *       object's existence, size, bytes and omap; then a deep fsck must be
 *       clean. Nothing half-applied, nothing acknowledged lost.
 *
 * The transactions depend only on SEED, so check regenerates the model.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static uint64_t rng;

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
	snprintf(n, 16, "obj%d", i);
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
		char n[16];

		name_of(i, n);
		if (!o->exists)
			op = 0;			/* create it first */
		if (op < 35) {			/* large write: new units */
			uint64_t len = 4096 + rnd(192 * 1024);
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
		} else if (op < 80) {		/* clone over another object */
			int d = (int)rnd(NOBJ);
			char dn[16];

			if (d == i)
				continue;
			name_of(d, dn);
			if (t)
				rawstore_txn_clone(t, COLL, n, strlen(n), dn, strlen(dn));
			memcpy(m->o[d].data, o->data, MAXLEN);
			memcpy(&m->o[d], o, offsetof(struct obj, data));
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

static int mark(const char *lw, uint64_t i)
{
	char cmd[160];

	if (!strcmp(lw, "-"))		/* no log: a plain run */
		return 0;
	snprintf(cmd, sizeof(cmd), "/usr/sbin/dmsetup message %s 0 mark ack-%llu", lw,
		 (unsigned long long)i);
	return system(cmd);
}

static int run(const char *dev, const char *meta, uint64_t n, uint64_t seed, const char *lw)
{
	struct rawstore_mkfs_opts mo;
	struct rawstore_info info;
	struct rawstore_perf pf;
	struct rawstore *st;
	struct rawstore_txn *t;
	struct model m;
	uint64_t i;
	int ret;

	rawstore_mkfs_opts_init(&mo);
	mo.force = 1;
	ret = rawstore_mkfs(dev, meta, &mo);
	if (ret)
		kt_fatal("mkfs: %s", rawstore_errmsg());
	ret = rawstore_open(dev, meta, NULL, &st);
	if (ret)
		kt_fatal("open: %s", rawstore_errmsg());
	rawstore_txn_new(&t);
	rawstore_txn_coll_create(t, COLL);
	ret = rawstore_submit(st, t);
	if (ret || mark(lw, 0))
		kt_fatal("collection: %d %s", ret, rawstore_errmsg());
	printf("ACK 0\n");
	model_init(&m);
	rng = seed | 1;
	for (i = 1; i <= n; i++) {
		rawstore_txn_reset(t);
		gen_txn(&m, t, i);
		ret = rawstore_submit(st, t);
		if (ret)
			kt_fatal("transaction %llu: %s (op %d)", (unsigned long long)i,
				 rawstore_errmsg(), rawstore_txn_failed_op(t));
		if (mark(lw, i))
			kt_fatal("dmsetup message %s mark failed", lw);
		printf("ACK %llu\n", (unsigned long long)i);
		fflush(stdout);
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
		char n[16];
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

static int check(const char *dev, const char *meta, uint64_t acked, uint64_t seed)
{
	struct rawstore_fsck_opts fo;
	struct rawstore_fsck_result fr;
	struct model a, b;
	struct rawstore *st;
	uint8_t *buf = malloc(MAXLEN);
	char why_a[200] = "", why_b[200] = "";
	uint64_t i, verified = 0;
	int ret, ma, mb;

	model_init(&a);
	model_init(&b);
	rng = seed | 1;
	for (i = 1; i <= acked; i++)
		gen_txn(&a, NULL, i);
	model_copy(&b, &a);
	gen_txn(&b, NULL, acked + 1);

	ret = rawstore_open(dev, meta, NULL, &st);
	kt_expect_eq(ret, 0, "open after the cut (%s)", ret ? rawstore_errmsg() : "ok");
	if (ret)
		return kt_done();
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

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "run"))
		return run(argv[2], argv[3], strtoull(argv[4], NULL, 0),
			   strtoull(argv[5], NULL, 0), argv[6]);
	if (argc == 6 && !strcmp(argv[1], "check"))
		return check(argv[2], argv[3], strtoull(argv[4], NULL, 0),
			     strtoull(argv[5], NULL, 0));
	fprintf(stderr, "usage: t_powercut run DEV META N SEED LWNAME | "
		"check DEV META ACKED SEED\n");
	return 2;
}
