// What a path holds, to prove that something wrote nothing: for the path
// and every file under it, its name, size, mode, mtime (ns) and content.
#ifndef RAWSTORE_TEST_TREE_STATE_H
#define RAWSTORE_TEST_TREE_STATE_H

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "helpers.h"

extern "C" {
#include "debug.h"
}

static inline std::string tree_state(const std::string &path)
{
	struct stat sb;
	if (lstat(path.c_str(), &sb))
		return path + ": missing\n";
	std::string s = path + " " + std::to_string(sb.st_size) + " " +
			std::to_string(sb.st_mode) + " " + std::to_string(sb.st_mtim.tv_sec) +
			"." + std::to_string(sb.st_mtim.tv_nsec) + "\n";
	if (S_ISDIR(sb.st_mode)) {
		std::vector<std::string> names;
		DIR *d = opendir(path.c_str());
		while (d) {
			struct dirent *e = readdir(d);
			if (!e)
				break;
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				names.push_back(e->d_name);
		}
		if (d)
			closedir(d);
		std::sort(names.begin(), names.end());
		for (auto &n : names)
			s += tree_state(path + "/" + n);
	} else if (S_ISREG(sb.st_mode) || S_ISBLK(sb.st_mode)) {
		/* the content, as a crc per MiB (sparse 64 MiB files read fast) */
		FILE *f = fopen(path.c_str(), "rb");
		std::string buf(1 << 20, 0);
		size_t n;
		uint32_t h = 0;
		int i = 0;
		while (f && (n = fread(&buf[0], 1, buf.size(), f)) > 0) {
			for (size_t j = 0; j < n; j++)
				h = h * 31 + (unsigned char)buf[j];
			s += " " + std::to_string(i++) + ":" + std::to_string(h);
		}
		if (f)
			fclose(f);
		s += "\n";
	}
	return s;
}

/*
 * Leave deferred-write records pending on the store at dev/meta: a child
 * opens it, overwrites @len bytes of coll/name at @off (a deferred write)
 * and dies after the commit, before the write reaches the device.
 */
static inline void leave_pending_deferred(const std::string &dev, const std::string &meta,
					  const char *coll, const std::string &name,
					  uint64_t off, const std::string &data)
{
	pid_t pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct rawstore *s;
		if (rawstore_open(dev.c_str(), meta.c_str(), nullptr, &s))
			_exit(1);
		rs_debug_set_crash_point(RS_CRASH_BEFORE_DEFERRED, 1);
		struct rawstore_txn *t;
		rawstore_txn_new(&t);
		rawstore_txn_write(t, coll, name.data(), name.size(), off, data.data(),
				   data.size());
		rawstore_submit(s, t);
		/* a crash point after the acknowledgement (the device
		 * journal's deferred writes) is reached before close returns */
		rawstore_close(s);
		_exit(0);
	}
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), RS_CRASH_EXIT);
}

#endif
