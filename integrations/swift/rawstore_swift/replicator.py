# SPDX-License-Identifier: MIT
"""Swift's object replicator for rawstore devices (docs/swift.md,
"Replication and auditing").

Swift's ``ObjectReplicator`` finds its work and removes partitions on the
file system: ``listdir`` of ``objects/`` for the partitions
(``build_replication_jobs``), ``listdir``/``isdir`` for a handoff's
suffixes (``update_deleted``), ``shutil.rmtree`` of a handoff partition
(``delete_partition``) or of its hash directories
(``delete_handoff_objs``), ``isfile``/``os.remove`` of a stray file where a
partition should be (``replicate``), ``unlink_older_than`` of ``tmp/``.
On a rawstore device none of those paths exist, so the stock replicator
finds no partition to push and would remove nothing it pushed: handoffs
are never emptied, and a rsync would copy an empty directory tree.

``RawstoreObjectReplicator`` keeps Swift's replication logic (which
partitions are primaries or handoffs, REPLICATE and the suffix-hash
comparison, ssync, when a handoff may be removed) and changes only those
calls: the walks go through the store (the partitions are the store's
collections ``objects[-N]/<part>``; a partition's suffixes its names),
the removals are store transactions, and ``tpool`` runs inline (the
broker's sockets are green).  Swift's methods are run with those names
rebound, as ``rawstore_swift.diskfile`` does for the DiskFile manager.

Only ``sync_method = ssync`` (the default here): rsync copies files and
cannot reach a store.
"""

import errno
import os
import types

from swift.common.storage_policy import split_policy_string
from swift.common.utils import parse_options
from swift.common.daemon import run_daemon
from swift.common.constraints import check_drive as swift_check_drive
from swift.obj import replicator as srep
from swift.obj.diskfile import storage_directory

from rawstore_swift.broker import BrokerError
from rawstore_swift.diskfile import (RawstoreDiskFileManager, _InlineTpool,
                                     _rebind)


class _ReplOsPath(object):
    def __getattr__(self, name):
        return getattr(os.path, name)

    @staticmethod
    def exists(path):
        # build_replication_jobs asks whether objects[-N] exists: in a
        # store it is the set of collections, listed by _listdir
        return True


class _ReplOs(object):
    path = _ReplOsPath()

    def __getattr__(self, name):
        return getattr(os, name)


class RawstoreObjectReplicator(srep.ObjectReplicator):
    # Swift's methods run with these names bound to the store
    _REBOUND = ('replicate', 'update', 'update_deleted',
                'build_replication_jobs')

    def __init__(self, conf, logger=None):
        method = conf.get('sync_method') or 'ssync'
        if method != 'ssync':
            raise ValueError('rawstore object replicator: sync_method = %s '
                             'is not supported; rawstore devices are '
                             'replicated with ssync only' % method)
        conf = dict(conf, sync_method='ssync')
        super().__init__(conf, logger)
        for policy in self.policies:
            if not isinstance(self._df_router[policy],
                              RawstoreDiskFileManager):
                raise ValueError(
                    'rawstore object replicator: policy %s is not on '
                    'rawstore (diskfile_module = '
                    'egg:rawstore_swift#replication.rawstore)' % policy.name)
        env = {'tpool': _InlineTpool,
               'check_drive': self._check_drive,
               'listdir': self._listdir,
               'isdir': lambda path: True,
               'isfile': lambda path: False,
               'unlink_older_than': self._cleanup_tmp,
               'os': _ReplOs()}
        for name in self._REBOUND:
            fn = getattr(srep.ObjectReplicator, name)
            setattr(self, name, types.MethodType(_rebind(fn, env), self))

    # -- the store behind Swift's paths -------------------------------

    def _mgr(self, policy=None):
        return self._df_router[policy if policy is not None
                               else self.policies[0]]

    def _split(self, path):
        """Device and the rest of a path under the devices directory."""
        rel = os.path.relpath(os.path.normpath(path),
                              os.path.normpath(self.devices_dir))
        return rel.split(os.sep)

    def _check_drive(self, root, drive, mount_check):
        """A device is there when its broker socket is (mount_check), or
        its directory is (as Swift's check_drive without mount_check)."""
        if not mount_check:
            return swift_check_drive(root, drive, False)
        path = self._mgr().get_dev_path(drive, mount_check=True)
        if path is None:
            raise ValueError('%s has no rawstored socket' % drive)
        return path

    def _listdir(self, path):
        """``objects[-N]``: the partitions, from the store's collections;
        a partition: its suffixes (none when it has no collection)."""
        parts = self._split(path)
        if len(parts) == 2:
            prefix = parts[1] + '/'
            colls = self._mgr().broker(parts[0]).coll_list()
            return [c[len(prefix):] for c in colls if c.startswith(prefix)]
        try:
            return self._mgr().store_listdir(path)
        except OSError as e:
            if e.errno == errno.ENOENT:
                return []
            raise

    def _cleanup_tmp(self, tmp_path, mtime):
        """Swift's unlink_older_than of ``tmp[-N]``: the temporary bodies
        of PUTs that never published, older than reclaim_age."""
        device, tmpdir = self._split(tmp_path)[:2]
        _base, policy = split_policy_string(tmpdir)
        mgr = self._mgr(policy)
        try:
            n = mgr.cleanup_tmp(device, policy, mgr.reclaim_age)
        except OSError as e:
            self.logger.warning('Cannot clean up %s: %s', tmp_path, e)
            return
        if n:
            self.logger.info('Removed %d stale temporary objects of %s',
                             n, tmp_path)

    # -- removals: store transactions instead of rmtree ---------------

    def delete_partition(self, path):
        self.logger.info("Removing partition: %s", path)
        try:
            self._mgr().remove_partition(path)
        except OSError as e:
            if e.errno not in (errno.ENOENT, errno.ENOTEMPTY):
                raise

    def delete_handoff_objs(self, job, delete_objs):
        """Remove the named hashes from a handoff partition, each hash in
        one transaction with its suffix's invalidation."""
        mgr = self._mgr(job['policy'])
        success_paths = []
        error_paths = []
        for object_hash in delete_objs:
            object_path = storage_directory(job['obj_path'],
                                            job['partition'], object_hash)
            try:
                mgr.remove_hash_dir(object_path)
                success_paths.append(object_path)
            except (OSError, BrokerError):
                error_paths.append(object_path)
                self.logger.exception('Unexpected error removing %r',
                                      object_path)
        return success_paths, error_paths


def main(argv=None):
    """rawstore-object-replicator CONFIG [options]: what
    swift-object-replicator does, with this replicator."""
    from optparse import OptionParser
    parser = OptionParser("%prog CONFIG [options]")
    parser.add_option('-d', '--devices',
                      help='Replicate only given devices. '
                           'Comma-separated list. '
                           'Only has effect if --once is used.')
    parser.add_option('-p', '--partitions',
                      help='Replicate only given partitions. '
                           'Comma-separated list. '
                           'Only has effect if --once is used.')
    parser.add_option('-i', '--policies',
                      help='Replicate only given policy indices. '
                           'Comma-separated list. '
                           'Only has effect if --once is used.')
    conf_file, options = parse_options(parser=parser, once=True,
                                       test_args=argv)
    # the section is Swift's: [object-replicator] of object-server.conf
    run_daemon(RawstoreObjectReplicator, conf_file,
               section_name='object-replicator', **options)
