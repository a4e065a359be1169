// SPDX-License-Identifier: MIT
/*
 * The `files` backend of rawstore-bench: one file per object on a file
 * system (the FileStore way), object records in RocksDB.
 *
 * A create is open(O_CREAT) + pwrite + fdatasync of the file, then one
 * synced RocksDB put of the object record (name -> size), so that it is
 * durable when acknowledged, like a rawstore transaction: on ext4 and xfs
 * fdatasync of a new file also forces the journal entry that created it.
 * With --files-hint the object size is fallocate()d first (an allocation
 * hint).  Overwrites are pwrite + fdatasync into the object's file (no
 * record changes); reads are O_DIRECT preads (no page cache, like
 * rawstore); a remove is unlink + a synced RocksDB delete.  Punching on
 * zero/truncate is FALLOC_FL_PUNCH_HOLE; the workloads here do not zero.
 * QD N runs N threads, each with one operation in flight.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

struct files {
	const struct cfg *c;
	char dir[4096];
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wsync;
	atomic_uint_fast64_t flushes, syncs, txns;
};

/* What one workload's threads share. */
struct job {
	struct files *f;
	struct result *r;
	const char *prefix;
	uint64_t size, count, objects, obj_size;
	atomic_uint_fast64_t next;
	char *data;
	int *fds;		/* objects opened once (fd cache), for overwrite/read */
	atomic_int err;
	int (*op)(struct job *j, uint64_t i, uint64_t *seed, char *buf);
};

static void path_of(struct files *f, const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", f->dir, name);
}

static int db_put(struct files *f, const char *name, uint64_t size)
{
	char *err = NULL;
	char val[32];

	snprintf(val, sizeof(val), "%" PRIu64, size);
	rocksdb_put(f->db, f->wsync, name, strlen(name), val, strlen(val), &err);
	if (err) {
		fprintf(stderr, "files: rocksdb put: %s\n", err);
		free(err);
		return -EIO;
	}
	f->syncs++;
	return 0;
}

static int db_del(struct files *f, const char *name)
{
	char *err = NULL;

	rocksdb_delete(f->db, f->wsync, name, strlen(name), &err);
	if (err) {
		fprintf(stderr, "files: rocksdb delete: %s\n", err);
		free(err);
		return -EIO;
	}
	f->syncs++;
	return 0;
}

/* Create name with len bytes of data, durably. */
static int obj_create(struct files *f, const char *name, const char *data, uint64_t len)
{
	char path[4352];
	int fd, ret = 0;

	path_of(f, name, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (f->c->files_hint && fallocate(fd, 0, 0, (off_t)len))
		ret = -errno;
	if (!ret && pwrite(fd, data, len, 0) != (ssize_t)len)
		ret = -errno ? -errno : -EIO;
	if (!ret && fdatasync(fd))
		ret = -errno;
	f->flushes++;
	close(fd);
	if (!ret)
		ret = db_put(f, name, len);
	if (!ret)
		f->txns++;
	return ret;
}

static int obj_remove(struct files *f, const char *name)
{
	char path[4352];
	int ret;

	path_of(f, name, path, sizeof(path));
	if (unlink(path))
		return -errno;
	ret = db_del(f, name);
	if (!ret)
		f->txns++;
	return ret;
}

static int op_create(struct job *j, uint64_t i, uint64_t *seed, char *buf)
{
	char name[64];

	(void)seed;
	(void)buf;
	obj_name(name, sizeof(name), j->prefix, i);
	return obj_create(j->f, name, j->data, j->size);
}

static int op_overwrite(struct job *j, uint64_t i, uint64_t *seed, char *buf)
{
	uint64_t o = rnd(seed) % j->objects;
	uint64_t off = (rnd(seed) % (j->obj_size / j->size)) * j->size;

	(void)i;
	(void)buf;
	if (pwrite(j->fds[o], j->data, j->size, (off_t)off) != (ssize_t)j->size)
		return -EIO;
	if (fdatasync(j->fds[o]))
		return -errno;
	j->f->flushes++;
	j->f->txns++;
	return 0;
}

static int op_read(struct job *j, uint64_t i, uint64_t *seed, char *buf)
{
	uint64_t o = rnd(seed) % j->objects;
	uint64_t off = (rnd(seed) % (j->obj_size / j->size)) * j->size;

	(void)i;
	return pread(j->fds[o], buf, j->size, (off_t)off) == (ssize_t)j->size ? 0 : -EIO;
}

static int op_remove(struct job *j, uint64_t i, uint64_t *seed, char *buf)
{
	char name[64];

	(void)seed;
	(void)buf;
	obj_name(name, sizeof(name), j->prefix, i);
	return obj_remove(j->f, name);
}

static void *worker(void *arg)
{
	struct job *j = arg;
	uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&seed;
	char *buf = NULL;

	if (posix_memalign((void **)&buf, 4096, j->size ? j->size : 4096)) {
		j->err = -ENOMEM;
		return NULL;
	}
	for (;;) {
		uint64_t i = j->next++, t0;
		int ret;

		if (i >= j->count || j->err)
			break;
		t0 = rs_now_ns();
		ret = j->op(j, i, &seed, buf);
		j->r->lat[i] = rs_now_ns() - t0;
		if (ret) {
			j->err = ret;
			break;
		}
	}
	free(buf);
	return NULL;
}

/* Run j->count ops with qd threads, measuring into r. */
static int run_job(struct job *j, unsigned int qd, struct result *r)
{
	pthread_t th[256];
	uint64_t t0, c0, f0 = j->f->flushes, s0 = j->f->syncs, x0 = j->f->txns;
	unsigned int k;

	if (qd > 256)
		qd = 256;
	r->lat = calloc(j->count, sizeof(uint64_t));
	if (!r->lat)
		return -ENOMEM;
	j->r = r;
	j->next = 0;
	j->err = 0;
	r->ops = j->count;
	r->qd = qd;
	c0 = cpu_ns();
	t0 = rs_now_ns();
	for (k = 0; k < qd; k++)
		if (pthread_create(&th[k], NULL, worker, j))
			break;
	qd = k;
	for (k = 0; k < qd; k++)
		pthread_join(th[k], NULL);
	r->ns = rs_now_ns() - t0;
	r->cpu_ns = cpu_ns() - c0;
	r->txns = j->f->txns - x0;
	r->flushes = j->f->flushes - f0;
	r->syncs = j->f->syncs - s0;
	return j->err;
}

/* Create the overwrite/read object set and open it (fd cache). */
static int open_set(struct job *j, const char *prefix, uint64_t objects, int flags)
{
	char name[64], path[4352];
	uint64_t i;
	int ret = 0;

	j->objects = objects;
	j->obj_size = 4 << 20;
	j->fds = calloc(objects, sizeof(int));
	if (!j->fds || posix_memalign((void **)&j->data, 4096, j->obj_size))
		return -ENOMEM;
	memset(j->data, 0x33, j->obj_size);
	for (i = 0; i < objects && !ret; i++) {
		obj_name(name, sizeof(name), prefix, i);
		ret = obj_create(j->f, name, j->data, j->obj_size);
		path_of(j->f, name, path, sizeof(path));
		j->fds[i] = ret ? -1 : open(path, flags | O_CLOEXEC);
		if (!ret && j->fds[i] < 0)
			ret = -errno;
	}
	return ret;
}

static int close_set(struct job *j, const char *prefix)
{
	char name[64];
	uint64_t i;
	int ret = 0;

	for (i = 0; i < j->objects; i++) {
		if (j->fds[i] >= 0)
			close(j->fds[i]);
		obj_name(name, sizeof(name), prefix, i);
		if (!ret)
			ret = obj_remove(j->f, name);
	}
	free(j->fds);
	j->fds = NULL;
	return ret;
}

static int files_workload(struct files *f, const char *w)
{
	const struct cfg *c = f->c;
	char wname[32] = "";
	uint64_t size = 0, count = c->count, i;
	unsigned int qd = c->qd;
	struct result r = { 0 };
	struct job j = { 0 };
	int ret = 0;

	if (parse_workload(w, wname, sizeof(wname), &size, &qd, &count)) {
		fprintf(stderr, "rawstore-bench: bad workload '%s'\n", w);
		return -EINVAL;
	}
	j.f = f;
	j.size = size;
	j.count = count;
	r.size = size;
	r.name = wname;
	if (!strcmp(wname, "create") && size) {
		j.prefix = "fc-";
		if (posix_memalign((void **)&j.data, 4096, size))
			return -ENOMEM;
		memset(j.data, 0x5a, size);
		j.op = op_create;
		r.name = "create";
		r.bytes = size * count;
		ret = run_job(&j, qd, &r);
		if (!ret)
			report(c, &r);
		for (i = 0; i < count && !ret; i++) {
			char name[64];

			obj_name(name, sizeof(name), "fc-", i);
			ret = obj_remove(f, name);
		}
	} else if ((!strcmp(wname, "overwrite") || !strcmp(wname, "read")) && size) {
		bool rd = wname[0] == 'r';

		ret = open_set(&j, rd ? "fr-" : "fo-", c->objects, rd ? O_RDONLY | O_DIRECT :
			       O_WRONLY);
		j.op = rd ? op_read : op_overwrite;
		r.name = rd ? "read" : "overwrite";
		r.bytes = size * count;
		if (!ret)
			ret = run_job(&j, qd, &r);
		if (!ret)
			report(c, &r);
		if (!ret)
			ret = close_set(&j, rd ? "fr-" : "fo-");
	} else if (!strcmp(wname, "remove") && size) {
		/* create count objects (untimed), then time their removes */
		struct result setup = { 0 };

		if (posix_memalign((void **)&j.data, 4096, size))
			return -ENOMEM;
		memset(j.data, 0x77, size);
		j.prefix = "fx-";
		j.op = op_create;
		ret = run_job(&j, qd, &setup);
		free(setup.lat);
		j.op = op_remove;
		r.name = "remove";
		r.bytes = 0;
		if (!ret)
			ret = run_job(&j, qd, &r);
		if (!ret)
			report(c, &r);
		if (!ret)
			report_missing(c, "reclaim", size, "files: the file system frees "
				       "space at unlink; nothing to reclaim");
	} else {
		fprintf(stderr, "rawstore-bench: files: unknown workload '%s'\n", w);
		return -EINVAL;
	}
	free(j.data);
	free(r.lat);
	return ret;
}

/* mkdir -p @path: 0 or -errno (-ENOTDIR when a part is not a directory). */
static int mkdir_p(const char *path)
{
	char buf[sizeof(((struct files *)0)->dir)];
	size_t i, len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		struct stat sb;

		if (buf[i] != '/' && buf[i])
			continue;
		buf[i] = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		if (stat(buf, &sb))
			return -errno;
		if (!S_ISDIR(sb.st_mode))
			return -ENOTDIR;
		buf[i] = path[i];
	}
	return 0;
}

int files_run(const struct cfg *c, char **workloads, int n)
{
	struct files f = { .c = c };
	char *err = NULL;
	int i, ret = 0;

	/* DIR and its parents are made when missing, as mkfs makes --meta */
	snprintf(f.dir, sizeof(f.dir), "%s/objects", c->dev);
	ret = mkdir_p(f.dir);
	if (ret) {
		fprintf(stderr, "files: mkdir %s: %s\n", f.dir, strerror(-ret));
		return ret;
	}
	f.opts = rocksdb_options_create();
	rocksdb_options_set_create_if_missing(f.opts, 1);
	f.db = rocksdb_open(f.opts, c->meta, &err);
	if (err) {
		fprintf(stderr, "files: rocksdb open %s: %s\n", c->meta, err);
		free(err);
		rocksdb_options_destroy(f.opts);
		return -EIO;
	}
	f.wsync = rocksdb_writeoptions_create();
	rocksdb_writeoptions_set_sync(f.wsync, 1);
	if (!c->json)
		printf("# rawstore-bench files backend: objects in %s, records in %s%s\n", f.dir,
		       c->meta, c->files_hint ? ", fallocate hints" : "");
	for (i = 0; i < n && !ret; i++)
		ret = files_workload(&f, workloads[i]);
	if (ret)
		fprintf(stderr, "rawstore-bench: files: %s\n", strerror(-ret));
	rocksdb_writeoptions_destroy(f.wsync);
	rocksdb_close(f.db);
	rocksdb_options_destroy(f.opts);
	return ret;
}
