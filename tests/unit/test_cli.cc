// Checks the rawstore command: mkfs (and its refusal), statfs/info/fsck in
// human and JSON form, ls/stat/cat, reclaim, and its exit codes.
#include <sys/wait.h>

#include <rocksdb/c.h>

#include "helpers.h"

static int sh(const std::string &cmd, std::string *out)
{
	FILE *f = popen((cmd + " 2>&1").c_str(), "r");
	char buf[4096];
	size_t n;
	out->clear();
	if (!f)
		return -1;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		out->append(buf, n);
	int st = pclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

class CliTest : public ::testing::Test {
protected:
	TempDir tmp;
	std::string cli = RAWSTORE_CLI, dev, meta, out;
	void SetUp() override
	{
		dev = tmp.path + "/dev";
		meta = tmp.path + "/meta";
		ASSERT_EQ(make_file(dev, 64 << 20), 0);
	}
	int Run(const std::string &args) { return sh(cli + " " + args, &out); }
	std::string DM() { return dev + " " + meta; }
};

TEST_F(CliTest, Lifecycle)
{
	ASSERT_EQ(Run("mkfs --min-alloc 8k " + DM()), 0) << out;
	EXPECT_EQ(Run("mkfs " + DM()), 1);
	EXPECT_NE(out.find("already holds a rawstore"), std::string::npos) << out;
	ASSERT_EQ(Run("statfs --json " + DM()), 0) << out;
	EXPECT_NE(out.find("\"objects\": 0"), std::string::npos) << out;
	EXPECT_NE(out.find("\"min_alloc_size\": 8192"), std::string::npos) << out;
	ASSERT_EQ(Run("statfs " + DM()), 0);
	EXPECT_NE(out.find("allocation unit 8192"), std::string::npos) << out;
	ASSERT_EQ(Run("info --json " + DM()), 0);
	EXPECT_NE(out.find("\"io_engine\": \""), std::string::npos) << out;
	ASSERT_EQ(Run("fsck --deep --json " + DM()), 0) << out;
	EXPECT_NE(out.find("\"clean\": true"), std::string::npos) << out;

	/* put an object in with the library, look at it with the command */
	struct rawstore *st;
	struct rawstore_open_opts oo;
	rawstore_open_opts_init(&oo);
	oo.deferred_max = 0; /* the overwrite below frees what it replaces */
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &oo, &st), 0);
	struct rawstore_txn *t;
	rawstore_txn_new(&t);
	rawstore_txn_coll_create(t, "pics");
	std::string d = pattern(20000, 1);
	rawstore_txn_write(t, "pics", "a", 1, 0, d.data(), d.size());
	ASSERT_EQ(rawstore_submit(st, t), 0);
	rawstore_txn_reset(t);
	rawstore_txn_write(t, "pics", "a", 1, 0, d.data(), d.size());
	ASSERT_EQ(rawstore_submit(st, t), 0);
	rawstore_txn_free(t);
	EXPECT_EQ(Run("statfs " + DM()), 1); /* the store is open: busy */
	EXPECT_NE(out.find("busy"), std::string::npos) << out;
	ASSERT_EQ(rawstore_close(st), 0);

	ASSERT_EQ(Run("ls " + DM()), 0);
	EXPECT_EQ(out, "pics\n");
	ASSERT_EQ(Run("ls " + DM() + " pics"), 0);
	EXPECT_EQ(out, "a\n");
	ASSERT_EQ(Run("stat " + DM() + " pics a"), 0);
	EXPECT_NE(out.find("size 20000"), std::string::npos) << out;
	ASSERT_EQ(Run("cat " + DM() + " pics a"), 0);
	EXPECT_EQ(out, d);
	EXPECT_EQ(Run("stat " + DM() + " pics nope"), 1);
	ASSERT_EQ(Run("statfs --json " + DM()), 0);
	EXPECT_NE(out.find("\"unpunched\": 24576"), std::string::npos) << out;
	ASSERT_EQ(Run("reclaim " + DM()), 0) << out;
	EXPECT_NE(out.find("punched 24576 bytes"), std::string::npos) << out;
	ASSERT_EQ(Run("fsck " + DM()), 0) << out;
	EXPECT_NE(out.find("0 problems"), std::string::npos) << out;
	EXPECT_EQ(Run("frobnicate"), 2);
	EXPECT_EQ(Run("fsck"), 2);
}

TEST_F(CliTest, FsckExitCodeAndRepair)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0);
	/* leak space by dropping the free list record */
	{
		rocksdb_options_t *o = rocksdb_options_create();
		char *err = nullptr;
		rocksdb_t *db = rocksdb_open(o, meta.c_str(), &err);
		ASSERT_EQ(err, nullptr);
		rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
		std::string k = "F";
		k += std::string("\0\0\0\0\0\x10\0\0", 8); /* offset 1 MiB */
		rocksdb_delete(db, wo, k.data(), k.size(), &err);
		ASSERT_EQ(err, nullptr);
		rocksdb_writeoptions_destroy(wo);
		rocksdb_close(db);
		rocksdb_options_destroy(o);
	}
	EXPECT_EQ(Run("fsck --json " + DM()), 4);
	EXPECT_NE(out.find("\"kind\": \"leak\""), std::string::npos) << out;
	EXPECT_EQ(Run("fsck --repair " + DM()), 0) << out;
	EXPECT_NE(out.find("leak (repaired)"), std::string::npos) << out;
	EXPECT_EQ(Run("fsck " + DM()), 0) << out;
}
