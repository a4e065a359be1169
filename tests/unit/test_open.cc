// Checks every rejection case of mkfs and open: foreign, corrupt and newer
// superblocks, a shrunken device, mismatched metadata, a second opener,
// missing pieces, bad options; and that nothing is lost by a rejection.
#include <isa-l.h>

#include "helpers.h"
#include "tree_state.h"

extern "C" {
#include "debug.h"
#include "ondisk.h"
}

static void rw_super(const std::string &dev, uint64_t off, struct rs_disk_super *sb, bool write)
{
	int fd = open(dev.c_str(), O_RDWR);
	ASSERT_GE(fd, 0);
	if (write)
		ASSERT_EQ(pwrite(fd, sb, sizeof(*sb), (off_t)off), (ssize_t)sizeof(*sb));
	else
		ASSERT_EQ(pread(fd, sb, sizeof(*sb), (off_t)off), (ssize_t)sizeof(*sb));
	close(fd);
}

static void reseal(struct rs_disk_super *sb)
{
	sb->crc = htole32(~crc32_iscsi((unsigned char *)sb, offsetof(struct rs_disk_super, crc),
				       0xffffffffu));
}

class OpenTest : public StoreTest {
protected:
	void Closed()
	{
		ASSERT_EQ(MkColl("keep"), 0);
		ASSERT_EQ(Write("keep", "obj", 0, pattern(10000, 1)), 0);
		ASSERT_EQ(rawstore_close(st), 0);
		st = nullptr;
	}
	void StillIntact()
	{
		ASSERT_EQ(Open(), 0) << rawstore_errmsg();
		EXPECT_EQ(Read("keep", "obj", 0, 20000), pattern(10000, 1));
	}
};

TEST_F(OpenTest, SecondOpenerIsBusy)
{
	struct rawstore *st2 = nullptr;
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st2), -EBUSY);
	EXPECT_EQ(st2, nullptr);
	EXPECT_EQ(rawstore_mkfs(dev.c_str(), (tmp.path + "/m2").c_str(), nullptr), -EBUSY);
}

TEST_F(OpenTest, ForeignDevice)
{
	Closed();
	std::string other = tmp.path + "/foreign";
	ASSERT_EQ(make_file(other, 64 << 20), 0);
	int fd = open(other.c_str(), O_RDWR);
	std::string junk = pattern(1 << 20, 5);
	ASSERT_EQ(pwrite(fd, junk.data(), junk.size(), 0), (ssize_t)junk.size());
	close(fd);
	/* with metadata that holds no superblock copy: no store at all */
	std::string nometa = tmp.path + "/nometa";
	EXPECT_EQ(rawstore_open(other.c_str(), nometa.c_str(), nullptr, &st), -EMEDIUMTYPE);
	EXPECT_NE(std::string(rawstore_errmsg()).find("no rawstore superblock"), std::string::npos);
	/* with a store's metadata (issue 41): it may be that store's device
	 * with both superblocks lost, so fsck --repair is named, not mkfs */
	EXPECT_EQ(rawstore_open(other.c_str(), meta.c_str(), nullptr, &st), -EUCLEAN);
	EXPECT_NE(std::string(rawstore_errmsg()).find("check the device path"), std::string::npos)
		<< rawstore_errmsg();
	/* and repair_super does not take it for that device: its data does
	 * not match the store's checksums; nothing is written to it */
	std::string before = file_bytes(other);
	struct rawstore_open_opts ro;
	rawstore_open_opts_init(&ro);
	ro.repair_super = 1;
	EXPECT_EQ(rawstore_open(other.c_str(), meta.c_str(), &ro, &st), -EUCLEAN);
	EXPECT_NE(std::string(rawstore_errmsg()).find("is this the store's device?"),
		  std::string::npos)
		<< rawstore_errmsg();
	EXPECT_TRUE(file_bytes(other) == before);
	StillIntact();
}

TEST_F(OpenTest, CorruptPrimaryUsesBackup)
{
	Closed();
	struct rs_disk_super sb;
	rw_super(dev, 0, &sb, false);
	sb.min_alloc ^= 1;
	rw_super(dev, 0, &sb, true);
	StillIntact();
}

TEST_F(OpenTest, BothSuperblocksCorrupt)
{
	Closed();
	struct rs_disk_super sb, good;
	rw_super(dev, 0, &good, false);
	sb = good;
	sb.device_size ^= 1;
	rw_super(dev, 0, &sb, true);
	rw_super(dev, RS_SB_BACKUP_OFFSET, &sb, true);
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), -EUCLEAN);
	rw_super(dev, 0, &good, true);
	StillIntact();
}

TEST_F(OpenTest, NewerFormatVersion)
{
	Closed();
	struct rs_disk_super sb, good;
	rw_super(dev, 0, &good, false);
	sb = good;
	sb.version = htole32(RS_FORMAT_VERSION + 1);
	reseal(&sb);
	rw_super(dev, 0, &sb, true);
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), -EPROTO);
	rw_super(dev, RS_SB_BACKUP_OFFSET, &sb, true);
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), -EPROTO);
	EXPECT_NE(std::string(rawstore_errmsg()).find("newer"), std::string::npos);
	rw_super(dev, 0, &good, true);
	rw_super(dev, RS_SB_BACKUP_OFFSET, &good, true);
	StillIntact();
}

TEST_F(OpenTest, DeviceSmallerThanRecorded)
{
	Closed();
	ASSERT_EQ(truncate(dev.c_str(), (off_t)(dev_size - 4096)), 0);
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), -ENXIO);
	ASSERT_EQ(truncate(dev.c_str(), (off_t)dev_size), 0);
	StillIntact();
}

TEST_F(OpenTest, UuidMismatchWithMetadata)
{
	Closed();
	std::string dev2 = tmp.path + "/dev2", meta2 = tmp.path + "/meta2";
	ASSERT_EQ(make_file(dev2, 64 << 20), 0);
	ASSERT_EQ(rawstore_mkfs(dev2.c_str(), meta2.c_str(), nullptr), 0);
	EXPECT_EQ(rawstore_open(dev.c_str(), meta2.c_str(), nullptr, &st), -EXDEV);
	EXPECT_EQ(rawstore_open(dev2.c_str(), meta.c_str(), nullptr, &st), -EXDEV);
	EXPECT_NE(std::string(rawstore_errmsg()).find("does not belong"), std::string::npos);
	StillIntact();
}

TEST_F(OpenTest, MissingPieces)
{
	Closed();
	EXPECT_EQ(rawstore_open((tmp.path + "/nodev").c_str(), meta.c_str(), nullptr, &st),
		  -ENOENT);
	EXPECT_EQ(rawstore_open(dev.c_str(), (tmp.path + "/nometa").c_str(), nullptr, &st),
		  -ENOENT);
	EXPECT_EQ(rawstore_open(tmp.path.c_str(), meta.c_str(), nullptr, &st), -ENOTBLK);
	StillIntact();
}

TEST_F(OpenTest, MkfsRefusesToOverwrite)
{
	Closed();
	EXPECT_EQ(rawstore_mkfs(dev.c_str(), (tmp.path + "/m3").c_str(), nullptr), -EEXIST);
	std::string dev3 = tmp.path + "/dev3";
	ASSERT_EQ(make_file(dev3, 64 << 20), 0);
	EXPECT_EQ(rawstore_mkfs(dev3.c_str(), meta.c_str(), nullptr), -EEXIST);
	StillIntact();
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	mo.force = 1;
	ASSERT_EQ(rawstore_mkfs(dev.c_str(), meta.c_str(), &mo), 0);
	ASSERT_EQ(Open(), 0);
	EXPECT_EQ(rawstore_coll_exists(st, "keep"), 0);
}

TEST_F(OpenTest, MkfsRejectsBadOptions)
{
	std::string d = tmp.path + "/d4", m = tmp.path + "/m4";
	ASSERT_EQ(make_file(d, 64 << 20), 0);
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	mo.min_alloc_size = 6000;
	EXPECT_EQ(rawstore_mkfs(d.c_str(), m.c_str(), &mo), -EINVAL);
	test_mkfs_opts_init(&mo);
	mo.csum_block_size = 8192; /* larger than min_alloc_size */
	EXPECT_EQ(rawstore_mkfs(d.c_str(), m.c_str(), &mo), -EINVAL);
	test_mkfs_opts_init(&mo);
	mo.device_size = 1 << 20;
	EXPECT_EQ(rawstore_mkfs(d.c_str(), m.c_str(), &mo), -ENOSPC);
	test_mkfs_opts_init(&mo);
	mo.device_size = 1ULL << 40;
	EXPECT_EQ(rawstore_mkfs(d.c_str(), m.c_str(), &mo), -EINVAL);
	mo.struct_size = sizeof(mo) + 8;
	EXPECT_EQ(rawstore_mkfs(d.c_str(), m.c_str(), &mo), -EINVAL);
	/* 64 KiB units with 4 KiB checksum blocks work */
	test_mkfs_opts_init(&mo);
	mo.min_alloc_size = 65536;
	ASSERT_EQ(rawstore_mkfs(d.c_str(), m.c_str(), &mo), 0);
	struct rawstore *s2;
	ASSERT_EQ(rawstore_open(d.c_str(), m.c_str(), nullptr, &s2), 0);
	struct rawstore_txn *t;
	rawstore_txn_new(&t);
	rawstore_txn_coll_create(t, "c");
	std::string data = pattern(100000, 3);
	rawstore_txn_write(t, "c", "o", 1, 1000, data.data(), data.size());
	ASSERT_EQ(rawstore_submit(s2, t), 0);
	rawstore_txn_free(t);
	std::string back(200000, 'z');
	EXPECT_EQ(rawstore_read(s2, "c", "o", 1, 0, &back[0], back.size()), 101000);
	back.resize(101000);
	EXPECT_EQ(back, std::string(1000, 0) + data);
	struct rawstore_statfs sf;
	sf.struct_size = sizeof(sf);
	ASSERT_EQ(rawstore_statfs(s2, &sf), 0);
	EXPECT_EQ(sf.allocated, 2u * 65536);
	EXPECT_EQ(rawstore_close(s2), 0);
}

TEST_F(OpenTest, ExplicitLibaioEngine)
{
	Closed();
	struct rawstore_open_opts oo;
	rawstore_open_opts_init(&oo);
	oo.engine = RAWSTORE_ENGINE_LIBAIO;
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &oo, &st), 0);
	struct rawstore_info i;
	i.struct_size = sizeof(i);
	ASSERT_EQ(rawstore_get_info(st, &i), 0);
	EXPECT_STREQ(i.io_engine, "libaio");
	EXPECT_EQ(Read("keep", "obj", 0, 20000), pattern(10000, 1));
	ASSERT_EQ(Write("keep", "obj2", 0, pattern(50000, 2)), 0);
	EXPECT_EQ(Read("keep", "obj2", 0, 60000), pattern(50000, 2));
	oo.struct_size = sizeof(oo) + 1;
	struct rawstore *s2;
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &oo, &s2), -EINVAL);
}

TEST_F(OpenTest, FsckRepairsADamagedSuperblockCopy)
{
	Closed();
	struct rs_disk_super sb, good;
	rw_super(dev, 0, &good, false);
	sb = good;
	sb.magic = 0;
	rw_super(dev, 0, &sb, true);
	StillIntact(); /* opened from the backup */
	struct rawstore_fsck_opts o;
	struct rawstore_fsck_result r;
	rawstore_fsck_opts_init(&o);
	r.struct_size = sizeof(r);
	EXPECT_EQ(rawstore_fsck(st, &o, &r), -EUCLEAN);
	EXPECT_EQ(r.errors, 1u);
	o.repair = 1;
	EXPECT_EQ(rawstore_fsck(st, &o, &r), 0);
	EXPECT_EQ(r.repaired, 1u);
	rw_super(dev, 0, &sb, false);
	EXPECT_EQ(memcmp(&sb, &good, sizeof(sb)), 0);
	o.repair = 0;
	EXPECT_EQ(rawstore_fsck(st, &o, &r), 0);
}

static void capture_log(void *arg, int level, const char *msg)
{
	if (level <= RAWSTORE_LOG_WARNING)
		*static_cast<std::string *>(arg) += msg;
}

TEST_F(OpenTest, EngineFallbackIsLoggedAndReported)
{
	Closed();
	rs_debug_disable_uring(1);
	struct rawstore_open_opts oo;
	rawstore_open_opts_init(&oo);
	oo.engine = RAWSTORE_ENGINE_IO_URING;
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &oo, &st), -ENODEV);
	std::string log;
	oo.engine = RAWSTORE_ENGINE_AUTO;
	oo.log_fn = capture_log;
	oo.log_arg = &log;
	int r = rawstore_open(dev.c_str(), meta.c_str(), &oo, &st);
	rs_debug_disable_uring(0);
	ASSERT_EQ(r, 0);
	EXPECT_NE(log.find("using libaio"), std::string::npos) << log;
	struct rawstore_info i;
	i.struct_size = sizeof(i);
	ASSERT_EQ(rawstore_get_info(st, &i), 0);
	EXPECT_STREQ(i.io_engine, "libaio");
	EXPECT_EQ(Read("keep", "obj", 0, 20000), pattern(10000, 1));
}

/* issue 8 item 6: a superblock whose crc is valid but whose data area
 * overlaps the superblock copies is refused, and nothing is changed. */
TEST_F(OpenTest, GeometryOverlappingTheSuperblocksIsRefused)
{
	Closed();
	struct rs_disk_super good, sb;
	rw_super(dev, 0, &good, false);
	for (uint64_t start : { (uint64_t)0, (uint64_t)4096, (uint64_t)RS_SB_BACKUP_OFFSET }) {
		sb = good;
		sb.data_start = htole64(start);
		reseal(&sb);
		rw_super(dev, 0, &sb, true);
		rw_super(dev, RS_SB_BACKUP_OFFSET, &sb, true);
		EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), -EUCLEAN)
			<< "data_start " << start;
		EXPECT_NE(std::string(rawstore_errmsg()).find("geometry"), std::string::npos)
			<< rawstore_errmsg();
		st = nullptr;
	}
	/* units larger than mkfs makes, logical blocks larger than a copy */
	sb = good;
	sb.min_alloc = htole32(1U << 30);
	sb.csum_block = htole32(4096);
	reseal(&sb);
	rw_super(dev, 0, &sb, true);
	rw_super(dev, RS_SB_BACKUP_OFFSET, &sb, true);
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), -EUCLEAN);
	sb = good;
	sb.logical_block = htole32(8192);
	reseal(&sb);
	rw_super(dev, 0, &sb, true);
	rw_super(dev, RS_SB_BACKUP_OFFSET, &sb, true);
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st), -EUCLEAN);
	st = nullptr;
	rw_super(dev, 0, &good, true);
	rw_super(dev, RS_SB_BACKUP_OFFSET, &good, true);
	StillIntact();
}

/* issue 8 item 10: a device with logical blocks above 4 KiB is refused
 * before anything is created or written. */
TEST_F(OpenTest, MkfsRefusesLargeLogicalBlocksBeforeCreatingAnything)
{
	std::string d = tmp.path + "/d8k", m = tmp.path + "/m8k";
	ASSERT_EQ(make_file(d, 64 << 20), 0);
	struct rawstore_mkfs_opts mo;
	test_mkfs_opts_init(&mo);
	mo.min_alloc_size = 8192;
	mo.csum_block_size = 8192;
	rs_debug_file_logical_block(8192);
	int r = rawstore_mkfs(d.c_str(), m.c_str(), &mo);
	std::string msg = rawstore_errmsg();
	rs_debug_file_logical_block(0);
	EXPECT_EQ(r, -EINVAL);
	EXPECT_NE(msg.find("8192-byte logical blocks"), std::string::npos) << msg;
	struct stat sb;
	EXPECT_NE(stat(m.c_str(), &sb), 0) << "the metadata directory was created";
	/* nothing was written: the file is still all holes */
	ASSERT_EQ(stat(d.c_str(), &sb), 0);
	EXPECT_EQ(sb.st_blocks, 0);
	/* the same device with 4 KiB blocks is fine */
	ASSERT_EQ(rawstore_mkfs(d.c_str(), m.c_str(), &mo), 0) << rawstore_errmsg();
}

/* issue 8 item 11: a read-only open writes nothing to the device or the
 * metadata directory, does not replay deferred writes, and still reads the
 * newest data (from the records); every writing call gets -EROFS. */
TEST_F(OpenTest, ReadOnlyOpenWritesNothingAndSeesPendingDeferredWrites)
{
	Closed();
	std::string base = pattern(65536, 1), upd = pattern(3000, 2);
	ASSERT_EQ(Open(), 0);
	ASSERT_EQ(Write("keep", "d", 0, base), 0);
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	leave_pending_deferred(dev, meta, "keep", "d", 1000, upd);
	std::string newest = base;
	newest.replace(1000, upd.size(), upd);
	std::string dev_before = tree_state(dev), meta_before = tree_state(meta);

	struct rawstore_open_opts ro;
	rawstore_open_opts_init(&ro);
	ro.read_only = 1;
	std::string log;
	ro.log_fn = capture_log;
	ro.log_arg = &log;
	ASSERT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &ro, &st), 0) << rawstore_errmsg();
	EXPECT_NE(log.find("not replayed"), std::string::npos) << log;
	EXPECT_EQ(Read("keep", "d", 0, 100000), newest);
	EXPECT_EQ(Read("keep", "obj", 0, 20000), pattern(10000, 1));
	ExpectClean(true); /* deep: the checksums match the overlaid data */
	struct rawstore_txn *t = T();
	rawstore_txn_write(t, "keep", "new", 3, 0, "x", 1);
	EXPECT_EQ(Submit(t), -EROFS);
	EXPECT_EQ(rawstore_reclaim(st), -EROFS);
	struct rawstore_fsck_opts fo;
	struct rawstore_fsck_result fr;
	rawstore_fsck_opts_init(&fo);
	fo.repair = 1;
	fr.struct_size = sizeof(fr);
	EXPECT_EQ(rawstore_fsck(st, &fo, &fr), -EROFS);
	/* readers share the device; a writer is kept out */
	struct rawstore *st2 = nullptr, *st3 = nullptr;
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &ro, &st2), 0) << rawstore_errmsg();
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), nullptr, &st3), -EBUSY);
	if (st2) {
		EXPECT_EQ(rawstore_close(st2), 0);
	}
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	EXPECT_EQ(tree_state(dev), dev_before);
	EXPECT_EQ(tree_state(meta), meta_before);
	ro.rebuild_freelist = 1;
	EXPECT_EQ(rawstore_open(dev.c_str(), meta.c_str(), &ro, &st), -EROFS);
	st = nullptr;

	/* a writable open replays them, and the data is the same */
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	struct rawstore_perf p;
	p.struct_size = sizeof(p);
	ASSERT_EQ(rawstore_perf_get(st, &p), 0);
	EXPECT_EQ(p.deferred_replayed, 1u);
	EXPECT_EQ(Read("keep", "d", 0, 100000), newest);
	EXPECT_NE(tree_state(meta), meta_before);
}
