// SPDX-License-Identifier: MIT
/*
 * device.c: device open/geometry, I/O and the space verbs.
 *
 * Synchronous batches (reads, superblocks, deferred writes) go through a
 * pool of rings (io_uring, or libaio contexts), each used by one thread at
 * a time, so reads from many threads proceed in parallel.  The commit
 * thread has its own write queue: data writes are submitted at once and
 * reaped only when the queue is full, when a read needs a range still
 * being written, or when the commit stage waits for the group's data.
 */
#include <errno.h>
#include <fcntl.h>
#include <libaio.h>
#include <liburing.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "device.h"
#include "internal.h"
#include "util.h"

enum dev_engine { ENG_URING, ENG_AIO };

/*
 * Rings for synchronous batches, set up on first use: a thread each up to
 * this many threads.  A reader holds its ring for the whole read, so two
 * threads that share one wait for each other (32 made 64 readers queue
 * on the ring locks); unused rings cost no kernel resources.
 */
#define DEV_RINGS 128

struct rs_ring {
	pthread_mutex_t lock;		/* one batch at a time per ring */
	struct io_uring ring;
	io_context_t aio;
	int broken;			/* the ring is in an unknown state */
	bool ready;
};

/* One data write in flight on the write queue. */
struct wq_slot {
	struct rs_io io;
	struct iocb cb;			/* libaio */
	struct rs_wbuf *owner;		/* freed when its last write completes */
	unsigned int tag;		/* dev_wq_tag() when queued */
	bool busy;
};

#define WQ_FAILED_MAX 16

struct rs_wbuf {
	void *buf;
	size_t len;
	unsigned int refs;
};

/* The commit thread's write queue (used by that thread only). */
struct rs_wq {
	struct rs_ring r;
	struct wq_slot *slots;
	unsigned int *free, n_free;
	unsigned int inflight;
	unsigned int tag;		/* for the next writes */
	int err;			/* first error since dev_wq_reset */
	struct {
		unsigned int tag;
		int err;
	} failed[WQ_FAILED_MAX];	/* errors by tag, since dev_wq_reset */
	unsigned int n_failed;
	bool failed_overflow;		/* more than that: every tag failed */
	struct {
		uint64_t off, len;	/* bytes */
	} bad[WQ_FAILED_MAX];		/* ranges of failed writes, since dev_wq_reset */
	unsigned int n_bad;
	bool bad_overflow;		/* more than that: any range may be bad */
};

/*
 * The commit role's queue of in-place writes (deferred data): one batch
 * submitted at a time and waited for later, so that no transaction waits
 * for it (dev_aq_submit, dev_aq_wait).
 */
struct rs_aq {
	struct rs_ring r;
	struct rs_io *ios;		/* the batch: the caller's until dev_aq_wait */
	struct iocb *cbs;		/* libaio: one per I/O of the batch */
	unsigned int n, submitted, inflight;
	int err;			/* the batch's first error */
};

struct rs_dev {
	int fd;
	struct rs_dev_geom g;
	enum dev_engine engine;
	unsigned int qd;
	struct rs_ring rings[DEV_RINGS];
	struct rs_wq wq;
	struct rs_aq aq;
	struct rawstore *st;
	bool read_only;			/* O_RDONLY: writes and space verbs -EROFS */
	/* Flushes one at a time; after one failed, every later one fails
	 * too (the kernel reports a lost write to one fsync only). */
	pthread_mutex_t flush_lock;
	int flush_err;
};

static uint64_t sysfs_u64(const char *dir, const char *file)
{
	char path[512], buf[64];
	FILE *f;
	uint64_t v = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f))
		v = strtoull(buf, NULL, 10);
	fclose(f);
	return v;
}

static int sysfs_str(const char *dir, const char *file, char *buf, size_t len)
{
	char path[512];
	FILE *f;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "r");
	if (!f)
		return ret;
	if (fgets(buf, (int)len, f))
		ret = 0;
	fclose(f);
	return ret;
}

static void bdev_sysfs(struct rs_dev *d, dev_t rdev)
{
	char q[256], s[64];

	snprintf(q, sizeof(q), "/sys/dev/block/%u:%u/queue", major(rdev), minor(rdev));
	if (access(q, F_OK))	/* a partition: the queue is the parent's */
		snprintf(q, sizeof(q), "/sys/dev/block/%u:%u/../queue", major(rdev),
			 minor(rdev));
	d->g.discard_max = sysfs_u64(q, "discard_max_bytes");
	d->g.write_zeroes_max = sysfs_u64(q, "write_zeroes_max_bytes");
	d->g.provision_max = sysfs_u64(q, "provision_max_bytes");
	d->g.max_io = sysfs_u64(q, "max_sectors_kb") << 10;
	d->g.max_segments = sysfs_u64(q, "max_segments");
	d->g.rotational = sysfs_u64(q, "rotational") != 0;
	d->g.write_cache = true;
	if (!sysfs_str(q, "write_cache", s, sizeof(s)) && !strncmp(s, "write through", 13))
		d->g.write_cache = false;
}

static unsigned int file_block;
static bool no_uring;
static const struct dev_hooks *hooks;

void dev_set_file_block(unsigned int bytes)
{
	file_block = bytes;
}

void dev_set_no_uring(bool off)
{
	no_uring = off;
}

void dev_set_hooks(const struct dev_hooks *h)
{
	__atomic_store_n(&hooks, h, __ATOMIC_RELEASE);
}

static const struct dev_hooks *dev_hooks(void)
{
	return __atomic_load_n(&hooks, __ATOMIC_ACQUIRE);
}

static bool hook_garble(void)
{
	const struct dev_hooks *h = dev_hooks();

	return h && h->garble_failed_write && h->garble_failed_write();
}

static bool hook_fail_reap(void)
{
	const struct dev_hooks *h = dev_hooks();

	return h && h->fail_reap && h->fail_reap();
}

static bool hook_refuse_space(unsigned int kind)
{
	const struct dev_hooks *h = dev_hooks();

	return h && h->refuse_space && h->refuse_space(kind);
}

static int dev_geometry(struct rs_dev *d, const char *path)
{
	struct stat sb;
	int bs;

	if (fstat(d->fd, &sb))
		return -errno;
	if (S_ISBLK(sb.st_mode)) {
		d->g.is_bdev = true;
		if (ioctl(d->fd, BLKGETSIZE64, &d->g.size))
			return rs_err(d->st, -errno, "%s: BLKGETSIZE64 failed", path);
		if (ioctl(d->fd, BLKSSZGET, &bs))
			return rs_err(d->st, -errno, "%s: BLKSSZGET failed", path);
		d->g.logical_block = (uint32_t)bs;
		if (ioctl(d->fd, BLKPBSZGET, &bs))
			bs = (int)d->g.logical_block;
		d->g.physical_block = (uint32_t)bs;
		bdev_sysfs(d, sb.st_rdev);
	} else {
		/* A regular file stands in for a device with 4 KiB blocks. */
		d->g.size = (uint64_t)sb.st_size;
		d->g.logical_block = file_block ? file_block : 4096;
		d->g.physical_block = d->g.logical_block;
		d->g.write_cache = true;
	}
	return 0;
}

static int ring_init(struct rs_dev *d, struct rs_ring *r)
{
	int ret;

	if (d->engine == ENG_URING) {
		ret = io_uring_queue_init(d->qd, &r->ring, 0);
		if (ret)
			return rs_err(d->st, -ENODEV, "io_uring setup failed: %s", strerror(-ret));
	} else {
		memset(&r->aio, 0, sizeof(r->aio));
		ret = io_setup((int)d->qd, &r->aio);
		if (ret)
			return rs_err(d->st, -ENODEV, "libaio io_setup failed: %s",
				      strerror(-ret));
	}
	__atomic_store_n(&r->ready, true, __ATOMIC_RELEASE);
	return 0;
}

static void ring_exit(struct rs_dev *d, struct rs_ring *r)
{
	if (!r->ready)
		return;
	if (d->engine == ENG_URING)
		io_uring_queue_exit(&r->ring);
	else
		io_destroy(r->aio);
	r->ready = false;
}

static void rings_exit(struct rs_dev *d)
{
	unsigned int i;

	for (i = 0; i < DEV_RINGS; i++) {
		ring_exit(d, &d->rings[i]);
		pthread_mutex_destroy(&d->rings[i].lock);
	}
	ring_exit(d, &d->wq.r);
	ring_exit(d, &d->aq.r);
	free(d->aq.cbs);
	/* A broken queue never reaped these: the ring is gone now. */
	for (i = 0; d->wq.slots && i < d->qd; i++) {
		struct wq_slot *s = &d->wq.slots[i];

		if (s->busy && s->owner && !--s->owner->refs) {
			rs_iobuf_free(s->owner->buf, s->owner->len);
			free(s->owner);
		}
	}
	free(d->wq.slots);
	free(d->wq.free);
}

static int engine_init(struct rs_dev *d, enum rawstore_io_engine want)
{
	unsigned int i;
	int ret;

	d->engine = ENG_AIO;
	for (i = 0; i < DEV_RINGS; i++)
		pthread_mutex_init(&d->rings[i].lock, NULL);
	if (want != RAWSTORE_ENGINE_LIBAIO) {
		ret = no_uring ? -ENOSYS : io_uring_queue_init(d->qd, &d->rings[0].ring, 0);
		if (!ret) {
			d->engine = ENG_URING;
			d->rings[0].ready = true;
		} else if (want == RAWSTORE_ENGINE_IO_URING) {
			return rs_err(d->st, -ENODEV, "io_uring setup failed: %s",
				      strerror(-ret));
		} else {
			rs_log(d->st, RAWSTORE_LOG_WARNING,
			       "io_uring setup failed (%s); using libaio instead",
			       strerror(-ret));
		}
	}
	/* ring 0 always, the others on first use (ring_get) */
	ret = d->rings[0].ready ? 0 : ring_init(d, &d->rings[0]);
	if (!ret)
		ret = ring_init(d, &d->wq.r);
	if (!ret)
		ret = ring_init(d, &d->aq.r);
	if (!ret) {
		d->wq.slots = calloc(d->qd, sizeof(*d->wq.slots));
		d->wq.free = calloc(d->qd, sizeof(*d->wq.free));
		if (!d->wq.slots || !d->wq.free)
			ret = -ENOMEM;
		for (i = 0; !ret && i < d->qd; i++)
			d->wq.free[d->wq.n_free++] = d->qd - 1 - i;
	}
	if (ret)
		rings_exit(d);
	return ret;
}

int dev_open(struct rawstore *st, const char *path, enum rawstore_io_engine engine,
	     unsigned int qd, bool buffered, struct rs_dev **out)
{
	return dev_open_flags(st, path, engine, qd, buffered ? DEV_BUFFERED : 0, out);
}

int dev_open_flags(struct rawstore *st, const char *path, enum rawstore_io_engine engine,
		   unsigned int qd, unsigned int oflags, struct rs_dev **out)
{
	bool buffered = oflags & DEV_BUFFERED, ro = oflags & DEV_READ_ONLY;
	struct rs_dev *d;
	struct stat sb;
	int flags = (ro ? O_RDONLY : O_RDWR) | O_CLOEXEC;
	int ret;

	if (stat(path, &sb))
		return rs_err(st, -errno, "%s: cannot stat device", path);
	if (!S_ISBLK(sb.st_mode) && !S_ISREG(sb.st_mode))
		return rs_err(st, -ENOTBLK, "%s: neither a block device nor a regular file", path);
	if (S_ISBLK(sb.st_mode) && buffered)
		return rs_err(st, -EINVAL, "%s: buffered I/O is for regular files only", path);
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->st = st;
	pthread_mutex_init(&d->flush_lock, NULL);
	d->qd = qd ? qd : 64;
	d->read_only = ro;
	if (S_ISBLK(sb.st_mode) && !ro)
		flags |= O_EXCL;
	d->fd = open(path, flags | (buffered ? 0 : O_DIRECT));
	if (d->fd < 0 && errno == EINVAL && !buffered && S_ISREG(sb.st_mode)) {
		/* A file on a filesystem without O_DIRECT (tmpfs): say so. */
		rs_log(st, RAWSTORE_LOG_WARNING, "%s: the filesystem refuses O_DIRECT; "
		       "using buffered I/O (reported by rawstore_get_info)", path);
		buffered = true;
		d->fd = open(path, flags);
	}
	if (d->fd < 0) {
		ret = -errno;
		if (ret == -EBUSY)
			rs_err(st, ret, "%s: device is in use (O_EXCL)", path);
		else
			rs_err(st, ret, "%s: cannot open%s", path,
			       buffered ? "" : " with O_DIRECT");
		goto out_free;
	}
	d->g.direct = !buffered;
	/* The kernel lets O_RDWR open a read-only disk and fails the writes. */
	if (!ro && S_ISBLK(sb.st_mode)) {
		int bdev_ro = 0;

		if (!ioctl(d->fd, BLKROGET, &bdev_ro) && bdev_ro) {
			ret = rs_err(st, -EROFS, "%s: the device is read-only (open it read-only)",
				     path);
			goto out_close;
		}
	}
	if (flock(d->fd, (ro ? LOCK_SH : LOCK_EX) | LOCK_NB)) {
		ret = errno == EWOULDBLOCK ? -EBUSY : -errno;
		rs_err(st, ret, "%s: device is locked by another opener", path);
		goto out_close;
	}
	ret = dev_geometry(d, path);
	if (ret)
		goto out_close;
	ret = engine_init(d, engine);
	if (ret)
		goto out_close;
	*out = d;
	return 0;

out_close:
	close(d->fd);
out_free:
	free(d);
	return ret;
}

static int wq_reap_timeout(struct rs_dev *d, struct timespec *ts);

void dev_close(struct rs_dev *d)
{
	struct timespec ts = { 0, 1000000 };
	unsigned int tries;
	int r;

	if (!d)
		return;
	dev_wq_wait(d);
	if (d->aq.n && !d->aq.r.broken)
		dev_aq_wait(d);
	/*
	 * A broken queue's writes may still complete: reap what comes in a
	 * second at most, so that the ring does not hold the device (and
	 * its lock) after the close, with writes the kernel finishes alone.
	 */
	for (tries = 0; d->wq.inflight && d->wq.r.broken && tries < 1000; tries++) {
		r = wq_reap_timeout(d, &ts);
		if (r && r != -ETIME)
			break;
	}
	rings_exit(d);
	close(d->fd);
	pthread_mutex_destroy(&d->flush_lock);
	free(d);
}

const struct rs_dev_geom *dev_geom(const struct rs_dev *d)
{
	return &d->g;
}

const char *dev_engine_name(const struct rs_dev *d)
{
	return d->engine == ENG_URING ? "io_uring" : "libaio";
}

/* Finish a short transfer synchronously (rare: signals, end of file). */
static int finish_short(struct rs_dev *d, struct rs_io *io, size_t done)
{
	while (done < io->len) {
		ssize_t r;

		if (io->write)
			r = pwrite(d->fd, (char *)io->buf + done, io->len - done,
				   (off_t)(io->off + done));
		else
			r = pread(d->fd, (char *)io->buf + done, io->len - done,
				  (off_t)(io->off + done));
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

static int uring_batch(struct rs_dev *d, struct rs_ring *rg, struct rs_io *ios,
		       unsigned int n)
{
	unsigned int i, reaped = 0, submitted;
	int ret = 0, r;

	for (i = 0; i < n; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&rg->ring);

		if (ios[i].write)
			io_uring_prep_write(sqe, d->fd, ios[i].buf, (unsigned int)ios[i].len,
					    ios[i].off);
		else
			io_uring_prep_read(sqe, d->fd, ios[i].buf, (unsigned int)ios[i].len,
					   ios[i].off);
		io_uring_sqe_set_data64(sqe, i);
	}
	for (submitted = 0; submitted < n;) {
		/* one system call submits and waits for the first completion */
		r = io_uring_submit_and_wait(&rg->ring, 1);
		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r < 0) {
			/* Prepared entries may linger in the ring: stop using it. */
			rg->broken = r;
			if (!submitted)
				return r;
			ret = r;
			break;
		}
		submitted += (unsigned int)r;
	}
	while (reaped < submitted) {
		struct io_uring_cqe *cqe;
		struct rs_io *io;

		r = io_uring_wait_cqe(&rg->ring, &cqe);
		if (r == -EINTR)
			continue;
		if (r < 0) {
			rg->broken = r;
			return r;
		}
		io = &ios[io_uring_cqe_get_data64(cqe)];
		r = cqe->res;
		io_uring_cqe_seen(&rg->ring, cqe);
		reaped++;
		if (r < 0) {
			if (!ret)
				ret = r;
		} else if ((size_t)r < io->len && !ret) {
			ret = finish_short(d, io, (size_t)r);
		}
	}
	return ret;
}

static int aio_batch(struct rs_dev *d, struct rs_ring *rg, struct rs_io *ios, unsigned int n)
{
	struct iocb cbs[n], *cbp[n];
	struct io_event ev[n];
	unsigned int i, sub = 0, reaped = 0;
	int ret = 0, r;

	for (i = 0; i < n; i++) {
		if (ios[i].write)
			io_prep_pwrite(&cbs[i], d->fd, ios[i].buf, ios[i].len,
				       (long long)ios[i].off);
		else
			io_prep_pread(&cbs[i], d->fd, ios[i].buf, ios[i].len,
				      (long long)ios[i].off);
		cbs[i].data = &ios[i];
		cbp[i] = &cbs[i];
	}
	while (sub < n) {
		r = io_submit(rg->aio, (long)(n - sub), cbp + sub);
		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r < 0) {
			ret = r;
			break;
		}
		sub += (unsigned int)r;
	}
	while (reaped < sub) {
		r = io_getevents(rg->aio, 1, (long)(sub - reaped), ev, NULL);
		if (r == -EINTR)
			continue;
		if (r < 0) {
			rg->broken = r;
			return r;
		}
		for (i = 0; i < (unsigned int)r; i++) {
			struct rs_io *io = ev[i].data;
			long res = (long)ev[i].res;

			if (res < 0) {
				if (!ret)
					ret = (int)res;
			} else if ((size_t)res < io->len && !ret) {
				ret = finish_short(d, io, (size_t)res);
			}
		}
		reaped += (unsigned int)r;
	}
	return ret;
}

/*
 * Every I/O batch, flush and space verb completes here: first the test
 * hook (dev_set_hooks; debug.h's rs_debug_fail_io), then the kernel's block-layer status
 * becomes the store's errno.  A failed transfer is -EIO whatever status
 * the device gave (a medium error is -ENODATA, which in rawstore's API
 * means a missing attribute; -EBUSY and -ENODEV mean other things too);
 * -ENOSPC (thin pools), -EOPNOTSUPP and -EINVAL keep their meaning.
 */
static int dev_done(unsigned int kind, int ret, struct rs_io *ios, unsigned int n)
{
	const struct dev_hooks *h = dev_hooks();

	if (h && h->done)
		ret = h->done(kind, ret, ios, n);
	switch (ret) {
	case -ENODATA:		/* BLK_STS_MEDIUM */
	case -EILSEQ:		/* BLK_STS_PROTECTION */
	case -ETIMEDOUT:	/* BLK_STS_TIMEOUT */
	case -ENOLINK:		/* BLK_STS_TRANSPORT */
	case -EREMOTEIO:	/* BLK_STS_TARGET */
	case -EBADE:		/* BLK_STS_NEXUS */
	case -EBUSY:		/* BLK_STS_DEV_RESOURCE */
	case -ENODEV:		/* BLK_STS_OFFLINE */
	case -EREMCHG:		/* BLK_STS_DM_REQUEUE */
		return -EIO;
	}
	return ret;
}

/* Set up locked ring @r if it is not yet; false if that failed (unlocked). */
static bool ring_ready(struct rs_dev *d, struct rs_ring *r)
{
	if (__atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) || !ring_init(d, r))
		return true;
	pthread_mutex_unlock(&r->lock);
	return false;
}

/*
 * Take a ring of the pool, locked: this thread's own if free (set up on
 * first use), else any free one that is set up, else wait for its own.
 * Ring 0 is the fallback if a ring cannot be set up.
 */
static struct rs_ring *ring_get(struct rs_dev *d)
{
	static unsigned int next;
	static __thread unsigned int mine = UINT32_MAX;
	struct rs_ring *own;
	unsigned int i;

	if (mine == UINT32_MAX)
		mine = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);
	own = &d->rings[mine % DEV_RINGS];
	if (!pthread_mutex_trylock(&own->lock) && ring_ready(d, own))
		return own;
	for (i = 1; i < DEV_RINGS; i++) {
		struct rs_ring *r = &d->rings[(mine + i) % DEV_RINGS];

		if (__atomic_load_n(&r->ready, __ATOMIC_ACQUIRE) &&
		    !pthread_mutex_trylock(&r->lock))
			return r;
	}
	pthread_mutex_lock(&own->lock);
	if (ring_ready(d, own))
		return own;
	pthread_mutex_lock(&d->rings[0].lock);
	return &d->rings[0];
}

static void count_io(struct rs_dev *d, const struct rs_io *io)
{
	struct rawstore_perf *p = d->st ? &d->st->perf : NULL;

	if (io->journal)	/* counted by the journal (journal_bytes) */
		return;
	if (p && io->write) {
		__atomic_add_fetch(&p->dev_write_ops, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&p->dev_write_bytes, io->len, __ATOMIC_RELAXED);
		/* its first (or only) piece; dev_wq_write counts the rest */
		__atomic_add_fetch(&p->dev_write_pieces, 1, __ATOMIC_RELAXED);
	} else if (p) {
		__atomic_add_fetch(&p->dev_read_ops, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&p->dev_read_bytes, io->len, __ATOMIC_RELAXED);
	}
}

int dev_submit(struct rs_dev *d, struct rs_io *ios, unsigned int n)
{
	struct rs_ring *rg;
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n; i++) {
		if (ios[i].write && d->read_only)
			return -EROFS;
		if (!is_aligned(ios[i].off, d->g.logical_block) ||
		    !is_aligned(ios[i].len, d->g.logical_block) ||
		    ios[i].off + ios[i].len > d->g.size)
			return -EINVAL;
		count_io(d, &ios[i]);
	}
	rg = ring_get(d);
	if (rg->broken) {
		pthread_mutex_unlock(&rg->lock);
		return -EIO;
	}
	for (i = 0; i < n && !ret; i += d->qd) {
		unsigned int cnt = n - i < d->qd ? n - i : d->qd;

		if (d->engine == ENG_URING)
			ret = uring_batch(d, rg, ios + i, cnt);
		else
			ret = aio_batch(d, rg, ios + i, cnt);
	}
	pthread_mutex_unlock(&rg->lock);
	return dev_done(ios[0].journal ? RS_IO_JOURNAL : ios[0].write ? RS_IO_WRITE : RS_IO_READ,
			ret, ios, n);
}

/* ---- the commit thread's write queue ---- */

/* Test hook (rs_debug_garble_failed_writes): a failed write leaves
 * garbage where it went, as a device that failed mid-transfer. */
static void garble(struct rs_dev *d, const struct rs_io *io)
{
	void *b = rs_alloc_aligned(io->len);

	if (!b)
		return;
	memset(b, 0xe1, io->len);
	if (pwrite(d->fd, b, io->len, (off_t)io->off) < 0)
		rs_log(d->st, RAWSTORE_LOG_WARNING, "garbling a failed write: %s",
		       strerror(errno));
	free(b);
}

static void wq_done(struct rs_dev *d, unsigned int slot, long res)
{
	struct rs_wq *q = &d->wq;
	struct wq_slot *s = &q->slots[slot];
	int ret = 0;

	if (res < 0)
		ret = (int)res;
	else if ((size_t)res < s->io.len)
		ret = finish_short(d, &s->io, (size_t)res);
	/* test hook, then the block-layer status as the store's errno */
	ret = dev_done(RS_IO_WRITE, ret, &s->io, 1);
	if (ret && hook_garble())
		garble(d, &s->io);
	if (ret) {
		unsigned int i;

		if (!q->err) {
			q->err = ret;
			rs_err(d->st, ret, "data write of %zu bytes at device offset %llu failed",
			       s->io.len, (unsigned long long)s->io.off);
		}
		for (i = 0; i < q->n_failed && q->failed[i].tag != s->tag; i++)
			;
		if (i == q->n_failed && i < WQ_FAILED_MAX) {
			q->failed[i].tag = s->tag;
			q->failed[i].err = ret;
			q->n_failed++;
		} else if (i == WQ_FAILED_MAX) {
			q->failed_overflow = true;
		}
		if (q->n_bad < WQ_FAILED_MAX) {
			q->bad[q->n_bad].off = s->io.off;
			q->bad[q->n_bad++].len = s->io.len;
		} else {
			q->bad_overflow = true;
		}
	}
	if (s->owner && !--s->owner->refs) {
		rs_iobuf_free(s->owner->buf, s->owner->len);
		free(s->owner);
	}
	s->owner = NULL;
	s->busy = false;
	q->free[q->n_free++] = slot;
	q->inflight--;
}

/* Reap at least one completion, waiting at most @ts (NULL: no limit);
 * 0, -ETIME when none came in time, or a ring error. */
static int wq_reap_timeout(struct rs_dev *d, struct timespec *ts)
{
	struct rs_wq *q = &d->wq;
	int r;

	/* test hook: the ring fails as if its completions were lost */
	if (hook_fail_reap())
		return -EBADR;
	if (d->engine == ENG_URING) {
		struct __kernel_timespec kts;
		struct io_uring_cqe *cqe;
		unsigned int head, n = 0;

		if (ts)
			kts = (struct __kernel_timespec){ ts->tv_sec, ts->tv_nsec };
		do
			r = ts ? io_uring_wait_cqe_timeout(&q->r.ring, &cqe, &kts) :
				 io_uring_wait_cqe(&q->r.ring, &cqe);
		while (r == -EINTR);
		if (r < 0)
			return r;
		io_uring_for_each_cqe(&q->r.ring, head, cqe) {
			wq_done(d, (unsigned int)io_uring_cqe_get_data64(cqe), cqe->res);
			n++;
		}
		io_uring_cq_advance(&q->r.ring, n);
		return 0;
	}
	{
		struct io_event ev[16];
		int i;

		do
			r = io_getevents(q->r.aio, 1, 16, ev, ts);
		while (r == -EINTR);
		if (r < 0)
			return r;
		if (!r)
			return -ETIME;
		for (i = 0; i < r; i++)
			wq_done(d, (unsigned int)((struct wq_slot *)ev[i].data - q->slots),
				(long)ev[i].res);
	}
	return 0;
}

/* Reap at least one completion (blocking); 0 or a ring error. */
static int wq_reap(struct rs_dev *d)
{
	return wq_reap_timeout(d, NULL);
}

/* The queue cannot be reaped any more: writes may linger, stop using it. */
static void wq_broken(struct rs_dev *d, int err)
{
	struct rs_wq *q = &d->wq;

	q->r.broken = err;
	if (!q->err)
		q->err = rs_err(d->st, -EIO, "write queue failed: %s", strerror(-err));
}

static int wq_submit_one(struct rs_dev *d, unsigned int slot)
{
	struct rs_wq *q = &d->wq;
	struct wq_slot *s = &q->slots[slot];
	int r;

	if (d->engine == ENG_URING) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&q->r.ring);

		if (!sqe)
			return -EBUSY;
		io_uring_prep_write(sqe, d->fd, s->io.buf, (unsigned int)s->io.len, s->io.off);
		io_uring_sqe_set_data64(sqe, slot);
		do
			r = io_uring_submit(&q->r.ring);
		while (r == -EINTR || r == -EAGAIN);
		/* Not taken: counting it in flight would wait forever. */
		return r < 0 ? r : r == 0 ? -EIO : 0;
	}
	{
		struct iocb *cbp = &s->cb;

		io_prep_pwrite(&s->cb, d->fd, s->io.buf, s->io.len, (long long)s->io.off);
		s->cb.data = s;
		do
			r = io_submit(q->r.aio, 1, &cbp);
		while (r == -EINTR || r == -EAGAIN);
		return r < 0 ? r : r == 0 ? -EIO : 0;
	}
}

/*
 * The bytes of the next piece, at @buf, of a write of @len: writes larger
 * than the queue takes in one request go as several.  io_uring issues a
 * write inline only if the block layer need not split it (a split of a
 * nowait bio is refused); otherwise it hands the write to an io-wq
 * worker, a thread switch per write.  One request takes max_sectors_kb
 * (1280 KiB on a loop device) and max_segments runs of physically
 * contiguous memory (128): a buffer from the cache's huge pages is a few
 * runs, any other (a caller's, nocopy) may be one run per 4 KiB page.
 * Host loop device, 4 MiB creates at QD1: io-wq punts 100 -> 0 per 100
 * creates; nocopy from 4 KiB pages: pieces of 1280 KiB were all punted
 * (3.24 per create), pieces of 512 KiB go inline.
 */
static size_t wq_piece(const struct rs_dev *d, const void *buf, size_t len)
{
	uint64_t max = d->g.max_io;

	/* the cache's lookup only for writes it can make a difference to */
	if (max && d->g.max_segments && len > d->g.max_segments * 4096 && !rs_iobuf_huge(buf))
		max = min_u64(max, d->g.max_segments * 4096);
	max = round_down(max, d->g.logical_block);
	return max && len > max ? (size_t)max : len;
}

int dev_wq_write(struct rs_dev *d, const struct rs_io *ios, unsigned int n, void *owned,
		 size_t owned_len)
{
	struct rs_wq *q = &d->wq;
	struct rs_wbuf *w = NULL;
	size_t done = 0, piece;
	unsigned int i;
	int ret = 0;

	if (d->read_only) {
		rs_iobuf_free(owned, owned_len);
		return -EROFS;
	}
	for (i = 0; i < n; i++)
		if (!is_aligned(ios[i].off, d->g.logical_block) ||
		    !is_aligned(ios[i].len, d->g.logical_block) ||
		    ios[i].off + ios[i].len > d->g.size || !ios[i].write) {
			rs_iobuf_free(owned, owned_len);
			return -EINVAL;
		}
	if (owned) {
		w = malloc(sizeof(*w));
		if (!w) {
			rs_iobuf_free(owned, owned_len);
			return -ENOMEM;
		}
		w->buf = owned;
		w->len = owned_len;
		w->refs = 1;		/* ours until every write is queued */
	}
	for (i = 0; i < n && !ret; i++) {
		unsigned int slot;

		if (q->r.broken) {
			ret = -EIO;
			break;
		}
		while (!q->n_free && !ret) {
			ret = wq_reap(d);
			if (ret)
				wq_broken(d, ret);
		}
		if (ret)
			break;
		slot = q->free[--q->n_free];
		q->slots[slot] = (struct wq_slot){ .io = ios[i], .owner = w, .tag = q->tag,
						   .busy = true };
		if (!done)
			count_io(d, &ios[i]);
		else if (d->st && !ios[i].journal)
			PERF_ADD(d->st, dev_write_pieces, 1);
		piece = wq_piece(d, ios[i].buf, ios[i].len - done);
		q->slots[slot].io.buf = (uint8_t *)ios[i].buf + done;
		q->slots[slot].io.off = ios[i].off + done;
		q->slots[slot].io.len = piece;
		ret = wq_submit_one(d, slot);
		if (ret) {
			q->slots[slot].owner = NULL;
			q->slots[slot].busy = false;
			q->free[q->n_free++] = slot;
			wq_broken(d, ret);
			break;
		}
		q->inflight++;
		if (w)
			w->refs++;
		done += piece;
		if (done < ios[i].len)
			i--;		/* the next piece of the same write */
		else
			done = 0;
	}
	if (w && !--w->refs) {
		rs_iobuf_free(w->buf, w->len);
		free(w);
	}
	if (ret && !q->err)
		q->err = ret;
	return ret;
}

static bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

int dev_wq_wait_range(struct rs_dev *d, uint64_t off, uint64_t len)
{
	struct rs_wq *q = &d->wq;
	unsigned int i;
	int ret;

	while (q->inflight && !q->r.broken) {
		for (i = 0; i < d->qd; i++) {
			const struct wq_slot *s = &q->slots[i];

			if (s->busy && overlaps(s->io.off, s->io.len, off, len))
				break;
		}
		if (i == d->qd)
			break;
		ret = wq_reap(d);
		if (ret)
			wq_broken(d, ret);
	}
	/* What a failed (or lost) write left there is unknown. */
	if (q->r.broken && q->inflight)
		return rs_err(d->st, -EIO, "reading [%llu, +%llu): the write queue failed with "
			      "writes in flight", (unsigned long long)off, (unsigned long long)len);
	for (i = 0; i < q->n_bad; i++)
		if (overlaps(q->bad[i].off, q->bad[i].len, off, len))
			break;
	if (i < q->n_bad || q->bad_overflow)
		return rs_err(d->st, -EIO, "reading [%llu, +%llu): a write of the group there "
			      "failed", (unsigned long long)off, (unsigned long long)len);
	return 0;
}

int dev_wq_wait(struct rs_dev *d)
{
	struct rs_wq *q = &d->wq;
	int ret;

	while (q->inflight && !q->r.broken) {
		ret = wq_reap(d);
		if (ret)
			wq_broken(d, ret);
	}
	return q->err;
}

bool dev_wq_wait_for(struct rs_dev *d, unsigned int usec)
{
	struct rs_wq *q = &d->wq;
	struct timespec ts = { 0, (long)usec * 1000 };
	int ret;

	if (q->inflight && !q->r.broken) {
		ret = wq_reap_timeout(d, &ts);
		if (ret && ret != -ETIME)
			wq_broken(d, ret);
	}
	return !q->inflight || q->r.broken;
}

void dev_wq_tag(struct rs_dev *d, unsigned int tag)
{
	d->wq.tag = tag;
}

bool dev_wq_errors_tagged(const struct rs_dev *d)
{
	return !d->wq.failed_overflow && !d->wq.r.broken;
}

int dev_wq_tag_err(const struct rs_dev *d, unsigned int tag)
{
	const struct rs_wq *q = &d->wq;
	unsigned int i;

	if (q->failed_overflow || q->r.broken)
		return q->err;
	for (i = 0; i < q->n_failed; i++)
		if (q->failed[i].tag == tag)
			return q->failed[i].err;
	return 0;
}

void dev_wq_reset(struct rs_dev *d)
{
	struct rs_wq *q = &d->wq;

	dev_wq_wait(d);
	q->err = 0;
	q->n_failed = 0;
	q->failed_overflow = false;
	q->n_bad = 0;
	q->bad_overflow = false;
	q->tag = 0;
}

unsigned int dev_wq_inflight(const struct rs_dev *d)
{
	return d->wq.inflight;
}

/* ---- the commit role's queue of in-place writes ---- */

/* Reap at least one completion of the batch (blocking); 0 or a ring error
 * (the ring is broken then). */
static int aq_reap(struct rs_dev *d)
{
	struct rs_aq *q = &d->aq;
	unsigned int i, got = 0;
	int r;

	if (d->engine == ENG_URING) {
		struct io_uring_cqe *cqe;
		unsigned int head;

		do
			r = io_uring_wait_cqe(&q->r.ring, &cqe);
		while (r == -EINTR);
		if (r < 0)
			return q->r.broken = r;
		io_uring_for_each_cqe(&q->r.ring, head, cqe) {
			struct rs_io *io = &q->ios[io_uring_cqe_get_data64(cqe)];

			r = cqe->res;
			if (r < 0 && !q->err)
				q->err = r;
			else if (r >= 0 && (size_t)r < io->len && !q->err)
				q->err = finish_short(d, io, (size_t)r);
			got++;
		}
		io_uring_cq_advance(&q->r.ring, got);
	} else {
		struct io_event ev[16];

		do
			r = io_getevents(q->r.aio, 1, 16, ev, NULL);
		while (r == -EINTR);
		if (r < 0)
			return q->r.broken = r;
		for (i = 0; i < (unsigned int)r; i++) {
			struct rs_io *io = ev[i].data;
			long res = (long)ev[i].res;

			if (res < 0 && !q->err)
				q->err = (int)res;
			else if (res >= 0 && (size_t)res < io->len && !q->err)
				q->err = finish_short(d, io, (size_t)res);
		}
		got = (unsigned int)r;
	}
	q->inflight -= got;
	return 0;
}

/* One system call submitting prepared writes of the batch from
 * q->submitted on (at most @left): how many it took, or -errno. */
static int aq_enter(struct rs_dev *d, unsigned int left)
{
	struct rs_aq *q = &d->aq;
	struct iocb *cbp[16];
	unsigned int k, m = (unsigned int)min_u64(left, 16);

	if (d->engine == ENG_URING)
		return io_uring_submit(&q->r.ring);
	for (k = 0; k < m; k++)
		cbp[k] = &q->cbs[q->submitted + k];
	return io_submit(q->r.aio, (long)m, cbp);
}

/* Submit what of the batch the ring has room for; 0 or an error (the ring
 * is broken then: entries may linger in it). */
static int aq_push(struct rs_dev *d)
{
	struct rs_aq *q = &d->aq;
	unsigned int cnt = (unsigned int)min_u64(q->n - q->submitted, d->qd - q->inflight), i;
	int r;

	for (i = 0; i < cnt; i++) {
		struct rs_io *io = &q->ios[q->submitted + i];

		if (d->engine == ENG_URING) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&q->r.ring);

			io_uring_prep_write(sqe, d->fd, io->buf, (unsigned int)io->len, io->off);
			io_uring_sqe_set_data64(sqe, q->submitted + i);
		} else {
			io_prep_pwrite(&q->cbs[q->submitted + i], d->fd, io->buf, io->len,
				       (long long)io->off);
			q->cbs[q->submitted + i].data = io;
		}
	}
	for (i = 0; i < cnt;) {
		r = aq_enter(d, cnt - i);
		if (r == -EINTR || r == -EAGAIN)
			continue;
		if (r <= 0)
			return q->r.broken = r < 0 ? r : -EIO;
		i += (unsigned int)r;
		q->submitted += (unsigned int)r;
		q->inflight += (unsigned int)r;
	}
	return 0;
}

int dev_aq_submit(struct rs_dev *d, struct rs_io *ios, unsigned int n)
{
	struct rs_aq *q = &d->aq;
	unsigned int i;
	int ret = 0;

	if (q->n)
		return -EBUSY;
	if (q->r.broken)
		return -EIO;
	if (d->read_only)
		return -EROFS;
	for (i = 0; i < n; i++)
		if (!ios[i].write || !is_aligned(ios[i].off, d->g.logical_block) ||
		    !is_aligned(ios[i].len, d->g.logical_block) ||
		    ios[i].off + ios[i].len > d->g.size)
			return -EINVAL;
	if (!n)
		return 0;
	if (d->engine == ENG_AIO) {
		struct iocb *cbs = realloc(q->cbs, n * sizeof(*cbs));

		if (!cbs)
			return -ENOMEM;
		q->cbs = cbs;
	}
	for (i = 0; i < n; i++)
		count_io(d, &ios[i]);
	q->ios = ios;
	q->n = n;
	q->submitted = 0;
	q->err = 0;
	/* a batch larger than the ring: reap to make room (rare) */
	while (!ret && q->submitted < n) {
		ret = aq_push(d);
		if (!ret && q->submitted < n)
			ret = aq_reap(d);
	}
	if (ret && !q->err)
		q->err = ret;
	return 0;
}

int dev_aq_wait(struct rs_dev *d)
{
	struct rs_aq *q = &d->aq;
	int ret;

	if (!q->n)
		return 0;
	while (q->inflight && !q->r.broken)
		aq_reap(d);
	/* the rest of a batch that a broken ring did not take was never
	 * written: an error as well */
	if (q->r.broken && !q->err)
		q->err = rs_err(d->st, -EIO, "the in-place write queue failed: %s",
				strerror(-q->r.broken));
	ret = dev_done(RS_IO_WRITE, q->err, q->ios, q->n);
	q->n = 0;
	q->ios = NULL;
	return ret;
}

int dev_read(struct rs_dev *d, void *buf, uint64_t off, size_t len)
{
	struct rs_io io = { .write = false, .buf = buf, .off = off, .len = len };

	return dev_submit(d, &io, 1);
}

int dev_write(struct rs_dev *d, const void *buf, uint64_t off, size_t len)
{
	struct rs_io io = { .write = true, .buf = (void *)buf, .off = off, .len = len };

	return dev_submit(d, &io, 1);
}

int dev_write_journal(struct rs_dev *d, const void *buf, uint64_t off, size_t len)
{
	struct rs_io io = { .write = true, .journal = true, .buf = (void *)buf, .off = off,
			    .len = len };

	return dev_submit(d, &io, 1);
}

int dev_flush(struct rs_dev *d)
{
	int ret;

	if (d->read_only)
		return -EROFS;
	if (!d->g.write_cache)
		return 1;
	pthread_mutex_lock(&d->flush_lock);
	ret = d->flush_err;
	if (!ret)
		ret = dev_done(RS_IO_FLUSH, fdatasync(d->fd) ? -errno : 0, NULL, 0);
	if (ret < 0)
		d->flush_err = ret;
	pthread_mutex_unlock(&d->flush_lock);
	return ret;
}

static int space_verb(struct rs_dev *d, int mode, uint64_t off, uint64_t len)
{
	unsigned int kind = mode & FALLOC_FL_PUNCH_HOLE ? RS_IO_PUNCH :
			    mode & (FALLOC_FL_ZERO_RANGE | FALLOC_FL_WRITE_ZEROES) ? RS_IO_ZERO :
			    RS_IO_PROVISION;

	if (d->read_only)
		return -EROFS;
	if (!len || !is_aligned(off, d->g.logical_block) ||
	    !is_aligned(len, d->g.logical_block) || off + len < off || off + len > d->g.size)
		return -EINVAL;
	/* test hook (debug.h): a device that cannot */
	if (hook_refuse_space(kind))
		return -EOPNOTSUPP;
	return dev_done(kind, fallocate(d->fd, mode, (off_t)off, (off_t)len) ? -errno : 0,
			NULL, 0);
}

int dev_zero_range(struct rs_dev *d, uint64_t off, uint64_t len)
{
	return space_verb(d, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, off, len);
}

int dev_punch_hole(struct rs_dev *d, uint64_t off, uint64_t len)
{
	return space_verb(d, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, len);
}

int dev_provision(struct rs_dev *d, uint64_t off, uint64_t len)
{
	return space_verb(d, FALLOC_FL_KEEP_SIZE, off, len);
}

int dev_prealloc_stale(struct rs_dev *d, uint64_t off, uint64_t len)
{
	return space_verb(d, FALLOC_FL_NO_HIDE_STALE, off, len);
}

int dev_write_zeroes(struct rs_dev *d, uint64_t off, uint64_t len)
{
	int ret = space_verb(d, FALLOC_FL_WRITE_ZEROES, off, len);

	/* Block devices take every mode with KEEP_SIZE only. */
	if (d->g.is_bdev && (ret == -EOPNOTSUPP || ret == -EINVAL))
		ret = space_verb(d, FALLOC_FL_WRITE_ZEROES | FALLOC_FL_KEEP_SIZE, off, len);
	return ret;
}

int dev_discard(struct rs_dev *d, uint64_t off, uint64_t len)
{
	if (!d->g.is_bdev)
		return -EOPNOTSUPP;
	return space_verb(d, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE | FALLOC_FL_NO_HIDE_STALE,
			  off, len);
}
