#!/usr/bin/python3
"""Teams sharing one pool of hosts (docs/queues.md): fair share between
users, AWS Batch quota shares with borrowing and preemption, priorities.

trainctld --local-hosts 2, two admin keys that own their jobs as alice
and bob (no Unix users needed). Driven by boto3's sagemaker and batch
clients (botocore 1.43: run by /usr/bin/python3, this script runs itself
again with the pyenv python3 that has the batch client).

  (s1) fair share: alice's sweep of 4 two-host jobs, then bob's one-host
       job, sent directly (CreateTrainingJob, the default queue): bob's
       job starts when alice's first ends, before her second, and while
       it waits its status message gives its place in queue default and
       its share
  (s2) quota shares vision and nlp (1 host each, LEND_AND_BORROW) in one
       queue: alice's two-host service job in vision borrows nlp's idle
       host; bob's one-host job in nlp preempts it once it ran the
       minimum time: alice's training job shows Interrupted then Starting,
       bob's runs, then alice's resumes from its checkpoint with at most
       one checkpoint interval redone and both are SUCCEEDED; alice's
       preemption spent no retry
  (s3) schedulingPriority orders a share's waiting jobs; UpdateServiceJob
       changes it
  (s4) a service environment's capacity limit keeps a job waiting while a
       host is free, saying so; a DISABLED queue takes no new job, and the
       one it holds still runs

TAP on stdout.
"""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import batchlib  # noqa: E402

batchlib.reexec()

import ftlib as fl  # noqa: E402

sc = fl.sc
sc.hermetic_env()
expect = sc.expect

ALICE = ("AKIDQUEUESALICE00001", "queues/alice/secret/0123456789")
BOB = ("AKIDQUEUESBOB0000001", "queues/bob/secret/01234567890")
REGION = "us-east-1"
ITYPE = "ml.c5.xlarge"
CKPT_EVERY = 10


def write_credentials(path):
    with open(path, "w") as f:
        for name, (k, s) in (("alice", ALICE), ("bob", BOB)):
            f.write("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % (name, k, s))


def sleeper(cl, name, count, seconds):
    """A CreateTrainingJob request: count hosts that sleep, then exit 0."""
    path = os.path.join(cl.tmp, "%s.sh" % name)
    with open(path, "w") as f:
        f.write("sleep %s\n" % seconds)
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "file:///bin/sh", "TrainingInputMode": "File",
                                   "ContainerArguments": [path]},
        "RoleArn": fl.ROLE,
        "OutputDataConfig": {"S3OutputPath": fl.OUT},
        "ResourceConfig": {"InstanceType": ITYPE, "InstanceCount": count, "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 300},
    }


def start_of(d):
    """When the job's ranks started (its Training transition)."""
    for t in d.get("SecondaryStatusTransitions") or []:
        if t.get("Status") in ("Downloading", "Training"):
            return t["StartTime"].timestamp()
    return None


def metrics(cl):
    """GET /metrics, signed with alice's admin key."""
    h = sc.sigv4_sign("GET", "127.0.0.1:%d" % cl.port, "/metrics", "", b"", ALICE[0], ALICE[1], {})
    r = sc.http_request(cl.port, "GET", "/metrics", b"", h)
    expect(r.status == 200, "GET /metrics: %r" % (r,))
    return r.body.decode()


def wait_ended(sm, names, timeout=180):
    return {n: fl.wait_job(sm, n, fl.terminal, timeout)[0] for n in names}


def case_fair(tap, cl, sm_a, sm_b):
    sweep = ["fs-alice-%d" % i for i in range(4)]
    bob = "fs-bob"

    def fair():
        for n in sweep:
            sm_a.create_training_job(**sleeper(cl, n, 2, 4))
        fl.wait_job(sm_a, sweep[0], lambda d: d.get("SecondaryStatus") == "Training", 60)
        sm_b.create_training_job(**sleeper(cl, bob, 1, 1))
        d, _ = fl.wait_job(sm_b, bob, lambda d: "in queue default" in (
            (d.get("SecondaryStatusTransitions") or [{}])[-1].get("StatusMessage") or ""), 30)
        msg = d["SecondaryStatusTransitions"][-1]["StatusMessage"]
        expect("share bob" in msg and "waiting for 1 host" in msg, "bob's message: %r" % msg)
        text = metrics(cl)
        for want in ('trainctl_sched_jobs{queue="default",share="bob",state="queued"} 1\n',
                     'trainctl_sched_hosts{queue="default",share="alice"} 2\n',
                     'trainctl_sched_share_usage{queue="default",share="alice"} ',
                     "trainctl_sched_decision_duration_seconds_count "):
            expect(want in text, "/metrics lacks %r:\n%s" % (
                want, "\n".join(ln for ln in text.splitlines() if "sched" in ln)))
        ended = wait_ended(sm_a, sweep + [bob])
        bad = [n for n, x in ended.items() if x["TrainingJobStatus"] != "Completed"]
        expect(not bad, "not Completed: %s" % bad)
        t_bob, t_a1 = start_of(ended[bob]), start_of(ended[sweep[1]])
        expect(t_bob and t_a1 and t_bob < t_a1,
               "bob's job started at %s, alice's second at %s" % (t_bob, t_a1))
        return "bob started %.1f s before alice's second job; waiting, it said %r" % (t_a1 - t_bob, msg)
    tap.case("(s1) fair share: bob's job starts when alice's first ends, before the rest of her sweep",
             fair)


def setup_quota(b):
    b.create_service_environment(serviceEnvironmentName="qenv",
                                 serviceEnvironmentType="SAGEMAKER_TRAINING",
                                 capacityLimits=[{"maxCapacity": 2, "capacityUnit": ITYPE}])
    pol = b.create_scheduling_policy(name="qpol",
                                     quotaSharePolicy={"idleResourceAssignmentStrategy": "FIFO"})
    b.create_job_queue(jobQueueName="teams", priority=1, jobQueueType="SAGEMAKER_TRAINING",
                       schedulingPolicyArn=pol["arn"],
                       serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "qenv"}])
    for share in ("vision", "nlp"):
        b.create_quota_share(quotaShareName=share, jobQueue="teams",
                             capacityLimits=[{"maxCapacity": 1, "capacityUnit": ITYPE}],
                             resourceSharingConfiguration={"strategy": "LEND_AND_BORROW",
                                                           "borrowLimit": -1},
                             preemptionConfiguration={"inSharePreemption": "DISABLED"})


def ft_payload(name, count, hps):
    req = fl.job_request(name, count, hps, itype=ITYPE, retries=1)
    return json.dumps(req)


def wait_service(b, job_id, pred, timeout):
    deadline = time.time() + timeout
    while True:
        d = b.describe_service_job(jobId=job_id)
        if pred(d):
            return d
        if time.time() > deadline:
            raise sc.Fail("service job %s: %s %r after %d s" % (job_id, d["status"], d.get("statusReason"),
                                                                timeout))
        time.sleep(0.2)


def case_restart(tap, cl, sm_a):
    """After a restart alice's share still carries her sweep's usage."""
    def usage_kept():
        rc, killed = cl.stop()
        expect(rc == 0 and not killed, "trainctld exit %r (killed %s)" % (rc, killed))
        err = cl.start(wait_hosts=False) or fl.wait_hosts_signed(cl, ALICE, cl.n_hosts)
        expect(err is None, "restart: %s" % err)
        sm_a.create_training_job(**sleeper(cl, "fs-alice-after", 1, 1))
        deadline, got = time.time() + 30, None
        while time.time() < deadline and got is None:
            m = re.search(r'^trainctl_sched_share_usage\{queue="default",share="alice"\} ([0-9.]+)$',
                          metrics(cl), re.M)
            got = float(m.group(1)) if m else None
            time.sleep(0.2)
        # Her sweep: 4 jobs of 2 hosts for about 4 s each.
        expect(got is not None and got > 16, "alice's usage after the restart: %r" % got)
        wait_ended(sm_a, ["fs-alice-after"])
        return "alice's usage after the restart: %.1f instance-seconds" % got
    tap.case("(s1) a restart keeps fair-share usage: rebuilt from the attempts in the store",
             usage_kept)


def case_quota(tap, cl, sm, b_a, b_b):
    alice = "qs-alice-%d" % os.getpid()
    bob = "qs-bob-%d" % os.getpid()
    hps = {"steps": 200, "ckpt_every": CKPT_EVERY, "step_sleep": 0.1}
    st = {}

    def preempt():
        setup_quota(b_a)
        ja = b_a.submit_service_job(jobName=alice, jobQueue="teams", serviceJobType="SAGEMAKER_TRAINING",
                                    quotaShareName="vision",
                                    serviceRequestPayload=ft_payload(alice, 2, hps))["jobId"]
        wait_service(b_a, ja, lambda d: d["status"] == "RUNNING", 60)
        fl.wait_job(sm, alice, lambda d: d.get("SecondaryStatus") == "Training", 60)
        jb = b_b.submit_service_job(jobName=bob, jobQueue="teams", serviceJobType="SAGEMAKER_TRAINING",
                                    quotaShareName="nlp",
                                    serviceRequestPayload=json.dumps(sleeper(cl, bob, 1, 3)))["jobId"]
        st["bob_submit"] = time.time()
        da = wait_service(b_a, ja, lambda d: d["isTerminated"], 240)
        db = wait_service(b_b, jb, lambda d: d["isTerminated"], 240)
        expect(da["status"] == "SUCCEEDED" and db["status"] == "SUCCEEDED",
               "alice %s %r, bob %s %r" % (da["status"], da.get("statusReason"), db["status"],
                                           db.get("statusReason")))
        st["alice"] = sm.describe_training_job(TrainingJobName=alice)
        st["bob"] = sm.describe_training_job(TrainingJobName=bob)
        st["logs"] = fl.attempt_logs(cl.logs_dir(alice))
    tap.case("(s2) quota shares: alice's borrowing job and bob's owed one both SUCCEEDED", preempt)

    def interrupted():
        expect("alice" in st, "no result")
        tr = fl.transitions(st["alice"])
        states = [s for s, _ in tr]
        expect("Interrupted" in states, "alice's transitions: %s" % tr)
        i = states.index("Interrupted")
        expect(states[i + 1:i + 2] == ["Starting"] and "Training" in states[i + 2:], "after: %s" % states[i:])
        msg = tr[i][1]
        expect("share nlp" in msg and bob in msg, "Interrupted's message: %r" % msg)
        t_b = start_of(st["bob"])
        t_int = st["alice"]["SecondaryStatusTransitions"][i]["StartTime"].timestamp()
        expect(t_b and t_b >= t_int, "bob's job ran before alice's was interrupted")
        return "%s; bob's ranks ran %.1f s after his submit" % (msg[:120], t_b - st["bob_submit"])
    tap.case("(s2) alice's job was preempted for bob's: Interrupted -> Starting -> Training", interrupted)

    def resumed():
        logs = st.get("logs") or {}
        expect(sorted(logs) == [1, 2], "alice's attempts: %s" % sorted(logs))
        reached = fl.last_step(logs[1]["algo-1"])
        rf = fl.field(logs[2]["algo-1"], "ft-resume", "resumed_from")
        expect(rf, "attempt 2 did not resume from a checkpoint")
        expect(0 <= reached - int(rf[0]) <= CKPT_EVERY, "reached %d, resumed from %s" % (reached, rf[0]))
        return "reached step %d, resumed from %s" % (reached, rf[0])
    tap.case("(s2) alice's job resumed from its checkpoint, at most one interval redone", resumed)

    def budget():
        tr = fl.transitions(st.get("alice") or {})
        expect("Restarting" not in [s for s, _ in tr], "a restart was needed: %s" % tr)
        msgs = [m for s, m in tr if s == "Interrupted"]
        expect(msgs and "spends no retry" in msgs[0], "Interrupted's message: %s" % msgs)
    tap.case("(s2) the preemption spent no retry", budget)


def case_priority(tap, cl, sm, b_a):
    names = ["pr-%d-%d" % (i, os.getpid()) for i in range(3)]
    blocker = "pr-block-%d" % os.getpid()

    def priority():
        b_a.create_job_queue(jobQueueName="plain", priority=1, jobQueueType="SAGEMAKER_TRAINING",
                             serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "qenv"}])
        sm.create_training_job(**sleeper(cl, blocker, 2, 4))
        fl.wait_job(sm, blocker, lambda d: d.get("SecondaryStatus") == "Training", 60)
        ids = []
        for i, n in enumerate(names):
            ids.append(b_a.submit_service_job(jobName=n, jobQueue="plain",
                                              serviceJobType="SAGEMAKER_TRAINING", schedulingPriority=i,
                                              serviceRequestPayload=json.dumps(sleeper(cl, n, 2, 1)))["jobId"])
        # The first submitted goes last after all: its priority rises above the rest.
        b_a.update_service_job(jobId=ids[0], schedulingPriority=10)
        ended = wait_ended(sm, [blocker] + names)
        starts = sorted((start_of(ended[n]), n) for n in names)
        order = [n for _, n in starts]
        expect(order == [names[0], names[2], names[1]], "started in the order %s" % order)
        return " -> ".join(order)
    tap.case("(s3) schedulingPriority, changed by UpdateServiceJob, orders the waiting jobs", priority)


def message(sm, name):
    d = sm.describe_training_job(TrainingJobName=name)
    return d.get("SecondaryStatus"), (d.get("SecondaryStatusTransitions") or [{}])[-1].get("StatusMessage") or ""


def wait_message(sm, name, words, timeout=30):
    deadline = time.time() + timeout
    while True:
        st, msg = message(sm, name)
        if words in msg:
            return st, msg
        if time.time() > deadline:
            raise sc.Fail("%s: %s %r, not %r, after %d s" % (name, st, msg, words, timeout))
        time.sleep(0.2)


def case_limits(tap, cl, sm, b_a):
    run, capped = "cap-run-%d" % os.getpid(), "cap-wait-%d" % os.getpid()
    off = "off-%d" % os.getpid()
    blocker = "off-block-%d" % os.getpid()

    def env_limit():
        b_a.create_service_environment(serviceEnvironmentName="small",
                                       serviceEnvironmentType="SAGEMAKER_TRAINING",
                                       capacityLimits=[{"maxCapacity": 1, "capacityUnit": "NUM_INSTANCES"}])
        b_a.create_job_queue(jobQueueName="capped", priority=1, jobQueueType="SAGEMAKER_TRAINING",
                             serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "small"}])
        for n, secs in ((run, 6), (capped, 1)):
            b_a.submit_service_job(jobName=n, jobQueue="capped", serviceJobType="SAGEMAKER_TRAINING",
                                   serviceRequestPayload=json.dumps(sleeper(cl, n, 1, secs)))
        fl.wait_job(sm, run, lambda d: d.get("SecondaryStatus") == "Training", 60)
        st, msg = wait_message(sm, capped, "service environment small is at its capacity of 1")
        expect(st == "Starting", "%s: %s while the environment is full" % (capped, st))
        ended = wait_ended(sm, [run, capped])
        expect(all(x["TrainingJobStatus"] == "Completed" for x in ended.values()), "not all Completed")
        expect(start_of(ended[capped]) >= ended[run]["TrainingEndTime"].timestamp() - 1,
               "the capped job ran beside the first")
        return msg
    tap.case("(s4) a service environment's limit keeps a job waiting while a host is free", env_limit)

    def disabled():
        b_a.create_job_queue(jobQueueName="paused", priority=1, jobQueueType="SAGEMAKER_TRAINING",
                             serviceEnvironmentOrder=[{"order": 1, "serviceEnvironment": "qenv"}])
        sm.create_training_job(**sleeper(cl, blocker, 2, 4))
        fl.wait_job(sm, blocker, lambda d: d.get("SecondaryStatus") == "Training", 60)
        b_a.submit_service_job(jobName=off, jobQueue="paused", serviceJobType="SAGEMAKER_TRAINING",
                               serviceRequestPayload=json.dumps(sleeper(cl, off, 1, 1)))
        b_a.update_job_queue(jobQueue="paused", state="DISABLED")
        sc.expect_error(lambda: b_a.submit_service_job(
            jobName=off + "-new", jobQueue="paused", serviceJobType="SAGEMAKER_TRAINING",
            serviceRequestPayload=json.dumps(sleeper(cl, off + "-new", 1, 1))), "ClientException",
            contains=["DISABLED"])
        d = wait_ended(sm, [blocker, off])[off]
        expect(d["TrainingJobStatus"] == "Completed", "%s: %s" % (off, d["TrainingJobStatus"]))
    tap.case("(s4) a DISABLED queue takes no new job; the one it holds still runs", disabled)


def main():
    tap = sc.Tap()
    cl = fl.LocalCluster(n_hosts=2, prefix="trainctl-queues-")
    err = fl.start_signed(cl, write_credentials, ALICE, ["--heartbeat-ms", "200"])
    if not tap.ok(err is None, "trainctld --local-hosts 2 starts", err):
        sys.exit(tap.finish())
    try:
        sm_a = sc.make_client(cl.endpoint, key=ALICE[0], secret=ALICE[1])
        sm_b = sc.make_client(cl.endpoint, key=BOB[0], secret=BOB[1])
        b_a = batchlib.client(cl.endpoint, ALICE, REGION)
        b_b = batchlib.client(cl.endpoint, BOB, REGION)
        case_fair(tap, cl, sm_a, sm_b)
        case_restart(tap, cl, sm_a)
        case_quota(tap, cl, sm_a, b_a, b_b)
        case_priority(tap, cl, sm_a, b_a)
        case_limits(tap, cl, sm_a, b_a)
    finally:
        rc, killed = cl.stop()
        cl.check_stopped(tap, rc, killed)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
