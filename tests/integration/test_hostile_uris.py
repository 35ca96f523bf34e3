#!/usr/bin/python3
"""Locations a user key's jobs may not name, against a trainctld with an
admin key and two user keys, alice and bob, each confined to
s3://BUCKET/<user>/ (trainctl_s3_prefixes), and --allow-file-root ROOT.

  (w1) bob's CreateTrainingJob with TensorBoardOutputConfig,
      DebugHookConfig or ProfilerConfig S3OutputPath in alice's prefix or
      an admin-only prefix, or file:// outside ROOT, is refused with a 400
      ValidationException naming the member and the URI; no job is
      created and no object is written
  (w2) bob's tuning job whose second categorical value of
      sagemaker_submit_directory (or a static one) names alice's source
      tarball is refused at create; nothing is created
  (w3) the host-token path: the blob endpoint, with a host's token and
      X-Trainctl-Job naming bob's job, refuses to write alice's prefix or
      an admin-only object and to read alice's tarball (403, nothing
      written); naming no job it refuses too; within bob's prefix it works
      for the host that runs bob's job and for no other, and the token of
      bob's host naming an admin's job (run on the other host) reaches
      nothing
  (w4) bob's job with TensorBoard output in his own prefix is accepted
      and (as root, with a Unix user to run it as) runs to Completed, its
      model uploaded by the agent through the blob endpoint
  (w5) the training jobs of bob's tuning job are checked as bob when they
      are created: a tuning job accepted while bob's key reached
      s3://BUCKET/shared/ creates no training job there once the key no
      longer does (the controller is killed between the child's row and
      its create, TRAINCTLD_CRASH_POINT, and restarted with the narrower
      credentials); the tuning job fails naming the URI

  (w6) a ManifestFile channel names only its manifest; the manifest's
      "prefix" is checked by the agent against the locations of the job's
      owner, sent with each assignment: bob's manifest (in his prefix or
      under ROOT) whose prefix is alice's prefix (File and Pipe mode), a
      file:// folder outside ROOT, a symbolic link under ROOT to such a
      folder, or of another scheme than the manifest's, fails the job
      with a ClientError naming the channel, the manifest and the URI,
      and nothing of alice's (or of the host's files) reaches bob's model;
      manifests whose prefix is in bob's prefix, or under ROOT, stage and
      the jobs Complete with those objects
  (w7) the same against a trainctld with --s3-endpoint (another
      trainctld's store), where the agents reach S3 with the operator's
      key and no blob endpoint checks them: only the agent's check keeps
      alice's objects out
  (w6) and (w7) run bob's jobs, so they need root (a Unix user to run
  them as), as (w3) and (w4) do.

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_hostile_uris.py
BUILD names the build directory (default build).
"""
import json
import os
import shutil
import subprocess
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
B = fl.BUCKET

KEYS = {"admin": ("AKIDURISADMIN0000001", "admin/secret/uris/0123456789"),
        "alice": ("AKIDURISALICE000001", "alice/secret/uris/0123456789"),
        "bob": ("AKIDURISBOB00000001", "bob/secret/uris/0123456789")}
# This run's own users: a run beside it never removes them.
RUN_TAG = os.urandom(3).hex()
USERS = {"alice": "tctl-uri-alice-" + RUN_TAG, "bob": "tctl-uri-bob-" + RUN_TAG}


def creds_text(bob_extra=""):
    text = "[admin]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % KEYS["admin"]
    for who in ("alice", "bob"):
        prefixes = "%s/%s/" % (B, who)
        if who == "bob" and bob_extra:
            prefixes += ", " + bob_extra
        text += ("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\ntrainctl_user = %s\n"
                 "trainctl_s3_prefixes = %s\n\n" % ((who,) + KEYS[who] + (USERS[who], prefixes)))
    return text


def client(d, who):
    return sc.make_client(d.endpoint, key=KEYS[who][0], secret=KEYS[who][1])


def make_users():
    """None when both users exist (made here), else why not."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        return "not root or no useradd"
    for u in USERS.values():
        if subprocess.run(["id", u], capture_output=True).returncode == 0:
            continue
        r = subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                            "--shell", "/usr/sbin/nologin", u], capture_output=True)
        if r.returncode:
            return "useradd %s: %s" % (u, r.stderr.decode())
    return None


def drop_users():
    for u in USERS.values():
        subprocess.run(["userdel", u], capture_output=True)


def request(name, **top):
    req = fl.job_request(name, 1, checkpoint=False, max_runtime=60)
    req["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/true"
    req["OutputDataConfig"] = {"S3OutputPath": "s3://%s/bob/out" % B}
    req.update(top)
    return req


def obj(d, key):
    return os.path.join(d.state_dir, "s3", B, key)


def seed(d):
    """Objects the attacks aim at: an admin-only one and alice's code."""
    want = {"admin/secret.txt": b"admin only\n", "alice/code/src.tar.gz": b"alice's source\n"}
    for key, data in want.items():
        os.makedirs(os.path.dirname(obj(d, key)), exist_ok=True)
        with open(obj(d, key), "wb") as f:
            f.write(data)
    return want


def unchanged(d, want):
    for key, data in want.items():
        with open(obj(d, key), "rb") as f:
            expect(f.read() == data, "%s was changed" % key)


def files_under(d, prefix):
    top = obj(d, prefix)
    return [os.path.join(p, f) for p, _, fs in os.walk(top) for f in fs]


def job_names(admin):
    return [j["TrainingJobName"] for j in admin.list_training_jobs()["TrainingJobSummaries"]]


def case_members(d, root, want):
    bob, admin = client(d, "bob"), client(d, "admin")
    outside = tempfile.mkdtemp(prefix="trainctl-uris-outside-")
    cases = [
        ("TensorBoardOutputConfig.S3OutputPath", "s3://%s/alice/tb" % B,
         lambda u: {"TensorBoardOutputConfig": {"S3OutputPath": u}}),
        ("TensorBoardOutputConfig.S3OutputPath", "s3://%s/admin/tb" % B,
         lambda u: {"TensorBoardOutputConfig": {"S3OutputPath": u}}),
        ("TensorBoardOutputConfig.S3OutputPath", "file://" + outside,
         lambda u: {"TensorBoardOutputConfig": {"S3OutputPath": u}}),
        ("DebugHookConfig.S3OutputPath", "s3://%s/alice/dbg" % B,
         lambda u: {"DebugHookConfig": {"S3OutputPath": u}}),
        ("DebugHookConfig.S3OutputPath", "s3://%s/admin" % B,
         lambda u: {"DebugHookConfig": {"S3OutputPath": u}}),
        ("ProfilerConfig.S3OutputPath", "s3://%s/alice/prof" % B,
         lambda u: {"ProfilerConfig": {"S3OutputPath": u}}),
        ("ProfilerConfig.S3OutputPath", "file:///etc",
         lambda u: {"ProfilerConfig": {"S3OutputPath": u}}),
    ]
    for i, (member, uri, top) in enumerate(cases):
        name = "uris-w1-%d" % i
        what = "bob's %s %s" % (member, uri)
        _, msg, _ = sc.expect_error(lambda: bob.create_training_job(**request(name, **top(uri))),
                                    "ValidationException", status=400, contains=member,
                                    what=what + ": ")
        expect(uri.rstrip("/") in msg and "cannot be used" in msg, "%s: message %r" % (what, msg))
        expect(name not in job_names(admin), "%s: the job was created anyway" % what)
    time.sleep(1)
    for prefix in ("alice/tb", "admin/tb", "alice/dbg", "alice/prof"):
        expect(not files_under(d, prefix), "objects written under %s: %s" % (prefix, files_under(d, prefix)))
    expect(not os.listdir(outside), "files written to %s" % outside)
    unchanged(d, want)
    os.rmdir(outside)


def tuning_request(name, categorical=None, static=None):
    req = fl.tuning_request(name, "file:///bin/true", "s3://%s/bob/out" % B)
    ranges = req["HyperParameterTuningJobConfig"]["ParameterRanges"]
    if categorical:
        ranges["CategoricalParameterRanges"] = [
            {"Name": "sagemaker_submit_directory", "Values": categorical}]
    if static:
        req["TrainingJobDefinition"]["StaticHyperParameters"].update(static)
    return req


def tuning_names(admin):
    return [t["HyperParameterTuningJobName"] for t in
            admin.list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"]]


def case_tuning(d, want):
    bob, admin = client(d, "bob"), client(d, "admin")
    mine = json.dumps("s3://%s/bob/code/src.tar.gz" % B)
    theirs = "s3://%s/alice/code/src.tar.gz" % B
    for name, req in (("uris-w2-cat", tuning_request("uris-w2-cat", categorical=[mine, json.dumps(theirs)])),
                      ("uris-w2-cat3", tuning_request("uris-w2-cat3",
                                                      categorical=[mine, mine + " ", json.dumps(theirs)])),
                      ("uris-w2-static", tuning_request("uris-w2-static",
                                                        static={"sagemaker_submit_directory": theirs}))):
        _, msg, _ = sc.expect_error(lambda: bob.create_hyper_parameter_tuning_job(**req),
                                    "ValidationException", status=400,
                                    contains="sagemaker_submit_directory", what=name + ": ")
        expect(theirs in msg, "%s: message names no URI: %r" % (name, msg))
        expect(name not in tuning_names(admin), "%s: the tuning job was created anyway" % name)
    time.sleep(1)
    kids = [j for j in job_names(admin) if j.startswith("uris-w2")]
    expect(not kids, "training jobs created: %s" % kids)
    unchanged(d, want)


def token_of(d, host):
    return fl.sc.host_token(d.state_dir, host)


def sleeper(d, who, name):
    """who's job that sleeps; the local host it runs on."""
    sm = client(d, who)
    req = request(name)
    req["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sleep"
    req["AlgorithmSpecification"]["ContainerArguments"] = ["60"]
    req["OutputDataConfig"] = {"S3OutputPath": "s3://%s/%s/out" % (B, who)}
    sm.create_training_job(**req)
    fl.wait_job(sm, name, lambda x: x.get("SecondaryStatus") == "Training", 60)
    for host in ("local-1", "local-2"):
        jobs = os.path.join(d.state_dir, "hosts", host, "jobs")
        if os.path.isdir(jobs) and any(x == name or x.startswith(name + ".") for x in os.listdir(jobs)):
            return host
    raise sc.Fail("no host's work folder holds job %s" % name)


def case_blob(d, want, can_run):
    job = "uris-w3-bob"
    host = other = "local-1"
    if can_run:
        host = sleeper(d, "bob", job)
        other = "local-2" if host == "local-1" else "local-1"
    token = token_of(d, host)

    def send(method, key, headers, body=b""):
        h = {"Authorization": "Bearer " + token}
        h.update(headers)
        return sc.http_request(d.port, method, "/v1/blobs/%s/%s" % (B, key), body=body, headers=h)
    as_bob = {"X-Trainctl-Job": job}
    for key in ("alice/stolen.bin", "admin/secret.txt", "alice/code/src.tar.gz"):
        r = send("PUT", key, as_bob, b"written by bob's job")
        expect(r.status in (401, 403), "PUT %s for bob's job: %r" % (key, r))
        r = send("DELETE", key, as_bob)
        expect(r.status in (401, 403), "DELETE %s for bob's job: %r" % (key, r))
    r = send("GET", "alice/code/src.tar.gz", as_bob)
    expect(r.status in (401, 403) and b"alice's source" not in r.body, "GET alice's code for bob's job: %r" % r)
    r = sc.http_request(d.port, "GET", "/v1/blobs/%s?prefix=alice/" % B,
                        headers={"Authorization": "Bearer " + token, "X-Trainctl-Job": job})
    expect(r.status in (401, 403) and b"src.tar.gz" not in r.body, "listing alice's prefix: %r" % r)
    r = send("PUT", "alice/stolen2.bin", {"X-Trainctl-Fence": "%s/0000000000000000/1" % job}, b"x")
    expect(r.status in (401, 403, 409), "PUT into alice's prefix with a fence of bob's job: %r" % r)
    r = send("PUT", "alice/stolen3.bin", {}, b"x")
    expect(r.status in (401, 403), "PUT naming no job: %r" % r)
    r = send("PUT", "alice/stolen4.bin", {"X-Trainctl-Job": "no-such-job"}, b"x")
    expect(r.status in (401, 403), "PUT naming a job that does not exist: %r" % r)
    expect(not [f for f in files_under(d, "alice") if "stolen" in f], "objects written in alice's prefix")
    unchanged(d, want)
    if not can_run:
        return
    r = send("PUT", "bob/mine.bin", as_bob, b"bob's bytes")
    expect(r.status == 200 and open(obj(d, "bob/mine.bin"), "rb").read() == b"bob's bytes",
           "PUT within bob's prefix for bob's job: %r" % r)
    r = send("GET", "bob/mine.bin", as_bob)
    expect(r.status == 200 and r.body == b"bob's bytes", "GET within bob's prefix: %r" % r)
    r = sc.http_request(d.port, "PUT", "/v1/blobs/%s/bob/other.bin" % B, body=b"x",
                        headers={"Authorization": "Bearer " + token_of(d, other), "X-Trainctl-Job": job})
    expect(r.status in (401, 403) and not os.path.exists(obj(d, "bob/other.bin")),
           "PUT for bob's job with the token of %s, which does not run it: %r" % (other, r))
    admin_job = "uris-w3-admin"
    admin_host = sleeper(d, "admin", admin_job)
    expect(admin_host == other, "admin's job runs on %s, bob's on %s" % (admin_host, host))
    for method, body in (("PUT", b"overwritten"), ("GET", b""), ("DELETE", b"")):
        r = send(method, "admin/secret.txt", {"X-Trainctl-Job": admin_job}, body)
        expect(r.status in (401, 403) and b"admin only" not in r.body,
               "%s admin/secret.txt naming admin's job with the token of bob's host: %r" % (method, r))
    unchanged(d, want)
    for who, name in (("bob", job), ("admin", admin_job)):
        client(d, who).stop_training_job(TrainingJobName=name)


def case_allowed(d, can_run):
    bob = client(d, "bob")
    name = "uris-w4-bob"
    bob.create_training_job(**request(name, TensorBoardOutputConfig={
        "S3OutputPath": "s3://%s/bob/tb" % B}))
    if not can_run:
        return name
    desc, _ = fl.wait_job(bob, name, fl.terminal, 90)
    expect(desc["TrainingJobStatus"] == "Completed", "bob's job ended %s: %s" % (
        desc["TrainingJobStatus"], desc.get("FailureReason")))
    model = obj(d, "bob/out/%s/output/model.tar.gz" % name)
    expect(os.path.exists(model), "bob's model was not uploaded to %s" % model)
    return name


def copier(name, manifest, mode="File"):
    """bob's job whose program copies its channel into its model."""
    req = request(name)
    req["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sh"
    req["AlgorithmSpecification"]["TrainingInputMode"] = mode
    copy = 'cat "$SM_CHANNEL_TRAIN"_0 > "$SM_MODEL_DIR"/piped' if mode == "Pipe" else \
        'cp -r "$SM_CHANNEL_TRAIN"/. "$SM_MODEL_DIR"/'
    req["AlgorithmSpecification"]["ContainerArguments"] = ["-c", copy]
    req["InputDataConfig"] = [{"ChannelName": "train", "DataSource": {"S3DataSource": {
        "S3DataType": "ManifestFile", "S3Uri": manifest, "S3DataDistributionType": "FullyReplicated"}}}]
    return req


def model_bytes(d, name):
    """Every file of bob's model of job name, concatenated (b"" if none)."""
    path = obj(d, "bob/out/%s/output/model.tar.gz" % name)
    if not os.path.exists(path):
        return b""
    with tarfile.open(path) as t:
        return b"".join(t.extractfile(m).read() for m in t.getmembers() if m.isfile())


SECRET = b"alice's rows 0451\n"
MINE = b"bob's rows 1234\n"


def start_manifests(d, root):
    """bob's ManifestFile jobs, all created at once: (refused, good, outside),
    refused: (tag, job, manifest URI, URI refused), good: bob's own."""
    bob = client(d, "bob")
    for key in ("alice/data/a1.csv", "alice/data/sub/a2.csv"):
        os.makedirs(os.path.dirname(obj(d, key)), exist_ok=True)
        with open(obj(d, key), "wb") as f:
            f.write(SECRET)
    outside = tempfile.mkdtemp(prefix="trainctl-uris-host-")
    os.chmod(outside, 0o755)
    with open(os.path.join(outside, "host.csv"), "wb") as f:
        f.write(SECRET)
    os.chmod(os.path.join(outside, "host.csv"), 0o644)
    inside = os.path.join(root, "in")
    os.makedirs(inside, exist_ok=True)
    os.chmod(root, 0o755)
    os.chmod(inside, 0o755)
    os.symlink(outside, os.path.join(inside, "escape"))
    os.makedirs(os.path.dirname(obj(d, "bob/data/b1.csv")), exist_ok=True)
    with open(obj(d, "bob/data/b1.csv"), "wb") as f:
        f.write(MINE)
    with open(os.path.join(inside, "b2.csv"), "wb") as f:
        f.write(MINE)
    os.chmod(os.path.join(inside, "b2.csv"), 0o644)

    def manifest(key, prefix, keys):
        """Writes a manifest: key in bob's prefix, or a path under ROOT."""
        path = key if key.startswith("/") else obj(d, key)
        with open(path, "wb") as f:
            f.write(json.dumps([{"prefix": prefix}] + keys).encode())
        os.chmod(path, 0o644)
        return "file://" + key if key.startswith("/") else "s3://%s/%s" % (B, key)
    bad = [
        ("alice", manifest("bob/m-alice.json", "s3://%s/alice/data/" % B, ["a1.csv", "sub/a2.csv"]),
         "s3://%s/alice/data/a1.csv" % B, "File"),
        ("alice-pipe", manifest("bob/m-alice-p.json", "s3://%s/alice/data" % B, ["a1.csv"]),
         "s3://%s/alice/data/a1.csv" % B, "Pipe"),
        ("host", manifest(os.path.join(root, "m-host.json"), "file://" + outside + "/", ["host.csv"]),
         "file://%s/host.csv" % outside, "File"),
        ("link", manifest(os.path.join(root, "m-link.json"), "file://%s/escape" % inside, ["host.csv"]),
         "file://%s/escape/host.csv" % inside, "File"),
        ("scheme", manifest("bob/m-scheme.json", "file://" + inside + "/", ["b2.csv"]),
         "file://%s/b2.csv" % inside, "File"),
    ]
    refused = []
    for tag, uri, what, mode in bad:
        name = "uris-w6-%s" % tag
        bob.create_training_job(**copier(name, uri, mode))
        refused.append((tag, name, uri, what))
    good = ["uris-w6-bob", "uris-w6-bob-file"]
    bob.create_training_job(**copier(good[0], manifest("bob/m-bob.json", "s3://%s/bob/data/" % B, ["b1.csv"])))
    bob.create_training_job(**copier(good[1], manifest(os.path.join(root, "m-ok.json"), "file://" + inside,
                                                       ["b2.csv"])))
    return refused, good, outside


def case_manifest_refused(d, name, uri, refused):
    bob = client(d, "bob")
    desc, _ = fl.wait_job(bob, name, fl.terminal, 90)
    why = desc.get("FailureReason", "")
    what = "bob's job %s (manifest %s)" % (name, uri)
    expect(desc["TrainingJobStatus"] == "Failed", "%s ended %s: %s" % (what, desc["TrainingJobStatus"], why))
    expect(why.startswith("ClientError") and "channel 'train'" in why and uri in why and
           "refusing " + refused in why, "%s: FailureReason %r" % (what, why))
    expect(SECRET not in model_bytes(d, name), "%s: the other owner's bytes reached bob's model" % what)


def case_manifest_good(d, good):
    bob = client(d, "bob")
    for name in good:
        desc, _ = fl.wait_job(bob, name, fl.terminal, 90)
        expect(desc["TrainingJobStatus"] == "Completed", "%s, bob's own manifest: %s: %s" % (
            name, desc["TrainingJobStatus"], desc.get("FailureReason")))
        expect(MINE in model_bytes(d, name), "%s: bob's rows are not in his model" % name)


def case_endpoint(tap):
    """The same attack where the agent talks to S3 itself: a trainctld
    with --s3-endpoint naming another trainctld's store, whose operator
    key the local agents hold. No blob endpoint stands in the way, so only
    the agent's own check keeps alice's objects out of bob's job."""
    op = ("AKIDURISOPERATOR0001", "operator/secret/uris/0123456789")
    store = sc.Daemon(credentials={"operator": op}, name="trainctld-uris-store")
    err = store.start()
    if not tap.ok(err is None, "a trainctld serving S3 starts", err):
        return
    front = sc.Daemon(credentials=None, name="trainctld-uris-front", extra=["--local-hosts", "1"])
    os.makedirs(front.state_dir, exist_ok=True)
    os.chmod(front.tmp, 0o711)
    path = os.path.join(front.tmp, "credentials")
    with open(path, "w") as f:
        f.write(creds_text())
    front.extra += ["--credentials", path, "--s3-endpoint", store.endpoint]
    os.environ.update({"AWS_ACCESS_KEY_ID": op[0], "AWS_SECRET_ACCESS_KEY": op[1], "AWS_REGION": "us-east-1"})
    try:
        err = front.start()
    finally:
        for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
            del os.environ[k]
    if not tap.ok(err is None, "a trainctld with --s3-endpoint and the users' keys starts", err):
        store.stop()
        return

    def put(key, data):
        path = os.path.join(store.state_dir, "s3", B, key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)

    def model(name):
        path = os.path.join(store.state_dir, "s3", B, "bob/out/%s/output/model.tar.gz" % name)
        if not os.path.exists(path):
            return b""
        with tarfile.open(path) as t:
            return b"".join(t.extractfile(m).read() for m in t.getmembers() if m.isfile())
    put("alice/data/a1.csv", SECRET)
    put("bob/data/b1.csv", MINE)
    put("bob/m-alice.json", json.dumps([{"prefix": "s3://%s/alice/data/" % B}, "a1.csv"]).encode())
    put("bob/m-bob.json", json.dumps([{"prefix": "s3://%s/bob/data/" % B}, "b1.csv"]).encode())
    bob = client(front, "bob")
    bob.create_training_job(**copier("uris-w7-alice", "s3://%s/bob/m-alice.json" % B))
    bob.create_training_job(**copier("uris-w7-bob", "s3://%s/bob/m-bob.json" % B))

    def refused():
        desc, _ = fl.wait_job(bob, "uris-w7-alice", fl.terminal, 90)
        why = desc.get("FailureReason", "")
        expect(desc["TrainingJobStatus"] == "Failed" and why.startswith("ClientError") and
               "refusing s3://%s/alice/data/a1.csv" % B in why,
               "bob's job ended %s: %r" % (desc["TrainingJobStatus"], why))
        expect(SECRET not in model("uris-w7-alice"), "alice's rows reached bob's model")

    def allowed():
        desc, _ = fl.wait_job(bob, "uris-w7-bob", fl.terminal, 90)
        expect(desc["TrainingJobStatus"] == "Completed" and MINE in model("uris-w7-bob"),
               "bob's own manifest: %s: %s" % (desc["TrainingJobStatus"], desc.get("FailureReason")))
    tap.case("(w7) with --s3-endpoint, bob's manifest whose prefix is alice's fails his job, naming the URI",
             refused)
    tap.case("(w7) with --s3-endpoint, bob's manifest in his own prefix stages and Completes", allowed)
    front.stop()
    store.stop()


def case_children(tap):
    """A child of bob's tuning job is created as bob, not as a keyless
    caller: a prefix taken from bob's key between the tuning job's create
    and its child's refuses the child."""
    d = sc.Daemon(credentials=None, name="trainctld-uris-kids")
    os.makedirs(d.state_dir, exist_ok=True)
    path = os.path.join(d.tmp, "credentials-wide")
    with open(path, "w") as f:
        f.write(creds_text(bob_extra="%s/shared/" % B))
    d.extra = ["--credentials", path]
    os.environ["TRAINCTLD_CRASH_POINT"] = "tuning-row:1"
    try:
        err = d.start()
    finally:
        del os.environ["TRAINCTLD_CRASH_POINT"]
    if not tap.ok(err is None, "trainctld with bob's key reaching s3://%s/shared/ starts" % B, err):
        return

    def run():
        bob = client(d, "bob")
        req = tuning_request("uris-w5")
        req["TrainingJobDefinition"]["OutputDataConfig"]["S3OutputPath"] = "s3://%s/shared/out" % B
        bob.create_hyper_parameter_tuning_job(**req)
        deadline = time.time() + 20
        while time.time() < deadline and d.alive():
            time.sleep(0.05)
        expect(not d.alive(), "the controller did not stop at the child's row")
        d.stop()
        narrow = os.path.join(d.tmp, "credentials-narrow")
        with open(narrow, "w") as f:
            f.write(creds_text())
        d.extra = ["--credentials", narrow]
        err = d.start()
        expect(err is None, "restart: %s" % err)
        bob, admin = client(d, "bob"), client(d, "admin")
        deadline = time.time() + 30
        while time.time() < deadline:
            t = bob.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="uris-w5")
            if t["HyperParameterTuningJobStatus"] != "InProgress" or job_names(admin):
                break
            time.sleep(0.1)
        expect(not job_names(admin), "a training job was created: %s" % job_names(admin))
        expect(t["HyperParameterTuningJobStatus"] == "Failed" and
               "s3://%s/shared/out" % B in t.get("FailureReason", ""),
               "tuning job %s: %s" % (t["HyperParameterTuningJobStatus"], t.get("FailureReason")))
    tap.case("(w5) a tuning job's training jobs are checked as its owner when created", run)
    d.stop()


def main():
    tap = sc.Tap()
    why = make_users()
    root = tempfile.mkdtemp(prefix="trainctl-uris-root-")
    d = sc.Daemon(credentials=None, name="trainctld-uris", extra=["--local-hosts", "2"])
    try:
        os.makedirs(d.state_dir, exist_ok=True)
        os.chmod(d.tmp, 0o711)
        path = os.path.join(d.tmp, "credentials")
        with open(path, "w") as f:
            f.write(creds_text())
        d.extra += ["--credentials", path, "--allow-file-root", root]
        err = d.start()
        if tap.ok(err is None, "trainctld with an admin and two user keys starts", err):
            fl.sc.host_token(d.state_dir, "local-1")
            want = seed(d)
            tap.case("(w1) TensorBoard, Debugger and Profiler output outside bob's prefixes is refused",
                     case_members, d, root, want)
            tap.case("(w2) every categorical and static code URI of a tuning job is checked at create",
                     case_tuning, d, want)
            if why:
                tap.note("bob's job is not run: %s" % why)
            tap.case("(w4) bob's job with TensorBoard output in his prefix is accepted%s" %
                           ("" if why else " and runs"), case_allowed, d, why is None)
            tap.case("(w3) a host token for bob's job reaches only bob's prefixes, from bob's host",
                     case_blob, d, want, why is None)
            if why is None:
                refused, good, outside = start_manifests(d, root)
                says = {"alice": "alice's S3 prefix", "alice-pipe": "alice's S3 prefix, Pipe mode",
                        "host": "a file:// folder outside ROOT",
                        "link": "a symbolic link under ROOT to a folder outside it",
                        "scheme": "file:// in an s3:// manifest"}
                for tag, name, uri, what in refused:
                    tap.case("(w6) bob's manifest whose prefix is %s fails his job, naming the URI" % says[tag],
                             case_manifest_refused, d, name, uri, what)
                tap.case("(w6) bob's manifests within his own locations stage and Complete",
                         case_manifest_good, d, good)
                shutil.rmtree(outside, ignore_errors=True)
            rc, killed = d.stop()
            tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit %r\n%s" % (rc, d.log_tail()))
        case_children(tap)
        if why is None:
            case_endpoint(tap)
    finally:
        d.stop()
        shutil.rmtree(root, ignore_errors=True)
        if why is None:
            drop_users()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
