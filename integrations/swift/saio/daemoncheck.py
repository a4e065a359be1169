# SPDX-License-Identifier: MIT
"""Check the background daemons of a running all-in-one (saio/run
daemons DIR) by the work only they do, and print one RESULT line each.

- expirer: an object PUT with X-Delete-After is gone from the stores:
  every replica's .data has become a tombstone at its delete-at time.
  The object server alone only hides an expired object from GETs.
- updater: with the container server stopped, a PUT leaves async
  pendings under srv/node; once the container server is back, the
  updater sends them: the container lists the object, the pendings are
  gone.
- replicator, auditor: each finished a pass (its log says so).

Usage: daemoncheck.py DIR     (exit status 1 if a check failed)
"""

import glob
import http.client
import json
import os
import subprocess
import sys
import time
import urllib.parse

from swift.common.utils import hash_path

HERE = os.path.dirname(os.path.abspath(__file__))
WAIT = 60


def result(name, ok, why=''):
    print('RESULT daemons.%s %s%s' % (name, 'PASS' if ok else 'FAIL',
                                      ' ' + why if why and not ok else ''),
          flush=True)
    return ok


class Client(object):
    def __init__(self, port):
        c = http.client.HTTPConnection('127.0.0.1', port, timeout=30)
        c.request('GET', '/auth/v1.0', headers={
            'X-Auth-User': 'test:tester', 'X-Auth-Key': 'testing'})
        r = c.getresponse()
        r.read()
        self.token = r.getheader('X-Auth-Token')
        self.path = urllib.parse.urlparse(r.getheader('X-Storage-Url')).path
        self.port = port
        self.account = self.path.rsplit('/', 1)[1]

    def req(self, method, path, body=b'', headers=None):
        c = http.client.HTTPConnection('127.0.0.1', self.port, timeout=30)
        h = {'X-Auth-Token': self.token}
        h.update(headers or {})
        c.request(method, self.path + path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data


def replica_files(d, account, container, obj):
    """The file names (.data, .ts, .meta) every device holds for obj."""
    h = hash_path(account, container, obj)
    out = []
    backend = open(os.path.join(d, 'run', 'backend')).read().strip()
    if backend == 'rawstore':
        sys.path.insert(0, os.path.dirname(HERE))
        from rawstore_swift.broker import Broker, BrokerError
        for sock in sorted(glob.glob(os.path.join(d, 'run', 'sd*.sock'))):
            b = Broker(sock)
            for coll in b.coll_list():
                if not coll.startswith('objects'):
                    continue
                try:
                    names = b.list(coll, after=h[-3:].encode() + b'/' +
                                   h.encode() + b'/',
                                   stop=h[-3:].encode() + b'/' + h.encode() +
                                   b'0')
                except BrokerError:
                    continue
                out += [n.rsplit(b'/', 1)[1].decode() for n in names]
            b.close()
    else:
        for p in glob.glob(os.path.join(d, 'srv', 'node', 'sd*', 'objects',
                                        '*', h[-3:], h, '*')):
            out.append(os.path.basename(p))
    return out


def pendings(d):
    return glob.glob(os.path.join(d, 'srv', 'node', 'sd*', 'async_pending*',
                                  '*', '*'))


def until(pred, wait=WAIT):
    end = time.time() + wait
    while time.time() < end:
        if pred():
            return True
        time.sleep(1)
    return pred()


def check_expirer(d, cl):
    obj = 'expiring-%d' % time.time()    # a name of its own: reruns
    st, _ = cl.req('PUT', '/dc')
    if st // 100 != 2:
        return result('expirer', False, 'container PUT: %d' % st)
    st, _ = cl.req('PUT', '/dc/' + obj, b'soon gone',
                   {'X-Delete-After': '3'})
    if st != 201:
        return result('expirer', False, 'PUT: %d' % st)
    if len([f for f in replica_files(d, cl.account, 'dc', obj)
            if f.endswith('.data')]) != 3:
        return result('expirer', False, 'no 3 .data replicas after the PUT')

    def expired():
        fs = replica_files(d, cl.account, 'dc', obj)
        return not any(f.endswith('.data') for f in fs) and \
            sum(f.endswith('.ts') for f in fs) == 3
    # The expirer may have just removed the day's queue container, empty
    # until this PUT: the container updater lists it in the account again
    ok = until(expired, 150)
    st, _ = cl.req('GET', '/dc/' + obj)
    return result('expirer', ok and st == 404,
                  'replicas now: %s, GET %d' % (
                      replica_files(d, cl.account, 'dc', obj), st))


def saio(*args):
    subprocess.run([os.path.join(HERE, 'run')] + list(args), check=True,
                   stdout=subprocess.DEVNULL)


def check_updater(d, cl):
    late = 'late-%d' % time.time()
    st, _ = cl.req('PUT', '/uc')
    st2, _ = cl.req('HEAD', '/uc')     # the proxy caches the container
    if st // 100 != 2 or st2 // 100 != 2:
        return result('updater', False, 'container PUT/HEAD: %d/%d'
                      % (st, st2))
    before = len(pendings(d))
    saio('stop-one', d, 'container-server')
    try:
        st, _ = cl.req('PUT', '/uc/' + late, b'listed later')
        made = len(pendings(d)) - before
    finally:
        saio('start-one', d, 'container-server')
    if st != 201 or made < 1:
        return result('updater', False, 'PUT %d with the container server '
                      'down, %d async pendings' % (st, made))

    def sent():
        s, body = cl.req('GET', '/uc?format=json')
        return s == 200 and late in [o['name'] for o in json.loads(body)] \
            and len(pendings(d)) == before
    ok = until(sent)
    return result('updater', ok, '%d async pendings were made, %d left; '
                  'listing: %s' % (made, len(pendings(d)) - before,
                                   cl.req('GET', '/uc')[1][:200]))


def check_log(d, name, what):
    log = os.path.join(d, 'log', name + '.log')

    def said():
        try:
            with open(log, errors='replace') as f:
                return any(what in line for line in f)
        except OSError:
            return False
    return result(name.split('-', 1)[1], until(said, 90),
                  'no "%s" in %s' % (what, log))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split('Usage: ')[1])
    d = os.path.abspath(sys.argv[1])
    off = int(open(os.path.join(d, 'run', 'ports')).read())
    cl = Client(8080 + off)
    ok = check_expirer(d, cl)
    ok &= check_updater(d, cl)
    ok &= check_log(d, 'object-replicator', 'Object replication complete')
    ok &= check_log(d, 'object-auditor', 'Object audit (ALL) "forever" mode '
                    'completed')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
