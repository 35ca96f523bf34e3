#!/usr/bin/python3
"""Capture server and SigV4 checker for tests/storage/test_sigv4.c.

serve PORTFILE LOG: listens on 127.0.0.1 (free port written to PORTFILE) and
appends one JSON line per request to LOG: method, raw path, headers in the
order received, the body's SHA-256 and MD5. It answers as S3 would, just
enough for a client to go on: PUT -> 200 with the body's MD5 as ETag,
POST ?uploads -> an UploadId, POST ?uploadId -> a completion, GET
?list-type=2 -> a listing (truncated once), HEAD -> 3 bytes, else 200/204.
Stops on SIGTERM.

check LOG SECRET REGION: for every captured request, rebuilds the canonical
request from exactly the headers named in its Authorization SignedHeaders,
signs it with botocore's own S3SigV4Auth (the signer the aws CLI uses) at the
request's X-Amz-Date, and prints one JSON line per request with the
canonical request, the signed headers, the signature sent and the signature
botocore computes.

date LOG: prints the X-Amz-Date of the last request.

signed LOG SECRET REGION: exit 0 when every request's signature equals
botocore's.

compare LOG SECRET REGION: exit 0 when every request's signature equals
botocore's, and when the last two requests (the aws CLI's, then ours, for
the same object, date and keys) have the same method, canonical URI and
query, signed header names and values, payload hash and Authorization.
"""
import hashlib
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(portfile, log):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def handle_any(self):
            n = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(n) if n else b""
            rec = {
                "method": self.command,
                "path": self.path,
                "headers": [[k, v] for k, v in self.headers.items()],
                "sha256": hashlib.sha256(body).hexdigest(),
                "md5": hashlib.md5(body).hexdigest(),
                "size": len(body),
            }
            with open(log, "a") as f:
                f.write(json.dumps(rec) + "\n")
            out = b""
            status = 200
            q = self.path.partition("?")[2]
            if self.command == "POST" and q.startswith("uploads"):
                out = b"<InitiateMultipartUploadResult><UploadId>up/1+x=</UploadId></InitiateMultipartUploadResult>"
            elif self.command == "POST" and "uploadId=" in q:
                out = b'<CompleteMultipartUploadResult><ETag>"0123-2"</ETag></CompleteMultipartUploadResult>'
            elif self.command == "GET" and "list-type=2" in q:
                if "continuation-token" in q:
                    out = b"<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>b</Key><Size>1</Size></Contents></ListBucketResult>"
                else:
                    out = b"<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken>tok+/=</NextContinuationToken><Contents><Key>a</Key><Size>1</Size></Contents></ListBucketResult>"
            elif self.command == "DELETE":
                status = 204
            self.send_response(status)
            self.send_header("ETag", '"%s"' % rec["md5"])
            if self.command == "HEAD":
                self.send_header("Content-Length", "3")
            elif status != 204:
                self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            if self.command != "HEAD" and out:
                self.wfile.write(out)

        do_PUT = do_GET = do_POST = do_DELETE = do_HEAD = handle_any

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % srv.server_address[1])
    import os
    import signal

    os.rename(portfile + ".tmp", portfile)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    srv.serve_forever()


def check(log, secret, region, out=None):
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    for line in open(log):
        rec = json.loads(line)
        hdrs = {k.lower(): v for k, v in rec["headers"]}
        auth = hdrs.get("authorization", "")
        parts = dict(
            p.strip().split("=", 1) for p in auth[len("AWS4-HMAC-SHA256 "):].split(",")
        )
        signed = parts["SignedHeaders"].split(";")
        akid = parts["Credential"].split("/")[0]
        token = hdrs.get("x-amz-security-token")
        creds = Credentials(akid, secret, token)
        url = "http://" + hdrs["host"] + rec["path"]
        req = AWSRequest(
            method=rec["method"],
            url=url,
            headers={h: hdrs[h] for h in signed if h in hdrs},
        )
        date = hdrs["x-amz-date"]
        req.context["timestamp"] = date
        signer = S3SigV4Auth(creds, "s3", region)
        # botocore signs only what is present: keep exactly SignedHeaders.
        signer._timestamp = date
        creq = signer.canonical_request(req)
        sts = signer.string_to_sign(req, creq)
        sig = signer.signature(sts, req)
        res = {
                    "method": rec["method"],
                    "path": rec["path"],
                    "user_agent": hdrs.get("user-agent", ""),
                    "date": date,
                    "signed_headers": signed,
                    "payload_hash": hdrs.get("x-amz-content-sha256"),
                    "body_sha256": rec["sha256"],
                    "canonical_request": creq,
                    "signature_sent": parts["Signature"],
                    "signature_botocore": sig,
                    "authorization": auth,
                    "signed_values": [hdrs.get(h) for h in signed],
                }
        if out is None:
            print(json.dumps(res))
        else:
            out.append(res)


def compare(log, secret, region, pair=True):
    res = []
    check(log, secret, region, res)
    ok = True
    for r in res:
        good = r["signature_sent"] == r["signature_botocore"]
        ok &= good
        print("%s %s %s signed=%s payload=%s signature %s botocore's" % (
            "ok" if good else "BAD", r["method"], r["path"],
            ";".join(r["signed_headers"]), r["payload_hash"],
            "equals" if good else "differs from"))
        if not good:
            print("  canonical request:\n  " + r["canonical_request"].replace("\n", "\n  "))
    print("%d requests" % len(res))
    if pair and len(res) >= 2:
        a, b = res[-2], res[-1]
        for f in ("method", "path", "signed_headers", "signed_values",
                  "payload_hash", "canonical_request", "authorization"):
            same = a[f] == b[f]
            ok &= same
            print("%s aws CLI vs ours: %s" % ("same" if same else "DIFFERENT", f))
            if not same:
                print("  aws:  %r\n  ours: %r" % (a[f], b[f]))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3], sys.argv[4])
    elif sys.argv[1] == "signed":
        compare(sys.argv[2], sys.argv[3], sys.argv[4], pair=False)
    elif sys.argv[1] == "date":
        last = json.loads(open(sys.argv[2]).read().splitlines()[-1])
        print({k.lower(): v for k, v in last["headers"]}["x-amz-date"])
    else:
        sys.exit("usage: sigv4_capture.py serve PORTFILE LOG | check|signed|compare LOG SECRET REGION | date LOG")
