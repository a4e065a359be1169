// SPDX-License-Identifier: MIT
/*
 * rawstore_grow (issue 41): a grown device's space joins the store (free,
 * dirty, unpunched), survives a reopen and is used; a size below the
 * store's is refused (never shrinks), as is one past the device; a crash
 * after the metadata recorded the new size and before the device
 * superblocks is finished by the next open; fsck stays clean.
 */
#include <sys/wait.h>

#include "debug.h"
#include "helpers.h"

class GrowTest : public StoreTest {
protected:
	void Resize(uint64_t size)
	{
		ASSERT_EQ(truncate(dev.c_str(), (off_t)size), 0);
	}
};

/* The new 64 MiB become free space and hold a 80 MiB object that could not
 * fit before; everything reads back after a reopen. */
TEST_F(GrowTest, GrownDeviceSpaceIsUsed)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "a", 0, pattern(1 << 20, 1)), 0);
	struct rawstore_statfs s0 = Statfs();
	std::string big = pattern(80 << 20, 2);
	EXPECT_EQ(Write("c", "big", 0, big), -ENOSPC);
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	Resize(dev_size * 2);
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_EQ(Statfs().data_size, s0.data_size) << "a grown device is used without grow";
	uint64_t now = 0;
	ASSERT_EQ(rawstore_grow(st, 0, &now), 0) << rawstore_errmsg();
	EXPECT_EQ(now, dev_size * 2);
	struct rawstore_statfs s1 = Statfs();
	EXPECT_EQ(s1.device_size, dev_size * 2);
	EXPECT_EQ(s1.data_size - s0.data_size, dev_size);
	EXPECT_EQ(s1.free - s0.free, dev_size);
	EXPECT_GE(s1.unpunched - s0.unpunched, dev_size);
	/* again: nothing to do */
	ASSERT_EQ(rawstore_grow(st, 0, &now), 0);
	EXPECT_EQ(Statfs().data_size, s1.data_size);
	ASSERT_EQ(Write("c", "big", 0, big), 0) << rawstore_errmsg();
	Reopen();
	EXPECT_EQ(Statfs().device_size, dev_size * 2);
	EXPECT_TRUE(Read("c", "big", 0, big.size()) == big);
	EXPECT_TRUE(Read("c", "a", 0, 1 << 20) == pattern(1 << 20, 1));
	ExpectClean();
}

/* A store never shrinks, nor grows past its device; read-only cannot grow. */
TEST_F(GrowTest, ShrinkAndPastTheDeviceAreRefused)
{
	EXPECT_EQ(rawstore_grow(st, dev_size / 2, nullptr), -EINVAL);
	EXPECT_NE(std::string(rawstore_errmsg()).find("never shrinks"), std::string::npos)
		<< rawstore_errmsg();
	EXPECT_EQ(rawstore_grow(st, dev_size * 2, nullptr), -EINVAL);
	EXPECT_NE(std::string(rawstore_errmsg()).find("more than the device"), std::string::npos)
		<< rawstore_errmsg();
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	Resize(dev_size * 2);
	oo.read_only = 1;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_EQ(rawstore_grow(st, 0, nullptr), -EROFS);
	EXPECT_EQ(Statfs().device_size, dev_size);
}

/* Killed after the metadata recorded the new size, before the device
 * superblocks: the next open finishes the grow. */
TEST_F(GrowTest, CrashBeforeTheSuperblocksIsFinishedAtOpen)
{
	ASSERT_EQ(MkColl("c"), 0);
	ASSERT_EQ(Write("c", "a", 0, pattern(70000, 3)), 0);
	ASSERT_EQ(rawstore_close(st), 0);
	st = nullptr;
	Resize(dev_size * 2);
	pid_t pid = fork();
	if (pid == 0) {
		struct rawstore *s;
		if (rawstore_open(dev.c_str(), meta.c_str(), &oo, &s))
			_exit(1);
		rs_debug_set_crash_point(RS_CRASH_GROW_SUPER, 1);
		rawstore_grow(s, 0, nullptr);
		_exit(2);
	}
	int status = 0;
	waitpid(pid, &status, 0);
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == RS_CRASH_EXIT) << status;
	ASSERT_EQ(Open(), 0) << rawstore_errmsg();
	EXPECT_EQ(Statfs().device_size, dev_size * 2);
	EXPECT_TRUE(Read("c", "a", 0, 70000) == pattern(70000, 3));
	ExpectClean();
	Reopen();	/* the device superblocks were rewritten: a plain open */
	EXPECT_EQ(Statfs().device_size, dev_size * 2);
	ASSERT_EQ(Write("c", "big", 0, pattern(80 << 20, 4)), 0) << rawstore_errmsg();
	ExpectClean();
}
