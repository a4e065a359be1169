// SPDX-License-Identifier: MIT
/*
 * t_space: the space layer of librawstore on the guest's real devices.
 *
 *   t_space zeroed DEV yes|no|auto  mkfs starts zeroed exactly when the
 *                               device zeroes cheaply (write-zeroes: yes; auto:
 *                               as sysfs write_zeroes_max_bytes says); partial-
 *                               unit writes (64 KiB units) then write only
 *                               their blocks, else they pad; never a read.
 *   t_space loop DEV BACKING    loop over a sparse file: reclaim punches the
 *                               backing file by exactly the freed bytes.
 *   t_space thin DEV POOL       dm-thin (small pool, error_if_no_space): a
 *                               full pool fails the transaction with ENOSPC
 *                               at provision time, nothing of it written;
 *                               reclaim makes the pool's used blocks fall.
 *   t_space thin-cli DEV POOL GIB  dm-thin, through the rawstore command:
 *                               put GIB GiB of large objects, rm them, and
 *                               'rawstore reclaim --progress' prints its
 *                               progress, a summary of the bytes punched, and
 *                               the pool's used data blocks fall by them.
 *   t_space stale FILE          a store inside a file preallocated with
 *                               NO_HIDE_STALE over marker bytes: no read
 *                               ever returns a marker byte.
 *
 * DESTROYS the data on DEV; metadata goes to /tmp/t_space-meta.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ktest.h"
#include "rawstore/rawstore.h"

#define META "/tmp/t_space-meta"

static struct rawstore *st;

static void mkfs_open(const char *dev, struct rawstore_mkfs_opts *mo,
		      struct rawstore_open_opts *oo)
{
	int rc;

	kt_sh("rm -rf " META);
	mo->force = 1;
	rc = rawstore_mkfs(dev, META, mo);
	if (rc)
		kt_fatal("mkfs %s: %s (%s)", dev, rawstore_strerror(rc), rawstore_errmsg());
	rc = rawstore_open(dev, META, oo, &st);
	if (rc)
		kt_fatal("open %s: %s (%s)", dev, rawstore_strerror(rc), rawstore_errmsg());
}

static int put(const char *name, uint64_t off, const void *buf, size_t len, bool coll)
{
	struct rawstore_txn *t;
	int rc;

	rawstore_txn_new(&t);
	if (coll)
		rawstore_txn_coll_create(t, "c");
	rawstore_txn_write(t, "c", name, strlen(name), off, buf, len);
	rc = rawstore_submit(st, t);
	rawstore_txn_free(t);
	return rc;
}

static int rm(const char *name)
{
	struct rawstore_txn *t;
	int rc;

	rawstore_txn_new(&t);
	rawstore_txn_remove(t, "c", name, strlen(name));
	rc = rawstore_submit(st, t);
	rawstore_txn_free(t);
	return rc;
}

static uint8_t *pat(size_t len, uint32_t seed)
{
	uint8_t *b = malloc(len);

	for (size_t i = 0; i < len; i++)
		b[i] = kt_pattern_byte(seed, i);
	return b;
}

static bool read_eq(const char *name, uint64_t off, const uint8_t *want, size_t len)
{
	uint8_t *got = malloc(len);
	ssize_t n = rawstore_read(st, "c", name, strlen(name), off, got, len);
	bool ok = n == (ssize_t)len && !memcmp(got, want, len);

	free(got);
	return ok;
}

static void get_perf(struct rawstore_perf *p)
{
	p->struct_size = sizeof(*p);
	rawstore_perf_get(st, p);
}

static void get_statfs(struct rawstore_statfs *s)
{
	s->struct_size = sizeof(*s);
	rawstore_statfs(st, s);
}

static void fsck_clean(void)
{
	struct rawstore_fsck_opts fo;
	struct rawstore_fsck_result fr;

	rawstore_fsck_opts_init(&fo);
	fo.deep = 1;
	fr.struct_size = sizeof(fr);
	kt_expect_eq(rawstore_fsck(st, &fo, &fr), 0, "deep fsck");
	kt_check(fr.errors == 0 && fr.leaks == 0, "fsck: %llu errors, %llu leaks",
		 (unsigned long long)fr.errors, (unsigned long long)fr.leaks);
}

static int t_zeroed(const char *dev, bool want_zeroed)
{
	struct rawstore_mkfs_opts mo;
	struct rawstore_open_opts oo;
	struct rawstore_perf p0, p1;
	struct rawstore_statfs s;
	struct rawstore_info i;
	uint8_t *d = pat(4096, 3), *z = calloc(1, 8192);
	int fd = open(dev, O_RDWR | O_DIRECT);

	kt_fill(fd, 0, 16 * MiB, 0x5a);	/* stale bytes where the store allocates */
	close(fd);
	rawstore_mkfs_opts_init(&mo);
	rawstore_open_opts_init(&oo);
	mo.min_alloc_size = 65536;
	mo.zero_policy = RAWSTORE_ZERO_PAD;
	mkfs_open(dev, &mo, &oo);
	get_statfs(&s);
	i.struct_size = sizeof(i);
	rawstore_get_info(st, &i);
	kt_note("zero policy %s, offload %d (probe %llu us), punch %s, provisioning %d",
		i.zero_policy, i.zero_offload, (unsigned long long)(i.zero_probe_ns / 1000),
		i.punch_policy, i.provisioning);
	kt_check((s.zeroed == s.free) == want_zeroed && (s.dirty == s.free) == !want_zeroed,
		 "after mkfs: %llu zeroed, %llu dirty of %llu free (zeroed expected: %d)",
		 (unsigned long long)s.zeroed, (unsigned long long)s.dirty,
		 (unsigned long long)s.free, want_zeroed);
	get_perf(&p0);
	kt_expect_eq(put("p", 4096, d, 4096, true), 0, "partial-unit write");
	get_perf(&p1);
	kt_check(p1.dev_read_ops == p0.dev_read_ops, "no device read (%llu)",
		 (unsigned long long)(p1.dev_read_ops - p0.dev_read_ops));
	if (want_zeroed)
		kt_check(p1.dev_write_bytes - p0.dev_write_bytes == 4096 &&
			 p1.pad_bytes == p0.pad_bytes, "zeroed space: wrote %llu bytes, padded %llu",
			 (unsigned long long)(p1.dev_write_bytes - p0.dev_write_bytes),
			 (unsigned long long)(p1.pad_bytes - p0.pad_bytes));
	else
		kt_check(p1.pad_bytes - p0.pad_bytes == 65536 - 4096,
			 "dirty space: padded %llu bytes",
			 (unsigned long long)(p1.pad_bytes - p0.pad_bytes));
	kt_check(read_eq("p", 0, z, 4096) && read_eq("p", 4096, d, 4096),
		 "reads: zeros, then the data (never the stale bytes)");
	fsck_clean();
	kt_expect_eq(rawstore_close(st), 0, "close");
	/* auto: the open-time probe finds zero-range offloaded exactly when the
	 * device has write-zeroes, and prepares only then */
	oo.zero_policy = RAWSTORE_ZERO_AUTO;
	if (rawstore_open(dev, META, &oo, &st))
		kt_fatal("reopen: %s", rawstore_errmsg());
	rawstore_get_info(st, &i);
	kt_check(i.zero_offload == (kt_queue_attr(dev, "write_zeroes_max_bytes") > 0) &&
		 !strcmp(i.zero_policy, i.zero_offload ? "prepare" : "pad"),
		 "auto: zero-range offload %d (probe %llu us), policy %s", i.zero_offload,
		 (unsigned long long)(i.zero_probe_ns / 1000), i.zero_policy);
	fsck_clean();
	kt_expect_eq(rawstore_close(st), 0, "close");
	return kt_done();
}

static uint64_t file_blocks(const char *path)
{
	struct stat sb;

	if (stat(path, &sb))
		kt_fatal("stat %s: %s", path, strerror(errno));
	return (uint64_t)sb.st_blocks * 512;
}

static int t_loop(const char *dev, const char *backing)
{
	struct rawstore_mkfs_opts mo;
	struct rawstore_open_opts oo;
	uint8_t *a = pat(4 * MiB, 1), *b = pat(4 * MiB, 2);
	uint64_t before, after;
	int rc;

	rawstore_mkfs_opts_init(&mo);
	rawstore_open_opts_init(&oo);
	mo.punch_policy = RAWSTORE_PUNCH_OPERATOR;	/* loop provisions: default background */
	mkfs_open(dev, &mo, &oo);
	kt_expect_eq(put("a", 0, a, 4 * MiB, true), 0, "write a");
	kt_expect_eq(put("b", 0, b, 4 * MiB, false), 0, "write b");
	kt_expect_eq(rm("b"), 0, "remove b");
	sync();
	before = file_blocks(backing);
	rc = rawstore_reclaim(st);
	kt_expect_eq(rc, 0, "reclaim (%s)", rawstore_errmsg());
	sync();
	after = file_blocks(backing);
	kt_check(before - after == 4 * MiB, "backing file: %llu -> %llu bytes allocated "
		 "(freed exactly 4 MiB)", (unsigned long long)before, (unsigned long long)after);
	kt_check(read_eq("a", 0, a, 4 * MiB), "the live object is intact");
	fsck_clean();
	kt_expect_eq(rawstore_close(st), 0, "close");
	return kt_done();
}

/* Used data blocks of a thin pool (dmsetup status). */
static long long pool_used(const char *pool)
{
	char cmd[256], line[512];
	long long used = -1, total;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "dmsetup status %s", pool);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f)) {
		char *p = line;
		int field;

		/* start length thin-pool transaction meta_used/total data_used/total */
		for (field = 0; field < 5 && p; field++)
			p = strchr(p + 1, ' ');
		if (p && sscanf(p, " %lld/%lld", &used, &total) != 2)
			used = -1;
	}
	pclose(f);
	return used;
}

static int t_thin(const char *dev, const char *pool)
{
	struct rawstore_mkfs_opts mo;
	struct rawstore_open_opts oo;
	struct rawstore_perf p0, p1;
	struct rawstore_info i;
	uint8_t *d = pat(MiB, 4);
	long long u0, u1, u2;
	char name[16];
	int n, rc = 0;

	rawstore_mkfs_opts_init(&mo);
	rawstore_open_opts_init(&oo);
	mkfs_open(dev, &mo, &oo);
	i.struct_size = sizeof(i);
	rawstore_get_info(st, &i);
	kt_check(i.provisioning == 1 && i.provision_max_bytes > 0,
		 "thin device provisions (provision_max_bytes %llu), punch policy %s",
		 (unsigned long long)i.provision_max_bytes, i.punch_policy);
	u0 = pool_used(pool);
	for (n = 0; n < 64 && !rc; n++) {
		snprintf(name, sizeof(name), "o%d", n);
		get_perf(&p0);
		rc = put(name, 0, d, MiB, n == 0);
		get_perf(&p1);
	}
	kt_expect_eq(rc, -ENOSPC, "the pool fills up: transaction %d refused", n - 1);
	kt_check(p1.provision_enospc > p0.provision_enospc &&
		 p1.dev_write_bytes == p0.dev_write_bytes,
		 "ENOSPC came from provisioning, with nothing written (%llu bytes)",
		 (unsigned long long)(p1.dev_write_bytes - p0.dev_write_bytes));
	kt_check(read_eq("o0", 0, d, MiB), "earlier objects intact");
	u1 = pool_used(pool);
	for (int j = 0; j < n - 1; j++) {
		snprintf(name, sizeof(name), "o%d", j);
		rm(name);
	}
	rc = rawstore_reclaim(st);
	kt_expect_eq(rc, 0, "reclaim (%s)", rawstore_errmsg());
	u2 = pool_used(pool);
	kt_check(u2 >= 0 && u2 < u1 / 2, "pool data blocks used: %lld at mkfs, %lld full, "
		 "%lld after reclaim", u0, u1, u2);
	kt_expect_eq(put("again", 0, d, MiB, false), 0, "write after reclaim (%s)",
		     rawstore_errmsg());
	fsck_clean();
	kt_expect_eq(rawstore_close(st), 0, "close");
	return kt_done();
}

/* Run @cmd, its stdout and stderr into @out (NUL-terminated); exit status. */
static int run_cli(const char *cmd, char *out, size_t size)
{
	char full[1024];
	FILE *f;
	size_t n = 0;
	int rc;

	snprintf(full, sizeof(full), "%s 2>&1", cmd);
	f = popen(full, "r");
	if (!f)
		return -1;
	while (n + 1 < size && fgets(out + n, (int)(size - n), f))
		n += strlen(out + n);
	while (fgetc(f) != EOF)
		;
	out[n] = 0;
	rc = pclose(f);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/*
 * Issue 10, "done when": gigabytes freed on dm-thin, 'rawstore reclaim'
 * shows its progress and the pool's used data blocks fall accordingly.
 * Everything goes through the command (mkfs with a policy flag, put from
 * stdin, rm, statfs, reclaim, fsck).
 */
static int t_thin_cli(const char *dev, const char *pool, int gib)
{
	const uint64_t obj = 128 * MiB, bs = 64 * 1024;	/* pool block: 128 sectors */
	const int nobj = (int)((uint64_t)gib * 1024 * MiB / obj);
	uint8_t *d = pat(4 * MiB, 7);
	static char out[1 << 16];
	char cmd[512], *p;
	long long u0, u1, u2, u3, punched = -1;
	int i, rc, lines = 0, last_pct = -1, backwards = 0;

	kt_sh("rm -rf " META);
	rc = run_cli("rawstore mkfs --punch-policy operator --zero-policy pad " META "x", out,
		     sizeof(out));
	kt_expect_eq(rc, 2, "mkfs with one argument is a usage error: %s", out);
	snprintf(cmd, sizeof(cmd), "rawstore mkfs --punch-policy operator --zero-policy pad %s "
		 META, dev);
	rc = run_cli(cmd, out, sizeof(out));
	if (rc)
		kt_fatal("%s: %s", cmd, out);
	u0 = pool_used(pool);
	for (i = 0; i < nobj; i++) {
		FILE *f;
		uint64_t w;

		snprintf(cmd, sizeof(cmd),
			 "rawstore put %s " META " big o%d > /tmp/t_space-put 2>&1", dev, i);
		f = popen(cmd, "w");
		if (!f)
			kt_fatal("popen %s", cmd);
		for (w = 0; w < obj; w += 4 * MiB) {
			d[0] = (uint8_t)i;	/* every object different */
			memcpy(d + 8, &w, sizeof(w));
			if (fwrite(d, 1, 4 * MiB, f) != 4 * MiB)
				break;
		}
		rc = pclose(f);
		if (!WIFEXITED(rc) || WEXITSTATUS(rc)) {
			kt_sh("cat /tmp/t_space-put");
			kt_fatal("rawstore put o%d failed", i);
		}
	}
	u1 = pool_used(pool);
	kt_check(u1 - u0 >= (long long)(nobj * obj / bs), "put %d x %llu MiB: pool data blocks "
		 "%lld -> %lld", nobj, (unsigned long long)(obj / MiB), u0, u1);
	snprintf(cmd, sizeof(cmd), "rawstore rm %s " META " big", dev);
	for (i = 0; i < nobj; i++)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " o%d", i);
	rc = run_cli(cmd, out, sizeof(out));
	kt_expect_eq(rc, 0, "rm %d objects in one transaction: %s", nobj, out);
	u2 = pool_used(pool);
	kt_check(u2 >= u1 - 16, "operator policy: nothing returned before reclaim (%lld -> %lld)",
		 u1, u2);
	snprintf(cmd, sizeof(cmd), "rawstore reclaim --dry-run %s " META, dev);
	rc = run_cli(cmd, out, sizeof(out));
	kt_check(rc == 0 && strstr(out, "would punch "), "reclaim --dry-run: %s", out);

	/* --progress: a line per round even though stderr is not a terminal */
	snprintf(cmd, sizeof(cmd), "rawstore reclaim --progress %s " META, dev);
	rc = run_cli(cmd, out, sizeof(out));
	kt_expect_eq(rc, 0, "reclaim");
	printf("%s", out);
	for (p = out; (p = strstr(p, "reclaim: ")); p++) {
		char *pct = strchr(p, '(');
		int v;

		if (pct && sscanf(pct, "(%d%%)", &v) == 1) {
			backwards += v < last_pct;
			last_pct = v;
			lines++;
		}
	}
	p = strstr(out, "punched ");
	if (p)
		sscanf(p, "punched %lld bytes", &punched);
	kt_check(lines >= 4 && last_pct == 100 && !backwards, "progress shown: %d lines, last at "
		 "%d%%, %d going back", lines, last_pct, backwards);
	kt_check(punched >= (long long)(nobj * obj) && strstr(out, " in ") && strstr(out, "/s)"),
		 "summary: %lld bytes punched (%d x %llu MiB freed), with the time taken", punched,
		 nobj, (unsigned long long)(obj / MiB));
	u3 = pool_used(pool);
	kt_check(u3 >= 0 && u2 - u3 >= (long long)(nobj * obj / bs) &&
		 u2 - u3 <= punched / (long long)bs + 1,
		 "pool data blocks %lld -> %lld after reclaim: fell by %lld (%lld blocks of "
		 "64 KiB punched)", u2, u3, u2 - u3, punched / (long long)bs);
	kt_check(u3 <= u0 + 32, "pool back to about its mkfs usage (%lld at mkfs, %lld now)", u0,
		 u3);
	snprintf(cmd, sizeof(cmd), "rawstore statfs --json %s " META, dev);
	rc = run_cli(cmd, out, sizeof(out));
	kt_check(rc == 0 && strstr(out, "\"unpunched\": 0,"), "statfs: nothing left to punch: %s",
		 out);
	snprintf(cmd, sizeof(cmd), "rawstore fsck %s " META, dev);
	rc = run_cli(cmd, out, sizeof(out));
	kt_check(rc == 0 && strstr(out, " 0 problems"), "fsck clean: %s", out);
	free(d);
	return kt_done();
}

static const char MARK[] = "STALE-MARKER-0123456789";

static int t_stale(const char *file)
{
	struct rawstore_mkfs_opts mo;
	struct rawstore_open_opts oo;
	struct rawstore_statfs s;
	char *fill = malloc(MiB), *buf = malloc(300000);
	int fd, n, rc, leaks = 0;

	for (size_t i = 0; i < MiB; i++)
		fill[i] = MARK[i % (sizeof(MARK) - 1)];
	/* a deleted file's blocks hold the marker; the store's file reuses them */
	fd = open("/mnt/space-ext4/old", O_CREAT | O_RDWR | O_TRUNC, 0600);
	for (n = 0; n < 48; n++)
		if (write(fd, fill, MiB) != (ssize_t)MiB)
			kt_fatal("fill: %s", strerror(errno));
	fsync(fd);
	close(fd);
	unlink("/mnt/space-ext4/old");
	sync();
	fd = open(file, O_CREAT | O_RDWR | O_TRUNC, 0600);
	close(fd);
	if (truncate(file, 0))
		kt_fatal("truncate");
	/* NO_HIDE_STALE extends the file: mkfs needs its size first */
	fd = open(file, O_RDWR);
	rc = fallocate(fd, FALLOC_FL_NO_HIDE_STALE, 0, 40 * MiB);
	close(fd);
	kt_expect_eq(rc ? -errno : 0, 0, "NO_HIDE_STALE preallocation of the store file");
	kt_check(kt_sh("grep -q STALE-MARKER %s", file) == 0,
		 "the preallocated file exposes stale bytes (the marker)");
	rawstore_mkfs_opts_init(&mo);
	rawstore_open_opts_init(&oo);
	mo.prealloc_policy = RAWSTORE_PREALLOC_STALE;
	mo.min_alloc_size = 16384;
	mkfs_open(file, &mo, &oo);
	get_statfs(&s);
	kt_check(s.zeroed == 0 && s.dirty == s.free, "stale preallocation: all free space dirty");
	for (n = 0; n < 40; n++) {
		char name[16];
		uint64_t off = (uint64_t)(n * 7919) % 50000, len = 1 + (uint64_t)(n * 104729) % 70000;
		uint8_t *d = pat(len, n);

		snprintf(name, sizeof(name), "o%d", n);
		rc = put(name, off, d, len, n == 0);
		free(d);
		if (rc)
			kt_fatal("write %s: %s", name, rawstore_strerror(rc));
	}
	for (n = 0; n < 40; n++) {
		char name[16];
		ssize_t r;

		snprintf(name, sizeof(name), "o%d", n);
		r = rawstore_read(st, "c", name, strlen(name), 0, buf, 300000);
		if (r < 0 || memmem(buf, (size_t)r, MARK, 12))
			leaks++;
	}
	kt_check(leaks == 0, "no read returned a marker byte (%d objects leaked)", leaks);
	fsck_clean();
	kt_expect_eq(rawstore_close(st), 0, "close");
	return kt_done();
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "zeroed")) {
		bool want = !strcmp(argv[3], "yes");

		/* auto: zeroed exactly when the device advertises write-zeroes */
		if (!strcmp(argv[3], "auto"))
			want = kt_queue_attr(argv[2], "write_zeroes_max_bytes") > 0;
		return t_zeroed(argv[2], want);
	}
	if (argc >= 4 && !strcmp(argv[1], "loop"))
		return t_loop(argv[2], argv[3]);
	if (argc >= 4 && !strcmp(argv[1], "thin"))
		return t_thin(argv[2], argv[3]);
	if (argc >= 5 && !strcmp(argv[1], "thin-cli"))
		return t_thin_cli(argv[2], argv[3], atoi(argv[4]));
	if (argc >= 3 && !strcmp(argv[1], "stale"))
		return t_stale(argv[2]);
	kt_fatal("usage: t_space zeroed DEV yes|no | loop DEV BACKING | thin DEV POOL | "
		 "thin-cli DEV POOL GIB | stale FILE");
}
