// SPDX-License-Identifier: MIT
/*
 * t_nohide_stale: fallocate(FALLOC_FL_NO_HIDE_STALE) as kernel patches
 * 0001 (VFS admits the flag, everyone else refuses it) and 0002 (ext4,
 * gated by nohide_stale_gid=N) define it:
 *  gate    ext4: EOPNOTSUPP without the mount option; with it EPERM for a
 *          user outside the group without CAP_SYS_RAWIO, success for group
 *          members (supplementary or primary) and for CAP_SYS_RAWIO; the
 *          option is shown in /proc/mounts, survives remount, moves to
 *          another gid or is turned off ("none") by remount; mode
 *          combinations give their documented errors; block-mapped
 *          (non-extent) files get EOPNOTSUPP;
 *  fiemap  ext4: no FIEMAP_EXTENT_UNWRITTEN after NO_HIDE_STALE, unwritten
 *          after plain fallocate, unwritten extents in the range become
 *          written, written and dirty data are kept, i_size/i_blocks/free
 *          blocks are right, all of it survives umount/mount, e2fsck is
 *          clean;
 *  stale   ext4: a deleted file's blocks read back through a NO_HIDE_STALE
 *          file (and never a live file's), plain fallocate reads zeros,
 *          and cached zero pages (hole, unwritten) are dropped;
 *  jbd2    ext4: first 4 KiB O_DIRECT|O_DSYNC writes into each block of a
 *          NO_HIDE_STALE range commit no jbd2 transaction, the same writes
 *          into a plainly preallocated range commit one each;
 *  quota   ext4 (quota feature): the allocation is charged to the caller's
 *          quota once, conversion charges nothing, the hard limit gives
 *          EDQUOT, deleting returns it all, e2fsck agrees;
 *  other   xfs and tmpfs refuse the flag (EOPNOTSUPP; EINVAL with
 *          ZERO_RANGE) and change nothing;
 *  overlay overlayfs over a gated ext4 refuses it (EOPNOTSUPP) for root and
 *          group members alike, allocating nothing in the upper file;
 *  edges   ext4: nohide_stale_gid= in the image's s_mount_opts is ignored;
 *          an fd passed over SCM_RIGHTS needs both its opener and the
 *          caller to pass the gate; a file is refused unless the caller
 *          owns it or holds CAP_SYS_RAWIO, whatever its mode (0664, 0660,
 *          0620, and 0220 and 0020, which its owner can chmod u+r), for
 *          root-owned files and those of another unprivileged member; an
 *          unprivileged owner in the group may (0220, 0664);
 *          root in a user namespace gets EPERM; IORING_OP_FALLOCATE
 *          obeys the gate; setuid/setgid bits are
 *          stripped; append-only and immutable files refuse it; overlayfs
 *          over a gated ext4 refuses it (the VFS opt-in);
 *  journal ext4 data=journal: dirty journaled pages over the range are
 *          kept and written, extents written, survives umount, e2fsck;
 * variants ext4 with 1 KiB blocks and with bigalloc (written extents, data
 *          kept, unaligned ends, e2fsck), and ENOSPC part way through a
 *          range (what was allocated is written and within i_size, e2fsck);
 * concurrent ext4: NO_HIDE_STALE over a range, called again and again
 *          while an mmap writer rewrites one part of it and AIO direct
 *          writes are in flight to another: no call fails, both parts
 *          hold exactly the last data written (write-back and page-cache
 *          truncation lose no store), no unwritten extent is left, e2fsck
 *          is clean;
 *  tail    ext4: NO_HIDE_STALE(0, 5000) over deleted data (or (0, 4600) in
 *          a file already 5000 bytes long): block 0 is the deleted data,
 *          block 1, which holds EOF, is one unwritten extent and reads
 *          zeros, before and after a truncate up or a write past EOF
 *          (buffered, O_DIRECT, after remount); e2fsck;
 * taileio  ext4 on dm-linear: the same with every I/O to the EOF block
 *          failing (dm-error): the call succeeds and the block stays
 *          unwritten (it is never read or zeroed); e2fsck;
 *  subpage ext4 with 1 KiB blocks: NO_HIDE_STALE of written blocks at a start
 *          that is not page-aligned keeps the cached data (buffered read),
 *          and an mmap write into that page stores no zeros (after remount);
 *  idmap   ext4 through an idmapped mount (uid 1000 on disk seen as 2000):
 *          on a 0660 file uid 2000 is the owner and may, uid 1000 is not
 *          and gets EPERM (and the reverse on the plain mount);
 *  blkdev  a block device: PUNCH_HOLE|KEEP_SIZE|NO_HIDE_STALE is a plain
 *          discard (0 with discard, EOPNOTSUPP without), the rest of the
 *          device is untouched, the page cache is dropped (kept, dirty
 *          pages included, when the device cannot discard); every other
 *          combination with the flag is refused.
 *
 * Usage: t_nohide_stale gate|fiemap|stale|jbd2|quota|overlay|edges|journal|variants|
 *                       concurrent|tail|taileio|subpage|idmap DEVICE MOUNTPOINT
 *        t_nohide_stale other DEVICE MOUNTPOINT   (mkfs.xfs on DEVICE)
 *        t_nohide_stale blkdev DEVICE
 * DESTROYS the data on DEVICE.  Needs group rsstale (gid 1001) and user
 * rsuser (uid 1000), as the guest has them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/quota.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ktest.h"

#define BS 4096u

#define NHS FALLOC_FL_NO_HIDE_STALE
#define KEEP FALLOC_FL_KEEP_SIZE
#define PUNCH FALLOC_FL_PUNCH_HOLE
#define ZERO FALLOC_FL_ZERO_RANGE

#define STALE_GID 1001
#define USER_UID 1000
#define USER_GID 1000
#define OTHER_UID 2000

static const char *dev, *mnt;
static char opt_gid[64];

/* ---- set-up helpers ---- */

static void mkfs_ext4(const char *size, const char *extra)
{
	if (kt_sh("mkfs.ext4 -q -F -b 4096 -E nodiscard %s %s %s > /tmp/nhs-mkfs.log 2>&1", extra,
		  dev, size)) {
		kt_sh("sed 's/^/# mkfs.ext4: /' /tmp/nhs-mkfs.log | head -5");
		kt_fatal("mkfs.ext4 %s %s failed", extra, dev);
	}
}

static int do_mount(const char *fstype, const char *opts)
{
	return mount(dev, mnt, fstype, 0, opts) ? -errno : 0;
}

static void mount_or_die(const char *fstype, const char *opts)
{
	int rc = do_mount(fstype, opts);

	if (rc)
		kt_fatal("mount -t %s -o '%s' %s %s: %s", fstype, opts, dev, mnt, kt_errname(rc));
}

/*
 * Mount ext4 with nohide_stale_gid.  The guest boots the patched kernel, so
 * an unknown option is a broken series: fail, never skip.
 */
static void mount_gated(const char *more)
{
	char opts[256];
	int rc;

	snprintf(opts, sizeof(opts), "%s%s%s", opt_gid, *more ? "," : "", more);
	rc = do_mount("ext4", opts);
	if (rc == -EINVAL && do_mount("ext4", more) == 0) {
		umount(mnt);
		kt_fatal("ext4 rejects the nohide_stale_gid mount option: kernel patch 0002 "
			 "missing or broken");
	}
	if (rc)
		kt_fatal("mount -t ext4 -o '%s' %s %s: %s", opts, dev, mnt, kt_errname(rc));
}

/* The VFS admits the flag (patch 0001): ZERO_RANGE with it is EINVAL; else fail. */
static void probe_vfs(void)
{
	const char *path = "/tmp/nhs-probe";
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	int rc;

	if (fd < 0)
		kt_fatal("create %s: %s", path, strerror(errno));
	rc = kt_fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_NO_HIDE_STALE, 0, 4096);
	close(fd);
	unlink(path);
	if (rc != -EINVAL)
		kt_fatal("ZERO_RANGE|NO_HIDE_STALE on tmpfs gives %s, not EINVAL: kernel patch 0001 "
			 "missing or broken", kt_errname(rc));
}

static void umount_or_die(void)
{
	if (umount(mnt))
		kt_fatal("umount %s: %s", mnt, strerror(errno));
}

static int remount(const char *opts)
{
	return mount(NULL, mnt, NULL, MS_REMOUNT, opts) ? -errno : 0;
}

/* The options /proc/mounts shows for mnt, into buf; false if not mounted. */
static bool mount_opts(char *buf, size_t size)
{
	char line[512], m[PATH_MAX], o[400];
	bool found = false;
	FILE *f = fopen("/proc/mounts", "r");

	if (!f)
		kt_fatal("/proc/mounts: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %4095s %*s %399s", m, o) == 2 && !strcmp(m, mnt)) {
			snprintf(buf, size, "%s", o);
			found = true;
		}
	fclose(f);
	return found;
}

static char *path_in(const char *name)
{
	static char buf[4][PATH_MAX];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", mnt, name);
	return buf[i];
}

/*
 * A file rsuser owns (the gate lets group members expose stale data only in
 * files nobody else can read, unless they own them), writable by everyone.
 */
static int create_file(const char *name, int flags)
{
	int fd = open(path_in(name), O_RDWR | O_CREAT | O_TRUNC | flags, 0666);

	if (fd < 0 || fchown(fd, USER_UID, USER_GID) || fchmod(fd, 0666))
		kt_fatal("create %s: %s", path_in(name), strerror(errno));
	return fd;
}

static struct stat fstat_or_die(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		kt_fatal("fstat: %s", strerror(errno));
	return st;
}

static uint64_t free_blocks(void)
{
	struct statfs sf;

	if (statfs(mnt, &sf))
		kt_fatal("statfs %s: %s", mnt, strerror(errno));
	return sf.f_bfree * (sf.f_bsize / BS);
}

static int open_direct(const char *name);

/* ---- credentials: run fallocate in a child with other ids ---- */

enum caps {
	CAPS_DEFAULT,		/* root: all; another uid: none */
	CAPS_RAWIO_ONLY,	/* another uid holding CAP_SYS_RAWIO and nothing else */
	CAPS_ALL_BUT_RAWIO,	/* root without CAP_SYS_RAWIO */
};

struct ids {
	const char *name;
	uid_t uid;
	gid_t gid;
	int ngroups;
	gid_t groups[2];
	enum caps caps;
};

/* The effective capability set of this process, from /proc/self/status. */
static unsigned long long cap_eff(void)
{
	char st[4096], *cap;

	if (kt_read_file("/proc/self/status", st, sizeof(st)) < 0 ||
	    !(cap = strstr(st, "CapEff:")))
		return ~0ull;
	return strtoull(cap + 7, NULL, 16);
}

/* Set the permitted and effective capability sets to mask (capset(2)). */
static int set_caps(unsigned long long mask)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	d[0].effective = d[0].permitted = (uint32_t)mask;
	d[1].effective = d[1].permitted = (uint32_t)(mask >> 32);
	return (int)syscall(SYS_capset, &h, d);
}

#define RAWIO_BIT (1ull << CAP_SYS_RAWIO)

/* Fallocate path as ids with the capabilities who->caps asks for; 0 or -errno. */
static int fallocate_as(const struct ids *who, const char *path, int mode, uint64_t off,
			uint64_t len)
{
	int status, fd, rc;
	pid_t pid = fork();

	if (pid < 0)
		kt_fatal("fork: %s", strerror(errno));
	if (pid == 0) {
		unsigned long long root_caps = cap_eff();

		/* Keep the permitted set across setresuid for CAPS_RAWIO_ONLY. */
		if (who->caps == CAPS_RAWIO_ONLY && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
			_exit(203);
		if (setgroups(who->ngroups, who->groups) || setresgid(who->gid, who->gid, who->gid) ||
		    setresuid(who->uid, who->uid, who->uid))
			_exit(200);
		if (who->caps == CAPS_RAWIO_ONLY && set_caps(RAWIO_BIT))
			_exit(203);
		if (who->caps == CAPS_ALL_BUT_RAWIO && set_caps(root_caps & ~RAWIO_BIT))
			_exit(203);
		/* The capabilities must be exactly the ones asked for. */
		switch (who->caps) {
		case CAPS_DEFAULT:
			if (who->uid && cap_eff() != 0)
				_exit(202);
			break;
		case CAPS_RAWIO_ONLY:
			if (!who->uid || cap_eff() != RAWIO_BIT)
				_exit(202);
			break;
		case CAPS_ALL_BUT_RAWIO:
			if (who->uid || (cap_eff() & RAWIO_BIT) || cap_eff() != (root_caps & ~RAWIO_BIT))
				_exit(202);
			break;
		}
		fd = open(path, O_RDWR);
		if (fd < 0)
			_exit(201);
		rc = kt_fallocate(fd, mode, off, len);
		_exit(rc < 0 ? -rc : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		kt_fatal("child for %s died", who->name);
	switch (WEXITSTATUS(status)) {
	case 200: kt_fatal("%s: could not switch ids", who->name);
	case 201: kt_fatal("%s: could not open %s", who->name, path);
	case 202: kt_fatal("%s: the capability set is not the one asked for", who->name);
	case 203: kt_fatal("%s: could not set the capabilities (prctl/capset)", who->name);
	}
	return -WEXITSTATUS(status);
}

static const struct ids root_nogroup = { "root, no supplementary groups (CAP_SYS_RAWIO)", 0, 0, 0,
					 { 0 }, CAPS_DEFAULT };
static const struct ids outsider = { "rsuser, not in rsstale, no capabilities", USER_UID, USER_GID,
				     0, { 0 }, CAPS_DEFAULT };
static const struct ids member = { "rsuser with supplementary group rsstale", USER_UID, USER_GID,
				   1, { STALE_GID }, CAPS_DEFAULT };
static const struct ids other_member = { "uid 2000 with supplementary group rsstale", OTHER_UID,
					 OTHER_UID, 1, { STALE_GID }, CAPS_DEFAULT };
static const struct ids primary = { "rsuser with primary group rsstale", USER_UID, STALE_GID, 0,
				    { 0 }, CAPS_DEFAULT };
static const struct ids rawio_user = { "rsuser, not in rsstale, holding only CAP_SYS_RAWIO",
				       USER_UID, USER_GID, 0, { 0 }, CAPS_RAWIO_ONLY };
static const struct ids root_norawio = { "root, no supplementary groups, without CAP_SYS_RAWIO",
					 0, 0, 0, { 0 }, CAPS_ALL_BUT_RAWIO };

/* ---- gate ---- */

static void test_gate(void)
{
	char opts[400];
	int fd, rc;
	struct stat st;

	mkfs_ext4("256M", "");
	mount_or_die("ext4", "");
	fd = create_file("f", 0);
	kt_expect_eq(kt_fallocate(fd, NHS, 0, MiB), -EOPNOTSUPP,
		     "without nohide_stale_gid: NO_HIDE_STALE as root");
	kt_expect_eq(kt_fallocate(fd, NHS, 0, MiB), -EOPNOTSUPP,
		     "without nohide_stale_gid: NO_HIDE_STALE as root (again, nothing cached)");
	st = fstat_or_die(fd);
	kt_check(st.st_size == 0 && st.st_blocks == 0, "refused request allocated nothing (size %lld, "
		 "blocks %lld)", (long long)st.st_size, (long long)st.st_blocks);
	close(fd);
	umount_or_die();

	kt_expect_eq(do_mount("ext4", "nohide_stale_gid=4294967295"), -EINVAL,
		     "mount with nohide_stale_gid=4294967295 (invalid gid)");
	mount_gated("");
	kt_check(mount_opts(opts, sizeof(opts)) && strstr(opts, "nohide_stale_gid=1001"),
		 "/proc/mounts shows nohide_stale_gid=1001 (%s)", opts);
	if (chmod(mnt, 0777))
		kt_fatal("chmod %s: %s", mnt, strerror(errno));
	fd = create_file("f", 0);
	if (fchown(fd, USER_UID, USER_GID))
		kt_fatal("fchown: %s", strerror(errno));
	close(fd);

	rc = fallocate_as(&outsider, path_in("f"), NHS, 0, MiB);
	kt_expect_eq(rc, -EPERM, "%s", outsider.name);
	fd = open(path_in("f"), O_RDONLY);
	st = fstat_or_die(fd);
	kt_check(st.st_size == 0 && st.st_blocks == 0,
		 "EPERM allocated nothing (size %lld, blocks %lld)", (long long)st.st_size,
		 (long long)st.st_blocks);
	kt_expect_eq(kt_fallocate(fd, NHS, 0, MiB), -EBADF, "NO_HIDE_STALE on a read-only fd");
	close(fd);
	kt_expect_eq(fallocate_as(&outsider, path_in("f"), NHS | KEEP, 0, MiB), -EOPNOTSUPP,
		     "%s, NO_HIDE_STALE|KEEP_SIZE (the mode is checked first)", outsider.name);
	kt_expect_eq(fallocate_as(&outsider, path_in("f"), 0, 0, 64 * KiB), 0,
		     "%s, plain fallocate still works", outsider.name);
	kt_expect_eq(fallocate_as(&member, path_in("f"), NHS, 0, MiB), 0, "%s", member.name);
	kt_expect_eq(fallocate_as(&primary, path_in("f"), NHS, MiB, MiB), 0, "%s", primary.name);
	kt_expect_eq(fallocate_as(&root_nogroup, path_in("f"), NHS, 2 * MiB, MiB), 0, "%s",
		     root_nogroup.name);
	/* The capability, not root: a plain user holding only it passes, root without it not. */
	kt_expect_eq(fallocate_as(&root_norawio, path_in("f"), NHS, 3 * MiB, MiB), -EPERM, "%s",
		     root_norawio.name);
	fd = open(path_in("f"), O_RDONLY);
	st = fstat_or_die(fd);
	close(fd);
	kt_check(st.st_size == (off_t)(3 * MiB) && st.st_blocks * 512 == (off_t)(3 * MiB),
		 "EPERM for root without CAP_SYS_RAWIO allocated nothing (size %lld, %lld bytes)",
		 (long long)st.st_size, (long long)st.st_blocks * 512);
	kt_expect_eq(fallocate_as(&rawio_user, path_in("f"), NHS, 3 * MiB, MiB), 0, "%s",
		     rawio_user.name);
	fd = open(path_in("f"), O_RDWR);
	st = fstat_or_die(fd);
	kt_check(st.st_size == (off_t)(4 * MiB), "size is 4 MiB after four 1 MiB requests (%lld)",
		 (long long)st.st_size);

	{
		static const struct { const char *name; int mode; int want; } combos[] = {
			{ "NO_HIDE_STALE|KEEP_SIZE", NHS | KEEP, -EOPNOTSUPP },
			{ "PUNCH_HOLE|KEEP_SIZE|NO_HIDE_STALE", PUNCH | KEEP | NHS, -EOPNOTSUPP },
			{ "PUNCH_HOLE|NO_HIDE_STALE", PUNCH | NHS, -EOPNOTSUPP },
			{ "ZERO_RANGE|NO_HIDE_STALE", ZERO | NHS, -EINVAL },
			{ "ZERO_RANGE|KEEP_SIZE|NO_HIDE_STALE", ZERO | KEEP | NHS, -EINVAL },
			{ "COLLAPSE_RANGE|NO_HIDE_STALE", FALLOC_FL_COLLAPSE_RANGE | NHS, -EINVAL },
			{ "INSERT_RANGE|NO_HIDE_STALE", FALLOC_FL_INSERT_RANGE | NHS, -EINVAL },
			{ "UNSHARE_RANGE|NO_HIDE_STALE", FALLOC_FL_UNSHARE_RANGE | NHS, -EINVAL },
			{ "UNSHARE_RANGE|KEEP_SIZE|NO_HIDE_STALE",
			  FALLOC_FL_UNSHARE_RANGE | KEEP | NHS, -EINVAL },
		};

		for (size_t i = 0; i < sizeof(combos) / sizeof(combos[0]); i++)
			kt_expect_eq(kt_fallocate(fd, combos[i].mode, 5 * MiB, MiB), combos[i].want,
				     "%s", combos[i].name);
		st = fstat_or_die(fd);
		kt_check(st.st_size == (off_t)(4 * MiB) && st.st_blocks * 512 == (off_t)(4 * MiB),
			 "refused combinations changed nothing (size %lld, %lld bytes allocated)",
			 (long long)st.st_size, (long long)st.st_blocks * 512);
	}
	close(fd);

	/* A remount without the option keeps it; naming another gid moves it. */
	kt_expect_eq(remount("commit=30"), 0, "remount with commit=30 only");
	kt_check(mount_opts(opts, sizeof(opts)) && strstr(opts, "nohide_stale_gid=1001"),
		 "after remount /proc/mounts still shows nohide_stale_gid=1001 (%s)", opts);
	kt_expect_eq(fallocate_as(&member, path_in("f"), NHS, 5 * MiB, MiB), 0,
		     "%s after remount", member.name);
	kt_expect_eq(remount("nohide_stale_gid=1000"), 0, "remount with nohide_stale_gid=1000");
	kt_check(mount_opts(opts, sizeof(opts)) && strstr(opts, "nohide_stale_gid=1000"),
		 "/proc/mounts shows nohide_stale_gid=1000 (%s)", opts);
	kt_expect_eq(fallocate_as(&outsider, path_in("f"), NHS, 6 * MiB, MiB), 0,
		     "rsuser (primary group 1000) after the gid moved to 1000");
	kt_expect_eq(remount("nohide_stale_gid=none"), 0, "remount with nohide_stale_gid=none");
	kt_check(mount_opts(opts, sizeof(opts)) && !strstr(opts, "nohide_stale_gid"),
		 "/proc/mounts no longer shows nohide_stale_gid (%s)", opts);
	kt_expect_eq(fallocate_as(&root_nogroup, path_in("f"), NHS, 7 * MiB, MiB), -EOPNOTSUPP,
		     "NO_HIDE_STALE after nohide_stale_gid=none, even with CAP_SYS_RAWIO");
	kt_expect_eq(remount("nohide_stale_gid=rsstale"), -EINVAL,
		     "remount with nohide_stale_gid=rsstale (a name, not a number)");
	umount_or_die();

	/* Block-mapped files (no extents feature): EOPNOTSUPP, as for mode 0. */
	mkfs_ext4("64M", "-O ^extent,^64bit");
	mount_gated("");
	fd = create_file("indirect", 0);
	kt_expect_eq(kt_fallocate(fd, NHS, 0, MiB), -EOPNOTSUPP,
		     "NO_HIDE_STALE on a block-mapped (non-extent) file");
	kt_expect_eq(kt_fallocate(fd, 0, 0, MiB), -EOPNOTSUPP, "mode 0 on the same file (reference)");
	close(fd);
	umount_or_die();
}

/* ---- gate edges: opt-in (0001), image options, credentials, modes (0002) ---- */

static bool become(const struct ids *who)
{
	return !setgroups(who->ngroups, who->groups) && !setresgid(who->gid, who->gid, who->gid) &&
	       !setresuid(who->uid, who->uid, who->uid);
}

static int wait_child(pid_t pid, const char *what)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		kt_fatal("child for %s died", what);
	if (WEXITSTATUS(status) >= 200)
		kt_fatal("child for %s could not set up (%d)", what, WEXITSTATUS(status));
	return -WEXITSTATUS(status);
}

/* Fallocate path opened O_WRONLY as who; 0 or -errno. */
static int fallocate_wr_as(const struct ids *who, const char *path, int mode, uint64_t off,
			   uint64_t len)
{
	pid_t pid = fork();
	int fd, rc;

	if (pid < 0)
		kt_fatal("fork: %s", strerror(errno));
	if (pid == 0) {
		if (!become(who))
			_exit(200);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			_exit(201);
		rc = kt_fallocate(fd, mode, off, len);
		_exit(rc < 0 ? -rc : 0);
	}
	return wait_child(pid, who->name);
}

/*
 * opener opens path (O_WRONLY) and passes the fd over a unix socket
 * (SCM_RIGHTS) to caller, which runs fallocate on it; 0 or -errno.
 */
static int fallocate_passed(const struct ids *opener, const struct ids *caller, const char *path,
			    int mode, uint64_t off, uint64_t len)
{
	int sv[2], fd, rc;
	pid_t a, b;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		kt_fatal("socketpair: %s", strerror(errno));
	a = fork();
	if (a < 0)
		kt_fatal("fork: %s", strerror(errno));
	if (a == 0) {
		char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte = 'f';
		struct iovec iov = { &byte, 1 };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				      .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

		if (!become(opener))
			_exit(200);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			_exit(201);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
		_exit(sendmsg(sv[0], &msg, 0) == 1 ? 0 : 202);
	}
	b = fork();
	if (b < 0)
		kt_fatal("fork: %s", strerror(errno));
	if (b == 0) {
		char cbuf[CMSG_SPACE(sizeof(int))] = { 0 }, byte;
		struct iovec iov = { &byte, 1 };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
				      .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c;

		if (!become(caller))
			_exit(200);
		if (recvmsg(sv[1], &msg, 0) != 1 || !(c = CMSG_FIRSTHDR(&msg)) ||
		    c->cmsg_type != SCM_RIGHTS)
			_exit(203);
		memcpy(&fd, CMSG_DATA(c), sizeof(int));
		rc = kt_fallocate(fd, mode, off, len);
		_exit(rc < 0 ? -rc : 0);
	}
	close(sv[0]);
	close(sv[1]);
	if (wait_child(a, opener->name))
		kt_fatal("%s could not pass the fd", opener->name);
	return wait_child(b, caller->name);
}

/* One IORING_OP_FALLOCATE through a fresh ring (raw syscalls); the CQE's result. */
static int uring_fallocate(int fd, int mode, uint64_t off, uint64_t len)
{
	struct io_uring_params p = { 0 };
	int ring = (int)syscall(__NR_io_uring_setup, 4, &p);
	size_t sq_size, cq_size;
	uint8_t *sq, *cq;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqe;
	unsigned int tail, *array;
	int res;

	if (ring < 0)
		return -10000 - errno;
	sq_size = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	cq_size = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	if (p.features & IORING_FEAT_SINGLE_MMAP)
		sq_size = cq_size = sq_size > cq_size ? sq_size : cq_size;
	sq = mmap(NULL, sq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
		  IORING_OFF_SQ_RING);
	cq = p.features & IORING_FEAT_SINGLE_MMAP ? sq :
		mmap(NULL, cq_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
		     IORING_OFF_CQ_RING);
	sqes = mmap(NULL, p.sq_entries * sizeof(*sqes), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED)
		return -20000 - errno;
	memset(&sqes[0], 0, sizeof(sqes[0]));
	sqes[0].opcode = IORING_OP_FALLOCATE;
	sqes[0].fd = fd;
	sqes[0].off = off;
	sqes[0].addr = len;
	sqes[0].len = (unsigned int)mode;
	array = (unsigned int *)(sq + p.sq_off.array);
	tail = *(unsigned int *)(sq + p.sq_off.tail);
	array[tail & *(unsigned int *)(sq + p.sq_off.ring_mask)] = 0;
	__atomic_store_n((unsigned int *)(sq + p.sq_off.tail), tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) != 1)
		return -30000 - errno;
	if (__atomic_load_n((unsigned int *)(cq + p.cq_off.tail), __ATOMIC_ACQUIRE) ==
	    *(unsigned int *)(cq + p.cq_off.head))
		return -40000;
	cqe = (struct io_uring_cqe *)(cq + p.cq_off.cqes) +
	      (*(unsigned int *)(cq + p.cq_off.head) & *(unsigned int *)(cq + p.cq_off.ring_mask));
	res = cqe->res;
	close(ring);
	return res;
}

/* IORING_OP_FALLOCATE on path (opened O_WRONLY) as who; the CQE's result. */
static int uring_fallocate_as(const struct ids *who, const char *path, int mode, uint64_t off,
			      uint64_t len)
{
	pid_t pid = fork();
	int fd, rc;

	if (pid < 0)
		kt_fatal("fork: %s", strerror(errno));
	if (pid == 0) {
		if (!become(who))
			_exit(200);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			_exit(201);
		rc = uring_fallocate(fd, mode, off, len);
		if (rc < -9999)
			_exit(204);
		_exit(rc < 0 ? -rc : 0);
	}
	return wait_child(pid, who->name);
}

static bool write_proc(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	bool ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);

	if (fd >= 0)
		close(fd);
	return ok;
}

/* Root (no supplementary groups) inside a new user namespace, mapped to itself. */
static int fallocate_userns_root(const char *path, int mode, uint64_t off, uint64_t len)
{
	pid_t pid = fork();
	int fd, rc;

	if (pid < 0)
		kt_fatal("fork: %s", strerror(errno));
	if (pid == 0) {
		if (setgroups(0, NULL) || unshare(CLONE_NEWUSER))
			_exit(200);
		/* Written by this process: an exec'd shell would lose the capabilities. */
		if (!write_proc("/proc/self/setgroups", "deny") ||
		    !write_proc("/proc/self/uid_map", "0 0 1") ||
		    !write_proc("/proc/self/gid_map", "0 0 1"))
			_exit(201);
		if (geteuid() != 0)
			_exit(202);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			_exit(203);
		rc = kt_fallocate(fd, mode, off, len);
		_exit(rc < 0 ? -rc : 0);
	}
	return wait_child(pid, "root in a user namespace");
}

static int make_file(const char *name, uid_t uid, gid_t gid, mode_t mode)
{
	int fd = open(path_in(name), O_RDWR | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || fchown(fd, uid, gid) || fchmod(fd, mode))
		kt_fatal("create %s: %s", path_in(name), strerror(errno));
	return fd;
}

static int set_iflags(int fd, int flags)
{
	return ioctl(fd, FS_IOC_SETFLAGS, &flags) ? -errno : 0;
}

static void test_edges(void)
{
	char opts[400], lower[256], upper[256], work[256], ovlopts[800];
	const char *ovl = "/mnt/nhs-ovl";
	struct stat st;
	int fd;

	/* An image cannot turn the gate on: nohide_stale_gid= in s_mount_opts is ignored. */
	mkfs_ext4("256M", "");
	if (kt_sh("tune2fs -E mount_opts=nohide_stale_gid=0 %s > /dev/null 2>&1", dev))
		kt_fatal("tune2fs -E mount_opts=nohide_stale_gid=0 %s failed", dev);
	mount_or_die("ext4", "");
	kt_check(mount_opts(opts, sizeof(opts)) && !strstr(opts, "nohide_stale_gid"),
		 "s_mount_opts nohide_stale_gid=0: /proc/mounts does not show it (%s)", opts);
	fd = create_file("sb", 0);
	kt_expect_eq(kt_fallocate(fd, NHS, 0, MiB), -EOPNOTSUPP,
		     "s_mount_opts nohide_stale_gid=0: NO_HIDE_STALE as root");
	close(fd);
	umount_or_die();
	mount_gated("");
	kt_check(mount_opts(opts, sizeof(opts)) && strstr(opts, "nohide_stale_gid=1001"),
		 "the mount option still applies over the image's (%s)", opts);
	if (chmod(mnt, 0777))
		kt_fatal("chmod %s: %s", mnt, strerror(errno));

	/* Both the opener and the caller must pass the gate. */
	close(make_file("own", USER_UID, USER_GID, 0600));
	kt_expect_eq(fallocate_passed(&outsider, &member, path_in("own"), NHS, 0, MiB), -EPERM,
		     "fd opened by an outsider, passed over SCM_RIGHTS to a member");
	kt_expect_eq(fallocate_passed(&member, &outsider, path_in("own"), NHS, 0, MiB), -EPERM,
		     "fd opened by a member, passed to an outsider");
	fd = open(path_in("own"), O_RDONLY);
	st = fstat_or_die(fd);
	close(fd);
	kt_check(st.st_size == 0 && st.st_blocks == 0, "refused passed fds allocated nothing "
		 "(size %lld, blocks %lld)", (long long)st.st_size, (long long)st.st_blocks);
	kt_expect_eq(fallocate_passed(&member, &member, path_in("own"), NHS, 0, MiB), 0,
		     "fd opened by a member, passed to a member");
	kt_expect_eq(fallocate_passed(&root_nogroup, &member, path_in("own"), NHS, MiB, MiB), 0,
		     "fd opened with CAP_SYS_RAWIO, passed to a member");

	/* io_uring runs the request with the ring's credentials: the same gate. */
	kt_expect_eq(uring_fallocate_as(&outsider, path_in("own"), NHS, 2 * MiB, MiB), -EPERM,
		     "IORING_OP_FALLOCATE as an outsider");
	kt_expect_eq(uring_fallocate_as(&member, path_in("own"), NHS, 2 * MiB, MiB), 0,
		     "IORING_OP_FALLOCATE as a member");

	/* Files others can read: only their owner or CAP_SYS_RAWIO. */
	close(make_file("pub", 0, STALE_GID, 0664));
	kt_expect_eq(fallocate_wr_as(&member, path_in("pub"), NHS, 0, MiB), -EPERM,
		     "member on a 0664 file it does not own");
	if (chmod(path_in("pub"), 0660))
		kt_fatal("chmod: %s", strerror(errno));
	kt_expect_eq(fallocate_wr_as(&member, path_in("pub"), NHS, 0, MiB), -EPERM,
		     "member on a 0660 file it does not own (group-readable)");
	/* The owner can read a 0620 file: a non-owner must not show it stale data. */
	if (chmod(path_in("pub"), 0620))
		kt_fatal("chmod: %s", strerror(errno));
	kt_expect_eq(fallocate_wr_as(&member, path_in("pub"), NHS, 0, MiB), -EPERM,
		     "member on a 0620 file it does not own (its owner can read it)");
	st = fstat_or_die(fd = open(path_in("pub"), O_RDONLY));
	close(fd);
	kt_check(st.st_size == 0 && st.st_blocks == 0,
		 "the refused 0620 file got nothing (size %lld, blocks %lld)",
		 (long long)st.st_size, (long long)st.st_blocks);
	/*
	 * Whatever the mode, only the owner (or CAP_SYS_RAWIO): a file nobody
	 * can read today is one chmod u+r away from its owner reading it.
	 */
	if (chmod(path_in("pub"), 0220))
		kt_fatal("chmod: %s", strerror(errno));
	kt_expect_eq(fallocate_wr_as(&member, path_in("pub"), NHS, 0, MiB), -EPERM,
		     "member on a 0220 file root owns (root can chmod u+r)");
	close(make_file("other", OTHER_UID, STALE_GID, 0220));
	kt_expect_eq(fallocate_wr_as(&member, path_in("other"), NHS, 0, MiB), -EPERM,
		     "member on a 0220 file another unprivileged member owns");
	if (chmod(path_in("other"), 0020))
		kt_fatal("chmod: %s", strerror(errno));
	kt_expect_eq(fallocate_wr_as(&member, path_in("other"), NHS, 0, MiB), -EPERM,
		     "member on a 0020 file another unprivileged member owns");
	st = fstat_or_die(fd = open(path_in("other"), O_RDONLY));
	close(fd);
	kt_check(st.st_size == 0 && st.st_blocks == 0,
		 "the refused 0220/0020 files got nothing (size %lld, blocks %lld)",
		 (long long)st.st_size, (long long)st.st_blocks);
	if (chmod(path_in("other"), 0220))
		kt_fatal("chmod: %s", strerror(errno));
	kt_expect_eq(fallocate_wr_as(&other_member, path_in("other"), NHS, 0, MiB), 0,
		     "an unprivileged member on its own 0220 file");
	close(make_file("other-pub", OTHER_UID, STALE_GID, 0664));
	kt_expect_eq(fallocate_wr_as(&other_member, path_in("other-pub"), NHS, 0, MiB), 0,
		     "an unprivileged member on its own 0664 file");
	close(make_file("other-out", USER_UID, USER_GID, 0600));
	kt_expect_eq(fallocate_wr_as(&outsider, path_in("other-out"), NHS, 0, MiB), -EPERM,
		     "an owner outside the group on its own 0600 file (the gate)");
	close(make_file("mine", USER_UID, USER_GID, 0644));
	kt_expect_eq(fallocate_wr_as(&member, path_in("mine"), NHS, 0, MiB), 0,
		     "member on its own 0644 file");
	close(make_file("rootpub", 0, 0, 0644));
	kt_expect_eq(fallocate_wr_as(&root_nogroup, path_in("rootpub"), NHS, 0, MiB), 0,
		     "CAP_SYS_RAWIO on a 0644 file");
	close(make_file("other-raw", OTHER_UID, STALE_GID, 0220));
	kt_expect_eq(fallocate_wr_as(&root_nogroup, path_in("other-raw"), NHS, 0, MiB), 0,
		     "CAP_SYS_RAWIO on a 0220 file another user owns");

	/* Root of a user namespace holds no CAP_SYS_RAWIO over the filesystem. */
	close(make_file("ns", 0, 0, 0600));
	kt_expect_eq(fallocate_userns_root(path_in("ns"), NHS, 0, MiB), -EPERM,
		     "root inside a user namespace (mapped to root, no groups)");
	kt_expect_eq(fallocate_userns_root(path_in("ns"), 0, 0, MiB), 0,
		     "root inside a user namespace, plain fallocate (reference)");

	/* setuid/setgid bits are stripped as by a write. */
	close(make_file("suid", USER_UID, USER_GID, 04700));
	close(make_file("sgid", USER_UID, STALE_GID, 02710));
	kt_expect_eq(fallocate_wr_as(&member, path_in("suid"), NHS, 0, MiB), 0,
		     "member on its own setuid file");
	kt_expect_eq(fallocate_wr_as(&member, path_in("sgid"), NHS, 0, MiB), 0,
		     "member on its own setgid file");
	if (stat(path_in("suid"), &st))
		kt_fatal("stat: %s", strerror(errno));
	kt_check(!(st.st_mode & S_ISUID), "the setuid bit was stripped (mode %o)",
		 (unsigned int)st.st_mode & 07777);
	if (stat(path_in("sgid"), &st))
		kt_fatal("stat: %s", strerror(errno));
	kt_check(!(st.st_mode & S_ISGID), "the setgid bit was stripped (mode %o)",
		 (unsigned int)st.st_mode & 07777);

	/* Append-only and immutable files refuse it. */
	fd = make_file("ai", 0, 0, 0600);
	kt_expect_eq(set_iflags(fd, FS_APPEND_FL), 0, "chattr +a");
	kt_expect_eq(kt_fallocate(fd, NHS, 0, MiB), -EPERM, "NO_HIDE_STALE on an append-only file");
	kt_expect_eq(set_iflags(fd, FS_IMMUTABLE_FL), 0, "chattr -a +i");
	kt_expect_eq(kt_fallocate(fd, NHS, 0, MiB), -EPERM, "NO_HIDE_STALE on an immutable file");
	kt_expect_eq(set_iflags(fd, 0), 0, "chattr -i");
	st = fstat_or_die(fd);
	kt_check(st.st_size == 0 && st.st_blocks == 0, "nothing was allocated (blocks %lld)",
		 (long long)st.st_blocks);
	close(fd);

	/* overlayfs over the gated ext4 does not declare support: refused before the gate. */
	snprintf(lower, sizeof(lower), "%s/lower", mnt);
	snprintf(upper, sizeof(upper), "%s/upper", mnt);
	snprintf(work, sizeof(work), "%s/work", mnt);
	if ((mkdir(lower, 0755) && errno != EEXIST) || (mkdir(upper, 0755) && errno != EEXIST) ||
	    (mkdir(work, 0755) && errno != EEXIST) || (mkdir(ovl, 0755) && errno != EEXIST))
		kt_fatal("mkdir for overlayfs: %s", strerror(errno));
	snprintf(ovlopts, sizeof(ovlopts), "lowerdir=%s,upperdir=%s,workdir=%s", lower, upper,
		 work);
	if (mount("overlay", ovl, "overlay", 0, ovlopts))
		kt_fatal("mount overlay %s: %s", ovlopts, strerror(errno));
	{
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/o", ovl);
		fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			kt_fatal("create %s: %s", p, strerror(errno));
		kt_expect_eq(kt_fallocate(fd, NHS, 0, MiB), -EOPNOTSUPP,
			     "overlayfs over the gated ext4: NO_HIDE_STALE with CAP_SYS_RAWIO");
		st = fstat_or_die(fd);
		kt_check(st.st_size == 0 && st.st_blocks == 0,
			 "overlayfs: nothing was allocated (blocks %lld)", (long long)st.st_blocks);
		kt_expect_eq(kt_fallocate(fd, 0, 0, MiB), 0, "overlayfs: plain fallocate (reference)");
		close(fd);
	}
	if (umount(ovl))
		kt_fatal("umount %s: %s", ovl, strerror(errno));
	rmdir(ovl);
	umount_or_die();
	kt_check(kt_sh("e2fsck -fn %s > /tmp/nhs-fsck.log 2>&1", dev) == 0, "e2fsck -fn is clean");
}

/* ---- ext4 variants: 1 KiB blocks, bigalloc, ENOSPC part way ---- */

static void fsck_clean(const char *what)
{
	kt_check(kt_sh("e2fsck -fn %s > /tmp/nhs-fsck.log 2>&1", dev) == 0, "%s: e2fsck -fn is clean",
		 what);
	kt_sh("grep -v '^e2fsck' /tmp/nhs-fsck.log | sed 's/^/# fsck: /' | head -20");
}

static void variant_basic(const char *what)
{
	struct stat st;
	int fd = create_file("v", 0);

	kt_fill(fd, 64 * KiB, 8 * KiB, 27);
	fsync(fd);
	kt_expect_eq(kt_fallocate(fd, NHS, 0, 4 * MiB), 0, "%s: NO_HIDE_STALE 4 MiB", what);
	kt_check(kt_verify(fd, 64 * KiB, 8 * KiB, 27) == UINT64_MAX, "%s: written data kept",
		 what);
	kt_expect_extents(fd, 0, 4 * MiB, false, what);
	kt_expect_eq(kt_fallocate(fd, NHS, 4 * MiB + 1000, 3000), 0,
		     "%s: NO_HIDE_STALE of an unaligned [4 MiB + 1000, +3000)", what);
	st = fstat_or_die(fd);
	kt_check(st.st_size == (off_t)(4 * MiB + 4000), "%s: size is the unaligned end (%lld)", what,
		 (long long)st.st_size);
	close(fd);
	umount_or_die();
	fsck_clean(what);
}

static void test_variants(void)
{
	struct statfs sf;
	struct stat st;
	struct kt_extents e;
	uint64_t want;
	int fd, rc;

	mkfs_ext4("256M", "-b 1024");
	mount_gated("");
	variant_basic("1 KiB blocks");

	mkfs_ext4("256M", "-O bigalloc -C 65536");
	mount_gated("");
	variant_basic("bigalloc, 64 KiB clusters");

	/* ENOSPC part way: what was allocated stays, i_size covers it, nothing past it. */
	mkfs_ext4("64M", "-m 0");
	mount_gated("");
	if (statfs(mnt, &sf))
		kt_fatal("statfs: %s", strerror(errno));
	want = sf.f_bavail * sf.f_bsize + 16 * MiB;
	fd = create_file("full", 0);
	rc = kt_fallocate(fd, NHS, 0, want);
	kt_expect_eq(rc, -ENOSPC, "NO_HIDE_STALE of %llu MiB with %llu MiB free",
		     (unsigned long long)(want / MiB),
		     (unsigned long long)(sf.f_bavail * sf.f_bsize / MiB));
	st = fstat_or_die(fd);
	e = kt_fiemap(fd, 0, want);
	kt_note("after ENOSPC: size %lld, %lld bytes allocated, %llu mapped in the range",
		(long long)st.st_size, (long long)st.st_blocks * 512, (unsigned long long)e.mapped);
	kt_check(st.st_size > 0 && (uint64_t)st.st_size < want,
		 "size covers part of the range (%lld of %llu)", (long long)st.st_size,
		 (unsigned long long)want);
	kt_check(e.unwritten == 0, "every allocated extent is written (%u unwritten)", e.unwritten);
	kt_check(kt_fiemap(fd, (uint64_t)st.st_size, want - (uint64_t)st.st_size).mapped == 0,
		 "no block is mapped past i_size");
	close(fd);
	umount_or_die();
	fsck_clean("ENOSPC part way");
}

/* ---- data=journal: dirty journaled pages over the range ---- */

static void test_journal(void)
{
	int fd;

	mkfs_ext4("256M", "");
	mount_gated("data=journal");
	fd = create_file("j", 0);
	if (fchmod(fd, 0600))
		kt_fatal("fchmod: %s", strerror(errno));
	kt_fill(fd, 0, MiB, 24);
	fsync(fd);
	kt_fill(fd, 256 * KiB, 128 * KiB, 25); /* dirty, journaled data */
	kt_fill(fd, 3 * MiB, 64 * KiB, 26); /* dirty past the old end */
	kt_expect_eq(kt_fallocate(fd, NHS, 0, 4 * MiB), 0,
		     "data=journal: NO_HIDE_STALE over clean and dirty journaled pages");
	kt_check(kt_verify(fd, 0, 256 * KiB, 24) == UINT64_MAX &&
		 kt_verify(fd, 256 * KiB, 128 * KiB, 25) == UINT64_MAX &&
		 kt_verify(fd, 384 * KiB, 640 * KiB, 24) == UINT64_MAX &&
		 kt_verify(fd, 3 * MiB, 64 * KiB, 26) == UINT64_MAX,
		 "data=journal: the data is kept (buffered read)");
	kt_expect_extents(fd, 0, 4 * MiB, false, "data=journal");
	close(fd);
	umount_or_die();
	mount_or_die("ext4", "data=journal");
	fd = open(path_in("j"), O_RDONLY);
	if (fd < 0)
		kt_fatal("reopen: %s", strerror(errno));
	kt_check(kt_verify(fd, 0, 256 * KiB, 24) == UINT64_MAX &&
		 kt_verify(fd, 256 * KiB, 128 * KiB, 25) == UINT64_MAX &&
		 kt_verify(fd, 384 * KiB, 640 * KiB, 24) == UINT64_MAX &&
		 kt_verify(fd, 3 * MiB, 64 * KiB, 26) == UINT64_MAX,
		 "data=journal: the data survived umount and mount");
	kt_expect_extents(fd, 0, 4 * MiB, false, "data=journal after umount and mount");
	close(fd);
	umount_or_die();
	kt_check(kt_sh("e2fsck -fn %s > /tmp/nhs-fsck.log 2>&1", dev) == 0, "e2fsck -fn is clean");
	kt_sh("grep -v '^e2fsck' /tmp/nhs-fsck.log | sed 's/^/# fsck: /' | head -20");
}

/* ---- fiemap, i_blocks, free blocks, remount ---- */

static void test_fiemap(void)
{
	uint64_t before, after;
	struct stat st;
	int a, b, c;

	mkfs_ext4("256M", "");
	mount_gated("");

	a = create_file("a", 0);
	syncfs(a);
	before = free_blocks();
	kt_expect_eq(kt_fallocate(a, NHS, 0, 8 * MiB), 0, "NO_HIDE_STALE 8 MiB into an empty file");
	after = free_blocks();
	st = fstat_or_die(a);
	kt_check(st.st_size == (off_t)(8 * MiB), "size is 8 MiB (%lld)", (long long)st.st_size);
	kt_check(st.st_blocks * 512 == (off_t)(8 * MiB), "i_blocks covers exactly 8 MiB (%lld bytes)",
		 (long long)st.st_blocks * 512);
	kt_check(before - after >= 2048 && before - after <= 2048 + 16,
		 "free blocks dropped by %llu (2048 data blocks + extent tree)",
		 (unsigned long long)(before - after));
	kt_expect_extents(a, 0, 8 * MiB, false, "after NO_HIDE_STALE");

	b = create_file("b", 0);
	kt_expect_eq(kt_fallocate(b, 0, 0, 8 * MiB), 0, "plain fallocate 8 MiB");
	kt_expect_extents(b, 0, 8 * MiB, true, "after plain fallocate");
	st = fstat_or_die(b);
	kt_expect_eq(kt_fallocate(b, NHS, 2 * MiB, 4 * MiB), 0,
		     "NO_HIDE_STALE over [2, 6) MiB of the unwritten extents");
	kt_expect_extents(b, 2 * MiB, 4 * MiB, false, "converted range");
	kt_expect_extents(b, 0, 2 * MiB, true, "below the converted range");
	kt_expect_extents(b, 6 * MiB, 2 * MiB, true, "above the converted range");
	{
		struct stat st2 = fstat_or_die(b);

		kt_check(st2.st_blocks == st.st_blocks && st2.st_size == st.st_size,
			 "conversion charged no new blocks and kept the size (%lld -> %lld blocks, "
			 "size %lld)", (long long)st.st_blocks, (long long)st2.st_blocks,
			 (long long)st2.st_size);
	}

	/* Written data in the range is kept; holes around it are filled. */
	c = create_file("c", 0);
	kt_fill(c, MiB, 64 * KiB, 21);
	fsync(c);
	kt_expect_eq(kt_fallocate(c, NHS, 0, 4 * MiB), 0, "NO_HIDE_STALE over holes and written data");
	kt_check(kt_verify(c, MiB, 64 * KiB, 21) == UINT64_MAX,
		 "the written 64 KiB inside the range kept their data");
	kt_expect_extents(c, 0, 4 * MiB, false, "holes + written data");
	kt_expect_eq(kt_fallocate(c, NHS, 4 * MiB + 1000, 5000), 0,
		     "NO_HIDE_STALE of an unaligned [4 MiB + 1000, +5000)");
	st = fstat_or_die(c);
	kt_check(st.st_size == (off_t)(4 * MiB + 6000), "size is the unaligned end (%lld)",
		 (long long)st.st_size);
	kt_expect_extents(c, 4 * MiB, BS, false, "the first block the unaligned range touches");
	kt_expect_extents(c, 4 * MiB + BS, BS, true,
			  "the last block, which holds EOF, as a plain fallocate leaves it");
	close(a);
	close(b);
	close(c);

	/* Dirty (delayed-allocation) data in the range is written back, not lost. */
	c = create_file("d", 0);
	kt_fill(c, 512 * KiB, 64 * KiB, 22);
	kt_expect_eq(kt_fallocate(c, NHS, 0, 2 * MiB), 0,
		     "NO_HIDE_STALE over dirty data not yet written back");
	kt_check(kt_verify(c, 512 * KiB, 64 * KiB, 22) == UINT64_MAX,
		 "the dirty data survived (buffered read)");
	close(c);
	c = open_direct("d");
	kt_check(kt_verify(c, 512 * KiB, 64 * KiB, 22) == UINT64_MAX,
		 "the dirty data reached the disk (O_DIRECT read)");
	kt_expect_extents(c, 0, 2 * MiB, false, "range with dirty data");
	close(c);

	kt_expect_eq(remount("commit=20"), 0, "remount");
	umount_or_die();
	mount_or_die("ext4", "");
	a = open(path_in("a"), O_RDONLY);
	b = open(path_in("b"), O_RDONLY);
	if (a < 0 || b < 0)
		kt_fatal("reopen after mount: %s", strerror(errno));
	kt_expect_extents(a, 0, 8 * MiB, false, "after umount and mount (without the option)");
	kt_expect_extents(b, 2 * MiB, 4 * MiB, false, "converted range after umount and mount");
	kt_expect_extents(b, 0, 2 * MiB, true, "unwritten part after umount and mount");
	st = fstat_or_die(a);
	kt_check(st.st_size == (off_t)(8 * MiB) && st.st_blocks * 512 == (off_t)(8 * MiB),
		 "size and i_blocks survived (%lld, %lld bytes)", (long long)st.st_size,
		 (long long)st.st_blocks * 512);
	close(a);
	close(b);
	umount_or_die();
	kt_check(kt_sh("e2fsck -fn %s > /tmp/nhs-fsck.log 2>&1", dev) == 0,
		 "e2fsck -fn is clean (no written blocks past i_size, counts right)");
	kt_sh("grep -v '^e2fsck' /tmp/nhs-fsck.log | sed 's/^/# fsck: /' | head -20");
}

/* ---- stale exposure ---- */

/*
 * Blocks of the "victim" file (deleted before the test reads) and of the
 * "live" file (kept) carry a tag so that any block read back can be told
 * apart: magic, block number, then the ktest pattern for that position.
 */
static const char victim_magic[16] = "RAWSTORE-VICTIM";
static const char live_magic[16] = "RAWSTORE-LIVE!!";

static void tag_block(uint8_t *b, const char *magic, uint64_t n, uint32_t seed)
{
	memcpy(b, magic, 16);
	memcpy(b + 16, &n, 8);
	for (unsigned int i = 24; i < BS; i++)
		b[i] = kt_pattern_byte(seed, n * BS + i);
}

static void write_tagged(const char *name, const char *magic, uint64_t len, uint32_t seed)
{
	int fd = create_file(name, 0);
	uint8_t *buf = malloc(MiB);

	if (!buf)
		kt_fatal("out of memory");
	for (uint64_t off = 0; off < len; off += MiB) {
		for (unsigned int i = 0; i < MiB / BS; i++)
			tag_block(buf + i * BS, magic, off / BS + i, seed);
		if (pwrite(fd, buf, MiB, (off_t)off) != (ssize_t)MiB)
			kt_fatal("write %s: %s", name, strerror(errno));
	}
	if (fsync(fd))
		kt_fatal("fsync %s: %s", name, strerror(errno));
	close(fd);
	free(buf);
}

struct census {
	uint64_t blocks, zero, victim, live, other;
};

static bool block_is(const uint8_t *b, const char *magic, uint32_t seed)
{
	uint64_t n;
	uint8_t want[BS];

	if (memcmp(b, magic, 16))
		return false;
	memcpy(&n, b + 16, 8);
	tag_block(want, magic, n, seed);
	return !memcmp(b, want, BS);
}

/* Classify every block of fd's [0, len) as zero / victim / live / other. */
static struct census census(int fd, uint64_t len)
{
	struct census c = { 0 };
	static const uint8_t zeros[BS];
	uint8_t *buf;

	if (posix_memalign((void **)&buf, BS, MiB))
		kt_fatal("out of memory");
	for (uint64_t off = 0; off < len; off += MiB) {
		size_t n = len - off < MiB ? (size_t)(len - off) : MiB;

		if (pread(fd, buf, n, (off_t)off) != (ssize_t)n)
			kt_fatal("pread: %s", strerror(errno));
		for (size_t i = 0; i < n; i += BS) {
			c.blocks++;
			if (!memcmp(buf + i, zeros, BS))
				c.zero++;
			else if (block_is(buf + i, victim_magic, 31))
				c.victim++;
			else if (block_is(buf + i, live_magic, 32))
				c.live++;
			else
				c.other++;
		}
	}
	free(buf);
	return c;
}

static void print_census(const char *what, struct census c)
{
	kt_note("%s: %llu blocks: %llu zero, %llu from the deleted file, %llu from the live file, "
		"%llu other", what, (unsigned long long)c.blocks, (unsigned long long)c.zero,
		(unsigned long long)c.victim, (unsigned long long)c.live, (unsigned long long)c.other);
}

static int open_direct(const char *name)
{
	int fd = open(path_in(name), O_RDONLY | O_DIRECT);

	if (fd < 0)
		kt_fatal("open %s O_DIRECT: %s", name, strerror(errno));
	return fd;
}

/* Buffered contents equal O_DIRECT contents (the page cache hides nothing). */
static void expect_coherent(const char *name, uint64_t len, const char *what)
{
	int bfd = open(path_in(name), O_RDONLY), dfd = open_direct(name);
	uint8_t *a, *b;
	uint64_t bad = UINT64_MAX;

	if (bfd < 0 || posix_memalign((void **)&a, BS, MiB) || posix_memalign((void **)&b, BS, MiB))
		kt_fatal("open/alloc for %s", name);
	for (uint64_t off = 0; off < len && bad == UINT64_MAX; off += MiB) {
		size_t n = len - off < MiB ? (size_t)(len - off) : MiB;

		if (pread(bfd, a, n, (off_t)off) != (ssize_t)n ||
		    pread(dfd, b, n, (off_t)off) != (ssize_t)n)
			kt_fatal("pread %s: %s", name, strerror(errno));
		for (size_t i = 0; i < n; i++)
			if (a[i] != b[i]) {
				bad = off + i;
				break;
			}
	}
	kt_check(bad == UINT64_MAX, "%s: buffered read equals O_DIRECT read%s%llu", what,
		 bad == UINT64_MAX ? "" : ", first difference at ",
		 bad == UINT64_MAX ? 0ull : (unsigned long long)bad);
	free(a);
	free(b);
	close(bfd);
	close(dfd);
}

static void read_buffered(const char *name, uint64_t len)
{
	int fd = open(path_in(name), O_RDONLY);

	if (fd < 0)
		kt_fatal("open %s: %s", name, strerror(errno));
	kt_check(kt_verify(fd, 0, len, 0) == UINT64_MAX, "%s: buffered read sees zeros (now cached)",
		 name);
	close(fd);
}

static void test_stale(void)
{
	uint64_t victim_len, n_len = 16 * MiB;
	struct census c;
	struct statfs sf;
	int fd, dfd;

	/* A 64 MiB filesystem on zeroed space: one block group, no old data. */
	{
		int bfd = open(dev, O_RDWR);

		if (bfd < 0 || kt_blkzeroout(bfd, 0, 64 * MiB))
			kt_fatal("zeroing the first 64 MiB of %s failed", dev);
		close(bfd);
	}
	mkfs_ext4("64M", "");
	mount_gated("");
	if (chmod(mnt, 0777))
		kt_fatal("chmod %s: %s", mnt, strerror(errno));
	write_tagged("live", live_magic, 2 * MiB, 32);
	if (statfs(mnt, &sf))
		kt_fatal("statfs: %s", strerror(errno));
	victim_len = (sf.f_bavail * sf.f_bsize - 2 * MiB) & ~(MiB - 1);
	kt_note("victim file: %llu MiB of %llu MiB free", (unsigned long long)(victim_len / MiB),
		(unsigned long long)(sf.f_bavail * sf.f_bsize / MiB));
	write_tagged("victim", victim_magic, victim_len, 31);
	if (unlink(path_in("victim")))
		kt_fatal("unlink victim: %s", strerror(errno));
	fd = create_file("z", 0);
	syncfs(fd); /* commit the delete: freed blocks become allocatable */

	/* Plain fallocate over the freed blocks: zeros, by both paths. */
	kt_expect_eq(kt_fallocate(fd, 0, 0, 8 * MiB), 0, "plain fallocate 8 MiB over freed blocks");
	close(fd);
	read_buffered("z", 8 * MiB);
	dfd = open_direct("z");
	c = census(dfd, 8 * MiB);
	close(dfd);
	print_census("plain fallocate, O_DIRECT", c);
	kt_check(c.zero == c.blocks, "plain fallocate reads zeros (%llu of %llu blocks)",
		 (unsigned long long)c.zero, (unsigned long long)c.blocks);

	/* The same file's unwritten extents, cached as zeros, made written. */
	kt_expect_eq(fallocate_as(&member, path_in("z"), NHS, 0, 8 * MiB), 0,
		     "NO_HIDE_STALE over the cached unwritten extents (as %s)", member.name);
	expect_coherent("z", 8 * MiB, "unwritten -> written");
	dfd = open_direct("z");
	c = census(dfd, 8 * MiB);
	close(dfd);
	print_census("unwritten extents converted", c);
	kt_check(c.victim * 2 >= c.blocks && c.live == 0 && c.other == 0,
		 "converted extents expose the deleted file's blocks (%llu of %llu), never the live "
		 "file's (%llu)", (unsigned long long)c.victim, (unsigned long long)c.blocks,
		 (unsigned long long)c.live);

	/* A hole, cached as zeros, then allocated under the cache. */
	fd = create_file("h", 0);
	if (ftruncate(fd, 4 * MiB))
		kt_fatal("ftruncate: %s", strerror(errno));
	close(fd);
	read_buffered("h", 4 * MiB);
	kt_expect_eq(fallocate_as(&member, path_in("h"), NHS, 0, 4 * MiB), 0,
		     "NO_HIDE_STALE over a cached hole");
	expect_coherent("h", 4 * MiB, "hole -> written");
	/*
	 * Coherent zeros would also pass with a stale cache over zeroed
	 * blocks: the blocks must hold the deleted file's data, and the
	 * buffered read must show it (the cached zero pages were dropped).
	 */
	fd = open(path_in("h"), O_RDONLY);
	if (fd < 0)
		kt_fatal("open h: %s", strerror(errno));
	c = census(fd, 4 * MiB);
	close(fd);
	print_census("cached hole after NO_HIDE_STALE, buffered", c);
	kt_check(c.victim * 2 >= c.blocks && c.zero < c.blocks,
		 "a buffered read of the former hole shows the deleted file's blocks (%llu of %llu), "
		 "not the cached zeros", (unsigned long long)c.victim, (unsigned long long)c.blocks);

	/* A fresh file: the deleted data comes back, bounded by the file. */
	fd = create_file("n", 0);
	close(fd);
	kt_expect_eq(fallocate_as(&member, path_in("n"), NHS, 0, n_len), 0,
		     "NO_HIDE_STALE 16 MiB into a new file");
	dfd = open_direct("n");
	c = census(dfd, n_len);
	print_census("NO_HIDE_STALE new file", c);
	kt_check(c.victim * 2 >= c.blocks,
		 "the deleted file's data reads back (%llu of %llu blocks)",
		 (unsigned long long)c.victim, (unsigned long long)c.blocks);
	kt_check(c.live == 0 && c.other == 0,
		 "only freed blocks are exposed: %llu blocks of the live file, %llu unknown",
		 (unsigned long long)c.live, (unsigned long long)c.other);
	kt_check(c.victim + c.zero == c.blocks, "every block is stale data or never-used zeros");
	{
		char x[BS] __attribute__((aligned(4096)));

		kt_expect_eq(pread(dfd, x, BS, (off_t)n_len), 0, "reading past the range hits EOF");
	}
	close(dfd);
	fd = open(path_in("live"), O_RDONLY);
	c = census(fd, 2 * MiB);
	close(fd);
	kt_check(c.live == c.blocks, "the live file is intact (%llu of %llu blocks)",
		 (unsigned long long)c.live, (unsigned long long)c.blocks);
	umount_or_die();
}

/* ---- an end of file inside the last block: that block is never stale ---- */

/*
 * Block blk of name read with O_DIRECT (the page cache may not hide
 * anything): returns the number of bytes read into buf.
 */
static ssize_t read_block_direct(const char *name, uint64_t blk, uint8_t *buf)
{
	int fd = open_direct(name);
	ssize_t n = pread(fd, buf, BS, (off_t)(blk * BS));

	if (n < 0)
		kt_fatal("pread %s O_DIRECT: %s", name, strerror(errno));
	close(fd);
	return n;
}

static uint64_t first_nonzero(const uint8_t *b, uint64_t from, uint64_t to)
{
	for (uint64_t i = from; i < to; i++)
		if (b[i])
			return i;
	return UINT64_MAX;
}

/* Bytes [4096, 8192) of name on disk read zeros (after a growth past them). */
static void expect_block1_zero(const char *name, const char *when)
{
	uint8_t *b;
	uint64_t nz;

	if (posix_memalign((void **)&b, BS, BS))
		kt_fatal("out of memory");
	kt_expect_eq(read_block_direct(name, 1, b), BS, "%s %s: O_DIRECT read of block 1", name,
		     when);
	nz = first_nonzero(b, 0, BS);
	kt_check(nz == UINT64_MAX, "%s %s: block 1, which held EOF 5000, reads zeros on disk "
		 "(first non-zero byte at %lld)", name, when,
		 nz == UINT64_MAX ? -1ll : (long long)(BS + nz));
	free(b);
}

/*
 * NO_HIDE_STALE(0, 5000) into name (or, for "oldeof", NO_HIDE_STALE(0, 4600)
 * into a file already 5000 bytes long with no blocks), then grow it by how.
 * Block 0 is stale (the deleted file's data, so the checks mean something);
 * block 1 holds EOF, so it is allocated as a plain fallocate would (one
 * unwritten extent), and it reads zeros before and after the growth.
 */
static void tail_case(const char *name, const char *how)
{
	bool oldeof = !strcmp(how, "oldeof");
	uint8_t *b;
	int fd = create_file(name, 0);

	if (posix_memalign((void **)&b, BS, BS))
		kt_fatal("out of memory");
	if (oldeof && ftruncate(fd, 5000))
		kt_fatal("ftruncate %s: %s", name, strerror(errno));
	close(fd);
	kt_expect_eq(fallocate_as(&member, path_in(name), NHS, 0, oldeof ? 4600 : 5000), 0,
		     "%s: NO_HIDE_STALE [0, %d) as the owner", name, oldeof ? 4600 : 5000);
	kt_expect_eq(read_block_direct(name, 0, b), BS, "%s: O_DIRECT read of block 0", name);
	kt_check(first_nonzero(b, 0, BS) != UINT64_MAX,
		 "%s: block 0 holds the deleted file's data (stale, as asked)", name);
	fd = open(path_in(name), O_RDWR);
	if (fd < 0)
		kt_fatal("open %s: %s", name, strerror(errno));
	kt_expect_extents(fd, 0, BS, false, "block 0 written");
	kt_expect_extents(fd, BS, BS, true, "block 1 (EOF 5000) unwritten");
	kt_expect_range(fd, BS, 5000 - BS, 0, "below EOF in block 1");
	if (strcmp(how, "write")) {
		if (ftruncate(fd, 12288))
			kt_fatal("ftruncate %s: %s", name, strerror(errno));
	} else {
		if (pwrite(fd, "x", 1, 10000) != 1)
			kt_fatal("pwrite %s: %s", name, strerror(errno));
	}
	kt_expect_range(fd, 5000, 8192 - 5000, 0, how);
	fsync(fd);
	close(fd);
	expect_block1_zero(name, how);
	free(b);
}

/* A deleted file that took every free block: all free space holds its data. */
static void fill_free_space_with_victim(void)
{
	uint8_t *buf = malloc(MiB);
	uint64_t off = 0;
	int fd = create_file("victim", 0);

	if (!buf)
		kt_fatal("out of memory");
	for (;;) {
		for (unsigned int i = 0; i < MiB / BS; i++)
			tag_block(buf + i * BS, victim_magic, off / BS + i, 31);
		if (pwrite(fd, buf, MiB, (off_t)off) != (ssize_t)MiB)
			break;
		off += MiB;
	}
	/* The last megabyte may have been partly written: go on block by block. */
	off = (uint64_t)fstat_or_die(fd).st_size / BS * BS;
	for (;;) {
		tag_block(buf, victim_magic, off / BS, 31);
		if (pwrite(fd, buf, BS, (off_t)off) != (ssize_t)BS || fsync(fd))
			break;
		off += BS;
	}
	kt_note("victim file: %llu MiB, up to ENOSPC", (unsigned long long)(off / MiB));
	close(fd);
	free(buf);
	if (unlink(path_in("victim")))
		kt_fatal("unlink victim: %s", strerror(errno));
	fd = create_file("sync", 0);
	syncfs(fd);
	close(fd);
}

static void test_tail(void)
{
	/* Stale data everywhere: a deleted file fills the file system. */
	{
		int bfd = open(dev, O_RDWR);

		if (bfd < 0 || kt_blkzeroout(bfd, 0, 64 * MiB))
			kt_fatal("zeroing the first 64 MiB of %s failed", dev);
		close(bfd);
	}
	mkfs_ext4("64M", "");
	mount_gated("");
	if (chmod(mnt, 0777))
		kt_fatal("chmod %s: %s", mnt, strerror(errno));
	fill_free_space_with_victim();

	tail_case("t", "truncate");
	tail_case("w", "write");
	tail_case("o", "oldeof");
	/* And on disk, with nothing cached. */
	umount_or_die();
	mount_gated("");
	for (int i = 0; i < 3; i++)
		expect_block1_zero(i == 0 ? "t" : i == 1 ? "w" : "o", "after remount");
	umount_or_die();
	fsck_clean("stale tail");
}

/* The device offset of the block at byte off of fd (FIEMAP); fatal if unmapped. */
static uint64_t physical_of(int fd, uint64_t off)
{
	union {
		struct fiemap fm;
		char buf[sizeof(struct fiemap) + sizeof(struct fiemap_extent)];
	} f;

	memset(&f, 0, sizeof(f));
	f.fm.fm_start = off;
	f.fm.fm_length = BS;
	f.fm.fm_flags = FIEMAP_FLAG_SYNC;
	f.fm.fm_extent_count = 1;
	if (ioctl(fd, FS_IOC_FIEMAP, &f.fm) || f.fm.fm_mapped_extents != 1)
		kt_fatal("FIEMAP at %llu: %s", (unsigned long long)off,
			 f.fm.fm_mapped_extents ? strerror(errno) : "not mapped");
	return f.fm.fm_extents[0].fe_physical + (off - f.fm.fm_extents[0].fe_logical);
}

/* Load a table into the dm device name (suspend, load, resume). */
static void dm_table(const char *name, const char *table)
{
	if (kt_sh("dmsetup suspend %s && printf '%%s\\n' '%s' | dmsetup load %s && "
		  "dmsetup resume %s", name, table, name, name))
		kt_fatal("dmsetup: loading '%s' into %s failed", table, name);
}

/*
 * taileio: the block that holds EOF is never read or written, so an I/O
 * error there cannot leave a stale tail behind a failed call.  ext4 on a
 * dm-linear device over DEVICE; a file of 5000 bytes whose block 1 is an
 * unwritten extent (a plain fallocate); then every I/O to that block fails
 * (its sectors mapped to dm-error) and NO_HIDE_STALE(0, 5000) must still
 * succeed: block 0 written, block 1 still unwritten and reading zeros (no
 * I/O).  With the device whole again, after a remount and a truncate up,
 * block 1 reads zeros on disk; e2fsck is clean.
 */
static void test_taileio(void)
{
	const char *dm = "nhs-eio", *dmdev = "/dev/mapper/nhs-eio", *real = dev;
	uint64_t sectors = 64 * MiB / 512, p;
	char table[512];
	int fd;

	snprintf(table, sizeof(table), "0 %llu linear %s 0", (unsigned long long)sectors, real);
	if (kt_sh("dmsetup create %s --table '%s'", dm, table))
		kt_fatal("dmsetup create %s failed", dm);
	dev = dmdev;
	mkfs_ext4("64M", "");
	mount_gated("");
	if (chmod(mnt, 0777))
		kt_fatal("chmod %s: %s", mnt, strerror(errno));
	fd = create_file("e", 0);
	kt_expect_eq(kt_fallocate(fd, 0, BS, BS), 0, "plain fallocate of block 1");
	if (ftruncate(fd, 5000) || fsync(fd))
		kt_fatal("ftruncate/fsync e: %s", strerror(errno));
	kt_expect_extents(fd, BS, BS, true, "block 1 unwritten before");
	p = physical_of(fd, BS);
	kt_note("block 1 of e is at device byte %llu", (unsigned long long)p);
	/* every I/O to that block fails from now on */
	snprintf(table, sizeof(table), "0 %llu linear %s 0\n%llu 8 error\n%llu %llu linear %s %llu",
		 (unsigned long long)(p / 512), real, (unsigned long long)(p / 512),
		 (unsigned long long)(p / 512 + 8), (unsigned long long)(sectors - p / 512 - 8), real,
		 (unsigned long long)(p / 512 + 8));
	dm_table(dm, table);
	{
		uint8_t *x;
		int dfd = open(dmdev, O_RDONLY | O_DIRECT);
		ssize_t n;

		if (dfd < 0 || posix_memalign((void **)&x, BS, BS))
			kt_fatal("open %s O_DIRECT: %s", dmdev, strerror(errno));
		n = pread(dfd, x, BS, (off_t)p);
		kt_check(n < 0 && errno == EIO, "a direct read of that block now fails with EIO "
			 "(%zd, %s)", n, n < 0 ? strerror(errno) : "no error");
		close(dfd);
		free(x);
	}
	kt_expect_eq(fallocate_as(&member, path_in("e"), NHS, 0, 5000), 0,
		     "NO_HIDE_STALE [0, 5000) with the EOF block unreadable");
	kt_expect_extents(fd, 0, BS, false, "block 0 written");
	kt_expect_extents(fd, BS, BS, true, "block 1 (EOF 5000) still unwritten");
	kt_expect_range(fd, BS, 5000 - BS, 0, "below EOF in block 1");
	close(fd);
	snprintf(table, sizeof(table), "0 %llu linear %s 0", (unsigned long long)sectors, real);
	dm_table(dm, table);
	umount_or_die();
	mount_gated("");
	fd = open(path_in("e"), O_RDWR);
	if (fd < 0 || ftruncate(fd, 12288))
		kt_fatal("open/ftruncate e: %s", strerror(errno));
	kt_expect_range(fd, 5000, 8192 - 5000, 0, "after remount and truncate up");
	close(fd);
	expect_block1_zero("e", "after remount");
	umount_or_die();
	fsck_clean("taileio");
	dev = real;
	if (kt_sh("dmsetup remove %s", dm))
		kt_fatal("dmsetup remove %s failed", dm);
}

/* ---- idmapped mounts: the owner is the one seen through the mount ---- */

#define IDMAP_UID 2000

/*
 * A user namespace mapping uid 1000 to 2000 (and every other uid and gid
 * below 65536 to itself), as an fd for MOUNT_ATTR_IDMAP.
 */
static int idmap_userns(void)
{
	static const char *uid_map = "0 0 1000\n1000 2000 1\n1001 1001 999\n2001 2001 63535\n";
	static const char *gid_map = "0 0 65536\n";
	char path[64];
	int p[2], fd;
	pid_t pid;
	char c;

	if (pipe(p))
		kt_fatal("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		kt_fatal("fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[1]);
		if (unshare(CLONE_NEWUSER))
			_exit(1);
		/* Wait until the parent has taken the namespace. */
		if (read(p[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[0]);
	/* The child must be in its namespace before the maps are written. */
	for (int i = 0; i < 100; i++) {
		char a[64], b[64];
		ssize_t n1, n2;

		snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
		n1 = readlink(path, a, sizeof(a) - 1);
		n2 = readlink("/proc/self/ns/user", b, sizeof(b) - 1);
		if (n1 > 0 && n2 > 0 && (n1 != n2 || memcmp(a, b, (size_t)n1)))
			break;
		usleep(10000);
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", pid);
	if (!write_proc(path, uid_map))
		kt_fatal("writing %s failed", path);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", pid);
	if (!write_proc(path, gid_map))
		kt_fatal("writing %s failed", path);
	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		kt_fatal("open %s: %s", path, strerror(errno));
	close(p[1]);
	waitpid(pid, NULL, 0);
	return fd;
}

static void test_idmap(void)
{
	static const struct ids mapped_owner = {
		"uid 2000 with supplementary group rsstale (owner through the idmapped mount)",
		IDMAP_UID, IDMAP_UID, 1, { STALE_GID }, CAPS_DEFAULT };
	struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP };
	char idmnt[256], p[PATH_MAX];
	struct stat st;
	int tree, fd;

	mkfs_ext4("256M", "");
	mount_gated("");
	if (chmod(mnt, 0777))
		kt_fatal("chmod %s: %s", mnt, strerror(errno));
	/* On disk: owner rsuser (1000), group rsstale, 0660: the owner can read. */
	close(make_file("a", USER_UID, STALE_GID, 0660));
	close(make_file("b", USER_UID, STALE_GID, 0660));
	close(make_file("c", USER_UID, STALE_GID, 0660));

	snprintf(idmnt, sizeof(idmnt), "%s-idmap", mnt);
	if (mkdir(idmnt, 0755) && errno != EEXIST)
		kt_fatal("mkdir %s: %s", idmnt, strerror(errno));
	attr.userns_fd = (uint64_t)idmap_userns();
	tree = open_tree(AT_FDCWD, mnt, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
	if (tree < 0)
		kt_fatal("open_tree %s: %s", mnt, strerror(errno));
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof(attr)))
		kt_fatal("mount_setattr MOUNT_ATTR_IDMAP: %s (ext4 supports idmapped mounts)",
			 strerror(errno));
	if (move_mount(tree, "", AT_FDCWD, idmnt, MOVE_MOUNT_F_EMPTY_PATH))
		kt_fatal("move_mount to %s: %s", idmnt, strerror(errno));
	close(tree);
	close((int)attr.userns_fd);

	snprintf(p, sizeof(p), "%s/a", idmnt);
	if (stat(p, &st))
		kt_fatal("stat %s: %s", p, strerror(errno));
	kt_check(st.st_uid == IDMAP_UID, "through the idmapped mount the file's owner is %d (%u)",
		 IDMAP_UID, (unsigned int)st.st_uid);

	/* The raw owner (uid 1000) is not the owner through the idmapped mount. */
	kt_expect_eq(fallocate_wr_as(&member, p, NHS, 0, MiB), -EPERM,
		     "idmapped mount: uid 1000 (owner on disk, not through the mount) on a 0660 "
		     "file");
	fd = open(p, O_RDONLY);
	st = fstat_or_die(fd);
	close(fd);
	kt_check(st.st_blocks == 0, "the refused file got no blocks (%lld)",
		 (long long)st.st_blocks);
	snprintf(p, sizeof(p), "%s/b", idmnt);
	kt_expect_eq(fallocate_wr_as(&mapped_owner, p, NHS, 0, MiB), 0,
		     "idmapped mount: uid 2000 (the owner through the mount) on a 0660 file");
	/* Reference: on the plain mount uid 1000 is the owner. */
	kt_expect_eq(fallocate_wr_as(&member, path_in("c"), NHS, 0, MiB), 0,
		     "plain mount: uid 1000, the owner, on a 0660 file");
	if (umount2(idmnt, MNT_DETACH))
		kt_fatal("umount %s: %s", idmnt, strerror(errno));
	rmdir(idmnt);
	umount_or_die();
}

/* ---- blocks smaller than a page: the page cache keeps written data ---- */

static void test_subpage(void)
{
	uint8_t *map;
	int fd;

	mkfs_ext4("256M", "-b 1024");
	mount_gated("");
	fd = create_file("s", 0);
	kt_fill(fd, 0, 16 * KiB, 51);
	if (fsync(fd))
		kt_fatal("fsync: %s", strerror(errno));
	/* Cache it: uptodate pages over written 1 KiB blocks. */
	kt_expect_range(fd, 0, 16 * KiB, 51, "written data (cached)");
	kt_expect_eq(kt_fallocate(fd, NHS, 5 * KiB, KiB), 0,
		     "NO_HIDE_STALE of [5 KiB, 6 KiB): written blocks, start not page-aligned");
	kt_expect_range(fd, 0, 16 * KiB, 51, "buffered read after NO_HIDE_STALE keeps the data");
	/* An mmap write into the same page must not store zeros. */
	map = mmap(NULL, 16 * KiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		kt_fatal("mmap: %s", strerror(errno));
	map[4100] = (uint8_t)~kt_pattern_byte(51, 4100);
	if (msync(map, 16 * KiB, MS_SYNC))
		kt_fatal("msync: %s", strerror(errno));
	munmap(map, 16 * KiB);
	close(fd);
	umount_or_die();
	mount_gated("");
	fd = open(path_in("s"), O_RDONLY);
	if (fd < 0)
		kt_fatal("open s: %s", strerror(errno));
	kt_expect_range(fd, 0, 4100, 51, "after mmap write and remount: [0, 4100)");
	kt_expect_range(fd, 4101, 16 * KiB - 4101, 51,
			"after mmap write and remount: [4101, 16 KiB), the NO_HIDE_STALE "
			"range included");
	{
		uint8_t c;
		uint8_t want = (uint8_t)~kt_pattern_byte(51, 4100);

		kt_check(pread(fd, &c, 1, 4100) == 1 && c == want,
			 "the mmap write reached the disk");
	}
	close(fd);
	umount_or_die();
	fsck_clean("1 KiB blocks, sub-page NO_HIDE_STALE");
}

/* ---- jbd2 transactions of first writes ---- */

static char jbd2_info[PATH_MAX];

/* Committed transactions of the filesystem's journal so far. */
static long long jbd2_transactions(void)
{
	char buf[4096];
	long long n;

	if (kt_read_file(jbd2_info, buf, sizeof(buf)) < 0 || sscanf(buf, "%lld transactions", &n) != 1)
		kt_fatal("cannot read the transaction count from %s", jbd2_info);
	return n;
}

/* O_DIRECT|O_DSYNC 4 KiB writes into blocks 0, 4, 8, ... of name. */
static long long first_writes(const char *name, unsigned int count)
{
	int fd = open(path_in(name), O_WRONLY | O_DIRECT | O_DSYNC);
	long long before, after;
	uint8_t *buf;

	if (fd < 0 || posix_memalign((void **)&buf, BS, BS))
		kt_fatal("open %s O_DIRECT|O_DSYNC: %s", name, strerror(errno));
	memset(buf, 0x5a, BS);
	syncfs(fd);
	before = jbd2_transactions();
	for (unsigned int i = 0; i < count; i++)
		if (pwrite(fd, buf, BS, (off_t)i * 4 * BS) != BS)
			kt_fatal("pwrite %s: %s", name, strerror(errno));
	after = jbd2_transactions();
	kt_note("%s: %u first writes: jbd2 transactions %lld before, %lld after", name, count,
		before, after);
	free(buf);
	close(fd);
	return after - before;
}

static void test_jbd2(void)
{
	char real[PATH_MAX];
	const unsigned int writes = 64;
	long long nhs, plain;
	int fd;

	if (!realpath(dev, real))
		kt_fatal("realpath %s: %s", dev, strerror(errno));
	snprintf(jbd2_info, sizeof(jbd2_info), "/proc/fs/jbd2/%s-8/info", strrchr(real, '/') + 1);
	mkfs_ext4("256M", "");
	/*
	 * commit=600: no periodic commit lands in the middle of a measurement;
	 * noinit_itable: no lazy inode table zeroing adds transactions.
	 */
	mount_gated("commit=600,noinit_itable");
	if (access(jbd2_info, R_OK))
		kt_fatal("%s: %s", jbd2_info, strerror(errno));

	fd = create_file("nhs", 0);
	kt_expect_eq(kt_fallocate(fd, NHS, 0, 4 * MiB), 0, "NO_HIDE_STALE 4 MiB");
	close(fd);
	fd = create_file("plain", 0);
	kt_expect_eq(kt_fallocate(fd, 0, 0, 4 * MiB), 0, "plain fallocate 4 MiB");
	close(fd);

	nhs = first_writes("nhs", writes);
	plain = first_writes("plain", writes);
	kt_check(nhs == 0, "first writes into a NO_HIDE_STALE range committed %lld transactions "
		 "(want 0)", nhs);
	kt_check(plain >= writes, "first writes into a plain preallocation committed %lld "
		 "transactions (want at least one per write: %u)", plain, writes);
	fd = open(path_in("nhs"), O_RDONLY);
	kt_expect_extents(fd, 0, 4 * MiB, false, "NO_HIDE_STALE file after the writes");
	close(fd);
	umount_or_die();
}

/* ---- quota ---- */

/* Bytes charged to user uid on the mounted device; -errno on failure. */
static long long quota_used(uid_t uid)
{
	struct if_dqblk q;

	if (quotactl(QCMD(Q_GETQUOTA, USRQUOTA), dev, (int)uid, (caddr_t)&q))
		return -errno;
	return (long long)q.dqb_curspace;
}

static void test_quota(void)
{
	long long before, after;
	struct if_dqblk lim = { 0 };
	int fd, rc;

	mkfs_ext4("256M", "-O quota");
	rc = do_mount("ext4", "usrquota");
	if (rc)
		kt_fatal("cannot mount ext4 with the quota feature (%s): kernel/config asks for "
			 "CONFIG_QFMT_V2", kt_errname(rc));
	umount_or_die();
	mount_gated("usrquota");
	fd = create_file("q", 0);
	if (fchown(fd, USER_UID, USER_GID))
		kt_fatal("fchown: %s", strerror(errno));
	close(fd);

	before = quota_used(USER_UID);
	kt_expect_eq(fallocate_as(&member, path_in("q"), NHS, 0, 8 * MiB), 0,
		     "NO_HIDE_STALE 8 MiB as %s", member.name);
	after = quota_used(USER_UID);
	kt_check(after - before == (long long)(8 * MiB),
		 "uid %d is charged 8 MiB (%lld -> %lld bytes)", USER_UID, before, after);

	fd = open(path_in("q"), O_RDWR);
	kt_expect_eq(kt_fallocate(fd, 0, 8 * MiB, 4 * MiB), 0, "plain fallocate of 4 more MiB");
	before = quota_used(USER_UID);
	kt_expect_eq(kt_fallocate(fd, NHS, 8 * MiB, 4 * MiB), 0,
		     "NO_HIDE_STALE over those unwritten 4 MiB");
	after = quota_used(USER_UID);
	kt_check(after == before, "converting charges nothing more (%lld -> %lld bytes)", before,
		 after);
	close(fd);

	/* Limits hold: a hard limit of 16 MiB leaves room for 4 more MiB. */
	lim.dqb_bhardlimit = 16 * MiB / 1024; /* in 1 KiB quota blocks */
	lim.dqb_valid = QIF_BLIMITS;
	if (quotactl(QCMD(Q_SETQUOTA, USRQUOTA), dev, USER_UID, (caddr_t)&lim))
		kt_fatal("Q_SETQUOTA: %s", strerror(errno));
	fd = create_file("q2", 0);
	if (fchown(fd, USER_UID, USER_GID))
		kt_fatal("fchown: %s", strerror(errno));
	close(fd);
	before = quota_used(USER_UID);
	kt_expect_eq(fallocate_as(&member, path_in("q2"), NHS, 0, 8 * MiB), -EDQUOT,
		     "NO_HIDE_STALE past the hard limit");
	after = quota_used(USER_UID);
	kt_check(after <= (long long)(16 * MiB), "usage stays within the limit (%lld -> %lld bytes)",
		 before, after);

	if (unlink(path_in("q")) || unlink(path_in("q2")))
		kt_fatal("unlink: %s", strerror(errno));
	sync();
	after = quota_used(USER_UID);
	kt_check(after == 0, "after deleting the files uid %d is charged %lld bytes", USER_UID,
		 after);
	umount_or_die();
	kt_check(kt_sh("e2fsck -fn %s > /tmp/nhs-fsck.log 2>&1", dev) == 0,
		 "e2fsck -fn is clean (quota counts included)");
	kt_sh("grep -iv '^e2fsck\\|^pass' /tmp/nhs-fsck.log | sed 's/^/# fsck: /' | head -20");
}

/* ---- xfs, tmpfs ---- */

static void refused_everywhere(const char *fs, int fd)
{
	static const struct { const char *name; int mode; int want; } modes[] = {
		{ "NO_HIDE_STALE", NHS, -EOPNOTSUPP },
		{ "NO_HIDE_STALE|KEEP_SIZE", NHS | KEEP, -EOPNOTSUPP },
		{ "PUNCH_HOLE|KEEP_SIZE|NO_HIDE_STALE", PUNCH | KEEP | NHS, -EOPNOTSUPP },
		{ "ZERO_RANGE|NO_HIDE_STALE", ZERO | NHS, -EINVAL },
	};
	struct stat st;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		kt_expect_eq(kt_fallocate(fd, modes[i].mode, 0, MiB), modes[i].want, "%s: %s", fs,
			     modes[i].name);
	st = fstat_or_die(fd);
	kt_check(st.st_size == 0 && st.st_blocks == 0, "%s: nothing was allocated (size %lld, "
		 "blocks %lld)", fs, (long long)st.st_size, (long long)st.st_blocks);
	kt_expect_eq(kt_fallocate(fd, 0, 0, MiB), 0, "%s: mode 0 still works (reference)", fs);
}

static void test_other(void)
{
	int fd;

	/* xfs wants at least 300 MB */
	if (kt_sh("mkfs.xfs -q -f -d size=512m %s > /tmp/nhs-mkfs.log 2>&1", dev)) {
		kt_sh("sed 's/^/# mkfs.xfs: /' /tmp/nhs-mkfs.log | head -5");
		kt_fatal("mkfs.xfs %s failed", dev);
	}
	mount_or_die("xfs", "");
	fd = create_file("f", 0);
	refused_everywhere("xfs", fd);
	close(fd);
	umount_or_die();

	if (mount("tmpfs", mnt, "tmpfs", 0, "size=64m"))
		kt_fatal("mount tmpfs: %s", strerror(errno));
	fd = create_file("f", 0);
	refused_everywhere("tmpfs", fd);
	close(fd);
	umount_or_die();
}

/* ---- overlayfs over a gated ext4 ---- */

/*
 * overlayfs would forward the flag to the upper ext4 with the mounter's
 * credentials: patch 0001 makes it refuse (EOPNOTSUPP), even for callers
 * the ext4 gate admits, and allocate nothing.
 */
static void test_overlay(void)
{
	char ovl[256], opts[PATH_MAX * 3 + 64], upper[PATH_MAX];
	struct stat st;
	int fd;

	mkfs_ext4("256M", "");
	mount_gated("");
	if (chmod(mnt, 0777))
		kt_fatal("chmod %s: %s", mnt, strerror(errno));
	if (mkdir(path_in("lower"), 0777) || mkdir(path_in("upper"), 0777) ||
	    mkdir(path_in("work"), 0777) || chmod(path_in("upper"), 0777))
		kt_fatal("mkdir in %s: %s", mnt, strerror(errno));
	snprintf(ovl, sizeof(ovl), "%s-ovl", mnt);
	if (mkdir(ovl, 0777) && errno != EEXIST)
		kt_fatal("mkdir %s: %s", ovl, strerror(errno));
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", path_in("lower"),
		 path_in("upper"), path_in("work"));
	if (mount("overlay", ovl, "overlay", 0, opts))
		kt_fatal("mount -t overlay -o %s %s: %s (kernel/config has CONFIG_OVERLAY_FS)", opts,
			 ovl, strerror(errno));

	/* Reference: the gate admits root and members directly on ext4. */
	fd = create_file("upper/direct", 0);
	kt_expect_eq(kt_fallocate(fd, NHS, 0, MiB), 0, "NO_HIDE_STALE on the ext4 itself (root)");
	close(fd);

	snprintf(upper, sizeof(upper), "%s/f", ovl);
	fd = open(upper, O_RDWR | O_CREAT | O_TRUNC, 0666);
	if (fd < 0 || fchmod(fd, 0666))
		kt_fatal("create %s: %s", upper, strerror(errno));
	kt_expect_eq(kt_fallocate(fd, NHS, 0, MiB), -EOPNOTSUPP,
		     "NO_HIDE_STALE through overlayfs as root (CAP_SYS_RAWIO)");
	kt_expect_eq(kt_fallocate(fd, NHS | KEEP, 0, MiB), -EOPNOTSUPP,
		     "NO_HIDE_STALE|KEEP_SIZE through overlayfs");
	kt_expect_eq(kt_fallocate(fd, ZERO | NHS, 0, MiB), -EINVAL,
		     "ZERO_RANGE|NO_HIDE_STALE through overlayfs (VFS)");
	close(fd);
	kt_expect_eq(fallocate_as(&member, upper, NHS, 0, MiB), -EOPNOTSUPP,
		     "NO_HIDE_STALE through overlayfs as %s", member.name);
	if (stat(path_in("upper/f"), &st))
		kt_fatal("stat the upper file: %s", strerror(errno));
	kt_check(st.st_size == 0 && st.st_blocks == 0,
		 "the upper ext4 file got nothing (size %lld, blocks %lld)", (long long)st.st_size,
		 (long long)st.st_blocks);
	fd = open(upper, O_RDWR);
	kt_expect_eq(kt_fallocate(fd, 0, 0, MiB), 0, "plain fallocate through overlayfs (reference)");
	close(fd);
	if (umount(ovl))
		kt_fatal("umount %s: %s", ovl, strerror(errno));
	rmdir(ovl);
	umount_or_die();
}

/* ---- block device ---- */

static void test_blkdev(bool discard)
{
	int dfd = open(dev, O_RDWR | O_DIRECT), bfd = open(dev, O_RDWR), rfd = open(dev, O_RDONLY);
	uint64_t base = 16 * MiB, size, last;
	unsigned int lbs;
	int rc;

	if (dfd < 0 || bfd < 0 || rfd < 0)
		kt_fatal("open %s: %s", dev, strerror(errno));
	size = kt_dev_size(dfd);
	lbs = kt_lbs(dfd);
	last = size - lbs;
	kt_note("%s: %llu bytes, %u-byte sectors, discard_max_bytes %lld: expecting %s", dev,
		(unsigned long long)size, lbs, kt_queue_attr(dev, "discard_max_bytes"),
		discard ? "a discard" : "EOPNOTSUPP");

	/* Buffered, cached data over the device; discard the middle 256 KiB. */
	kt_fill(bfd, base, MiB, 41);
	fsync(bfd);
	kt_verify(bfd, base, MiB, 41);
	rc = kt_fallocate(bfd, PUNCH | KEEP | NHS, base + 256 * KiB, 256 * KiB);
	kt_expect_eq(rc, discard ? 0 : -EOPNOTSUPP, "PUNCH_HOLE|KEEP_SIZE|NO_HIDE_STALE (discard)");
	kt_check(kt_verify(dfd, base, 256 * KiB, 41) == UINT64_MAX &&
		 kt_verify(dfd, base + 512 * KiB, 512 * KiB, 41) == UINT64_MAX,
		 "the data around the range is untouched");
	if (rc == 0) {
		uint64_t z = kt_verify(dfd, base + 256 * KiB, 256 * KiB, 0);
		uint64_t s = kt_verify(dfd, base + 256 * KiB, 256 * KiB, 41);

		kt_note("the discarded range now reads %s (not promised either way)",
			z == UINT64_MAX ? "zeros" : s == UINT64_MAX ? "the old data" : "mixed data");
		{
			uint8_t *a, *b;

			if (posix_memalign((void **)&a, 4096, 256 * KiB) ||
			    posix_memalign((void **)&b, 4096, 256 * KiB))
				kt_fatal("out of memory");
			if (pread(bfd, a, 256 * KiB, (off_t)(base + 256 * KiB)) != (ssize_t)(256 * KiB) ||
			    pread(dfd, b, 256 * KiB, (off_t)(base + 256 * KiB)) != (ssize_t)(256 * KiB))
				kt_fatal("pread: %s", strerror(errno));
			kt_check(!memcmp(a, b, 256 * KiB),
				 "the page cache was dropped: buffered read equals O_DIRECT read");
			free(a);
			free(b);
		}
	} else {
		kt_check(kt_verify(dfd, base + 256 * KiB, 256 * KiB, 41) == UINT64_MAX,
			 "the refused range is untouched");
	}

	if (!discard) {
		/* As BLKDISCARD: a device that cannot discard keeps even dirty cached data. */
		kt_fill(bfd, base + 256 * KiB, 256 * KiB, 43);
		kt_expect_eq(kt_fallocate(bfd, PUNCH | KEEP | NHS, base + 256 * KiB, 256 * KiB),
			     -EOPNOTSUPP, "discard refused with dirty cached data over the range");
		if (fsync(bfd))
			kt_fatal("fsync %s: %s", dev, strerror(errno));
		kt_check(kt_verify(dfd, base + 256 * KiB, 256 * KiB, 43) == UINT64_MAX,
			 "the dirty cached data was kept and written back");
	}

	kt_expect_eq(kt_fallocate(dfd, PUNCH | KEEP | NHS, base + lbs / 2, lbs), -EINVAL,
		     "discard at a misaligned offset");
	kt_expect_eq(kt_fallocate(dfd, PUNCH | KEEP | NHS, size, lbs), -EINVAL,
		     "discard starting at the device end");
	kt_expect_eq(kt_fallocate(dfd, PUNCH | KEEP | NHS, last, 4 * lbs), discard ? 0 : -EOPNOTSUPP,
		     "discard crossing the device end (clamped)");
	kt_expect_eq(kt_fallocate(rfd, PUNCH | KEEP | NHS, base, lbs), -EBADF,
		     "discard through a read-only fd");

	kt_fill(dfd, base, MiB, 42);
	{
		static const struct { const char *name; int mode; int want; } modes[] = {
			{ "NO_HIDE_STALE", NHS, -EOPNOTSUPP },
			{ "NO_HIDE_STALE|KEEP_SIZE", NHS | KEEP, -EOPNOTSUPP },
			{ "PUNCH_HOLE|NO_HIDE_STALE (no KEEP_SIZE)", PUNCH | NHS, -EOPNOTSUPP },
			{ "ZERO_RANGE|NO_HIDE_STALE", ZERO | NHS, -EINVAL },
			{ "ZERO_RANGE|KEEP_SIZE|NO_HIDE_STALE", ZERO | KEEP | NHS, -EINVAL },
			{ "COLLAPSE_RANGE|NO_HIDE_STALE", FALLOC_FL_COLLAPSE_RANGE | NHS, -EINVAL },
		};

		for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
			kt_expect_eq(kt_fallocate(dfd, modes[i].mode, base, MiB), modes[i].want, "%s",
				     modes[i].name);
	}
	kt_check(kt_verify(dfd, base, MiB, 42) == UINT64_MAX, "refused modes changed nothing");
	close(dfd);
	close(bfd);
	close(rfd);
}

/* ---- concurrent: an mmap writer and in-flight AIO direct I/O ---- */

static atomic_bool conc_stop;

struct conc_writer {
	int fd;
	uint8_t *map;	/* mmap writer: the mapping of [0, len) */
	uint64_t off, len;
	long rounds, errors;
	uint32_t last;	/* seed of the last complete round */
};

static void *mmap_writer_main(void *arg)
{
	struct conc_writer *w = arg;

	while (!atomic_load(&conc_stop)) {
		uint32_t seed = 200 + (uint32_t)(w->rounds % 50);

		for (uint64_t i = 0; i < w->len; i++)
			w->map[i] = kt_pattern_byte(seed, w->off + i);
		w->last = seed;
		w->rounds++;
	}
	return NULL;
}

/* Rounds of 8 AIO O_DIRECT writes of 64 KiB over [off, off + 512 KiB). */
static void *aio_writer_main(void *arg)
{
	enum { N = 8, LEN = 64 * 1024 };
	struct conc_writer *w = arg;
	aio_context_t ctx = 0;
	struct iocb cb[N], *cbp[N];
	struct io_event ev[N];
	uint8_t *buf;

	if (syscall(SYS_io_setup, N, &ctx) || posix_memalign((void **)&buf, 4096, N * LEN)) {
		w->errors++;
		return NULL;
	}
	while (!atomic_load(&conc_stop)) {
		uint32_t seed = 300 + (uint32_t)(w->rounds % 50);
		long got = 0;

		for (uint64_t i = 0; i < N * LEN; i++)
			buf[i] = kt_pattern_byte(seed, w->off + i);
		for (int i = 0; i < N; i++) {
			memset(&cb[i], 0, sizeof(cb[i]));
			cb[i].aio_fildes = (uint32_t)w->fd;
			cb[i].aio_lio_opcode = IOCB_CMD_PWRITE;
			cb[i].aio_buf = (uint64_t)(uintptr_t)(buf + i * LEN);
			cb[i].aio_nbytes = LEN;
			cb[i].aio_offset = (int64_t)(w->off + i * LEN);
			cbp[i] = &cb[i];
		}
		if (syscall(SYS_io_submit, ctx, N, cbp) != N) {
			w->errors++;
			break;
		}
		while (got < N) {
			long n = syscall(SYS_io_getevents, ctx, 1, N - got, ev, NULL);

			if (n <= 0) {
				w->errors++;
				break;
			}
			for (long i = 0; i < n; i++)
				if (ev[i].res != LEN)
					w->errors++;
			got += n;
		}
		w->last = seed;
		w->rounds++;
	}
	syscall(SYS_io_destroy, ctx);
	free(buf);
	return NULL;
}

static void test_concurrent(void)
{
	const uint64_t len = 4 * MiB;
	struct conc_writer mw = { 0 }, aw = { 0 };
	pthread_t mt, at;
	long calls = 0, failed = 0;
	double end;
	struct timespec ts;
	int fd, dfd;

	mkfs_ext4("256M", "");
	mount_gated("");
	fd = create_file("conc", 0);
	if (ftruncate(fd, (off_t)len))
		kt_fatal("ftruncate: %s", strerror(errno));
	dfd = open(path_in("conc"), O_RDWR | O_DIRECT);
	if (dfd < 0)
		kt_fatal("open conc O_DIRECT: %s", strerror(errno));
	mw.off = 0;
	mw.len = MiB;
	mw.map = mmap(NULL, mw.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mw.map == MAP_FAILED)
		kt_fatal("mmap: %s", strerror(errno));
	aw.fd = dfd;
	aw.off = 2 * MiB;
	if (pthread_create(&mt, NULL, mmap_writer_main, &mw) ||
	    pthread_create(&at, NULL, aio_writer_main, &aw))
		kt_fatal("pthread_create");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + 4;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (ts.tv_sec + ts.tv_nsec / 1e9 >= end)
			break;
		if (kt_fallocate(fd, NHS, 0, len))
			failed++;
		calls++;
	}
	atomic_store(&conc_stop, true);
	pthread_join(mt, NULL);
	pthread_join(at, NULL);
	kt_note("%ld NO_HIDE_STALE calls, %ld mmap rounds (last seed %u), %ld AIO rounds "
		"(last seed %u)", calls, mw.rounds, mw.last, aw.rounds, aw.last);
	kt_expect_eq(failed, 0, "no NO_HIDE_STALE call failed");
	kt_check(calls > 3 && mw.rounds > 1 && aw.rounds > 1,
		 "calls and writer rounds overlapped (%ld, %ld, %ld)", calls, mw.rounds, aw.rounds);
	kt_expect_eq(aw.errors, 0, "every AIO direct write completed in full");
	kt_expect_eq(msync(mw.map, mw.len, MS_SYNC) ? -errno : 0, 0, "msync of the mmap writes");
	kt_expect_eq(kt_fallocate(fd, NHS, 0, len), 0, "a last NO_HIDE_STALE after the writers");
	kt_expect_range(fd, mw.off, mw.len, mw.last, "the mmap part holds the last round");
	kt_expect_range(dfd, aw.off, 512 * KiB, aw.last, "the AIO part holds the last round");
	kt_expect_extents(fd, 0, len, false, "after the concurrent writers");
	munmap(mw.map, mw.len);
	close(dfd);
	close(fd);
	umount_or_die();
	mount_gated("");
	fd = open(path_in("conc"), O_RDONLY);
	if (fd < 0)
		kt_fatal("open after remount: %s", strerror(errno));
	kt_expect_range(fd, mw.off, mw.len, mw.last, "after remount: the mmap part");
	kt_expect_range(fd, aw.off, 512 * KiB, aw.last, "after remount: the AIO part");
	close(fd);
	umount_or_die();
	fsck_clean("concurrent writers");
}

int main(int argc, char **argv)
{
	const char *what;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 3)
		kt_fatal("usage: t_nohide_stale gate|fiemap|stale|jbd2|quota|other|overlay|edges|"
			 "journal|variants|concurrent|tail|taileio|subpage|idmap DEVICE MOUNTPOINT | "
			 "blkdev DEVICE [--expect=discard|eopnotsupp]");
	what = argv[1];
	dev = argv[2];
	mnt = argc > 3 ? argv[3] : NULL;
	snprintf(opt_gid, sizeof(opt_gid), "nohide_stale_gid=%d", STALE_GID);
	if (getgrgid(STALE_GID) == NULL)
		kt_note("group %d has no name here; testing by number", STALE_GID);

	probe_vfs();
	if (!strcmp(what, "blkdev")) {
		bool discard = kt_queue_attr(dev, "discard_max_bytes") > 0;

		if (argc > 3 && !strcmp(argv[3], "--expect=discard"))
			discard = true;
		else if (argc > 3 && !strcmp(argv[3], "--expect=eopnotsupp"))
			discard = false;
		else if (argc > 3)
			kt_fatal("unknown argument %s", argv[3]);
		test_blkdev(discard);
		return kt_done();
	}
	if (!mnt)
		kt_fatal("%s needs a mount point", what);
	if (mkdir(mnt, 0755) && errno != EEXIST)
		kt_fatal("mkdir %s: %s", mnt, strerror(errno));
	if (!strcmp(what, "gate"))
		test_gate();
	else if (!strcmp(what, "fiemap"))
		test_fiemap();
	else if (!strcmp(what, "stale"))
		test_stale();
	else if (!strcmp(what, "jbd2"))
		test_jbd2();
	else if (!strcmp(what, "quota"))
		test_quota();
	else if (!strcmp(what, "other"))
		test_other();
	else if (!strcmp(what, "overlay"))
		test_overlay();
	else if (!strcmp(what, "edges"))
		test_edges();
	else if (!strcmp(what, "journal"))
		test_journal();
	else if (!strcmp(what, "variants"))
		test_variants();
	else if (!strcmp(what, "concurrent"))
		test_concurrent();
	else if (!strcmp(what, "tail"))
		test_tail();
	else if (!strcmp(what, "taileio"))
		test_taileio();
	else if (!strcmp(what, "subpage"))
		test_subpage();
	else if (!strcmp(what, "idmap"))
		test_idmap();
	else
		kt_fatal("unknown test %s", what);
	return kt_done();
}
