/* SPDX-License-Identifier: MIT */
/*
 * rawstore/object.h: reading objects, attributes, omap and listings.
 *
 * Reads see committed transactions only.  They run in the caller's thread
 * and may run concurrently with each other and with commits.
 */
#ifndef RAWSTORE_OBJECT_H
#define RAWSTORE_OBJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rawstore;

struct rawstore_stat {
	size_t struct_size;
	uint64_t size;			/* bytes */
	uint64_t allocated;		/* bytes of device space used */
	uint64_t extents;		/* extent map entries */
	uint64_t alloc_hint;		/* bytes, 0 if none */
	uint64_t nid;			/* internal object id */
	int is_inline;			/* data kept in RocksDB */
};

/* -ENOENT if the object (or collection) does not exist, -EUCLEAN corrupt
 * record.  Set out->struct_size first. */
int rawstore_stat(struct rawstore *st, const char *coll, const void *name, size_t nlen,
		  struct rawstore_stat *out);

/* One extent of an object's data on the device (rawstore_extent_iterate). */
struct rawstore_extent {
	size_t struct_size;		/* sizeof(struct rawstore_extent) */
	uint64_t offset;		/* bytes in the object */
	uint64_t device_offset;		/* bytes on the device */
	uint64_t length;		/* bytes */
	uint64_t csum_blocks;		/* crc32c checksum blocks covering it */
	int64_t csum_bad;		/* with verify: blocks whose data on the device
					 * does not match its checksum or could not be
					 * read; -1 when not verified */
};

typedef int (*rawstore_extent_fn)(void *arg, const struct rawstore_extent *e);

/*
 * Call @fn for each extent of the object's data on the device, in object
 * order (an inline object, or one never written, has none).  With
 * @verify, each extent is read and every checksum block compared with its
 * recorded crc32c (pending deferred writes included), as fsck --deep
 * does.  The extents are collected first: @fn may call the store.  A
 * nonzero return of @fn stops the walk.  Returns the number of extents
 * visited, or -ENOENT no such object or collection, -EINVAL bad
 * arguments, -ENOMEM, -EUCLEAN a corrupt object record.
 */
int rawstore_extent_iterate(struct rawstore *st, const char *coll, const void *name,
			    size_t nlen, int verify, rawstore_extent_fn fn, void *arg);

/*
 * Read up to @len bytes at @off into @buf (any alignment).  Returns the
 * number of bytes read (short only at end of object, 0 at or past it), or
 * -ENOENT, -EIO (device error or checksum mismatch; nothing is returned).
 */
ssize_t rawstore_read(struct rawstore *st, const char *coll, const void *name, size_t nlen,
		      uint64_t off, void *buf, size_t len);

/* Copy attribute @attr into @buf (at most @size bytes) and return its full
 * length; -ENODATA if absent, -ENOENT if the object is missing. */
ssize_t rawstore_getattr(struct rawstore *st, const char *coll, const void *name, size_t nlen,
			 const char *attr, void *buf, size_t size);

/* Same for one omap key. */
ssize_t rawstore_omap_get(struct rawstore *st, const char *coll, const void *name, size_t nlen,
			  const void *key, size_t klen, void *buf, size_t size);
/* Same for the omap header (-ENODATA if never set). */
ssize_t rawstore_omap_get_header(struct rawstore *st, const char *coll, const void *name,
				 size_t nlen, void *buf, size_t size);

/* Return non-zero from a callback to stop the iteration early. */
typedef int (*rawstore_kv_fn)(void *arg, const void *key, size_t klen, const void *val,
			      size_t vlen);
typedef int (*rawstore_name_fn)(void *arg, const void *name, size_t nlen);

/* Visit omap keys >= @start (NULL = all) in bytewise order; returns the
 * number visited. */
int rawstore_omap_iterate(struct rawstore *st, const char *coll, const void *name, size_t nlen,
			  const void *start, size_t slen, rawstore_kv_fn fn, void *arg);
/* Visit all attributes in name order; returns the number visited. */
int rawstore_attr_iterate(struct rawstore *st, const char *coll, const void *name, size_t nlen,
			  rawstore_kv_fn fn, void *arg);

/*
 * List object names of @coll in bytewise order, starting at @start
 * (inclusive; NULL = from the first), at most @limit (0 = no limit).
 * Returns the number listed or -ENOENT if the collection does not exist.
 */
int rawstore_list(struct rawstore *st, const char *coll, const void *start, size_t slen,
		  unsigned int limit, rawstore_name_fn fn, void *arg);

/* List collections in name order; returns the number listed. */
int rawstore_coll_list(struct rawstore *st, rawstore_name_fn fn, void *arg);

/* 1 if @coll exists, 0 if not, or -errno. */
int rawstore_coll_exists(struct rawstore *st, const char *coll);

#ifdef __cplusplus
}
#endif

#endif /* RAWSTORE_OBJECT_H */
