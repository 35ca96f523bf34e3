#!/usr/bin/python3
"""Hostile requests to the embedded S3 store of trainctld, by holders of
valid keys (an admin key; alice and bob, each confined to its prefix).

A trainctld with --credentials (admin, alice: bkt/alice/, bob: bkt/bob/):
  (4a) alice's presigned PUT plus an unsigned x-amz-copy-source naming an
       object alice may read: 403 AccessDenied naming the header, the
       destination unchanged; the same URL without it still works
  (4b) a signed PUT plus an unsigned x-amz-meta-* / x-amz-acl /
       Content-MD5: 403 AccessDenied naming it, nothing written; curl
       --aws-sigv4 with an extra x-amz-meta-* header (libcurl signs it)
       and a CLI upload still work
  (4c) a SageMaker JSON request whose X-Amz-Target is not signed: 403
       AccessDeniedException naming it, no job created
  (4d) boto3 (put, get, presigned GET, multipart, copy) still works
  (5)  DeleteObjects and CompleteMultipartUpload bodies with a DOCTYPE and
       an internal entity (the quadratic expansion): 400 MalformedXML naming
       the DOCTYPE, nothing deleted or completed, trainctld's RSS grows by
       less than 50 MB; a 2000-byte <Key> is refused as MalformedXML
  (6)  a text/html object: answers carry Content-Security-Policy: sandbox
       and X-Content-Type-Options: nosniff; a navigation (Sec-Fetch-Mode:
       navigate) gets Content-Disposition: attachment; the page's Basic
       credentials read no object
  (11) PUT, CreateMultipartUpload and a copy to a key that is not UTF-8
       (%FF): 400 InvalidArgument, nothing stored; a bad key already on
       disk leaves alice's ListObjectsV2 parseable
A second trainctld with --s3-max-uploads 5 --s3-upload-max-age 3:
  (10) bob's sixth open multipart upload is refused (400 TooManyUploads),
       alice still opens one; after the age the reaper aborts them (gone
       from the listing, their folders removed, UploadPart: NoSuchUpload)

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_hostile_s3.py
BUILD names the build directory (default build).
"""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
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

expect = sc.expect
BUCKET = "bkt"
KEYS = {"admin": ("AKIDHS3ADMIN00000001", "hs3/admin/secret/0123456789"),
        "alice": ("AKIDHS3ALICE00000001", "hs3/alice/secret/0123456789"),
        "bob": ("AKIDHS3BOB0000000001", "hs3/bob/secret/0123456789")}
ROLE = "arn:aws:iam::123456789012:role/service-role/AmazonSageMaker-ExecutionRole"


def credentials_file(d):
    path = os.path.join(d.tmp, "hostile-credentials")
    with open(path, "w") as f:
        f.write("[admin]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % KEYS["admin"])
        for who in ("alice", "bob"):
            f.write("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\ntrainctl_user = nobody\n"
                    "trainctl_s3_prefixes = %s/%s/\n\n" % ((who,) + KEYS[who] + (BUCKET, who)))
    return path


def start(extra=()):
    d = sc.Daemon(name="trainctld-hostile-s3")
    d.extra = ["--credentials", credentials_file(d)] + list(extra)
    return d, d.start()


def s3(d, who):
    return cases.client(d.endpoint, *KEYS[who])


def host(d):
    return "127.0.0.1:%d" % d.port


def signed(d, method, path, who, body=b"", headers=None, unsigned=()):
    """A request signed by botocore's S3 signer (every header given is
    signed), then the unsigned headers added. (status, headers, body)."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
    req = AWSRequest(method=method, url="http://%s%s" % (host(d), path), data=body,
                     headers=dict(headers or {}))
    S3SigV4Auth(Credentials(*KEYS[who]), "s3", sc.REGION).add_auth(req)
    hdrs = [("Host", host(d))] + [(k, v) for k, v in req.headers.items()] + list(unsigned)
    if body:
        hdrs.append(("Content-Length", str(len(body))))
    return wire.raw(d.port, method, path, hdrs, body)


def refused(r, status, code, contains=None):
    st, _, body = r
    expect(st == status and wire.error_code(body) == code,
           "expected %d %s, got %d %s" % (status, code, st, body[:300]))
    if contains:
        expect(contains.lower() in body.decode("utf-8", "replace").lower(),
               "the error does not name %r: %s" % (contains, body[:300]))


def content(c, key):
    """The object's bytes, or None when there is none."""
    try:
        return c.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    except Exception as e:
        if sc.err_of(e)[0] in ("NoSuchKey", "404"):
            return None
        raise


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


# ---------------------------------------------------------------- (4)

def case_presigned_copy(d):
    alice = s3(d, "alice")
    alice.put_object(Bucket=BUCKET, Key="alice/src", Body=b"what alice may read")
    alice.put_object(Bucket=BUCKET, Key="alice/dst", Body=b"original")
    url = alice.generate_presigned_url("put_object", Params={"Bucket": BUCKET, "Key": "alice/dst"},
                                       ExpiresIn=300)
    u = urllib.parse.urlsplit(url)
    path = u.path + "?" + u.query
    r = wire.raw(d.port, "PUT", path, [("Host", host(d)), ("Content-Length", "0"),
                                       ("x-amz-copy-source", "/%s/alice/src" % BUCKET)])
    refused(r, 403, "AccessDenied", "x-amz-copy-source")
    got = content(alice, "alice/dst")
    expect(got == b"original", "destination changed to %r" % got)
    r = wire.raw(d.port, "PUT", path, [("Host", host(d)), ("Content-Length", "5")], b"fresh")
    expect(r[0] == 200, "the presigned PUT itself: %d %s" % (r[0], r[2][:300]))
    expect(content(alice, "alice/dst") == b"fresh", "presigned PUT did not write")


def case_unsigned_headers(d):
    alice = s3(d, "alice")
    body = b"payload"
    md5 = base64.b64encode(hashlib.md5(body).digest()).decode()
    for i, (name, value) in enumerate((("x-amz-meta-evil", "1"), ("x-amz-acl", "public-read"),
                                       ("Content-MD5", md5), ("X-Amz-Storage-Class", "STANDARD"))):
        key = "alice/unsigned-%d" % i
        r = signed(d, "PUT", "/%s/%s" % (BUCKET, key), "alice", body, unsigned=[(name, value)])
        refused(r, 403, "AccessDenied", name)
        expect(content(alice, key) is None, "%s: the object was written" % name)
    # The same headers signed are fine.
    r = signed(d, "PUT", "/%s/alice/signed-meta" % BUCKET, "alice", body,
               headers={"x-amz-meta-fine": "1", "Content-MD5": md5})
    expect(r[0] == 200, "signed x-amz-meta + Content-MD5: %d %s" % (r[0], r[2][:300]))
    h = alice.head_object(Bucket=BUCKET, Key="alice/signed-meta")
    expect(h["Metadata"] == {"fine": "1"}, "metadata %r" % h["Metadata"])


def case_curl_and_cli(d, work):
    """libcurl's signer (what storage/ and the CLI use) signs the headers it
    is given; the aws CLI signs all its x-amz-* headers."""
    src = os.path.join(work, "up.bin")
    with open(src, "wb") as f:
        f.write(b"curl upload\n")
    key, secret = KEYS["alice"]
    r = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--aws-sigv4",
                        "aws:amz:%s:s3" % sc.REGION, "--user", "%s:%s" % (key, secret),
                        "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "-H", "x-amz-meta-by: curl",
                        "-T", src, "%s/%s/alice/curl.bin" % (d.endpoint, BUCKET)],
                       capture_output=True, timeout=60)
    expect(r.stdout == b"200", "curl --aws-sigv4 PUT: %r %r" % (r.stdout, r.stderr[-300:]))
    h = s3(d, "alice").head_object(Bucket=BUCKET, Key="alice/curl.bin")
    expect(h["Metadata"] == {"by": "curl"}, "curl metadata %r" % h["Metadata"])
    if not os.access("/usr/bin/aws", os.X_OK):
        return
    env = dict(os.environ, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret,
               AWS_DEFAULT_REGION=sc.REGION, AWS_CONFIG_FILE="/dev/null",
               AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    r = subprocess.run(["/usr/bin/aws", "--endpoint-url", d.endpoint, "s3", "cp", src,
                        "s3://%s/alice/cli.bin" % BUCKET], capture_output=True, timeout=120, env=env)
    expect(r.returncode == 0, "aws s3 cp: %s" % r.stderr[-400:])
    expect(content(s3(d, "alice"), "alice/cli.bin") == b"curl upload\n", "aws s3 cp wrote other bytes")


def case_sagemaker_target(d):
    admin = sc.make_client(d.endpoint, *KEYS["admin"])
    req = sc.job_request("hostile-unsigned-target")
    body = json.dumps(req).encode()
    h = {"Content-Type": "application/x-amz-json-1.1"}
    h.update(sc.sigv4_sign("POST", host(d), "/", "", body, KEYS["admin"][0], KEYS["admin"][1], h))
    h["X-Amz-Target"] = "SageMaker.CreateTrainingJob"
    r = sc.http_request(d.port, "POST", "/", body, h)
    t = (r.json or {}).get("__type", "")
    expect(r.status in (400, 403) and "AccessDenied" in t and "x-amz-target" in
           (r.json or {}).get("message", (r.json or {}).get("Message", "")).lower(),
           "unsigned X-Amz-Target: %r" % r)
    names = [j["TrainingJobName"] for j in admin.list_training_jobs()["TrainingJobSummaries"]]
    expect("hostile-unsigned-target" not in names, "the job was created")
    # Signed, the same request is answered (whatever the outcome, not auth).
    h = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker.ListTrainingJobs"}
    h.update(sc.sigv4_sign("POST", host(d), "/", "", b"{}", KEYS["alice"][0], KEYS["alice"][1], h))
    r = sc.http_request(d.port, "POST", "/", b"{}", h)
    expect(r.status == 200, "signed X-Amz-Target: %r" % r)


def case_boto3_still(d):
    alice = s3(d, "alice")
    alice.put_object(Bucket=BUCKET, Key="alice/b3", Body=b"x" * 1000, ContentType="text/plain",
                     Metadata={"m": "v"})
    expect(alice.get_object(Bucket=BUCKET, Key="alice/b3")["Body"].read() == b"x" * 1000, "get")
    url = alice.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "alice/b3"})
    u = urllib.parse.urlsplit(url)
    r = wire.raw(d.port, "GET", u.path + "?" + u.query, [("Host", host(d))])
    expect(r[0] == 200 and r[2] == b"x" * 1000, "presigned GET: %d" % r[0])
    alice.copy_object(Bucket=BUCKET, Key="alice/b3-copy", CopySource={"Bucket": BUCKET, "Key": "alice/b3"})
    expect(content(alice, "alice/b3-copy") == b"x" * 1000, "copy")
    up = alice.create_multipart_upload(Bucket=BUCKET, Key="alice/mp")["UploadId"]
    p1 = alice.upload_part(Bucket=BUCKET, Key="alice/mp", UploadId=up, PartNumber=1, Body=b"a" * (5 << 20))
    p2 = alice.upload_part(Bucket=BUCKET, Key="alice/mp", UploadId=up, PartNumber=2, Body=b"b" * 10)
    alice.complete_multipart_upload(Bucket=BUCKET, Key="alice/mp", UploadId=up, MultipartUpload={
        "Parts": [{"PartNumber": 1, "ETag": p1["ETag"]}, {"PartNumber": 2, "ETag": p2["ETag"]}]})
    expect(alice.head_object(Bucket=BUCKET, Key="alice/mp")["ContentLength"] == (5 << 20) + 10, "multipart")
    alice.delete_objects(Bucket=BUCKET, Delete={"Objects": [{"Key": "alice/b3-copy"}]})
    expect(content(alice, "alice/b3-copy") is None, "DeleteObjects")


# ---------------------------------------------------------------- (5)

def entity_body(root, inner):
    """A DOCTYPE whose 50 KB entity is referenced 2000 times (100 MB once
    expanded) inside inner's {} placeholder."""
    ent = "A" * 50000
    refs = "&e;" * 2000
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE %s [<!ENTITY e "%s">]>\n%s'
            % (root, ent, inner.format(refs))).encode()


def md5_header(body):
    return base64.b64encode(hashlib.md5(body).digest()).decode()


def case_entities(d):
    alice = s3(d, "alice")
    alice.put_object(Bucket=BUCKET, Key="alice/keep", Body=b"keep me")
    before = rss_kb(d.proc.pid)
    body = entity_body("Delete", "<Delete><Object><Key>alice/keep{}</Key></Object>"
                                 "<Object><Key>alice/keep</Key></Object></Delete>")
    r = signed(d, "POST", "/%s?delete" % BUCKET, "alice", body, headers={"Content-MD5": md5_header(body)})
    grew = rss_kb(d.proc.pid) - before
    refused(r, 400, "MalformedXML", "DOCTYPE")
    expect(content(alice, "alice/keep") == b"keep me", "DeleteObjects deleted alice/keep")
    up = alice.create_multipart_upload(Bucket=BUCKET, Key="alice/ent")["UploadId"]
    p1 = alice.upload_part(Bucket=BUCKET, Key="alice/ent", UploadId=up, PartNumber=1, Body=b"p" * 100)
    body = entity_body("CompleteMultipartUpload",
                       "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s{}</ETag></Part>"
                       "</CompleteMultipartUpload>" % p1["ETag"].replace('"', "&quot;"))
    r = signed(d, "POST", "/%s/alice/ent?uploadId=%s" % (BUCKET, up), "alice", body)
    grew = max(grew, rss_kb(d.proc.pid) - before)
    refused(r, 400, "MalformedXML", "DOCTYPE")
    expect(content(alice, "alice/ent") is None, "the upload was completed")
    expect(grew < 50 * 1024, "trainctld grew by %d KB" % grew)
    # The same DOCTYPE in UTF-7 ("+ADw-" is "<"), which a byte scan alone
    # does not see: the body is read as UTF-8 whatever it declares.
    utf7 = ('<?xml version="1.0" encoding="UTF-7"?>+ADw-!DOCTYPE Delete +AFs-+ADw-!ENTITY e '
            '+ACI-%s+ACI-+AD4-+AF0-+AD4-+ADw-Delete+AD4-+ADw-Object+AD4-+ADw-Key+AD4-alice/keep%s'
            '+ADw-/Key+AD4-+ADw-/Object+AD4-+ADw-/Delete+AD4-' % ("A" * 50000, "&e;" * 2000)).encode()
    r = signed(d, "POST", "/%s?delete" % BUCKET, "alice", utf7, headers={"Content-MD5": md5_header(utf7)})
    refused(r, 400, "MalformedXML", "")
    expect(content(alice, "alice/keep") == b"keep me", "a UTF-7 DeleteObjects deleted alice/keep")
    # An over-long key in the body.
    body = ('<Delete><Object><Key>alice/%s</Key></Object></Delete>' % ("k" * 2000)).encode()
    r = signed(d, "POST", "/%s?delete" % BUCKET, "alice", body, headers={"Content-MD5": md5_header(body)})
    refused(r, 400, "MalformedXML", "1024")
    alice.abort_multipart_upload(Bucket=BUCKET, Key="alice/ent", UploadId=up)


# ---------------------------------------------------------------- (6)

def case_active_content(d):
    alice = s3(d, "alice")
    html = b"<html><script>fetch('/v1/training-jobs')</script></html>"
    alice.put_object(Bucket=BUCKET, Key="alice/page.html", Body=html, ContentType="text/html",
                     ContentDisposition="inline")
    got = alice.get_object(Bucket=BUCKET, Key="alice/page.html")
    h = got["ResponseMetadata"]["HTTPHeaders"]
    expect(h.get("content-security-policy") == "sandbox", "no CSP sandbox: %r" % h)
    expect(h.get("x-content-type-options") == "nosniff", "no nosniff: %r" % h)
    url = alice.generate_presigned_url("get_object", Params={"Bucket": BUCKET, "Key": "alice/page.html"})
    u = urllib.parse.urlsplit(url)
    st, hh, body = wire.raw(d.port, "GET", u.path + "?" + u.query,
                            [("Host", host(d)), ("Sec-Fetch-Mode", "navigate"), ("Sec-Fetch-Dest", "document")])
    expect(st == 200 and body == html, "navigation GET: %d" % st)
    expect(hh.get("content-disposition") == "attachment", "navigation: Content-Disposition %r"
           % hh.get("content-disposition"))
    expect(hh.get("content-security-policy") == "sandbox", "navigation: no CSP")
    # An error answer carries them too.
    st, hh, _ = wire.raw(d.port, "GET", "/%s/alice/none" % BUCKET, [("Host", host(d))])
    expect(st == 403 and hh.get("content-security-policy") == "sandbox", "error answer: %d %r" % (st, hh))
    # The page's Basic credentials are no S3 credentials.
    basic = base64.b64encode(("%s:%s" % KEYS["admin"]).encode()).decode()
    st, hh, body = wire.raw(d.port, "GET", "/%s/alice/page.html" % BUCKET,
                            [("Host", host(d)), ("Authorization", "Basic " + basic)])
    expect(st in (400, 403) and html not in body, "Basic read the object: %d" % st)


# ---------------------------------------------------------------- (11)

def store_names(d, sub):
    p = os.path.join(d.state_dir, "s3", BUCKET, sub).encode()
    return os.listdir(p) if os.path.isdir(p) else []


def case_bad_keys(d):
    alice = s3(d, "alice")
    alice.put_object(Bucket=BUCKET, Key="alice/good-copy-src", Body=b"src")
    before = set(store_names(d, "alice"))
    r = signed(d, "PUT", "/%s/alice/bad%%FFkey" % BUCKET, "alice", b"bad")
    refused(r, 400, "InvalidArgument", "UTF-8")
    r = signed(d, "POST", "/%s/alice/bad%%C0%%AFmp?uploads" % BUCKET, "alice", b"")
    refused(r, 400, "InvalidArgument", "UTF-8")
    r = signed(d, "PUT", "/%s/alice/bad%%ED%%A0%%80copy" % BUCKET, "alice", b"",
               headers={"x-amz-copy-source": "/%s/alice/good-copy-src" % BUCKET})
    refused(r, 400, "InvalidArgument", "UTF-8")
    r = signed(d, "PUT", "/%s/alice/%s" % (BUCKET, "k" * 1100), "alice", b"long")
    refused(r, 400, "KeyTooLongError")
    after = set(store_names(d, "alice"))
    expect(after == before, "stored: %r" % (after - before))
    ups = alice.list_multipart_uploads(Bucket=BUCKET, Prefix="alice/").get("Uploads", [])
    expect(not ups, "uploads opened: %r" % ups)
    # A bad name already on disk (stored before keys were checked).
    p = os.path.join(d.state_dir, "s3", BUCKET, "alice").encode() + b"/old\xff\x01name"
    with open(p, "wb") as f:
        f.write(b"old")
    keys = [o["Key"] for o in alice.list_objects_v2(Bucket=BUCKET, Prefix="alice/").get("Contents", [])]
    expect("alice/good-copy-src" in keys, "listing parsed but lacks keys: %r" % keys)
    os.unlink(p)


# ---------------------------------------------------------------- (10)

def case_upload_cap(d):
    bob, alice = s3(d, "bob"), s3(d, "alice")
    ids = [bob.create_multipart_upload(Bucket=BUCKET, Key="bob/u%d" % i)["UploadId"] for i in range(5)]
    cases.error(lambda: bob.create_multipart_upload(Bucket=BUCKET, Key="bob/u6"), "TooManyUploads", 400,
                what="bob's sixth upload: ")
    a = alice.create_multipart_upload(Bucket=BUCKET, Key="alice/u1")["UploadId"]
    # Freeing one lets bob open another.
    bob.abort_multipart_upload(Bucket=BUCKET, Key="bob/u0", UploadId=ids[0])
    ids[0] = bob.create_multipart_upload(Bucket=BUCKET, Key="bob/u0")["UploadId"]
    return ids, a


def case_reaper(d, ids, a):
    bob = s3(d, "bob")
    uploads = os.path.join(d.state_dir, "s3-uploads")
    deadline = time.time() + 15
    while time.time() < deadline:
        left = [u for u in os.listdir(uploads) if len(u) == 32]
        if not left:
            break
        time.sleep(0.25)
    expect(not left, "uploads not reaped after 15 s: %r" % left)
    ups = bob.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])
    expect(not ups, "still listed: %r" % ups)
    cases.error(lambda: bob.upload_part(Bucket=BUCKET, Key="bob/u1", UploadId=ids[1], PartNumber=1,
                                        Body=b"x"), "NoSuchUpload", 404, what="part of a reaped upload: ")
    expect("aborted upload" in open(d.log_path, errors="replace").read(), "the reaper logged nothing")


def main():
    tap = sc.Tap()
    work = None
    d, err = start()
    try:
        if not tap.ok(err is None, "trainctld with an admin key and keys alice and bob starts", err):
            return tap.finish()
        work = d.tmp
        s3(d, "admin").create_bucket(Bucket=BUCKET)
        tap.case("(4a) presigned PUT + unsigned x-amz-copy-source: AccessDenied, destination unchanged",
                 case_presigned_copy, d)
        tap.case("(4b) signed PUT + unsigned x-amz-meta-*/x-amz-acl/Content-MD5: AccessDenied, nothing written",
                 case_unsigned_headers, d)
        tap.case("(4b) curl --aws-sigv4 and aws s3 cp uploads still work", case_curl_and_cli, d, work)
        tap.case("(4c) SageMaker JSON with an unsigned X-Amz-Target: refused, no job", case_sagemaker_target, d)
        tap.case("(4d) boto3 put/get/presigned GET/copy/multipart/DeleteObjects still work",
                 case_boto3_still, d)
        tap.case("(5) DOCTYPE/entity bodies: MalformedXML, nothing deleted, RSS bounded", case_entities, d)
        tap.case("(6) objects carry CSP sandbox + nosniff; navigations download", case_active_content, d)
        tap.case("(11) keys that are not UTF-8 are refused; listings stay parseable", case_bad_keys, d)
        rc, killed = d.stop()
        tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit %r\n%s" % (rc, d.log_tail()))

        d2, err = start(["--s3-max-uploads", "5", "--s3-upload-max-age", "3"])
        if tap.ok(err is None, "trainctld --s3-max-uploads 5 --s3-upload-max-age 3 starts", err):
            s3(d2, "admin").create_bucket(Bucket=BUCKET)
            got = {}

            def cap():
                got["v"] = case_upload_cap(d2)
            tap.case("(10) bob's sixth open upload: TooManyUploads; alice still opens one", cap)
            if "v" in got:
                tap.case("(10) uploads older than the age are aborted by the reaper", case_reaper, d2, *got["v"])
            else:
                tap.ok(False, "(10) uploads older than the age are aborted by the reaper", "no uploads")
            d2.stop()
    finally:
        d.stop()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
