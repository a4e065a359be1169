/* SPDX-License-Identifier: MIT */
/*
 * space_int.h: what the parts of the space layer share (space.c, space_rec.c,
 * space_work.c) and nobody else sees: the state of struct rs_space, the
 * rounds that zero or punch free ranges, and the staged record changes.
 */
#ifndef RAWSTORE_SPACE_INT_H
#define RAWSTORE_SPACE_INT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "debug.h"
#include "decode.h"
#include "deferred.h"
#include "internal.h"
#include "space.h"
#include "util.h"

#define ROUND_MAX (64ULL << 20)		/* bytes zeroed or punched per round */
#define TICK_MS 200			/* the worker looks for work this often */
#define PROBE_LEN (1U << 20)		/* bytes zero-ranged by the probe at open */

enum round_kind { ROUND_ZERO, ROUND_PUNCH };
enum round_state { R_IDLE, R_PICKED, R_IO_DONE };

/* Ranges taken out of the free list to be zeroed or punched. */
struct space_round {
	enum round_kind kind;
	enum round_state state;
	bool took_out;			/* out of the free list ("W"), else in place */
	struct pext_vec r;
	int *res;			/* per range: 0 zeroed, 1 discarded, or -errno */
	uint64_t done;			/* bytes that succeeded */
	int err;			/* first error */
};

/*
 * While a commit group is applied, the free and unpunched lists change with
 * every allocation, each change a delete and a put of the extent it moved.
 * They are staged here instead of going into the group's batch one by one,
 * and only the last change of each record goes in, at commit: a group of
 * N creates carved from one free extent writes one record, not 2N.
 */
struct stage_ent {
	uint64_t off, len;
	uint32_t seq;
	char type;		/* 'F' or 'P' */
	bool del;
	bool existed;		/* the record existed before this change */
};

struct stage {
	struct space_batch *batch;	/* the group's: where the changes go */
	struct stage_ent *v;
	uint32_t n, cap;
	bool on;
	bool lost;		/* a change could not be staged (no memory) */
};

struct rs_space {
	struct rs_job_runner jobs;	/* the commit thread (space_start) */
	struct extset zeroed, ready, pending, dirty, inflight, provisioned;
	struct extset_observer zobs, wobs;
	bool prov_dirty;		/* provisioned changed since its records (prov_sync) */
	uint64_t prov_recs;		/* "V" records stored (prov_sync deletes them) */
	uint64_t held;			/* bytes freed by batches not yet durable */
	struct space_batch *out;	/* the innermost open batch (space_batch_open) */
	uint64_t unbatched;		/* changes with no batch open (bugs) */
	uint64_t overruns;		/* batches closed past their bound (bugs) */
	uint64_t misnested;		/* batches closed out of order (bugs) */
	struct stage stage;		/* "F"/"P" changes of the group being applied */

	struct rs_disk_space_policy rec;	/* as recorded */
	int zero_mode;			/* RAWSTORE_ZERO_PREPARE or _PAD, in effect */
	int punch_mode;			/* RAWSTORE_PUNCH_*, in effect */
	bool offload;			/* zero-range writes no data */
	uint64_t probe_ns;
	bool provisioning;
	bool zero_refused, punch_refused;	/* the device said EOPNOTSUPP */
	bool discard_only;		/* thin device without punch: discard */
	bool wz_refused;		/* FALLOC_FL_WRITE_ZEROES refused: zero-range */
	uint64_t target, ready_target, prepare_rate, punch_rate;

	pthread_mutex_t lock;		/* round state, stop, kick */
	pthread_cond_t cond;
	pthread_mutex_t round_lock;	/* one taken-out round at a time */
	struct space_round round;
	pthread_t thread;
	bool running, stop, kick;

	struct {
		uint64_t zeroed, dirty, in_flight, provisioned;
	} snap;
};

/* space_rec.c: the records. */
/* Put or delete the @type record at @off into the open batch. */
void sp_rec_put(struct rawstore *st, char type, uint64_t off, uint64_t len);
void sp_rec_del(struct rawstore *st, char type, uint64_t off);
/* Rebuild the free list from the onodes (open with rebuild_freelist). */
int sp_rebuild_freelist(struct rawstore *st);
/* Load every committed @type record into @s (validated). */
int sp_load_extents(struct rawstore *st, char type, struct extset *s);
/* The provisioned set changed: its records need writing (sp_prov_sync). */
void sp_prov_changed(struct rs_space *sp);
/* Write the provisioned set's records if it changed. */
int sp_prov_sync(struct rawstore *st);

/* space.c: policy and allocation. */
/* Remove [off, off+len) from every set of free space. */
void sp_unfree(struct rawstore *st, uint64_t off, uint64_t len);
/* The key of the space policy record ("Y"). */
void sp_key_policy(struct rs_key *k);
/* Make at least @len bytes of zeroed space writable (its "Z" records go
 * in a synced batch of their own). */
int sp_claim(struct rawstore *st, uint64_t len);

#endif /* RAWSTORE_SPACE_INT_H */
