// Isolation (issue 13, item 6): on a device filled with a marker pattern
// before mkfs, no read ever returns the marker or another object's bytes:
// objects written partially, sparse, truncated down and up, zeroed,
// cloned and overwritten, deferred overwrites, after remove + reclaim, and
// a randomized mix of all of them against a model.  (Crashes on a marked
// device: test_crash_paths.cc.)
#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "marker.h"

class IsolationTest : public MarkerStoreTest {
protected:
	std::map<std::string, std::string> model;

	void W(const std::string &n, uint64_t off, const std::string &d)
	{
		ASSERT_EQ(Write("c", n, off, d), 0) << rawstore_errmsg();
		std::string &m = model[n];
		if (m.size() < off + d.size())
			m.resize(off + d.size(), 0);
		m.replace(off, d.size(), d);
	}
	void Z(const std::string &n, uint64_t off, uint64_t len)
	{
		struct rawstore_txn *t = T();
		rawstore_txn_zero(t, "c", n.data(), n.size(), off, len);
		ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();
		std::string &m = model[n];
		if (m.size() < off + len)
			m.resize(off + len, 0);
		m.replace(off, len, std::string(len, 0));
	}
	void Trunc(const std::string &n, uint64_t size)
	{
		struct rawstore_txn *t = T();
		rawstore_txn_truncate(t, "c", n.data(), n.size(), size);
		ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();
		model[n].resize(size, 0);
	}
	void Clone(const std::string &s, const std::string &d)
	{
		struct rawstore_txn *t = T();
		rawstore_txn_clone(t, "c", s.data(), s.size(), d.data(), d.size());
		ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();
		model[d] = model[s];
	}
	void Rm(const std::string &n)
	{
		struct rawstore_txn *t = T();
		rawstore_txn_remove(t, "c", n.data(), n.size());
		ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();
		model.erase(n);
	}
	void PartialAndSparse();
	/* Every object equals the model, whole and in odd pieces; no marker. */
	void Check()
	{
		for (auto &kv : model) {
			const std::string &m = kv.second;
			EXPECT_EQ(Size("c", kv.first), m.size()) << kv.first;
			EXPECT_TRUE(MRead("c", kv.first, 0, m.size() + 8192) == m) << kv.first;
			for (uint64_t off = 1; off < m.size(); off += 12345) {
				size_t len = (size_t)std::min<uint64_t>(4321, m.size() - off);
				EXPECT_TRUE(MRead("c", kv.first, off, 4321) == m.substr(off, len))
					<< kv.first << " at " << off;
			}
		}
		EXPECT_EQ(ScanAll("c") > 0 || model.empty(), true);
	}
};

/* The marker really is on the device, and the store's bytes are not it. */
TEST_F(IsolationTest, MarkerIsOnTheDevice)
{
	int fd = open(dev.c_str(), O_RDONLY);
	std::string b(8192, 0);
	ASSERT_EQ(pread(fd, &b[0], b.size(), 32 << 20), (ssize_t)b.size());
	close(fd);
	EXPECT_EQ(find_marker(b), 0u);
	EXPECT_EQ(find_marker(pattern(1 << 20, 1)), std::string::npos);
	EXPECT_EQ(find_marker(std::string(1 << 20, 0)), std::string::npos);
}

TEST_F(IsolationTest, PartialAndSparseWrites)
{
	PartialAndSparse();
}

/* The same with new data through the WAL: the records carry zeros, not
 * whatever the units held, around the data. */
TEST_F(IsolationTest, PartialAndSparseWritesThroughTheWal)
{
	oo.deferred_new_max = 65536;
	Reopen();
	PartialAndSparse();
	struct rawstore_perf p;
	p.struct_size = sizeof(p);
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	EXPECT_EQ(p.deferred_replayed, 0u);
}

void IsolationTest::PartialAndSparse()
{
	ASSERT_EQ(MkColl("c"), 0);
	W("head", 777, pattern(100, 1));		/* inside one unit */
	W("big-partial", 777, pattern(5000, 2));	/* > inline: on the device */
	W("sparse", 2 << 20, pattern(100, 3));	/* 2 MiB hole */
	W("sparse", 100000, pattern(3000, 4));	/* into the hole, unaligned */
	W("tail", 0, pattern(9000, 5));
	W("tail", 20000, pattern(1, 6));	/* a gap, then one byte */
	W("grow", 0, pattern(4000, 7));		/* inline */
	W("grow", 4000, pattern(10000, 8));	/* leaves inline */
	if (oo.deferred_new_max > 0) {
		struct rawstore_perf p;
		p.struct_size = sizeof(p);
		ASSERT_EQ(rawstore_perf_get(st, &p), 0);
		EXPECT_GE(p.deferred_new_bytes, 5u * 4096); /* all but "grow"'s tail */
	}
	Check();
	Reopen();
	Check();
	ExpectClean();
}

TEST_F(IsolationTest, TruncateDownThenUp)
{
	ASSERT_EQ(MkColl("c"), 0);
	W("t", 0, pattern(40000, 1));
	Trunc("t", 5000);
	Trunc("t", 30000);	/* 5000..30000 must be zeros, not the old bytes */
	W("u", 0, pattern(40000, 2));
	Trunc("u", 4097);
	W("u", 12000, pattern(10, 3));	/* extends over the cut */
	W("v", 0, pattern(3000, 4));
	Trunc("v", 3 << 20);		/* grow a fresh object far */
	Check();
	Reopen();
	Check();
	ExpectClean();
}

TEST_F(IsolationTest, ZeroedRanges)
{
	ASSERT_EQ(MkColl("c"), 0);
	W("z", 0, pattern(100000, 1));
	Z("z", 100, 10000);		/* partial units at both ends */
	Z("z", 16384, 32768);		/* whole units freed */
	Z("z", 90000, 50000);		/* past the end: extends */
	Z("fresh", 5000, 20000);	/* creates the object */
	W("fresh", 7000, pattern(100, 2));
	Check();
	Reopen();
	Check();
	ExpectClean();
}

TEST_F(IsolationTest, ClonesAndDeferredOverwrites)
{
	ASSERT_EQ(MkColl("c"), 0);
	W("a", 0, pattern(200000, 1));
	Clone("a", "b");
	W("a", 1000, pattern(3000, 2));		/* deferred-sized: redirected (shared) */
	W("b", 50000, pattern(70000, 3));	/* redirected */
	W("a", 190000, pattern(20000, 4));	/* extends */
	Clone("b", "c2");
	Trunc("b", 10000);
	Rm("a");
	W("a", 0, pattern(100, 5));
	Check();
	W("d", 0, pattern(65536, 6));
	W("d", 100, pattern(2000, 7));		/* deferred, in place */
	W("d", 8191, pattern(2, 8));		/* deferred, across a unit boundary */
	Check();
	Reopen();
	Check();
	ExpectClean();
}

/* Freed and punched space, reused by partial writes, reads zeros. */
TEST_F(IsolationTest, AfterRemoveAndReclaim)
{
	ASSERT_EQ(MkColl("c"), 0);
	for (int i = 0; i < 8; i++)
		W("o" + std::to_string(i), 0, pattern(1 << 20, 10 + i));
	for (int i = 0; i < 8; i += 2)
		Rm("o" + std::to_string(i));
	ASSERT_EQ(rawstore_reclaim(st), 0) << rawstore_errmsg();
	EXPECT_EQ(Statfs().unpunched, 0u);
	/* partial units in the freed space: their unwritten bytes must be 0 */
	for (int i = 0; i < 40; i++)
		W("n" + std::to_string(i), (uint64_t)i * 37, pattern(5000 + i * 100, 40 + i));
	Check();
	/* freed without reclaim: the old data is still on the device there */
	for (int i = 1; i < 8; i += 2)
		Rm("o" + std::to_string(i));
	for (int i = 0; i < 40; i++)
		W("m" + std::to_string(i), 4096 - 50 + (uint64_t)i, pattern(300, 90 + i));
	Check();
	Reopen();
	Check();
	ExpectClean();
}

/* A randomized mix of every op on a few objects, checked after each step. */
TEST_F(IsolationTest, RandomMixAgainstModel)
{
	ASSERT_EQ(MkColl("c"), 0);
	const char *seed_env = getenv("RAWSTORE_TEST_SEED");
	unsigned seed = seed_env ? (unsigned)atoi(seed_env) : 1234;
	std::mt19937 rng(seed);
	auto rnd = [&](uint64_t n) { return n ? (uint64_t)(rng() % n) : 0; };
	const int steps = 250 * (int)scale();
	for (int s = 0; s < steps && !HasFailure(); s++) {
		std::string n = "r" + std::to_string(rnd(6));
		bool exists = model.count(n);
		uint64_t size = exists ? model[n].size() : 0;
		switch (rnd(exists ? 8 : 2)) {
		case 0:
		case 1: {
			uint64_t off = rnd(300000), len = 1 + rnd(rnd(2) ? 5000 : 80000);
			W(n, off, pattern((size_t)len, (unsigned)s));
			break;
		}
		case 2:
			W(n, rnd(size + 1), pattern(1 + (size_t)rnd(3000), (unsigned)s));
			break;
		case 3:
			Z(n, rnd(size + 1), 1 + rnd(60000));
			break;
		case 4:
			Trunc(n, rnd(size + 100000));
			break;
		case 5: {
			std::string d = "r" + std::to_string(rnd(6));
			if (d != n)
				Clone(n, d);
			break;
		}
		case 6:
			Rm(n);
			break;
		case 7:
			ASSERT_EQ(rawstore_reclaim(st), 0) << rawstore_errmsg();
			break;
		}
		if (s % 10 == 9)
			Check();
		if (s % 100 == 99)
			Reopen();
	}
	Check();
	ExpectClean();
	if (HasFailure())
		ADD_FAILURE() << "seed " << seed << " (RAWSTORE_TEST_SEED)";
}

/*
 * Readers race removes, reuse of the freed units by other objects, and
 * reclaim: a read of the victim returns its own bytes or -ENOENT, never
 * another object's bytes, zeros from a punch, or the marker.
 */
TEST_F(IsolationTest, ReadersNeverSeeReusedSpace)
{
	ASSERT_EQ(MkColl("c"), 0);
	const size_t vlen = 256 << 10;
	const std::string victim = pattern(vlen, 1);
	std::atomic<bool> stop{ false };
	std::atomic<uint64_t> reads{ 0 }, hits{ 0 }, bad{ 0 };
	std::string first_bad;
	ASSERT_EQ(Write("c", "victim", 0, victim), 0);
	auto reader = [&] {
		std::string buf(vlen, 0);
		while (!stop.load()) {
			ssize_t r = rawstore_read(st, "c", "victim", 6, 0, &buf[0], vlen);
			reads++;
			if (r == -ENOENT)
				continue;
			if (r != (ssize_t)vlen || buf != victim) {
				if (bad++ == 0)
					first_bad = r < 0 ? std::string(strerror((int)-r))
							  : find_marker(buf) != std::string::npos
								    ? "the marker"
								    : "other bytes";
			} else {
				hits++;
			}
		}
	};
	std::thread r1(reader), r2(reader);
	const int rounds = 30 * (int)scale();
	for (int i = 0; i < rounds && !HasFailure(); i++) {
		struct rawstore_txn *t = T();
		rawstore_txn_remove(t, "c", "victim", 6);
		ASSERT_EQ(Submit(t), 0);
		/* other objects take the freed units */
		for (int j = 0; j < 4; j++)
			ASSERT_EQ(Write("c", "f" + std::to_string(j), 0, pattern(vlen / 4, 100 + i)),
				  0);
		if (i % 3 == 0) {
			ASSERT_EQ(rawstore_reclaim(st), 0);
		}
		ASSERT_EQ(Write("c", "victim", 0, victim), 0);
		for (int j = 0; j < 4; j++) {
			t = T();
			std::string n = "f" + std::to_string(j);
			rawstore_txn_remove(t, "c", n.data(), n.size());
			ASSERT_EQ(Submit(t), 0);
		}
	}
	stop = true;
	r1.join();
	r2.join();
	EXPECT_EQ(bad.load(), 0u) << "first bad read: " << first_bad;
	EXPECT_GT(hits.load(), 0u);
	EXPECT_GT(reads.load(), hits.load()) << "no read ever raced a remove";
	ExpectClean();
}
