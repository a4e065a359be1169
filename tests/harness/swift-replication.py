# SPDX-License-Identifier: MIT
"""Replication and auditing of Swift on rawstore devices, on a small cluster
(run by tests/harness/swift-replication.sh; docs/swift.md, "Replication
and auditing").

One rawstored serves four file-backed stores (sd1..sd4, 256 MiB each,
made with `rawstore mkfs`); an object ring of part power 6, 3 replicas,
over two regions and four zones (r1z1 sd1, r1z2 sd2, r2z3 sd3, r2z4 sd4);
one object server on a free port serving all four.  Objects are written
with Swift's direct client to the object server (no proxy, no container
server: without X-Container-Host the object server sends no container
update).  The replicator is rawstore_swift.replicator's, started as the
installed script starts it (main()), the auditor Swift's own ObjectAuditor
(which finds the objects through the backend's
object_audit_location_generator).  Every comparison is of what the
stores hold: per device, every object (partition, hash) with its files
(timestamp.ext names), each file's metadata dict and body, byte for byte.

1. Handoffs: objects PUT only to the partition's handoff device (some
   then DELETEd, some POSTed there) are pushed by the replicator to their
   three primaries, identical, and removed from the handoff (emptied by
   delete_handoff_objs, two primaries being in another region than the
   handoff, then removed by delete_partition a pass later): passes are
   run until no object is off its primaries, at most 5.
2. A device wiped (`rawstore mkfs` again) and the replicator run once:
   every object it held comes back, .data, tombstones and .meta,
   identical; the other devices are unchanged.
3. The auditor: an object's bytes overwritten in the device file (found
   by a unique pattern in its body); one auditor pass quarantines it
   (the store's crc32c fails the read); the next replication restores
   it, identical.

Modes: `run` (the test), `serve|replicate|audit SWIFT_CONF CONF` (the
processes it starts, each with the private swift.conf).
"""

import hashlib
import os
import pickle
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, '..', '..'))
sys.path.insert(0, os.path.join(REPO, 'integrations', 'swift'))
BUILD = os.environ.get('RAWSTORE_BUILD', os.path.join(REPO, 'build'))
RAWSTORE = os.path.join(BUILD, 'store', 'cli', 'rawstore')
RAWSTORED = os.path.join(BUILD, 'store', 'broker', 'rawstored')
PY = '/usr/bin/python3'
DEVS = ['sd1', 'sd2', 'sd3', 'sd4']
REGION_ZONE = {'sd1': (1, 1), 'sd2': (1, 2), 'sd3': (2, 3), 'sd4': (2, 4)}
STORE_SIZE = 256 << 20
PART_POWER = 6


def use_swift_conf(path):
    """Swift reads /etc/swift/swift.conf when swift.common.utils is
    imported (the hash path suffix and prefix) and when the policies are
    first loaded: read ours instead, in every process."""
    from swift.common import utils
    utils.SWIFT_CONF_FILE = path
    utils.HASH_PATH_SUFFIX = utils.HASH_PATH_PREFIX = b''
    utils.validate_hash_conf()
    from swift.common import storage_policy
    storage_policy.reload_storage_policies()


def child(mode, swift_conf, conf):
    """The object server, one replicator pass or one auditor pass."""
    use_swift_conf(swift_conf)
    if mode == 'serve':
        from swift.common.wsgi import run_wsgi
        from swift.obj import server
        sys.exit(run_wsgi(conf, 'object-server', verbose=True,
                          global_conf_callback=server.global_conf_callback))
    if mode == 'replicate':
        from rawstore_swift.replicator import main
        main([conf, '--once', '--verbose'])
    elif mode == 'audit':
        from swift.common.daemon import run_daemon
        from swift.obj.auditor import ObjectAuditor
        run_daemon(ObjectAuditor, conf, section_name='object-auditor',
                   once=True, verbose=True)


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Cluster(object):
    def __init__(self):
        self.tmp = tempfile.mkdtemp(prefix='swift-repl.')
        for d in ('etc', 'run', 'log', 'stores', 'recon'):
            os.makedirs(os.path.join(self.tmp, d))
        self.node = os.path.join(self.tmp, 'node')
        for dev in DEVS:
            os.makedirs(os.path.join(self.node, dev))
        self.port = free_port()
        self.daemon = self.server = None
        self.swift_conf = os.path.join(self.tmp, 'etc', 'swift.conf')
        self.conf = os.path.join(self.tmp, 'etc', 'object-server.conf')
        self.nlog = 0

    def path(self, *p):
        return os.path.join(self.tmp, *p)

    def sock(self, dev):
        return self.path('run', dev + '.sock')

    def mkfs(self, dev):
        devf, meta = self.path('stores', dev), self.path('stores',
                                                         dev + '.meta')
        if os.path.exists(devf):
            os.unlink(devf)
        shutil.rmtree(meta, ignore_errors=True)
        with open(devf, 'wb') as f:
            f.truncate(STORE_SIZE)
        subprocess.run([RAWSTORE, 'mkfs', '--zero-policy', 'pad', devf,
                        meta], check=True, stdout=subprocess.DEVNULL)

    def write_confs(self):
        with open(self.swift_conf, 'w') as f:
            # a fixed suffix and ring: the same placement, so the same
            # counts, every run
            f.write('[swift-hash]\nswift_hash_path_suffix = swift-repl\n'
                    'swift_hash_path_prefix =\n\n'
                    '[storage-policy:0]\nname = rawstore\ndefault = yes\n'
                    'diskfile_module = egg:rawstore_swift#replication.rawstore\n')
        with open(self.conf, 'w') as f:
            f.write("""[DEFAULT]
bind_ip = 127.0.0.1
bind_port = %(port)d
workers = 1
user = %(user)s
swift_dir = %(etc)s
devices = %(node)s
mount_check = true
rawstore_socket = %(run)s/{device}.sock
recon_cache_path = %(recon)s
log_name = repl

[pipeline:main]
pipeline = object-server

[app:object-server]
use = egg:swift#object

[object-replicator]
sync_method = ssync
concurrency = 1
stats_interval = 3600

[object-auditor]
files_per_second = 100000
bytes_per_second = 1000000000
zero_byte_files_per_second = 100000
concurrency = 1
""" % {'port': self.port, 'user': os.environ.get('USER') or 'root',
                'etc': self.path('etc'), 'node': self.node,
                'run': self.path('run'), 'recon': self.path('recon')})

    def make_ring(self):
        from swift.common.ring import RingBuilder, Ring
        b = RingBuilder(PART_POWER, 3, 0)
        for i, dev in enumerate(DEVS):
            r, z = REGION_ZONE[dev]
            b.add_dev({'id': i, 'region': r, 'zone': z, 'ip': '127.0.0.1',
                       'port': self.port, 'device': dev, 'weight': 100,
                       'replication_ip': '127.0.0.1',
                       'replication_port': self.port})
        b.rebalance(seed=42)
        b.get_ring().save(self.path('etc', 'object.ring.gz'))
        self.ring = Ring(self.path('etc'), ring_name='object')

    # -- processes ----------------------------------------------------

    def start_daemon(self):
        args = [RAWSTORED]
        for dev in DEVS:
            args += ['--store', '%s:%s:%s:%s' % (
                dev, self.path('stores', dev),
                self.path('stores', dev + '.meta'), self.sock(dev))]
        self.daemon = subprocess.Popen(
            args, stdout=subprocess.DEVNULL,
            stderr=open(self.path('log', 'rawstored.log'), 'ab'))
        for _ in range(300):
            if all(os.path.exists(self.sock(d)) for d in DEVS):
                return
            if self.daemon.poll() is not None:
                raise RuntimeError('rawstored exited %d' % self.daemon.returncode)
            time.sleep(0.05)
        raise RuntimeError('rawstored did not start')

    def stop_daemon(self):
        if self.daemon:
            self.daemon.send_signal(signal.SIGTERM)
            rc = self.daemon.wait(60)
            self.daemon = None
            if rc:
                raise RuntimeError('rawstored exited %d' % rc)

    def start_server(self):
        self.server = subprocess.Popen(
            [PY, __file__, 'serve', self.swift_conf, self.conf],
            stdout=open(self.path('log', 'object-server.log'), 'ab'),
            stderr=subprocess.STDOUT, start_new_session=True)
        for _ in range(300):
            try:
                socket.create_connection(('127.0.0.1', self.port), 1).close()
                return
            except OSError:
                if self.server.poll() is not None:
                    break
                time.sleep(0.1)
        raise RuntimeError('the object server did not start (log/%s)'
                           % 'object-server.log')

    def stop_server(self):
        if self.server:
            os.killpg(self.server.pid, signal.SIGTERM)
            self.server.wait(60)
            self.server = None

    def start(self):
        self.start_daemon()
        self.start_server()

    def stop(self):
        self.stop_server()
        self.stop_daemon()

    def run_pass(self, mode):
        """One replicator or auditor pass; returns its log."""
        self.nlog += 1
        log = self.path('log', '%02d-%s.log' % (self.nlog, mode))
        with open(log, 'wb') as f:
            rc = subprocess.run([PY, __file__, mode, self.swift_conf,
                                 self.conf], stdout=f,
                                stderr=subprocess.STDOUT, timeout=300)
        with open(log, errors='replace') as f:
            text = f.read()
        if rc.returncode:
            raise RuntimeError('%s exited %d:\n%s' % (mode, rc.returncode,
                                                     text[-3000:]))
        return text

    # -- what the stores hold -----------------------------------------

    def ring_strays(self, dev, snap):
        """The objects of ``snap`` (device ``dev``) in a partition of
        which ``dev`` is not a primary, and the partitions' collections
        left there."""
        from rawstore_swift.broker import Broker
        mine = lambda part: dev in [n['device'] for n in
                                    self.ring.get_part_nodes(int(part))]
        out = [(dev, part, hsh) for (part, hsh) in snap if not mine(part)]
        b = Broker(self.sock(dev))
        try:
            out += [(dev, coll, None) for coll in b.coll_list()
                    if coll.startswith('objects/') and
                    not mine(coll.split('/')[1])]
        finally:
            b.close()
        return out

    def snapshot(self, dev):
        """{(part, hash): {file: (metadata, body)}} of one device."""
        from rawstore_swift.broker import Broker
        from swift.obj import diskfile as sdf
        b = Broker(self.sock(dev))
        out = {}
        try:
            for coll in b.coll_list():
                if not coll.startswith('objects/'):
                    continue
                part = coll.split('/', 1)[1]
                for name in b.list(coll):
                    _suffix, hsh, fname = name.decode().split('/')
                    meta = sdf._decode_metadata(pickle.loads(
                        b.getattr(coll, name, 'swift.metadata'),
                        encoding='bytes'))
                    size = b.stat(coll, name)[0]
                    body = b.read(coll, name, 0, size) if size else b''
                    out.setdefault((part, hsh), {})[fname] = (meta, body)
        finally:
            b.close()
        return out

    def quarantined(self, dev):
        from rawstore_swift.broker import Broker, BrokerError
        b = Broker(self.sock(dev))
        try:
            return [n.decode() for n in b.list('quarantined/objects')]
        except BrokerError:
            return []
        finally:
            b.close()


def compare(want, got, what=''):
    """(compared, lost, differing, extra) of two device snapshots; the
    first few of each kind are printed."""
    lost = [k for k in want if k not in got]
    differing = [k for k in want if k in got and got[k] != want[k]]
    extra = [k for k in got if k not in want]
    for label, keys, snap in (('lost', lost, want),
                              ('differing', differing, want),
                              ('extra', extra, got)):
        for k in keys[:5]:
            print('  %s %s: %s/%s %s' % (what, label, k[0], k[1],
                                         sorted(snap[k])))
    return len(want), len(lost), len(differing), len(extra)


def kinds(snap):
    data = sum(1 for f in snap.values() if any(n.endswith('.data')
                                                for n in f))
    ts = sum(1 for f in snap.values() if any(n.endswith('.ts') for n in f))
    meta = sum(1 for f in snap.values() if any(n.endswith('.meta')
                                                for n in f))
    return 'data %d, tombstones %d, with .meta %d' % (data, ts, meta)


def main():
    from swift.common import utils
    c = Cluster()
    c.write_confs()
    use_swift_conf(c.swift_conf)
    from swift.common import direct_client as dc
    from swift.common.utils import Timestamp
    fails = []
    t0 = time.time()
    rng = random.Random(1)
    try:
        for dev in DEVS:
            c.mkfs(dev)
        c.make_ring()
        c.start()
        hdr = {'X-Backend-Storage-Policy-Index': '0'}

        def put(nodes, part, name, body, meta=None):
            ts = Timestamp.now().internal
            for n in nodes:
                h = dict(hdr, **{'X-Timestamp': ts})
                h.update(meta or {})
                dc.direct_put_object(n, part, 'AUTH_t', 'c', name, body,
                                     content_length=len(body),
                                     etag=hashlib.md5(body).hexdigest(),
                                     headers=h)

        def post(nodes, part, name, meta):
            ts = Timestamp.now().internal
            for n in nodes:
                dc.direct_post_object(n, part, 'AUTH_t', 'c', name,
                                      dict(hdr, **dict(meta, **{
                                          'X-Timestamp': ts})))

        def delete(nodes, part, name):
            ts = Timestamp.now().internal
            for n in nodes:
                dc.direct_delete_object(n, part, 'AUTH_t', 'c', name,
                                        headers=dict(hdr, **{
                                            'X-Timestamp': ts}))

        # Objects on their three primaries: 150, sizes 0..48 KiB, three
        # of 1.5 MiB (several READ frames and streamed writes); every
        # 10th then DELETEd (a tombstone), every 7th POSTed (a .meta).
        big = {}
        for i in range(150):
            name = 'o%03d' % i
            part, nodes = c.ring.get_nodes('AUTH_t', 'c', name)
            if i % 50 == 1:
                # a pattern of its own: found on the device to corrupt it
                marker = b'RAWSTORE-AUDIT-' + os.urandom(16).hex().encode()
                body = bytearray(os.urandom(3 << 19))
                body[700000:700000 + len(marker)] = marker
                body = bytes(body)
                big[name] = marker
            else:
                body = os.urandom(rng.randrange(0, 48 << 10))
            put(nodes, part, name, body, {'X-Object-Meta-Seq': str(i)})
            if i % 10 == 9:
                delete(nodes, part, name)
            elif i % 7 == 3:
                post(nodes, part, name, {'X-Object-Meta-Color': 'blue%d' % i})
        # Objects on a handoff only: 12, three then DELETEd there, three
        # POSTed there.
        handoff_objs = {}
        for i in range(12):
            name = 'h%03d' % i
            part, nodes = c.ring.get_nodes('AUTH_t', 'c', name)
            ho = next(c.ring.get_more_nodes(part))
            put([ho], part, name, os.urandom(rng.randrange(1, 32 << 10)))
            if i % 4 == 1:
                delete([ho], part, name)
            elif i % 4 == 2:
                post([ho], part, name, {'X-Object-Meta-Where': 'handoff'})
            hsh = utils.hash_path('AUTH_t', 'c', name)
            handoff_objs[name] = (str(part), hsh, ho['device'],
                                  [n['device'] for n in nodes])
        before = dict((d, c.snapshot(d)) for d in DEVS)
        for d in DEVS:
            print('%s before: %d objects (%s)' % (d, len(before[d]),
                                                  kinds(before[d])))

        # 1. handoffs pushed to the primaries and removed
        # As Swift does with more than one region, a handoff sends to one
        # primary of each other region and keeps an object until every
        # primary there has it (the region's own primaries replicate among
        # themselves), and an emptied partition is removed in the pass
        # after: so passes until no object is off its primaries, at most 5.
        t1 = time.time()
        for passes in range(1, 6):
            c.run_pass('replicate')
            after = dict((d, c.snapshot(d)) for d in DEVS)
            if not any(c.ring_strays(d, after[d]) for d in DEVS):
                break
        compared = lost = differing = left = 0
        for name, (part, hsh, ho, prims) in handoff_objs.items():
            want = before[ho][(part, hsh)]
            for p in prims:
                compared += 1
                got = after[p].get((part, hsh))
                if got is None:
                    lost += 1
                elif got != want:
                    differing += 1
            if (part, hsh) in after[ho]:
                left += 1
                print('  left on handoff %s: %s %s/%s %s' % (
                    ho, name, part, hsh, sorted(after[ho][(part, hsh)])))
        strays = [s for d in DEVS for s in c.ring_strays(d, after[d])]
        print('handoffs: %d objects, %d primary copies compared: %d lost, '
              '%d differing; %d left on a handoff, %d objects off their '
              'primaries (%.1fs, %d passes)' % (
                  len(handoff_objs), compared, lost, differing, left,
                  len(strays), time.time() - t1, passes))
        if lost or differing or left or strays or \
                compared != 3 * len(handoff_objs):
            fails.append('handoffs')
        for d in DEVS:
            for k, v in before[d].items():
                if (k[0], k[1]) not in [(p, h) for p, h, _d, _p in
                                        handoff_objs.values()] and \
                        after[d].get(k) != v:
                    fails.append('%s changed by replication: %s' % (d, k))
                    break

        # 2. a device wiped and the replicator run once
        truth = after
        victim = 'sd2'
        c.stop()
        c.mkfs(victim)
        c.start()
        if c.snapshot(victim):
            fails.append('%s not empty after mkfs' % victim)
        t2 = time.time()
        c.run_pass('replicate')
        now = dict((d, c.snapshot(d)) for d in DEVS)
        n, lost, differing, extra = compare(truth[victim], now[victim],
                                            victim)
        print('wipe of %s: %d objects compared (%s): %d lost, %d differing, '
              '%d extra (%.1fs, 1 pass)' % (victim, n, kinds(truth[victim]),
                                            lost, differing, extra,
                                            time.time() - t2))
        if lost or differing or extra or n == 0:
            fails.append('wipe')
        for d in DEVS:
            if d != victim and now[d] != truth[d]:
                compare(truth[d], now[d], d)
                fails.append('%s changed by the wipe\'s replication' % d)

        # 3. bytes of an object overwritten on sd1's device
        target = None
        for name in big:
            part, nodes = c.ring.get_nodes('AUTH_t', 'c', name)
            if 'sd1' in [n['device'] for n in nodes] and \
                    (str(part), utils.hash_path('AUTH_t', 'c', name)) in \
                    truth['sd1']:
                target = (str(part), utils.hash_path('AUTH_t', 'c', name))
                marker = big[name]
                break
        if target is None:
            raise RuntimeError('no large object has a primary on sd1')
        c.stop()
        devf = c.path('stores', 'sd1')
        with open(devf, 'r+b') as f:
            data = f.read()
            hits = []
            at = data.find(marker)
            while at >= 0:
                hits.append(at)
                at = data.find(marker, at + 1)
            for at in hits:
                f.seek(at)
                f.write(b'X' * 8)
            del data
        print('auditor: the body of %s/%s found %d time(s) in sd1\'s '
              'device, 8 bytes overwritten at each' % (
                  target[0], target[1], len(hits)))
        if not hits:
            raise RuntimeError('the marker is not on the device')
        c.start()
        t3 = time.time()
        log = c.run_pass('audit')
        for line in log.splitlines():
            if 'Quarantined object' in line or 'failed audit' in line:
                print('  auditor said: %s' % line.strip()[:300])
        snap = c.snapshot('sd1')
        q = [n for n in c.quarantined('sd1') if n.startswith(target[1] + '-')]
        others = compare(dict((k, v) for k, v in truth['sd1'].items()
                              if k != target), snap, 'sd1')
        print('auditor: %s in partition %s: %s; quarantined files %s; '
              'other objects on sd1: %d compared, %d lost, %d differing '
              '(%.1fs)' % (target[1], target[0],
                           'gone' if target not in snap else 'still there',
                           q, others[0], others[1], others[2],
                           time.time() - t3))
        if target in snap or not q or 'failed audit and was quarantined' \
                not in log or others[1] or others[2] or others[3]:
            fails.append('auditor')
        c.run_pass('replicate')
        snap = c.snapshot('sd1')
        ok = snap.get(target) == truth['sd1'][target]
        n, lost, differing, extra = compare(truth['sd1'], snap, 'sd1')
        print('after replication: %s restored %s; sd1 %d objects compared: '
              '%d lost, %d differing, %d extra' % (
                  target[1], 'identical' if ok else 'NOT identical',
                  n, lost, differing, extra))
        if not ok or lost or differing or extra:
            fails.append('restore after quarantine')
    except Exception:
        import traceback
        traceback.print_exc()
        fails.append('exception')
    finally:
        try:
            c.stop()
        except Exception as e:
            fails.append('stop: %s' % e)
    print('wall time %.1fs' % (time.time() - t0))
    if fails:
        print('logs kept in %s' % c.tmp)
        for f in os.listdir(c.path('log')):
            print('--- %s (tail)' % f)
            with open(c.path('log', f), errors='replace') as fh:
                print(''.join(fh.readlines()[-15:]))
        print('FAIL: %s' % '; '.join(fails))
        return 1
    shutil.rmtree(c.tmp)
    print('swift-replication: ok')
    return 0


if __name__ == '__main__':
    if len(sys.argv) == 4:
        child(*sys.argv[1:])
    else:
        sys.exit(main())
