// SPDX-License-Identifier: MIT
#include <errno.h>
#include <string.h>

#include "rawstore/rawstore.h"


const char *rawstore_version(void)
{
	return RAWSTORE_VERSION;
}

const char *rawstore_strerror(int err)
{
	switch (-err) {
	case EUCLEAN:
		return "metadata or superblock is corrupt";
	case EBADMSG:
		return "data checksum mismatch";
	case EPROTO:
		return "unsupported on-disk format version";
	case EMEDIUMTYPE:
		return "no rawstore superblock on the device";
	case EXDEV:
		return "device and metadata directory belong to different stores";
	case ENXIO:
		return "device is smaller than the store recorded on it";
	default:
		return strerror(err < 0 ? -err : err);
	}
}
