// SPDX-License-Identifier: MIT
/*
 * server.c: the skeleton of a storage server built on librawstore.
 *
 * A server receives PUT requests from many connections at once and may
 * acknowledge a request only when its data is durable.  With librawstore
 * each connection thread turns a request into one transaction and queues it
 * with rawstore_submit_async(); the store's commit thread gathers what all
 * connections queued into one commit group (one device flush, one synced
 * RocksDB write) and calls each transaction's completion callback once it is
 * on stable storage.  The callback is where a real server would send its
 * reply.  Here each "connection" is a thread that generates its own
 * requests, keeps a bounded number in flight, then reads every object back
 * (reads run in the calling thread, in parallel with other threads' commits)
 * and checks the bytes.  At the end the server reports statfs and the commit
 * counters.
 *
 * Usage: rawstore-server [-c CLIENTS] [-n REQUESTS] [-w WINDOW] [DEV META]
 *   Without DEV and META it makes a store on a 256 MiB sparse file in
 *   $TMPDIR (removed afterwards); with them it runs mkfs on DEV, which
 *   destroys what DEV holds.
 * Prints a summary and exits 0 when every request was acknowledged and
 * every object read back intact, 1 otherwise, 2 on bad usage.
 *
 * Rules this example follows (see rawstore.h and rawstore(7)):
 *  - one store handle is shared by all threads;
 *  - a completion callback runs on the thread committing its group (the
 *    commit thread, or a thread inside rawstore_submit): it must be short,
 *    must not call blocking calls (rawstore_submit, rawstore_close, ...)
 *    and must not take a lock held around rawstore_submit;
 *  - a transaction stays untouched until its callback ran; the callback
 *    frees it;
 *  - every call returns 0 (or a count) or -errno; rawstore_strerror() and
 *    rawstore_errmsg() explain it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rawstore/rawstore.h>

#define COLL "objects"

struct server {
	struct rawstore *st;
	unsigned int requests;		/* per client */
	unsigned int window;		/* requests in flight per client */
};

/* One connection: its requests in flight and what came back. */
struct client {
	struct server *srv;
	unsigned int id;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned int inflight;
	unsigned int acked;		/* durable */
	unsigned int failed;		/* rejected by the store */
	unsigned int verified;		/* read back intact */
	unsigned int mismatched;
	int first_err;
};

/* The request a client sends: deterministic, so it can be checked. */
static size_t object_size(unsigned int client, unsigned int req)
{
	return 512 + ((size_t)(client * 7919 + req) * 4099) % (64 * 1024);
}

static unsigned char object_byte(unsigned int client, unsigned int req, size_t off)
{
	return (unsigned char)(client * 131 + req * 31 + off * 7);
}

static int object_name(char *buf, size_t len, unsigned int client, unsigned int req)
{
	return snprintf(buf, len, "client%u/req%06u", client, req);
}

/* Called on the commit thread when the transaction is durable (0) or was
 * rejected (-errno, and none of it happened). */
static void put_done(struct rawstore_txn *t, int result, void *arg)
{
	struct client *c = arg;

	rawstore_txn_free(t);
	pthread_mutex_lock(&c->lock);
	if (result) {
		c->failed++;
		if (!c->first_err)
			c->first_err = result;
	} else {
		c->acked++;	/* a real server replies to its peer here */
	}
	c->inflight--;
	pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

static int put(struct client *c, unsigned int req, unsigned char *buf)
{
	struct rawstore_txn *t;
	size_t len = object_size(c->id, req), i;
	char name[64];
	int nlen, ret;

	for (i = 0; i < len; i++)
		buf[i] = object_byte(c->id, req, i);
	nlen = object_name(name, sizeof(name), c->id, req);
	ret = rawstore_txn_new(&t);
	if (ret)
		return ret;
	/* Data, its length as an attribute: both durable, or neither. */
	ret = rawstore_txn_write(t, COLL, name, (size_t)nlen, 0, buf, len);
	if (!ret)
		ret = rawstore_txn_setattr(t, COLL, name, (size_t)nlen, "len", &len, sizeof(len));
	if (ret) {
		rawstore_txn_free(t);
		return ret;
	}
	pthread_mutex_lock(&c->lock);
	while (c->inflight >= c->srv->window)
		pthread_cond_wait(&c->cond, &c->lock);
	c->inflight++;
	pthread_mutex_unlock(&c->lock);
	ret = rawstore_submit_async(c->srv->st, t, put_done, c);
	if (ret) {
		/* Not queued: the callback will not run. */
		rawstore_txn_free(t);
		pthread_mutex_lock(&c->lock);
		c->inflight--;
		pthread_mutex_unlock(&c->lock);
	}
	return ret;
}

static void verify(struct client *c, unsigned int req, unsigned char *buf, size_t cap)
{
	size_t len = object_size(c->id, req), got_len = 0, i;
	char name[64];
	int nlen = object_name(name, sizeof(name), c->id, req);
	const char *what = NULL;
	ssize_t n;

	n = rawstore_read(c->srv->st, COLL, name, (size_t)nlen, 0, buf, cap);
	if (n != (ssize_t)len)
		what = "data length";
	for (i = 0; !what && i < len; i++)
		if (buf[i] != object_byte(c->id, req, i))
			what = "data";
	if (!what) {
		n = rawstore_getattr(c->srv->st, COLL, name, (size_t)nlen, "len", &got_len,
				     sizeof(got_len));
		if (n != sizeof(got_len) || got_len != len)
			what = "attribute";
	}
	if (!what) {
		c->verified++;
		return;
	}
	c->mismatched++;
	fprintf(stderr, "server: %s: %s differs (%zd: %s)\n", name, what, n,
		n < 0 ? rawstore_strerror((int)n) : "bytes");
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	size_t cap = 64 * 1024 + 512;
	unsigned char *buf = malloc(cap);
	unsigned int req;
	int ret = 0;

	if (!buf) {
		c->first_err = -ENOMEM;
		return NULL;
	}
	for (req = 0; req < c->srv->requests && !ret; req++)
		ret = put(c, req, buf);
	if (ret && !c->first_err)
		c->first_err = ret;

	/* Wait for the acknowledgements of everything in flight. */
	pthread_mutex_lock(&c->lock);
	while (c->inflight)
		pthread_cond_wait(&c->cond, &c->lock);
	pthread_mutex_unlock(&c->lock);

	/* Durable means readable: check every acknowledged object. */
	for (req = 0; req < c->acked; req++)
		verify(c, req, buf, cap);
	free(buf);
	return NULL;
}

static int die(const char *what, int err)
{
	fprintf(stderr, "server: %s: %s (%s)\n", what, rawstore_strerror(err), rawstore_errmsg());
	return 1;
}

static int make_scratch(char *dir, char *dev, char *meta, size_t len)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	snprintf(dir, len, "%s/rawstore-server-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir))
		return -errno;
	snprintf(dev, len, "%s/dev", dir);
	snprintf(meta, len, "%s/meta", dir);
	/* A sparse file stands in for a block device. */
	fd = open(dev, O_CREAT | O_RDWR, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, 256 << 20)) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct server srv = { NULL, 64, 8 };
	struct rawstore_statfs sf = { .struct_size = sizeof(sf) };
	struct rawstore_perf pf = { .struct_size = sizeof(pf) };
	struct rawstore_mkfs_opts mo;
	struct rawstore_txn *t;
	struct client *cl;
	unsigned int nclients = 4, i, acked = 0, failed = 0, verified = 0, mismatched = 0;
	char dir[256] = "", devb[300], metab[300];
	const char *dev, *meta;
	int opt, ret, rc = 0;

	while ((opt = getopt(argc, argv, "c:n:w:h")) != -1) {
		switch (opt) {
		case 'c':
			nclients = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			srv.requests = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'w':
			srv.window = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(opt == 'h' ? stdout : stderr,
				"usage: %s [-c CLIENTS] [-n REQUESTS] [-w WINDOW] [DEV META]\n",
				argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (!nclients || nclients > 256 || !srv.window ||
	    (argc - optind != 0 && argc - optind != 2)) {
		fprintf(stderr, "%s: bad arguments (see the comment at the top of server.c)\n",
			argv[0]);
		return 2;
	}
	if (argc - optind == 2) {
		dev = argv[optind];
		meta = argv[optind + 1];
	} else {
		ret = make_scratch(dir, devb, metab, sizeof(devb));
		if (ret)
			return die("scratch store", ret);
		dev = devb;
		meta = metab;
	}

	rawstore_mkfs_opts_init(&mo);
	mo.force = 1;
	ret = rawstore_mkfs(dev, meta, &mo);
	if (ret)
		return die("mkfs", ret);
	ret = rawstore_open(dev, meta, NULL, &srv.st);
	if (ret)
		return die("open", ret);

	/* The collection every connection writes into: one synchronous
	 * transaction before the connections start. */
	ret = rawstore_txn_new(&t);
	if (!ret) {
		rawstore_txn_coll_create(t, COLL);
		ret = rawstore_submit(srv.st, t);
		rawstore_txn_free(t);
	}
	if (ret)
		return die("create collection", ret);

	cl = calloc(nclients, sizeof(*cl));
	if (!cl)
		return die("calloc", -ENOMEM);
	for (i = 0; i < nclients; i++) {
		cl[i].srv = &srv;
		cl[i].id = i;
		pthread_mutex_init(&cl[i].lock, NULL);
		pthread_cond_init(&cl[i].cond, NULL);
		if (pthread_create(&cl[i].thread, NULL, client_main, &cl[i]))
			return die("pthread_create", -EAGAIN);
	}
	for (i = 0; i < nclients; i++) {
		pthread_join(cl[i].thread, NULL);
		acked += cl[i].acked;
		failed += cl[i].failed;
		verified += cl[i].verified;
		mismatched += cl[i].mismatched;
		if (cl[i].first_err) {
			fprintf(stderr, "server: client %u: %s\n", i,
				rawstore_strerror(cl[i].first_err));
			rc = 1;
		}
	}

	printf("clients %u, %u requests each, %u in flight per client\n", nclients, srv.requests,
	       srv.window);
	printf("acknowledged %u of %u transactions, %u rejected\n", acked,
	       nclients * srv.requests, failed);
	printf("verified %u objects, %u mismatches\n", verified, mismatched);

	ret = rawstore_statfs(srv.st, &sf);
	if (ret)
		return die("statfs", ret);
	printf("statfs: %" PRIu64 " objects in %" PRIu64 " collections, %" PRIu64
	       " bytes allocated, %" PRIu64 " bytes free of %" PRIu64 "\n", sf.objects,
	       sf.collections, sf.allocated, sf.free, sf.data_size);
	ret = rawstore_perf_get(srv.st, &pf);
	if (ret)
		return die("perf", ret);
	printf("commits: %" PRIu64 " transactions in %" PRIu64 " groups, %" PRIu64
	       " device flushes, %" PRIu64 " RocksDB syncs\n", pf.txns_committed,
	       pf.commit_groups, pf.dev_flushes, pf.db_syncs);

	ret = rawstore_close(srv.st);
	if (ret)
		return die("close", ret);
	for (i = 0; i < nclients; i++) {
		pthread_mutex_destroy(&cl[i].lock);
		pthread_cond_destroy(&cl[i].cond);
	}
	free(cl);
	if (*dir) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "server: could not remove %s\n", dir);
	}
	if (acked != nclients * srv.requests || mismatched || verified != acked ||
	    sf.objects != acked)
		rc = 1;
	return rc;
}
