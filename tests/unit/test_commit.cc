// Checks the commit stage: a transaction that fails inside a commit group
// leaves nothing of itself in the group (allocation failure while its
// frees are copied, a failed save-point rollback), and the message of a
// failure on the commit thread reaches the submitter; and the pipelined
// commit: a group completes, and the units it frees are reused, only once
// its batch is synced, so a lost WAL tail leaves freed data intact.
#include <sys/wait.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "helpers.h"

extern "C" {
#include "debug.h"
#include "gate.h"
#include "commit.h"
#include "util.h"
}

namespace {

struct Done {
	std::mutex m;
	std::condition_variable cv;
	int n = 0;
	std::vector<int> result;
	std::vector<std::string> msg;
};

struct Slot {
	Done *d;
	int i;
};

void done_cb(struct rawstore_txn *, int result, void *arg)
{
	auto s = static_cast<Slot *>(arg);
	std::lock_guard<std::mutex> l(s->d->m);
	s->d->result[(size_t)s->i] = result;
	s->d->msg[(size_t)s->i] = rawstore_errmsg(); /* on the commit thread */
	s->d->n++;
	s->d->cv.notify_all();
}

class CommitTest : public StoreTest {
protected:
	void TearDown() override
	{
		rs_debug_set_fail_point(RS_FAIL_NONE, 0);
		rs_debug_fail_io(0, 0, 0, 0);
		rs_debug_hold_sync(0);
		rs_debug_hold_writes(0);
		StoreTest::TearDown();
	}
	/* Small groups (max_group 2): the test's transactions, submitted
	 * one after another, commit in groups of their own. */
	void Pipelined()
	{
		oo.max_group = 2;
		Reopen();
	}
	/* Submit @ts asynchronously as one commit group; wait for all. */
	void OneGroup(std::vector<struct rawstore_txn *> ts, Done &d)
	{
		Gate g;
		struct rawstore_txn *gt = T();
		rawstore_txn_touch(gt, "c", "gate", 4);
		ASSERT_EQ(rawstore_submit_async(st, gt, gate_cb, &g), 0);
		{
			std::unique_lock<std::mutex> l(g.m);
			g.cv.wait(l, [&g] { return g.entered; });
		}
		/* The commit thread waits in gate_cb: these queue up together. */
		d.result.assign(ts.size(), 1);
		d.msg.assign(ts.size(), "");
		std::vector<Slot> slots(ts.size());
		for (size_t i = 0; i < ts.size(); i++) {
			slots[i] = { &d, (int)i };
			ASSERT_EQ(rawstore_submit_async(st, ts[i], done_cb, &slots[i]), 0);
		}
		{
			std::lock_guard<std::mutex> l(g.m);
			g.open = true;
			g.cv.notify_all();
		}
		std::unique_lock<std::mutex> l(d.m);
		d.cv.wait(l, [&] { return d.n == (int)ts.size(); });
	}
};

/* Item 8.2: out of memory while a txn's frees are copied into the group. */
TEST_F(CommitTest, FailedAppendLeavesNoFreesInGroup)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string x = pattern(8192, 1), y = pattern(8192, 2);
	ASSERT_EQ(Write("c", "x", 0, x), 0);
	ASSERT_EQ(Write("c", "spacer", 0, pattern(8192, 3)), 0);
	ASSERT_EQ(Write("c", "y", 0, y), 0);

	struct rawstore_txn *a = T(), *b = T();
	rawstore_txn_remove(a, "c", "x", 1); /* two separate frees */
	rawstore_txn_remove(a, "c", "y", 1);
	std::string z = pattern(8192, 4);
	rawstore_txn_write(b, "c", "z", 1, 0, z.data(), z.size());
	/* The second free of a fails to be copied into the group. */
	rs_debug_set_fail_point(RS_FAIL_GROUP_APPEND, 2);
	Done d;
	OneGroup({ a, b }, d);
	EXPECT_EQ(d.result[0], -ENOMEM);
	EXPECT_EQ(d.result[1], 0);
	rawstore_txn_free(a);
	rawstore_txn_free(b);
	/* x and y are intact and none of their units is free. */
	EXPECT_TRUE(Read("c", "x", 0, 10000) == x);
	EXPECT_TRUE(Read("c", "y", 0, 10000) == y);
	EXPECT_TRUE(Read("c", "z", 0, 10000) == z);
	ExpectClean();
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(Write("c", "n" + std::to_string(i), 0, pattern(8192, 10 + i)), 0);
	EXPECT_TRUE(Read("c", "x", 0, 10000) == x);
	EXPECT_TRUE(Read("c", "y", 0, 10000) == y);
	ExpectClean();
}

/* Item 8.7: a failed save-point rollback stops the group from committing. */
TEST_F(CommitTest, FailedRollbackCommitsNothing)
{
	ASSERT_EQ(MkColl("c"), 0);
	struct rawstore_txn *a = T(), *b = T();
	std::string z = pattern(8192, 4);
	rawstore_txn_write(a, "c", "z", 1, 0, z.data(), z.size());
	rawstore_txn_touch(b, "missing", "w", 1); /* fails: -ENOENT */
	rs_debug_set_fail_point(RS_FAIL_ROLLBACK, 1);
	Done d;
	OneGroup({ a, b }, d);
	EXPECT_EQ(d.result[1], -ENOENT);
	EXPECT_EQ(d.result[0], -EIO) << "the group was committed after a failed rollback";
	EXPECT_NE(d.msg[0].find("rollback"), std::string::npos) << d.msg[0];
	rawstore_txn_free(a);
	rawstore_txn_free(b);
	/* The store stopped: later transactions fail and say why. */
	EXPECT_EQ(Write("c", "later", 0, "x"), -EIO);
	EXPECT_NE(std::string(rawstore_errmsg()).find("rollback"), std::string::npos)
		<< rawstore_errmsg();
	EXPECT_EQ(rawstore_close(st), -EIO);
	st = nullptr;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	EXPECT_EQ(rawstore_stat(st, "c", "z", 1, &s), -ENOENT);
	ExpectClean();
}

/* Item 8.8: rawstore_errmsg() after a failure on the commit thread. */
TEST_F(CommitTest, ErrmsgReachesTheSubmitter)
{
	ASSERT_EQ(MkColl("c"), 0);
	/* Leave a stale message in this thread. */
	struct rawstore *none;
	ASSERT_LT(rawstore_open("/nonexistent/dev", "/nonexistent/meta", nullptr, &none), 0);
	std::string stale = rawstore_errmsg();
	ASSERT_NE(stale, "");

	struct rawstore_txn *t = T();
	rawstore_txn_touch(t, "c", "a", 1);
	rawstore_txn_touch(t, "nocoll", "b", 1);
	EXPECT_EQ(rawstore_submit(st, t), -ENOENT);
	std::string m = rawstore_errmsg();
	EXPECT_NE(m, stale);
	EXPECT_NE(m.find("op 1"), std::string::npos) << m;
	EXPECT_EQ(std::string(rawstore_txn_errmsg(t)), m);

	/* Async: the callback and rawstore_txn_errmsg() see it. */
	Done d;
	OneGroup({ t }, d);
	EXPECT_EQ(d.result[0], -ENOENT);
	EXPECT_NE(d.msg[0].find("op 1"), std::string::npos) << d.msg[0];
	EXPECT_NE(std::string(rawstore_txn_errmsg(t)).find("op 1"), std::string::npos);
	rawstore_txn_free(t);

	/* A message set on the commit thread by a job (reclaim, fsck). */
	EXPECT_EQ(rs_run_job(st,
			     [](struct rawstore *s, void *) {
				     return rs_err(s, -EOPNOTSUPP, "job says no");
			     },
			     nullptr),
		  -EOPNOTSUPP);
	EXPECT_EQ(std::string(rawstore_errmsg()), "job says no");
}

/*
 * A data write fails: only its transaction fails; the rest of its group is
 * applied again without it and commits, the store stays usable.
 */
TEST_F(CommitTest, DataWriteErrorFailsOnlyItsTxn)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string k = pattern(20000, 1);
	ASSERT_EQ(Write("c", "keep", 0, k), 0);
	uint64_t free0 = Statfs().free;
	struct rawstore_txn *a = T(), *b = T(), *c = T();
	std::string x = pattern(65536, 2), y = pattern(65536, 3), z = pattern(5000, 4);
	rawstore_txn_write(a, "c", "x", 1, 0, x.data(), x.size());
	rawstore_txn_write(b, "c", "y", 1, 0, y.data(), y.size());
	rawstore_txn_remove(b, "c", "keep", 4);
	/* reads x's units, written by a (in flight) */
	rawstore_txn_write(c, "c", "x", 1, 70000, z.data(), z.size());
	rs_debug_fail_io(RS_IO_WRITE, 2, EIO, 1); /* b's write */
	Done d;
	OneGroup({ a, b, c }, d);
	EXPECT_EQ(d.result[0], 0) << d.msg[0];
	EXPECT_EQ(d.result[1], -EIO);
	EXPECT_EQ(d.result[2], 0) << d.msg[2];
	EXPECT_NE(d.msg[1].find("write"), std::string::npos) << d.msg[1];
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	std::string wx = x;
	wx.resize(70000, 0);
	wx += z;
	EXPECT_TRUE(Read("c", "x", 0, 80000) == wx);
	EXPECT_EQ(rawstore_stat(st, "c", "y", 1, &s), -ENOENT);
	EXPECT_TRUE(Read("c", "keep", 0, 30000) == k);
	ExpectClean();
	/* b's units went back: only x's are used */
	EXPECT_EQ(Statfs().free, free0 - 73728); /* 16 + 2 units of x */
	/* not sticky: b goes through now */
	EXPECT_EQ(rawstore_submit(st, b), 0);
	rawstore_txn_free(a);
	rawstore_txn_free(b);
	rawstore_txn_free(c);
	EXPECT_TRUE(Read("c", "y", 0, 70000) == y);
	EXPECT_EQ(rawstore_stat(st, "c", "keep", 4, &s), -ENOENT);
	Reopen();
	EXPECT_TRUE(Read("c", "x", 0, 80000) == wx);
	EXPECT_TRUE(Read("c", "y", 0, 70000) == y);
	ExpectClean();
}

/*
 * Issue 24, item 4: the transaction whose write fails is the one a later
 * transaction of the group read from (read-modify-write of a unit it is
 * writing; the failed write left garbage there).  The reader fails while
 * applied, but it is applied again without the failed one and commits,
 * as API.md says ("the rest of the group is applied again without it");
 * before, having failed in the first pass, it was skipped in every retry.
 */
TEST_F(CommitTest, TxnThatReadAFailedWriteIsAppliedAgain)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string k = pattern(20000, 1);
	ASSERT_EQ(Write("c", "keep", 0, k), 0);
	struct rawstore_txn *a = T(), *c = T();
	std::string x = pattern(65536, 2), z = pattern(5000, 4);
	rawstore_txn_write(a, "c", "x", 1, 0, x.data(), x.size());
	/* reads the first unit of x, written by a (in flight) */
	rawstore_txn_write(c, "c", "x", 1, 1000, z.data(), z.size());
	rs_debug_garble_failed_writes(1);
	rs_debug_fail_io(RS_IO_WRITE, 1, EIO, 1); /* a's write */
	Done d;
	OneGroup({ a, c }, d);
	rs_debug_garble_failed_writes(0);
	EXPECT_EQ(d.result[0], -EIO);
	EXPECT_NE(d.msg[0].find("write"), std::string::npos) << d.msg[0];
	EXPECT_EQ(d.result[1], 0) << d.msg[1];
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	rawstore_txn_free(a);
	rawstore_txn_free(c);
	/* c as if a never was: zeros, then z */
	std::string wx(1000, 0);
	wx += z;
	EXPECT_TRUE(Read("c", "x", 0, 80000) == wx);
	EXPECT_TRUE(Read("c", "keep", 0, 30000) == k);
	ExpectClean();
	Reopen();
	EXPECT_TRUE(Read("c", "x", 0, 80000) == wx);
	ExpectClean();
}

/*
 * Issue 24, item 4: a transaction fails while applied after its data
 * write was queued, and that write fails too.  The write error is its
 * own (it failed anyway): the rest of the group commits; before, the
 * error was pinned on no one and the whole group failed.
 */
TEST_F(CommitTest, FailedWriteOfAFailedTxnFailsOnlyIt)
{
	ASSERT_EQ(MkColl("c"), 0);
	struct rawstore_txn *t = T(), *u = T();
	std::string p = pattern(65536, 5), q = pattern(65536, 6);
	rawstore_txn_write(t, "c", "p", 1, 0, p.data(), p.size());
	rawstore_txn_touch(t, "missing", "w", 1); /* fails: -ENOENT */
	rawstore_txn_write(u, "c", "q", 1, 0, q.data(), q.size());
	uint64_t free0 = Statfs().free;
	rs_debug_fail_io(RS_IO_WRITE, 1, EIO, 1); /* t's write */
	Done d;
	OneGroup({ t, u }, d);
	EXPECT_EQ(d.result[0], -ENOENT) << d.msg[0];
	EXPECT_EQ(d.result[1], 0) << d.msg[1];
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	rawstore_txn_free(t);
	rawstore_txn_free(u);
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	EXPECT_EQ(rawstore_stat(st, "c", "p", 1, &s), -ENOENT);
	EXPECT_TRUE(Read("c", "q", 0, 70000) == q);
	EXPECT_EQ(Statfs().free, free0 - 65536) << "t's units went back";
	ExpectClean();
	Reopen();
	EXPECT_TRUE(Read("c", "q", 0, 70000) == q);
	ExpectClean();
}

/*
 * Later transactions of a group read units whose writes by earlier ones
 * are still in flight (read-modify-write of a partial unit, in place or
 * redirected, and of a clone's shared units): they see the new data.
 */
TEST_F(CommitTest, GroupReadsItsOwnWritesInFlight)
{
	ASSERT_EQ(MkColl("c"), 0);
	for (int round = 0; round < 3; round++) {
		if (round == 1) { /* no deferred overwrites: every RMW redirects */
			oo.deferred_max = 0;
			Reopen();
		}
		if (round == 2) { /* new data through the WAL too */
			oo.deferred_max = 32768;
			oo.deferred_new_max = 65536;
			Reopen();
		}
		std::string A = "a" + std::to_string(round), B = "b" + std::to_string(round);
		std::string a = pattern(10000, 1), p2 = pattern(100, 2), p3 = pattern(50, 3);
		std::string p4 = pattern(10, 4), p5 = pattern(3000, 5);
		std::vector<struct rawstore_txn *> ts;
		struct rawstore_txn *t = T();
		rawstore_txn_write(t, "c", A.data(), A.size(), 0, a.data(), a.size());
		ts.push_back(t);
		t = T();
		rawstore_txn_write(t, "c", A.data(), A.size(), 9000, p2.data(), p2.size());
		ts.push_back(t);
		t = T();
		rawstore_txn_clone(t, "c", A.data(), A.size(), B.data(), B.size());
		ts.push_back(t);
		t = T();
		rawstore_txn_write(t, "c", B.data(), B.size(), 100, p3.data(), p3.size());
		rawstore_txn_write(t, "c", A.data(), A.size(), 12000, p4.data(), p4.size());
		ts.push_back(t);
		t = T();
		rawstore_txn_write(t, "c", A.data(), A.size(), 5000, p5.data(), p5.size());
		ts.push_back(t);
		Done d;
		OneGroup(ts, d);
		for (size_t i = 0; i < ts.size(); i++) {
			EXPECT_EQ(d.result[i], 0) << "txn " << i << ": " << d.msg[i];
			rawstore_txn_free(ts[i]);
		}
		std::string wa = a, wb;
		wa.replace(9000, 100, p2);
		wb = wa;
		wb.replace(100, 50, p3);
		wa.resize(12000, 0);
		wa += p4;
		wa.replace(5000, 3000, p5);
		EXPECT_TRUE(Read("c", A, 0, 20000) == wa) << "round " << round;
		EXPECT_TRUE(Read("c", B, 0, 20000) == wb) << "round " << round;
		Reopen();
		EXPECT_TRUE(Read("c", A, 0, 20000) == wa) << "round " << round;
		EXPECT_TRUE(Read("c", B, 0, 20000) == wb) << "round " << round;
		ExpectClean();
	}
}

static struct rawstore_perf Perf(struct rawstore *st)
{
	struct rawstore_perf p;

	p.struct_size = sizeof(p);
	EXPECT_EQ(rawstore_perf_get(st, &p), 0);
	return p;
}

/*
 * deferred_new_max: new data up to the limit goes into the batch (one
 * RocksDB sync, no device flush, the device write after the commit);
 * larger data is written and flushed first.  The open option is checked
 * and reported.
 */
TEST_F(CommitTest, DeferredNewDataSkipsTheDeviceFlush)
{
	struct rawstore_info info;
	info.struct_size = sizeof(info);
	ASSERT_EQ(rawstore_get_info(st, &info), 0);
	EXPECT_EQ(info.rotational, 0); /* a file: auto means off */
	EXPECT_EQ(info.deferred_new_max, 0u);
	EXPECT_EQ(info.deferred_max, 32768u);
	oo.deferred_new_max = (1 << 20) + 1;
	rawstore_close(st);
	st = nullptr;
	EXPECT_EQ(Open(), -EINVAL);
	EXPECT_NE(strstr(rawstore_errmsg(), "deferred_new_max"), nullptr) << rawstore_errmsg();
	oo.deferred_new_max = 65536;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ASSERT_EQ(rawstore_get_info(st, &info), 0);
	EXPECT_EQ(info.deferred_new_max, 65536u);
	ASSERT_EQ(MkColl("c"), 0);

	struct rawstore_perf a = Perf(st);
	std::string small = pattern(20000, 1), big = pattern(100000, 2);
	ASSERT_EQ(Write("c", "small", 0, small), 0);
	rs_debug_commit_settle(st); /* its in-place write is done */
	struct rawstore_perf b = Perf(st);
	EXPECT_EQ(b.deferred_new_bytes - a.deferred_new_bytes, 20480u);
	EXPECT_EQ(b.deferred_bytes - a.deferred_bytes, 20480u);
	/* no flush for data (the device journal's record flush aside) */
	EXPECT_EQ(b.dev_flushes - b.journal_flushes, a.dev_flushes - a.journal_flushes);
	EXPECT_EQ(commit_syncs(st, b) - commit_syncs(st, a), 1u);
	EXPECT_EQ(b.dev_write_bytes - a.dev_write_bytes, 20480u); /* applied */
	EXPECT_EQ(Read("c", "small", 0, 30000), small);

	ASSERT_EQ(Write("c", "big", 0, big), 0); /* 100 KiB: written, flushed */
	struct rawstore_perf c = Perf(st);
	EXPECT_EQ(c.deferred_new_bytes, b.deferred_new_bytes);
	EXPECT_EQ(c.dev_flushes - b.dev_flushes, 1u);
	EXPECT_EQ(Read("c", "big", 0, 200000), big);
	Reopen();
	EXPECT_EQ(Perf(st).deferred_replayed, 0u); /* retired at close */
	EXPECT_EQ(Read("c", "small", 0, 30000), small);
	EXPECT_EQ(Read("c", "big", 0, 200000), big);
	ExpectClean();
}

static void count_cb(struct rawstore_txn *t, int result, void *arg)
{
	if (!result)
		(*static_cast<std::atomic<int> *>(arg))++;
	rawstore_txn_free(t);
}

/* Back-pressure: the queue is bounded in transactions and bytes. */
TEST_F(CommitTest, BoundedQueueNonblocking)
{
	ASSERT_EQ(MkColl("c"), 0);
	oo.max_queued_txns = 3;
	oo.max_queued_bytes = 100000;
	oo.submit_nonblock = 1;
	Reopen();
	Gate g;
	HoldCommitThread(st, T(), g);
	std::atomic<int> done{ 0 };
	std::string d = pattern(60000, 1);
	auto W = [&](const char *n) {
		struct rawstore_txn *t = T();
		rawstore_txn_write(t, "c", n, strlen(n), 0, d.data(), d.size());
		return t;
	};
	auto Touch = [&](const char *n) {
		struct rawstore_txn *t = T();
		rawstore_txn_touch(t, "c", n, strlen(n));
		return t;
	};
	struct rawstore_txn *t1 = W("w1"), *t2 = W("w2"), *t3 = Touch("t3"), *t4 = Touch("t4"),
			    *t5 = Touch("t5");
	EXPECT_EQ(rawstore_submit_async(st, t1, count_cb, &done), 0);
	/* 120000 bytes > 100000: full by bytes */
	EXPECT_EQ(rawstore_submit_async(st, t2, count_cb, &done), -EAGAIN);
	EXPECT_EQ(rawstore_submit_async(st, t3, count_cb, &done), 0);
	EXPECT_EQ(rawstore_submit_async(st, t4, count_cb, &done), 0);
	/* three in flight: full by count */
	EXPECT_EQ(rawstore_submit_async(st, t5, count_cb, &done), -EAGAIN);
	/* a blocking submit waits for room, not fails */
	std::atomic<bool> returned{ false };
	std::thread sync([&] {
		struct rawstore_txn *t = Touch("sync");
		EXPECT_EQ(rawstore_submit(st, t), 0);
		rawstore_txn_free(t);
		returned = true;
	});
	usleep(200000);
	EXPECT_FALSE(returned.load());
	Release(g);
	sync.join();
	EXPECT_TRUE(returned.load());
	while (done < 3)
		usleep(1000);
	/* refused ones were not queued and can be submitted now */
	EXPECT_EQ(rawstore_submit(st, t2), 0);
	EXPECT_EQ(rawstore_submit(st, t5), 0);
	rawstore_txn_free(t2);
	rawstore_txn_free(t5);
	EXPECT_TRUE(Read("c", "w2", 0, 70000) == d);
	EXPECT_EQ(Size("c", "t5"), 0u);
	ExpectClean();
}

/* Without submit_nonblock, an async submit waits for room. */
TEST_F(CommitTest, BoundedQueueBlocking)
{
	ASSERT_EQ(MkColl("c"), 0);
	oo.max_queued_txns = 2;
	Reopen();
	Gate g;
	HoldCommitThread(st, T(), g);
	std::atomic<int> done{ 0 };
	std::atomic<int> submitted{ 0 };
	std::thread sub([&] {
		for (int i = 0; i < 6; i++) {
			struct rawstore_txn *t = T();
			std::string n = "o" + std::to_string(i);
			rawstore_txn_touch(t, "c", n.data(), n.size());
			EXPECT_EQ(rawstore_submit_async(st, t, count_cb, &done), 0);
			submitted++;
		}
	});
	usleep(200000);
	EXPECT_EQ(submitted.load(), 2);
	Release(g);
	sub.join();
	while (done < 6)
		usleep(1000);
	EXPECT_EQ(Statfs().objects, 7u);
}

} // namespace

/* Device ranges of c/@name as the committed (or written) records say. */
static std::vector<std::pair<uint64_t, uint64_t>> Extents(struct rawstore *st, const char *name)
{
	std::vector<std::pair<uint64_t, uint64_t>> v;
	struct rs_onode o;
	memset(&o, 0, sizeof(o));
	EXPECT_EQ(onode_load(st, nullptr, "c", name, strlen(name), &o), 0) << name;
	for (uint32_t i = 0; i < o.n_ext; i++)
		v.emplace_back(o.ext[i].pofs, o.ext[i].len);
	onode_free(&o);
	return v;
}

static bool Overlap(const std::vector<std::pair<uint64_t, uint64_t>> &a,
		    const std::vector<std::pair<uint64_t, uint64_t>> &b)
{
	for (auto &x : a)
		for (auto &y : b)
			if (x.first < y.first + y.second && y.first < x.first + x.second)
				return true;
	return false;
}

/* Wait (up to 10 s) until @n batches were written since open. */
static bool WaitWritten(struct rawstore *st, uint64_t n)
{
	for (int i = 0; i < 10000 && rs_debug_batches_written(st) < n; i++)
		usleep(1000);
	return rs_debug_batches_written(st) >= n;
}

/*
 * Issue 24, item 9: a group with deferred writes waits for its WAL sync
 * before it writes them in place, and readers are not held up meanwhile
 * (before, the group held the write lock across the sync).  They read
 * the committed data already: from the queue until it is on the device.
 */
TEST_F(CommitTest, ReadersDoNotWaitForADeferredGroupsSync)
{
	/* a written, unsynced group: RocksDB's WAL (the device journal
	 * makes each group durable as it is written) */
	RemkfsJournal(RAWSTORE_JOURNAL_ROCKSDB);
	ASSERT_EQ(MkColl("c"), 0);
	std::string b = pattern(65536, 2), k = pattern(30000, 3);
	ASSERT_EQ(Write("c", "b", 0, b), 0);
	ASSERT_EQ(Write("c", "k", 0, k), 0);
	const std::string upd = pattern(3000, 4); /* small overwrite: deferred */
	uint64_t dw0 = 0;
	{
		struct rawstore_perf pf;
		pf.struct_size = sizeof(pf);
		ASSERT_EQ(rawstore_perf_get(st, &pf), 0);
		dw0 = pf.deferred_writes;
	}
	rs_debug_hold_sync(1);
	uint64_t w0 = rs_debug_batches_written(st);
	std::atomic<int> done{ 0 };
	struct rawstore_txn *t = T();
	rawstore_txn_write(t, "c", "b", 1, 5000, upd.data(), upd.size());
	ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &done), 0);
	bool written = WaitWritten(st, w0 + 1);
	/* the group now waits for its sync: a reader must get through */
	std::atomic<bool> read_done{ false };
	std::string got_b, got_k;
	std::thread r([&] {
		got_k = Read("c", "k", 0, 40000);
		got_b = Read("c", "b", 0, 70000);
		read_done = true;
	});
	for (int i = 0; i < 2000 && !read_done; i++)
		usleep(1000);
	bool fast = read_done;
	EXPECT_EQ(done.load(), 0) << "completed before its sync";
	rs_debug_hold_sync(0);
	r.join();
	ASSERT_TRUE(written);
	EXPECT_TRUE(fast) << "a reader waited for the WAL sync of a deferred group";
	std::string want = b;
	want.replace(5000, upd.size(), upd);
	EXPECT_TRUE(got_k == k);
	EXPECT_TRUE(got_b == want) << "the committed overwrite, read from the queue";
	for (int i = 0; i < 10000 && done.load() < 1; i++)
		usleep(1000);
	EXPECT_EQ(done.load(), 1);
	struct rawstore_perf pf;
	pf.struct_size = sizeof(pf);
	ASSERT_EQ(rawstore_perf_get(st, &pf), 0);
	EXPECT_EQ(pf.deferred_writes, dw0 + 1) << "the overwrite went the deferred way";
	EXPECT_TRUE(Read("c", "b", 0, 70000) == want);
	Reopen();
	EXPECT_TRUE(Read("c", "b", 0, 70000) == want);
	ExpectClean();
}

/*
 * The pipelined commit: while group N's batch is written but not yet
 * synced, its callbacks do not run and the units it frees are not
 * allocated by group N+1 (a crash before the sync would leave them owned
 * by the old object); once synced, they complete and the units are
 * reusable.
 */
TEST_F(CommitTest, UnsyncedGroupHoldsFreesAndCallbacks)
{
	/* a written, unsynced group: RocksDB's WAL (the device journal
	 * makes each group durable as it is written) */
	RemkfsJournal(RAWSTORE_JOURNAL_ROCKSDB);
	Pipelined();
	ASSERT_EQ(MkColl("c"), 0);
	const std::string a = pattern(65536, 1), b = pattern(65536, 2), c = pattern(65536, 3);
	ASSERT_EQ(Write("c", "a", 0, a), 0);
	/* a spacer: a's units become a hole of their own, the best fit */
	ASSERT_EQ(Write("c", "s", 0, pattern(65536, 4)), 0);
	auto ea = Extents(st, "a");
	ASSERT_FALSE(ea.empty());

	rs_debug_hold_sync(1);
	uint64_t w0 = rs_debug_batches_written(st);
	std::atomic<int> done{ 0 };
	struct rawstore_txn *t = T();
	rawstore_txn_remove(t, "c", "a", 1);
	ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &done), 0);
	ASSERT_TRUE(WaitWritten(st, w0 + 1));
	t = T();
	rawstore_txn_write(t, "c", "b", 1, 0, b.data(), b.size());
	ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &done), 0);
	bool written = WaitWritten(st, w0 + 2);
	usleep(50000);
	EXPECT_EQ(done.load(), 0) << "a callback ran before its group was synced";
	std::vector<std::pair<uint64_t, uint64_t>> eb;
	if (written) {
		eb = Extents(st, "b"); /* the written batch is visible to readers */
		EXPECT_FALSE(eb.empty());
		EXPECT_FALSE(Overlap(ea, eb)) << "a unit freed by an unsynced group was reused";
	}
	rs_debug_hold_sync(0);
	ASSERT_TRUE(written);
	for (int i = 0; i < 10000 && done.load() < 2; i++)
		usleep(1000);
	EXPECT_EQ(done.load(), 2);
	/* Synced: a's units are free for the next allocation (best fit). */
	ASSERT_EQ(Write("c", "c", 0, c), 0);
	EXPECT_TRUE(Overlap(ea, Extents(st, "c"))) << "freed units never became reusable";
	EXPECT_TRUE(Read("c", "b", 0, 70000) == b);
	EXPECT_TRUE(Read("c", "c", 0, 70000) == c);
	ExpectClean();
	Reopen();
	EXPECT_TRUE(Read("c", "b", 0, 70000) == b);
	EXPECT_TRUE(Read("c", "c", 0, 70000) == c);
	ExpectClean();
}

/* A job (here fsck) waits for every group in flight: it sees them synced. */
TEST_F(CommitTest, JobWaitsForUnsyncedGroups)
{
	/* a written, unsynced group: RocksDB's WAL (the device journal
	 * makes each group durable as it is written) */
	RemkfsJournal(RAWSTORE_JOURNAL_ROCKSDB);
	ASSERT_EQ(MkColl("c"), 0);
	rs_debug_hold_sync(1);
	uint64_t w0 = rs_debug_batches_written(st);
	std::atomic<int> done{ 0 };
	struct rawstore_txn *t = T();
	std::string d = pattern(20000, 5);
	rawstore_txn_write(t, "c", "x", 1, 0, d.data(), d.size());
	ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &done), 0);
	ASSERT_TRUE(WaitWritten(st, w0 + 1));
	std::atomic<bool> fsck_done{ false };
	std::thread th([&] {
		struct rawstore_fsck_opts o;
		struct rawstore_fsck_result r;
		rawstore_fsck_opts_init(&o);
		r.struct_size = sizeof(r);
		EXPECT_EQ(rawstore_fsck(st, &o, &r), 0);
		EXPECT_EQ(r.errors, 0u);
		fsck_done = true;
	});
	usleep(100000);
	EXPECT_FALSE(fsck_done.load()) << "a job ran while a group was not synced";
	EXPECT_EQ(done.load(), 0);
	rs_debug_hold_sync(0);
	th.join();
	EXPECT_EQ(done.load(), 1);
	EXPECT_TRUE(Read("c", "x", 0, 30000) == d);
}

/*
 * Space freed by a group still being synced is not lost to the next one:
 * an allocation that finds no space waits for the groups in flight to
 * release their frees and tries again (instead of -ENOSPC).
 */
TEST_F(CommitTest, AllocationWaitsForUnsyncedFrees)
{
	/* a written, unsynced group: RocksDB's WAL (the device journal
	 * makes each group durable as it is written) */
	RemkfsJournal(RAWSTORE_JOURNAL_ROCKSDB);
	Pipelined();
	ASSERT_EQ(MkColl("c"), 0);
	uint64_t size = Statfs().free * 3 / 4 / 65536 * 65536;
	const std::string a = pattern(size, 1), b = pattern(size, 2);
	ASSERT_EQ(Write("c", "a", 0, a), 0);
	ASSERT_LT(Statfs().free, size); /* b fits only where a was */
	rs_debug_hold_sync(1);
	uint64_t w0 = rs_debug_batches_written(st);
	std::atomic<int> done{ 0 }, result{ 1 };
	struct rawstore_txn *t = T();
	rawstore_txn_remove(t, "c", "a", 1);
	ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &done), 0);
	ASSERT_TRUE(WaitWritten(st, w0 + 1));
	/* a's group is written, not synced: b's allocation has to wait */
	t = T();
	rawstore_txn_write(t, "c", "b", 1, 0, b.data(), b.size());
	ASSERT_EQ(rawstore_submit_async(st, t,
					[](struct rawstore_txn *tt, int r, void *arg) {
						*static_cast<std::atomic<int> *>(arg) = r;
						rawstore_txn_free(tt);
					},
					&result),
		  0);
	usleep(100000);
	EXPECT_EQ(done.load(), 0);
	EXPECT_EQ(result.load(), 1) << "b completed while a's frees were held";
	rs_debug_hold_sync(0);
	for (int i = 0; i < 10000 && (done.load() < 1 || result.load() == 1); i++)
		usleep(1000);
	EXPECT_EQ(done.load(), 1);
	EXPECT_EQ(result.load(), 0) << "no space although a's group freed it";
	EXPECT_TRUE(Read("c", "b", 0, size) == b);
	ExpectClean();
}

/*
 * A power cut that loses the WAL tail written since the last sync: the
 * groups in flight vanish, and what they freed still belongs to the old
 * objects, unharmed, because no later group wrote there.  A child writes
 * two groups (remove a, write b where a was) with the sync held and dies;
 * the metadata directory is put back as it was at the last sync.  (A
 * crash test by name: forks, so not run under TSan.)
 */
TEST_F(CommitTest, CrashLosingUnsyncedGroupsLeavesFreedDataIntact)
{
	/* RocksDB's WAL: the device journal has no written, unsynced group */
	RemkfsJournal(RAWSTORE_JOURNAL_ROCKSDB);
	Pipelined();
	ASSERT_EQ(MkColl("c"), 0);
	const std::string a = pattern(65536, 1), b = pattern(65536, 2);
	ASSERT_EQ(Write("c", "a", 0, a), 0);
	ASSERT_EQ(Write("c", "s", 0, pattern(65536, 4)), 0);
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	const std::string snap = tmp.path + "/meta.synced";
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rawstore *s;
		if (rawstore_open(dev.c_str(), meta.c_str(), &oo, &s))
			_exit(1);
		rs_debug_hold_sync(1);
		/* All that is durable now: the state a power cut goes back to. */
		std::string cmd = "cp -a '" + meta + "' '" + snap + "'";
		if (system(cmd.c_str()))
			_exit(2);
		uint64_t w0 = rs_debug_batches_written(s);
		struct rawstore_txn *t;
		rawstore_txn_new(&t);
		rawstore_txn_remove(t, "c", "a", 1);
		if (rawstore_submit_async(s, t, nullptr, nullptr) || !WaitWritten(s, w0 + 1))
			_exit(3);
		rawstore_txn_new(&t);
		rawstore_txn_write(t, "c", "b", 1, 0, b.data(), b.size());
		if (rawstore_submit_async(s, t, nullptr, nullptr) || !WaitWritten(s, w0 + 2))
			_exit(4);
		_exit(RS_CRASH_EXIT); /* b's data is on the device, its record not synced */
	}
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), RS_CRASH_EXIT);
	std::string cmd = "rm -rf '" + meta + "' && mv '" + snap + "' '" + meta + "'";
	ASSERT_EQ(system(cmd.c_str()), 0);
	int r = Open();
	for (int i = 0; r == -EBUSY && i < 500; i++) {
		usleep(10000);
		r = Open();
	}
	ASSERT_EQ(r, 0) << rawstore_errmsg();
	struct rawstore_stat os;
	os.struct_size = sizeof(os);
	EXPECT_EQ(rawstore_stat(st, "c", "b", 1, &os), -ENOENT);
	EXPECT_TRUE(Read("c", "a", 0, 70000) == a) << "data of a freed, unsynced unit changed";
	ExpectClean();
}

/*
 * A failed WAL sync: the groups not yet durable fail (their records may or
 * may not be on disk), the store stops; after a reopen each is there whole
 * or not at all.
 */
TEST_F(CommitTest, FailedSyncFailsUnsyncedGroupsAndStops)
{
	/* a written, unsynced group: RocksDB's WAL (the device journal
	 * makes each group durable as it is written) */
	RemkfsJournal(RAWSTORE_JOURNAL_ROCKSDB);
	ASSERT_EQ(MkColl("c"), 0);
	const std::string d = pattern(30000, 7);
	ASSERT_EQ(Write("c", "keep", 0, d), 0);
	rs_debug_set_fail_point(RS_FAIL_SYNC, 1);
	struct rawstore_txn *t = T();
	rawstore_txn_write(t, "c", "x", 1, 0, d.data(), d.size());
	EXPECT_EQ(rawstore_submit(st, t), -EIO);
	EXPECT_NE(std::string(rawstore_errmsg()).find("WAL sync"), std::string::npos)
		<< rawstore_errmsg();
	rawstore_txn_free(t);
	/* stopped: later transactions fail */
	EXPECT_EQ(Write("c", "y", 0, d), -EIO);
	EXPECT_EQ(rawstore_close(st), -EIO);
	st = nullptr;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	struct rawstore_stat os;
	os.struct_size = sizeof(os);
	if (rawstore_stat(st, "c", "x", 1, &os) == 0) {
		EXPECT_TRUE(Read("c", "x", 0, 40000) == d);
	}
	EXPECT_EQ(rawstore_stat(st, "c", "y", 1, &os), -ENOENT);
	EXPECT_TRUE(Read("c", "keep", 0, 40000) == d);
	ExpectClean();
}

/* Wait until the commit thread looks for joiners (past @j0). */
static bool WaitJoinWait(uint64_t j0)
{
	for (int i = 0; i < 10000 && rs_debug_join_waits() <= j0; i++)
		usleep(1000);
	return rs_debug_join_waits() > j0;
}

/*
 * A transaction that arrives while a group's data writes are in flight
 * joins that group: its writes go to the device at once, and both commit
 * with one flush and one sync (before, it waited for the group's commit
 * and formed a group of its own).
 */
TEST_F(CommitTest, ArrivalJoinsGroupWithWritesInFlight)
{
	ASSERT_EQ(MkColl("c"), 0);
	const std::string a = pattern(65536, 1), b = pattern(65536, 2);
	struct rawstore_perf p0 = Perf(st);
	uint64_t j0 = rs_debug_join_waits();
	std::atomic<int> done{ 0 };

	rs_debug_hold_writes(1);
	struct rawstore_txn *t = T();
	rawstore_txn_write(t, "c", "a", 1, 0, a.data(), a.size());
	ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &done), 0);
	bool waiting = WaitJoinWait(j0);
	t = T();
	rawstore_txn_write(t, "c", "b", 1, 0, b.data(), b.size());
	ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &done), 0);
	/* b is taken within a join wait or two */
	uint64_t j1 = rs_debug_join_waits();
	bool again = WaitJoinWait(j1 + 2);
	EXPECT_EQ(done.load(), 0) << "a completed while its writes were held in flight";
	rs_debug_hold_writes(0);
	ASSERT_TRUE(waiting) << "the commit thread never waited for joiners";
	ASSERT_TRUE(again);
	for (int i = 0; i < 10000 && done.load() < 2; i++)
		usleep(1000);
	ASSERT_EQ(done.load(), 2);
	struct rawstore_perf p1 = Perf(st);
	EXPECT_EQ(p1.commit_groups - p0.commit_groups, 1u);
	EXPECT_EQ(p1.dev_flushes - p0.dev_flushes, 1u);
	EXPECT_EQ(p1.txns_committed - p0.txns_committed, 2u);
	EXPECT_TRUE(Read("c", "a", 0, 70000) == a);
	EXPECT_TRUE(Read("c", "b", 0, 70000) == b);
	Reopen();
	EXPECT_TRUE(Read("c", "a", 0, 70000) == a);
	EXPECT_TRUE(Read("c", "b", 0, 70000) == b);
	ExpectClean();
}

/*
 * While a group's writes are in flight, an earlier group that becomes
 * durable completes (its callbacks run, so its submitters can send more)
 * instead of waiting for the later group's commit.
 */
TEST_F(CommitTest, DurableGroupCompletesWhileNextGroupWrites)
{
	ASSERT_EQ(MkColl("c"), 0);
	const std::string a = pattern(65536, 3), b = pattern(65536, 4);
	std::atomic<int> done_a{ 0 }, done_b{ 0 };

	rs_debug_hold_sync(1);
	uint64_t w0 = rs_debug_batches_written(st);
	struct rawstore_txn *t = T();
	rawstore_txn_write(t, "c", "a", 1, 0, a.data(), a.size());
	ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &done_a), 0);
	bool written = WaitWritten(st, w0 + 1);

	uint64_t j0 = rs_debug_join_waits();
	rs_debug_hold_writes(1);
	t = T();
	rawstore_txn_write(t, "c", "b", 1, 0, b.data(), b.size());
	ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &done_b), 0);
	bool waiting = WaitJoinWait(j0);
	rs_debug_hold_sync(0);	/* a becomes durable while b's writes are held */
	for (int i = 0; i < 5000 && done_a.load() < 1; i++)
		usleep(1000);
	int a_done = done_a.load(), b_done = done_b.load();
	rs_debug_hold_writes(0);
	ASSERT_TRUE(written);
	ASSERT_TRUE(waiting);
	EXPECT_EQ(a_done, 1) << "a durable group waited for the next group's writes";
	EXPECT_EQ(b_done, 0);
	for (int i = 0; i < 10000 && done_b.load() < 1; i++)
		usleep(1000);
	EXPECT_EQ(done_b.load(), 1);
	EXPECT_TRUE(Read("c", "a", 0, 70000) == a);
	EXPECT_TRUE(Read("c", "b", 0, 70000) == b);
	ExpectClean();
}

/*
 * A group of creates carved from one free extent changes the free-list
 * record with every allocation; its batch carries the last change only
 * (one record for the group, not a delete and a put per transaction), and
 * the records it leaves are the free list in memory (fsck, reopen).
 */
TEST_F(CommitTest, GroupWritesEachFreeRecordOnce)
{
	ASSERT_EQ(MkColl("c"), 0);
	const unsigned int n = 16;
	std::vector<std::string> data;
	std::atomic<int> done{ 0 };
	struct rawstore_perf p0 = Perf(st);
	uint64_t j0 = rs_debug_join_waits();

	for (unsigned int i = 0; i < n; i++)
		data.push_back(pattern(65536, (int)i + 10));
	rs_debug_hold_writes(1);
	for (unsigned int i = 0; i < n; i++) {
		struct rawstore_txn *t = T();
		const std::string name = "o" + std::to_string(i);

		rawstore_txn_write(t, "c", name.data(), name.size(), 0, data[i].data(),
				   data[i].size());
		ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &done), 0);
		if (!i) {
			ASSERT_TRUE(WaitJoinWait(j0));
		}
	}
	/* the others join the first one's group within a join wait or two */
	bool joined = WaitJoinWait(rs_debug_join_waits() + 2);
	rs_debug_hold_writes(0);
	for (int i = 0; i < 10000 && done.load() < (int)n; i++)
		usleep(1000);
	ASSERT_TRUE(joined);
	ASSERT_EQ(done.load(), (int)n);
	struct rawstore_perf p1 = Perf(st);
	ASSERT_EQ(p1.commit_groups - p0.commit_groups, 1u);
	ASSERT_EQ(p1.txns_committed - p0.txns_committed, (uint64_t)n);
	/* n onodes and a few records per group (the free-list record, next
	 * nid, counts, readied and provisioned space); a delete and a put
	 * per allocation would add up to 2n */
	EXPECT_LE(rs_debug_last_batch_entries(), n + 8);
	EXPECT_GE(rs_debug_last_batch_entries(), n + 1);
	for (unsigned int i = 0; i < n; i++)
		EXPECT_TRUE(Read("c", "o" + std::to_string(i), 0, 70000) == data[i]);
	ExpectClean();
	Reopen();
	for (unsigned int i = 0; i < n; i++)
		EXPECT_TRUE(Read("c", "o" + std::to_string(i), 0, 70000) == data[i]);
	ExpectClean();
}

struct Result {
	std::atomic<int> done{ 0 };
	std::atomic<int> result{ 1 };
};

static void result_cb(struct rawstore_txn *t, int result, void *arg)
{
	Result *r = static_cast<Result *>(arg);

	r->result = result;
	r->done++;
	rawstore_txn_free(t);
}

/*
 * Within one group, a collection's existence is checked once and then
 * remembered: not after the collection is removed, and not after the
 * transaction that created it fails and is rolled back.
 */
TEST_F(CommitTest, CollectionChecksFollowTheGroup)
{
	ASSERT_EQ(MkColl("c"), 0);
	const std::string a = pattern(65536, 5);
	Result r[6];
	uint64_t j0 = rs_debug_join_waits();
	struct rawstore_perf p0 = Perf(st);

	rs_debug_hold_writes(1);
	struct rawstore_txn *t = T();	/* 0: c exists */
	rawstore_txn_write(t, "c", "x", 1, 0, a.data(), a.size());
	ASSERT_EQ(rawstore_submit_async(st, t, result_cb, &r[0]), 0);
	bool waiting = WaitJoinWait(j0);
	t = T();			/* 1: empty c and remove it */
	rawstore_txn_remove(t, "c", "x", 1);
	rawstore_txn_coll_remove(t, "c");
	ASSERT_EQ(rawstore_submit_async(st, t, result_cb, &r[1]), 0);
	t = T();			/* 2: c is gone */
	rawstore_txn_touch(t, "c", "y", 1);
	ASSERT_EQ(rawstore_submit_async(st, t, result_cb, &r[2]), 0);
	t = T();			/* 3: creates d, writes to it, fails */
	rawstore_txn_coll_create(t, "d");
	rawstore_txn_touch(t, "d", "z", 1);
	rawstore_txn_remove(t, "d", "nothing", 7);
	ASSERT_EQ(rawstore_submit_async(st, t, result_cb, &r[3]), 0);
	t = T();			/* 4: so d does not exist */
	rawstore_txn_touch(t, "d", "w", 1);
	ASSERT_EQ(rawstore_submit_async(st, t, result_cb, &r[4]), 0);
	t = T();			/* 5: c again, as a new collection */
	rawstore_txn_coll_create(t, "c");
	rawstore_txn_touch(t, "c", "v", 1);
	ASSERT_EQ(rawstore_submit_async(st, t, result_cb, &r[5]), 0);
	bool joined = WaitJoinWait(rs_debug_join_waits() + 2);
	rs_debug_hold_writes(0);
	for (int i = 0; i < 10000; i++) {
		int n = 0;

		for (auto &x : r)
			n += x.done.load();
		if (n == 6)
			break;
		usleep(1000);
	}
	ASSERT_TRUE(waiting);
	ASSERT_TRUE(joined);
	for (auto &x : r)
		ASSERT_EQ(x.done.load(), 1);
	EXPECT_EQ(Perf(st).commit_groups - p0.commit_groups, 1u);
	EXPECT_EQ(r[0].result.load(), 0);
	EXPECT_EQ(r[1].result.load(), 0);
	EXPECT_EQ(r[2].result.load(), -ENOENT);
	EXPECT_EQ(r[3].result.load(), -ENOENT);
	EXPECT_EQ(r[4].result.load(), -ENOENT);
	EXPECT_EQ(r[5].result.load(), 0);
	Reopen();
	struct rawstore_stat sb = {};
	sb.struct_size = sizeof(sb);
	EXPECT_EQ(rawstore_stat(st, "c", "v", 1, &sb), 0);
	EXPECT_EQ(rawstore_stat(st, "c", "x", 1, &sb), -ENOENT);
	EXPECT_EQ(rawstore_stat(st, "d", "z", 1, &sb), -ENOENT);
	ExpectClean();
}

/*
 * No memory to stage a free-list change of a group: the group does not
 * commit (its records would be incomplete), the store stops and says why,
 * and a reopen finds the store as before the group.
 */
TEST_F(CommitTest, StageOutOfMemoryCommitsNothing)
{
	ASSERT_EQ(MkColl("c"), 0);
	const std::string a = pattern(65536, 31), b = pattern(65536, 32);
	/* the first group that allocates grows the stage: it fails */
	rs_debug_set_fail_point(RS_FAIL_STAGE, 1);
	EXPECT_EQ(Write("c", "a", 0, a), -ENOMEM);
	rs_debug_set_fail_point(RS_FAIL_NONE, 0);
	EXPECT_NE(std::string(rawstore_errmsg()).find("stopped"), std::string::npos)
		<< rawstore_errmsg();
	EXPECT_EQ(Write("c", "b", 0, b), -ENOMEM);
	EXPECT_LT(rawstore_close(st), 0);
	st = nullptr;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	struct rawstore_stat s = {};
	s.struct_size = sizeof(s);
	EXPECT_EQ(rawstore_stat(st, "c", "a", 1, &s), -ENOENT);
	ExpectClean();
	ASSERT_EQ(Write("c", "b", 0, b), 0);
	EXPECT_TRUE(Read("c", "b", 0, 70000) == b);
	ExpectClean();
}

namespace {

/* Where a callback ran, and what submitting from it returned. */
struct Where {
	std::mutex m;
	std::condition_variable cv;
	std::thread::id id;
	int result = 1, sync_ret = 1, async_ret = 1;
	bool done = false;
	struct rawstore *st = nullptr;
	struct rawstore_txn *sync_t = nullptr, *async_t = nullptr;
	std::atomic<int> *chained = nullptr;
};

void where_cb(struct rawstore_txn *, int result, void *arg)
{
	auto w = static_cast<Where *>(arg);
	/* On the thread holding the commit role: a synchronous submit would
	 * wait for itself, an asynchronous one queues. */
	int s = rawstore_submit(w->st, w->sync_t);
	int a = rawstore_submit_async(w->st, w->async_t, count_cb, w->chained);
	std::lock_guard<std::mutex> l(w->m);
	w->id = std::this_thread::get_id();
	w->result = result;
	w->sync_ret = s;
	w->async_ret = a;
	w->done = true;
	w->cv.notify_all();
}

} // namespace

/*
 * A synchronous submitter that finds the commit path idle leads its own
 * group on its own thread: a transaction that arrives while the group's
 * writes are in flight joins it, and its callback runs on the leader's
 * thread; from there a synchronous submit is refused (-EDEADLK) and an
 * asynchronous one is queued, and is committed after the leader has
 * returned (the commit thread takes what the leader leaves).
 */
TEST_F(CommitTest, IdleSyncSubmitterLeadsItsGroup)
{
	ASSERT_EQ(MkColl("c"), 0);
	const std::string a = pattern(65536, 5), b = pattern(65536, 6), c = pattern(8192, 7);
	struct rawstore_perf p0 = Perf(st);
	std::atomic<int> chained{ 0 };
	Where w;
	w.st = st;
	w.chained = &chained;
	w.sync_t = T();
	rawstore_txn_write(w.sync_t, "c", "never", 5, 0, c.data(), c.size());
	w.async_t = T();
	rawstore_txn_write(w.async_t, "c", "chained", 7, 0, c.data(), c.size());
	struct rawstore_txn *ta = T(), *tb = T();
	rawstore_txn_write(ta, "c", "a", 1, 0, a.data(), a.size());
	rawstore_txn_write(tb, "c", "b", 1, 0, b.data(), b.size());

	uint64_t j0 = rs_debug_join_waits();
	std::thread::id leader_id;
	std::atomic<int> ra{ 1 };
	rs_debug_hold_writes(1);
	std::thread leader([&] {
		leader_id = std::this_thread::get_id();
		ra = rawstore_submit(st, ta);
	});
	bool waiting = WaitJoinWait(j0);
	int rb = rawstore_submit_async(st, tb, where_cb, &w);
	bool again = WaitJoinWait(rs_debug_join_waits() + 2);
	int ra_held = ra.load();
	rs_debug_hold_writes(0);
	leader.join();
	ASSERT_TRUE(waiting) << "the submitter never waited for joiners";
	ASSERT_TRUE(again);
	ASSERT_EQ(rb, 0);
	EXPECT_EQ(ra_held, 1) << "a completed while its writes were held in flight";
	EXPECT_EQ(ra.load(), 0);
	{
		std::unique_lock<std::mutex> l(w.m);
		ASSERT_TRUE(w.cv.wait_for(l, std::chrono::seconds(20), [&w] { return w.done; }));
	}
	EXPECT_EQ(w.result, 0);
	EXPECT_EQ(w.id, leader_id) << "the joined transaction completed on another thread";
	EXPECT_EQ(w.sync_ret, -EDEADLK);
	EXPECT_EQ(w.async_ret, 0);
	for (int i = 0; i < 10000 && chained.load() < 1; i++)
		usleep(1000);
	EXPECT_EQ(chained.load(), 1) << "the transaction queued by the callback never committed";
	struct rawstore_perf p1 = Perf(st);
	EXPECT_EQ(p1.txns_committed - p0.txns_committed, 3u);
	EXPECT_EQ(p1.commit_groups - p0.commit_groups, 2u);
	rawstore_txn_free(ta);
	rawstore_txn_free(tb);
	rawstore_txn_free(w.sync_t);
	EXPECT_TRUE(Read("c", "a", 0, 70000) == a);
	EXPECT_TRUE(Read("c", "b", 0, 70000) == b);
	EXPECT_TRUE(Read("c", "chained", 0, 9000) == c);
	struct rawstore_stat os;
	os.struct_size = sizeof(os);
	EXPECT_EQ(rawstore_stat(st, "c", "never", 5, &os), -ENOENT);
	Reopen();
	EXPECT_TRUE(Read("c", "a", 0, 70000) == a);
	EXPECT_TRUE(Read("c", "b", 0, 70000) == b);
	EXPECT_TRUE(Read("c", "chained", 0, 9000) == c);
	ExpectClean();
}

/*
 * Synchronous submitters that arrive while a leader holds the commit
 * role wait, and are woken: with groups of two, the leader commits its
 * own and one more, and the others commit in later groups (the commit
 * thread, or a new leader, takes them), each returning its own result.
 */
TEST_F(CommitTest, SubmittersBehindALeaderAreWoken)
{
	Pipelined();
	ASSERT_EQ(MkColl("c"), 0);
	const int n = 6;
	struct rawstore_perf p0 = Perf(st);
	uint64_t j0 = rs_debug_join_waits();
	std::vector<std::string> data;
	for (int i = 0; i < n; i++)
		data.push_back(pattern(16384, 20 + (uint32_t)i));
	std::vector<int> ret(n, 1);
	std::vector<std::thread> th;
	auto one = [&](int i) {
		struct rawstore_txn *t = nullptr;
		std::string name = "o" + std::to_string(i);
		if (rawstore_txn_new(&t))
			return;
		/* the last one fails alone (its collection does not exist) */
		rawstore_txn_write(t, i == n - 1 ? "nope" : "c", name.data(), name.size(), 0,
				   data[(size_t)i].data(), data[(size_t)i].size());
		ret[(size_t)i] = rawstore_submit(st, t);
		rawstore_txn_free(t);
	};
	rs_debug_hold_writes(1);
	th.emplace_back(one, 0);
	bool waiting = WaitJoinWait(j0);
	for (int i = 1; i < n; i++)
		th.emplace_back(one, i);
	usleep(20000);
	rs_debug_hold_writes(0);
	for (auto &t : th)
		t.join();
	ASSERT_TRUE(waiting);
	for (int i = 0; i < n - 1; i++) {
		EXPECT_EQ(ret[(size_t)i], 0) << i;
		std::string name = "o" + std::to_string(i);
		EXPECT_TRUE(Read("c", name, 0, 16384) == data[(size_t)i]) << i;
	}
	EXPECT_EQ(ret[n - 1], -ENOENT);
	struct rawstore_perf p1 = Perf(st);
	EXPECT_EQ(p1.txns_committed - p0.txns_committed, (uint64_t)n - 1);
	EXPECT_GE(p1.commit_groups - p0.commit_groups, 3u);
	ExpectClean();
}

/*
 * The next object id is recorded ahead ("N", 1024 ids at a time): a group
 * that creates an object below the recorded id writes no "N" (one record
 * less per small create), and after a reopen, or a crash, new objects
 * still get ids no object had.
 */
TEST_F(CommitTest, ObjectIdsAreRecordedAhead)
{
	ASSERT_EQ(MkColl("c"), 0);
	const std::string d = pattern(4096, 3);
	auto nid = [&](const std::string &n) {
		struct rawstore_stat s;
		s.struct_size = sizeof(s);
		EXPECT_EQ(rawstore_stat(st, "c", n.data(), n.size(), &s), 0);
		return s.nid;
	};
	ASSERT_EQ(Write("c", "a", 0, d), 0);
	uint64_t with_n = rs_debug_last_batch_entries();
	ASSERT_EQ(Write("c", "b", 0, d), 0);
	uint64_t without_n = rs_debug_last_batch_entries();
	/* the same records but "N" */
	EXPECT_EQ(without_n + 1, with_n);
	std::set<uint64_t> ids = { nid("a"), nid("b") };
	Reopen();
	ASSERT_EQ(Write("c", "c", 0, d), 0);
	EXPECT_EQ(rs_debug_last_batch_entries(), with_n) << "the first create after an open "
							     "records the next id";
	ASSERT_EQ(Write("c", "d", 0, d), 0);
	for (const char *n : { "c", "d" }) {
		EXPECT_GT(nid(n), *ids.rbegin()) << n;
		EXPECT_TRUE(ids.insert(nid(n)).second) << n;
	}
	EXPECT_TRUE(Read("c", "a", 0, 4096) == d);
	EXPECT_TRUE(Read("c", "d", 0, 4096) == d);
	ExpectClean();
}

/*
 * A deferred overwrite's in-place write is not on any transaction's path:
 * the commit role starts it and goes on.  It is waited for before the
 * next group's in-place writes (so the last write to a unit wins), before
 * the units it targets can be handed out again (a remove's frees), and at
 * close.  Meanwhile reads lay it over the device's data.
 */
TEST_F(CommitTest, InPlaceWritesLandBeforeTheirUnitsAreReused)
{
	ASSERT_EQ(MkColl("c"), 0);
	for (auto engine : { RAWSTORE_ENGINE_IO_URING, RAWSTORE_ENGINE_LIBAIO }) {
		const std::string p = engine == RAWSTORE_ENGINE_LIBAIO ? "libaio-" : "io_uring-";
		SCOPED_TRACE(p);
		oo.engine = engine;
		Reopen();
		struct rawstore_info info;
		info.struct_size = sizeof(info);
		ASSERT_EQ(rawstore_get_info(st, &info), 0);
		EXPECT_EQ(p, std::string(info.io_engine) + "-");
		std::string a = pattern(65536, 1);
		ASSERT_EQ(Write("c", p + "a", 0, a), 0);
		EXPECT_EQ(rs_debug_deferred_in_flight(st), 0u);
		const std::string u1 = pattern(4096, 2), u2 = pattern(4096, 3);
		ASSERT_EQ(Write("c", p + "a", 8192, u1), 0);
		a.replace(8192, u1.size(), u1);
		EXPECT_EQ(rs_debug_deferred_in_flight(st), 1u)
			<< "the caller waited for the in-place write";
		EXPECT_TRUE(Read("c", p + "a", 0, 65536) == a);
		/* the same units again: the first lands before the second starts */
		ASSERT_EQ(Write("c", p + "a", 8192, u2), 0);
		a.replace(8192, u2.size(), u2);
		EXPECT_EQ(rs_debug_deferred_in_flight(st), 1u);
		EXPECT_TRUE(Read("c", p + "a", 0, 65536) == a);
		/* a transaction without deferred data leaves it in flight */
		ASSERT_EQ(Write("c", p + "b", 0, pattern(8192, 4)), 0);
		EXPECT_EQ(rs_debug_deferred_in_flight(st), 1u);
		/* a job (fsck, a space round) finds every write landed */
		rs_debug_commit_settle(st);
		EXPECT_EQ(rs_debug_deferred_in_flight(st), 0u);
		/* a remove frees the units of an in-place write in flight: it
		 * lands before they can be allocated again */
		ASSERT_EQ(Write("c", p + "a", 0, u1), 0);
		EXPECT_EQ(rs_debug_deferred_in_flight(st), 1u);
		struct rawstore_txn *t = T();
		rawstore_txn_remove(t, "c", (p + "a").c_str(), p.size() + 1);
		ASSERT_EQ(Submit(t), 0);
		EXPECT_EQ(rs_debug_deferred_in_flight(st), 0u)
			<< "freed units of a write in flight";
		const std::string c = pattern(65536, 5);
		ASSERT_EQ(Write("c", p + "c", 0, c), 0);
		EXPECT_TRUE(Read("c", p + "c", 0, 65536) == c);
		/* and at close; the next open replays nothing it should not */
		ASSERT_EQ(Write("c", p + "c", 4096, u2), 0);
		std::string cw = c;
		cw.replace(4096, u2.size(), u2);
		EXPECT_EQ(rs_debug_deferred_in_flight(st), 1u);
		Reopen();
		EXPECT_TRUE(Read("c", p + "c", 0, 65536) == cw);
		EXPECT_TRUE(Read("c", p + "b", 0, 8192) == pattern(8192, 4));
		ExpectClean();
	}
}
