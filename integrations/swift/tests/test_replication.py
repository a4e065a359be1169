# SPDX-License-Identifier: MIT
"""Replication and auditing through the rawstore backend (docs/swift.md,
"Replication and auditing"), against a real rawstored as test_diskfile.

- The suffix hashes equal those of Swift's own file backend
  (``swift.obj.diskfile.DiskFileManager`` on a directory) for the same
  objects, tombstones and .meta files, and the cache lives in the store:
  a PUT's transaction carries its suffix's invalidation.
- The replicator: rsync refused; Swift's stock replicator finds no
  partition on a store, ours finds every one; delete_handoff_objs and
  delete_partition remove through the store.
- The auditor: Swift's AuditorWorker finds every object through
  object_audit_location_generator and quarantines a bad one; a sweep
  stopped midway resumes at the partition it was in.

The cluster-level checks (ssync between servers, a wiped device, bytes
corrupted on the device) are tests/harness/swift-replication.sh.
"""

import hashlib
import json
import os
import shutil
import tempfile
import unittest
from unittest import mock

from swift.common import utils
from swift.common.ring import RingBuilder
from swift.common.utils import Timestamp
from swift.obj import diskfile as sdf
from swift.obj import replicator as srep

from test_diskfile import DEV, HERE, POLICY, Logger, StoreTest

from rawstore_swift import replicator as rrep


def setUpModule():
    # Swift loads the backend of POLICY by its entry point (egg-info
    # beside the package)
    import pkg_resources
    pkg_resources.working_set.add_entry(os.path.dirname(HERE))


def put(mgr, part, obj, body, ts, extra=None):
    df = mgr.get_diskfile(DEV, str(part), 'a', 'c', obj, POLICY)
    meta = {'X-Timestamp': ts.internal, 'Content-Length': str(len(body)),
            'ETag': hashlib.md5(body).hexdigest(),
            'Content-Type': 'application/octet-stream'}
    meta.update(extra or {})
    with df.create(size=len(body)) as w:
        w.write(body)
        w.put(meta)


def same_history(mgr, part, base):
    """The same objects, in the same order, with the same timestamps:
    30 PUTs; one overwritten (the older .data cleaned up), one deleted
    (a tombstone), two POSTed (.meta), one POSTed then deleted."""
    for i in range(30):
        put(mgr, part, 'x%d' % i, b'body %d' % i, Timestamp(base + i))
    put(mgr, part, 'x1', b'newer', Timestamp(base + 50))
    for obj, t in (('x2', 60), ('x9', 65)):
        mgr.get_diskfile(DEV, str(part), 'a', 'c', obj, POLICY).delete(
            Timestamp(base + t))
    for obj, t in (('x3', 70), ('x4', 71), ('x9', 72)):
        df = mgr.get_diskfile(DEV, str(part), 'a', 'c', obj, POLICY)
        try:
            df.write_metadata({'X-Timestamp': Timestamp(base + t).internal,
                               'X-Object-Meta-K': 'v'})
        except Exception:
            pass    # x9 is deleted: Swift refuses the POST


class TestHashesAgainstSwift(StoreTest):
    def test_same_hashes_as_the_file_backend(self):
        part = 5
        base = float(Timestamp.now()) - 1000
        files = tempfile.mkdtemp(prefix='swift-files-')
        try:
            os.makedirs(os.path.join(files, DEV))
            stock = sdf.DiskFileManager({'devices': files,
                                         'mount_check': 'false'},
                                        Logger())
            same_history(stock, part, base)
            same_history(self.mgr, part, base)
            want = stock.get_hashes(DEV, str(part), [], POLICY)
            got = self.mgr.get_hashes(DEV, str(part), [], POLICY)
            self.assertGreater(len(want), 10)
            self.assertEqual(got, want)
            # and after a change, by suffix
            put(stock, part, 'x7', b'again', Timestamp(base + 80))
            put(self.mgr, part, 'x7', b'again', Timestamp(base + 80))
            self.assertEqual(
                self.mgr.get_hashes(DEV, str(part), [], POLICY),
                stock.get_hashes(DEV, str(part), [], POLICY))
        finally:
            shutil.rmtree(files)

    def test_the_cache_is_in_the_store(self):
        part = 6
        put(self.mgr, part, 'c0', b'zero', Timestamp.now())
        hsh = os.path.basename(self.mgr.get_diskfile(
            DEV, str(part), 'a', 'c', 'c0', POLICY)._datadir)
        # the PUT's own transaction left the suffix's invalidation
        keys = [k for k, _v in self.broker.omap_list('hashes/objects',
                                                     str(part))]
        self.assertEqual(len(keys), 1)
        self.assertTrue(keys[0].startswith(hsh[-3:].encode() + b'/'))
        hashes = self.mgr.get_hashes(DEV, str(part), [], POLICY)
        self.assertIn(hsh[-3:], hashes)
        # consolidated: no invalidation left, the hashes in the attribute
        self.assertEqual(self.broker.omap_list('hashes/objects', str(part)),
                         [])
        part_path = os.path.join(self.devices, DEV, 'objects', str(part))
        cached = self.mgr.read_hashes(part_path)
        self.assertTrue(cached['valid'])
        self.assertEqual(cached[hsh[-3:]], hashes[hsh[-3:]])
        self.assertEqual(os.listdir(part_path), ['.lock'])


class TestReplicator(StoreTest):
    def setUp(self):
        super().setUp()
        self.etc = tempfile.mkdtemp(prefix='swift-ring-')
        b = RingBuilder(4, 1, 0)
        for i, dev in enumerate((DEV, 'other')):
            b.add_dev({'id': i, 'region': 1, 'zone': i + 1,
                       'ip': '127.0.0.1', 'port': 6299 - i, 'device': dev,
                       'weight': 100})
        b.rebalance(seed=1)
        b.get_ring().save(os.path.join(self.etc, 'object.ring.gz'))
        self.conf = {'devices': self.devices, 'mount_check': 'true',
                     'swift_dir': self.etc, 'bind_ip': '127.0.0.1',
                     'bind_port': '6299', 'recon_cache_path': self.etc,
                     'rawstore_socket': os.path.join(self.tmp,
                                                     '{device}.sock')}
        POLICY.object_ring = None
        self.rlog = utils.get_logger({}, log_route='test-replicator')

    def replicator(self, cls=rrep.RawstoreObjectReplicator, **conf):
        r = cls(dict(self.conf, **conf), self.rlog)
        r._zero_stats()             # as replicate() does first
        r.all_devs_info = set()
        return r

    def tearDown(self):
        POLICY.object_ring = None
        shutil.rmtree(self.etc)
        super().tearDown()

    def test_rsync_is_refused(self):
        with self.assertRaises(ValueError):
            self.replicator(sync_method='rsync')
        r = self.replicator()
        self.assertEqual(r.sync_method, r.ssync)

    def test_jobs_come_from_the_store(self):
        for part in (2, 9, 13):
            put(self.mgr, part, 'j%d' % part, b'j', Timestamp.now())
        mine = self.replicator()
        jobs = mine.collect_jobs()
        have = set(c.split('/')[1] for c in self.broker.coll_list()
                   if c.startswith('objects/'))
        self.assertTrue({'2', '9', '13'} <= have)
        self.assertEqual(set(j['partition'] for j in jobs), have)
        self.assertTrue(all(j['device'] == DEV for j in jobs))
        # Swift's own walks the file system, where a partition is at
        # most a directory of lock files: it never sees these objects, so
        # it would neither push them nor remove them from a handoff
        stock = self.replicator(srep.ObjectReplicator, mount_check='false',
                                sync_method='ssync')
        seen = set(j['partition'] for j in stock.collect_jobs())
        self.assertTrue(seen.isdisjoint({'2', '9', '13'}), seen)

    def test_handoff_removals_go_through_the_store(self):
        part = 11
        ts = Timestamp.now()
        for obj in ('k1', 'k2'):
            put(self.mgr, part, obj, b'keep', ts)
        self.mgr.get_hashes(DEV, str(part), [], POLICY)
        h1 = os.path.basename(self.mgr.get_diskfile(
            DEV, str(part), 'a', 'c', 'k1', POLICY)._datadir)
        r = self.replicator()
        obj_path = os.path.join(self.devices, DEV, 'objects')
        ok, bad = r.delete_handoff_objs(
            {'obj_path': obj_path, 'partition': str(part), 'policy': POLICY},
            [h1])
        self.assertEqual((len(ok), bad), (1, []))
        left = self.names('objects/%d' % part)
        self.assertEqual(len(left), 1)
        self.assertNotIn(h1.encode(), left[0])
        # the suffix was invalidated in the same transaction
        keys = self.broker.omap_list('hashes/objects', str(part))
        self.assertEqual([k.split(b'/')[0] for k, _v in keys],
                         [h1[-3:].encode()])
        r.delete_partition(os.path.join(obj_path, str(part)))
        self.assertNotIn('objects/%d' % part, self.broker.coll_list())
        self.assertNotIn(str(part).encode(), self.names('hashes/objects'))
        self.assertEqual(self.mgr.get_hashes(DEV, str(part), [], POLICY), {})


class TestAuditor(StoreTest):
    def test_swift_auditor_finds_and_quarantines(self):
        from swift.obj.auditor import AuditorWorker
        want = set()
        for part in (1, 3, 30):
            for i in range(4):
                obj = 'a%d-%d' % (part, i)
                put(self.mgr, part, obj, b'audit me %d' % i, Timestamp.now())
                want.add(utils.hash_path('a', 'c', obj))
        # an object whose body does not match its ETag
        df = self.mgr.get_diskfile(DEV, '3', 'a', 'c', 'rotten', POLICY)
        with df.create() as w:
            w.write(b'abcd')
            w.put({'X-Timestamp': Timestamp.now().internal,
                   'Content-Length': '4', 'ETag': 'not-the-md5'})
        want.add(utils.hash_path('a', 'c', 'rotten'))
        locs = list(self.mgr.object_audit_location_generator(POLICY))
        self.assertEqual(set(os.path.basename(loc.path) for loc in locs),
                         want)
        loc = [x for x in locs if x.path.endswith(
            utils.hash_path('a', 'c', 'a30-0'))][0]
        self.assertEqual((loc.device, loc.partition), (DEV, '30'))
        with self.mgr.get_diskfile_from_audit_location(loc).open() as d:
            self.assertEqual(d.get_metadata()['name'], '/a/c/a30-0')

        # The sweep above ran to its end and saved its resume point (no
        # partition left); Swift's auditor clears it when a sweep ends.
        self.mgr.clear_auditor_status(POLICY)
        # Swift's AuditorWorker, the backend loaded through the policy
        conf = {'devices': self.devices, 'mount_check': 'true',
                'rawstore_socket': os.path.join(self.tmp, '{device}.sock'),
                'files_per_second': '100000',
                'bytes_per_second': '100000000'}
        logger = utils.get_logger({}, log_route='test-auditor')
        w = AuditorWorker(conf, logger, os.path.join(self.tmp, 'recon'),
                          self.devices)
        w.audit_all_objects(mode='once')
        self.assertEqual(w.quarantines, 1)
        self.assertEqual(w.errors, 0)
        self.assertEqual(w.total_files_processed if hasattr(
            w, 'total_files_processed') else len(want), len(want))
        q = self.names('quarantined/objects')
        self.assertEqual(len(q), 1)
        self.assertTrue(q[0].startswith(
            utils.hash_path('a', 'c', 'rotten').encode()))


class TestAuditorResume(StoreTest):
    def test_a_stopped_sweep_resumes_where_it_was(self):
        parts = (2, 7, 40)
        for part in parts:
            for i in range(3):
                put(self.mgr, part, 'r%d-%d' % (part, i), b'x', Timestamp.now())
        status = os.path.join(self.devices, DEV, 'objects',
                              'auditor_status_ALL.json')
        self.mgr.clear_auditor_status(POLICY)
        # Swift writes the status at most once a minute: every time here
        with mock.patch.object(sdf, 'MIN_TIME_UPDATE_AUDITOR_STATUS', -1):
            gen = self.mgr.object_audit_location_generator(POLICY)
            seen = []
            for loc in gen:
                seen.append(loc.partition)
                if loc.partition == '7':
                    break       # the auditor dies in partition 7
            gen.close()
            self.assertEqual(seen[:3], ['2', '2', '2'])
            with open(status) as f:
                self.assertEqual(json.load(f), {'partitions': ['7', '40']})
            # a new auditor goes on from 7: 2 is not walked again
            again = [loc.partition for loc in
                     self.mgr.object_audit_location_generator(POLICY)]
            self.assertEqual(again, ['7'] * 3 + ['40'] * 3)
            with open(status) as f:
                self.assertEqual(json.load(f), {'partitions': []})
            # the end of a sweep clears it: the next starts from the first
            self.mgr.clear_auditor_status(POLICY)
            self.assertFalse(os.path.exists(status))
            full = [loc.partition for loc in
                    self.mgr.object_audit_location_generator(POLICY)]
            self.assertEqual(full, ['2'] * 3 + ['7'] * 3 + ['40'] * 3)
            # a partition removed meanwhile is passed over
            self.mgr.clear_auditor_status(POLICY)
            with open(status, 'w') as f:
                json.dump({'partitions': ['5', '40']}, f)
            self.assertEqual(
                [loc.partition for loc in
                 self.mgr.object_audit_location_generator(POLICY)],
                ['40'] * 3)
            # an unreadable status: every partition, and said
            with open(status, 'w') as f:
                f.write('{not json')
            self.assertEqual(
                len(list(self.mgr.object_audit_location_generator(POLICY))),
                9)
            self.assertTrue(any('Cannot read' in x
                                for x in self.logger.lines))
        self.mgr.clear_auditor_status(POLICY)


if __name__ == '__main__':
    unittest.main()
