// SPDX-License-Identifier: MIT
/* store.c: mkfs, open/close, the commit thread, statfs, info, perf, reclaim. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "debug.h"
#include "internal.h"
#include "util.h"

int rs_crash_point;
int rs_crash_countdown;

void rs_debug_set_crash_point(int point, int countdown)
{
	rs_crash_point = point;
	rs_crash_countdown = countdown > 0 ? countdown : 1;
}

void rs_crash_check(struct rawstore *st, int point)
{
	(void)st;
	if (rs_crash_point != point)
		return;
	if (--rs_crash_countdown > 0)
		return;
	_exit(RS_CRASH_EXIT);
}

void rawstore_mkfs_opts_init(struct rawstore_mkfs_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->struct_size = sizeof(*o);
	o->min_alloc_size = 4096;
	o->csum_block_size = 4096;
	o->inline_max = 4096;
}

void rawstore_open_opts_init(struct rawstore_open_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->struct_size = sizeof(*o);
	o->engine = RAWSTORE_ENGINE_AUTO;
	o->queue_depth = 64;
	o->max_group = 64;
	o->log_level = RAWSTORE_LOG_WARNING;
	o->deferred_max = 32768;
}

/* Copy a caller's options struct of possibly older (smaller) size. */
static int copy_opts(void *dst, size_t dsize, const void *src)
{
	size_t ssize;

	if (!src)
		return 0;
	memcpy(&ssize, src, sizeof(ssize));
	if (ssize < sizeof(size_t) || ssize > dsize)
		return -EINVAL;
	memcpy((char *)dst + sizeof(size_t), (const char *)src + sizeof(size_t),
	       ssize - sizeof(size_t));
	return 0;
}

static void uuid_str(const uint8_t *u, char *out)
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
		 u[12], u[13], u[14], u[15]);
}

static void super_seal(struct rs_disk_super *sb)
{
	sb->crc = htole32(rs_crc32c(sb, offsetof(struct rs_disk_super, crc)));
}

static bool super_crc_ok(const struct rs_disk_super *sb)
{
	return le32toh(sb->crc) == rs_crc32c(sb, offsetof(struct rs_disk_super, crc));
}

/* 0 valid, -EMEDIUMTYPE foreign, -EUCLEAN corrupt, -EPROTO newer format. */
static int super_check(const struct rs_disk_super *sb)
{
	if (le64toh(sb->magic) != RS_SB_MAGIC)
		return -EMEDIUMTYPE;
	if (!super_crc_ok(sb))
		return -EUCLEAN;
	if (le32toh(sb->version) > RS_FORMAT_VERSION)
		return -EPROTO;
	if (le32toh(sb->version) == 0 || sb->flags)
		return -EUCLEAN;
	return 0;
}

static int super_read(struct rs_dev *d, uint64_t off, struct rs_disk_super *sb)
{
	void *buf = rs_alloc_aligned(RS_SB_BLOCK);
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = dev_read(d, buf, off, RS_SB_BLOCK);
	if (!ret)
		memcpy(sb, buf, sizeof(*sb));
	free(buf);
	return ret;
}

static int super_write(struct rs_dev *d, uint64_t off, const struct rs_disk_super *sb)
{
	void *buf = rs_alloc_aligned(RS_SB_BLOCK);
	int ret;

	if (!buf)
		return -ENOMEM;
	memset(buf, 0, RS_SB_BLOCK);
	memcpy(buf, sb, sizeof(*sb));
	ret = dev_write(d, buf, off, RS_SB_BLOCK);
	free(buf);
	return ret;
}

static int mkfs_meta(struct rs_meta *m, const struct rs_disk_super *sb, uint64_t data_start,
		     uint64_t size)
{
	struct rs_disk_counts counts = { 0, 0 };
	struct rs_key k;
	char v[8];
	int ret;

	key_super(&k);
	ret = meta_put_sync(m, &k, sb, sizeof(*sb));
	if (ret)
		return ret;
	key_nid(&k);
	put_le64(v, 1);
	ret = meta_put_sync(m, &k, v, 8);
	if (ret)
		return ret;
	key_counts(&k);
	ret = meta_put_sync(m, &k, &counts, sizeof(counts));
	if (ret)
		return ret;
	key_ext(&k, 'F', data_start);
	put_le64(v, size - data_start);
	return meta_put_sync(m, &k, v, 8);
}

int rawstore_mkfs(const char *dev, const char *meta_dir, const struct rawstore_mkfs_opts *uo)
{
	struct rawstore_mkfs_opts o;
	struct rs_disk_super sb, old;
	struct rs_dev *d;
	struct rs_meta *m;
	const struct rs_dev_geom *g;
	uint64_t size, data_start;
	int ret;

	rs_clear_err();
	rawstore_mkfs_opts_init(&o);
	if (copy_opts(&o, sizeof(o), uo))
		return rs_err(NULL, -EINVAL, "mkfs: bad options struct_size");
	ret = dev_open(NULL, dev, RAWSTORE_ENGINE_AUTO, 8, false, &d);
	if (ret)
		return ret;
	g = dev_geom(d);
	if (!is_pow2(o.min_alloc_size) || o.min_alloc_size < g->logical_block ||
	    o.min_alloc_size < 4096 || o.min_alloc_size > (1U << 24) ||
	    !is_pow2(o.csum_block_size) || o.csum_block_size < g->logical_block ||
	    o.csum_block_size > o.min_alloc_size || o.inline_max > (1U << 20)) {
		ret = rs_err(NULL, -EINVAL,
			     "mkfs: min_alloc_size %u / csum_block_size %u / inline_max %u "
			     "invalid for logical block size %u", o.min_alloc_size,
			     o.csum_block_size, o.inline_max, g->logical_block);
		goto out_close_dev;
	}
	size = o.device_size ? o.device_size : g->size;
	if (size > g->size) {
		ret = rs_err(NULL, -EINVAL, "mkfs: device_size %llu exceeds device (%llu bytes)",
			     (unsigned long long)size, (unsigned long long)g->size);
		goto out_close_dev;
	}
	size = round_down(size, o.min_alloc_size);
	data_start = round_up(RS_RESERVED_BYTES, o.min_alloc_size);
	if (size < data_start + 16ULL * o.min_alloc_size) {
		ret = rs_err(NULL, -ENOSPC, "mkfs: %s is too small (%llu bytes)", dev,
			     (unsigned long long)g->size);
		goto out_close_dev;
	}
	if (!o.force) {
		if ((!super_read(d, RS_SB_PRIMARY_OFFSET, &old) &&
		     le64toh(old.magic) == RS_SB_MAGIC) ||
		    (!super_read(d, RS_SB_BACKUP_OFFSET, &old) &&
		     le64toh(old.magic) == RS_SB_MAGIC)) {
			ret = rs_err(NULL, -EEXIST, "mkfs: %s already holds a rawstore "
				     "(use force to overwrite)", dev);
			goto out_close_dev;
		}
	} else {
		meta_destroy(meta_dir);
	}

	memset(&sb, 0, sizeof(sb));
	sb.magic = htole64(RS_SB_MAGIC);
	sb.version = htole32(RS_FORMAT_VERSION);
	if (getrandom(sb.uuid, sizeof(sb.uuid), 0) != sizeof(sb.uuid)) {
		ret = rs_err(NULL, -EIO, "mkfs: getrandom failed");
		goto out_close_dev;
	}
	sb.uuid[6] = (sb.uuid[6] & 0x0f) | 0x40;
	sb.uuid[8] = (sb.uuid[8] & 0x3f) | 0x80;
	sb.device_size = htole64(size);
	sb.data_start = htole64(data_start);
	sb.logical_block = htole32(g->logical_block);
	sb.min_alloc = htole32(o.min_alloc_size);
	sb.csum_type = htole32(RS_CSUM_CRC32C);
	sb.csum_block = htole32(o.csum_block_size);
	sb.inline_max = htole32(o.inline_max);
	sb.mkfs_time = htole64((uint64_t)time(NULL));
	super_seal(&sb);

	ret = meta_open(NULL, meta_dir, true, &m);
	if (ret) {
		if (ret == -EEXIST)
			rs_err(NULL, ret, "mkfs: %s already holds a database (use force)",
			       meta_dir);
		goto out_close_dev;
	}
	ret = mkfs_meta(m, &sb, data_start, size);
	if (ret)
		goto out_close_meta;
	/* The superblock goes last: the device is a store only when complete. */
	ret = super_write(d, RS_SB_BACKUP_OFFSET, &sb);
	if (!ret)
		ret = super_write(d, RS_SB_PRIMARY_OFFSET, &sb);
	if (!ret && dev_flush(d) < 0)
		ret = -EIO;
	if (ret)
		rs_err(NULL, ret, "mkfs: writing the superblock to %s failed", dev);

out_close_meta:
	meta_close(m);
out_close_dev:
	dev_close(d);
	return ret;
}

static void obs_put(struct rawstore *st, char type, uint64_t off, uint64_t len)
{
	struct rs_key k;
	char v[8];

	key_ext(&k, type, off);
	put_le64(v, len);
	rocksdb_writebatch_wi_put(st->wb, k.buf, k.len, v, 8);
}

static void obs_del(struct rawstore *st, char type, uint64_t off)
{
	struct rs_key k;

	key_ext(&k, type, off);
	rocksdb_writebatch_wi_delete(st->wb, k.buf, k.len);
}

static void free_put(void *a, uint64_t off, uint64_t len)
{
	obs_put(a, 'F', off, len);
}

static void free_del(void *a, uint64_t off)
{
	obs_del(a, 'F', off);
}

static void unp_put(void *a, uint64_t off, uint64_t len)
{
	obs_put(a, 'P', off, len);
}

static void unp_del(void *a, uint64_t off)
{
	obs_del(a, 'P', off);
}

static int load_super(struct rawstore *st, const char *dev)
{
	struct rs_disk_super p, b;
	int rp, rb;

	rp = super_read(st->dev, RS_SB_PRIMARY_OFFSET, &p);
	if (!rp)
		rp = super_check(&p);
	if (!rp) {
		st->sb = p;
		return 0;
	}
	rb = super_read(st->dev, RS_SB_BACKUP_OFFSET, &b);
	if (!rb)
		rb = super_check(&b);
	if (!rb && rp != -EPROTO) {
		rs_log(st, RAWSTORE_LOG_WARNING, "%s: primary superblock is %s; using the backup",
		       dev, rp == -EMEDIUMTYPE ? "missing" : "corrupt");
		st->sb = b;
		return 0;
	}
	if (rp == -EPROTO || rb == -EPROTO)
		return rs_err(st, -EPROTO, "%s: on-disk format version %u is newer than "
			      "supported version %u", dev, le32toh(rp == -EPROTO ? p.version :
								   b.version), RS_FORMAT_VERSION);
	if (rp == -EMEDIUMTYPE && rb == -EMEDIUMTYPE)
		return rs_err(st, -EMEDIUMTYPE, "%s: no rawstore superblock (foreign or empty "
			      "device)", dev);
	if (rp == -EUCLEAN || rb == -EUCLEAN)
		return rs_err(st, -EUCLEAN, "%s: superblock is corrupt (crc mismatch in both "
			      "copies)", dev);
	return rs_err(st, rp, "%s: cannot read the superblock", dev);
}

static int check_geometry(struct rawstore *st, const char *dev)
{
	const struct rs_dev_geom *g = dev_geom(st->dev);
	struct rs_disk_super *sb = &st->sb;

	st->device_size = le64toh(sb->device_size);
	st->data_start = le64toh(sb->data_start);
	st->min_alloc = le32toh(sb->min_alloc);
	st->csum_block = le32toh(sb->csum_block);
	st->inline_max = le32toh(sb->inline_max);
	st->data_end = st->device_size;
	if (!is_pow2(st->min_alloc) || !is_pow2(st->csum_block) ||
	    st->csum_block > st->min_alloc || st->csum_block < g->logical_block ||
	    le32toh(sb->csum_type) != RS_CSUM_CRC32C ||
	    !is_aligned(st->data_start, st->min_alloc) ||
	    !is_aligned(st->device_size, st->min_alloc) || st->data_start >= st->device_size)
		return rs_err(st, -EUCLEAN, "%s: superblock geometry is inconsistent", dev);
	if (g->size < st->device_size)
		return rs_err(st, -ENXIO, "%s: device has %llu bytes but the store was made "
			      "for %llu", dev, (unsigned long long)g->size,
			      (unsigned long long)st->device_size);
	return 0;
}

static int load_extents(struct rawstore *st, char type, struct extset *s)
{
	struct rs_iter *it;
	uint64_t last_end = 0;
	int ret;

	ret = meta_iter_new(st->meta, NULL, &type, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it); meta_iter_next(it)) {
		size_t kl, vl;
		const char *k = meta_iter_key(it, &kl), *v = meta_iter_val(it, &vl);
		uint64_t off, len;

		if (kl != 8 || vl != 8) {
			ret = -EUCLEAN;
			break;
		}
		off = get_be64(k);
		len = get_le64(v);
		if (!len || off < st->data_start || off + len > st->data_end ||
		    off < last_end || !is_aligned(off | len, st->min_alloc)) {
			ret = -EUCLEAN;
			break;
		}
		last_end = off + len;
		ret = extset_insert(s, off, len);
		if (ret)
			break;
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	if (ret == -EUCLEAN)
		rs_err(st, ret, "%s list in metadata is corrupt",
		       type == 'F' ? "free" : "unpunched");
	return ret;
}

static int count_prefix(struct rawstore *st, char type, uint64_t *out)
{
	struct rs_iter *it;
	uint64_t n = 0;
	int ret;

	ret = meta_iter_new(st->meta, NULL, &type, 1, &it);
	if (ret)
		return ret;
	for (; meta_iter_valid(it); meta_iter_next(it))
		n++;
	ret = meta_iter_error(it);
	meta_iter_free(it);
	*out = n;
	return ret;
}

static int cmp_pext(const void *a, const void *b)
{
	const struct pext *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
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
 * The free list is the complement of the extents the objects use.  Rebuild
 * it from the onodes (all must decode and none may overlap) and replace the
 * recorded free and unpunched lists in one synced batch.
 */
static int rebuild_freelist(struct rawstore *st)
{
	struct pext_vec used = { 0 };
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

		ret = onode_decode(v, vl, st->csum_block, &o);
		if (ret) {
			ret = rs_err(st, -EUCLEAN, "cannot rebuild the free list: an object "
				     "record is corrupt");
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
	wb = rocksdb_writebatch_wi_create(0, 1);
	ret = delete_all(st, wb, 'F');
	if (!ret)
		ret = delete_all(st, wb, 'P');
	for (i = 0; !ret && i <= used.n; i++) {
		uint64_t next = i < used.n ? used.v[i].off : st->data_end;

		if (i < used.n && (!is_aligned(next | used.v[i].len, st->min_alloc) ||
				   next < st->data_start || next + used.v[i].len > st->data_end)) {
			ret = rs_err(st, -EUCLEAN, "cannot rebuild the free list: object extents "
				     "lie outside the data area");
			break;
		}
		if (next > pos) {
			struct rs_key k;
			char v[8];

			key_ext(&k, 'F', pos);
			put_le64(v, next - pos);
			rocksdb_writebatch_wi_put(wb, k.buf, k.len, v, 8);
			ret = extset_insert(&st->freeset, pos, next - pos);
		}
		if (i < used.n)	/* clones share units: extents may overlap */
			pos = max_u64(pos, next + used.v[i].len);
	}
	if (!ret)
		ret = meta_commit(st->meta, wb);
	if (!ret)
		rs_log(st, RAWSTORE_LOG_WARNING, "rebuilt the free list from %zu object extents: "
		       "%llu bytes free in %llu extents", used.n,
		       (unsigned long long)st->freeset.total,
		       (unsigned long long)st->freeset.count);
	rocksdb_writebatch_wi_destroy(wb);
out_free:
	pext_vec_free(&used);
	return ret;
}

static int load_meta(struct rawstore *st, const char *dev, const char *meta_dir)
{
	uint64_t shared;
	struct rs_disk_super msb;
	struct rs_key k;
	char *v;
	size_t vl;
	int ret;

	key_super(&k);
	ret = meta_get(st->meta, NULL, &k, &v, &vl);
	if (ret == -ENOENT)
		return rs_err(st, -EUCLEAN, "%s: metadata has no superblock record", meta_dir);
	if (ret)
		return ret;
	if (vl != sizeof(msb)) {
		rocksdb_free(v);
		return rs_err(st, -EUCLEAN, "%s: superblock record is corrupt", meta_dir);
	}
	memcpy(&msb, v, sizeof(msb));
	rocksdb_free(v);
	if (!super_crc_ok(&msb))
		return rs_err(st, -EUCLEAN, "%s: superblock record is corrupt", meta_dir);
	if (memcmp(msb.uuid, st->sb.uuid, 16)) {
		char a[37], b[37];

		uuid_str(st->sb.uuid, a);
		uuid_str(msb.uuid, b);
		return rs_err(st, -EXDEV, "device %s (uuid %s) does not belong to metadata %s "
			      "(uuid %s)", dev, a, meta_dir, b);
	}
	key_nid(&k);
	ret = meta_get(st->meta, NULL, &k, &v, &vl);
	if (ret)
		return ret == -ENOENT ? rs_err(st, -EUCLEAN, "no nid record") : ret;
	st->next_nid = vl == 8 ? get_le64(v) : 0;
	rocksdb_free(v);
	if (!st->next_nid)
		return rs_err(st, -EUCLEAN, "nid record is corrupt");
	st->stored_nid = st->next_nid;
	if (st->opts.rebuild_freelist) {
		ret = rebuild_freelist(st);
	} else {
		ret = load_extents(st, 'F', &st->freeset);
		if (!ret)
			ret = load_extents(st, 'P', &st->unpunched);
	}
	if (ret)
		return ret;
	ret = count_prefix(st, 'R', &shared);
	if (ret)
		return ret;
	st->shared_any = shared > 0;
	key_counts(&k);
	ret = meta_get(st->meta, NULL, &k, &v, &vl);
	if (ret == -ENOENT || (!ret && vl != sizeof(struct rs_disk_counts))) {
		/* No (usable) record: count, and fsck --repair records it. */
		if (!ret)
			rocksdb_free(v);
		ret = count_prefix(st, 'O', &st->n_objects);
		if (!ret)
			ret = count_prefix(st, 'C', &st->n_colls);
		rs_log(st, RAWSTORE_LOG_WARNING, "object counts were missing; counted %llu "
		       "objects", (unsigned long long)st->n_objects);
		return ret;
	}
	if (ret)
		return ret;
	st->n_objects = get_le64(v);
	st->n_colls = get_le64(v + 8);
	rocksdb_free(v);
	return 0;
}

/* ---- deferred writes ---- */

int rs_defer(struct rawstore *st, uint64_t pofs, const uint8_t *data, uint64_t len)
{
	struct rs_disk_deferred h = { htole64(pofs), htole32((uint32_t)len), 0 };
	struct rs_deferred *d;
	struct rs_key k;
	char *v;

	if (st->dq_n == st->dq_cap) {
		size_t cap = st->dq_cap ? st->dq_cap * 2 : 16;
		struct rs_deferred *nv = realloc(st->dq, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		st->dq = nv;
		st->dq_cap = cap;
	}
	d = &st->dq[st->dq_n];
	d->data = rs_alloc_aligned(len);
	v = malloc(sizeof(h) + len);
	if (!d->data || !v) {
		free(d->data);
		free(v);
		return -ENOMEM;
	}
	memcpy(d->data, data, len);
	d->pofs = pofs;
	d->len = len;
	d->seq = st->deferred_seq++;
	memcpy(v, &h, sizeof(h));
	memcpy(v + sizeof(h), data, len);
	key_ext(&k, 'D', d->seq);
	rocksdb_writebatch_wi_put(st->wb, k.buf, k.len, v, sizeof(h) + len);
	free(v);
	st->dq_n++;
	return 0;
}

/* Drop this group's deferred writes from index @from on (not committed). */
static void dq_truncate(struct rawstore *st, size_t from)
{
	size_t i;

	for (i = from; i < st->dq_n; i++)
		free(st->dq[i].data);
	st->dq_n = from;
}

/* After the commit: write the group's deferred data to the device. */
static int dq_apply(struct rawstore *st)
{
	struct rs_io *ios;
	size_t i, n;
	int ret = 0;

	if (!st->dq_n)
		return 0;
	ios = calloc(st->dq_n, sizeof(*ios));
	if (!ios)
		return -ENOMEM;
	/*
	 * Writes in one batch complete in any order, so a later write to the
	 * same units goes into a later batch: the last one must win.
	 */
	for (i = 0, n = 0; i < st->dq_n && !ret; i++) {
		const struct rs_deferred *d = &st->dq[i];
		size_t j;

		for (j = 0; j < n; j++)
			if (d->pofs < ios[j].off + ios[j].len && ios[j].off < d->pofs + d->len)
				break;
		if (j < n) {
			ret = dev_submit(st->dev, ios, (unsigned int)n);
			n = 0;
		}
		ios[n++] = (struct rs_io){ true, d->data, d->pofs, d->len };
	}
	if (!ret && n)
		ret = dev_submit(st->dev, ios, (unsigned int)n);
	free(ios);
	if (ret)
		return rs_err(st, ret, "applying deferred writes failed (replayed at next open)");
	if (st->d_done_n + st->dq_n > st->d_done_cap) {
		size_t cap = (st->d_done_n + st->dq_n) * 2;
		uint64_t *nv = realloc(st->d_done, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		st->d_done = nv;
		st->d_done_cap = cap;
	}
	for (i = 0; i < st->dq_n; i++)
		st->d_done[st->d_done_n++] = st->dq[i].seq;
	PERF_ADD(st, deferred_writes, st->dq_n);
	dq_truncate(st, 0);
	return 0;
}

/* Delete the records of applied deferred writes (after a device flush). */
static void d_done_delete(struct rawstore *st, size_t n)
{
	struct rs_key k;
	size_t i;

	for (i = 0; i < n; i++) {
		key_ext(&k, 'D', st->d_done[i]);
		rocksdb_writebatch_wi_delete(st->wb, k.buf, k.len);
	}
}

static void d_done_forget(struct rawstore *st, size_t n)
{
	if (!n)
		return;
	memmove(st->d_done, st->d_done + n, (st->d_done_n - n) * sizeof(uint64_t));
	st->d_done_n -= n;
}

/* At open: apply the deferred records of a previous run, flush, delete. */
static int replay_deferred(struct rawstore *st)
{
	rocksdb_writebatch_wi_t *wb;
	struct rs_iter *it;
	uint64_t n = 0;
	char p = 'D';
	int ret;

	ret = meta_iter_new(st->meta, NULL, &p, 1, &it);
	if (ret)
		return ret;
	wb = rocksdb_writebatch_wi_create(0, 1);
	for (; meta_iter_valid(it); meta_iter_next(it)) {
		size_t kl, vl;
		const char *k = meta_iter_key(it, &kl), *v = meta_iter_val(it, &vl);
		struct rs_disk_deferred h;
		uint64_t pofs, len;
		void *buf;

		if (kl != 8 || vl < sizeof(h)) {
			ret = rs_err(st, -EUCLEAN, "deferred write record is corrupt");
			break;
		}
		memcpy(&h, v, sizeof(h));
		pofs = le64toh(h.pofs);
		len = le32toh(h.len);
		if (vl != sizeof(h) + len || !len || !is_aligned(pofs | len, st->min_alloc) ||
		    pofs < st->data_start || pofs + len > st->data_end) {
			ret = rs_err(st, -EUCLEAN, "deferred write record is corrupt");
			break;
		}
		buf = rs_alloc_aligned(len);
		if (!buf) {
			ret = -ENOMEM;
			break;
		}
		memcpy(buf, v + sizeof(h), len);
		ret = dev_write(st->dev, buf, pofs, len);
		free(buf);
		if (ret) {
			rs_err(st, ret, "replaying a deferred write failed");
			break;
		}
		st->deferred_seq = max_u64(st->deferred_seq, get_be64(k) + 1);
		rocksdb_writebatch_wi_delete(wb, k - 1, kl + 1);
		n++;
	}
	if (!ret)
		ret = meta_iter_error(it);
	meta_iter_free(it);
	if (!ret && n) {
		ret = dev_flush(st->dev) < 0 ? -EIO : 0;
		if (!ret)
			ret = meta_commit(st->meta, wb);
		if (!ret)
			rs_log(st, RAWSTORE_LOG_INFO, "replayed %llu deferred writes",
			       (unsigned long long)n);
	}
	PERF_ADD(st, deferred_replayed, n);
	rocksdb_writebatch_wi_destroy(wb);
	return ret;
}

static void *worker_main(void *arg);

int rawstore_open(const char *dev, const char *meta_dir, const struct rawstore_open_opts *o,
		  struct rawstore **out)
{
	pthread_rwlockattr_t ra;
	struct rawstore *st;
	int ret;

	rs_clear_err();
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	rawstore_open_opts_init(&st->opts);
	if (copy_opts(&st->opts, sizeof(st->opts), o)) {
		ret = rs_err(NULL, -EINVAL, "open: bad options struct_size");
		goto out_free;
	}
	if (!st->opts.queue_depth || st->opts.queue_depth > 4096 || !st->opts.max_group) {
		ret = rs_err(st, -EINVAL, "open: queue_depth and max_group must be > 0");
		goto out_free;
	}
	st->perf.struct_size = sizeof(st->perf);
	extset_init(&st->freeset, true);
	extset_init(&st->unpunched, false);
	ret = dev_open(st, dev, st->opts.engine, st->opts.queue_depth, st->opts.buffered,
		       &st->dev);
	if (ret)
		goto out_free;
	ret = load_super(st, dev);
	if (ret)
		goto out_close_dev;
	ret = check_geometry(st, dev);
	if (ret)
		goto out_close_dev;
	ret = meta_open(st, meta_dir, false, &st->meta);
	if (ret)
		goto out_close_dev;
	ret = load_meta(st, dev, meta_dir);
	if (!ret)
		ret = replay_deferred(st);
	if (ret)
		goto out_close_meta;
	rs_snapshot_stats(st);
	st->wb = rocksdb_writebatch_wi_create(0, 1);
	st->free_obs = (struct extset_observer){ free_put, free_del, st };
	st->unpunched_obs = (struct extset_observer){ unp_put, unp_del, st };
	st->freeset.obs = &st->free_obs;
	st->unpunched.obs = &st->unpunched_obs;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&st->rwlock, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&st->qlock, NULL);
	pthread_cond_init(&st->qcond, NULL);
	ret = -pthread_create(&st->worker, NULL, worker_main, st);
	if (ret)
		goto out_destroy_locks;
	rs_log(st, RAWSTORE_LOG_INFO, "opened %s (%s, %s I/O, qd %u), metadata %s", dev,
	       dev_engine_name(st->dev), dev_geom(st->dev)->direct ? "direct" : "buffered",
	       st->opts.queue_depth, meta_dir);
	*out = st;
	return 0;

out_destroy_locks:
	pthread_cond_destroy(&st->qcond);
	pthread_mutex_destroy(&st->qlock);
	pthread_rwlock_destroy(&st->rwlock);
	rocksdb_writebatch_wi_destroy(st->wb);
out_close_meta:
	meta_close(st->meta);
out_close_dev:
	dev_close(st->dev);
out_free:
	extset_destroy(&st->freeset);
	extset_destroy(&st->unpunched);
	free(st);
	return ret;
}

int rawstore_close(struct rawstore *st)
{
	int ret;

	if (!st)
		return -EINVAL;
	if (pthread_equal(pthread_self(), st->worker))
		return -EDEADLK;
	pthread_mutex_lock(&st->qlock);
	st->stopping = true;
	pthread_cond_broadcast(&st->qcond);
	pthread_mutex_unlock(&st->qlock);
	pthread_join(st->worker, NULL);
	if (!st->failed && st->d_done_n) {
		rocksdb_writebatch_wi_clear(st->wb);
		if (dev_flush(st->dev) >= 0) {
			d_done_delete(st, st->d_done_n);
			meta_commit(st->meta, st->wb);
		}
	}
	free(st->d_done);
	dq_truncate(st, 0);
	free(st->dq);
	ret = st->failed;
	rocksdb_writebatch_wi_destroy(st->wb);
	meta_close(st->meta);
	dev_close(st->dev);
	st->freeset.obs = NULL;
	st->unpunched.obs = NULL;
	extset_destroy(&st->freeset);
	extset_destroy(&st->unpunched);
	pthread_cond_destroy(&st->qcond);
	pthread_mutex_destroy(&st->qlock);
	pthread_rwlock_destroy(&st->rwlock);
	free(st);
	return ret;
}

/* ---- the commit thread ---- */

static void complete(struct rawstore_txn *t, int result)
{
	rawstore_txn_cb cb = t->cb;
	void *arg = t->cb_arg;

	t->result = result;
	__atomic_store_n(&t->in_flight, false, __ATOMIC_RELEASE);
	if (cb)
		cb(t, result, arg);
}

static void release_allocs(struct rawstore *st, const struct pext_vec *allocs)
{
	const struct extset_observer *obs = st->freeset.obs;
	size_t i;

	st->freeset.obs = NULL;
	for (i = 0; i < allocs->n; i++)
		extset_insert(&st->freeset, allocs->v[i].off, allocs->v[i].len);
	st->freeset.obs = obs;
}

static int append_vec(struct pext_vec *dst, const struct pext_vec *src)
{
	size_t i;
	int ret;

	for (i = 0; i < src->n; i++) {
		ret = pext_push(dst, src->v[i].off, src->v[i].len);
		if (ret)
			return ret;
	}
	return 0;
}

static void drop_unflushed(struct rawstore *st, const struct pext_vec *allocs)
{
	size_t i;

	/* Simulate a power loss: what was not flushed is garbage now. */
	for (i = 0; i < allocs->n; i++) {
		void *buf = rs_alloc_aligned(allocs->v[i].len);

		if (!buf)
			continue;
		memset(buf, 0xa5, allocs->v[i].len);
		dev_write(st->dev, buf, allocs->v[i].off, allocs->v[i].len);
		free(buf);
	}
	rs_crash_check(st, RS_CRASH_DROP_UNFLUSHED);
}

/* Make the group's frees and allocations effective and commit the batch. */
static int commit_locked(struct rawstore *st, struct rs_txn_ctx *g)
{
	struct rs_key k;
	char v[8];
	size_t i;
	int ret;

	for (i = 0; i < g->allocs.n; i++)
		extset_remove(&st->unpunched, g->allocs.v[i].off, g->allocs.v[i].len);
	for (i = 0; i < g->frees.n; i++) {
		ret = extset_insert(&st->freeset, g->frees.v[i].off, g->frees.v[i].len);
		if (!ret)
			ret = extset_insert(&st->unpunched, g->frees.v[i].off,
					    g->frees.v[i].len);
		if (ret)
			return rs_err(st, -EUCLEAN, "freeing [%llu, +%llu) twice: %s",
				      (unsigned long long)g->frees.v[i].off,
				      (unsigned long long)g->frees.v[i].len, strerror(-ret));
	}
	if (st->next_nid != st->stored_nid) {
		key_nid(&k);
		put_le64(v, st->next_nid);
		rocksdb_writebatch_wi_put(st->wb, k.buf, k.len, v, 8);
	}
	if (g->d_objects || g->d_colls) {
		char c[16];

		put_le64(c, st->n_objects + (uint64_t)g->d_objects);
		put_le64(c + 8, st->n_colls + (uint64_t)g->d_colls);
		key_counts(&k);
		rocksdb_writebatch_wi_put(st->wb, k.buf, k.len, c, 16);
	}
	ret = meta_commit(st->meta, st->wb);
	PERF_ADD(st, db_syncs, 1);
	if (!ret)
		st->stored_nid = st->next_nid;
	return ret;
}

static void commit_group(struct rawstore *st, struct rawstore_txn **ts, unsigned int n)
{
	struct rs_txn_ctx g = { 0 };
	size_t n_done = 0;
	unsigned int i, ok = 0;
	int ret = 0, err;

	rocksdb_writebatch_wi_clear(st->wb);
	for (i = 0; i < n; i++) {
		struct rs_txn_ctx c = { 0 };
		char *err = NULL;

		size_t dq_mark = st->dq_n;

		if (st->failed) {
			ts[i]->result = st->failed;
			continue;
		}
		rocksdb_writebatch_wi_set_save_point(st->wb);
		ret = txn_apply(st, ts[i], &c);
		if (!ret)
			ret = append_vec(&g.allocs, &c.allocs);
		if (!ret)
			ret = append_vec(&g.frees, &c.frees);
		if (ret) {
			release_allocs(st, &c.allocs);
			dq_truncate(st, dq_mark);
			rocksdb_writebatch_wi_rollback_to_save_point(st->wb, &err);
			if (err) {
				st->failed = rs_err(st, -EIO, "batch rollback failed: %s", err);
				rocksdb_free(err);
			}
			ts[i]->result = ret;
			PERF_ADD(st, txns_failed, 1);
		} else {
			ts[i]->result = 0;
			g.d_objects += c.d_objects;
			g.d_colls += c.d_colls;
			g.wrote_data |= c.wrote_data;
			ok++;
		}
		pext_vec_free(&c.allocs);
		pext_vec_free(&c.frees);
	}
	if (!ok)
		goto out_complete;
	ret = 0;
	/* Flush for new data, and now and then so deferred records can go. */
	if (g.wrote_data || st->d_done_n >= 32) {
		n_done = st->d_done_n;
		d_done_delete(st, n_done);
		rs_crash_check(st, RS_CRASH_BEFORE_FLUSH);
		if (rs_crash_point == RS_CRASH_DROP_UNFLUSHED)
			drop_unflushed(st, &g.allocs);
		ret = dev_flush(st->dev);
		if (ret == 1) {
			PERF_ADD(st, dev_flushes_skipped, 1);
			ret = 0;
		} else {
			PERF_ADD(st, dev_flushes, 1);
		}
		if (ret) {
			/* After a failed flush the device state is unknown: stop. */
			rs_err(st, ret, "device flush failed; group not committed, store "
			       "stopped");
			release_allocs(st, &g.allocs);
			n_done = 0;
			st->failed = ret;
		}
	}
	if (!ret) {
		rs_crash_check(st, RS_CRASH_BEFORE_COMMIT);
		pthread_rwlock_wrlock(&st->rwlock);
		ret = commit_locked(st, &g);
		if (!ret) {
			st->n_objects += (uint64_t)g.d_objects;
			st->n_colls += (uint64_t)g.d_colls;
			rs_snapshot_stats(st);
			d_done_forget(st, n_done);
			rs_crash_check(st, RS_CRASH_BEFORE_DEFERRED);
			/* Committed either way: a failed apply is replayed at open. */
			err = dq_apply(st);
			if (err)
				st->failed = err;
		} else {
			/* In-memory and on-disk state may differ now: stop. */
			st->failed = ret;
		}
		pthread_rwlock_unlock(&st->rwlock);
		if (!ret) {
			PERF_ADD(st, commit_groups, 1);
			PERF_ADD(st, txns_committed, ok);
			rs_crash_check(st, RS_CRASH_AFTER_COMMIT);
		}
	}
	for (i = 0; i < n && ret; i++)
		if (!ts[i]->result)
			ts[i]->result = ret;

out_complete:
	dq_truncate(st, 0);
	rocksdb_writebatch_wi_clear(st->wb);
	pext_vec_free(&g.allocs);
	pext_vec_free(&g.frees);
	for (i = 0; i < n; i++)
		complete(ts[i], ts[i]->result);
}

static void *worker_main(void *arg)
{
	struct rawstore *st = arg;
	struct rawstore_txn **ts;

	ts = calloc(st->opts.max_group, sizeof(*ts));
	for (;;) {
		unsigned int n = 0;

		pthread_mutex_lock(&st->qlock);
		while (!st->qhead && !st->stopping)
			pthread_cond_wait(&st->qcond, &st->qlock);
		if (!st->qhead) {
			pthread_mutex_unlock(&st->qlock);
			break;
		}
		if (st->qhead->job || !ts) {
			struct rawstore_txn *t = st->qhead;

			st->qhead = t->next;
			if (!st->qhead)
				st->qtail = NULL;
			pthread_mutex_unlock(&st->qlock);
			complete(t, t->job ? t->job(st, t->job_arg) : -ENOMEM);
			continue;
		}
		while (st->qhead && !st->qhead->job && n < st->opts.max_group) {
			ts[n++] = st->qhead;
			st->qhead = st->qhead->next;
		}
		if (!st->qhead)
			st->qtail = NULL;
		pthread_mutex_unlock(&st->qlock);
		commit_group(st, ts, n);
	}
	free(ts);
	return NULL;
}

int rawstore_submit_async(struct rawstore *st, struct rawstore_txn *t, rawstore_txn_cb cb,
			  void *arg)
{
	if (!st || !t)
		return -EINVAL;
	if (__atomic_exchange_n(&t->in_flight, true, __ATOMIC_ACQ_REL))
		return -EBUSY;
	t->cb = cb;
	t->cb_arg = arg;
	t->next = NULL;
	t->failed_op = -1;
	pthread_mutex_lock(&st->qlock);
	if (st->stopping) {
		pthread_mutex_unlock(&st->qlock);
		t->in_flight = false;
		return -ESHUTDOWN;
	}
	if (st->qtail)
		st->qtail->next = t;
	else
		st->qhead = t;
	st->qtail = t;
	pthread_cond_signal(&st->qcond);
	pthread_mutex_unlock(&st->qlock);
	return 0;
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	int result;
};

static void wake(struct rawstore_txn *t, int result, void *arg)
{
	struct waiter *w = arg;

	(void)t;
	pthread_mutex_lock(&w->lock);
	w->done = true;
	w->result = result;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int rawstore_submit(struct rawstore *st, struct rawstore_txn *t)
{
	struct waiter w = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, 0 };
	int ret;

	/* From a completion callback this would wait for itself. */
	if (st && pthread_equal(pthread_self(), st->worker))
		return -EDEADLK;
	ret = rawstore_submit_async(st, t, wake, &w);
	if (ret)
		return ret;
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return w.result;
}

int rs_run_job(struct rawstore *st, rs_job_fn fn, void *arg)
{
	struct rawstore_txn t;

	memset(&t, 0, sizeof(t));
	t.job = fn;
	t.job_arg = arg;
	return rawstore_submit(st, &t);
}

int rs_check_supers(struct rawstore *st, bool repair)
{
	static const uint64_t where[2] = { RS_SB_PRIMARY_OFFSET, RS_SB_BACKUP_OFFSET };
	struct rs_disk_super sb;
	int i, bad = 0, ret;

	for (i = 0; i < 2; i++) {
		ret = super_read(st->dev, where[i], &sb);
		if (ret)
			return ret;
		if (!memcmp(&sb, &st->sb, sizeof(sb)))
			continue;
		if (repair && !super_write(st->dev, where[i], &st->sb) && dev_flush(st->dev) >= 0)
			continue;
		bad |= 1 << i;
	}
	return bad;
}

void rs_snapshot_stats(struct rawstore *st)
{
	st->snap.free = st->freeset.total;
	st->snap.free_extents = st->freeset.count;
	st->snap.largest_free = extset_largest(&st->freeset);
	st->snap.unpunched = st->unpunched.total;
}

int rs_commit_wb(struct rawstore *st)
{
	int ret;

	pthread_rwlock_wrlock(&st->rwlock);
	ret = meta_commit(st->meta, st->wb);
	PERF_ADD(st, db_syncs, 1);
	if (ret)
		st->failed = ret;
	rs_snapshot_stats(st);
	pthread_rwlock_unlock(&st->rwlock);
	rocksdb_writebatch_wi_clear(st->wb);
	return ret;
}

/* ---- queries ---- */

int rawstore_statfs(struct rawstore *st, struct rawstore_statfs *out)
{
	struct rawstore_statfs s;

	if (!st || !out || out->struct_size < sizeof(size_t) || out->struct_size > sizeof(s))
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	s.struct_size = out->struct_size;
	pthread_rwlock_rdlock(&st->rwlock);
	s.device_size = st->device_size;
	s.data_size = st->data_end - st->data_start;
	s.free = st->snap.free;
	s.allocated = s.data_size - s.free;
	s.unpunched = st->snap.unpunched;
	s.free_extents = st->snap.free_extents;
	s.largest_free = st->snap.largest_free;
	s.objects = st->n_objects;
	s.collections = st->n_colls;
	s.min_alloc_size = st->min_alloc;
	pthread_rwlock_unlock(&st->rwlock);
	memcpy(out, &s, s.struct_size);
	return 0;
}

int rawstore_get_info(struct rawstore *st, struct rawstore_info *info)
{
	const struct rs_dev_geom *g;
	struct rawstore_info i;

	if (!st || !info || info->struct_size < sizeof(size_t) ||
	    info->struct_size > sizeof(i))
		return -EINVAL;
	g = dev_geom(st->dev);
	memset(&i, 0, sizeof(i));
	i.struct_size = info->struct_size;
	i.io_engine = dev_engine_name(st->dev);
	i.direct_io = g->direct;
	i.is_block_device = g->is_bdev;
	i.write_cache = g->write_cache;
	i.logical_block_size = g->logical_block;
	i.min_alloc_size = st->min_alloc;
	i.csum_block_size = st->csum_block;
	i.inline_max = st->inline_max;
	i.format_version = le32toh(st->sb.version);
	i.queue_depth = st->opts.queue_depth;
	i.device_size = st->device_size;
	i.data_start = st->data_start;
	i.discard_max_bytes = g->discard_max;
	i.write_zeroes_max_bytes = g->write_zeroes_max;
	uuid_str(st->sb.uuid, i.uuid);
	memcpy(info, &i, i.struct_size);
	return 0;
}

int rawstore_perf_get(struct rawstore *st, struct rawstore_perf *p)
{
	struct rawstore_perf s;
	size_t n, off;

	if (!st || !p || p->struct_size < sizeof(size_t) || p->struct_size > sizeof(s))
		return -EINVAL;
	n = p->struct_size;
	/* every field after struct_size is a uint64_t counter */
	for (off = offsetof(struct rawstore_perf, txns_committed); off < sizeof(s); off += 8)
		*(uint64_t *)((char *)&s + off) =
			__atomic_load_n((uint64_t *)((char *)&st->perf + off), __ATOMIC_RELAXED);
	s.struct_size = n;
	memcpy(p, &s, n);
	return 0;
}

static int reclaim_job(struct rawstore *st, void *arg)
{
	struct pext p;
	uint64_t pos = 0, punched = 0;
	int ret = 0, ret2 = 0;

	(void)arg;
	if (st->failed)
		return st->failed;
	rocksdb_writebatch_wi_clear(st->wb);
	while (extset_next(&st->unpunched, pos, &p)) {
		ret = dev_punch_hole(st->dev, p.off, p.len);
		if (ret) {
			rs_err(st, ret, "punching [%llu, +%llu) failed",
			       (unsigned long long)p.off, (unsigned long long)p.len);
			break;
		}
		extset_remove(&st->unpunched, p.off, p.len);
		punched += p.len;
		pos = p.off + p.len;
	}
	if (punched)
		ret2 = rs_commit_wb(st);
	PERF_ADD(st, bytes_punched, punched);
	return ret ? ret : ret2;
}

int rawstore_reclaim(struct rawstore *st)
{
	if (!st)
		return -EINVAL;
	return rs_run_job(st, reclaim_job, NULL);
}
