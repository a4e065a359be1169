// SPDX-License-Identifier: GPL-2.0
/*
 * t_wzfault: a device-mapper target that maps a whole device like linear
 * and, when told to, fails every REQ_OP_WRITE_ZEROES bio with an I/O
 * error while passing everything else through.  Guest test helper for
 * kernel/patches 0004: a write-zeroes that fails part way must leave no
 * written extent over blocks that were not zeroed.  dm-flakey and dm-dust
 * do not pass write-zeroes in 6.1, scsi_debug injects errors into reads
 * only, so the test needs this module.  Loaded only inside the QEMU guest.
 *
 *   modprobe t_wzfault
 *   dmsetup create f --table "0 <sectors> rs_wzfault /dev/vdX"
 *   dmsetup message f 0 fail 1     # fail write-zeroes from now on
 *   dmsetup status f               # "... failing <0|1> failed <n>"
 */
#include <linux/bio.h>
#include <linux/device-mapper.h>
#include <linux/module.h>
#include <linux/slab.h>

struct wzfault {
	struct dm_dev *dev;
	bool failing;
	atomic_t failed;
};

static int wzfault_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct wzfault *wf;
	int ret;

	if (argc != 1) {
		ti->error = "Want one argument: the device";
		return -EINVAL;
	}
	wf = kzalloc(sizeof(*wf), GFP_KERNEL);
	if (!wf) {
		ti->error = "Out of memory";
		return -ENOMEM;
	}
	ret = dm_get_device(ti, argv[0], dm_table_get_mode(ti->table), &wf->dev);
	if (ret) {
		ti->error = "Device lookup failed";
		kfree(wf);
		return ret;
	}
	atomic_set(&wf->failed, 0);
	ti->num_flush_bios = 1;
	ti->num_discard_bios = 1;
	ti->num_write_zeroes_bios = 1;
	ti->private = wf;
	return 0;
}

static void wzfault_dtr(struct dm_target *ti)
{
	struct wzfault *wf = ti->private;

	dm_put_device(ti, wf->dev);
	kfree(wf);
}

static int wzfault_map(struct dm_target *ti, struct bio *bio)
{
	struct wzfault *wf = ti->private;

	if (bio_op(bio) == REQ_OP_WRITE_ZEROES && READ_ONCE(wf->failing)) {
		atomic_inc(&wf->failed);
		return DM_MAPIO_KILL;
	}
	bio_set_dev(bio, wf->dev->bdev);
	if (bio_sectors(bio) || op_is_zone_mgmt(bio_op(bio)))
		bio->bi_iter.bi_sector = dm_target_offset(ti, bio->bi_iter.bi_sector);
	return DM_MAPIO_REMAPPED;
}

static int wzfault_message(struct dm_target *ti, unsigned int argc, char **argv,
			   char *result, unsigned int maxlen)
{
	struct wzfault *wf = ti->private;

	if (argc == 2 && !strcmp(argv[0], "fail") &&
	    (!strcmp(argv[1], "0") || !strcmp(argv[1], "1"))) {
		WRITE_ONCE(wf->failing, argv[1][0] == '1');
		return 0;
	}
	return -EINVAL;
}

static void wzfault_status(struct dm_target *ti, status_type_t type,
			   unsigned int status_flags, char *result,
			   unsigned int maxlen)
{
	struct wzfault *wf = ti->private;
	unsigned int sz = 0;

	switch (type) {
	case STATUSTYPE_INFO:
		DMEMIT("failing %d failed %d", READ_ONCE(wf->failing),
		       atomic_read(&wf->failed));
		break;
	case STATUSTYPE_TABLE:
		DMEMIT("%s", wf->dev->name);
		break;
	case STATUSTYPE_IMA:
		*result = '\0';
		break;
	}
}

static int wzfault_iterate_devices(struct dm_target *ti,
				   iterate_devices_callout_fn fn, void *data)
{
	struct wzfault *wf = ti->private;

	return fn(ti, wf->dev, 0, ti->len, data);
}

static struct target_type wzfault_target = {
	.name = "rs_wzfault",
	.version = {1, 0, 0},
	.module = THIS_MODULE,
	.ctr = wzfault_ctr,
	.dtr = wzfault_dtr,
	.map = wzfault_map,
	.message = wzfault_message,
	.status = wzfault_status,
	.iterate_devices = wzfault_iterate_devices,
};

static int __init wzfault_init(void)
{
	return dm_register_target(&wzfault_target);
}

static void __exit wzfault_exit(void)
{
	dm_unregister_target(&wzfault_target);
}

module_init(wzfault_init);
module_exit(wzfault_exit);
MODULE_DESCRIPTION("rawstore guest test: dm target failing write-zeroes on demand");
MODULE_LICENSE("GPL");
