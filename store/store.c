// SPDX-License-Identifier: MIT
/*
 * store.c: the store's lifecycle: mkfs, the superblock, open (load, replay,
 * start the commit thread), close, and the queries (statfs, info, perf).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <blkid/blkid.h>

#include "commit.h"
#include "debug.h"
#include "decode.h"
#include "deferred.h"
#include "internal.h"
#include "space.h"
#include "util.h"

/* Geometry limits of the format (bytes); mkfs makes nothing outside them. */
#define RS_LOGICAL_BLOCK_MAX	RS_SB_BLOCK	/* a superblock copy is one block */
#define RS_MIN_ALLOC_MIN	4096
#define RS_MIN_ALLOC_MAX	(1U << 24)
#define RS_INLINE_MAX		(1U << 20)

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
	o->max_group = 256;
	o->log_level = RAWSTORE_LOG_WARNING;
	o->deferred_max = 32768;
	o->max_queued_txns = 1024;
	o->max_queued_bytes = 256ULL << 20;
	o->deferred_new_max = -1;
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
	if (le32toh(sb->version) == 0 || (le32toh(sb->flags) & ~RS_SB_F_KNOWN) ||
	    (le32toh(sb->version) < RS_FORMAT_JOURNAL && sb->flags))
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
		     uint64_t size, const struct rs_disk_space_policy *pol, bool zeroed)
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
	k.buf[0] = 'Y';
	k.len = 1;
	ret = meta_put_sync(m, &k, pol, sizeof(*pol));
	if (ret)
		return ret;
	if (zeroed) {
		key_ext(&k, 'Z', data_start);
		put_le64(v, size - data_start);
		ret = meta_put_sync(m, &k, v, 8);
		if (ret)
			return ret;
	}
	key_ext(&k, 'F', data_start);
	put_le64(v, size - data_start);
	return meta_put_sync(m, &k, v, 8);
}

const char *rawstore_journal_mode_name(int mode)
{
	switch (mode) {
	case RAWSTORE_JOURNAL_DEVICE: return "device";
	case RAWSTORE_JOURNAL_ROCKSDB: return "rocksdb";
	default: return "?";
	}
}

#define JOURNAL_MIN	(1ULL << 20)
#define JOURNAL_MAX	(1ULL << 34)

/* The journal's length for @o on a store of @size bytes (0: RocksDB's WAL). */
static int mkfs_journal_size(const struct rawstore_mkfs_opts *o, uint64_t size, uint64_t *out)
{
	uint64_t j = o->journal_size;

	*out = 0;
	if (o->journal == RAWSTORE_JOURNAL_ROCKSDB) {
		if (j)
			return rs_err(NULL, -EINVAL, "mkfs: journal_size needs the device journal");
		return 0;
	}
	if (o->journal != RAWSTORE_JOURNAL_DEFAULT && o->journal != RAWSTORE_JOURNAL_DEVICE)
		return rs_err(NULL, -EINVAL, "mkfs: journal mode %d unknown", o->journal);
	if (j && (j < JOURNAL_MIN || j > JOURNAL_MAX || !is_aligned(j, RS_JREC_ALIGN)))
		return rs_err(NULL, -EINVAL, "mkfs: journal_size %llu must be a multiple of "
			      "4096 from 1 MiB to 16 GiB", (unsigned long long)j);
	if (!j) {
		/* 1/64 of the device, 4 MiB to 256 MiB, at most a quarter. */
		j = min_u64(max_u64(size / 64, 4ULL << 20), 256ULL << 20);
		j = max_u64(min_u64(j, round_down(size / 4, RS_JREC_ALIGN)), JOURNAL_MIN);
	}
	if (j > size / 2)
		return rs_err(NULL, -ENOSPC, "mkfs: a %llu-byte journal leaves no room for data "
			      "on %llu bytes", (unsigned long long)j, (unsigned long long)size);
	*out = j;
	return 0;
}

/*
 * Write the journal's region once, with zeros: its blocks then exist, so a
 * thin pool or the file system under a store file never refuses a journal
 * record for space (that would stop the store); and no record of an
 * earlier store is left (replay would refuse it anyway: another uuid).
 */
static int mkfs_journal_write(struct rs_dev *d, const char *dev, uint64_t jlen)
{
	const size_t chunk = 1 << 20;
	uint64_t done;
	void *z;
	int ret = 0;

	if (!jlen)
		return 0;
	z = rs_alloc_aligned(chunk);
	if (!z)
		return -ENOMEM;
	memset(z, 0, chunk);
	for (done = 0; done < jlen && !ret; done += chunk)
		ret = dev_write(d, z, RS_RESERVED_BYTES + done, (size_t)min_u64(chunk, jlen - done));
	free(z);
	if (ret)
		rs_err(NULL, ret, "mkfs: writing the journal region of %s failed", dev);
	return ret;
}

/* The new store's superblock (written last, once the rest is in place). */
static int mkfs_super(struct rs_disk_super *sb, const struct rawstore_mkfs_opts *o,
		      uint32_t logical_block, uint64_t size, uint64_t data_start, uint64_t jlen)
{
	memset(sb, 0, sizeof(*sb));
	sb->magic = htole64(RS_SB_MAGIC);
	sb->version = htole32(jlen ? RS_FORMAT_JOURNAL : 1);
	if (jlen) {
		sb->flags = htole32(RS_SB_F_JOURNAL);
		sb->journal_off = htole64(RS_RESERVED_BYTES);
		sb->journal_len = htole64(jlen);
	}
	if (getrandom(sb->uuid, sizeof(sb->uuid), 0) != sizeof(sb->uuid))
		return rs_err(NULL, -EIO, "mkfs: getrandom failed");
	sb->uuid[6] = (sb->uuid[6] & 0x0f) | 0x40;
	sb->uuid[8] = (sb->uuid[8] & 0x3f) | 0x80;
	sb->device_size = htole64(size);
	sb->data_start = htole64(data_start);
	sb->logical_block = htole32(logical_block);
	sb->min_alloc = htole32(o->min_alloc_size);
	sb->csum_type = htole32(RS_CSUM_CRC32C);
	sb->csum_block = htole32(o->csum_block_size);
	sb->inline_max = htole32(o->inline_max);
	sb->mkfs_time = htole64((uint64_t)time(NULL));
	super_seal(sb);
	return 0;
}

/*
 * Like mkfs.ext4: refuse a device that holds a file system, a partition
 * table or another signature libblkid knows.  0 if none was found,
 * -EEXIST if one was, -errno if the probe failed (all with a message).
 */
static int mkfs_check_signatures(const char *dev)
{
	const char *type = NULL, *what = "file system";
	blkid_probe pr;
	int ret;

	errno = 0;
	pr = blkid_new_probe_from_filename(dev);
	if (!pr) {
		ret = errno ? -errno : -EIO;
		return rs_err(NULL, ret, "mkfs: %s: cannot probe for existing signatures", dev);
	}
	blkid_probe_enable_superblocks(pr, 1);
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
	blkid_probe_enable_partitions(pr, 1);
	blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
	ret = blkid_do_safeprobe(pr);
	if (ret == 0) {
		if (blkid_probe_lookup_value(pr, "PTTYPE", &type, NULL) == 0) {
			what = "partition table";
		} else if (blkid_probe_lookup_value(pr, "TYPE", &type, NULL) != 0) {
			type = "unknown";
			what = "signature";
		}
	} else if (ret == -2) {
		type = "ambiguous";
		what = "set of signatures";
	}
	if (type)
		ret = rs_err(NULL, -EEXIST, "mkfs: %s holds a %s (%s)", dev, what, type);
	else if (ret < 0)
		ret = rs_err(NULL, -EIO, "mkfs: %s: probing for existing signatures failed", dev);
	else
		ret = 0;
	blkid_free_probe(pr);
	return ret;
}

/* The metadata directory must be absent or empty: 0, -EEXIST, -ENOTDIR. */
static int mkfs_check_meta_dir(const char *meta_dir)
{
	char cur[4096];
	struct dirent *e;
	struct stat sb;
	DIR *d;
	int ret = 0;

	snprintf(cur, sizeof(cur), "%s/CURRENT", meta_dir);
	if (!stat(cur, &sb))
		return rs_err(NULL, -EEXIST, "mkfs: %s already holds a database (a store's "
			      "metadata)", meta_dir);
	d = opendir(meta_dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;
		return rs_err(NULL, -errno, "mkfs: %s: cannot read the metadata directory",
			      meta_dir);
	}
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			ret = rs_err(NULL, -EEXIST, "mkfs: %s is not empty (it holds '%s')",
				     meta_dir, e->d_name);
			break;
		}
	}
	closedir(d);
	return ret;
}

int rawstore_mkfs(const char *dev, const char *meta_dir, const struct rawstore_mkfs_opts *uo)
{
	struct rawstore_mkfs_opts o;
	struct rs_disk_super sb, old;
	struct rs_disk_space_policy pol;
	bool zeroed;
	struct rs_dev *d;
	struct rs_meta *m;
	const struct rs_dev_geom *g;
	uint64_t size, data_start, jlen;
	int ret;

	rs_clear_err();
	rawstore_mkfs_opts_init(&o);
	if (copy_opts(&o, sizeof(o), uo))
		return rs_err(NULL, -EINVAL, "mkfs: bad options struct_size");
	ret = dev_open(NULL, dev, RAWSTORE_ENGINE_AUTO, 8, false, &d);
	if (ret)
		return ret;
	g = dev_geom(d);
	/* The superblock copies are 4 KiB blocks: refuse before creating anything. */
	if (g->logical_block > RS_LOGICAL_BLOCK_MAX) {
		ret = rs_err(NULL, -EINVAL, "mkfs: %s has %u-byte logical blocks; rawstore "
			     "supports at most %u", dev, g->logical_block, RS_LOGICAL_BLOCK_MAX);
		goto out_close_dev;
	}
	if (!is_pow2(o.min_alloc_size) || o.min_alloc_size < g->logical_block ||
	    o.min_alloc_size < RS_MIN_ALLOC_MIN || o.min_alloc_size > RS_MIN_ALLOC_MAX ||
	    !is_pow2(o.csum_block_size) || o.csum_block_size < g->logical_block ||
	    o.csum_block_size > o.min_alloc_size || o.inline_max > RS_INLINE_MAX) {
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
	ret = mkfs_journal_size(&o, size, &jlen);
	if (ret)
		goto out_close_dev;
	data_start = round_up(RS_RESERVED_BYTES + jlen, o.min_alloc_size);
	if (size < data_start + 16ULL * o.min_alloc_size) {
		ret = rs_err(NULL, -ENOSPC, "mkfs: %s is too small (%llu bytes)", dev,
			     (unsigned long long)g->size);
		goto out_close_dev;
	}
	/* Nothing is written before these: without force, nothing is lost. */
	if (!o.force) {
		if ((!super_read(d, RS_SB_PRIMARY_OFFSET, &old) &&
		     le64toh(old.magic) == RS_SB_MAGIC) ||
		    (!super_read(d, RS_SB_BACKUP_OFFSET, &old) &&
		     le64toh(old.magic) == RS_SB_MAGIC)) {
			ret = rs_err(NULL, -EEXIST, "mkfs: %s already holds a rawstore", dev);
			goto out_close_dev;
		}
		ret = mkfs_check_signatures(dev);
		if (!ret)
			ret = mkfs_check_meta_dir(meta_dir);
		if (ret)
			goto out_close_dev;
	} else {
		meta_destroy(meta_dir);
	}

	ret = mkfs_super(&sb, &o, g->logical_block, size, data_start, jlen);
	if (ret)
		goto out_close_dev;

	/* The data area: zeroed or preallocated by policy (space.c). */
	ret = space_mkfs(d, &o, data_start, size, &pol, &zeroed);
	if (ret)
		goto out_close_dev;
	ret = mkfs_journal_write(d, dev, jlen);
	if (ret)
		goto out_close_dev;

	ret = meta_open(NULL, meta_dir, true, &m);
	if (ret) {
		if (ret == -EEXIST)
			rs_err(NULL, ret, "mkfs: %s already holds a database", meta_dir);
		goto out_close_dev;
	}
	ret = mkfs_meta(m, &sb, data_start, size, &pol, zeroed);
	if (!ret && jlen) {
		struct rs_disk_jpos jp = { 0, 0 };	/* seq 1 goes to the start */
		struct rs_key k = { 1, "J" };

		ret = meta_put_sync(m, &k, &jp, sizeof(jp));
	}
	if (ret)
		goto out_close_meta;
	rs_crash_check(NULL, RS_CRASH_MKFS_META);	/* test hook (debug.h) */
	/* The superblock goes last: the device is a store only when complete. */
	ret = super_write(d, RS_SB_BACKUP_OFFSET, &sb);
	if (!ret) {
		rs_crash_check(NULL, RS_CRASH_MKFS_BACKUP_SB);	/* test hook (debug.h) */
		ret = super_write(d, RS_SB_PRIMARY_OFFSET, &sb);
	}
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

/*
 * META's copy of the superblock (key "S", written at mkfs) read from
 * @meta_dir opened read-only: 0 and *@sb if it is there and valid,
 * -ENOENT if META has none (or no database), -EUCLEAN if it is corrupt.
 */
static int meta_super_copy(const char *meta_dir, struct rs_disk_super *sb)
{
	struct rs_meta *m;
	struct rs_key k;
	char *v;
	size_t vl;
	int ret;

	if (!meta_dir || meta_open_mode(NULL, meta_dir, META_RO, &m))
		return -ENOENT;
	key_super(&k);
	ret = meta_get(m, NULL, &k, &v, &vl);
	if (!ret) {
		if (vl == sizeof(*sb))
			memcpy(sb, v, sizeof(*sb));
		else
			ret = -EUCLEAN;
		rocksdb_free(v);
	}
	meta_close(m);
	if (!ret && super_check(sb))
		ret = -EUCLEAN;
	return ret == -EUCLEAN || ret == 0 ? ret : -ENOENT;
}

/*
 * Neither device copy is usable (@rp, @rb: what each was).  With META's
 * copy and repair_super, open with it (check_geometry() then verifies it
 * against the device; rawstore_fsck() with repair rewrites both copies).
 * Without repair_super, say that fsck --repair can rebuild them: the
 * store is damaged, not absent.  Else @err as it was.
 */
static int super_from_meta(struct rawstore *st, const char *dev, const char *meta_dir,
			   int rp, int rb, int err)
{
	const char *what = rp == -EMEDIUMTYPE && rb == -EMEDIUMTYPE ? "missing" :
			   rp == -EMEDIUMTYPE || rb == -EMEDIUMTYPE ? "missing or corrupt" :
			   "corrupt";
	struct rs_disk_super sb;

	if (rp == -EPROTO || rb == -EPROTO || meta_super_copy(meta_dir, &sb))
		return err;
	if (!st->opts.repair_super)
		return rs_err(st, -EUCLEAN, "%s: both superblock copies are %s, but the metadata "
			      "in %s holds a copy: if this is that store's device, 'rawstore fsck "
			      "--repair' rewrites them from it (mkfs would destroy the store); if "
			      "not, check the device path", dev, what, meta_dir);
	rs_log(st, RAWSTORE_LOG_WARNING, "%s: both superblock copies are %s; using the copy "
	       "in %s", dev, what, meta_dir);
	st->sb = sb;
	st->sb_from_meta = true;
	return 0;
}

static int load_super(struct rawstore *st, const char *dev, const char *meta_dir)
{
	struct rs_disk_super p, b;
	int rp, rb, ret;

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
	if (rp != -EPROTO && rb != -EPROTO && (rp == -EMEDIUMTYPE || rp == -EUCLEAN) &&
	    (rb == -EMEDIUMTYPE || rb == -EUCLEAN)) {
		ret = super_from_meta(st, dev, meta_dir, rp, rb, 1);
		if (ret <= 0)
			return ret;
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

/*
 * Every geometry field of a superblock whose crc is valid is still checked:
 * units are powers of two within what mkfs makes, the data area starts
 * after both superblock copies and ends at the recorded size, and every
 * sum is overflow-safe.
 */
static bool journal_bad(const struct rs_disk_super *sb)
{
	uint64_t off = le64toh(sb->journal_off), len = le64toh(sb->journal_len);

	if (!(le32toh(sb->flags) & RS_SB_F_JOURNAL))
		return off || len;
	return off < RS_RESERVED_BYTES || !is_aligned(off, RS_JREC_ALIGN) ||
	       !is_aligned(len, RS_JREC_ALIGN) || len < JOURNAL_MIN || len > JOURNAL_MAX ||
	       off + len > le64toh(sb->data_start);
}

static int check_geometry(struct rawstore *st, const char *dev)
{
	const struct rs_dev_geom *g = dev_geom(st->dev);
	struct rs_disk_super *sb = &st->sb;
	uint32_t lb = le32toh(sb->logical_block);
	const char *why = NULL;

	st->device_size = le64toh(sb->device_size);
	st->data_start = le64toh(sb->data_start);
	st->min_alloc = le32toh(sb->min_alloc);
	st->csum_block = le32toh(sb->csum_block);
	st->inline_max = le32toh(sb->inline_max);
	st->data_end = st->device_size;
	if (!is_pow2(lb) || lb < 512 || lb > RS_LOGICAL_BLOCK_MAX)
		why = "logical block size";
	else if (!is_pow2(st->min_alloc) || st->min_alloc < RS_MIN_ALLOC_MIN ||
		 st->min_alloc > RS_MIN_ALLOC_MAX || st->min_alloc < lb)
		why = "allocation unit";
	else if (!is_pow2(st->csum_block) || st->csum_block > st->min_alloc ||
		 st->csum_block < lb || st->csum_block < g->logical_block ||
		 le32toh(sb->csum_type) != RS_CSUM_CRC32C)
		why = "checksum block or type";
	else if (st->inline_max > RS_INLINE_MAX)
		why = "inline limit";
	else if (st->data_start < RS_RESERVED_BYTES ||
		 !is_aligned(st->data_start, st->min_alloc) ||
		 !is_aligned(st->device_size, st->min_alloc) ||
		 st->data_start >= st->device_size ||
		 st->device_size - st->data_start < 16ULL * st->min_alloc)
		why = "data area (it must start after both superblock copies and hold 16 units)";
	else if (journal_bad(sb))
		why = "journal (it must lie between the superblocks and the data area)";
	if (why)
		return rs_err(st, -EUCLEAN, "%s: superblock geometry is inconsistent: %s "
			      "(logical block %u, unit %u, checksum block %u, data [%llu, %llu))",
			      dev, why, lb, st->min_alloc, st->csum_block,
			      (unsigned long long)st->data_start,
			      (unsigned long long)st->device_size);
	if (g->size < st->device_size)
		return rs_err(st, -ENXIO, "%s: device has %llu bytes but the store was made "
			      "for %llu", dev, (unsigned long long)g->size,
			      (unsigned long long)st->device_size);
	st->lim = (struct rs_limits){ st->data_start, st->data_end, st->min_alloc,
				      st->csum_block };
	return 0;
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

/* Both device superblocks := @sb, flushed. */
static int supers_write(struct rawstore *st, const struct rs_disk_super *sb)
{
	int ret = super_write(st->dev, RS_SB_PRIMARY_OFFSET, sb);

	if (!ret)
		ret = super_write(st->dev, RS_SB_BACKUP_OFFSET, sb);
	if (!ret && dev_flush(st->dev) < 0)
		ret = -EIO;
	return ret;
}

/*
 * Does the metadata's superblock copy @msb differ from the device's only
 * by a larger device size that the device has?  That is a grow that
 * committed its metadata and stopped before the device superblocks.
 */
static bool grow_interrupted(struct rawstore *st, const struct rs_disk_super *msb)
{
	struct rs_disk_super a = *msb, b = st->sb;

	a.device_size = b.device_size = 0;
	a.crc = b.crc = 0;
	return !memcmp(&a, &b, sizeof(a)) &&
	       le64toh(msb->device_size) > le64toh(st->sb.device_size) &&
	       dev_geom(st->dev)->size >= le64toh(msb->device_size);
}

/* META's superblock copy ("S"), checked: 0, or -EUCLEAN with a message. */
static int meta_super_get(struct rawstore *st, const char *meta_dir, struct rs_disk_super *msb)
{
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
	if (vl != sizeof(*msb)) {
		rocksdb_free(v);
		return rs_err(st, -EUCLEAN, "%s: superblock record is corrupt", meta_dir);
	}
	memcpy(msb, v, sizeof(*msb));
	rocksdb_free(v);
	if (!super_crc_ok(msb))
		return rs_err(st, -EUCLEAN, "%s: superblock record is corrupt", meta_dir);
	return 0;
}

static int load_meta(struct rawstore *st, const char *dev, const char *meta_dir)
{
	struct rs_counts_rec counts;
	uint64_t shared;
	struct rs_disk_super msb;
	struct rs_key k;
	char *v;
	size_t vl;
	int ret;

	ret = meta_super_get(st, meta_dir, &msb);
	if (ret)
		return ret;
	if (memcmp(msb.uuid, st->sb.uuid, 16)) {
		char a[37], b[37];

		uuid_str(st->sb.uuid, a);
		uuid_str(msb.uuid, b);
		return rs_err(st, -EXDEV, "device %s (uuid %s) does not belong to metadata %s "
			      "(uuid %s)", dev, a, meta_dir, b);
	}
	if (memcmp(&msb, &st->sb, sizeof(msb)) && !grow_interrupted(st, &msb))
		return rs_err(st, -EUCLEAN, "%s: superblock differs from its copy in %s (same "
			      "uuid, different geometry or options)", dev, meta_dir);
	/* The right metadata: now the journal's records go over it. */
	if (le32toh(st->sb.flags) & RS_SB_F_JOURNAL) {
		ret = meta_journal_open(st->meta);
		if (!ret)
			ret = meta_super_get(st, meta_dir, &msb);
		if (ret)
			return ret;
	}
	if (memcmp(&msb, &st->sb, sizeof(msb)) && grow_interrupted(st, &msb)) {
		/* A grow recorded its new size (perhaps in a journal record
		 * replayed just now) and stopped before the device
		 * superblocks: finish it. */
		st->sb = msb;
		ret = check_geometry(st, dev);
		if (!ret && !st->opts.read_only)
			ret = supers_write(st, &msb);
		if (ret)
			return ret;
		rs_log(st, RAWSTORE_LOG_WARNING, "%s: finished an interrupted grow to %llu bytes",
		       dev, (unsigned long long)st->device_size);
	}
	if (memcmp(&msb, &st->sb, sizeof(msb)))
		return rs_err(st, -EUCLEAN, "%s: superblock differs from its copy in %s (same "
			      "uuid, different geometry or options)", dev, meta_dir);
	key_nid(&k);
	ret = meta_get(st->meta, NULL, &k, &v, &vl);
	if (ret)
		return ret == -ENOENT ? rs_err(st, -EUCLEAN, "no nid record") : ret;
	st->next_nid = vl == 8 ? get_le64(v) : 0;
	rocksdb_free(v);
	if (!st->next_nid)
		return rs_err(st, -EUCLEAN, "nid record is corrupt");
	st->stored_nid = st->next_nid;
	ret = space_load(st);
	if (ret)
		return ret;
	ret = count_prefix(st, 'R', &shared);
	if (ret)
		return ret;
	st->shared_any = shared > 0;
	key_counts(&k);
	ret = meta_get(st->meta, NULL, &k, &v, &vl);
	if (!ret) {
		ret = decode_counts_rec(v, vl, &counts);
		rocksdb_free(v);
	}
	if (ret == -ENOENT || ret == -EUCLEAN) {
		/* No (usable) record: count, and fsck --repair records it. */
		ret = count_prefix(st, 'O', &st->n_objects);
		if (!ret)
			ret = count_prefix(st, 'C', &st->n_colls);
		rs_log(st, RAWSTORE_LOG_WARNING, "object counts were missing; counted %llu "
		       "objects", (unsigned long long)st->n_objects);
		return ret;
	}
	if (ret)
		return ret;
	st->n_objects = counts.objects;
	st->n_colls = counts.collections;
	return 0;
}

/* ---- deferred writes ---- */

/* What the space layer may ask of the commit thread (space.h). */
static const struct rs_job_runner space_jobs = { rs_run_job, rs_commit_wb, commit_on_thread,
						  commit_drain };

static void count_data_problem(void *arg, const struct rawstore_fsck_problem *p)
{
	if (p->kind == RAWSTORE_FSCK_CSUM || p->kind == RAWSTORE_FSCK_IO)
		(*(uint64_t *)arg)++;
}

/*
 * repair_super, read-write: before anything is written to @dev, open it
 * read-only the same way and, if the superblock comes from META's copy,
 * read every object's data against its checksums.  A device whose data
 * does not match is not this store's: the open is refused (-EUCLEAN), so
 * that neither the open's own writes nor fsck's new superblocks land on
 * it.  0 otherwise (an open that fails here fails again, with its own
 * error, in the caller).
 */
static int repair_super_probe(const char *dev, const char *meta_dir,
			      const struct rawstore_open_opts *o)
{
	struct rawstore_open_opts ro = *o;
	struct rawstore_fsck_opts fo;
	struct rawstore *st;
	uint64_t bad = 0;
	bool from_meta;

	ro.read_only = 1;
	ro.log_level = RAWSTORE_LOG_ERR;	/* the read-write open says it all again */
	ro.rebuild_freelist = 0;
	ro.zero_policy = 0;
	ro.punch_policy = 0;
	if (rawstore_open(dev, meta_dir, &ro, &st))
		return 0;
	from_meta = st->sb_from_meta;
	if (from_meta) {
		rawstore_fsck_opts_init(&fo);
		fo.deep = 1;
		fo.fn = count_data_problem;
		fo.arg = &bad;
		rawstore_fsck(st, &fo, NULL);
	}
	rawstore_close(st);
	rs_clear_err();
	if (bad)
		return rs_err(NULL, -EUCLEAN, "%s: both superblock copies are lost, and the "
			      "metadata's copy is not used: %llu checksum blocks of object data "
			      "on %s do not match the metadata in %s; is this the store's "
			      "device? Nothing was written", dev, (unsigned long long)bad, dev,
			      meta_dir);
	return 0;
}

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
	if (st->opts.read_only && st->opts.rebuild_freelist) {
		ret = rs_err(st, -EROFS, "open: rebuild_freelist writes; it cannot be read-only");
		goto out_free;
	}
	if (st->opts.repair_super && !st->opts.read_only) {
		ret = repair_super_probe(dev, meta_dir, &st->opts);
		if (ret)
			goto out_free;
	}
	if (st->opts.deferred_new_max > (1 << 20) || st->opts.deferred_new_max < -1) {
		ret = rs_err(st, -EINVAL, "open: deferred_new_max must be -1 (auto) or 0 to "
			     "1048576 bytes, not %d", st->opts.deferred_new_max);
		goto out_free;
	}
	st->perf.struct_size = sizeof(st->perf);
	ret = dev_open_flags(st, dev, st->opts.engine, st->opts.queue_depth,
			     (st->opts.buffered ? DEV_BUFFERED : 0) |
			     (st->opts.read_only ? DEV_READ_ONLY : 0), &st->dev);
	if (ret)
		goto out_free;
	if (st->opts.deferred_new_max < 0)
		st->opts.deferred_new_max = dev_geom(st->dev)->rotational ? 16384 : 0;
	ret = load_super(st, dev, meta_dir);
	if (ret)
		goto out_close_dev;
	ret = check_geometry(st, dev);
	if (ret && st->sb_from_meta) {
		char why[256];

		snprintf(why, sizeof(why), "%s", rawstore_errmsg());
		rs_err(st, ret, "%s: the superblock copy in %s does not fit this device, so it "
		       "is not rewritten: %s", dev, meta_dir, why);
	}
	if (ret)
		goto out_close_dev;
	ret = meta_open_mode(st, meta_dir, st->opts.read_only ? META_RO : META_RW, &st->meta);
	if (ret)
		goto out_close_dev;
	ret = load_meta(st, dev, meta_dir);
	/* read-only: no replay (a write); reads lay the records over the data */
	if (!ret)
		ret = st->opts.read_only ? deferred_load_overlay(st) : deferred_replay(st);
	if (ret)
		goto out_close_meta;
	space_snapshot(st);
	st->wb = rocksdb_writebatch_wi_create(0, 1);
	space_attach(st);
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&st->rwlock, &ra);
	pthread_rwlockattr_destroy(&ra);
	ret = commit_start(st);
	if (ret)
		goto out_destroy_locks;
	ret = space_start(st, &space_jobs);
	if (ret)
		goto out_stop_commit;
	rs_log(st, RAWSTORE_LOG_INFO, "opened %s (%s, %s I/O, qd %u, %s, deferred writes: "
	       "overwrites <= %u, new <= %d bytes), metadata %s", dev, dev_engine_name(st->dev),
	       dev_geom(st->dev)->direct ? "direct" : "buffered", st->opts.queue_depth,
	       dev_geom(st->dev)->rotational ? "rotational" : "non-rotational",
	       st->opts.deferred_max, st->opts.deferred_new_max, meta_dir);
	*out = st;
	return 0;

out_stop_commit:
	commit_stop(st);
out_destroy_locks:
	pthread_rwlock_destroy(&st->rwlock);
	rocksdb_writebatch_wi_destroy(st->wb);
out_close_meta:
	meta_close(st->meta);
out_close_dev:
	dev_close(st->dev);
out_free:
	space_destroy(st);
	free(st);
	return ret;
}

int rawstore_close(struct rawstore *st)
{
	int ret;

	if (!st)
		return -EINVAL;
	if (commit_on_thread(st))
		return -EDEADLK;
	space_stop(st);
	commit_stop(st);
	deferred_close(st, !rs_failed(st));
	space_close(st, !rs_failed(st));
	ret = rs_failed(st);
	rocksdb_writebatch_wi_destroy(st->wb);
	meta_close(st->meta);
	dev_close(st->dev);
	space_destroy(st);
	pthread_rwlock_destroy(&st->rwlock);
	free(st);
	return ret;
}

struct grow_arg {
	uint64_t size;
};

/* The commit thread, with no group in flight: see rawstore_grow(). */
static int grow_job(struct rawstore *st, void *arg)
{
	const struct grow_arg *ga = arg;
	uint64_t old = st->device_size;
	struct rs_disk_super sb = st->sb;
	struct rs_key k;
	int ret;

	if (rs_failed(st))
		return rs_failed(st);
	if (ga->size == old)
		return 0;
	sb.device_size = htole64(ga->size);
	super_seal(&sb);
	key_super(&k);
	rocksdb_writebatch_wi_put(st->wb, k.buf, k.len, (const char *)&sb, sizeof(sb));
	ret = space_grow(st, st->wb, old, ga->size - old);
	if (ret) {
		rocksdb_writebatch_wi_clear(st->wb);
		rs_store_stop(st, ret);
		return ret;
	}
	/* Durable in the metadata first: a crash from here on is finished
	 * at the next open (grow_interrupted). */
	ret = rs_commit_wb(st);
	if (ret)
		return ret;
	pthread_rwlock_wrlock(&st->rwlock);
	st->sb = sb;
	st->device_size = st->data_end = ga->size;
	st->lim.data_end = ga->size;
	space_snapshot(st);
	pthread_rwlock_unlock(&st->rwlock);
	rs_crash_check(st, RS_CRASH_GROW_SUPER);
	ret = supers_write(st, &sb);
	if (ret)
		return rs_err(st, ret, "grow: the metadata records %llu bytes, but writing the "
			      "device superblocks failed (the next open rewrites them)",
			      (unsigned long long)ga->size);
	rs_log(st, RAWSTORE_LOG_INFO, "grew the data area from %llu to %llu bytes",
	       (unsigned long long)old, (unsigned long long)ga->size);
	return 0;
}

int rawstore_grow(struct rawstore *st, uint64_t size, uint64_t *new_size)
{
	uint64_t dsize;
	struct grow_arg ga;
	int ret;

	if (!st)
		return -EINVAL;
	rs_clear_err();
	if (st->opts.read_only)
		return rs_err(st, -EROFS, "grow: the store is open read-only");
	dsize = round_down(dev_geom(st->dev)->size, st->min_alloc);
	ga.size = size ? round_down(size, st->min_alloc) : dsize;
	if (ga.size < st->device_size)
		return rs_err(st, -EINVAL, "grow: %llu bytes is less than the store's %llu: a store "
			      "never shrinks", (unsigned long long)ga.size,
			      (unsigned long long)st->device_size);
	if (ga.size > dsize)
		return rs_err(st, -EINVAL, "grow: %llu bytes is more than the device has (%llu)",
			      (unsigned long long)ga.size, (unsigned long long)dsize);
	ret = rs_run_job(st, grow_job, &ga);
	if (new_size)
		*new_size = st->device_size;
	return ret;
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
	space_statfs(st, &s);
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
	i.rotational = g->rotational;
	i.deferred_max = st->opts.deferred_max;
	i.deferred_new_max = (uint32_t)st->opts.deferred_new_max;
	i.journal = meta_journaled(st->meta) ? "device" : "rocksdb";
	i.journal_offset = le64toh(st->sb.journal_off);
	i.journal_size = le64toh(st->sb.journal_len);
	uuid_str(st->sb.uuid, i.uuid);
	space_info(st, &i);
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
