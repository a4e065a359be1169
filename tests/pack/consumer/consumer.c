// SPDX-License-Identifier: MIT
/*
 * consumer.c: a program built against an installed librawstore (by
 * tests/pack/install.sh, through pkg-config and through find_package).
 * Usage: consumer DEV META OBJECT TEXT
 * Opens the store that the installed `rawstore mkfs` made, writes TEXT to
 * OBJECT in collection "c" (created if missing), reads it back and prints
 * "consumer <version>: read N bytes: TEXT".  Exit 0 on success.
 */
#include <stdio.h>
#include <string.h>

#include <rawstore/rawstore.h>

static int die(const char *what, int err)
{
	fprintf(stderr, "consumer: %s: %s (%s)\n", what, rawstore_strerror(err),
		rawstore_errmsg());
	return 1;
}

int main(int argc, char **argv)
{
	struct rawstore_open_opts oo;
	struct rawstore_txn *t;
	struct rawstore *st;
	char buf[256];
	ssize_t n;
	int ret;

	if (argc != 5 || strlen(argv[4]) >= sizeof(buf)) {
		fprintf(stderr, "usage: consumer DEV META OBJECT TEXT\n");
		return 2;
	}
	rawstore_open_opts_init(&oo);
	ret = rawstore_open(argv[1], argv[2], &oo, &st);
	if (ret)
		return die("open", ret);
	ret = rawstore_txn_new(&t);
	if (ret)
		return die("txn", ret);
	if (rawstore_coll_exists(st, "c") == 0)
		rawstore_txn_coll_create(t, "c");
	rawstore_txn_write(t, "c", argv[3], strlen(argv[3]), 0, argv[4], strlen(argv[4]));
	ret = rawstore_submit(st, t);
	rawstore_txn_free(t);
	if (ret)
		return die("submit", ret);
	n = rawstore_read(st, "c", argv[3], strlen(argv[3]), 0, buf, sizeof(buf));
	if (n < 0)
		return die("read", (int)n);
	printf("consumer %s: read %zd bytes: %.*s\n", rawstore_version(), n, (int)n, buf);
	ret = rawstore_close(st);
	if (ret)
		return die("close", ret);
	return (size_t)n == strlen(argv[4]) && !memcmp(buf, argv[4], (size_t)n) ? 0 : 1;
}
