#!/usr/bin/python3
"""Watching the queues (docs/queues.md): GET /v1/queues and `trainctl
queue` show each job queue's shares with their guarantee, hosts in use,
borrowed and lent, the running and waiting jobs with each waiting job's
place and reason, and who may see which job names.

trainctld --local-hosts 2 with an admin key (ops) and two user keys
(alice runs as Unix user daemon, bob as nobody); driven by boto3's batch
client (botocore 1.43: this script runs itself again with the pyenv
python3 that has it). Quota shares vision and nlp hold 1 host each
(LEND_AND_BORROW) in queue teams; the admin's two-host job in vision
borrows nlp's idle host, then alice's and bob's two-host jobs in nlp wait
(neither fits nlp's guarantee, so neither preempts).

  (v1) the admin's `trainctl queue` table: vision guarantee 1, in use 2,
       borrowed 1; nlp lent 1 with 2 waiting jobs, 1st and 2nd, each with
       its reason; every job name
  (v2) alice's GET /v1/queues/teams: every share's counts, her own job's
       name and place, bob's and the admin's jobs without name or user,
       other users' counts in one row without a user
  (v3) bob's `trainctl queue teams --json`: the same from his side; a
       series of samples per share; an unknown queue is 404
       ResourceNotFound (`trainctl queue` exits non-zero)

TAP on stdout.
"""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import batchlib  # noqa: E402

batchlib.reexec()

import ftlib as fl  # noqa: E402

sc = fl.sc
sc.hermetic_env()
expect = sc.expect

OPS = ("AKIDQVIEWOPS00000001", "qview/ops/secret/0123456789")
ALICE = ("AKIDQVIEWALICE000001", "qview/alice/secret/012345678")
BOB = ("AKIDQVIEWBOB00000001", "qview/bob/secret/01234567890")
USERS = {"alice": "daemon", "bob": "nobody"}
REGION = "us-east-1"
ITYPE = "ml.c5.xlarge"


def write_credentials(path):
    with open(path, "w") as f:
        f.write("[ops]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % OPS)
        for name, key in (("alice", ALICE), ("bob", BOB)):
            f.write("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\ntrainctl_user = %s\n"
                    "trainctl_role = user\ntrainctl_s3_prefixes = %s/\n\n"
                    % ((name,) + key + (USERS[name], fl.BUCKET)))


def sleeper(cl, name, count, seconds):
    path = os.path.join(cl.tmp, "%s.sh" % name)
    with open(path, "w") as f:
        f.write("sleep %s\n" % seconds)
    return json.dumps({
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "file:///bin/sh", "TrainingInputMode": "File",
                                   "ContainerArguments": [path]},
        "RoleArn": fl.ROLE,
        "OutputDataConfig": {"S3OutputPath": fl.OUT},
        "ResourceConfig": {"InstanceType": ITYPE, "InstanceCount": count, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 120},
    })


def get(cl, key, path):
    h = sc.sigv4_sign("GET", "127.0.0.1:%d" % cl.port, path, "", b"", key[0], key[1], {})
    return sc.http_request(cl.port, "GET", path, b"", h)


def trainctl(cl, key, *args):
    env = dict(os.environ, AWS_ACCESS_KEY_ID=key[0], AWS_SECRET_ACCESS_KEY=key[1])
    return subprocess.run([fl.TRAINCTL, "--endpoint", cl.endpoint] + list(args), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)


def setup(b):
    b.create_service_environment(serviceEnvironmentName="pool", serviceEnvironmentType="SAGEMAKER_TRAINING",
                                 capacityLimits=[{"maxCapacity": 2, "capacityUnit": ITYPE}])
    pol = b.create_scheduling_policy(name="teams-pol",
                                     quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"})
    b.create_job_queue(jobQueueName="teams", priority=5, jobQueueType="SAGEMAKER_TRAINING",
                       schedulingPolicyArn=pol["arn"],
                       serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "pool"}])
    for share in ("vision", "nlp"):
        b.create_quota_share(quotaShareName=share, jobQueue="teams",
                             capacityLimits=[{"maxCapacity": 1, "capacityUnit": ITYPE}],
                             resourceSharingConfiguration={"strategy": "LEND_AND_BORROW",
                                                           "borrowLimit": -1},
                             preemptionConfiguration={"inSharePreemption": "DISABLED"})


def submit(b, cl, name, share, count, seconds):
    return b.submit_service_job(jobName=name, jobQueue="teams", serviceJobType="SAGEMAKER_TRAINING",
                                quotaShareName=share,
                                serviceRequestPayload=sleeper(cl, name, count, seconds))["jobId"]


def shares_of(answer, queue="teams"):
    for q in answer.get("queues", []):
        if q["name"] == queue:
            return {s["name"]: s for s in q["shares"]}
    raise sc.Fail("no queue %s in %s" % (queue, json.dumps(answer)[:2000]))


def wait_view(cl, pred, timeout=30):
    """The admin's GET /v1/queues once pred(answer) holds."""
    deadline = time.time() + timeout
    while True:
        r = get(cl, OPS, "/v1/queues")
        expect(r.status == 200, "GET /v1/queues: %r" % (r,))
        try:
            if pred(r.json):
                return r.json
        except (KeyError, IndexError, sc.Fail):
            pass
        if time.time() > deadline:
            raise sc.Fail("the view never settled: %s" % json.dumps(r.json)[:3000])
        time.sleep(0.2)


def settled(answer):
    s = shares_of(answer)
    return (s["vision"]["in_use"] == 2 and s["nlp"]["waiting"] == 2 and
            all(j["state"] == "running" for j in s["vision"]["jobs"]))


def main():
    tap = sc.Tap()
    cl = fl.LocalCluster(n_hosts=2, prefix="trainctl-qview-")
    err = fl.start_signed(cl, write_credentials, OPS, ["--heartbeat-ms", "200"])
    if not tap.ok(err is None, "trainctld --local-hosts 2 starts", err):
        sys.exit(tap.finish())
    pid = os.getpid()
    big, a_job, b_job = "qv-big-%d" % pid, "qv-alice-%d" % pid, "qv-bob-%d" % pid
    ids = []
    try:
        b_ops = batchlib.client(cl.endpoint, OPS, REGION)
        b_alice = batchlib.client(cl.endpoint, ALICE, REGION)
        b_bob = batchlib.client(cl.endpoint, BOB, REGION)
        setup(b_ops)
        ids.append(submit(b_ops, cl, big, "vision", 2, 60))
        wait_view(cl, lambda a: shares_of(a)["vision"]["running"] == 1)
        ids.append(submit(b_alice, cl, a_job, "nlp", 2, 1))
        ids.append(submit(b_bob, cl, b_job, "nlp", 2, 1))
        view = wait_view(cl, settled)

        def admin_table():
            p = trainctl(cl, OPS, "queue")
            out = p.stdout.decode()
            expect(p.returncode == 0, "trainctl queue: exit %d\n%s" % (p.returncode, out))
            lines = out.splitlines()
            row = {ln.split()[0]: ln.split() for ln in lines if ln.split()[:1] in (["vision"], ["nlp"])
                   and len(ln.split()) == 8}
            expect(row.get("vision", [])[1:6] == ["quota", "1", "2", "1", "0"], "vision's row: %s\n%s"
                   % (row.get("vision"), out))
            expect(row.get("nlp", [])[1:8] == ["quota", "1", "0", "0", "1", "0", "2"], "nlp's row: %s\n%s"
                   % (row.get("nlp"), out))
            for n in (big, a_job, b_job):
                expect(n in out, "%s not in the table:\n%s" % (n, out))
            expect("QUEUE teams  priority 5  policy QUOTA_SHARE" in out, out)
            reasons = [ln.strip() for ln in lines if ln.startswith("  1st in queue teams") or
                       ln.startswith("  2nd in queue teams")]
            expect(len(reasons) == 2 and all("share nlp" in r for r in reasons), "reasons: %s\n%s"
                   % (reasons, out))
            return out
        tap.case("(v1) trainctl queue: guarantee, in use, borrowed, lent; places and reasons", admin_table)

        def alice_sees():
            r = get(cl, ALICE, "/v1/queues/teams")
            expect(r.status == 200, "GET /v1/queues/teams as alice: %r" % (r,))
            expect([q["name"] for q in r.json["queues"]] == ["teams"], "queues: %s" % r.json["queues"])
            s = shares_of(r.json)
            nlp, vision = s["nlp"], s["vision"]
            expect((vision["guarantee"], vision["in_use"], vision["borrowed"], vision["lent"]) == (1, 2, 1, 0),
                   "vision: %s" % vision)
            expect((nlp["guarantee"], nlp["in_use"], nlp["borrowed"], nlp["lent"]) == (1, 0, 0, 1),
                   "nlp: %s" % nlp)
            jobs = nlp["jobs"]
            expect([j["position"] for j in jobs] == [1, 2] and all(j["reason"] for j in jobs),
                   "nlp's jobs: %s" % jobs)
            expect(jobs[0]["name"] == a_job and jobs[0]["user"] == "daemon", "alice's job: %s" % jobs[0])
            expect(jobs[1]["name"] is None and jobs[1]["user"] is None, "bob's job: %s" % jobs[1])
            expect(vision["jobs"][0]["name"] is None and vision["jobs"][0]["count"] == 2,
                   "the admin's job: %s" % vision["jobs"][0])
            users = sorted((u["user"] or "", u["waiting"]) for u in nlp["users"])
            expect(users == [("", 1), ("daemon", 1)], "nlp's users: %s" % nlp["users"])
            expect(json.dumps(r.json).count(b_job) == 0 and json.dumps(r.json).count(big) == 0,
                   "other users' names leak")
            return jobs[0]["reason"]
        tap.case("(v2) a user sees every share's counts, but only its own job's name", alice_sees)

        def bob_json():
            p = trainctl(cl, BOB, "queue", "teams", "--json")
            expect(p.returncode == 0, "trainctl queue teams --json: %d %s" % (p.returncode, p.stdout))
            a = json.loads(p.stdout)
            nlp = shares_of(a)["nlp"]
            expect([j["name"] for j in nlp["jobs"]] == [None, b_job], "nlp's jobs for bob: %s" % nlp["jobs"])
            expect(a_job not in p.stdout.decode() and big not in p.stdout.decode(), "names leak to bob")
            ser = shares_of(view)["vision"]["series"]
            expect(ser and ser[-1]["in_use"] in (1, 2) and view["interval_ms"] > 0, "series: %s" % ser)
            r = get(cl, BOB, "/v1/queues/nosuch")
            expect(r.status == 404 and (r.json or {}).get("__type") == "ResourceNotFound", "unknown: %r" % (r,))
            p = trainctl(cl, BOB, "queue", "nosuch")
            expect(p.returncode != 0, "trainctl queue nosuch: exit 0")
            return "%d samples of vision" % len(ser)
        tap.case("(v3) trainctl queue QUEUE --json for another user; series; an unknown queue is 404",
                 bob_json)
    finally:
        for i in ids:
            try:
                b_ops.terminate_service_job(jobId=i, reason="test over")
            except Exception:  # noqa: BLE001 - cleanup
                pass
        rc, killed = cl.stop()
        cl.check_stopped(tap, rc, killed)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
