# SPDX-License-Identifier: MIT
"""Swift's recon middleware for an object server on rawstore devices
(docs/swift.md, "Free space, mounts and recon").

Swift's ``recon`` answers ``/recon/diskusage`` and ``/recon/unmounted``
(what ``swift-recon --diskusage`` and ``--unmounted`` ask every storage
server) from the directories under ``devices``: ``statvfs`` of
``/srv/node/DEV`` and whether it is a mount point.  On a rawstore device
that directory only holds the container databases, locks and
async_pendings; the objects are in the store.  This subclass answers
for each device that has a broker socket (``rawstore_socket``, as the
object server's) from the store itself: size, used and available bytes
from STATFS, mounted when the broker answers; other devices are answered
as Swift does.

Object server pipeline::

    [pipeline:main]
    pipeline = healthcheck recon object-server

    [filter:recon]
    use = egg:rawstore_swift#recon
    recon_cache_path = /var/cache/swift
"""

import os

from swift.common.middleware import recon as srecon

from rawstore_swift.broker import Broker, BrokerError


class RawstoreReconMiddleware(srecon.ReconMiddleware):
    def __init__(self, app, conf, *args, **kwargs):
        super().__init__(app, conf, *args, **kwargs)
        self.socket_fmt = conf.get('rawstore_socket',
                                   '/run/rawstore/{device}.sock')

    def _store(self, device):
        """The store's STATFS, None if the device has no socket, or the
        error that kept the broker from answering."""
        sock = self.socket_fmt.format(device=device)
        if not os.path.exists(sock):
            return None
        try:
            b = Broker(sock)
            try:
                return b.statfs()
            finally:
                b.close()
        except (OSError, BrokerError) as e:
            return e

    def _devices(self):
        return sorted(e for e in os.listdir(self.devices)
                      if os.path.isdir(os.path.join(self.devices, e)))

    def _answers(self, stock):
        """Per device: Swift's own answer (@stock, by device) for one
        without a socket, else (device, STATFS or the broker's error)."""
        for dev in self._devices():
            st = self._store(dev)
            if st is None:
                if dev in stock:
                    yield stock[dev]
            else:
                yield dev, st

    def get_diskusage(self):
        out = []
        stock = dict((d['device'], d) for d in super().get_diskusage())
        for a in self._answers(stock):
            if isinstance(a, dict):
                out.append(a)
            elif isinstance(a[1], Exception):
                out.append({'device': a[0], 'mounted': str(a[1]), 'size': '',
                            'used': '', 'avail': ''})
            else:
                st = a[1]
                out.append({'device': a[0], 'mounted': True,
                            'size': st['data_size'], 'used': st['allocated'],
                            'avail': st['free']})
        return out

    def get_unmounted(self):
        stock = dict((d['device'], d) for d in super().get_unmounted())
        return [a if isinstance(a, dict) else {'device': a[0], 'mounted': str(a[1])}
                for a in self._answers(stock)
                if isinstance(a, dict) or isinstance(a[1], Exception)]


def filter_factory(global_conf, **local_conf):
    conf = global_conf.copy()
    conf.update(local_conf)

    def recon_filter(app):
        return RawstoreReconMiddleware(app, conf)
    return recon_filter
