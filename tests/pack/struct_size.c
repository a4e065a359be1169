// SPDX-License-Identifier: MIT
/*
 * struct_size.c: a newer librawstore.so accepts an older caller.  A caller
 * built against an older header passes shorter options and output structs
 * (their struct_size says how long); the library must use defaults for the
 * fields the caller does not have, write nothing past struct_size, and
 * refuse a struct_size larger than it knows (-EINVAL).  Prints "ok" lines
 * and exits 0, or names the first failed check and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rawstore/rawstore.h>

static int failed;

#define CHECK(cond, what)                                                                 \
	do {                                                                              \
		if (cond) {                                                               \
			printf("ok %s\n", what);                                          \
		} else {                                                                  \
			printf("not ok %s (line %d)\n", what, __LINE__);                  \
			failed = 1;                                                       \
		}                                                                         \
	} while (0)

/* An output struct followed by a canary the library must not touch. */
#define CANARY 0xa5
static int canary_intact(const void *p, size_t from, size_t to)
{
	const unsigned char *c = p;
	size_t i;

	for (i = from; i < to; i++)
		if (c[i] != CANARY)
			return 0;
	return 1;
}

int main(void)
{
	char dir[] = "/tmp/rawstore-struct-size-XXXXXX", dev[64], meta[64], cmd[96];
	struct rawstore_mkfs_opts mo;
	struct rawstore_open_opts oo;
	struct rawstore_statfs sf;
	struct rawstore_perf pf;
	struct rawstore_info info;
	struct rawstore *st;
	size_t old;
	int fd, ret;

	if (!mkdtemp(dir))
		return 1;
	snprintf(dev, sizeof(dev), "%s/dev", dir);
	snprintf(meta, sizeof(meta), "%s/meta", dir);
	fd = open(dev, O_CREAT | O_RDWR, 0600);
	if (fd < 0 || ftruncate(fd, 64 << 20))
		return 1;
	close(fd);

	/* mkfs options from a caller that knows neither device_size nor force. */
	memset(&mo, 0xff, sizeof(mo));
	rawstore_mkfs_opts_init(&mo);
	mo.struct_size = offsetof(struct rawstore_mkfs_opts, reserved0);
	mo.min_alloc_size = 8192;
	mo.device_size = 1 << 20;	/* beyond the caller's struct: must be ignored */
	ret = rawstore_mkfs(dev, meta, &mo);
	CHECK(ret == 0, "mkfs with a shorter options struct");

	/* A struct larger than the library knows is refused. */
	rawstore_open_opts_init(&oo);
	oo.struct_size = sizeof(oo) + 8;
	ret = rawstore_open(dev, meta, &oo, &st);
	CHECK(ret == -EINVAL, "open refuses a longer options struct");
	if (!ret)
		rawstore_close(st);
	oo.struct_size = sizeof(size_t) - 1;
	ret = rawstore_open(dev, meta, &oo, &st);
	CHECK(ret == -EINVAL, "open refuses a struct_size shorter than the field");
	if (!ret)
		rawstore_close(st);

	/* Open options from a caller older than deferred_max. */
	memset(&oo, 0, sizeof(oo));
	oo.struct_size = offsetof(struct rawstore_open_opts, deferred_max);
	oo.queue_depth = 16;
	oo.max_group = 8;
	oo.log_level = RAWSTORE_LOG_ERR;
	ret = rawstore_open(dev, meta, &oo, &st);
	CHECK(ret == 0, "open with a shorter options struct");
	if (ret) {
		fprintf(stderr, "open: %s (%s)\n", rawstore_strerror(ret), rawstore_errmsg());
		return 1;
	}

	info.struct_size = sizeof(info);
	ret = rawstore_get_info(st, &info);
	CHECK(ret == 0 && info.min_alloc_size == 8192, "mkfs used the caller's min_alloc_size");
	CHECK(ret == 0 && info.device_size == 64 << 20,
	      "mkfs ignored device_size beyond the caller's struct");
	CHECK(ret == 0 && info.queue_depth == 16, "open used the caller's queue_depth");

	/* Output structs from an older caller: nothing written past them. */
	old = offsetof(struct rawstore_statfs, objects);
	memset(&sf, CANARY, sizeof(sf));
	sf.struct_size = old;
	ret = rawstore_statfs(st, &sf);
	CHECK(ret == 0 && sf.struct_size == old && sf.free > 0 && sf.free <= sf.data_size,
	      "statfs fills a shorter struct");
	CHECK(canary_intact(&sf, old, sizeof(sf)), "statfs writes nothing past struct_size");
	sf.struct_size = sizeof(sf) + 1;
	CHECK(rawstore_statfs(st, &sf) == -EINVAL, "statfs refuses a longer struct");

	old = offsetof(struct rawstore_perf, dev_flushes);
	memset(&pf, CANARY, sizeof(pf));
	pf.struct_size = old;
	ret = rawstore_perf_get(st, &pf);
	CHECK(ret == 0 && pf.txns_committed == 0, "perf_get fills a shorter struct");
	CHECK(canary_intact(&pf, old, sizeof(pf)), "perf_get writes nothing past struct_size");

	old = offsetof(struct rawstore_info, uuid);
	memset(&info, CANARY, sizeof(info));
	info.struct_size = old;
	ret = rawstore_get_info(st, &info);
	CHECK(ret == 0 && info.min_alloc_size == 8192, "get_info fills a shorter struct");
	CHECK(canary_intact(&info, old, sizeof(info)), "get_info writes nothing past struct_size");

	CHECK(rawstore_close(st) == 0, "close");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		return 1;
	return failed;
}
