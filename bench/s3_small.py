#!/usr/bin/python3
"""Small-object half of bench/s3.sh: many small objects through boto3.

    s3_small.py put  ENDPOINT PROFILE BUCKET COUNT SIZE THREADS
    s3_small.py list ENDPOINT PROFILE BUCKET COUNT SIZE
    s3_small.py check ENDPOINT PROFILE BUCKET COUNT SIZE SAMPLE
    s3_small.py presign ENDPOINT PROFILE BUCKET COUNT SIZE OUT
    s3_small.py durable DIR - - COUNT SIZE THREADS

put: PutObject of COUNT objects of SIZE bytes (keys obj/00000...) from a
pool of THREADS threads sharing one client (botocore clients are
thread-safe; the pool has THREADS connections). list: ListObjectsV2 over
the whole bucket with the paginator (1,000 keys a page, the default),
checking that exactly the COUNT keys come back with size SIZE. check:
GetObject of SAMPLE keys spread over the range, comparing the bytes.
presign: writes to OUT the paths and queries (one a line) of COUNT
presigned PutObject URLs (SigV4, an hour), for bench/s3_put.lua: wrk
sends them, a client that costs little next to the server.
durable: the least a durable small put costs on this disk, with no
server at all: COUNT times, from THREADS threads, write SIZE bytes to a
temp file in DIR, fsync it, rename it into place, fsync DIR.

Prints one line: "SECONDS CPU ERRORS" (wall time and this process's CPU
time of the operation alone, not the interpreter's start-up or building
the bodies; ERRORS: failed requests or wrong answers, the first few
described on stderr). Exit 1 when ERRORS > 0.
Retries are off, so a server error is counted, not hidden.

The AWS settings come from the environment bench/s3.sh writes
(AWS_CONFIG_FILE, AWS_SHARED_CREDENTIALS_FILE, the named PROFILE).
"""
import concurrent.futures
import hashlib
import os
import sys
import time

import boto3
import botocore.config


def key(i):
    return "obj/%05d" % i


def body(i, size):
    """The same bytes for key i on every run and in every process."""
    seed = hashlib.sha256(key(i).encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


def client(endpoint, profile, threads):
    cfg = botocore.config.Config(
        max_pool_connections=max(threads, 10),
        retries={"total_max_attempts": 1},
        s3={"addressing_style": "path"},
        connect_timeout=10,
        read_timeout=60,
    )
    return boto3.session.Session(profile_name=profile).client(
        "s3", endpoint_url=endpoint, config=cfg)


class Errors:
    def __init__(self):
        self.n = 0

    def add(self, what):
        self.n += 1
        if self.n <= 5:
            print("s3_small: %s" % what, file=sys.stderr)


def put(s3, bucket, count, size, threads, err):
    bodies = [body(i, size) for i in range(count)]

    def one(i):
        try:
            s3.put_object(Bucket=bucket, Key=key(i), Body=bodies[i])
        except Exception as e:  # noqa: BLE001 (every failure counts)
            err.add("PutObject %s/%s: %s" % (bucket, key(i), e))

    t0 = time.perf_counter()
    c0 = time.process_time()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(count)))
    return time.perf_counter() - t0, time.process_time() - c0


def lst(s3, bucket, count, size, err):
    want = {key(i) for i in range(count)}
    seen = 0
    t0 = time.perf_counter()
    c0 = time.process_time()
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for o in page.get("Contents", []):
                seen += 1
                if o["Key"] not in want:
                    err.add("ListObjectsV2 %s: unexpected or repeated key %r" % (bucket, o["Key"]))
                else:
                    want.discard(o["Key"])
                    if o["Size"] != size:
                        err.add("ListObjectsV2 %s: %s has Size %s, want %d" % (bucket, o["Key"], o["Size"], size))
    except Exception as e:  # noqa: BLE001
        err.add("ListObjectsV2 %s: %s" % (bucket, e))
    t = time.perf_counter() - t0, time.process_time() - c0
    if want:
        err.add("ListObjectsV2 %s: %d of %d keys missing (first %s), %d listed"
                % (bucket, len(want), count, min(want), seen))
    return t


def check(s3, bucket, count, size, sample, err):
    step = max(1, count // max(1, sample))
    t0 = time.perf_counter()
    c0 = time.process_time()
    for i in range(0, count, step):
        try:
            got = s3.get_object(Bucket=bucket, Key=key(i))["Body"].read()
            if got != body(i, size):
                err.add("GetObject %s/%s: %d bytes, not the ones put" % (bucket, key(i), len(got)))
        except Exception as e:  # noqa: BLE001
            err.add("GetObject %s/%s: %s" % (bucket, key(i), e))
    return time.perf_counter() - t0, time.process_time() - c0


def presign(endpoint, profile, bucket, count, out):
    s3 = boto3.Session(profile_name=profile).client(
        "s3", endpoint_url=endpoint,
        config=botocore.config.Config(signature_version="s3v4",
                                      s3={"addressing_style": "path"}))
    try:
        s3.create_bucket(Bucket=bucket)
    except s3.exceptions.ClientError:
        pass
    with open(out, "w") as f:
        for i in range(count):
            url = s3.generate_presigned_url(
                "put_object", Params={"Bucket": bucket, "Key": key(i)},
                ExpiresIn=3600)
            f.write(url[len(endpoint):] + "\n")
    return 0


def durable(d, count, size, threads):
    os.makedirs(d, exist_ok=True)
    dfd = os.open(d, os.O_RDONLY)
    data = b"x" * size

    def one(i):
        tmp = os.path.join(d, ".tmp.%d" % i)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
        os.rename(tmp, os.path.join(d, key(i).replace("/", "-")))
        os.fsync(dfd)

    t0, c0 = time.monotonic(), time.process_time()
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        list(ex.map(one, range(count)))
    t = (time.monotonic() - t0, time.process_time() - c0)
    os.close(dfd)
    print("%.3f %.3f 0" % t)
    return 0


def main(argv):
    if len(argv) >= 8 and argv[1] == "durable":
        return durable(argv[2], int(argv[5]), int(argv[6]), int(argv[7]))
    if len(argv) >= 8 and argv[1] == "presign":
        return presign(argv[2], argv[3], argv[4], int(argv[5]), argv[7])
    if len(argv) < 7 or argv[1] not in ("put", "list", "check"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    op, endpoint, profile, bucket = argv[1:5]
    count, size = int(argv[5]), int(argv[6])
    threads = int(argv[7]) if op == "put" else 1
    s3 = client(endpoint, profile, threads)
    err = Errors()
    if op == "put":
        t = put(s3, bucket, count, size, threads, err)
    elif op == "list":
        t = lst(s3, bucket, count, size, err)
    else:
        t = check(s3, bucket, count, size, int(argv[7]), err)
    print("%.3f %.3f %d" % (t[0], t[1], err.n))
    return 1 if err.n else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
