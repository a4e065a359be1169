# SPDX-License-Identifier: MIT
"""Swift's replicated-policy DiskFile on rawstore devices, through rawstored.

Layout (docs/swift.md, "The Swift backend"): Swift's tree
``<devices>/<dev>/objects[-N]/<part>/<suffix>/<hash>/<timestamp>.<ext>``
maps onto the store served at ``rawstore_socket`` for ``<dev>``:

- collection ``objects[-N]/<part>`` per partition,
- object ``<suffix>/<hash>/<timestamp>.<ext>`` per Swift file, its body
  the object's data (``.data``), empty for ``.meta`` and ``.ts``,
- attribute ``swift.metadata`` holding the pickled metadata (any size: no
  xattr limit) and ``swift.metadata_checksum`` its md5, as Swift keeps in
  its xattrs,
- collection ``tmp[-N]`` for the bodies of PUTs in progress, published by
  one transaction that sets the metadata and renames the body into its
  partition.

- collection ``hashes/objects[-N]``, object ``<part>`` per partition: the
  suffix-hash cache, Swift's ``hashes.pkl`` as its attribute
  ``swift.hashes`` and Swift's ``hashes.invalid`` as omap keys
  ``<suffix>/<unique>``; a change to a suffix sets its key in the same
  transaction (``invalidate_records``).

What stays on the host file system, under ``<devices>/<dev>``, exactly as
Swift keeps it: the partition locks and ``async_pending``.

How the Swift rules are kept unchanged: the methods of
``swift.obj.diskfile`` that decide (which of ``.data``, ``.meta`` and
``.ts`` wins, what is obsolete or reclaimable, expiry, name and size
checks, the suffix-hash recipe, the hash cache's consolidation) are not
rewritten here.  Each manager runs Swift's own functions with the few
names they do I/O through -- ``os.listdir``, ``os.rmdir``, ``os.fstat``,
``os.path.exists``, ``open``, ``read_metadata``, ``remove_file``,
``quarantine_renamer`` and ``tpool`` -- bound to the store instead of the
file system (``_rebind``).  ``tpool`` runs inline: the broker's sockets are
green, so a call only blocks its own greenthread, and a green socket must
not be used from tpool's native threads.
"""

import errno
import hashlib
import io
import json
import os
import pickle
import random
import time
import types
import uuid

from swift.common.exceptions import (DiskFileError, DiskFileNoSpace,
                                     DiskFileNotExist,
                                     DiskFileBadMetadataChecksum)
from swift.common import utils
from swift.obj import diskfile as sdf

from rawstore_swift.broker import Broker, BrokerError, Txn

METADATA_ATTR = 'swift.metadata'
CHECKSUM_ATTR = 'swift.metadata_checksum'
HASHES_ATTR = 'swift.hashes'
# A PUT's body is sent to the store in transactions of this much data; the
# last piece goes with the metadata and the rename.
FLUSH_BYTES = 8 << 20
READ_AHEAD = 1 << 20


def _rebind(func, env):
    """``func`` with the global names in ``env`` replaced."""
    g = dict(func.__globals__)
    g.update(env)
    f = types.FunctionType(func.__code__, g, func.__name__,
                           func.__defaults__, func.__closure__)
    f.__kwdefaults__ = func.__kwdefaults__
    f.__doc__ = func.__doc__
    return f


class _InlineTpool(object):
    @staticmethod
    def execute(fn, *args, **kwargs):
        return fn(*args, **kwargs)


def _oserror(err, path):
    return OSError(err, os.strerror(err), path)


class _Where(object):
    """A Swift path in the store: device, collection, name prefix."""

    def __init__(self, mgr, path):
        # Swift's paths are absolute, under devices: a prefix test, not
        # os.path.relpath (which resolves both paths, five times a PUT)
        norm = os.path.normpath(path if os.path.isabs(path)
                                else os.path.abspath(path))
        if not norm.startswith(mgr.devices_prefix):
            raise _oserror(errno.ENOENT, path)
        parts = norm[len(mgr.devices_prefix):].split(os.sep)
        if len(parts) < 3:
            raise _oserror(errno.ENOENT, path)
        self.path = path
        self.broker = mgr.broker(parts[0])
        self.coll = parts[1] + '/' + parts[2]
        self.rest = parts[3:]          # suffix, hash, file: as deep as given
        self.name = '/'.join(self.rest).encode('utf-8', 'surrogateescape')


class ObjectFile(object):
    """A read-only file object over one store object (Swift's ``fp``)."""

    def __init__(self, where):
        self.where = where
        self.name = where.path
        try:
            self.size = where.broker.stat(where.coll, where.name)[0]
        except BrokerError as e:
            raise IOError(e.errno, e.strerror, where.path)
        self.pos = 0
        self._buf = b''
        self._buf_off = 0
        self.closed = False

    def fileno(self):
        return self     # only _StoreOs.fstat takes it

    def tell(self):
        return self.pos

    def seek(self, off, whence=0):
        self.pos = off if whence == 0 else (
            self.pos + off if whence == 1 else self.size + off)
        return self.pos

    def read(self, n=-1):
        if n is None or n < 0:
            n = max(self.size - self.pos, 0)
        lo = self.pos - self._buf_off
        if lo < 0 or lo + n > len(self._buf):
            want = max(n, READ_AHEAD)
            w = self.where
            try:
                self._buf = w.broker.read(w.coll, w.name, self.pos, want)
            except BrokerError as e:
                raise IOError(e.errno, e.strerror, w.path)
            self._buf_off, lo = self.pos, 0
        out = self._buf[lo:lo + n]
        self.pos += len(out)
        return out

    def close(self):
        self.closed = True
        self._buf = b''


class _StorePath(object):
    def __init__(self, mgr):
        self._mgr = mgr

    def __getattr__(self, name):
        return getattr(os.path, name)

    def exists(self, path):
        return self._mgr.store_exists(path)


class _StoreOs(object):
    """The ``os`` Swift's functions see: listings from the store."""

    def __init__(self, mgr):
        self._mgr = mgr
        self.path = _StorePath(mgr)

    def __getattr__(self, name):
        return getattr(os, name)

    def listdir(self, path):
        return self._mgr.store_listdir(path)

    def rmdir(self, path):
        # Nothing to remove: a "directory" is the names under a prefix.
        # Swift asks to learn whether it was empty.
        try:
            if self._mgr.store_listdir(path):
                raise _oserror(errno.ENOTEMPTY, path)
        except OSError as e:
            if e.errno != errno.ENOENT:
                raise

    def fstat(self, fd):
        if isinstance(fd, ObjectFile):
            st = [0] * 10
            st[6] = fd.size     # st_size
            return os.stat_result(st)
        return os.fstat(fd)


class RawstoreDiskFileReader(sdf.DiskFileReader):
    def _drop_cache(self, fd, offset, length):
        pass    # no page cache in between: the store reads with O_DIRECT


class RawstoreDiskFileWriter(sdf.DiskFileWriter):
    """Streams the body into ``tmp[-N]/<time>-<uuid>`` and publishes it
    with the metadata in one transaction (a rename into the partition);
    a writer that dies before leaves only a temporary object, which
    ``RawstoreDiskFileManager.cleanup_tmp`` removes."""

    def open(self):
        if self._fd is not None:
            raise ValueError('DiskFileWriter is already open')
        if self.next_part_power:
            raise DiskFileError('rawstore backend: a partition power '
                                'increase (next_part_power) is not supported')
        df = self._diskfile
        self._where = _Where(self.manager, self._datadir)
        self._tmpcoll = sdf.get_tmp_dir(df.policy)
        self._tmpname = '%016x-%s' % (time.time_ns(), uuid.uuid4().hex)
        self._buf = bytearray()
        self._staged = 0
        self._check_reserve()
        self._fd = self     # "open": Swift's checks test _fd
        return self

    def _check_reserve(self):
        """Swift's ``fallocate_reserve``, against the store: the stock
        writer's fallocate() refuses (DiskFileNoSpace) a PUT that would
        leave no more than the reserve free on the file system; here the
        free space is the store's (STATFS), not that of the directory
        under /srv/node.  As in Swift, ``disable_fallocate`` turns the
        check off."""
        if not utils.FALLOCATE_RESERVE or \
                not getattr(utils, '_fallocate_enabled', True):
            return
        st = self._where.broker.statfs()
        size = max(self._size or 0, 0)
        free = st['free'] - size
        if utils.FALLOCATE_IS_PERCENT:
            free = float(free) / float(st['data_size']) * 100
        if float(free) <= float(utils.FALLOCATE_RESERVE):
            self.logger.warning(
                'rawstore: %s: %d bytes free, %d asked, reserve %g%s: '
                'no space', self._datadir, st['free'], size,
                utils.FALLOCATE_RESERVE,
                '%' if utils.FALLOCATE_IS_PERCENT else ' bytes')
            raise DiskFileNoSpace()

    def _submit(self, txn, colls):
        b = self._where.broker
        for attempt in (0, 1):
            try:
                for c in colls:
                    b.ensure_coll(c)
                b.submit(txn)
                return
            except BrokerError as e:
                if e.errno == errno.ENOSPC:
                    raise DiskFileNoSpace()
                if e.errno != errno.ENOENT or attempt:
                    raise
                # A collection went away under the cache (a partition
                # removed by replication): make it again, once.
                b.colls.clear()

    def put(self, metadata):
        # Swift's DiskFileWriter.put calls the base _put by super(): call
        # ours, which runs _finalize_put inline.
        self._put(metadata, True)

    def write(self, chunk):
        if not self._fd:
            raise ValueError('Writer is not open')
        self._chunks_etag.update(chunk)
        self._upload_size += len(chunk)
        self._buf += chunk
        if len(self._buf) >= FLUSH_BYTES:
            t = Txn()
            t.write(self._tmpcoll, self._tmpname, self._staged, self._buf)
            self._submit(t, [self._tmpcoll])
            self._staged += len(self._buf)
            self._buf = bytearray()

    def _finalize_put(self, metadata, target_path, cleanup,
                      logger_thread_locals):
        if logger_thread_locals is not None:
            self.logger.thread_locals = logger_thread_locals
        dst = _Where(self.manager, target_path)
        meta = pickle.dumps(sdf._encode_metadata(metadata),
                            sdf.PICKLE_PROTOCOL)
        t = Txn()
        if self._buf:
            t.write(self._tmpcoll, self._tmpname, self._staged, self._buf)
        elif not self._staged:
            t.touch(self._tmpcoll, self._tmpname)
        t.setattr(self._tmpcoll, self._tmpname, METADATA_ATTR, meta)
        t.setattr(self._tmpcoll, self._tmpname, CHECKSUM_ATTR,
                  hashlib.md5(meta).hexdigest().encode('ascii'))
        t.rename(self._tmpcoll, self._tmpname, dst.coll, dst.name)
        # The suffix is marked dirty in the transaction that changes it:
        # a replicator never caches a hash without the new file.
        hcoll = self.manager.invalidate_records(
            t, os.path.dirname(self._datadir))
        self._submit(t, [self._tmpcoll, dst.coll, hcoll])
        self._put_succeeded = True
        self._buf = bytearray()
        if cleanup:
            try:
                self.manager.cleanup_ondisk_files(self._datadir)
            except OSError:
                self.logger.exception('Problem cleaning up %s',
                                      self._datadir)

    def close(self):
        if self._fd and self._staged and not self._put_succeeded:
            t = Txn()
            t.remove(self._tmpcoll, self._tmpname)
            try:
                self._where.broker.submit(t)
            except OSError:
                self.logger.exception('Error removing temporary object '
                                      '%s/%s', self._tmpcoll, self._tmpname)
        self._fd = None
        self._buf = bytearray()


# Swift's _put computes the file name and calls _finalize_put through
# tpool: run it inline (green sockets).
RawstoreDiskFileWriter._put = _rebind(sdf.BaseDiskFileWriter._put,
                                      {'tpool': _InlineTpool})


class RawstoreDiskFile(sdf.DiskFile):
    reader_cls = RawstoreDiskFileReader
    writer_cls = RawstoreDiskFileWriter

    def open(self, *a, **kw):
        return self._manager.swift_df['open'](self, *a, **kw)

    def _construct_from_data_file(self, *a, **kw):
        return self._manager.swift_df['_construct_from_data_file'](
            self, *a, **kw)

    def _failsafe_read_metadata(self, *a, **kw):
        return self._manager.swift_df['_failsafe_read_metadata'](
            self, *a, **kw)

    def _verify_data_file(self, *a, **kw):
        return self._manager.swift_df['_verify_data_file'](self, *a, **kw)


class RawstoreDiskFileManager(sdf.DiskFileManager):
    """The ``swift.diskfile`` entry point ``replication.rawstore``.

    Options (``[app:object-server]`` and the replicator's section):
    ``rawstore_socket`` -- the broker socket of a device, ``{device}``
    replaced by its name (default ``/run/rawstore/{device}.sock``);
    ``rawstore_broker_connections`` -- idle connections kept per device
    (default 64; past them a request opens and closes its own).
    A device is available when its socket exists (``mount_check`` has no
    mount to check).
    """
    diskfile_cls = RawstoreDiskFile

    _MANAGER_FUNCS = ('cleanup_ondisk_files', '_hash_suffix_dir', '_listdir',
                      'get_diskfile_and_filenames_from_hash', 'get_hashes',
                      '_BaseDiskFileManager__get_hashes')
    _DISKFILE_FUNCS = ('open', '_construct_from_data_file',
                       '_failsafe_read_metadata', '_verify_data_file')

    def __init__(self, conf, logger):
        super().__init__(conf, logger)
        self.devices = os.path.normpath(os.path.abspath(self.devices))
        self.devices_prefix = self.devices.rstrip(os.sep) + os.sep
        self.socket_fmt = conf.get('rawstore_socket',
                                   '/run/rawstore/{device}.sock')
        self.use_splice = False
        self.use_linkat = False
        self._brokers = {}
        self.broker_connections = int(conf.get(
            'rawstore_broker_connections', 64))
        env = {'os': _StoreOs(self), 'open': self._open_file,
               'read_metadata': self.read_store_metadata,
               'remove_file': self._remove_file,
               'quarantine_renamer': self.quarantine_renamer,
               'read_hashes': self.read_hashes,
               'write_hashes': self.write_hashes,
               'tpool': _InlineTpool}
        for name in self._MANAGER_FUNCS:
            fn = getattr(sdf.BaseDiskFileManager, name)
            setattr(self, name, types.MethodType(_rebind(fn, env), self))
        self.swift_df = dict(
            (name, _rebind(getattr(sdf.BaseDiskFile, name), env))
            for name in self._DISKFILE_FUNCS)
        # Swift's read_hashes (its checks of a cache's keys), reading
        # the store's attribute instead of hashes.pkl
        self._swift_read_hashes = _rebind(sdf.read_hashes,
                                          {'open': self._open_hashes})

    # -- devices ------------------------------------------------------

    def socket_path(self, device):
        return self.socket_fmt.format(device=device)

    def broker(self, device):
        b = self._brokers.get(device)
        if b is None:
            b = self._brokers[device] = Broker(
                self.socket_path(device), self.broker_connections)
        return b

    def get_dev_path(self, device, mount_check=None):
        if mount_check is False or (mount_check is None and
                                    not self.mount_check):
            return os.path.join(self.devices, device)
        if '/' in device or not os.path.exists(self.socket_path(device)):
            return None
        return os.path.join(self.devices, device)

    # -- the file system calls of Swift's functions, on the store ----

    def store_listdir(self, path):
        """Names under a partition, suffix or hash path; ENOENT when the
        partition has no collection, [] for an empty prefix."""
        w = _Where(self, path)
        if len(w.rest) > 2:
            raise _oserror(errno.ENOTDIR, path)
        prefix = w.name + b'/' if w.rest else b''
        # the first name past every one under the prefix: '/' + 1 is '0'
        stop = w.name + b'0' if w.rest else None
        depth = len(w.rest)
        out = []
        try:
            if depth == 0:
                # One name per suffix: skip over the rest of each.
                after = b''
                while True:
                    got = w.broker.list(w.coll, after=after, limit=1)
                    if not got:
                        break
                    suffix = got[0].split(b'/', 1)[0]
                    out.append(suffix)
                    after = suffix + b'0'
            else:
                for name in w.broker.list(w.coll, after=prefix, stop=stop):
                    part = name[len(prefix):].split(b'/', 1)[0]
                    if not out or out[-1] != part:
                        out.append(part)
        except BrokerError as e:
            if e.errno == errno.ENOENT:
                raise _oserror(errno.ENOENT, path)
            raise
        return [n.decode('utf-8', 'surrogateescape') for n in out]

    def store_exists(self, path):
        """A partition: its collection exists; a suffix or hash: names
        are under it (one LIST of one name)."""
        w = _Where(self, path)
        if len(w.rest) > 2:
            return self._object_exists(w)
        try:
            if not w.rest:
                w.broker.list(w.coll, limit=1)
                return True
            return bool(w.broker.list(w.coll, after=w.name + b'/',
                                      stop=w.name + b'0', limit=1))
        except BrokerError as e:
            if e.errno == errno.ENOENT:
                return False
            raise

    def _object_exists(self, w):
        try:
            w.broker.stat(w.coll, w.name)
            return True
        except BrokerError as e:
            if e.errno == errno.ENOENT:
                return False
            raise

    def _open_file(self, path, mode='rb'):
        if mode != 'rb':
            raise _oserror(errno.EROFS, path)
        return ObjectFile(_Where(self, path))

    def _remove_file(self, path):
        w = _Where(self, path)
        t = Txn()
        t.remove(w.coll, w.name)
        try:
            w.broker.submit(t)
        except BrokerError as e:
            if e.errno != errno.ENOENT:
                raise

    def read_store_metadata(self, source, add_missing_checksum=False):
        """Swift's ``read_metadata`` for a store object (path or fp)."""
        w = source.where if isinstance(source, ObjectFile) else \
            _Where(self, source)
        try:
            meta = w.broker.getattr(w.coll, w.name, METADATA_ATTR)
        except BrokerError as e:
            if e.errno == errno.ENOENT:
                raise DiskFileNotExist()
            raise
        try:
            stored = w.broker.getattr(w.coll, w.name, CHECKSUM_ATTR)
        except BrokerError as e:
            if e.errno != errno.ENODATA:
                raise
            stored = None
        if stored is not None and \
                stored != hashlib.md5(meta).hexdigest().encode('ascii'):
            raise DiskFileBadMetadataChecksum(
                'Metadata checksum mismatch for %s' % w.path)
        return sdf._decode_metadata(pickle.loads(meta, encoding='bytes'))

    def quarantine_renamer(self, device_path, corrupted_file_path):
        """Move every file of the hash to ``quarantined/objects[-N]``,
        named ``<hash>-<uuid>/<file>``, and mark its suffix dirty."""
        hash_dir = os.path.dirname(corrupted_file_path)
        w = _Where(self, hash_dir)
        qcoll = 'quarantined/' + w.coll.split('/')[0]
        tag = '%s-%s' % (os.path.basename(hash_dir), uuid.uuid4().hex)
        t = Txn()
        for f in self.store_listdir(hash_dir):
            t.rename(w.coll, w.name + b'/' + f.encode('utf-8'), qcoll,
                     '%s/%s' % (tag, f))
        hcoll = self.invalidate_records(t, os.path.dirname(hash_dir))
        w.broker.ensure_coll(qcoll)
        w.broker.ensure_coll(hcoll)
        w.broker.submit(t)
        return os.path.join(device_path, 'quarantined',
                            w.coll.split('/')[0], tag)

    # -- what the file system backend never needed --------------------

    def cleanup_tmp(self, device, policy, age):
        """Remove the temporary bodies of PUTs that ended more than
        ``age`` seconds ago without publishing (a killed server);
        returns how many."""
        b = self.broker(device)
        coll = sdf.get_tmp_dir(policy)
        limit = time.time_ns() - int(age * 1e9)
        gone = 0
        try:
            names = b.list(coll)
        except BrokerError as e:
            if e.errno == errno.ENOENT:
                return 0
            raise
        for name in names:
            try:
                born = int(name.split(b'-', 1)[0], 16)
            except ValueError:
                continue
            if born < limit:
                t = Txn()
                t.remove(coll, name)
                try:
                    b.submit(t)
                    gone += 1
                except BrokerError as e:
                    if e.errno != errno.ENOENT:
                        raise
        return gone

    # -- the suffix-hash cache, per partition in the store -------------
    #
    # Swift keeps hashes.pkl and hashes.invalid in the partition's
    # directory.  Here the cache is the object <part> of the collection
    # hashes/objects[-N]: hashes.pkl's bytes as its attribute swift.hashes,
    # and each invalidation an omap key "<suffix>/<unique>".  A PUT, a
    # tombstone, a .meta and a quarantine add their key in the transaction
    # that changes the suffix; consolidate_hashes folds the keys it read
    # into the attribute and removes exactly those keys, in one
    # transaction, so an invalidation that arrives meanwhile (a new key)
    # is kept.  A store made again starts with no cache: every partition
    # is listed and hashed afresh.  Swift's __get_hashes is unchanged; its
    # read_hashes and write_hashes are these.

    def _hashes_where(self, partition_dir):
        """(broker, collection, object name) of a partition's cache."""
        w = _Where(self, partition_dir)
        datadir, part = w.coll.split('/', 1)
        return w.broker, 'hashes/' + datadir, part

    def invalidate_records(self, txn, suffix_dir):
        """Add to ``txn`` the records that mark ``suffix_dir`` dirty;
        returns the cache's collection (the caller makes sure it
        exists)."""
        _b, coll, part = self._hashes_where(os.path.dirname(suffix_dir))
        suffix = os.path.basename(suffix_dir)
        txn.touch(coll, part)
        txn.omap_set(coll, part, '%s/%s' % (suffix, uuid.uuid4().hex), b'')
        return coll

    def invalidate_hash(self, suffix_dir):
        b, coll, _part = self._hashes_where(os.path.dirname(suffix_dir))
        t = Txn()
        self.invalidate_records(t, suffix_dir)
        b.ensure_coll(coll)
        b.submit(t)

    def _open_hashes(self, path, mode='rb'):
        b, coll, part = self._hashes_where(os.path.dirname(path))
        try:
            return io.BytesIO(b.getattr(coll, part, HASHES_ATTR))
        except BrokerError as e:
            raise IOError(e.errno, e.strerror, path)

    def read_hashes(self, partition_dir):
        """Swift's ``read_hashes``, of the store's cache."""
        return self._swift_read_hashes(partition_dir)

    def write_hashes(self, partition_dir, hashes):
        """Swift's ``write_hashes``, to the store's cache."""
        hashes.setdefault('valid', False)
        hashes['updated'] = time.time()
        b, coll, part = self._hashes_where(partition_dir)
        t = Txn()
        t.touch(coll, part)
        t.setattr(coll, part, HASHES_ATTR,
                  pickle.dumps(hashes, sdf.PICKLE_PROTOCOL))
        b.ensure_coll(coll)
        b.submit(t)

    def _invalidations(self, partition_dir):
        b, coll, part = self._hashes_where(partition_dir)
        try:
            return b.omap_list(coll, part)
        except BrokerError as e:
            if e.errno == errno.ENOENT:
                return []
            raise

    def consolidate_hashes(self, partition_dir):
        """Swift's ``consolidate_hashes``: the cache with the suffixes
        invalidated since folded in (as None), written back."""
        with sdf.lock_path(partition_dir):
            hashes = self.read_hashes(partition_dir)
            keys = [k for k, _v in self._invalidations(partition_dir)]
            if not keys:
                return hashes
            hashes.setdefault('valid', False)
            b, coll, part = self._hashes_where(partition_dir)
            for i in range(0, len(keys), 1000):   # a TXN's record limit
                for k in keys[i:i + 1000]:
                    hashes[k.split(b'/', 1)[0].decode('ascii')] = None
                hashes['updated'] = time.time()
                t = Txn()
                t.setattr(coll, part, HASHES_ATTR,
                          pickle.dumps(hashes, sdf.PICKLE_PROTOCOL))
                for k in keys[i:i + 1000]:
                    t.omap_rm(coll, part, k)
                b.submit(t)
            return hashes

    def remove_hashes(self, partition_dir):
        """Drop a partition's cache (the partition is being removed)."""
        b, coll, part = self._hashes_where(partition_dir)
        t = Txn()
        t.remove(coll, part)
        try:
            b.submit(t)
        except BrokerError as e:
            if e.errno != errno.ENOENT:
                raise

    # -- what the replicator and the auditor walk ---------------------
    #
    # Swift's replicator and auditor find partitions and hashes with
    # listdir and remove them with rmtree; these are the same through
    # the store (rawstore_swift.replicator uses the first two).

    def remove_hash_dir(self, hash_dir):
        """Remove every file of one hash (a handoff's object pushed to
        its primaries), with its suffix's invalidation, in one
        transaction."""
        w = _Where(self, hash_dir)
        for attempt in range(3):
            try:
                names = self.store_listdir(hash_dir)
            except OSError as e:
                if e.errno == errno.ENOENT:
                    return
                raise
            if not names:
                return
            t = Txn()
            for f in names:
                t.remove(w.coll, w.name + b'/' + f.encode('utf-8',
                                                          'surrogateescape'))
            hcoll = self.invalidate_records(t, os.path.dirname(hash_dir))
            w.broker.ensure_coll(hcoll)
            try:
                w.broker.submit(t)
                return
            except BrokerError as e:
                # a file went meanwhile (a cleanup): list again
                if e.errno != errno.ENOENT or attempt == 2:
                    raise

    def remove_partition(self, partition_dir):
        """Swift's rmtree of a partition: its hash cache, then its names
        (1000 a transaction), then its collection.  ENOTEMPTY if a PUT
        came in meanwhile (Swift ignores it, as for rmtree)."""
        w = _Where(self, partition_dir)
        self.remove_hashes(partition_dir)
        try:
            while True:
                names = w.broker.list(w.coll, limit=1000)
                if not names:
                    break
                t = Txn()
                for n in names:
                    t.remove(w.coll, n)
                w.broker.submit(t)
            t = Txn()
            t.coll_remove(w.coll)
            w.broker.submit(t)
        except BrokerError as e:
            if e.errno != errno.ENOENT:
                raise
        finally:
            w.broker.colls.discard(w.coll)

    def object_audit_location_generator(self, policy, device_dirs=None,
                                        auditor_type='ALL'):
        """Swift's generator of AuditLocations, from the stores: the
        devices are the directories under ``devices`` (those with a
        socket, with mount_check), the partitions the collections
        ``objects[-N]/<part>``, the suffixes and hashes their names.

        It keeps Swift's resume point: before each partition the ones
        left are written to ``auditor_status_<TYPE>.json`` in the
        datadir under the device's directory (a file, as Swift's, on
        the file system that holds the locks), so an auditor restarted
        mid-sweep goes on from there; a device swept to the end saves
        an empty list, and the auditor's ``clear_auditor_status`` at
        the end of a sweep removes the files."""
        datadir = sdf.get_data_dir(policy)
        prefix = datadir + '/'
        devices = sdf.listdir(self.devices)
        if device_dirs:
            devices = list(set(devices) & set(device_dirs))
        random.shuffle(devices)
        for device in devices:
            if self.get_dev_path(device) is None:
                self.logger.debug('Skipping %s: no rawstored socket', device)
                continue
            datadir_path = os.path.join(self.devices, device, datadir)
            parts = self._auditor_status(datadir_path, auditor_type)
            if parts is None:
                try:
                    colls = self.broker(device).coll_list()
                except BrokerError as e:
                    self.logger.warning('Skipping %s: %s', device, e)
                    continue
                parts = sorted((c[len(prefix):] for c in colls
                                if c.startswith(prefix) and
                                c[len(prefix):].isdigit()), key=int)
            for pos, part in enumerate(parts):
                sdf.update_auditor_status(datadir_path, self.logger,
                                          parts[pos:], auditor_type)
                part_path = os.path.join(datadir_path, part)
                try:
                    suffixes = self.store_listdir(part_path)
                except OSError as e:
                    if e.errno != errno.ENOENT:
                        raise
                    continue
                for suffix in suffixes:
                    suff_path = os.path.join(part_path, suffix)
                    for hsh in self.store_listdir(suff_path):
                        yield sdf.AuditLocation(
                            os.path.join(suff_path, hsh), device, part,
                            policy)
            sdf.update_auditor_status(datadir_path, self.logger, [],
                                      auditor_type)

    def _auditor_status(self, datadir_path, auditor_type):
        """The partitions a sweep left on this device, or None to start
        one (no status file, or one that cannot be read, as Swift's
        get_auditor_status).  Makes the directory the status goes to."""
        path = os.path.join(datadir_path,
                            'auditor_status_%s.json' % auditor_type)
        try:
            os.makedirs(datadir_path, exist_ok=True)
            with open(path, encoding='utf8') as f:
                parts = json.load(f)['partitions']
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as e:
            self.logger.warning('Cannot read %s (%s): auditing every '
                                'partition', path, e)
            return None
        if not isinstance(parts, list) or \
                not all(isinstance(p, str) for p in parts):
            self.logger.warning('%s is not a list of partitions: auditing '
                                'every partition', path)
            return None
        return parts
