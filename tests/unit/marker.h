// Stale-data markers (issue 13, item 6): the device is filled with a marker
// pattern before mkfs, and reads are searched for it.  A store that hands
// out bytes it never wrote for an object shows the marker.
#ifndef RAWSTORE_TEST_MARKER_H
#define RAWSTORE_TEST_MARKER_H

#include <map>
#include <string>

#include "debug.h"
#include "helpers.h"

static const char rs_marker[] = "RS-STALE-MARKER.";	/* 16 bytes, repeated */

/* Offset of the first 8 bytes of the repeated marker in @s, or npos. */
static inline size_t find_marker(const std::string &s)
{
	size_t best = std::string::npos;

	for (int r = 0; r < 16; r++) {
		char w[8];
		for (int i = 0; i < 8; i++)
			w[i] = rs_marker[(r + i) % 16];
		size_t p = s.find(std::string(w, 8));
		if (p < best)
			best = p;
	}
	return best;
}

/* Fill @path (created, @size bytes) with the marker. */
static inline int fill_marker(const std::string &path, uint64_t size)
{
	int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
	std::string b;

	if (fd < 0)
		return -errno;
	while (b.size() < (1 << 20))
		b += rs_marker;
	for (uint64_t off = 0; off < size; off += b.size())
		if (pwrite(fd, b.data(), b.size(), (off_t)off) != (ssize_t)b.size()) {
			close(fd);
			return -EIO;
		}
	close(fd);
	return 0;
}

/*
 * A store made on a device full of markers.  MRead() and ScanAll() fail
 * the test when a read shows the marker.
 */
class MarkerStoreTest : public StoreTest {
protected:
	void SetUp() override
	{
		dev = tmp.path + "/dev";
		meta = tmp.path + "/meta";
		ASSERT_EQ(fill_marker(dev, dev_size), 0);
		struct rawstore_mkfs_opts mo;
		test_mkfs_opts_init(&mo);
		mo.inline_max = inline_max;
		/* A device that cannot zero cheaply: mkfs leaves the markers in
		 * the free space (dirty), and writes of partial units pad
		 * instead of zeroing ahead, the path most exposed to stale
		 * bytes.  (Zeroed-space policies: test_space.cc.) */
		rs_debug_refuse_space(RS_IO_ZERO | RS_IO_PUNCH);
		int r = rawstore_mkfs(dev.c_str(), meta.c_str(), &mo);
		rs_debug_refuse_space(0);
		ASSERT_EQ(r, 0) << rawstore_errmsg();
		oo.zero_policy = RAWSTORE_ZERO_PAD;
		ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	}
	std::string MRead(const char *c, const std::string &name, uint64_t off, size_t len)
	{
		ssize_t r;
		std::string s = Read(c, name, off, len, &r);
		EXPECT_GE(r, 0) << name;
		size_t p = find_marker(s);
		EXPECT_EQ(p, std::string::npos)
			<< "stale device bytes in " << c << "/" << name << " at " << off + p;
		return s;
	}
	static int ListCb(void *arg, const void *name, size_t nlen)
	{
		static_cast<std::vector<std::string> *>(arg)->emplace_back(
			static_cast<const char *>(name), nlen);
		return 0;
	}
	std::vector<std::string> List(const char *c)
	{
		std::vector<std::string> v;
		EXPECT_GE(rawstore_list(st, c, nullptr, 0, 0, ListCb, &v), 0);
		return v;
	}
	/* Read every object of @c whole (and in odd pieces): no marker anywhere. */
	uint64_t ScanAll(const char *c)
	{
		uint64_t bytes = 0;
		for (auto &n : List(c)) {
			uint64_t size = Size(c, n);
			std::string whole = MRead(c, n, 0, (size_t)size);
			EXPECT_EQ(whole.size(), size) << n;
			for (uint64_t off = 777; off < size; off += 33333)
				MRead(c, n, off, 5000);
			bytes += whole.size();
		}
		return bytes;
	}
};

#endif
