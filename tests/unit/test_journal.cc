// SPDX-License-Identifier: MIT
/*
 * The device journal (store/journal.c): replay after crashes with RocksDB's
 * unsynced state lost (a copy of the metadata directory taken at open
 * stands for what a power cut leaves, since the journal never syncs
 * RocksDB between trims), torn records, a last record whose data never
 * landed, a crash during replay, wrap-around with trims, read-only opens,
 * records too big, groups bounded by the journal and journal write faults.
 */
#include <sys/wait.h>

#include <rocksdb/c.h>

#include <condition_variable>
#include <functional>
#include <mutex>

#include "debug.h"
#include "gate.h"
#include "helpers.h"

class JournalTest : public StoreTest {
protected:
	std::string snap;
	/* Records the child's open wrote: RocksDB holds them in its WAL buffer
	 * (manual_wal_flush), so the copy taken after the open lacks them and
	 * replay redoes them. */
	uint64_t open_records = 0;

	void SetUp() override
	{
		StoreTest::SetUp();
		if (!journaled(st))
			RemkfsJournal(RAWSTORE_JOURNAL_DEVICE);
		snap = tmp.path + "/meta.at-open";
		ASSERT_EQ(MkColl("c"), 0);
	}
	void Close()
	{
		if (st) {
			ASSERT_EQ(rawstore_close(st), 0);
		}
		st = nullptr;
	}
	static int Sh(const std::string &cmd)
	{
		return system(cmd.c_str());
	}
	/*
	 * Open in a child, copy the metadata directory (what RocksDB holds
	 * durably then), run @fn with crash point @point armed at @countdown,
	 * and return the child's exit status (RS_CRASH_EXIT when it hit).
	 */
	int CrashChild(int point, int countdown, const std::function<int(struct rawstore *)> &fn)
	{
		Close();
		Sh("rm -rf '" + snap + "'");
		pid_t pid = fork();
		if (pid == 0) {
			struct rawstore *s;
			if (rawstore_open(dev.c_str(), meta.c_str(), &oo, &s))
				_exit(1);
			struct rawstore_perf p = {};
			p.struct_size = sizeof(p);
			rawstore_perf_get(s, &p);
			FILE *f = fopen((tmp.path + "/open-records").c_str(), "w");
			if (!f || fprintf(f, "%llu\n", (unsigned long long)p.journal_records) < 0 ||
			    fclose(f))
				_exit(2);
			if (Sh("cp -a '" + meta + "' '" + snap + "'"))
				_exit(2);
			rs_debug_set_crash_point(point, countdown);
			int r = fn(s);
			rawstore_close(s);
			_exit(r ? 3 : 0);
		}
		int status = 0;
		waitpid(pid, &status, 0);
		unsigned long long n = 0;
		FILE *f = fopen((tmp.path + "/open-records").c_str(), "r");
		if (f && fscanf(f, "%llu", &n) == 1)
			open_records = n;
		if (f)
			fclose(f);
		return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}
	/* mkfs again with the device journal, @set's options on top, then open
	 * and create collection "c". */
	void Remkfs(const std::function<void(struct rawstore_mkfs_opts &)> &set)
	{
		Close();
		struct rawstore_mkfs_opts mo;
		test_mkfs_opts_init(&mo);
		mo.journal = RAWSTORE_JOURNAL_DEVICE;
		mo.force = 1;
		set(mo);
		ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0) << rawstore_errmsg();
		ASSERT_EQ(Open(), 0) << rawstore_errmsg();
		ASSERT_EQ(MkColl("c"), 0);
	}
	/* A power cut: RocksDB's unsynced writes since the open are lost. */
	void LoseRocksdbState()
	{
		ASSERT_EQ(Sh("rm -rf '" + meta + "' && cp -a '" + snap + "' '" + meta + "'"), 0);
	}
	struct rawstore_records Records()
	{
		struct rawstore_records r;
		r.struct_size = sizeof(r);
		EXPECT_EQ(rawstore_records_get(st, &r), 0);
		return r;
	}
	struct rawstore_perf Perf()
	{
		struct rawstore_perf p;
		p.struct_size = sizeof(p);
		EXPECT_EQ(rawstore_perf_get(st, &p), 0);
		return p;
	}
	static int Put(struct rawstore *s, const std::string &name, const std::string &data)
	{
		struct rawstore_txn *t;
		rawstore_txn_new(&t);
		rawstore_txn_write(t, "c", name.data(), name.size(), 0, data.data(), data.size());
		int r = rawstore_submit(s, t);
		rawstore_txn_free(t);
		return r;
	}
	/* Objects o0..o(n-1): 8 KiB of new data each. */
	static int PutMany(struct rawstore *s, int n)
	{
		for (int i = 0; i < n; i++)
			if (Put(s, "o" + std::to_string(i), pattern(8192, 100 + i)))
				return 1;
		return 0;
	}
	void ExpectMany(int n)
	{
		for (int i = 0; i < n; i++)
			EXPECT_EQ(Read("c", "o" + std::to_string(i), 0, 10000), pattern(8192, 100 + i))
				<< "acknowledged object o" << i;
	}
	bool Exists(const std::string &name)
	{
		struct rawstore_stat s;
		s.struct_size = sizeof(s);
		return rawstore_stat(st, "c", name.data(), name.size(), &s) == 0;
	}
};

/* Every acknowledged transaction comes back from the journal alone. */
TEST_F(JournalTest, ReplayRestoresWhatRocksdbLost)
{
	int r = CrashChild(RS_CRASH_JOURNAL_WRITTEN, 41, [](struct rawstore *s) {
		return PutMany(s, 40) || Put(s, "last", pattern(8192, 7));
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	LoseRocksdbState();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	struct rawstore_records rec = Records();
	EXPECT_EQ(rec.journal_replayed, 41u + open_records);
	EXPECT_EQ(rec.journal_dropped, 0u);
	EXPECT_GE(rec.journal_last_seq, rec.journal_durable_seq + 41 + open_records);
	ExpectMany(40);
	/* durable before the crash (not acknowledged): all of it */
	EXPECT_EQ(Read("c", "last", 0, 10000), pattern(8192, 7));
	ExpectClean();
	Reopen();
	EXPECT_EQ(Records().journal_replayed, 0u) << "a clean close leaves nothing to replay";
	ExpectMany(40);
	ExpectClean();
}

/* Read (@set: write) the journal position @key in the closed store's
 * RocksDB: {seq, next}. */
static bool Jpos(const std::string &meta, const char *key, uint64_t *seq, uint64_t *next,
		 bool set)
{
	rocksdb_options_t *o = rocksdb_options_create();
	char *err = nullptr;
	rocksdb_t *db = rocksdb_open(o, meta.c_str(), &err);
	bool ok = !err;
	if (ok && set) {
		uint64_t v[2] = { htole64(*seq), htole64(*next) };
		rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
		rocksdb_put(db, wo, key, 1, (const char *)v, sizeof(v), &err);
		rocksdb_writeoptions_destroy(wo);
		ok = !err;
	} else if (ok) {
		rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
		size_t vl = 0;
		char *v = rocksdb_get(db, ro, key, 1, &vl, &err);
		rocksdb_readoptions_destroy(ro);
		ok = !err && v && vl == 16;
		if (ok) {
			uint64_t x[2];
			memcpy(x, v, sizeof(x));
			*seq = le64toh(x[0]);
			*next = le64toh(x[1]);
		}
		rocksdb_free(v);
	}
	rocksdb_free(err);
	if (db)
		rocksdb_close(db);
	rocksdb_options_destroy(o);
	return ok;
}

/*
 * RocksDB recovers a "J" from a later batch while the batches before it
 * are lost (a hole in its unsynced WAL): replay starts at the trim point
 * "T" that the last WAL sync made durable, not at "J", and every
 * acknowledged transaction comes back.  A "J" behind "T" (synced writes
 * lost) is refused.
 */
TEST_F(JournalTest, ReplayStartsAtTheSyncedTrimPoint)
{
	int r = CrashChild(RS_CRASH_JOURNAL_WRITTEN, 6, [](struct rawstore *s) {
		return PutMany(s, 5) || Put(s, "last", pattern(8192, 7));
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	LoseRocksdbState();
	uint64_t tseq = 0, tnext = 0, jseq = 0, jnext = 0;
	ASSERT_TRUE(Jpos(meta, "J", &jseq, &jnext, false));
	if (!Jpos(meta, "T", &tseq, &tnext, false)) {
		ADD_FAILURE() << "no trim point after a clean close";
		tseq = jseq;
		tnext = jnext;
	}
	EXPECT_EQ(jseq, tseq);
	/* only the last batch's "J" survived */
	jseq = tseq + open_records + 6;
	ASSERT_TRUE(Jpos(meta, "J", &jseq, &tnext, true));
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ExpectMany(5);
	EXPECT_TRUE(Exists("last"));
	EXPECT_EQ(Records().journal_dropped, 0u);
	ExpectClean();
	/* synced state behind the trim point: refused, nothing written */
	Close();
	ASSERT_TRUE(Jpos(meta, "T", &tseq, &tnext, false));
	ASSERT_GT(tseq, 1u);
	jseq = tseq - 1;
	ASSERT_TRUE(Jpos(meta, "J", &jseq, &tnext, true));
	EXPECT_EQ(Open(), -EUCLEAN);
	EXPECT_NE(std::string(rawstore_errmsg()).find("behind its synced trim point"),
		  std::string::npos) << rawstore_errmsg();
	st = nullptr;
}

/*
 * User bytes in the ring are escaped: omap values made of the record
 * magic, at every alignment, never leave a block of the ring that begins
 * with the magic other than a record's own first block (a tenant could
 * otherwise plant a block that parses as a record of a later lap), and
 * replay gives the values back byte for byte.
 */
TEST_F(JournalTest, RecordBlocksNeverStartWithTheMagic)
{
	const uint64_t magic = 0x314c4e524a535200ULL;	/* RS_JREC_MAGIC */
	std::string words;
	for (int i = 0; i < 12288 / 8; i++) {
		uint64_t le = htole64(magic);
		words.append(reinterpret_cast<const char *>(&le), 8);
	}
	ASSERT_EQ(Write("c", "m", 0, "m"), 0);
	int r = CrashChild(RS_CRASH_JOURNAL_WRITTEN, 9, [&](struct rawstore *s) {
		for (int p = 0; p < 8; p++) {
			std::string k = "k" + std::to_string(p), v = std::string(p, 'x') + words;
			struct rawstore_txn *t;
			if (rawstore_txn_new(&t))
				return 1;
			rawstore_txn_omap_set(t, "c", "m", 1, k.data(), k.size(), v.data(),
					      v.size());
			int ret = rawstore_submit(s, t);
			rawstore_txn_free(t);
			if (ret)
				return 1;
		}
		return Put(s, "last", pattern(10, 1));
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	LoseRocksdbState();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	struct rawstore_records rec = Records();
	EXPECT_EQ(rec.journal_replayed, 9u + open_records);
	for (int p = 0; p < 8; p++) {
		std::string k = "k" + std::to_string(p), v = std::string(p, 'x') + words;
		std::string got(v.size(), 0);
		EXPECT_EQ(rawstore_omap_get(st, "c", "m", 1, k.data(), k.size(), &got[0], got.size()),
			  (ssize_t)v.size());
		EXPECT_TRUE(got == v) << "value " << p << " changed by replay";
	}
	ExpectClean();
	/* the aligned value's record escaped its blocks */
	std::string v = words;
	for (int i = 0; i < 8; i++) {
		struct rawstore_txn *t = T();
		std::string k = "a" + std::to_string(i);
		rawstore_txn_omap_set(t, "c", "m", 1, k.data(), k.size(), v.data(), v.size());
		ASSERT_EQ(Submit(t), 0);
		v = "x" + v;
	}
	EXPECT_GE(Perf().journal_escapes, 1u);
	/* every block of the ring that begins with the magic is a record's
	 * first block: its header names its own place */
	Close();
	int fd = open(dev.c_str(), O_RDONLY);
	ASSERT_GE(fd, 0);
	std::vector<uint8_t> ring(rec.journal_size);
	ASSERT_EQ(pread(fd, ring.data(), ring.size(), (off_t)rec.journal_offset),
		  (ssize_t)ring.size());
	close(fd);
	int heads = 0, planted = 0;
	for (uint64_t off = 0; off < ring.size(); off += 4096) {
		uint64_t m, vpos;
		memcpy(&m, &ring[off], 8);
		if (le64toh(m) != magic)
			continue;
		memcpy(&vpos, &ring[off + 32], 8);	/* after magic, uuid, seq */
		if (le64toh(vpos) % rec.journal_size == off)
			heads++;
		else
			planted++;
	}
	EXPECT_GT(heads, 8);
	EXPECT_EQ(planted, 0) << "user bytes begin a block of the ring with the record magic";
}

/* A torn record ends the journal: what came before it stays. */
TEST_F(JournalTest, TornRecordEndsReplay)
{
	int r = CrashChild(RS_CRASH_JOURNAL_TORN, 11, [](struct rawstore *s) {
		return PutMany(s, 10) || Put(s, "torn", pattern(8192, 8));
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	LoseRocksdbState();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_EQ(Records().journal_replayed, 10u + open_records);
	ExpectMany(10);
	EXPECT_FALSE(Exists("torn"));
	ExpectClean();
	/* the next record goes where the torn one was */
	ASSERT_EQ(Write("c", "after", 0, pattern(8192, 9)), 0);
	Reopen();
	ExpectMany(10);
	EXPECT_EQ(Read("c", "after", 0, 10000), pattern(8192, 9));
	EXPECT_FALSE(Exists("torn"));
	ExpectClean();
}

/* The last record's new data did not land: the record is dropped (it was
 * never acknowledged), its units stay free, and it is erased. */
TEST_F(JournalTest, LastRecordWithLostDataIsDropped)
{
	int r = CrashChild(RS_CRASH_JOURNAL_NODATA, 6, [](struct rawstore *s) {
		return PutMany(s, 5) || Put(s, "lost", pattern(65536, 9));
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	LoseRocksdbState();
	uint64_t free0;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	struct rawstore_records rec = Records();
	EXPECT_EQ(rec.journal_dropped, 1u);
	EXPECT_EQ(rec.journal_replayed, 5u + open_records);
	ExpectMany(5);
	EXPECT_FALSE(Exists("lost"));
	ExpectClean();
	free0 = Statfs().free;
	Reopen();
	EXPECT_EQ(Records().journal_dropped, 0u) << "the dropped record was not erased";
	EXPECT_EQ(Statfs().free, free0);
	ASSERT_EQ(Write("c", "lost", 0, pattern(65536, 10)), 0);
	Reopen();
	EXPECT_EQ(Read("c", "lost", 0, 70000), pattern(65536, 10));
	ExpectMany(5);
	ExpectClean();
}

/*
 * A group with a deferred overwrite of old units and new data elsewhere
 * takes one flush (the record's): the deferred write goes in place only
 * after it.  Its record can land without its new data; replay then drops
 * the whole record, the overwrite with it.  A deferred write onto the
 * group's own new units still flushes first (its in-place write would
 * change what the record's checks cover).
 */
TEST_F(JournalTest, DeferredWritesElsewhereKeepTheGroupToOneFlush)
{
	int r = CrashChild(RS_CRASH_JOURNAL_NODATA, 7, [](struct rawstore *s) {
		struct rawstore_txn *t;
		std::string upd = pattern(4096, 7), fresh = pattern(65536, 8);
		struct rawstore_perf p0, p1;
		int ret;

		if (PutMany(s, 5) || Put(s, "old", pattern(65536, 6)))
			return 1;
		p0.struct_size = p1.struct_size = sizeof(p0);
		if (rawstore_txn_new(&t) || rawstore_perf_get(s, &p0))
			return 1;
		rawstore_txn_write(t, "c", "old", 3, 0, upd.data(), upd.size());
		rawstore_txn_write(t, "c", "lost", 4, 0, fresh.data(), fresh.size());
		ret = rawstore_submit(s, t);	/* the crash point: no return */
		rawstore_txn_free(t);
		if (ret || rawstore_perf_get(s, &p1))
			return 1;
		fprintf(stderr, "deferred %llu, flushes %llu (journal %llu)\n",
			(unsigned long long)(p1.deferred_writes - p0.deferred_writes),
			(unsigned long long)(p1.dev_flushes - p0.dev_flushes),
			(unsigned long long)(p1.journal_flushes - p0.journal_flushes));
		return 2;	/* it flushed before the record: no record without data */
	});
	ASSERT_EQ(r, RS_CRASH_EXIT) << "the group flushed its new data before the record";
	LoseRocksdbState();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_EQ(Records().journal_dropped, 1u);
	ExpectMany(5);
	EXPECT_TRUE(Read("c", "old", 0, 70000) == pattern(65536, 6))
		<< "the dropped record's deferred overwrite was applied";
	EXPECT_FALSE(Exists("lost"));
	ExpectClean();

	/* Acknowledged, the same shape is one flush and both writes hold. */
	std::string upd = pattern(4096, 9), fresh = pattern(65536, 10);
	struct rawstore_perf a = Perf();
	struct rawstore_txn *t = T();
	rawstore_txn_write(t, "c", "old", 3, 8192, upd.data(), upd.size());
	rawstore_txn_write(t, "c", "new", 3, 0, fresh.data(), fresh.size());
	ASSERT_EQ(Submit(t), 0);
	rs_debug_commit_settle(st);	/* its in-place write is done */
	struct rawstore_perf b = Perf();
	EXPECT_EQ(b.deferred_writes - a.deferred_writes, 1u);
	EXPECT_EQ(b.dev_flushes - a.dev_flushes, 1u);
	EXPECT_EQ(b.journal_flushes - a.journal_flushes, 1u);

	/* A deferred write onto the group's own new units: flushed first. */
	t = T();
	rawstore_txn_write(t, "c", "self", 4, 0, fresh.data(), fresh.size());
	rawstore_txn_write(t, "c", "self", 4, 4096, upd.data(), upd.size());
	ASSERT_EQ(Submit(t), 0);
	rs_debug_commit_settle(st);
	struct rawstore_perf c = Perf();
	EXPECT_EQ(c.deferred_writes - b.deferred_writes, 1u);
	EXPECT_EQ(c.dev_flushes - b.dev_flushes, 2u);
	EXPECT_EQ(c.journal_flushes - b.journal_flushes, 1u);
	Reopen();
	std::string want_old = pattern(65536, 6), want_self = fresh;
	want_old.replace(8192, upd.size(), upd);
	want_self.replace(4096, upd.size(), upd);
	EXPECT_TRUE(Read("c", "old", 0, 70000) == want_old);
	EXPECT_TRUE(Read("c", "new", 0, 70000) == fresh);
	EXPECT_TRUE(Read("c", "self", 0, 70000) == want_self);
	ExpectClean();
}

namespace {
void count_cb(struct rawstore_txn *t, int result, void *arg)
{
	auto g = static_cast<Gate *>(arg);
	std::lock_guard<std::mutex> l(g->m);
	g->done++;
	g->failed += result != 0;
	g->cv.notify_all();
	rawstore_txn_free(t);
}
} // namespace

/*
 * Open in a child, arm @point at @countdown (0: none), run @fn and die
 * without closing (a power cut: RocksDB's unsynced WAL buffer is lost,
 * what its last trim synced stays).  The child's exit status.
 */
static int DieChild(const std::string &dev, const std::string &meta,
		    const struct rawstore_open_opts &oo, int point, int countdown,
		    const std::function<int(struct rawstore *)> &fn)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct rawstore *s;
		if (rawstore_open(dev.c_str(), meta.c_str(), &oo, &s))
			_exit(1);
		if (countdown)
			rs_debug_set_crash_point(point, countdown);
		_exit(fn(s) ? 3 : 0);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * The only record after "J" is dropped (its data did not land, right
 * after a trim), then the store runs and dies again before its next trim.
 * Replay must number the records after the dropped one from J + 1: the
 * second recovery keeps every transaction acknowledged in between.
 */
TEST_F(JournalTest, DroppedFirstRecordKeepsTheSequence)
{
	auto fresh = [&] {
		Remkfs([](struct rawstore_mkfs_opts &mo) { mo.journal_size = 1 << 20; });
		Close();
	};
	fresh();
	if (HasFatalFailure())
		return;
	/* Which put trims the ring first (the same on a fresh store again)? */
	std::string at = tmp.path + "/trim-at";
	int r = DieChild(dev, meta, oo, 0, 0, [&](struct rawstore *s) -> int {
		struct rawstore_perf p = {};
		p.struct_size = sizeof(p);
		rawstore_perf_get(s, &p);
		uint64_t trims = p.journal_trims;
		for (int i = 1; i < 2000; i++) {
			if (Put(s, "o" + std::to_string(i), pattern(8192, i)))
				return 1;
			rawstore_perf_get(s, &p);
			if (p.journal_trims != trims) {
				FILE *f = fopen(at.c_str(), "w");
				return (!f || fprintf(f, "%d\n", i) < 0 || fclose(f)) ? 1 : 0;
			}
		}
		return 1;
	});
	ASSERT_EQ(r, 0) << "no trim in 2000 puts";
	int k = 0;
	FILE *f = fopen(at.c_str(), "r");
	ASSERT_TRUE(f && fscanf(f, "%d", &k) == 1 && k > 1);
	fclose(f);
	fresh();
	if (HasFatalFailure())
		return;
	/* The put that trims loses its data and the process dies. */
	r = DieChild(dev, meta, oo, RS_CRASH_JOURNAL_NODATA, k, [](struct rawstore *s) {
		for (int i = 1; i < 2000; i++)
			if (Put(s, "o" + std::to_string(i), pattern(8192, i)))
				return 1;
		return 0;
	});
	ASSERT_EQ(r, RS_CRASH_EXIT) << "no crash at put " << k;
	/* Recovery drops it; more is acknowledged; the process dies again. */
	r = DieChild(dev, meta, oo, 0, 0, [](struct rawstore *s) -> int {
		struct rawstore_records rec;
		rec.struct_size = sizeof(rec);
		if (rawstore_records_get(s, &rec) || rec.journal_dropped != 1 ||
		    rec.journal_replayed != 0)
			return 1;	/* not the case under test */
		return Put(s, "a1", pattern(8192, 11)) || Put(s, "a2", pattern(8192, 12));
	});
	ASSERT_EQ(r, 0) << "the first recovery did not drop exactly the one record";
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	for (int i = 1; i < k; i++)
		EXPECT_TRUE(Read("c", "o" + std::to_string(i), 0, 10000) == pattern(8192, i)) << i;
	EXPECT_FALSE(Exists("o" + std::to_string(k)));
	EXPECT_TRUE(Exists("a1") && Read("c", "a1", 0, 10000) == pattern(8192, 11))
		<< "acknowledged, then lost";
	EXPECT_TRUE(Exists("a2") && Read("c", "a2", 0, 10000) == pattern(8192, 12))
		<< "acknowledged, then lost";
	ExpectClean();
}

/*
 * A nocopy write whose buffer the caller changes before it is written:
 * the record would carry a check the device bytes do not match, and
 * replay would drop the record, and with it another submitter's
 * acknowledged transaction of the same group.  The changed transaction
 * fails alone (-EIO); the other one survives the crash.
 */
TEST_F(JournalTest, ChangedNocopyBufferFailsAloneNotItsGroup)
{
	Close();
	int r = DieChild(dev, meta, oo, 0, 0, [](struct rawstore *s) -> int {
		Gate g, w;
		struct rawstore_txn *gt, *a, *b;
		if (rawstore_txn_new(&gt) || rawstore_txn_new(&a) || rawstore_txn_new(&b))
			return 1;
		rawstore_txn_touch(gt, "c", "gate", 4);
		if (rawstore_submit_async(s, gt, gate_cb, &g))
			return 1;
		{
			std::unique_lock<std::mutex> l(g.m);
			g.cv.wait(l, [&] { return g.entered; });
		}
		PageBuf big(256, 0);
		std::string d = pattern(1 << 20, 21), x = pattern(8192, 22);
		memcpy(big.p, d.data(), d.size());
		rawstore_txn_write(a, "c", "a", 1, 0, x.data(), x.size());
		if (rawstore_txn_write_nocopy(b, "c", "b", 1, 0, big.p, d.size()))
			return 1;
		/* changed after its check was taken, before the device reads it */
		rs_debug_set_write_hook([](void *buf, size_t len, void *arg) {
			if (buf == arg && len > 300000)
				static_cast<uint8_t *>(buf)[300000] ^= 0x40;
		}, big.p);
		if (rawstore_submit_async(s, a, count_cb, &w) ||
		    rawstore_submit_async(s, b, count_cb, &w))
			return 1;
		Release(g);
		std::unique_lock<std::mutex> l(w.m);
		w.cv.wait(l, [&] { return w.done == 2; });
		return w.failed == 1 ? 0 : 10 + w.failed;	/* b alone failed */
	});
	EXPECT_EQ(r, 0) << "the changed nocopy transaction did not fail alone";
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_EQ(Records().journal_dropped, 0u);
	EXPECT_TRUE(Exists("a") && Read("c", "a", 0, 10000) == pattern(8192, 22))
		<< "acknowledged, then lost with the record";
	EXPECT_FALSE(Exists("b"));
	ExpectClean();
}

/*
 * A transaction writes "x", then removes it: the group frees the units it
 * wrote, and the inline punch zeros them right after the record.  The
 * record is durable; its check of data its own group freed must not make
 * replay drop it (the power cut falls between the punch and its record).
 */
TEST_F(JournalTest, DataFreedInItsOwnGroupIsNotChecked)
{
	Remkfs([](struct rawstore_mkfs_opts &mo) { mo.punch_policy = RAWSTORE_PUNCH_INLINE; });
	if (HasFatalFailure())
		return;
	int r = CrashChild(RS_CRASH_SPACE_IO_DONE, 1, [](struct rawstore *s) {
		std::string x = pattern(65536, 4), y = pattern(8192, 5);
		struct rawstore_txn *t;
		if (rawstore_txn_new(&t))
			return 1;
		rawstore_txn_write(t, "c", "x", 1, 0, x.data(), x.size());
		rawstore_txn_write(t, "c", "y", 1, 0, y.data(), y.size());
		rawstore_txn_remove(t, "c", "x", 1);
		int ret = rawstore_submit(s, t);
		rawstore_txn_free(t);
		return ret;
	});
	ASSERT_EQ(r, RS_CRASH_EXIT) << "no crash after the punch";
	LoseRocksdbState();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	struct rawstore_records rec = Records();
	EXPECT_EQ(rec.journal_dropped, 0u);
	EXPECT_EQ(rec.journal_replayed, 1u + open_records);
	EXPECT_FALSE(Exists("x"));
	EXPECT_TRUE(Read("c", "y", 0, 10000) == pattern(8192, 5));
	ExpectClean();
}

/* A crash while replaying: the next open replays again, from where
 * RocksDB's recovered state says (idempotent either way). */
class JournalReplayCrashTest : public JournalTest,
			       public ::testing::WithParamInterface<bool> {};

TEST_P(JournalReplayCrashTest, ReplayIsRedone)
{
	bool lose_again = GetParam();
	int r = CrashChild(RS_CRASH_JOURNAL_WRITTEN, 31, [](struct rawstore *s) {
		return PutMany(s, 30) || Put(s, "x", pattern(100, 1));
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	LoseRocksdbState();
	/* replay 12 of the 31 records, then die */
	pid_t pid = fork();
	if (pid == 0) {
		struct rawstore *s;
		rs_debug_set_crash_point(RS_CRASH_JOURNAL_REPLAY, 12);
		rawstore_open(dev.c_str(), meta.c_str(), &oo, &s);
		_exit(0);
	}
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), RS_CRASH_EXIT) << "no crash during replay";
	if (lose_again)
		LoseRocksdbState();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	struct rawstore_records rec = Records();
	/* the dead replay's batches stayed in RocksDB's WAL buffer: they
	 * died with the process, so either way all is replayed again */
	EXPECT_EQ(rec.journal_replayed, 31u + open_records);
	ExpectMany(30);
	EXPECT_TRUE(Exists("x"));
	ExpectClean();
}

INSTANTIATE_TEST_SUITE_P(Journal, JournalReplayCrashTest, ::testing::Values(false, true),
			 [](const ::testing::TestParamInfo<bool> &i) {
				 return std::string(i.param ? "rocksdb_lost_again" : "rocksdb_kept");
			 });

/* A 1 MiB journal wraps many times; trims keep it from running out, and a
 * crash after the wraps loses nothing acknowledged. */
TEST_F(JournalTest, WrapsAndTrims)
{
	Remkfs([](struct rawstore_mkfs_opts &mo) {
		mo.journal_size = 1 << 20;
		mo.zero_policy = RAWSTORE_ZERO_PAD;
	});
	if (HasFatalFailure())
		return;
	/* omap values travel in the record: about 20 KiB each */
	std::string v = pattern(20000, 3);
	ASSERT_EQ(Write("c", "m", 0, "m"), 0);
	for (int i = 0; i < 300; i++) {
		struct rawstore_txn *t = T();
		std::string k = "k" + std::to_string(i);
		rawstore_txn_omap_set(t, "c", "m", 1, k.data(), k.size(), v.data(), v.size());
		ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();
	}
	struct rawstore_perf p = Perf();
	struct rawstore_records rec = Records();
	EXPECT_GE(rec.journal_head, 5u << 20) << "the journal did not wrap";
	EXPECT_GE(p.journal_trims, 10u);
	EXPECT_GE(p.journal_records, 300u);
	int r = CrashChild(RS_CRASH_JOURNAL_WRITTEN, 121, [](struct rawstore *s) {
		return PutMany(s, 120) || Put(s, "end", pattern(10, 1));
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	ExpectMany(120);
	for (int i = 0; i < 300; i += 37) {
		std::string k = "k" + std::to_string(i), got(v.size(), 0);
		EXPECT_EQ(rawstore_omap_get(st, "c", "m", 1, k.data(), k.size(), &got[0],
					    got.size()), (ssize_t)v.size());
		EXPECT_EQ(got, v);
	}
	ExpectClean();
}

/* A read-only open lays the records over RocksDB without writing. */
TEST_F(JournalTest, ReadOnlyOpenSeesTheRecords)
{
	int r = CrashChild(RS_CRASH_JOURNAL_WRITTEN, 9, [](struct rawstore *s) {
		return PutMany(s, 8) || Put(s, "x", pattern(100, 1));
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	LoseRocksdbState();
	oo.read_only = 1;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_EQ(Records().journal_replayed, 9u + open_records);
	ExpectMany(8);
	EXPECT_TRUE(Exists("x"));
	ExpectClean();
	Close();
	/* nothing was written: a read-write open replays them all */
	oo.read_only = 0;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_EQ(Records().journal_replayed, 9u + open_records);
	ExpectMany(8);
	ExpectClean();
}

/* A transaction that needs more than half the journal is refused with a
 * clear error; the store goes on. */
TEST_F(JournalTest, RecordTooBigIsRefused)
{
	Remkfs([](struct rawstore_mkfs_opts &mo) { mo.journal_size = 1 << 20; });
	if (HasFatalFailure())
		return;
	std::string v = pattern(600 << 10, 3);
	ASSERT_EQ(Write("c", "m", 0, "m"), 0);
	struct rawstore_txn *t = T();
	rawstore_txn_omap_set(t, "c", "m", 1, "k", 1, v.data(), v.size());
	EXPECT_EQ(Submit(t), -E2BIG);
	EXPECT_NE(std::string(rawstore_errmsg()).find("journal-size"), std::string::npos)
		<< rawstore_errmsg();
	/* it failed alone: the store goes on */
	ASSERT_EQ(Write("c", "after", 0, pattern(8192, 4)), 0) << rawstore_errmsg();
	EXPECT_EQ(rawstore_close(st), 0);
	st = nullptr;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	char got[4];
	EXPECT_EQ(rawstore_omap_get(st, "c", "m", 1, "k", 1, got, sizeof(got)), -ENODATA);
	EXPECT_TRUE(Read("c", "after", 0, 10000) == pattern(8192, 4));
	ExpectClean();
}


namespace {
struct Result {
	std::mutex m;
	std::condition_variable cv;
	int n = 0;
	std::vector<int> r;
};
void result_cb(struct rawstore_txn *t, int result, void *arg)
{
	auto x = static_cast<std::pair<Result *, int> *>(arg);
	std::lock_guard<std::mutex> l(x->first->m);
	x->first->r[x->second] = result;
	x->first->n++;
	x->first->cv.notify_all();
	rawstore_txn_free(t);
}
} // namespace

/*
 * One transaction removes 64 objects of 220 extents each, every extent
 * between two of another object's: the free-list records its commit adds
 * (two per extent) need more than half a 1 MiB journal.  It is refused
 * alone with -E2BIG before it joins a group: the transactions queued
 * with it commit, the store does not stop, and the same removes split
 * into smaller transactions succeed.
 */
TEST_F(JournalTest, RemoveOfManyExtentsIsSizedBeforeItJoins)
{
	const int nobj = 64, rounds = 220, unit = 4096;
	Close();
	ASSERT_EQ(make_file(dev, 256ULL << 20), 0);
	Remkfs([](struct rawstore_mkfs_opts &mo) { mo.journal_size = 1 << 20; });
	if (HasFatalFailure())
		return;
	std::string blk = pattern(unit, 5);
	/* f<i> and k<i> take turns: no two of f's extents are neighbours */
	for (int r = 0; r < rounds; r++) {
		Gate w;
		for (int i = 0; i < nobj; i++) {
			struct rawstore_txn *t;
			ASSERT_EQ(rawstore_txn_new(&t), 0);
			std::string f = "f" + std::to_string(i), k = "k" + std::to_string(i);
			rawstore_txn_write(t, "c", f.data(), f.size(), (uint64_t)r * unit, blk.data(),
					   unit);
			rawstore_txn_write(t, "c", k.data(), k.size(), (uint64_t)r * unit, blk.data(),
					   unit);
			ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &w), 0);
		}
		std::unique_lock<std::mutex> l(w.m);
		w.cv.wait(l, [&] { return w.done == nobj; });
		ASSERT_EQ(w.failed, 0) << "round " << r;
	}
	struct rawstore_stat os;
	os.struct_size = sizeof(os);
	ASSERT_EQ(rawstore_stat(st, "c", "f0", 2, &os), 0);
	ASSERT_GE(os.extents, (uint64_t)rounds - 8) << "f0 is not fragmented";
	uint64_t free0 = Statfs().free;

	Gate g;
	HoldCommitThread(st, T(), g);
	if (HasFatalFailure())
		return;
	Result res;
	res.r.assign(3, 1);
	std::pair<Result *, int> a0(&res, 0), a1(&res, 1), a2(&res, 2);
	std::string x = pattern(8192, 6), y = pattern(8192, 7);
	struct rawstore_txn *t = T();
	rawstore_txn_write(t, "c", "x", 1, 0, x.data(), x.size());
	ASSERT_EQ(rawstore_submit_async(st, t, result_cb, &a0), 0);
	t = T();
	for (int i = 0; i < nobj; i++) {
		std::string f = "f" + std::to_string(i);
		rawstore_txn_remove(t, "c", f.data(), f.size());
	}
	ASSERT_EQ(rawstore_submit_async(st, t, result_cb, &a1), 0);
	t = T();
	rawstore_txn_write(t, "c", "y", 1, 0, y.data(), y.size());
	ASSERT_EQ(rawstore_submit_async(st, t, result_cb, &a2), 0);
	Release(g);
	{
		std::unique_lock<std::mutex> l(res.m);
		res.cv.wait(l, [&] { return res.n == 3; });
	}
	EXPECT_EQ(res.r[0], 0) << "an unrelated transaction of the group failed";
	EXPECT_EQ(res.r[1], -E2BIG);
	EXPECT_EQ(res.r[2], 0) << "an unrelated transaction of the group failed";
	ASSERT_EQ(Write("c", "z", 0, pattern(8192, 8)), 0) << "the store stopped: "
							      << rawstore_errmsg();
	EXPECT_TRUE(Exists("f0") && Exists("f63"));
	/* split in eight, they go */
	for (int b = 0; b < 8; b++) {
		t = T();
		for (int i = b * 8; i < b * 8 + 8; i++) {
			std::string f = "f" + std::to_string(i);
			rawstore_txn_remove(t, "c", f.data(), f.size());
		}
		ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();
	}
	EXPECT_FALSE(Exists("f0"));
	Close();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_FALSE(Exists("f17"));
	EXPECT_TRUE(Read("c", "x", 0, 10000) == x);
	EXPECT_TRUE(Read("c", "y", 0, 10000) == y);
	std::string whole;
	for (int r = 0; r < rounds; r++)
		whole += blk;
	EXPECT_TRUE(Read("c", "k9", 0, rounds * unit) == whole);
	EXPECT_GE(Statfs().free, free0 + (uint64_t)nobj * rounds * unit - (3 << 16));
	ExpectClean();
}

/*
 * 64 queued 32 KiB overwrites carry 2 MiB of deferred data: as one group
 * their record would be four times half a 1 MiB journal.  The groups stop
 * growing at an eighth of the journal, so every one commits.
 */
TEST_F(JournalTest, GroupsFitTheJournal)
{
	Remkfs([](struct rawstore_mkfs_opts &mo) { mo.journal_size = 1 << 20; });
	if (HasFatalFailure())
		return;
	const int n = 64, len = 32768;
	for (int i = 0; i < n; i++)
		ASSERT_EQ(Write("c", "o" + std::to_string(i), 0, pattern(len, i)), 0);
	struct rawstore_perf p0 = Perf();
	Gate g;
	HoldCommitThread(st, T(), g);
	if (HasFatalFailure())
		return;
	std::vector<std::string> data;
	for (int i = 0; i < n; i++) {
		data.push_back(pattern(len, 1000 + i));
		struct rawstore_txn *t = T();
		std::string k = "o" + std::to_string(i);
		rawstore_txn_write(t, "c", k.data(), k.size(), 0, data[i].data(), len);
		ASSERT_EQ(rawstore_submit_async(st, t, count_cb, &g), 0);
	}
	Release(g);
	{
		std::unique_lock<std::mutex> l(g.m);
		g.cv.wait(l, [&] { return g.done == n; });
	}
	EXPECT_EQ(g.failed, 0) << rawstore_errmsg();
	struct rawstore_perf p = Perf();
	EXPECT_GT(p.deferred_writes - p0.deferred_writes, 0u) << "the overwrites were not deferred";
	/* 2 MiB in records of at most about 128 KiB + one transaction */
	EXPECT_GE(p.journal_records - p0.journal_records, 12u);
	for (int i = 0; i < n; i++)
		EXPECT_TRUE(Read("c", "o" + std::to_string(i), 0, len) == data[i]) << i;
	Close();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	for (int i = 0; i < n; i += 9)
		EXPECT_TRUE(Read("c", "o" + std::to_string(i), 0, len) == data[i]) << i;
	ExpectClean();
}

namespace {
struct AckSeen {
	struct rawstore *st;
	std::mutex m;
	std::condition_variable cv;
	bool done = false;
	int result = 1;
	uint64_t write_ops = 0;
	std::string data;
};

/* At the acknowledgement: the device writes so far, and what a read sees. */
void ack_cb(struct rawstore_txn *t, int result, void *arg)
{
	auto a = static_cast<AckSeen *>(arg);
	struct rawstore_perf p = {};
	std::string buf(4096, 0);
	p.struct_size = sizeof(p);
	rawstore_perf_get(a->st, &p);
	ssize_t n = rawstore_read(a->st, "c", "o", 1, 0, &buf[0], buf.size());
	std::lock_guard<std::mutex> l(a->m);
	a->result = result;
	a->write_ops = p.dev_write_ops;
	a->data = n == (ssize_t)buf.size() ? buf : std::string();
	a->done = true;
	a->cv.notify_all();
	rawstore_txn_free(t);
}
} // namespace

/*
 * A small overwrite is deferred: its data is in the record.  With the
 * device journal its transaction completes once the record is durable,
 * before the in-place write (a read in the callback finds the new data in
 * the queue); with RocksDB's WAL it completes after the in-place write.
 */
TEST_F(JournalTest, DeferredOverwriteCompletesBeforeItsInPlaceWrite)
{
	for (bool device : { true, false }) {
		SCOPED_TRACE(device ? "device journal" : "rocksdb journal");
		if (!device) {
			Close();
			RemkfsJournal(RAWSTORE_JOURNAL_ROCKSDB);
			ASSERT_EQ(MkColl("c"), 0);
		}
		ASSERT_EQ(Write("c", "o", 0, pattern(65536, 1)), 0);
		struct rawstore_perf p0 = Perf();
		std::string upd = pattern(4096, 2);
		AckSeen a;
		a.st = st;
		struct rawstore_txn *t = T();
		rawstore_txn_write(t, "c", "o", 1, 0, upd.data(), upd.size());
		ASSERT_EQ(rawstore_submit_async(st, t, ack_cb, &a), 0);
		{
			std::unique_lock<std::mutex> l(a.m);
			a.cv.wait(l, [&a] { return a.done; });
		}
		EXPECT_EQ(a.result, 0);
		EXPECT_TRUE(a.data == upd) << "the callback's read did not see the overwrite";
		/* a transaction after it: the commit thread is past its writes */
		t = T();
		rawstore_txn_touch(t, "c", "after", 5);
		ASSERT_EQ(Submit(t), 0);
		struct rawstore_perf p1 = Perf();
		EXPECT_EQ(p1.deferred_writes - p0.deferred_writes, 1u);
		EXPECT_EQ(p1.dev_write_ops - p0.dev_write_ops, 1u) << "one in-place write";
		EXPECT_EQ(a.write_ops - p0.dev_write_ops, device ? 0u : 1u);
		EXPECT_EQ(p1.deferred_early_acks - p0.deferred_early_acks, device ? 1u : 0u);
		Close();
		ASSERT_EQ(Open(), 0) << rawstore_errmsg();
		std::string want = pattern(65536, 1);
		want.replace(0, upd.size(), upd);
		EXPECT_TRUE(Read("c", "o", 0, 70000) == want);
		ExpectClean();
	}
}

/*
 * A deferred overwrite of "a" is applied in place; its record is not
 * deleted yet (the journal deletes applied records in batches).  "a" is
 * removed and "b" gets its units (best fit: the 64 KiB hole between "a"
 * and "pad").  After a power cut replay must not write the old overwrite
 * over "b": the record that allocates the units deletes the deferred one.
 */
TEST_F(JournalTest, ReusedUnitsOfAnAppliedDeferredWriteKeepTheirNewData)
{
	int r = CrashChild(RS_CRASH_NONE, 0, [](struct rawstore *s) {
		struct rawstore_txn *t;
		std::string upd = pattern(4096, 2);
		if (Put(s, "a", pattern(65536, 1)) || Put(s, "pad", pattern(65536, 3)))
			return 1;
		if (rawstore_txn_new(&t))
			return 1;
		rawstore_txn_write(t, "c", "a", 1, 0, upd.data(), upd.size());
		int ret = rawstore_submit(s, t);
		rawstore_txn_reset(t);
		rawstore_txn_touch(t, "c", "after", 5);	/* the in-place write is done */
		if (!ret)
			ret = rawstore_submit(s, t);
		rawstore_txn_reset(t);
		rawstore_txn_remove(t, "c", "a", 1);
		if (!ret)
			ret = rawstore_submit(s, t);
		rawstore_txn_free(t);
		if (ret || Put(s, "b", pattern(65536, 4)))
			return 1;
		_exit(RS_CRASH_EXIT);	/* a power cut: no close */
	});
	ASSERT_EQ(r, RS_CRASH_EXIT);
	LoseRocksdbState();
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_FALSE(Exists("a"));
	EXPECT_TRUE(Read("c", "b", 0, 70000) == pattern(65536, 4))
		<< "replay wrote a deferred record of \"a\" over \"b\"";
	EXPECT_TRUE(Read("c", "pad", 0, 70000) == pattern(65536, 3));
	ExpectClean();
}

/* mkfs refuses a journal size it cannot use. */
TEST_F(JournalTest, MkfsChecksTheSize)
{
	Close();
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	mo.force = 1;
	mo.journal_size = (1 << 20) + 512;
	EXPECT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), -EINVAL);
	mo.journal_size = 512 << 10;
	EXPECT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), -EINVAL);
	mo.journal_size = 48 << 20; /* of a 64 MiB device */
	EXPECT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), -ENOSPC);
	mo.journal = RAWSTORE_JOURNAL_ROCKSDB;
	mo.journal_size = 1 << 20;
	EXPECT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), -EINVAL);
	mo.journal_size = 0;
	ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0);
	ASSERT_EQ(Open(), 0);
	struct rawstore_info i;
	i.struct_size = sizeof(i);
	ASSERT_EQ(rawstore_get_info(st, &i), 0);
	EXPECT_STREQ(i.journal, "rocksdb");
	EXPECT_EQ(i.format_version, 1u);
	EXPECT_EQ(i.journal_size, 0u);
}

/* A journal write that fails stops the store; the record is taken back,
 * so the failed transaction does not come back at the next open. */
TEST_F(JournalTest, FailedRecordWriteStopsTheStore)
{
	ASSERT_EQ(Write("c", "a", 0, pattern(8192, 1)), 0);
	rs_debug_fail_io(RS_IO_JOURNAL, 1, EIO, 1);
	EXPECT_EQ(Write("c", "b", 0, pattern(8192, 2)), -EIO);
	EXPECT_EQ(rs_debug_io_faults(), 1u);
	EXPECT_NE(std::string(rawstore_errmsg()).find("journal"), std::string::npos)
		<< rawstore_errmsg();
	EXPECT_EQ(Write("c", "c", 0, pattern(8192, 3)), -EIO); /* sticky */
	EXPECT_EQ(rawstore_close(st), -EIO);
	st = nullptr;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_EQ(Read("c", "a", 0, 10000), pattern(8192, 1));
	EXPECT_FALSE(Exists("b"));
	EXPECT_FALSE(Exists("c"));
	ExpectClean();
}
