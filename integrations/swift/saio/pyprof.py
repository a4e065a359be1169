# SPDX-License-Identifier: MIT
"""A sampling profiler for one Swift server's Python, for the benchmark.

perf sees a Swift server as CPython's eval loop (Python 3.11 has no perf
trampoline) and Debian's austin 1.0 cannot read 3.11 frames, so this
samples from inside: a real OS thread (eventlet leaves it alone) wakes
every INTERVAL seconds, takes the frame of the main thread, which is the
greenthread running at that instant, and counts its stack.  Samples taken
while the process waits in the hub's poll are counted under that frame,
so the idle share shows too.  The sampler needs the GIL, and a thread
waiting for it gets it at the next release, which is most often a
system call: with CPython's 5 ms switch interval the samples pile up on
send and recv.  So the interval is set to a tenth of the sampling
period, which forces the main thread to hand over at a bytecode boundary
within it, and the samples spread over where the CPU time goes.

Every few seconds the counts so far are written to DIR/pyprof.PID.txt as
collapsed stacks ("file:func;file:func COUNT", root first), the format
flamegraph tools and ``pyprof.py --top`` read.  It starts in every
process forked after ``start`` (a server's workers), since threads do not
survive fork.

Enabled by saio/server.py when RAWSTORE_PYPROF=DIR is in the environment.

Usage: python3 pyprof.py --top N FILE...   # the hottest functions, self
       and inclusive, summed over FILEs
"""

import collections
import os
import sys

INTERVAL = 0.001
FLUSH = 2.0


def _label(code):
    return '%s:%s' % (os.path.basename(code.co_filename), code.co_name)


def _sampler(outdir, tid, threading, time):
    counts = collections.Counter()
    path = os.path.join(outdir, 'pyprof.%d.txt' % os.getpid())
    last = time.monotonic()
    while True:
        time.sleep(INTERVAL)
        frame = sys._current_frames().get(tid)
        stack = []
        while frame is not None:
            stack.append(_label(frame.f_code))
            frame = frame.f_back
        if stack:
            counts[';'.join(reversed(stack))] += 1
        now = time.monotonic()
        if now - last >= FLUSH:
            last = now
            tmp = path + '.tmp'
            with open(tmp, 'w') as f:
                for k, n in counts.items():
                    f.write('%s %d\n' % (k, n))
            os.rename(tmp, path)


def _spawn(outdir):
    sys.setswitchinterval(INTERVAL / 10)
    from eventlet import patcher
    threading = patcher.original('threading')
    time = patcher.original('time')
    tid = threading.main_thread().ident
    t = threading.Thread(target=_sampler, args=(outdir, tid, threading, time),
                         daemon=True)
    t.start()


def start(outdir):
    """Sample this process and every child forked after this call."""
    os.makedirs(outdir, exist_ok=True)
    os.register_at_fork(after_in_child=lambda: _spawn(outdir))
    _spawn(outdir)


def top(paths, n):
    self_c, incl, total = collections.Counter(), collections.Counter(), 0
    for p in paths:
        with open(p) as f:
            for line in f:
                stack, k = line.rsplit(' ', 1)
                k = int(k)
                frames = stack.split(';')
                total += k
                self_c[frames[-1]] += k
                for fr in set(frames):
                    incl[fr] += k
    print('%d samples' % total)
    print('self:')
    for fr, k in self_c.most_common(n):
        print('  %5.1f%%  %s' % (100.0 * k / total, fr))
    print('inclusive:')
    for fr, k in incl.most_common(n):
        print('  %5.1f%%  %s' % (100.0 * k / total, fr))


if __name__ == '__main__':
    if len(sys.argv) < 4 or sys.argv[1] != '--top':
        sys.exit(__doc__.split('Usage: ')[1])
    top(sys.argv[3:], int(sys.argv[2]))
