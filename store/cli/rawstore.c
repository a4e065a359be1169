// SPDX-License-Identifier: MIT
/*
 * rawstore: the operator's command for a rawstore device, in the manner of
 * util-linux and ceph-bluestore-tool.  One function per subcommand; each
 * parses its own options (getopt_long), answers --help on stdout with exit
 * status 0, and refuses bad arguments with its usage on stderr and exit
 * status 2.  Errors name the device and the cause.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "rawstore/rawstore.h"

struct cmd {
	const char *name;
	int (*fn)(const struct cmd *c, int argc, char **argv);
	const char *synopsis;		/* after "rawstore NAME " */
	const char *summary;		/* one line for rawstore --help */
	const char *help;		/* the options, for rawstore NAME --help */
	const char *alias_of;		/* NULL, or the command this one is */
};

static const struct cmd *commands(void);

/*
 * SIGINT and SIGTERM set this flag (the signal's number) and nothing else:
 * the long loops (reclaim and prepare rounds, reading put's input, writing
 * get's output) check it and stop, the store is closed as after a
 * finished command, and main() exits 130 or 143 as a shell reports a
 * process the signal killed.
 */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static void signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* no SA_RESTART: a blocked read of stdin returns EINTR and looks */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * rawstore_open() with SIGINT and SIGTERM blocked: the store's threads
 * start with the signals blocked (a new thread inherits the mask), so the
 * handler runs on this thread and never interrupts a system call of theirs.
 */
static int open_masked(const char *dev, const char *meta, const struct rawstore_open_opts *o,
		       struct rawstore **st)
{
	sigset_t set, old;
	int ret;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	ret = rawstore_open(dev, meta, o, st);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

#define POLICY_SYNOPSIS \
	"[--zero-policy auto|prepare|pad] [--punch-policy operator|background|inline]"
#define POLICY_HELP                                                                        \
	"  --zero-policy P   record a new zero policy: auto (prepare where zero-range\n"       \
	"                    is offloaded, else pad), prepare (zero free space ahead\n"        \
	"                    in the background) or pad (write zeros into partial units)\n"     \
	"  --punch-policy P  record a new punch policy: operator (only 'rawstore\n"            \
	"                    reclaim'), background (a rate-limited queue) or inline\n"         \
	"                    (right after each commit that frees space)\n"
#define RUN_SYNOPSIS "[--dry-run] [--max-bytes N] [--rate N] [--progress|--no-progress] [--json]"
#define RUN_HELP                                                                           \
	"  --dry-run         count the bytes, change nothing (the store is opened\n"           \
	"                    read-only)\n"                                                      \
	"  --max-bytes N     stop after N bytes (rounded down to allocation units)\n"          \
	"  --rate N          at most N bytes per second\n"                                     \
	"  --progress        print progress on stderr even when it is not a terminal\n"        \
	"  --no-progress     no progress output (default when stderr is not a terminal)\n"     \
	"  --json            print the summary as JSON\n"

static void print_usage(FILE *f)
{
	const struct cmd *c;

	fprintf(f, "usage: rawstore COMMAND [options] DEV META [args]\n"
		   "       rawstore COMMAND --help\n"
		   "commands:\n");
	for (c = commands(); c->name; c++)
		fprintf(f, "  %-8s %s\n", c->name, c->summary);
	fprintf(f, "'rawstore COMMAND --help' shows the options and arguments of COMMAND.\n"
		   "DEV is the block device (or file) holding the data, META the directory of\n"
		   "the metadata (RocksDB).\n"
		   "sizes: digits, then optionally k, m, g or t (KiB, MiB, GiB, TiB)\n"
		   "exit status: 0 ok, 1 error, 2 usage, 4 fsck found problems (or open\n"
		   "             found the store corrupt), 130/143 stopped by SIGINT/SIGTERM\n"
		   "             (the store closed cleanly)\n");
}

static int cmd_help(const struct cmd *c)
{
	printf("usage: rawstore %s %s\n\n%s\n", c->name, c->synopsis, c->summary);
	if (c->help && *c->help)
		printf("\noptions:\n%s", c->help);
	printf("  -h, --help        print this help and exit\n");
	return 0;
}

/* Bad arguments: say what is wrong, the usage, exit status 2. */
static int usage_error(const struct cmd *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int usage_error(const struct cmd *c, const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		fprintf(stderr, "rawstore %s: ", c->name);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	fprintf(stderr, "usage: rawstore %s %s\nTry 'rawstore %s --help' for more information.\n",
		c->name, c->synopsis, c->name);
	return 2;
}

/* Positional arguments: between @min and @max after the options. */
static int want_args(const struct cmd *c, int argc, char **argv, int min, int max)
{
	int n = argc - optind;

	if (n < min)
		return usage_error(c, n ? "too few arguments" : "no device and metadata "
				   "directory given");
	if (n > max)
		return usage_error(c, "unexpected argument '%s'", argv[optind + max]);
	return 0;
}

/*
 * The collection (argv[optind + 2]) and, with @objects, the object names
 * after it (up to argv[argc - 1]) of a command, checked before the store
 * is opened:
 * a name the store cannot hold is a usage error (exit 2).
 */
static int check_names(const struct cmd *c, int argc, char **argv, bool objects)
{
	size_t n;
	int i;

	if (argc - optind < 3)
		return 0;
	n = strlen(argv[optind + 2]);
	if (!n || n > RAWSTORE_COLL_NAME_MAX)
		return usage_error(c, "collection name must have 1 to %d bytes (it has %zu)",
				   RAWSTORE_COLL_NAME_MAX, n);
	for (i = optind + 3; objects && i < argc; i++) {
		n = strlen(argv[i]);
		if (!n || n > RAWSTORE_NAME_MAX)
			return usage_error(c, "object name must have 1 to %d bytes (it has %zu)",
					   RAWSTORE_NAME_MAX, n);
	}
	return 0;
}

/* An error of the store: name the device and the cause. */
static int fail_dev(const struct cmd *c, const char *dev, const char *what, int err)
{
	const char *detail = rawstore_errmsg();

	if (err == -EMEDIUMTYPE) {
		fprintf(stderr, "rawstore %s: %s is not a rawstore (no rawstore superblock; "
			"create one with 'rawstore mkfs')\n", c->name, dev);
		return 1;
	}
	fprintf(stderr, "rawstore %s: %s: %s%s%s%s%s\n", c->name, dev, what ? what : "",
		what ? ": " : "", rawstore_strerror(err), *detail ? ": " : "", detail);
	return 1;
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


static int opt_policy(const struct cmd *c, const char *opt, const char *arg,
		      const char *(*name)(int), int max, int *out)
{
	int i;

	for (i = 1; i <= max; i++) {
		if (!strcmp(arg, name(i))) {
			*out = i;
			return 0;
		}
	}
	fprintf(stderr, "rawstore %s: %s '%s': not one of", c->name, opt, arg);
	for (i = 1; i <= max; i++)
		fprintf(stderr, " %s", name(i));
	fputc('\n', stderr);
	return usage_error(c, NULL);
}

/* The option letters of the policy options, shared by the read-write
 * commands: 0 if @o was one (stored in *oo), 2 on a bad value, 1 if not. */
static int opt_open_policy(const struct cmd *c, int o, struct rawstore_open_opts *oo)
{
	switch (o) {
	case 'Z':
		return opt_policy(c, "--zero-policy", optarg, rawstore_zero_policy_name,
				  RAWSTORE_ZERO_PAD, &oo->zero_policy);
	case 'P':
		return opt_policy(c, "--punch-policy", optarg, rawstore_punch_policy_name,
				  RAWSTORE_PUNCH_INLINE, &oo->punch_policy);
	}
	return 1;
}

#define POLICY_OPTIONS { "zero-policy", required_argument, 0, 'Z' }, \
		       { "punch-policy", required_argument, 0, 'P' }
#define HELP_OPTION { "help", no_argument, 0, 'h' }

static int open_store(const struct cmd *c, char **argv, const struct rawstore_open_opts *o,
		      struct rawstore **st)
{
	int ret = open_masked(argv[optind], argv[optind + 1], o, st);

	return ret ? fail_dev(c, argv[optind], "open", ret) : 0;
}

/* Read-only commands open the store read-only: nothing is written, a
 * read-only device works, and deferred writes are not replayed. */
static int open_store_ro(const struct cmd *c, char **argv, struct rawstore **st)
{
	struct rawstore_open_opts o;

	rawstore_open_opts_init(&o);
	o.read_only = 1;
	return open_store(c, argv, &o, st);
}

static int close_store(const struct cmd *c, const char *dev, struct rawstore *st)
{
	int ret = rawstore_close(st);

	return ret ? fail_dev(c, dev, "close", ret) : 0;
}

/* The options of the commands that take only --json (and --help). */
static int parse_json_only(const struct cmd *c, int argc, char **argv, bool *json)
{
	static const struct option lo[] = { { "json", no_argument, 0, 'j' }, HELP_OPTION,
					    { 0, 0, 0, 0 } };
	int o;

	*json = false;
	while ((o = getopt_long(argc, argv, "jh", lo, NULL)) != -1) {
		switch (o) {
		case 'j':
			*json = true;
			break;
		case 'h':
			return cmd_help(c) - 1;	/* -1: done, exit 0 */
		default:
			return usage_error(c, NULL);
		}
	}
	return 0;
}

/* The start of the read-only reports (statfs, info, dump): [--json] DEV META,
 * the store opened read-only.  0, or the exit code (< 0: help was shown). */
static int open_report(const struct cmd *c, int argc, char **argv, bool *json,
		       struct rawstore **st)
{
	int ret = parse_json_only(c, argc, argv, json);

	if (!ret)
		ret = want_args(c, argc, argv, 2, 2);
	if (!ret)
		ret = open_store_ro(c, argv, st);
	return ret;
}

static bool pow2_within(uint32_t v, uint32_t min, uint32_t max)
{
	return v >= min && v <= max && !(v & (v - 1));
}

static int cmd_mkfs(const struct cmd *c, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "min-alloc", required_argument, 0, 'a' },
		{ "csum-block", required_argument, 0, 'c' },
		{ "inline-max", required_argument, 0, 'i' },
		{ "size", required_argument, 0, 's' },
		{ "force", no_argument, 0, 'f' },
		{ "prealloc", required_argument, 0, 'A' },
		{ "journal", required_argument, 0, 'J' },
		{ "journal-size", required_argument, 0, 'S' },
		POLICY_OPTIONS,
		HELP_OPTION,
		{ 0, 0, 0, 0 },
	};
	struct rawstore_mkfs_opts o;
	int opt, ret;

	rawstore_mkfs_opts_init(&o);
	while ((opt = getopt_long(argc, argv, "a:c:i:s:fh", lo, NULL)) != -1) {
		switch (opt) {
		case 'a':
			if (parse_u32("--min-alloc", optarg, &o.min_alloc_size))
				return usage_error(c, NULL);
			if (!pow2_within(o.min_alloc_size, 4096, 16 << 20))
				return usage_error(c, "--min-alloc %s: the allocation unit must be a "
						   "power of two, at least 4096 (4k) and at most "
						   "16777216 (16m)", optarg);
			break;
		case 'c':
			if (parse_u32("--csum-block", optarg, &o.csum_block_size))
				return usage_error(c, NULL);
			if (!pow2_within(o.csum_block_size, 512, 16 << 20))
				return usage_error(c, "--csum-block %s: the checksum block must be a "
						   "power of two, at least 512 and at most the "
						   "allocation unit", optarg);
			break;
		case 'i':
			if (parse_u32("--inline-max", optarg, &o.inline_max))
				return usage_error(c, NULL);
			break;
		case 's':
			if (parse_size("--size", optarg, UINT64_MAX, &o.device_size))
				return usage_error(c, NULL);
			break;
		case 'f':
			o.force = 1;
			break;
		case 'A':
			if (opt_policy(c, "--prealloc", optarg, rawstore_prealloc_policy_name,
				       RAWSTORE_PREALLOC_STALE, &o.prealloc_policy))
				return 2;
			break;
		case 'J':
			if (opt_policy(c, "--journal", optarg, rawstore_journal_mode_name,
				       RAWSTORE_JOURNAL_ROCKSDB, &o.journal))
				return 2;
			break;
		case 'S':
			if (parse_size("--journal-size", optarg, UINT64_MAX, &o.journal_size))
				return usage_error(c, NULL);
			break;
		case 'Z':
			if (opt_policy(c, "--zero-policy", optarg, rawstore_zero_policy_name,
				       RAWSTORE_ZERO_PAD, &o.zero_policy))
				return 2;
			break;
		case 'P':
			if (opt_policy(c, "--punch-policy", optarg, rawstore_punch_policy_name,
				       RAWSTORE_PUNCH_INLINE, &o.punch_policy))
				return 2;
			break;
		case 'h':
			return cmd_help(c);
		default:
			return usage_error(c, NULL);
		}
	}
	ret = want_args(c, argc, argv, 2, 2);
	if (ret)
		return ret;
	if (o.csum_block_size > o.min_alloc_size)
		return usage_error(c, "--csum-block %u is larger than the allocation unit (%u); "
				   "it must divide it", o.csum_block_size, o.min_alloc_size);
	/* The library refuses a device holding a store, a file system or a
	 * partition table, and a non-empty META, unless force. */
	ret = rawstore_mkfs(argv[optind], argv[optind + 1], &o);
	if (ret == -EEXIST) {
		const char *m = rawstore_errmsg();

		if (!strncmp(m, "mkfs: ", 6))
			m += 6;
		fprintf(stderr, "rawstore %s: %s; use --force to overwrite it\n", c->name, m);
		return 1;
	}
	if (ret)
		return fail_dev(c, argv[optind], NULL, ret);
	printf("created rawstore on %s (metadata in %s, journal %s)\n", argv[optind],
	       argv[optind + 1], rawstore_journal_mode_name(o.journal ? o.journal :
							      RAWSTORE_JOURNAL_DEVICE));
	return 0;
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

static int cmd_fsck(const struct cmd *c, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "deep", no_argument, 0, 'd' },
		{ "repair", no_argument, 0, 'r' },
		{ "json", no_argument, 0, 'j' },
		{ "rebuild-freelist", no_argument, 0, 'F' },
		HELP_OPTION,
		{ 0, 0, 0, 0 },
	};
	struct rawstore_open_opts oo;
	struct rawstore_fsck_opts o;
	struct rawstore_fsck_result r;
	struct fsck_out out = { false, 0 };
	struct rawstore *st;
	int opt, ret;

	rawstore_fsck_opts_init(&o);
	rawstore_open_opts_init(&oo);
	while ((opt = getopt_long(argc, argv, "drjFh", lo, NULL)) != -1) {
		switch (opt) {
		case 'd':
			o.deep = 1;
			break;
		case 'r':
			o.repair = 1;
			/* both superblock copies lost: rebuild them from META's */
			oo.repair_super = 1;
			break;
		case 'j':
			out.json = true;
			break;
		case 'F':
			oo.rebuild_freelist = 1;
			break;
		case 'h':
			return cmd_help(c);
		default:
			return usage_error(c, NULL);
		}
	}
	ret = want_args(c, argc, argv, 2, 2);
	if (ret)
		return ret;
	/* a check that changes nothing needs no write access */
	oo.read_only = !o.repair && !oo.rebuild_freelist;
	ret = open_masked(argv[optind], argv[optind + 1], &oo, &st);
	if (ret) {
		fail_dev(c, argv[optind], "open", ret);
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
	opt = rawstore_close(st);
	if (ret == -EUCLEAN)
		return 4;
	if (ret)
		return fail_dev(c, argv[optind], NULL, ret);
	return opt ? fail_dev(c, argv[optind], "close", opt) : 0;
}

static int cmd_statfs(const struct cmd *c, int argc, char **argv)
{
	struct rawstore_statfs s;
	struct rawstore *st;
	char a[32], b[32], e[32], d[32];
	bool json;
	int ret;

	ret = open_report(c, argc, argv, &json, &st);
	if (ret)
		return ret < 0 ? 0 : ret;
	s.struct_size = sizeof(s);
	ret = rawstore_statfs(st, &s);
	rawstore_close(st);
	if (ret)
		return fail_dev(c, argv[optind], NULL, ret);
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
	printf("device        %s (data area %s, allocation unit %u B)\n", a, b,
	       s.min_alloc_size);
	human(s.allocated, a, sizeof(a));
	printf("allocated     %s (%.1f%%)\n", a,
	       s.data_size ? 100.0 * (double)s.allocated / (double)s.data_size : 0.0);
	human(s.free, a, sizeof(a));
	human(s.largest_free, b, sizeof(b));
	printf("free          %s in %" PRIu64 " extents (largest %s)\n", a, s.free_extents, b);
	human(s.zeroed, a, sizeof(a));
	human(s.dirty, b, sizeof(b));
	printf("free space    %s zeroed, %s dirty (see 'rawstore prepare')\n", a, b);
	human(s.unpunched, e, sizeof(e));
	printf("pending punch %s (freed, not yet punched; see 'rawstore reclaim')\n", e);
	human(s.provisioned, d, sizeof(d));
	printf("provisioned   %s (thin devices and store files)\n", d);
	printf("objects       %" PRIu64 " in %" PRIu64 " collections\n", s.objects,
	       s.collections);
	return 0;
}

/* What the open found out about zeroing, as text: "yes (probe N us)". */
static const char *offload_text(const struct rawstore_info *i, bool probe, char *buf,
				size_t len)
{
	if (!i->zero_probe_ns)
		snprintf(buf, len, "not probed (%s)", probe ?
			 "the pad zero policy needs no probe, or no free space to probe" :
			 "a read-only open probes nothing: --probe opens read-write");
	else
		snprintf(buf, len, "%s (a 1 MiB zero-range took %llu us)",
			 i->zero_offload ? "yes" : "no, the kernel writes zeros",
			 (unsigned long long)(i->zero_probe_ns / 1000));
	return buf;
}

/*
 * info [--json] [--probe] DEV META: read-only, what was recorded and what
 * the device reports; --probe opens read-write, so the open probes
 * zero-range (1 MiB of free space, left as it was labelled) and the
 * policies shown are the ones in effect after it.
 */
static int cmd_info(const struct cmd *c, int argc, char **argv)
{
	static const struct option lo[] = { { "json", no_argument, 0, 'j' },
					    { "probe", no_argument, 0, 'p' }, HELP_OPTION,
					    { 0, 0, 0, 0 } };
	struct rawstore_open_opts oo;
	struct rawstore_info i;
	struct rawstore *st;
	bool json = false, probe = false;
	char off[128];
	int o, ret;

	while ((o = getopt_long(argc, argv, "jph", lo, NULL)) != -1) {
		switch (o) {
		case 'j':
			json = true;
			break;
		case 'p':
			probe = true;
			break;
		case 'h':
			return cmd_help(c);
		default:
			return usage_error(c, NULL);
		}
	}
	ret = want_args(c, argc, argv, 2, 2);
	if (ret)
		return ret;
	rawstore_open_opts_init(&oo);
	oo.read_only = !probe;
	ret = open_store(c, argv, &oo, &st);
	if (ret)
		return ret;
	i.struct_size = sizeof(i);
	ret = rawstore_get_info(st, &i);
	if (ret) {
		rawstore_close(st);
		return fail_dev(c, argv[optind], NULL, ret);
	}
	if (json)
		printf("{\"uuid\": \"%s\", \"format_version\": %u, \"io_engine\": \"%s\", "
		       "\"direct_io\": %s, \"block_device\": %s, \"write_cache\": %s, "
		       "\"logical_block_size\": %u, \"min_alloc_size\": %u, "
		       "\"csum_block_size\": %u, \"inline_max\": %u, \"queue_depth\": %u, "
		       "\"device_size\": %" PRIu64 ", \"data_start\": %" PRIu64
		       ", \"discard_max_bytes\": %" PRIu64 ", \"write_zeroes_max_bytes\": %" PRIu64
		       ", \"provision_max_bytes\": %" PRIu64 ", \"zero_policy\": \"%s\", "
		       "\"punch_policy\": \"%s\", \"prealloc_policy\": \"%s\", \"rotational\": %s, "
		       "\"deferred_max\": %u, \"deferred_new_max\": %u, \"journal\": \"%s\", "
		       "\"journal_offset\": %" PRIu64 ", \"journal_size\": %" PRIu64 ", "
		       "\"zero_probed\": %s, \"zero_offload\": %s, \"zero_probe_us\": %" PRIu64
		       ", \"provisioning\": %s}\n", i.uuid,
		       i.format_version, i.io_engine, i.direct_io ? "true" : "false",
		       i.is_block_device ? "true" : "false", i.write_cache ? "true" : "false",
		       i.logical_block_size, i.min_alloc_size, i.csum_block_size, i.inline_max,
		       i.queue_depth, i.device_size, i.data_start, i.discard_max_bytes,
		       i.write_zeroes_max_bytes, i.provision_max_bytes, i.zero_policy,
		       i.punch_policy, i.prealloc_policy, i.rotational ? "true" : "false",
		       i.deferred_max, i.deferred_new_max, i.journal, i.journal_offset,
		       i.journal_size, i.zero_probe_ns ? "true" : "false",
		       i.zero_offload ? "true" : "false", i.zero_probe_ns / 1000,
		       i.provisioning ? "true" : "false");
	else
		printf("uuid            %s\nformat version  %u\nI/O engine      %s (%s I/O, "
		       "queue depth %u)\ndevice          %s, %" PRIu64 " bytes, logical block %u, "
		       "%s cache\nunits           allocation %u, checksum block %u (crc32c), "
		       "inline up to %u\ndata starts at  %" PRIu64 "\ndiscard max     %" PRIu64
		       "\nwrite-zeroes    %" PRIu64 "\nprovision max   %" PRIu64 "\nspace policy    "
		       "zero %s, punch %s, preallocation %s\ndeferred writes overwrites up to %u B, new "
		       "data up to %u B (0: off; %s device)\njournal         %s (%" PRIu64
		       " bytes at %" PRIu64 ")\nzero offload    %s\nprovisioning    %s\n", i.uuid,
		       i.format_version, i.io_engine,
		       i.direct_io ? "direct" : "buffered", i.queue_depth,
		       i.is_block_device ? "block device" : "regular file", i.device_size,
		       i.logical_block_size, i.write_cache ? "write-back" : "write-through",
		       i.min_alloc_size, i.csum_block_size, i.inline_max, i.data_start,
		       i.discard_max_bytes, i.write_zeroes_max_bytes, i.provision_max_bytes,
		       i.zero_policy, i.punch_policy, i.prealloc_policy, i.deferred_max,
		       i.deferred_new_max, i.rotational ? "rotational" : "non-rotational",
		       i.journal, i.journal_size, i.journal_offset,
		       offload_text(&i, probe, off, sizeof(off)),
		       i.provisioning ? "yes: allocations are provisioned first" : "no");
	return close_store(c, argv[optind], st);
}

static int cmd_dump(const struct cmd *c, int argc, char **argv)
{
	struct rawstore_records r;
	struct rawstore_info i;
	struct rawstore *st;
	char when[64] = "?";
	bool json;
	time_t t;
	int ret;

	ret = open_report(c, argc, argv, &json, &st);
	if (ret)
		return ret < 0 ? 0 : ret;
	i.struct_size = sizeof(i);
	r.struct_size = sizeof(r);
	ret = rawstore_get_info(st, &i);
	if (!ret)
		ret = rawstore_records_get(st, &r);
	if (ret) {
		rawstore_close(st);
		return fail_dev(c, argv[optind], NULL, ret);
	}
	t = (time_t)r.mkfs_time;
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
	if (json) {
		printf("{\"superblock\": {\"uuid\": \"%s\", \"format_version\": %u, "
		       "\"device_size\": %" PRIu64 ", \"data_start\": %" PRIu64
		       ", \"logical_block_size\": %u, \"min_alloc_size\": %u, "
		       "\"csum_block_size\": %u, \"inline_max\": %u, \"mkfs_time\": %" PRIu64 "},\n"
		       " \"generation\": %" PRIu64 ", \"zero_policy\": \"%s\", "
		       "\"punch_policy\": \"%s\", \"prealloc_policy\": \"%s\",\n"
		       " \"records\": {\"collections\": %" PRIu64 ", \"onodes\": %" PRIu64
		       ", \"extents\": %" PRIu64 ", \"inline_objects\": %" PRIu64
		       ", \"attrs\": %" PRIu64 ", \"omap_keys\": %" PRIu64
		       ", \"omap_headers\": %" PRIu64 ", \"shared_units\": %" PRIu64 ",\n"
		       "  \"free\": %" PRIu64 ", \"free_bytes\": %" PRIu64
		       ", \"zeroed\": %" PRIu64 ", \"zeroed_bytes\": %" PRIu64
		       ", \"dirty\": %" PRIu64 ", \"dirty_bytes\": %" PRIu64 ",\n"
		       "  \"unpunched\": %" PRIu64 ", \"unpunched_bytes\": %" PRIu64
		       ", \"in_flight\": %" PRIu64 ", \"in_flight_bytes\": %" PRIu64
		       ", \"provisioned\": %" PRIu64 ", \"provisioned_bytes\": %" PRIu64
		       ", \"deferred\": %" PRIu64 ", \"deferred_bytes\": %" PRIu64 "},\n"
		       " \"journal\": {\"mode\": \"%s\", \"offset\": %" PRIu64 ", \"size\": %"
		       PRIu64 ", \"durable_seq\": %" PRIu64 ", \"start\": %" PRIu64
		       ", \"replayed\": %" PRIu64 ", \"replayed_bytes\": %" PRIu64
		       ", \"dropped\": %" PRIu64 ", \"last_seq\": %" PRIu64 ", \"head\": %"
		       PRIu64 "}}\n",
		       i.uuid, i.format_version, i.device_size, i.data_start, i.logical_block_size,
		       i.min_alloc_size, i.csum_block_size, i.inline_max, r.mkfs_time, r.generation,
		       r.zero_policy, r.punch_policy, r.prealloc_policy, r.collections, r.onodes,
		       r.onode_extents, r.inline_objects, r.attrs, r.omap_keys, r.omap_headers,
		       r.shared_units, r.free_records, r.free_bytes, r.zeroed_records,
		       r.zeroed_bytes, r.dirty_extents, r.dirty_bytes, r.unpunched_records,
		       r.unpunched_bytes, r.in_flight_records, r.in_flight_bytes,
		       r.provisioned_records, r.provisioned_bytes, r.deferred_records,
		       r.deferred_bytes, i.journal, r.journal_offset, r.journal_size,
		       r.journal_durable_seq, r.journal_start, r.journal_replayed,
		       r.journal_replayed_bytes, r.journal_dropped, r.journal_last_seq,
		       r.journal_head);
	} else {
		printf("superblock\n  uuid            %s\n  format version  %u\n"
		       "  device size     %" PRIu64 " bytes\n  data start      %" PRIu64 "\n"
		       "  logical block   %u\n  allocation unit %u\n  checksum block  %u\n"
		       "  inline max      %u\n  created         %s\n",
		       i.uuid, i.format_version, i.device_size, i.data_start,
		       i.logical_block_size, i.min_alloc_size, i.csum_block_size, i.inline_max,
		       when);
		printf("metadata\n  generation      %" PRIu64 "\n  policy          zero %s, "
		       "punch %s, preallocation %s\n", r.generation, r.zero_policy,
		       r.punch_policy, r.prealloc_policy);
		printf("records                    count          bytes\n");
		printf("  collections     %14" PRIu64 "\n", r.collections);
		printf("  onodes          %14" PRIu64 "   (%" PRIu64 " inline)\n", r.onodes,
		       r.inline_objects);
		printf("  extents         %14" PRIu64 "\n", r.onode_extents);
		printf("  attrs           %14" PRIu64 "\n", r.attrs);
		printf("  omap keys       %14" PRIu64 "   (%" PRIu64 " headers)\n", r.omap_keys,
		       r.omap_headers);
		printf("  shared units    %14" PRIu64 "\n", r.shared_units);
		printf("  free            %14" PRIu64 " %14" PRIu64 "\n", r.free_records,
		       r.free_bytes);
		printf("  zeroed          %14" PRIu64 " %14" PRIu64 "\n", r.zeroed_records,
		       r.zeroed_bytes);
		printf("  dirty           %14" PRIu64 " %14" PRIu64 "\n", r.dirty_extents,
		       r.dirty_bytes);
		printf("  unpunched       %14" PRIu64 " %14" PRIu64 "\n", r.unpunched_records,
		       r.unpunched_bytes);
		printf("  in flight       %14" PRIu64 " %14" PRIu64 "\n", r.in_flight_records,
		       r.in_flight_bytes);
		printf("  provisioned     %14" PRIu64 " %14" PRIu64 "\n", r.provisioned_records,
		       r.provisioned_bytes);
		printf("  deferred        %14" PRIu64 " %14" PRIu64 "\n", r.deferred_records,
		       r.deferred_bytes);
		if (!strcmp(i.journal, "device"))
			printf("journal (device, %" PRIu64 " bytes at %" PRIu64 ")\n"
			       "  at open         RocksDB held records to %" PRIu64 "; %" PRIu64
			       " replayed from %" PRIu64 " (%" PRIu64 " bytes)%s\n"
			       "  now             last record %" PRIu64 ", next at %" PRIu64 "\n",
			       r.journal_size, r.journal_offset, r.journal_durable_seq,
			       r.journal_replayed, r.journal_start, r.journal_replayed_bytes,
			       r.journal_dropped ? ", the last dropped (its data never landed)" : "",
			       r.journal_last_seq, r.journal_head);
		else
			printf("journal (rocksdb: its own WAL in the metadata directory)\n");
	}
	return close_store(c, argv[optind], st);
}

static int print_name(void *arg, const void *name, size_t len)
{
	(void)arg;
	fwrite(name, 1, len, stdout);
	putchar('\n');
	return 0;
}

/* Commands with no option but --help. */
static int parse_none(const struct cmd *c, int argc, char **argv)
{
	static const struct option lo[] = { HELP_OPTION, { 0, 0, 0, 0 } };
	int o;

	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1)
		return o == 'h' ? cmd_help(c) - 1 : usage_error(c, NULL);
	return 0;
}

static int cmd_ls(const struct cmd *c, int argc, char **argv)
{
	struct rawstore *st;
	int ret;

	ret = parse_none(c, argc, argv);
	if (!ret)
		ret = want_args(c, argc, argv, 2, 3);
	if (!ret)
		ret = check_names(c, argc, argv, false);
	if (ret)
		return ret < 0 ? 0 : ret;
	ret = open_store_ro(c, argv, &st);
	if (ret)
		return ret;
	if (argc - optind >= 3)
		ret = rawstore_list(st, argv[optind + 2], NULL, 0, 0, print_name, NULL);
	else
		ret = rawstore_coll_list(st, print_name, NULL);
	rawstore_close(st);
	if (ret < 0 && argc - optind >= 3)
		fprintf(stderr, "rawstore %s: %s: collection %s: %s\n", c->name, argv[optind],
			argv[optind + 2], rawstore_strerror(ret));
	else if (ret < 0)
		return fail_dev(c, argv[optind], NULL, ret);
	return ret < 0 ? 1 : 0;
}

static int object_error(const struct cmd *c, char **argv, const char *coll, const char *name,
			int err)
{
	fprintf(stderr, "rawstore %s: %s: object %s/%s: %s\n", c->name, argv[optind], coll, name,
		rawstore_strerror(err));
	return 1;
}

/* stat --extents: one line per extent; counts the bad checksum blocks. */
static int print_extent(void *arg, const struct rawstore_extent *e)
{
	uint64_t *bad = arg;

	printf("extent offset %" PRIu64 " length %" PRIu64 " device_offset %" PRIu64
	       " csum_blocks %" PRIu64 " checksums ", e->offset, e->length, e->device_offset,
	       e->csum_blocks);
	if (!e->csum_bad)
		printf("ok\n");
	else
		printf("%" PRId64 " bad\n", e->csum_bad);
	*bad += e->csum_bad > 0 ? (uint64_t)e->csum_bad : 0;
	return 0;
}

static int cmd_stat(const struct cmd *c, int argc, char **argv)
{
	static const struct option lo[] = { { "extents", no_argument, 0, 'e' }, HELP_OPTION,
					    { 0, 0, 0, 0 } };
	struct rawstore_stat s;
	struct rawstore *st;
	const char *coll, *name;
	bool extents = false;
	uint64_t bad = 0;
	int o, ret;

	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		if (o == 'e')
			extents = true;
		else
			return o == 'h' ? cmd_help(c) : usage_error(c, NULL);
	}
	ret = want_args(c, argc, argv, 4, 4);
	if (!ret)
		ret = check_names(c, argc, argv, true);
	if (ret)
		return ret;
	ret = open_store_ro(c, argv, &st);
	if (ret)
		return ret;
	coll = argv[optind + 2];
	name = argv[optind + 3];
	s.struct_size = sizeof(s);
	ret = rawstore_stat(st, coll, name, strlen(name), &s);
	if (ret) {
		rawstore_close(st);
		return object_error(c, argv, coll, name, ret);
	}
	printf("size %" PRIu64 "\nallocated %" PRIu64 "\nextents %" PRIu64
	       "\ninline %s\nalloc_hint %" PRIu64 "\nnid %" PRIu64 "\n", s.size, s.allocated,
	       s.extents, s.is_inline ? "yes" : "no", s.alloc_hint, s.nid);
	if (extents)
		ret = rawstore_extent_iterate(st, coll, name, strlen(name), 1, print_extent, &bad);
	rawstore_close(st);
	if (ret < 0)
		return object_error(c, argv, coll, name, ret);
	if (bad) {
		fprintf(stderr, "rawstore %s: %s: object %s/%s: %" PRIu64 " checksum blocks do "
			"not match the data on the device\n", c->name, argv[optind], coll, name,
			bad);
		return 4;
	}
	return 0;
}

/*
 * get -o FILE writes a temporary file beside FILE and renames it over FILE
 * only once the whole object is written and synced: a failed read (a
 * missing object, an I/O error, an interrupt) leaves FILE as it was.
 */
struct out_file {
	const char *path;		/* FILE as given */
	char *tmp;			/* the temporary beside it, NULL: FILE itself */
	FILE *f;
};

static int out_open(const struct cmd *c, const char *path, struct out_file *of)
{
	static unsigned int seq;
	struct stat sb;
	mode_t mode = 0666;		/* as fopen(): less the umask */
	bool keep_mode = false;
	size_t len = strlen(path) + 64;
	int fd = -1, i;

	of->path = path;
	of->tmp = NULL;
	of->f = NULL;
	if (!stat(path, &sb)) {
		if (!S_ISREG(sb.st_mode)) {
			/* a device, a pipe: nothing to keep, write it directly */
			of->f = fopen(path, "w");
			goto out_opened;
		}
		mode = sb.st_mode & 07777;
		keep_mode = true;
	}
	of->tmp = malloc(len);
	if (!of->tmp) {
		errno = ENOMEM;
		goto out_fail;
	}
	for (i = 0; fd < 0 && i < 100; i++) {
		snprintf(of->tmp, len, "%s.rawstore-tmp.%ld.%u", path, (long)getpid(), seq++);
		fd = open(of->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0)
		goto out_free_tmp;
	/* The umask applied at open: the replaced file's mode, exactly. */
	if (keep_mode && fchmod(fd, mode))
		goto out_unlink_tmp;
	of->f = fdopen(fd, "w");
	if (!of->f)
		goto out_unlink_tmp;
out_opened:
	if (of->f)
		return 0;
	goto out_fail;

out_unlink_tmp:
	i = errno;
	close(fd);
	unlink(of->tmp);
	errno = i;
out_free_tmp:
	fprintf(stderr, "rawstore %s: %s: cannot create a temporary file beside it: %s\n",
		c->name, path, strerror(errno));
	free(of->tmp);
	of->tmp = NULL;
	return 1;
out_fail:
	fprintf(stderr, "rawstore %s: %s: %s\n", c->name, path, strerror(errno));
	return 1;
}

/* Sync the directory holding @path, so that a rename in it is durable. */
static int sync_dir_of(const char *path)
{
	char *d = strdup(path), *slash;
	int fd, ret = 0;

	if (!d)
		return -ENOMEM;
	slash = strrchr(d, '/');
	if (!slash)
		strcpy(d, ".");
	else if (slash == d)
		d[1] = 0;
	else
		*slash = 0;
	fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd))
		ret = -errno;
	if (fd >= 0)
		close(fd);
	free(d);
	return ret;
}

/* @ok: the data is complete; make it FILE.  Else drop the temporary. */
static int out_close(const struct cmd *c, struct out_file *of, bool ok)
{
	int ret = 0;

	if (ok && (fflush(of->f) || ferror(of->f) || (of->tmp && fsync(fileno(of->f))))) {
		fprintf(stderr, "rawstore %s: writing %s: %s\n", c->name, of->path,
			strerror(errno));
		ok = false;
		ret = 1;
	}
	if (fclose(of->f) && ok) {
		fprintf(stderr, "rawstore %s: writing %s: %s\n", c->name, of->path,
			strerror(errno));
		ok = false;
		ret = 1;
	}
	if (!of->tmp)
		return ret;
	if (ok && rename(of->tmp, of->path)) {
		fprintf(stderr, "rawstore %s: renaming %s to %s: %s\n", c->name, of->tmp,
			of->path, strerror(errno));
		ok = false;
		ret = 1;
	}
	if (!ok)
		unlink(of->tmp);
	else if (sync_dir_of(of->path))
		fprintf(stderr, "rawstore %s: %s: syncing its directory: %s\n", c->name,
			of->path, strerror(errno));
	free(of->tmp);
	return ret;
}

static int cmd_cat(const struct cmd *c, int argc, char **argv)
{
	static const struct option lo[] = { { "output", required_argument, 0, 'o' },
					    { "offset", required_argument, 0, 'O' },
					    { "length", required_argument, 0, 'L' },
					    HELP_OPTION, { 0, 0, 0, 0 } };
	const size_t chunk = 1 << 20;
	const char *coll, *name, *path = NULL;
	struct out_file of = { NULL, NULL, stdout };
	struct rawstore *st;
	uint64_t off = 0, left = UINT64_MAX;
	ssize_t n = 0;
	char *buf;
	int o, ret, wret = 0;

	while ((o = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
		switch (o) {
		case 'o':
			path = optarg;
			break;
		case 'O':
			if (parse_size("--offset", optarg, RAWSTORE_OBJECT_MAX, &off))
				return usage_error(c, NULL);
			break;
		case 'L':
			if (parse_size("--length", optarg, RAWSTORE_OBJECT_MAX, &left))
				return usage_error(c, NULL);
			if (!left)
				return usage_error(c, "--length must be at least 1");
			break;
		case 'h':
			return cmd_help(c);
		default:
			return usage_error(c, NULL);
		}
	}
	ret = want_args(c, argc, argv, 4, 4);
	if (!ret)
		ret = check_names(c, argc, argv, true);
	if (ret)
		return ret;
	ret = open_store_ro(c, argv, &st);
	if (ret)
		return ret;
	coll = argv[optind + 2];
	name = argv[optind + 3];
	if (path && strcmp(path, "-") && out_open(c, path, &of)) {
		rawstore_close(st);
		return 1;
	}
	buf = malloc(chunk);
	ret = buf ? 0 : -ENOMEM;
	while (buf && !interrupted && left) {
		n = rawstore_read(st, coll, name, strlen(name), off, buf,
				  (size_t)(left < chunk ? left : chunk));
		if (n <= 0)
			break;
		left -= (uint64_t)n;
		if (fwrite(buf, 1, (size_t)n, of.f) != (size_t)n) {
			fprintf(stderr, "rawstore %s: writing %s: %s\n", c->name,
				path ? path : "stdout", strerror(errno));
			wret = 1;
			break;
		}
		off += (uint64_t)n;
	}
	if (buf && n < 0)
		ret = (int)n;
	free(buf);
	rawstore_close(st);
	if (of.f == stdout) {
		if ((fflush(stdout) || ferror(stdout)) && !ret && !wret) {
			fprintf(stderr, "rawstore %s: writing stdout: %s\n", c->name,
				strerror(errno));
			wret = 1;
		}
	} else {
		o = out_close(c, &of, !ret && !wret && !interrupted);
		wret = wret ? wret : o;
	}
	if (ret < 0)
		return object_error(c, argv, coll, name, ret);
	return wret;
}

/* Read all of @fd into *@buf (malloc'd). */
static int slurp(int fd, char **buf, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	struct stat sb;
	char *b, *nb;
	ssize_t r;

	/* A file: its size (and a byte to see the end), not a doubling. */
	if (!fstat(fd, &sb) && S_ISREG(sb.st_mode) && (uint64_t)sb.st_size < SIZE_MAX / 2)
		cap = (size_t)sb.st_size + 1;
	b = malloc(cap);

	while (b) {
		if (n == cap) {
			nb = realloc(b, cap * 2);
			if (!nb)
				break;
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR && !interrupted)
			continue;
		if (r < 0) {
			free(b);
			return -errno;
		}
		if (!r) {
			*buf = b;
			*len = n;
			return 0;
		}
		n += (size_t)r;
	}
	free(b);
	return -ENOMEM;
}

/* Submit @t; on failure say which operation and why (*@err: the -errno). */
static int submit(const struct cmd *c, char **argv, struct rawstore *st, struct rawstore_txn *t,
		  int *err)
{
	int ret = rawstore_submit(st, t);

	if (err)
		*err = ret;
	if (!ret)
		return 0;
	fprintf(stderr, "rawstore %s: %s: transaction refused (operation %d): %s%s%s\n", c->name,
		argv[optind], rawstore_txn_failed_op(t), rawstore_strerror(ret),
		*rawstore_txn_errmsg(t) ? ": " : "", rawstore_txn_errmsg(t));
	return 1;
}

/*
 * put found no room: say what the new copy needs and what is free.  The
 * old copy of a replaced object is freed by the same transaction, so it is
 * still allocated while the new one is: replacing needs room for the
 * whole new copy.
 */
static void put_enospc(const struct cmd *c, char **argv, struct rawstore *st,
		       const char *coll, const char *name, size_t len, uint64_t old_alloc)
{
	struct rawstore_statfs sf = { .struct_size = sizeof(sf) };
	struct rawstore_info i = { .struct_size = sizeof(i) };
	uint64_t need;
	char h[32], f[32], o[32];

	if (rawstore_statfs(st, &sf) || rawstore_get_info(st, &i))
		return;
	need = len <= i.inline_max ? 0 :
	       (len + sf.min_alloc_size - 1) / sf.min_alloc_size * sf.min_alloc_size;
	human(need, h, sizeof(h));
	human(sf.free, f, sizeof(f));
	fprintf(stderr, "rawstore %s: %s: %s/%s needs %" PRIu64 " bytes (%s) of free space for "
		"its data; %" PRIu64 " bytes (%s) are free", c->name, argv[optind], coll, name,
		need, h, sf.free, f);
	if (old_alloc) {
		human(old_alloc, o, sizeof(o));
		fprintf(stderr, "; the copy it replaces (%" PRIu64 " bytes, %s) is freed only "
			"when the new one is written, so a replacement needs room for the whole "
			"new copy", old_alloc, o);
	}
	if (need <= sf.free)
		fprintf(stderr, "; the device itself refused the space (a full thin pool, or "
			"the file system under a store file is full)");
	fputc('\n', stderr);
}

/*
 * Commands whose only options are the policy options and --help: parse
 * them into @oo (initialised here).  0 to go on, -1 after --help (exit
 * 0), else the exit code.
 */
static int policy_opts_only(const struct cmd *c, int argc, char **argv,
			    struct rawstore_open_opts *oo)
{
	static const struct option lo[] = { POLICY_OPTIONS, HELP_OPTION, { 0, 0, 0, 0 } };
	int o, ret;

	rawstore_open_opts_init(oo);
	while ((o = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		if (o == 'h')
			return cmd_help(c) - 1;
		ret = opt_open_policy(c, o, oo);
		if (ret == 1)
			return usage_error(c, NULL);
		if (ret)
			return ret;
	}
	return 0;
}

static int cmd_put(const struct cmd *c, int argc, char **argv)
{
	const size_t chunk = 4 << 20;
	struct rawstore_open_opts oo;
	struct rawstore_txn *t = NULL;
	struct rawstore_stat s;
	struct rawstore *st;
	const char *coll, *name, *path = "-";
	char *data = NULL;
	size_t len = 0, off;
	uint64_t old_alloc = 0;
	int o, fd = 0, ret, err;

	ret = policy_opts_only(c, argc, argv, &oo);
	if (ret)
		return ret < 0 ? 0 : ret;
	ret = want_args(c, argc, argv, 4, 5);
	if (!ret)
		ret = check_names(c, argc - (argc - optind == 5), argv, true);
	if (ret)
		return ret;
	coll = argv[optind + 2];
	name = argv[optind + 3];
	if (argc - optind == 5)
		path = argv[optind + 4];
	/* Read the input first: a bad path changes nothing. */
	if (strcmp(path, "-")) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "rawstore %s: %s: %s\n", c->name, path, strerror(errno));
			return 1;
		}
	}
	ret = slurp(fd, &data, &len);
	if (fd)
		close(fd);
	if (interrupted) {
		free(data);
		return 1;	/* nothing written; main() says so */
	}
	if (ret) {
		fprintf(stderr, "rawstore %s: reading %s: %s\n", c->name,
			strcmp(path, "-") ? path : "stdin", strerror(-ret));
		return 1;
	}
	ret = open_store(c, argv, &oo, &st);
	if (ret) {
		free(data);
		return ret;
	}
	/* One transaction: create the collection if it is missing, replace
	 * the object if it exists, write the data. */
	ret = rawstore_txn_new(&t);
	if (!ret) {
		o = rawstore_coll_exists(st, coll);
		if (o == 0)
			ret = rawstore_txn_coll_create(t, coll);
		else if (o < 0)
			ret = o;
	}
	s.struct_size = sizeof(s);
	if (!ret && rawstore_stat(st, coll, name, strlen(name), &s) == 0) {
		old_alloc = s.allocated;
		ret = rawstore_txn_remove(t, coll, name, strlen(name));
	}
	if (!ret)
		ret = rawstore_txn_touch(t, coll, name, strlen(name));
	for (off = 0; !ret && off < len; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;

		ret = rawstore_txn_write(t, coll, name, strlen(name), off, data + off, n);
	}
	free(data);
	if (ret) {
		fail_dev(c, argv[optind], "building the transaction", ret);
		ret = 1;
	} else if (interrupted) {
		ret = 1;	/* not submitted: nothing written */
	} else {
		ret = submit(c, argv, st, t, &err);
		if (err == -ENOSPC)
			put_enospc(c, argv, st, coll, name, len, old_alloc);
	}
	rawstore_txn_free(t);
	o = close_store(c, argv[optind], st);
	if (!ret && !o)
		printf("wrote %zu bytes to %s/%s\n", len, coll, name);
	return ret ? ret : o;
}

static int cmd_rm(const struct cmd *c, int argc, char **argv)
{
	struct rawstore_open_opts oo;
	struct rawstore_txn *t = NULL;
	struct rawstore *st;
	const char *coll;
	int o, i, ret;

	ret = policy_opts_only(c, argc, argv, &oo);
	if (ret)
		return ret < 0 ? 0 : ret;
	ret = want_args(c, argc, argv, 4, 1 << 20);
	if (!ret)
		ret = check_names(c, argc, argv, true);
	if (ret)
		return ret;
	ret = open_store(c, argv, &oo, &st);
	if (ret)
		return ret;
	coll = argv[optind + 2];
	ret = rawstore_txn_new(&t);
	for (i = optind + 3; !ret && i < argc; i++) {
		struct rawstore_stat s = { .struct_size = sizeof(s) };

		/* Name the missing object (the transaction would only say -ENOENT). */
		ret = rawstore_stat(st, coll, argv[i], strlen(argv[i]), &s);
		if (ret) {
			object_error(c, argv, coll, argv[i], ret);
			ret = 1;
			break;
		}
		ret = rawstore_txn_remove(t, coll, argv[i], strlen(argv[i]));
	}
	if (ret < 0) {
		fail_dev(c, argv[optind], "building the transaction", ret);
		ret = 1;
	} else if (!ret && !interrupted) {
		ret = submit(c, argv, st, t, NULL);
	}
	rawstore_txn_free(t);
	o = close_store(c, argv[optind], st);
	if (!ret && !o)
		printf("removed %d objects from %s\n", argc - optind - 3, coll);
	return ret ? ret : o;
}

static int cmd_rename(const struct cmd *c, int argc, char **argv)
{
	struct rawstore_stat s = { .struct_size = sizeof(s) };
	struct rawstore_open_opts oo;
	struct rawstore_txn *t = NULL;
	const char *sc, *sn, *dc, *dn;
	struct rawstore *st;
	int o, ret;

	ret = policy_opts_only(c, argc, argv, &oo);
	if (ret)
		return ret < 0 ? 0 : ret;
	ret = want_args(c, argc, argv, 6, 6);
	if (ret)
		return ret;
	sc = argv[optind + 2];
	sn = argv[optind + 3];
	dc = argv[optind + 4];
	dn = argv[optind + 5];
	if (!*sn || !*dn || strlen(sn) > RAWSTORE_NAME_MAX || strlen(dn) > RAWSTORE_NAME_MAX)
		return usage_error(c, "object names must have 1 to %d bytes", RAWSTORE_NAME_MAX);
	if (!strcmp(sc, dc) && !strcmp(sn, dn))
		return usage_error(c, "source and destination are the same object");
	ret = open_store(c, argv, &oo, &st);
	if (ret)
		return ret;
	/* Name what is missing (the transaction would only say -ENOENT). */
	ret = rawstore_stat(st, sc, sn, strlen(sn), &s);
	if (ret) {
		object_error(c, argv, sc, sn, ret);
	} else if ((o = rawstore_coll_exists(st, dc)) <= 0) {
		fprintf(stderr, "rawstore %s: %s: collection %s: %s\n", c->name, argv[optind], dc,
			rawstore_strerror(o ? o : -ENOENT));
		ret = 1;
	} else {
		ret = rawstore_txn_new(&t);
		if (!ret)
			ret = rawstore_txn_rename(t, sc, sn, strlen(sn), dc, dn, strlen(dn));
		if (ret) {
			fail_dev(c, argv[optind], "building the transaction", ret);
			ret = 1;
		} else {
			ret = submit(c, argv, st, t, NULL);
		}
		rawstore_txn_free(t);
	}
	o = close_store(c, argv[optind], st);
	if (!ret && !o)
		printf("renamed %s/%s to %s/%s\n", sc, sn, dc, dn);
	return ret ? 1 : o;
}

/* Use the space of a grown device (rawstore_grow); never shrinks. */
static int cmd_grow(const struct cmd *c, int argc, char **argv)
{
	static const struct option lo[] = { { "size", required_argument, 0, 's' },
					    HELP_OPTION, { 0, 0, 0, 0 } };
	struct rawstore_statfs s0 = { .struct_size = sizeof(s0) };
	struct rawstore_open_opts oo;
	uint64_t size = 0, now = 0;
	struct rawstore *st;
	int o, ret, cret;

	while ((o = getopt_long(argc, argv, "s:h", lo, NULL)) != -1) {
		switch (o) {
		case 's':
			if (parse_size("--size", optarg, UINT64_MAX, &size))
				return usage_error(c, NULL);
			if (!size)
				return usage_error(c, "--size must be more than 0");
			break;
		case 'h':
			return cmd_help(c);
		default:
			return usage_error(c, NULL);
		}
	}
	ret = want_args(c, argc, argv, 2, 2);
	if (ret)
		return ret;
	rawstore_open_opts_init(&oo);
	ret = open_store(c, argv, &oo, &st);
	if (ret)
		return ret;
	rawstore_statfs(st, &s0);
	ret = rawstore_grow(st, size, &now);
	if (ret)
		fail_dev(c, argv[optind], "grow", ret);
	cret = close_store(c, argv[optind], st);
	if (ret)
		return 1;
	if (now == s0.device_size)
		printf("%s: nothing to grow (the store uses %" PRIu64 " bytes of the device)\n",
		       argv[optind], now);
	else
		printf("grew %s from %" PRIu64 " to %" PRIu64 " bytes (%" PRIu64 " bytes more "
		       "free, unpunched: 'rawstore reclaim' zeroes them)\n", argv[optind],
		       s0.device_size, now, now - s0.device_size);
	return cret;
}

/* Remove an empty collection, in one transaction. */
static int cmd_rmcoll(const struct cmd *c, int argc, char **argv)
{
	struct rawstore_open_opts oo;
	struct rawstore_txn *t = NULL;
	struct rawstore *st;
	const char *coll;
	int o, ret, err = 0;

	ret = policy_opts_only(c, argc, argv, &oo);
	if (ret)
		return ret < 0 ? 0 : ret;
	ret = want_args(c, argc, argv, 3, 3);
	if (!ret)
		ret = check_names(c, argc, argv, false);
	if (ret)
		return ret;
	ret = open_store(c, argv, &oo, &st);
	if (ret)
		return ret;
	coll = argv[optind + 2];
	ret = rawstore_coll_exists(st, coll);
	if (ret <= 0) {
		fprintf(stderr, "rawstore %s: %s: collection %s: %s\n", c->name, argv[optind],
			coll, rawstore_strerror(ret ? ret : -ENOENT));
		ret = 1;
		goto out_close;
	}
	ret = rawstore_txn_new(&t);
	if (!ret)
		ret = rawstore_txn_coll_remove(t, coll);
	if (ret) {
		fail_dev(c, argv[optind], "building the transaction", ret);
		ret = 1;
	} else if (!interrupted) {
		ret = rawstore_submit(st, t);
		err = ret;
		if (ret == -ENOTEMPTY)
			fprintf(stderr, "rawstore %s: %s: collection %s is not empty: remove its "
				"objects first ('rawstore ls' lists them, 'rawstore rm' removes "
				"them)\n", c->name, argv[optind], coll);
		else if (ret)
			fprintf(stderr, "rawstore %s: %s: removing collection %s: %s\n", c->name,
				argv[optind], coll, rawstore_strerror(ret));
		ret = ret ? 1 : 0;
	}
	rawstore_txn_free(t);
out_close:
	o = close_store(c, argv[optind], st);
	if (!ret && !o && !err && !interrupted)
		printf("removed collection %s\n", coll);
	return ret ? ret : o;
}

/* ---- reclaim and prepare: progress and summary ---- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct progress {
	const char *verb;		/* "reclaim", "prepare" */
	bool tty;			/* redraw one line; else a line per round */
	double t0, last;
	bool drawn;
};

static void progress_cb(void *arg, uint64_t done, uint64_t total)
{
	struct progress *p = arg;
	double t = now_s(), pct = total ? 100.0 * (double)done / (double)total : 100.0;
	char d[32], tot[32], r[32];
	int i, fill;

	if (p->tty && p->drawn && done < total && t - p->last < 0.1)
		return;
	p->last = t;
	human(done, d, sizeof(d));
	human(total, tot, sizeof(tot));
	human(t > p->t0 ? (uint64_t)((double)done / (t - p->t0)) : 0, r, sizeof(r));
	if (!p->tty) {
		fprintf(stderr, "%s: %s of %s (%.0f%%), %s/s\n", p->verb, d, tot, pct, r);
		return;
	}
	fill = (int)(pct / 100.0 * 30.0);
	fprintf(stderr, "\r%s [", p->verb);
	for (i = 0; i < 30; i++)
		fputc(i < fill ? '#' : '.', stderr);
	fprintf(stderr, "] %3.0f%%  %s of %s  %s/s\033[K", pct, d, tot, r);
	p->drawn = true;
}

static int cmd_run(const struct cmd *c, int argc, char **argv, bool reclaim)
{
	static const struct option lo[] = {
		{ "dry-run", no_argument, 0, 'n' },
		{ "max-bytes", required_argument, 0, 'm' },
		{ "rate", required_argument, 0, 'r' },
		{ "progress", no_argument, 0, 'p' },
		{ "no-progress", no_argument, 0, 'q' },
		{ "json", no_argument, 0, 'j' },
		POLICY_OPTIONS,
		HELP_OPTION,
		{ 0, 0, 0, 0 },
	};
	struct rawstore_open_opts oo;
	struct rawstore_space_opts so;
	struct rawstore_statfs s;
	struct progress pr = { reclaim ? "reclaim" : "prepare", false, 0, 0, false };
	struct rawstore *st;
	int o, show = -1, ret;
	bool json = false;
	char h[32], rate[32];
	double t;
	int64_t done;

	rawstore_open_opts_init(&oo);
	rawstore_space_opts_init(&so);
	while ((o = getopt_long(argc, argv, "nm:r:h", lo, NULL)) != -1) {
		switch (o) {
		case 'n':
			so.dry_run = 1;
			break;
		case 'm':
			if (parse_size("--max-bytes", optarg, UINT64_MAX, &so.max_bytes))
				return usage_error(c, NULL);
			if (!so.max_bytes)
				return usage_error(c, "--max-bytes must be at least 1");
			break;
		case 'r':
			if (parse_size("--rate", optarg, UINT64_MAX, &so.rate))
				return usage_error(c, NULL);
			if (!so.rate)
				return usage_error(c, "--rate must be at least 1 byte/s");
			break;
		case 'p':
			show = 1;
			break;
		case 'q':
			show = 0;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			return cmd_help(c);
		default:
			ret = opt_open_policy(c, o, &oo);
			if (ret == 1)
				return usage_error(c, NULL);
			if (ret)
				return ret;
		}
	}
	ret = want_args(c, argc, argv, 2, 2);
	if (ret)
		return ret;
	pr.tty = isatty(2);
	if (show < 0)
		show = pr.tty && !json;
	if (show && !so.dry_run) {
		so.progress = progress_cb;
		so.progress_arg = &pr;
	}
	so.stop = &interrupted;
	oo.read_only = so.dry_run && !oo.zero_policy && !oo.punch_policy;
	ret = open_store(c, argv, &oo, &st);
	if (ret)
		return ret;
	pr.t0 = now_s();
	done = reclaim ? rawstore_space_reclaim(st, &so) : rawstore_space_prepare(st, &so);
	t = now_s() - pr.t0;
	if (pr.drawn)
		fputc('\n', stderr);
	s.struct_size = sizeof(s);
	ret = rawstore_statfs(st, &s);
	o = rawstore_close(st);
	if (done < 0)
		return fail_dev(c, argv[optind], NULL, (int)done);
	if (ret || o)
		return fail_dev(c, argv[optind], ret ? "statfs" : "close", ret ? ret : o);
	human((uint64_t)done, h, sizeof(h));
	human(t > 0 ? (uint64_t)((double)done / t) : 0, rate, sizeof(rate));
	if (json) {
		printf("{\"command\": \"%s\", \"dry_run\": %s, \"bytes\": %" PRId64
		       ", \"seconds\": %.3f, \"free\": %" PRIu64 ", \"zeroed\": %" PRIu64
		       ", \"dirty\": %" PRIu64 ", \"unpunched\": %" PRIu64 ", \"provisioned\": %"
		       PRIu64 "}\n", c->name, so.dry_run ? "true" : "false", done, t, s.free,
		       s.zeroed, s.dirty, s.unpunched, s.provisioned);
	} else if (so.dry_run) {
		printf("would %s %" PRId64 " bytes (%s)\n", reclaim ? "punch" : "zero", done, h);
	} else {
		printf("%s %" PRId64 " bytes (%s) in %.2f s (%s/s)\n",
		       reclaim ? "punched" : "zeroed", done, h, t, rate);
		human(s.zeroed, h, sizeof(h));
		human(s.dirty, rate, sizeof(rate));
		printf("free space: %s zeroed, %s dirty", h, rate);
		human(s.unpunched, h, sizeof(h));
		printf(", %s pending punch\n", h);
	}
	return 0;
}

static int cmd_reclaim(const struct cmd *c, int argc, char **argv)
{
	return cmd_run(c, argc, argv, true);
}

static int cmd_prepare(const struct cmd *c, int argc, char **argv)
{
	return cmd_run(c, argc, argv, false);
}

static int cmd_version(const struct cmd *c, int argc, char **argv)
{
	int ret = parse_none(c, argc, argv);

	if (!ret)
		ret = want_args(c, argc, argv, 0, 0);
	if (ret)
		return ret < 0 ? 0 : ret;
	printf("rawstore %s\n", rawstore_version());
	return 0;
}

static const struct cmd cmd_table[] = {
	{ "mkfs", cmd_mkfs,
	  "[--min-alloc N] [--csum-block N] [--inline-max N] [--size N] "
	  "[--prealloc none|unwritten|write-zeroes|stale] [--journal device|rocksdb] "
	  "[--journal-size N] " POLICY_SYNOPSIS " [--force] DEV META",
	  "create a store",
	  "  --min-alloc N     allocation unit in bytes (a power of two, 4k to 16m,\n"
	  "                    default 4k)\n"
	  "  --csum-block N    checksum block in bytes (divides the unit, default 4k)\n"
	  "  --inline-max N    objects up to N bytes stay in RocksDB (default 4k, 0 off)\n"
	  "  --size N          use only the first N bytes of DEV\n"
	  "  --prealloc P      a store in a regular file: none (sparse, default),\n"
	  "                    unwritten (fallocate), write-zeroes (FALLOC_FL_WRITE_ZEROES)\n"
	  "                    or stale (FALLOC_FL_NO_HIDE_STALE, patched ext4 only)\n"
	  "  --journal J       where the metadata log lives: device (default: a ring on\n"
	  "                    DEV, one flush per commit) or rocksdb (its WAL in META)\n"
	  "  --journal-size N  the device journal's bytes (default 1/64 of DEV,\n"
	  "                    4m to 256m)\n"
	  POLICY_HELP
	  "  -f, --force       overwrite an existing store, file system or partition\n"
	  "                    table on DEV, and a META that is not empty\n", NULL },
	{ "fsck", cmd_fsck, "[--deep] [--repair] [--rebuild-freelist] [--json] DEV META",
	  "check the store (exit status 4 if problems remain)",
	  "  --deep            read every extent and verify its checksums\n"
	  "  --repair          return leaked space, delete orphaned records, rewrite\n"
	  "                    damaged superblock copies (from META's copy when both\n"
	  "                    are lost)\n"
	  "  --rebuild-freelist  rebuild the free list from the object records\n"
	  "  --json            print the problems and counts as JSON\n", NULL },
	{ "statfs", cmd_statfs, "[--json] DEV META",
	  "space: allocated, free, zeroed, dirty, pending punch, provisioned",
	  "  --json            exact byte counts as JSON (default: human sizes)\n", NULL },
	{ "df", cmd_statfs, "[--json] DEV META", "alias of statfs",
	  "  --json            exact byte counts as JSON (default: human sizes)\n", "statfs" },
	{ "info", cmd_info, "[--json] [--probe] DEV META",
	  "geometry, I/O engine, format, space policies in effect",
	  "  --json            print as JSON\n"
	  "  --probe           open read-write: the open probes zero-range, and the\n"
	  "                    policies shown are those in effect after it\n", NULL },
	{ "dump", cmd_dump, "[--json] DEV META",
	  "superblock and metadata summary: record counts by kind, policy, generation",
	  "  --json            print as JSON\n", NULL },
	{ "ls", cmd_ls, "DEV META [COLL]", "list the collections, or the objects of COLL", "",
	  NULL },
	{ "stat", cmd_stat, "[--extents] DEV META COLL NAME", "one object's size and allocation",
	  "  --extents         list its extents (offset, length, device offset) and\n"
	  "                    verify their checksums (exit status 4 if one is bad)\n", NULL },
	{ "cat", cmd_cat, "[--output FILE] [--offset N] [--length N] DEV META COLL NAME",
	  "write an object's data to stdout or FILE",
	  "  -o, --output FILE write to FILE instead of stdout (FILE is replaced only\n"
	  "                    once the whole object is written)\n"
	  "  --offset N        start at byte N of the object (default 0)\n"
	  "  --length N        at most N bytes (default: to the end)\n", NULL },
	{ "get", cmd_cat, "[--output FILE] [--offset N] [--length N] DEV META COLL NAME",
	  "alias of cat",
	  "  -o, --output FILE write to FILE instead of stdout (FILE is replaced only\n"
	  "                    once the whole object is written)\n"
	  "  --offset N        start at byte N of the object (default 0)\n"
	  "  --length N        at most N bytes (default: to the end)\n", "cat" },
	{ "put", cmd_put, POLICY_SYNOPSIS " DEV META COLL NAME [FILE]",
	  "store FILE (or stdin) as object NAME in one transaction",
	  POLICY_HELP, NULL },
	{ "rm", cmd_rm, POLICY_SYNOPSIS " DEV META COLL NAME...",
	  "remove objects, in one transaction", POLICY_HELP, NULL },
	{ "rename", cmd_rename, POLICY_SYNOPSIS " DEV META COLL NAME NEW_COLL NEW_NAME",
	  "move an object to a new name (and collection), replacing one there",
	  POLICY_HELP, NULL },
	{ "rmcoll", cmd_rmcoll, POLICY_SYNOPSIS " DEV META COLL",
	  "remove an empty collection", POLICY_HELP, NULL },
	{ "grow", cmd_grow, "[--size SIZE] DEV META",
	  "use the space of a grown device (never shrinks)",
	  "  --size SIZE       end the data area at SIZE bytes (default: the whole\n"
	  "                    device); less than the store's size is refused\n", NULL },
	{ "reclaim", cmd_reclaim, RUN_SYNOPSIS " " POLICY_SYNOPSIS " DEV META",
	  "punch freed ranges not yet punched (give space back to the device)",
	  RUN_HELP POLICY_HELP, NULL },
	{ "prepare", cmd_prepare, RUN_SYNOPSIS " " POLICY_SYNOPSIS " DEV META",
	  "zero dirty free space ahead, so partial-unit writes find zeroed space",
	  RUN_HELP POLICY_HELP, NULL },
	{ "version", cmd_version, "", "print the library version", "", NULL },
	{ NULL, NULL, NULL, NULL, NULL, NULL },
};

static const struct cmd *commands(void)
{
	return cmd_table;
}

int main(int argc, char **argv)
{
	static char prog[64];
	const struct cmd *c;
	int ret;

	if (argc < 2) {
		fprintf(stderr, "rawstore: no command given\n");
		print_usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		print_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("rawstore %s\n", rawstore_version());
		return 0;
	}
	for (c = commands(); c->name; c++)
		if (!strcmp(argv[1], c->name))
			break;
	if (!c->name) {
		fprintf(stderr, "rawstore: unknown command '%s'\n", argv[1]);
		print_usage(stderr);
		return 2;
	}
	/* getopt's messages read "rawstore CMD: unrecognized option ..." */
	snprintf(prog, sizeof(prog), "rawstore %s", c->name);
	argv[1] = prog;
	optind = 1;
	signals_install();
	ret = c->fn(c, argc - 1, argv + 1);
	if (interrupted) {
		/* every command closed the store before returning */
		fprintf(stderr, "rawstore %s: interrupted by %s; the store was closed cleanly\n",
			c->name, interrupted == SIGINT ? "SIGINT" : "SIGTERM");
		return 128 + interrupted;
	}
	return ret;
}
