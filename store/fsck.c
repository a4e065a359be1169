// SPDX-License-Identifier: MIT
/* fsck.c: cross-check onodes, free list, unpunched list and checksums. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "commit.h"
#include "debug.h"
#include "decode.h"
#include "internal.h"
#include "space.h"
#include "util.h"

struct used {
	uint64_t off, len;		/* device bytes */
	uint64_t obj;			/* index into fk->objs */
};

struct objref {
	char coll[RAWSTORE_COLL_NAME_MAX + 1];
	char *name;
	size_t nlen;
	uint64_t nid;
};

struct fsck {
	struct rawstore *st;
	struct rawstore_fsck_opts o;
	struct rawstore_fsck_result r;
	struct used *used;
	size_t n_used, cap_used;
	struct objref *objs;
	size_t n_objs, cap_objs;
	uint64_t *nids;			/* sorted */
	/* Object records that do not decode (or whose key does not parse):
	 * their extents and object ids are unknown, so no space they might
	 * use is freed and no record they might own is deleted. */
	uint64_t corrupt_onodes;
	uint64_t bad_keys;		/* object records whose key does not parse */
	/* "W" records: ranges a crash left being zeroed or punched (free, but
	 * not in "F" until a read-write open puts them back). */
	struct extset inflight;
	/* Checksum blocks of object data that did not match, or could not be
	 * read (deep): with the superblock from META's copy, evidence that
	 * the device is not this store's. */
	uint64_t data_bad;
};

static const char *const kind_names[] = {
	[RAWSTORE_FSCK_CORRUPT_RECORD] = "corrupt_record",
	[RAWSTORE_FSCK_BAD_EXTENT] = "bad_extent",
	[RAWSTORE_FSCK_BAD_MAP] = "bad_map",
	[RAWSTORE_FSCK_SHARED] = "shared_extent",
	[RAWSTORE_FSCK_USED_AND_FREE] = "used_and_free",
	[RAWSTORE_FSCK_BAD_FREELIST] = "bad_freelist",
	[RAWSTORE_FSCK_LEAK] = "leak",
	[RAWSTORE_FSCK_UNPUNCHED_USED] = "unpunched_not_free",
	[RAWSTORE_FSCK_ORPHAN] = "orphan",
	[RAWSTORE_FSCK_CSUM] = "checksum",
	[RAWSTORE_FSCK_IO] = "io_error",
	[RAWSTORE_FSCK_ZEROED_NOT_FREE] = "zeroed_not_free",
	[RAWSTORE_FSCK_IN_FLIGHT] = "in_flight",
	[RAWSTORE_FSCK_JOURNAL] = "journal",
};

void rawstore_fsck_opts_init(struct rawstore_fsck_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->struct_size = sizeof(*o);
}

static void report(struct fsck *fk, enum rawstore_fsck_kind kind, const struct objref *obj,
		   uint64_t off, uint64_t len, int repaired, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

static void report(struct fsck *fk, enum rawstore_fsck_kind kind, const struct objref *obj,
		   uint64_t off, uint64_t len, int repaired, const char *fmt, ...)
{
	struct rawstore_fsck_problem p = { 0 };
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fk->r.errors++;
	if (repaired)
		fk->r.repaired++;
	p.kind = kind;
	p.kind_name = kind_names[kind];
	p.message = msg;
	if (obj) {
		p.coll = obj->coll;
		p.name = obj->name;
		p.name_len = obj->nlen;
	}
	p.offset = off;
	p.length = len;
	p.repaired = repaired;
	rs_log(fk->st, RAWSTORE_LOG_INFO, "fsck: %s: %s", p.kind_name, msg);
	if (fk->o.fn)
		fk->o.fn(fk->o.arg, &p);
}

static int add_used(struct fsck *fk, uint64_t off, uint64_t len, uint64_t obj)
{
	if (fk->n_used == fk->cap_used) {
		size_t cap = fk->cap_used ? fk->cap_used * 2 : 256;
		struct used *v = realloc(fk->used, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		fk->used = v;
		fk->cap_used = cap;
	}
	fk->used[fk->n_used++] = (struct used){ off, len, obj };
	return 0;
}

static int deep_check(struct fsck *fk, const struct objref *obj, const struct rs_extent *e)
{
	struct rawstore *st = fk->st;
	uint64_t cb = st->csum_block, chunk = min_u64(e->len, 8U << 20), pos, done;
	uint8_t *buf = rs_alloc_aligned(chunk);
	int ret;

	if (!buf)
		return -ENOMEM;
	for (done = 0; done < e->len; done += chunk) {
		uint64_t len = min_u64(chunk, e->len - done);

		ret = dev_read(st->dev, buf, e->pofs + done, len);
		if (ret) {
			report(fk, RAWSTORE_FSCK_IO, obj, e->pofs + done, len, 0,
			       "reading extent of %s failed: %s", obj->coll, strerror(-ret));
			fk->data_bad++;
			continue;
		}
		/* unreplayed deferred writes of a read-only store (none otherwise) */
		deferred_overlay(st, buf, e->pofs + done, len, true);
		fk->r.bytes_checked += len;
		for (pos = 0; pos < len; pos += cb) {
			if (rs_crc32c(buf + pos, cb) == e->crcs[(done + pos) / cb])
				continue;
			fk->data_bad++;
			report(fk, RAWSTORE_FSCK_CSUM, obj, e->pofs + done + pos, cb, 0,
			       "checksum mismatch at object offset %llu (device offset %llu)",
			       (unsigned long long)(e->lofs + done + pos),
			       (unsigned long long)(e->pofs + done + pos));
		}
	}
	free(buf);
	return 0;
}

static int check_onode(struct fsck *fk, struct objref *obj, const struct rs_onode *o)
{
	struct rawstore *st = fk->st;
	uint64_t U = st->min_alloc, last_end = 0;
	uint32_t i;
	int ret;

	if (o->nid == 0 || o->nid >= st->next_nid)
		report(fk, RAWSTORE_FSCK_BAD_MAP, obj, 0, 0, 0, "object id %llu out of range",
		       (unsigned long long)o->nid);
	if (o->inline_len && (o->n_ext || o->inline_len != o->size))
		report(fk, RAWSTORE_FSCK_BAD_MAP, obj, 0, 0, 0,
		       "inline data of %u bytes does not match size %llu",
		       o->inline_len, (unsigned long long)o->size);
	for (i = 0; i < o->n_ext; i++) {
		const struct rs_extent *e = &o->ext[i];

		fk->r.extents++;
		if (!is_aligned(e->pofs | e->len | e->lofs, U) || e->pofs < st->data_start ||
		    e->pofs > st->data_end || e->len > st->data_end - e->pofs) {
			report(fk, RAWSTORE_FSCK_BAD_EXTENT, obj, e->pofs, e->len, 0,
			       "extent at object offset %llu is misaligned or outside the "
			       "data area", (unsigned long long)e->lofs);
			continue;
		}
		if (e->lofs < last_end || e->lofs > round_up(o->size, U) ||
		    e->len > round_up(o->size, U) - e->lofs)
			report(fk, RAWSTORE_FSCK_BAD_MAP, obj, e->pofs, e->len, 0,
			       "extent at object offset %llu overlaps another or lies past "
			       "the size %llu", (unsigned long long)e->lofs,
			       (unsigned long long)o->size);
		last_end = e->lofs + e->len;
		ret = add_used(fk, e->pofs, e->len, (uint64_t)(obj - fk->objs));
		if (!ret && fk->o.deep)
			ret = deep_check(fk, obj, e);
		if (ret)
			return ret;
	}
	return 0;
}

static int scan_onodes(struct fsck *fk)
{
	struct rawstore *st = fk->st;
	struct rs_iter *it;
	char p = 'O';
	int ret;

	ret = meta_iter_new(st->meta, NULL, &p, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it) && !ret; meta_iter_next(it)) {
		size_t kl, vl, cl;
		const char *k = meta_iter_key(it, &kl), *v = meta_iter_val(it, &vl);
		struct objref *obj;
		struct rs_onode o;
		struct rs_key ck;
		char *cv;
		size_t cvl;
		int r;

		if (fk->n_objs == fk->cap_objs) {
			size_t cap = fk->cap_objs ? fk->cap_objs * 2 : 256;
			struct objref *nv = realloc(fk->objs, cap * sizeof(*nv));

			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			fk->objs = nv;
			fk->cap_objs = cap;
		}
		obj = &fk->objs[fk->n_objs];
		memset(obj, 0, sizeof(*obj));
		cl = kl >= 2 ? (size_t)(((unsigned char)k[0] << 8) | (unsigned char)k[1]) : 0;
		if (kl < 2 || cl == 0 || cl > RAWSTORE_COLL_NAME_MAX || kl <= 2 + cl) {
			fk->corrupt_onodes++;
			fk->bad_keys++;
			report(fk, RAWSTORE_FSCK_CORRUPT_RECORD, NULL, 0, 0, 0,
			       "malformed object key of %zu bytes", kl);
			continue;
		}
		memcpy(obj->coll, k + 2, cl);
		obj->nlen = kl - 2 - cl;
		obj->name = malloc(obj->nlen);
		if (!obj->name) {
			ret = -ENOMEM;
			break;
		}
		memcpy(obj->name, k + 2 + cl, obj->nlen);
		fk->n_objs++;
		fk->r.objects++;
		key_coll(&ck, obj->coll);
		r = meta_get(st->meta, NULL, &ck, &cv, &cvl);
		if (r == -ENOENT)
			report(fk, RAWSTORE_FSCK_ORPHAN, obj, 0, 0, 0,
			       "object in missing collection %s", obj->coll);
		else if (!r)
			rocksdb_free(cv);
		r = onode_decode(v, vl, &st->lim, &o);
		if (r == -ENOMEM) {
			ret = r;
			break;
		}
		if (r) {
			fk->corrupt_onodes++;
			report(fk, RAWSTORE_FSCK_CORRUPT_RECORD, obj, 0, 0, 0,
			       "object record in %s fails its checksum or does not decode "
			       "(%s)", obj->coll, rawstore_errmsg());
			continue;
		}
		obj->nid = o.nid;
		ret = check_onode(fk, obj, &o);
		onode_free(&o);
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}

static int cmp_used(const void *a, const void *b)
{
	const struct used *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_u64(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

struct event {
	uint64_t pos;
	int delta;
};

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;

	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/*
 * Units used by k > 1 extents (clones) must carry an "R" record saying
 * k - 1 extra references, and every "R" record must match such a unit.
 */
static int check_shared(struct fsck *fk)
{
	struct rawstore *st = fk->st;
	uint64_t U = st->min_alloc, prev = 0, *au = NULL, *mult = NULL;
	size_t i, n = 0, cap = 0, j = 0;
	struct event *ev;
	struct rs_iter *it;
	char p = 'R';
	int cur = 0, ret = 0;

	ev = malloc((2 * fk->n_used + 1) * sizeof(*ev));
	if (!ev)
		return -ENOMEM;
	for (i = 0; i < fk->n_used; i++) {
		ev[2 * i] = (struct event){ fk->used[i].off, 1 };
		ev[2 * i + 1] = (struct event){ fk->used[i].off + fk->used[i].len, -1 };
	}
	if (fk->n_used)
		qsort(ev, 2 * fk->n_used, sizeof(*ev), cmp_event);
	for (i = 0; i < 2 * fk->n_used && !ret; i++) {
		uint64_t u;

		for (u = prev; cur > 1 && u < ev[i].pos; u += U) {
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				au = realloc(au, cap * sizeof(*au));
				mult = realloc(mult, cap * sizeof(*mult));
				if (!au || !mult) {
					ret = -ENOMEM;
					break;
				}
			}
			au[n] = u;
			mult[n++] = (uint64_t)cur;
		}
		cur += ev[i].delta;
		prev = ev[i].pos;
	}
	free(ev);
	if (!ret)
		ret = meta_iter_new(st->meta, NULL, &p, 1, &it);
	if (ret)
		goto out_free;
	for (; meta_iter_valid(it); meta_iter_next(it)) {
		size_t kl, vl;
		const char *k = meta_iter_key(it, &kl), *v = meta_iter_val(it, &vl);
		struct rs_ref_rec ref;
		uint64_t off, extra;

		if (decode_ref_rec(k, kl, v, vl, &st->lim, &ref)) {
			report(fk, RAWSTORE_FSCK_CORRUPT_RECORD, NULL, 0, 0, 0, "%s",
			       rawstore_errmsg());
			continue;
		}
		off = ref.off;
		extra = ref.extra;

		for (; j < n && au[j] < off; j++)
			report(fk, RAWSTORE_FSCK_SHARED, NULL, au[j], U, 0,
			       "unit at %llu is used by %llu extents but not recorded as shared",
			       (unsigned long long)au[j], (unsigned long long)mult[j]);
		if (j < n && au[j] == off && mult[j] == extra + 1) {
			j++;
			continue;
		}
		report(fk, RAWSTORE_FSCK_SHARED, NULL, off, U, 0,
		       "reference record of unit %llu says %llu users, found %llu",
		       (unsigned long long)off, (unsigned long long)extra + 1,
		       (unsigned long long)(j < n && au[j] == off ? mult[j] : 1));
		if (j < n && au[j] == off)
			j++;
	}
	for (; j < n; j++)
		report(fk, RAWSTORE_FSCK_SHARED, NULL, au[j], U, 0,
		       "unit at %llu is used by %llu extents but not recorded as shared",
		       (unsigned long long)au[j], (unsigned long long)mult[j]);
	ret = meta_iter_error(it);
	meta_iter_free(it);
out_free:
	free(au);
	free(mult);
	return ret;
}

static uint64_t end_of(uint64_t off, uint64_t len)
{
	return len > UINT64_MAX - off ? UINT64_MAX : off + len;
}

/*
 * Walk used and free extents in device order looking for overlaps and gaps.
 * An overlap is reported whichever of the two sorts first: a used extent
 * that starts inside a free one, and a free extent that starts inside a
 * used one.
 */
static int check_space(struct fsck *fk)
{
	struct rawstore *st = fk->st;
	uint64_t pos = st->data_start, free_end = 0, used_end = 0;
	const struct objref *used_end_obj = NULL;	/* owns the used extent ending there */
	struct rs_iter *it;
	size_t ui = 0;
	char p = 'F';
	int ret;

	if (fk->n_used)
		qsort(fk->used, fk->n_used, sizeof(*fk->used), cmp_used);
	ret = check_shared(fk);
	if (ret)
		return ret;
	ret = meta_iter_new(st->meta, NULL, &p, 1, &it);
	if (ret)
		return ret;
	for (;;) {
		uint64_t foff = UINT64_MAX, flen = 0, off, len, end, other_end;
		const struct objref *obj = NULL;	/* of the used extent */

		if (meta_iter_valid(it)) {
			size_t kl, vl;
			const char *k = meta_iter_key(it, &kl), *v = meta_iter_val(it, &vl);

			if (kl == 8 && vl == 8) {
				foff = get_be64(k);
				flen = get_le64(v);
			} else {
				report(fk, RAWSTORE_FSCK_BAD_FREELIST, NULL, 0, 0, 0,
				       "malformed free-list record");
				meta_iter_next(it);
				continue;
			}
		}
		if (ui < fk->n_used && fk->used[ui].off <= foff) {
			off = fk->used[ui].off;
			len = fk->used[ui].len;
			end = end_of(off, len);
			obj = &fk->objs[fk->used[ui].obj];
			ui++;
			other_end = free_end;
			if (end > used_end)
				used_end_obj = obj;
			used_end = max_u64(used_end, end);
		} else if (foff != UINT64_MAX) {
			off = foff;
			len = flen;
			end = end_of(off, len);
			meta_iter_next(it);
			if (!len || !is_aligned(off | len, st->min_alloc) ||
			    off < st->data_start || off > st->data_end ||
			    len > st->data_end - off || off < free_end ||
			    (free_end && off == free_end))
				report(fk, RAWSTORE_FSCK_BAD_FREELIST, NULL, off, len, 0,
				       "free extent [%llu, +%llu) is misaligned, out of range, "
				       "unsorted or not merged", (unsigned long long)off,
				       (unsigned long long)len);
			other_end = used_end;
			obj = used_end_obj;
			free_end = max_u64(free_end, end);
		} else {
			break;
		}
		if (off < other_end)
			report(fk, RAWSTORE_FSCK_USED_AND_FREE, obj, off,
			       min_u64(end, other_end) - off,
			       0, "device range [%llu, +%llu) is both used and free",
			       (unsigned long long)off,
			       (unsigned long long)(min_u64(end, other_end) - off));
		if (off > pos && extset_overlap(&fk->inflight, pos, off - pos) == off - pos) {
			/* in flight: reported by check_in_flight */
		} else if (off > pos) {
			/* A corrupt onode may own the "leaked" space: never free it then. */
			bool fix = fk->o.repair && !fk->corrupt_onodes;

			if (fix && extset_insert(&st->freeset, pos, off - pos))
				fix = false;
			fk->r.leaks++;
			fk->r.leaked_bytes += off - pos;
			report(fk, RAWSTORE_FSCK_LEAK, NULL, pos, off - pos, fix,
			       "%llu bytes at device offset %llu are neither used nor free",
			       (unsigned long long)(off - pos), (unsigned long long)pos);
		}
		pos = max_u64(pos, end);
	}
	if (pos < st->data_end &&
	    extset_overlap(&fk->inflight, pos, st->data_end - pos) != st->data_end - pos) {
		bool fix = fk->o.repair && !fk->corrupt_onodes &&
			   !extset_insert(&st->freeset, pos, st->data_end - pos);

		fk->r.leaks++;
		fk->r.leaked_bytes += st->data_end - pos;
		report(fk, RAWSTORE_FSCK_LEAK, NULL, pos, st->data_end - pos, fix,
		       "%llu bytes at the end of the device are neither used nor free",
		       (unsigned long long)(st->data_end - pos));
	}
	ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}

/* open refuses a corrupt list: the walkers below skip what the decoder refuses */
static int unpunched_one(void *arg, const struct rs_ext_rec *r, int err)
{
	struct fsck *fk = arg;

	if (!err && extset_overlap(&fk->st->freeset, r->off, r->len) != r->len)
		report(fk, RAWSTORE_FSCK_UNPUNCHED_USED, NULL, r->off, r->len, 0,
		       "range [%llu, +%llu) awaits punching but is not free",
		       (unsigned long long)r->off, (unsigned long long)r->len);
	return 0;
}

static int check_unpunched(struct fsck *fk)
{
	return meta_each_ext(fk->st->meta, 'P', &fk->st->lim, unpunched_one, fk);
}

static int in_flight_one(void *arg, const struct rs_ext_rec *r, int err)
{
	struct fsck *fk = arg;
	int ret;

	if (err)
		return 0;
	report(fk, RAWSTORE_FSCK_IN_FLIGHT, NULL, r->off, r->len, 0,
	       "range [%llu, +%llu) was being zeroed or punched when the store "
	       "stopped; a read-write open returns it to the free list (dirty)",
	       (unsigned long long)r->off, (unsigned long long)r->len);
	ret = extset_insert(&fk->inflight, r->off, r->len);
	return ret == -EEXIST ? 0 : ret;
}

/* Ranges a crash left being zeroed or punched ("W"): reported, and not
 * counted as leaks by check_space. */
static int check_in_flight(struct fsck *fk)
{
	return meta_each_ext(fk->st->meta, 'W', &fk->st->lim, in_flight_one, fk);
}

static int zeroed_one(void *arg, const struct rs_ext_rec *r, int err)
{
	struct fsck *fk = arg;

	if (err)
		return 0;
	/* read-only, st->freeset holds the in-flight ranges too */
	if (extset_overlap(&fk->st->freeset, r->off, r->len) != r->len ||
	    extset_overlap(&fk->inflight, r->off, r->len))
		report(fk, RAWSTORE_FSCK_ZEROED_NOT_FREE, NULL, r->off, r->len, 0,
		       "range [%llu, +%llu) is recorded as zeroed but is not free "
		       "(a read-write open treats it as dirty)",
		       (unsigned long long)r->off, (unsigned long long)r->len);
	return 0;
}

/* Every range recorded as zeroed ("Z") lies inside the free list and
 * outside the in-flight ranges: zeroed space is free space. */
static int check_zeroed(struct fsck *fk)
{
	return meta_each_ext(fk->st->meta, 'Z', &fk->st->lim, zeroed_one, fk);
}

static int check_orphans(struct fsck *fk, char type)
{
	struct rawstore *st = fk->st;
	struct rs_iter *it;
	int ret;

	ret = meta_iter_new(st->meta, NULL, &type, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it); meta_iter_next(it)) {
		size_t kl;
		const char *k = meta_iter_key(it, &kl);
		uint64_t nid;
		bool fix;

		if (kl < 8) {
			report(fk, RAWSTORE_FSCK_CORRUPT_RECORD, NULL, 0, 0, 0,
			       "malformed '%c' record", type);
			continue;
		}
		nid = get_be64(k);
		if (bsearch(&nid, fk->nids, fk->n_objs, sizeof(uint64_t), cmp_u64))
			continue;
		/* An object record that does not decode may be its owner. */
		fix = fk->o.repair && !fk->corrupt_onodes;
		if (fix) {
			size_t fl;
			const char *fkey = meta_iter_full_key(it, &fl);

			rocksdb_writebatch_wi_delete(st->wb, fkey, fl);
		}
		report(fk, RAWSTORE_FSCK_ORPHAN, NULL, 0, 0, fix,
		       "%s record of object id %llu which does not exist%s",
		       type == 'X' ? "attribute" : type == 'M' ? "omap" : "omap header",
		       (unsigned long long)nid, fk->corrupt_onodes ?
		       " (kept: an object record that does not decode may own it)" : "");
	}
	ret = meta_iter_error(it);
	meta_iter_free(it);
	return ret;
}

/*
 * Both copies, against the superblock the store was opened with.  When
 * that is META's copy (repair_super: both device copies were lost), it is
 * written only after every object's checksums matched the data on the
 * device (fsck_job runs deep then, and this check last): a device that is
 * not this store's is left as it was.
 */
static int check_supers(struct fsck *fk)
{
	struct rawstore *st = fk->st;
	int before = rs_check_supers(st, false), after = before, i;
	bool from_meta = st->sb_from_meta, fix = fk->o.repair && !(from_meta && fk->data_bad);

	if (before < 0)
		return before;
	if (before && fix)
		after = rs_check_supers(st, true);
	if (after < 0)
		return after;
	if (!after)
		st->sb_from_meta = false;
	for (i = 0; i < 2; i++)
		if (before & (1 << i))
			report(fk, RAWSTORE_FSCK_CORRUPT_RECORD, NULL,
			       i ? RS_SB_BACKUP_OFFSET : RS_SB_PRIMARY_OFFSET, RS_SB_BLOCK,
			       !(after & (1 << i)), "%s superblock copy is damaged or stale%s",
			       i ? "backup" : "primary", !from_meta ? "" : fix ?
			       " (rewritten from the metadata's copy)" : fk->data_bad ?
			       " (not rewritten from the metadata's copy: object data on the "
			       "device does not match its checksums; is this the store's "
			       "device?)" : "");
	return 0;
}

/*
 * Device journal: "J" (read through st->wb: the replayed records of a
 * read-only open are laid over RocksDB) names a record at or behind the
 * journal's head, inside what replay found.  Open checked the records
 * themselves (a torn or foreign one ends the journal, it is no problem).
 */
static int check_journal(struct fsck *fk)
{
	struct rawstore *st = fk->st;
	struct rs_journal_stat js;
	struct rs_disk_jpos jp;
	struct rs_key k = { 1, "J" };
	size_t vl = 0;
	char *v;
	int ret;

	if (!meta_journal_stat(st->meta, &js))
		return 0;
	ret = meta_get(st->meta, NULL, &k, &v, &vl);
	if (ret && ret != -ENOENT)
		return ret;
	if (ret || vl != sizeof(jp)) {
		if (!ret)
			rocksdb_free(v);
		report(fk, RAWSTORE_FSCK_JOURNAL, NULL, js.off, js.len, 0,
		       "journal position record %s", ret ? "missing" : "has the wrong size");
		return 0;
	}
	memcpy(&jp, v, sizeof(jp));
	rocksdb_free(v);
	if (le64toh(jp.seq) > js.last_seq ||
	    le64toh(jp.seq) < js.durable_seq || le64toh(jp.next) > js.head)
		report(fk, RAWSTORE_FSCK_JOURNAL, NULL, js.off, js.len, 0,
		       "journal position (record %llu, next at %llu) is outside what the "
		       "journal holds (records %llu to %llu, head at %llu)",
		       (unsigned long long)le64toh(jp.seq), (unsigned long long)le64toh(jp.next),
		       (unsigned long long)js.durable_seq, (unsigned long long)js.last_seq,
		       (unsigned long long)js.head);
	return 0;
}

/*
 * Every object record has an object id of its own: its attributes, omap
 * and header are keyed by it, so two records with one id (a rename that
 * left its source behind, say) would share them.  @fk->nids is sorted.
 * Each record of such an id is named; nothing is repaired (which of them
 * owns the records is not known).  Id 0 is a record that does not decode
 * (reported as such).
 */
static void check_nids(struct fsck *fk)
{
	size_t i, j;

	for (i = 1; i < fk->n_objs; i++) {
		/* the second of a run of equal ids names them all, once */
		if (!fk->nids[i] || fk->nids[i] != fk->nids[i - 1] ||
		    (i >= 2 && fk->nids[i - 2] == fk->nids[i]))
			continue;
		for (j = 0; j < fk->n_objs; j++)
			if (fk->objs[j].nid == fk->nids[i])
				report(fk, RAWSTORE_FSCK_BAD_MAP, &fk->objs[j], 0, 0, 0,
				       "object id %llu is used by more than one object record",
				       (unsigned long long)fk->nids[i]);
	}
}

/* The recorded object and collection counts must match what exists. */
static int check_counts(struct fsck *fk)
{
	struct rawstore *st = fk->st;
	struct rs_iter *it;
	/* a record whose key does not parse is still an object record */
	uint64_t colls = 0, objs = fk->n_objs + fk->bad_keys;
	char p = 'C';
	int ret;

	ret = meta_iter_new(st->meta, NULL, &p, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it); meta_iter_next(it))
		colls++;
	ret = meta_iter_error(it);
	meta_iter_free(it);
	if (ret)
		return ret;
	if (st->n_objects == objs && st->n_colls == colls)
		return 0;
	if (fk->o.repair) {
		struct rs_key k;
		char c[16];

		put_le64(c, objs);
		put_le64(c + 8, colls);
		key_counts(&k);
		rocksdb_writebatch_wi_put(st->wb, k.buf, k.len, c, 16);
	}
	report(fk, RAWSTORE_FSCK_BAD_MAP, NULL, 0, 0, fk->o.repair,
	       "recorded counts (%llu objects, %llu collections) differ from the store "
	       "(%llu objects, %llu collections)", (unsigned long long)st->n_objects,
	       (unsigned long long)st->n_colls, (unsigned long long)objs,
	       (unsigned long long)colls);
	if (fk->o.repair) {
		pthread_rwlock_wrlock(&st->rwlock);
		st->n_objects = objs;
		st->n_colls = colls;
		pthread_rwlock_unlock(&st->rwlock);
	}
	return 0;
}

static int fsck_job(struct rawstore *st, void *arg)
{
	struct fsck *fk = arg;
	struct space_batch b;
	size_t i;
	int ret;

	if (rs_failed(st))
		return rs_failed(st);
	ret = space_quiesce(st);	/* no range out of the free list */
	if (ret)
		return ret;
	rocksdb_writebatch_wi_clear(st->wb);
	/* repairs that free leaked space record it in st->wb */
	space_batch_open(st, &b, st->wb, UINT64_MAX);
	/* the superblock is META's copy: check the data first (check_supers) */
	if (st->sb_from_meta)
		fk->o.deep = 1;
	else
		ret = check_supers(fk);
	if (!ret)
		ret = check_journal(fk);
	if (!ret)
		ret = check_in_flight(fk);
	if (!ret)
		ret = scan_onodes(fk);
	if (!ret)
		ret = check_space(fk);
	if (!ret)
		ret = check_unpunched(fk);
	if (!ret)
		ret = check_zeroed(fk);
	if (!ret) {
		fk->nids = calloc(fk->n_objs ? fk->n_objs : 1, sizeof(uint64_t));
		if (!fk->nids)
			ret = -ENOMEM;
		for (i = 0; !ret && i < fk->n_objs; i++)
			fk->nids[i] = fk->objs[i].nid;
		if (!ret)
			qsort(fk->nids, fk->n_objs, sizeof(uint64_t), cmp_u64);
		if (!ret)
			check_nids(fk);
	}
	if (!ret)
		ret = check_orphans(fk, 'X');
	if (!ret)
		ret = check_orphans(fk, 'M');
	if (!ret)
		ret = check_orphans(fk, 'H');
	if (!ret)
		ret = check_counts(fk);
	if (!ret && st->sb_from_meta)
		ret = check_supers(fk);
	space_batch_close(st, &b);
	if (!ret && rocksdb_writebatch_wi_count(st->wb)) {
		rs_crash_check(st, RS_CRASH_FSCK_REPAIR);	/* test hook (debug.h) */
		ret = rs_commit_wb(st);
	}
	rocksdb_writebatch_wi_clear(st->wb);
	return ret;
}

int rawstore_fsck(struct rawstore *st, const struct rawstore_fsck_opts *o,
		  struct rawstore_fsck_result *res)
{
	struct fsck fk;
	size_t i;
	int ret;

	if (!st)
		return -EINVAL;
	memset(&fk, 0, sizeof(fk));
	fk.st = st;
	extset_init(&fk.inflight, false);
	rawstore_fsck_opts_init(&fk.o);
	if (o) {
		if (o->struct_size < sizeof(size_t) || o->struct_size > sizeof(fk.o))
			return -EINVAL;
		memcpy(&fk.o, o, o->struct_size);
	}
	if (res && (res->struct_size < sizeof(size_t) || res->struct_size > sizeof(fk.r)))
		return -EINVAL;
	if (fk.o.repair && st->opts.read_only)
		return rs_err(st, -EROFS, "fsck: cannot repair a store opened read-only");
	ret = rs_run_job(st, fsck_job, &fk);
	if (!ret && fk.r.errors > fk.r.repaired)
		ret = -EUCLEAN;
	if (res) {
		fk.r.struct_size = res->struct_size;
		memcpy(res, &fk.r, res->struct_size);
	}
	for (i = 0; i < fk.n_objs; i++)
		free(fk.objs[i].name);
	free(fk.objs);
	free(fk.used);
	free(fk.nids);
	extset_destroy(&fk.inflight);
	return ret;
}
