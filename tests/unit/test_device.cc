// Checks the device layer: space verbs (zero_range, punch_hole, provision,
// prealloc_stale) with alignment checks and honest -EOPNOTSUPP, the
// engine choice, and the whole store on a loop device when the host has
// losetup (skipped with a reason otherwise).
#include <fcntl.h>
#include <sys/stat.h>

#include <set>

#include "helpers.h"

extern "C" {
#include "device.h"
void *rs_alloc_aligned(size_t len);
void *rs_iobuf_alloc(size_t len);
void rs_iobuf_free(void *p, size_t len);
}

class DeviceTest : public ::testing::Test {
protected:
	TempDir tmp;
	std::string path;
	struct rs_dev *d = nullptr;
	void SetUp() override
	{
		path = tmp.path + "/dev";
		ASSERT_EQ(make_file(path, 16 << 20), 0);
		ASSERT_EQ(dev_open(nullptr, path.c_str(), RAWSTORE_ENGINE_AUTO, 16, false, &d), 0);
	}
	void TearDown() override { dev_close(d); }
	std::string ReadBack(uint64_t off, size_t len)
	{
		void *b = rs_alloc_aligned(len);
		EXPECT_EQ(dev_read(d, b, off, len), 0);
		std::string s(static_cast<char *>(b), len);
		free(b);
		return s;
	}
	void Fill(uint64_t off, size_t len)
	{
		std::string p = pattern(len, 1);
		void *b = rs_alloc_aligned(len);
		memcpy(b, p.data(), len);
		ASSERT_EQ(dev_write(d, b, off, len), 0);
		free(b);
	}
};

TEST_F(DeviceTest, GeometryOfAFile)
{
	const struct rs_dev_geom *g = dev_geom(d);
	EXPECT_EQ(g->size, 16u << 20);
	EXPECT_EQ(g->logical_block, 4096u);
	EXPECT_FALSE(g->is_bdev);
	EXPECT_TRUE(g->direct);
}

TEST_F(DeviceTest, ZeroRangeAndPunchHoleReadZeros)
{
	Fill(0, 65536);
	int r = dev_zero_range(d, 4096, 8192);
	if (r == -EOPNOTSUPP)
		GTEST_SKIP() << "the filesystem under $TMPDIR has no FALLOC_FL_ZERO_RANGE";
	ASSERT_EQ(r, 0);
	std::string s = ReadBack(0, 65536), p = pattern(65536, 1);
	EXPECT_EQ(s.substr(0, 4096), p.substr(0, 4096));
	EXPECT_EQ(s.substr(4096, 8192), std::string(8192, 0));
	EXPECT_EQ(s.substr(12288), p.substr(12288));
	ASSERT_EQ(dev_punch_hole(d, 32768, 16384), 0);
	s = ReadBack(0, 65536);
	EXPECT_EQ(s.substr(32768, 16384), std::string(16384, 0));
	EXPECT_EQ(s.substr(49152), p.substr(49152));
	struct stat sb;
	ASSERT_EQ(stat(path.c_str(), &sb), 0);
	EXPECT_EQ(sb.st_size, 16 << 20); /* KEEP_SIZE */
}

TEST_F(DeviceTest, VerbsRefuseMisalignedAndOutOfRange)
{
	EXPECT_EQ(dev_zero_range(d, 100, 4096), -EINVAL);
	EXPECT_EQ(dev_punch_hole(d, 0, 100), -EINVAL);
	EXPECT_EQ(dev_provision(d, 16 << 20, 4096), -EINVAL);
	EXPECT_EQ(dev_prealloc_stale(d, 0, 0), -EINVAL);
	void *b = rs_alloc_aligned(4096);
	EXPECT_EQ(dev_read(d, b, 100, 4096), -EINVAL);
	EXPECT_EQ(dev_write(d, b, 16 << 20, 4096), -EINVAL);
	free(b);
}

TEST_F(DeviceTest, ProvisionAndStalePreallocAnswerHonestly)
{
	/* a file supports plain preallocation */
	EXPECT_EQ(dev_provision(d, 0, 1 << 20), 0);
	/*
	 * NO_HIDE_STALE on a regular file: the host never runs the patched
	 * kernel, whose VFS alone admits the flag, so the answer is exactly
	 * EOPNOTSUPP, and nothing is allocated.  (In the guest, t_nohide_stale
	 * pins down the patched answers: EOPNOTSUPP without the mount option,
	 * EPERM outside the group, 0 inside it.)
	 */
	struct stat before, after;
	ASSERT_EQ(stat(path.c_str(), &before), 0);
	EXPECT_EQ(dev_prealloc_stale(d, 2 << 20, 1 << 20), -EOPNOTSUPP);
	ASSERT_EQ(stat(path.c_str(), &after), 0);
	EXPECT_EQ(after.st_blocks, before.st_blocks);
	EXPECT_EQ(after.st_size, before.st_size);
}

/* ---- loop devices ---- */

static std::string run(const std::string &cmd, int *status)
{
	std::string out;
	FILE *f = popen(cmd.c_str(), "r");
	if (!f) {
		*status = -1;
		return out;
	}
	char buf[256];
	while (fgets(buf, sizeof(buf), f))
		out += buf;
	*status = pclose(f);
	while (!out.empty() && (out.back() == '\n' || out.back() == ' '))
		out.pop_back();
	return out;
}

class LoopTest : public ::testing::Test {
protected:
	TempDir tmp;
	std::string backing, loop, meta;
	void SetUp() override
	{
		backing = tmp.path + "/backing";
		meta = tmp.path + "/meta";
		if (geteuid() != 0)
			GTEST_SKIP() << "loop devices need root";
		ASSERT_EQ(make_file(backing, 128 << 20), 0);
		int status;
		loop = run("losetup -f --show " + backing + " 2>/dev/null", &status);
		if (status != 0 || loop.compare(0, 9, "/dev/loop"))
			GTEST_SKIP() << "losetup is unavailable here (" << loop << ")";
	}
	/* Whether a file beside the backing file punches holes: 0 or -EOPNOTSUPP. */
	int BackingPunch()
	{
		std::string probe = tmp.path + "/punch-probe";
		EXPECT_EQ(make_file(probe, 1 << 20), 0);
		int fd = open(probe.c_str(), O_RDWR);
		EXPECT_GE(fd, 0);
		int r = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 65536) ? -errno
											     : 0;
		close(fd);
		unlink(probe.c_str());
		EXPECT_TRUE(r == 0 || r == -EOPNOTSUPP) << r;
		return r;
	}
	void TearDown() override
	{
		int status;
		if (!loop.empty() && !loop.compare(0, 9, "/dev/loop"))
			run("losetup -d " + loop, &status);
	}
};

TEST_F(LoopTest, StoreOnALoopDevice)
{
	ASSERT_EQ(rawstore_mkfs(loop.c_str(), meta.c_str(), nullptr), 0) << rawstore_errmsg();
	struct rawstore *st;
	ASSERT_EQ(rawstore_open(loop.c_str(), meta.c_str(), nullptr, &st), 0) << rawstore_errmsg();
	struct rawstore_info i;
	i.struct_size = sizeof(i);
	ASSERT_EQ(rawstore_get_info(st, &i), 0);
	EXPECT_EQ(i.is_block_device, 1);
	EXPECT_EQ(i.direct_io, 1);
	EXPECT_EQ(i.device_size, 128u << 20);
	printf("loop: %s, lbs %u, discard_max %llu, write_zeroes_max %llu, cache %s\n",
	       i.io_engine, i.logical_block_size, (unsigned long long)i.discard_max_bytes,
	       (unsigned long long)i.write_zeroes_max_bytes,
	       i.write_cache ? "write back" : "write through");
	/* O_EXCL: a second opener is refused */
	struct rawstore *st2;
	EXPECT_EQ(rawstore_open(loop.c_str(), meta.c_str(), nullptr, &st2), -EBUSY);
	struct rawstore_txn *t;
	rawstore_txn_new(&t);
	rawstore_txn_coll_create(t, "c");
	std::string d = pattern(3 << 20, 5);
	rawstore_txn_write(t, "c", "o", 1, 123, d.data(), d.size());
	ASSERT_EQ(rawstore_submit(st, t), 0);
	rawstore_txn_reset(t);
	std::string d2 = pattern(1 << 20, 6);
	rawstore_txn_write(t, "c", "o", 1, 123, d2.data(), d2.size());
	ASSERT_EQ(rawstore_submit(st, t), 0);
	rawstore_txn_free(t);
	d.replace(0, d2.size(), d2);
	std::string back(d.size() + 123, 1);
	ASSERT_EQ(rawstore_read(st, "c", "o", 1, 0, &back[0], back.size()),
		  (ssize_t)back.size());
	EXPECT_EQ(back, std::string(123, 0) + d);
	/* reclaim punches exactly when the backing file punches holes */
	EXPECT_EQ(rawstore_reclaim(st), BackingPunch());
	struct rawstore_fsck_opts fo;
	rawstore_fsck_opts_init(&fo);
	fo.deep = 1;
	EXPECT_EQ(rawstore_fsck(st, &fo, nullptr), 0);
	EXPECT_EQ(rawstore_close(st), 0);
	ASSERT_EQ(rawstore_open(loop.c_str(), meta.c_str(), nullptr, &st), 0);
	ASSERT_EQ(rawstore_read(st, "c", "o", 1, 0, &back[0], back.size()),
		  (ssize_t)back.size());
	EXPECT_EQ(back, std::string(123, 0) + d);
	EXPECT_EQ(rawstore_close(st), 0);
}

/*
 * A write larger than the device takes in one request goes as pieces of
 * max_sectors_kb (the block layer would otherwise split it, which io_uring
 * cannot do without handing it to a worker): the loop's limit lowered to
 * 64 KiB, a 1 MiB write from the caller's buffer and a 3 MiB copied one
 * go as at least 16 and 48 requests, and read back whole, also after a
 * reopen; a deep fsck is clean.  The limit is put back before the loop is
 * detached (limits may outlive a loop device on some kernels).
 */
TEST_F(LoopTest, LargeWritesGoInPiecesTheQueueTakes)
{
	std::string q = "/sys/block/" + loop.substr(5) + "/queue/max_sectors_kb";
	int status;
	std::string was = run("cat " + q, &status);
	ASSERT_EQ(status, 0) << q;
	struct Restore {
		std::string q, was;
		~Restore()
		{
			int st;
			run("echo " + was + " > " + q, &st);
		}
	} restore{ q, was };
	ASSERT_EQ((run("echo 64 > " + q + " && cat " + q, &status)), "64") << q;

	ASSERT_EQ(rawstore_mkfs(loop.c_str(), meta.c_str(), nullptr), 0) << rawstore_errmsg();
	struct rawstore *st;
	ASSERT_EQ(rawstore_open(loop.c_str(), meta.c_str(), nullptr, &st), 0) << rawstore_errmsg();
	struct rawstore_perf p0, p1, p2;
	p0.struct_size = p1.struct_size = p2.struct_size = sizeof(p0);
	void *raw = nullptr;
	ASSERT_EQ(posix_memalign(&raw, 4096, 1 << 20), 0);
	std::string a = pattern(1 << 20, 11), b = pattern(3 << 20, 12);
	memcpy(raw, a.data(), a.size());
	struct rawstore_txn *t;
	rawstore_txn_new(&t);
	rawstore_txn_coll_create(t, "c");
	ASSERT_EQ(rawstore_submit(st, t), 0);
	ASSERT_EQ(rawstore_perf_get(st, &p0), 0);
	rawstore_txn_reset(t);
	ASSERT_EQ(rawstore_txn_write_nocopy(t, "c", "a", 1, 0, raw, a.size()), 0);
	ASSERT_EQ(rawstore_submit(st, t), 0);
	ASSERT_EQ(rawstore_perf_get(st, &p1), 0);
	rawstore_txn_reset(t);
	rawstore_txn_write(t, "c", "b", 1, 0, b.data(), b.size());
	ASSERT_EQ(rawstore_submit(st, t), 0);
	ASSERT_EQ(rawstore_perf_get(st, &p2), 0);
	rawstore_txn_free(t);
	printf("1 MiB nocopy: %llu ops, %llu pieces; 3 MiB copied: %llu ops, %llu pieces\n",
	       (unsigned long long)(p1.dev_write_ops - p0.dev_write_ops),
	       (unsigned long long)(p1.dev_write_pieces - p0.dev_write_pieces),
	       (unsigned long long)(p2.dev_write_ops - p1.dev_write_ops),
	       (unsigned long long)(p2.dev_write_pieces - p1.dev_write_pieces));
	EXPECT_GE(p1.dev_write_pieces - p0.dev_write_pieces, 16u);
	EXPECT_GE(p2.dev_write_pieces - p1.dev_write_pieces, 48u);
	EXPECT_LE(p2.dev_write_ops - p0.dev_write_ops, 4u) << "the store's own writes, not pieces";
	for (int pass = 0; pass < 2; pass++) {
		std::string back(a.size(), 1), back2(b.size(), 1);
		ASSERT_EQ(rawstore_read(st, "c", "a", 1, 0, &back[0], back.size()),
			  (ssize_t)back.size());
		EXPECT_TRUE(back == a) << "pass " << pass;
		ASSERT_EQ(rawstore_read(st, "c", "b", 1, 0, &back2[0], back2.size()),
			  (ssize_t)back2.size());
		EXPECT_TRUE(back2 == b) << "pass " << pass;
		struct rawstore_fsck_opts fo;
		rawstore_fsck_opts_init(&fo);
		fo.deep = 1;
		EXPECT_EQ(rawstore_fsck(st, &fo, nullptr), 0);
		EXPECT_EQ(rawstore_close(st), 0);
		if (pass == 0) {
			ASSERT_EQ(rawstore_open(loop.c_str(), meta.c_str(), nullptr, &st), 0);
		}
	}
	free(raw);
}

/*
 * A loop device on the host's stock kernel: zero-range always works (the
 * block layer falls back to writing zeros); punch-hole works exactly when
 * the backing file's file system punches holes (loop turns it into a hole
 * punch of the backing file); provision (mode KEEP_SIZE) is EOPNOTSUPP,
 * because only the patched kernel has it; NO_HIDE_STALE likewise.
 */
TEST_F(LoopTest, SpaceVerbsOnABlockDevice)
{
	int backing_punch = BackingPunch();
	printf("the backing file %s punch holes\n", backing_punch ? "cannot" : "can");

	struct rs_dev *d;
	ASSERT_EQ(dev_open(nullptr, loop.c_str(), RAWSTORE_ENGINE_AUTO, 8, false, &d), 0);
	EXPECT_TRUE(dev_geom(d)->is_bdev);
	EXPECT_EQ(dev_zero_range(d, 0, 1 << 20), 0);
	EXPECT_EQ(dev_punch_hole(d, 1 << 20, 1 << 20), backing_punch);
	EXPECT_EQ(dev_provision(d, 0, 1 << 20), -EOPNOTSUPP);
	EXPECT_EQ(dev_prealloc_stale(d, 0, 1 << 20), -EOPNOTSUPP);
	EXPECT_EQ(dev_zero_range(d, 100, 512), -EINVAL);
	dev_close(d);
}

/*
 * The I/O buffer cache: 1 MiB buffers are carved from 2 MiB-aligned slabs
 * (huge pages where the system has them, so a 1 MiB direct write is one
 * physically contiguous request), 32 MiB of them per class; past that,
 * plain buffers.  All are distinct and slab buffers come back on free.
 */
TEST(IoBuf, LargeBuffersComeFromAlignedSlabs)
{
	const size_t mib = 1 << 20;
	std::vector<uint8_t *> v;
	for (int i = 0; i < 40; i++) {
		auto p = static_cast<uint8_t *>(rs_iobuf_alloc(mib));
		ASSERT_NE(p, nullptr);
		EXPECT_EQ((uintptr_t)p % 4096, 0u);
		memset(p, i + 1, mib);
		v.push_back(p);
	}
	for (int i = 0; i < 32; i++)
		EXPECT_EQ((uintptr_t)v[(size_t)i] % mib, 0u) << "buffer " << i << " not in a slab";
	for (int i = 0; i < 40; i++) /* disjoint: each still holds its own byte */
		for (size_t o = 0; o < mib; o += 4096)
			ASSERT_EQ(v[(size_t)i][o], (uint8_t)(i + 1)) << "buffers " << i << " overlap";
	std::set<uint8_t *> slab(v.begin(), v.begin() + 32);
	for (auto p : v)
		rs_iobuf_free(p, mib);
	/* the slab buffers come back (the 8 plain ones were freed) */
	std::vector<uint8_t *> w;
	for (int i = 0; i < 32; i++) {
		w.push_back(static_cast<uint8_t *>(rs_iobuf_alloc(mib)));
		EXPECT_EQ(slab.count(w.back()), 1u) << "allocation " << i << " is not a slab buffer";
	}
	for (auto p : w)
		rs_iobuf_free(p, mib);
	auto big = static_cast<uint8_t *>(rs_iobuf_alloc(4 * mib));
	ASSERT_NE(big, nullptr);
	EXPECT_EQ((uintptr_t)big % 4096, 0u);
	memset(big, 7, 4 * mib);
	rs_iobuf_free(big, 4 * mib);
}
