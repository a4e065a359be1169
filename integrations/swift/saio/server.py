# SPDX-License-Identifier: MIT
"""Run one Swift WSGI server with a swift.conf of our own.

Swift's servers read /etc/swift/swift.conf (storage policies, hash path
suffix); the all-in-one here must not touch the host's, so this sets
swift.common.utils.SWIFT_CONF_FILE before anything reads it, then does
what /usr/bin/swift-<name> does.

Usage: server.py SWIFT_CONF NAME CONF [MODULE:CLASS]
  NAME: a WSGI server (proxy-server, object-server, ...) or a daemon
  (object-replicator, object-auditor, object-updater, object-expirer,
  container-updater; MODULE:CLASS replaces Swift's class of the daemon).

With RAWSTORE_PYPROF=DIR in the environment, the server and its workers
are sampled by saio/pyprof.py into DIR.
"""

import os
import sys

from swift.common import utils

utils.SWIFT_CONF_FILE = sys.argv[1]
if os.environ.get('RAWSTORE_PYPROF'):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import pyprof  # noqa: E402
    pyprof.start(os.path.join(os.environ['RAWSTORE_PYPROF'], sys.argv[2]))

from swift.common import storage_policy  # noqa: E402
from swift.common.wsgi import run_wsgi  # noqa: E402

storage_policy.reload_storage_policies()
utils.validate_hash_conf()
name, conf = sys.argv[2], sys.argv[3]
DAEMONS = {
    'object-replicator': 'swift.obj.replicator:ObjectReplicator',
    'object-auditor': 'swift.obj.auditor:ObjectAuditor',
    'object-updater': 'swift.obj.updater:ObjectUpdater',
    'object-expirer': 'swift.obj.expirer:ObjectExpirer',
    'container-updater': 'swift.container.updater:ContainerUpdater',
}
if name in DAEMONS:
    import importlib
    from swift.common.daemon import run_daemon
    mod, cls = (sys.argv[4] if len(sys.argv) > 4 else DAEMONS[name]).split(':')
    klass = getattr(importlib.import_module(mod), cls)
    sys.exit(run_daemon(klass, conf, section_name=name, verbose=True))
kwargs = {}
if name == 'object-server':
    from swift.obj import server
    kwargs['global_conf_callback'] = server.global_conf_callback
sys.exit(run_wsgi(conf, name, verbose=True, **kwargs))
