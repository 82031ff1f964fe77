#!/usr/bin/env python3
"""The peer of bench/mdtest-s3.sh: a boto3 loop sending the requests
`iolab mdtest -a S3 -z 0` sends, phase by phase, from TASKS threads (one
boto3 client and connection pool each). Prints one JSON object: phase ->
items per second, computed as mdtest does (all tasks' items over the
phase's wall time, from a barrier before it to the last task's end).

Usage: s3_peer.py ENDPOINT BUCKET PREFIX ITEMS_PER_TASK TASKS BYTES
(credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)."""

import json
import sys
import threading
import time

import boto3
from botocore.config import Config

endpoint, bucket, prefix = sys.argv[1], sys.argv[2], sys.argv[3].strip("/")
n, tasks, size = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
data = b"x" * size


def client():
    cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1},
                 max_pool_connections=2)
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=cfg)


clients = [client() for _ in range(tasks)]
tree = f"{prefix}/tree/"


def dir_key(t, i):
    return f"{tree}dir.{t}.{i}/"


def file_key(t, i):
    return f"{tree}file.{t}.{i}"


PHASES = [
    ("tree_create", lambda c, t, i: c.put_object(Bucket=bucket, Key=tree, Body=b""), 1),
    ("dir_create", lambda c, t, i: c.put_object(Bucket=bucket, Key=dir_key(t, i), Body=b""), n),
    ("dir_stat", lambda c, t, i: c.head_object(Bucket=bucket, Key=dir_key(t, i)), n),
    ("dir_remove", lambda c, t, i: c.delete_object(Bucket=bucket, Key=dir_key(t, i)), n),
    ("file_create", lambda c, t, i: c.put_object(Bucket=bucket, Key=file_key(t, i), Body=data), n),
    ("file_stat", lambda c, t, i: c.head_object(Bucket=bucket, Key=file_key(t, i)), n),
    ("file_read", lambda c, t, i: c.get_object(Bucket=bucket, Key=file_key(t, i),
                                               Range=f"bytes=0-{max(size, 1) - 1}")["Body"].read(), n),
    ("file_remove", lambda c, t, i: c.delete_object(Bucket=bucket, Key=file_key(t, i)), n),
    ("tree_remove", lambda c, t, i: c.delete_object(Bucket=bucket, Key=tree), 1),
]


def phase(op, count):
    # Trees are made and removed by task 0 only, as mdtest does without -u.
    workers = 1 if count == 1 else tasks

    def work(t):
        for i in range(count):
            op(clients[t], t, i)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(workers)]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return count * workers / (time.perf_counter() - t0)


# One warm-up request per client opens its connection, as iolab's
# start-up does before the first timed phase.
for c in clients:
    c.head_bucket(Bucket=bucket)
print(json.dumps({name: phase(op, count) for name, op, count in PHASES}))
