#!/usr/bin/python3
"""Requests that try to reach outside their job, against controllers with
--credentials (what an attacker holding a valid key would send).

A controller with credentials and no --allow-file-root:
  (1) an InputDataConfig channel file:///etc/shadow
  (2) OutputDataConfig.S3OutputPath file:///<new folder>
  (3) CheckpointConfig.S3Uri file:///etc/ssh/
  (4) CheckpointConfig.LocalPath /etc
  (5) CheckpointConfig.LocalPath ../..
  (6) a channel named '..'
  (7) GET /v1/training-jobs/../logs and a name that is not a job name
  (8) GET /v1/training-jobs/%00 (was answered as a List)
  each: a 4xx ValidationException naming the member, no job created, no
  file read or written.
A second controller with --allow-file-root ROOT and one local host:
  (9) file:// under ROOT is accepted, and a job copying its channel into
      its model runs to Completed with its model under ROOT
  (10) file:///etc, ROOT/../.., a symlink in ROOT to /etc and a code
      folder (sagemaker_submit_directory) outside ROOT are refused

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_security.py
BUILD names the build directory (default build); TRAINCTL_TEST_KEEP=1
keeps the temp dirs.
"""
import os
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
sc.hermetic_env()
expect = sc.expect
CREDS = {"default": (sc.KEY, sc.SECRET)}


def request(name, **top):
    req = fl.job_request(name, 1, checkpoint=False, max_runtime=120)
    req["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/true"
    req.update(top)
    return req


def channel(name, uri):
    return {"ChannelName": name,
            "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": uri,
                                            "S3DataDistributionType": "FullyReplicated"}}}


def refused(sm, req, member, what):
    sc.expect_error(lambda: sm.create_training_job(**req), "ValidationException", status=400,
                    contains=member, what=what + ": ")
    names = [j["TrainingJobName"] for j in sm.list_training_jobs()["TrainingJobSummaries"]]
    expect(req["TrainingJobName"] not in names, "%s: the job was created anyway" % what)


def case_no_roots(tap, sm, d):
    fresh = tempfile.mktemp(prefix="trainctl-sec-out-")
    cases = [
        ("(1) channel file:///etc/shadow is refused",
         request("sec-1", InputDataConfig=[channel("train", "file:///etc/shadow")]), "S3Uri"),
        ("(2) S3OutputPath file:///<new folder> is refused",
         request("sec-2", OutputDataConfig={"S3OutputPath": "file://" + fresh}), "S3OutputPath"),
        ("(3) CheckpointConfig.S3Uri file:///etc/ssh/ is refused",
         request("sec-3", CheckpointConfig={"S3Uri": "file:///etc/ssh/"}), "CheckpointConfig.S3Uri"),
        ("(4) CheckpointConfig.LocalPath /etc is refused",
         request("sec-4", CheckpointConfig={"S3Uri": "s3://%s/c/" % fl.BUCKET, "LocalPath": "/etc"}),
         "LocalPath"),
        ("(5) CheckpointConfig.LocalPath ../.. is refused",
         request("sec-5", CheckpointConfig={"S3Uri": "s3://%s/c/" % fl.BUCKET, "LocalPath": "../.."}),
         "LocalPath"),
        ("(6) a channel named '..' is refused",
         request("sec-6", InputDataConfig=[channel("..", "s3://%s/data/" % fl.BUCKET)]), "ChannelName"),
    ]
    for what, req, member in cases:
        tap.case(what, refused, sm, req, member, what)
    tap.ok(not os.path.exists(fresh), "(2) no output folder was made", fresh)
    touched = [p for p in ("logs", "s3", "jobs")
               if os.path.isdir(os.path.join(d.state_dir, p)) and os.listdir(os.path.join(d.state_dir, p))]
    tap.ok(not touched, "(1-6) nothing written under the state dir", touched)

    def rest(path, status, word):
        r = signed(d, "GET", path)
        expect(r.status == status and word in r.body.decode("utf-8", "replace"),
               "GET %s: expected %d with %r, got %r" % (path, status, word, r))

    tap.case("(7) GET /v1/training-jobs/../logs is refused", rest,
             "/v1/training-jobs/%2E%2E/logs", 400, "ValidationException")
    tap.case("(7) GET /v1/training-jobs/a_b/logs (not a job name) is refused", rest,
             "/v1/training-jobs/a_b/logs", 400, "trainingJobName")
    tap.case("(8) GET /v1/training-jobs/%00 is refused, not a List", rest,
             "/v1/training-jobs/%00", 400, "ValidationException")
    tap.case("(8) GET /v1/training-jobs/x%00y is refused", rest,
             "/v1/training-jobs/x%00y", 400, "ValidationException")


def signed(d, method, path):
    host = "127.0.0.1:%d" % d.port
    p, _, q = path.partition("?")
    headers = sc.sigv4_sign(method, host, p, q, b"", sc.KEY, sc.SECRET)
    return sc.http_request(d.port, method, path, headers=headers)


def case_roots(tap, sm, root):
    data = os.path.join(root, "data")
    os.makedirs(data)
    with open(os.path.join(data, "part-0"), "w") as f:
        f.write("hello from the allowed root\n")
    os.symlink("/etc", os.path.join(root, "etc-link"))
    out = os.path.join(root, "out")
    req = request("sec-9", InputDataConfig=[channel("train", "file://" + data + "/")],
                  OutputDataConfig={"S3OutputPath": "file://" + out})
    req["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sh"
    req["AlgorithmSpecification"]["ContainerArguments"] = ["-c", 'cp -r "$SM_CHANNEL_TRAIN/." "$SM_MODEL_DIR/"']

    def run():
        sm.create_training_job(**req)
        d, _ = fl.wait_job(sm, "sec-9", fl.terminal, 60)
        expect(d["TrainingJobStatus"] == "Completed", "job ended %s: %s" % (
            d["TrainingJobStatus"], d.get("FailureReason")))
        model = os.path.join(out, "sec-9", "output", "model.tar.gz")
        expect(os.path.exists(model), "no %s" % model)
        with tarfile.open(model) as t:
            names = [os.path.normpath(n) for n in t.getnames()]
        expect("part-0" in names, "model holds %s" % names)

    tap.case("(9) file:// under --allow-file-root: the job Completes, model under the root", run)
    for n, (what, top) in enumerate([
            ("file:///etc", {"InputDataConfig": [channel("train", "file:///etc/")]}),
            ("ROOT/../..", {"InputDataConfig": [channel("train", "file://%s/../../etc/" % root)]}),
            ("a symlink in ROOT to /etc", {"InputDataConfig": [channel("train", "file://%s/etc-link/ssh/" % root)]}),
            ("S3OutputPath through the symlink", {"OutputDataConfig": {"S3OutputPath": "file://%s/etc-link/x" % root}}),
    ]):
        r = request("sec-10-%d" % n, **top)
        tap.case("(10) %s is refused" % what, refused, sm, r, "S3", what)
    r = request("sec-10-code", HyperParameters={"sagemaker_submit_directory": '"file:///etc/ssh/"'})
    tap.case("(10) sagemaker_submit_directory outside ROOT is refused", refused, sm, r,
             "sagemaker_submit_directory", "code")


def main():
    tap = sc.Tap()
    d = sc.Daemon(credentials=CREDS, name="trainctld-noroot")
    err = d.start()
    if tap.ok(err is None, "trainctld --credentials starts", err):
        sm = sc.make_client(d.endpoint)
        case_no_roots(tap, sm, d)
        rc, killed = d.stop()
        tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit %r" % rc)
    root = tempfile.mkdtemp(prefix="trainctl-sec-root-")
    d2 = sc.Daemon(credentials=CREDS, name="trainctld-roots",
                   extra=["--allow-file-root", root, "--local-hosts", "1"])
    err = d2.start()
    if tap.ok(err is None, "trainctld --allow-file-root ROOT --local-hosts 1 starts", err):
        sm = sc.make_client(d2.endpoint)
        deadline = time.time() + 30
        while time.time() < deadline:
            hosts = signed(d2, "GET", "/v1/hosts").json or {}
            if any(h.get("state") == "ready" for h in hosts.get("hosts", [])):
                break
            time.sleep(0.1)
        case_roots(tap, sm, root)
        rc, killed = d2.stop()
        tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit %r\n%s" % (rc, d2.log_tail()))
    if os.environ.get("TRAINCTL_TEST_KEEP") != "1":
        import shutil
        shutil.rmtree(root, ignore_errors=True)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
