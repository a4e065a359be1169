// Checks that corruption is caught: a flipped data byte fails the checksum
// (-EIO, counted, never returned), a flipped metadata byte fails the onode
// crc (-EUCLEAN), and fsck finds and (where it can) repairs leaks, orphans
// and double use.
#include <rocksdb/c.h>

#include <dirent.h>

#include <set>

#include "helpers.h"

class RawDb {
public:
	explicit RawDb(const std::string &path)
	{
		rocksdb_options_t *o = rocksdb_options_create();
		char *err = nullptr;
		db = rocksdb_open(o, path.c_str(), &err);
		rocksdb_options_destroy(o);
		EXPECT_EQ(err, nullptr);
		wo = rocksdb_writeoptions_create();
		rocksdb_writeoptions_set_sync(wo, 1);
		ro = rocksdb_readoptions_create();
	}
	~RawDb()
	{
		rocksdb_close(db);
		rocksdb_writeoptions_destroy(wo);
		rocksdb_readoptions_destroy(ro);
	}
	std::string Get(const std::string &k)
	{
		char *err = nullptr;
		size_t vl;
		char *v = rocksdb_get(db, ro, k.data(), k.size(), &vl, &err);
		EXPECT_NE(v, nullptr);
		std::string s(v ? v : "", v ? vl : 0);
		rocksdb_free(v);
		return s;
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
	/* first key with @prefix */
	std::string First(const std::string &prefix)
	{
		rocksdb_iterator_t *it = rocksdb_create_iterator(db, ro);
		rocksdb_iter_seek(it, prefix.data(), prefix.size());
		std::string k;
		if (rocksdb_iter_valid(it)) {
			size_t kl;
			const char *kp = rocksdb_iter_key(it, &kl);
			k.assign(kp, kl);
		}
		rocksdb_iter_destroy(it);
		return k.compare(0, prefix.size(), prefix) ? std::string() : k;
	}
	rocksdb_t *db;
	rocksdb_writeoptions_t *wo;
	rocksdb_readoptions_t *ro;
};

static std::string be64(uint64_t v)
{
	std::string s(8, 0);
	for (int i = 7; i >= 0; i--, v >>= 8)
		s[(size_t)i] = (char)(v & 0xff);
	return s;
}

static std::string onode_key(const std::string &coll, const std::string &name)
{
	std::string k = "O";
	k += (char)(coll.size() >> 8);
	k += (char)(coll.size() & 0xff);
	return k + coll + name;
}

struct Problems {
	std::multiset<int> kinds;
	std::vector<std::string> messages;
	std::vector<std::string> objects; /* "coll/name" or "" */
};

static void collect(void *arg, const struct rawstore_fsck_problem *p)
{
	auto pr = static_cast<Problems *>(arg);
	pr->kinds.insert(p->kind);
	pr->messages.push_back(p->message);
	pr->objects.push_back(p->coll ? std::string(p->coll) + "/" +
						std::string((const char *)p->name, p->name_len)
				      : std::string());
}

class FsckTest : public StoreTest {
protected:
	int Fsck(bool deep, bool repair, Problems *pr, struct rawstore_fsck_result *r)
	{
		struct rawstore_fsck_opts o;
		rawstore_fsck_opts_init(&o);
		o.deep = deep;
		o.repair = repair;
		o.fn = collect;
		o.arg = pr;
		r->struct_size = sizeof(*r);
		return rawstore_fsck(st, &o, r);
	}
	void CloseStore()
	{
		ASSERT_EQ(rawstore_close(st), 0);
		st = nullptr;
	}
	/* Flip the bits @mask of the device byte at @off (the store closed). */
	void FlipBits(uint64_t off, char mask)
	{
		int fd = open(dev.c_str(), O_RDWR);
		char c = 0;
		ASSERT_GE(fd, 0);
		ASSERT_EQ(pread(fd, &c, 1, (off_t)off), 1);
		c ^= mask;
		ASSERT_EQ(pwrite(fd, &c, 1, (off_t)off), 1);
		close(fd);
	}
	/* Device offset of the first 4 KiB block holding @needle. */
	uint64_t FindOnDevice(const std::string &needle)
	{
		int fd = open(dev.c_str(), O_RDONLY);
		std::string b(4096, 0);
		for (uint64_t off = 0; off < dev_size; off += 4096) {
			if (pread(fd, &b[0], 4096, (off_t)off) != 4096)
				break;
			if (!memcmp(b.data(), needle.data(), 4096)) {
				close(fd);
				return off;
			}
		}
		close(fd);
		return 0;
	}
};

TEST_F(FsckTest, CorruptDataBlockIsCaughtByChecksum)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string d = pattern(65536, 42);
	ASSERT_EQ(Write("c", "obj", 0, d), 0);
	CloseStore();
	uint64_t off = FindOnDevice(d.substr(8192, 4096));
	ASSERT_NE(off, 0u);
	FlipBits(off + 100, 0x10);
	ASSERT_EQ(Open(), 0);
	ssize_t r;
	std::string got = Read("c", "obj", 0, 65536, &r);
	EXPECT_EQ(r, -EIO);
	EXPECT_TRUE(got.empty());
	/* the other blocks still read */
	EXPECT_EQ(Read("c", "obj", 0, 8192), d.substr(0, 8192));
	EXPECT_EQ(Read("c", "obj", 12288, 4096), d.substr(12288, 4096));
	struct rawstore_perf p;
	p.struct_size = sizeof(p);
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	EXPECT_EQ(p.csum_errors, 1u);
	/* a partial overwrite of the bad block must not launder it */
	EXPECT_EQ(Write("c", "obj", 8192 + 10, "xx"), -EIO);
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, false, &pr, &res), 0);
	EXPECT_EQ(Fsck(true, false, &pr, &res), -EUCLEAN);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_CSUM), 1u);
	EXPECT_EQ(res.bytes_checked, 65536u);
	/* overwriting the whole block heals the object */
	ASSERT_EQ(Write("c", "obj", 8192, d.substr(8192, 4096)), 0);
	EXPECT_EQ(Read("c", "obj", 0, 65536), d);
	ExpectClean();
}

/*
 * Whole checksum blocks read into a 4 KiB-aligned part of the caller's
 * buffer go there straight from the device (read_direct_bytes), holes
 * read as zeros around them, unaligned parts go through a bounce buffer;
 * a bad block fails the read and leaves the caller's buffer all zeros,
 * never the device's bad bytes.
 */
TEST_F(FsckTest, AlignedReadsLandInTheCallersBuffer)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string d = pattern(65536, 43), e = pattern(65536, 44);
	ASSERT_EQ(Write("c", "obj", 0, d), 0);
	ASSERT_EQ(Write("c", "obj", 131072, e), 0);	/* a 64 KiB hole before it */
	std::string want = d + std::string(65536, 0) + e;
	uint8_t *buf = nullptr;
	ASSERT_EQ(posix_memalign((void **)&buf, 4096, 200000), 0);
	auto direct = [this] {
		struct rawstore_perf p;
		p.struct_size = sizeof(p);
		EXPECT_EQ(rawstore_perf_get(st, &p), 0);
		return p.read_direct_bytes;
	};
	auto rd = [this, buf](size_t at, uint64_t off, size_t len) {
		memset(buf, 0x7f, 200000);
		ssize_t r = rawstore_read(st, "c", "obj", 3, off, buf + at, len);
		return r < 0 ? std::to_string(r) : std::string((char *)buf + at, (size_t)r);
	};
	uint64_t d0 = direct();
	EXPECT_TRUE(rd(0, 0, 196608) == want);
	EXPECT_EQ(direct() - d0, 131072u);
	d0 = direct();
	EXPECT_TRUE(rd(4096, 8192, 4096) == d.substr(8192, 4096));
	EXPECT_EQ(direct() - d0, 4096u);
	d0 = direct();
	EXPECT_TRUE(rd(512, 0, 65536) == d) << "an unaligned buffer";
	EXPECT_TRUE(rd(0, 4196, 8192) == d.substr(4196, 8192)) << "a read inside blocks";
	EXPECT_EQ(direct() - d0, 0u);
	/* the last block before the hole: direct, the hole zeros */
	EXPECT_TRUE(rd(0, 61440, 8192) == want.substr(61440, 8192)) << "into the hole";
	EXPECT_EQ(direct() - d0, 4096u);

	CloseStore();
	uint64_t off = FindOnDevice(d.substr(8192, 4096));
	ASSERT_NE(off, 0u);
	FlipBits(off + 7, 0x01);
	ASSERT_EQ(Open(), 0);
	memset(buf, 0x7f, 200000);
	EXPECT_EQ(rawstore_read(st, "c", "obj", 3, 0, buf, 65536), -EIO);
	EXPECT_TRUE(std::string((char *)buf, 65536) == std::string(65536, 0))
		<< "a failed read left device bytes in the caller's buffer";
	EXPECT_TRUE(rd(0, 131072, 65536) == e) << "the other extent still reads";
	free(buf);
}

TEST_F(FsckTest, CorruptMetadataRecordIsCaught)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "obj", 0, pattern(20000, 1)), 0);
	ASSERT_EQ(Write("c", "ok", 0, pattern(20000, 2)), 0);
	CloseStore();
	{
		RawDb db(meta);
		std::string k = onode_key("c", "obj"), v = db.Get(k);
		ASSERT_GT(v.size(), 20u);
		v[17] ^= 1; /* inside the size field */
		db.Put(k, v);
	}
	ASSERT_EQ(Open(), 0);
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	EXPECT_EQ(rawstore_stat(st, "c", "obj", 3, &s), -EUCLEAN);
	ssize_t r;
	Read("c", "obj", 0, 10, &r);
	EXPECT_EQ(r, -EUCLEAN);
	EXPECT_EQ(Read("c", "ok", 0, 30000), pattern(20000, 2));
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, false, &pr, &res), -EUCLEAN);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_CORRUPT_RECORD), 1u);
	/* its extents look leaked, but repair must not hand them out */
	EXPECT_EQ(res.leaks, 1u);
	uint64_t free_before = Statfs().free;
	EXPECT_EQ(Fsck(false, true, &pr, &res), -EUCLEAN);
	EXPECT_EQ(res.repaired, 0u);
	EXPECT_EQ(Statfs().free, free_before);
}

TEST_F(FsckTest, LeakIsFoundAndRepaired)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "obj", 0, pattern(20000, 1)), 0);
	uint64_t free_before = Statfs().free;
	CloseStore();
	{
		RawDb db(meta);
		std::string k = db.First("F");
		ASSERT_FALSE(k.empty());
		db.Del(k);
	}
	ASSERT_EQ(Open(), 0);
	EXPECT_LT(Statfs().free, free_before);
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, false, &pr, &res), -EUCLEAN);
	EXPECT_EQ(res.leaks, 1u);
	EXPECT_EQ(res.leaked_bytes, free_before);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_LEAK), 1u);
	EXPECT_EQ(Fsck(false, true, &pr, &res), 0);
	EXPECT_EQ(res.repaired, 1u);
	EXPECT_EQ(Statfs().free, free_before);
	Reopen();
	EXPECT_EQ(Statfs().free, free_before);
	ExpectClean();
	ASSERT_EQ(Write("c", "after", 0, pattern(1 << 20, 3)), 0);
	EXPECT_EQ(Read("c", "after", 0, 1 << 20), pattern(1 << 20, 3));
}

TEST_F(FsckTest, OrphanRecordsAreRepaired)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "obj", 0, "x"), 0);
	CloseStore();
	{
		RawDb db(meta);
		db.Put("X" + be64(999) + "attr", "v");
		db.Put("M" + be64(999) + "key", "v");
	}
	ASSERT_EQ(Open(), 0);
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, false, &pr, &res), -EUCLEAN);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_ORPHAN), 2u);
	EXPECT_EQ(Fsck(false, true, &pr, &res), 0);
	EXPECT_EQ(res.repaired, 2u);
	ExpectClean();
}

TEST_F(FsckTest, UsedAndFreeIsReported)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string d = pattern(65536, 7);
	ASSERT_EQ(Write("c", "obj", 0, d), 0);
	CloseStore();
	uint64_t off = FindOnDevice(d.substr(0, 4096));
	ASSERT_NE(off, 0u);
	{
		RawDb db(meta);
		std::string v(8, 0);
		v[1] = 0x10; /* le64 4096 */
		db.Put("F" + be64(off + 4096), v);
	}
	ASSERT_EQ(Open(), 0);
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, false, &pr, &res), -EUCLEAN);
	EXPECT_GE(pr.kinds.count(RAWSTORE_FSCK_USED_AND_FREE), 1u);
}

TEST_F(FsckTest, CorruptFreeListIsRebuiltFromObjects)
{
	ASSERT_EQ(MkColl("c"), 0);
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(Write("c", "o" + std::to_string(i), 0, pattern(50000, i)), 0);
	struct rawstore_txn *t = T();
	rawstore_txn_remove(t, "c", "o3", 2);
	ASSERT_EQ(Submit(t), 0);
	uint64_t free_before = Statfs().free, unpunched_before = Statfs().unpunched;
	ASSERT_GT(unpunched_before, 0u); /* o3's units await punching */
	CloseStore();
	{
		RawDb db(meta);
		std::string v(8, 0);
		v[1] = 0x10;
		db.Put("F" + be64((1 << 20) + 100), v); /* misaligned */
	}
	EXPECT_EQ(Open(), -EUCLEAN);
	EXPECT_NE(std::string(rawstore_errmsg()).find("free list"), std::string::npos);
	struct rawstore_open_opts oo;
	rawstore_open_opts_init(&oo);
	oo.rebuild_freelist = 1;
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &oo, &st), 0) << rawstore_errmsg();
	EXPECT_EQ(Statfs().free, free_before);
	/* issue 8 item 9: the pending punches survive the rebuild */
	EXPECT_EQ(Statfs().unpunched, unpunched_before);
	ExpectClean();
	for (int i = 0; i < 8; i++) {
		if (i != 3) {
			EXPECT_EQ(Read("c", "o" + std::to_string(i), 0, 60000), pattern(50000, i));
		}
	}
	Reopen(); /* the rebuilt list was recorded */
	ExpectClean();
	ASSERT_EQ(Write("c", "new", 0, pattern(1 << 20, 9)), 0);
	EXPECT_EQ(Read("c", "new", 0, 2 << 20), pattern(1 << 20, 9));
	/* with a corrupt object record there is nothing safe to rebuild from */
	CloseStore();
	{
		RawDb db(meta);
		std::string k = onode_key("c", "o1"), v = db.Get(k);
		v[20] ^= 1;
		db.Put(k, v);
	}
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &oo, &st), -EUCLEAN);
	st = nullptr;
}

TEST_F(FsckTest, RecordedCountsAreCheckedAndRepaired)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(MkColl("d"), 0);
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(Write("c", "o" + std::to_string(i), 0, "x"), 0);
	Reopen();
	EXPECT_EQ(Statfs().objects, 5u);
	EXPECT_EQ(Statfs().collections, 2u);
	CloseStore();
	{
		RawDb db(meta);
		std::string v(16, 0);
		v[0] = 42;
		db.Put("K", v);
	}
	ASSERT_EQ(Open(), 0);
	EXPECT_EQ(Statfs().objects, 42u);
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, false, &pr, &res), -EUCLEAN);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_BAD_MAP), 1u);
	EXPECT_EQ(Fsck(false, true, &pr, &res), 0);
	EXPECT_EQ(Statfs().objects, 5u);
	Reopen();
	EXPECT_EQ(Statfs().objects, 5u);
	EXPECT_EQ(Statfs().collections, 2u);
	/* a missing record is recounted at open */
	CloseStore();
	{
		RawDb db(meta);
		db.Del("K");
	}
	ASSERT_EQ(Open(), 0);
	EXPECT_EQ(Statfs().objects, 5u);
	EXPECT_EQ(Statfs().collections, 2u);
	ExpectClean();
}

TEST_F(FsckTest, SharedUnitsMustMatchTheirReferenceRecords)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "a", 0, pattern(16384, 1)), 0);
	struct rawstore_txn *t = T();
	rawstore_txn_clone(t, "c", "a", 1, "b", 1);
	ASSERT_EQ(Submit(t), 0);
	ExpectClean();
	CloseStore();
	{
		RawDb db(meta);
		std::string k = db.First("R");
		ASSERT_FALSE(k.empty());
		db.Del(k); /* one shared unit loses its record */
	}
	ASSERT_EQ(Open(), 0);
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, false, &pr, &res), -EUCLEAN);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_SHARED), 1u);
}

/* issue 8 item 1: repair must keep the attributes, omap and header of an
 * object whose record does not decode: they may be its own. */
TEST_F(FsckTest, RepairKeepsRecordsOfAnUndecodableObject)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "obj", 0, pattern(20000, 1)), 0);
	struct rawstore_txn *t = T();
	ASSERT_EQ(rawstore_txn_setattr(t, "c", "obj", 3, "a", "va", 2), 0);
	ASSERT_EQ(rawstore_txn_omap_set(t, "c", "obj", 3, "k", 1, "vk", 2), 0);
	ASSERT_EQ(rawstore_txn_omap_setheader(t, "c", "obj", 3, "hdr", 3), 0);
	ASSERT_EQ(Submit(t), 0);
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	ASSERT_EQ(rawstore_stat(st, "c", "obj", 3, &s), 0);
	uint64_t nid = s.nid;
	CloseStore();
	{
		RawDb db(meta);
		std::string k = onode_key("c", "obj"), v = db.Get(k);
		v[17] ^= 1;
		db.Put(k, v);
	}
	ASSERT_EQ(Open(), 0);
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, true, &pr, &res), -EUCLEAN);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_CORRUPT_RECORD), 1u);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_ORPHAN), 3u);
	bool said_why = false;
	for (auto &m : pr.messages)
		said_why |= m.find("does not decode (object record: crc mismatch)") !=
			    std::string::npos;
	EXPECT_TRUE(said_why);
	EXPECT_EQ(res.repaired, 0u);
	CloseStore();
	{
		RawDb db(meta);
		EXPECT_EQ(db.Get("X" + be64(nid) + "a"), "va");
		EXPECT_EQ(db.Get("M" + be64(nid) + "k"), "vk");
		EXPECT_EQ(db.Get("H" + be64(nid)), "hdr");
	}
}

/* issue 8 item 3: a used extent that starts inside a free extent which
 * sorts before it is reported (the state before a double allocation). */
TEST_F(FsckTest, UsedExtentStartingInsideAFreeOneIsReported)
{
	oo.deferred_max = 0;
	Reopen();
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "a", 0, pattern(65536, 1)), 0);
	ASSERT_EQ(Write("c", "b", 0, pattern(65536, 2)), 0);
	uint64_t boff = FindOnDevice(pattern(65536, 2).substr(0, 4096));
	ASSERT_NE(boff, 0u);
	struct rawstore_txn *t = T();
	rawstore_txn_remove(t, "c", "a", 1);
	ASSERT_EQ(Submit(t), 0);
	CloseStore();
	{
		RawDb db(meta);
		/* a's units are free now and lie right before b's */
		std::string k = "F" + be64(boff - 65536), v = db.Get(k);
		ASSERT_EQ(v, std::string("\0\0\1\0\0\0\0\0", 8));
		db.Put(k, std::string("\0\x10\1\0\0\0\0\0", 8)); /* 64 KiB + 4 KiB */
	}
	ASSERT_EQ(Open(), 0);
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, false, &pr, &res), -EUCLEAN);
	ASSERT_EQ(pr.kinds.count(RAWSTORE_FSCK_USED_AND_FREE), 1u);
	bool found = false;
	for (size_t i = 0; i < pr.messages.size(); i++)
		found |= pr.messages[i].find("[" + std::to_string(boff) +
					     ", +4096) is both used and free") != std::string::npos &&
			 pr.objects[i] == "c/b";
	EXPECT_TRUE(found);
}

/* issue 8 item 5: a malformed object key counts as a corrupt record, so the
 * extents of its value are not freed by repair. */
TEST_F(FsckTest, MalformedObjectKeyBlocksLeakRepair)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "obj", 0, pattern(65536, 3)), 0);
	uint64_t free_before = Statfs().free;
	CloseStore();
	{
		RawDb db(meta);
		std::string k = onode_key("c", "obj"), v = db.Get(k);
		db.Del(k);
		/* collection length 0: the key does not parse */
		db.Put(std::string("O\0\0obj", 6), v);
	}
	ASSERT_EQ(Open(), 0);
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, true, &pr, &res), -EUCLEAN);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_CORRUPT_RECORD), 1u);
	EXPECT_EQ(res.leaks, 1u);
	EXPECT_EQ(res.leaked_bytes, 65536u);
	EXPECT_EQ(res.repaired, 0u);
	EXPECT_EQ(Statfs().free, free_before);
	Reopen();
	EXPECT_EQ(Statfs().free, free_before);
}

/* issue 8 item 4: a damaged RocksDB table is corruption (-EUCLEAN), not a
 * busy store. */
TEST_F(FsckTest, DamagedTableIsCorruptionNotBusy)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "obj", 0, "x"), 0);
	CloseStore();
	{
		RawDb db(meta);
		rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
		char *err = nullptr;
		rocksdb_flushoptions_set_wait(fo, 1);
		rocksdb_flush(db.db, fo, &err);
		rocksdb_flushoptions_destroy(fo);
		ASSERT_EQ(err, nullptr);
	}
	/* flip bytes in the first data block of every table */
	int tables = 0;
	DIR *d = opendir(meta.c_str());
	ASSERT_NE(d, nullptr);
	while (struct dirent *e = readdir(d)) {
		std::string n = e->d_name;
		if (n.size() < 4 || n.compare(n.size() - 4, 4, ".sst"))
			continue;
		int fd = open((meta + "/" + n).c_str(), O_RDWR);
		ASSERT_GE(fd, 0);
		char b[16];
		ASSERT_EQ(pread(fd, b, sizeof(b), 8), (ssize_t)sizeof(b));
		for (char &c : b)
			c ^= 0x5a;
		ASSERT_EQ(pwrite(fd, b, sizeof(b), 8), (ssize_t)sizeof(b));
		close(fd);
		tables++;
	}
	closedir(d);
	ASSERT_GE(tables, 1);
	EXPECT_EQ(Open(), -EUCLEAN);
	std::string msg = rawstore_errmsg();
	EXPECT_NE(msg.find("Corruption"), std::string::npos) << msg;
	st = nullptr;
}

/* issue 8 item 9: the rebuild refuses object extents that overlap unless
 * reference records say the units are shared (clones), and keeps the
 * pending punches. */
TEST_F(FsckTest, RebuildRefusesOverlapsThatAreNotClones)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "a", 0, pattern(16384, 1)), 0);
	ASSERT_EQ(Write("c", "gone", 0, pattern(16384, 2)), 0);
	struct rawstore_txn *t = T();
	rawstore_txn_clone(t, "c", "a", 1, "b", 1);
	rawstore_txn_remove(t, "c", "gone", 4);
	ASSERT_EQ(Submit(t), 0);
	uint64_t free_before = Statfs().free, unpunched_before = Statfs().unpunched;
	ASSERT_EQ(unpunched_before, 16384u);
	CloseStore();
	{
		RawDb db(meta);
		std::string k = db.First("F");
		db.Put(k, std::string("\1\0\0\0\0\0\0\0", 8)); /* length 1 */
	}
	struct rawstore_open_opts ro;
	rawstore_open_opts_init(&ro);
	ro.rebuild_freelist = 1;
	/* a and b share their units through reference records: fine */
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &ro, &st), 0) << rawstore_errmsg();
	EXPECT_EQ(Statfs().free, free_before);
	EXPECT_EQ(Statfs().unpunched, unpunched_before);
	ExpectClean();
	CloseStore();
	/* a third object record claiming a's units, with no reference record */
	{
		RawDb db(meta);
		db.Put(onode_key("c", "intruder"), db.Get(onode_key("c", "a")));
	}
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &ro, &st), -EUCLEAN);
	std::string msg = rawstore_errmsg();
	EXPECT_NE(msg.find("used by 3 object extents"), std::string::npos) << msg;
	st = nullptr;
	{
		RawDb db(meta);
		db.Del(onode_key("c", "intruder"));
		/* b's record gone: the units have one user and a stale reference
		 * record, which does not block the rebuild */
		db.Del(onode_key("c", "b"));
		db.Put(onode_key("c", "x"), db.Get(onode_key("c", "a")));
		/* x claims a's units too: now two users, and the record says 1 extra */
	}
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &ro, &st), 0) << rawstore_errmsg();
	CloseStore();
	{
		RawDb db(meta);
		db.Put(db.First("P"), std::string("\0\0\0\0\0\0\0\0", 8)); /* corrupt */
	}
	/* a corrupt unpunched list: every free byte awaits punching */
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &ro, &st), 0) << rawstore_errmsg();
	EXPECT_EQ(Statfs().unpunched, Statfs().free);
}

/* issue 8 item 6: a free-list record whose end wraps past 2^64 is refused
 * at open (an "off + len > end" check accepted it). */
TEST_F(FsckTest, WrappingFreeRecordIsRefusedAtOpen)
{
	CloseStore();
	{
		RawDb db(meta);
		std::string v(8, 0);
		uint64_t len = 0ULL - (1 << 20); /* 2 MiB + len wraps to 1 MiB */
		for (int i = 0; i < 8; i++)
			v[(size_t)i] = (char)(len >> (8 * i));
		db.Del(db.First("F")); /* the only other record: nothing overlaps */
		db.Put("F" + be64(2 << 20), v);
	}
	EXPECT_EQ(Open(), -EUCLEAN);
	std::string msg = rawstore_errmsg();
	EXPECT_NE(msg.find("free list in metadata is corrupt: free-list record [2097152, +"),
		  std::string::npos) << msg;
	st = nullptr;
}

/* issue 8 item 6: a malformed reference record is reported as corrupt,
 * naming the record, not read as "unit 0 has 1 user". */
TEST_F(FsckTest, MalformedReferenceRecordIsCorrupt)
{
	CloseStore();
	{
		RawDb db(meta);
		db.Put("R" + be64(2 << 20), std::string("\1\0\0", 3));
	}
	ASSERT_EQ(Open(), 0);
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, false, &pr, &res), -EUCLEAN);
	ASSERT_EQ(pr.kinds.count(RAWSTORE_FSCK_CORRUPT_RECORD), 1u);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_SHARED), 0u);
	EXPECT_NE(pr.messages[0].find("reference record has a 8-byte key and a 3-byte value"),
		  std::string::npos) << pr.messages[0];
}

/* issue 8 item 6: a transaction reads a shared unit's reference record
 * through the decoder: a record saying "0 extra users" (which would let an
 * overwrite free a unit the clone still uses) fails the transaction with
 * -EUCLEAN and changes nothing. */
TEST_F(FsckTest, TransactionRefusesAMalformedReferenceRecord)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string a = pattern(16384, 1);
	ASSERT_EQ(Write("c", "a", 0, a), 0);
	struct rawstore_txn *t = T();
	rawstore_txn_clone(t, "c", "a", 1, "b", 1);
	ASSERT_EQ(Submit(t), 0);
	CloseStore();
	{
		RawDb db(meta);
		std::string k = db.First("R");
		ASSERT_FALSE(k.empty());
		db.Put(k, std::string("\0\0\0\0", 4));
	}
	ASSERT_EQ(Open(), 0);
	EXPECT_EQ(Write("c", "a", 0, pattern(16384, 2)), -EUCLEAN);
	ssize_t r;
	EXPECT_TRUE(Read("c", "a", 0, a.size(), &r) == a);
	EXPECT_TRUE(Read("c", "b", 0, a.size(), &r) == a);
}

static std::string le64(uint64_t v)
{
	std::string s(8, 0);
	for (int i = 0; i < 8; i++, v >>= 8)
		s[(size_t)i] = (char)(v & 0xff);
	return s;
}

/*
 * Issue 10: a range recorded as zeroed ("Z") must lie in the free list.
 * A "Z" record over an object's extent is reported by a read-only fsck
 * (a read-write open drops it, with a warning, and treats it as dirty).
 */
TEST_F(FsckTest, ZeroedRecordOutsideTheFreeListIsReported)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "obj", 0, pattern(64 << 10, 1)), 0);
	struct rawstore_stat s;
	s.struct_size = sizeof(s);
	ASSERT_EQ(rawstore_stat(st, "c", "obj", 3, &s), 0);
	ASSERT_EQ(s.allocated, 64u << 10);
	uint64_t obj_off = FindOnDevice(pattern(64 << 10, 1).substr(0, 4096));
	ASSERT_NE(obj_off, 0u);
	CloseStore();
	{
		RawDb db(meta);
		db.Put("Z" + be64(obj_off), le64(8192));
	}
	oo.read_only = 1;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, false, &pr, &res), -EUCLEAN);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_ZEROED_NOT_FREE), 1u);
	EXPECT_EQ(res.errors, 1u);
	ASSERT_EQ(pr.messages.size(), 1u);
	EXPECT_NE(pr.messages[0].find("[" + std::to_string(obj_off) + ", +8192)"),
		  std::string::npos)
		<< pr.messages[0];
	CloseStore();
	/* read-write: open drops the claim; the store is clean and the data intact */
	oo.read_only = 0;
	ASSERT_EQ(Open(), 0);
	ExpectClean();
	EXPECT_EQ(Read("c", "obj", 0, 64 << 10), pattern(64 << 10, 1));
}

/*
 * Issue 10: a range a crash left being zeroed or punched ("W", out of the
 * free list) is reported as in flight by a read-only fsck, not as a leak;
 * a read-write open puts it back and the store is clean.
 */
TEST_F(FsckTest, LeftoverInFlightRecordIsReported)
{
	uint64_t free_before = Statfs().free;
	CloseStore();
	uint64_t off, len;
	{
		RawDb db(meta);
		std::string k = db.First("F");
		ASSERT_FALSE(k.empty());
		std::string v = db.Get(k);
		ASSERT_EQ(v.size(), 8u);
		off = 0;
		for (int i = 0; i < 8; i++)
			off = off << 8 | (unsigned char)k[1 + (size_t)i];
		len = 0;
		for (int i = 7; i >= 0; i--)
			len = len << 8 | (unsigned char)v[(size_t)i];
		ASSERT_GT(len, 1u << 20);
		/* the first MiB is in flight, the rest stays free */
		db.Del(k);
		db.Put("W" + be64(off), le64(1 << 20));
		db.Put("F" + be64(off + (1 << 20)), le64(len - (1 << 20)));
		/* a range in flight is dirty: mkfs's zeroed record shrinks too */
		ASSERT_EQ(db.First("Z"), "Z" + be64(off));
		db.Del("Z" + be64(off));
		db.Put("Z" + be64(off + (1 << 20)), le64(len - (1 << 20)));
	}
	oo.read_only = 1;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(false, false, &pr, &res), -EUCLEAN);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_IN_FLIGHT), 1u);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_LEAK), 0u);
	EXPECT_EQ(res.leaks, 0u);
	EXPECT_EQ(res.errors, 1u);
	CloseStore();
	oo.read_only = 0;
	ASSERT_EQ(Open(), 0);
	EXPECT_EQ(Statfs().free, free_before);
	ExpectClean();
	{
		/* nothing left in flight */
		Problems pr2;
		EXPECT_EQ(Fsck(false, false, &pr2, &res), 0);
		EXPECT_EQ(pr2.kinds.size(), 0u);
	}
}

/* Issue 42: two object records with one object id (what a rename that
 * left its source behind would make) share attributes and omap: fsck names
 * both records, even when they hold no data units (inline objects, which
 * the shared-unit check cannot see), and does not pretend to repair it. */
TEST_F(FsckTest, TwoRecordsWithOneObjectIdAreCaught)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "a", 0, "inline"), 0);
	ASSERT_EQ(Write("c", "b", 0, "other"), 0);
	ExpectClean();
	CloseStore();
	{
		RawDb db(meta);
		std::string ka = db.First(std::string("O\0\1c", 4) + "a");
		ASSERT_EQ(ka, std::string("O\0\1c", 4) + "a");
		/* "b" becomes a second record of a's object; the count stays 2 */
		db.Put(std::string("O\0\1c", 4) + "b", db.Get(ka));
	}
	ASSERT_EQ(Open(), 0);
	Problems pr;
	struct rawstore_fsck_result res;
	EXPECT_EQ(Fsck(true, false, &pr, &res), -EUCLEAN);
	EXPECT_EQ(pr.kinds.count(RAWSTORE_FSCK_BAD_MAP), 2u);
	EXPECT_EQ(pr.kinds.size(), 2u);
	EXPECT_EQ(pr.objects, (std::vector<std::string>{ "c/a", "c/b" }));
	EXPECT_NE(pr.messages[0].find("used by more than one object record"), std::string::npos)
		<< pr.messages[0];
	EXPECT_EQ(res.errors, 2u);
	/* repair leaves it (which record owns the attributes is unknown) */
	Problems pr2;
	EXPECT_EQ(Fsck(false, true, &pr2, &res), -EUCLEAN);
	EXPECT_EQ(res.repaired, 0u);
}
