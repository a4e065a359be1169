# SPDX-License-Identifier: MIT
"""Free space, mounts and recon on rawstore devices (docs/swift.md, "Free
space, mounts and recon"): Swift's ``fallocate_reserve`` checked against
the store, and the recon middleware's disk usage and unmounted devices
answered from the store, not from the directory under ``devices``.

Run: python3 -m unittest discover -s integrations/swift/tests -v
"""

import os
import unittest

from swift.common import utils
from swift.common.exceptions import DiskFileNoSpace

from test_diskfile import DEV, StoreTest

from rawstore_swift.recon import RawstoreReconMiddleware


class TestReserve(StoreTest):
    def setUp(self):
        super().setUp()
        self.saved = (utils.FALLOCATE_RESERVE, utils.FALLOCATE_IS_PERCENT,
                      utils._fallocate_enabled)

    def tearDown(self):
        (utils.FALLOCATE_RESERVE, utils.FALLOCATE_IS_PERCENT,
         utils._fallocate_enabled) = self.saved
        super().tearDown()

    def test_reserve_in_bytes_against_the_store(self):
        free = self.broker.statfs()['free']
        # the directory under devices has far more room than the store:
        # only the store's free space can refuse this
        st = os.statvfs(os.path.join(self.devices, DEV))
        self.assertGreater(st.f_bavail * st.f_frsize, free)
        utils.FALLOCATE_RESERVE, utils.FALLOCATE_IS_PERCENT = \
            utils.config_fallocate_value(str(free - (1 << 20)))
        with self.assertRaises(DiskFileNoSpace):
            with self.df('too-big').create(size=2 << 20):
                pass
        self.assertTrue(any('no space' in x for x in self.logger.lines),
                        self.logger.lines)
        # a PUT that leaves more than the reserve goes
        self.put('fits', b'x' * (512 << 10))
        self.assertEqual(self.get('fits')[1], b'x' * (512 << 10))

    def test_reserve_in_percent(self):
        st = self.broker.statfs()
        used_pct = 100.0 * (st['data_size'] - st['free']) / st['data_size']
        # a reserve of everything free but 1% of the store
        utils.FALLOCATE_RESERVE, utils.FALLOCATE_IS_PERCENT = \
            utils.config_fallocate_value('%g%%' % (99 - used_pct))
        with self.assertRaises(DiskFileNoSpace):
            with self.df('pct').create(size=st['data_size'] // 50):
                pass
        self.put('pct-small', b'y' * 4096)

    def test_disable_fallocate_turns_the_reserve_off(self):
        utils.FALLOCATE_RESERVE, utils.FALLOCATE_IS_PERCENT = \
            utils.config_fallocate_value('99%')
        utils._fallocate_enabled = False
        self.put('no-check', b'z' * 4096)


class TestRecon(StoreTest):
    def recon(self):
        return RawstoreReconMiddleware(None, {
            'devices': self.devices, 'mount_check': 'true',
            'recon_cache_path': self.tmp,
            'rawstore_socket': os.path.join(self.tmp, '{device}.sock')})

    def test_diskusage_is_the_store(self):
        os.makedirs(os.path.join(self.devices, 'nosock'), exist_ok=True)
        before = self.broker.statfs()
        self.put('usage', os.urandom(1 << 20))
        after = self.broker.statfs()
        got = dict((d['device'], d) for d in self.recon().get_diskusage())
        self.assertEqual(got[DEV], {'device': DEV, 'mounted': True,
                                    'size': after['data_size'],
                                    'used': after['allocated'],
                                    'avail': after['free']})
        self.assertGreaterEqual(after['allocated'] - before['allocated'], 1 << 20)
        # a device without a socket is Swift's: a directory, not mounted
        self.assertFalse(got['nosock']['mounted'])

    def test_unmounted_lists_devices_whose_broker_does_not_answer(self):
        os.makedirs(os.path.join(self.devices, 'gone'), exist_ok=True)
        stale = os.path.join(self.tmp, 'gone.sock')
        import socket
        s = socket.socket(socket.AF_UNIX)
        s.bind(stale)       # a socket file nobody listens on
        s.close()
        try:
            un = dict((d['device'], d) for d in self.recon().get_unmounted())
        finally:
            os.unlink(stale)
        self.assertNotIn(DEV, un)
        self.assertIn('gone', un)
        self.assertIn('onnection refused', un['gone']['mounted'])


if __name__ == '__main__':
    unittest.main()
