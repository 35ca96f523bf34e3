"""The boto3 cases of test_s3_api.py: one client generation against an S3
endpoint (not a test itself; not named test_* so tests/run.sh leaves it).

test_s3_api.py imports it under Debian's /usr/bin/python3 (boto3 1.26,
botocore 1.29: the old model) and runs it as a child under pyenv's python3
(botocore 1.43: the new model, which adds CRC32 checksums to uploads):

    python3 s3_boto3_cases.py '{"endpoint": ..., "key": ..., "secret": ...,
                                "bucket": ..., "workdir": ...}'

As a child it prints one JSON object a line, {"name", "ok", "diag"}, which
the parent turns into TAP. Keeps to the standard library plus boto3.
"""
import concurrent.futures
import hashlib
import json
import os
import sys
import time
import traceback

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "compat"))

import smcompat as sc  # noqa: E402  (Fail, expect, short, err_of)

Fail, expect, short = sc.Fail, sc.expect, sc.short
REGION = "us-east-1"
MIB = 1024 * 1024
# Keys whose characters need care: spaces, unicode, and the characters
# that URL and form encodings treat specially.
ODD_KEYS = ["dir one/file with spaces.txt", "unicode/\u00fcn\u00efc\u00f6d\u00e9-\u65e5\u672c\u8a9e.bin",
            "sym/a+b=c%d&e;f,g@h$i'j(k)!.txt", "sym/plus+only", "sym/pct%2Fnot-a-slash",
            "tilde~/and*star"]
N_MANY = 1100


def md5_hex(data):
    return hashlib.md5(data).hexdigest()


def quoted_md5(data):
    return '"%s"' % md5_hex(data)


def multipart_etag(parts):
    """S3's ETag of a completed upload: MD5 of the parts' binary MD5s, -N."""
    joined = b"".join(hashlib.md5(p).digest() for p in parts)
    return '"%s-%d"' % (hashlib.md5(joined).hexdigest(), len(parts))


def client(endpoint, key, secret, **cfg):
    import boto3
    import botocore.config
    conf = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                  signature_version="s3v4", s3={"addressing_style": "path"},
                                  connect_timeout=5, read_timeout=60, **cfg)
    session = boto3.session.Session(aws_access_key_id=key, aws_secret_access_key=secret,
                                    region_name=REGION)
    return session.client("s3", endpoint_url=endpoint, config=conf)


def error(fn, codes, status=None, what=""):
    """fn() must raise a ClientError with a code in codes (and status)."""
    return sc.expect_error(fn, codes, status=status, what=what)


def rand(n, seed):
    """n reproducible bytes (not compressible, not all alike)."""
    out = bytearray()
    block = hashlib.sha256(seed.encode()).digest()
    while len(out) < n:
        block = hashlib.sha256(block).digest()
        out += block * 32
    return bytes(out[:n])


class Cases:
    """The cases; case(name, fn) runs and reports one (tap.case's shape)."""

    def __init__(self, case, endpoint, key, secret, bucket, workdir, label):
        self.case = case
        self.s3 = client(endpoint, key, secret)
        self.endpoint = endpoint
        self.b = bucket
        self.b2 = bucket + "-2"
        self.workdir = workdir
        self.label = label

    def t(self, name, fn, *args):
        return self.case("%s: %s" % (self.label, name), fn, *args)

    # ---- buckets
    def buckets(self):
        s3 = self.s3

        def create():
            r = s3.create_bucket(Bucket=self.b)
            expect(r["ResponseMetadata"]["HTTPStatusCode"] == 200, "CreateBucket: %s" % short(r))
            s3.create_bucket(Bucket=self.b2)
            s3.head_bucket(Bucket=self.b)
            names = [x["Name"] for x in s3.list_buckets()["Buckets"]]
            expect(self.b in names and self.b2 in names, "ListBuckets: %s" % names)
        self.t("CreateBucket, HeadBucket, ListBuckets", create)
        self.t("CreateBucket of an existing bucket: BucketAlreadyOwnedByYou 409", error,
               lambda: s3.create_bucket(Bucket=self.b), "BucketAlreadyOwnedByYou", 409)
        missing = self.b + "-missing"
        self.t("HeadBucket of a missing bucket: 404", error, lambda: s3.head_bucket(Bucket=missing),
               ("404", "NoSuchBucket"), 404)
        self.t("GetObject in a missing bucket: NoSuchBucket 404", error,
               lambda: s3.get_object(Bucket=missing, Key="k"), "NoSuchBucket", 404)
        self.t("ListObjectsV2 of a missing bucket: NoSuchBucket 404", error,
               lambda: s3.list_objects_v2(Bucket=missing), "NoSuchBucket", 404)
        self.t("PutObject in a missing bucket: NoSuchBucket 404", error,
               lambda: s3.put_object(Bucket=missing, Key="k", Body=b"x"), "NoSuchBucket", 404)

    # ---- objects
    def objects(self):
        s3, b = self.s3, self.b
        body = rand(100000, "obj")

        def put_get_head():
            r = s3.put_object(Bucket=b, Key="obj/one.bin", Body=body, ContentType="application/x-trainctl-test",
                              Metadata={"color": "blue", "note": "two words"}, CacheControl="max-age=60",
                              ContentDisposition='attachment; filename="one.bin"')
            expect(r["ETag"] == quoted_md5(body), "PutObject ETag %s, want %s" % (r["ETag"], quoted_md5(body)))
            g = s3.get_object(Bucket=b, Key="obj/one.bin")
            data = g["Body"].read()
            expect(data == body, "GetObject: %d bytes, want %d (same: %s)" % (len(data), len(body), data == body))
            for what, got in (("GetObject", g), ("HeadObject", s3.head_object(Bucket=b, Key="obj/one.bin"))):
                expect(got["ETag"] == quoted_md5(body), "%s ETag %s" % (what, got["ETag"]))
                expect(got["ContentLength"] == len(body), "%s ContentLength %s" % (what, got["ContentLength"]))
                expect(got["ContentType"] == "application/x-trainctl-test", "%s ContentType %r" % (
                    what, got["ContentType"]))
                expect(got["Metadata"] == {"color": "blue", "note": "two words"}, "%s Metadata %s" % (
                    what, got["Metadata"]))
                expect(got.get("CacheControl") == "max-age=60"
                       and got.get("ContentDisposition") == 'attachment; filename="one.bin"',
                       "%s Cache-Control %r, Content-Disposition %r" % (what, got.get("CacheControl"),
                                                                       got.get("ContentDisposition")))
                age = time.time() - got["LastModified"].timestamp()
                expect(-5 < age < 120, "%s LastModified %s is %.0f s old" % (what, got["LastModified"], age))
        self.t("PutObject, GetObject, HeadObject: body, ETag = MD5, Content-Type, Cache-Control, "
               "Content-Disposition, metadata", put_get_head)

        def sse():
            # The SageMaker SDK's uploads ask for SSE-KMS by default.
            for alg in ("aws:kms", "AES256"):
                s3.put_object(Bucket=b, Key="obj/sse.bin", Body=body[:1000], ServerSideEncryption=alg,
                              **({"SSEKMSKeyId": "alias/aws/s3"} if alg == "aws:kms" else {}))
                g = s3.get_object(Bucket=b, Key="obj/sse.bin")
                expect(g["Body"].read() == body[:1000], "%s: body changed" % alg)
                expect("ServerSideEncryption" not in g, "%s: GetObject claims encryption %r" % (
                    alg, g.get("ServerSideEncryption")))
            error(lambda: s3.put_object(Bucket=b, Key="obj/ssec.bin", Body=b"x", SSECustomerAlgorithm="AES256",
                                        SSECustomerKey="k" * 32), "NotImplemented", 501)
        self.t("PutObject with SSE-KMS / SSE-S3 stored as is (the disk's encryption); SSE-C refused", sse)

        def conditional():
            etag = quoted_md5(body)
            error(lambda: s3.get_object(Bucket=b, Key="obj/one.bin", IfNoneMatch=etag), ("304", "NotModified"),
                  304, "If-None-Match: the ETag: ")
            error(lambda: s3.get_object(Bucket=b, Key="obj/one.bin", IfMatch='"%s"' % ("0" * 32)),
                  "PreconditionFailed", 412, "If-Match: another ETag: ")
            g = s3.get_object(Bucket=b, Key="obj/one.bin", IfMatch=etag, ResponseContentType="text/x-override")
            expect(g["Body"].read() == body and g["ContentType"] == "text/x-override",
                   "If-Match the ETag with response-content-type: %s" % g["ContentType"])
        self.t("GetObject If-None-Match (304), If-Match (412), response-content-type", conditional)

        def empty():
            r = s3.put_object(Bucket=b, Key="obj/empty", Body=b"")
            expect(r["ETag"] == '"d41d8cd98f00b204e9800998ecf8427e"', "ETag of empty: %s" % r["ETag"])
            g = s3.get_object(Bucket=b, Key="obj/empty")
            expect(g["Body"].read() == b"" and g["ContentLength"] == 0, "empty object: %s" % short(g))
        self.t("an empty object", empty)

        def overwrite():
            s3.put_object(Bucket=b, Key="obj/over", Body=b"first version", Metadata={"v": "1"})
            s3.put_object(Bucket=b, Key="obj/over", Body=b"second", ContentType="text/plain")
            g = s3.get_object(Bucket=b, Key="obj/over")
            expect(g["Body"].read() == b"second", "overwritten object reads old bytes")
            expect(g["Metadata"] == {} and g["ContentType"] == "text/plain",
                   "overwritten object keeps old headers: %s %s" % (g["Metadata"], g["ContentType"]))
        self.t("PutObject over an object replaces bytes and headers", overwrite)

        def ranges():
            n = len(body)
            cases = [("bytes=10-19", body[10:20], "bytes 10-19/%d" % n),
                     ("bytes=-7", body[-7:], "bytes %d-%d/%d" % (n - 7, n - 1, n)),
                     ("bytes=%d-" % (n - 5), body[-5:], "bytes %d-%d/%d" % (n - 5, n - 1, n)),
                     ("bytes=%d-%d" % (n - 3, n + 100), body[-3:], "bytes %d-%d/%d" % (n - 3, n - 1, n))]
            for rng, want, crange in cases:
                g = s3.get_object(Bucket=b, Key="obj/one.bin", Range=rng)
                data = g["Body"].read()
                st = g["ResponseMetadata"]["HTTPStatusCode"]
                expect(st == 206 and data == want, "Range %s: HTTP %s, %d bytes, want 206 and %d bytes" % (
                    rng, st, len(data), len(want)))
                expect(g.get("ContentRange") == crange, "Range %s: Content-Range %r, want %r" % (
                    rng, g.get("ContentRange"), crange))
                expect(g["ContentLength"] == len(want), "Range %s: Content-Length %s" % (rng, g["ContentLength"]))
        self.t("GetObject Range: first-last, suffix -N, open N-, past the end", ranges)
        def invalid_range(key, size, rng):
            from botocore.exceptions import ClientError
            try:
                s3.get_object(Bucket=b, Key=key, Range=rng)
            except ClientError as e:
                err = e.response.get("Error", {})
                st = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
                expect(err.get("Code") == "InvalidRange" and st == 416, "Range %s: %s (HTTP %s)" % (rng, err, st))
                # S3 names the object's size; awscrt's downloads rely on
                # <ActualObjectSize>0</ActualObjectSize> to tell an empty
                # object from a failure.
                expect(err.get("ActualObjectSize") == str(size) and err.get("RangeRequested") == rng,
                       "Range %s: the <Error> lacks S3's <RangeRequested>%s</RangeRequested>"
                       "<ActualObjectSize>%d</ActualObjectSize>: %s" % (rng, rng, size, err))
                return
            raise Fail("Range %s of a %d-byte object: no error" % (rng, size))
        self.t("GetObject Range past the end: InvalidRange 416 with RangeRequested and ActualObjectSize",
               invalid_range, "obj/one.bin", len(body), "bytes=%d-%d" % (len(body) + 10, len(body) + 20))
        self.t("GetObject Range bytes=0-8388607 of an empty object: InvalidRange 416, ActualObjectSize 0",
               invalid_range, "obj/empty", 0, "bytes=0-8388607")
        self.t("GetObject of a missing key: NoSuchKey 404", error,
               lambda: s3.get_object(Bucket=b, Key="obj/none"), "NoSuchKey", 404)
        self.t("HeadObject of a missing key: 404", error,
               lambda: s3.head_object(Bucket=b, Key="obj/none"), ("404", "NoSuchKey"), 404)

        def odd_keys():
            for i, k in enumerate(ODD_KEYS):
                data = ("odd key %d: %s" % (i, k)).encode()
                r = s3.put_object(Bucket=b, Key=k, Body=data, Metadata={"i": str(i)})
                expect(r["ETag"] == quoted_md5(data), "PutObject %r ETag %s" % (k, r["ETag"]))
                got = s3.get_object(Bucket=b, Key=k)["Body"].read()
                expect(got == data, "GetObject %r: %r" % (k, got[:80]))
                h = s3.head_object(Bucket=b, Key=k)
                expect(h["Metadata"] == {"i": str(i)}, "HeadObject %r: %s" % (k, h["Metadata"]))
            listed = []
            for prefix in ("dir one/", "unicode/", "sym/", "tilde~/"):
                listed += [o["Key"] for o in s3.list_objects_v2(Bucket=b, Prefix=prefix).get("Contents", [])]
            expect(sorted(listed) == sorted(ODD_KEYS), "ListObjectsV2 gives %r, want %r" % (
                sorted(listed), sorted(ODD_KEYS)))
            v1 = []
            for prefix in ("dir one/", "unicode/", "sym/", "tilde~/"):
                v1 += [o["Key"] for o in s3.list_objects(Bucket=b, Prefix=prefix).get("Contents", [])]
            expect(sorted(v1) == sorted(ODD_KEYS), "ListObjects gives %r" % sorted(v1))
            for i, k in enumerate(ODD_KEYS):
                dst = "copies/" + k
                s3.copy_object(Bucket=b, Key=dst, CopySource={"Bucket": b, "Key": k})
                got = s3.get_object(Bucket=b, Key=dst)["Body"].read()
                expect(got == ("odd key %d: %s" % (i, k)).encode(), "CopyObject of %r: %r" % (k, got[:80]))
                s3.delete_object(Bucket=b, Key=dst)
                error(lambda: s3.head_object(Bucket=b, Key=dst), ("404", "NoSuchKey"), 404,
                      "HeadObject of deleted %r: " % dst)
        self.t("keys with spaces, unicode, + = % & ; , @ $ ' ( ) ! ~ * : put, get, head, list, copy, "
               "delete", odd_keys)

    # ---- listings
    def listings(self):
        s3, b = self.s3, self.b
        keys = ["lst/a/1", "lst/a/2", "lst/b/1", "lst/c", "lst/d/e/f", "lst/e"]

        def v2_delimiter():
            for k in keys:
                s3.put_object(Bucket=b, Key=k, Body=k.encode())
            r = s3.list_objects_v2(Bucket=b, Prefix="lst/", Delimiter="/")
            got_keys = [o["Key"] for o in r.get("Contents", [])]
            got_pre = [p["Prefix"] for p in r.get("CommonPrefixes", [])]
            expect(got_keys == ["lst/c", "lst/e"], "Contents %s" % got_keys)
            expect(got_pre == ["lst/a/", "lst/b/", "lst/d/"], "CommonPrefixes %s" % got_pre)
            expect(r.get("KeyCount") == 5, "KeyCount %s, want 5 (2 keys + 3 prefixes)" % r.get("KeyCount"))
            expect(r["IsTruncated"] is False, "IsTruncated %s" % r["IsTruncated"])
            o = r["Contents"][0]
            expect(o["Size"] == len(b"lst/c") and o["ETag"] == quoted_md5(b"lst/c"), "entry %s" % short(o))
            all_ = [o["Key"] for o in s3.list_objects_v2(Bucket=b, Prefix="lst/")["Contents"]]
            expect(all_ == sorted(keys), "no delimiter: %s" % all_)
        self.t("ListObjectsV2 Prefix + Delimiter: Contents, CommonPrefixes, KeyCount", v2_delimiter)

        def v2_pages():
            seen, token, pages = [], None, 0
            while True:
                kw = {"Bucket": b, "Prefix": "lst/", "MaxKeys": 2}
                if token:
                    kw["ContinuationToken"] = token
                r = s3.list_objects_v2(**kw)
                pages += 1
                expect(r.get("KeyCount") == len(r.get("Contents", [])), "KeyCount %s" % r.get("KeyCount"))
                seen += [o["Key"] for o in r.get("Contents", [])]
                if not r["IsTruncated"]:
                    break
                token = r.get("NextContinuationToken")
                expect(token, "truncated page without NextContinuationToken: %s" % short(r))
                expect(pages < 10, "more than 10 pages")
            expect(seen == sorted(keys) and pages == 3, "%d pages: %s" % (pages, seen))
            r = s3.list_objects_v2(Bucket=b, Prefix="lst/", StartAfter="lst/b/1")
            got = [o["Key"] for o in r.get("Contents", [])]
            expect(got == ["lst/c", "lst/d/e/f", "lst/e"], "StartAfter lst/b/1: %s" % got)
            r = s3.list_objects_v2(Bucket=b, Prefix="lst/", Delimiter="/", MaxKeys=2)
            expect(r["IsTruncated"] and [p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["lst/a/", "lst/b/"],
                   "MaxKeys 2 with Delimiter: %s" % short(r))
            r2 = s3.list_objects_v2(Bucket=b, Prefix="lst/", Delimiter="/", MaxKeys=2,
                                    ContinuationToken=r["NextContinuationToken"])
            rest = [o["Key"] for o in r2.get("Contents", [])] + [p["Prefix"] for p in r2.get("CommonPrefixes", [])]
            expect(sorted(rest) == ["lst/c", "lst/d/"], "second page with Delimiter: %s" % short(r2))
            r = s3.list_objects_v2(Bucket=b, Prefix="lst/none/")
            expect(r.get("KeyCount") == 0 and "Contents" not in r, "empty listing: %s" % short(r))
        self.t("ListObjectsV2 MaxKeys + ContinuationToken, StartAfter, an empty listing", v2_pages)

        def v1():
            r = s3.list_objects(Bucket=b, Prefix="lst/", Marker="lst/a/2")
            got = [o["Key"] for o in r.get("Contents", [])]
            expect(got == ["lst/b/1", "lst/c", "lst/d/e/f", "lst/e"], "Marker lst/a/2: %s" % got)
            r = s3.list_objects(Bucket=b, Prefix="lst/", MaxKeys=2)
            expect(r["IsTruncated"] and [o["Key"] for o in r["Contents"]] == ["lst/a/1", "lst/a/2"],
                   "MaxKeys 2: %s" % short(r))
            r = s3.list_objects(Bucket=b, Prefix="lst/", Delimiter="/", MaxKeys=2)
            expect(r["IsTruncated"] and r.get("NextMarker"),
                   "v1 with Delimiter, truncated: no NextMarker: %s" % short(r))
            r2 = s3.list_objects(Bucket=b, Prefix="lst/", Delimiter="/", Marker=r["NextMarker"])
            rest = [o["Key"] for o in r2.get("Contents", [])] + [p["Prefix"] for p in r2.get("CommonPrefixes", [])]
            expect(sorted(rest) == ["lst/c", "lst/d/", "lst/e"], "after NextMarker %r: %s" % (r["NextMarker"], rest))
        self.t("ListObjects (v1): Marker, MaxKeys, NextMarker with Delimiter", v1)

        def many():
            def put(i):
                s3.put_object(Bucket=b, Key="many/%05d" % i, Body=b"%d" % i)
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                list(pool.map(put, range(N_MANY)))
            want = ["many/%05d" % i for i in range(N_MANY)]
            pages = list(s3.get_paginator("list_objects_v2").paginate(Bucket=b, Prefix="many/"))
            got = [o["Key"] for p in pages for o in p.get("Contents", [])]
            expect(got == want, "v2 paginator: %d keys in %d pages (want %d)" % (len(got), len(pages), N_MANY))
            expect(len(pages) == 2 and len(pages[0]["Contents"]) == 1000,
                   "v2 default pages: %s" % [len(p.get("Contents", [])) for p in pages])
            pages = list(s3.get_paginator("list_objects_v2").paginate(
                Bucket=b, Prefix="many/", PaginationConfig={"PageSize": 300}))
            got = [o["Key"] for p in pages for o in p.get("Contents", [])]
            expect(got == want and len(pages) == 4, "v2 PageSize 300: %d keys in %d pages" % (len(got), len(pages)))
            pages = list(s3.get_paginator("list_objects").paginate(Bucket=b, Prefix="many/"))
            got = [o["Key"] for p in pages for o in p.get("Contents", [])]
            expect(got == want, "v1 paginator: %d keys in %d pages" % (len(got), len(pages)))
            r = s3.list_objects_v2(Bucket=b, Prefix="many/", MaxKeys=5000)
            expect(len(r.get("Contents", [])) == 1000 and r["IsTruncated"],
                   "MaxKeys 5000 answers %d keys, truncated %s (S3: at most 1000)" % (
                       len(r.get("Contents", [])), r["IsTruncated"]))
        self.t("%d keys: the ListObjectsV2 paginator (1000 a page, PageSize 300) and the ListObjects one"
               % N_MANY, many)

    # ---- copy and delete
    def copy_delete(self):
        s3, b = self.s3, self.b
        src = b"copy me " * 1000

        def copy():
            s3.put_object(Bucket=b, Key="cp/src", Body=src, ContentType="text/x-src", Metadata={"k": "v"})
            r = s3.copy_object(Bucket=b, Key="cp/dst", CopySource={"Bucket": b, "Key": "cp/src"})
            expect(r["CopyObjectResult"]["ETag"] == quoted_md5(src), "CopyObjectResult %s" % short(r))
            h = s3.head_object(Bucket=b, Key="cp/dst")
            expect(h["ContentType"] == "text/x-src" and h["Metadata"] == {"k": "v"},
                   "COPY directive: %s %s" % (h["ContentType"], h["Metadata"]))
            expect(s3.get_object(Bucket=b, Key="cp/dst")["Body"].read() == src, "copied bytes differ")
            s3.copy_object(Bucket=self.b2, Key="elsewhere", CopySource="%s/cp/src" % b)
            expect(s3.get_object(Bucket=self.b2, Key="elsewhere")["Body"].read() == src, "cross-bucket copy")
        self.t("CopyObject: bytes, ETag, Content-Type and metadata copied; across buckets", copy)

        def replace():
            s3.copy_object(Bucket=b, Key="cp/repl", CopySource={"Bucket": b, "Key": "cp/src"},
                           MetadataDirective="REPLACE", ContentType="text/x-new", Metadata={"fresh": "yes"})
            h = s3.head_object(Bucket=b, Key="cp/repl")
            expect(h["ContentType"] == "text/x-new" and h["Metadata"] == {"fresh": "yes"},
                   "REPLACE: %s %s" % (h["ContentType"], h["Metadata"]))
            s3.copy_object(Bucket=b, Key="cp/src", CopySource={"Bucket": b, "Key": "cp/src"},
                           MetadataDirective="REPLACE", Metadata={"k": "v2"}, ContentType="text/x-src")
            h = s3.head_object(Bucket=b, Key="cp/src")
            expect(h["Metadata"] == {"k": "v2"} and s3.get_object(Bucket=b, Key="cp/src")["Body"].read() == src,
                   "copy onto itself with REPLACE: %s" % h["Metadata"])
        self.t("CopyObject MetadataDirective REPLACE (also onto itself)", replace)
        self.t("CopyObject of a missing source: NoSuchKey 404", error,
               lambda: s3.copy_object(Bucket=b, Key="cp/x", CopySource={"Bucket": b, "Key": "cp/none"}),
               "NoSuchKey", 404)

        def delete():
            s3.put_object(Bucket=b, Key="del/one", Body=b"1")
            r = s3.delete_object(Bucket=b, Key="del/one")
            expect(r["ResponseMetadata"]["HTTPStatusCode"] == 204, "DeleteObject: HTTP %s" % (
                r["ResponseMetadata"]["HTTPStatusCode"]))
            error(lambda: s3.get_object(Bucket=b, Key="del/one"), "NoSuchKey", 404, "after delete: ")
            r = s3.delete_object(Bucket=b, Key="del/never-there")
            expect(r["ResponseMetadata"]["HTTPStatusCode"] == 204, "DeleteObject of a missing key: HTTP %s" % (
                r["ResponseMetadata"]["HTTPStatusCode"]))
        self.t("DeleteObject: 204, then NoSuchKey; a missing key: 204", delete)

        def delete_many():
            for k in ("dm/1", "dm/2", "dm/3", "dm/4"):
                s3.put_object(Bucket=b, Key=k, Body=k.encode())
            r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "dm/1"}, {"Key": "dm/2"},
                                                                {"Key": "dm/missing"}]})
            deleted = sorted(d["Key"] for d in r.get("Deleted", []))
            expect(deleted == ["dm/1", "dm/2", "dm/missing"] and not r.get("Errors"),
                   "DeleteObjects: %s" % short(r))
            r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "dm/3"}], "Quiet": True})
            expect(not r.get("Deleted") and not r.get("Errors"), "Quiet DeleteObjects: %s" % short(r))
            left = [o["Key"] for o in s3.list_objects_v2(Bucket=b, Prefix="dm/").get("Contents", [])]
            expect(left == ["dm/4"], "left after DeleteObjects: %s" % left)
        self.t("DeleteObjects (a missing key counts as deleted; Quiet)", delete_many)

    # ---- multipart
    def multipart(self):
        s3, b = self.s3, self.b
        from boto3.s3.transfer import TransferConfig
        big = rand(12 * MIB + 12345, "mpu")
        src = os.path.join(self.workdir, "mpu-src.bin")
        with open(src, "wb") as f:
            f.write(big)

        def upload_file():
            cfg = TransferConfig(multipart_threshold=5 * MIB, multipart_chunksize=5 * MIB, max_concurrency=3)
            s3.upload_file(src, b, "mpu/file.bin", Config=cfg, ExtraArgs={"ContentType": "application/x-mpu",
                                                                         "Metadata": {"via": "upload_file"}})
            h = s3.head_object(Bucket=b, Key="mpu/file.bin")
            want = multipart_etag([big[i:i + 5 * MIB] for i in range(0, len(big), 5 * MIB)])
            expect(h["ETag"] == want, "ETag %s, want %s" % (h["ETag"], want))
            expect(h["ContentLength"] == len(big), "ContentLength %s" % h["ContentLength"])
            expect(h["ContentType"] == "application/x-mpu" and h["Metadata"] == {"via": "upload_file"},
                   "headers from CreateMultipartUpload: %s %s" % (h["ContentType"], h["Metadata"]))
            dst = os.path.join(self.workdir, "mpu-dst.bin")
            s3.download_file(b, "mpu/file.bin", dst, Config=TransferConfig(multipart_threshold=4 * MIB,
                                                                          multipart_chunksize=4 * MIB))
            with open(dst, "rb") as f:
                expect(f.read() == big, "download_file (ranged GETs) differs")
            os.unlink(dst)
        self.t("upload_file with multipart_threshold 5 MiB (3 parts): ETag \"md5-3\", download_file", upload_file)

        def direct():
            parts = [big[:5 * MIB], big[5 * MIB:10 * MIB], b"tail" * 256]
            up = s3.create_multipart_upload(Bucket=b, Key="mpu/direct", ContentType="text/x-parts",
                                            Metadata={"m": "1"})
            uid = up["UploadId"]
            etags = []
            for n, p in enumerate(parts, 1):
                r = s3.upload_part(Bucket=b, Key="mpu/direct", UploadId=uid, PartNumber=n, Body=p)
                expect(r["ETag"] == quoted_md5(p), "UploadPart %d ETag %s" % (n, r["ETag"]))
                etags.append(r["ETag"])
            lp = s3.list_parts(Bucket=b, Key="mpu/direct", UploadId=uid)
            got = [(p["PartNumber"], p["Size"], p["ETag"]) for p in lp.get("Parts", [])]
            want = [(n, len(p), quoted_md5(p)) for n, p in enumerate(parts, 1)]
            expect(got == want, "ListParts %s, want %s" % (got, want))
            lp2 = s3.list_parts(Bucket=b, Key="mpu/direct", UploadId=uid, MaxParts=2)
            expect(lp2["IsTruncated"] and len(lp2["Parts"]) == 2, "ListParts MaxParts 2: %s" % short(lp2))
            lp3 = s3.list_parts(Bucket=b, Key="mpu/direct", UploadId=uid,
                                PartNumberMarker=lp2["NextPartNumberMarker"])
            expect([p["PartNumber"] for p in lp3.get("Parts", [])] == [3],
                   "after NextPartNumberMarker: %s" % short(lp3))
            ups = s3.list_multipart_uploads(Bucket=b, Prefix="mpu/")
            expect(any(u["UploadId"] == uid and u["Key"] == "mpu/direct" for u in ups.get("Uploads", [])),
                   "ListMultipartUploads: %s" % short(ups))
            r = s3.complete_multipart_upload(Bucket=b, Key="mpu/direct", UploadId=uid, MultipartUpload={
                "Parts": [{"PartNumber": n, "ETag": e} for n, e in enumerate(etags, 1)]})
            expect(r["ETag"] == multipart_etag(parts), "Complete ETag %s, want %s" % (r["ETag"], multipart_etag(parts)))
            g = s3.get_object(Bucket=b, Key="mpu/direct")
            expect(g["Body"].read() == b"".join(parts), "completed object differs")
            expect(g["ETag"] == multipart_etag(parts) and g["ContentType"] == "text/x-parts"
                   and g["Metadata"] == {"m": "1"}, "GetObject %s %s %s" % (g["ETag"], g["ContentType"], g["Metadata"]))
            ups = s3.list_multipart_uploads(Bucket=b, Prefix="mpu/")
            expect(not any(u["UploadId"] == uid for u in ups.get("Uploads", [])), "completed upload still listed")
            error(lambda: s3.list_parts(Bucket=b, Key="mpu/direct", UploadId=uid), "NoSuchUpload", 404,
                  "ListParts of a completed upload: ")
        self.t("Create, UploadPart, ListParts, ListMultipartUploads, Complete: ETag = MD5 of part MD5s + \"-3\"",
               direct)

        def abort():
            uid = s3.create_multipart_upload(Bucket=b, Key="mpu/aborted")["UploadId"]
            s3.upload_part(Bucket=b, Key="mpu/aborted", UploadId=uid, PartNumber=1, Body=b"x" * 1000)
            r = s3.abort_multipart_upload(Bucket=b, Key="mpu/aborted", UploadId=uid)
            expect(r["ResponseMetadata"]["HTTPStatusCode"] == 204, "Abort: HTTP %s" % (
                r["ResponseMetadata"]["HTTPStatusCode"]))
            error(lambda: s3.list_parts(Bucket=b, Key="mpu/aborted", UploadId=uid), "NoSuchUpload", 404,
                  "ListParts after Abort: ")
            error(lambda: s3.complete_multipart_upload(Bucket=b, Key="mpu/aborted", UploadId=uid, MultipartUpload={
                "Parts": [{"PartNumber": 1, "ETag": quoted_md5(b"x" * 1000)}]}), "NoSuchUpload", 404,
                "Complete after Abort: ")
            error(lambda: s3.upload_part(Bucket=b, Key="mpu/aborted", UploadId=uid, PartNumber=2, Body=b"y"),
                  "NoSuchUpload", 404, "UploadPart after Abort: ")
            error(lambda: s3.head_object(Bucket=b, Key="mpu/aborted"), ("404", "NoSuchKey"), 404,
                  "HeadObject of the aborted key: ")
            ups = s3.list_multipart_uploads(Bucket=b, Prefix="mpu/aborted")
            expect(not ups.get("Uploads"), "aborted upload still listed: %s" % short(ups))
        self.t("AbortMultipartUpload: 204, then NoSuchUpload for ListParts, Complete, UploadPart", abort)

        def list_uploads():
            keys = ["mpl/a/1", "mpl/a/1", "mpl/a/2", "mpl/b/x", "mpl/c"]
            ids = [(k, s3.create_multipart_upload(Bucket=b, Key=k)["UploadId"]) for k in keys]
            try:
                got = []
                for page in s3.get_paginator("list_multipart_uploads").paginate(
                        Bucket=b, Prefix="mpl/", PaginationConfig={"PageSize": 2}):
                    got += [(u["Key"], u["UploadId"]) for u in page.get("Uploads", [])]
                expect(sorted(got) == sorted(ids), "paginated by 2: %s, want %s" % (got, ids))
                r = s3.list_multipart_uploads(Bucket=b, Prefix="mpl/", Delimiter="/")
                expect([p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["mpl/a/", "mpl/b/"]
                       and [u["Key"] for u in r.get("Uploads", [])] == ["mpl/c"], "Delimiter '/': %s" % short(r))
                r = s3.list_multipart_uploads(Bucket=b, Prefix="mpl/a/", KeyMarker="mpl/a/1")
                expect([u["Key"] for u in r.get("Uploads", [])] == ["mpl/a/2"], "KeyMarker: %s" % short(r))
            finally:
                for k, i in ids:
                    s3.abort_multipart_upload(Bucket=b, Key=k, UploadId=i)
        self.t("ListMultipartUploads: the paginator (key and upload-id markers), Delimiter, KeyMarker",
               list_uploads)

        def too_small():
            uid = s3.create_multipart_upload(Bucket=b, Key="mpu/small")["UploadId"]
            e1 = s3.upload_part(Bucket=b, Key="mpu/small", UploadId=uid, PartNumber=1, Body=b"a" * 1024)["ETag"]
            e2 = s3.upload_part(Bucket=b, Key="mpu/small", UploadId=uid, PartNumber=2, Body=b"b" * 1024)["ETag"]
            error(lambda: s3.complete_multipart_upload(Bucket=b, Key="mpu/small", UploadId=uid, MultipartUpload={
                "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]}), "EntityTooSmall", 400)
            error(lambda: s3.complete_multipart_upload(Bucket=b, Key="mpu/small", UploadId=uid, MultipartUpload={
                "Parts": [{"PartNumber": 1, "ETag": quoted_md5(b"not it")}]}), "InvalidPart", 400,
                "a wrong part ETag: ")
            error(lambda: s3.complete_multipart_upload(Bucket=b, Key="mpu/small", UploadId=uid, MultipartUpload={
                "Parts": [{"PartNumber": 7, "ETag": e2}]}), "InvalidPart", 400, "a part never uploaded: ")
            error(lambda: s3.head_object(Bucket=b, Key="mpu/small"), ("404", "NoSuchKey"), 404,
                  "HeadObject after the refused Completes: ")
            # A lone part may be small: the last part has no minimum.
            r = s3.complete_multipart_upload(Bucket=b, Key="mpu/small", UploadId=uid, MultipartUpload={
                "Parts": [{"PartNumber": 1, "ETag": e1}]})
            expect(r["ETag"] == multipart_etag([b"a" * 1024]), "one small part: ETag %s" % r["ETag"])
            expect(s3.get_object(Bucket=b, Key="mpu/small")["Body"].read() == b"a" * 1024, "one small part: bytes")
        self.t("CompleteMultipartUpload refuses: EntityTooSmall, InvalidPart (wrong ETag, missing part); "
               "a single small part completes", too_small)
        def part_order():
            # Sizes that would do in order (5 MiB, then a small last part),
            # so that the order is the only fault.
            uid = s3.create_multipart_upload(Bucket=b, Key="mpu/order")["UploadId"]
            e1 = s3.upload_part(Bucket=b, Key="mpu/order", UploadId=uid, PartNumber=1, Body=big[:5 * MIB])["ETag"]
            e2 = s3.upload_part(Bucket=b, Key="mpu/order", UploadId=uid, PartNumber=2, Body=b"z" * 100)["ETag"]
            error(lambda: s3.complete_multipart_upload(Bucket=b, Key="mpu/order", UploadId=uid, MultipartUpload={
                "Parts": [{"PartNumber": 2, "ETag": e2}, {"PartNumber": 1, "ETag": e1}]}), "InvalidPartOrder", 400,
                "parts 2, 1: ")
            error(lambda: s3.head_object(Bucket=b, Key="mpu/order"), ("404", "NoSuchKey"), 404,
                  "HeadObject after the refused Complete: ")
            r = s3.complete_multipart_upload(Bucket=b, Key="mpu/order", UploadId=uid, MultipartUpload={
                "Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]})
            expect(r["ETag"] == multipart_etag([big[:5 * MIB], b"z" * 100]), "then in order: ETag %s" % r["ETag"])
        self.t("CompleteMultipartUpload with parts 2, 1 (sizes fine in order): InvalidPartOrder 400; then 1, 2 "
               "completes", part_order)

        def part_numbers():
            uid = s3.create_multipart_upload(Bucket=b, Key="mpu/numbers")["UploadId"]
            for n in (0, 10001):
                error(lambda: s3.upload_part(Bucket=b, Key="mpu/numbers", UploadId=uid, PartNumber=n, Body=b"x"),
                      "InvalidArgument", 400, "PartNumber %d: " % n)
            s3.abort_multipart_upload(Bucket=b, Key="mpu/numbers", UploadId=uid)
        self.t("UploadPart with PartNumber 0 or 10001: InvalidArgument 400", part_numbers)
        self.t("UploadPart with an unknown upload id: NoSuchUpload 404", error,
               lambda: s3.upload_part(Bucket=b, Key="mpu/x", UploadId="0" * 32, PartNumber=1, Body=b"x"),
               "NoSuchUpload", 404)
        os.unlink(src)

    # ---- teardown
    def bucket_removal(self):
        s3, b = self.s3, self.b
        self.t("DeleteBucket of a bucket with objects: BucketNotEmpty 409", error,
               lambda: s3.delete_bucket(Bucket=b), "BucketNotEmpty", 409)

        def empty_and_delete():
            for bucket in (b, self.b2):
                for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
                    keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
                    if keys:
                        r = s3.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
                        expect(not r.get("Errors"), "DeleteObjects: %s" % short(r.get("Errors")))
                for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
                    s3.abort_multipart_upload(Bucket=bucket, Key=u["Key"], UploadId=u["UploadId"])
                r = s3.delete_bucket(Bucket=bucket)
                expect(r["ResponseMetadata"]["HTTPStatusCode"] == 204, "DeleteBucket: HTTP %s" % (
                    r["ResponseMetadata"]["HTTPStatusCode"]))
                error(lambda: s3.head_bucket(Bucket=bucket), ("404", "NoSuchBucket"), 404, "after DeleteBucket: ")
            names = [x["Name"] for x in s3.list_buckets()["Buckets"]]
            expect(b not in names and self.b2 not in names, "still listed: %s" % names)
        self.t("emptied (DeleteObjects pages), DeleteBucket: 204, then gone", empty_and_delete)
        self.t("DeleteBucket of a missing bucket: NoSuchBucket 404", error,
               lambda: s3.delete_bucket(Bucket=b), "NoSuchBucket", 404)

    def run(self):
        self.buckets()
        self.objects()
        self.listings()
        self.copy_delete()
        self.multipart()
        self.bucket_removal()


def versions():
    import boto3
    import botocore
    return "boto3 %s, botocore %s" % (boto3.__version__, botocore.__version__)


def main():
    """Child mode: arguments as one JSON object, results as JSON lines."""
    args = json.loads(sys.argv[1])

    def case(name, fn, *a):
        try:
            fn(*a)
        except Fail as e:
            out = {"name": name, "ok": False, "diag": str(e)}
        except Exception as e:
            tb = traceback.format_exc().rstrip().splitlines()
            out = {"name": name, "ok": False, "diag": "unexpected %s: %s\n%s" % (type(e).__name__, e,
                                                                                "\n".join(tb[-8:]))}
        else:
            out = {"name": name, "ok": True}
        print(json.dumps(out))
        sys.stdout.flush()

    print(json.dumps({"note": versions()}))
    import boto3
    Cases(case, args["endpoint"], args["key"], args["secret"], args["bucket"], args["workdir"],
          args.get("label") or "boto3 %s (new model)" % boto3.__version__).run()


if __name__ == "__main__":
    main()
