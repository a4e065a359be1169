# SPDX-License-Identifier: MIT
"""An S3 client (boto3) against the all-in-one's s3api: bucket create,
put, get, head, list, ranged get, multipart upload, copy, delete, each
compared byte for byte with what was sent.

Usage: s3check.py ENDPOINT [ACCESS-KEY SECRET-KEY]
(default keys: test:tester / testing, Swift's test/sample.conf)
Exits 0 when every step agreed; prints the step that did not.
"""

import hashlib
import os
import sys
import uuid

import boto3
from botocore.client import Config

endpoint = sys.argv[1]
key, secret = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else \
    ('test:tester', 'testing')
s3 = boto3.client(
    's3', endpoint_url=endpoint, region_name='us-east-1',
    aws_access_key_id=key, aws_secret_access_key=secret,
    config=Config(signature_version='s3v4', s3={'addressing_style': 'path'},
                  retries={'max_attempts': 1}))


def check(what, cond):
    if not cond:
        print('s3check: FAIL:', what)
        sys.exit(1)
    print('s3check: ok -', what)


bucket = 's3check-' + uuid.uuid4().hex[:12]
s3.create_bucket(Bucket=bucket)
check('bucket listed', bucket in [b['Name'] for b in s3.list_buckets()['Buckets']])

small = os.urandom(1234567)
r = s3.put_object(Bucket=bucket, Key='dir/small', Body=small)
check('put ETag is the MD5', r['ETag'].strip('"') == hashlib.md5(small).hexdigest())
got = s3.get_object(Bucket=bucket, Key='dir/small')['Body'].read()
check('get returns the bytes put', got == small)
h = s3.head_object(Bucket=bucket, Key='dir/small')
check('head gives the length', h['ContentLength'] == len(small))
got = s3.get_object(Bucket=bucket, Key='dir/small', Range='bytes=1000-1999')['Body'].read()
check('ranged get', got == small[1000:2000])

# multipart: two 5 MiB parts and a short last one
parts_data = [os.urandom(5 << 20), os.urandom(5 << 20), os.urandom(777)]
mpu = s3.create_multipart_upload(Bucket=bucket, Key='big')
parts = []
for n, data in enumerate(parts_data, 1):
    r = s3.upload_part(Bucket=bucket, Key='big', UploadId=mpu['UploadId'],
                       PartNumber=n, Body=data)
    parts.append({'PartNumber': n, 'ETag': r['ETag']})
check('upload listed in progress', any(
    u['UploadId'] == mpu['UploadId']
    for u in s3.list_multipart_uploads(Bucket=bucket).get('Uploads', [])))
s3.complete_multipart_upload(Bucket=bucket, Key='big', UploadId=mpu['UploadId'],
                             MultipartUpload={'Parts': parts})
whole = b''.join(parts_data)
got = s3.get_object(Bucket=bucket, Key='big')['Body'].read()
check('multipart object reads back whole', got == whole)
got = s3.get_object(Bucket=bucket, Key='big',
                    Range='bytes=%d-%d' % ((5 << 20) - 10, (5 << 20) + 9))['Body'].read()
check('ranged get across a part boundary', got == whole[(5 << 20) - 10:(5 << 20) + 10])

s3.copy_object(Bucket=bucket, Key='copy', CopySource={'Bucket': bucket, 'Key': 'dir/small'})
got = s3.get_object(Bucket=bucket, Key='copy')['Body'].read()
check('server-side copy', got == small)

keys = sorted(o['Key'] for o in s3.list_objects_v2(Bucket=bucket)['Contents'])
check('list gives the three keys', keys == ['big', 'copy', 'dir/small'])
r = s3.list_objects_v2(Bucket=bucket, Prefix='dir/', Delimiter='/')
check('list with a prefix', [o['Key'] for o in r['Contents']] == ['dir/small'])

for k in keys:
    s3.delete_object(Bucket=bucket, Key=k)
check('bucket empty after deletes', s3.list_objects_v2(Bucket=bucket).get('KeyCount') == 0)
try:
    s3.get_object(Bucket=bucket, Key='big')
    check('get after delete is NoSuchKey', False)
except s3.exceptions.NoSuchKey:
    check('get after delete is NoSuchKey', True)
s3.delete_bucket(Bucket=bucket)
check('bucket gone', bucket not in [b['Name'] for b in s3.list_buckets()['Buckets']])
print('s3check: passed')
