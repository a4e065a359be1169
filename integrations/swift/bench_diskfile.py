# SPDX-License-Identifier: MIT
"""A small DiskFile-level comparison: the rawstore backend (through a
rawstored on a file-backed store) against Swift's own file-system backend
(replication.fs) in a directory of the same file system, one process, no
network.  Backends alternate within each repetition, so the ratios come
from the same moments of a shared machine.  Not Swift on rawstore against
Swift on XFS (that benchmark is still to come, docs/swift.md).

Run after a build, with Debian's python3:
  /usr/bin/python3 integrations/swift/bench_diskfile.py [--reps 3]
"""

import argparse
import hashlib
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, 'tests')]

import test_diskfile as td  # noqa: E402
from swift.common.utils import Timestamp  # noqa: E402
from swift.obj import diskfile as sdf  # noqa: E402


def put(mgr, obj, body):
    df = mgr.get_diskfile(td.DEV, '5', 'a', 'c', obj, td.POLICY)
    with df.create(size=len(body)) as w:
        for off in range(0, len(body), 65536):
            w.write(body[off:off + 65536])
        w.put({'X-Timestamp': Timestamp.now().internal,
               'Content-Length': str(len(body)),
               'ETag': hashlib.md5(body).hexdigest(),
               'Content-Type': 'application/octet-stream'})


def get(mgr, obj, size):
    df = mgr.get_diskfile(td.DEV, '5', 'a', 'c', obj, td.POLICY)
    with df.open():
        n = sum(len(c) for c in df.reader())
    assert n == size, (n, size)


def run(mgr, tag, size, count):
    body = os.urandom(size)
    t0 = time.perf_counter()
    for i in range(count):
        put(mgr, '%s-%d' % (tag, i), body)
    t1 = time.perf_counter()
    for i in range(count):
        get(mgr, '%s-%d' % (tag, i), size)
    t2 = time.perf_counter()
    return count / (t1 - t0), count / (t2 - t1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--reps', type=int, default=3)
    args = ap.parse_args()
    td.StoreTest.setUpClass()
    fsdir = tempfile.mkdtemp(prefix='swift-fs-', dir=td.StoreTest.tmp)
    os.makedirs(os.path.join(fsdir, td.DEV))
    logger = td.Logger()
    rs = td.rdf.RawstoreDiskFileManager(
        {'devices': td.StoreTest.devices, 'mount_check': 'false',
         'rawstore_socket': os.path.join(td.StoreTest.tmp, '{device}.sock')},
        logger)
    fs = sdf.DiskFileManager({'devices': fsdir, 'mount_check': 'false'},
                             logger)
    cells = [('4 KiB', 4096, 200), ('64 KiB', 65536, 100),
             ('1 MiB', 1 << 20, 30)]
    ratios = dict(((c[0], op), []) for c in cells for op in ('PUT', 'GET'))
    try:
        for rep in range(args.reps):
            for name, size, count in cells:
                got = {}
                order = ('rawstore', 'fs') if rep % 2 == 0 else \
                    ('fs', 'rawstore')
                for which in order:
                    mgr = rs if which == 'rawstore' else fs
                    got[which] = run(mgr, '%s-%d-%s' % (which, rep, size),
                                     size, count)
                for k, op in enumerate(('PUT', 'GET')):
                    r = got['rawstore'][k] / got['fs'][k]
                    ratios[(name, op)].append(r)
                    print('rep %d %-6s %s: rawstore %8.1f/s  fs %8.1f/s  '
                          'ratio %.2f' % (rep, name, op, got['rawstore'][k],
                                          got['fs'][k], r), flush=True)
        print('\nmedian ratio rawstore/fs (objects/s), %d repetitions:'
              % args.reps)
        for (name, op), rs_ in ratios.items():
            print('  %-6s %s  %.2f  (%.2f-%.2f)' % (
                name, op, statistics.median(rs_), min(rs_), max(rs_)))
    finally:
        rs.broker(td.DEV).close()
        shutil.rmtree(fsdir, ignore_errors=True)
        td.StoreTest.tearDownClass()


if __name__ == '__main__':
    main()
