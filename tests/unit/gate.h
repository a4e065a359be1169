// SPDX-License-Identifier: MIT
/*
 * gate.h: hold the commit thread in a completion callback, so that the
 * transactions submitted meanwhile queue up and form one group when the
 * gate opens.
 */
#ifndef RAWSTORE_TEST_GATE_H
#define RAWSTORE_TEST_GATE_H

#include <condition_variable>
#include <mutex>

#include <gtest/gtest.h>

#include "rawstore/rawstore.h"

struct Gate {
	std::mutex m;
	std::condition_variable cv;
	bool entered = false, open = false;
	int done = 0, failed = 0;	/* for the callers' own callbacks */
};

/* The gate transaction's callback: waits until the gate opens. */
inline void gate_cb(struct rawstore_txn *t, int, void *arg)
{
	auto g = static_cast<Gate *>(arg);
	std::unique_lock<std::mutex> l(g->m);
	g->entered = true;
	g->cv.notify_all();
	g->cv.wait(l, [g] { return g->open; });
	rawstore_txn_free(t);
}

/* Hold the commit thread in a callback (@gt touches "c"/"gate"); returns
 * once it is held. */
inline void HoldCommitThread(struct rawstore *st, struct rawstore_txn *gt, Gate &g)
{
	rawstore_txn_touch(gt, "c", "gate", 4);
	ASSERT_EQ(rawstore_submit_async(st, gt, gate_cb, &g), 0);
	std::unique_lock<std::mutex> l(g.m);
	g.cv.wait(l, [&g] { return g.entered; });
}

inline void Release(Gate &g)
{
	std::lock_guard<std::mutex> l(g.m);
	g.open = true;
	g.cv.notify_all();
}

#endif
