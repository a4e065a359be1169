# SPDX-License-Identifier: MIT
"""Read a subunit v2 stream on stdin; print one line per test:
"ID PASS|FAIL|SKIP [reason]" (reason: the skip reason, or for a failure
the last line of its traceback), in the order the tests ended.  Spaces
are dropped from the ID (a failed fixture is "tearDownModule (module)").

Usage: subunit_results.py [COUNTS.json]
With COUNTS.json, also write there the counts, {"passed", "failed",
"skipped"} with the IDs of the failed and skipped tests
("failed_tests", "skipped_tests", sorted), and print them as one line
("functests: N passed, N failed, N skipped") on stderr.
"""

import json
import sys

import subunit
import testtools

lines = []


def on_test(test):
    status = test['status']
    if status in ('success', 'xfail'):
        word, why = 'PASS', ''
    elif status == 'skip':
        word = 'SKIP'
        d = test['details'].get('reason')
        why = d.as_text() if d is not None else ''
    elif status in ('exists', 'inprogress', 'unknown'):
        return
    else:
        word = 'FAIL'
        d = test['details'].get('traceback')
        text = d.as_text().strip() if d is not None else status
        why = text.splitlines()[-1] if text else status
    why = ' '.join(why.split())[:300]
    # a fixture's id has a space: "tearDownModule (test.functional.tests)"
    lines.append(('%s %s %s' % (test['id'].replace(' ', ''), word, why)).rstrip())


stream = subunit.ByteStreamToStreamResult(sys.stdin.buffer,
                                          non_subunit_name='stdout')
result = testtools.StreamToDict(on_test)
result.startTestRun()
try:
    stream.run(result)
finally:
    result.stopTestRun()
for line in lines:
    print(line)
if len(sys.argv) > 1:
    ids = {'PASS': [], 'FAIL': [], 'SKIP': []}
    for line in lines:
        f = line.split(' ', 2)
        ids[f[1]].append(f[0])
    counts = {'passed': len(ids['PASS']), 'failed': len(ids['FAIL']),
              'skipped': len(ids['SKIP']),
              'failed_tests': sorted(ids['FAIL']),
              'skipped_tests': sorted(ids['SKIP'])}
    with open(sys.argv[1], 'w') as f:
        json.dump(counts, f, sort_keys=True)
        f.write('\n')
    print('functests: %(passed)d passed, %(failed)d failed, %(skipped)d skipped'
          % counts, file=sys.stderr)
