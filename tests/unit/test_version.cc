// Checks the version string and the store-specific error explanations.
#include <cerrno>
#include <cstring>

#include <gtest/gtest.h>

#include "rawstore/rawstore.h"

TEST(Version, MatchesProject)
{
	EXPECT_STREQ(rawstore_version(), "0.1.0");
}

TEST(Strerror, StoreSpecificCodes)
{
	EXPECT_STREQ(rawstore_strerror(-EBADMSG), "data checksum mismatch");
	EXPECT_STREQ(rawstore_strerror(-EUCLEAN), "metadata or superblock is corrupt");
	EXPECT_STREQ(rawstore_strerror(-ENOSPC), strerror(ENOSPC));
}
