// Checks rawstore_txn_rename (issue 42): an object moves to a new name, in
// its collection or another, with its data, attributes, omap and header,
// without a byte of data copied; a destination that exists is replaced and
// its space freed; missing sources and destination collections fail the
// transaction; renames compose in order with the other operations of their
// transaction; cached records follow; and a deep fsck is clean after each.
#include <atomic>
#include <map>
#include <thread>

#include "helpers.h"

namespace {

int collect_names(void *arg, const void *name, size_t len)
{
	auto v = static_cast<std::vector<std::string> *>(arg);
	v->emplace_back(static_cast<const char *>(name), len);
	return 0;
}

int collect_kv(void *arg, const void *k, size_t kl, const void *v, size_t vl)
{
	auto m = static_cast<std::map<std::string, std::string> *>(arg);
	(*m)[std::string(static_cast<const char *>(k), kl)] =
		std::string(static_cast<const char *>(v), vl);
	return 0;
}

} // namespace

class RenameTest : public StoreTest {
protected:
	int Rename(const char *sc, const std::string &s, const char *dc, const std::string &d)
	{
		struct rawstore_txn *t = T();
		EXPECT_EQ(rawstore_txn_rename(t, sc, s.data(), s.size(), dc, d.data(), d.size()),
			  0);
		return Submit(t);
	}
	std::vector<std::string> List(const char *c)
	{
		std::vector<std::string> v;
		EXPECT_GE(rawstore_list(st, c, nullptr, 0, 0, collect_names, &v), 0);
		return v;
	}
	int StatErr(const char *c, const std::string &n)
	{
		struct rawstore_stat s;
		s.struct_size = sizeof(s);
		return rawstore_stat(st, c, n.data(), n.size(), &s);
	}
	struct rawstore_stat Stat(const char *c, const std::string &n)
	{
		struct rawstore_stat s;
		s.struct_size = sizeof(s);
		EXPECT_EQ(rawstore_stat(st, c, n.data(), n.size(), &s), 0);
		return s;
	}
	std::string Attr(const char *c, const std::string &n, const char *a, int *ret = nullptr)
	{
		char buf[256];
		int r = (int)rawstore_getattr(st, c, n.data(), n.size(), a, buf, sizeof(buf));
		if (ret)
			*ret = r;
		return r < 0 ? std::string() : std::string(buf, (size_t)r);
	}
	std::map<std::string, std::string> Omap(const char *c, const std::string &n)
	{
		std::map<std::string, std::string> m;
		EXPECT_GE(rawstore_omap_iterate(st, c, n.data(), n.size(), nullptr, 0, collect_kv,
						&m), 0);
		return m;
	}
	std::string Header(const char *c, const std::string &n)
	{
		char buf[256];
		int r = (int)rawstore_omap_get_header(st, c, n.data(), n.size(), buf, sizeof(buf));
		EXPECT_GE(r, 0);
		return r < 0 ? std::string() : std::string(buf, (size_t)r);
	}
	/* An object with data, two attributes, three omap keys and a header. */
	void Populate(const char *c, const std::string &n, const std::string &data)
	{
		struct rawstore_txn *t = T();
		rawstore_txn_write(t, c, n.data(), n.size(), 0, data.data(), data.size());
		rawstore_txn_setattr(t, c, n.data(), n.size(), "etag", "e-1", 3);
		rawstore_txn_setattr(t, c, n.data(), n.size(), "ctype", "text/x", 6);
		for (const char *k : { "k1", "k2", "k3" })
			rawstore_txn_omap_set(t, c, n.data(), n.size(), k, 2, k, 2);
		rawstore_txn_omap_setheader(t, c, n.data(), n.size(), "hdr", 3);
		rawstore_txn_alloc_hint(t, c, n.data(), n.size(), 1 << 20);
		ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();
	}
	/* What Populate() made, under @c/@n. */
	void ExpectPopulated(const char *c, const std::string &n, const std::string &data)
	{
		EXPECT_EQ(Read(c, n, 0, data.size() + 8192), data);
		EXPECT_EQ(Attr(c, n, "etag"), "e-1");
		EXPECT_EQ(Attr(c, n, "ctype"), "text/x");
		EXPECT_EQ(Omap(c, n), (std::map<std::string, std::string>{
					      { "k1", "k1" }, { "k2", "k2" }, { "k3", "k3" } }));
		EXPECT_EQ(Header(c, n), "hdr");
		EXPECT_EQ(Stat(c, n).alloc_hint, 1u << 20);
	}
};

/* Within one collection: data (large and inline), attributes, omap, header
 * and hint move; the old name is gone; no unit is allocated or freed; the
 * object keeps its id; everything reads back byte for byte after reopen. */
TEST_F(RenameTest, WithinACollectionMovesEverything)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string big = pattern(300000, 1), small = pattern(1000, 2);
	Populate("c", "tmp-big", big);
	Populate("c", "tmp-small", small);
	auto before = Statfs();
	uint64_t nid = Stat("c", "tmp-big").nid;
	ASSERT_NE(before.allocated, 0u);

	struct rawstore_txn *t = T();
	ASSERT_EQ(rawstore_txn_rename(t, "c", "tmp-big", 7, "c", "big", 3), 0);
	ASSERT_EQ(rawstore_txn_rename(t, "c", "tmp-small", 9, "c", "small", 5), 0);
	ASSERT_EQ(rawstore_txn_count(t), 2u);
	ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();

	auto after = Statfs();
	EXPECT_EQ(after.allocated, before.allocated); /* nothing copied, nothing freed */
	EXPECT_EQ(after.free, before.free);
	EXPECT_EQ(after.objects, 2u);
	EXPECT_EQ(Stat("c", "big").nid, nid);
	EXPECT_EQ(StatErr("c", "tmp-big"), -ENOENT);
	EXPECT_EQ(StatErr("c", "tmp-small"), -ENOENT);
	EXPECT_EQ(List("c"), (std::vector<std::string>{ "big", "small" }));
	ExpectPopulated("c", "big", big);
	ExpectPopulated("c", "small", small);
	ExpectClean();
	Reopen();
	ExpectPopulated("c", "big", big);
	ExpectPopulated("c", "small", small);
	EXPECT_EQ(StatErr("c", "tmp-big"), -ENOENT);
	EXPECT_EQ(List("c"), (std::vector<std::string>{ "big", "small" }));
	EXPECT_EQ(Statfs().allocated, before.allocated);
	ExpectClean();
}

/* Across collections: the object leaves the source's listing for the
 * destination's, the source collection can then be removed, and the data,
 * attributes and omap read back after reopen. */
TEST_F(RenameTest, AcrossCollections)
{
	ASSERT_EQ(MkColl("tmp"), 0);
	ASSERT_EQ(MkColl("objects"), 0);
	std::string d = pattern(1 << 20, 3);
	Populate("tmp", "upload.1", d);
	ASSERT_EQ(Write("objects", "other", 0, "x"), 0);
	uint64_t alloc = Statfs().allocated;

	ASSERT_EQ(Rename("tmp", "upload.1", "objects", "a/b/c"), 0) << rawstore_errmsg();
	EXPECT_EQ(List("tmp"), std::vector<std::string>{});
	EXPECT_EQ(List("objects"), (std::vector<std::string>{ "a/b/c", "other" }));
	ExpectPopulated("objects", "a/b/c", d);
	EXPECT_EQ(Statfs().allocated, alloc);
	EXPECT_EQ(Statfs().objects, 2u);
	ExpectClean();
	Reopen();
	ExpectPopulated("objects", "a/b/c", d);
	EXPECT_EQ(StatErr("tmp", "upload.1"), -ENOENT);
	/* the source collection is empty now, the destination is not */
	struct rawstore_txn *t = T();
	rawstore_txn_coll_remove(t, "objects");
	EXPECT_EQ(Submit(t), -ENOTEMPTY);
	t = T();
	rawstore_txn_coll_remove(t, "tmp");
	EXPECT_EQ(Submit(t), 0);
	EXPECT_EQ(Statfs().collections, 1u);
	ExpectClean();
}

/* A destination that exists is replaced: its units are freed at the commit
 * (statfs shows them free), its attributes, omap and header go with it,
 * the object count drops by one, and fsck finds no leak and no orphan. */
TEST_F(RenameTest, OverAnExistingDestinationFreesItsSpace)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string src = pattern(65536, 4), dst = pattern(1 << 20, 5);
	Populate("c", "new", src);
	struct rawstore_txn *t = T();
	rawstore_txn_write(t, "c", "obj", 3, 0, dst.data(), dst.size());
	rawstore_txn_setattr(t, "c", "obj", 3, "only-old", "1", 1);
	rawstore_txn_omap_set(t, "c", "obj", 3, "old-key", 7, "v", 1);
	rawstore_txn_omap_setheader(t, "c", "obj", 3, "old-hdr", 7);
	ASSERT_EQ(Submit(t), 0);
	/* the old object is in the onode cache when it is replaced */
	ASSERT_EQ(Read("c", "obj", 0, 100), dst.substr(0, 100));
	auto before = Statfs();
	ASSERT_EQ(before.objects, 2u);
	ASSERT_EQ(before.allocated, 65536u + (1u << 20));

	ASSERT_EQ(Rename("c", "new", "c", "obj"), 0) << rawstore_errmsg();
	auto after = Statfs();
	EXPECT_EQ(after.objects, 1u);
	EXPECT_EQ(after.allocated, 65536u);
	EXPECT_EQ(after.free, before.free + (1u << 20));
	EXPECT_EQ(Read("c", "obj", 0, 2 << 20), src);
	int r;
	Attr("c", "obj", "only-old", &r);
	EXPECT_EQ(r, -ENODATA);
	ExpectPopulated("c", "obj", src);
	EXPECT_EQ(List("c"), std::vector<std::string>{ "obj" });
	ExpectClean();
	Reopen();
	ExpectPopulated("c", "obj", src);
	EXPECT_EQ(Statfs().allocated, 65536u);
	EXPECT_EQ(Statfs().free, after.free);
	ExpectClean();
}

/* Renaming an object over its own clone: the destination's references to
 * the shared units are dropped, not the units, which the renamed object
 * still uses; afterwards no unit is shared and the space is unchanged. */
TEST_F(RenameTest, OverItsOwnCloneKeepsTheSharedUnits)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string d = pattern(256 << 10, 6);
	ASSERT_EQ(Write("c", "a", 0, d), 0);
	struct rawstore_txn *t = T();
	rawstore_txn_clone(t, "c", "a", 1, "b", 1);
	ASSERT_EQ(Submit(t), 0);
	uint64_t alloc = Statfs().allocated;
	ASSERT_EQ(alloc, 256u << 10);

	ASSERT_EQ(Rename("c", "a", "c", "b"), 0) << rawstore_errmsg();
	EXPECT_EQ(Statfs().allocated, alloc);
	EXPECT_EQ(Statfs().objects, 1u);
	EXPECT_EQ(Read("c", "b", 0, 300 << 10), d);
	struct rawstore_records rec;
	rec.struct_size = sizeof(rec);
	ASSERT_EQ(rawstore_records_get(st, &rec), 0);
	EXPECT_EQ(rec.shared_units, 0u);
	ExpectClean();
	/* removing it frees everything */
	t = T();
	rawstore_txn_remove(t, "c", "b", 1);
	ASSERT_EQ(Submit(t), 0);
	EXPECT_EQ(Statfs().allocated, 0u);
	ExpectClean();
}

/* A missing source fails the transaction with -ENOENT at submit, at the
 * rename's index, and the operations before it in the transaction vanish. */
TEST_F(RenameTest, MissingSourceIsEnoent)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "dst", 0, "keep"), 0);
	struct rawstore_txn *t = T();
	rawstore_txn_touch(t, "c", "side", 4);
	rawstore_txn_rename(t, "c", "nope", 4, "c", "dst", 3);
	EXPECT_EQ(rawstore_submit(st, t), -ENOENT);
	EXPECT_EQ(rawstore_txn_failed_op(t), 1);
	rawstore_txn_free(t);
	/* a missing source collection too */
	t = T();
	rawstore_txn_rename(t, "none", "dst", 3, "c", "x", 1);
	EXPECT_EQ(rawstore_submit(st, t), -ENOENT);
	EXPECT_EQ(rawstore_txn_failed_op(t), 0);
	rawstore_txn_free(t);
	EXPECT_EQ(StatErr("c", "side"), -ENOENT);
	EXPECT_EQ(StatErr("c", "x"), -ENOENT);
	EXPECT_EQ(Read("c", "dst", 0, 10), "keep");
	EXPECT_EQ(Statfs().objects, 1u);
	ExpectClean();
}

/* A missing destination collection fails with -ENOENT and a message naming
 * it; the source stays where it was. */
TEST_F(RenameTest, MissingDestinationCollectionIsEnoent)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string d = pattern(50000, 7);
	ASSERT_EQ(Write("c", "src", 0, d), 0);
	struct rawstore_txn *t = T();
	rawstore_txn_rename(t, "c", "src", 3, "gone", "dst", 3);
	EXPECT_EQ(rawstore_submit(st, t), -ENOENT);
	EXPECT_EQ(rawstore_txn_failed_op(t), 0);
	EXPECT_NE(std::string(rawstore_txn_errmsg(t)).find("gone"), std::string::npos)
		<< rawstore_txn_errmsg(t);
	rawstore_txn_free(t);
	EXPECT_EQ(Read("c", "src", 0, 60000), d);
	EXPECT_EQ(rawstore_coll_exists(st, "gone"), 0);
	EXPECT_EQ(Statfs().objects, 1u);
	ExpectClean();
}

/* The builder refuses bad names and a rename of an object to itself, and
 * adds nothing; the same name in another collection is fine. */
TEST_F(RenameTest, BuilderRejectsBadArguments)
{
	struct rawstore_txn *t = T();
	char big[RAWSTORE_NAME_MAX + 1] = { 0 };
	std::string longcoll(RAWSTORE_COLL_NAME_MAX + 1, 'c');
	EXPECT_EQ(rawstore_txn_rename(t, "c", "a", 1, "c", "a", 1), -EINVAL);
	EXPECT_EQ(rawstore_txn_rename(t, "c", "", 0, "c", "b", 1), -EINVAL);
	EXPECT_EQ(rawstore_txn_rename(t, "c", "a", 1, "c", "", 0), -EINVAL);
	EXPECT_EQ(rawstore_txn_rename(t, "c", nullptr, 1, "c", "b", 1), -EINVAL);
	EXPECT_EQ(rawstore_txn_rename(t, "c", "a", 1, "c", nullptr, 1), -EINVAL);
	EXPECT_EQ(rawstore_txn_rename(t, "c", big, sizeof(big), "c", "b", 1), -EINVAL);
	EXPECT_EQ(rawstore_txn_rename(t, "c", "a", 1, "c", big, sizeof(big)), -EINVAL);
	EXPECT_EQ(rawstore_txn_rename(t, "", "a", 1, "c", "b", 1), -EINVAL);
	EXPECT_EQ(rawstore_txn_rename(t, "c", "a", 1, "", "b", 1), -EINVAL);
	EXPECT_EQ(rawstore_txn_rename(t, "c", "a", 1, nullptr, "b", 1), -EINVAL);
	EXPECT_EQ(rawstore_txn_rename(t, "c", "a", 1, longcoll.c_str(), "b", 1), -EINVAL);
	EXPECT_EQ(rawstore_txn_count(t), 0u);
	EXPECT_EQ(rawstore_txn_rename(t, "c", "a", 1, "d", "a", 1), 0);
	EXPECT_EQ(rawstore_txn_rename(t, "c", big, sizeof(big) - 1, "c", "b", 1), 0);
	EXPECT_EQ(rawstore_txn_count(t), 2u);
	rawstore_txn_free(t);
}

/* Swift's PUT: write a temporary object, set its attributes, rename it over
 * the live name, all in one transaction; the temporary name never shows,
 * the replaced object's space is freed, and a deferred overwrite of the
 * source in the same transaction goes with it. */
TEST_F(RenameTest, WriteThenRenameInOneTransaction)
{
	ASSERT_EQ(MkColl("tmp"), 0);
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "obj", 0, pattern(200000, 8)), 0);
	ASSERT_EQ(Write("tmp", "small", 0, pattern(65536, 9)), 0);
	uint64_t alloc = Statfs().allocated;
	std::string d = pattern(500000, 10);

	struct rawstore_txn *t = T();
	rawstore_txn_write(t, "tmp", "t1", 2, 0, d.data(), d.size());
	rawstore_txn_setattr(t, "tmp", "t1", 2, "etag", "e-2", 3);
	rawstore_txn_rename(t, "tmp", "t1", 2, "c", "obj", 3);
	/* a small overwrite in place (deferred), then the rename */
	rawstore_txn_write(t, "tmp", "small", 5, 100, "patched", 7);
	rawstore_txn_rename(t, "tmp", "small", 5, "c", "small", 5);
	ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();

	std::string sm = pattern(65536, 9);
	sm.replace(100, 7, "patched");
	EXPECT_EQ(StatErr("tmp", "t1"), -ENOENT);
	EXPECT_EQ(List("tmp"), std::vector<std::string>{});
	EXPECT_EQ(Read("c", "obj", 0, 600000), d);
	EXPECT_EQ(Attr("c", "obj", "etag"), "e-2");
	EXPECT_EQ(Read("c", "small", 0, 70000), sm);
	/* the 200000-byte object's 49 units freed, 123 new ones used */
	EXPECT_EQ(Statfs().allocated, alloc - 200704 + 503808);
	EXPECT_EQ(Statfs().objects, 2u);
	ExpectClean();
	Reopen();
	EXPECT_EQ(Read("c", "obj", 0, 600000), d);
	EXPECT_EQ(Read("c", "small", 0, 70000), sm);
	ExpectClean();
}

/* Operations after a rename in the same transaction see the new name: an
 * attribute set on it sticks; one on the old name fails (-ENOENT); a write
 * to the old name creates a new object of only that write; renaming back
 * and forth ends where it started. */
TEST_F(RenameTest, LaterOperationsSeeTheNewName)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string d = pattern(100000, 11);
	ASSERT_EQ(Write("c", "a", 0, d), 0);

	struct rawstore_txn *t = T();
	rawstore_txn_rename(t, "c", "a", 1, "c", "b", 1);
	rawstore_txn_setattr(t, "c", "b", 1, "moved", "yes", 3);
	rawstore_txn_write(t, "c", "a", 1, 10, "fresh", 5);
	ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();
	EXPECT_EQ(Read("c", "b", 0, 200000), d);
	EXPECT_EQ(Attr("c", "b", "moved"), "yes");
	EXPECT_EQ(Read("c", "a", 0, 100), std::string(10, '\0') + "fresh");
	int r;
	Attr("c", "a", "moved", &r);
	EXPECT_EQ(r, -ENODATA);
	EXPECT_NE(Stat("c", "a").nid, Stat("c", "b").nid);
	EXPECT_EQ(Statfs().objects, 2u);

	t = T();
	rawstore_txn_rename(t, "c", "b", 1, "c", "x", 1);
	rawstore_txn_setattr(t, "c", "b", 1, "k", "v", 1);
	EXPECT_EQ(rawstore_submit(st, t), -ENOENT);
	EXPECT_EQ(rawstore_txn_failed_op(t), 1);
	rawstore_txn_free(t);
	EXPECT_EQ(StatErr("c", "x"), -ENOENT);

	t = T();
	rawstore_txn_rename(t, "c", "b", 1, "c", "x", 1);
	rawstore_txn_rename(t, "c", "x", 1, "c", "y", 1);
	rawstore_txn_rename(t, "c", "y", 1, "c", "b", 1);
	ASSERT_EQ(Submit(t), 0) << rawstore_errmsg();
	EXPECT_EQ(List("c"), (std::vector<std::string>{ "a", "b" }));
	EXPECT_EQ(Read("c", "b", 0, 200000), d);
	Reopen();
	EXPECT_EQ(Read("c", "b", 0, 200000), d);
	EXPECT_EQ(Attr("c", "b", "moved"), "yes");
	ExpectClean();
}

/* The onode cache follows: records read (and cached) before the rename are
 * not served afterwards, for the old name nor for a replaced destination. */
TEST_F(RenameTest, CachedRecordsFollowTheRename)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(MkColl("d"), 0);
	std::string a = pattern(70000, 12), b = pattern(9000, 13);
	ASSERT_EQ(Write("c", "a", 0, a), 0);
	ASSERT_EQ(Write("d", "b", 0, b), 0);
	ASSERT_EQ(Read("c", "a", 0, 100000), a);
	ASSERT_EQ(Read("d", "b", 0, 100000), b);
	ASSERT_EQ(Rename("c", "a", "d", "b"), 0);
	ssize_t r;
	Read("c", "a", 0, 10, &r);
	EXPECT_EQ(r, -ENOENT);
	EXPECT_EQ(Read("d", "b", 0, 100000), a);
	EXPECT_EQ(Size("d", "b"), a.size());
	/* and back, cached again on both sides */
	ASSERT_EQ(Write("c", "a", 0, b), 0);
	ASSERT_EQ(Read("c", "a", 0, 100000), b);
	ASSERT_EQ(Rename("d", "b", "c", "a"), 0);
	EXPECT_EQ(Read("c", "a", 0, 100000), a);
	Read("d", "b", 0, 10, &r);
	EXPECT_EQ(r, -ENOENT);
	ExpectClean();
}

/* Swift's publish under load: while readers read the live name, versions
 * are written to a temporary name and renamed over it, one per
 * transaction.  Every read sees one whole version (its size names it; its
 * bytes match), never -ENOENT, a mix, or a freed unit's new contents; the
 * replaced versions' space is all freed. */
TEST_F(RenameTest, ReadersSeeWholeVersionsDuringRenames)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(MkColl("tmp"), 0);
	auto size_of = [](int v) { return (size_t)50000 + (size_t)v * 1000; };
	ASSERT_EQ(Write("c", "live", 0, pattern(size_of(0), 0)), 0);
	std::atomic<bool> stop{ false };
	std::atomic<int> bad{ 0 }, reads{ 0 };
	auto reader = [&] {
		std::string buf(300000, 0);
		while (!stop) {
			ssize_t r = rawstore_read(st, "c", "live", 4, 0, &buf[0], buf.size());
			int v = r >= 50000 ? (int)((r - 50000) / 1000) : -1;
			if (v < 0 || (size_t)r != size_of(v) ||
			    buf.compare(0, (size_t)r, pattern((size_t)r, (unsigned)v)))
				bad++;
			reads++;
		}
	};
	std::thread r1(reader), r2(reader);
	const int versions = 60;
	for (int v = 1; v <= versions; v++) {
		std::string d = pattern(size_of(v), (unsigned)v);
		struct rawstore_txn *t = T();
		rawstore_txn_write(t, "tmp", "up", 2, 0, d.data(), d.size());
		rawstore_txn_rename(t, "tmp", "up", 2, "c", "live", 4);
		EXPECT_EQ(Submit(t), 0) << rawstore_errmsg();
	}
	while (reads < 100)
		usleep(1000);
	stop = true;
	r1.join();
	r2.join();
	EXPECT_EQ(bad.load(), 0);
	EXPECT_EQ(Read("c", "live", 0, 300000), pattern(size_of(versions), versions));
	auto f = Statfs();
	EXPECT_EQ(f.objects, 1u);
	EXPECT_EQ(f.allocated, (uint64_t)((size_of(versions) + 4095) / 4096 * 4096));
	ExpectClean();
}
