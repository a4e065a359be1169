# SPDX-License-Identifier: MIT
"""Read a subunit v2 stream on stdin; print one line per test:
"ID PASS|FAIL|SKIP [reason]" (reason: the skip reason, or for a failure
the last line of its traceback), in the order the tests ended.  Spaces
are dropped from the ID (a failed fixture is "tearDownModule (module)").
"""

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
