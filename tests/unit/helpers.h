// Shared fixtures: a temporary directory with a sparse device file and a
// metadata directory, removed afterwards.
#ifndef RAWSTORE_TEST_HELPERS_H
#define RAWSTORE_TEST_HELPERS_H

#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rawstore/rawstore.h"
extern "C" {
#include "debug.h"
}

/* The space layer wrote every record into an open batch, and no batch took
 * more than it was sized for (space.h, struct space_batch). */
static inline void ExpectSpaceBatchesKept(struct rawstore *st)
{
	uint64_t unbatched = 1, overruns = 1, misnested = 1;

	rs_debug_space_batches(st, &unbatched, &overruns, &misnested);
	EXPECT_EQ(unbatched, 0u) << "a recorded set changed with no batch open";
	EXPECT_EQ(overruns, 0u) << "a space batch took more than it was sized for";
	EXPECT_EQ(misnested, 0u) << "a space batch was closed out of order";
}

/*
 * mkfs options for the tests: the defaults, with the journal mode of
 * RAWSTORE_TEST_JOURNAL ("device" or "rocksdb"; unset: the default), so
 * that the whole suite runs once per mode (tests/unit/CMakeLists.txt).
 */
static inline void test_mkfs_opts_init(struct rawstore_mkfs_opts *o)
{
	const char *j = getenv("RAWSTORE_TEST_JOURNAL");

	rawstore_mkfs_opts_init(o);
	if (j && !strcmp(j, "rocksdb"))
		o->journal = RAWSTORE_JOURNAL_ROCKSDB;
	else if (j && !strcmp(j, "device"))
		o->journal = RAWSTORE_JOURNAL_DEVICE;
}

/* Does @st keep its metadata journal on the device? */
static inline bool journaled(struct rawstore *st)
{
	struct rawstore_info i;

	i.struct_size = sizeof(i);
	return !rawstore_get_info(st, &i) && !strcmp(i.journal, "device");
}

/* The commit's durability steps: RocksDB WAL syncs, or with the device
 * journal the records' flushes. */
static inline uint64_t commit_syncs(struct rawstore *st, const struct rawstore_perf &p)
{
	return journaled(st) ? p.journal_flushes : p.db_syncs;
}

static inline int rm_cb(const char *p, const struct stat *, int, struct FTW *)
{
	return remove(p);
}

class TempDir {
public:
	TempDir()
	{
		const char *t = getenv("TMPDIR");
		std::string tmpl = std::string(t && *t ? t : "/tmp") + "/rawstore-test-XXXXXX";
		std::vector<char> b(tmpl.begin(), tmpl.end());
		b.push_back(0);
		if (!mkdtemp(b.data()))
			abort();
		path = b.data();
	}
	~TempDir() { nftw(path.c_str(), rm_cb, 16, FTW_DEPTH | FTW_PHYS); }
	std::string path;
};

static inline int make_file(const std::string &p, uint64_t size)
{
	int fd = open(p.c_str(), O_CREAT | O_RDWR | O_TRUNC, 0644);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size)) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

static inline uint64_t scale()
{
	const char *s = getenv("RAWSTORE_TEST_SCALE");
	long v = s ? atol(s) : 1;

	return v > 0 ? (uint64_t)v : 1;
}

/* A store on a sparse file; mkfs'd and opened in SetUp. */
class StoreTest : public ::testing::Test {
protected:
	TempDir tmp;
	std::string dev, meta;
	struct rawstore *st = nullptr;
	uint64_t dev_size = 64ULL << 20;
	uint32_t inline_max = 4096;
	struct rawstore_open_opts oo = open_defaults();

	static struct rawstore_open_opts open_defaults()
	{
		struct rawstore_open_opts o;
		rawstore_open_opts_init(&o);
		if (getenv("RAWSTORE_TEST_LOG")) /* show the library's info messages */
			o.log_level = RAWSTORE_LOG_INFO;
		return o;
	}

	void SetUp() override
	{
		dev = tmp.path + "/dev";
		meta = tmp.path + "/meta";
		ASSERT_EQ(make_file(dev, dev_size), 0);
		struct rawstore_mkfs_opts mo;
		test_mkfs_opts_init(&mo);
		mo.inline_max = inline_max;
		/* No background preparer: tests here count syncs and I/O. */
		mo.zero_policy = RAWSTORE_ZERO_PAD;
		ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0) << rawstore_errmsg();
		ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	}
	void TearDown() override
	{
		if (st) {
			EXPECT_EQ(rawstore_close(st), 0);
		}
		st = nullptr;
	}
	int Open()
	{
		return rawstore_open(dev.c_str(), meta.c_str(), &oo, &st);
	}
	/* A fresh store with the metadata journal @mode (for tests of one
	 * mode's commit path). */
	void RemkfsJournal(int mode)
	{
		if (st) {
			ASSERT_EQ(rawstore_close(st), 0);
		}
		st = nullptr;
		struct rawstore_mkfs_opts mo;
		test_mkfs_opts_init(&mo);
		mo.inline_max = inline_max;
		mo.zero_policy = RAWSTORE_ZERO_PAD;
		mo.journal = mode;
		mo.force = 1;
		ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0) << rawstore_errmsg();
		ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	}
	void Reopen()
	{
		ASSERT_EQ(rawstore_close(st), 0);
		st = nullptr;
		ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	}
	int Submit(struct rawstore_txn *t)
	{
		int r = rawstore_submit(st, t);
		rawstore_txn_free(t);
		return r;
	}
	struct rawstore_txn *T()
	{
		struct rawstore_txn *t = nullptr;
		EXPECT_EQ(rawstore_txn_new(&t), 0);
		return t;
	}
	int MkColl(const char *c)
	{
		struct rawstore_txn *t = T();
		rawstore_txn_coll_create(t, c);
		return Submit(t);
	}
	int Write(const char *c, const std::string &name, uint64_t off, const std::string &data)
	{
		struct rawstore_txn *t = T();
		EXPECT_EQ(rawstore_txn_write(t, c, name.data(), name.size(), off, data.data(),
					     data.size()), 0);
		return Submit(t);
	}
	std::string Read(const char *c, const std::string &name, uint64_t off, size_t len,
			 ssize_t *ret = nullptr)
	{
		std::string buf(len, '\x7f');
		ssize_t r = rawstore_read(st, c, name.data(), name.size(), off, &buf[0], len);
		if (ret)
			*ret = r;
		if (r < 0)
			return std::string();
		buf.resize((size_t)r);
		return buf;
	}
	uint64_t Size(const char *c, const std::string &name)
	{
		struct rawstore_stat s;
		s.struct_size = sizeof(s);
		EXPECT_EQ(rawstore_stat(st, c, name.data(), name.size(), &s), 0);
		return s.size;
	}
	struct rawstore_statfs Statfs()
	{
		struct rawstore_statfs s;
		s.struct_size = sizeof(s);
		EXPECT_EQ(rawstore_statfs(st, &s), 0);
		return s;
	}
	/* fsck must find nothing. */
	void ExpectClean(bool deep = true)
	{
		struct rawstore_fsck_opts o;
		struct rawstore_fsck_result r;
		rawstore_fsck_opts_init(&o);
		o.deep = deep;
		r.struct_size = sizeof(r);
		EXPECT_EQ(rawstore_fsck(st, &o, &r), 0);
		EXPECT_EQ(r.errors, 0u);
		EXPECT_EQ(r.leaks, 0u);
		ExpectSpaceBatchesKept(st);
	}
};

static inline std::string pattern(size_t len, unsigned seed)
{
	std::string s(len, 0);
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		s[i] = (char)(x & 0xff);
	}
	return s;
}

/* The whole content of the file at @p ("" if it cannot be read). */
static inline std::string file_bytes(const std::string &p)
{
	std::string s;
	FILE *f = fopen(p.c_str(), "rb");
	char buf[65536];
	size_t n;

	while (f && (n = fread(buf, 1, sizeof(buf), f)) > 0)
		s.append(buf, n);
	if (f)
		fclose(f);
	return s;
}

/* An aligned buffer of @pages pages, filled with @fill. */
struct PageBuf {
	uint8_t *p = nullptr;
	size_t len;
	PageBuf(size_t pages, uint8_t fill) : len(pages * 4096)
	{
		EXPECT_EQ(posix_memalign(reinterpret_cast<void **>(&p), 4096, len), 0);
		memset(p, fill, len);
	}
	~PageBuf() { free(p); }
	std::string str(size_t off, size_t n) const
	{
		return std::string(reinterpret_cast<const char *>(p) + off, n);
	}
};

#endif
