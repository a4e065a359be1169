// Checks the basic lifecycle: mkfs, open, write/read, reopen, statfs, info.
#include "helpers.h"

TEST_F(StoreTest, WriteReadReopen)
{
	ASSERT_EQ(MkColl("c"), 0);
	std::string d = pattern(100000, 1);
	ASSERT_EQ(Write("c", "obj", 0, d), 0);
	EXPECT_EQ(Read("c", "obj", 0, 200000), d);
	EXPECT_EQ(Size("c", "obj"), 100000u);
	Reopen();
	EXPECT_EQ(Read("c", "obj", 0, 200000), d);
	EXPECT_EQ(Read("c", "obj", 5000, 10), d.substr(5000, 10));
	auto s = Statfs();
	EXPECT_EQ(s.objects, 1u);
	EXPECT_EQ(s.collections, 1u);
	EXPECT_EQ(s.allocated, 102400u);
	EXPECT_EQ(s.free + s.allocated, s.data_size);
	ExpectClean();
}

TEST_F(StoreTest, InfoReportsEngine)
{
	struct rawstore_info i;
	i.struct_size = sizeof(i);
	ASSERT_EQ(rawstore_get_info(st, &i), 0);
	EXPECT_TRUE(!strcmp(i.io_engine, "io_uring") || !strcmp(i.io_engine, "libaio"));
	EXPECT_EQ(i.min_alloc_size, 4096u);
	EXPECT_EQ(i.csum_block_size, 4096u);
	EXPECT_EQ(i.device_size, dev_size);
	if (!getenv("RAWSTORE_TEST_JOURNAL")) {
		/* format 2: the device journal, the default, between the
		 * superblocks and the data */
		EXPECT_EQ(i.format_version, 2u);
		EXPECT_STREQ(i.journal, "device");
		EXPECT_EQ(i.journal_offset, 1u << 20);
		EXPECT_GE(i.journal_size, 1u << 20);
		EXPECT_GE(i.data_start, i.journal_offset + i.journal_size);
	} else {
		EXPECT_EQ(i.format_version, journaled(st) ? 2u : 1u);
	}
	EXPECT_EQ(strlen(i.uuid), 36u);
}
