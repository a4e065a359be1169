// SPDX-License-Identifier: MIT
/*
 * embed.c: the smallest useful embedding of librawstore.  It creates a
 * store on a scratch file (pass a block device and a metadata directory
 * to use those instead: a store already there is opened, and a new one
 * is made only where open finds none, so the store and anything else on
 * the device survive), writes an object with an attribute and an omap
 * key in one atomic transaction, reads it back and prints the space
 * accounting.  Built with the project so it cannot rot; run by ctest.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rawstore/rawstore.h>

static int die(const char *what, int err)
{
	fprintf(stderr, "%s: %s (%s)\n", what, rawstore_strerror(err), rawstore_errmsg());
	return 1;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/rawstore-example-XXXXXX", dev[64], meta[64], buf[64];
	const char *devp = argc > 2 ? argv[1] : dev, *metap = argc > 2 ? argv[2] : meta;
	struct rawstore_mkfs_opts mo;
	struct rawstore_statfs sf = { .struct_size = sizeof(sf) };
	struct rawstore_txn *t;
	struct rawstore *st;
	ssize_t n;
	int fd, ret;

	if (argc <= 2) {
		/* A sparse 64 MiB file stands in for a block device. */
		if (!mkdtemp(dir))
			return 1;
		snprintf(dev, sizeof(dev), "%s/dev", dir);
		snprintf(meta, sizeof(meta), "%s/meta", dir);
		fd = open(dev, O_CREAT | O_RDWR, 0644);
		if (fd < 0 || ftruncate(fd, 64 << 20))
			return 1;
		close(fd);
	}

	/*
	 * Make a store only where there is none (-EMEDIUMTYPE: no superblock,
	 * and no copy of one in the metadata).  Never force: mkfs then
	 * refuses a device holding a file system or a partition table, and a
	 * metadata directory that is not empty.
	 */
	ret = rawstore_open(devp, metap, NULL, &st);
	if (ret == -EMEDIUMTYPE) {
		rawstore_mkfs_opts_init(&mo);
		ret = rawstore_mkfs(devp, metap, &mo);
		if (ret)
			return die("mkfs", ret);
		ret = rawstore_open(devp, metap, NULL, &st);
	}
	if (ret)
		return die("open", ret);

	/* One transaction: all of it becomes durable, or none of it. */
	ret = rawstore_txn_new(&t);
	if (ret)
		return die("txn", ret);
	if (rawstore_coll_exists(st, "photos") == 0)	/* a second run finds it */
		rawstore_txn_coll_create(t, "photos");
	rawstore_txn_write(t, "photos", "cat.jpg", 7, 0, "meow", 4);
	rawstore_txn_setattr(t, "photos", "cat.jpg", 7, "type", "image/jpeg", 10);
	rawstore_txn_omap_set(t, "photos", "cat.jpg", 7, "owner", 5, "alice", 5);
	ret = rawstore_submit(st, t);
	rawstore_txn_free(t);
	if (ret)
		return die("submit", ret);

	n = rawstore_read(st, "photos", "cat.jpg", 7, 0, buf, sizeof(buf));
	if (n < 0)
		return die("read", (int)n);
	printf("read %zd bytes: %.*s\n", n, (int)n, buf);
	n = rawstore_getattr(st, "photos", "cat.jpg", 7, "type", buf, sizeof(buf));
	if (n < 0)
		return die("getattr", (int)n);
	printf("type: %.*s\n", (int)n, buf);

	ret = rawstore_statfs(st, &sf);
	if (ret)
		return die("statfs", ret);
	printf("%llu objects, %llu bytes free of %llu\n", (unsigned long long)sf.objects,
	       (unsigned long long)sf.free, (unsigned long long)sf.data_size);
	ret = rawstore_close(st);
	if (ret)
		return die("close", ret);

	if (argc <= 2) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			return 1;
	}
	return 0;
}
