// Checks the rawstore command: mkfs (and its refusal), statfs/info/fsck in
// human and JSON form, ls/stat/cat, reclaim, and its exit codes.
#include <sys/stat.h>
#include <sys/wait.h>

#include <rocksdb/c.h>

#include "helpers.h"
#include "tree_state.h"

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
	/* stdout only */
	int RunOut(const std::string &args)
	{
		return sh("{ " + cli + " " + args + " 2>/dev/null; }", &out);
	}
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
	/* a fresh file store is punched at mkfs: all free space reads zeros */
	EXPECT_NE(out.find("\"dirty\": 0,"), std::string::npos) << out;
	EXPECT_EQ(out.find("\"zeroed\": 0,"), std::string::npos) << out;
	ASSERT_EQ(Run("statfs " + DM()), 0);
	EXPECT_NE(out.find("allocation unit 8192"), std::string::npos) << out;
	EXPECT_NE(out.find(" zeroed, 0 B dirty"), std::string::npos) << out;
	ASSERT_EQ(Run("info --json " + DM()), 0);
	EXPECT_NE(out.find("\"io_engine\": \""), std::string::npos) << out;
	EXPECT_NE(out.find("\"punch_policy\": \"operator\""), std::string::npos) << out;
	EXPECT_NE(out.find("\"prealloc_policy\": \"none\""), std::string::npos) << out;
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

/* issue 8 item 11: sizes that overflow or carry junk are refused (exit 2),
 * never truncated; the valid suffixes still work. */
TEST_F(CliTest, SizesAreParsedStrictly)
{
	const char *bad[] = {
		"--min-alloc 4294971392", /* 4 GiB + 4 KiB: was truncated to 4096 */
		"--min-alloc 4194304k",   /* 4 GiB after the suffix */
		"--min-alloc 4kx",        "--min-alloc 4096junk", "--min-alloc ''",
		"--min-alloc -4096",      "--min-alloc ' 4096'",  "--inline-max 0x1000",
		"--csum-block 1e3",       "--size 99999999999999999999",
		"--size 16777216t",       /* 2^64 bytes */
	};
	for (const char *b : bad) {
		EXPECT_EQ(Run(std::string("mkfs ") + b + " " + DM()), 2) << b << ": " << out;
		EXPECT_TRUE(out.find("not a size") != std::string::npos ||
			    out.find("too large") != std::string::npos)
			<< b << ": " << out;
		struct stat sb;
		EXPECT_NE(stat(meta.c_str(), &sb), 0) << b << ": the metadata dir was created";
	}
	ASSERT_EQ(Run("mkfs --min-alloc 16K --csum-block 8k --inline-max 0 --size 32m " + DM()), 0)
		<< out;
	ASSERT_EQ(Run("info --json " + DM()), 0) << out;
	EXPECT_NE(out.find("\"min_alloc_size\": 16384"), std::string::npos) << out;
	EXPECT_NE(out.find("\"csum_block_size\": 8192"), std::string::npos) << out;
	EXPECT_NE(out.find("\"inline_max\": 0"), std::string::npos) << out;
	EXPECT_NE(out.find("\"device_size\": 33554432"), std::string::npos) << out;
}

static std::string file_bytes(const std::string &p)
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

/* issue 8 item 11: mkfs refuses a device that holds a file system or a
 * partition table unless --force, and then writes nothing. */
TEST_F(CliTest, MkfsRefusesForeignSignaturesWithoutForce)
{
	/* a DOS partition table: one Linux partition */
	int fd = open(dev.c_str(), O_RDWR);
	ASSERT_GE(fd, 0);
	unsigned char mbr[66] = { 0 };
	mbr[4] = 0x83;		/* type */
	mbr[8 + 1] = 0x08;	/* start LBA 2048 */
	mbr[12 + 2] = 0x01;	/* 65536 sectors */
	mbr[64] = 0x55;
	mbr[65] = 0xaa;
	ASSERT_EQ(pwrite(fd, mbr, sizeof(mbr), 446), (ssize_t)sizeof(mbr));
	close(fd);
	std::string before = file_bytes(dev);
	EXPECT_EQ(Run("mkfs " + DM()), 1);
	EXPECT_NE(out.find("partition table (dos)"), std::string::npos) << out;
	EXPECT_NE(out.find("--force"), std::string::npos) << out;
	EXPECT_TRUE(file_bytes(dev) == before);
	struct stat sb;
	EXPECT_NE(stat(meta.c_str(), &sb), 0);

	/* an ext4 file system */
	std::string o2;
	if (sh("mkfs.ext4 -q -F " + dev, &o2) != 0)
		GTEST_SKIP() << "mkfs.ext4 is not available: " << o2;
	before = file_bytes(dev);
	EXPECT_EQ(Run("mkfs " + DM()), 1);
	EXPECT_NE(out.find("file system (ext4)"), std::string::npos) << out;
	EXPECT_TRUE(file_bytes(dev) == before);
	EXPECT_NE(stat(meta.c_str(), &sb), 0);
	ASSERT_EQ(Run("mkfs --force " + DM()), 0) << out;
	ASSERT_EQ(Run("fsck " + DM()), 0) << out;
	/* our own store is refused by the library, not by the probe */
	EXPECT_EQ(Run("mkfs " + DM()), 1);
	EXPECT_NE(out.find("already holds a rawstore"), std::string::npos) << out;
}

/* issue 8 item 11: when open itself finds the store corrupt, fsck exits 4
 * (problems found), not 1 (operational error). */
TEST_F(CliTest, FsckExitsFourWhenOpenFindsCorruption)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	/* a missing metadata directory stays an operational error */
	EXPECT_EQ(Run("fsck " + dev + " " + tmp.path + "/nometa"), 1) << out;
	int fd = open(dev.c_str(), O_RDWR);
	ASSERT_GE(fd, 0);
	for (off_t off : { (off_t)0, (off_t)(512 * 1024) }) {
		char c;
		ASSERT_EQ(pread(fd, &c, 1, off + 40), 1);
		c ^= 1;
		ASSERT_EQ(pwrite(fd, &c, 1, off + 40), 1);
	}
	close(fd);
	EXPECT_EQ(Run("fsck " + DM()), 4) << out;
	EXPECT_NE(out.find("corrupt"), std::string::npos) << out;
	EXPECT_EQ(Run("fsck --json " + DM()), 4) << out;
}

/* A store with an object and a deferred write left pending by a crash. */
class CliReadOnlyTest : public CliTest {
protected:
	std::string base = pattern(65536, 1), upd = pattern(3000, 2), newest;
	void SetUp() override
	{
		CliTest::SetUp();
		ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
		struct rawstore *st;
		ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), 0);
		struct rawstore_txn *t;
		rawstore_txn_new(&t);
		rawstore_txn_coll_create(t, "c");
		rawstore_txn_write(t, "c", "o", 1, 0, base.data(), base.size());
		ASSERT_EQ(rawstore_submit(st, t), 0);
		rawstore_txn_free(t);
		ASSERT_EQ(rawstore_close(st), 0);
		leave_pending_deferred(dev, meta, "c", "o", 1000, upd);
		newest = base;
		newest.replace(1000, upd.size(), upd);
	}
	/* Every read-only command works on @d and changes neither @d nor meta. */
	void ReadOnlyCommandsWriteNothing(const std::string &d)
	{
		std::string dm = d + " " + meta;
		std::string dev_before = tree_state(d), meta_before = tree_state(meta);
		ASSERT_EQ(RunOut("ls " + dm), 0) << out;
		EXPECT_EQ(out, "c\n");
		ASSERT_EQ(RunOut("ls " + dm + " c"), 0) << out;
		EXPECT_EQ(out, "o\n");
		ASSERT_EQ(RunOut("stat " + dm + " c o"), 0) << out;
		EXPECT_NE(out.find("size 65536"), std::string::npos) << out;
		ASSERT_EQ(RunOut("cat " + dm + " c o"), 0) << out;
		EXPECT_TRUE(out == newest) << "cat does not show the pending deferred write";
		ASSERT_EQ(Run("info --json " + dm), 0) << out;
		ASSERT_EQ(RunOut("statfs --json " + dm), 0) << out;
		EXPECT_NE(out.find("\"objects\": 1"), std::string::npos) << out;
		ASSERT_EQ(RunOut("fsck --deep " + dm), 0) << out;
		EXPECT_NE(out.find("0 problems"), std::string::npos) << out;
		EXPECT_EQ(tree_state(d), dev_before);
		EXPECT_EQ(tree_state(meta), meta_before);
	}
};

/* issue 8 item 11: read-only commands do not replay or write anything. */
TEST_F(CliReadOnlyTest, ReadOnlyCommandsWriteNothing)
{
	ReadOnlyCommandsWriteNothing(dev);
	/* a writable command replays the pending write */
	ASSERT_EQ(Run("reclaim " + DM()), 0) << out;
	ASSERT_EQ(Run("cat " + DM() + " c o"), 0) << out;
	EXPECT_TRUE(out == newest);
}

/* issue 8 item 11: and they work on a device the kernel made read-only. */
TEST_F(CliReadOnlyTest, ReadOnlyCommandsWorkOnAReadOnlyLoopDevice)
{
	std::string loop;
	if (sh("losetup -r -f --show " + dev, &loop) != 0 || loop.compare(0, 9, "/dev/loop"))
		GTEST_SKIP() << "losetup -r is unavailable here: " << loop;
	loop.erase(loop.find_last_not_of("\n") + 1);
	struct Detach {
		std::string l;
		~Detach()
		{
			std::string o;
			sh("losetup -d " + l, &o);
		}
	} detach{ loop };
	std::string ro;
	sh("blockdev --getro " + loop, &ro);
	EXPECT_EQ(ro, "1\n");
	ReadOnlyCommandsWriteNothing(loop);
	/* writing commands fail, saying why, and still write nothing */
	std::string meta_before = tree_state(meta);
	EXPECT_EQ(Run("reclaim " + loop + " " + meta), 1) << out;
	EXPECT_NE(out.find("Read-only file system"), std::string::npos) << out;
	EXPECT_EQ(Run("fsck --repair " + loop + " " + meta), 1) << out;
	EXPECT_EQ(tree_state(meta), meta_before);
}
