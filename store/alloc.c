// SPDX-License-Identifier: MIT
/* alloc.c: extent sets on two treaps; the allocator. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

struct ext_node {
	uint64_t off, len;
	struct ext_node *l[2], *r[2];
	uint64_t prio[2];
};

struct key {
	uint64_t a, b;
};

static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static struct key nkey(int t, const struct ext_node *n)
{
	struct key k = { t ? n->len : n->off, t ? n->off : 0 };

	return k;
}

static int kcmp(struct key x, struct key y)
{
	if (x.a != y.a)
		return x.a < y.a ? -1 : 1;
	if (x.b != y.b)
		return x.b < y.b ? -1 : 1;
	return 0;
}

/* Split @n into keys < @k (left) and >= @k (right). */
static void split(int t, struct ext_node *n, struct key k, struct ext_node **l,
		  struct ext_node **r)
{
	if (!n) {
		*l = *r = NULL;
		return;
	}
	if (kcmp(nkey(t, n), k) < 0) {
		split(t, n->r[t], k, &n->r[t], r);
		*l = n;
	} else {
		split(t, n->l[t], k, l, &n->l[t]);
		*r = n;
	}
}

static struct ext_node *merge(int t, struct ext_node *a, struct ext_node *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (a->prio[t] > b->prio[t]) {
		a->r[t] = merge(t, a->r[t], b);
		return a;
	}
	b->l[t] = merge(t, a, b->l[t]);
	return b;
}

static void tree_insert(struct extset *s, int t, struct ext_node *n)
{
	struct ext_node *l, *r;

	n->l[t] = n->r[t] = NULL;
	n->prio[t] = mix(t ? (n->off * 31 + n->len) : n->off);
	split(t, s->root[t], nkey(t, n), &l, &r);
	s->root[t] = merge(t, merge(t, l, n), r);
}

static void tree_remove(struct extset *s, int t, struct ext_node *n)
{
	struct ext_node *l, *m, *r;
	struct key k = nkey(t, n), k1 = k;

	k1.b++;
	if (!t)
		k1.a++;
	split(t, s->root[t], k, &l, &r);
	split(t, r, k1, &m, &r);
	s->root[t] = merge(t, l, r);
}

static void node_link(struct extset *s, uint64_t off, uint64_t len, struct ext_node *n)
{
	n->off = off;
	n->len = len;
	tree_insert(s, 0, n);
	if (s->by_size)
		tree_insert(s, 1, n);
	s->total += len;
	s->count++;
}

static void node_add(struct extset *s, uint64_t off, uint64_t len, struct ext_node *n)
{
	node_link(s, off, len, n);
	if (s->obs && s->obs->put)
		s->obs->put(s->obs->arg, off, len);
}

static void node_unlink(struct extset *s, struct ext_node *n)
{
	tree_remove(s, 0, n);
	if (s->by_size)
		tree_remove(s, 1, n);
	s->total -= n->len;
	s->count--;
}

/* Change @n to [off, off+len), keeping the indexes and observers right. */
static void node_update(struct extset *s, struct ext_node *n, uint64_t off, uint64_t len)
{
	bool moved = off != n->off;

	node_unlink(s, n);
	if (moved && s->obs && s->obs->del)
		s->obs->del(s->obs->arg, n->off);
	if (!moved && s->obs && s->obs->resize) {
		node_link(s, off, len, n);
		s->obs->resize(s->obs->arg, off, len);
		return;
	}
	node_add(s, off, len, n);
}

static void node_delete(struct extset *s, struct ext_node *n)
{
	node_unlink(s, n);
	if (s->obs && s->obs->del)
		s->obs->del(s->obs->arg, n->off);
	free(n);
}

/* Last node with off <= @off. */
static struct ext_node *floor_node(const struct extset *s, uint64_t off)
{
	struct ext_node *n = s->root[0], *best = NULL;

	while (n) {
		if (n->off <= off) {
			best = n;
			n = n->r[0];
		} else {
			n = n->l[0];
		}
	}
	return best;
}

/* First node with off >= @off. */
static struct ext_node *ceil_node(const struct extset *s, uint64_t off)
{
	struct ext_node *n = s->root[0], *best = NULL;

	while (n) {
		if (n->off >= off) {
			best = n;
			n = n->l[0];
		} else {
			n = n->r[0];
		}
	}
	return best;
}

/* First node by (len, off) >= (@len, 0). */
static struct ext_node *size_ceil(const struct extset *s, uint64_t len)
{
	struct ext_node *n = s->root[1], *best = NULL;

	while (n) {
		if (n->len >= len) {
			best = n;
			n = n->l[1];
		} else {
			n = n->r[1];
		}
	}
	return best;
}

static struct ext_node *size_max(const struct extset *s)
{
	struct ext_node *n = s->root[1];

	while (n && n->r[1])
		n = n->r[1];
	return n;
}

void extset_init(struct extset *s, bool by_size)
{
	memset(s, 0, sizeof(*s));
	s->by_size = by_size;
}

static void free_tree(struct ext_node *n)
{
	if (!n)
		return;
	free_tree(n->l[0]);
	free_tree(n->r[0]);
	free(n);
}

void extset_destroy(struct extset *s)
{
	free_tree(s->root[0]);
	s->root[0] = s->root[1] = NULL;
	s->total = s->count = 0;
}

int extset_insert(struct extset *s, uint64_t off, uint64_t len)
{
	struct ext_node *p, *nx, *n;
	uint64_t end = off + len;

	if (!len)
		return 0;
	p = floor_node(s, off);
	if (p && p->off + p->len > off)
		return -EEXIST;
	nx = ceil_node(s, off);
	if (nx && nx->off < end)
		return -EEXIST;
	if (p && p->off + p->len == off) {
		if (nx && nx->off == end) {
			uint64_t nlen = nx->len;

			node_delete(s, nx);
			node_update(s, p, p->off, p->len + len + nlen);
		} else {
			node_update(s, p, p->off, p->len + len);
		}
		return 0;
	}
	if (nx && nx->off == end) {
		node_update(s, nx, off, nx->len + len);
		return 0;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	node_add(s, off, len, n);
	return 0;
}

uint64_t extset_remove(struct extset *s, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, removed = 0;
	struct ext_node *n = floor_node(s, off);

	if (!n || n->off + n->len <= off)
		n = ceil_node(s, off);
	while (n && n->off < end) {
		uint64_t noff = n->off, nend = n->off + n->len;
		uint64_t a = (noff > off ? noff : off), b = nend < end ? nend : end;
		struct ext_node *next = ceil_node(s, nend);

		removed += b - a;
		if (noff < a && b < nend) {
			struct ext_node *t = calloc(1, sizeof(*t));

			/* Cannot fail safely half-way; abort on OOM. */
			if (!t)
				abort();
			node_update(s, n, noff, a - noff);
			node_add(s, b, nend - b, t);
		} else if (noff < a) {
			node_update(s, n, noff, a - noff);
		} else if (b < nend) {
			node_update(s, n, b, nend - b);
		} else {
			node_delete(s, n);
		}
		n = next;
	}
	return removed;
}

uint64_t extset_overlap(const struct extset *s, uint64_t off, uint64_t len)
{
	uint64_t end = off + len, got = 0;
	struct ext_node *n = floor_node(s, off);

	if (!n || n->off + n->len <= off)
		n = ceil_node(s, off);
	while (n && n->off < end) {
		uint64_t a = n->off > off ? n->off : off;
		uint64_t b = n->off + n->len < end ? n->off + n->len : end;

		got += b - a;
		n = ceil_node(s, n->off + n->len);
	}
	return got;
}

uint64_t extset_largest(const struct extset *s)
{
	struct ext_node *n;

	if (s->by_size) {
		n = size_max(s);
		return n ? n->len : 0;
	}
	return 0;
}

static int walk(const struct ext_node *n, int (*fn)(void *, uint64_t, uint64_t), void *arg)
{
	int ret;

	if (!n)
		return 0;
	ret = walk(n->l[0], fn, arg);
	if (ret)
		return ret;
	ret = fn(arg, n->off, n->len);
	if (ret)
		return ret;
	return walk(n->r[0], fn, arg);
}

int extset_walk(const struct extset *s, int (*fn)(void *arg, uint64_t off, uint64_t len),
		void *arg)
{
	return walk(s->root[0], fn, arg);
}

bool extset_next(const struct extset *s, uint64_t off, struct pext *out)
{
	struct ext_node *n = ceil_node(s, off);

	if (!n)
		return false;
	out->off = n->off;
	out->len = n->len;
	return true;
}

bool extset_find(const struct extset *s, uint64_t off, struct pext *out)
{
	struct ext_node *n = floor_node(s, off);

	if (!n || n->off + n->len <= off)
		n = ceil_node(s, off);
	if (!n)
		return false;
	out->off = n->off;
	out->len = n->len;
	return true;
}

/* Take [off, off+len) out of node @n, which contains it. */
static void carve(struct extset *s, struct ext_node *n, uint64_t off, uint64_t len)
{
	extset_remove(s, off, len);
	(void)n;
}

static int alloc(struct extset *s, uint64_t len, uint64_t hint, uint64_t want, bool split,
		 struct pext **out);

int extset_alloc(struct extset *s, uint64_t len, uint64_t hint, uint64_t want,
		 struct pext **out)
{
	return alloc(s, len, hint, want, true, out);
}

int extset_alloc_contig(struct extset *s, uint64_t len, uint64_t hint, uint64_t want,
			struct pext **out)
{
	return alloc(s, len, hint, want, false, out);
}

static int alloc(struct extset *s, uint64_t len, uint64_t hint, uint64_t want, bool split,
		 struct pext **out)
{
	struct pext *v = NULL;
	struct ext_node *n;
	int cnt = 0, cap = 0;

	if (len > s->total)
		return -ENOSPC;
	if (hint) {
		n = floor_node(s, hint);
		if (n && n->off + n->len >= hint + len) {
			v = malloc(sizeof(*v));
			if (!v)
				return -ENOMEM;
			v[0].off = hint;
			v[0].len = len;
			carve(s, n, hint, len);
			*out = v;
			return 1;
		}
	}
	n = NULL;
	if (want > len)
		n = size_ceil(s, want);
	if (!n)
		n = size_ceil(s, len);
	if (n) {
		v = malloc(sizeof(*v));
		if (!v)
			return -ENOMEM;
		v[0].off = n->off;
		v[0].len = len;
		carve(s, n, n->off, len);
		*out = v;
		return 1;
	}
	if (!split)
		return -ENOSPC;
	while (len) {
		uint64_t take;

		n = size_max(s);
		take = n->len < len ? n->len : len;
		if (cnt == cap) {
			struct pext *nv;

			cap = cap ? cap * 2 : 8;
			nv = realloc(v, (size_t)cap * sizeof(*v));
			if (!nv) {
				int i;

				for (i = 0; i < cnt; i++)
					extset_insert(s, v[i].off, v[i].len);
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[cnt].off = n->off;
		v[cnt].len = take;
		cnt++;
		carve(s, n, n->off, take);
		len -= take;
	}
	*out = v;
	return cnt;
}

double extset_frag_score(const struct extset *s)
{
	if (!s->total)
		return 0.0;
	return 1.0 - (double)extset_largest(s) / (double)s->total;
}
