// SPDX-License-Identifier: MIT
/* rawstore: the operator's command for a rawstore device. */
#include <stdio.h>
#include <string.h>

#include "rawstore/rawstore.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: rawstore <command> [args]\n"
		   "commands:\n"
		   "  version   print the library version\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "version")) {
		printf("rawstore %s\n", rawstore_version());
		return 0;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "rawstore: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
