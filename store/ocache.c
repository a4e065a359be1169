// SPDX-License-Identifier: MIT
/* ocache.c: the onode cache (ocache.h says when entries come and go). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ocache.h"

#define SHARDS 16
#define BUCKETS 1024			/* per shard */

struct rs_ocache_ent {
	struct rs_ocache_ent *hnext;	/* hash chain */
	struct rs_ocache_ent *prev, *next;	/* LRU, most recent at head */
	unsigned int refs;		/* the cache's own (while linked) + readers' */
	uint64_t hash;
	size_t charge;			/* bytes counted against the budget */
	struct rs_onode o;
	size_t klen;
	char *key;			/* stored right after the entry */
};

struct shard {
	pthread_mutex_t lock;
	struct rs_ocache_ent *bucket[BUCKETS];
	struct rs_ocache_ent lru;	/* list head */
	size_t bytes;
};

struct rs_ocache {
	struct shard sh[SHARDS];
};

static uint64_t key_hash(const char *k, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)k[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static struct shard *shard_of(struct rs_ocache *c, uint64_t h)
{
	return &c->sh[(h >> 32) % SHARDS];
}

int ocache_create(struct rs_ocache **out)
{
	struct rs_ocache *c = calloc(1, sizeof(*c));
	unsigned int i;

	if (!c)
		return -ENOMEM;
	for (i = 0; i < SHARDS; i++) {
		pthread_mutex_init(&c->sh[i].lock, NULL);
		c->sh[i].lru.prev = c->sh[i].lru.next = &c->sh[i].lru;
	}
	*out = c;
	return 0;
}

static void ent_free(struct rs_ocache_ent *e)
{
	onode_free(&e->o);
	free(e);
}

/* Unlink @e from its shard (lock held); false if the last ref went too. */
static bool unlink_ent(struct shard *s, struct rs_ocache_ent *e)
{
	struct rs_ocache_ent **pp = &s->bucket[e->hash % BUCKETS];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	e->prev->next = e->next;
	e->next->prev = e->prev;
	s->bytes -= e->charge;
	return --e->refs > 0;
}

void ocache_clear(struct rs_ocache *c)
{
	unsigned int i;

	for (i = 0; c && i < SHARDS; i++) {
		struct shard *s = &c->sh[i];

		pthread_mutex_lock(&s->lock);
		while (s->lru.next != &s->lru) {
			struct rs_ocache_ent *e = s->lru.next;

			if (!unlink_ent(s, e))
				ent_free(e);
		}
		pthread_mutex_unlock(&s->lock);
	}
}

void ocache_destroy(struct rs_ocache *c)
{
	unsigned int i;

	if (!c)
		return;
	ocache_clear(c);
	for (i = 0; i < SHARDS; i++)
		pthread_mutex_destroy(&c->sh[i].lock);
	free(c);
}

static struct rs_ocache_ent *find(struct shard *s, uint64_t h, const char *k, size_t len)
{
	struct rs_ocache_ent *e;

	for (e = s->bucket[h % BUCKETS]; e; e = e->hnext)
		if (e->hash == h && e->klen == len && !memcmp(e->key, k, len))
			return e;
	return NULL;
}

static void lru_front(struct shard *s, struct rs_ocache_ent *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->next = s->lru.next;
	e->prev = &s->lru;
	s->lru.next->prev = e;
	s->lru.next = e;
}

struct rs_ocache_ent *ocache_get(struct rs_ocache *c, const struct rs_key *k)
{
	uint64_t h = key_hash(k->buf, k->len);
	struct shard *s = shard_of(c, h);
	struct rs_ocache_ent *e;

	pthread_mutex_lock(&s->lock);
	e = find(s, h, k->buf, k->len);
	if (e) {
		e->refs++;
		lru_front(s, e);
	}
	pthread_mutex_unlock(&s->lock);
	return e;
}

static size_t onode_charge(const struct rs_onode *o, size_t klen)
{
	size_t n = sizeof(struct rs_ocache_ent) + klen + o->inline_len;
	uint32_t i;

	n += (size_t)o->cap_ext * sizeof(struct rs_extent);
	for (i = 0; i < o->n_ext; i++)
		n += (size_t)o->ext[i].len / 512;	/* crcs: at least 4 B per 2 KiB */
	return n;
}

struct rs_ocache_ent *ocache_add(struct rs_ocache *c, const struct rs_key *k,
				 struct rs_onode *o)
{
	uint64_t h = key_hash(k->buf, k->len);
	struct shard *s = shard_of(c, h);
	struct rs_ocache_ent *e = malloc(sizeof(*e) + k->len), *old;

	if (!e) {
		onode_free(o);
		return NULL;
	}
	e->hash = h;
	e->o = *o;
	memset(o, 0, sizeof(*o));
	e->klen = k->len;
	e->key = (char *)(e + 1);
	memcpy(e->key, k->buf, k->len);
	e->charge = onode_charge(&e->o, k->len);
	e->refs = 2;			/* the cache's and the caller's */
	pthread_mutex_lock(&s->lock);
	old = find(s, h, k->buf, k->len);
	if (old) {
		/* Another reader added it first (the same committed record). */
		old->refs++;
		lru_front(s, old);
		pthread_mutex_unlock(&s->lock);
		ent_free(e);
		return old;
	}
	e->hnext = s->bucket[h % BUCKETS];
	s->bucket[h % BUCKETS] = e;
	e->next = s->lru.next;
	e->prev = &s->lru;
	s->lru.next->prev = e;
	s->lru.next = e;
	s->bytes += e->charge;
	/* Evict from the cold end; readers still holding one keep it alive. */
	while (s->bytes > RS_OCACHE_BYTES / SHARDS && s->lru.prev != e) {
		struct rs_ocache_ent *v = s->lru.prev;

		if (!unlink_ent(s, v))
			ent_free(v);
	}
	pthread_mutex_unlock(&s->lock);
	return e;
}

const struct rs_onode *ocache_onode(const struct rs_ocache_ent *e)
{
	return &e->o;
}

void ocache_put(struct rs_ocache *c, struct rs_ocache_ent *e)
{
	struct shard *s;
	bool last;

	if (!e)
		return;
	s = shard_of(c, e->hash);
	pthread_mutex_lock(&s->lock);
	last = --e->refs == 0;
	pthread_mutex_unlock(&s->lock);
	if (last)
		ent_free(e);
}

static void drop(struct rs_ocache *c, const char *k, size_t len)
{
	uint64_t h = key_hash(k, len);
	struct shard *s = shard_of(c, h);
	struct rs_ocache_ent *e;
	bool freed = false;

	pthread_mutex_lock(&s->lock);
	e = find(s, h, k, len);
	if (e)
		freed = !unlink_ent(s, e);
	pthread_mutex_unlock(&s->lock);
	if (freed)
		ent_free(e);
}

void ocache_drop(struct rs_ocache *c, const struct rs_key *k)
{
	drop(c, k->buf, k->len);
}

void keyvec_push(struct rs_keyvec *kv, const struct rs_key *k)
{
	char *b;

	if (kv->overflow)
		return;
	if (kv->n == kv->cap) {
		size_t cap = kv->cap ? kv->cap * 2 : 64;
		struct rs_kcopy *v = realloc(kv->v, cap * sizeof(*v));

		if (!v) {
			kv->overflow = 1;
			return;
		}
		kv->v = v;
		kv->cap = cap;
	}
	b = malloc(k->len);
	if (!b) {
		kv->overflow = 1;
		return;
	}
	memcpy(b, k->buf, k->len);
	kv->v[kv->n].buf = b;
	kv->v[kv->n].len = k->len;
	kv->n++;
}

void ocache_drop_keys(struct rs_ocache *c, struct rs_keyvec *kv)
{
	size_t i;

	if (c && kv->overflow)
		ocache_clear(c);
	for (i = 0; c && !kv->overflow && i < kv->n; i++)
		drop(c, kv->v[i].buf, kv->v[i].len);
	keyvec_free(kv);
}

void keyvec_free(struct rs_keyvec *kv)
{
	size_t i;

	for (i = 0; i < kv->n; i++)
		free(kv->v[i].buf);
	free(kv->v);
	memset(kv, 0, sizeof(*kv));
}
