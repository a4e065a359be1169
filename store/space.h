/* SPDX-License-Identifier: MIT */
/*
 * space.h: the free list and the freed-but-not-yet-punched list.  The only
 * module that changes either set and the only caller of the device's space
 * verbs.  Every change of a set is mirrored into the store's write batch
 * ("F" and "P" records) by observers, so it commits with the transactions
 * that caused it.  Offsets and lengths in bytes, unit aligned.
 */
#ifndef RAWSTORE_SPACE_H
#define RAWSTORE_SPACE_H

#include <stddef.h>
#include <stdint.h>

#include "alloc.h"
#include "onode.h"

struct rawstore;

/* Load the recorded lists (or rebuild them, with opts.rebuild_freelist). */
int space_load(struct rawstore *st);
/* From now on every change of the sets goes into st->wb. */
void space_attach(struct rawstore *st);
void space_detach(struct rawstore *st);
void space_destroy(struct rawstore *st);
/* Refresh the statfs snapshot; call with the write lock (or before threads). */
void space_snapshot(struct rawstore *st);

/*
 * Allocate @len bytes for a transaction: pieces (malloc'd in *@out), count
 * returned, or -ENOSPC with nothing allocated.  See extset_alloc for @hint
 * and @want.  Nothing is recorded until space_commit.
 */
int space_alloc(struct rawstore *st, uint64_t len, uint64_t hint, uint64_t want,
		struct pext **out);
/* Return allocations that will not commit (failed transaction or group). */
void space_unalloc(struct rawstore *st, const struct pext *v, size_t n);
/*
 * At commit, under the write lock: the group's allocations stop being
 * unpunched, its frees join the free and unpunched sets.  -EUCLEAN if a
 * range is freed twice.
 */
int space_commit(struct rawstore *st, const struct pext_vec *allocs,
		 const struct pext_vec *frees);
/* Punch every unpunched range (commit thread); the records go into st->wb.
 * *@punched gets the bytes punched, also on error. */
int space_reclaim(struct rawstore *st, uint64_t *punched);

#endif /* RAWSTORE_SPACE_H */
