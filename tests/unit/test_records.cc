// Checks the pure decoders of stored records (store/decode.c) and the
// RocksDB error mapping: every field range-checked, overflow-safe, and a
// refusal names the record (issue 8 items 4 and 6).
#include <array>
#include <string>
#include <vector>

#include <isa-l.h>

#include "helpers.h"

extern "C" {
#include "decode.h"
#include "meta.h"
#include "onode.h"
#include "util.h"
}

static std::string be64s(uint64_t v)
{
	std::string s(8, 0);
	for (int i = 7; i >= 0; i--, v >>= 8)
		s[(size_t)i] = (char)(v & 0xff);
	return s;
}

static std::string le64s(uint64_t v)
{
	std::string s(8, 0);
	for (int i = 0; i < 8; i++, v >>= 8)
		s[(size_t)i] = (char)(v & 0xff);
	return s;
}

static std::string le32s(uint32_t v)
{
	return le64s(v).substr(0, 4);
}

static const struct rs_limits lim = { 1 << 20, 64 << 20, 4096, 4096 };

static int ext(char type, uint64_t off, uint64_t len, struct rs_ext_rec *r)
{
	std::string k = be64s(off), v = le64s(len);
	return decode_ext_rec(type, k.data(), k.size(), v.data(), v.size(), &lim, r);
}

TEST(Records, ExtentRecordDecodes)
{
	struct rs_ext_rec r;
	ASSERT_EQ(ext('F', 1 << 20, 8192, &r), 0);
	EXPECT_EQ(r.off, 1u << 20);
	EXPECT_EQ(r.len, 8192u);
	/* the last unit of the data area */
	ASSERT_EQ(ext('P', (64 << 20) - 4096, 4096, &r), 0);
	EXPECT_EQ(r.len, 4096u);
}

TEST(Records, ExtentRecordRefusesEveryBadField)
{
	struct rs_ext_rec r;
	EXPECT_EQ(ext('F', 1 << 20, 0, &r), -EUCLEAN);                /* empty */
	EXPECT_EQ(ext('F', (1 << 20) + 512, 4096, &r), -EUCLEAN);     /* unaligned offset */
	EXPECT_EQ(ext('F', 1 << 20, 4097, &r), -EUCLEAN);             /* unaligned length */
	EXPECT_EQ(ext('F', 0, 4096, &r), -EUCLEAN);                   /* superblock area */
	EXPECT_EQ(ext('F', 64 << 20, 4096, &r), -EUCLEAN);            /* past the end */
	EXPECT_EQ(ext('F', (64 << 20) - 4096, 8192, &r), -EUCLEAN);   /* runs past the end */
	/* off + len wraps to a small number: an unsafe check would accept it */
	EXPECT_EQ(ext('F', 2 << 20, 0ULL - (1 << 20), &r), -EUCLEAN);
	EXPECT_NE(std::string(rawstore_errmsg()).find("free-list record"), std::string::npos)
		<< rawstore_errmsg();
	EXPECT_EQ(ext('P', 2 << 20, 0ULL - 4096, &r), -EUCLEAN);
	EXPECT_NE(std::string(rawstore_errmsg()).find("unpunched-list record"), std::string::npos)
		<< rawstore_errmsg();
	std::string k = be64s(1 << 20), v = le64s(4096);
	EXPECT_EQ(decode_ext_rec('F', k.data(), 7, v.data(), 8, &lim, &r), -EUCLEAN);
	EXPECT_EQ(decode_ext_rec('F', k.data(), 8, v.data(), 4, &lim, &r), -EUCLEAN);
}

static std::string drec(uint64_t pofs, uint32_t len, uint32_t reserved, size_t data)
{
	return le64s(pofs) + le32s(len) + le32s(reserved) + std::string(data, 'd');
}

TEST(Records, DeferredRecordDecodes)
{
	struct rs_deferred_rec r;
	std::string k = be64s(77), v = drec(2 << 20, 8192, 0, 8192);
	ASSERT_EQ(decode_deferred_rec(k.data(), k.size(), v.data(), v.size(), &lim, &r), 0);
	EXPECT_EQ(r.seq, 77u);
	EXPECT_EQ(r.pofs, 2u << 20);
	EXPECT_EQ(r.len, 8192u);
	EXPECT_EQ(r.data, v.data() + 16);
}

TEST(Records, DeferredRecordRefusesEveryBadField)
{
	struct rs_deferred_rec r;
	std::string k = be64s(1);
	auto dec = [&](const std::string &v) {
		return decode_deferred_rec(k.data(), k.size(), v.data(), v.size(), &lim, &r);
	};
	EXPECT_EQ(dec(drec(2 << 20, 8192, 0, 4096)), -EUCLEAN);  /* short data */
	EXPECT_EQ(dec(drec(2 << 20, 4096, 0, 8192)), -EUCLEAN);  /* trailing bytes */
	EXPECT_EQ(dec(drec(2 << 20, 4096, 1, 4096)), -EUCLEAN);  /* reserved set */
	EXPECT_EQ(dec(drec(2 << 20, 0, 0, 0)), -EUCLEAN);        /* empty */
	EXPECT_EQ(dec(drec((2 << 20) + 512, 4096, 0, 4096)), -EUCLEAN);
	EXPECT_EQ(dec(drec(4096, 4096, 0, 4096)), -EUCLEAN);     /* superblock area */
	EXPECT_EQ(dec(drec(64 << 20, 4096, 0, 4096)), -EUCLEAN); /* past the end */
	/* pofs + len wraps */
	EXPECT_EQ(dec(drec(0ULL - 4096, 8192, 0, 8192)), -EUCLEAN);
	EXPECT_NE(std::string(rawstore_errmsg()).find("deferred-write record 1"), std::string::npos)
		<< rawstore_errmsg();
	EXPECT_EQ(dec(std::string(15, 0)), -EUCLEAN);
	EXPECT_EQ(decode_deferred_rec(k.data(), 9, drec(2 << 20, 4096, 0, 4096).data(), 4112,
				      &lim, &r), -EUCLEAN);
}

TEST(Records, ReferenceRecord)
{
	struct rs_ref_rec r;
	std::string k = be64s(3 << 20), v = le32s(2);
	ASSERT_EQ(decode_ref_rec(k.data(), 8, v.data(), 4, &lim, &r), 0);
	EXPECT_EQ(r.off, 3u << 20);
	EXPECT_EQ(r.extra, 2u);
	std::string zero = le32s(0);
	EXPECT_EQ(decode_ref_rec(k.data(), 8, zero.data(), 4, &lim, &r), -EUCLEAN);
	EXPECT_NE(std::string(rawstore_errmsg()).find("reference record"), std::string::npos);
	std::string bad = be64s((3 << 20) + 100);
	EXPECT_EQ(decode_ref_rec(bad.data(), 8, v.data(), 4, &lim, &r), -EUCLEAN);
	std::string last = be64s(64 << 20);
	EXPECT_EQ(decode_ref_rec(last.data(), 8, v.data(), 4, &lim, &r), -EUCLEAN);
	std::string wrap = be64s(0ULL - 4096);
	EXPECT_EQ(decode_ref_rec(wrap.data(), 8, v.data(), 4, &lim, &r), -EUCLEAN);
	EXPECT_EQ(decode_ref_rec(k.data(), 8, v.data(), 3, &lim, &r), -EUCLEAN);
}

TEST(Records, CountsRecord)
{
	struct rs_counts_rec c;
	std::string v = le64s(5) + le64s(2);
	ASSERT_EQ(decode_counts_rec(v.data(), v.size(), &c), 0);
	EXPECT_EQ(c.objects, 5u);
	EXPECT_EQ(c.collections, 2u);
	EXPECT_EQ(decode_counts_rec(v.data(), 15, &c), -EUCLEAN);
	EXPECT_NE(std::string(rawstore_errmsg()).find("counts record"), std::string::npos);
	EXPECT_EQ(decode_counts_rec((v + "x").data(), 17, &c), -EUCLEAN);
}

TEST(Records, RocksdbErrorsMapToTheirErrno)
{
	EXPECT_EQ(rs_db_errno("Corruption: block checksum mismatch: stored = 1, computed = 2"
				 "  in /m/000009.sst offset 0 size 100"), -EUCLEAN);
	EXPECT_EQ(rs_db_errno("IO error: While lock file: /m/LOCK: Resource temporarily "
				 "unavailable"), -EBUSY);
	EXPECT_EQ(rs_db_errno("IO error: lock hold by current process, acquire time 1 "
				 "acquiring thread 2: /m/LOCK: No locks available"), -EBUSY);
	EXPECT_EQ(rs_db_errno("Invalid argument: /m/CURRENT: does not exist "
				 "(create_if_missing is false)"), -ENOENT);
	EXPECT_EQ(rs_db_errno("Invalid argument: /m: exists (error_if_exists is true)"),
		  -EEXIST);
	/* a full file system under the metadata is reported as such (issue 13) */
	EXPECT_EQ(rs_db_errno("IO error: No space left on device"), -ENOSPC);
	EXPECT_EQ(rs_db_errno("IO error: While appending to file: /m/000007.log: "
				 "Input/output error"), -EIO);
	/* "block" contains "lock": corruption must never read as busy */
	EXPECT_EQ(rs_db_errno("Corruption: bad block contents"), -EUCLEAN);
}

/* An encoded onode with extents {lofs, pofs, len} (crcs are zero). */
static std::string onode_rec(uint64_t nid, uint64_t size,
			     std::vector<std::array<uint64_t, 3>> exts, uint32_t inline_len = 0)
{
	struct rs_onode o;
	memset(&o, 0, sizeof(o));
	o.nid = nid;
	o.size = size;
	std::vector<struct rs_extent> ev;
	std::vector<std::vector<uint32_t>> crcs;
	for (auto &e : exts) {
		crcs.emplace_back(e[2] / 4096 + 1, 0);
		ev.push_back({ e[0], e[1], (uint32_t)e[2], crcs.back().data() });
	}
	std::string inl(inline_len, 'i');
	o.inl = (uint8_t *)inl.data();
	o.inline_len = inline_len;
	o.ext = ev.data();
	o.n_ext = (uint32_t)ev.size();
	char *buf;
	size_t len;
	EXPECT_EQ(onode_encode(&o, 4096, &buf, &len), 0);
	std::string r(buf, len);
	free(buf);
	return r;
}

static int dec(const std::string &r)
{
	struct rs_onode o;
	int ret = onode_decode(r.data(), r.size(), &lim, &o);
	if (!ret)
		onode_free(&o);
	return ret;
}

TEST(Records, OnodeDecodesAValidRecord)
{
	std::string r = onode_rec(7, 20000, { { 0, 1 << 20, 8192 }, { 8192, 3 << 20, 12288 } });
	struct rs_onode o;
	ASSERT_EQ(onode_decode(r.data(), r.size(), &lim, &o), 0) << rawstore_errmsg();
	EXPECT_EQ(o.nid, 7u);
	EXPECT_EQ(o.size, 20000u);
	ASSERT_EQ(o.n_ext, 2u);
	EXPECT_EQ(o.ext[1].lofs, 8192u);
	EXPECT_EQ(o.ext[1].pofs, 3u << 20);
	EXPECT_EQ(o.ext[1].len, 12288u);
	onode_free(&o);
	EXPECT_EQ(dec(onode_rec(8, 100, {}, 100)), 0);
	/* the last unit of the data area */
	EXPECT_EQ(dec(onode_rec(9, 4096, { { 0, (64 << 20) - 4096, 4096 } })), 0);
}

/* issue 8 item 6: a record with a valid crc is still checked field by field. */
TEST(Records, OnodeRefusesBadExtentsUnderAValidCrc)
{
	struct Case {
		const char *what;
		std::string rec;
	} cases[] = {
		{ "in the superblock area", onode_rec(1, 4096, { { 0, 4096, 4096 } }) },
		{ "past the data area", onode_rec(1, 4096, { { 0, 64 << 20, 4096 } }) },
		{ "running past the data area",
		  onode_rec(1, 8192, { { 0, (64 << 20) - 4096, 8192 } }) },
		/* pofs + len wraps to 4096: "pofs + len > end" would accept it */
		{ "wrapping", onode_rec(1, 8192, { { 0, 0ULL - 4096, 8192 } }) },
		{ "unaligned device offset", onode_rec(1, 4096, { { 0, (1 << 20) + 512, 4096 } }) },
		{ "unaligned object offset", onode_rec(1, 8192, { { 512, 1 << 20, 4096 } }) },
		{ "empty", onode_rec(1, 4096, { { 0, 1 << 20, 0 } }) },
		{ "unsorted", onode_rec(1, 16384, { { 8192, 1 << 20, 4096 }, { 0, 2 << 20, 4096 } }) },
		{ "overlapping",
		  onode_rec(1, 16384, { { 0, 1 << 20, 8192 }, { 4096, 2 << 20, 4096 } }) },
		{ "past the size", onode_rec(1, 4096, { { 4096, 1 << 20, 4096 } }) },
		{ "object id 0", onode_rec(0, 4096, { { 0, 1 << 20, 4096 } }) },
		{ "inline and extents", onode_rec(1, 4096, { { 0, 1 << 20, 4096 } }, 10) },
		{ "inline past the size", onode_rec(1, 5, {}, 10) },
		{ "size beyond the limit", onode_rec(1, RAWSTORE_OBJECT_MAX + 1, {}) },
	};
	for (auto &c : cases) {
		EXPECT_EQ(dec(c.rec), -EUCLEAN) << c.what;
		EXPECT_NE(std::string(rawstore_errmsg()).find("object record"), std::string::npos)
			<< c.what << ": " << rawstore_errmsg();
	}
}

static void reseal(std::string &r)
{
	uint32_t c = ~crc32_iscsi((unsigned char *)r.data(), (int)r.size() - 4, 0xffffffffu);
	memcpy(&r[r.size() - 4], &c, 4);
}

TEST(Records, OnodeRefusesBadHeaderFieldsAndLengths)
{
	std::string good = onode_rec(3, 8192, { { 0, 1 << 20, 8192 } });
	ASSERT_EQ(dec(good), 0);
	std::string r = good;
	r[0] = 2; /* version */
	reseal(r);
	EXPECT_EQ(dec(r), -EUCLEAN);
	r = good;
	r[1] = 1; /* flags */
	reseal(r);
	EXPECT_EQ(dec(r), -EUCLEAN);
	r = good;
	r[4] = 2; /* two extents claimed, one present */
	reseal(r);
	EXPECT_EQ(dec(r), -EUCLEAN);
	r = good;
	r[4] = (char)0xff; /* 0xffffffff extents: the size check must not wrap */
	r[5] = r[6] = r[7] = (char)0xff;
	reseal(r);
	EXPECT_EQ(dec(r), -EUCLEAN);
	r = good;
	memset(&r[32], 0xff, 4); /* inline_len 4 GiB - 1 */
	reseal(r);
	EXPECT_EQ(dec(r), -EUCLEAN);
	r = good;
	r[40 + 20] = 1; /* extent reserved */
	reseal(r);
	EXPECT_EQ(dec(r), -EUCLEAN);
	r = good;
	r.insert(r.size() - 4, "x"); /* trailing byte */
	reseal(r);
	EXPECT_EQ(dec(r), -EUCLEAN);
	r = good;
	r[10] ^= 1; /* crc no longer matches */
	EXPECT_EQ(dec(r), -EUCLEAN);
	EXPECT_NE(std::string(rawstore_errmsg()).find("crc"), std::string::npos);
	EXPECT_EQ(dec(good.substr(0, 43)), -EUCLEAN);
}
