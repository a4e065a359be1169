# SPDX-License-Identifier: MIT
"""Kills under Swift on rawstore devices (run by tests/harness/swift-kill.sh;
docs/swift.md, "What a kill leaves").  The cluster is
tests/harness/swift-replication.py's: one rawstored serving four
file-backed stores, a 3-replica object ring, one object server.

1. rawstored killed with SIGKILL under load: 6 clients PUT new objects
   (1 B to 64 KiB, random bytes) to their three primaries through the
   object server (Swift's direct client); after 3 s the broker is killed.
   Every PUT the object server answered 201 is remembered with its node,
   timestamp and body.  The broker and the object server are started
   again, and every remembered replica is read back: 0 lost, 0 differing
   (same X-Timestamp, same bytes).  Then `rawstore fsck --deep` of every
   store, the daemon stopped: no problem.
2. A client killed mid-PUT: a child process sends a PUT of 32 MiB to one
   device with 12 MiB of the body, and once the object server has
   written the first 8 MiB into a temporary object in the store (seen in
   its "tmp" collection), the child is killed with SIGKILL.  The object
   is not visible (HEAD 404 on that device), and after a reopen the store
   holds no more than before the PUT (`rawstore statfs --json`:
   allocated bytes and objects equal) and fsck finds nothing.
"""

import hashlib
import importlib.util
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    'swift_replication', os.path.join(HERE, 'swift-replication.py'))
repl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(repl)

HDR = {'X-Backend-Storage-Policy-Index': '0'}


def rawstore(*args):
    r = subprocess.run([repl.RAWSTORE] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return r.returncode, r.stdout


def statfs(c, dev):
    rc, out = rawstore('statfs', '--json', c.path('stores', dev),
                       c.path('stores', dev + '.meta'))
    if rc:
        raise RuntimeError('statfs %s: %s' % (dev, out))
    return json.loads(out)


def fsck_all(c, fails):
    for dev in repl.DEVS:
        rc, out = rawstore('fsck', '--deep', c.path('stores', dev),
                           c.path('stores', dev + '.meta'))
        if rc:
            fails.append('fsck %s: exit %d: %s' % (dev, rc, out[-500:]))


def restart_daemon(c):
    """After a SIGKILL the device may stay locked a moment (the kernel
    tears the io_uring rings down asynchronously): retry, as systemd's
    RestartSec would."""
    for _ in range(100):
        try:
            c.start_daemon()
            return
        except RuntimeError:
            c.daemon = None
            time.sleep(0.1)
    c.start_daemon()


def kill_under_load(c, fails):
    from swift.common import direct_client as dc
    from swift.common.utils import Timestamp
    acked = {}                  # (device, name) -> (timestamp, body)
    lock = threading.Lock()
    stop = threading.Event()
    errors = [0]

    def client(k):
        rng = random.Random(k)
        i = 0
        while not stop.is_set():
            name = 'k%d-%d' % (k, i)
            i += 1
            body = os.urandom(rng.randrange(1, 64 << 10))
            part, nodes = c.ring.get_nodes('AUTH_t', 'c', name)
            ts = Timestamp.now().internal
            for n in nodes:
                try:
                    dc.direct_put_object(
                        n, part, 'AUTH_t', 'c', name, body,
                        content_length=len(body),
                        etag=hashlib.md5(body).hexdigest(),
                        headers=dict(HDR, **{'X-Timestamp': ts}),
                        conn_timeout=2, response_timeout=10)
                except Exception:
                    with lock:
                        errors[0] += 1
                    time.sleep(0.05)
                    continue
                with lock:
                    acked[(n['device'], name)] = (ts, body)

    ts = [threading.Thread(target=client, args=(k,)) for k in range(6)]
    for t in ts:
        t.start()
    time.sleep(3)
    with lock:
        before = len(acked)
    c.daemon.send_signal(signal.SIGKILL)
    c.daemon.wait(30)
    c.daemon = None
    time.sleep(1)
    stop.set()
    for t in ts:
        t.join(60)
    print('kill under load: %d replicas acknowledged (%d when rawstored was killed), '
          '%d PUTs refused after it' % (len(acked), before, errors[0]))
    if before < 30:
        fails.append('too few PUTs before the kill (%d): the load did not run' % before)
    if errors[0] == 0:
        fails.append('no PUT failed after the kill: was the broker killed?')
    c.stop_server()
    restart_daemon(c)
    c.start_server()
    lost = differing = 0
    for (dev, name), (ts, body) in sorted(acked.items()):
        part, nodes = c.ring.get_nodes('AUTH_t', 'c', name)
        node = next(n for n in nodes if n['device'] == dev)
        try:
            hdrs, got = dc.direct_get_object(node, part, 'AUTH_t', 'c', name,
                                             headers=HDR)
        except Exception as e:
            lost += 1
            if lost <= 5:
                print('  lost: %s on %s: %s' % (name, dev, e))
            continue
        if got != body or hdrs.get('X-Timestamp') != ts:
            differing += 1
            if differing <= 5:
                print('  differs: %s on %s' % (name, dev))
    print('kill under load: %d acknowledged replicas read back: %d lost, %d differing'
          % (len(acked), lost, differing))
    if lost or differing:
        fails.append('%d acknowledged replicas lost, %d differing after SIGKILL'
                     % (lost, differing))
    c.stop()
    fsck_all(c, fails)


MID_PUT_CHILD = r'''
import socket, sys, time
port, path, ts = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(("PUT %s HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Timestamp: %s\r\n"
           "Content-Type: application/octet-stream\r\nContent-Length: %d\r\n"
           "X-Backend-Storage-Policy-Index: 0\r\n\r\n"
           % (path, ts, 32 << 20)).encode())
s.sendall(b"x" * (12 << 20))
print("sent", flush=True)
time.sleep(600)
'''


def kill_client_mid_put(c, fails):
    from swift.common import direct_client as dc
    from swift.common.exceptions import ClientException
    from swift.common.utils import Timestamp
    name = 'midput'
    part, nodes = c.ring.get_nodes('AUTH_t', 'c', name)
    dev = nodes[0]['device']
    before = statfs(c, dev)
    c.start()
    child = subprocess.Popen(
        [repl.PY, '-c', MID_PUT_CHILD, str(c.port),
         '/%s/%d/AUTH_t/c/%s' % (dev, part, name), Timestamp.now().internal],
        stdout=subprocess.PIPE, universal_newlines=True)
    line = child.stdout.readline().strip()
    from rawstore_swift.broker import Broker
    b = Broker(c.sock(dev))
    staged = []
    for _ in range(100):        # the object server staged its first 8 MiB
        staged = [n for coll in b.coll_list() if coll.startswith('tmp')
                  for n in b.list(coll)]
        if staged:
            break
        time.sleep(0.1)
    b.close()
    child.kill()
    child.wait()
    if line != 'sent':
        fails.append('the mid-PUT client did not send its first 12 MiB')
    if not staged:
        fails.append('the object server staged nothing of the killed PUT')
    time.sleep(2)               # the server notices the client is gone
    try:
        dc.direct_head_object(nodes[0], part, 'AUTH_t', 'c', name, headers=HDR)
        fails.append('an object killed mid-PUT is visible')
        status = 200
    except ClientException as e:
        status = e.http_status
    c.stop()
    after = statfs(c, dev)
    print('client killed mid-PUT: %d temporary object(s) staged before the kill; HEAD %d; '
          '%s: allocated %d -> %d bytes, objects '
          '%d -> %d' % (len(staged), status, dev, before['allocated'], after['allocated'],
                        before['objects'], after['objects']))
    if status != 404:
        fails.append('HEAD after a client killed mid-PUT: %d, not 404' % status)
    if after['allocated'] != before['allocated'] or after['objects'] != before['objects']:
        fails.append('a client killed mid-PUT left space or objects behind')
    fsck_all(c, fails)


def main():
    c = repl.Cluster()
    c.write_confs()
    repl.use_swift_conf(c.swift_conf)
    fails = []
    t0 = time.time()
    try:
        for dev in repl.DEVS:
            c.mkfs(dev)
        c.make_ring()
        c.start()
        kill_under_load(c, fails)
        kill_client_mid_put(c, fails)
    finally:
        for p in (c.server, c.daemon):
            if p:
                try:
                    os.killpg(p.pid, signal.SIGKILL) if p is c.server else p.kill()
                except OSError:
                    pass
    print('wall time %.1fs' % (time.time() - t0))
    for f in fails:
        print('FAIL: %s' % f)
    if not fails:
        import shutil
        shutil.rmtree(c.tmp, ignore_errors=True)
    else:
        print('left for inspection: %s' % c.tmp)
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
