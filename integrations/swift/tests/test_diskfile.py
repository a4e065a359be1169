# SPDX-License-Identifier: MIT
"""The rawstore DiskFile backend against a real rawstored.

Each test class makes a file-backed store in a temporary directory with
the project's ``rawstore mkfs`` and serves it with ``rawstored`` (both
from the build directory: $RAWSTORE_BUILD, default <repo>/build), then
drives Swift's DiskFile API through ``RawstoreDiskFileManager``.

Run: python3 -m unittest discover -s integrations/swift/tests -v
"""

import errno
import hashlib
import os
import pickle
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..', '..'))
sys.path.insert(0, os.path.dirname(HERE))

from swift.common import storage_policy, utils  # noqa: E402
from swift.common.exceptions import (DiskFileDeleted,  # noqa: E402
                                     DiskFileExpired, DiskFileNotExist,
                                     DiskFileQuarantined)
from swift.common.utils import Timestamp  # noqa: E402

from rawstore_swift import diskfile as rdf  # noqa: E402
from rawstore_swift.broker import BrokerError, Txn  # noqa: E402

BUILD = os.environ.get('RAWSTORE_BUILD', os.path.join(REPO, 'build'))
RAWSTORE = os.path.join(BUILD, 'store', 'cli', 'rawstore')
RAWSTORED = os.path.join(BUILD, 'store', 'broker', 'rawstored')

utils.HASH_PATH_SUFFIX = b'rawstore-test'
utils.HASH_PATH_PREFIX = b''
POLICY = storage_policy.StoragePolicy(
    0, 'zero', is_default=True,
    diskfile_module='egg:rawstore_swift#replication.rawstore')
storage_policy._POLICIES = storage_policy.StoragePolicyCollection([POLICY])

DEV = 'sda'


def die_with_parent():
    """In the daemon's child: SIGTERM when the test process dies."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


class Logger(object):
    """Swift's logger interface, keeping what was said."""

    def __init__(self):
        self.lines = []
        self.counts = {}

    def _log(self, *a, **kw):
        self.lines.append(a[0] % a[1:] if len(a) > 1 else a[0])
    debug = info = warning = error = exception = _log

    def increment(self, name):
        self.counts[name] = self.counts.get(name, 0) + 1


class StoreTest(unittest.TestCase):
    """A store and its daemon per class; a manager per test."""

    @classmethod
    def setUpClass(cls):
        for b in (RAWSTORE, RAWSTORED):
            if not os.access(b, os.X_OK):
                raise unittest.SkipTest('%s is not built' % b)
        cls.tmp = tempfile.mkdtemp(prefix='rawstore-swift-')
        dev = os.path.join(cls.tmp, 'dev')
        meta = os.path.join(cls.tmp, 'meta')
        with open(dev, 'wb') as f:
            f.truncate(512 << 20)
        subprocess.run([RAWSTORE, 'mkfs', '--zero-policy', 'pad', dev, meta],
                       check=True, stdout=subprocess.DEVNULL)
        cls.sock = os.path.join(cls.tmp, DEV + '.sock')
        cls.log = open(os.path.join(cls.tmp, 'rawstored.log'), 'wb')
        cls.store_arg = '%s:%s:%s:%s' % (DEV, dev, meta, cls.sock)
        cls.start_daemon()
        cls.devices = os.path.join(cls.tmp, 'devices')
        os.makedirs(os.path.join(cls.devices, DEV))

    @classmethod
    def start_daemon(cls):
        cls.daemon = subprocess.Popen(
            [RAWSTORED, '--store', cls.store_arg],
            stderr=cls.log, preexec_fn=die_with_parent)
        for _ in range(500):
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(cls.sock)
                break
            except OSError:
                if cls.daemon.poll() is not None:
                    raise RuntimeError('rawstored exited %d'
                                       % cls.daemon.returncode)
                time.sleep(0.02)
            finally:
                s.close()
        else:
            raise RuntimeError('rawstored did not answer')

    @classmethod
    def stop_daemon(cls):
        cls.daemon.send_signal(signal.SIGTERM)
        return cls.daemon.wait()

    @classmethod
    def tearDownClass(cls):
        rc = cls.stop_daemon()
        cls.log.close()
        shutil.rmtree(cls.tmp)
        assert rc == 0, 'rawstored exited %d' % rc

    def setUp(self):
        self.logger = Logger()
        self.mgr = rdf.RawstoreDiskFileManager(
            {'devices': self.devices, 'mount_check': 'true',
             'rawstore_socket': os.path.join(self.tmp, '{device}.sock')},
            self.logger)
        self.broker = self.mgr.broker(DEV)

    def tearDown(self):
        self.broker.close()

    # -- helpers ------------------------------------------------------

    def df(self, obj, part=1, **kw):
        return self.mgr.get_diskfile(DEV, str(part), 'a', 'c', obj, POLICY,
                                     **kw)

    def put(self, obj, body, ts=None, part=1, extra=None):
        ts = ts or Timestamp.now()
        df = self.df(obj, part)
        meta = {'X-Timestamp': ts.internal, 'Content-Length': str(len(body)),
                'ETag': hashlib.md5(body).hexdigest(),
                'Content-Type': 'application/octet-stream'}
        meta.update(extra or {})
        with df.create(size=len(body)) as w:
            for off in range(0, len(body), 65536):
                w.write(body[off:off + 65536])
            w.put(meta)
        return ts

    def get(self, obj, part=1):
        df = self.df(obj, part)
        with df.open():
            meta = df.get_metadata()
            body = b''.join(df.reader())
        return meta, body

    def names(self, coll):
        try:
            return self.broker.list(coll)
        except BrokerError as e:
            if e.errno == errno.ENOENT:
                return []
            raise


class TestDiskFile(StoreTest):
    def test_put_get_head(self):
        # 10 MiB crosses the writer's 8 MiB flush (a staged temporary
        # object), streamed records and several read-ahead windows.
        body = os.urandom(10 << 20)
        ts = self.put('big', body, extra={'X-Object-Meta-Color': 'blue'})
        meta, got = self.get('big')
        self.assertEqual(got, body)
        self.assertEqual(meta['X-Timestamp'], ts.internal)
        self.assertEqual(meta['X-Object-Meta-Color'], 'blue')
        self.assertEqual(meta['name'], '/a/c/big')
        df = self.df('big')
        self.assertEqual(df.read_metadata()['Content-Length'], str(len(body)))
        with df.open():
            self.assertEqual(df.content_length, len(body))
            self.assertEqual(df.data_timestamp, ts)
        # a range read through Swift's app_iter_range
        df = self.df('big')
        with df.open():
            part = b''.join(df.reader().app_iter_range(5 << 20, (5 << 20) + 7))
        self.assertEqual(part, body[5 << 20:(5 << 20) + 7])
        # nothing quarantined, nothing left in tmp
        self.assertEqual(self.logger.counts, {})
        self.assertEqual(self.names('tmp'), [])

    def test_empty_and_overwrite(self):
        t1 = self.put('o', b'')
        self.assertEqual(self.get('o')[1], b'')
        self.put('o', b'second', ts=Timestamp(float(t1) + 1))
        self.assertEqual(self.get('o')[1], b'second')
        # the older .data was removed by Swift's cleanup
        files = [n for n in self.names('objects/1') if b'/' in n]
        datas = [n for n in files if n.endswith(b'.data') and
                 n.split(b'/')[1].decode() == self.df('o')._datadir[-32:]]
        self.assertEqual(len(datas), 1)

    def test_not_exist(self):
        with self.assertRaises(DiskFileNotExist):
            self.df('nothing').open()
        with self.assertRaises(DiskFileNotExist):
            self.df('nothing', part=999).open()

    def test_delete_tombstone(self):
        t1 = self.put('del', b'data')
        t2 = Timestamp(float(t1) + 1)
        self.df('del').delete(t2)
        with self.assertRaises(DiskFileDeleted) as cm:
            self.df('del').open()
        self.assertEqual(cm.exception.timestamp, t2)
        hsh = os.path.basename(self.df('del')._datadir)
        left = [n for n in self.names('objects/1') if hsh.encode() in n]
        self.assertEqual(left, [('%s/%s/%s.ts' % (hsh[-3:], hsh, t2.internal))
                                .encode()])

    def test_post_meta(self):
        t1 = self.put('post', b'x' * 100,
                      extra={'X-Object-Meta-A': '1',
                             'X-Object-Sysmeta-S': 'kept'})
        t2 = Timestamp(float(t1) + 1)
        self.df('post').write_metadata({'X-Timestamp': t2.internal,
                                        'X-Object-Meta-B': '2'})
        df = self.df('post')
        with df.open():
            meta = df.get_metadata()
            self.assertEqual(df.get_metafile_metadata(),
                             {'X-Timestamp': t2.internal,
                              'X-Object-Meta-B': '2'})
        self.assertNotIn('X-Object-Meta-A', meta)
        self.assertEqual(meta['X-Object-Meta-B'], '2')
        self.assertEqual(meta['X-Object-Sysmeta-S'], 'kept')
        self.assertEqual(meta['Content-Length'], '100')
        self.assertEqual(meta['X-Timestamp'], t2.internal)
        self.assertEqual(df.data_timestamp, t1)

    def test_expired(self):
        self.put('exp', b'gone soon',
                 extra={'X-Delete-At': str(int(time.time()) - 10)})
        with self.assertRaises(DiskFileExpired):
            self.df('exp').open()
        df = self.df('exp', open_expired=True)
        with df.open():
            self.assertEqual(b''.join(df.reader()), b'gone soon')

    def test_metadata_over_4k(self):
        big = 'v' * (64 << 10)
        self.put('meta', b'small', extra={'X-Object-Meta-Big': big})
        meta, body = self.get('meta')
        self.assertEqual(meta['X-Object-Meta-Big'], big)
        self.assertEqual(body, b'small')
        # one attribute holds all of it
        hsh = os.path.basename(self.df('meta')._datadir)
        name = [n for n in self.names('objects/1') if hsh.encode() in n][0]
        raw = self.broker.getattr('objects/1', name, rdf.METADATA_ATTR)
        self.assertGreater(len(raw), 64 << 10)

    def test_etag_mismatch_quarantines(self):
        df = self.df('bad')
        meta = {'X-Timestamp': Timestamp.now().internal,
                'Content-Length': '4', 'ETag': 'not-the-md5'}
        with df.create() as w:
            w.write(b'abcd')
            w.put(meta)
        df = self.df('bad')
        said = []
        with df.open():
            self.assertEqual(b''.join(df.reader(_quarantine_hook=said.append)),
                             b'abcd')
        self.assertEqual(len(said), 1)
        self.assertIn('ETag not-the-md5 and file\'s md5', said[0])
        self.assertEqual(self.logger.counts.get('quarantines'), 1)
        with self.assertRaises(DiskFileNotExist):
            self.df('bad').open()
        q = self.names('quarantined/objects')
        self.assertEqual(len(q), 1)
        self.assertTrue(q[0].endswith(b'.data'))

    def test_size_mismatch_quarantines_at_open(self):
        df = self.df('short')
        with df.create() as w:
            w.write(b'abc')
            w.put({'X-Timestamp': Timestamp.now().internal,
                   'Content-Length': '5', 'ETag': 'x'})
        with self.assertRaises(DiskFileQuarantined):
            self.df('short').open()

    def test_from_hash(self):
        ts = self.put('byhash', b'hashed', part=7)
        hsh = os.path.basename(self.df('byhash', part=7)._datadir)
        df = self.mgr.get_diskfile_from_hash(DEV, '7', hsh, POLICY)
        with df.open():
            self.assertEqual(df.get_metadata()['name'], '/a/c/byhash')
            self.assertEqual(df.data_timestamp, ts)
        with self.assertRaises(DiskFileNotExist):
            self.mgr.get_diskfile_from_hash(DEV, '7', 'f' * 32, POLICY)

    def test_device_unavailable_without_socket(self):
        from swift.common.exceptions import DiskFileDeviceUnavailable
        with self.assertRaises(DiskFileDeviceUnavailable):
            self.mgr.get_diskfile('nosuchdev', '1', 'a', 'c', 'o', POLICY)


def expected_suffix_hash(files_by_hash):
    """Swift's recipe by hand: md5 over the hashes in sorted order, each
    contributing its .meta/.ts, then .data, timestamp + extension."""
    h = hashlib.md5()
    for hsh in sorted(files_by_hash):
        for ext in ('.meta', '.ts', '.data'):
            for ts in files_by_hash[hsh].get(ext, []):
                h.update((ts.internal + ext).encode())
    return h.hexdigest()


class TestHashes(StoreTest):
    def test_get_hashes_match_the_recipe(self):
        part = 42
        objs = {}
        base = float(Timestamp.now())
        # 40 objects spread over suffixes; one deleted, one posted to
        for i in range(40):
            name = 'h%d' % i
            ts = Timestamp(base + i)
            self.put(name, b'%d' % i, ts=ts, part=part)
            hsh = os.path.basename(self.df(name, part)._datadir)
            objs[name] = (hsh, {'.data': [ts]})
        hsh, files = objs['h3']
        t_del = Timestamp(base + 100)
        self.df('h3', part).delete(t_del)
        objs['h3'] = (hsh, {'.ts': [t_del]})
        t_meta = Timestamp(base + 101)
        self.df('h5', part).write_metadata({'X-Timestamp': t_meta.internal})
        objs['h5'][1]['.meta'] = [t_meta]

        want = {}
        for hsh, files in objs.values():
            want.setdefault(hsh[-3:], {})[hsh] = files
        want = dict((suf, expected_suffix_hash(v)) for suf, v in want.items())
        got = self.mgr.get_hashes(DEV, str(part), [], POLICY)
        self.assertEqual(got, want)
        # the cache is in the store (hashes/objects, object <part>), with
        # Swift's hashes.pkl content; nothing on the host file system
        part_path = os.path.join(self.devices, DEV, 'objects', str(part))
        self.assertFalse(os.path.exists(os.path.join(part_path,
                                                     'hashes.pkl')))
        cached = self.mgr.read_hashes(part_path)
        self.assertTrue(cached['valid'])
        self.assertEqual(cached[hsh[-3:]], want[hsh[-3:]])

        # a PUT invalidates its suffix; the next get_hashes sees it
        t_new = Timestamp(base + 200)
        self.put('h7', b'new', ts=t_new, part=part)
        hsh7 = objs['h7'][0]
        objs['h7'] = (hsh7, {'.data': [t_new]})
        again = self.mgr.get_hashes(DEV, str(part), [], POLICY)
        suffix_objs = dict((h, f) for h, f in objs.values()
                           if h[-3:] == hsh7[-3:])
        self.assertEqual(again[hsh7[-3:]], expected_suffix_hash(suffix_objs))
        self.assertNotEqual(again[hsh7[-3:]], got[hsh7[-3:]])

        # yield_hashes: every hash with its timestamps
        seen = dict(self.mgr.yield_hashes(DEV, str(part), POLICY))
        self.assertEqual(len(seen), 40)
        self.assertEqual(seen[objs['h3'][0]]['ts_data'], t_del)
        self.assertEqual(seen[objs['h5'][0]]['ts_meta'], t_meta)
        self.assertEqual(seen[hsh7]['ts_data'], t_new)
        only = dict(self.mgr.yield_hashes(DEV, str(part), POLICY,
                                          suffixes=[hsh7[-3:]]))
        self.assertEqual(set(only), set(h for h in suffix_objs))

        # a partition the store does not have
        self.assertEqual(self.mgr.get_hashes(DEV, '4000', [], POLICY), {})

    def test_reclaimed_tombstone_empties_the_suffix(self):
        part = 43
        old = Timestamp(time.time() - 2 * self.mgr.reclaim_age)
        self.put('old', b'x', ts=old, part=part)
        self.df('old', part).delete(Timestamp(float(old) + 1))
        # Swift's cleanup removes the tombstone past reclaim_age: nothing
        # is left, and the suffix drops out of the hashes
        self.assertEqual(self.mgr.get_hashes(DEV, str(part), [], POLICY), {})
        self.assertEqual(self.names('objects/%d' % part), [])


class TestProcesses(StoreTest):
    def test_reconnect_after_fork(self):
        self.put('before', b'parent')       # the pool holds a connection
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                self.put('child', b'from the child')
                meta, body = self.get('before')
                code = 0 if body == b'parent' else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.waitstatus_to_exitcode(status), 0)
        # the parent's pooled connection still works, and sees the child's
        self.assertEqual(self.get('child')[1], b'from the child')
        self.assertEqual(self.get('before')[1], b'parent')

    def test_killed_writer_leaves_nothing(self):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(r)
                df = self.df('killed', part=9)
                with df.create() as wr:
                    wr.write(os.urandom(rdf.FLUSH_BYTES + 4096))  # staged
                    os.write(w, b'x')
                    time.sleep(60)      # killed here, before put()
            finally:
                os._exit(3)
        os.close(w)
        self.assertEqual(os.read(r, 1), b'x')
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        with self.assertRaises(DiskFileNotExist):
            self.df('killed', part=9).open()
        self.assertEqual(self.names('objects/9'), [])
        tmp = self.names('tmp')
        self.assertEqual(len(tmp), 1)
        self.assertEqual(self.broker.stat('tmp', tmp[0])[0],
                         rdf.FLUSH_BYTES + 4096)
        # young temporaries are kept (a PUT may be running), old ones go
        self.assertEqual(self.mgr.cleanup_tmp(DEV, POLICY, 3600), 0)
        self.assertEqual(self.mgr.cleanup_tmp(DEV, POLICY, 0), 1)
        self.assertEqual(self.names('tmp'), [])

    def test_writer_closed_without_put_removes_its_body(self):
        df = self.df('abandoned')
        before = self.names('tmp')
        with df.create() as wr:
            wr.write(b'z' * (rdf.FLUSH_BYTES + 1))
            self.assertEqual(len(self.names('tmp')), len(before) + 1)
        self.assertEqual(self.names('tmp'), before)
        with self.assertRaises(DiskFileNotExist):
            self.df('abandoned').open()


class TestObjectServer(StoreTest):
    """Swift's own object server, its policy's diskfile_module pointing
    at the backend: the REST verbs end to end (no network)."""

    def setUp(self):
        super().setUp()
        import pkg_resources
        from swift.obj import server
        pkg_resources.working_set.add_entry(os.path.dirname(HERE))
        self.app = server.ObjectController(
            {'devices': self.devices, 'mount_check': 'true',
             'rawstore_socket': os.path.join(self.tmp, '{device}.sock')},
            logger=utils.get_logger({}, log_route='test-object-server'))

    def req(self, method, path='/sda/3/a/c/o', body=None, **headers):
        from swift.common.swob import Request
        r = Request.blank(path, environ={'REQUEST_METHOD': method},
                          headers=headers, body=body)
        return r.get_response(self.app)

    def test_rest_verbs(self):
        t = float(Timestamp.now())
        body = os.urandom(300000)
        r = self.req('PUT', body=body, **{
            'X-Timestamp': Timestamp(t).internal,
            'Content-Type': 'application/x-test',
            'Content-Length': str(len(body)), 'X-Object-Meta-One': '1'})
        self.assertEqual(r.status_int, 201)
        self.assertEqual(r.headers['Etag'].strip('"'),
                         hashlib.md5(body).hexdigest())
        r = self.req('GET')
        self.assertEqual(r.status_int, 200)
        self.assertEqual(r.body, body)
        self.assertEqual(r.headers['X-Object-Meta-One'], '1')
        r = self.req('GET', Range='bytes=10-19')
        self.assertEqual(r.status_int, 206)
        self.assertEqual(r.body, body[10:20])
        r = self.req('POST', **{'X-Timestamp': Timestamp(t + 1).internal,
                                'X-Object-Meta-Two': '2'})
        self.assertEqual(r.status_int, 202)
        r = self.req('HEAD')
        self.assertEqual(r.status_int, 200)
        self.assertEqual(r.headers['X-Object-Meta-Two'], '2')
        self.assertNotIn('X-Object-Meta-One', r.headers)
        self.assertEqual(r.headers['Content-Length'], str(len(body)))
        # an older PUT loses to what is there
        r = self.req('PUT', body=b'old', **{
            'X-Timestamp': Timestamp(t - 5).internal,
            'Content-Type': 'text/plain', 'Content-Length': '3'})
        self.assertEqual(r.status_int, 409)
        r = self.req('DELETE', **{'X-Timestamp': Timestamp(t + 2).internal})
        self.assertEqual(r.status_int, 204)
        r = self.req('GET')
        self.assertEqual(r.status_int, 404)
        self.assertEqual(r.headers['X-Backend-Timestamp'],
                         Timestamp(t + 2).internal)
        # REPLICATE answers the suffix hashes of the partition
        r = self.req('REPLICATE', '/sda/3')
        self.assertEqual(r.status_int, 200)
        hashes = pickle.loads(r.body)
        hsh = utils.hash_path('a', 'c', 'o')
        self.assertEqual(hashes, {hsh[-3:]: expected_suffix_hash(
            {hsh: {'.ts': [Timestamp(t + 2)]}})})
        # a device without a broker socket
        r = self.req('GET', '/sdz/3/a/c/o')
        self.assertEqual(r.status_int, 507)


GREEN = r'''
import eventlet
eventlet.monkey_patch()
import hashlib, os, sys
sys.path[:0] = sys.argv[1:2]
import test_diskfile as t
t.StoreTest.setUpClass()
try:
    case = t.TestDiskFile('test_not_exist')
    case.setUp()
    bodies = dict(('g%d' % i, os.urandom(1000 * i + 1)) for i in range(40))
    pool = eventlet.GreenPool(40)
    list(pool.imap(lambda kv: case.put(*kv), bodies.items()))
    got = dict(pool.imap(lambda k: (k, case.get(k)[1]), bodies))
    assert got == bodies, 'read back differs'
    assert len(case.broker._idle) > 1, 'one connection for 40 greenthreads?'
    print('GREEN-OK', len(case.broker._idle))
finally:
    t.StoreTest.tearDownClass()
'''


class TestEventlet(unittest.TestCase):
    def test_greenthreads_share_the_pool(self):
        # monkey-patching is for the whole process: a child runs it
        out = subprocess.run([sys.executable, '-c', GREEN, HERE],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr.decode()[-2000:])
        self.assertIn(b'GREEN-OK', out.stdout)


class TestEntryPoint(unittest.TestCase):
    def test_swift_loads_the_backend(self):
        import pkg_resources
        pkg_resources.working_set.add_entry(os.path.dirname(HERE))
        cls = utils.load_pkg_resource('swift.diskfile',
                                      POLICY.diskfile_module)
        self.assertIs(cls, rdf.RawstoreDiskFileManager)
        POLICY.get_diskfile_manager({'devices': '/nonexistent'}, Logger())


class TestBroker(StoreTest):
    def test_pooled_connections_outlive_a_daemon_restart(self):
        self.broker.ensure_coll('restart')
        t = Txn()
        t.write('restart', b'o', 0, b'before')
        self.broker.submit(t)
        # two idle connections in the pool, both to this daemon
        a, b = self.broker._get(), self.broker._get()
        self.broker._put(a)
        self.broker._put(b)
        self.assertEqual(len(self.broker._idle), 2)
        self.assertEqual(self.stop_daemon(), 0)
        self.start_daemon()
        # the pooled connections' daemon is gone: the request did not
        # leave, so it runs on a new connection, and the pool is emptied
        self.assertEqual(self.broker.read('restart', b'o', 0, 6), b'before')
        self.assertEqual(len(self.broker._idle), 1)
        self.assertFalse(self.broker._idle[0].reused)
        t = Txn()
        t.write('restart', b'o', 0, b'after!')
        self.broker.submit(t)
        self.assertEqual(self.broker.read('restart', b'o', 0, 6), b'after!')

    def test_a_daemon_gone_for_good_is_an_error(self):
        self.broker.coll_list()     # one idle connection
        self.assertEqual(self.stop_daemon(), 0)
        try:
            with self.assertRaises(BrokerError) as cm:
                self.broker.coll_list()
            self.assertIn(cm.exception.errno,
                          (errno.ENOENT, errno.ECONNREFUSED))
        finally:
            self.start_daemon()

    def test_errors_are_raised_with_errno(self):
        with self.assertRaises(BrokerError) as cm:
            self.broker.stat('no-such-coll', b'x')
        self.assertEqual(cm.exception.errno, errno.ENOENT)
        t = Txn()
        t.coll_create('bc')
        t.coll_create('bc')
        with self.assertRaises(BrokerError) as cm:
            self.broker.submit(t)
        self.assertEqual(cm.exception.errno, errno.EEXIST)
        self.assertEqual(cm.exception.failed_op, 1)
        self.assertNotIn('bc', self.broker.coll_list())

    def test_list_pages_past_one_frame(self):
        # names long enough that one LIST frame cannot hold them all
        self.broker.ensure_coll('many')
        names = [b'%04d' % i + b'n' * 1000 for i in range(1500)]
        t = Txn()
        for n in names:
            t.touch('many', n)
        with self.assertRaises(BrokerError) as cm:
            self.broker.submit(t)       # 1.5 MB of records: over a frame
        self.assertEqual(cm.exception.errno, errno.EMSGSIZE)
        for i in range(0, len(names), 500):
            t = Txn()
            for n in names[i:i + 500]:
                t.touch('many', n)
            self.broker.submit(t)
        self.assertEqual(self.broker.list('many'), names)
        self.assertEqual(self.broker.list('many', after=names[9], limit=3),
                         names[10:13])
        # a range: pages of 64, 128, ... names, ending at stop
        self.assertEqual(self.broker.list('many', after=names[10],
                                          stop=names[400]), names[11:400])
        self.assertEqual(self.broker.list('many', after=names[10],
                                          stop=names[400], limit=100),
                         names[11:111])


if __name__ == '__main__':
    unittest.main()
