// SPDX-License-Identifier: MIT
/*
 * space.c: the free list and what it holds (zeroed / dirty), its records,
 * the free-list rebuild, allocation for transactions, the write plan of
 * partial units, the background worker (zero ahead, punch freed space),
 * reclaim and prepare, provisioning of thin devices, mkfs preallocation.
 * See space.h for the sets and their records.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "debug.h"
#include "decode.h"
#include "deferred.h"
#include "internal.h"
#include "space.h"
#include "util.h"

#define ROUND_MAX (64ULL << 20)		/* bytes zeroed or punched per round */
#define TICK_MS 200			/* the worker looks for work this often */
#define PROBE_LEN (1U << 20)		/* bytes zero-ranged by the probe at open */

enum round_kind { ROUND_ZERO, ROUND_PUNCH };
enum round_state { R_IDLE, R_PICKED, R_IO_DONE };

/* Ranges taken out of the free list to be zeroed or punched. */
struct space_round {
	enum round_kind kind;
	enum round_state state;
	bool took_out;			/* out of the free list ("W"), else in place */
	struct pext_vec r;
	int *res;			/* per range: 0 zeroed, 1 discarded, or -errno */
	uint64_t done;			/* bytes that succeeded */
	int err;			/* first error */
};

/*
 * While a commit group is applied, the free and unpunched lists change with
 * every allocation, each change a delete and a put of the extent it moved.
 * They are staged here instead of going into the group's batch one by one,
 * and only the last change of each record goes in, at commit: a group of
 * N creates carved from one free extent writes one record, not 2N.
 */
struct stage_ent {
	uint64_t off, len;
	uint32_t seq;
	char type;		/* 'F' or 'P' */
	bool del;
	bool existed;		/* the record existed before this change */
};

struct stage {
	struct stage_ent *v;
	uint32_t n, cap;
	bool on;
	bool lost;		/* a change could not be staged (no memory) */
};

struct rs_space {
	struct rs_job_runner jobs;	/* the commit thread (space_start) */
	struct extset zeroed, ready, pending, dirty, inflight, provisioned;
	struct extset_observer zobs, wobs;
	bool prov_dirty;		/* provisioned changed since its records (prov_sync) */
	uint64_t held;			/* bytes freed by batches not yet durable */
	rocksdb_writebatch_wi_t *zwb;	/* where "Z" records go (NULL: st->wb) */
	struct stage stage;		/* "F"/"P" changes of the group being applied */

	struct rs_disk_space_policy rec;	/* as recorded */
	int zero_mode;			/* RAWSTORE_ZERO_PREPARE or _PAD, in effect */
	int punch_mode;			/* RAWSTORE_PUNCH_*, in effect */
	bool offload;			/* zero-range writes no data */
	uint64_t probe_ns;
	bool provisioning;
	bool zero_refused, punch_refused;	/* the device said EOPNOTSUPP */
	bool discard_only;		/* thin device without punch: discard */
	bool wz_refused;		/* FALLOC_FL_WRITE_ZEROES refused: zero-range */
	uint64_t target, ready_target, prepare_rate, punch_rate;

	pthread_mutex_t lock;		/* round state, stop, kick */
	pthread_cond_t cond;
	pthread_mutex_t round_lock;	/* one taken-out round at a time */
	struct space_round round;
	pthread_t thread;
	bool running, stop, kick;

	struct {
		uint64_t zeroed, dirty, in_flight, provisioned;
	} snap;
};

/* ---- records ---- */

static void obs_put(rocksdb_writebatch_wi_t *wb, char type, uint64_t off, uint64_t len)
{
	struct rs_key k;
	char v[8];

	key_ext(&k, type, off);
	put_le64(v, len);
	rocksdb_writebatch_wi_put(wb, k.buf, k.len, v, 8);
}

static void obs_del(rocksdb_writebatch_wi_t *wb, char type, uint64_t off)
{
	struct rs_key k;

	key_ext(&k, type, off);
	rocksdb_writebatch_wi_delete(wb, k.buf, k.len);
}

static int stage_cmp(const void *a, const void *b)
{
	const struct stage_ent *x = a, *y = b;

	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Into st->wb: the last staged change of each record, in order; a record
 * that did not exist before its first change and is deleted by its last
 * (an extent carved away within the group) needs nothing.
 */
static void stage_write(struct rawstore *st)
{
	struct stage *sg = &st->space->stage;
	uint32_t i, first = 0;

	if (!sg->n)
		return;
	qsort(sg->v, sg->n, sizeof(*sg->v), stage_cmp);
	for (i = 0; i < sg->n; i++) {
		const struct stage_ent *e = &sg->v[i];

		if (i && (sg->v[i - 1].type != e->type || sg->v[i - 1].off != e->off))
			first = i;
		if (i + 1 < sg->n && sg->v[i + 1].type == e->type && sg->v[i + 1].off == e->off)
			continue;
		if (!e->del)
			obs_put(st->wb, e->type, e->off, e->len);
		else if (sg->v[first].existed)
			obs_del(st->wb, e->type, e->off);
	}
	sg->n = 0;
}

/* A change of an "F" or "P" record: staged while a group is applied, else
 * straight into st->wb. */
static void rec_change(struct rawstore *st, char type, uint64_t off, uint64_t len, bool del,
		       bool existed)
{
	struct stage *sg = &st->space->stage;

	if (!sg->on) {
		if (del)
			obs_del(st->wb, type, off);
		else
			obs_put(st->wb, type, off, len);
		return;
	}
	if (sg->n == sg->cap) {
		uint32_t cap = sg->cap ? sg->cap * 2 : 256;
		struct stage_ent *v = rs_fail_check(RS_FAIL_STAGE) ? NULL :
				      realloc(sg->v, cap * sizeof(*v));

		if (!v) {
			/*
			 * The change cannot be recorded, and writing it into
			 * the batch now could be undone by a transaction's
			 * rollback: the group must not commit.  The store
			 * stops (space_stage_end fails); a reopen reloads the
			 * lists from their records.
			 */
			if (!sg->lost)
				rs_err(st, -ENOMEM, "no memory to stage a free-list change of the "
				       "commit group");
			sg->lost = true;
			return;
		}
		sg->v = v;
		sg->cap = cap;
	}
	sg->v[sg->n] = (struct stage_ent){ off, len, sg->n, type, del, existed };
	sg->n++;
}

static void free_put(void *a, uint64_t off, uint64_t len)
{
	rec_change(a, 'F', off, len, false, false);
}

static void free_resize(void *a, uint64_t off, uint64_t len)
{
	rec_change(a, 'F', off, len, false, true);
}

static void free_del(void *a, uint64_t off)
{
	rec_change(a, 'F', off, 0, true, true);
}

static void unp_put(void *a, uint64_t off, uint64_t len)
{
	rec_change(a, 'P', off, len, false, false);
}

static void unp_resize(void *a, uint64_t off, uint64_t len)
{
	rec_change(a, 'P', off, len, false, true);
}

static void unp_del(void *a, uint64_t off)
{
	rec_change(a, 'P', off, 0, true, true);
}

void space_stage_begin(struct rawstore *st)
{
	if (!st->space)
		return;
	st->space->stage.n = 0;
	st->space->stage.on = true;
	st->space->stage.lost = false;
}

int space_stage_end(struct rawstore *st, bool write)
{
	struct stage *sg;
	int ret = 0;

	if (!st->space)
		return 0;
	sg = &st->space->stage;
	if (write && sg->lost)
		ret = rs_err(st, -ENOMEM, "no memory to stage a free-list change of the commit "
			     "group; group not committed");
	else if (write)
		stage_write(st);
	sg->n = 0;
	sg->on = false;
	sg->lost = false;
	return ret;
}

static rocksdb_writebatch_wi_t *zwb(struct rawstore *st)
{
	return st->space->zwb ? st->space->zwb : st->wb;
}

static void zero_put(void *a, uint64_t off, uint64_t len)
{
	obs_put(zwb(a), 'Z', off, len);
}

static void zero_del(void *a, uint64_t off)
{
	obs_del(zwb(a), 'Z', off);
}

static void infl_put(void *a, uint64_t off, uint64_t len)
{
	obs_put(((struct rawstore *)a)->wb, 'W', off, len);
}

static void infl_del(void *a, uint64_t off)
{
	obs_del(((struct rawstore *)a)->wb, 'W', off);
}

/* Delete every key with prefix @type into @wb. */
static int delete_all(struct rawstore *st, rocksdb_writebatch_wi_t *wb, char type)
{
	struct rs_iter *it;
	int ret;

	ret = meta_iter_new(st->meta, NULL, &type, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it); meta_iter_next(it)) {
		size_t kl;
		const char *k = meta_iter_full_key(it, &kl);

		rocksdb_writebatch_wi_delete(wb, k, kl);
	}
	ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}

/*
 * The provisioned set has no observer: a range stays provisioned on the
 * device even when the transaction that provisioned it fails and its batch
 * is rolled back, so record-by-record updates would drift from the set
 * (and overlap after a later merge or split).  Instead the "V" records are
 * rewritten from the set, as a whole, into the batch of the next commit
 * after it changed.  Under-reporting is safe (a range is provisioned
 * again); claiming a punched range is not, and cannot happen this way.
 */
static void prov_changed(struct rs_space *sp)
{
	sp->prov_dirty = true;
}

static int prov_sync(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	struct pext p;
	uint64_t pos;
	int ret;

	if (!sp->prov_dirty)
		return 0;
	ret = delete_all(st, st->wb, 'V');
	if (ret)
		return ret;
	for (pos = 0; extset_next(&sp->provisioned, pos, &p); pos = p.off + p.len)
		obs_put(st->wb, 'V', p.off, p.len);
	sp->prov_dirty = false;
	return 0;
}

static const char *set_name(char type)
{
	switch (type) {
	case 'F':
		return "free";
	case 'P':
		return "unpunched";
	case 'Z':
		return "zeroed";
	case 'V':
		return "provisioned";
	default:
		return "in-flight";
	}
}

struct load_ctx {
	struct rawstore *st;
	char type;
	struct extset *s;
	uint64_t last_end;
};

static int load_one(void *arg, const struct rs_ext_rec *r, int err)
{
	struct load_ctx *c = arg;
	char why[256];

	if (!err && r->off < c->last_end)
		err = rs_err(NULL, -EUCLEAN, "record [%llu, +%llu) overlaps the one before it",
			     (unsigned long long)r->off, (unsigned long long)r->len);
	if (err) {
		snprintf(why, sizeof(why), "%s", rawstore_errmsg());
		return rs_err(c->st, err, "%s list in metadata is corrupt: %s",
			      set_name(c->type), why);
	}
	c->last_end = r->off + r->len;
	return extset_insert(c->s, r->off, r->len);
}

static int load_extents(struct rawstore *st, char type, struct extset *s)
{
	struct load_ctx c = { st, type, s, 0 };

	return meta_each_ext(st->meta, type, &st->lim, load_one, &c);
}

static int cmp_pext(const void *a, const void *b)
{
	const struct pext *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/*
 * Units used by k > 1 object extents must be clones: each needs an "R"
 * record saying k - 1 extra users.  @used is sorted by offset.  -EUCLEAN,
 * naming the unit, for an overlap that no reference record explains.
 */
static int check_overlaps(struct rawstore *st, const struct pext_vec *used)
{
	uint64_t U = st->min_alloc, u, end = 0, checked = 0;
	size_t i, j;

	for (i = 0; i < used->n; i++) {
		const struct pext *e = &used->v[i];
		uint64_t e_end = e->off + e->len;

		/* the units of e that an earlier extent covers too, each once */
		for (u = max_u64(e->off, checked); u < min_u64(end, e_end); u += U) {
			struct rs_ref_rec ref = { 0, 0 };
			uint64_t users = 0;
			struct rs_key k;
			char *v;
			size_t vl;
			int r;

			for (j = 0; j < used->n && used->v[j].off <= u; j++)
				if (u < used->v[j].off + used->v[j].len)
					users++;
			key_ext(&k, 'R', u);
			r = meta_get(st->meta, NULL, &k, &v, &vl);
			if (r && r != -ENOENT)
				return r;
			if (!r) {
				r = decode_ref_rec(k.buf + 1, 8, v, vl, &st->lim, &ref);
				rocksdb_free(v);
			}
			if (r || ref.extra != users - 1)
				return rs_err(st, -EUCLEAN, "cannot rebuild the free list: unit %llu "
					      "is used by %llu object extents, but %s",
					      (unsigned long long)u, (unsigned long long)users,
					      r == -ENOENT ? "no reference record says it is shared" :
					      "its reference record does not match");
		}
		checked = max_u64(checked, min_u64(end, e_end));
		end = max_u64(end, e_end);
	}
	return 0;
}

/*
 * Keep what awaits punching: the recorded "P" ranges that are free in the
 * rebuilt list.  If a "P" record is corrupt, every free byte awaits
 * punching (punching free space is always safe; forgetting it is not).
 */
static int rebuild_unpunched(struct rawstore *st, rocksdb_writebatch_wi_t *wb,
			     const struct pext_vec *freev)
{
	struct pext_vec pv = { 0 };
	struct rs_iter *it;
	bool all = false;
	size_t i, f = 0;
	char p = 'P';
	int ret;

	ret = meta_iter_new(st->meta, NULL, &p, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it) && !ret && !all; meta_iter_next(it)) {
		size_t kl, vl;
		const char *k = meta_iter_key(it, &kl), *v = meta_iter_val(it, &vl);
		struct rs_ext_rec r;

		if (decode_ext_rec('P', k, kl, v, vl, &st->lim, &r))
			all = true;
		else
			ret = pext_push(&pv, r.off, r.len);
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	if (all)
		rs_log(st, RAWSTORE_LOG_WARNING, "the unpunched list is corrupt (%s): all free "
		       "space will be punched", rawstore_errmsg());
	for (i = 0; !ret && i < (all ? freev->n : pv.n); i++) {
		uint64_t a = all ? freev->v[i].off : pv.v[i].off;
		uint64_t b = a + (all ? freev->v[i].len : pv.v[i].len);

		/* both lists are sorted and not overlapping */
		while (f < freev->n && freev->v[f].off + freev->v[f].len <= a)
			f++;
		for (size_t g = f; !ret && g < freev->n && freev->v[g].off < b; g++) {
			uint64_t s = max_u64(a, freev->v[g].off);
			uint64_t t = min_u64(b, freev->v[g].off + freev->v[g].len);
			struct rs_key k;
			char v[8];

			ret = extset_insert(&st->unpunched, s, t - s);
			if (ret)
				break;
			key_ext(&k, 'P', s);
			put_le64(v, t - s);
			rocksdb_writebatch_wi_put(wb, k.buf, k.len, v, 8);
		}
	}
	pext_vec_free(&pv);
	return ret;
}

/*
 * The free list is the complement of the extents the objects use.  Rebuild
 * it from the onodes (all must decode, and extents may overlap only on
 * units whose reference records say they are shared), keep the pending
 * punches that are still free, and replace the recorded free, unpunched,
 * zeroed and in-flight lists in one synced batch: the rebuilt free space
 * is dirty.
 */
static int rebuild_freelist(struct rawstore *st)
{
	struct pext_vec used = { 0 }, freev = { 0 };
	rocksdb_writebatch_wi_t *wb;
	struct rs_iter *it;
	uint64_t pos = st->data_start;
	char p = 'O';
	size_t i;
	int ret;

	ret = meta_iter_new(st->meta, NULL, &p, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it) && !ret; meta_iter_next(it)) {
		size_t vl;
		const char *v = meta_iter_val(it, &vl);
		struct rs_onode o;
		uint32_t j;

		ret = onode_decode(v, vl, &st->lim, &o);
		if (ret) {
			char why[256];

			snprintf(why, sizeof(why), "%s", rawstore_errmsg());
			ret = rs_err(st, -EUCLEAN, "cannot rebuild the free list: an object "
				     "record is corrupt (%s)", why);
			break;
		}
		for (j = 0; j < o.n_ext && !ret; j++)
			ret = pext_push(&used, o.ext[j].pofs, o.ext[j].len);
		onode_free(&o);
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	if (ret)
		goto out_free;
	if (used.n)
		qsort(used.v, used.n, sizeof(*used.v), cmp_pext);
	ret = check_overlaps(st, &used);
	if (ret)
		goto out_free;
	wb = rocksdb_writebatch_wi_create(0, 1);
	ret = delete_all(st, wb, 'F');
	if (!ret)
		ret = delete_all(st, wb, 'Z');
	if (!ret)
		ret = delete_all(st, wb, 'W');
	for (i = 0; !ret && i <= used.n; i++) {
		uint64_t next = i < used.n ? used.v[i].off : st->data_end;

		if (next > pos) {
			struct rs_key k;
			char v[8];

			key_ext(&k, 'F', pos);
			put_le64(v, next - pos);
			rocksdb_writebatch_wi_put(wb, k.buf, k.len, v, 8);
			ret = extset_insert(&st->freeset, pos, next - pos);
			if (!ret)
				ret = pext_push(&freev, pos, next - pos);
		}
		if (i < used.n)	/* clones share units: extents may overlap */
			pos = max_u64(pos, next + used.v[i].len);
	}
	if (!ret)
		ret = delete_all(st, wb, 'P');
	if (!ret)
		ret = rebuild_unpunched(st, wb, &freev);
	if (!ret)
		rs_crash_check(st, RS_CRASH_REBUILD_FREELIST);	/* test hook (debug.h) */
	if (!ret)
		ret = meta_commit(st->meta, wb);
	if (!ret)
		rs_log(st, RAWSTORE_LOG_WARNING, "rebuilt the free list from %zu object extents: "
		       "%llu bytes free in %llu extents (all dirty), %llu bytes await punching", used.n,
		       (unsigned long long)st->freeset.total,
		       (unsigned long long)st->freeset.count,
		       (unsigned long long)st->unpunched.total);
	rocksdb_writebatch_wi_destroy(wb);
out_free:
	pext_vec_free(&used);
	pext_vec_free(&freev);
	return ret;
}

/* ---- policy ---- */

static const char *const zero_names[] = { "default", "auto", "prepare", "pad" };
static const char *const punch_names[] = { "default", "operator", "background", "inline" };
static const char *const prealloc_names[] = { "default", "none", "unwritten", "write-zeroes",
					      "stale" };

const char *rawstore_zero_policy_name(int p)
{
	return p >= 0 && p <= RAWSTORE_ZERO_PAD ? zero_names[p] : "?";
}

const char *rawstore_punch_policy_name(int p)
{
	return p >= 0 && p <= RAWSTORE_PUNCH_INLINE ? punch_names[p] : "?";
}

const char *rawstore_prealloc_policy_name(int p)
{
	return p >= 0 && p <= RAWSTORE_PREALLOC_STALE ? prealloc_names[p] : "?";
}

static void key_policy(struct rs_key *k)
{
	k->buf[0] = 'Y';
	k->len = 1;
}

static int load_policy(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	struct rs_key k;
	char *v;
	size_t vl;
	int ret;

	sp->rec = (struct rs_disk_space_policy){ htole32(RS_SPACE_POLICY_VERSION),
						 RAWSTORE_ZERO_AUTO, RAWSTORE_PUNCH_OPERATOR,
						 RAWSTORE_PREALLOC_DEFAULT, 0, 0 };
	key_policy(&k);
	ret = meta_get(st->meta, NULL, &k, &v, &vl);
	if (ret == -ENOENT)
		return 0;	/* a store made before space policies */
	if (ret)
		return ret;
	if (vl == sizeof(sp->rec))
		memcpy(&sp->rec, v, vl);
	rocksdb_free(v);
	if (vl != sizeof(sp->rec) || le32toh(sp->rec.version) != RS_SPACE_POLICY_VERSION ||
	    sp->rec.zero < RAWSTORE_ZERO_AUTO || sp->rec.zero > RAWSTORE_ZERO_PAD ||
	    sp->rec.punch < RAWSTORE_PUNCH_OPERATOR || sp->rec.punch > RAWSTORE_PUNCH_INLINE ||
	    sp->rec.prealloc > RAWSTORE_PREALLOC_STALE)
		return rs_err(st, -EUCLEAN, "space policy record is corrupt");
	return 0;
}

/* ---- load, attach, snapshot ---- */

/* Put back what a crash left in flight, and drop "Z" claims that are not
 * sure: outside the free list, awaiting a punch, or under a deferred write
 * that replay will redo. */
static int load_fixup(struct rawstore *st, struct extset *w)
{
	struct rs_space *sp = st->space;
	rocksdb_writebatch_wi_t *wb = rocksdb_writebatch_wi_create(0, 1);
	struct rs_iter *it;
	struct pext p;
	uint64_t pos;
	char d = 'D';
	int ret = 0;

	st->wb = wb;
	space_attach(st);
	for (pos = 0; !ret && extset_next(w, pos, &p); pos = p.off + p.len) {
		obs_del(wb, 'W', p.off);
		if (extset_overlap(&st->freeset, p.off, p.len))
			ret = rs_err(st, -EUCLEAN, "in-flight range [%llu, +%llu) is also free",
				     (unsigned long long)p.off, (unsigned long long)p.len);
		else
			ret = extset_insert(&st->freeset, p.off, p.len);
	}
	for (pos = 0; !ret && extset_next(&sp->zeroed, pos, &p);) {
		if (extset_overlap(&st->freeset, p.off, p.len) != p.len ||
		    extset_overlap(&st->unpunched, p.off, p.len)) {
			rs_log(st, RAWSTORE_LOG_WARNING, "zeroed range [%llu, +%llu) is not free "
			       "or awaits a punch: treated as dirty", (unsigned long long)p.off,
			       (unsigned long long)p.len);
			extset_remove(&sp->zeroed, p.off, p.len);
		}
		pos = p.off + p.len;
	}
	if (!ret)
		ret = meta_iter_new(st->meta, NULL, &d, 1, &it);
	if (!ret) {
		for (; meta_iter_valid(it); meta_iter_next(it)) {
			size_t vl;
			const char *v = meta_iter_val(it, &vl);
			struct rs_disk_deferred h;

			if (vl < sizeof(h))
				continue;	/* replay reports it */
			memcpy(&h, v, sizeof(h));
			extset_remove(&sp->zeroed, le64toh(h.pofs), le32toh(h.len));
		}
		ret = meta_iter_error(it);
		meta_iter_free(it);
	}
	space_detach(st);
	st->wb = NULL;
	/* Read-only: the fixes hold in memory, nothing is written. */
	if (!ret && rocksdb_writebatch_wi_count(wb) && !st->opts.read_only)
		ret = meta_commit(st->meta, wb);
	rocksdb_writebatch_wi_destroy(wb);
	return ret;
}

static int dirty_from_free(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	struct pext p;
	uint64_t pos;
	int ret = 0;

	for (pos = 0; !ret && extset_next(&st->freeset, pos, &p); pos = p.off + p.len)
		ret = extset_insert(&sp->dirty, p.off, p.len);
	for (pos = 0; !ret && extset_next(&sp->zeroed, pos, &p); pos = p.off + p.len)
		extset_remove(&sp->dirty, p.off, p.len);
	return ret;
}

int space_load(struct rawstore *st)
{
	struct rs_space *sp;
	struct extset w;
	int ret;

	extset_init(&st->freeset, true);
	extset_init(&st->unpunched, false);
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	st->space = sp;
	extset_init(&sp->zeroed, true);
	extset_init(&sp->ready, true);
	extset_init(&sp->pending, false);
	extset_init(&sp->dirty, true);
	extset_init(&sp->inflight, false);
	extset_init(&sp->provisioned, false);
	pthread_mutex_init(&sp->lock, NULL);
	pthread_cond_init(&sp->cond, NULL);
	pthread_mutex_init(&sp->round_lock, NULL);
	ret = load_policy(st);
	if (ret)
		return ret;
	if (st->opts.rebuild_freelist) {
		ret = rebuild_freelist(st);
		return ret ? ret : dirty_from_free(st);
	}
	extset_init(&w, false);
	ret = load_extents(st, 'F', &st->freeset);
	if (!ret)
		ret = load_extents(st, 'P', &st->unpunched);
	if (!ret)
		ret = load_extents(st, 'Z', &sp->zeroed);
	if (!ret)
		ret = load_extents(st, 'W', &w);
	if (!ret)
		ret = load_extents(st, 'V', &sp->provisioned);
	if (!ret)
		ret = load_fixup(st, &w);
	extset_destroy(&w);
	if (!ret)
		ret = dirty_from_free(st);
	return ret;
}

void space_attach(struct rawstore *st)
{
	struct rs_space *sp = st->space;

	st->free_obs = (struct extset_observer){ free_put, free_del, st, free_resize };
	st->unpunched_obs = (struct extset_observer){ unp_put, unp_del, st, unp_resize };
	sp->zobs = (struct extset_observer){ zero_put, zero_del, st, NULL };
	sp->wobs = (struct extset_observer){ infl_put, infl_del, st, NULL };
	st->freeset.obs = &st->free_obs;
	st->unpunched.obs = &st->unpunched_obs;
	sp->zeroed.obs = &sp->zobs;
	sp->inflight.obs = &sp->wobs;
}

void space_detach(struct rawstore *st)
{
	st->freeset.obs = NULL;
	st->unpunched.obs = NULL;
	if (st->space) {
		st->space->zeroed.obs = NULL;
		st->space->inflight.obs = NULL;
	}
}

void space_destroy(struct rawstore *st)
{
	struct rs_space *sp = st->space;

	space_detach(st);
	extset_destroy(&st->freeset);
	extset_destroy(&st->unpunched);
	if (!sp)
		return;
	extset_destroy(&sp->zeroed);
	extset_destroy(&sp->ready);
	extset_destroy(&sp->pending);
	extset_destroy(&sp->dirty);
	extset_destroy(&sp->inflight);
	extset_destroy(&sp->provisioned);
	pext_vec_free(&sp->round.r);
	free(sp->round.res);
	free(sp->stage.v);
	pthread_mutex_destroy(&sp->lock);
	pthread_cond_destroy(&sp->cond);
	pthread_mutex_destroy(&sp->round_lock);
	free(sp);
	st->space = NULL;
}

void space_snapshot(struct rawstore *st)
{
	struct rs_space *sp = st->space;

	/* Ranges being zeroed or punched are free (and dirty until done). */
	st->snap.free = st->freeset.total + sp->inflight.total;
	st->snap.free_extents = st->freeset.count;
	st->snap.largest_free = extset_largest(&st->freeset);
	st->snap.unpunched = st->unpunched.total;
	sp->snap.zeroed = sp->zeroed.total + sp->ready.total + sp->pending.total;
	sp->snap.dirty = st->snap.free - min_u64(st->snap.free, sp->snap.zeroed);
	sp->snap.in_flight = sp->inflight.total;
	sp->snap.provisioned = sp->provisioned.total;
}

void space_statfs(struct rawstore *st, struct rawstore_statfs *s)
{
	struct rs_space *sp = st->space;

	s->zeroed = sp->snap.zeroed;
	s->dirty = sp->snap.dirty;
	s->in_flight = sp->snap.in_flight;
	s->provisioned = sp->snap.provisioned;
}

void space_info(struct rawstore *st, struct rawstore_info *i)
{
	struct rs_space *sp = st->space;

	i->zero_policy = rawstore_zero_policy_name(sp->zero_mode);
	i->punch_policy = rawstore_punch_policy_name(sp->punch_mode);
	i->prealloc_policy = dev_geom(st->dev)->is_bdev ? "none" :
			     rawstore_prealloc_policy_name(sp->rec.prealloc ? sp->rec.prealloc :
							   RAWSTORE_PREALLOC_NONE);
	i->zero_offload = sp->offload;
	i->provisioning = sp->provisioning;
	i->zero_probe_ns = sp->probe_ns;
	i->provision_max_bytes = dev_geom(st->dev)->provision_max;
}

/* ---- allocation ---- */

/* Remove [off, off+len) from every set of free space. */
static void unfree(struct rawstore *st, uint64_t off, uint64_t len)
{
	struct rs_space *sp = st->space;

	extset_remove(&st->freeset, off, len);
	extset_remove(&sp->dirty, off, len);
	extset_remove(&sp->ready, off, len);
}

static int take(struct rawstore *st, struct extset *from, bool contig, uint64_t len,
		uint64_t hint, uint64_t want, struct pext **out)
{
	int n, i;

	n = contig ? extset_alloc_contig(from, len, hint, want, out) :
		     extset_alloc(from, len, hint, want, out);

	for (i = 0; i < n; i++)
		unfree(st, (*out)[i].off, (*out)[i].len);
	return n;
}

/*
 * Make @len bytes (at least) of zeroed space writable: delete their "Z"
 * records in a synced batch of their own, so that a crash after data went
 * there cannot leave them recorded as zeroed.  On the commit thread, while
 * a group is applied (st->wb holds no "Z" record then).
 */
static int claim(struct rawstore *st, uint64_t len)
{
	struct rs_space *sp = st->space;
	uint64_t want = min_u64(max_u64(len, sp->ready_target), sp->zeroed.total);
	rocksdb_writebatch_wi_t *wb;
	struct pext *v;
	int n, i, ret;

	if (sp->zeroed.total < len || !want)
		return -ENOSPC;
	wb = rocksdb_writebatch_wi_create(0, 1);
	sp->zwb = wb;
	n = rs_fail_check(RS_FAIL_CLAIM_TAKE) ? -ENOMEM :
	    extset_alloc(&sp->zeroed, want, 0, 0, &v);
	sp->zwb = NULL;
	if (n < 0) {
		rocksdb_writebatch_wi_destroy(wb);
		return rs_err(st, n, "claiming %llu bytes of zeroed space failed: %s",
			      (unsigned long long)want, strerror(-n));
	}
	ret = rs_fail_check(RS_FAIL_CLAIM_COMMIT) ? -EIO : meta_commit(st->meta, wb);
	rocksdb_writebatch_wi_destroy(wb);
	PERF_ADD(st, db_syncs, 1);
	if (ret) {
		/* The ranges are out of the zeroed set, their records maybe
		 * not: memory and disk may disagree now. */
		rs_err(st, ret, "claiming zeroed space: metadata commit failed (%s); store "
		       "stopped", strerror(-ret));
		rs_store_stop(st, ret);
		free(v);
		return ret;
	}
	rs_crash_check(st, RS_CRASH_SPACE_CLAIM);
	for (i = 0; i < n; i++)
		extset_insert(&sp->ready, v[i].off, v[i].len);
	free(v);
	PERF_ADD(st, zero_claims, 1);
	return 0;
}

/* Provision the parts of @v not yet provisioned (thin devices, files). */
static int provision(struct rawstore *st, const struct pext *v, int n)
{
	struct rs_space *sp = st->space;
	int i, ret;

	for (i = 0; i < n && sp->provisioning; i++) {
		if (extset_overlap(&sp->provisioned, v[i].off, v[i].len) == v[i].len)
			continue;
		ret = dev_provision(st->dev, v[i].off, v[i].len);
		if (ret == -EOPNOTSUPP) {
			rs_log(st, RAWSTORE_LOG_WARNING, "the device refuses to provision; "
			       "allocations are no longer provisioned");
			sp->provisioning = false;
			break;
		}
		if (ret == -ENOSPC || ret == -EDQUOT) {
			PERF_ADD(st, provision_enospc, 1);
			return rs_err(st, -ENOSPC, "the device has no space to provision "
				      "[%llu, +%llu); nothing was written",
				      (unsigned long long)v[i].off, (unsigned long long)v[i].len);
		}
		if (ret)
			return rs_err(st, ret, "provisioning [%llu, +%llu) failed",
				      (unsigned long long)v[i].off, (unsigned long long)v[i].len);
		PERF_ADD(st, provisioned_bytes,
			 v[i].len - extset_overlap(&sp->provisioned, v[i].off, v[i].len));
		extset_remove(&sp->provisioned, v[i].off, v[i].len);
		extset_insert(&sp->provisioned, v[i].off, v[i].len);
		prov_changed(sp);
	}
	return 0;
}

/* Put pieces that were never written back where they came from. */
static void give_back(struct rawstore *st, const struct pext *v, int n, bool zeroed)
{
	const struct extset_observer *obs = st->freeset.obs;
	int i;

	st->freeset.obs = NULL;	/* their "F" deletions are still in st->wb */
	for (i = 0; i < n; i++) {
		extset_insert(&st->freeset, v[i].off, v[i].len);
		extset_insert(zeroed ? &st->space->ready : &st->space->dirty, v[i].off, v[i].len);
	}
	st->freeset.obs = obs;
	/* The records: re-put what the allocation deleted. */
	for (i = 0; i < n; i++) {
		extset_remove(&st->freeset, v[i].off, v[i].len);
		extset_insert(&st->freeset, v[i].off, v[i].len);
	}
}

static int alloc_once(struct rawstore *st, uint64_t len, uint64_t hint, uint64_t want,
		      bool partial, struct pext **out, bool *zeroed)
{
	struct rs_space *sp = st->space;
	struct pext p;
	uint64_t pos;
	int n = -ENOSPC, ret;

	*zeroed = false;
	/* Continue the previous extent where it is free and usable. */
	if (hint && extset_overlap(&sp->ready, hint, len) == len) {
		n = take(st, &sp->ready, true, len, hint, 0, out);
		*zeroed = n >= 0;
	} else if (hint && !partial && extset_overlap(&sp->dirty, hint, len) == len) {
		n = take(st, &sp->dirty, true, len, hint, 0, out);
	}
	if (n == -ENOSPC && partial) {
		n = take(st, &sp->ready, true, len, hint, want, out);
		if (n == -ENOSPC && claim(st, len) == 0)
			n = take(st, &sp->ready, true, len, hint, want, out);
		*zeroed = n >= 0;
	}
	if (n == -ENOSPC)
		n = take(st, &sp->dirty, true, len, hint, want, out);
	if (n == -ENOSPC) {
		n = take(st, &sp->ready, true, len, hint, want, out);
		if (n == -ENOSPC && claim(st, len) == 0)
			n = take(st, &sp->ready, true, len, hint, want, out);
		*zeroed = n >= 0;
	}
	/* No single extent: pieces, dirty first. */
	if (n == -ENOSPC && !partial)
		n = take(st, &sp->dirty, false, len, hint, want, out);
	if (n == -ENOSPC) {
		n = take(st, &sp->ready, false, len, hint, want, out);
		*zeroed = n >= 0;
	}
	if (n == -ENOSPC && sp->ready.total + sp->dirty.total + sp->zeroed.total >= len) {
		/* Nearly full: neither kind alone holds @len; use both as dirty. */
		if (sp->zeroed.total)
			claim(st, sp->zeroed.total);
		for (pos = 0; extset_next(&sp->ready, pos, &p); pos = p.off + p.len)
			extset_insert(&sp->dirty, p.off, p.len);
		extset_destroy(&sp->ready);
		n = take(st, &sp->dirty, false, len, hint, want, out);
		*zeroed = false;
	}
	if (n <= 0)
		return n;
	if (*zeroed)
		PERF_ADD(st, zeroed_alloc_bytes, len);
	ret = provision(st, *out, n);
	if (ret) {
		give_back(st, *out, n, *zeroed);
		free(*out);
		*out = NULL;
		return ret;
	}
	return n;
}

int space_alloc(struct rawstore *st, uint64_t len, uint64_t hint, uint64_t want, bool partial,
		struct pext **out, bool *zeroed)
{
	struct rs_space *sp = st->space;
	int n = alloc_once(st, len, hint, want, partial, out, zeroed);

	/* Space freed by batches still being synced: wait for them, retry. */
	if (n == -ENOSPC && sp->held && sp->jobs.drain && sp->jobs.drain(st))
		n = alloc_once(st, len, hint, want, partial, out, zeroed);
	return n;
}

unsigned int space_plan_writes(struct rawstore *st, const struct pext *pieces, int n,
			       bool zeroed, uint64_t a0, uint64_t wa, uint64_t wb, uint8_t *buf,
			       struct rs_io *ios)
{
	uint64_t cur = 0, pad = 0;
	unsigned int k = 0;
	int i;

	for (i = 0; i < n; cur += pieces[i].len, i++) {
		uint64_t ls = a0 + cur, le = ls + pieces[i].len;
		uint64_t s = max_u64(ls, wa), e = min_u64(le, wb);

		if (!zeroed) {
			ios[k++] = (struct rs_io){ true, buf + cur, pieces[i].off, pieces[i].len };
			pad += pieces[i].len - (s < e ? e - s : 0);
		} else if (s < e) {
			ios[k++] = (struct rs_io){ true, buf + (s - a0), pieces[i].off + (s - ls),
						   e - s };
		}
	}
	if (pad)
		PERF_ADD(st, pad_bytes, pad);
	return k;
}

void space_unalloc(struct rawstore *st, const struct pext *v, size_t n)
{
	const struct extset_observer *obs = st->freeset.obs;
	size_t i;

	/* Written, maybe: dirty.  Its allocation's "F" changes are staged
	 * (space_stage_begin): so is their undoing.  Else they are still in
	 * st->wb, to be rolled back or cleared: put back without a record. */
	if (!st->space->stage.on)
		st->freeset.obs = NULL;
	for (i = 0; i < n; i++) {
		if (!v[i].len)
			continue;
		extset_insert(&st->freeset, v[i].off, v[i].len);
		extset_insert(&st->space->dirty, v[i].off, v[i].len);
	}
	st->freeset.obs = obs;
}

int space_commit(struct rawstore *st, const struct pext_vec *allocs,
		 const struct pext_vec *frees, struct space_hold *h)
{
	struct rs_space *sp = st->space;
	uint64_t have, amount;
	struct pext *v;
	size_t i;
	int n, ret;

	ret = prov_sync(st);
	if (ret)
		return ret;
	for (i = 0; i < allocs->n; i++)
		extset_remove(&st->unpunched, allocs->v[i].off, allocs->v[i].len);
	for (i = 0; i < frees->n; i++) {
		ret = extset_insert(&st->freeset, frees->v[i].off, frees->v[i].len);
		if (!ret)
			ret = extset_insert(&st->unpunched, frees->v[i].off, frees->v[i].len);
		/* Not dirty (allocatable, punchable) before the batch is durable. */
		if (!ret) {
			ret = pext_push(&h->frees, frees->v[i].off, frees->v[i].len);
			if (!ret)
				sp->held += frees->v[i].len;
		}
		if (ret)
			return rs_err(st, -EUCLEAN, "freeing [%llu, +%llu) twice: %s",
				      (unsigned long long)frees->v[i].off,
				      (unsigned long long)frees->v[i].len, strerror(-ret));
	}
	/* Ready some zeroed space for the next groups: its "Z" records go
	 * with this batch, so it is writable once the batch committed. */
	have = sp->ready.total + sp->pending.total;
	if (have < sp->ready_target && sp->zeroed.total) {
		amount = min_u64(sp->ready_target - have, sp->zeroed.total);
		n = extset_alloc(&sp->zeroed, amount, 0, 0, &v);
		for (i = 0; n > 0 && i < (size_t)n; i++) {
			extset_insert(&sp->pending, v[i].off, v[i].len);
			/* On failure it stays pending: never written, and
			 * recorded as zeroed again at close. */
			pext_push(&h->ready, v[i].off, v[i].len);
		}
		if (n > 0)
			free(v);
	}
	return 0;
}

void space_release(struct rawstore *st, struct space_hold *h)
{
	struct rs_space *sp = st->space;
	size_t i;

	for (i = 0; i < h->frees.n; i++)
		extset_insert(&sp->dirty, h->frees.v[i].off, h->frees.v[i].len);
	for (i = 0; i < h->ready.n; i++) {
		extset_remove(&sp->pending, h->ready.v[i].off, h->ready.v[i].len);
		extset_insert(&sp->ready, h->ready.v[i].off, h->ready.v[i].len);
	}
	space_hold_free(st, h);
}

void space_hold_free(struct rawstore *st, struct space_hold *h)
{
	struct rs_space *sp = st->space;
	size_t i;

	/* Released or not, they are held no longer. */
	for (i = 0; i < h->frees.n; i++)
		sp->held -= h->frees.v[i].len;
	pext_vec_free(&h->frees);
	pext_vec_free(&h->ready);
}

uint64_t rs_debug_space_held(struct rawstore *st)
{
	return st->space->held;
}

/* ---- rounds: zero or punch free ranges ---- */

static void round_reset(struct space_round *r)
{
	r->r.n = 0;
	r->done = 0;
	r->err = 0;
}

static int round_push(struct rawstore *st, struct space_round *r, uint64_t off, uint64_t len,
		      uint64_t *left)
{
	uint64_t U = st->min_alloc, u, run = off;
	int ret = 0;

	len = min_u64(len, *left);
	*left -= len;
	if (!deferred_busy(st, off, len))
		return pext_push(&r->r, off, len);
	/* Never a unit a pending deferred write targets: replay would write it. */
	for (u = off; u < off + len && !ret; u += U) {
		if (!deferred_busy(st, u, U))
			continue;
		if (u > run)
			ret = pext_push(&r->r, run, u - run);
		run = u + U;
	}
	if (!ret && off + len > run)
		ret = pext_push(&r->r, run, off + len - run);
	return ret;
}

/* Candidates: for punch, unpunched ranges that are dirty free space; for
 * zero, dirty free space that awaits no punch. */
static int round_collect(struct rawstore *st, struct space_round *r, uint64_t max)
{
	struct rs_space *sp = st->space;
	struct extset *base = r->kind == ROUND_PUNCH ? &st->unpunched : &sp->dirty;
	uint64_t left = max, pos = 0;
	struct pext b, d;
	int ret = 0;

	while (!ret && left && extset_next(base, pos, &b)) {
		uint64_t p = b.off, end = b.off + b.len;

		while (!ret && left && p < end) {
			if (r->kind == ROUND_PUNCH) {
				if (!extset_find(&sp->dirty, p, &d) || d.off >= end)
					break;
				p = max_u64(p, d.off);
				ret = round_push(st, r, p, min_u64(end, d.off + d.len) - p, &left);
				p = min_u64(end, d.off + d.len);
			} else {
				if (extset_find(&st->unpunched, p, &d) && d.off <= p) {
					p = d.off + d.len;
					continue;
				}
				if (extset_find(&st->unpunched, p, &d) && d.off < end) {
					ret = round_push(st, r, p, d.off - p, &left);
					p = d.off + d.len;
				} else {
					ret = round_push(st, r, p, end - p, &left);
					p = end;
				}
			}
		}
		pos = end;
	}
	return ret;
}

/* Commit thread: choose the ranges; with @take_out, move them out of the
 * free list into the in-flight set and commit that. */
static int round_pick(struct rawstore *st, struct space_round *r, uint64_t max, bool take_out)
{
	struct rs_space *sp = st->space;
	size_t i;
	int ret;

	round_reset(r);
	r->took_out = take_out;
	ret = round_collect(st, r, max);
	if (!ret && r->r.n) {
		int *res = realloc(r->res, r->r.n * sizeof(*res));

		if (!res)
			ret = -ENOMEM;
		else
			r->res = res;
	}
	if (ret || !r->r.n || !take_out)
		return ret;
	rocksdb_writebatch_wi_clear(st->wb);
	for (i = 0; i < r->r.n; i++) {
		unfree(st, r->r.v[i].off, r->r.v[i].len);
		extset_insert(&sp->inflight, r->r.v[i].off, r->r.v[i].len);
	}
	return st->space->jobs.commit_wb(st);
}

/*
 * Zero free space: on a block device with punch-hole, which is a write-zeroes
 * that never falls back to writing zeros (ZERO_RANGE would: an offload can
 * only be asked for this way on a 6.1 block device); on a file with
 * FALLOC_FL_WRITE_ZEROES where the kernel has it, else ZERO_RANGE (unwritten
 * extents, cheap).
 */
static int zero_verb(struct rawstore *st, uint64_t off, uint64_t len)
{
	struct rs_space *sp = st->space;
	int ret;

	if (dev_geom(st->dev)->is_bdev)
		return dev_punch_hole(st->dev, off, len);
	if (!sp->wz_refused) {
		ret = dev_write_zeroes(st->dev, off, len);
		if (ret != -EOPNOTSUPP && ret != -EINVAL)
			return ret;
		sp->wz_refused = true;
	}
	return dev_zero_range(st->dev, off, len);
}

/* Any thread: zero or punch the ranges, then flush so the zeros are durable
 * before they are recorded. */
static void round_io(struct rawstore *st, struct space_round *r)
{
	struct rs_space *sp = st->space;
	size_t i;
	int ret;

	for (i = 0; i < r->r.n; i++) {
		const struct pext *p = &r->r.v[i];

		if (r->kind == ROUND_PUNCH && sp->discard_only) {
			ret = dev_discard(st->dev, p->off, p->len);
			ret = ret ? ret : 1;
		} else if (r->kind == ROUND_PUNCH) {
			ret = sp->punch_refused ? -EOPNOTSUPP : dev_punch_hole(st->dev, p->off, p->len);
			if (ret == -EOPNOTSUPP && dev_geom(st->dev)->provision_max &&
			    !dev_discard(st->dev, p->off, p->len)) {
				/* A thin device without write-zeroes (dm-thin): the
				 * discard returns the space, zeros not promised. */
				rs_log(st, RAWSTORE_LOG_INFO, "punch-hole refused; freed space "
				       "is discarded instead (returned to the pool, still dirty)");
				sp->discard_only = true;
				ret = 1;
			}
		} else {
			ret = sp->zero_refused ? -EOPNOTSUPP : zero_verb(st, p->off, p->len);
		}
		r->res[i] = ret;
		if (ret == -EOPNOTSUPP && r->kind == ROUND_PUNCH && !sp->punch_refused) {
			sp->punch_refused = true;
			rs_log(st, RAWSTORE_LOG_WARNING, "the device refuses punch-hole "
			       "(EOPNOTSUPP); freed ranges stay tracked as unpunched");
		} else if (ret == -EOPNOTSUPP && !sp->zero_refused && r->kind == ROUND_ZERO) {
			sp->zero_refused = true;
			rs_log(st, RAWSTORE_LOG_WARNING, "the device refuses zero-range "
			       "(EOPNOTSUPP); partial-unit writes pad");
		}
		if (ret < 0 && !r->err)
			r->err = ret;
		if (ret >= 0)
			r->done += p->len;
	}
	if (r->done) {
		ret = dev_flush(st->dev);
		if (ret < 0) {
			/* The device may have dropped its cache, with data
			 * written before (a deferred write whose record a later
			 * flush would delete): stop, as the commit path does. */
			rs_err(st, ret, "device flush after zeroing/punching failed; store stopped");
			rs_store_stop(st, ret);
			for (i = 0; i < r->r.n; i++)
				r->res[i] = ret;
			r->err = ret;
			r->done = 0;
		}
	}
	if (r->kind == ROUND_PUNCH) {
		PERF_ADD(st, bytes_punched, r->done);
	} else {
		PERF_ADD(st, prepared_bytes, r->done);
	}
}

/* Commit thread: record the results; failed ranges return dirty. */
static int round_finish(struct rawstore *st, struct space_round *r)
{
	struct rs_space *sp = st->space;
	size_t i;
	int ret;

	rocksdb_writebatch_wi_clear(st->wb);
	for (i = 0; i < r->r.n; i++) {
		const struct pext *p = &r->r.v[i];

		if (r->took_out) {
			extset_remove(&sp->inflight, p->off, p->len);
			extset_insert(&st->freeset, p->off, p->len);
		}
		if (r->res[i] == 1) {
			/* Discarded: space returned, contents unknown (dirty). */
			if (r->took_out)
				extset_insert(&sp->dirty, p->off, p->len);
			extset_remove(&st->unpunched, p->off, p->len);
			if (extset_overlap(&sp->provisioned, p->off, p->len)) {
				extset_remove(&sp->provisioned, p->off, p->len);
				prov_changed(sp);
			}
			continue;
		}
		if (r->res[i]) {
			if (r->took_out)
				extset_insert(&sp->dirty, p->off, p->len);
			continue;
		}
		extset_remove(&sp->dirty, p->off, p->len);
		extset_insert(&sp->zeroed, p->off, p->len);
		/* Punched (or zeroed by a punch): provision again before use. */
		if (extset_overlap(&sp->provisioned, p->off, p->len)) {
			extset_remove(&sp->provisioned, p->off, p->len);
			prov_changed(sp);
		}
		if (r->kind == ROUND_PUNCH)
			extset_remove(&st->unpunched, p->off, p->len);
	}
	ret = prov_sync(st);
	if (!ret)
		ret = st->space->jobs.commit_wb(st);
	if (!ret)
		rs_crash_check(st, RS_CRASH_SPACE_RECORDED);
	r->r.n = 0;
	return ret;
}

static bool round_kind_ok(struct rawstore *st, enum round_kind kind)
{
	return kind == ROUND_PUNCH ? !st->space->punch_refused : !st->space->zero_refused;
}

/* The inline policy, on the commit thread right after a commit: punch in
 * place (nothing allocates meanwhile), flush, record. */
static void punch_inline(struct rawstore *st)
{
	struct space_round r = { .kind = ROUND_PUNCH };
	int ret;

	if (!st->unpunched.total || st->space->punch_refused)
		return;
	ret = round_pick(st, &r, UINT64_MAX, false);
	if (!ret && r.r.n) {
		round_io(st, &r);
		rs_crash_check(st, RS_CRASH_SPACE_IO_DONE);
		ret = round_finish(st, &r);
		if (!ret)
			PERF_ADD(st, punched_background, r.done);
	}
	pext_vec_free(&r.r);
	free(r.res);
}

bool space_punches_inline(const struct rawstore *st)
{
	return st->space->punch_mode == RAWSTORE_PUNCH_INLINE;
}

void space_after_commit(struct rawstore *st)
{
	struct rs_space *sp = st->space;

	if (sp->punch_mode == RAWSTORE_PUNCH_INLINE) {
		punch_inline(st);
		rocksdb_writebatch_wi_clear(st->wb);
	}
	if ((sp->punch_mode == RAWSTORE_PUNCH_BACKGROUND && st->unpunched.total) ||
	    (sp->zero_mode == RAWSTORE_ZERO_PREPARE &&
	     sp->zeroed.total + sp->ready.total < sp->target / 2)) {
		pthread_mutex_lock(&sp->lock);
		sp->kick = true;
		pthread_cond_signal(&sp->cond);
		pthread_mutex_unlock(&sp->lock);
	}
}

struct pick_arg {
	enum round_kind kind;
	uint64_t max;
	bool retire;			/* delete applied deferred records first */
};

static int pick_job(struct rawstore *st, void *arg)
{
	struct pick_arg *a = arg;
	struct rs_space *sp = st->space;
	int ret;

	if (rs_failed(st))
		return rs_failed(st);
	if (a->retire) {
		ret = deferred_retire(st);
		if (ret)
			return ret;
	}
	sp->round.kind = a->kind;
	ret = round_pick(st, &sp->round, a->max, true);
	pthread_mutex_lock(&sp->lock);
	sp->round.state = !ret && sp->round.r.n ? R_PICKED : R_IDLE;
	pthread_mutex_unlock(&sp->lock);
	return ret;
}

static int finish_job(struct rawstore *st, void *arg)
{
	struct rs_space *sp = st->space;
	int ret = 0;

	(void)arg;
	pthread_mutex_lock(&sp->lock);
	if (sp->round.state == R_IO_DONE) {
		ret = round_finish(st, &sp->round);
		sp->round.state = R_IDLE;
	}
	pthread_mutex_unlock(&sp->lock);
	return ret;
}

int space_quiesce(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	int ret = 0;

	pthread_mutex_lock(&sp->lock);
	while (sp->round.state == R_PICKED)
		pthread_cond_wait(&sp->cond, &sp->lock);
	if (sp->round.state == R_IO_DONE) {
		ret = round_finish(st, &sp->round);
		sp->round.state = R_IDLE;
	}
	pthread_mutex_unlock(&sp->lock);
	return ret;
}

/*
 * One round off the commit thread: take ranges out (job), zero or punch
 * them here, record the result (job).  Returns the bytes done, or -errno
 * (*@err gets the first I/O error, e.g. -EOPNOTSUPP).
 */
static int64_t run_round(struct rawstore *st, enum round_kind kind, uint64_t max, bool retire,
			 int *err)
{
	struct rs_space *sp = st->space;
	struct pick_arg a = { kind, min_u64(max, ROUND_MAX), retire };
	int64_t done;
	int ret;

	*err = 0;
	if (!round_kind_ok(st, kind)) {
		*err = -EOPNOTSUPP;
		return 0;
	}
	pthread_mutex_lock(&sp->round_lock);
	ret = st->space->jobs.run(st, pick_job, &a);
	if (ret || sp->round.state != R_PICKED) {
		pthread_mutex_unlock(&sp->round_lock);
		return ret;
	}
	rs_crash_check(st, RS_CRASH_SPACE_PICKED);
	round_io(st, &sp->round);
	rs_crash_check(st, RS_CRASH_SPACE_IO_DONE);
	done = (int64_t)sp->round.done;
	*err = sp->round.err;
	pthread_mutex_lock(&sp->lock);
	sp->round.state = R_IO_DONE;
	pthread_cond_broadcast(&sp->cond);
	pthread_mutex_unlock(&sp->lock);
	ret = st->space->jobs.run(st, finish_job, NULL);
	pthread_mutex_unlock(&sp->round_lock);
	return ret ? ret : done;
}

/* ---- the background worker ---- */

static void snap_get(struct rawstore *st, uint64_t *unpunched, uint64_t *zeroed,
		     uint64_t *dirty)
{
	pthread_rwlock_rdlock(&st->rwlock);
	*unpunched = st->snap.unpunched;
	*zeroed = st->space->snap.zeroed;
	*dirty = st->space->snap.dirty;
	pthread_rwlock_unlock(&st->rwlock);
}

/* Sleep @ms or until kicked or stopped; true if stopping. */
static bool worker_wait(struct rs_space *sp, uint64_t ms, bool kickable)
{
	struct timespec ts;
	bool stop;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&sp->lock);
	while (!sp->stop && !(kickable && sp->kick))
		if (pthread_cond_timedwait(&sp->cond, &sp->lock, &ts))
			break;
	if (kickable)
		sp->kick = false;
	stop = sp->stop;
	pthread_mutex_unlock(&sp->lock);
	return stop;
}

static void *worker_main(void *arg)
{
	struct rawstore *st = arg;
	struct rs_space *sp = st->space;
	uint64_t wait_ms = TICK_MS;
	bool filling = true;

	while (!worker_wait(sp, wait_ms, true)) {
		uint64_t unp, zeroed, dirty, rate = 0;
		int64_t done = 0;
		int err;

		wait_ms = TICK_MS;
		if (rs_failed(st))
			continue;
		snap_get(st, &unp, &zeroed, &dirty);
		if (sp->punch_mode == RAWSTORE_PUNCH_BACKGROUND && unp &&
		    round_kind_ok(st, ROUND_PUNCH)) {
			done = run_round(st, ROUND_PUNCH, ROUND_MAX, false, &err);
			if (done > 0)
				PERF_ADD(st, punched_background, (uint64_t)done);
			rate = sp->punch_rate;
		}
		/* Below half the target, zero up to the target: few large rounds. */
		if (zeroed < sp->target / 2)
			filling = true;
		else if (zeroed >= sp->target)
			filling = false;
		if (done <= 0 && sp->zero_mode == RAWSTORE_ZERO_PREPARE && filling &&
		    zeroed < sp->target && dirty > unp && round_kind_ok(st, ROUND_ZERO)) {
			done = run_round(st, ROUND_ZERO, sp->target - zeroed, false, &err);
			rate = sp->prepare_rate;
		}
		if (done > 0) {
			/* Rate limit: the next round after done / rate seconds. */
			wait_ms = (uint64_t)done * 1000 / rate;
			if (worker_wait(sp, wait_ms, false))
				break;
			wait_ms = 0;
		}
	}
	return NULL;
}

/* Zero-range 1 MiB of free space (harmless: it is free and stays labelled
 * as it was) and time it; the block layer writes zeros itself where the
 * device has no write-zeroes offload (sysfs says 0). */
static void probe_zero(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	const struct rs_dev_geom *g = dev_geom(st->dev);
	struct pext p;
	uint64_t len, t0;
	int ret;

	if (!extset_next(&sp->dirty, 0, &p) && !extset_next(&sp->zeroed, 0, &p))
		return;
	len = min_u64(p.len, PROBE_LEN);
	t0 = rs_now_ns();
	/* Block device: punch never falls back, so success is offload. */
	ret = zero_verb(st, p.off, len);
	sp->probe_ns = rs_now_ns() - t0;
	/* A punch (block device) gives the range back to a thin pool: it is
	 * not provisioned any more, and an allocation there must provision
	 * it again (a full pool is then -ENOSPC, not a failed data write).
	 * Recorded with the next batch; forgetting a range that stayed
	 * provisioned (a file) only costs a provisioning call. */
	if (ret != -EOPNOTSUPP && extset_overlap(&sp->provisioned, p.off, len)) {
		extset_remove(&sp->provisioned, p.off, len);
		prov_changed(sp);
	}
	sp->offload = !ret;
	if (ret == -EOPNOTSUPP && !g->is_bdev)
		sp->zero_refused = true;
	if (!sp->offload)
		rs_log(st, sp->rec.zero == RAWSTORE_ZERO_PREPARE ? RAWSTORE_LOG_WARNING :
		       RAWSTORE_LOG_INFO, "zero-range is not offloaded on this device (%s; "
		       "%llu bytes took %llu us)%s", ret ? strerror(-ret) :
		       "the kernel writes zeros", (unsigned long long)len,
		       (unsigned long long)(sp->probe_ns / 1000),
		       sp->rec.zero == RAWSTORE_ZERO_PREPARE ? "; preparing anyway, as recorded" :
		       "; partial-unit writes pad instead");
	else
		rs_log(st, RAWSTORE_LOG_INFO, "zero-range offloaded: %llu bytes in %llu us",
		       (unsigned long long)len, (unsigned long long)(sp->probe_ns / 1000));
}

static int record_policy(struct rawstore *st)
{
	struct rs_space *sp = st->space;
	struct rs_disk_space_policy rec = sp->rec;
	int z = st->opts.zero_policy, p = st->opts.punch_policy;
	struct rs_key k;

	if (z < 0 || z > RAWSTORE_ZERO_PAD || p < 0 || p > RAWSTORE_PUNCH_INLINE)
		return rs_err(st, -EINVAL, "open: zero_policy %d / punch_policy %d invalid", z, p);
	if (z)
		rec.zero = (uint8_t)z;
	if (p)
		rec.punch = (uint8_t)p;
	if (!memcmp(&rec, &sp->rec, sizeof(rec)))
		return 0;
	sp->rec = rec;
	key_policy(&k);
	return meta_put_sync(st->meta, &k, &rec, sizeof(rec));
}

int space_start(struct rawstore *st, const struct rs_job_runner *jobs)
{
	struct rs_space *sp = st->space;
	const struct rs_dev_geom *g = dev_geom(st->dev);
	uint64_t data = st->data_end - st->data_start;
	int ret;

	sp->jobs = *jobs;
	if (st->opts.read_only) {
		/* Nothing is written: no policy record, no probe, no worker;
		 * info shows the recorded policies ("auto" unresolved). */
		sp->punch_mode = sp->rec.punch;
		sp->zero_mode = sp->rec.zero;
		space_snapshot(st);
		return 0;
	}
	ret = record_policy(st);
	if (ret)
		return ret;
	sp->target = st->opts.zeroed_target ? st->opts.zeroed_target :
		     min_u64(data / 8, 1ULL << 30);
	sp->target = round_down(sp->target, st->min_alloc);
	sp->ready_target = min_u64(max_u64(round_down(sp->target / 4, st->min_alloc),
					   16ULL * st->min_alloc), 64ULL << 20);
	sp->prepare_rate = st->opts.prepare_rate ? st->opts.prepare_rate : 256ULL << 20;
	sp->punch_rate = st->opts.punch_rate ? st->opts.punch_rate : 1ULL << 30;
	sp->punch_mode = sp->rec.punch;
	sp->provisioning = g->is_bdev ? g->provision_max > 0 :
			   sp->rec.prealloc <= RAWSTORE_PREALLOC_NONE;
	if (sp->rec.zero != RAWSTORE_ZERO_PAD)
		probe_zero(st);	/* padding needs no probe (nor its write) */
	if (sp->prov_dirty) {
		/* The probe unprovisioned a range: record it before anything
		 * can be allocated there (open has not returned yet). */
		rocksdb_writebatch_wi_clear(st->wb);
		ret = prov_sync(st);
		if (!ret)
			ret = meta_commit(st->meta, st->wb);
		rocksdb_writebatch_wi_clear(st->wb);
		if (ret)
			return rs_err(st, ret, "open: recording the range the zero probe "
				      "unprovisioned failed");
	}
	sp->zero_mode = sp->rec.zero;
	if (sp->zero_mode == RAWSTORE_ZERO_AUTO)
		sp->zero_mode = sp->offload ? RAWSTORE_ZERO_PREPARE : RAWSTORE_ZERO_PAD;
	if (sp->zero_refused)
		sp->zero_mode = RAWSTORE_ZERO_PAD;
	/* Ready space for the first groups now, not in their commit path
	 * (nothing is queued yet: open has not returned). */
	if (sp->zeroed.total) {
		ret = claim(st, min_u64(sp->ready_target, sp->zeroed.total));
		if (ret) {
			char m[200];

			snprintf(m, sizeof(m), "%s", rawstore_errmsg());
			return rs_err(st, ret, "open: %s", m);
		}
	}
	space_snapshot(st);
	if (sp->zero_mode != RAWSTORE_ZERO_PREPARE && sp->punch_mode != RAWSTORE_PUNCH_BACKGROUND)
		return 0;
	ret = -pthread_create(&sp->thread, NULL, worker_main, st);
	if (!ret) {
		sp->running = true;
		pthread_mutex_lock(&sp->lock);
		sp->kick = true;
		pthread_cond_signal(&sp->cond);
		pthread_mutex_unlock(&sp->lock);
	}
	return ret;
}

void space_stop(struct rawstore *st)
{
	struct rs_space *sp = st->space;

	if (!sp || !sp->running)
		return;
	pthread_mutex_lock(&sp->lock);
	sp->stop = true;
	pthread_cond_broadcast(&sp->cond);
	pthread_mutex_unlock(&sp->lock);
	pthread_join(sp->thread, NULL);
	sp->running = false;
}

void space_close(struct rawstore *st, bool healthy)
{
	struct rs_space *sp = st->space;
	struct pext p;
	uint64_t pos;

	if (!healthy || !sp || !(sp->ready.total + sp->pending.total))
		return;
	/* Ready space was written by nobody: record it as zeroed again. */
	rocksdb_writebatch_wi_clear(st->wb);
	for (pos = 0; extset_next(&sp->ready, pos, &p); pos = p.off + p.len)
		extset_insert(&sp->zeroed, p.off, p.len);
	for (pos = 0; extset_next(&sp->pending, pos, &p); pos = p.off + p.len)
		extset_insert(&sp->zeroed, p.off, p.len);
	extset_destroy(&sp->ready);
	extset_destroy(&sp->pending);
	meta_commit(st->meta, st->wb);
	rocksdb_writebatch_wi_clear(st->wb);
}

/* ---- reclaim and prepare (caller's thread) ---- */

void rawstore_space_opts_init(struct rawstore_space_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->struct_size = sizeof(*o);
}

struct count_arg {
	enum round_kind kind;
	uint64_t max, bytes;
};

/* Commit thread: the bytes a run would zero or punch now. */
static int count_job(struct rawstore *st, void *arg)
{
	struct count_arg *a = arg;
	struct space_round r = { .kind = a->kind };
	size_t i;
	int ret;

	ret = space_quiesce(st);
	if (!ret)
		ret = round_collect(st, &r, a->max);
	for (i = 0; !ret && i < r.r.n; i++)
		a->bytes += r.r.v[i].len;
	pext_vec_free(&r.r);
	return ret;
}

/*
 * Zero or punch free space in rounds on the caller's thread: at most
 * o->max_bytes (unit aligned), at most o->rate bytes/s, reporting progress.
 * Returns the bytes done, or (dry run) the bytes that would be.
 */
static int64_t space_run(struct rawstore *st, enum round_kind kind,
			 const struct rawstore_space_opts *uo, const char *what)
{
	struct rawstore_space_opts o;
	struct count_arg ca = { kind, 0, 0 };
	uint64_t total = 0, left, step, t0;
	int64_t done;
	int err, ret;

	if (!st)
		return -EINVAL;
	rawstore_space_opts_init(&o);
	if (uo) {
		if (uo->struct_size < sizeof(size_t) || uo->struct_size > sizeof(o))
			return rs_err(st, -EINVAL, "%s: bad options struct_size", what);
		memcpy(&o, uo, uo->struct_size);
	}
	if (st->opts.read_only && !o.dry_run)
		return rs_err(st, -EROFS, "%s: the store is open read-only", what);
	if (st->space->jobs.on_thread(st))
		return -EDEADLK;
	rs_clear_err();
	left = UINT64_MAX;
	if (o.max_bytes)
		left = max_u64(round_down(o.max_bytes, st->min_alloc), st->min_alloc);
	ca.max = left;
	if (o.dry_run || o.progress) {
		ret = st->space->jobs.run(st, count_job, &ca);
		if (ret)
			return ret;
		if (o.dry_run)
			return (int64_t)ca.bytes;
	}
	/* Rounds small enough that the rate limit paces smoothly. */
	step = ROUND_MAX;
	if (o.rate)
		step = min_u64(step, max_u64(round_down(o.rate / 4, st->min_alloc),
					     st->min_alloc));
	if (o.progress)
		o.progress(o.progress_arg, 0, ca.bytes);
	t0 = rs_now_ns();
	do {
		done = run_round(st, kind, min_u64(left, step), true, &err);
		if (err)
			return rs_err(st, err, "%s: %s failed: %s", what,
				      kind == ROUND_PUNCH ? "punching freed space" : "zero-range",
				      strerror(-err));
		if (done <= 0)
			break;
		total += (uint64_t)done;
		left -= min_u64(left, (uint64_t)done);
		if (o.progress)
			o.progress(o.progress_arg, total, max_u64(ca.bytes, total));
		if (o.rate && left) {
			uint64_t due = (uint64_t)((double)total / (double)o.rate * 1e9);
			uint64_t el = rs_now_ns() - t0;

			if (due > el) {
				struct timespec ts = { (time_t)((due - el) / 1000000000ULL),
						       (long)((due - el) % 1000000000ULL) };

				while (nanosleep(&ts, &ts) && errno == EINTR)
					;
			}
		}
	} while (left);
	return done < 0 ? done : (int64_t)total;
}

int64_t rawstore_space_reclaim(struct rawstore *st, const struct rawstore_space_opts *o)
{
	return space_run(st, ROUND_PUNCH, o, "reclaim");
}

int64_t rawstore_space_prepare(struct rawstore *st, const struct rawstore_space_opts *o)
{
	return space_run(st, ROUND_ZERO, o, "prepare");
}

int rawstore_reclaim(struct rawstore *st)
{
	int64_t ret = space_run(st, ROUND_PUNCH, NULL, "reclaim");

	return ret < 0 ? (int)ret : 0;
}

int64_t rawstore_prepare(struct rawstore *st, uint64_t max_bytes)
{
	struct rawstore_space_opts o;

	rawstore_space_opts_init(&o);
	o.max_bytes = max_bytes;
	return space_run(st, ROUND_ZERO, &o, "prepare");
}

/* rawstore_records_get: the in-memory parts (commit thread or read-only). */
void space_records(struct rawstore *st, struct rawstore_records *r)
{
	struct rs_space *sp = st->space;

	r->dirty_extents = sp->dirty.count;
	r->zero_policy = rawstore_zero_policy_name(sp->rec.zero);
	r->punch_policy = rawstore_punch_policy_name(sp->rec.punch);
	r->prealloc_policy = rawstore_prealloc_policy_name(sp->rec.prealloc ? sp->rec.prealloc :
							   RAWSTORE_PREALLOC_NONE);
}

/* ---- test hook (debug.h) ---- */

static int check_zero_set(struct rawstore *st, const struct extset *set, const char *name)
{
	const size_t chunk = 1U << 20;
	uint8_t *buf = rs_alloc_aligned(chunk);
	struct pext p;
	uint64_t pos, o;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	for (pos = 0; !ret && extset_next(set, pos, &p); pos = p.off + p.len) {
		for (o = p.off; !ret && o < p.off + p.len; o += chunk) {
			size_t n = (size_t)min_u64(chunk, p.off + p.len - o), i;

			ret = dev_read(st->dev, buf, o, n);
			for (i = 0; !ret && i < n; i++)
				if (buf[i])
					ret = rs_err(st, -EUCLEAN, "%s range [%llu, +%llu): byte at "
						     "%llu is not zero", name,
						     (unsigned long long)p.off,
						     (unsigned long long)p.len,
						     (unsigned long long)(o + i));
		}
	}
	free(buf);
	return ret;
}

static int check_zeroed_job(struct rawstore *st, void *arg)
{
	struct rs_space *sp = st->space;
	int ret;

	(void)arg;
	ret = space_quiesce(st);
	if (!ret)
		ret = check_zero_set(st, &sp->zeroed, "zeroed");
	if (!ret)
		ret = check_zero_set(st, &sp->ready, "ready");
	if (!ret)
		ret = check_zero_set(st, &sp->pending, "pending");
	return ret;
}

int rs_debug_check_zeroed(struct rawstore *st)
{
	return st->space->jobs.run(st, check_zeroed_job, NULL);
}

/* ---- mkfs ---- */

static int chunked(int (*verb)(struct rs_dev *, uint64_t, uint64_t), struct rs_dev *d,
		   uint64_t start, uint64_t end)
{
	uint64_t pos, len;
	int ret = 0;

	for (pos = start; pos < end && !ret; pos += len) {
		len = min_u64(end - pos, 1ULL << 30);
		ret = verb(d, pos, len);
	}
	return ret;
}

int space_mkfs(struct rs_dev *d, const struct rawstore_mkfs_opts *o, uint64_t start,
	       uint64_t end, struct rs_disk_space_policy *pol, bool *zeroed)
{
	const struct rs_dev_geom *g = dev_geom(d);
	int pre = o->prealloc_policy, ret;

	if (o->zero_policy < 0 || o->zero_policy > RAWSTORE_ZERO_PAD || o->punch_policy < 0 ||
	    o->punch_policy > RAWSTORE_PUNCH_INLINE || pre < 0 || pre > RAWSTORE_PREALLOC_STALE)
		return rs_err(NULL, -EINVAL, "mkfs: unknown space policy");
	if (g->is_bdev && pre > RAWSTORE_PREALLOC_NONE)
		return rs_err(NULL, -EINVAL, "mkfs: preallocation policy %s is for a store in a "
			      "regular file", rawstore_prealloc_policy_name(pre));
	memset(pol, 0, sizeof(*pol));
	pol->version = htole32(RS_SPACE_POLICY_VERSION);
	pol->zero = (uint8_t)(o->zero_policy ? o->zero_policy : RAWSTORE_ZERO_AUTO);
	pol->punch = (uint8_t)(o->punch_policy ? o->punch_policy :
			       g->is_bdev && g->provision_max ? RAWSTORE_PUNCH_BACKGROUND :
			       RAWSTORE_PUNCH_OPERATOR);
	pol->prealloc = (uint8_t)(g->is_bdev ? RAWSTORE_PREALLOC_NONE :
				  pre ? pre : RAWSTORE_PREALLOC_NONE);
	*zeroed = false;
	switch (pol->prealloc) {
	case RAWSTORE_PREALLOC_NONE:
	case RAWSTORE_PREALLOC_UNWRITTEN:
		/* Block device: punch is a write-zeroes (with unmap) that never
		 * falls back to writing zeros: cheap or EOPNOTSUPP.  File: holes. */
		ret = chunked(dev_punch_hole, d, start, end);
		if (ret && ret != -EOPNOTSUPP)
			return rs_err(NULL, ret, "mkfs: punching the data area failed");
		*zeroed = !ret;
		if (ret)
			rs_log(NULL, RAWSTORE_LOG_INFO, "mkfs: the device cannot punch (zero "
			       "cheaply); free space starts dirty");
		if (pol->prealloc == RAWSTORE_PREALLOC_UNWRITTEN) {
			ret = chunked(dev_provision, d, start, end);
			if (ret)
				return rs_err(NULL, ret, "mkfs: preallocating the file "
					      "(fallocate) failed");
		}
		break;
	case RAWSTORE_PREALLOC_WRITE_ZEROES:
		ret = chunked(dev_write_zeroes, d, start, end);
		if (ret)
			return rs_err(NULL, ret, "mkfs: FALLOC_FL_WRITE_ZEROES failed%s",
				      ret == -EOPNOTSUPP ? " (not supported by this kernel or "
				      "file system)" : "");
		*zeroed = true;
		break;
	case RAWSTORE_PREALLOC_STALE:
		ret = chunked(dev_prealloc_stale, d, start, end);
		if (ret)
			return rs_err(NULL, ret, "mkfs: FALLOC_FL_NO_HIDE_STALE failed%s",
				      ret == -EOPNOTSUPP ? " (needs the patched ext4 mounted with "
				      "nohide_stale_gid)" : ret == -EPERM ? " (not in the "
				      "nohide_stale group and no CAP_SYS_RAWIO)" : "");
		break;
	}
	return 0;
}
