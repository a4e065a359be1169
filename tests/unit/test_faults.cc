// Device faults (issue 13, item 3): an I/O error injected as a device
// operation completes (store/debug.h, rs_debug_fail_io) fails the
// transaction that needed it and leaves the store consistent (deep fsck
// clean, other objects intact, also after reopen); a failed read returns
// -EIO and never bytes; a failed flush stops the store with a sticky error
// and reopening recovers everything acknowledged; -ENOSPC from the device
// (a file on a full tmpfs) and from the metadata file system (RocksDB on a
// full tmpfs) is reported and the store recovers once space is freed.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <map>

#include "helpers.h"

extern "C" {
#include "debug.h"
}

class FaultTest : public StoreTest {
protected:
	std::map<std::string, std::string> model;

	void TearDown() override
	{
		rs_debug_fail_io(0, 0, 0, 0);
		StoreTest::TearDown();
	}
	void Put(const std::string &name, const std::string &data)
	{
		ASSERT_EQ(Write("c", name, 0, data), 0) << rawstore_errmsg();
		model[name] = data;
	}
	/* Every object of the model reads back byte-exact. */
	void ExpectModel()
	{
		for (auto &kv : model)
			EXPECT_EQ(Read("c", kv.first, 0, kv.second.size() + 4096), kv.second)
				<< kv.first;
		EXPECT_EQ(Statfs().objects, model.size());
	}
	void Populate()
	{
		ASSERT_EQ(MkColl("c"), 0);
		Put("a", pattern(100000, 1));
		Put("b", pattern(65536, 2));
		Put("small", pattern(3000, 3)); /* inline */
	}
	bool Exists(const std::string &name)
	{
		struct rawstore_stat s;
		s.struct_size = sizeof(s);
		return rawstore_stat(st, "c", name.data(), name.size(), &s) == 0;
	}
};

/* A data write fails: its transaction fails whole, nothing leaks. */
TEST_F(FaultTest, FailedDataWriteFailsTxn)
{
	Populate();
	uint64_t free0 = Statfs().free;
	rs_debug_fail_io(RS_IO_WRITE, 1, EIO, 1);
	struct rawstore_txn *t = T();
	std::string big = pattern(300000, 9), upd = pattern(70000, 10);
	rawstore_txn_write(t, "c", "new", 3, 0, big.data(), big.size());
	rawstore_txn_write(t, "c", "a", 1, 5000, upd.data(), upd.size());
	rawstore_txn_setattr(t, "c", "b", 1, "k", "v", 1);
	EXPECT_EQ(Submit(t), -EIO);
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	EXPECT_NE(std::string(rawstore_errmsg()).find("write"), std::string::npos)
		<< rawstore_errmsg();
	EXPECT_FALSE(Exists("new"));
	char v[2];
	EXPECT_EQ(rawstore_getattr(st, "c", "b", 1, "k", v, 2), -ENODATA);
	ExpectModel();
	EXPECT_EQ(Statfs().free, free0) << "the failed txn's units must go back";
	ExpectClean();
	/* the store keeps working, and the space is usable */
	Put("new", big);
	ExpectModel();
	Reopen();
	ExpectModel();
	ExpectClean();
}

/* The failing write is the second of a group: the first txn commits. */
TEST_F(FaultTest, FailedWriteInGroupFailsOnlyItsTxn)
{
	Populate();
	Reopen(); /* max_group default: async submits share a group */
	struct Res {
		int r = 1;
	} res[3];
	std::string d[3];
	rs_debug_fail_io(RS_IO_WRITE, 2, EIO, 1);
	for (int i = 0; i < 3; i++) {
		struct rawstore_txn *t = T();
		std::string n = "g" + std::to_string(i);
		d[i] = pattern(20000 + i, 20 + i);
		rawstore_txn_write(t, "c", n.data(), n.size(), 0, d[i].data(), d[i].size());
		ASSERT_EQ(rawstore_submit_async(st, t,
						[](struct rawstore_txn *tt, int r, void *a) {
							static_cast<Res *>(a)->r = r;
							rawstore_txn_free(tt);
						},
						&res[i]),
			  0);
	}
	/* a blocking no-op submit drains the queue (commits are in order) */
	ASSERT_EQ(Submit(T()), 0);
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	int failed = 0;
	for (int i = 0; i < 3; i++) {
		std::string n = "g" + std::to_string(i);
		if (res[i].r) {
			EXPECT_EQ(res[i].r, -EIO);
			EXPECT_FALSE(Exists(n));
			failed++;
		} else {
			model[n] = d[i];
		}
	}
	EXPECT_EQ(failed, 1);
	ExpectModel();
	ExpectClean();
	Reopen();
	ExpectModel();
	ExpectClean();
}

/* A failed read returns -EIO, never bytes; the next read is fine. */
TEST_F(FaultTest, FailedReadReturnsEio)
{
	Populate();
	Reopen();
	rs_debug_fail_io(RS_IO_READ, 1, EIO, 1);
	std::string buf(100000, '\x55');
	EXPECT_EQ(rawstore_read(st, "c", "a", 1, 0, &buf[0], buf.size()), -EIO);
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	ExpectModel();
	/* the same read with every read failing, at several offsets */
	rs_debug_fail_io(RS_IO_READ, 1, EIO, 0);
	for (uint64_t off : { 0ull, 1ull, 4095ull, 4096ull, 99999ull }) {
		ssize_t r = rawstore_read(st, "c", "b", 1, off, &buf[0], 1000);
		EXPECT_TRUE(r == -EIO || (off >= 65536 && r == 0)) << off << ": " << r;
	}
	/* inline data needs no device read */
	EXPECT_EQ(Read("c", "small", 0, 4000), model["small"]);
	rs_debug_fail_io(0, 0, 0, 0);
	ExpectModel();
	ExpectClean();
}

/*
 * The block layer reports a medium error as -ENODATA, a dead path as
 * -ENOLINK, an offline device as -ENODEV: to callers each is -EIO
 * (-ENODATA means "no such attribute" in rawstore's API).
 */
TEST_F(FaultTest, DeviceStatusesBecomeEio)
{
	Populate();
	std::string buf(100000, 0);
	for (int e : { ENODATA, EILSEQ, ENOLINK, EREMOTEIO, ETIMEDOUT, ENODEV, EBUSY }) {
		rs_debug_fail_io(RS_IO_READ, 1, e, 1);
		EXPECT_EQ(rawstore_read(st, "c", "a", 1, 0, &buf[0], buf.size()), -EIO)
			<< strerror(e);
		rs_debug_fail_io(RS_IO_WRITE, 1, e, 1);
		EXPECT_EQ(Write("c", "n", 0, pattern(40000, 17)), -EIO) << strerror(e);
		EXPECT_FALSE(Exists("n"));
	}
	rs_debug_fail_io(0, 0, 0, 0);
	ExpectModel();
	ExpectClean();
}

/* A deep fsck whose reads fail reports it instead of passing. */
TEST_F(FaultTest, FailedReadFailsDeepFsck)
{
	Populate();
	rs_debug_fail_io(RS_IO_READ, 1, EIO, 0);
	struct rawstore_fsck_opts o;
	struct rawstore_fsck_result r;
	rawstore_fsck_opts_init(&o);
	o.deep = 1;
	r.struct_size = sizeof(r);
	int ret = rawstore_fsck(st, &o, &r);
	EXPECT_TRUE(ret == -EIO || (ret == -EUCLEAN && r.errors > 0))
		<< ret << " errors " << r.errors;
	rs_debug_fail_io(0, 0, 0, 0);
	ExpectClean();
}

/* A partial-unit overwrite reads the old unit first: that read fails. */
TEST_F(FaultTest, FailedReadModifyWriteFailsTxn)
{
	Populate();
	Reopen();
	rs_debug_fail_io(RS_IO_READ, 1, EIO, 1);
	std::string upd = pattern(50000, 11); /* > deferred_max: redirected, RMW head */
	EXPECT_EQ(Write("c", "a", 1000, upd), -EIO);
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	ExpectModel();
	ExpectClean();
	ASSERT_EQ(Write("c", "a", 1000, upd), 0);
	model["a"].replace(1000, upd.size(), upd);
	ExpectModel();
	Reopen();
	ExpectModel();
	ExpectClean();
}

/* A failed flush: the group is not committed, the store stops (sticky). */
TEST_F(FaultTest, FailedFlushStopsStore)
{
	Populate();
	rs_debug_fail_io(RS_IO_FLUSH, 1, EIO, 1);
	EXPECT_EQ(Write("c", "lost", 0, pattern(20000, 12)), -EIO);
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	EXPECT_NE(std::string(rawstore_errmsg()).find("flush"), std::string::npos)
		<< rawstore_errmsg();
	/* sticky: later transactions fail although the device works again */
	EXPECT_EQ(Write("c", "later", 0, pattern(20000, 13)), -EIO);
	EXPECT_NE(std::string(rawstore_errmsg()).find("stopped"), std::string::npos)
		<< rawstore_errmsg();
	EXPECT_EQ(MkColl("d"), -EIO);
	EXPECT_EQ(rawstore_reclaim(st), -EIO);
	/* reads still work and see only what was acknowledged */
	ExpectModel();
	EXPECT_FALSE(Exists("lost"));
	EXPECT_EQ(rawstore_close(st), -EIO);
	st = nullptr;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ExpectModel();
	EXPECT_FALSE(Exists("lost"));
	EXPECT_FALSE(Exists("later"));
	ExpectClean();
	Put("later", pattern(20000, 13));
	ExpectModel();
}

/* The flush that lets applied deferred records go fails: nothing is lost. */
TEST_F(FaultTest, FailedDeferredApplyIsReplayed)
{
	Populate();
	std::string upd = pattern(3000, 14); /* small overwrite: deferred */
	rs_debug_fail_io(RS_IO_WRITE, 1, EIO, 1);
	/* committed (the record is in RocksDB), its in-place write fails
	 * (with the device journal maybe after the transaction completed) */
	EXPECT_EQ(Write("c", "b", 5000, upd), 0);
	rs_debug_commit_settle(st);
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	model["b"].replace(5000, upd.size(), upd);
	/* the store stopped: the device may not hold what RocksDB says */
	EXPECT_EQ(Write("c", "x", 0, pattern(9000, 15)), -EIO);
	EXPECT_EQ(rawstore_close(st), -EIO);
	st = nullptr;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	struct rawstore_perf p;
	p.struct_size = sizeof(p);
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	EXPECT_EQ(p.deferred_replayed, 1u);
	ExpectModel();
	ExpectClean();
}

/* Replay at open meets a failing write: open fails, a later open replays. */
TEST_F(FaultTest, FailedReplayFailsOpenThenRecovers)
{
	Populate();
	std::string upd = pattern(3000, 16);
	rs_debug_fail_io(RS_IO_WRITE, 1, EIO, 1);
	EXPECT_EQ(Write("c", "a", 7000, upd), 0);
	model["a"].replace(7000, upd.size(), upd);
	EXPECT_EQ(rawstore_close(st), -EIO);
	st = nullptr;
	rs_debug_fail_io(RS_IO_WRITE, 1, EIO, 1);
	EXPECT_EQ(Open(), -EIO);
	EXPECT_EQ(st, nullptr);
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	rs_debug_fail_io(RS_IO_FLUSH, 1, EIO, 1);
	EXPECT_EQ(Open(), -EIO);
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	rs_debug_fail_io(0, 0, 0, 0);
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ExpectModel();
	ExpectClean();
}

/* A refused punch keeps the ranges tracked; a later reclaim punches them. */
TEST_F(FaultTest, FailedPunchKeepsRanges)
{
	Populate();
	struct rawstore_txn *t = T();
	rawstore_txn_remove(t, "c", "a", 1);
	ASSERT_EQ(Submit(t), 0);
	model.erase("a");
	uint64_t unp = Statfs().unpunched;
	ASSERT_GE(unp, 100000u);
	rs_debug_fail_io(RS_IO_PUNCH, 1, EIO, 1);
	EXPECT_EQ(rawstore_reclaim(st), -EIO);
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	EXPECT_EQ(Statfs().unpunched, unp);
	ExpectClean();
	Reopen();
	EXPECT_EQ(Statfs().unpunched, unp);
	EXPECT_EQ(rawstore_reclaim(st), 0) << rawstore_errmsg();
	EXPECT_EQ(Statfs().unpunched, 0u);
	ExpectModel();
	ExpectClean();
}

/* -ENOSPC from a data write: reported, no effect, the store stays usable. */
TEST_F(FaultTest, InjectedEnospcIsReported)
{
	Populate();
	uint64_t free0 = Statfs().free;
	rs_debug_fail_io(RS_IO_WRITE, 1, ENOSPC, 1);
	EXPECT_EQ(Write("c", "n", 0, pattern(40000, 17)), -ENOSPC);
	EXPECT_FALSE(Exists("n"));
	EXPECT_EQ(Statfs().free, free0);
	Put("n", pattern(40000, 17));
	ExpectModel();
	ExpectClean();
}

/*
 * The test process's own mount namespace, entered before main(): while
 * the process has one thread, so every thread it starts later (RocksDB's
 * background flushes and compactions among them) sees the tmpfs mounts
 * below.  Entered in a test, only the calling thread would move, and a
 * RocksDB thread started by an earlier test in the same process would
 * look for the metadata in the directory under the mount.  "" or why not.
 */
static const std::string private_ns = [] {
	if (unshare(CLONE_NEWNS))
		return std::string("unshare(CLONE_NEWNS): ") + strerror(errno);
	if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr))
		return std::string("making / private: ") + strerror(errno);
	return std::string();
}();

/*
 * A small tmpfs at @dir, in the process's private mount namespace (the
 * mount goes away with the process).  Returns "" or why it cannot.
 */
static std::string mount_tmpfs(const std::string &dir, const char *size)
{
	if (!private_ns.empty())
		return private_ns;
	if (mkdir(dir.c_str(), 0755))
		return std::string("mkdir: ") + strerror(errno);
	std::string o = std::string("size=") + size;
	if (mount("rs-test", dir.c_str(), "tmpfs", 0, o.c_str()))
		return std::string("mount tmpfs: ") + strerror(errno);
	return "";
}

/* Fill the file system holding @path until ENOSPC; the bytes written. */
static uint64_t fill_fs(const std::string &path)
{
	int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
	std::string b(65536, 'f');
	uint64_t n = 0;

	if (fd < 0)
		return 0;
	for (size_t chunk = b.size(); chunk >= 512; chunk /= 2)
		for (;;) {
			ssize_t r = write(fd, b.data(), chunk);
			if (r <= 0)
				break;
			n += (uint64_t)r;
		}
	close(fd);
	return n;
}

class EnospcTest : public FaultTest {
protected:
	std::string mnt, why;
	void SetUp() override
	{
		mnt = tmp.path + "/mnt";
		why = mount_tmpfs(mnt, Size());
		if (!why.empty())
			return;
		FaultTest::SetUp();
	}
	void TearDown() override
	{
		FaultTest::TearDown();
		if (why.empty())
			umount2(mnt.c_str(), MNT_DETACH);
	}
	virtual const char *Size() = 0;
};

/* The device is a sparse file on a 16 MiB tmpfs, 64 MiB long. */
class DeviceEnospcTest : public EnospcTest {
protected:
	const char *Size() override { return "16m"; }
};

TEST_F(DeviceEnospcTest, FullDeviceThenSpaceFreed)
{
	if (!why.empty())
		GTEST_SKIP() << "no tmpfs for the device: " << why;
	/* SetUp made the store on tmp/dev; remake it on the tmpfs */
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	dev = mnt + "/dev";
	ASSERT_EQ(make_file(dev, 64ULL << 20), 0);
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	mo.force = 1;
	ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0) << rawstore_errmsg();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ASSERT_EQ(MkColl("c"), 0);
	/* room for the filler and a few objects: the store thinks it has 64 MiB */
	std::string filler = mnt + "/filler";
	{
		int fd = open(filler.c_str(), O_CREAT | O_WRONLY, 0644);
		ASSERT_GE(fd, 0);
		std::string b(1 << 20, 'f');
		for (int i = 0; i < 4; i++)
			ASSERT_EQ(write(fd, b.data(), b.size()), (ssize_t)b.size());
		close(fd);
	}
	int i, r = 0;
	std::string d;
	for (i = 0; i < 16; i++) {
		d = pattern(2 << 20, 100 + i);
		r = Write("c", "o" + std::to_string(i), 0, d);
		if (r)
			break;
		model["o" + std::to_string(i)] = d;
	}
	ASSERT_LT(i, 16) << "the tmpfs never filled up";
	EXPECT_EQ(r, -ENOSPC) << rawstore_errmsg();
	EXPECT_GE(i, 2);
	std::string failed = "o" + std::to_string(i);
	EXPECT_FALSE(Exists(failed));
	ExpectModel();
	ExpectClean();
	/* free space on the file system: the same write now succeeds */
	ASSERT_EQ(unlink(filler.c_str()), 0);
	Put(failed, d);
	ExpectModel();
	ExpectClean();
	/* and removing objects + reclaim gives the file system its space back */
	for (int j = 0; j <= i; j++) {
		struct rawstore_txn *t = T();
		std::string n = "o" + std::to_string(j);
		rawstore_txn_remove(t, "c", n.data(), n.size());
		ASSERT_EQ(Submit(t), 0);
		model.erase(n);
	}
	ASSERT_EQ(rawstore_reclaim(st), 0) << rawstore_errmsg();
	for (int j = 0; j <= i; j++)
		Put("p" + std::to_string(j), pattern(2 << 20, 200 + j));
	Reopen();
	ExpectModel();
	ExpectClean();
}

/* The metadata directory is on a 24 MiB tmpfs. */
class MetaEnospcTest : public EnospcTest {
protected:
	const char *Size() override { return "24m"; }
};

TEST_F(MetaEnospcTest, FullMetadataFsThenSpaceFreed)
{
	if (!why.empty())
		GTEST_SKIP() << "no tmpfs for the metadata: " << why;
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	meta = mnt + "/meta";
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	mo.force = 1;
	ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0) << rawstore_errmsg();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	Populate();
	std::string filler = mnt + "/filler";
	ASSERT_GT(fill_fs(filler), 0u);
	/* omap values are RocksDB data: write until the WAL cannot grow */
	int i, r = 0;
	std::string v = pattern(256 << 10, 30);
	for (i = 0; i < 400; i++) {
		struct rawstore_txn *t = T();
		std::string k = "k" + std::to_string(i);
		rawstore_txn_omap_set(t, "c", "b", 1, k.data(), k.size(), v.data(), v.size());
		r = Submit(t);
		if (r)
			break;
	}
	ASSERT_LT(i, 400) << "the metadata file system never filled up";
	EXPECT_EQ(r, -ENOSPC) << rawstore_errmsg();
	int acked = i;
	/* the store stopped (RocksDB's state is unknown): sticky */
	EXPECT_NE(Write("c", "later", 0, pattern(8000, 31)), 0);
	ExpectModel();
	EXPECT_NE(rawstore_close(st), 0);
	st = nullptr;
	ASSERT_EQ(unlink(filler.c_str()), 0);
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ExpectModel();
	for (i = 0; i < acked; i++) {
		std::string k = "k" + std::to_string(i), got(v.size(), 0);
		ssize_t n = rawstore_omap_get(st, "c", "b", 1, k.data(), k.size(), &got[0],
					      got.size());
		ASSERT_EQ(n, (ssize_t)v.size()) << "acknowledged omap key " << k;
		EXPECT_EQ(got, v);
	}
	ExpectClean();
	Put("later", pattern(8000, 31));
	ExpectModel();
}

/* Opening a store whose metadata file system is already full. */
TEST_F(MetaEnospcTest, OpenOnAFullMetadataFs)
{
	if (!why.empty())
		GTEST_SKIP() << "no tmpfs for the metadata: " << why;
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	meta = mnt + "/meta";
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	mo.force = 1;
	ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0) << rawstore_errmsg();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	Populate();
	std::string upd = pattern(3000, 40); /* leave a deferred record to replay */
	rs_debug_fail_io(RS_IO_WRITE, 1, EIO, 1);
	ASSERT_EQ(Write("c", "a", 2000, upd), 0);
	model["a"].replace(2000, upd.size(), upd);
	EXPECT_EQ(rawstore_close(st), -EIO);
	st = nullptr;
	std::string filler = mnt + "/filler";
	ASSERT_GT(fill_fs(filler), 0u);
	int r = Open();
	printf("open on a full metadata file system: %s (%s)\n", strerror(-r),
	       r ? rawstore_errmsg() : "replayed");
	if (r) {
		/* refused with the reason, and nothing changed */
		EXPECT_EQ(r, -ENOSPC) << rawstore_errmsg();
		st = nullptr;
	} else {
		ExpectModel();
		EXPECT_EQ(rawstore_close(st), 0);
		st = nullptr;
	}
	ASSERT_EQ(unlink(filler.c_str()), 0);
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ExpectModel();
	ExpectClean();
	Put("later", pattern(8000, 41));
	ExpectModel();
}
