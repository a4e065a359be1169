// Checks the rawstore command: mkfs (and its refusal), statfs/info/fsck in
// human and JSON form, ls/stat/cat, reclaim, and its exit codes.
#include <signal.h>
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
		/* the first free extent: the whole data area */
		rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
		rocksdb_iterator_t *it = rocksdb_create_iterator(db, ro);
		rocksdb_iter_seek(it, "F", 1);
		ASSERT_TRUE(rocksdb_iter_valid(it));
		size_t kl;
		const char *kp = rocksdb_iter_key(it, &kl);
		std::string k(kp, kl);
		ASSERT_EQ(k[0], 'F');
		rocksdb_iter_destroy(it);
		rocksdb_readoptions_destroy(ro);
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
		/* issue 10: dump, and reclaim / prepare with --dry-run */
		ASSERT_EQ(RunOut("dump --json " + dm), 0) << out;
		EXPECT_NE(out.find("\"onodes\": 1,"), std::string::npos) << out;
		EXPECT_NE(out.find("\"deferred\": 1,"), std::string::npos) << out;
		ASSERT_EQ(RunOut("df " + dm), 0) << out;
		ASSERT_EQ(RunOut("reclaim --dry-run " + dm), 0) << out;
		EXPECT_NE(out.find("would punch "), std::string::npos) << out;
		ASSERT_EQ(RunOut("prepare --dry-run --json " + dm), 0) << out;
		EXPECT_NE(out.find("\"dry_run\": true"), std::string::npos) << out;
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

static const char *const kCommands[] = { "mkfs", "fsck", "statfs", "df", "info", "dump",
					 "ls",	 "stat", "cat",	   "get", "put",  "rm",
					 "rename", "rmcoll", "grow", "reclaim", "prepare", "version" };

/* Issue 10: `rawstore CMD --help` for every subcommand: usage on stdout,
 * exit 0, nothing on stderr, and `rawstore --help` lists the command. */
TEST_F(CliTest, EverySubcommandHasHelp)
{
	ASSERT_EQ(RunOut("--help"), 0);
	std::string top = out;
	for (const char *c : kCommands) {
		EXPECT_NE(top.find(std::string("\n  ") + c + " "), std::string::npos) << c;
		EXPECT_EQ(RunOut(std::string(c) + " --help"), 0) << c;
		EXPECT_EQ(out.rfind(std::string("usage: rawstore ") + c, 0), 0u) << c << ": " << out;
		EXPECT_NE(out.find("--help"), std::string::npos) << c;
		EXPECT_EQ(sh("{ " + cli + " " + c + " --help 2>&1 >/dev/null; }", &out), 0);
		EXPECT_EQ(out, "") << c << " wrote to stderr";
	}
}

/* Issue 10: bad arguments exit 2 with the subcommand's usage on stderr
 * (nothing on stdout), in the util-linux manner, and change nothing. */
TEST_F(CliTest, BadArgumentsExitTwoWithUsageOnStderr)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	for (const char *c : kCommands) {
		std::string u = std::string("usage: rawstore ") + c;
		EXPECT_EQ(Run(std::string(c) + " --no-such-option " + DM()), 2) << c;
		EXPECT_NE(out.find("unrecognized option"), std::string::npos) << c << ": " << out;
		EXPECT_NE(out.find(u), std::string::npos) << c << ": " << out;
		EXPECT_NE(out.find(std::string("Try 'rawstore ") + c + " --help'"), std::string::npos);
		EXPECT_EQ(RunOut(std::string(c) + " --no-such-option " + DM()), 2);
		EXPECT_EQ(out, "") << c << " wrote to stdout";
	}
	const char *bad[] = {
		"statfs",				/* no device */
		"statfs DEV",				/* no metadata directory */
		"info DEV META extra",
		"stat DEV META c",
		"cat DEV META c",
		"put DEV META c",
		"rm DEV META c",
		"version extra",
		"reclaim --rate 0 DEV META",
		"reclaim --rate fast DEV META",
		"reclaim --max-bytes 0 DEV META",
		"prepare --max-bytes 12q DEV META",
		"reclaim --punch-policy sometimes DEV META",
		"put --zero-policy never DEV META c o",
		"mkfs --prealloc sparse DEV META",
		"mkfs --zero-policy none DEV META",
	};
	for (std::string b : bad) {
		for (size_t p; (p = b.find("DEV")) != std::string::npos;)
			b.replace(p, 3, dev);
		for (size_t p; (p = b.find("META")) != std::string::npos;)
			b.replace(p, 4, meta);
		EXPECT_EQ(Run(b + " < /dev/null"), 2) << b << ": " << out;
		EXPECT_NE(out.find("usage: rawstore "), std::string::npos) << b << ": " << out;
	}
	EXPECT_EQ(Run("mkfs --prealloc sparse " + DM()), 2);
	EXPECT_NE(out.find("not one of none unwritten write-zeroes stale"), std::string::npos)
		<< out;
	EXPECT_EQ(Run("frobnicate " + DM()), 2);
	EXPECT_NE(out.find("unknown command 'frobnicate'"), std::string::npos) << out;
	EXPECT_EQ(Run(""), 2);
	/* nothing of the above changed the store */
	ASSERT_EQ(Run("dump --json " + DM()), 0) << out;
	EXPECT_NE(out.find("\"onodes\": 0,"), std::string::npos) << out;
	EXPECT_NE(out.find("\"punch_policy\": \"operator\""), std::string::npos) << out;
}

/* Issue 10: a device that is not a store: every command that opens one
 * names the device and says it is not a rawstore (exit 1).  Issue 41: with
 * the metadata of a store (which keeps a copy of its superblock), it may
 * be that store's device with both superblocks lost: the message says
 * so, and names fsck --repair and the device path, not mkfs. */
TEST_F(CliTest, NotAStoreIsNamed)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	std::string other = tmp.path + "/zeros", nometa = tmp.path + "/nometa";
	ASSERT_EQ(make_file(other, 16 << 20), 0);
	const char *cmds[] = { "statfs", "df",	 "info",    "dump",    "ls",
			       "fsck",	 "reclaim", "prepare", "stat c o", "cat c o",
			       "put c o", "rm c o" };
	for (std::string c : cmds) {
		std::string a = c.substr(0, c.find(' ')), rest;
		if (c.find(' ') != std::string::npos)
			rest = c.substr(c.find(' '));
		EXPECT_EQ(Run(a + " " + other + " " + nometa + rest + " < /dev/null"), 1) << c;
		EXPECT_NE(out.find("rawstore " + a + ": " + other + " is not a rawstore"),
			  std::string::npos)
			<< c << ": " << out;
		EXPECT_EQ(Run(a + " " + other + " " + meta + rest + " < /dev/null"),
			  a == "fsck" ? 4 : 1)
			<< c;
		EXPECT_NE(out.find("both superblock copies are missing, but the metadata in " +
				   meta + " holds a copy: if this is that store's device, "
				   "'rawstore fsck --repair' rewrites them"),
			  std::string::npos)
			<< c << ": " << out;
		EXPECT_NE(out.find("check the device path"), std::string::npos) << c << ": " << out;
		EXPECT_EQ(out.find("create one with"), std::string::npos) << c << ": " << out;
	}
	EXPECT_EQ(Run("statfs " + dev + " " + tmp.path + "/nometa"), 1);
	EXPECT_NE(out.find(dev + ": open: "), std::string::npos) << out;
	EXPECT_NE(out.find("no rawstore metadata"), std::string::npos) << out;
}

/*
 * Issue 10: put (file and stdin, one transaction, replaces), cat/get (to
 * stdout and a file), rm, dump, df, reclaim (dry run, limit, progress,
 * JSON, summary) and prepare, with the policy flags of mkfs and open.
 */
TEST_F(CliTest, PutGetRmDumpReclaimPrepare)
{
	ASSERT_EQ(Run("mkfs --zero-policy pad --punch-policy operator --prealloc unwritten " +
		      DM()),
		  0)
		<< out;
	ASSERT_EQ(Run("info --json " + DM()), 0);
	EXPECT_NE(out.find("\"prealloc_policy\": \"unwritten\""), std::string::npos) << out;
	EXPECT_NE(out.find("\"zero_policy\": \"pad\""), std::string::npos) << out;
	std::string a = pattern(3 << 20, 1), b = pattern(100000, 2);
	std::string fa = tmp.path + "/a", fb = tmp.path + "/b", fo = tmp.path + "/out";
	{
		FILE *f = fopen(fa.c_str(), "wb");
		fwrite(a.data(), 1, a.size(), f);
		fclose(f);
		f = fopen(fb.c_str(), "wb");
		fwrite(b.data(), 1, b.size(), f);
		fclose(f);
	}
	ASSERT_EQ(Run("put " + DM() + " pics a " + fa), 0) << out;
	EXPECT_NE(out.find("wrote 3145728 bytes to pics/a"), std::string::npos) << out;
	ASSERT_EQ(Run("put " + DM() + " pics b < " + fb), 0) << out;
	ASSERT_EQ(Run("ls " + DM() + " pics"), 0);
	EXPECT_EQ(out, "a\nb\n");
	ASSERT_EQ(RunOut("cat " + DM() + " pics a"), 0);
	EXPECT_TRUE(out == a) << "cat differs";
	ASSERT_EQ(Run("get -o " + fo + " " + DM() + " pics b"), 0) << out;
	EXPECT_TRUE(file_bytes(fo) == b);
	/* put replaces: the new data, the old size gone */
	ASSERT_EQ(Run("put " + DM() + " pics a " + fb), 0) << out;
	ASSERT_EQ(Run("stat " + DM() + " pics a"), 0);
	EXPECT_NE(out.find("size 100000\n"), std::string::npos) << out;
	ASSERT_EQ(RunOut("get " + DM() + " pics a"), 0);
	EXPECT_TRUE(out == b);
	EXPECT_EQ(Run("put " + DM() + " pics c " + tmp.path + "/missing"), 1);
	EXPECT_NE(out.find(tmp.path + "/missing: No such file"), std::string::npos) << out;

	ASSERT_EQ(Run("dump --json " + DM()), 0) << out;
	EXPECT_NE(out.find("\"collections\": 1, \"onodes\": 2,"), std::string::npos) << out;
	EXPECT_NE(out.find("\"unpunched_bytes\": 3145728,"), std::string::npos) << out;
	ASSERT_EQ(Run("dump " + DM()), 0) << out;
	EXPECT_NE(out.find("generation"), std::string::npos) << out;
	EXPECT_NE(out.find("policy          zero pad, punch operator, preallocation unwritten"),
		  std::string::npos)
		<< out;

	ASSERT_EQ(Run("rm " + DM() + " pics a b"), 0) << out;
	EXPECT_NE(out.find("removed 2 objects from pics"), std::string::npos) << out;
	EXPECT_EQ(Run("rm " + DM() + " pics a"), 1);
	EXPECT_NE(out.find("object pics/a: "), std::string::npos) << out;
	uint64_t unp = 3145728 + 2 * 102400; /* a's 3 MiB, then two 100000-byte objects */
	ASSERT_EQ(Run("df --json " + DM()), 0);
	EXPECT_NE(out.find("\"unpunched\": " + std::to_string(unp) + ","), std::string::npos)
		<< out;
	ASSERT_EQ(Run("df " + DM()), 0);
	EXPECT_NE(out.find("pending punch 3.2 MiB"), std::string::npos) << out;
	EXPECT_NE(out.find("provisioned   "), std::string::npos) << out;

	ASSERT_EQ(Run("reclaim --dry-run " + DM()), 0) << out;
	EXPECT_NE(out.find("would punch " + std::to_string(unp) + " bytes"), std::string::npos)
		<< out;
	ASSERT_EQ(Run("reclaim --json --max-bytes 64k " + DM()), 0) << out;
	EXPECT_NE(out.find("\"bytes\": 65536,"), std::string::npos) << out;
	EXPECT_NE(out.find("\"unpunched\": " + std::to_string(unp - 65536) + ","),
		  std::string::npos)
		<< out;
	/* --progress prints even though stderr is a pipe */
	ASSERT_EQ(Run("reclaim --progress --rate 8m " + DM()), 0) << out;
	EXPECT_NE(out.find("reclaim: 0 B of 3.1 MiB (0%)"), std::string::npos) << out;
	EXPECT_NE(out.find("(100%)"), std::string::npos) << out;
	EXPECT_NE(out.find("punched " + std::to_string(unp - 65536) + " bytes (3.1 MiB) in "),
		  std::string::npos)
		<< out;
	ASSERT_EQ(RunOut("reclaim " + DM()), 0);
	EXPECT_EQ(out.rfind("punched 0 bytes", 0), 0u) << out;
	ASSERT_EQ(Run("statfs --json " + DM()), 0);
	EXPECT_NE(out.find("\"unpunched\": 0,"), std::string::npos) << out;
	EXPECT_NE(out.find("\"dirty\": 0,"), std::string::npos) << out;
	ASSERT_EQ(Run("prepare --dry-run " + DM()), 0) << out;
	EXPECT_NE(out.find("would zero 0 bytes"), std::string::npos) << out;
	ASSERT_EQ(Run("prepare --json " + DM()), 0) << out;
	EXPECT_NE(out.find("\"command\": \"prepare\", \"dry_run\": false, \"bytes\": 0,"),
		  std::string::npos)
		<< out;
	/* an open policy flag is recorded */
	ASSERT_EQ(Run("reclaim --punch-policy inline " + DM()), 0) << out;
	ASSERT_EQ(Run("info --json " + DM()), 0);
	EXPECT_NE(out.find("\"punch_policy\": \"inline\""), std::string::npos) << out;
	ASSERT_EQ(Run("put " + DM() + " pics z " + fb), 0) << out;
	ASSERT_EQ(Run("rm " + DM() + " pics z"), 0) << out;
	ASSERT_EQ(Run("statfs --json " + DM()), 0);
	EXPECT_NE(out.find("\"unpunched\": 0,"), std::string::npos) << "inline punch: " << out;
	ASSERT_EQ(Run("fsck --deep " + DM()), 0) << out;
	EXPECT_NE(out.find("0 problems"), std::string::npos) << out;
	ASSERT_EQ(Run("version"), 0);
	EXPECT_EQ(out.rfind("rawstore ", 0), 0u);
}

/* Issue 42: `rawstore rename` moves an object to another name and
 * collection in one transaction, replacing one there and freeing its
 * space; a missing object or collection is named, exit status 1, nothing
 * changes; the same object twice is a usage error (2); fsck stays clean. */
TEST_F(CliTest, RenameMovesAnObject)
{
	ASSERT_EQ(Run("mkfs --zero-policy pad " + DM()), 0) << out;
	std::string a = pattern(200000, 1), b = pattern(1 << 20, 2);
	std::string fa = tmp.path + "/a", fb = tmp.path + "/b";
	{
		FILE *f = fopen(fa.c_str(), "wb");
		fwrite(a.data(), 1, a.size(), f);
		fclose(f);
		f = fopen(fb.c_str(), "wb");
		fwrite(b.data(), 1, b.size(), f);
		fclose(f);
	}
	ASSERT_EQ(Run("put " + DM() + " tmp up " + fa), 0) << out;
	ASSERT_EQ(Run("put " + DM() + " live obj " + fb), 0) << out;
	ASSERT_EQ(Run("rename " + DM() + " tmp up live obj"), 0) << out;
	EXPECT_EQ(out, "renamed tmp/up to live/obj\n");
	ASSERT_EQ(Run("ls " + DM() + " tmp"), 0);
	EXPECT_EQ(out, "");
	ASSERT_EQ(Run("ls " + DM() + " live"), 0);
	EXPECT_EQ(out, "obj\n");
	ASSERT_EQ(RunOut("cat " + DM() + " live obj"), 0);
	EXPECT_TRUE(out == a) << "cat differs";
	/* the replaced object's 1 MiB is waiting to be punched */
	ASSERT_EQ(Run("df --json " + DM()), 0);
	EXPECT_NE(out.find("\"allocated\": 200704,"), std::string::npos) << out;

	EXPECT_EQ(Run("rename " + DM() + " tmp up live x"), 1);
	EXPECT_NE(out.find("object tmp/up: "), std::string::npos) << out;
	EXPECT_EQ(Run("rename " + DM() + " live obj nope x"), 1);
	EXPECT_NE(out.find("collection nope: "), std::string::npos) << out;
	EXPECT_EQ(Run("rename " + DM() + " live obj live obj"), 2);
	EXPECT_NE(out.find("same object"), std::string::npos) << out;
	EXPECT_EQ(Run("rename " + DM() + " live obj"), 2);
	ASSERT_EQ(Run("ls " + DM() + " live"), 0);
	EXPECT_EQ(out, "obj\n");
	ASSERT_EQ(Run("fsck --deep " + DM()), 0) << out;
}

/* The names in directory @d, sorted. */
static std::string dir_names(const std::string &d)
{
	std::string o;
	sh("ls -A " + d, &o);
	return o;
}

/*
 * Issue 41 item 1: get -o FILE leaves FILE untouched (content and mode)
 * when the read fails, and leaves no temporary beside it; a read that
 * succeeds replaces FILE with the object, keeping FILE's mode.
 */
TEST_F(CliTest, GetToFileKeepsFileWhenTheReadFails)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	std::string d = pattern(300000, 3), od = tmp.path + "/out", fo = od + "/file";
	ASSERT_EQ(mkdir(od.c_str(), 0755), 0);
	{
		FILE *f = fopen(fo.c_str(), "wb");
		ASSERT_NE(f, nullptr);
		fputs("precious\n", f);
		fclose(f);
	}
	ASSERT_EQ(chmod(fo.c_str(), 0640), 0);
	EXPECT_EQ(Run("get -o " + fo + " " + DM() + " c missing"), 1) << out;
	EXPECT_NE(out.find("object c/missing: "), std::string::npos) << out;
	EXPECT_EQ(file_bytes(fo), "precious\n");
	EXPECT_EQ(dir_names(od), "file\n");
	EXPECT_EQ(Run("cat --output " + fo + " " + DM() + " c missing"), 1) << out;
	EXPECT_EQ(file_bytes(fo), "precious\n");

	ASSERT_EQ(Run("put " + DM() + " c o < /dev/null"), 0) << out;
	std::string fi = tmp.path + "/in";
	{
		FILE *f = fopen(fi.c_str(), "wb");
		fwrite(d.data(), 1, d.size(), f);
		fclose(f);
	}
	ASSERT_EQ(Run("put " + DM() + " c o " + fi), 0) << out;
	ASSERT_EQ(Run("get -o " + fo + " " + DM() + " c o"), 0) << out;
	EXPECT_TRUE(file_bytes(fo) == d);
	struct stat sb;
	ASSERT_EQ(stat(fo.c_str(), &sb), 0);
	EXPECT_EQ(sb.st_mode & 07777, 0640u);
	EXPECT_EQ(dir_names(od), "file\n");
	/* a new FILE is created; a FILE in a missing directory is an error */
	ASSERT_EQ(Run("get -o " + od + "/new " + DM() + " c o"), 0) << out;
	EXPECT_TRUE(file_bytes(od + "/new") == d);
	EXPECT_EQ(Run("get -o " + od + "/no/such " + DM() + " c o"), 1) << out;
	EXPECT_NE(out.find("No such file or directory"), std::string::npos) << out;
}

/* Overwrite both superblock copies of @dev: with zeros, or (@flip) one byte
 * flipped, so the magic stays and the crc fails. */
static void damage_supers(const std::string &dev, bool flip)
{
	int fd = open(dev.c_str(), O_RDWR);
	ASSERT_GE(fd, 0);
	for (off_t off : { (off_t)0, (off_t)(512 * 1024) }) {
		char b[4096];
		ASSERT_EQ(pread(fd, b, sizeof(b), off), (ssize_t)sizeof(b));
		if (flip)
			b[40] ^= 1;
		else
			memset(b, 0, sizeof(b));
		ASSERT_EQ(pwrite(fd, b, sizeof(b), off), (ssize_t)sizeof(b));
	}
	close(fd);
}

/*
 * Issue 41 item 2: with both device superblock copies gone (zeroed) or
 * corrupt (magic right, crc wrong), commands point at fsck --repair, never
 * at mkfs; fsck --repair rewrites both copies from META's copy, and every
 * object reads back byte for byte.
 */
TEST_F(CliTest, FsckRepairRebuildsLostSuperblocksFromMeta)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	std::vector<std::string> data = { pattern(3 << 20, 1), pattern(100, 2),
					   pattern(100000, 3), pattern(65536, 4) };
	for (size_t i = 0; i < data.size(); i++) {
		std::string f = tmp.path + "/in";
		FILE *fp = fopen(f.c_str(), "wb");
		fwrite(data[i].data(), 1, data[i].size(), fp);
		fclose(fp);
		ASSERT_EQ(Run("put " + DM() + " c o" + std::to_string(i) + " " + f), 0) << out;
	}
	for (bool flip : { false, true }) {
		SCOPED_TRACE(flip ? "crc wrong" : "zeroed");
		damage_supers(dev, flip);
		EXPECT_EQ(Run("statfs " + DM()), 1) << out;
		EXPECT_NE(out.find("'rawstore fsck --repair'"), std::string::npos) << out;
		EXPECT_EQ(out.find("create one with"), std::string::npos) << out;
		EXPECT_EQ(Run("fsck " + DM()), 4) << out;
		EXPECT_NE(out.find("fsck --repair"), std::string::npos) << out;
		ASSERT_EQ(Run("fsck --repair " + DM()), 0) << out;
		EXPECT_NE(out.find("(repaired): primary superblock copy is damaged or stale"),
			  std::string::npos)
			<< out;
		EXPECT_NE(out.find("(repaired): backup superblock copy is damaged or stale"),
			  std::string::npos)
			<< out;
		ASSERT_EQ(Run("fsck --deep " + DM()), 0) << out;
		EXPECT_NE(out.find("4 objects"), std::string::npos) << out;
		EXPECT_NE(out.find("0 problems"), std::string::npos) << out;
		for (size_t i = 0; i < data.size(); i++) {
			ASSERT_EQ(RunOut("get " + DM() + " c o" + std::to_string(i)), 0);
			EXPECT_TRUE(out == data[i]) << "object " << i << " differs";
		}
	}
}

/* Issue 41 item 2: META's copy is not written to a device it does not fit
 * (here one smaller than the store): fsck --repair refuses, saying so, and
 * writes nothing. */
TEST_F(CliTest, FsckRepairRefusesASuperblockCopyThatDoesNotFit)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	damage_supers(dev, false);
	ASSERT_EQ(truncate(dev.c_str(), 32 << 20), 0);
	std::string before = file_bytes(dev);
	EXPECT_EQ(Run("fsck --repair " + DM()), 1) << out;
	EXPECT_NE(out.find("does not fit this device"), std::string::npos) << out;
	EXPECT_NE(out.find("made for 67108864"), std::string::npos) << out;
	EXPECT_TRUE(file_bytes(dev) == before);
}

/* Start "rawstore @args" with stdout and stderr to @log (and stdin from
 * @in, if given); its pid. */
static pid_t spawn_cli(const std::string &args, const std::string &log, const std::string &in = "")
{
	std::string cmd = "exec " + std::string(RAWSTORE_CLI) + " " + args + " >" + log + " 2>&1" +
			  (in.empty() ? "" : " <" + in);
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd.c_str(), (char *)nullptr);
		_exit(127);
	}
	return pid;
}

/* A number of statfs --json's output. */
static uint64_t json_u64(const std::string &j, const std::string &key)
{
	size_t p = j.find("\"" + key + "\": ");
	return p == std::string::npos ? UINT64_MAX : strtoull(j.c_str() + p + key.size() + 4,
							      nullptr, 10);
}

/*
 * Issue 41 item 4: SIGINT during a slow reclaim stops it at the end of a
 * round: exit 130, the store closed cleanly: what was punched is zeroed
 * free space, the rest still pending punch, nothing left in flight or
 * turned dirty; fsck finds nothing.
 */
TEST_F(CliTest, SigintStopsReclaimAndClosesTheStore)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	std::string f = tmp.path + "/in", log = tmp.path + "/log";
	{
		std::string d = pattern(16 << 20, 5);
		FILE *fp = fopen(f.c_str(), "wb");
		fwrite(d.data(), 1, d.size(), fp);
		fclose(fp);
	}
	ASSERT_EQ(Run("put " + DM() + " c big " + f), 0) << out;
	ASSERT_EQ(Run("rm " + DM() + " c big"), 0) << out;
	ASSERT_EQ(RunOut("statfs --json " + DM()), 0) << out;
	std::string before = out;
	ASSERT_EQ(json_u64(before, "unpunched"), 16u << 20) << before;

	/* 1 MiB/s: 16 s for all of it; stop it after two rounds */
	pid_t pid = spawn_cli("reclaim --progress --rate 1m " + DM(), log);
	ASSERT_GT(pid, 0);
	for (int i = 0; i < 200; i++) {
		std::string l = file_bytes(log);
		size_t first = l.find("reclaim: ");
		if (first != std::string::npos && l.find("reclaim: ", first + 1) != std::string::npos)
			break;
		usleep(50000);
	}
	ASSERT_EQ(kill(pid, SIGINT), 0);
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	std::string l = file_bytes(log);
	ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << ": " << l;
	EXPECT_EQ(WEXITSTATUS(status), 130) << l;
	EXPECT_NE(l.find("interrupted by SIGINT; the store was closed cleanly"), std::string::npos)
		<< l;

	ASSERT_EQ(RunOut("statfs --json " + DM()), 0) << out;
	uint64_t punched = json_u64(before, "unpunched") - json_u64(out, "unpunched");
	EXPECT_GT(punched, 0u) << out;
	EXPECT_GT(json_u64(out, "unpunched"), 0u) << "it was not stopped: " << out;
	EXPECT_NE(l.find("punched " + std::to_string(punched) + " bytes"), std::string::npos) << l;
	EXPECT_EQ(json_u64(out, "free"), json_u64(before, "free"));
	EXPECT_EQ(json_u64(out, "zeroed"), json_u64(before, "zeroed") + punched) << out;
	EXPECT_EQ(json_u64(out, "dirty"), json_u64(before, "dirty") - punched) << out;
	EXPECT_EQ(json_u64(out, "in_flight"), 0u) << out;
	ASSERT_EQ(Run("fsck " + DM()), 0) << out;
	EXPECT_NE(out.find("0 problems"), std::string::npos) << out;
}

/* Issue 41 item 4: SIGTERM while put waits for its input: exit 143,
 * nothing written, the store closed. */
TEST_F(CliTest, SigtermStopsPutReadingStdin)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	std::string fifo = tmp.path + "/fifo", log = tmp.path + "/log";
	ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
	pid_t pid = spawn_cli("put " + DM() + " c o", log, fifo);
	ASSERT_GT(pid, 0);
	int wfd = open(fifo.c_str(), O_WRONLY);	/* waits for the reader */
	ASSERT_GE(wfd, 0);
	ASSERT_EQ(write(wfd, "some", 4), 4);
	usleep(200000);
	ASSERT_EQ(kill(pid, SIGTERM), 0);
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	close(wfd);
	std::string l = file_bytes(log);
	ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status) << ": " << l;
	EXPECT_EQ(WEXITSTATUS(status), 143) << l;
	EXPECT_NE(l.find("interrupted by SIGTERM"), std::string::npos) << l;
	ASSERT_EQ(Run("ls " + DM()), 0) << out;
	EXPECT_EQ(out, "");
	ASSERT_EQ(Run("fsck " + DM()), 0) << out;
}

/*
 * Issue 41 item 5: a replacement that does not fit says what the new copy
 * needs and what is free, and that the old copy is freed only with the
 * new one written; the old object is untouched.
 */
TEST_F(CliTest, PutWithoutRoomSaysWhatItNeeds)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	std::string a = pattern(36 << 20, 1), b = pattern(36 << 20, 2);
	std::string fa = tmp.path + "/a", fb = tmp.path + "/b";
	for (auto &p : { std::make_pair(fa, &a), std::make_pair(fb, &b) }) {
		FILE *f = fopen(p.first.c_str(), "wb");
		fwrite(p.second->data(), 1, p.second->size(), f);
		fclose(f);
	}
	ASSERT_EQ(Run("put " + DM() + " c o " + fa), 0) << out;
	ASSERT_EQ(RunOut("statfs --json " + DM()), 0) << out;
	uint64_t free_b = json_u64(out, "free");
	ASSERT_LT(free_b, 36u << 20) << out;
	EXPECT_EQ(Run("put " + DM() + " c o " + fb), 1) << out;
	EXPECT_NE(out.find("No space left on device"), std::string::npos) << out;
	EXPECT_NE(out.find("c/o needs 37748736 bytes (36.0 MiB) of free space for its data; " +
			   std::to_string(free_b) + " bytes"),
		  std::string::npos)
		<< out;
	EXPECT_NE(out.find("the copy it replaces (37748736 bytes, 36.0 MiB) is freed only when "
			   "the new one is written"),
		  std::string::npos)
		<< out;
	ASSERT_EQ(RunOut("get " + DM() + " c o"), 0);
	EXPECT_TRUE(out == a) << "the old object changed";
	/* a new object that does not fit: no word about a replaced copy */
	EXPECT_EQ(Run("put " + DM() + " c p " + fb), 1) << out;
	EXPECT_NE(out.find("c/p needs 37748736 bytes"), std::string::npos) << out;
	EXPECT_EQ(out.find("replaces"), std::string::npos) << out;
}

/*
 * Issue 41 item 6: an allocation unit that is not a power of two of at
 * least 4096 bytes, and a collection name the store cannot hold, are
 * usage errors (exit 2) that say the rule, and change nothing.
 */
TEST_F(CliTest, BadUnitsAndLongCollectionNamesAreUsageErrors)
{
	for (const char *a : { "3000", "2048", "12k", "32m" }) {
		EXPECT_EQ(Run(std::string("mkfs --min-alloc ") + a + " " + DM()), 2) << a;
		EXPECT_NE(out.find(std::string("--min-alloc ") + a +
				   ": the allocation unit must be a power of two, at least 4096"),
			  std::string::npos)
			<< out;
		EXPECT_NE(out.find("usage: rawstore mkfs"), std::string::npos) << out;
	}
	EXPECT_EQ(Run("mkfs --csum-block 3000 " + DM()), 2) << out;
	EXPECT_NE(out.find("must be a power of two"), std::string::npos) << out;
	EXPECT_EQ(Run("mkfs --min-alloc 4k --csum-block 8k " + DM()), 2) << out;
	EXPECT_NE(out.find("it must divide it"), std::string::npos) << out;
	struct stat sb;
	EXPECT_NE(stat(meta.c_str(), &sb), 0) << "the metadata dir was created";
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;

	std::string lc(256, 'c');
	for (std::string cmd : { "put DM " + lc + " o", "get DM " + lc + " o",
				 "stat DM " + lc + " o", "rm DM " + lc + " o", "ls DM " + lc }) {
		cmd.replace(cmd.find("DM"), 2, DM());
		EXPECT_EQ(Run(cmd + " < /dev/null"), 2) << cmd;
		EXPECT_NE(out.find("collection name must have 1 to 255 bytes (it has 256)"),
			  std::string::npos)
			<< out;
	}
	/* 255 bytes is fine */
	ASSERT_EQ(Run("put " + DM() + " " + std::string(255, 'c') + " o < /dev/null"), 0) << out;
	ASSERT_EQ(Run("ls " + DM()), 0) << out;
	EXPECT_EQ(out, std::string(255, 'c') + "\n");
}

/* Issue 41 item 2: META's superblock copy is written only to the store's
 * own device: on another device of the same size (here all zeros) the
 * objects' checksums do not match, so fsck --repair writes nothing at all
 * (not even the open's own writes) and says why (exit 4). */
TEST_F(CliTest, FsckRepairLeavesAnotherDeviceAlone)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	std::string f = tmp.path + "/in", other = tmp.path + "/other";
	{
		std::string d = pattern(200000, 9);
		FILE *fp = fopen(f.c_str(), "wb");
		fwrite(d.data(), 1, d.size(), fp);
		fclose(fp);
	}
	ASSERT_EQ(Run("put " + DM() + " c o " + f), 0) << out;
	ASSERT_EQ(make_file(other, 64 << 20), 0);
	std::string before = file_bytes(other);
	EXPECT_EQ(Run("fsck --repair " + other + " " + meta), 4) << out;
	EXPECT_NE(out.find("the metadata's copy is not used: 49 checksum blocks of object data "
			   "on " + other + " do not match the metadata in " + meta +
			   "; is this the store's device? Nothing was written"),
		  std::string::npos)
		<< out;
	EXPECT_EQ(out.find("(repaired)"), std::string::npos) << out;
	EXPECT_TRUE(file_bytes(other) == before) << "fsck wrote to another device";
	/* the store itself is untouched and still clean */
	ASSERT_EQ(Run("fsck --deep " + DM()), 0) << out;
}

/*
 * Issue 41 item 7: get --offset/--length reads a range: the bytes asked
 * for, cut at the object's end; an offset past the end gives nothing;
 * --length 0 and a bad size are usage errors.
 */
TEST_F(CliTest, GetReadsARange)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	std::string d = pattern(3 << 20, 4), f = tmp.path + "/in", fo = tmp.path + "/out";
	{
		FILE *fp = fopen(f.c_str(), "wb");
		fwrite(d.data(), 1, d.size(), fp);
		fclose(fp);
	}
	ASSERT_EQ(Run("put " + DM() + " c o " + f), 0) << out;
	ASSERT_EQ(RunOut("get --offset 1000 --length 5000 " + DM() + " c o"), 0);
	EXPECT_TRUE(out == d.substr(1000, 5000)) << out.size();
	/* more than one read (1 MiB each), from an unaligned offset */
	ASSERT_EQ(RunOut("cat --offset 12345 --length 2m " + DM() + " c o"), 0);
	EXPECT_TRUE(out == d.substr(12345, 2 << 20)) << out.size();
	ASSERT_EQ(RunOut("get --offset 3m " + DM() + " c o"), 0);
	EXPECT_EQ(out, "");
	ASSERT_EQ(RunOut("get --offset 3145000 --length 1m " + DM() + " c o"), 0);
	EXPECT_TRUE(out == d.substr(3145000)) << out.size();
	ASSERT_EQ(Run("get -o " + fo + " --length 10 " + DM() + " c o"), 0) << out;
	EXPECT_TRUE(file_bytes(fo) == d.substr(0, 10));
	EXPECT_EQ(Run("get --length 0 " + DM() + " c o"), 2) << out;
	EXPECT_NE(out.find("--length must be at least 1"), std::string::npos) << out;
	EXPECT_EQ(Run("get --offset 1x " + DM() + " c o"), 2) << out;
	EXPECT_NE(out.find("not a size"), std::string::npos) << out;
}

/*
 * Issue 41 item 7: rmcoll removes an empty collection; it refuses one
 * that holds objects (saying so, removing nothing) and a missing one.
 */
TEST_F(CliTest, RmcollRemovesOnlyAnEmptyCollection)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	ASSERT_EQ(Run("put " + DM() + " full o < /dev/null"), 0) << out;
	ASSERT_EQ(Run("put " + DM() + " empty o < /dev/null"), 0) << out;
	ASSERT_EQ(Run("rm " + DM() + " empty o"), 0) << out;
	EXPECT_EQ(Run("rmcoll " + DM() + " full"), 1) << out;
	EXPECT_NE(out.find("collection full is not empty: remove its objects first"),
		  std::string::npos)
		<< out;
	EXPECT_EQ(Run("rmcoll " + DM() + " nosuch"), 1) << out;
	EXPECT_NE(out.find("collection nosuch: "), std::string::npos) << out;
	ASSERT_EQ(Run("rmcoll " + DM() + " empty"), 0) << out;
	EXPECT_NE(out.find("removed collection empty"), std::string::npos) << out;
	ASSERT_EQ(Run("ls " + DM()), 0) << out;
	EXPECT_EQ(out, "full\n");
	ASSERT_EQ(RunOut("statfs --json " + DM()), 0) << out;
	EXPECT_EQ(json_u64(out, "collections"), 1u) << out;
	EXPECT_EQ(Run("rmcoll " + DM()), 2) << out;
	ASSERT_EQ(Run("fsck " + DM()), 0) << out;
}

/* The "extent ..." lines of stat --extents: {offset, length, device offset}. */
static std::vector<std::vector<uint64_t>> extent_lines(const std::string &o, std::string *csum)
{
	std::vector<std::vector<uint64_t>> v;
	size_t p = 0;
	while ((p = o.find("extent offset ", p)) != std::string::npos) {
		unsigned long long a, b, c, d;
		char st[32];
		if (sscanf(o.c_str() + p,
			   "extent offset %llu length %llu device_offset %llu csum_blocks %llu "
			   "checksums %31s",
			   &a, &b, &c, &d, st) == 5) {
			v.push_back({ a, b, c, d });
			*csum += std::string(st) + " ";
		}
		p++;
	}
	return v;
}

/*
 * Issue 41 item 7: stat --extents lists each extent (object offset,
 * length, device offset, checksum blocks) with its checksums verified:
 * they tile the object and its allocation inside the data area; after a
 * byte of one extent is flipped on the device, that extent reports one
 * bad block and stat exits 4.  An inline object has no extent.
 */
TEST_F(CliTest, StatExtentsShowsPlacementAndChecksums)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	std::string d = pattern(3 << 20, 6), f = tmp.path + "/in";
	{
		FILE *fp = fopen(f.c_str(), "wb");
		fwrite(d.data(), 1, d.size(), fp);
		fclose(fp);
	}
	ASSERT_EQ(Run("put " + DM() + " c o " + f), 0) << out;
	ASSERT_EQ(RunOut("info --json " + DM()), 0) << out;
	uint64_t data_start = json_u64(out, "data_start");
	ASSERT_EQ(RunOut("stat --extents " + DM() + " c o"), 0) << out;
	std::string csum;
	auto ex = extent_lines(out, &csum);
	ASSERT_FALSE(ex.empty()) << out;
	EXPECT_NE(out.find("extents " + std::to_string(ex.size()) + "\n"), std::string::npos) << out;
	uint64_t next = 0;
	for (auto &e : ex) {
		EXPECT_EQ(e[0], next) << out;
		EXPECT_GE(e[2], data_start) << out;
		EXPECT_EQ(e[3], e[1] / 4096) << out;
		next = e[0] + e[1];
	}
	EXPECT_EQ(next, 3u << 20) << out;
	EXPECT_EQ(csum.find("bad"), std::string::npos) << csum;

	/* flip a byte in the second checksum block of the first extent */
	int fd = open(dev.c_str(), O_RDWR);
	ASSERT_GE(fd, 0);
	char b;
	ASSERT_EQ(pread(fd, &b, 1, (off_t)ex[0][2] + 5000), 1);
	b ^= 0x20;
	ASSERT_EQ(pwrite(fd, &b, 1, (off_t)ex[0][2] + 5000), 1);
	close(fd);
	EXPECT_EQ(Run("stat --extents " + DM() + " c o"), 4) << out;
	csum.clear();
	auto ex2 = extent_lines(out, &csum);
	ASSERT_EQ(ex2.size(), ex.size()) << out;
	EXPECT_EQ(csum.rfind("1 ", 0), 0u) << csum;
	EXPECT_NE(out.find("checksums 1 bad\n"), std::string::npos) << out;
	EXPECT_NE(out.find("object c/o: 1 checksum blocks do not match"), std::string::npos)
		<< out;

	ASSERT_EQ(Run("put " + DM() + " c small < /dev/null"), 0) << out;
	ASSERT_EQ(RunOut("stat --extents " + DM() + " c small"), 0) << out;
	EXPECT_EQ(out.find("extent offset"), std::string::npos) << out;
	EXPECT_NE(out.find("extents 0\n"), std::string::npos) << out;
}

/*
 * Issue 41: info shows the policies in effect after the open's zero-range
 * probe, not only what was recorded: a read-only info says it probed
 * nothing; info --probe opens read-write and shows whether zero-range is
 * offloaded and how long the probe took (text and JSON).
 */
TEST_F(CliTest, InfoProbeShowsThePoliciesInEffect)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	ASSERT_EQ(RunOut("info " + DM()), 0) << out;
	EXPECT_NE(out.find("zero offload    not probed (a read-only open"), std::string::npos)
		<< out;
	ASSERT_EQ(RunOut("info --probe " + DM()), 0) << out;
	EXPECT_NE(out.find("zero offload    "), std::string::npos) << out;
	EXPECT_NE(out.find("zero-range took "), std::string::npos) << out;
	EXPECT_EQ(out.find("not probed"), std::string::npos) << out;
	ASSERT_EQ(RunOut("info --probe --json " + DM()), 0) << out;
	EXPECT_NE(out.find("\"zero_probed\": true"), std::string::npos) << out;
	EXPECT_NE(out.find("\"zero_offload\": "), std::string::npos) << out;
	ASSERT_EQ(RunOut("info --json " + DM()), 0) << out;
	EXPECT_NE(out.find("\"zero_probed\": false"), std::string::npos) << out;
	ASSERT_EQ(Run("fsck --deep " + DM()), 0) << out;
}

/*
 * Issue 41: `rawstore grow` uses the space of a grown device (a grown
 * device is otherwise ignored), refuses to shrink (exit 1, nothing
 * changes), says when there is nothing to grow, and fsck stays clean.
 */
TEST_F(CliTest, GrowUsesAGrownDeviceAndNeverShrinks)
{
	ASSERT_EQ(Run("mkfs " + DM()), 0) << out;
	ASSERT_EQ(Run("df --json " + DM()), 0) << out;
	uint64_t size0 = json_u64(out, "device_size");
	ASSERT_EQ(truncate(dev.c_str(), (off_t)(size0 * 2)), 0);
	ASSERT_EQ(Run("df --json " + DM()), 0) << out;
	EXPECT_EQ(json_u64(out, "device_size"), size0) << "grown without grow";
	EXPECT_EQ(Run("grow --size " + std::to_string(size0 / 2) + " " + DM()), 1) << out;
	EXPECT_NE(out.find("never shrinks"), std::string::npos) << out;
	ASSERT_EQ(Run("grow " + DM()), 0) << out;
	EXPECT_NE(out.find("grew " + dev + " from " + std::to_string(size0) + " to " +
			   std::to_string(size0 * 2) + " bytes"), std::string::npos) << out;
	ASSERT_EQ(Run("df --json " + DM()), 0) << out;
	EXPECT_EQ(json_u64(out, "device_size"), size0 * 2);
	ASSERT_EQ(Run("grow " + DM()), 0) << out;
	EXPECT_NE(out.find("nothing to grow"), std::string::npos) << out;
	EXPECT_EQ(Run("grow --size 0 " + DM()), 2) << out;
	ASSERT_EQ(Run("fsck --deep " + DM()), 0) << out;
}
