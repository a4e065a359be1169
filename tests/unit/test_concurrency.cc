// Checks reads racing commits: readers of objects that are rewritten in
// place (deferred) or redirected (new units, old ones freed and reused by
// churn) always see one whole committed version, never a checksum error.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "debug.h"
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
	rs_debug_commit_settle(st); /* the last in-place writes are done */
	struct rawstore_perf p;
	p.struct_size = sizeof(p);
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	EXPECT_EQ(p.csum_errors, 0u);
	EXPECT_GE(p.deferred_writes, (uint64_t)rounds);
	ExpectClean();
}

// Checks the onode cache (store/ocache.h) follows every kind of change: a
// read caches the object's record, and after each committed write,
// truncate, clone onto it, remove and re-create the next read returns the
// new bytes; a failed transaction leaves the cached record as it was.
TEST_F(StoreTest, OnodeCacheFollowsEveryChange)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string a = pattern(65536, 1), b = pattern(65536, 2), c = pattern(8192, 3);
	ASSERT_EQ(Write("c", "o", 0, a), 0);
	ASSERT_EQ(Read("c", "o", 0, 65536), a);
	ASSERT_EQ(Write("c", "o", 4096, c), 0);	/* partly overwritten */
	std::string want = a;
	want.replace(4096, c.size(), c);
	EXPECT_EQ(Read("c", "o", 0, 65536), want);
	struct rawstore_txn *t = T();
	ASSERT_EQ(rawstore_txn_truncate(t, "c", "o", 1, 10000), 0);
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(Read("c", "o", 0, 65536), want.substr(0, 10000));
	ASSERT_EQ(Write("c", "src", 0, b), 0);
	ASSERT_EQ(Read("c", "src", 0, 65536), b);
	t = T();
	ASSERT_EQ(rawstore_txn_clone(t, "c", "src", 3, "o", 1), 0);
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(Read("c", "o", 0, 65536), b);
	/* a failed transaction changes nothing, cached or not */
	t = T();
	ASSERT_EQ(rawstore_txn_write(t, "c", "o", 1, 0, a.data(), a.size()), 0);
	ASSERT_EQ(rawstore_txn_remove(t, "c", "nonexistent", 11), 0);
	EXPECT_EQ(Submit(t), -ENOENT);
	EXPECT_EQ(Read("c", "o", 0, 65536), b);
	t = T();
	ASSERT_EQ(rawstore_txn_remove(t, "c", "o", 1), 0);
	ASSERT_EQ(Submit(t), 0);
	ssize_t r = 0;
	Read("c", "o", 0, 10, &r);
	EXPECT_EQ(r, -ENOENT);
	ASSERT_EQ(Write("c", "o", 0, c), 0);
	EXPECT_EQ(Read("c", "o", 0, 65536), c);
	ExpectClean();
}

// Checks threads committing at once through both submit calls: each of
// four threads rewrites its own objects with rawstore_submit (each may
// lead a group on its own thread or wait behind another's), one thread
// keeps asynchronous transactions in flight, and one runs fsck (a job,
// committed by the commit thread) meanwhile.  Every transaction succeeds
// and every object holds its last write, read back and after a reopen.
TEST_F(StoreTest, SyncAndAsyncSubmittersAtOnce)
{
	ASSERT_EQ(MkColl("c"), 0);
	const int threads = 4, rounds = 60, objs = 3;
	std::atomic<int> bad{ 0 }, async_ok{ 0 }, fscks{ 0 };
	auto value = [](int th, int o, int r) {
		/* 4 KiB (in place once the unit exists) or 64 KiB (redirected) */
		return version(o == 0 ? 65536 : 4096, (uint32_t)(th * 1000000 + o * 1000 + r));
	};
	auto sync_writer = [&](int th) {
		for (int r = 0; r < rounds; r++) {
			int o = r % objs;
			std::string name = "s" + std::to_string(th) + "-" + std::to_string(o);
			std::string d = value(th, o, r);
			struct rawstore_txn *t = nullptr;
			if (rawstore_txn_new(&t) ||
			    rawstore_txn_write(t, "c", name.data(), name.size(), 0, d.data(),
					       d.size()) ||
			    rawstore_submit(st, t))
				bad++;
			rawstore_txn_free(t);
		}
	};
	struct Flight {
		std::mutex m;
		std::condition_variable cv;
		int n = 0;
	} fl;
	auto async_cb = [](struct rawstore_txn *t, int result, void *arg) {
		auto f = static_cast<std::pair<Flight *, std::atomic<int> *> *>(arg);
		if (!result)
			(*f->second)++;
		rawstore_txn_free(t);
		std::lock_guard<std::mutex> l(f->first->m);
		f->first->n--;
		f->first->cv.notify_all();
	};
	std::pair<Flight *, std::atomic<int> *> arg(&fl, &async_ok);
	auto async_writer = [&]() {
		for (int r = 0; r < rounds * 2; r++) {
			std::string name = "a" + std::to_string(r % objs);
			std::string d = value(threads, r % objs, r);
			struct rawstore_txn *t = nullptr;
			if (rawstore_txn_new(&t) ||
			    rawstore_txn_write(t, "c", name.data(), name.size(), 0, d.data(),
					       d.size())) {
				bad++;
				rawstore_txn_free(t);
				continue;
			}
			{
				std::unique_lock<std::mutex> l(fl.m);
				fl.cv.wait(l, [&fl] { return fl.n < 4; });
				fl.n++;
			}
			if (rawstore_submit_async(st, t, async_cb, &arg)) {
				bad++;
				rawstore_txn_free(t);
				std::lock_guard<std::mutex> l(fl.m);
				fl.n--;
			}
		}
		std::unique_lock<std::mutex> l(fl.m);
		fl.cv.wait(l, [&fl] { return fl.n == 0; });
	};
	std::atomic<bool> stop{ false };
	auto checker = [&]() {
		while (!stop) {
			struct rawstore_fsck_opts o;
			struct rawstore_fsck_result r;
			rawstore_fsck_opts_init(&o);
			r.struct_size = sizeof(r);
			if (rawstore_fsck(st, &o, &r) || r.errors || r.leaks)
				bad++;
			fscks++;
			usleep(5000);
		}
	};
	std::vector<std::thread> th;
	for (int i = 0; i < threads; i++)
		th.emplace_back(sync_writer, i);
	th.emplace_back(async_writer);
	std::thread ck(checker);
	for (auto &t : th)
		t.join();
	stop = true;
	ck.join();
	EXPECT_EQ(bad.load(), 0);
	EXPECT_EQ(async_ok.load(), rounds * 2);
	EXPECT_GE(fscks.load(), 1);
	auto check = [&]() {
		for (int i = 0; i < threads; i++)
			for (int o = 0; o < objs; o++) {
				int last = rounds - objs + o;
				std::string name = "s" + std::to_string(i) + "-" + std::to_string(o);
				std::string d = value(i, o, last);
				EXPECT_TRUE(Read("c", name, 0, d.size()) == d) << name;
			}
		for (int o = 0; o < objs; o++) {
			int last = rounds * 2 - objs + o;
			std::string name = "a" + std::to_string(o);
			std::string d = value(threads, o, last);
			EXPECT_TRUE(Read("c", name, 0, d.size()) == d) << name;
		}
	};
	check();
	Reopen();
	check();
	ExpectClean();
}
