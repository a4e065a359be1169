// Checks crash consistency: a forked child dies (or loses its unflushed
// writes) at each step of the write path; afterwards no acknowledged
// transaction is lost, the interrupted one is all-or-nothing, and fsck
// finds no leak.
#include <sys/wait.h>

#include <set>

#include "helpers.h"

extern "C" {
#include "debug.h"
}

class CrashTest : public StoreTest, public ::testing::WithParamInterface<int> {
protected:
	/* The dead child's io_uring may still hold the device file (and its
	 * lock) for a moment while its in-flight writes finish. */
	int OpenAfterCrash()
	{
		int r = Open();
		for (int i = 0; r == -EBUSY && i < 500; i++) {
			usleep(10000);
			r = Open();
		}
		return r;
	}
	void CloseStore()
	{
		ASSERT_EQ(rawstore_close(st), 0);
		st = nullptr;
	}
	static void Report(int fd, int i)
	{
		if (write(fd, &i, sizeof(i)) != sizeof(i))
			_exit(3);
	}
	std::vector<int> Acked(int fd)
	{
		std::vector<int> v;
		int i;
		while (read(fd, &i, sizeof(i)) == sizeof(i))
			v.push_back(i);
		return v;
	}
	/* The child @pid died at its crash point. */
	void ReapCrashed(pid_t pid)
	{
		int status;
		ASSERT_EQ(waitpid(pid, &status, 0), pid);
		ASSERT_TRUE(WIFEXITED(status));
		EXPECT_EQ(WEXITSTATUS(status), RS_CRASH_EXIT);
	}
	int Child(int fd, int point)
	{
		struct rawstore *s;
		if (rawstore_open(dev.c_str(), meta.c_str(), nullptr, &s))
			return 1;
		for (int i = 0; i < 4; i++) {
			struct rawstore_txn *t;
			rawstore_txn_new(&t);
			std::string n = "acked" + std::to_string(i), d = pattern(30000 + i, i);
			rawstore_txn_write(t, "c", n.data(), n.size(), 0, d.data(), d.size());
			if (rawstore_submit(s, t))
				return 2;
			rawstore_txn_free(t);
			Report(fd, i);
		}
		rs_debug_set_crash_point(point, 1);
		struct rawstore_txn *t;
		rawstore_txn_new(&t);
		std::string d = pattern(200000, 77), o = pattern(5000, 78);
		rawstore_txn_write(t, "c", "new", 3, 0, d.data(), d.size());
		rawstore_txn_write(t, "c", "old", 3, 1000, o.data(), o.size());
		rawstore_txn_remove(t, "c", "gone", 4);
		rawstore_txn_setattr(t, "c", "keep", 4, "a", "1", 1);
		int r = rawstore_submit(s, t);
		Report(fd, r ? -100 : 100);
		rawstore_close(s);
		return 0;
	}
};

TEST_P(CrashTest, NoAckedLossNoLeak)
{
	int point = GetParam();
	ASSERT_EQ(MkColl("c"), 0);
	std::string keep = pattern(100000, 1), old = pattern(65536, 2);
	ASSERT_EQ(Write("c", "keep", 0, keep), 0);
	ASSERT_EQ(Write("c", "old", 0, old), 0);
	ASSERT_EQ(Write("c", "gone", 0, pattern(8192, 3)), 0);
	CloseStore();
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(p[0]);
		_exit(Child(p[1], point));
	}
	close(p[1]);
	std::vector<int> acked = Acked(p[0]);
	close(p[0]);
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(WEXITSTATUS(status), RS_CRASH_EXIT) << "crash point " << point << " not hit";
	ASSERT_EQ(acked.size(), 4u);
	ASSERT_EQ(OpenAfterCrash(), 0) << rawstore_errmsg();
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(Read("c", "acked" + std::to_string(i), 0, 40000), pattern(30000 + i, i));
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	bool applied = rawstore_stat(st, "c", "new", 3, &s) == 0;
	/* Before the sync the batch is in the WAL file already: a process
	 * crash keeps it (a power cut may not; either is consistent). */
	EXPECT_EQ(applied, point == RS_CRASH_AFTER_COMMIT || point == RS_CRASH_BEFORE_SYNC);
	EXPECT_EQ(Read("c", "keep", 0, 200000), keep);
	std::string o = old;
	char buf[4];
	if (applied) {
		o.replace(1000, 5000, pattern(5000, 78));
		EXPECT_EQ(Read("c", "new", 0, 300000), pattern(200000, 77));
		EXPECT_EQ(rawstore_stat(st, "c", "gone", 4, &s), -ENOENT);
		EXPECT_EQ(rawstore_getattr(st, "c", "keep", 4, "a", buf, 4), 1);
	} else {
		EXPECT_EQ(Read("c", "gone", 0, 10000), pattern(8192, 3));
		EXPECT_EQ(rawstore_getattr(st, "c", "keep", 4, "a", buf, 4), -ENODATA);
	}
	EXPECT_EQ(Read("c", "old", 0, 100000), o);
	EXPECT_EQ(Statfs().objects, applied ? 7u : 7u);
	ExpectClean();
	/* the store keeps working after recovery */
	ASSERT_EQ(Write("c", "post", 0, pattern(50000, 9)), 0);
	EXPECT_EQ(Read("c", "post", 0, 60000), pattern(50000, 9));
	ExpectClean();
}

/* Instance names: the crash point, e.g. WritePath/CrashTest.NoAckedLossNoLeak/before_flush. */
enum { DNEW = 0x100 };	/* param flag: with deferred_new_max = 64 KiB */

static std::string crash_point_name(const ::testing::TestParamInfo<int> &info)
{
	if (info.param & DNEW)
		return crash_point_name(::testing::TestParamInfo<int>(info.param & ~DNEW,
								      info.index)) + "_deferred_new";
	switch (info.param) {
	case RS_CRASH_MID_DATA: return "mid_data";
	case RS_CRASH_BEFORE_FLUSH: return "before_flush";
	case RS_CRASH_DROP_UNFLUSHED: return "drop_unflushed";
	case RS_CRASH_BEFORE_COMMIT: return "before_commit";
	case RS_CRASH_AFTER_COMMIT: return "after_commit";
	case RS_CRASH_BEFORE_DEFERRED: return "before_deferred";
	case RS_CRASH_WRITES_IN_FLIGHT: return "writes_in_flight";
	case RS_CRASH_BEFORE_SYNC: return "before_sync";
	default: return "point" + std::to_string(info.param);
	}
}

INSTANTIATE_TEST_SUITE_P(WritePath, CrashTest,
			 ::testing::Values(RS_CRASH_MID_DATA, RS_CRASH_BEFORE_FLUSH,
					   RS_CRASH_DROP_UNFLUSHED, RS_CRASH_BEFORE_COMMIT,
					   RS_CRASH_AFTER_COMMIT, RS_CRASH_WRITES_IN_FLIGHT,
					   RS_CRASH_BEFORE_SYNC),
			 crash_point_name);

/*
 * New data through the WAL (deferred_new_max): the transaction dies before,
 * between or after commit and apply; an acknowledged one survives whole,
 * an unacknowledged one is all or nothing, and nothing leaks.
 */
class DeferredNewCrashTest : public CrashTest {};

TEST_P(DeferredNewCrashTest, ReplayedOrAbsent)
{
	int point = GetParam();
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "old", 0, pattern(65536, 1)), 0);
	CloseStore();
	std::string d = pattern(20000, 5), e = pattern(3000, 6);
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rawstore *s;
		struct rawstore_open_opts oo;
		rawstore_open_opts_init(&oo);
		oo.deferred_new_max = 65536;
		if (rawstore_open(dev.c_str(), meta.c_str(), &oo, &s))
			_exit(1);
		rs_debug_set_crash_point(point, 1);
		struct rawstore_txn *t;
		rawstore_txn_new(&t);
		/* a new object, and a hole of an old one filled (RMW of a unit) */
		rawstore_txn_write(t, "c", "new", 3, 0, d.data(), d.size());
		rawstore_txn_write(t, "c", "old", 3, 70000, e.data(), e.size());
		rawstore_submit(s, t);
		/* a crash point after the acknowledgement (the device
		 * journal's deferred writes) is reached before close returns */
		rawstore_close(s);
		_exit(0);
	}
	ReapCrashed(pid);
	if (HasFatalFailure())
		return;
	ASSERT_EQ(OpenAfterCrash(), 0) << rawstore_errmsg();
	bool applied = point != RS_CRASH_BEFORE_COMMIT;
	struct rawstore_perf p;
	p.struct_size = sizeof(p);
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	/* the new object (5 units) and the old one's unit at 70000 */
	EXPECT_EQ(p.deferred_replayed, applied ? 2u : 0u);
	std::string old = pattern(65536, 1);
	if (applied) {
		EXPECT_EQ(Read("c", "new", 0, 30000), d);
		old.resize(70000, '\0');
		old += e;
	} else {
		struct rawstore_stat sb;
		sb.struct_size = sizeof(sb);
		EXPECT_EQ(rawstore_stat(st, "c", "new", 3, &sb), -ENOENT);
	}
	EXPECT_EQ(Read("c", "old", 0, 80000), old);
	ExpectClean();
	Reopen();
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	EXPECT_EQ(p.deferred_replayed, 0u);
	EXPECT_EQ(Read("c", "old", 0, 80000), old);
}

INSTANTIATE_TEST_SUITE_P(Deferred, DeferredNewCrashTest,
			 ::testing::Values(RS_CRASH_BEFORE_COMMIT, RS_CRASH_BEFORE_DEFERRED,
					   RS_CRASH_AFTER_COMMIT),
			 crash_point_name);

class DeferredCrashTest : public CrashTest {};

/* A deferred overwrite dies before, between or after commit and apply. */
TEST_P(DeferredCrashTest, ReplayedOrAbsent)
{
	int point = GetParam();
	ASSERT_EQ(MkColl("c"), 0);
	std::string base = pattern(65536, 1), upd = pattern(3000, 2);
	ASSERT_EQ(Write("c", "d", 0, base), 0);
	ASSERT_EQ(Write("c", "x", 0, pattern(30000, 3)), 0);
	CloseStore();
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rawstore *s;
		if (rawstore_open(dev.c_str(), meta.c_str(), nullptr, &s))
			_exit(1);
		rs_debug_set_crash_point(point, 1);
		struct rawstore_txn *t;
		rawstore_txn_new(&t);
		rawstore_txn_write(t, "c", "d", 1, 1000, upd.data(), upd.size());
		rawstore_txn_write(t, "c", "x", 1, 0, "y", 1);
		rawstore_submit(s, t);
		/* a crash point after the acknowledgement (the device
		 * journal's deferred writes) is reached before close returns */
		rawstore_close(s);
		_exit(0);
	}
	ReapCrashed(pid);
	if (HasFatalFailure())
		return;
	ASSERT_EQ(OpenAfterCrash(), 0) << rawstore_errmsg();
	bool applied = point != RS_CRASH_BEFORE_COMMIT;
	std::string m = base, x = pattern(30000, 3);
	if (applied) {
		m.replace(1000, 3000, upd);
		x[0] = 'y';
	}
	EXPECT_EQ(Read("c", "d", 0, 70000), m);
	EXPECT_EQ(Read("c", "x", 0, 40000), x);
	struct rawstore_perf p;
	p.struct_size = sizeof(p);
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	EXPECT_EQ(p.deferred_replayed, applied ? 2u : 0u);
	ExpectClean();
	Reopen();
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	EXPECT_EQ(p.deferred_replayed, 0u); /* records are gone after replay */
	EXPECT_EQ(Read("c", "d", 0, 70000), m);
}

INSTANTIATE_TEST_SUITE_P(Deferred, DeferredCrashTest,
			 ::testing::Values(RS_CRASH_BEFORE_COMMIT, RS_CRASH_BEFORE_SYNC,
					   RS_CRASH_BEFORE_DEFERRED, RS_CRASH_AFTER_COMMIT),
			 crash_point_name);

class GroupCrashTest : public CrashTest {};

/*
 * Many transactions in flight, grouped, their data writes pipelined; the
 * crash hits a later group: with all its writes still in flight, in the
 * middle of queueing them, with the unflushed data lost, or before the
 * metadata commit, or with its batch written and not synced (the
 * groups before it may not be synced either).
 */
TEST_P(GroupCrashTest, GroupCommitCrash)
{
	int point = GetParam() & ~DNEW;
	ASSERT_EQ(MkColl("c"), 0);
	CloseStore();
	int p[2];
	ASSERT_EQ(pipe(p), 0);
	const int n = 60;
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		close(p[0]);
		struct rawstore *s;
		struct rawstore_open_opts oo;
		rawstore_open_opts_init(&oo);
		oo.max_group = 8;
		oo.deferred_new_max = GetParam() & DNEW ? 65536 : 0;
		if (rawstore_open(dev.c_str(), meta.c_str(), &oo, &s))
			_exit(1);
		/* countdown: the third group (MID_DATA counts writes: txn 20) */
		rs_debug_set_crash_point(point, point == RS_CRASH_MID_DATA ? 20 : 3);
		struct Ctx {
			int fd, i;
		};
		static Ctx ctx[n];
		for (int i = 0; i < n; i++) {
			struct rawstore_txn *t;
			rawstore_txn_new(&t);
			std::string name = "g" + std::to_string(i), d = pattern(16384 + i, i);
			rawstore_txn_write(t, "c", name.data(), name.size(), 0, d.data(), d.size());
			rawstore_txn_setattr(t, "c", name.data(), name.size(), "i", &i, sizeof(i));
			ctx[i] = { p[1], i };
			rawstore_submit_async(s, t,
					      [](struct rawstore_txn *tt, int r, void *a) {
						      auto c = static_cast<Ctx *>(a);
						      if (!r)
							      Report(c->fd, c->i);
						      rawstore_txn_free(tt);
					      },
					      &ctx[i]);
		}
		rawstore_close(s);
		_exit(0);
	}
	close(p[1]);
	std::vector<int> acked = Acked(p[0]);
	close(p[0]);
	ReapCrashed(pid);
	if (HasFatalFailure())
		return;
	ASSERT_EQ(OpenAfterCrash(), 0);
	std::set<int> ack(acked.begin(), acked.end());
	uint64_t present = 0;
	for (int i = 0; i < n; i++) {
		std::string name = "g" + std::to_string(i);
		struct rawstore_stat s;
		s.struct_size = sizeof(s);
		int r = rawstore_stat(st, "c", name.data(), name.size(), &s);
		if (ack.count(i)) {
			EXPECT_EQ(r, 0) << "acknowledged txn " << i << " lost";
		}
		if (r)
			continue;
		present++;
		EXPECT_EQ(Read("c", name, 0, 20000), pattern(16384 + i, i));
		int v = -1;
		EXPECT_EQ(rawstore_getattr(st, "c", name.data(), name.size(), "i", &v, sizeof(v)),
			  (ssize_t)sizeof(v));
		EXPECT_EQ(v, i);
	}
	EXPECT_GE(present, ack.size());
	EXPECT_LT(present, (uint64_t)n);
	EXPECT_EQ(Statfs().objects, present);
	ExpectClean();
}

INSTANTIATE_TEST_SUITE_P(Pipelined, GroupCrashTest,
			 ::testing::Values(RS_CRASH_WRITES_IN_FLIGHT, RS_CRASH_MID_DATA,
					   RS_CRASH_DROP_UNFLUSHED, RS_CRASH_BEFORE_COMMIT,
					   RS_CRASH_BEFORE_SYNC),
			 crash_point_name);

/* The same with every object's data through the WAL (no data writes in
 * flight: the crash hits the third group's commit or its deferred apply). */
INSTANTIATE_TEST_SUITE_P(PipelinedDeferredNew, GroupCrashTest,
			 ::testing::Values(RS_CRASH_BEFORE_COMMIT | DNEW,
					   RS_CRASH_BEFORE_DEFERRED | DNEW,
					   RS_CRASH_AFTER_COMMIT | DNEW),
			 crash_point_name);

/*
 * Renames (issue 42) die at each step of the write path: a temporary object
 * written and renamed over a live one, and an object renamed into another
 * collection, in one transaction (RENAME_ONLY: the renames alone, no data
 * written).  A crash before the commit leaves every source where it was and
 * the old live object whole; after it only the destinations exist, the
 * replaced object's units are free; the listings, the counts and a deep
 * fsck agree either way.
 */
class RenameCrashTest : public CrashTest {};

enum { RENAME_ONLY = 0x200 };	/* param flag: the transaction only renames */

static std::string rename_point_name(const ::testing::TestParamInfo<int> &info)
{
	return crash_point_name(::testing::TestParamInfo<int>(info.param & ~RENAME_ONLY,
							      info.index)) +
	       (info.param & RENAME_ONLY ? "_rename_only" : "");
}

static int collect_name(void *arg, const void *name, size_t len)
{
	static_cast<std::vector<std::string> *>(arg)->emplace_back(
		static_cast<const char *>(name), len);
	return 0;
}

TEST_P(RenameCrashTest, SourceBeforeCommitDestinationAfter)
{
	int point = GetParam() & ~RENAME_ONLY;
	bool only = GetParam() & RENAME_ONLY;
	std::string live = pattern(300000, 1), a = pattern(100000, 2), nw = pattern(200000, 3);
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(MkColl("d"), 0);
	ASSERT_EQ(Write("c", "live", 0, live), 0);
	ASSERT_EQ(Write("c", "a", 0, a), 0);
	struct rawstore_txn *t = T();
	rawstore_txn_setattr(t, "c", "live", 4, "etag", "old", 3);
	rawstore_txn_omap_set(t, "c", "a", 1, "k", 1, "v", 1);
	if (only)
		rawstore_txn_write(t, "c", "tmp", 3, 0, nw.data(), nw.size());
	ASSERT_EQ(Submit(t), 0);
	uint64_t alloc0 = Statfs().allocated;
	CloseStore();
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rawstore *s;
		if (rawstore_open(dev.c_str(), meta.c_str(), nullptr, &s))
			_exit(1);
		rs_debug_set_crash_point(point, 1);
		struct rawstore_txn *tt;
		rawstore_txn_new(&tt);
		if (!only)
			rawstore_txn_write(tt, "c", "tmp", 3, 0, nw.data(), nw.size());
		rawstore_txn_setattr(tt, "c", "tmp", 3, "etag", "new", 3);
		rawstore_txn_rename(tt, "c", "tmp", 3, "c", "live", 4);
		rawstore_txn_rename(tt, "c", "a", 1, "d", "a", 1);
		rawstore_submit(s, tt);
		rawstore_close(s);
		_exit(0);
	}
	ReapCrashed(pid);
	if (HasFatalFailure())
		return;
	ASSERT_EQ(OpenAfterCrash(), 0) << rawstore_errmsg();
	/* as in NoAckedLossNoLeak: the batch is in RocksDB's WAL file or the
	 * journal's flushed record from before_sync on */
	bool applied = point == RS_CRASH_AFTER_COMMIT || point == RS_CRASH_BEFORE_SYNC;
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	char buf[8];
	std::vector<std::string> lc, ld;
	int nc = rawstore_list(st, "c", nullptr, 0, 0, collect_name, &lc);
	int nd = rawstore_list(st, "d", nullptr, 0, 0, collect_name, &ld);
	ASSERT_EQ(nc, (int)lc.size());
	ASSERT_EQ(nd, (int)ld.size());
	if (applied) {
		EXPECT_EQ(Read("c", "live", 0, 400000), nw);
		EXPECT_EQ(rawstore_getattr(st, "c", "live", 4, "etag", buf, sizeof(buf)), 3);
		EXPECT_EQ(std::string(buf, 3), "new");
		EXPECT_EQ(rawstore_stat(st, "c", "a", 1, &s), -ENOENT);
		EXPECT_EQ(Read("d", "a", 0, 200000), a);
		EXPECT_EQ(rawstore_omap_get(st, "d", "a", 1, "k", 1, buf, sizeof(buf)), 1);
		EXPECT_EQ(lc, std::vector<std::string>{ "live" });
		EXPECT_EQ(ld, std::vector<std::string>{ "a" });
		/* the old live object's 74 units are free, only the new ones used */
		EXPECT_EQ(Statfs().allocated, 200704u + 102400u);
	} else {
		EXPECT_EQ(Read("c", "live", 0, 400000), live);
		EXPECT_EQ(rawstore_getattr(st, "c", "live", 4, "etag", buf, sizeof(buf)), 3);
		EXPECT_EQ(std::string(buf, 3), "old");
		EXPECT_EQ(Read("c", "a", 0, 200000), a);
		EXPECT_EQ(rawstore_omap_get(st, "c", "a", 1, "k", 1, buf, sizeof(buf)), 1);
		EXPECT_EQ(rawstore_stat(st, "d", "a", 1, &s), -ENOENT);
		EXPECT_EQ(lc, only ? (std::vector<std::string>{ "a", "live", "tmp" })
				   : (std::vector<std::string>{ "a", "live" }));
		EXPECT_EQ(ld, std::vector<std::string>{});
		EXPECT_EQ(Statfs().allocated, alloc0);
	}
	EXPECT_EQ(rawstore_stat(st, "c", "tmp", 3, &s), applied || !only ? -ENOENT : 0);
	EXPECT_EQ(Statfs().objects, applied || !only ? 2u : 3u);
	ExpectClean();
	/* the store keeps working: the object moves back */
	t = T();
	rawstore_txn_rename(t, applied ? "d" : "c", "a", 1, "c", "back", 4);
	ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();
	EXPECT_EQ(Read("c", "back", 0, 200000), a);
	ExpectClean();
}

INSTANTIATE_TEST_SUITE_P(WritePath, RenameCrashTest,
			 ::testing::Values(RS_CRASH_MID_DATA, RS_CRASH_BEFORE_FLUSH,
					   RS_CRASH_DROP_UNFLUSHED, RS_CRASH_BEFORE_COMMIT,
					   RS_CRASH_AFTER_COMMIT, RS_CRASH_WRITES_IN_FLIGHT,
					   RS_CRASH_BEFORE_SYNC,
					   RS_CRASH_BEFORE_COMMIT | RENAME_ONLY,
					   RS_CRASH_AFTER_COMMIT | RENAME_ONLY,
					   RS_CRASH_BEFORE_SYNC | RENAME_ONLY),
			 rename_point_name);
