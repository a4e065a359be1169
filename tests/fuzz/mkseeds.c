// SPDX-License-Identifier: MIT
/*
 * mkseeds: write the seed corpora of the fuzz targets into DIR/<target>/
 * from records the library itself encodes (so the seeds follow the format).
 * Usage: mkseeds DIR  (tests/fuzz/corpus is the checked-in output)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rawstore/rawstore.h"
#include "ondisk.h"
#include "onode.h"

static const char *out;

static void put(const char *target, const char *name, uint8_t ctl, const void *rec,
		size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", out, target);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", out, target, name);
	f = fopen(path, "w");
	if (!f || fputc(ctl, f) == EOF || fwrite(rec, 1, len, f) != len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

static void onode_seed(const char *name, uint32_t cb, uint32_t inl, uint32_t n_ext,
		       uint32_t ext_len)
{
	struct rs_onode o;
	char *rec;
	size_t len;
	uint32_t i, j;

	memset(&o, 0, sizeof(o));
	o.nid = 42;
	o.alloc_hint = n_ext ? 4u << 20 : 0;
	if (inl) {
		o.inl = malloc(inl);
		memset(o.inl, 'x', inl);
		o.inline_len = inl;
		o.size = inl;
	}
	o.ext = calloc(n_ext ? n_ext : 1, sizeof(*o.ext));
	for (i = 0; i < n_ext; i++) {
		o.ext[i].lofs = (uint64_t)i * 2 * ext_len;
		o.ext[i].pofs = (1u << 20) + (uint64_t)i * 3 * ext_len;
		o.ext[i].len = ext_len;
		o.ext[i].crcs = malloc(4 * (ext_len / cb));
		for (j = 0; j < ext_len / cb; j++)
			o.ext[i].crcs[j] = 0x9e3779b9u * (i + 1) + j;
		o.size = o.ext[i].lofs + ext_len - 100;
	}
	o.n_ext = n_ext;
	if (onode_encode(&o, cb, &rec, &len)) {
		fprintf(stderr, "onode_encode failed\n");
		exit(1);
	}
	/* control byte: checksum block 512 << n, and keep the crc valid */
	put("fuzz_onode", name, (uint8_t)((__builtin_ctz(cb) - 9) | 4), rec, len);
	free(rec);
	onode_free(&o);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

/* fuzz_records input: control (record type), key length, key, value. */
static void record_seed(const char *name, uint8_t type, const void *key, uint8_t klen,
			const void *val, size_t vlen)
{
	uint8_t *b = malloc(1 + klen + vlen);

	b[0] = klen;
	memcpy(b + 1, key, klen);
	memcpy(b + 1 + klen, val, vlen);
	put("fuzz_records", name, type, b, 1 + (size_t)klen + vlen);
	free(b);
}

static void record_seeds(void)
{
	struct rs_disk_counts c = { htole64(12), htole64(3) };
	struct rs_disk_deferred d = { htole64(2u << 20), htole32(4096), 0 };
	uint8_t key[8], val[sizeof(d) + 4096];
	uint64_t len = htole64(65536);
	uint32_t extra = htole32(1);

	put_be64(key, 1u << 20);
	record_seed("free", 0, key, 8, &len, 8);
	record_seed("unpunched", 1, key, 8, &len, 8);
	put_be64(key, 7);
	memcpy(val, &d, sizeof(d));
	memset(val + sizeof(d), 0xab, 4096);
	record_seed("deferred", 2, key, 8, val, sizeof(val));
	put_be64(key, 3u << 20);
	record_seed("reference", 3, key, 8, &extra, 4);
	record_seed("counts", 4, "K", 1, &c, sizeof(c));
}

static void super_seeds(void)
{
	char dir[] = "/tmp/rawstore-mkseeds-XXXXXX", dev[64], meta[64], cmd[128];
	struct rawstore_mkfs_opts mo;
	uint8_t sb[sizeof(struct rs_disk_super)];
	int fd, ret;

	if (!mkdtemp(dir))
		exit(1);
	snprintf(dev, sizeof(dev), "%s/dev", dir);
	snprintf(meta, sizeof(meta), "%s/meta", dir);
	fd = open(dev, O_CREAT | O_RDWR, 0644);
	if (fd < 0 || ftruncate(fd, 8u << 20))
		exit(1);
	rawstore_mkfs_opts_init(&mo);
	ret = rawstore_mkfs(dev, meta, &mo);
	if (ret || pread(fd, sb, sizeof(sb), 0) != sizeof(sb)) {
		fprintf(stderr, "mkfs: %s\n", rawstore_errmsg());
		exit(1);
	}
	put("fuzz_super", "primary", 1, sb, sizeof(sb));
	put("fuzz_super", "backup-only", 1 | (1 << 1), sb, sizeof(sb));
	put("fuzz_super", "both", 1 | (2 << 1), sb, sizeof(sb));
	put("fuzz_super", "bad-crc", 0, sb, sizeof(sb));
	/* Same uuid, another inline_max, resealed: the metadata disagrees. */
	((struct rs_disk_super *)sb)->inline_max = htole32(1234);
	put("fuzz_super", "geometry-differs", 1, sb, sizeof(sb));
	close(fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		exit(1);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds DIR\n");
		return 2;
	}
	out = argv[1];
	mkdir(out, 0755);
	onode_seed("empty", 4096, 0, 0, 0);
	onode_seed("inline", 4096, 100, 0, 0);
	onode_seed("one-extent", 4096, 0, 1, 65536);
	onode_seed("extents-512", 512, 0, 5, 8192);
	onode_seed("extents-1k", 1024, 0, 3, 4096);
	super_seeds();
	record_seeds();
	return 0;
}
