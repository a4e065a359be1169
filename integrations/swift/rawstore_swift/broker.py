# SPDX-License-Identifier: MIT
"""A client of rawstored's protocol (docs/swift.md, "The protocol").

One ``Broker`` per device socket and process.  A connection carries one
request at a time, so the broker keeps a small pool: each call takes a
connection, runs its request and reply, and gives it back.  Under
eventlet (Swift's servers monkey-patch ``socket``) the plain socket module
is green, so a slow call only blocks its own greenthread.

A connection cannot be shared with a forked child: the pool remembers the
pid that opened it and starts afresh in a new process (the parent's
sockets are dropped in the child without a word on the wire).

Every failure the daemon reports is raised as ``BrokerError``, an
``OSError`` carrying the errno; a broken or out-of-step connection is
closed and the error raised.  One case is retried: a pooled connection
whose daemon went away while it sat idle (``rawstored`` restarted) fails
its first send with EPIPE or ECONNRESET before a byte of the request
left, so the request runs once more on a new connection.  Nothing that
may have reached the daemon is ever sent twice.
"""

import errno
import os
import socket
import struct
import threading

MAGIC = 0x31425352
VERSION = 1
HDR = struct.Struct('<IHHIIiI')
FRAME_MAX = 1 << 20
CHUNK = 1 << 20
REPLY = 0x8000
F_MORE = 0x1
NO_FAILED_OP = 0xffffffff
TXN_OPS_MAX = 4096

OP_HELLO = 1
OP_STATFS = 2
OP_STAT = 3
OP_READ = 4
OP_LIST = 5
OP_GETATTR = 6
OP_LISTATTR = 7
OP_OMAP_LIST = 9
OP_COLL_LIST = 10
OP_TXN = 11
OP_WRITE_CHUNK = 12

T_COLL_CREATE = 1
T_COLL_REMOVE = 2
T_TOUCH = 3
T_WRITE = 4
T_WRITE_STREAM = 5
T_TRUNCATE = 6
T_REMOVE = 7
T_SETATTR = 8
T_RMATTR = 9
T_OMAP_SET = 10
T_OMAP_RM = 11
T_RENAME = 12

# Inline WRITE records up to this size; larger bodies are streamed.
INLINE_MAX = 256 << 10


class BrokerError(OSError):
    """The daemon answered -errno (or the connection failed)."""

    def __init__(self, err, what, failed_op=None):
        super().__init__(err, '%s: %s' % (what, os.strerror(err)))
        self.failed_op = failed_op


def _str16(s):
    b = s.encode('utf-8') if isinstance(s, str) else s
    if not b or len(b) > 0xffff or b'\0' in b:
        raise ValueError('bad collection or attribute name %r' % (s,))
    return struct.pack('<H', len(b)) + b


def _bytes32(b):
    if isinstance(b, str):
        b = b.encode('utf-8', 'surrogateescape')
    return struct.pack('<I', len(b)) + b


class Txn(object):
    """Records of one transaction, applied all or nothing.

    ``write`` takes bytes-like data; bodies over INLINE_MAX are sent as
    WRITE_STREAM records followed by their WRITE_CHUNK frames.
    """

    def __init__(self):
        self.records = []
        self.streams = []

    def __len__(self):
        return len(self.records)

    def _obj(self, t, coll, name):
        return struct.pack('<B', t) + _str16(coll) + _bytes32(name)

    def coll_create(self, coll):
        self.records.append(struct.pack('<B', T_COLL_CREATE) + _str16(coll))

    def coll_remove(self, coll):
        self.records.append(struct.pack('<B', T_COLL_REMOVE) + _str16(coll))

    def touch(self, coll, name):
        self.records.append(self._obj(T_TOUCH, coll, name))

    def write(self, coll, name, off, data):
        if len(data) <= INLINE_MAX:
            self.records.append(self._obj(T_WRITE, coll, name) +
                                struct.pack('<Q', off) + _bytes32(bytes(data)))
        else:
            self.records.append(self._obj(T_WRITE_STREAM, coll, name) +
                                struct.pack('<QQ', off, len(data)))
            self.streams.append(memoryview(data))

    def remove(self, coll, name):
        self.records.append(self._obj(T_REMOVE, coll, name))

    def setattr(self, coll, name, attr, value):
        self.records.append(self._obj(T_SETATTR, coll, name) + _str16(attr) +
                            _bytes32(value))

    def omap_set(self, coll, name, key, value):
        self.records.append(self._obj(T_OMAP_SET, coll, name) + _bytes32(key) +
                            _bytes32(value))

    def omap_rm(self, coll, name, key):
        self.records.append(self._obj(T_OMAP_RM, coll, name) + _bytes32(key))

    def rename(self, coll, name, dcoll, dname):
        self.records.append(self._obj(T_RENAME, coll, name) + _str16(dcoll) +
                            _bytes32(dname))


class _Stale(Exception):
    """A pooled connection whose peer had gone before the request."""


class _Conn(object):
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.tag = 0
        self.reused = False     # taken from the pool, not just opened
        self.sent = False       # a byte of a request left on it
        try:
            self.sock.connect(path)
            res, body, _ = self.call(OP_HELLO, struct.pack('<HH', VERSION,
                                                           VERSION))
            if res < 0:
                raise BrokerError(-res, 'HELLO to %s' % path)
            if len(body) < 2 or struct.unpack_from('<H', body)[0] != VERSION:
                raise BrokerError(errno.EPROTO, 'HELLO to %s' % path)
        except BaseException:
            self.sock.close()
            raise

    def close(self):
        self.sock.close()

    def _recv(self, n):
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if k == 0:
                raise BrokerError(errno.ECONNRESET, 'rawstored closed')
            got += k
        return buf

    def send(self, op, payload=b''):
        # A TXN's WRITE_CHUNK frames carry the TXN's tag: its reply is
        # the one that comes.
        if op != OP_WRITE_CHUNK:
            self.tag = (self.tag + 1) & 0xffffffff
        hdr = HDR.pack(MAGIC, VERSION, op, len(payload), self.tag, 0, 0)
        try:
            if len(payload) <= 4096:
                self.sock.sendall(hdr + bytes(payload))
            else:
                self.sock.sendall(hdr)
                self.sent = True
                self.sock.sendall(payload)
        except (BrokenPipeError, ConnectionResetError) as e:
            if self.reused and not self.sent:
                raise _Stale() from e
            raise
        self.sent = True

    def reply(self, op):
        """One reply frame: (result, payload, flags)."""
        magic, _ver, rop, n, tag, res, flags = HDR.unpack(self._recv(HDR.size))
        if magic != MAGIC or rop != op | REPLY or tag != self.tag or \
                n > FRAME_MAX:
            raise BrokerError(errno.EPROTO, 'reply out of step')
        return res, self._recv(n) if n else b'', flags

    def call(self, op, payload=b''):
        self.send(op, payload)
        return self.reply(op)


class Broker(object):
    """The daemon serving one device, at the unix socket ``path``.

    ``pool_max`` bounds the idle connections kept, not the requests in
    flight: a request that finds none idle opens one (the daemon runs a
    thread per connection), and one given back to a full pool is closed.
    Keep it at the concurrency expected, or requests past it pay a
    connect and a HELLO each."""

    def __init__(self, path, pool_max=64):
        self.path = path
        self.pool_max = pool_max
        self._lock = threading.Lock()
        self._pid = None
        self._idle = []
        self.colls = set()  # collections known to exist (a cache)

    def _get(self):
        with self._lock:
            if self._pid != os.getpid():
                # A forked child: its parent's connections are not ours.
                # Closing the child's copy of a socket sends nothing: the
                # parent's connection goes on.
                for c in self._idle:
                    c.close()
                self._idle = []
                self.colls = set()
                self._pid = os.getpid()
            if self._idle:
                c = self._idle.pop()
                c.reused, c.sent = True, False
                return c
        return self._get_new()

    def _get_new(self):
        try:
            return _Conn(self.path)
        except OSError as e:
            if isinstance(e, BrokerError):
                raise
            raise BrokerError(e.errno or errno.EIO,
                              'connect to %s' % self.path)

    def _put(self, c):
        with self._lock:
            if self._pid == os.getpid() and len(self._idle) < self.pool_max:
                self._idle.append(c)
                return
        c.close()

    def close(self):
        with self._lock:
            idle, self._idle = self._idle, []
        for c in idle:
            c.close()

    def _run(self, fn, what):
        c = self._get()
        try:
            try:
                out = fn(c)
            except _Stale:
                # the daemon restarted: the other idle ones are its too
                c.close()
                self.close()
                c = self._get_new()
                out = fn(c)
        except BrokerError:
            c.close()
            raise
        except OSError as e:
            c.close()
            raise BrokerError(e.errno or errno.EIO, what)
        except BaseException:
            c.close()   # e.g. an eventlet Timeout mid-reply: out of step
            raise
        self._put(c)
        return out

    def _simple(self, op, payload, what):
        def fn(c):
            res, body, _ = c.call(op, payload)
            return res, body
        res, body = self._run(fn, what)
        if res < 0:
            raise BrokerError(-res, what)
        return body

    # -- reads --------------------------------------------------------

    STATFS_FIELDS = ('device_size', 'data_size', 'allocated', 'free',
                     'unpunched', 'free_extents', 'largest_free', 'objects',
                     'collections', 'min_alloc')

    def statfs(self):
        """The store's space (docs/swift.md, STATFS), as a dict of
        STATFS_FIELDS, in bytes (counts for extents, objects,
        collections)."""
        body = self._simple(OP_STATFS, b'', 'STATFS')
        return dict(zip(self.STATFS_FIELDS, struct.unpack_from('<10Q', body)))

    def stat(self, coll, name):
        """(size, allocated, extents, nid, inline)."""
        body = self._simple(OP_STAT, _str16(coll) + _bytes32(name),
                            'STAT %s' % coll)
        return struct.unpack_from('<5Q', body)

    def read(self, coll, name, off, length):
        """Bytes at [off, off + length), short only at the end."""
        def fn(c):
            c.send(OP_READ, _str16(coll) + _bytes32(name) +
                   struct.pack('<QQ', off, length))
            parts, err = [], 0
            while True:
                res, body, flags = c.reply(OP_READ)
                if res < 0:
                    err = -res
                else:
                    parts.append(body)
                if not flags & F_MORE:
                    return err, b''.join(parts)
        err, data = self._run(fn, 'READ %s' % coll)
        if err:
            raise BrokerError(err, 'READ %s' % coll)
        return data

    def getattr(self, coll, name, attr):
        return bytes(self._simple(OP_GETATTR, _str16(coll) + _bytes32(name) +
                                  _str16(attr), 'GETATTR %s' % coll))

    def list(self, coll, after=b'', stop=None, limit=0):
        """Object names of ``coll`` after ``after`` (exclusive), bytewise
        order, as bytes; ending before the first name >= ``stop``.

        With a ``stop`` the pages start small and double, so a short
        range in a large collection does not fetch a frame of names past
        its end."""
        after = after.encode() if isinstance(after, str) else after
        out = []
        page = 64 if stop is not None else 0
        while True:
            want = page
            if limit:
                want = min(want, limit - len(out)) if want else \
                    limit - len(out)
            body = self._simple(OP_LIST, _str16(coll) + _bytes32(after) +
                                struct.pack('<I', want), 'LIST %s' % coll)
            (n,), pos = struct.unpack_from('<I', body), 4
            if n == 0:
                return out
            for _ in range(n):
                (k,) = struct.unpack_from('<I', body, pos)
                name = bytes(body[pos + 4:pos + 4 + k])
                pos += 4 + k
                if stop is not None and name >= stop:
                    return out
                out.append(name)
            if limit and len(out) >= limit:
                return out
            after = out[-1]
            if page:
                page = min(page * 2, 65536)

    def omap_list(self, coll, name, start=b''):
        """Every (key, value) of the object's omap from ``start``
        (inclusive), in key order."""
        start = start.encode() if isinstance(start, str) else start
        out = []
        while True:
            body = self._simple(OP_OMAP_LIST, _str16(coll) + _bytes32(name) +
                                _bytes32(start) + struct.pack('<I', 0),
                                'OMAP_LIST %s' % coll)
            (n,), pos = struct.unpack_from('<I', body), 4
            for _ in range(n):
                (k,) = struct.unpack_from('<I', body, pos)
                key = bytes(body[pos + 4:pos + 4 + k])
                pos += 4 + k
                (k,) = struct.unpack_from('<I', body, pos)
                out.append((key, bytes(body[pos + 4:pos + 4 + k])))
                pos += 4 + k
            if n == 0:
                return out
            # a page: ask again past its last key (start is inclusive)
            start = out[-1][0] + b'\0'

    def coll_list(self):
        body = self._simple(OP_COLL_LIST, b'', 'COLL_LIST')
        (n,), pos, out = struct.unpack_from('<I', body), 4, []
        for _ in range(n):
            (k,) = struct.unpack_from('<H', body, pos)
            out.append(bytes(body[pos + 2:pos + 2 + k]).decode('utf-8'))
            pos += 2 + k
        return out

    # -- writes -------------------------------------------------------

    def submit(self, txn):
        """Apply ``txn``; BrokerError (with failed_op) if refused."""
        if not txn.records:
            return
        size = 4 + sum(len(r) for r in txn.records)
        if size > FRAME_MAX or len(txn.records) > TXN_OPS_MAX:
            # Refused here: the daemon would drop the connection.
            raise BrokerError(errno.EMSGSIZE, 'TXN of %d records, %d bytes'
                              % (len(txn.records), size))

        def fn(c):
            c.send(OP_TXN, struct.pack('<I', len(txn.records)) +
                   b''.join(txn.records))
            for data in txn.streams:
                for off in range(0, len(data), CHUNK):
                    c.send(OP_WRITE_CHUNK, data[off:off + CHUNK])
            res, body, _ = c.reply(OP_TXN)
            failed = struct.unpack_from('<I', body)[0] if len(body) >= 4 \
                else NO_FAILED_OP
            return res, failed
        res, failed = self._run(fn, 'TXN')
        if res < 0:
            raise BrokerError(-res, 'TXN',
                              None if failed == NO_FAILED_OP else failed)

    def ensure_coll(self, coll):
        """Create ``coll`` unless it exists (another process may race)."""
        if coll in self.colls:
            return
        t = Txn()
        t.coll_create(coll)
        try:
            self.submit(t)
        except BrokerError as e:
            if e.errno != errno.EEXIST:
                raise
        self.colls.add(coll)
