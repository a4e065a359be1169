// Checks reads racing commits: readers of objects that are rewritten in
// place (deferred) or redirected (new units, old ones freed and reused by
// churn) always see one whole committed version, never a checksum error.
#include <atomic>
#include <thread>

#include "helpers.h"

static std::string version(size_t len, uint32_t v)
{
	std::string s = pattern(len, v);
	memcpy(&s[0], &v, sizeof(v));
	return s;
}

TEST_F(StoreTest, ReadersSeeWholeCommittedVersions)
{
	ASSERT_EQ(MkColl("c"), 0);
	const size_t sizes[2] = { 16384, 65536 }; /* deferred / redirected */
	ASSERT_EQ(Write("c", "o0", 0, version(sizes[0], 0)), 0);
	ASSERT_EQ(Write("c", "o1", 0, version(sizes[1], 0)), 0);
	std::atomic<bool> stop{ false };
	std::atomic<uint64_t> reads{ 0 }, bad{ 0 };
	auto reader = [&](int which) {
		std::string buf(sizes[which], 0);
		std::string name = "o" + std::to_string(which);
		while (!stop) {
			ssize_t r = rawstore_read(st, "c", name.data(), name.size(), 0, &buf[0],
						  buf.size());
			uint32_t v;
			memcpy(&v, buf.data(), sizeof(v));
			if (r != (ssize_t)buf.size() || buf != version(sizes[which], v))
				bad++;
			reads++;
		}
	};
	std::thread r0(reader, 0), r1(reader, 1), r2(reader, 1);
	const uint32_t rounds = 150 * (uint32_t)scale();
	for (uint32_t v = 1; v <= rounds; v++) {
		struct rawstore_txn *t = T();
		std::string a = version(sizes[0], v), b = version(sizes[1], v);
		rawstore_txn_write(t, "c", "o0", 2, 0, a.data(), a.size());
		rawstore_txn_write(t, "c", "o1", 2, 0, b.data(), b.size());
		/* churn so freed units are reused soon */
		std::string n = "churn" + std::to_string(v % 4);
		rawstore_txn_write(t, "c", n.data(), n.size(), 0, b.data(), b.size());
		ASSERT_EQ(Submit(t), 0);
	}
	stop = true;
	r0.join();
	r1.join();
	r2.join();
	EXPECT_EQ(bad.load(), 0u);
	EXPECT_GT(reads.load(), 0u);
	struct rawstore_perf p;
	p.struct_size = sizeof(p);
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	EXPECT_EQ(p.csum_errors, 0u);
	EXPECT_GE(p.deferred_writes, (uint64_t)rounds);
	ExpectClean();
}
