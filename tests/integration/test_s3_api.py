#!/usr/bin/python3
"""The S3 REST API of trainctld's embedded store, through real S3 clients.

Starts one `trainctld --local-hosts 1 --credentials FILE --s3-domain D` on a
free loopback port (an admin key, and a user key whose
trainctl_s3_prefixes is one prefix of one bucket) and checks:
  (1) boto3, both generations: Debian's /usr/bin/python3 (boto3 1.26, the
      old model) in this process, pyenv's python3 (botocore 1.43, the new
      model, CRC32 checksums on uploads) as a child running
      s3_boto3_cases.py: buckets, put/get/head (ETag = MD5, Content-Type,
      metadata), ranges (suffix, open, unsatisfiable: InvalidRange 416),
      ListObjectsV2 (prefix, delimiter, continuation, start-after, the
      paginator over 1100 keys), ListObjects v1 (marker), copy (REPLACE),
      delete, DeleteObjects, multipart (upload_file, direct with ListParts
      and the "-N" ETag, abort, EntityTooSmall, InvalidPart,
      InvalidPartOrder), NoSuchKey/NoSuchBucket/BucketNotEmpty/
      BucketAlreadyOwnedByYou, keys with spaces, unicode, + = % ...
  (2) `aws s3 cp` of 50 MB up and down, `aws s3 sync` of a tree (then one
      change: only that file goes), `aws s3 ls`, `aws s3 rm --recursive`,
      with Debian's /usr/bin/aws (v2.9), pyenv's aws (v1, botocore 1.43)
      and /usr/bin/aws with preferred_transfer_client = crt (awscrt
      connects to port 80 for http:// endpoints, so that one goes through
      a relay on 127.x.y.z:80, root only); bytes compared, also with the
      store's files.
  (3) presigned GET/PUT with curl, expiry ("Request has expired"), a
      tampered signature, a wrong secret and an unknown key id, no
      signature, clock skew, an x-amz-content-sha256 that does not match
      the body (400, object unchanged), the user key inside and outside
      its prefix (AccessDenied 403, nothing written or deleted).
  (4) raw requests signed by awscrt: UNSIGNED-PAYLOAD,
      STREAMING-AWS4-HMAC-SHA256-PAYLOAD (chunk signatures checked first
      against the S3 docs' example), a bad chunk signature or altered
      chunk data refused (403 SignatureDoesNotMatch, nothing written, an
      older object kept), STREAMING-UNSIGNED-PAYLOAD-TRAILER (CRC32
      trailer, a wrong one refused), virtual-hosted requests
      (Host: <bucket>.D:port), a PUT over 5 GiB (plain or aws-chunked)
      refused before its body.
  (5) a script-mode job whose sourcedir.tar.gz and channel were uploaded
      with boto3 Completes; its model.tar.gz, fetched with boto3 from the
      output path, holds what the script wrote.

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_s3_api.py
BUILD names the build directory (default build); TRAINCTL_TEST_KEEP=1
keeps the temp dir.
"""
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.parse

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "compat"))

import smcompat as sc  # noqa: E402

sc.hermetic_env()
import s3_boto3_cases as cases  # noqa: E402
import s3_wire as wire  # noqa: E402

Fail, expect, short = sc.Fail, sc.expect, sc.short
ADMIN = ("AKIDS3ADMIN000000001", "s3/admin+secret=0123456789abcdef")
USER = ("AKIDS3USER0000000001", "s3/user+secret=fedcba9876543210")
SHARED = "s3t-shared"
USER_PREFIX = "team/"
DOMAIN = "s3.trainctl.test"
ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"
MB = 1000 * 1000
T0 = time.time()


def log(text):
    print("# [%5.1fs] %s" % (time.time() - T0, text))
    sys.stdout.flush()


class Env:
    """What every section needs: the daemon, clients, files."""

    def __init__(self, tap, d, work):
        self.tap = tap
        self.d = d
        self.port = d.port
        self.endpoint = d.endpoint
        self.work = work
        self.store = os.path.join(d.state_dir, "s3")
        self.s3 = cases.client(self.endpoint, *ADMIN)
        self.user = cases.client(self.endpoint, *USER)
        self.aws_files = {}

    def stored(self, bucket, key):
        return os.path.join(self.store, bucket, key)

    def crt_headers(self, method, path, extra=(), key=ADMIN, body_value="UNSIGNED-PAYLOAD", host=None, when=None):
        headers = [("Host", host or "127.0.0.1:%d" % self.port)] + list(extra)
        return wire.crt_sign(method, path, headers, key[0], key[1], body_value, when=when)

    def raw(self, method, path, headers, body=b"", timeout=30):
        return wire.raw(self.port, method, path, headers, body, timeout)


def file_sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def absent(s3, bucket, key, what=""):
    sc.expect_error(lambda: s3.head_object(Bucket=bucket, Key=key), ("404", "NoSuchKey"), 404,
                    what="%sHeadObject %s/%s: " % (what, bucket, key))


# ---------------------------------------------------------------- (1) boto3

def new_python():
    """(path of an interpreter with the newer boto3, None) or (None, why)."""
    cands = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cands.append(os.path.join(d, "python3"))
    cands.append(os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")), "shims", "python3"))
    tried = []
    for c in cands:
        if not os.access(c, os.X_OK) or os.path.realpath(c).startswith("/usr/bin/python3"):
            continue
        r = subprocess.run([c, "-c", "import boto3, botocore; print(botocore.__version__)"],
                           capture_output=True, timeout=60)
        if r.returncode == 0:
            v = r.stdout.decode().strip()
            if tuple(int(x) for x in v.split(".")[:2]) >= (1, 36):
                return c, None
            tried.append("%s has botocore %s" % (c, v))
        else:
            tried.append("%s cannot import boto3" % c)
    return None, "no python3 with boto3/botocore >= 1.36 besides /usr/bin/python3 (%s)" % (
        "; ".join(tried) or "none on PATH")


def boto3_old(env):
    label = "boto3 %s (old model)" % __import__("boto3").__version__
    log("boto3 old model cases")
    cases.Cases(env.tap.case, env.endpoint, ADMIN[0], ADMIN[1], "s3t-old", env.work, label).run()


def boto3_new(env):
    py, why = new_python()
    if not py:
        env.tap.skip("boto3 new model (botocore 1.43) cases", why)
        return
    log("boto3 new model cases with %s" % py)
    args = {"endpoint": env.endpoint, "key": ADMIN[0], "secret": ADMIN[1], "bucket": "s3t-new",
            "workdir": env.work}
    child_env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    ran = 0
    try:
        r = subprocess.run([py, os.path.join(HERE, "s3_boto3_cases.py"), json.dumps(args)],
                           capture_output=True, timeout=240, env=child_env)
        out, err, rc = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace"), r.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace")
        err, rc = "timed out after 240 s", None
    for line in out.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            env.tap.note("child: " + line)
            continue
        if "note" in o:
            env.tap.note("new model: " + o["note"])
            continue
        ran += 1
        env.tap.ok(o["ok"], o["name"], o.get("diag"))
    env.tap.ok(rc == 0 and ran > 0, "boto3 new model: the child ran to its end (%d cases)" % ran,
               "exit %s\n%s" % (rc, err[-1500:]))


# ---------------------------------------------------------------- (3) auth

def curl(args, timeout=60):
    r = subprocess.run(["curl", "-sS", "-g", "--noproxy", "*", "--max-time", "30"] + args,
                       capture_output=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr.decode("utf-8", "replace")


def auth(env):
    tap, s3 = env.tap, env.s3
    log("presigned URLs, wrong keys, payload hashes, the user key")
    b = "s3t-auth"
    key = "presigned/with space+plus=eq.txt"
    body = cases.rand(70000, "presigned")
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key=key, Body=body)
    have_curl = shutil.which("curl") is not None

    def presigned_get():
        url = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": key}, ExpiresIn=300)
        out = os.path.join(env.work, "curl.out")
        rc, code, err = curl(["-o", out, "-w", "%{http_code}", url])
        with open(out, "rb") as f:
            got = f.read()
        expect(rc == 0 and code == b"200" and got == body, "curl %s: exit %d, HTTP %s, %d bytes (%s) %s" % (
            url, rc, code.decode(), len(got), got[:300], err))
        return url

    def expired():
        url = s3.generate_presigned_url("get_object", Params={"Bucket": b, "Key": key}, ExpiresIn=1)
        time.sleep(2.2)
        rc, out, err = curl(["-w", "\n%{http_code}", url])
        text = out.decode("utf-8", "replace")
        expect(text.endswith("\n403") and wire.error_code(out) == "AccessDenied" and "Request has expired" in text,
               "expired URL: %s" % text[-500:])

    def tampered(url):
        m = re.search(r"(X-Amz-Signature=)([0-9a-f]{64})", url)
        sig = m.group(2)
        bad = url.replace(m.group(0), m.group(1) + sig[:-1] + ("0" if sig[-1] != "0" else "1"))
        rc, out, err = curl(["-w", "\n%{http_code}", bad])
        text = out.decode("utf-8", "replace")
        expect(text.endswith("\n403") and wire.error_code(out) == "SignatureDoesNotMatch",
               "tampered signature: %s" % text[-500:])

    def presigned_put():
        url = s3.generate_presigned_url("put_object", Params={"Bucket": b, "Key": "presigned/put.bin"},
                                        ExpiresIn=300)
        src = os.path.join(env.work, "put.bin")
        data = cases.rand(123457, "curl-put")
        with open(src, "wb") as f:
            f.write(data)
        rc, out, err = curl(["-T", src, "-w", "\n%{http_code}", url])
        expect(out.endswith(b"\n200"), "curl -T: exit %d %s %s" % (rc, out[-400:], err))
        got = s3.get_object(Bucket=b, Key="presigned/put.bin")
        expect(got["Body"].read() == data and got["ETag"] == cases.quoted_md5(data), "presigned PUT stored %s" % (
            got["ETag"]))

    if have_curl:
        url = tap.case("(3) a presigned GetObject URL (key with space, +, =) fetched with curl", presigned_get)
        tap.case("(3) a presigned URL with ExpiresIn=1, 2 s later: 403 AccessDenied 'Request has expired'",
                 expired)
        if isinstance(url, str):
            tap.case("(3) a presigned URL with one hex digit of its signature changed: 403 SignatureDoesNotMatch",
                     tampered, url)
        else:
            tap.ok(False, "(3) a tampered presigned URL", "no presigned URL to tamper with")
        tap.case("(3) a presigned PutObject URL used by curl -T", presigned_put)

        def anonymous():
            rc, out, err = curl(["-w", "\n%{http_code}", "%s/%s/%s" % (env.endpoint, b, urllib.parse.quote(key))])
            expect(out.endswith(b"\n403") and wire.error_code(out) == "AccessDenied", "unsigned GET: %s" % out[-400:])
        tap.case("(3) an unsigned GET: 403 AccessDenied", anonymous)
    else:
        tap.skip("(3) presigned URLs with curl", "curl is not installed")

    wrong = cases.client(env.endpoint, ADMIN[0], ADMIN[1] + "x")

    def wrong_secret():
        sc.expect_error(lambda: wrong.get_object(Bucket=b, Key=key), "SignatureDoesNotMatch", 403, what="GET: ")
        sc.expect_error(lambda: wrong.put_object(Bucket=b, Key="wrong/secret", Body=b"x"),
                        "SignatureDoesNotMatch", 403, what="PUT: ")
        sc.expect_error(lambda: wrong.list_buckets(), "SignatureDoesNotMatch", 403, what="ListBuckets: ")
        absent(s3, b, "wrong/secret")
    tap.case("(3) requests signed with a wrong secret: 403 SignatureDoesNotMatch, nothing written", wrong_secret)
    unknown = cases.client(env.endpoint, "AKIDS3NOSUCHKEY00001", ADMIN[1])
    tap.case("(3) an unknown access key id: 403 InvalidAccessKeyId", sc.expect_error,
             lambda: unknown.get_object(Bucket=b, Key=key), "InvalidAccessKeyId", 403)

    def mismatch():
        s3.put_object(Bucket=b, Key="sha/obj", Body=b"original bytes")
        c = cases.client(env.endpoint, *ADMIN)

        def swap(request, **kw):
            # After signing: the same length, other bytes.
            body = request.body
            if hasattr(body, "read"):
                body = body.read()
            request.body = b"X" * len(body or b"")
        c.meta.events.register("before-send.s3.PutObject", swap)
        # Old botocore adds a Content-MD5 to PutObject, which the swap
        # breaks too; without it the SHA-256 is the only check left.
        sc.expect_error(lambda: c.put_object(Bucket=b, Key="sha/obj", Body=b"replacement!!!"),
                        ("BadDigest", "XAmzContentSHA256Mismatch"), 400, what="with Content-MD5: ")
        try:
            from botocore.utils import conditionally_calculate_md5
            c.meta.events.unregister("before-call.s3.PutObject", conditionally_calculate_md5)
        except ImportError:
            pass
        sc.expect_error(lambda: c.put_object(Bucket=b, Key="sha/obj", Body=b"replacement!!!"),
                        "XAmzContentSHA256Mismatch", 400, what="without Content-MD5: ")
        got = s3.get_object(Bucket=b, Key="sha/obj")["Body"].read()
        expect(got == b"original bytes", "the object became %r" % got)
        sc.expect_error(lambda: c.put_object(Bucket=b, Key="sha/new", Body=b"never stored"),
                        "XAmzContentSHA256Mismatch", 400, what="a new key: ")
        absent(s3, b, "sha/new")
    tap.case("(3) PutObject whose body does not match x-amz-content-sha256: 400 XAmzContentSHA256Mismatch, "
             "object unchanged", mismatch)

    if not wire.crt_available():
        def skewed():
            when = time.time() - 20 * 60
            import datetime
            h = env.crt_headers("GET", "/%s/%s" % (b, urllib.parse.quote(key)),
                                when=datetime.datetime.fromtimestamp(when, datetime.timezone.utc))
            st, hs, out = env.raw("GET", "/%s/%s" % (b, urllib.parse.quote(key)), h)
            expect(st == 403 and wire.error_code(out) == "RequestTimeTooSkewed",
                   "signed 20 min ago: HTTP %d %s" % (st, out[:400]))
        tap.case("(3) a request signed 20 minutes ago: 403 RequestTimeTooSkewed", skewed)

    user_prefix(env)


def user_prefix(env):
    tap, s3, u = env.tap, env.s3, env.user
    b = SHARED
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="other/secret.txt", Body=b"admin only")
    s3.put_object(Bucket=b, Key=USER_PREFIX + "from-admin.txt", Body=b"shared with the team")

    def inside():
        k = USER_PREFIX + "mine.txt"
        r = u.put_object(Bucket=b, Key=k, Body=b"user data", Metadata={"who": "user"})
        expect(r["ETag"] == cases.quoted_md5(b"user data"), "PutObject %s" % short(r))
        expect(u.get_object(Bucket=b, Key=k)["Body"].read() == b"user data", "GetObject")
        expect(u.get_object(Bucket=b, Key=USER_PREFIX + "from-admin.txt")["Body"].read() == b"shared with the team",
               "GetObject of the admin's object in the prefix")
        expect(u.head_object(Bucket=b, Key=k)["Metadata"] == {"who": "user"}, "HeadObject")
        keys = [o["Key"] for o in u.list_objects_v2(Bucket=b, Prefix=USER_PREFIX).get("Contents", [])]
        expect(keys == [USER_PREFIX + "from-admin.txt", k], "ListObjectsV2 Prefix=%s: %s" % (USER_PREFIX, keys))
        u.copy_object(Bucket=b, Key=USER_PREFIX + "copy.txt", CopySource={"Bucket": b, "Key": k})
        from boto3.s3.transfer import TransferConfig
        src = os.path.join(env.work, "user-mpu.bin")
        with open(src, "wb") as f:
            f.write(cases.rand(11 * 1024 * 1024, "user-mpu"))
        u.upload_file(src, b, USER_PREFIX + "big.bin",
                      Config=TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20))
        expect(u.head_object(Bucket=b, Key=USER_PREFIX + "big.bin")["ETag"].endswith('-3"'), "multipart ETag")
        os.unlink(src)
        for key in (k, USER_PREFIX + "copy.txt", USER_PREFIX + "big.bin"):
            u.delete_object(Bucket=b, Key=key)
            absent(s3, b, key)
    tap.case("(3) the user key inside its prefix: put, get, head, list, copy, multipart, delete", inside)

    def outside():
        denied = []

        def no(what, fn):
            try:
                fn()
            except Exception as e:
                code, msg, st = sc.err_of(e)
                # HEAD errors have no body: botocore names them by status.
                if st == 403 and (code == "AccessDenied" or (code == "403" and what.startswith("Head"))):
                    return
                denied.append("%s: %s %s (HTTP %s)" % (what, code, msg, st))
                return
            denied.append("%s: allowed" % what)
        no("GetObject other/secret.txt", lambda: u.get_object(Bucket=b, Key="other/secret.txt"))
        no("HeadObject other/secret.txt", lambda: u.head_object(Bucket=b, Key="other/secret.txt"))
        no("PutObject other/new.txt", lambda: u.put_object(Bucket=b, Key="other/new.txt", Body=b"x"))
        no("PutObject team-x (a sibling, not under team/)", lambda: u.put_object(Bucket=b, Key="team-x", Body=b"x"))
        no("DeleteObject other/secret.txt", lambda: u.delete_object(Bucket=b, Key="other/secret.txt"))
        no("ListObjectsV2 of the bucket", lambda: u.list_objects_v2(Bucket=b))
        no("ListObjectsV2 Prefix=te", lambda: u.list_objects_v2(Bucket=b, Prefix="te"))
        no("ListObjects Prefix=other/", lambda: u.list_objects(Bucket=b, Prefix="other/"))
        no("CopyObject other/ -> team/", lambda: u.copy_object(Bucket=b, Key=USER_PREFIX + "stolen",
                                                               CopySource={"Bucket": b, "Key": "other/secret.txt"}))
        no("CopyObject team/ -> other/", lambda: u.copy_object(Bucket=b, Key="other/planted",
                                                               CopySource={"Bucket": b,
                                                                           "Key": USER_PREFIX + "from-admin.txt"}))
        no("CreateMultipartUpload other/mpu", lambda: u.create_multipart_upload(Bucket=b, Key="other/mpu"))
        no("CreateBucket s3t-user-new", lambda: u.create_bucket(Bucket="s3t-user-new"))
        no("DeleteObjects other/secret.txt", lambda: _delete_objects_denied(u, b, "other/secret.txt"))
        no("GetObject in another bucket", lambda: u.get_object(Bucket="s3t-auth", Key="presigned/put.bin"))
        expect(not denied, "not AccessDenied 403:\n" + "\n".join(denied))
        expect(s3.get_object(Bucket=b, Key="other/secret.txt")["Body"].read() == b"admin only", "secret changed")
        for k in ("other/new.txt", "team-x", USER_PREFIX + "stolen", "other/planted"):
            absent(s3, b, k)
        ups = s3.list_multipart_uploads(Bucket=b).get("Uploads", [])
        expect(not ups, "uploads were started: %s" % short(ups))
    tap.case("(3) the user key outside its prefix: AccessDenied 403 for every read, write, list, copy, "
             "delete; nothing changed", outside)


def _delete_objects_denied(u, b, key):
    """DeleteObjects answers 200 with per-key errors; AccessDenied for the
    key counts as refused (raised here as a ClientError-like failure)."""
    r = u.delete_objects(Bucket=b, Delete={"Objects": [{"Key": key}]})
    errs = r.get("Errors", [])
    if errs and errs[0].get("Code") == "AccessDenied":
        from botocore.exceptions import ClientError
        raise ClientError({"Error": {"Code": "AccessDenied", "Message": errs[0].get("Message", "")},
                           "ResponseMetadata": {"HTTPStatusCode": 403}}, "DeleteObjects")
    return r


# ---------------------------------------------------------------- (4) wire

def streaming(env):
    tap, s3 = env.tap, env.s3
    why = wire.crt_available()
    if why:
        tap.skip("(4) requests signed by awscrt (streaming, trailer, virtual-hosted)", why)
        return
    log("awscrt-signed raw requests")
    b = "s3t-wire"
    s3.create_bucket(Bucket=b)
    tap.ok(wire.vector_check() is None, "(4) awscrt's seed and our chunk signatures match the S3 docs' example",
           wire.vector_check())

    def put_unsigned():
        data = cases.rand(50000, "unsigned")
        path = "/%s/unsigned.bin" % b
        h = env.crt_headers("PUT", path, [("Content-Length", str(len(data))), ("Content-Type", "text/x-unsigned")])
        st, hs, out = env.raw("PUT", path, h, data)
        expect(st == 200 and hs.get("etag") == cases.quoted_md5(data), "HTTP %d %s %s" % (st, hs, out[:300]))
        g = s3.get_object(Bucket=b, Key="unsigned.bin")
        expect(g["Body"].read() == data and g["ContentType"] == "text/x-unsigned", "stored object differs")
    tap.case("(4) PutObject with x-amz-content-sha256: UNSIGNED-PAYLOAD", put_unsigned)

    def streaming_put(key, data, chunk=65536, tamper_sig=None, tamper_data=None, extra=()):
        path = "/%s/%s" % (b, key)
        headers = [("Content-Encoding", "aws-chunked"), ("x-amz-decoded-content-length", str(len(data))),
                   ("Content-Length", str(wire.framed_length(len(data), chunk)))] + list(extra)
        h = env.crt_headers("PUT", path, headers, body_value=wire.STREAMING)
        amz_date, scope, seed = wire.auth_parts(h)
        body, _ = wire.signed_chunks(data, chunk, seed, amz_date, scope, ADMIN[1], tamper_sig, tamper_data)
        return env.raw("PUT", path, h, body)

    data = cases.rand(150 * 1024 + 7, "streaming")

    def good():
        st, hs, out = streaming_put("stream/good.bin", data, extra=[("Content-Type", "text/x-streamed")])
        expect(st == 200 and hs.get("etag") == cases.quoted_md5(data), "HTTP %d %s %s" % (st, hs, out[:300]))
        g = s3.get_object(Bucket=b, Key="stream/good.bin")
        got = g["Body"].read()
        expect(got == data, "stored %d bytes (framing kept? %s), want %d" % (len(got), b";chunk-signature=" in got,
                                                                           len(data)))
        expect(g["ContentType"] == "text/x-streamed" and g.get("ContentEncoding") in (None, ""),
               "headers: Content-Type %r, Content-Encoding %r (aws-chunked is not the object's)" % (
                   g["ContentType"], g.get("ContentEncoding")))
        with open(env.stored(b, "stream/good.bin"), "rb") as f:
            expect(f.read() == data, "the store's file differs")
    tap.case("(4) STREAMING-AWS4-HMAC-SHA256-PAYLOAD PUT (3 signed chunks + the last): stored decoded, ETag = MD5",
             good)

    def refused(key, what, **kw):
        st, hs, out = streaming_put(key, data, **kw)
        expect(st == 403 and wire.error_code(out) == "SignatureDoesNotMatch",
               "%s: HTTP %d %s, want 403 SignatureDoesNotMatch" % (what, st, out[:300]))

    def bad_first():
        refused("stream/bad-first.bin", "first chunk's signature altered", tamper_sig=0)
        absent(s3, b, "stream/bad-first.bin")
        expect(not os.path.exists(env.stored(b, "stream/bad-first.bin")), "a file was left in the store")
    tap.case("(4) aws-chunked with one hex digit of the first chunk signature changed: 403 SignatureDoesNotMatch, "
             "no object", bad_first)

    def bad_last_over_old():
        s3.put_object(Bucket=b, Key="stream/kept.bin", Body=b"the older object")
        refused("stream/kept.bin", "third chunk's signature altered", tamper_sig=2)
        got = s3.get_object(Bucket=b, Key="stream/kept.bin")["Body"].read()
        expect(got == b"the older object", "the older object became %d bytes" % len(got))
        refused("stream/kept.bin", "final empty chunk's signature altered", tamper_sig=3)
        got = s3.get_object(Bucket=b, Key="stream/kept.bin")["Body"].read()
        expect(got == b"the older object", "after a bad final chunk the object became %d bytes" % len(got))
    tap.case("(4) a bad signature on the third or the final chunk, after good ones: 403, the older object kept",
             bad_last_over_old)

    def bad_data():
        refused("stream/bad-data.bin", "one byte of chunk 2 changed", tamper_data=1)
        absent(s3, b, "stream/bad-data.bin")
    tap.case("(4) aws-chunked with one data byte changed after signing: 403 SignatureDoesNotMatch, no object",
             bad_data)

    def other_key():
        path = "/%s/stream/wrong-key.bin" % b
        headers = [("Content-Encoding", "aws-chunked"), ("x-amz-decoded-content-length", str(len(data))),
                   ("Content-Length", str(wire.framed_length(len(data), 65536)))]
        h = env.crt_headers("PUT", path, headers, body_value=wire.STREAMING)
        amz_date, scope, seed = wire.auth_parts(h)
        body, _ = wire.signed_chunks(data, 65536, seed, amz_date, scope, USER[1])
        st, hs, out = env.raw("PUT", path, h, body)
        expect(st == 403 and wire.error_code(out) == "SignatureDoesNotMatch", "HTTP %d %s" % (st, out[:300]))
        absent(s3, b, "stream/wrong-key.bin")
    tap.case("(4) chunks signed with another secret than the seed: 403, no object", other_key)

    def trailer(key, crc=None):
        path = "/%s/%s" % (b, key)
        tdata = cases.rand(100 * 1024 + 3, "trailer")
        body = wire.trailer_chunks(tdata, 65536, crc)
        headers = [("Content-Encoding", "aws-chunked"), ("x-amz-decoded-content-length", str(len(tdata))),
                   ("x-amz-trailer", "x-amz-checksum-crc32"), ("Content-Length", str(len(body)))]
        h = env.crt_headers("PUT", path, headers, body_value=wire.TRAILER)
        return tdata, env.raw("PUT", path, h, body)

    def trailer_good():
        tdata, (st, hs, out) = trailer("trailer/good.bin")
        expect(st == 200 and hs.get("etag") == cases.quoted_md5(tdata), "HTTP %d %s %s" % (st, hs, out[:300]))
        got = s3.get_object(Bucket=b, Key="trailer/good.bin")["Body"].read()
        expect(got == tdata, "stored %d bytes, want %d" % (len(got), len(tdata)))
    tap.case("(4) STREAMING-UNSIGNED-PAYLOAD-TRAILER PUT with an x-amz-checksum-crc32 trailer", trailer_good)

    def trailer_bad():
        s3.put_object(Bucket=b, Key="trailer/kept.bin", Body=b"older")
        _, (st, hs, out) = trailer("trailer/kept.bin", crc=wire.crc32_b64(b"something else"))
        expect(st == 400, "HTTP %d %s, want 400" % (st, out[:300]))
        tap.note("a wrong CRC32 trailer: HTTP %d %s" % (st, wire.error_code(out)))
        got = s3.get_object(Bucket=b, Key="trailer/kept.bin")["Body"].read()
        expect(got == b"older", "the older object became %d bytes" % len(got))
    tap.case("(4) a trailer whose CRC32 does not match the body: 400, the older object kept", trailer_bad)

    def too_large():
        path = "/%s/huge.bin" % b
        size = 5 * 1024 ** 3 + 1
        h = env.crt_headers("PUT", path, [("Content-Length", str(size)), ("Expect", "100-continue")])
        first = wire.first_reply(env.port, "PUT", path, h, timeout=10)
        expect(first.startswith(b"HTTP/1.1 400") and b"<Code>EntityTooLarge</Code>" in first,
               "PUT with Content-Length %d and Expect: 100-continue, headers only: the server's first answer "
               "is %r, want 400 EntityTooLarge (S3 refuses before the body)" % (size, first[:300]))
        absent(s3, b, "huge.bin")
    tap.case("(4) PutObject of 5 GiB + 1 (Expect: 100-continue): 400 EntityTooLarge before any body", too_large)

    def too_large_chunked():
        path = "/%s/huge-chunked.bin" % b
        size = 5 * 1024 ** 3 + 1
        h = env.crt_headers("PUT", path, [("Content-Encoding", "aws-chunked"),
                                          ("x-amz-decoded-content-length", str(size)),
                                          ("Content-Length", str(wire.framed_length(size, 65536))),
                                          ("Expect", "100-continue")], body_value=wire.STREAMING)
        first = wire.first_reply(env.port, "PUT", path, h, timeout=10)
        expect(first.startswith(b"HTTP/1.1 400") and b"<Code>EntityTooLarge</Code>" in first,
               "aws-chunked PUT with x-amz-decoded-content-length %d and Expect: 100-continue, headers only: "
               "the server's first answer is %r, want 400 EntityTooLarge" % (size, first[:300]))
        absent(s3, b, "huge-chunked.bin")
    tap.case("(4) aws-chunked PutObject of 5 GiB + 1 decoded (Expect: 100-continue): 400 EntityTooLarge before "
             "any body", too_large_chunked)

    vhost(env)


def vhost(env):
    tap, s3 = env.tap, env.s3
    b = "s3t-vhost"
    host = "%s.%s:%d" % (b, DOMAIN, env.port)

    def call(method, path, body=b"", extra=()):
        h = env.crt_headers(method, path, [("Content-Length", str(len(body)))] + list(extra), host=host)
        return env.raw(method, path, h, body)

    def run():
        st, hs, out = call("PUT", "/")
        expect(st == 200, "CreateBucket (PUT / with Host %s): HTTP %d %s" % (host, st, out[:300]))
        s3.head_bucket(Bucket=b)
        st, hs, out = call("PUT", "/vh/key%20one.txt", b"virtual-hosted")
        expect(st == 200 and hs.get("etag") == cases.quoted_md5(b"virtual-hosted"), "PutObject: HTTP %d %s" % (
            st, out[:300]))
        got = s3.get_object(Bucket=b, Key="vh/key one.txt")["Body"].read()
        expect(got == b"virtual-hosted", "path-style GetObject of it: %r" % got)
        st, hs, out = call("GET", "/vh/key%20one.txt")
        expect(st == 200 and out == b"virtual-hosted", "GetObject: HTTP %d %s" % (st, out[:300]))
        st, hs, out = call("GET", "/?list-type=2&prefix=vh%2F")
        expect(st == 200 and b"<Key>vh/key one.txt</Key>" in out and b"<Name>%s</Name>" % b.encode() in out,
               "ListObjectsV2: HTTP %d %s" % (st, out[:500]))
        st, hs, out = call("DELETE", "/vh/key%20one.txt")
        expect(st == 204, "DeleteObject: HTTP %d %s" % (st, out[:300]))
        absent(s3, b, "vh/key one.txt")
        st, hs, out = call("DELETE", "/")
        expect(st == 204, "DeleteBucket: HTTP %d %s" % (st, out[:300]))
    tap.case("(4) virtual-hosted style (Host: <bucket>.%s:port): CreateBucket, Put, Get, ListObjectsV2, "
             "Delete, DeleteBucket" % DOMAIN, run)


# ---------------------------------------------------------------- (2) CLIs

def find_v1_aws():
    for d in os.environ.get("PATH", "").split(os.pathsep):
        p = os.path.join(d, "aws")
        if os.access(p, os.X_OK) and os.path.realpath(p) != os.path.realpath("/usr/bin/aws"):
            return p
    p = os.path.join(os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv")), "shims", "aws")
    return p if os.access(p, os.X_OK) else None


def aws_env(env, name, crt=False):
    d = os.path.join(env.work, "aws-" + name)
    os.makedirs(d, exist_ok=True)
    cfg, creds = os.path.join(d, "config"), os.path.join(d, "credentials")
    with open(cfg, "w") as f:
        f.write("[default]\nregion = us-east-1\nmax_attempts = 1\nretry_mode = standard\n")
        if crt:
            f.write("s3 =\n    preferred_transfer_client = crt\n")
    with open(creds, "w") as f:
        f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % ADMIN)
    e = dict(os.environ)
    e.update(AWS_CONFIG_FILE=cfg, AWS_SHARED_CREDENTIALS_FILE=creds, AWS_MAX_ATTEMPTS="1",
             AWS_RETRY_MODE="standard", AWS_PAGER="", AWS_EC2_METADATA_DISABLED="true",
             PYTHONDONTWRITEBYTECODE="1")
    return e


def make_tree(root, n=36):
    files = {}
    dirs = ["a", "b/c", "with space", "d/e/f", "\u00fcnic\u00f6de"]
    for i in range(n):
        rel = os.path.join(dirs[i % len(dirs)], "file-%02d%s" % (i, ".txt" if i % 3 else ".bin"))
        size = (i * 7919) % 150000 + 1
        data = cases.rand(size, "tree-%d" % i)
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        files[rel] = data
    return files


def tree_of(root):
    out = {}
    for top, _, names in os.walk(root):
        for n in names:
            p = os.path.join(top, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


class Cli:
    def __init__(self, env, label, argv0, name, endpoint, crt=False):
        self.env = env
        self.label = label
        self.argv0 = argv0
        self.endpoint = endpoint
        self.bucket = "s3t-cli-" + name
        self.environ = aws_env(env, name, crt)
        self.dir = os.path.join(env.work, "cli-" + name)
        os.makedirs(self.dir, exist_ok=True)
        self.last = ""

    def __call__(self, *args, timeout=240):
        argv = [self.argv0] + list(args) + ["--endpoint-url", self.endpoint]
        if args[:2] in (("s3", "cp"), ("s3", "sync")):
            argv.append("--no-progress")
        r = subprocess.run(argv, capture_output=True, env=self.environ, timeout=timeout, cwd=self.dir)
        out, err = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
        self.last = "$ %s\nexit %d\n%s\n%s" % (" ".join(argv), r.returncode, out[-1500:], err[-1500:])
        expect(r.returncode == 0, self.last)
        return out

    def t(self, name, fn, *args):
        return self.env.tap.case("(2) %s: %s" % (self.label, name), fn, *args)


def cli_cases(env, cli, big, big_sha, relay=None):
    s3, b = env.s3, cli.bucket

    def mb():
        cli("s3", "mb", "s3://" + b)
        s3.head_bucket(Bucket=b)
    if not cli.t("aws s3 mb", mb):
        return

    def cp():
        t = time.time()
        cli("s3", "cp", big, "s3://%s/big.bin" % b)
        up = time.time() - t
        h = s3.head_object(Bucket=b, Key="big.bin")
        expect(h["ContentLength"] == os.path.getsize(big), "ContentLength %s" % h["ContentLength"])
        expect(file_sha(env.stored(b, "big.bin")) == big_sha, "the store's file differs from the upload")
        down = os.path.join(cli.dir, "big.down")
        t = time.time()
        cli("s3", "cp", "s3://%s/big.bin" % b, down)
        expect(file_sha(down) == big_sha, "the download differs from the upload")
        log("%s: 50 MB up %.1f s, down %.1f s, ETag %s" % (cli.label, up, time.time() - t, h["ETag"]))
        os.unlink(down)
        if relay is not None:
            agents = sorted(relay.seen["user-agent"])
            shas = sorted(s if len(s) != 64 else "<hex SHA-256>" for s in relay.seen["x-amz-content-sha256"])
            env.tap.note("%s: x-amz-content-sha256 values sent: %s; crt User-Agent seen: %s" % (
                cli.label, shas, any("CRTS3NativeClient" in a for a in agents)))
            expect(any("CRTS3NativeClient" in a for a in agents), "the crt client was not used: User-Agents %s" % (
                agents))
    cli.t("aws s3 cp of 50 MB up and down, byte for byte (also the store's file)", cp)

    def empty():
        src = os.path.join(cli.dir, "empty.txt")
        open(src, "wb").close()
        cli("s3", "cp", src, "s3://%s/empty.txt" % b)
        expect(s3.head_object(Bucket=b, Key="empty.txt")["ContentLength"] == 0, "not empty on the server")
        down = os.path.join(cli.dir, "empty.down")
        cli("s3", "cp", "s3://%s/empty.txt" % b, down)
        expect(os.path.getsize(down) == 0, "downloaded %d bytes" % os.path.getsize(down))
    cli.t("aws s3 cp of an empty file up and down", empty)

    src = os.path.join(cli.dir, "tree")
    down = os.path.join(cli.dir, "tree-down")
    files = make_tree(src)

    def sync():
        out = cli("s3", "sync", src, "s3://%s/tree/" % b)
        ups = [x for x in out.splitlines() if x.startswith("upload:")]
        expect(len(ups) == len(files), "%d upload lines for %d files:\n%s" % (len(ups), len(files), out[-1500:]))
        out = cli("s3", "ls", "s3://%s/tree/" % b, "--recursive")
        listed = {}
        for line in out.splitlines():
            m = re.match(r"^\S+ \S+\s+(\d+) (.*)$", line)
            expect(m, "aws s3 ls line %r" % line)
            listed[m.group(2)] = int(m.group(1))
        want = {"tree/" + k: len(v) for k, v in files.items()}
        expect(listed == want, "aws s3 ls --recursive: %s\nwant %s" % (sorted(listed.items())[:8],
                                                                       sorted(want.items())[:8]))
        cli("s3", "sync", "s3://%s/tree/" % b, down)
        expect(tree_of(down) == files, "synced down tree differs: %s" % sorted(set(tree_of(down)) ^ set(files)))
    if not cli.t("aws s3 sync of %d files up, aws s3 ls --recursive, sync down: trees equal" % len(files), sync):
        return

    def resync():
        changed = sorted(files)[5]
        time.sleep(1.1)
        with open(os.path.join(src, changed), "ab") as f:
            f.write(b"one more line\n")
        files[changed] += b"one more line\n"
        out = cli("s3", "sync", src, "s3://%s/tree/" % b)
        ups = [x for x in out.splitlines() if x.startswith("upload:")]
        expect(len(ups) == 1 and changed in ups[0], "second sync up: %s" % out[-1500:])
        out = cli("s3", "sync", "s3://%s/tree/" % b, down)
        downs = [x for x in out.splitlines() if x.startswith("download:")]
        expect(len(downs) == 1 and changed in downs[0], "second sync down: %s" % out[-1500:])
        expect(tree_of(down) == files, "trees differ after the second sync")
        got = s3.get_object(Bucket=b, Key="tree/" + changed)["Body"].read()
        expect(got == files[changed], "the changed object differs")
    cli.t("a change, then a second sync up and down copies only the changed file", resync)

    def ls():
        out = cli("s3", "ls", "s3://%s/" % b)
        expect(re.search(r"(?m)^\s+PRE tree/$", out) and re.search(r"(?m)^\S+ \S+\s+%d big\.bin$" % (
            os.path.getsize(big)), out) and re.search(r"(?m)^\S+ \S+\s+0 empty\.txt$", out),
            "aws s3 ls s3://%s/:\n%s" % (b, out))
        out = cli("s3", "ls")
        expect(re.search(r"(?m)^\S+ \S+ %s$" % re.escape(b), out), "aws s3 ls (buckets):\n%s" % out)
    cli.t("aws s3 ls of the bucket (PRE tree/, big.bin, empty.txt) and of the buckets", ls)

    def rm():
        out = cli("s3", "rm", "s3://%s/" % b, "--recursive")
        dels = [x for x in out.splitlines() if x.startswith("delete:")]
        expect(len(dels) == len(files) + 2, "%d delete lines, want %d" % (len(dels), len(files) + 2))
        left = s3.list_objects_v2(Bucket=b).get("Contents", [])
        expect(not left, "left after rm --recursive: %s" % [o["Key"] for o in left][:10])
        cli("s3", "rb", "s3://" + b)
        sc.expect_error(lambda: s3.head_bucket(Bucket=b), ("404", "NoSuchBucket"), 404, what="after rb: ")
    cli.t("aws s3 rm --recursive empties the bucket, aws s3 rb removes it", rm)
    shutil.rmtree(cli.dir, ignore_errors=True)


def clis(env):
    tap = env.tap
    big = os.path.join(env.work, "big-50mb.bin")
    with open(big, "wb") as f:
        for _ in range(50):
            f.write(os.urandom(MB))
    big_sha = file_sha(big)
    if os.access("/usr/bin/aws", os.X_OK):
        log("aws CLI v2 (/usr/bin/aws)")
        cli_cases(env, Cli(env, "aws CLI v2.9", "/usr/bin/aws", "v2", env.endpoint), big, big_sha)
    else:
        tap.skip("(2) aws CLI v2 (/usr/bin/aws)", "not installed")
    v1 = find_v1_aws()
    if v1:
        log("aws CLI v1 (%s)" % v1)
        cli_cases(env, Cli(env, "aws CLI v1 (botocore 1.43)", v1, "v1", env.endpoint), big, big_sha)
    else:
        tap.skip("(2) aws CLI v1 (pyenv)", "no aws other than /usr/bin/aws on PATH")
    crt_cli(env, big, big_sha)
    os.unlink(big)


def crt_cli(env, big, big_sha):
    tap = env.tap
    name = "(2) aws CLI v2.9 with preferred_transfer_client = crt"
    if not os.access("/usr/bin/aws", os.X_OK):
        tap.skip(name, "/usr/bin/aws is not installed")
        return
    why = wire.crt_available()
    if why:
        tap.skip(name, why)
        return
    if os.geteuid() != 0:
        tap.skip(name, "awscrt 0.16's S3 client connects to port 80 for http:// endpoints and only root "
                       "may bind a relay there")
        return
    addr = wire.Forwarder.free_loopback([80, env.port])
    if not addr:
        tap.skip(name, "no 127.x.y.z with ports 80 and %d free" % env.port)
        return
    relay = wire.Forwarder(env.port)
    try:
        relay.listen(addr, 80)
        relay.listen(addr, env.port)
        log("aws CLI v2 with crt, through %s:80 and %s:%d" % (addr, addr, env.port))
        cli = Cli(env, "aws CLI v2.9 crt", "/usr/bin/aws", "crt", "http://%s:%d" % (addr, env.port), crt=True)
        probe = subprocess.run(["/usr/bin/aws", "configure", "get", "s3.preferred_transfer_client"],
                               capture_output=True, env=cli.environ, timeout=60)
        if probe.stdout.decode().strip() != "crt":
            tap.skip(name, "the CLI does not read the setting: %s %s" % (probe.stdout.decode(), probe.stderr.decode()))
            return
        cli_cases(env, cli, big, big_sha, relay)
    finally:
        relay.stop()


# ---------------------------------------------------------------- (5) a job

TRAIN_PY = r'''
import hashlib, json, os, sys
import helper

chan = os.environ["SM_CHANNEL_TRAIN"]
files = {}
for top, _, names in os.walk(chan):
    for n in names:
        p = os.path.join(top, n)
        with open(p, "rb") as f:
            files[os.path.relpath(p, chan)] = hashlib.sha256(f.read()).hexdigest()
out = {"files": files, "hps": json.loads(os.environ.get("SM_HPS", "{}")), "argv": sys.argv[1:],
       "helper": helper.WORD}
model = os.environ["SM_MODEL_DIR"]
with open(os.path.join(model, "result.json"), "w") as f:
    json.dump(out, f, sort_keys=True)
os.makedirs(os.path.join(model, "sub"), exist_ok=True)
with open(os.path.join(model, "sub", "weights.bin"), "wb") as f:
    f.write(bytes(range(256)) * 40)
print("trained on %d files" % len(files))
'''


def job(env):
    tap, s3 = env.tap, env.s3
    log("a training job through the S3 API")
    b = "s3t-job"
    name = "s3-api-job-%d" % os.getpid()

    def upload():
        s3.create_bucket(Bucket=b)
        tgz = io.BytesIO()
        with tarfile.open(fileobj=tgz, mode="w:gz") as t:
            for fname, text in (("train.py", TRAIN_PY), ("helper.py", "WORD = 'from the tarball'\n")):
                data = text.encode()
                info = tarfile.TarInfo(fname)
                info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
                t.addfile(info, io.BytesIO(data))
        tgz.seek(0)
        s3.upload_fileobj(tgz, b, "code/sourcedir.tar.gz")
        data = {"part-0.csv": b"x,y\n1,2\n3,4\n", "sub dir/part-1.csv": b"x,y\n5,6\n"}
        for k, v in data.items():
            s3.put_object(Bucket=b, Key="data/train/" + k, Body=v)
        from boto3.s3.transfer import TransferConfig
        big = cases.rand(6 * 1024 * 1024 + 5, "channel")
        s3.upload_fileobj(io.BytesIO(big), b, "data/train/big.bin",
                          Config=TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20))
        data["big.bin"] = big
        return {k: hashlib.sha256(v).hexdigest() for k, v in data.items()}
    want = tap.case("(5) sourcedir.tar.gz and a channel (one object multipart) uploaded with boto3", upload)
    if not isinstance(want, dict):
        return
    sm = sc.make_client(env.endpoint, key=ADMIN[0], secret=ADMIN[1])
    req = {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "trainctl/python", "TrainingInputMode": "File"},
        "RoleArn": ROLE,
        "HyperParameters": {"sagemaker_program": json.dumps("train.py"),
                            "sagemaker_submit_directory": json.dumps("s3://%s/code/sourcedir.tar.gz" % b),
                            "epochs": "3"},
        "InputDataConfig": [{"ChannelName": "train", "DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix", "S3Uri": "s3://%s/data/train/" % b,
            "S3DataDistributionType": "FullyReplicated"}}}],
        "OutputDataConfig": {"S3OutputPath": "s3://%s/out" % b},
        "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 120},
    }

    def run():
        sm.create_training_job(**req)
        deadline = time.time() + 120
        while True:
            d = sm.describe_training_job(TrainingJobName=name)
            if d["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
                break
            expect(time.time() < deadline, "still %s after 120 s" % d["TrainingJobStatus"])
            time.sleep(0.2)
        expect(d["TrainingJobStatus"] == "Completed", "ended %s: %s\n%s" % (
            d["TrainingJobStatus"], d.get("FailureReason"), env.d.log_tail(15)))
        return d
    d = tap.case("(5) the script-mode job Completes", run)
    if not isinstance(d, dict):
        return

    def model():
        uri = d["ModelArtifacts"]["S3ModelArtifacts"]
        expect(uri == "s3://%s/out/%s/output/model.tar.gz" % (b, name), "S3ModelArtifacts %s" % uri)
        key = uri[len("s3://%s/" % b):]
        buf = io.BytesIO()
        s3.download_fileobj(b, key, buf)
        blob = buf.getvalue()
        h = s3.head_object(Bucket=b, Key=key)
        expect(h["ETag"] == cases.quoted_md5(blob), "ETag %s of the agent-written model, MD5 %s" % (
            h["ETag"], cases.md5_hex(blob)))
        listed = [o["Key"] for o in s3.list_objects_v2(Bucket=b, Prefix="out/%s/" % name).get("Contents", [])]
        expect(key in listed, "ListObjectsV2 out/%s/: %s" % (name, listed))
        with tarfile.open(fileobj=io.BytesIO(blob)) as t:
            names = sorted(os.path.normpath(m.name) for m in t.getmembers() if m.isfile())
            expect(names == ["result.json", "sub/weights.bin"], "model.tar.gz holds %s" % names)
            result = json.load(t.extractfile([m for m in t.getmembers()
                                              if os.path.normpath(m.name) == "result.json"][0]))
            w = t.extractfile([m for m in t.getmembers() if os.path.normpath(m.name) == "sub/weights.bin"][0])
            expect(w.read() == bytes(range(256)) * 40, "weights.bin differs")
        expect(result["files"] == want, "the job saw %s, uploaded %s" % (result["files"], want))
        expect(result["hps"].get("epochs") == 3 and result["helper"] == "from the tarball",
               "hyperparameters %s, helper %r" % (result["hps"], result["helper"]))
    tap.case("(5) its model.tar.gz, downloaded with boto3 from the output path, holds what the script wrote", model)


# ---------------------------------------------------------------- misc

def traversal(env):
    tap, s3 = env.tap, env.s3
    b = "s3t-dots"

    def run():
        s3.create_bucket(Bucket=b)
        outcomes = []
        for key in ("../outside-bucket-s3t", "a/../../../outside-store-s3t", "./dot/./x", "a//double"):
            try:
                s3.put_object(Bucket=b, Key=key, Body=b"dots")
            except Exception as e:
                code, msg, st = sc.err_of(e)
                expect(st is not None and 400 <= st < 500, "PutObject %r: %s %s (HTTP %s)" % (key, code, msg, st))
                outcomes.append("%s: %s %s" % (key, st, code))
                continue
            got = s3.get_object(Bucket=b, Key=key)["Body"].read()
            expect(got == b"dots", "PutObject %r accepted but GetObject gives %r" % (key, got))
            outcomes.append("%s: stored" % key)
        tap.note("keys with dot segments: " + "; ".join(outcomes))
        bucket_root = os.path.realpath(os.path.join(env.store, b))
        strays = []
        for top, _, names in os.walk(env.d.tmp):
            for n in names:
                if "outside-" in n and n.endswith("-s3t"):
                    p = os.path.realpath(os.path.join(top, n))
                    if not p.startswith(bucket_root + os.sep):
                        strays.append(p)
        expect(not strays, "written outside the bucket's folder: %s" % strays)
    tap.case("(1) keys with .. and . segments are refused (4xx) or stay inside the bucket", run)


def hosts_ready(d, timeout=30):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        h = sc.sigv4_sign("GET", "127.0.0.1:%d" % d.port, "/v1/hosts", "", b"", ADMIN[0], ADMIN[1])
        try:
            last = sc.http_request(d.port, "GET", "/v1/hosts", headers=h)
            hosts = (last.json or {}).get("hosts", [])
            if any(x.get("state") == "ready" for x in hosts):
                return None
        except OSError as e:
            last = e
        time.sleep(0.1)
    return "no ready host after %d s: %r" % (timeout, last)


def main():
    tap = sc.Tap()
    d = sc.Daemon(credentials=None, name="trainctld-s3")
    work = os.path.join(d.tmp, "work")
    os.makedirs(work)
    creds = os.path.join(d.tmp, "credentials")
    with open(creds, "w") as f:
        f.write("[admin]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % ADMIN)
        f.write("[team]\naws_access_key_id = %s\naws_secret_access_key = %s\ntrainctl_user = nobody\n"
                "trainctl_role = user\ntrainctl_s3_prefixes = %s/%s\n" % (USER + (SHARED, USER_PREFIX)))
    # Files of our own, so that no client reads a config of this machine.
    aws_dir = os.path.join(d.tmp, "aws")
    os.makedirs(aws_dir)
    os.environ["AWS_CONFIG_FILE"] = os.path.join(aws_dir, "config")
    os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.path.join(aws_dir, "credentials")
    with open(os.environ["AWS_CONFIG_FILE"], "w") as f:
        f.write("[default]\nregion = us-east-1\nmax_attempts = 1\nretry_mode = standard\n")
    with open(os.environ["AWS_SHARED_CREDENTIALS_FILE"], "w") as f:
        f.write("")
    d.extra += ["--local-hosts", "1", "--credentials", creds, "--s3-domain", DOMAIN]
    err = d.start()
    if not tap.ok(err is None, "trainctld --credentials --local-hosts 1 --s3-domain %s starts" % DOMAIN, err):
        sys.exit(tap.finish())
    tap.log_hint = d.log_tail
    err = hosts_ready(d)
    tap.ok(err is None, "its local host is ready", err)
    env = Env(tap, d, work)
    for section in (boto3_old, boto3_new, traversal, auth, streaming, clis, job):
        try:
            section(env)
        except Exception as e:
            import traceback
            tap.ok(False, "%s ran to its end" % section.__name__, "%s: %s\n%s" % (
                type(e).__name__, e, traceback.format_exc()[-1500:]))
        if not d.alive():
            tap.ok(False, "trainctld is still running after %s" % section.__name__, d.log_tail())
            break
    log("done")
    rc, killed = d.stop()
    tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit %r, killed %s\n%s" % (
        rc, killed, d.log_tail()))
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
