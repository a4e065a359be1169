// SPDX-License-Identifier: GPL-2.0
/*
 * t_provbio: submit one REQ_OP_PROVISION bio to a block device and report
 * how it completed.  Guest test helper for kernel/patches 0005: a
 * zero-length provision bio must be refused in submit_bio_noacct() before
 * any driver sees it, and no user path can build one (vfs_fallocate()
 * refuses a zero length, blkdev_issue_provision() never issues one), so
 * the test needs this module.  It is built against the patched tree by
 * kernel/build and loaded only inside the QEMU guest.
 *
 *   modprobe t_provbio dev=/dev/loop0 sector=0 sectors=0
 *   cat /sys/module/t_provbio/parameters/status   # errno of the bio, 0 ok
 *   rmmod t_provbio
 *
 * Loading fails (with the errno) only when the device cannot be opened.
 */
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/module.h>

static char *dev;
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "block device path to submit the provision bio to");

static unsigned long long sector;
module_param(sector, ullong, 0444);
MODULE_PARM_DESC(sector, "first 512-byte sector of the bio");

static unsigned int sectors;
module_param(sectors, uint, 0444);
MODULE_PARM_DESC(sectors, "length of the bio in 512-byte sectors (0 allowed)");

static int status = 1;
module_param(status, int, 0444);
MODULE_PARM_DESC(status, "result: negative errno of the bio, 0 on success");

static int __init t_provbio_init(void)
{
	const fmode_t mode = FMODE_READ | FMODE_WRITE;
	struct block_device *bdev;
	struct bio *bio;

	if (!dev)
		return -EINVAL;
	bdev = blkdev_get_by_path(dev, mode, NULL);
	if (IS_ERR(bdev))
		return PTR_ERR(bdev);
	bio = bio_alloc(bdev, 0, REQ_OP_PROVISION, GFP_KERNEL);
	bio->bi_iter.bi_sector = sector;
	bio->bi_iter.bi_size = sectors << SECTOR_SHIFT;
	status = submit_bio_wait(bio);
	bio_put(bio);
	blkdev_put(bdev, mode);
	pr_info("t_provbio: %s sector %llu sectors %u: status %d\n",
		dev, sector, sectors, status);
	return 0;
}

static void __exit t_provbio_exit(void)
{
}

module_init(t_provbio_init);
module_exit(t_provbio_exit);
MODULE_DESCRIPTION("rawstore guest test: submit one provision bio");
MODULE_LICENSE("GPL");
