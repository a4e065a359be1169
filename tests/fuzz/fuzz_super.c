// SPDX-License-Identifier: MIT
/*
 * fuzz_super: rawstore_open() of a device whose superblock copies hold
 * arbitrary bytes, against the metadata of the store that mkfs made there.
 * The open must never crash, leak or hang; it either refuses with one of the
 * documented errors and a message, or opens a store whose geometry is
 * exactly the one mkfs recorded (a superblock that disagrees with the
 * metadata must never be accepted).
 *
 * Input: one control byte, then up to 256 bytes of struct rs_disk_super.
 *   bit 0     recompute the superblock's crc32c, to reach the field checks
 *   bits 1-2  0: the bytes replace the primary copy; 1: the backup copy
 *             (primary zeroed); 2: both copies; 3: primary, and the backup
 *             is zeroed
 *   bit 3     keep the input's uuid; otherwise the uuid of the store made
 *             at start-up replaces it (each mkfs draws a new one, so seeds
 *             and crashing inputs stay meaningful from run to run)
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rawstore/rawstore.h"
#include "ondisk.h"
#include "util.h"

#define DEV_SIZE (8u << 20)

static char dir[256], dev[300], meta[300];
static uint8_t orig[RS_SB_BLOCK];		/* primary as mkfs wrote it */
static struct rawstore_info want;
static int fd = -1;

static int rm_cb(const char *p, const struct stat *s, int f, struct FTW *w)
{
	(void)s, (void)f, (void)w;
	return remove(p);
}

static void cleanup(void)
{
	if (fd >= 0)
		close(fd);
	if (dir[0])
		nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "fuzz_super: %s: %d (%s)\n", what, err, rawstore_errmsg());
	exit(1);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *t = getenv("TMPDIR");
	struct rawstore_open_opts oo;
	struct rawstore *st;
	int ret;

	(void)argc, (void)argv;
	snprintf(dir, sizeof(dir), "%s/rawstore-fuzz-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(dir))
		die("mkdtemp", -errno);
	atexit(cleanup);
	snprintf(dev, sizeof(dev), "%s/dev", dir);
	snprintf(meta, sizeof(meta), "%s/meta", dir);
	fd = open(dev, O_CREAT | O_RDWR, 0644);
	if (fd < 0 || ftruncate(fd, DEV_SIZE))
		die("device file", -errno);
	ret = rawstore_mkfs(dev, meta, NULL);
	if (ret)
		die("mkfs", ret);
	if (pread(fd, orig, sizeof(orig), RS_SB_PRIMARY_OFFSET) != sizeof(orig))
		die("read superblock", -errno);
	rawstore_open_opts_init(&oo);
	ret = rawstore_open(dev, meta, &oo, &st);
	if (ret)
		die("open", ret);
	want.struct_size = sizeof(want);
	ret = rawstore_get_info(st, &want);
	if (ret || rawstore_close(st))
		die("info", ret);
	return 0;
}

static void put_copy(uint64_t off, const uint8_t *sb, size_t len, int zero)
{
	uint8_t blk[RS_SB_BLOCK];

	if (zero) {
		memset(blk, 0, sizeof(blk));
	} else {
		memcpy(blk, orig, sizeof(blk));
		if (sb)
			memcpy(blk, sb, len);
	}
	if (pwrite(fd, blk, sizeof(blk), (off_t)off) != sizeof(blk))
		die("write superblock", -errno);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t sb[sizeof(struct rs_disk_super)];
	struct rawstore_open_opts oo;
	struct rawstore_info got;
	struct rawstore *st = NULL;
	size_t len;
	int ret, where;

	if (size < 1)
		return 0;
	len = size - 1 < sizeof(sb) ? size - 1 : sizeof(sb);
	memcpy(sb, orig, sizeof(sb));
	memcpy(sb, data + 1, len);
	if (!(data[0] & 8))
		memcpy(sb + offsetof(struct rs_disk_super, uuid),
		       orig + offsetof(struct rs_disk_super, uuid), 16);
	if (data[0] & 1)
		put_le32(sb + offsetof(struct rs_disk_super, crc),
			 rs_crc32c(sb, offsetof(struct rs_disk_super, crc)));
	where = (data[0] >> 1) & 3;
	put_copy(RS_SB_PRIMARY_OFFSET, where == 1 ? NULL : sb, sizeof(sb), where == 1);
	put_copy(RS_SB_BACKUP_OFFSET, where == 1 || where == 2 ? sb : NULL, sizeof(sb),
		 where == 3);

	rawstore_open_opts_init(&oo);
	oo.log_level = 0;
	ret = rawstore_open(dev, meta, &oo, &st);
	if (getenv("FUZZ_SUPER_VERBOSE"))
		fprintf(stderr, "open: %d %s\n", ret, ret ? rawstore_errmsg() : "");
	if (ret) {
		const char *msg = rawstore_errmsg();

		if (ret != -EUCLEAN && ret != -EMEDIUMTYPE && ret != -EPROTO &&
		    ret != -EXDEV && ret != -ENXIO) {
			fprintf(stderr, "open returned %d (%s)\n", ret, msg);
			abort();
		}
		if (!msg || !*msg) {
			fprintf(stderr, "open returned %d without a message\n", ret);
			abort();
		}
		return 0;
	}
	got.struct_size = sizeof(got);
	if (rawstore_get_info(st, &got))
		abort();
	if (got.min_alloc_size != want.min_alloc_size ||
	    got.csum_block_size != want.csum_block_size ||
	    got.inline_max != want.inline_max || got.device_size != want.device_size ||
	    got.data_start != want.data_start || strcmp(got.uuid, want.uuid) ||
	    got.format_version != want.format_version) {
		fprintf(stderr, "opened with a superblock that disagrees with the metadata: "
			"min_alloc %u/%u csum_block %u/%u inline_max %u/%u device_size "
			"%llu/%llu data_start %llu/%llu uuid %s/%s\n",
			got.min_alloc_size, want.min_alloc_size, got.csum_block_size,
			want.csum_block_size, got.inline_max, want.inline_max,
			(unsigned long long)got.device_size,
			(unsigned long long)want.device_size,
			(unsigned long long)got.data_start, (unsigned long long)want.data_start,
			got.uuid, want.uuid);
		abort();
	}
	if (rawstore_close(st))
		abort();
	return 0;
}
