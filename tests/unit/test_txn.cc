// Checks every transaction op, reads of holes/partial blocks/past EOF,
// unaligned writes, large objects, a full device, atomicity of failed
// transactions, async submit, names and listing, and perf counters.
#include <atomic>
#include <map>

#include "debug.h"
#include "helpers.h"

static int collect_names(void *arg, const void *name, size_t len)
{
	auto v = static_cast<std::vector<std::string> *>(arg);
	v->emplace_back(static_cast<const char *>(name), len);
	return 0;
}

static int collect_kv(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	auto m = static_cast<std::map<std::string, std::string> *>(arg);
	(*m)[std::string(static_cast<const char *>(k), kl)] =
		std::string(static_cast<const char *>(v), vl);
	return 0;
}

TEST_F(StoreTest, EveryOp)
{
	ASSERT_EQ(MkColl("c"), 0);
	EXPECT_EQ(MkColl("c"), -EEXIST);
	struct rawstore_txn *t = T();
	ASSERT_EQ(rawstore_txn_touch(t, "c", "a", 1), 0);
	std::string d = pattern(20000, 2);
	ASSERT_EQ(rawstore_txn_write(t, "c", "a", 1, 0, d.data(), d.size()), 0);
	ASSERT_EQ(rawstore_txn_setattr(t, "c", "a", 1, "x", "vx", 2), 0);
	ASSERT_EQ(rawstore_txn_setattr(t, "c", "a", 1, "y", "vy", 2), 0);
	ASSERT_EQ(rawstore_txn_rmattr(t, "c", "a", 1, "y"), 0);
	for (char k = 'a'; k <= 'f'; k++)
		ASSERT_EQ(rawstore_txn_omap_set(t, "c", "a", 1, &k, 1, &k, 1), 0);
	ASSERT_EQ(rawstore_txn_omap_rm(t, "c", "a", 1, "a", 1), 0);
	ASSERT_EQ(rawstore_txn_omap_rmrange(t, "c", "a", 1, "c", 1, "e", 1), 0);
	ASSERT_EQ(rawstore_txn_omap_setheader(t, "c", "a", 1, "hdr", 3), 0);
	ASSERT_EQ(rawstore_txn_alloc_hint(t, "c", "a", 1, 1 << 20), 0);
	ASSERT_EQ(rawstore_txn_count(t), 15u);
	ASSERT_EQ(Submit(t), 0);

	char buf[16];
	EXPECT_EQ(rawstore_getattr(st, "c", "a", 1, "x", buf, sizeof(buf)), 2);
	EXPECT_EQ(std::string(buf, 2), "vx");
	EXPECT_EQ(rawstore_getattr(st, "c", "a", 1, "y", buf, sizeof(buf)), -ENODATA);
	std::map<std::string, std::string> om;
	EXPECT_EQ(rawstore_omap_iterate(st, "c", "a", 1, nullptr, 0, collect_kv, &om), 3);
	EXPECT_EQ(om, (std::map<std::string, std::string>{ { "b", "b" }, { "e", "e" },
							   { "f", "f" } }));
	EXPECT_EQ(rawstore_omap_get_header(st, "c", "a", 1, buf, sizeof(buf)), 3);
	EXPECT_EQ(rawstore_omap_get(st, "c", "a", 1, "e", 1, buf, sizeof(buf)), 1);
	EXPECT_EQ(rawstore_omap_get(st, "c", "a", 1, "a", 1, buf, sizeof(buf)), -ENODATA);
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	ASSERT_EQ(rawstore_stat(st, "c", "a", 1, &s), 0);
	EXPECT_EQ(s.size, 20000u);
	EXPECT_EQ(s.alloc_hint, 1u << 20);
	EXPECT_EQ(s.allocated, 20480u);

	/* clone copies data, attrs, omap and header */
	t = T();
	ASSERT_EQ(rawstore_txn_clone(t, "c", "a", 1, "b", 1), 0);
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(Read("c", "b", 0, 30000), d);
	EXPECT_EQ(rawstore_getattr(st, "c", "b", 1, "x", buf, sizeof(buf)), 2);
	om.clear();
	EXPECT_EQ(rawstore_omap_iterate(st, "c", "b", 1, nullptr, 0, collect_kv, &om), 3);
	EXPECT_EQ(rawstore_omap_get_header(st, "c", "b", 1, buf, sizeof(buf)), 3);

	/* truncate down, zero a middle range, truncate up */
	t = T();
	ASSERT_EQ(rawstore_txn_truncate(t, "c", "a", 1, 10000), 0);
	ASSERT_EQ(rawstore_txn_zero(t, "c", "a", 1, 100, 5000), 0);
	ASSERT_EQ(rawstore_txn_truncate(t, "c", "a", 1, 30000), 0);
	ASSERT_EQ(Submit(t), 0);
	std::string m = d.substr(0, 10000);
	m.replace(100, 5000, std::string(5000, 0));
	m.resize(30000, 0);
	EXPECT_EQ(Read("c", "a", 0, 40000), m);
	EXPECT_EQ(Read("c", "b", 0, 30000), d); /* the clone is independent */

	/* remove; collection remove only when empty */
	t = T();
	ASSERT_EQ(rawstore_txn_coll_remove(t, "c"), 0);
	EXPECT_EQ(Submit(t), -ENOTEMPTY);
	t = T();
	rawstore_txn_remove(t, "c", "a", 1);
	rawstore_txn_remove(t, "c", "b", 1);
	rawstore_txn_coll_remove(t, "c");
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(rawstore_stat(st, "c", "a", 1, &s), -ENOENT);
	EXPECT_EQ(rawstore_coll_exists(st, "c"), 0);
	auto f = Statfs();
	EXPECT_EQ(f.objects, 0u);
	EXPECT_EQ(f.allocated, 0u);
	EXPECT_EQ(f.collections, 0u);
	ExpectClean();
}

TEST_F(StoreTest, MissingThingsAreErrors)
{
	ASSERT_EQ(MkColl("c"), 0);
	struct rawstore_txn *t = T();
	rawstore_txn_touch(t, "nope", "a", 1);
	EXPECT_EQ(Submit(t), -ENOENT);
	t = T();
	rawstore_txn_truncate(t, "c", "a", 1, 5);
	EXPECT_EQ(Submit(t), -ENOENT);
	t = T();
	rawstore_txn_remove(t, "c", "a", 1);
	EXPECT_EQ(Submit(t), -ENOENT);
	t = T();
	rawstore_txn_setattr(t, "c", "a", 1, "k", "v", 1);
	EXPECT_EQ(Submit(t), -ENOENT);
	t = T();
	rawstore_txn_touch(t, "c", "a", 1);
	rawstore_txn_rmattr(t, "c", "a", 1, "k");
	EXPECT_EQ(rawstore_submit(st, t), -ENODATA);
	EXPECT_EQ(rawstore_txn_failed_op(t), 1);
	rawstore_txn_free(t);
	t = T();
	rawstore_txn_clone(t, "c", "a", 1, "b", 1);
	EXPECT_EQ(Submit(t), -ENOENT);
	t = T();
	rawstore_txn_coll_remove(t, "zz");
	EXPECT_EQ(Submit(t), -ENOENT);
	EXPECT_EQ(Statfs().objects, 0u);
	ssize_t r;
	Read("c", "a", 0, 1, &r);
	EXPECT_EQ(r, -ENOENT);
}

TEST_F(StoreTest, BuilderRejectsBadArguments)
{
	struct rawstore_txn *t = T();
	char big[RAWSTORE_NAME_MAX + 1] = { 0 };
	EXPECT_EQ(rawstore_txn_touch(t, "c", "", 0), -EINVAL);
	EXPECT_EQ(rawstore_txn_touch(t, "c", big, sizeof(big)), -EINVAL);
	EXPECT_EQ(rawstore_txn_touch(t, "", "a", 1), -EINVAL);
	EXPECT_EQ(rawstore_txn_zero(t, "c", "a", 1, UINT64_MAX - 1, 10), -EINVAL);
	EXPECT_EQ(rawstore_txn_zero(t, "c", "a", 1, RAWSTORE_OBJECT_MAX, 1), -EFBIG);
	EXPECT_EQ(rawstore_txn_write(t, "c", "a", 1, 0, nullptr, 5), -EINVAL);
	EXPECT_EQ(rawstore_txn_count(t), 0u);
	rawstore_txn_free(t);
}

TEST_F(StoreTest, HolesAndPastEof)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string d = pattern(3000, 3);
	ASSERT_EQ(Write("c", "h", 1 << 20, d), 0);
	EXPECT_EQ(Size("c", "h"), (1u << 20) + 3000);
	EXPECT_EQ(Read("c", "h", 0, 1 << 20), std::string(1 << 20, 0));
	EXPECT_EQ(Read("c", "h", (1 << 20) - 10, 20), std::string(10, 0) + d.substr(0, 10));
	EXPECT_EQ(Read("c", "h", (1 << 20) + 2990, 100), d.substr(2990));
	ssize_t r;
	Read("c", "h", (1 << 20) + 3000, 10, &r);
	EXPECT_EQ(r, 0);
	Read("c", "h", 1ULL << 40, 10, &r);
	EXPECT_EQ(r, 0);
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	ASSERT_EQ(rawstore_stat(st, "c", "h", 1, &s), 0);
	EXPECT_EQ(s.allocated, 4096u);
	/* truncate up past an unaligned end: the gap reads as zeros */
	struct rawstore_txn *t = T();
	rawstore_txn_truncate(t, "c", "h", 1, (1 << 20) + 100);
	rawstore_txn_truncate(t, "c", "h", 1, (1 << 20) + 8000);
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(Read("c", "h", 1 << 20, 8000), d.substr(0, 100) + std::string(7900, 0));
	ExpectClean();
}

TEST_F(StoreTest, UnalignedOverwritesMatchModel)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string m = pattern(50000, 4);
	ASSERT_EQ(Write("c", "u", 0, m), 0);
	struct { uint64_t off; size_t len; } cases[] = {
		{ 1, 1 }, { 4095, 2 }, { 4096, 4096 }, { 5000, 10000 }, { 49990, 100 },
		{ 0, 7 }, { 12287, 4098 }, { 60000, 5 },
	};
	unsigned seed = 10;
	for (auto &c : cases) {
		std::string d = pattern(c.len, seed++);
		ASSERT_EQ(Write("c", "u", c.off, d), 0);
		if (m.size() < c.off + c.len)
			m.resize(c.off + c.len, 0);
		m.replace(c.off, c.len, d);
		EXPECT_EQ(Read("c", "u", 0, 100000), m);
	}
	Reopen();
	EXPECT_EQ(Read("c", "u", 0, 100000), m);
	ExpectClean();
}

TEST_F(StoreTest, InlineObjectsGrowOutOfRocksDB)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string m = pattern(1000, 5);
	ASSERT_EQ(Write("c", "i", 0, m), 0);
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	ASSERT_EQ(rawstore_stat(st, "c", "i", 1, &s), 0);
	EXPECT_EQ(s.is_inline, 1);
	EXPECT_EQ(s.allocated, 0u);
	std::string d = pattern(6000, 6);
	ASSERT_EQ(Write("c", "i", 500, d), 0);
	m.resize(500);
	m += d;
	ASSERT_EQ(rawstore_stat(st, "c", "i", 1, &s), 0);
	EXPECT_EQ(s.is_inline, 0);
	EXPECT_EQ(s.allocated, 8192u);
	EXPECT_EQ(Read("c", "i", 0, 10000), m);
	Reopen();
	EXPECT_EQ(Read("c", "i", 0, 10000), m);
	ExpectClean();
}

TEST_F(StoreTest, LargeFragmentedObject)
{
	ASSERT_EQ(MkColl("c"), 0);
	/* fragment free space: 64 KiB objects, remove every other one */
	for (int i = 0; i < 200; i++)
		ASSERT_EQ(Write("c", "f" + std::to_string(i), 0, pattern(65536, i)), 0);
	struct rawstore_txn *t = T();
	for (int i = 0; i < 200; i += 2) {
		std::string n = "f" + std::to_string(i);
		rawstore_txn_remove(t, "c", n.data(), n.size());
	}
	ASSERT_EQ(Submit(t), 0);
	uint64_t big = Statfs().free - (1 << 20);
	std::string d = pattern(big, 99);
	ASSERT_EQ(Write("c", "big", 0, d), 0);
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	ASSERT_EQ(rawstore_stat(st, "c", "big", 3, &s), 0);
	EXPECT_GT(s.extents, 1u);
	EXPECT_EQ(s.allocated, big);
	EXPECT_EQ(Read("c", "big", 0, big + 10), d);
	for (int i = 1; i < 200; i += 2)
		ASSERT_EQ(Read("c", "f" + std::to_string(i), 0, 65536), pattern(65536, i));
	Reopen();
	EXPECT_EQ(Read("c", "big", 0, big + 10), d);
	ExpectClean();
}

TEST_F(StoreTest, FullDeviceIsEnospcAndStoreStaysUsable)
{
	ASSERT_EQ(MkColl("c"), 0);
	int i, ret = 0;
	for (i = 0; i < 1000 && !ret; i++)
		ret = Write("c", "o" + std::to_string(i), 0, pattern(1 << 20, i));
	ASSERT_EQ(ret, -ENOSPC);
	int last = i - 1; /* failed */
	auto before = Statfs();
	/* a transaction that would need more space than is free fails whole */
	struct rawstore_txn *t = T();
	std::string small = pattern(8192, 7);
	rawstore_txn_write(t, "c", "s", 1, 0, small.data(), small.size());
	std::string huge(before.free + 4096, 'x');
	rawstore_txn_write(t, "c", "h", 1, 0, huge.data(), huge.size());
	EXPECT_EQ(Submit(t), -ENOSPC);
	auto after = Statfs();
	EXPECT_EQ(after.free, before.free);
	EXPECT_EQ(after.objects, before.objects);
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	EXPECT_EQ(rawstore_stat(st, "c", "s", 1, &s), -ENOENT);
	std::string n = "o" + std::to_string(last);
	EXPECT_EQ(rawstore_stat(st, "c", n.data(), n.size(), &s), -ENOENT);
	for (int j = 0; j < last; j++)
		ASSERT_EQ(Read("c", "o" + std::to_string(j), 0, 1 << 20), pattern(1 << 20, j));
	/* overwriting needs new space too; free some and the store works again */
	t = T();
	rawstore_txn_remove(t, "c", "o0", 2);
	ASSERT_EQ(Submit(t), 0);
	ASSERT_EQ(Write("c", "again", 0, pattern(1 << 20, 1234)), 0);
	EXPECT_EQ(Read("c", "again", 0, 1 << 20), pattern(1 << 20, 1234));
	ExpectClean(false);
}

TEST_F(StoreTest, FailedTransactionLeavesNoTrace)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string d = pattern(10000, 8);
	ASSERT_EQ(Write("c", "a", 0, d), 0);
	auto before = Statfs();
	struct rawstore_txn *t = T();
	std::string e = pattern(70000, 9);
	rawstore_txn_write(t, "c", "a", 1, 5, e.data(), e.size());
	rawstore_txn_write(t, "c", "new", 3, 0, e.data(), e.size());
	rawstore_txn_setattr(t, "c", "a", 1, "k", "v", 1);
	rawstore_txn_truncate(t, "c", "missing", 7, 1);
	EXPECT_EQ(rawstore_submit(st, t), -ENOENT);
	EXPECT_EQ(rawstore_txn_failed_op(t), 3);
	rawstore_txn_free(t);
	auto after = Statfs();
	EXPECT_EQ(after.free, before.free);
	EXPECT_EQ(after.objects, before.objects);
	EXPECT_EQ(Read("c", "a", 0, 100000), d);
	char buf[4];
	EXPECT_EQ(rawstore_getattr(st, "c", "a", 1, "k", buf, 4), -ENODATA);
	struct rawstore_perf p;
	p.struct_size = sizeof(p);
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	EXPECT_EQ(p.txns_failed, 1u);
	ExpectClean();
}

struct AsyncState {
	std::atomic<int> done{ 0 }, errors{ 0 };
};

static void async_cb(struct rawstore_txn *t, int result, void *arg)
{
	auto s = static_cast<AsyncState *>(arg);
	if (result)
		s->errors++;
	rawstore_txn_free(t);
	s->done++;
}

TEST_F(StoreTest, AsyncTransactionsInFlightTogether)
{
	ASSERT_EQ(MkColl("c"), 0);
	AsyncState s;
	const int n = 200;
	struct rawstore_perf p0, p1;
	p0.struct_size = p1.struct_size = sizeof(p0);
	ASSERT_EQ(rawstore_perf_get(st, &p0), 0);
	for (int i = 0; i < n; i++) {
		struct rawstore_txn *t = T();
		std::string name = "a" + std::to_string(i), d = pattern(8192, i);
		rawstore_txn_write(t, "c", name.data(), name.size(), 0, d.data(), d.size());
		ASSERT_EQ(rawstore_submit_async(st, t, async_cb, &s), 0);
	}
	while (s.done < n)
		usleep(1000);
	EXPECT_EQ(s.errors, 0);
	ASSERT_EQ(rawstore_perf_get(st, &p1), 0);
	EXPECT_EQ(p1.txns_committed - p0.txns_committed, (uint64_t)n);
	EXPECT_LE(p1.commit_groups - p0.commit_groups, (uint64_t)n);
	/* one WAL sync makes every group written before it durable */
	EXPECT_LE(commit_syncs(st, p1) - commit_syncs(st, p0), p1.commit_groups - p0.commit_groups);
	EXPECT_GE(commit_syncs(st, p1) - commit_syncs(st, p0), 1u);
	for (int i = 0; i < n; i++)
		ASSERT_EQ(Read("c", "a" + std::to_string(i), 0, 9000), pattern(8192, i));
}

/* The callback of the first transaction holds the commit thread. */
struct Gate {
	std::atomic<bool> entered{ false }, open{ false };
};

static void gate_cb(struct rawstore_txn *t, int result, void *arg)
{
	auto g = static_cast<Gate *>(arg);
	(void)t;
	(void)result;
	g->entered = true;
	while (!g->open)
		usleep(1000);
}

static void count_cb(struct rawstore_txn *t, int result, void *arg)
{
	auto s = static_cast<AsyncState *>(arg);
	(void)t;
	if (result)
		s->errors++;
	s->done++;
}

TEST_F(StoreTest, ResubmittingAnInFlightTransactionIsRefused)
{
	ASSERT_EQ(MkColl("c"), 0);
	/* static: callbacks may still run from TearDown if an assertion returns early */
	static Gate g;
	static AsyncState s;
	struct Opener {
		~Opener() { g.open = true; }
	} opener;
	struct rawstore_txn *a = T(), *b = T();
	rawstore_txn_touch(a, "c", "a", 1);
	rawstore_txn_touch(b, "c", "b", 1);
	ASSERT_EQ(rawstore_submit_async(st, a, gate_cb, &g), 0);
	while (!g.entered)
		usleep(1000);
	/* a's callback runs on the commit thread: b cannot complete meanwhile */
	ASSERT_EQ(rawstore_submit_async(st, b, count_cb, &s), 0);
	EXPECT_EQ(rawstore_submit_async(st, b, count_cb, &s), -EBUSY);
	EXPECT_EQ(rawstore_submit(st, b), -EBUSY);
	EXPECT_EQ(rawstore_txn_touch(b, "c", "x", 1), -EBUSY); /* nor modified */
	EXPECT_EQ(s.done, 0);
	g.open = true;
	while (s.done < 1)
		usleep(1000);
	EXPECT_EQ(s.done, 1); /* b ran once */
	EXPECT_EQ(s.errors, 0);
	/* once complete, b may be submitted again */
	EXPECT_EQ(rawstore_submit(st, b), 0);
	rawstore_txn_free(a);
	rawstore_txn_free(b);
	struct rawstore_stat os;
	os.struct_size = sizeof(os);
	EXPECT_EQ(rawstore_stat(st, "c", "b", 1, &os), 0);
	EXPECT_EQ(rawstore_stat(st, "c", "x", 1, &os), -ENOENT);
}

TEST_F(StoreTest, FlushesAndSyncsPerTransaction)
{
	ASSERT_EQ(MkColl("c"), 0);
	struct rawstore_perf a, b;
	a.struct_size = b.struct_size = sizeof(a);
	ASSERT_EQ(rawstore_perf_get(st, &a), 0);
	ASSERT_EQ(Write("c", "big", 0, pattern(65536, 1)), 0);
	ASSERT_EQ(rawstore_perf_get(st, &b), 0);
	EXPECT_LE(b.dev_flushes + b.dev_flushes_skipped - a.dev_flushes - a.dev_flushes_skipped,
		  2u);
	EXPECT_GE(b.dev_flushes + b.dev_flushes_skipped - a.dev_flushes - a.dev_flushes_skipped,
		  1u);
	EXPECT_EQ(commit_syncs(st, b) - commit_syncs(st, a), 1u);
	a = b;
	ASSERT_EQ(Write("c", "small", 0, pattern(512, 1)), 0);
	ASSERT_EQ(rawstore_perf_get(st, &b), 0);
	/* inline: no data flush; one record flush with the device journal */
	EXPECT_EQ(b.dev_flushes - b.journal_flushes, a.dev_flushes - a.journal_flushes);
	EXPECT_EQ(b.journal_flushes - a.journal_flushes, journaled(st) ? 1u : 0u);
	EXPECT_EQ(commit_syncs(st, b) - commit_syncs(st, a), 1u);
	EXPECT_EQ(b.inline_writes - a.inline_writes, 1u);
}

TEST_F(StoreTest, NamesAreBytesAndListInOrder)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(MkColl("d"), 0);
	std::vector<std::string> names = { std::string("a\0b", 3), "b", std::string(1, '\xff'),
					   std::string("a", 1), "zz", std::string(2048, 'q') };
	for (auto &n : names)
		ASSERT_EQ(Write("c", n, 0, "x"), 0);
	ASSERT_EQ(Write("d", "other", 0, "x"), 0);
	std::vector<std::string> got, want = names;
	std::sort(want.begin(), want.end());
	EXPECT_EQ(rawstore_list(st, "c", nullptr, 0, 0, collect_names, &got), 6);
	EXPECT_EQ(got, want);
	got.clear();
	EXPECT_EQ(rawstore_list(st, "c", "b", 1, 2, collect_names, &got), 2);
	EXPECT_EQ(got, std::vector<std::string>(want.begin() + 2, want.begin() + 4));
	EXPECT_EQ(rawstore_list(st, "nope", nullptr, 0, 0, collect_names, &got), -ENOENT);
	got.clear();
	EXPECT_EQ(rawstore_coll_list(st, collect_names, &got), 2);
	EXPECT_EQ(got, (std::vector<std::string>{ "c", "d" }));
}

TEST_F(StoreTest, ReclaimPunchesFreedRanges)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "a", 0, pattern(1 << 20, 1)), 0);
	EXPECT_EQ(Statfs().unpunched, 0u);
	ASSERT_EQ(Write("c", "a", 0, pattern(1 << 20, 2)), 0);
	EXPECT_EQ(Statfs().unpunched, 1u << 20);
	Reopen();
	EXPECT_EQ(Statfs().unpunched, 1u << 20);
	ASSERT_EQ(rawstore_reclaim(st), 0);
	EXPECT_EQ(Statfs().unpunched, 0u);
	struct rawstore_perf p;
	p.struct_size = sizeof(p);
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	EXPECT_EQ(p.bytes_punched, 1u << 20);
	EXPECT_EQ(Read("c", "a", 0, 1 << 20), pattern(1 << 20, 2));
	Reopen();
	EXPECT_EQ(Statfs().unpunched, 0u);
	ExpectClean();
}

TEST_F(StoreTest, SmallOverwritesAreDeferredThroughTheWal)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string m = pattern(65536, 1);
	ASSERT_EQ(Write("c", "d", 0, m), 0);
	auto f0 = Statfs();
	struct rawstore_perf a, b;
	a.struct_size = b.struct_size = sizeof(a);
	ASSERT_EQ(rawstore_perf_get(st, &a), 0);
	std::string d = pattern(100, 2), e = pattern(8192, 3);
	ASSERT_EQ(Write("c", "d", 5000, d), 0);
	ASSERT_EQ(Write("c", "d", 16384, e), 0);
	m.replace(5000, 100, d);
	m.replace(16384, 8192, e);
	rs_debug_commit_settle(st); /* the in-place writes are done */
	ASSERT_EQ(rawstore_perf_get(st, &b), 0);
	EXPECT_EQ(b.deferred_writes - a.deferred_writes, 2u);
	/* no data flush; the device journal flushes each record */
	EXPECT_EQ(b.dev_flushes - b.journal_flushes, a.dev_flushes - a.journal_flushes);
	EXPECT_EQ(b.journal_flushes - a.journal_flushes, journaled(st) ? 2u : 0u);
	EXPECT_EQ(commit_syncs(st, b) - commit_syncs(st, a), 2u);
	auto f1 = Statfs();
	EXPECT_EQ(f1.allocated, f0.allocated); /* in place: nothing allocated */
	EXPECT_EQ(f1.unpunched, f0.unpunched); /* nothing freed */
	EXPECT_EQ(Read("c", "d", 0, 70000), m);
	/* several deferred writes to one block in one group read back right */
	struct rawstore_txn *t = T();
	for (int i = 0; i < 10; i++) {
		std::string x(1, (char)('a' + i));
		rawstore_txn_write(t, "c", "d", 1, 4096 + (uint64_t)i * 3, x.data(), 1);
		m[4096 + (size_t)i * 3] = (char)('a' + i);
	}
	rawstore_txn_clone(t, "c", "d", 1, "copy", 4);
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(Read("c", "d", 0, 70000), m);
	EXPECT_EQ(Read("c", "copy", 0, 70000), m);
	Reopen();
	EXPECT_EQ(Read("c", "d", 0, 70000), m);
	ExpectClean();
	/* with deferred writes off, the same overwrite redirects */
	ASSERT_EQ(rawstore_close(st), 0);
	struct rawstore_open_opts oo;
	rawstore_open_opts_init(&oo);
	oo.deferred_max = 0;
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &oo, &st), 0);
	ASSERT_EQ(Write("c", "e", 0, m), 0);
	ASSERT_EQ(Write("c", "e", 5000, "zz"), 0);
	m.replace(5000, 2, "zz");
	EXPECT_EQ(Statfs().unpunched, 4096u);
	EXPECT_EQ(Read("c", "e", 0, 70000), m);
	ExpectClean();
}

struct CbState {
	struct rawstore *st;
	std::atomic<int> done{ 0 };
	int sync_result = 0;
};

static void blocking_cb(struct rawstore_txn *t, int result, void *arg)
{
	auto s = static_cast<CbState *>(arg);
	(void)result;
	s->sync_result = rawstore_submit(s->st, t);
	s->done++;
}

TEST_F(StoreTest, BlockingSubmitFromCallbackIsRefused)
{
	ASSERT_EQ(MkColl("c"), 0);
	CbState s;
	s.st = st;
	struct rawstore_txn *t = T();
	rawstore_txn_touch(t, "c", "a", 1);
	ASSERT_EQ(rawstore_submit_async(st, t, blocking_cb, &s), 0);
	while (!s.done)
		usleep(1000);
	EXPECT_EQ(s.sync_result, -EDEADLK);
	rawstore_txn_free(t);
}

TEST_F(StoreTest, AppendsStayContiguousWithAHint)
{
	ASSERT_EQ(MkColl("c"), 0);
	/* fragment: small objects with gaps between them */
	for (int i = 0; i < 64; i++)
		ASSERT_EQ(Write("c", "s" + std::to_string(i), 0, pattern(8192, i)), 0);
	struct rawstore_txn *t = T();
	for (int i = 0; i < 64; i += 2) {
		std::string n = "s" + std::to_string(i);
		rawstore_txn_remove(t, "c", n.data(), n.size());
	}
	ASSERT_EQ(Submit(t), 0);
	t = T();
	rawstore_txn_alloc_hint(t, "c", "log", 3, 1 << 20);
	ASSERT_EQ(Submit(t), 0);
	std::string all;
	for (int i = 0; i < 16; i++) {
		std::string d = pattern(65536, 100 + i);
		ASSERT_EQ(Write("c", "log", all.size(), d), 0);
		all += d;
	}
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	ASSERT_EQ(rawstore_stat(st, "c", "log", 3, &s), 0);
	EXPECT_EQ(s.extents, 1u);
	EXPECT_EQ(s.allocated, 1u << 20);
	EXPECT_EQ(Read("c", "log", 0, 2 << 20), all);
}

TEST_F(StoreTest, FullDeviceStillTakesSmallOverwrites)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string d = pattern(65536, 1);
	ASSERT_EQ(Write("c", "keep", 0, d), 0);
	int ret = 0;
	for (int i = 0; i < 100 && !ret; i++)
		ret = Write("c", "fill" + std::to_string(i), 0, std::string(1 << 20, 'f'));
	ASSERT_EQ(ret, -ENOSPC);
	uint64_t rest = Statfs().free;
	if (rest) {
		ASSERT_EQ(Write("c", "rest", 0, std::string(rest, 'r')), 0);
	}
	ASSERT_EQ(Statfs().free, 0u);
	/* redirecting needs free units; a deferred in-place overwrite does not */
	EXPECT_EQ(Write("c", "keep", 0, pattern(65536, 2)), -ENOSPC);
	ASSERT_EQ(Write("c", "keep", 100, "in place"), 0);
	d.replace(100, 8, "in place");
	EXPECT_EQ(Read("c", "keep", 0, 70000), d);
	ExpectClean(false);
}

TEST_F(StoreTest, ClonesShareUnitsUntilWritten)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string d = pattern(1 << 20, 1);
	ASSERT_EQ(Write("c", "src", 0, d), 0);
	uint64_t base = Statfs().allocated;
	struct rawstore_txn *t = T();
	rawstore_txn_clone(t, "c", "src", 3, "a", 1);
	rawstore_txn_clone(t, "c", "src", 3, "b", 1);
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(Statfs().allocated, base); /* nothing copied */
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	ASSERT_EQ(rawstore_stat(st, "c", "a", 1, &s), 0);
	EXPECT_EQ(s.allocated, 1u << 20);
	ExpectClean();
	/* a small overwrite of a shared unit must not go in place */
	ASSERT_EQ(Write("c", "a", 10, "changed"), 0);
	std::string da = d;
	da.replace(10, 7, "changed");
	EXPECT_EQ(Read("c", "a", 0, 2 << 20), da);
	EXPECT_EQ(Read("c", "src", 0, 2 << 20), d);
	EXPECT_EQ(Read("c", "b", 0, 2 << 20), d);
	EXPECT_EQ(Statfs().allocated, base + 4096);
	/* truncate, zero and remove drop references, not data others use */
	t = T();
	rawstore_txn_truncate(t, "c", "b", 1, 100000);
	rawstore_txn_zero(t, "c", "src", 3, 0, 65536);
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(Read("c", "a", 0, 2 << 20), da);
	EXPECT_EQ(Read("c", "b", 0, 2 << 20), d.substr(0, 100000));
	ExpectClean();
	Reopen();
	t = T();
	rawstore_txn_remove(t, "c", "src", 3);
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(Read("c", "a", 0, 2 << 20), da);
	ExpectClean();
	t = T();
	rawstore_txn_remove(t, "c", "a", 1);
	rawstore_txn_remove(t, "c", "b", 1);
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(Statfs().allocated, 0u);
	ExpectClean();
}

TEST_F(StoreTest, LastDeferredWriteToAUnitWins)
{
	/* many deferred writes to one unit in one commit group land in order */
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "u", 0, pattern(16384, 0)), 0);
	for (int round = 0; round < 10; round++) {
		AsyncState s;
		const int n = 16;
		for (int i = 0; i < n; i++) {
			struct rawstore_txn *t = T();
			std::string d = pattern(4096, (unsigned)(round * n + i + 1));
			rawstore_txn_write(t, "c", "u", 1, 4096, d.data(), d.size());
			ASSERT_EQ(rawstore_submit_async(st, t, async_cb, &s), 0);
		}
		while (s.done < n)
			usleep(500);
		EXPECT_EQ(s.errors, 0);
		EXPECT_EQ(Read("c", "u", 4096, 4096), pattern(4096, (unsigned)(round * n + n)));
	}
	ExpectClean();
}

TEST_F(StoreTest, EmptyObjectGrowsPastInlineLimitWithoutInlineData)
{
	ASSERT_EQ(MkColl("c"), 0);
	struct rawstore_txn *t = T();
	rawstore_txn_touch(t, "c", "a", 1);
	rawstore_txn_truncate(t, "c", "a", 1, 5000);
	rawstore_txn_touch(t, "c", "b", 1);
	rawstore_txn_zero(t, "c", "b", 1, 0, 9000);
	ASSERT_EQ(Submit(t), 0);
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	ASSERT_EQ(rawstore_stat(st, "c", "a", 1, &s), 0);
	EXPECT_EQ(s.size, 5000u);
	EXPECT_EQ(s.is_inline, 0);
	EXPECT_EQ(s.allocated, 0u); /* a hole, neither inline nor allocated */
	ASSERT_EQ(rawstore_stat(st, "c", "b", 1, &s), 0);
	EXPECT_EQ(s.size, 9000u);
	EXPECT_EQ(s.allocated, 0u);
	ASSERT_EQ(Write("c", "a", 100000, "x"), 0);
	EXPECT_EQ(Read("c", "a", 0, 200000), std::string(100000, 0) + "x");
	ExpectClean();
}

/*
 * rawstore_txn_write_nocopy: the data goes to the device from the
 * caller's buffer (a change made to it after the call, before the commit,
 * reaches the device, and the checksums computed at the call catch it:
 * -EIO, never the changed bytes); misaligned arguments are refused.
 */
TEST_F(StoreTest, WriteNocopyWritesFromTheCallersBuffer)
{
	ASSERT_EQ(MkColl("c"), 0);
	PageBuf b(16, 0);
	const std::string d = pattern(65536, 21);
	memcpy(b.p, d.data(), d.size());

	struct rawstore_txn *t = T();
	EXPECT_EQ(rawstore_txn_write_nocopy(t, "c", "x", 1, 100, b.p, 65536), -EINVAL);
	EXPECT_EQ(rawstore_txn_write_nocopy(t, "c", "x", 1, 0, b.p + 512, 65536), -EINVAL);
	EXPECT_EQ(rawstore_txn_write_nocopy(t, "c", "x", 1, 0, b.p, 65000), -EINVAL);
	EXPECT_EQ(rawstore_txn_write_nocopy(t, "c", "x", 1, 0, nullptr, 4096), -EINVAL);
	EXPECT_EQ(rawstore_txn_count(t), 0u);
	ASSERT_EQ(rawstore_txn_write_nocopy(t, "c", "a", 1, 0, b.p, 65536), 0);
	ASSERT_EQ(Submit(t), 0);
	memset(b.p, 0xaa, b.len);	/* the caller's again */
	EXPECT_TRUE(Read("c", "a", 0, 70000) == d);

	/* Changed between the call and the commit: the device gets the new
	 * bytes, the checksums are the old ones'. */
	memcpy(b.p, d.data(), d.size());
	t = T();
	ASSERT_EQ(rawstore_txn_write_nocopy(t, "c", "b", 1, 0, b.p, 65536), 0);
	b.p[8192] ^= 1;
	ASSERT_EQ(Submit(t), 0);
	ssize_t r = 0;
	char one;
	EXPECT_EQ(rawstore_read(st, "c", "b", 1, 8192, &one, 1), -EIO);
	Read("c", "b", 0, 4096, &r);
	EXPECT_EQ(r, 4096);	/* the other blocks are as written */
	Reopen();
	EXPECT_TRUE(Read("c", "a", 0, 70000) == d);
}

/*
 * Issue 39: rawstore_perf counts the copies of write data into the store's
 * buffers: one per rawstore_txn_write of a large write (its bytes
 * counted), none for rawstore_txn_write_nocopy; a buffer reused from the
 * pool is not counted as fresh.
 */
TEST_F(StoreTest, PerfCountsDataCopies)
{
	ASSERT_EQ(MkColl("c"), 0);
	PageBuf b(16, 0);
	const std::string d = pattern(65536, 7);
	memcpy(b.p, d.data(), d.size());
	struct rawstore_perf p0 = {}, p1 = {}, p2 = {}, p3 = {};
	p0.struct_size = p1.struct_size = p2.struct_size = p3.struct_size = sizeof(p0);

	ASSERT_EQ(rawstore_perf_get(st, &p0), 0);
	struct rawstore_txn *t = T();
	ASSERT_EQ(rawstore_txn_write(t, "c", "a", 1, 0, d.data(), d.size()), 0);
	ASSERT_EQ(Submit(t), 0);
	ASSERT_EQ(rawstore_perf_get(st, &p1), 0);
	EXPECT_EQ(p1.data_copies - p0.data_copies, 1u);
	EXPECT_EQ(p1.data_copy_bytes - p0.data_copy_bytes, 65536u);

	t = T();
	ASSERT_EQ(rawstore_txn_write_nocopy(t, "c", "b", 1, 0, b.p, 65536), 0);
	ASSERT_EQ(Submit(t), 0);
	ASSERT_EQ(rawstore_perf_get(st, &p2), 0);
	EXPECT_EQ(p2.data_copies, p1.data_copies);
	EXPECT_EQ(p2.data_copy_bytes, p1.data_copy_bytes);
	EXPECT_EQ(p2.iobuf_fresh, p1.iobuf_fresh);

	/* The same size again: the first one's buffer, back in the pool. */
	for (int i = 0; i < 4; i++) {
		t = T();
		ASSERT_EQ(rawstore_txn_write(t, "c", "c", 1, 0, d.data(), d.size()), 0);
		ASSERT_EQ(Submit(t), 0);
	}
	ASSERT_EQ(rawstore_perf_get(st, &p3), 0);
	EXPECT_EQ(p3.data_copies - p2.data_copies, 4u);
	EXPECT_EQ(p3.iobuf_fresh, p2.iobuf_fresh);
	EXPECT_TRUE(Read("c", "a", 0, 65536) == d);
	EXPECT_TRUE(Read("c", "b", 0, 65536) == d);
}

/*
 * Issue 24, item 7: a nocopy buffer changed between the call and the
 * commit is never committed unnoticed, whatever path its bytes take:
 * inline (4 KiB or less), a deferred overwrite, checksum blocks larger
 * than 4 KiB (recomputed at apply).  Either the transaction fails with
 * -EIO and changes nothing, or it commits and the changed block reads
 * -EIO; never the changed bytes.  An unchanged buffer commits as usual.
 */
class NocopyPromiseTest : public StoreTest {
protected:
	/* Write @len bytes of @d at @off of @name from a caller's buffer,
	 * flip a byte of it at @flip (or not, -1) before the commit. */
	void Check(const std::string &name, uint64_t off, const std::string &d, long flip)
	{
		PageBuf b(d.size() / 4096, 0);
		memcpy(b.p, d.data(), d.size());
		std::string before;
		ssize_t r0 = -ENOENT;
		struct rawstore_stat s;
		s.struct_size = sizeof(s);
		if (rawstore_stat(st, "c", name.data(), name.size(), &s) == 0)
			before = Read("c", name, 0, s.size + 4096, &r0);
		struct rawstore_txn *t = T();
		ASSERT_EQ(rawstore_txn_write_nocopy(t, "c", name.data(), name.size(), off, b.p,
						    d.size()), 0);
		if (flip >= 0)
			b.p[flip] ^= 0x40;
		int ret = Submit(t);
		if (flip < 0) {
			ASSERT_EQ(ret, 0) << rawstore_errmsg();
			std::string got = Read("c", name, off, d.size());
			EXPECT_TRUE(got == d) << name;
			return;
		}
		if (ret) {
			EXPECT_EQ(ret, -EIO) << name;
			EXPECT_NE(std::string(rawstore_errmsg()).find("nocopy"), std::string::npos)
				<< rawstore_errmsg();
			ssize_t r = -ENOENT;
			std::string now;
			if (rawstore_stat(st, "c", name.data(), name.size(), &s) == 0)
				now = Read("c", name, 0, s.size + 4096, &r);
			EXPECT_EQ(r, r0) << name << ": the failed write changed nothing";
			EXPECT_TRUE(now == before) << name;
			return;
		}
		char one;
		uint64_t at = off + (uint64_t)flip;
		EXPECT_EQ(rawstore_read(st, "c", name.data(), name.size(), at, &one, 1), -EIO)
			<< name << ": committed, so the changed block must read -EIO";
	}
};

TEST_F(NocopyPromiseTest, ChangedBufferIsNeverCommittedUnnoticed)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "o", 0, pattern(65536, 1)), 0);
	Check("inline", 0, pattern(4096, 2), 100);		/* <= inline_max */
	Check("o", 8192, pattern(4096, 3), 10);			/* deferred overwrite */
	Check("small", 0, pattern(8192, 4), 5000);		/* new, small */
	Check("big", 0, pattern(1 << 20, 5), 300000);		/* new, direct */
	/* unchanged: all commit */
	Check("inline", 0, pattern(4096, 6), -1);
	Check("o", 8192, pattern(4096, 7), -1);
	Check("small", 0, pattern(8192, 8), -1);
	/* big's changed block fails its checksum by design: not fsck's */
	struct rawstore_txn *t = T();
	rawstore_txn_remove(t, "c", "big", 3);
	ASSERT_EQ(Submit(t), 0);
	ExpectClean();
}

/* Checksum blocks of 16 KiB: recomputed at apply from the caller's buffer. */
TEST_F(NocopyPromiseTest, ChangedBufferWithLargeChecksumBlocks)
{
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	meta = tmp.path + "/meta16k";
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	mo.min_alloc_size = 16384;
	mo.csum_block_size = 16384;
	mo.inline_max = 0;
	mo.zero_policy = RAWSTORE_ZERO_PAD;
	mo.force = 1;
	ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0) << rawstore_errmsg();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ASSERT_EQ(MkColl("c"), 0);
	Check("big", 0, pattern(1 << 20, 9), 200000);
	Check("big2", 0, pattern(1 << 20, 10), -1);
	ExpectClean();
}

/*
 * Units a nocopy write covers only partly get their old bytes through a
 * private buffer: nothing is written into the caller's buffer around or
 * within its data, and the object reads as old bytes + new data.
 */
TEST_F(StoreTest, WriteNocopyPartialUnitsLeaveTheCallersBufferAlone)
{
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	meta = tmp.path + "/meta16k";
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	mo.min_alloc_size = 16384;
	mo.inline_max = 0;
	mo.zero_policy = RAWSTORE_ZERO_PAD;
	mo.force = 1;
	ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0) << rawstore_errmsg();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ASSERT_EQ(MkColl("c"), 0);
	const std::string old = pattern(65536, 22);
	ASSERT_EQ(Write("c", "o", 0, old), 0);

	/* pages 0 and 3 guard, 1-2 are the data: [4096, 12288) of the object,
	 * inside its first 16 KiB unit */
	PageBuf b(4, 0x5c);
	const std::string d = pattern(8192, 23);
	memcpy(b.p + 4096, d.data(), d.size());
	struct rawstore_txn *t = T();
	ASSERT_EQ(rawstore_txn_write_nocopy(t, "c", "o", 1, 4096, b.p + 4096, 8192), 0);
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(b.str(0, 4096), std::string(4096, '\x5c'));
	EXPECT_TRUE(b.str(4096, 8192) == d);
	EXPECT_EQ(b.str(12288, 4096), std::string(4096, '\x5c'));
	std::string want = old;
	want.replace(4096, 8192, d);
	EXPECT_TRUE(Read("c", "o", 0, 70000) == want);
	Reopen();
	EXPECT_TRUE(Read("c", "o", 0, 70000) == want);
	ExpectClean();
}
