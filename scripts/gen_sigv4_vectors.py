#!/usr/bin/python3
"""Writes SigV4 test vectors signed by the real clients: botocore and libcurl.

Run with Debian's interpreter (it has botocore 1.29):

    /usr/bin/python3 scripts/gen_sigv4_vectors.py [OUTDIR]

OUTDIR defaults to tests/api/sigv4/clients. The script starts a capture
server on 127.0.0.1, points botocore at it with the clock frozen at
2025-01-31T12:00:00Z (epoch ms 1738324800000, the value
tests/api/test_sigv4.c uses as "now") and stores each request exactly as it
arrived on the socket, as OUTDIR/botocore-<name>.sreq (request line,
headers, blank line, body; CRLF line ends as sent). It also writes
OUTDIR/credentials, the shared-credentials file holding the keys used.

When /usr/bin/curl is there, it also signs two requests with libcurl's
CURLOPT_AWS_SIGV4 (curl --aws-sigv4), the signer trainctl's own CLI uses,
as OUTDIR/libcurl-*.sreq. curl's clock cannot be frozen: those vectors carry
the time they were made, and the test takes "now" from their X-Amz-Date.

The vectors are data: regenerate them only when adding cases. Each run gives
different bytes (botocore adds a random amz-sdk-invocation-id header, the
capture port is random, curl's time is the real one), and the tests accept
any run.
"""

import datetime
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from unittest import mock

os.environ["AWS_CONFIG_FILE"] = os.devnull
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
            "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL",
            "AWS_ENDPOINT_URL_SAGEMAKER"):
    os.environ.pop(var, None)

import botocore.session  # noqa: E402
from botocore.auth import SigV4Auth, SigV4QueryAuth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402
from botocore.httpsession import URLLib3Session  # noqa: E402

FIXED = datetime.datetime(2025, 1, 31, 12, 0, 0)
REGION = "us-west-2"
SERVICE = "sagemaker"

AKID = "AKIDTRAINCTLTEST0001"
SECRET = "trainctl/Secret+Key/EXAMPLE0123456789abcd"
AKID2 = "AKIDTRAINCTLTEST0002"
SECRET2 = "second/secret/key/for/session/tokens/00"
TOKEN = "FQoGZXIvYXdzEXAMPLEtokenForTrainctlTests//////////wEXAMPLE=="


class FixedDateTime(datetime.datetime):
    """datetime.datetime with the clock stopped at FIXED."""

    @classmethod
    def utcnow(cls):
        return cls(FIXED.year, FIXED.month, FIXED.day, FIXED.hour,
                   FIXED.minute, FIXED.second)

    @classmethod
    def now(cls, tz=None):
        t = cls.utcnow()
        if tz is not None:
            t = t.replace(tzinfo=datetime.timezone.utc).astimezone(tz)
        return t


class Capture:
    """A tiny HTTP/1.1 server that records raw requests and answers {}."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.requests = []
        self.lock = threading.Lock()
        t = threading.Thread(target=self._serve, daemon=True)
        t.start()

    def _serve(self):
        while True:
            conn, _ = self.sock.accept()
            threading.Thread(target=self._conn, args=(conn,),
                             daemon=True).start()

    def _conn(self, conn):
        data = b""
        while True:
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    conn.close()
                    return
                data += chunk
            head, rest = data.split(b"\r\n\r\n", 1)
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(rest) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                rest += chunk
            body, data = rest[:length], rest[length:]
            with self.lock:
                self.requests.append(head + b"\r\n\r\n" + body)
            reply = b"{}"
            conn.sendall(b"HTTP/1.1 200 OK\r\n"
                         b"Content-Type: application/x-amz-json-1.1\r\n"
                         b"x-amzn-RequestId: 0\r\n"
                         b"Content-Length: " + str(len(reply)).encode() +
                         b"\r\n\r\n" + reply)

    def take(self):
        with self.lock:
            if len(self.requests) != 1:
                raise RuntimeError("expected one request, got %d"
                                   % len(self.requests))
            return self.requests.pop()


def client(endpoint, akid=AKID, secret=SECRET, token=None):
    session = botocore.session.get_session()
    return session.create_client(
        SERVICE, region_name=REGION, endpoint_url=endpoint,
        aws_access_key_id=akid, aws_secret_access_key=secret,
        aws_session_token=token,
        config=Config(retries={"max_attempts": 0}, parameter_validation=True))


def call(cap, c, op, **kwargs):
    try:
        getattr(c, op)(**kwargs)
    except Exception:  # the reply is {}, which some outputs lack members of
        pass
    return cap.take()


def send_raw(cap, req, signer):
    """Signs an AWSRequest with signer and sends it with botocore's HTTP."""
    signer.add_auth(req)
    URLLib3Session().send(req.prepare())
    return cap.take()


CREATE = {
    "TrainingJobName": "mnist-3",
    "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
    "AlgorithmSpecification": {
        "TrainingImage": "registry.local/trainers/mnist:1.0",
        "TrainingInputMode": "File",
    },
    "HyperParameters": {"epochs": "\"3\"", "lr": "\"0.01\""},
    "InputDataConfig": [{
        "ChannelName": "train",
        "DataSource": {"S3DataSource": {
            "S3DataType": "S3Prefix",
            "S3Uri": "s3://data/mnist/train/",
            "S3DataDistributionType": "FullyReplicated"}},
    }],
    "OutputDataConfig": {"S3OutputPath": "s3://models/mnist/"},
    "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 2,
                       "VolumeSizeInGB": 10},
    "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
    "Tags": [{"Key": "team", "Value": "caf\u00e9 \u00fcml\u00e4ut"}],
}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/api/sigv4/clients"
    os.makedirs(out, exist_ok=True)
    cap = Capture()
    base = "http://127.0.0.1:%d" % cap.port
    creds = Credentials(AKID, SECRET)
    vectors = {}

    with mock.patch.object(datetime, "datetime", FixedDateTime):
        c = client(base)
        vectors["botocore-create-training-job"] = call(
            cap, c, "create_training_job", **CREATE)
        vectors["botocore-describe-training-job"] = call(
            cap, c, "describe_training_job", TrainingJobName="mnist-3")
        vectors["botocore-list-training-jobs"] = call(
            cap, c, "list_training_jobs", MaxResults=10,
            StatusEquals="InProgress", SortBy="CreationTime")
        vectors["botocore-stop-training-job"] = call(
            cap, c, "stop_training_job", TrainingJobName="mnist-3")

        ct = client(base, AKID2, SECRET2, TOKEN)
        vectors["botocore-session-token"] = call(
            cap, ct, "describe_training_job", TrainingJobName="mnist-3")

        # An --endpoint-url with a path: botocore signs the path as sent,
        # URI-encoded once more (the non-S3 rule), so "%20" becomes "%2520".
        cp = client(base + "/api/v1/my%20prefix")
        vectors["botocore-endpoint-path"] = call(
            cap, cp, "describe_training_job", TrainingJobName="mnist-3")

        body = json.dumps({"TrainingJobName": "mnist-3"}).encode()
        json_headers = {
            "X-Amz-Target": "SageMaker.DescribeTrainingJob",
            "Content-Type": "application/x-amz-json-1.1",
        }

        # Date header in RFC 1123 form instead of X-Amz-Date.
        h = dict(json_headers)
        h["Date"] = "Thu, 01 Jan 1970 00:00:00 GMT"
        req = AWSRequest("POST", base + "/", data=body, headers=h)
        vectors["botocore-date-header"] = send_raw(cap, req, SigV4Auth(
            creds, SERVICE, REGION))

        # Payload signing switched off: X-Amz-Content-SHA256: UNSIGNED-PAYLOAD.
        req = AWSRequest("POST", base + "/", data=body,
                         headers=dict(json_headers))
        req.context["payload_signing_enabled"] = False
        vectors["botocore-unsigned-payload"] = send_raw(cap, req, SigV4Auth(
            creds, SERVICE, REGION))

        # S3 style: the body hash sent (and signed) as X-Amz-Content-SHA256.
        h = dict(json_headers)
        h["X-Amz-Content-SHA256"] = hashlib.sha256(body).hexdigest()
        req = AWSRequest("POST", base + "/", data=body, headers=h)
        vectors["botocore-content-sha256"] = send_raw(cap, req, SigV4Auth(
            creds, SERVICE, REGION))

        # Query parameters: space, '+', '/', '~', an empty value and keys
        # that differ only in case (sorted by byte value: "A" < "a").
        params = {"b": "2", "a": "x y", "c": "a+b/c~", "A": "upper",
                  "empty": ""}
        req = AWSRequest(
            "GET", base + "/jobs/list", params=params,
            headers={"X-Amz-Target": "SageMaker.ListTrainingJobs"})
        vectors["botocore-query-params"] = send_raw(cap, req, SigV4Auth(
            creds, SERVICE, REGION))

        # Presigned URL (query-string authentication), valid for 300 s.
        req = AWSRequest("GET", base + "/", params={"Action": "Describe",
                                                   "Name": "mnist-3"})
        vectors["botocore-presigned"] = send_raw(cap, req, SigV4QueryAuth(
            creds, SERVICE, REGION, expires=300))

    curl = shutil.which("curl", path="/usr/bin")
    if curl:
        def curl_post(target, body, extra=()):
            cmd = [curl, "-s", "-o", os.devnull,
                   "--aws-sigv4", "aws:amz:%s:%s" % (REGION, SERVICE),
                   "--user", "%s:%s" % (AKID, SECRET),
                   "-H", "Content-Type: application/x-amz-json-1.1",
                   "-H", "X-Amz-Target: SageMaker." + target]
            for h in extra:
                cmd += ["-H", h]
            subprocess.run(cmd + ["--data-binary", body, base + "/"],
                           check=True)
            return cap.take()

        vectors["libcurl-list-training-jobs"] = curl_post(
            "ListTrainingJobs", '{"MaxResults": 5}')
        vectors["libcurl-describe-training-job"] = curl_post(
            "DescribeTrainingJob", '{"TrainingJobName": "mnist-3"}',
            ("X-Amz-Security-Token: " + TOKEN,))

    for name, raw in sorted(vectors.items()):
        with open(os.path.join(out, name + ".sreq"), "wb") as f:
            f.write(raw)
    with open(os.path.join(out, "credentials"), "w") as f:
        f.write("# Keys the botocore vectors were signed with "
                "(scripts/gen_sigv4_vectors.py).\n"
                "[default]\n"
                "aws_access_key_id = %s\n"
                "aws_secret_access_key = %s\n\n"
                "[session]\n"
                "aws_access_key_id = %s\n"
                "aws_secret_access_key = %s\n"
                "aws_session_token = %s\n" % (AKID, SECRET, AKID2, SECRET2,
                                              TOKEN))
    print("wrote %d vectors to %s" % (len(vectors), out))


if __name__ == "__main__":
    main()
