// SPDX-License-Identifier: MIT
/* rawstore: the operator's command for a rawstore device. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blkid/blkid.h>

#include "rawstore/rawstore.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rawstore <command> [options] <device> <metadata-dir> [args]\n"
		"commands:\n"
		"  mkfs    [--min-alloc N] [--csum-block N] [--inline-max N] [--size BYTES]\n"
		"          [--force] DEV META      create a store\n"
		"  fsck    [--deep] [--repair] [--json] [--rebuild-freelist] DEV META\n"
		"                                  check (deep: verify every checksum);\n"
		"                                  repair returns leaked space; rebuild the\n"
		"                                  free list from the objects if it is corrupt\n"
		"  statfs  [--json] DEV META        space and object counts\n"
		"  info    [--json] DEV META        geometry, I/O engine, format\n"
		"  ls      DEV META [COLL]          list collections, or objects of COLL\n"
		"  stat    DEV META COLL NAME       one object's size and allocation\n"
		"  cat     DEV META COLL NAME       write an object's data to stdout\n"
		"  reclaim DEV META                 punch freed ranges not yet punched\n"
		"  prepare [--max-bytes N] DEV META zero dirty free space ahead\n"
		"  version                          print the library version\n"
		"sizes: digits, then optionally k, m, g or t (KiB, MiB, GiB, TiB)\n"
		"exit status: 0 ok, 1 error, 2 usage, 4 fsck found problems (or open\n"
		"             found the store corrupt)\n");
}

static int fail(const char *what, int err)
{
	const char *detail = rawstore_errmsg();

	fprintf(stderr, "rawstore %s: %s%s%s\n", what, rawstore_strerror(err),
		*detail ? ": " : "", detail);
	return 1;
}

static int open_store_opts(int argc, char **argv, const struct rawstore_open_opts *o,
			   struct rawstore **st)
{
	int ret;

	if (argc - optind < 2) {
		usage(stderr);
		return 2;
	}
	ret = rawstore_open(argv[optind], argv[optind + 1], o, st);
	if (ret)
		return fail("open", ret);
	return 0;
}

/* Read-only commands open the store read-only: nothing is written, a
 * read-only device works, and deferred writes are not replayed. */
static int open_store_ro(int argc, char **argv, struct rawstore **st)
{
	struct rawstore_open_opts o;

	rawstore_open_opts_init(&o);
	o.read_only = 1;
	return open_store_opts(argc, argv, &o, st);
}

/*
 * A size in bytes: decimal digits, then optionally one of k, m, g, t (KiB,
 * MiB, GiB, TiB, either case).  Anything else, or a value above @max, is
 * refused with a message; nothing is ever truncated.
 */
static int parse_size(const char *opt, const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	const char *p = s;

	if (*p < '0' || *p > '9')
		goto out_bad;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned int d = (unsigned int)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			goto out_range;
		v = v * 10 + d;
	}
	switch (*p) {
	case 0:
		break;
	case 'k': case 'K':
		shift = 10;
		break;
	case 'm': case 'M':
		shift = 20;
		break;
	case 'g': case 'G':
		shift = 30;
		break;
	case 't': case 'T':
		shift = 40;
		break;
	default:
		goto out_bad;
	}
	if (*p && p[1])
		goto out_bad;
	if (v > (max >> shift))
		goto out_range;
	*out = v << shift;
	return 0;

out_bad:
	fprintf(stderr, "rawstore: %s '%s': not a size (digits, then optionally k, m, g "
		"or t)\n", opt, s);
	return -EINVAL;
out_range:
	fprintf(stderr, "rawstore: %s '%s': too large (at most %" PRIu64 " bytes)\n", opt, s,
		max);
	return -ERANGE;
}

static int parse_u32(const char *opt, const char *s, uint32_t *out)
{
	uint64_t v;
	int ret = parse_size(opt, s, UINT32_MAX, &v);

	if (!ret)
		*out = (uint32_t)v;
	return ret;
}

/*
 * Like mkfs.ext4: refuse a device that holds a file system, a partition
 * table or another known signature unless --force.  0 if none was found,
 * 1 if one was (message printed), -errno if the probe failed.
 */
static int check_signatures(const char *dev)
{
	const char *type = NULL, *what = "file system";
	blkid_probe pr;
	int ret;

	pr = blkid_new_probe_from_filename(dev);
	if (!pr) {
		ret = errno ? -errno : -EIO;
		fprintf(stderr, "rawstore mkfs: %s: cannot probe for existing signatures: %s\n",
			dev, strerror(-ret));
		return ret;
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
		fprintf(stderr, "rawstore mkfs: %s holds a %s (%s); use --force to overwrite "
			"it\n", dev, what, type);
	else if (ret < 0)
		fprintf(stderr, "rawstore mkfs: %s: probing for existing signatures failed\n",
			dev);
	blkid_free_probe(pr);
	if (type)
		return 1;
	return ret < 0 ? -EIO : 0;
}

static int cmd_mkfs(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "min-alloc", required_argument, 0, 'a' },
		{ "csum-block", required_argument, 0, 'c' },
		{ "inline-max", required_argument, 0, 'i' },
		{ "size", required_argument, 0, 's' },
		{ "force", no_argument, 0, 'f' },
		{ 0, 0, 0, 0 },
	};
	struct rawstore_mkfs_opts o;
	int c, ret;

	rawstore_mkfs_opts_init(&o);
	while ((c = getopt_long(argc, argv, "a:c:i:s:f", lo, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (parse_u32("--min-alloc", optarg, &o.min_alloc_size))
				return 2;
			break;
		case 'c':
			if (parse_u32("--csum-block", optarg, &o.csum_block_size))
				return 2;
			break;
		case 'i':
			if (parse_u32("--inline-max", optarg, &o.inline_max))
				return 2;
			break;
		case 's':
			if (parse_size("--size", optarg, UINT64_MAX, &o.device_size))
				return 2;
			break;
		case 'f':
			o.force = 1;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	if (!o.force) {
		ret = check_signatures(argv[optind]);
		if (ret)
			return 1;
	}
	ret = rawstore_mkfs(argv[optind], argv[optind + 1], &o);
	if (ret)
		return fail("mkfs", ret);
	printf("created rawstore on %s (metadata in %s)\n", argv[optind], argv[optind + 1]);
	return 0;
}

static void json_str(const void *p, size_t len)
{
	const unsigned char *s = p;
	size_t i;

	putchar('"');
	for (i = 0; i < len; i++) {
		if (s[i] == '"' || s[i] == '\\')
			printf("\\%c", s[i]);
		else if (s[i] < 0x20 || s[i] >= 0x7f)
			printf("\\u%04x", s[i]);
		else
			putchar(s[i]);
	}
	putchar('"');
}

struct fsck_out {
	bool json;
	int n;
};

static void fsck_problem(void *arg, const struct rawstore_fsck_problem *p)
{
	struct fsck_out *o = arg;

	if (!o->json) {
		printf("%s%s: %s", p->kind_name, p->repaired ? " (repaired)" : "", p->message);
		if (p->coll) {
			printf(" [object %s/", p->coll);
			fwrite(p->name, 1, p->name_len, stdout);
			putchar(']');
		}
		putchar('\n');
		return;
	}
	printf("%s\n    {\"kind\": \"%s\", \"message\": ", o->n++ ? "," : "", p->kind_name);
	json_str(p->message, strlen(p->message));
	if (p->coll) {
		printf(", \"collection\": ");
		json_str(p->coll, strlen(p->coll));
		printf(", \"object\": ");
		json_str(p->name, p->name_len);
	}
	printf(", \"offset\": %" PRIu64 ", \"length\": %" PRIu64 ", \"repaired\": %s}",
	       p->offset, p->length, p->repaired ? "true" : "false");
}

static int cmd_fsck(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "deep", no_argument, 0, 'd' },
		{ "repair", no_argument, 0, 'r' },
		{ "json", no_argument, 0, 'j' },
		{ "rebuild-freelist", no_argument, 0, 'F' },
		{ 0, 0, 0, 0 },
	};
	struct rawstore_open_opts oo;
	struct rawstore_fsck_opts o;
	struct rawstore_fsck_result r;
	struct fsck_out out = { false, 0 };
	struct rawstore *st;
	int c, ret;

	rawstore_fsck_opts_init(&o);
	rawstore_open_opts_init(&oo);
	while ((c = getopt_long(argc, argv, "drjF", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			o.deep = 1;
			break;
		case 'r':
			o.repair = 1;
			break;
		case 'j':
			out.json = true;
			break;
		case 'F':
			oo.rebuild_freelist = 1;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (argc - optind != 2) {
		usage(stderr);
		return 2;
	}
	/* a check that changes nothing needs no write access */
	oo.read_only = !o.repair && !oo.rebuild_freelist;
	ret = rawstore_open(argv[optind], argv[optind + 1], &oo, &st);
	if (ret) {
		fail("fsck: open", ret);
		/* the store is corrupt: that is a finding, not an operational error */
		return ret == -EUCLEAN || ret == -EBADMSG ? 4 : 1;
	}
	o.fn = fsck_problem;
	o.arg = &out;
	r.struct_size = sizeof(r);
	if (out.json)
		printf("{\n  \"problems\": [");
	ret = rawstore_fsck(st, &o, &r);
	if (out.json) {
		printf("%s],\n  \"objects\": %" PRIu64 ", \"extents\": %" PRIu64
		       ", \"bytes_checked\": %" PRIu64 ", \"errors\": %" PRIu64
		       ", \"leaks\": %" PRIu64 ", \"leaked_bytes\": %" PRIu64
		       ", \"repaired\": %" PRIu64 ", \"clean\": %s\n}\n", out.n ? "\n  " : "",
		       r.objects, r.extents, r.bytes_checked, r.errors, r.leaks, r.leaked_bytes,
		       r.repaired, ret ? "false" : "true");
	} else if (ret == 0 || ret == -EUCLEAN) {
		printf("%" PRIu64 " objects, %" PRIu64 " extents%s: %" PRIu64 " problems, %" PRIu64
		       " repaired (%" PRIu64 " leaks, %" PRIu64 " bytes leaked)\n", r.objects,
		       r.extents, o.deep ? " (checksums verified)" : "", r.errors, r.repaired,
		       r.leaks, r.leaked_bytes);
	}
	c = rawstore_close(st);
	if (ret == -EUCLEAN)
		return 4;
	if (ret)
		return fail("fsck", ret);
	return c ? fail("close", c) : 0;
}

static bool want_json(int argc, char **argv)
{
	static const struct option lo[] = { { "json", no_argument, 0, 'j' }, { 0, 0, 0, 0 } };
	bool json = false;
	int c;

	while ((c = getopt_long(argc, argv, "j", lo, NULL)) != -1)
		if (c == 'j')
			json = true;
	return json;
}

static void human(uint64_t v, char *buf, size_t len)
{
	const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double d = (double)v;
	int i = 0;

	while (d >= 1024 && i < 4) {
		d /= 1024;
		i++;
	}
	snprintf(buf, len, i ? "%.1f %s" : "%.0f %s", d, u[i]);
}

static int cmd_statfs(int argc, char **argv)
{
	bool json = want_json(argc, argv);
	struct rawstore_statfs s;
	struct rawstore *st;
	char a[32], b[32], c[32], d[32], e[32];
	int ret;

	ret = open_store_ro(argc, argv, &st);
	if (ret)
		return ret;
	s.struct_size = sizeof(s);
	ret = rawstore_statfs(st, &s);
	rawstore_close(st);
	if (ret)
		return fail("statfs", ret);
	if (json) {
		printf("{\"device_size\": %" PRIu64 ", \"data_size\": %" PRIu64
		       ", \"allocated\": %" PRIu64 ", \"free\": %" PRIu64
		       ", \"unpunched\": %" PRIu64
		       ", \"free_extents\": %" PRIu64 ", \"largest_free\": %" PRIu64
		       ", \"objects\": %" PRIu64 ", \"collections\": %" PRIu64
		       ", \"min_alloc_size\": %u, \"zeroed\": %" PRIu64 ", \"dirty\": %" PRIu64
		       ", \"in_flight\": %" PRIu64 ", \"provisioned\": %" PRIu64 "}\n",
		       s.device_size, s.data_size, s.allocated, s.free, s.unpunched,
		       s.free_extents, s.largest_free, s.objects, s.collections, s.min_alloc_size,
		       s.zeroed, s.dirty, s.in_flight, s.provisioned);
		return 0;
	}
	human(s.device_size, a, sizeof(a));
	human(s.data_size, b, sizeof(b));
	human(s.allocated, c, sizeof(c));
	human(s.free, d, sizeof(d));
	human(s.unpunched, e, sizeof(e));
	printf("device      %s (data area %s, allocation unit %u B)\n", a, b, s.min_alloc_size);
	printf("allocated   %s (%.1f%%)\n", c,
	       s.data_size ? 100.0 * (double)s.allocated / (double)s.data_size : 0.0);
	printf("free        %s in %" PRIu64 " extents", d, s.free_extents);
	human(s.largest_free, d, sizeof(d));
	printf(" (largest %s)\n", d);
	printf("unpunched   %s (freed, not yet discarded; see 'rawstore reclaim')\n", e);
	human(s.zeroed, a, sizeof(a));
	human(s.dirty, b, sizeof(b));
	human(s.provisioned, c, sizeof(c));
	printf("free space  %s zeroed, %s dirty (see 'rawstore prepare')\n", a, b);
	printf("provisioned %s (thin devices and store files)\n", c);
	printf("objects     %" PRIu64 " in %" PRIu64 " collections\n", s.objects, s.collections);
	return 0;
}

static int cmd_info(int argc, char **argv)
{
	bool json = want_json(argc, argv);
	struct rawstore_info i;
	struct rawstore *st;
	int ret;

	ret = open_store_ro(argc, argv, &st);
	if (ret)
		return ret;
	i.struct_size = sizeof(i);
	ret = rawstore_get_info(st, &i);
	if (ret) {
		rawstore_close(st);
		return fail("info", ret);
	}
	if (json)
		printf("{\"uuid\": \"%s\", \"format_version\": %u, \"io_engine\": \"%s\", "
		       "\"direct_io\": %s, \"block_device\": %s, \"write_cache\": %s, "
		       "\"logical_block_size\": %u, \"min_alloc_size\": %u, "
		       "\"csum_block_size\": %u, \"inline_max\": %u, \"queue_depth\": %u, "
		       "\"device_size\": %" PRIu64 ", \"data_start\": %" PRIu64
		       ", \"discard_max_bytes\": %" PRIu64 ", \"write_zeroes_max_bytes\": %" PRIu64
		       ", \"provision_max_bytes\": %" PRIu64 ", \"zero_policy\": \"%s\", "
		       "\"punch_policy\": \"%s\", \"prealloc_policy\": \"%s\"}\n", i.uuid,
		       i.format_version, i.io_engine, i.direct_io ? "true" : "false",
		       i.is_block_device ? "true" : "false", i.write_cache ? "true" : "false",
		       i.logical_block_size, i.min_alloc_size, i.csum_block_size, i.inline_max,
		       i.queue_depth, i.device_size, i.data_start, i.discard_max_bytes,
		       i.write_zeroes_max_bytes, i.provision_max_bytes, i.zero_policy,
		       i.punch_policy, i.prealloc_policy);
	else
		printf("uuid            %s\nformat version  %u\nI/O engine      %s (%s I/O, "
		       "queue depth %u)\ndevice          %s, %" PRIu64 " bytes, logical block %u, "
		       "%s cache\nunits           allocation %u, checksum block %u (crc32c), "
		       "inline up to %u\ndata starts at  %" PRIu64 "\ndiscard max     %" PRIu64
		       "\nwrite-zeroes    %" PRIu64 "\nprovision max   %" PRIu64 "\nspace policy    "
		       "zero %s, punch %s, preallocation %s\n", i.uuid, i.format_version, i.io_engine,
		       i.direct_io ? "direct" : "buffered", i.queue_depth,
		       i.is_block_device ? "block device" : "regular file", i.device_size,
		       i.logical_block_size, i.write_cache ? "write-back" : "write-through",
		       i.min_alloc_size, i.csum_block_size, i.inline_max, i.data_start,
		       i.discard_max_bytes, i.write_zeroes_max_bytes, i.provision_max_bytes,
		       i.zero_policy, i.punch_policy, i.prealloc_policy);
	return rawstore_close(st) ? 1 : 0;
}

static int print_name(void *arg, const void *name, size_t len)
{
	(void)arg;
	fwrite(name, 1, len, stdout);
	putchar('\n');
	return 0;
}

static int cmd_ls(int argc, char **argv)
{
	struct rawstore *st;
	int ret;

	ret = open_store_ro(argc, argv, &st);
	if (ret)
		return ret;
	if (argc - optind >= 3)
		ret = rawstore_list(st, argv[optind + 2], NULL, 0, 0, print_name, NULL);
	else
		ret = rawstore_coll_list(st, print_name, NULL);
	rawstore_close(st);
	return ret < 0 ? fail("ls", ret) : 0;
}

static int cmd_stat_cat(int argc, char **argv, bool cat)
{
	struct rawstore_stat s;
	struct rawstore *st;
	const char *coll, *name;
	int ret;

	if (argc - optind != 4) {
		usage(stderr);
		return 2;
	}
	ret = open_store_ro(argc, argv, &st);
	if (ret)
		return ret;
	coll = argv[optind + 2];
	name = argv[optind + 3];
	s.struct_size = sizeof(s);
	ret = rawstore_stat(st, coll, name, strlen(name), &s);
	if (!ret && !cat) {
		printf("size %" PRIu64 "\nallocated %" PRIu64 "\nextents %" PRIu64
		       "\ninline %s\nalloc_hint %" PRIu64 "\nnid %" PRIu64 "\n", s.size,
		       s.allocated, s.extents, s.is_inline ? "yes" : "no", s.alloc_hint, s.nid);
	} else if (!ret) {
		size_t chunk = 1 << 20;
		char *buf = malloc(chunk);
		uint64_t off = 0;
		ssize_t n = 0;

		while (buf) {
			n = rawstore_read(st, coll, name, strlen(name), off, buf, chunk);
			if (n <= 0)
				break;
			fwrite(buf, 1, (size_t)n, stdout);
			off += (uint64_t)n;
		}
		ret = buf ? (int)(n < 0 ? n : 0) : -ENOMEM;
		free(buf);
	}
	rawstore_close(st);
	return ret ? fail(cat ? "cat" : "stat", ret) : 0;
}

static int cmd_reclaim(int argc, char **argv)
{
	struct rawstore_statfs s;
	struct rawstore *st;
	uint64_t before;
	int ret;

	ret = open_store_opts(argc, argv, NULL, &st);
	if (ret)
		return ret;
	s.struct_size = sizeof(s);
	rawstore_statfs(st, &s);
	before = s.unpunched;
	ret = rawstore_reclaim(st);
	rawstore_statfs(st, &s);
	rawstore_close(st);
	if (ret)
		return fail("reclaim", ret);
	printf("punched %" PRIu64 " bytes\n", before - s.unpunched);
	return 0;
}

/* rawstore prepare [--max-bytes N] DEV META: zero dirty free space ahead. */
static int cmd_prepare(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "max-bytes", required_argument, 0, 'm' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct rawstore_statfs s;
	struct rawstore *st;
	uint64_t max = 0;
	int64_t done;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "m:h", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (parse_size("--max-bytes", optarg, UINT64_MAX, &max))
				return 2;
			break;
		case 'h':
			printf("usage: rawstore prepare [--max-bytes N] DEV META\n"
			       "zero dirty free space now (FALLOC_FL_ZERO_RANGE), so that writes of\n"
			       "partial allocation units find zeroed space; all of it by default\n");
			return 0;
		default:
			return 2;
		}
	}
	ret = open_store_opts(argc, argv, NULL, &st);
	if (ret)
		return ret;
	done = rawstore_prepare(st, max);
	s.struct_size = sizeof(s);
	rawstore_statfs(st, &s);
	rawstore_close(st);
	if (done < 0)
		return fail("prepare", (int)done);
	printf("zeroed %" PRId64 " bytes; free space: %" PRIu64 " zeroed, %" PRIu64 " dirty\n",
	       done, s.zeroed, s.dirty);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	argc--;
	argv++;
	if (!strcmp(cmd, "version")) {
		printf("rawstore %s\n", rawstore_version());
		return 0;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "mkfs"))
		return cmd_mkfs(argc, argv);
	if (!strcmp(cmd, "fsck"))
		return cmd_fsck(argc, argv);
	if (!strcmp(cmd, "statfs"))
		return cmd_statfs(argc, argv);
	if (!strcmp(cmd, "info"))
		return cmd_info(argc, argv);
	if (!strcmp(cmd, "ls"))
		return cmd_ls(argc, argv);
	if (!strcmp(cmd, "stat"))
		return cmd_stat_cat(argc, argv, false);
	if (!strcmp(cmd, "cat"))
		return cmd_stat_cat(argc, argv, true);
	if (!strcmp(cmd, "reclaim"))
		return cmd_reclaim(argc, argv);
	if (!strcmp(cmd, "prepare"))
		return cmd_prepare(argc, argv);
	fprintf(stderr, "rawstore: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
