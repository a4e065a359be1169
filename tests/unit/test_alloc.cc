// Checks the extent set and allocator: merging, removal across extents,
// contiguity with a hint, best fit, split allocations, -ENOSPC with nothing
// taken, and that the observer sees the merged representation (put for a
// new record, resize for a changed length).  Also the two crc32c
// implementations the store chooses between (Crc32cTest).
#include <map>

#include <gtest/gtest.h>

extern "C" {
#include "alloc.h"
}

struct Mirror {
	std::map<uint64_t, uint64_t> m;
	unsigned int misnamed = 0;	/* a put of an existing record, or a
					 * resize of a missing one */
};

/* put names a new record, resize an existing one (the staging of the
 * store's free-list records relies on it) */
static void m_put(void *a, uint64_t off, uint64_t len)
{
	Mirror *mi = static_cast<Mirror *>(a);

	mi->misnamed += mi->m.count(off) != 0;
	mi->m[off] = len;
}

static void m_resize(void *a, uint64_t off, uint64_t len)
{
	Mirror *mi = static_cast<Mirror *>(a);

	mi->misnamed += mi->m.count(off) == 0;
	mi->m[off] = len;
}

static void m_del(void *a, uint64_t off)
{
	static_cast<Mirror *>(a)->m.erase(off);
}

static int to_map(void *a, uint64_t off, uint64_t len)
{
	(*static_cast<std::map<uint64_t, uint64_t> *>(a))[off] = len;
	return 0;
}

class AllocTest : public ::testing::Test {
protected:
	struct extset s;
	Mirror mir;
	struct extset_observer obs = { m_put, m_del, &mir, m_resize };
	void SetUp() override
	{
		extset_init(&s, true);
		s.obs = &obs;
	}
	void TearDown() override { extset_destroy(&s); }
	std::map<uint64_t, uint64_t> Contents()
	{
		std::map<uint64_t, uint64_t> m;
		extset_walk(&s, to_map, &m);
		EXPECT_EQ(m, mir.m);
		EXPECT_EQ(mir.misnamed, 0u);
		return m;
	}
};

TEST_F(AllocTest, InsertMergesNeighbours)
{
	ASSERT_EQ(extset_insert(&s, 0, 10), 0);
	ASSERT_EQ(extset_insert(&s, 20, 10), 0);
	ASSERT_EQ(extset_insert(&s, 10, 10), 0);
	EXPECT_EQ(Contents(), (std::map<uint64_t, uint64_t>{ { 0, 30 } }));
	EXPECT_EQ(extset_insert(&s, 5, 1), -EEXIST);
	EXPECT_EQ(extset_insert(&s, 29, 5), -EEXIST);
	EXPECT_EQ(s.total, 30u);
	EXPECT_EQ(s.count, 1u);
}

TEST_F(AllocTest, RemoveAcrossExtents)
{
	extset_insert(&s, 0, 100);
	extset_insert(&s, 200, 100);
	EXPECT_EQ(extset_remove(&s, 50, 200), 100u);
	EXPECT_EQ(Contents(), (std::map<uint64_t, uint64_t>{ { 0, 50 }, { 250, 50 } }));
	EXPECT_EQ(extset_remove(&s, 10, 10), 10u);
	EXPECT_EQ(Contents(),
		  (std::map<uint64_t, uint64_t>{ { 0, 10 }, { 20, 30 }, { 250, 50 } }));
	EXPECT_EQ(extset_overlap(&s, 0, 300), 90u);
}

TEST_F(AllocTest, AllocationPolicy)
{
	extset_insert(&s, 0, 4096);
	extset_insert(&s, 8192, 4 * 4096);
	extset_insert(&s, 65536, 64 * 4096);
	struct pext *p;
	/* best fit: the 4 KiB hole */
	ASSERT_EQ(extset_alloc(&s, 4096, 0, 0, &p), 1);
	EXPECT_EQ(p[0].off, 0u);
	free(p);
	/* contiguity: hint wins over best fit */
	ASSERT_EQ(extset_alloc(&s, 4096, 65536 + 8192, 0, &p), 1);
	EXPECT_EQ(p[0].off, 65536u + 8192);
	free(p);
	/* room for an expected size */
	ASSERT_EQ(extset_alloc(&s, 4096, 0, 40 * 4096, &p), 1);
	EXPECT_GE(p[0].off, 65536u);
	free(p);
	/* too big for any extent: split over the largest ones */
	uint64_t total = s.total;
	int n = extset_alloc(&s, total, 0, 0, &p);
	ASSERT_GT(n, 1);
	uint64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += p[i].len;
	EXPECT_EQ(sum, total);
	free(p);
	EXPECT_EQ(s.total, 0u);
	EXPECT_EQ(extset_alloc(&s, 4096, 0, 0, &p), -ENOSPC);
	EXPECT_TRUE(Contents().empty());
}

TEST_F(AllocTest, EnospcTakesNothing)
{
	extset_insert(&s, 0, 4096);
	extset_insert(&s, 8192, 4096);
	struct pext *p;
	EXPECT_EQ(extset_alloc(&s, 3 * 4096, 0, 0, &p), -ENOSPC);
	EXPECT_EQ(s.total, 8192u);
	EXPECT_EQ(Contents().size(), 2u);
}

TEST_F(AllocTest, RandomAgainstModel)
{
	/* free/alloc at random; the set must equal a byte-level model */
	const uint64_t U = 4096, N = 512;
	std::vector<bool> isfree(N, true);
	extset_insert(&s, 0, N * U);
	uint32_t x = 12345;
	auto rnd = [&]() { x ^= x << 13; x ^= x >> 17; x ^= x << 5; return x; };
	std::vector<std::pair<uint64_t, uint64_t>> held;
	for (int i = 0; i < 5000; i++) {
		if (held.empty() || rnd() % 2) {
			struct pext *p;
			uint64_t len = (rnd() % 8 + 1) * U;
			int n = extset_alloc(&s, len, 0, 0, &p);
			if (n == -ENOSPC)
				continue;
			ASSERT_GT(n, 0);
			for (int j = 0; j < n; j++) {
				uint64_t end = (p[j].off + p[j].len) / U;
				for (uint64_t b = p[j].off / U; b < end; b++) {
					ASSERT_TRUE(isfree[b]);
					isfree[b] = false;
				}
				held.push_back({ p[j].off, p[j].len });
			}
			free(p);
		} else {
			size_t k = rnd() % held.size();
			auto h = held[k];
			held.erase(held.begin() + (long)k);
			ASSERT_EQ(extset_insert(&s, h.first, h.second), 0);
			for (uint64_t b = h.first / U; b < (h.first + h.second) / U; b++)
				isfree[b] = true;
		}
	}
	uint64_t nfree = 0;
	for (bool b : isfree)
		nfree += b;
	EXPECT_EQ(s.total, nfree * U);
	auto m = Contents();
	uint64_t prev_end = UINT64_MAX;
	for (auto &e : m) {
		EXPECT_NE(e.first, prev_end); /* merged */
		for (uint64_t b = e.first / U; b < (e.first + e.second) / U; b++)
			EXPECT_TRUE(isfree[b]);
		prev_end = e.first + e.second;
	}
	EXPECT_GE(extset_frag_score(&s), 0.0);
	EXPECT_LE(extset_frag_score(&s), 1.0);
}

extern "C" {
#include "util.h"
}

/*
 * crc32c: isa-l and the slice-by-8 tables agree with each other and with
 * the standard check value at every length and alignment (rs_crc32c uses
 * whichever is faster on the CPU it runs on).
 */
TEST(Crc32cTest, ImplementationsAgree)
{
	EXPECT_EQ(rs_crc32c_isal("123456789", 9), 0xE3069283u);
	EXPECT_EQ(rs_crc32c_tables("123456789", 9), 0xE3069283u);
	EXPECT_EQ(rs_crc32c("123456789", 9), 0xE3069283u);
	EXPECT_EQ(rs_crc32c_tables("", 0), 0u);
	std::string impl = rs_crc32c_impl();
	EXPECT_TRUE(impl == "isa-l" || impl == "tables") << impl;
	/* the variant names the implementation first (bench output) */
	std::string variant = rs_crc32c_variant();
	EXPECT_EQ(variant.compare(0, impl.size(), impl), 0) << variant;
	/* RAWSTORE_CRC32C forces one (ctest crc32c.tables) */
	const char *env = getenv("RAWSTORE_CRC32C");
	if (env) {
		EXPECT_EQ(impl, env);
	}
	std::vector<uint8_t> b(70000);
	uint32_t x = 12345;
	for (auto &c : b) {
		x = x * 1103515245u + 12345u;
		c = (uint8_t)(x >> 16);
	}
	for (size_t off = 0; off < 8; off++)
		for (size_t len : { 0, 1, 7, 8, 9, 63, 64, 65, 255, 4096, 4097, 65536, 69990 }) {
			if (off + len > b.size())
				continue;
			ASSERT_EQ(rs_crc32c_isal(b.data() + off, len),
				  rs_crc32c_tables(b.data() + off, len))
				<< "off " << off << " len " << len;
		}
}

/*
 * crc32c of A||B from the crcs of A and B: what a device-journal record's
 * data check is made of (the block checksums of a write, combined), at
 * every split and length.
 */
TEST(Crc32cTest, CombineEqualsTheWhole)
{
	std::vector<uint8_t> b(3 * 4096 + 100);
	uint32_t x = 777;
	for (auto &c : b) {
		x = x * 1103515245u + 12345u;
		c = (uint8_t)(x >> 16);
	}
	for (size_t len : { size_t(1), size_t(9), size_t(4096), size_t(3 * 4096 + 100) })
		for (size_t split : { size_t(0), size_t(1), len / 2, len - 1, len }) {
			if (split > len)
				continue;
			uint32_t a = rs_crc32c(b.data(), split);
			uint32_t c = rs_crc32c(b.data() + split, len - split);
			ASSERT_EQ(rs_crc32c_combine(a, c, len - split), rs_crc32c(b.data(), len))
				<< "len " << len << " split " << split;
		}
	/* three 4 KiB blocks, folded one by one as journal_checks does */
	uint32_t op = rs_crc32c_combine_gen(4096);
	uint32_t crc = rs_crc32c(b.data(), 4096);
	for (size_t k = 1; k < 3; k++)
		crc = rs_crc32c_combine_op(crc, rs_crc32c(b.data() + k * 4096, 4096), op);
	EXPECT_EQ(crc, rs_crc32c(b.data(), 3 * 4096));
	EXPECT_NE(crc, rs_crc32c(b.data() + 1, 3 * 4096));
}
