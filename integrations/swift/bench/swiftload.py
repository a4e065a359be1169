#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""swiftload: PUT and GET load against a Swift proxy, per object size and
number of concurrent clients (docs/swift.md, "The Swift benchmark").

Debian's swift-bench does not run on Python 3, so this is the project's
own: each client is a thread with one keep-alive HTTP connection to the
proxy (http.client, no retries), authenticated once with tempauth.  For
each cell (size x clients) it PUTs for --seconds into a container of its
own, then GETs what it PUT for --seconds (each client its own objects, in
a shuffled order, every body compared with what was PUT), and prints one
JSON line per cell and phase:

  {"swiftload": 1, "backend": B, "op": "put"|"get", "size": N,
   "clients": C, "ops": N, "seconds": S, "ops_per_s": R,
   "p50_ms": M, "p99_ms": M, "errors": E, "first_error": "..."}

With --cpu NAME=PID,... each line also has "cpu_ms_per_op": the CPU time
(user + system, from /proc/PID/stat) each named process group spent in
the phase, per successful op, and under "host" that of the whole machine
(/proc/stat, all but idle and iowait), the load generator included.
Names may repeat (a server and its workers are one group).

An error (a status other than 201 for a PUT, other than 200 or a
different body for a GET, or a dropped connection) is counted and the
client reconnects; the cell's ops count only successes.  Exit status 1
if any cell had an error, 2 on bad usage.
"""

import argparse
import http.client
import json
import os
import random
import sys
import threading
import time
import urllib.parse


def parse_size(s):
    s = s.strip().lower()
    mult = 1
    for suffix, m in (('k', 1 << 10), ('m', 1 << 20), ('g', 1 << 30)):
        if s.endswith(suffix):
            s, mult = s[:-1], m
            break
    return int(s) * mult


def size_name(n):
    for suffix, m in (('m', 1 << 20), ('k', 1 << 10)):
        if n >= m and n % m == 0:
            return '%d%s' % (n // m, suffix)
    return str(n)


def auth(url, user, key):
    """tempauth: (storage URL, token)."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=30)
    c.request('GET', u.path or '/auth/v1.0',
              headers={'X-Auth-User': user, 'X-Auth-Key': key})
    r = c.getresponse()
    r.read()
    c.close()
    if r.status // 100 != 2:
        raise RuntimeError('auth at %s: HTTP %d' % (url, r.status))
    return r.getheader('X-Storage-Url'), r.getheader('X-Auth-Token')


class Client(object):
    def __init__(self, storage_url, token):
        u = urllib.parse.urlsplit(storage_url)
        self.host, self.port, self.base = u.hostname, u.port or 80, u.path
        self.token = token
        self.conn = None

    def request(self, method, path, body=None):
        """(status, body) or raises OSError/HTTPException."""
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        headers = {'X-Auth-Token': self.token}
        if body is not None:
            headers['Content-Length'] = str(len(body))
        try:
            self.conn.request(method, self.base + path, body=body, headers=headers)
            r = self.conn.getresponse()
            data = r.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = None
            raise
        return r.status, data

    def close(self):
        if self.conn is not None:
            self.conn.close()


def pct(sorted_vals, p):
    if not sorted_vals:
        return None
    i = min(len(sorted_vals) - 1, int(round(p / 100.0 * (len(sorted_vals) - 1))))
    return sorted_vals[i]


def body_of(size, client, i):
    """A body unique to (client, i), cheap to make and to compare."""
    head = ('%d/%d/' % (client, i)).encode()
    return (head * (size // len(head) + 1))[:size]


def run_phase(op, storage_url, token, container, size, nclients, seconds, written):
    """Run @op ('put' or 'get') with @nclients threads for @seconds."""
    lat = [[] for _ in range(nclients)]
    errs = [0] * nclients
    first = [None]
    start = threading.Barrier(nclients + 1)
    stop_at = [0.0]

    def worker(k):
        c = Client(storage_url, token)
        names = list(written[k]) if op == 'get' else None
        if names:
            random.Random(k).shuffle(names)
        start.wait()
        i = 0
        while time.monotonic() < stop_at[0]:
            if op == 'put':
                name, body = '%d-%d' % (k, i), body_of(size, k, i)
            else:
                if not names:
                    break
                name = names[i % len(names)]
                body = body_of(size, k, int(name.split('-')[1]))
            t0 = time.monotonic()
            try:
                status, data = c.request('PUT' if op == 'put' else 'GET',
                                         '/%s/%s' % (container, name),
                                         body if op == 'put' else None)
                ok = status == 201 if op == 'put' else (status == 200 and data == body)
                why = 'HTTP %d' % status if not ok else None
                if ok is False and status == 200:
                    why = 'GET returned different bytes'
            except (OSError, http.client.HTTPException) as e:
                ok, why = False, '%s: %s' % (type(e).__name__, e)
            dt = time.monotonic() - t0
            if ok:
                lat[k].append(dt)
                if op == 'put':
                    written[k].append(name)
            else:
                errs[k] += 1
                if first[0] is None:
                    first[0] = '%s %s: %s' % (op.upper(), name, why)
            i += 1
        c.close()

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(nclients)]
    for t in ts:
        t.start()
    t0 = time.monotonic()
    stop_at[0] = t0 + seconds
    start.wait()
    for t in ts:
        t.join()
    elapsed = time.monotonic() - t0
    all_lat = sorted(x for v in lat for x in v)
    return {
        'op': op, 'size': size, 'clients': nclients, 'ops': len(all_lat),
        'seconds': round(elapsed, 3),
        'ops_per_s': round(len(all_lat) / elapsed, 2) if elapsed > 0 else 0,
        'p50_ms': round(pct(all_lat, 50) * 1000, 3) if all_lat else None,
        'p99_ms': round(pct(all_lat, 99) * 1000, 3) if all_lat else None,
        'errors': sum(errs), 'first_error': first[0],
    }


TICK = os.sysconf('SC_CLK_TCK')


def cpu_ticks(groups):
    """{name: utime + stime of its pids} and the host's busy ticks."""
    out = {}
    for name, pids in groups.items():
        t = 0
        for pid in pids:
            try:
                with open('/proc/%d/stat' % pid) as f:
                    fields = f.read().rsplit(')', 1)[1].split()
                t += int(fields[11]) + int(fields[12])
            except (OSError, IndexError, ValueError):
                pass    # gone: its ticks are lost, said nowhere else
        out[name] = t
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:]]
    out['host'] = sum(v) - v[3] - v[4]
    return out


def parse_cpu(spec):
    groups = {}
    for item in filter(None, spec.split(',')):
        name, pid = item.rsplit('=', 1)
        groups.setdefault(name, []).append(int(pid))
    return groups


def main(argv=None):
    ap = argparse.ArgumentParser(prog='swiftload', description=__doc__.split('\n')[0])
    ap.add_argument('--auth', default='http://127.0.0.1:8080/auth/v1.0')
    ap.add_argument('--user', default='test:tester')
    ap.add_argument('--key', default='testing')
    ap.add_argument('--backend', default='', help='label written into every line')
    ap.add_argument('--sizes', default='4k,64k,1m')
    ap.add_argument('--clients', default='1,16,64')
    ap.add_argument('--seconds', type=float, default=10.0, help='per phase and cell')
    ap.add_argument('--container-prefix', default='swiftload')
    ap.add_argument('--cpu', default='', metavar='NAME=PID,...',
                    help='CPU time per op of these processes')
    a = ap.parse_args(argv)
    try:
        groups = parse_cpu(a.cpu)
    except ValueError:
        ap.error('bad --cpu %r (NAME=PID,...)' % a.cpu)
    try:
        sizes = [parse_size(s) for s in a.sizes.split(',')]
        clients = [int(c) for c in a.clients.split(',')]
    except ValueError as e:
        ap.error('bad --sizes or --clients: %s' % e)
    if any(s <= 0 for s in sizes) or any(c <= 0 for c in clients) or a.seconds <= 0:
        ap.error('sizes, clients and seconds must be positive')
    storage_url, token = auth(a.auth, a.user, a.key)
    bad = 0
    for size in sizes:
        for n in clients:
            cont = '%s-%s-%d-%d' % (a.container_prefix, size_name(size), n,
                                    int(time.time() * 1000))
            status, _ = Client(storage_url, token).request('PUT', '/' + cont, b'')
            if status // 100 != 2:
                print('swiftload: container PUT %s: HTTP %d' % (cont, status),
                      file=sys.stderr)
                return 1
            written = [[] for _ in range(n)]
            for op in ('put', 'get'):
                c0 = cpu_ticks(groups)
                r = run_phase(op, storage_url, token, cont, size, n, a.seconds, written)
                c1 = cpu_ticks(groups)
                r = dict({'swiftload': 1, 'backend': a.backend}, **r)
                if groups and r['ops']:
                    r['cpu_ms_per_op'] = dict(
                        (k, round((c1[k] - c0[k]) * 1000.0 / TICK / r['ops'], 3))
                        for k in c1)
                print(json.dumps(r, sort_keys=True), flush=True)
                bad += r['errors'] > 0
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
