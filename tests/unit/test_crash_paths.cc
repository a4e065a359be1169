// Crashes off the commit path (issue 13, item 2): a forked child dies
// while deferred writes are replayed at open, between a punch and its
// record in reclaim, before fsck's repairs commit, before a rebuilt free
// list commits, and in the middle of mkfs.  Afterwards nothing
// acknowledged is lost, nothing is half-applied, a deep fsck is clean, and
// an interrupted mkfs leaves either a complete store or a device that
// open refuses as "not a store".  The device is filled with a stale-data
// marker first, and no read after a crash may show it (item 6).
#include <rocksdb/c.h>
#include <sys/wait.h>

#include <functional>
#include <map>

#include "marker.h"

extern "C" {
#include "debug.h"
}

namespace {

/* Direct access to the metadata, to damage it on purpose. */
struct Db {
	explicit Db(const std::string &path)
	{
		rocksdb_options_t *o = rocksdb_options_create();
		char *err = nullptr;
		db = rocksdb_open(o, path.c_str(), &err);
		rocksdb_options_destroy(o);
		EXPECT_EQ(err, nullptr);
		wo = rocksdb_writeoptions_create();
		rocksdb_writeoptions_set_sync(wo, 1);
	}
	~Db()
	{
		rocksdb_close(db);
		rocksdb_writeoptions_destroy(wo);
	}
	void Put(const std::string &k, const std::string &v)
	{
		char *err = nullptr;
		rocksdb_put(db, wo, k.data(), k.size(), v.data(), v.size(), &err);
		EXPECT_EQ(err, nullptr);
	}
	void Del(const std::string &k)
	{
		char *err = nullptr;
		rocksdb_delete(db, wo, k.data(), k.size(), &err);
		EXPECT_EQ(err, nullptr);
	}
	std::string First(const std::string &prefix)
	{
		rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
		rocksdb_iterator_t *it = rocksdb_create_iterator(db, ro);
		std::string k;
		rocksdb_iter_seek(it, prefix.data(), prefix.size());
		if (rocksdb_iter_valid(it)) {
			size_t kl;
			const char *kp = rocksdb_iter_key(it, &kl);
			k.assign(kp, kl);
		}
		rocksdb_iter_destroy(it);
		rocksdb_readoptions_destroy(ro);
		return k.compare(0, prefix.size(), prefix) ? std::string() : k;
	}
	rocksdb_t *db;
	rocksdb_writeoptions_t *wo;
};

std::string be64(uint64_t v)
{
	std::string s(8, 0);
	for (int i = 7; i >= 0; i--, v >>= 8)
		s[(size_t)i] = (char)(v & 0xff);
	return s;
}

} // namespace

class CrashPathTest : public MarkerStoreTest {
protected:
	std::map<std::string, std::string> model;

	void CloseStore()
	{
		ASSERT_EQ(rawstore_close(st), 0);
		st = nullptr;
	}
	/* Run @fn in a forked child; its exit status (-1 if it did not exit). */
	static int InChild(const std::function<int()> &fn)
	{
		pid_t pid = fork();
		if (pid == 0)
			_exit(fn());
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
			return -1;
		return WEXITSTATUS(status);
	}
	int OpenWith(const struct rawstore_open_opts *o, struct rawstore **s)
	{
		return rawstore_open(dev.c_str(), meta.c_str(), o, s);
	}
	void Put(const std::string &n, uint64_t off, const std::string &d)
	{
		ASSERT_EQ(Write("c", n, off, d), 0) << rawstore_errmsg();
		std::string &m = model[n];
		if (m.size() < off + d.size())
			m.resize(off + d.size(), 0);
		m.replace(off, d.size(), d);
	}
	void Rm(const std::string &n)
	{
		struct rawstore_txn *t = T();
		rawstore_txn_remove(t, "c", n.data(), n.size());
		ASSERT_EQ(Submit(t), 0);
		model.erase(n);
	}
	/* Everything acknowledged reads back exactly; no marker; fsck clean. */
	void ExpectRecovered()
	{
		for (auto &kv : model)
			EXPECT_TRUE(MRead("c", kv.first, 0, kv.second.size() + 4096) == kv.second)
				<< kv.first;
		EXPECT_EQ(List("c").size(), model.size());
		EXPECT_EQ(Statfs().objects, model.size());
		ScanAll("c");
		ExpectClean();
		/* and the store works on */
		Put("after-crash", 3, pattern(50000, 99));
		EXPECT_TRUE(MRead("c", "after-crash", 0, 60000) == model["after-crash"]);
		ExpectClean();
	}
	uint64_t Replayed()
	{
		struct rawstore_perf p;
		p.struct_size = sizeof(p);
		EXPECT_EQ(rawstore_perf_get(st, &p), 0);
		return p.deferred_replayed;
	}
};

/*
 * Leave deferred records behind (crash after their commit, before their
 * in-place writes), then crash again while open replays them.
 */
class ReplayCrashTest : public CrashPathTest,
			public ::testing::WithParamInterface<std::pair<int, int>> {};

TEST_P(ReplayCrashTest, ReplayIsRedone)
{
	int point = GetParam().first, countdown = GetParam().second;
	ASSERT_EQ(MkColl("c"), 0);
	Put("d1", 0, pattern(65536, 1));
	Put("d2", 0, pattern(65536, 2));
	Put("x", 0, pattern(30000, 3));
	CloseStore();
	std::string u1 = pattern(3000, 4), u2 = pattern(5000, 5), u3 = pattern(700, 6);
	int r = InChild([&] {
		struct rawstore *s;
		if (OpenWith(nullptr, &s))
			return 1;
		rs_debug_set_crash_point(RS_CRASH_BEFORE_DEFERRED, 1);
		struct rawstore_txn *t;
		rawstore_txn_new(&t);
		rawstore_txn_write(t, "c", "d1", 2, 1000, u1.data(), u1.size());
		rawstore_txn_write(t, "c", "d2", 2, 20000, u2.data(), u2.size());
		rawstore_txn_write(t, "c", "d1", 2, 50001, u3.data(), u3.size());
		rawstore_submit(s, t);
		/* with the device journal the crash point (after the
		 * acknowledgement) is reached before close returns */
		rawstore_close(s);
		return 0;
	});
	ASSERT_EQ(r, RS_CRASH_EXIT) << "no deferred records left behind";
	/* committed before the crash: these are acknowledged-equivalent */
	model["d1"].replace(1000, u1.size(), u1);
	model["d2"].replace(20000, u2.size(), u2);
	model["d1"].replace(50001, u3.size(), u3);
	r = InChild([&] {
		struct rawstore *s;
		rs_debug_set_crash_point(point, countdown);
		if (OpenWith(nullptr, &s))
			return 1;
		return 0;
	});
	EXPECT_EQ(r, RS_CRASH_EXIT) << "crash point " << point << " not hit in replay";
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_GE(Replayed(), 3u); /* every record is still there to replay */
	ExpectRecovered();
	Reopen();
	EXPECT_EQ(Replayed(), 0u);
	ExpectRecovered();
}

INSTANTIATE_TEST_SUITE_P(Open, ReplayCrashTest,
			 ::testing::Values(std::make_pair((int)RS_CRASH_REPLAY_MID, 1),
					   std::make_pair((int)RS_CRASH_REPLAY_MID, 2),
					   std::make_pair((int)RS_CRASH_REPLAY_FLUSHED, 1)),
			 [](const ::testing::TestParamInfo<std::pair<int, int>> &i) {
				 return std::string(i.param.first == RS_CRASH_REPLAY_MID
							    ? "mid"
							    : "flushed") +
					"_" + std::to_string(i.param.second);
			 });

/* Reclaim dies after punching a range and before recording it. */
TEST_F(CrashPathTest, ReclaimBetweenPunchAndRecord)
{
	ASSERT_EQ(MkColl("c"), 0);
	for (int i = 0; i < 6; i++)
		Put("o" + std::to_string(i), 0, pattern(300000, 10 + i));
	for (int i = 0; i < 6; i += 2) /* three separate freed ranges */
		Rm("o" + std::to_string(i));
	uint64_t unp = Statfs().unpunched, free0 = Statfs().free;
	ASSERT_GE(unp, 3 * 300000u);
	CloseStore();
	int r = InChild([&] {
		struct rawstore *s;
		if (OpenWith(nullptr, &s))
			return 1;
		rs_debug_set_crash_point(RS_CRASH_SPACE_IO_DONE, 1);
		rawstore_reclaim(s);
		return 0;
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	/* nothing was recorded: all three ranges still await punching */
	EXPECT_EQ(Statfs().unpunched, unp);
	EXPECT_EQ(Statfs().free, free0);
	ExpectClean();
	ASSERT_EQ(rawstore_reclaim(st), 0) << rawstore_errmsg(); /* punching twice is fine */
	EXPECT_EQ(Statfs().unpunched, 0u);
	/* partial writes into the punched space read zeros around the data */
	for (int i = 0; i < 10; i++)
		Put("n" + std::to_string(i), 100 + (uint64_t)i, pattern(7000, 30 + i));
	ExpectRecovered();
}

/* fsck --repair dies with its repairs staged: none or all of them apply. */
TEST_F(CrashPathTest, FsckRepairInterrupted)
{
	ASSERT_EQ(MkColl("c"), 0);
	Put("obj", 0, pattern(20000, 1));
	Put("obj2", 0, pattern(70000, 2));
	uint64_t free0 = Statfs().free;
	CloseStore();
	{
		Db db(meta);
		std::string k = db.First("F");
		ASSERT_FALSE(k.empty());
		db.Del(k); /* a leak */
		db.Put("X" + be64(999) + "attr", "v"); /* an orphan */
	}
	int r = InChild([&] {
		struct rawstore *s;
		if (OpenWith(nullptr, &s))
			return 1;
		rs_debug_set_crash_point(RS_CRASH_FSCK_REPAIR, 1);
		struct rawstore_fsck_opts o;
		rawstore_fsck_opts_init(&o);
		o.repair = 1;
		rawstore_fsck(s, &o, nullptr);
		return 0;
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	/* nothing half-applied: both problems are still there */
	struct rawstore_fsck_opts o;
	struct rawstore_fsck_result res;
	rawstore_fsck_opts_init(&o);
	res.struct_size = sizeof(res);
	EXPECT_EQ(rawstore_fsck(st, &o, &res), -EUCLEAN);
	EXPECT_EQ(res.leaks, 1u);
	EXPECT_EQ(res.errors, 2u);
	EXPECT_LT(Statfs().free, free0);
	o.repair = 1;
	EXPECT_EQ(rawstore_fsck(st, &o, &res), 0);
	EXPECT_EQ(res.repaired, 2u);
	EXPECT_EQ(Statfs().free, free0);
	Reopen();
	EXPECT_EQ(Statfs().free, free0);
	ExpectRecovered();
}

/* Open with rebuild_freelist dies before the rebuilt list commits. */
TEST_F(CrashPathTest, FreelistRebuildInterrupted)
{
	ASSERT_EQ(MkColl("c"), 0);
	for (int i = 0; i < 6; i++)
		Put("o" + std::to_string(i), 0, pattern(50000, 20 + i));
	Rm("o2");
	uint64_t free0 = Statfs().free, unp0 = Statfs().unpunched;
	CloseStore();
	{
		Db db(meta);
		std::string v(8, 0);
		v[1] = 0x10;
		db.Put("F" + be64((1 << 20) + 100), v); /* misaligned: corrupt list */
	}
	struct rawstore_open_opts ro;
	rawstore_open_opts_init(&ro);
	ro.rebuild_freelist = 1;
	int r = InChild([&] {
		struct rawstore *s;
		rs_debug_set_crash_point(RS_CRASH_REBUILD_FREELIST, 1);
		if (OpenWith(&ro, &s))
			return 1;
		return 0;
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	/* nothing committed: the list is still the corrupt one */
	EXPECT_EQ(Open(), -EUCLEAN);
	st = nullptr;
	ASSERT_EQ(OpenWith(&ro, &st), 0) << rawstore_errmsg();
	EXPECT_EQ(Statfs().free, free0);
	EXPECT_EQ(Statfs().unpunched, unp0);
	Reopen();
	EXPECT_EQ(Statfs().free, free0);
	ExpectRecovered();
}

/* mkfs dies after the metadata, before any superblock: not a usable
 * store; since the metadata holds the superblock's copy, open names fsck
 * --repair (issue 41), and mkfs is refused until forced. */
TEST_F(CrashPathTest, MkfsBeforeSuperblock)
{
	CloseStore();
	ASSERT_EQ(fill_marker(dev, dev_size), 0);
	std::string meta2 = tmp.path + "/meta2";
	int r = InChild([&] {
		rs_debug_set_crash_point(RS_CRASH_MKFS_META, 1);
		return rawstore_mkfs(dev.c_str(), meta2.c_str(), nullptr) ? 1 : 0;
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	meta = meta2;
	EXPECT_EQ(Open(), -EUCLEAN);
	EXPECT_NE(std::string(rawstore_errmsg()).find("both superblock copies are missing"),
		  std::string::npos)
		<< rawstore_errmsg();
	EXPECT_NE(std::string(rawstore_errmsg()).find("'rawstore fsck --repair'"),
		  std::string::npos)
		<< rawstore_errmsg();
	st = nullptr;
	/* running mkfs again is refused (the half-made metadata), then forced */
	EXPECT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), nullptr), -EEXIST);
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	mo.force = 1;
	ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0) << rawstore_errmsg();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ASSERT_EQ(MkColl("c"), 0);
	Put("a", 10, pattern(10000, 1));
	ExpectRecovered();
}

/* mkfs dies between the backup and the primary superblock: complete. */
TEST_F(CrashPathTest, MkfsBetweenSuperblocks)
{
	CloseStore();
	ASSERT_EQ(fill_marker(dev, dev_size), 0);
	std::string meta2 = tmp.path + "/meta2";
	int r = InChild([&] {
		rs_debug_set_crash_point(RS_CRASH_MKFS_BACKUP_SB, 1);
		return rawstore_mkfs(dev.c_str(), meta2.c_str(), nullptr) ? 1 : 0;
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	meta = meta2;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg(); /* from the backup copy */
	struct rawstore_fsck_opts o;
	struct rawstore_fsck_result res;
	rawstore_fsck_opts_init(&o);
	res.struct_size = sizeof(res);
	EXPECT_EQ(rawstore_fsck(st, &o, &res), -EUCLEAN); /* the primary is missing */
	o.repair = 1;
	EXPECT_EQ(rawstore_fsck(st, &o, &res), 0);
	Reopen();
	ASSERT_EQ(MkColl("c"), 0);
	Put("a", 10, pattern(10000, 1));
	ExpectRecovered();
}

/*
 * mkfs --force over a store with data dies before the new superblock: the
 * old superblock and the new metadata disagree, and open says so instead
 * of showing the old objects or new emptiness.
 */
TEST_F(CrashPathTest, ForcedMkfsOverAStoreInterrupted)
{
	ASSERT_EQ(MkColl("c"), 0);
	Put("old", 0, pattern(100000, 1));
	CloseStore();
	int r = InChild([&] {
		struct rawstore_mkfs_opts mo;
		test_mkfs_opts_init(&mo);
		mo.force = 1;
		rs_debug_set_crash_point(RS_CRASH_MKFS_META, 1);
		return rawstore_mkfs(dev.c_str(), meta.c_str(), &mo) ? 1 : 0;
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	int o = Open();
	EXPECT_TRUE(o == -EXDEV || o == -EMEDIUMTYPE) << o << ": " << rawstore_errmsg();
	if (!o)
		CloseStore();
	st = nullptr;
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	mo.force = 1;
	ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0) << rawstore_errmsg();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ASSERT_EQ(MkColl("c"), 0);
	model.clear();
	Put("a", 10, pattern(10000, 1));
	ExpectRecovered();
}

/*
 * Commit-path crashes on the marked device: afterwards, new partial
 * writes into the space the lost transaction had written read zeros
 * around their data, never the marker or the lost bytes (0xa5 after
 * RS_CRASH_DROP_UNFLUSHED).
 */
class CommitCrashMarkerTest : public CrashPathTest, public ::testing::WithParamInterface<int> {};

TEST_P(CommitCrashMarkerTest, NoStaleBytesAfterCrash)
{
	int point = GetParam();
	ASSERT_EQ(MkColl("c"), 0);
	Put("keep", 0, pattern(100000, 1));
	CloseStore();
	int r = InChild([&] {
		struct rawstore *s;
		if (OpenWith(nullptr, &s))
			return 1;
		rs_debug_set_crash_point(point, 1);
		struct rawstore_txn *t;
		rawstore_txn_new(&t);
		std::string d = pattern(1 << 20, 2);
		rawstore_txn_write(t, "c", "lost", 4, 5, d.data(), d.size());
		rawstore_submit(s, t);
		return 0;
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	if (rawstore_stat(st, "c", "lost", 4, &s) == 0) {
		/* before_sync: the unsynced batch survives a process crash (the
		 * page cache keeps it); a power cut is the powercut suite's */
		EXPECT_TRUE(point == RS_CRASH_AFTER_COMMIT || point == RS_CRASH_BEFORE_SYNC) << point;
		Put("lost", 5, pattern(1 << 20, 2));
	}
	for (int i = 0; i < 30; i++) {
		std::string n = "p" + std::to_string(i);
		Put(n, 4096 - 7 + (uint64_t)i * 3, pattern(9000, 50 + i));
		EXPECT_EQ(MRead("c", n, 0, 20000).find(std::string(64, '\xa5')), std::string::npos)
			<< n;
	}
	ExpectRecovered();
}

INSTANTIATE_TEST_SUITE_P(WritePath, CommitCrashMarkerTest,
			 ::testing::Values(RS_CRASH_MID_DATA, RS_CRASH_DROP_UNFLUSHED,
					   RS_CRASH_BEFORE_COMMIT, RS_CRASH_AFTER_COMMIT,
					   RS_CRASH_BEFORE_SYNC),
			 [](const ::testing::TestParamInfo<int> &i) {
				 switch (i.param) {
				 case RS_CRASH_MID_DATA: return std::string("mid_data");
				 case RS_CRASH_DROP_UNFLUSHED: return std::string("drop_unflushed");
				 case RS_CRASH_BEFORE_COMMIT: return std::string("before_commit");
				 case RS_CRASH_BEFORE_SYNC: return std::string("before_sync");
				 default: return std::string("after_commit");
				 }
			 });
