// SPDX-License-Identifier: MIT
/*
 * t_lwreplay: read and replay a dm-log-writes log (the format of
 * Documentation/admin-guide/device-mapper/log-writes.rst and
 * drivers/md/dm-log-writes.c in Linux 6.1), for v_powercut.sh.
 *
 *   t_lwreplay list LOG                 one line per entry:
 *                                       "INDEX FLAGS SECTOR NR_SECTORS [MARK]"
 *                                       (FLAGS: F flush, U fua, D discard,
 *                                       M mark, m metadata, - none)
 *   t_lwreplay replay LOG DEV FROM TO   write entries [FROM, TO) to DEV
 *                                       (discards become zeroes), then fsync
 *   t_lwreplay window LOG CUT [FROM UNIT] [ring=FROM:LEN] [inflight]
 *                                       "W V T R X": the volatile window of a
 *                                       cut before entry CUT starts at entry
 *                                       W; V of its writes are not durable, T
 *                                       of those can tear (span two atoms), R
 *                                       of those are in the ring, X of those
 *                                       were in flight (after CUT)
 *   t_lwreplay variant LOG DEV CUT MODE SEED [FROM UNIT] [ring=FROM:LEN]
 *                      [inflight]       DEV holds entries [0, W): apply the
 *                                       window [W, CUT) as MODE says, then
 *                                       fsync; prints what it did
 *     (FROM UNIT, in 512-byte sectors: writes at or past FROM tear only at
 *     multiples of UNIT; by default every sector of the log is an atom.
 *     ring=FROM:LEN, in 512-byte sectors: the device journal's ring, for
 *     the nodata modes. inflight: see "In flight" below.)
 *   t_lwreplay zero DEV                 zero all of DEV (BLKZEROOUT)
 *   t_lwreplay copy SRC DST             make DST a copy of SRC (zero DST,
 *                                       then copy the non-zero 64 KiB chunks)
 *
 * Log layout: the super in the first sector (sectorsize = the logical block
 * size of the logged device), then for each entry one sector holding
 * struct log_write_entry (and a mark's name after it), followed by
 * nr_sectors sectors of data unless the entry is a discard or a mark.
 *
 * What a power cut may keep. dm-log-writes holds every completed write that
 * is neither FUA nor a flush until the next flush is issued and logs them
 * (in completion order) right before that flush's entry; FUA writes and
 * marks are logged when they complete or are sent. So at a cut before
 * entry CUT, with f the last flush entry before it, everything before f
 * reached stable media, and so did f's own data if it is FUA (a flush whose
 * data is not FUA keeps that data volatile: W = f, else W = f + 1). In the
 * window [W, CUT), FUA writes are durable and every other write or discard
 * is volatile: it completed, but sat in the device's cache, so the cut may
 * have kept any subset of them, in any order, and any sectors of each.
 * MODE:
 *   prefix   the window in log order (what a plain replay to CUT gives)
 *   reorder  a random subset of the volatile writes (each kept with
 *            probability 1/2) applied in a random order
 *   torn     like reorder, but each volatile write is dropped, kept whole or
 *            torn with probability 1/3 (at least one write that spans two
 *            atoms is torn when there is one): torn keeps a random prefix of
 *            its atoms or a random set of them (never none, never all)
 *   nodata   every volatile write into the ring (ring=) lands whole, every
 *            other volatile write is lost: a journal record kept, its data
 *            dropped
 *   halfdata as nodata, but each volatile write outside the ring is lost
 *            with probability 1/2 (at least one is)
 * In flight. A write is logged when its flush completes (or, FUA, when it
 * completes), never when it is issued, so a write still in flight at the
 * cut, or completed before it but not yet flushed, sits after CUT, in the
 * group of the next flush. The log cannot tell which writes of that group
 * were issued before the cut. With "inflight" the writes from CUT up to
 * the next flush entry join the volatile window (any of them may have
 * landed), but only when no mark lies between: the marks are the points
 * the logs of two devices agree on (v_powercut.sh), and a write of that
 * group issued after the next mark may depend on the other device's state
 * after it. Past a mark the window is not extended (X = 0): such writes
 * then never land, as without the option. prefix ignores the option.
 * In the modes other than prefix, the durable FUA writes of the window are applied
 * first in log order, and each volatile write skips the sectors that a FUA
 * write logged after it covers (it completed before that FUA write was
 * issued, so it cannot land over it). The random choices depend only on
 * SEED, so "t_lwreplay variant" with the printed seed redoes a variant.
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define LOG_FLUSH_FLAG (1 << 0)
#define LOG_FUA_FLAG (1 << 1)
#define LOG_DISCARD_FLAG (1 << 2)
#define LOG_MARK_FLAG (1 << 3)
#define LOG_METADATA_FLAG (1 << 4)
#define WRITE_LOG_VERSION 1ULL
#define WRITE_LOG_MAGIC 0x6a736677736872ULL

struct log_write_super {
	uint64_t magic;
	uint64_t version;
	uint64_t nr_entries;
	uint32_t sectorsize;
} __attribute__((packed));

struct log_write_entry {
	uint64_t sector;		/* in sectorsize units */
	uint64_t nr_sectors;		/* in sectorsize units */
	uint64_t flags;
	uint64_t data_len;		/* mark: name length */
} __attribute__((packed));

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "t_lwreplay: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, ": %s\n", strerror(errno));
	exit(1);
}

/*
 * v_powercut.sh reaches one region through several device-mapper devices
 * (the whole region, its data and its metadata half), each with a page
 * cache of its own: drop this one's when opening, so that nothing read or
 * written through another device since is seen stale here.
 */
static int open_or_die(const char *path, int flags)
{
	int fd = open(path, flags);

	if (fd < 0)
		die("cannot open %s", path);
	ioctl(fd, BLKFLSBUF, 0);	/* not a block device: nothing to drop */
	return fd;
}

static void pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (r <= 0) {
			errno = r < 0 ? errno : EIO;
			die("%s", "short read");
		}
		done += (size_t)r;
	}
}

static void pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pwrite(fd, (const char *)buf + done, len - done,
				   (off_t)(off + done));

		if (r <= 0) {
			errno = r < 0 ? errno : EIO;
			die("%s", "short write");
		}
		done += (size_t)r;
	}
}

static uint64_t dev_size(int fd)
{
	uint64_t sz = 0;

	if (ioctl(fd, BLKGETSIZE64, &sz)) {
		off_t e = lseek(fd, 0, SEEK_END);

		if (e < 0)
			die("%s", "size");
		sz = (uint64_t)e;
	}
	return sz;
}

static void zero_range(int fd, uint64_t off, uint64_t len)
{
	uint64_t r[2] = { off, len };
	static char zeros[1 << 16];

	if (!ioctl(fd, BLKZEROOUT, r))
		return;
	while (len) {
		size_t n = len < sizeof(zeros) ? (size_t)len : sizeof(zeros);

		pwrite_all(fd, zeros, n, off);
		off += n;
		len -= n;
	}
}

/* Walk the log; for each entry in [from, to) call fn. */
static void walk(int log, uint64_t from, uint64_t to, int dev)
{
	struct log_write_super s;
	uint64_t pos, i;
	uint32_t ss;
	char *hdr, *buf = NULL;
	size_t bufcap = 0;

	pread_all(log, &s, sizeof(s), 0);
	if (s.magic != WRITE_LOG_MAGIC || s.version != WRITE_LOG_VERSION || !s.sectorsize ||
	    s.sectorsize % 512) {
		errno = EINVAL;
		die("%s", "not a dm-log-writes log");
	}
	ss = s.sectorsize;
	hdr = malloc(ss);
	if (to > s.nr_entries)
		to = s.nr_entries;
	pos = ss;
	for (i = 0; i < to; i++) {
		struct log_write_entry e;
		uint64_t datalen;

		pread_all(log, hdr, ss, pos);
		memcpy(&e, hdr, sizeof(e));
		pos += ss;
		datalen = (e.flags & (LOG_DISCARD_FLAG | LOG_MARK_FLAG)) ? 0 : e.nr_sectors * ss;
		if (i >= from) {
			if (dev < 0) {
				printf("%llu %s%s%s%s%s%s %llu %llu", (unsigned long long)i,
				       e.flags & LOG_FLUSH_FLAG ? "F" : "",
				       e.flags & LOG_FUA_FLAG ? "U" : "",
				       e.flags & LOG_DISCARD_FLAG ? "D" : "",
				       e.flags & LOG_MARK_FLAG ? "M" : "",
				       e.flags & LOG_METADATA_FLAG ? "m" : "",
				       e.flags & 31 ? "" : "-", (unsigned long long)e.sector,
				       (unsigned long long)e.nr_sectors);
				if ((e.flags & LOG_MARK_FLAG) && e.data_len < ss - sizeof(e))
					printf(" %.*s", (int)e.data_len, hdr + sizeof(e));
				printf("\n");
			} else if (e.flags & LOG_DISCARD_FLAG) {
				zero_range(dev, e.sector * ss, e.nr_sectors * ss);
			} else if (datalen) {
				if (datalen > bufcap) {
					free(buf);
					bufcap = datalen;
					buf = malloc(bufcap);
					if (!buf)
						die("%s", "malloc");
				}
				pread_all(log, buf, datalen, pos);
				pwrite_all(dev, buf, datalen, e.sector * ss);
			}
		}
		pos += datalen;
	}
	if (dev >= 0 && fsync(dev))
		die("%s", "fsync");
	free(buf);
	free(hdr);
}

static void copy(int src, int dst)
{
	static char buf[1 << 16], zeros[1 << 16];
	uint64_t sz = dev_size(src), off;

	if (dev_size(dst) < sz) {
		errno = ENOSPC;
		die("%s", "destination smaller than source");
	}
	zero_range(dst, 0, sz);
	for (off = 0; off < sz; off += sizeof(buf)) {
		size_t n = sz - off < sizeof(buf) ? (size_t)(sz - off) : sizeof(buf);

		pread_all(src, buf, n, off);
		if (memcmp(buf, zeros, n))
			pwrite_all(dst, buf, n, off);
	}
	if (fsync(dst))
		die("%s", "fsync");
}

/* One log entry, indexed. */
struct lw_ent {
	uint64_t sector, nr, flags;
	uint64_t pos;			/* offset of its data in the log */
	bool vol;			/* a write or discard that may be lost */
	uint8_t *keep;			/* per sector: 1 = lands (variants) */
};

struct lw_log {
	int fd;
	uint32_t ss;
	uint64_t n;
	struct lw_ent *e;
};

static bool has_data(const struct lw_ent *e)
{
	return e->nr && !(e->flags & LOG_MARK_FLAG);
}

/* Index the entries [0, to) of the log (to: clamped to the log's length). */
static void index_log(struct lw_log *l, int fd, uint64_t to)
{
	struct log_write_super s;
	uint64_t pos, i;
	char *hdr;

	l->fd = fd;
	pread_all(fd, &s, sizeof(s), 0);
	if (s.magic != WRITE_LOG_MAGIC || s.version != WRITE_LOG_VERSION || !s.sectorsize ||
	    s.sectorsize % 512) {
		errno = EINVAL;
		die("%s", "not a dm-log-writes log");
	}
	l->ss = s.sectorsize;
	l->n = to < s.nr_entries ? to : s.nr_entries;
	l->e = calloc(l->n ? l->n : 1, sizeof(*l->e));
	hdr = malloc(l->ss);
	if (!l->e || !hdr)
		die("%s", "malloc");
	pos = l->ss;
	for (i = 0; i < l->n; i++) {
		struct log_write_entry we;
		struct lw_ent *e = &l->e[i];

		pread_all(fd, hdr, l->ss, pos);
		memcpy(&we, hdr, sizeof(we));
		pos += l->ss;
		e->sector = we.sector;
		e->nr = we.nr_sectors;
		e->flags = we.flags;
		e->pos = pos;
		if (!(we.flags & (LOG_DISCARD_FLAG | LOG_MARK_FLAG)))
			pos += we.nr_sectors * l->ss;
	}
	free(hdr);
}

/*
 * In-flight writes (the "inflight" option): the entries from @cut up to
 * the next flush entry are volatile too, when no mark lies between (see
 * the header); returns that flush entry's index (the end of the window),
 * or @cut when there is none or a mark is in the way. The log must be
 * indexed past @cut.
 */
static uint64_t inflight(struct lw_log *l, uint64_t cut)
{
	uint64_t i;

	for (i = cut; i < l->n; i++) {
		if (l->e[i].flags & LOG_MARK_FLAG)
			return cut;
		if (l->e[i].flags & LOG_FLUSH_FLAG)
			break;
	}
	if (i == l->n)
		return cut;
	for (uint64_t k = cut; k < i; k++)
		l->e[k].vol = has_data(&l->e[k]);
	return i;
}

/* Volatile writes inside the ring [ring_from, ring_to) (log sectors). */
static uint64_t ring_from = UINT64_MAX, ring_to = UINT64_MAX;

static bool in_ring(const struct lw_ent *e)
{
	return e->sector >= ring_from && e->sector < ring_to;
}

/* The start of the volatile window before entry @cut; marks volatile entries. */
static uint64_t window(struct lw_log *l, uint64_t cut)
{
	uint64_t w = 0, i;

	for (i = cut; i-- > 0;) {
		if (l->e[i].flags & LOG_FLUSH_FLAG) {
			w = i + 1;
			if (has_data(&l->e[i]) && !(l->e[i].flags & LOG_FUA_FLAG))
				w = i;
			break;
		}
	}
	for (i = w; i < cut; i++)
		l->e[i].vol = has_data(&l->e[i]) && !(l->e[i].flags & LOG_FUA_FLAG);
	return w;
}

static uint64_t vrng;

static uint64_t vrnd(uint64_t n)
{
	vrng ^= vrng << 13;
	vrng ^= vrng >> 7;
	vrng ^= vrng << 17;
	return n ? vrng % n : 0;
}

/* Write the kept sectors of entry @e to @dev. */
static void apply(struct lw_log *l, struct lw_ent *e, int dev, char **buf, size_t *cap)
{
	size_t len = e->nr * l->ss;
	uint64_t a = 0, b;

	if (!(e->flags & LOG_DISCARD_FLAG)) {
		if (len > *cap) {
			free(*buf);
			*cap = len;
			*buf = malloc(len);
			if (!*buf)
				die("%s", "malloc");
		}
		pread_all(l->fd, *buf, len, e->pos);
	}
	while (a < e->nr) {
		if (e->keep && !e->keep[a]) {
			a++;
			continue;
		}
		for (b = a; b < e->nr && (!e->keep || e->keep[b]); b++)
			;
		if (e->flags & LOG_DISCARD_FLAG)
			zero_range(dev, (e->sector + a) * l->ss, (b - a) * l->ss);
		else
			pwrite_all(dev, *buf + a * l->ss, (b - a) * l->ss, (e->sector + a) * l->ss);
		a = b;
	}
}

/*
 * Writes at or past sector atom_from tear only at multiples of atom_unit
 * sectors (the optional FROM UNIT arguments), the others at every sector.
 */
static uint64_t atom_from = UINT64_MAX, atom_unit = 1;

static uint64_t atom_of(const struct lw_ent *e, uint64_t k)
{
	uint64_t u = e->sector >= atom_from ? atom_unit : 1;

	return (e->sector + k) / u - e->sector / u;
}

static uint64_t atoms(const struct lw_ent *e)
{
	return e->nr ? atom_of(e, e->nr - 1) + 1 : 0;
}

/* Tear @e: keep a random prefix or a random set of its atoms, not all, not none. */
static void tear(struct lw_ent *e)
{
	uint64_t k, n = atoms(e), kept = 0, *bits = calloc(n, sizeof(*bits));

	if (!bits)
		die("%s", "malloc");
	if (vrnd(2)) {
		uint64_t p = 1 + vrnd(n - 1);

		for (k = 0; k < n; k++)
			bits[k] = k < p;
	} else {
		for (k = 0; k < n; k++)
			kept += bits[k] = vrnd(2);
		if (kept == 0)
			bits[vrnd(n)] = 1;
		else if (kept == n)
			bits[vrnd(n)] = 0;
	}
	for (k = 0; k < e->nr; k++)
		e->keep[k] = (uint8_t)bits[atom_of(e, k)];
	free(bits);
}

static void variant(struct lw_log *l, int dev, uint64_t cut, const char *mode, uint64_t seed,
		    bool with_inflight)
{
	uint64_t w = window(l, cut), nv = 0, i, j, k, dropped = 0, torn = 0, tsec = 0, tall = 0;
	uint64_t *order, end = cut;
	bool torn_mode = !strcmp(mode, "torn");
	bool nodata = !strcmp(mode, "nodata"), halfdata = !strcmp(mode, "halfdata");
	char *buf = NULL;
	size_t cap = 0;

	if (strcmp(mode, "prefix") && strcmp(mode, "reorder") && !torn_mode && !nodata &&
	    !halfdata) {
		errno = EINVAL;
		die("unknown mode %s (prefix, reorder, torn, nodata, halfdata)", mode);
	}
	if ((nodata || halfdata) && ring_from == UINT64_MAX) {
		errno = EINVAL;
		die("mode %s needs ring=FROM:LEN", mode);
	}
	vrng = seed * 0x9e3779b97f4a7c15ULL + 1;
	if (!vrng)
		vrng = 1;
	if (!strcmp(mode, "prefix")) {
		for (i = w; i < cut; i++)
			if (has_data(&l->e[i]))
				apply(l, &l->e[i], dev, &buf, &cap);
		printf("variant prefix: window [%llu, %llu) applied in log order\n",
		       (unsigned long long)w, (unsigned long long)cut);
		goto out;
	}
	if (with_inflight)
		end = inflight(l, cut);
	order = calloc(end - w + 1, sizeof(*order));
	if (!order)
		die("%s", "malloc");
	for (i = w; i < end; i++) {
		struct lw_ent *e = &l->e[i];

		if (!e->vol)
			continue;
		e->keep = malloc(e->nr);
		if (!e->keep)
			die("%s", "malloc");
		memset(e->keep, 1, e->nr);
		order[nv++] = i;
	}
	/*
	 * nodata, halfdata: every volatile write into the journal's ring lands
	 * whole (the record); of the others (its data, anything else) none
	 * lands, or each with probability 1/2 and at least one not.
	 */
	if (nodata || halfdata) {
		uint64_t other = 0, pick;

		for (k = 0; k < nv; k++) {
			struct lw_ent *e = &l->e[order[k]];

			if (in_ring(e) || (halfdata && vrnd(2)))
				continue;
			memset(e->keep, 0, e->nr);
			dropped++;
		}
		for (k = 0; k < nv; k++)
			other += !in_ring(&l->e[order[k]]);
		if (halfdata && other && !dropped) {
			pick = vrnd(other);
			for (k = 0; k < nv; k++) {
				struct lw_ent *e = &l->e[order[k]];

				if (!in_ring(e) && pick-- == 0) {
					memset(e->keep, 0, e->nr);
					dropped++;
					break;
				}
			}
		}
	}
	/* Which volatile writes land, and how much of each. */
	for (k = 0; k < nv && !nodata && !halfdata; k++) {
		struct lw_ent *e = &l->e[order[k]];
		uint64_t r = torn_mode ? vrnd(3) : vrnd(2);

		if (r == 0) {
			memset(e->keep, 0, e->nr);
			dropped++;
		} else if (r == 2 && atoms(e) > 1) {
			tear(e);
			torn++;
		}
	}
	if (torn_mode && !torn) {	/* tear one multi-sector write if there is one */
		uint64_t multi = 0, pick;

		for (k = 0; k < nv; k++)
			multi += atoms(&l->e[order[k]]) > 1;
		if (multi) {
			pick = vrnd(multi);
			for (k = 0; k < nv; k++) {
				struct lw_ent *e = &l->e[order[k]];

				if (atoms(e) > 1 && pick-- == 0) {
					if (!memchr(e->keep, 1, e->nr))
						dropped--;
					tear(e);
					torn++;
					break;
				}
			}
		}
	}
	for (k = 0; k < nv; k++) {
		struct lw_ent *e = &l->e[order[k]];
		uint64_t kept = 0;

		for (j = 0; j < e->nr; j++)
			kept += e->keep[j];
		if (kept && kept < e->nr) {
			tsec += kept;
			tall += e->nr;
		}
	}
	/* A FUA write logged after a volatile one lands over it. */
	for (i = w; i < end; i++) {
		struct lw_ent *u = &l->e[i];

		if (u->vol || !has_data(u))
			continue;
		for (k = 0; k < nv && order[k] < i; k++) {
			struct lw_ent *e = &l->e[order[k]];

			for (j = 0; j < e->nr; j++)
				if (e->sector + j >= u->sector && e->sector + j < u->sector + u->nr)
					e->keep[j] = 0;
		}
		apply(l, u, dev, &buf, &cap);
	}
	/* Shuffle the volatile writes (Fisher-Yates), then apply them. */
	for (k = nv; k > 1; k--) {
		uint64_t r = vrnd(k), t = order[k - 1];

		order[k - 1] = order[r];
		order[r] = t;
	}
	for (k = 0; k < nv; k++)
		apply(l, &l->e[order[k]], dev, &buf, &cap);
	if (end > cut)
		printf("in flight at the cut: [%llu, %llu), before flush %llu\n",
		       (unsigned long long)cut, (unsigned long long)end, (unsigned long long)end);
	printf("variant %s seed %llu: window [%llu, %llu): %llu volatile writes, %llu dropped, "
	       "%llu torn (%llu of %llu sectors kept), the rest whole, in order:",
	       mode, (unsigned long long)seed, (unsigned long long)w, (unsigned long long)end,
	       (unsigned long long)nv, (unsigned long long)dropped, (unsigned long long)torn,
	       (unsigned long long)tsec, (unsigned long long)tall);
	for (k = 0; k < nv && k < 32; k++)
		printf(" %llu", (unsigned long long)order[k]);
	printf("%s\n", nv > 32 ? " ..." : "");
	for (k = 0; k < nv; k++) {
		struct lw_ent *e = &l->e[order[k]];

		if (!memchr(e->keep, 1, e->nr) || !memchr(e->keep, 0, e->nr))
			continue;
		printf("  torn: entry %llu, sectors %llu+%llu, kept", (unsigned long long)order[k],
		       (unsigned long long)e->sector, (unsigned long long)e->nr);
		for (j = 0; j < e->nr && j < 64; j++)
			putchar(e->keep[j] ? '1' : '0');
		printf("%s\n", e->nr > 64 ? "..." : "");
	}
	free(order);
out:
	if (fsync(dev))
		die("%s", "fsync");
	free(buf);
}

/* FROM and UNIT count 512-byte sectors; the log counts its own sectors. */
static void atom_args(const struct lw_log *l, const char *from, const char *unit)
{
	atom_from = strtoull(from, NULL, 0) * 512 / l->ss;
	atom_unit = strtoull(unit, NULL, 0) * 512 / l->ss;
	if (!atom_unit) {
		errno = EINVAL;
		die("bad tear unit %s", unit);
	}
}

/*
 * The optional arguments after the fixed ones: FROM UNIT (two numbers),
 * then "ring=FROM:LEN" (512-byte sectors) and "inflight". Returns whether
 * "inflight" was given.
 */
static bool opt_args(const struct lw_log *l, int argc, char **argv)
{
	bool with_inflight = false;
	int i = 0;

	if (argc >= 2 && argv[0][0] >= '0' && argv[0][0] <= '9') {
		atom_args(l, argv[0], argv[1]);
		i = 2;
	}
	for (; i < argc; i++) {
		unsigned long long a, b;

		if (sscanf(argv[i], "ring=%llu:%llu", &a, &b) == 2) {
			ring_from = a * 512 / l->ss;
			ring_to = (a + b) * 512 / l->ss;
		} else if (!strcmp(argv[i], "inflight")) {
			with_inflight = true;
		} else {
			errno = EINVAL;
			die("unknown option %s", argv[i]);
		}
	}
	return with_inflight;
}

static bool has_opt(int argc, char **argv, const char *opt)
{
	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], opt))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "list")) {
		walk(open_or_die(argv[2], O_RDONLY), 0, UINT64_MAX, -1);
	} else if (argc == 6 && !strcmp(argv[1], "replay")) {
		walk(open_or_die(argv[2], O_RDONLY), strtoull(argv[4], NULL, 0),
		     strtoull(argv[5], NULL, 0), open_or_die(argv[3], O_RDWR));
	} else if (argc >= 4 && !strcmp(argv[1], "window")) {
		struct lw_log l;
		uint64_t cut = strtoull(argv[3], NULL, 0), w, i, end, v = 0, t = 0, r = 0;
		bool fl = has_opt(argc - 4, argv + 4, "inflight");

		index_log(&l, open_or_die(argv[2], O_RDONLY), fl ? UINT64_MAX : cut);
		fl = opt_args(&l, argc - 4, argv + 4);
		if (cut > l.n)
			cut = l.n;
		w = window(&l, cut);
		end = fl ? inflight(&l, cut) : cut;
		for (i = w; i < end; i++) {
			v += l.e[i].vol;
			t += l.e[i].vol && atoms(&l.e[i]) > 1;
			r += l.e[i].vol && in_ring(&l.e[i]);
		}
		/* W V T, then R (ring writes of V) and X (V's writes in flight) */
		printf("%llu %llu %llu %llu %llu\n", (unsigned long long)w, (unsigned long long)v,
		       (unsigned long long)t, (unsigned long long)r,
		       (unsigned long long)(end - cut));
	} else if (argc >= 7 && !strcmp(argv[1], "variant")) {
		struct lw_log l;
		uint64_t cut = strtoull(argv[4], NULL, 0);
		bool fl = has_opt(argc - 7, argv + 7, "inflight");

		index_log(&l, open_or_die(argv[2], O_RDONLY), fl ? UINT64_MAX : cut);
		fl = opt_args(&l, argc - 7, argv + 7);
		if (cut > l.n)
			cut = l.n;
		variant(&l, open_or_die(argv[3], O_RDWR), cut, argv[5], strtoull(argv[6], NULL, 0),
			fl);
	} else if (argc == 3 && !strcmp(argv[1], "zero")) {
		int fd = open_or_die(argv[2], O_RDWR);

		zero_range(fd, 0, dev_size(fd));
		if (fsync(fd))
			die("%s", "fsync");
	} else if (argc == 4 && !strcmp(argv[1], "copy")) {
		copy(open_or_die(argv[2], O_RDONLY), open_or_die(argv[3], O_RDWR));
	} else {
		fprintf(stderr, "usage: t_lwreplay list LOG | replay LOG DEV FROM TO | "
			"window LOG CUT [FROM UNIT] [ring=FROM:LEN] [inflight] | "
			"variant LOG DEV CUT prefix|reorder|torn|nodata|halfdata SEED [FROM UNIT] "
			"[ring=FROM:LEN] [inflight] | "
			"zero DEV | copy SRC DST\n");
		return 2;
	}
	return 0;
}
