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
Users (root only: two Unix users tctl-alice-X and tctl-bob-X are created for
the test and removed after it), a controller with an admin key and one
key per user, two local hosts:
  (u1) each user's job runs with that user's uid and groups (checked from
      inside the job: `id` into the model)
  (u2) alice's job cannot read bob's job folder, the agent's environment
      (its token) or the controller's state
  (u3) alice lists only her job; Describe, Stop, Delete, tags and the logs
      of bob's job answer as for a job that does not exist; admin lists both
  (u4) each user key reaches only s3://BUCKET/<user>/ (trainctl_s3_prefixes):
      a job of alice naming bob's output is refused, `trainctl cp` of her
      model works and of bob's model or a listing of the bucket does not
  (s) after that run, no secret key and no host token appears in the
      controller's or the agents' logs, the database, the job logs or the
      store (only in the credentials file and the 0600 token files)
On the 3-host namespace cluster (root only): `cluster.sh up --tls
--add-credentials` with the two users' keys, agents provisioned over SSH:
  (n1) alice's 2-host job and bob's job run with their uids on every host
      (id from inside each rank), over HTTPS with the generated CA
  (n2) neither user sees, describes or stops the other's job; admin (the
      cluster's own key) sees both; trainctl and the aws CLI work over HTTPS
      with AWS_CA_BUNDLE, the generated CA
TLS (a CA and a certificate for 127.0.0.1 made with openssl), a controller
with --tls-cert/--tls-key/--tls-ca, credentials and one local host:
  (t1) boto3, trainctl and the aws CLI over HTTPS with the CA; without it
      each refuses the certificate
  (t2) a job runs to Completed: its agent reached the controller over
      HTTPS with the pinned CA
  (t3) an agent given another CA refuses the controller
  (t4) HTTP Basic to the page over plain HTTP from a non-loopback address
      (one the test adds to lo) is refused, on loopback accepted

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_security.py
BUILD names the build directory (default build); TRAINCTL_TEST_KEEP=1
keeps the temp dirs.
"""
import json
import os
import shutil
import sqlite3
import stat
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
        # The controller's umask (077) must not hide a user's own output.
        modes = ["%s %o" % (p, os.stat(p).st_mode & 0o777)
                 for p in (out, os.path.dirname(model), model)]
        expect(all(m.endswith(" 755") or m.endswith(" 644") for m in modes), "output modes: %s" % modes)

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


# This run's own users (a random suffix): another run never shares them,
# and drop_users removes only those make_users made.
USERS = tuple("tctl-%s-%s" % (n, os.urandom(3).hex()) for n in ("alice", "bob"))
MADE_USERS = []


def make_users():
    """None when the users exist (made by us), else why not."""
    if os.geteuid() != 0:
        return "not root"
    import shutil
    if not shutil.which("useradd"):
        return "no useradd"
    made = []
    for u in USERS:
        if subprocess.run(["id", u], capture_output=True).returncode == 0:
            continue
        r = subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                            "--shell", "/usr/sbin/nologin", u], capture_output=True)
        if r.returncode:
            return "useradd %s: %s" % (u, r.stderr.decode())
        made.append(u)
        MADE_USERS.append(u)
    return None


def drop_users():
    while MADE_USERS:
        subprocess.run(["userdel", MADE_USERS.pop()], capture_output=True)


USER_SCRIPT = r"""
set -u
out="$SM_MODEL_DIR"
id -u > "$out/uid"; id -g > "$out/gid"
if [ "$ROLE" = reader ]; then
  sleep 1
  for f in $(ls -d "$STATE"/hosts/local-1/jobs/sec-u-bob*/*/algo-1/model \
             "$STATE"/hosts/local-2/jobs/sec-u-bob*/*/algo-1/model 2>/dev/null) ""; do
    [ -n "$f" ] || continue
    if cat "$f/secret" >/dev/null 2>&1; then echo read > "$out/bob"; else echo denied > "$out/bob"; fi
  done
  for p in $(pgrep -f 'trainagent' || true); do
    if cat /proc/$p/environ >/dev/null 2>&1; then echo read >> "$out/environ"; else echo denied >> "$out/environ"; fi
  done
  if cat "$STATE"/hosts/local-1/token >/dev/null 2>&1 || cat "$STATE"/hosts/local-2/token >/dev/null 2>&1 ||
     cat "$STATE"/trainctl.db >/dev/null 2>&1 || cat "$STATE"/trainctl.db-wal >/dev/null 2>&1; then
    echo read > "$out/token"; else echo denied > "$out/token"; fi
else
  echo bob-secret > "$out/secret"
  sleep 6
fi
"""


def case_users(tap, d, state):
    creds = {k: sc.make_client(d.endpoint, key=v[0], secret=v[1]) for k, v in USER_KEYS.items()}
    admin, alice, bob = creds["admin"], creds["alice"], creds["bob"]

    script = os.path.join(d.tmp, "user_job.sh")
    with open(script, "w") as f:
        f.write(USER_SCRIPT)
    os.chmod(script, 0o755)

    def req(name, role):
        who = "alice" if "alice" in name else "bob"
        r = request(name, Environment={"ROLE": role, "STATE": state},
                    OutputDataConfig={"S3OutputPath": out_of(who)})
        r["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sh"
        r["AlgorithmSpecification"]["ContainerArguments"] = [script]
        return r

    bob.create_training_job(**req("sec-u-bob", "writer"))
    fl.wait_job(bob, "sec-u-bob", fl.running, 60)
    alice.create_training_job(**req("sec-u-alice", "reader"))

    def access():
        isolated(alice, bob, admin, "sec-u-alice", "sec-u-bob")
        r = sc.amz_json(d.port, "DeleteTrainingJob", {"TrainingJobName": "sec-u-bob"},
                        auth=USER_KEYS["alice"])
        expect(r.status == 400 and b"ResourceNotFound" in r.body, "alice deletes bob's job: %r" % r)
        admin.describe_training_job(TrainingJobName="sec-u-alice")
        r = signed_as(d, "GET", "/v1/training-jobs/sec-u-bob/logs", USER_KEYS["alice"])
        expect(r.status == 400 and b"Requested resource not found" in r.body,
               "alice's REST logs of bob's job: %r" % r)
        r = signed_as(d, "GET", "/v1/hosts", USER_KEYS["alice"])
        expect(r.status == 200 and b"sec-u-bob" not in r.body, "alice's hosts list names bob's job: %r" % r)
        r = signed_as(d, "GET", "/v1/hosts", USER_KEYS["bob"])
        expect(r.status == 200 and b"sec-u-bob" in r.body, "bob's hosts list lacks his job: %r" % r)
        found = [x["TrainingJob"]["TrainingJobName"]
                 for x in alice.search(Resource="TrainingJob", MaxResults=100)["Results"]]
        expect("sec-u-alice" in found and "sec-u-bob" not in found, "alice's Search: %r" % found)
        found = [x["TrainingJob"]["TrainingJobName"]
                 for x in admin.search(Resource="TrainingJob", MaxResults=100)["Results"]]
        expect("sec-u-alice" in found and "sec-u-bob" in found, "admin's Search: %r" % found)
        bob_arn = bob.describe_training_job(TrainingJobName="sec-u-bob")["TrainingJobArn"]
        sc.expect_error(lambda: alice.list_tags(ResourceArn=bob_arn), "ValidationException",
                        what="alice lists the tags of bob's job: ")
        sc.expect_error(lambda: alice.add_tags(ResourceArn=bob_arn, Tags=[{"Key": "k", "Value": "v"}]),
                        "ValidationException", what="alice tags bob's job: ")
        r = signed_as(d, "GET", "/v1/ui/jobs", USER_KEYS["alice"])
        names = [j.get("name") for j in (r.json or {}).get("jobs", [])]
        expect(r.status == 200 and "sec-u-bob" not in str(r.body), "alice's page list: %r" % r)
        del names
    tap.case("(u3) a user sees and acts on only its own jobs; admin sees both", access)

    def tuning():
        """A user's tuning job, and the training jobs it launches, are its
        user's only."""
        # A copy the users can reach (the tree may be under a 0700 folder).
        trainer = os.path.join(d.tmp, "tune_trainer.py")
        shutil.copy(os.path.join(fl.HERE, "tune_trainer.py"), trainer)
        os.chmod(trainer, 0o755)
        req = fl.tuning_request("sec-tune-alice", "file://" + trainer, out_of("alice"), jobs=2,
                                epochs="2")
        bad = json.loads(json.dumps(req))
        bad["HyperParameterTuningJobName"] = "sec-tune-out"
        bad["TrainingJobDefinition"]["OutputDataConfig"]["S3OutputPath"] = out_of("bob")
        sc.expect_error(lambda: alice.create_hyper_parameter_tuning_job(**bad), "ValidationException",
                        contains="S3OutputPath", what="alice's tuning job writing to bob's prefix: ")
        arn = alice.create_hyper_parameter_tuning_job(**req)["HyperParameterTuningJobArn"]
        sc.expect_error(lambda: bob.describe_hyper_parameter_tuning_job(
            HyperParameterTuningJobName="sec-tune-alice"), "ResourceNotFound", what="bob describes it: ")
        sc.expect_error(lambda: bob.stop_hyper_parameter_tuning_job(
            HyperParameterTuningJobName="sec-tune-alice"), "ResourceNotFound", what="bob stops it: ")
        sc.expect_error(lambda: bob.list_tags(ResourceArn=arn), "ValidationException", what="bob's ListTags: ")
        listed = [t["HyperParameterTuningJobName"] for t in
                  bob.list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"]]
        expect("sec-tune-alice" not in listed, "bob lists %s" % listed)
        listed = [t["HyperParameterTuningJobName"] for t in
                  admin.list_hyper_parameter_tuning_jobs()["HyperParameterTuningJobSummaries"]]
        expect("sec-tune-alice" in listed, "admin lists %s" % listed)
        deadline = time.time() + 90
        while time.time() < deadline:
            desc = alice.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="sec-tune-alice")
            if desc["HyperParameterTuningJobStatus"] != "InProgress":
                break
            time.sleep(0.2)
        expect(desc["HyperParameterTuningJobStatus"] == "Completed", "ended %s: %s" % (
            desc["HyperParameterTuningJobStatus"], desc.get("FailureReason")))
        kid = desc["BestTrainingJob"]["TrainingJobName"]
        sc.expect_error(lambda: bob.describe_training_job(TrainingJobName=kid), "ValidationException",
                        what="bob describes alice's tuning job's training job: ")
        alice.describe_training_job(TrainingJobName=kid)
    tap.case("(u5) a user's tuning job and its training jobs are that user's only", tuning)

    def ran_as():
        for c, name, user in ((alice, "sec-u-alice", USERS[0]), (bob, "sec-u-bob", USERS[1])):
            dj, _ = fl.wait_job(c, name, fl.terminal, 90)
            expect(dj["TrainingJobStatus"] == "Completed", "%s ended %s: %s" % (
                name, dj["TrainingJobStatus"], dj.get("FailureReason")))
        got = {}
        for name in ("sec-u-alice", "sec-u-bob"):
            who = "alice" if "alice" in name else "bob"
            path = os.path.join(state, "s3", fl.BUCKET, who, "out", name, "output", "model.tar.gz")
            with tarfile.open(path) as t:
                got[name] = {os.path.normpath(m.name): t.extractfile(m).read().decode().strip()
                             for m in t.getmembers() if m.isfile()}
        import pwd
        for name, user in (("sec-u-alice", USERS[0]), ("sec-u-bob", USERS[1])):
            pw = pwd.getpwnam(user)
            expect(got[name].get("uid") == str(pw.pw_uid) and got[name].get("gid") == str(pw.pw_gid),
                   "%s ran as %s/%s, want %s/%s" % (name, got[name].get("uid"), got[name].get("gid"),
                                                  pw.pw_uid, pw.pw_gid))
        return got

    got = tap.case("(u1) each user's ranks run with its uid and gid", ran_as)

    def prefixes():
        r = request("sec-u-steal", InputDataConfig=[channel("train", out_of("bob") + "/sec-u-bob/")],
                    OutputDataConfig={"S3OutputPath": out_of("alice")})
        sc.expect_error(lambda: alice.create_training_job(**r), "ValidationException",
                        contains="trainctl_s3_prefixes", what="alice's job reading bob's output: ")
        r = request("sec-u-steal2", OutputDataConfig={"S3OutputPath": "s3://%s/out" % fl.BUCKET})
        sc.expect_error(lambda: alice.create_training_job(**r), "ValidationException",
                        contains="trainctl_s3_prefixes", what="alice's job writing outside her prefix: ")
        env = dict(os.environ, AWS_ACCESS_KEY_ID=USER_KEYS["alice"][0],
                   AWS_SECRET_ACCESS_KEY=USER_KEYS["alice"][1], TRAINCTL_ENDPOINT=d.endpoint)
        dst = os.path.join(d.tmp, "got.tar.gz")
        mine = subprocess.run([fl.TRAINCTL, "cp", out_of("alice") + "/sec-u-alice/output/model.tar.gz", dst],
                              capture_output=True, env=env)
        expect(mine.returncode == 0 and os.path.getsize(dst) > 0,
               "alice cannot fetch her own model: %s" % mine.stderr.decode()[-300:])
        theirs = subprocess.run([fl.TRAINCTL, "cp", out_of("bob") + "/sec-u-bob/output/model.tar.gz", dst + "2"],
                                capture_output=True, env=env)
        expect(theirs.returncode != 0 and not os.path.exists(dst + "2"),
               "alice fetched bob's model through the blob endpoint: exit %d" % theirs.returncode)
        ls = subprocess.run([fl.TRAINCTL, "ls", "s3://%s/" % fl.BUCKET], capture_output=True, env=env)
        expect(ls.returncode != 0, "alice listed the whole bucket: %s" % ls.stdout.decode()[-300:])
    tap.case("(u4) a user key's jobs and blob requests stay within its S3 prefixes", prefixes)
    a = (got or {}).get("sec-u-alice", {}) if isinstance(got, dict) else {}
    tap.ok(a.get("bob") == "denied", "(u2) alice's job cannot read bob's job folder", a)
    tap.ok(a.get("environ") and "read" not in a.get("environ"),
           "(u2) alice's job cannot read an agent's environment (its token)", a)
    tap.ok(a.get("token") == "denied", "(u2) alice's job cannot read the hosts' tokens", a)


def signed_as(d, method, path, key):
    host = "127.0.0.1:%d" % d.port
    p, _, q = path.partition("?")
    headers = sc.sigv4_sign(method, host, p, q, b"", key[0], key[1])
    return sc.http_request(d.port, method, path, headers=headers)


USER_KEYS = {"admin": ("AKIDSECADMIN00000001", "admin/secret/0123456789"),
             "alice": ("AKIDSECALICE00000001", "alice/secret/0123456789"),
             "bob": ("AKIDSECBOB0000000001", "bob/secret/0123456789")}


def no_secrets(d, creds_path):
    secrets = [v[1] for v in USER_KEYS.values()]
    # The hosts' tokens and the rendezvous key are kept in the store
    # (db/secrets.h), the one place they may be.
    store = os.path.join(d.state_dir, "trainctl.db")
    con = sqlite3.connect("file:%s?mode=ro" % store, uri=True)
    try:
        rows = con.execute("SELECT name, value FROM secrets ORDER BY name").fetchall()
    finally:
        con.close()
    secrets += [v for n, v in rows if n in ("host-token/local-1", "host-token/local-2",
                                            "rendezvous-key")]
    expect(len(secrets) == 6, "expected 3 secrets, 2 tokens and a key, have %d" % len(secrets))
    where = []
    for top, _, files in os.walk(d.tmp):
        for f in files:
            path = os.path.join(top, f)
            # Regular files only: a rank's output FIFO left in a job
            # folder would block the open until a writer came.
            if path == creds_path or f == "token" or f.startswith("trainctl.db") or \
                    not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            try:
                data = open(path, "rb").read()
            except OSError:
                continue
            where += ["%s holds secret %d" % (path, i) for i, sec in enumerate(secrets)
                      if sec.encode() in data]
    expect(not where, "; ".join(where))


def isolated(alice, bob, admin, a_job, b_job):
    """Each user lists only its job, admin both; the other's is not there."""
    def listed(c):
        return sorted(j["TrainingJobName"] for j in c.list_training_jobs()["TrainingJobSummaries"])
    expect(listed(alice) == [a_job], "alice lists %s" % listed(alice))
    expect(listed(bob) == [b_job], "bob lists %s" % listed(bob))
    expect(listed(admin) == [a_job, b_job], "admin lists %s" % listed(admin))
    for who, c, job in (("alice", alice, b_job), ("bob", bob, a_job)):
        sc.expect_error(lambda: c.describe_training_job(TrainingJobName=job), "ValidationException",
                        what="%s describes %s: " % (who, job))
        sc.expect_error(lambda: c.stop_training_job(TrainingJobName=job), "ValidationException",
                        what="%s stops %s: " % (who, job))


def user_profile(who, user):
    """A user key whose jobs run as user and reach s3://BUCKET/<who>/ only."""
    return ("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\ntrainctl_user = %s\n"
            "trainctl_s3_prefixes = %s/%s/\n\n" % ((who,) + USER_KEYS[who] + (user, fl.BUCKET, who)))


def out_of(who):
    return "s3://%s/%s/out" % (fl.BUCKET, who)


def users(tap):
    why = make_users()
    if why:
        tap.skip("two users' jobs", why)
        return
    try:
        d = sc.Daemon(credentials=None, name="trainctld-users", extra=["--local-hosts", "2"])
        os.makedirs(d.state_dir, exist_ok=True)
        os.chmod(d.tmp, 0o711)
        path = os.path.join(d.tmp, "users-credentials")
        with open(path, "w") as f:
            f.write("[admin]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % USER_KEYS["admin"])
            for who, user in (("alice", USERS[0]), ("bob", USERS[1])):
                f.write(user_profile(who, user))
        d.extra += ["--credentials", path]
        err = d.start()
        if tap.ok(err is None, "trainctld with an admin and two user keys starts", err):
            admin = sc.make_client(d.endpoint, key=USER_KEYS["admin"][0], secret=USER_KEYS["admin"][1])
            deadline = time.time() + 30
            while time.time() < deadline:
                hosts = signed_as(d, "GET", "/v1/hosts", USER_KEYS["admin"]).json or {}
                if sum(h.get("state") == "ready" for h in hosts.get("hosts", [])) >= 2:
                    break
                time.sleep(0.1)
            del admin
            case_users(tap, d, d.state_dir)
            rc, killed = d.stop()
            tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit %r\n%s" % (rc, d.log_tail()))
            tap.case("(s) no secret key or host token in any log, the database or the store",
                     no_secrets, d, path)
    finally:
        drop_users()


def openssl(*args):
    r = subprocess.run(["openssl"] + list(args), capture_output=True)
    expect(r.returncode == 0, "openssl %s: %s" % (" ".join(args), r.stderr.decode()[-400:]))


def make_ca(dirpath, name):
    """A CA and a server certificate for 127.0.0.1 signed by it."""
    ca, ca_key = os.path.join(dirpath, name + "-ca.pem"), os.path.join(dirpath, name + "-ca.key")
    crt, key = os.path.join(dirpath, name + ".pem"), os.path.join(dirpath, name + ".key")
    csr, ext = os.path.join(dirpath, name + ".csr"), os.path.join(dirpath, name + ".ext")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca, "-days", "2",
            "-subj", "/CN=trainctl test CA " + name)
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", crt,
            "-days", "2", "-extfile", ext)
    return ca, crt, key


def tls(tap):
    import shutil
    if not shutil.which("openssl"):
        tap.skip("TLS", "no openssl")
        return
    tmp = tempfile.mkdtemp(prefix="trainctl-sec-tls-")
    os.chmod(tmp, 0o755)
    try:
        ca, crt, key = make_ca(tmp, "good")
        other_ca, _, _ = make_ca(tmp, "other")
    except sc.Fail as e:
        tap.ok(False, "openssl makes a CA and a certificate", str(e))
        return
    d = sc.Daemon(credentials=CREDS, name="trainctld-tls",
                  extra=["--tls-cert", crt, "--tls-key", key, "--tls-ca", ca, "--local-hosts", "1"])
    err = d.start()
    if not tap.ok(err is None, "trainctld --tls-cert --tls-key --tls-ca starts", err):
        return
    url = "https://127.0.0.1:%d" % d.port

    def boto(verify):
        import boto3
        import botocore.config
        cfg = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"})
        return boto3.session.Session(aws_access_key_id=sc.KEY, aws_secret_access_key=sc.SECRET,
                                     region_name=sc.REGION).client("sagemaker", endpoint_url=url,
                                                                   verify=verify, config=cfg)

    def t1():
        sm = boto(ca)
        sm.list_training_jobs()
        try:
            boto(True).list_training_jobs()
            raise sc.Fail("boto3 without the CA accepted the certificate")
        except sc.Fail:
            raise
        except Exception as e:
            expect("SSL" in type(e).__name__ or "certificate" in str(e), "boto3 without the CA: %r" % e)
        env = dict(os.environ, AWS_ACCESS_KEY_ID=sc.KEY, AWS_SECRET_ACCESS_KEY=sc.SECRET)
        r = subprocess.run([fl.TRAINCTL, "--endpoint", url, "--ca-bundle", ca, "list-training-jobs"],
                           capture_output=True, env=env)
        expect(r.returncode == 0, "trainctl --ca-bundle: exit %d %s" % (r.returncode, r.stderr.decode()))
        r = subprocess.run([fl.TRAINCTL, "--endpoint", url, "list-training-jobs"], capture_output=True, env=env)
        expect(r.returncode == 2, "trainctl without the CA: exit %d %s" % (r.returncode, r.stderr.decode()))
        if shutil.which("aws"):
            env2 = dict(env, AWS_DEFAULT_REGION=sc.REGION, AWS_CONFIG_FILE="/dev/null",
                        AWS_SHARED_CREDENTIALS_FILE="/dev/null")
            r = subprocess.run(["aws", "--endpoint-url", url, "--ca-bundle", ca, "sagemaker",
                                "list-training-jobs"], capture_output=True, env=env2)
            expect(r.returncode == 0, "aws --ca-bundle: exit %d %s" % (r.returncode, r.stderr.decode()[-400:]))
            r = subprocess.run(["aws", "--endpoint-url", url, "sagemaker", "list-training-jobs"],
                               capture_output=True, env=env2)
            expect(r.returncode != 0 and b"SSL" in r.stderr, "aws without the CA: exit %d %s" % (
                r.returncode, r.stderr.decode()[-400:]))
    tap.case("(t1) boto3, trainctl and the aws CLI over HTTPS with the CA; refused without", t1)

    def t2():
        sm = boto(ca)
        sm.create_training_job(**request("sec-tls-1"))
        dj, _ = fl.wait_job(sm, "sec-tls-1", fl.terminal, 60)
        expect(dj["TrainingJobStatus"] == "Completed", "job ended %s: %s\n%s" % (
            dj["TrainingJobStatus"], dj.get("FailureReason"), d.log_tail()))
    tap.case("(t2) a job Completes: its agent talks HTTPS with the pinned CA", t2)

    def t3():
        work = os.path.join(tmp, "rogue-agent")
        os.makedirs(work)
        log = open(os.path.join(work, "agent.log"), "wb")
        p = subprocess.Popen([fl.TRAINAGENT, "--controller", url, "--host", "rogue", "--work-dir", work,
                              "--address", "127.0.0.1", "--ca-file", other_ca],
                             env=dict(os.environ, TRAINCTL_AGENT_TOKEN="x" * 32), stdout=log, stderr=log)
        try:
            deadline = time.time() + 20
            text = ""
            while time.time() < deadline:
                with open(os.path.join(work, "agent.log"), "rb") as f:
                    text = f.read().decode("utf-8", "replace")
                if "certificate" in text.lower() or "SSL" in text:
                    break
                time.sleep(0.2)
            expect("certificate" in text.lower() or "SSL" in text,
                   "the agent with another CA did not refuse the controller:\n%s" % text[-1500:])
        finally:
            p.kill()
            p.wait()
            log.close()
    tap.case("(t3) an agent given another CA refuses the controller's certificate", t3)
    rc, killed = d.stop()
    tap.ok(rc == 0 and not killed, "trainctld (TLS) exits 0 on SIGTERM", "exit %r\n%s" % (rc, d.log_tail()))
    basic_over_http(tap)
    if os.environ.get("TRAINCTL_TEST_KEEP") != "1":
        shutil.rmtree(tmp, ignore_errors=True)


# An address of the test's own on lo, outside 127/8: a peer that is not
# loopback as far as the controller can tell.
DUMMY_ADDR = sc.free_net(250, 254) + ".1"  # this run's own (nothing uses its /24)


def basic_over_http(tap):
    import base64
    if os.geteuid() != 0:
        tap.skip("(t4) Basic over plain HTTP", "not root")
        return
    r = subprocess.run(["ip", "addr", "add", DUMMY_ADDR + "/32", "dev", "lo"], capture_output=True)
    if r.returncode:
        tap.skip("(t4) Basic over plain HTTP", "cannot add an address: %s" % r.stderr.decode())
        return
    try:
        # Daemon gives --listen 127.0.0.1:P too; the later one wins.
        port = sc.free_port()
        d = sc.Daemon(credentials=CREDS, name="trainctld-basic", extra=["--listen", "0.0.0.0:%d" % port])
        d.want_port = port
        err = d.start()
        if not tap.ok(err is None, "trainctld --listen 0.0.0.0 with credentials starts", err):
            return
        time.sleep(0.3)
        auth = "Basic " + base64.b64encode(("%s:%s" % (sc.KEY, sc.SECRET)).encode()).decode()

        def get(addr):
            import http.client
            c = http.client.HTTPConnection(addr, port, timeout=10)
            c.request("GET", "/v1/ui/jobs", headers={"Authorization": auth})
            resp = c.getresponse()
            return resp.status, resp.read()

        def t4():
            st, body = get(DUMMY_ADDR)
            expect(st == 403 and b"plain HTTP" in body, "Basic from %s: %s %r" % (DUMMY_ADDR, st, body[:200]))
            st, body = get("127.0.0.1")
            expect(st == 200, "Basic on loopback: %s %r" % (st, body[:200]))
            log = open(d.log_path, "rb").read().decode("utf-8", "replace")
            expect("WARNING: credentials without TLS" in log, "no warning at start:\n%s" % log[-800:])
        tap.case("(t4) HTTP Basic over plain HTTP: refused from another address, fine on loopback; "
                 "a warning at start", t4)
        d.stop()
    finally:
        subprocess.run(["ip", "addr", "del", DUMMY_ADDR + "/32", "dev", "lo"], capture_output=True)


NS_PREFIX, NS_NET, NS_PORT = sc.run_names("se")  # this run's own

NS_SCRIPT = r"""
set -u
id -u > "$SM_MODEL_DIR/uid.$SM_CURRENT_HOST"
id -u > "$SM_OUTPUT_DATA_DIR/uid.$SM_CURRENT_HOST"
sleep 2
"""


def ns_users(tap):
    why = fl.ns_skip_reason() or make_users()
    if why:
        tap.skip("two users on the namespace cluster", why)
        return
    import shutil
    tmp = tempfile.mkdtemp(prefix="trainctl-sec-ns-")
    os.chmod(tmp, 0o755)
    creds = os.path.join(tmp, "users")
    with open(creds, "w") as f:
        for who, user in (("alice", USERS[0]), ("bob", USERS[1])):
            f.write(user_profile(who, user))
    script = os.path.join(tmp, "job.sh")
    with open(script, "w") as f:
        f.write(NS_SCRIPT)
    os.chmod(script, 0o755)
    ns = fl.NsCluster(NS_PREFIX, NS_NET, NS_PORT, up_args=["--tls", "--add-credentials", creds])
    try:
        err = ns.up()
        if not tap.ok(err is None, "cluster.sh up --tls --add-credentials: 3 hosts over SSH", err):
            return
        ca = ns.env.get("AWS_CA_BUNDLE")
        tap.ok(ns.endpoint.startswith("https://") and ca and os.path.exists(ca),
               "the cluster serves HTTPS and exports AWS_CA_BUNDLE", ns.env)
        os.environ["AWS_CA_BUNDLE"] = ca or ""
        admin = sc.make_client(ns.endpoint, key=ns.key, secret=ns.secret)
        alice = sc.make_client(ns.endpoint, key=USER_KEYS["alice"][0], secret=USER_KEYS["alice"][1])
        bob = sc.make_client(ns.endpoint, key=USER_KEYS["bob"][0], secret=USER_KEYS["bob"][1])

        def req(name, count):
            r = fl.job_request(name, count, checkpoint=False, max_runtime=120, itype="ml.c5.xlarge")
            r["OutputDataConfig"] = {"S3OutputPath": out_of("alice" if "alice" in name else "bob")}
            r["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sh"
            r["AlgorithmSpecification"]["ContainerArguments"] = [script]
            return r

        def n1():
            alice.create_training_job(**req("sec-ns-alice", 2))
            bob.create_training_job(**req("sec-ns-bob", 1))
            import pwd
            for c, name, user, n in ((alice, "sec-ns-alice", USERS[0], 2), (bob, "sec-ns-bob", USERS[1], 1)):
                dj, _ = fl.wait_job(c, name, fl.terminal, 120)
                expect(dj["TrainingJobStatus"] == "Completed", "%s ended %s: %s\n%s" % (
                    name, dj["TrainingJobStatus"], dj.get("FailureReason"), ns.log_tail(15)))
                want = str(pwd.getpwnam(user).pw_uid)
                path = ns.s3_path("%s/%s/output/output.tar.gz" % (out_of("alice" if "alice" in name else "bob"),
                                                                  name))
                with tarfile.open(path) as t:
                    got = {os.path.basename(m.name): t.extractfile(m).read().decode().strip()
                           for m in t.getmembers() if m.isfile()}
                # output.tar.gz is algo-1's (every host's rank wrote its own).
                expect(got.get("uid.algo-1") == want, "%s: rank ran as %s, want %s" % (name, got, want))
            crashed = []
            for k in range(1, 4):
                log = os.path.join(ns.state, "hosts", "node%d" % k, "work", "agent.log")
                text = open(log, "rb").read().decode("utf-8", "replace") if os.path.exists(log) else ""
                crashed += ["node%d: %s" % (k, ln) for ln in text.splitlines()
                            if "free():" in ln or "Sanitizer" in ln or "core dumped" in ln]
            expect(not crashed, "an agent or its worker crashed: %s" % crashed)
        tap.case("(n1) each user's job runs with its uid on the cluster, over HTTPS", n1)

        def n2():
            isolated(alice, bob, admin, "sec-ns-alice", "sec-ns-bob")
            env = dict(os.environ, AWS_ACCESS_KEY_ID=USER_KEYS["alice"][0],
                       AWS_SECRET_ACCESS_KEY=USER_KEYS["alice"][1], AWS_CA_BUNDLE=ca)
            r = subprocess.run([fl.TRAINCTL, "--endpoint", ns.endpoint, "--output", "json", "list-training-jobs"],
                               capture_output=True, env=env)
            expect(r.returncode == 0 and b"sec-ns-alice" in r.stdout and b"sec-ns-bob" not in r.stdout,
                   "trainctl (alice) over HTTPS: exit %d %s %s" % (r.returncode, r.stdout[-300:], r.stderr[-300:]))
            if shutil.which("aws"):
                env2 = dict(env, AWS_DEFAULT_REGION=sc.REGION, AWS_CONFIG_FILE="/dev/null",
                            AWS_SHARED_CREDENTIALS_FILE="/dev/null")
                r = subprocess.run(["aws", "--endpoint-url", ns.endpoint, "sagemaker", "list-training-jobs"],
                                   capture_output=True, env=env2)
                expect(r.returncode == 0 and b"sec-ns-alice" in r.stdout,
                       "aws (alice) over HTTPS: exit %d %s" % (r.returncode, r.stderr[-300:]))
        tap.case("(n2) users see only their jobs on the cluster; trainctl and aws over HTTPS", n2)
    finally:
        os.environ.pop("AWS_CA_BUNDLE", None)
        ns.down()
        drop_users()
        if os.environ.get("TRAINCTL_TEST_KEEP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)


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
    users(tap)
    ns_users(tap)
    tls(tap)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
