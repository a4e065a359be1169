// Checks rawstore_mkfs()'s refusals (issue 41 item 3): without force it
// refuses a device holding a file system, a partition table or a rawstore,
// and a metadata directory that is not empty, before writing anything;
// with force it makes the store.
#include <sys/stat.h>

#include "helpers.h"

class MkfsTest : public ::testing::Test {
protected:
	TempDir tmp;
	std::string dev, meta;
	struct rawstore_mkfs_opts mo;
	void SetUp() override
	{
		dev = tmp.path + "/dev";
		meta = tmp.path + "/meta";
		ASSERT_EQ(make_file(dev, 64 << 20), 0);
		test_mkfs_opts_init(&mo);
	}
	int Mkfs(bool force, const std::string &m = "")
	{
		mo.force = force;
		return rawstore_mkfs(dev.c_str(), (m.empty() ? meta : m).c_str(), &mo);
	}
	std::string Bytes()
	{
		return file_bytes(dev);
	}
	bool Exists(const std::string &p)
	{
		struct stat sb;
		return !stat(p.c_str(), &sb);
	}
	/* The store on dev and meta opens and passes fsck. */
	void ExpectStore()
	{
		struct rawstore *st;
		ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), 0)
			<< rawstore_errmsg();
		struct rawstore_fsck_result r = {};
		r.struct_size = sizeof(r);
		EXPECT_EQ(rawstore_fsck(st, nullptr, &r), 0);
		EXPECT_EQ(rawstore_close(st), 0);
	}
};

/* An ext4 image is refused with -EEXIST naming the file system; nothing on
 * it is written and no metadata directory is made.  force overwrites it. */
TEST_F(MkfsTest, RefusesAFileSystemUnlessForced)
{
	std::string o;
	if (system(("mkfs.ext4 -q -F " + dev + " >/dev/null 2>&1").c_str()) != 0)
		GTEST_SKIP() << "mkfs.ext4 is not available";
	std::string before = Bytes();
	EXPECT_EQ(Mkfs(false), -EEXIST);
	EXPECT_NE(strstr(rawstore_errmsg(), "holds a file system (ext4)"), nullptr)
		<< rawstore_errmsg();
	EXPECT_TRUE(Bytes() == before) << "mkfs wrote to the file system";
	EXPECT_FALSE(Exists(meta));
	ASSERT_EQ(Mkfs(true), 0) << rawstore_errmsg();
	ExpectStore();
}

/* A DOS partition table is refused the same way. */
TEST_F(MkfsTest, RefusesAPartitionTableUnlessForced)
{
	int fd = open(dev.c_str(), O_RDWR);
	ASSERT_GE(fd, 0);
	unsigned char mbr[66] = { 0 };
	mbr[4] = 0x83;
	mbr[8 + 1] = 0x08;
	mbr[12 + 2] = 0x01;
	mbr[64] = 0x55;
	mbr[65] = 0xaa;
	ASSERT_EQ(pwrite(fd, mbr, sizeof(mbr), 446), (ssize_t)sizeof(mbr));
	close(fd);
	EXPECT_EQ(Mkfs(false), -EEXIST);
	EXPECT_NE(strstr(rawstore_errmsg(), "holds a partition table (dos)"), nullptr)
		<< rawstore_errmsg();
	EXPECT_FALSE(Exists(meta));
	ASSERT_EQ(Mkfs(true), 0) << rawstore_errmsg();
	ExpectStore();
}

/* A device holding a store is refused, also with another (empty) metadata
 * directory; the store keeps working.  force replaces it. */
TEST_F(MkfsTest, RefusesAnExistingStoreUnlessForced)
{
	ASSERT_EQ(Mkfs(false), 0) << rawstore_errmsg();
	std::string before = Bytes(), other = tmp.path + "/other";
	EXPECT_EQ(Mkfs(false, other), -EEXIST);
	EXPECT_NE(strstr(rawstore_errmsg(), "already holds a rawstore"), nullptr)
		<< rawstore_errmsg();
	EXPECT_TRUE(Bytes() == before);
	EXPECT_FALSE(Exists(other));
	ExpectStore();
	ASSERT_EQ(Mkfs(true), 0) << rawstore_errmsg();
	ExpectStore();
}

/* A metadata directory that is not empty is refused before the device is
 * touched: one with a stray file, and one holding a store's database whose
 * device lost both superblock copies (mkfs would have erased that store's
 * data).  force uses it. */
TEST_F(MkfsTest, RefusesANonEmptyMetaDirUnlessForced)
{
	ASSERT_EQ(mkdir(meta.c_str(), 0755), 0);
	FILE *f = fopen((meta + "/notes").c_str(), "w");
	ASSERT_NE(f, nullptr);
	fclose(f);
	std::string before = Bytes();
	EXPECT_EQ(Mkfs(false), -EEXIST);
	EXPECT_NE(strstr(rawstore_errmsg(), "is not empty (it holds 'notes')"), nullptr)
		<< rawstore_errmsg();
	EXPECT_TRUE(Bytes() == before);
	ASSERT_EQ(Mkfs(true), 0) << rawstore_errmsg();
	ExpectStore();

	/* a store with data, both superblock copies zeroed */
	struct rawstore *st;
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), 0);
	struct rawstore_txn *t;
	ASSERT_EQ(rawstore_txn_new(&t), 0);
	std::string d = pattern(1 << 20, 7);
	rawstore_txn_coll_create(t, "c");
	rawstore_txn_write(t, "c", "o", 1, 0, d.data(), d.size());
	ASSERT_EQ(rawstore_submit(st, t), 0);
	rawstore_txn_free(t);
	ASSERT_EQ(rawstore_close(st), 0);
	int fd = open(dev.c_str(), O_RDWR);
	ASSERT_GE(fd, 0);
	std::string z(4096, '\0');
	ASSERT_EQ(pwrite(fd, z.data(), z.size(), 0), 4096);
	ASSERT_EQ(pwrite(fd, z.data(), z.size(), 512 * 1024), 4096);
	close(fd);
	before = Bytes();
	EXPECT_EQ(Mkfs(false), -EEXIST);
	EXPECT_NE(strstr(rawstore_errmsg(), "already holds a database"), nullptr)
		<< rawstore_errmsg();
	EXPECT_TRUE(Bytes() == before) << "mkfs wrote to the store's device";
	/* ... and the store can still be brought back */
	struct rawstore_open_opts oo;
	rawstore_open_opts_init(&oo);
	oo.repair_super = 1;
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &oo, &st), 0) << rawstore_errmsg();
	std::string back(d.size(), '\0');
	EXPECT_EQ(rawstore_read(st, "c", "o", 1, 0, &back[0], back.size()), (ssize_t)d.size());
	EXPECT_TRUE(back == d);
	EXPECT_EQ(rawstore_close(st), 0);
}

/* examples/embed.c given a device and a metadata directory opens the store
 * there and keeps what it holds; it made a new store only where there was
 * none (it used to force mkfs over whatever was there). */
TEST_F(MkfsTest, EmbedExampleKeepsAnExistingStore)
{
	ASSERT_EQ(Mkfs(false), 0) << rawstore_errmsg();
	struct rawstore *st;
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), 0);
	struct rawstore_txn *t;
	ASSERT_EQ(rawstore_txn_new(&t), 0);
	rawstore_txn_coll_create(t, "keep");
	rawstore_txn_write(t, "keep", "x", 1, 0, "kept", 4);
	ASSERT_EQ(rawstore_submit(st, t), 0);
	rawstore_txn_free(t);
	ASSERT_EQ(rawstore_close(st), 0);
	std::string cmd = std::string(RAWSTORE_EXAMPLE) + " " + dev + " " + meta + " >/dev/null";
	for (int run = 0; run < 2; run++)
		ASSERT_EQ(system(cmd.c_str()), 0) << "run " << run;
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), 0);
	char b[8];
	EXPECT_EQ(rawstore_read(st, "keep", "x", 1, 0, b, sizeof(b)), 4);
	EXPECT_EQ(std::string(b, 4), "kept");
	EXPECT_EQ(rawstore_read(st, "photos", "cat.jpg", 7, 0, b, sizeof(b)), 4);
	EXPECT_EQ(rawstore_close(st), 0);

	/* an empty device: the example makes the store itself */
	std::string d2 = tmp.path + "/dev2", m2 = tmp.path + "/meta2";
	ASSERT_EQ(make_file(d2, 64 << 20), 0);
	cmd = std::string(RAWSTORE_EXAMPLE) + " " + d2 + " " + m2 + " >/dev/null";
	ASSERT_EQ(system(cmd.c_str()), 0);
}
