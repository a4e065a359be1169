// SPDX-License-Identifier: MIT
// consumer.cc: the public headers from C++, linked against the installed
// library (extern "C" linkage).  Prints the library version.
#include <cstdio>

#include <rawstore/rawstore.h>

int main()
{
	struct rawstore_mkfs_opts o;

	rawstore_mkfs_opts_init(&o);
	std::printf("c++ consumer %s: min_alloc_size %u\n", rawstore_version(), o.min_alloc_size);
	return o.struct_size == sizeof(o) ? 0 : 1;
}
