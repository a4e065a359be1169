/* SPDX-License-Identifier: MIT */
/*
 * ocache.h: the onode cache.  Decoded object records by key, in shards
 * each with its own lock, least recently used first out, bounded by the
 * bytes the decoded records take.
 *
 * The rule that keeps it right: entries are added only by readers that
 * hold st->rwlock for reading (they loaded the record from the committed
 * database under that lock), and the commit thread drops the entries of
 * every record its group put or deleted while it holds the lock for
 * writing, right after the batch committed.  So an entry always equals
 * the committed record.  Entries are reference counted: a reader keeps
 * using its entry after the lock is dropped or the entry was evicted.
 */
#ifndef RAWSTORE_OCACHE_H
#define RAWSTORE_OCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "meta.h"
#include "onode.h"

struct rs_ocache;
struct rs_ocache_ent;

/* Budget of decoded bytes held by the cache (all shards). */
#define RS_OCACHE_BYTES (32U << 20)

int ocache_create(struct rs_ocache **out);
void ocache_destroy(struct rs_ocache *c);
/* The entry of @k with a reference, or NULL. */
struct rs_ocache_ent *ocache_get(struct rs_ocache *c, const struct rs_key *k);
/* Add @o (taken over; freed on failure) for @k and return the entry with a
 * reference (the one already there if another thread was first), or NULL
 * if out of memory.  Call with st->rwlock held for reading. */
struct rs_ocache_ent *ocache_add(struct rs_ocache *c, const struct rs_key *k,
				 struct rs_onode *o);
const struct rs_onode *ocache_onode(const struct rs_ocache_ent *e);
void ocache_put(struct rs_ocache *c, struct rs_ocache_ent *e);
/* Drop the entry of @k (st->rwlock held for writing). */
void ocache_drop(struct rs_ocache *c, const struct rs_key *k);
/* Drop every entry (st->rwlock held for writing). */
void ocache_clear(struct rs_ocache *c);

/* Keys whose records a commit group changes, dropped at its commit. */
struct rs_keyvec {
	struct rs_kcopy {
		char *buf;
		size_t len;
	} *v;
	size_t n, cap;
	int overflow;			/* a push failed: drop everything */
};

void keyvec_push(struct rs_keyvec *kv, const struct rs_key *k);
/* Drop the entries of @kv's keys (everything after a failed push), then
 * forget the keys.  st->rwlock held for writing. */
void ocache_drop_keys(struct rs_ocache *c, struct rs_keyvec *kv);
void keyvec_free(struct rs_keyvec *kv);

#endif /* RAWSTORE_OCACHE_H */
