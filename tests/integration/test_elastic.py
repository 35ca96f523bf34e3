#!/usr/bin/python3
"""Elastic jobs (docs/distributed.md, "Elastic jobs") on a cluster of 3
network-namespace hosts provisioned over SSH (scripts/cluster.sh).

One 3-host job of ft_trainer.py (a checkpoint every 20 steps; it takes
checkpoint-now requests) tagged trainctl:min-instance-count=2, on all three
hosts, so that no spare is free:

  (e1) algo-3's host loses its link: within --elastic-wait the job trains
       again on the 2 hosts left (attempt 2 "on 2 of its 3 hosts", algo-1
       and algo-2 only), and Describe's TrainctlElastic says
       MinInstanceCount 2, CurrentInstanceCount 2
  (e2) the link comes back: the job grows back to 3 hosts ("Elastic: 1
       hosts are free again", a planned move: a checkpoint now, then
       attempt 3 on all three), redoing at most 2 steps of 0.05 s
  (e3) it Completes with the step count and the weights of a run without
       faults, and no retry spent (--max-retries 0)
  (e4) refused with a ValidationException naming the tag: a value that is
       not an integer from 1 to InstanceCount, an MPI job, and AddTags or
       DeleteTags of the reserved key later

TAP on stdout; skips (1..0 # SKIP) when not root or without sshd. Run from
the top of the tree: /usr/bin/python3 tests/integration/test_elastic.py
"""
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
expect, Fail = sc.expect, sc.Fail
TAG = "trainctl:min-instance-count"
PREFIX, NET, PORT = sc.run_names("el")
ARGS = ["--grace-period", "4", "--heartbeat-ms", "200", "--host-deadline-ms", "1000",
        "--elastic-wait", "1", "--restart-wait", "60", "--max-retries", "0", "-v"]
HPS = {"steps": 500, "ckpt_every": 20, "step_sleep": 0.05, "ckpt_now": True}


def elastic_request(ns, name, count=3, min_count="2", hps=None):
    req = fl.job_request(name, count, hps or HPS, retries=None, itype=ns.itype)
    req["Tags"] = [{"Key": TAG, "Value": min_count}]
    return req


def wait_attempt_step(ns, name, attempt, algo, step, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = fl.attempt_logs(ns.logs_dir(name)).get(attempt, {}).get(algo, [])
        if fl.last_step(rows) >= step:
            return
        time.sleep(0.1)
    raise Fail("%s: %s never logged step %d in attempt %d within %d s\n%s" % (
        name, algo, step, attempt, timeout, ns.log_tail(20, grep=name)))


def messages(d):
    return [m for _, m in fl.transitions(d)]


def case_shrink_grow(tap, ns, sm):
    name = "el-main-%x" % (int(time.time() * 1000) % 0xfffffff)
    sm.create_training_job(**elastic_request(ns, name))
    info = {}

    def shrink():
        wait_attempt_step(ns, name, 1, "algo-3", 30, 90)
        victim = ns.host_of(name, "algo-3")
        expect(victim, "GET /v1/hosts names no host for algo-3")
        info["victim"] = victim
        t0 = time.time()
        ns.link(victim, up=False)
        info["down"] = True
        wait_attempt_step(ns, name, 2, "algo-2", 1, 40)
        info["shrunk_s"] = time.time() - t0
        d = sm.describe_training_job(TrainingJobName=name)
        el = d.get("TrainctlElastic") or sm_raw_elastic(ns, name)
        expect(el == {"MinInstanceCount": 2, "CurrentInstanceCount": 2},
               "TrainctlElastic while on 2 hosts: %r" % el)
        expect(any("Starting attempt 2 of the training job on 2 of its 3 hosts" in m
                   for m in messages(d)), "transitions: %s" % messages(d))
        algos = sorted(fl.attempt_logs(ns.logs_dir(name)).get(2, {}))
        expect(algos == ["algo-1", "algo-2"], "attempt 2 ran on %s" % algos)
        return "training on 2 hosts %.1f s after the link went down" % info["shrunk_s"]
    tap.case("(e1) a lost host with no spare: the elastic job trains on the 2 left", shrink)

    def grow():
        expect(info.get("down"), "no host was taken down")
        ns.link(info["victim"], up=True)
        info["down"] = False
        t0 = time.time()
        wait_attempt_step(ns, name, 3, "algo-3", 1, 90)
        # algo-1's resume line comes before its first step.
        wait_attempt_step(ns, name, 3, "algo-1", 1, 30)
        d = sm.describe_training_job(TrainingJobName=name)
        expect(any(m.startswith("Elastic: 1 hosts are free again") for m in messages(d)),
               "transitions: %s" % messages(d))
        logs = fl.attempt_logs(ns.logs_dir(name))
        reached = fl.last_step(logs[2]["algo-1"])
        rf = fl.field(logs[3]["algo-1"], "ft-resume", "resumed_from")
        expect(rf, "attempt 3 did not resume from a checkpoint: %s" % logs[3]["algo-1"][:5])
        lost = reached - int(rf[0])
        expect(0 <= lost <= 2, "attempt 2 reached step %d, attempt 3 resumed from %s" % (reached, rf[0]))
        return "on 3 hosts again %.1f s after the link came back; %d steps redone" % (time.time() - t0, lost)
    tap.case("(e2) the host back: the job grows back to 3 hosts from a checkpoint taken now", grow)

    def done():
        if info.get("down"):
            ns.link(info["victim"], up=True)
        d, _ = fl.wait_job(sm, name, fl.terminal, 120)
        expect(d["TrainingJobStatus"] == "Completed", "%s: %s %r\n%s" % (
            name, d["TrainingJobStatus"], d.get("FailureReason"), messages(d)))
        res = fl.results(ns.s3_path(fl.model_uri(name)))
        ref = fl.reference(HPS)
        for algo in ("algo-1", "algo-2", "algo-3"):
            expect(res.get(algo, {}).get("params_sha256") == ref["params_sha256"],
                   "%s's weights differ from a run without faults: %r" % (algo, res.get(algo)))
        expect(all(r.get("steps") == HPS["steps"] for r in res.values()), "results: %r" % res)
    tap.case("(e3) the job Completes with the weights of a run without faults, no retry spent", done)


def sm_raw_elastic(ns, name):
    """TrainctlElastic through the REST face (boto3 drops members its
    model lacks)."""
    st, js = ns.request("GET", "/v1/training-jobs/%s" % name)
    return js.get("TrainctlElastic") if st == 200 and isinstance(js, dict) else None


def case_refusals(tap, ns, sm):
    from botocore.exceptions import ClientError

    def refused(req, want):
        try:
            sm.create_training_job(**req)
        except ClientError as e:
            code, msg, _ = sc.err_of(e)
            expect(code == "ValidationException" and want in msg, "%s: %s" % (code, msg))
            return
        raise Fail("%s was accepted" % req["TrainingJobName"])

    def bad():
        base = "el-bad-%x" % (int(time.time() * 1000) % 0xfffffff)
        for k, v in enumerate(("0", "4", "two", "", "2.5")):
            refused(elastic_request(ns, "%s-%d" % (base, k), 3, v), "must be an integer from 1")
        req = elastic_request(ns, base + "-mpi")
        req["HyperParameters"]["sagemaker_mpi_enabled"] = "true"
        refused(req, "cannot change its number of hosts")
        req = elastic_request(ns, base + "-other")
        req["Tags"].append({"Key": "trainctl:other", "Value": "1"})
        refused(req, "unknown reserved key")
    tap.case("(e4) bad minimum counts, MPI and unknown reserved keys are refused at create", bad)

    def later():
        name = "el-later-%x" % (int(time.time() * 1000) % 0xfffffff)
        req = fl.job_request(name, 1, {"steps": 1}, retries=None, itype=ns.itype)
        arn = sm.create_training_job(**req)["TrainingJobArn"]
        for call in (lambda: sm.add_tags(ResourceArn=arn, Tags=[{"Key": TAG, "Value": "1"}]),
                     lambda: sm.delete_tags(ResourceArn=arn, TagKeys=[TAG])):
            try:
                call()
            except ClientError as e:
                code, msg, _ = sc.err_of(e)
                expect(code == "ValidationException" and "reserved" in msg, "%s: %s" % (code, msg))
                continue
            raise Fail("a reserved tag key was changed after create")
        tags = sm.list_tags(ResourceArn=arn)["Tags"]
        expect(not any(t["Key"] == TAG for t in tags), "tags: %r" % tags)
        fl.wait_job(sm, name, fl.terminal, 60)
    tap.case("(e4) AddTags and DeleteTags of the reserved key are refused; nothing changes", later)


def main():
    tap = sc.Tap()
    reason = fl.ns_skip_reason()
    if reason:
        print("1..0 # SKIP %s" % reason)
        return 0
    ns = fl.NsCluster(PREFIX, NET, PORT, extra=ARGS)
    try:
        t = time.time()
        err = ns.up()
        if not tap.ok(err is None, "cluster.sh up --hosts 3 (%.1f s)" % (time.time() - t), err):
            return tap.finish()
        sm = ns.client()
        case_refusals(tap, ns, sm)
        case_shrink_grow(tap, ns, sm)
    except Exception as e:
        tap.ok(False, "the cases ran to their end", "%s: %s\n%s\n%s" % (
            type(e).__name__, e, traceback.format_exc(), ns.log_tail(15)))
    finally:
        rc, out, err = ns.down()
        left = [p for p, argv in fl.proc_argvs() if any(ns.state in a for a in argv)]
        tap.ok(rc == 0 and not left, "cluster.sh down: nothing left",
               "exit %d %s%s; left %s" % (rc, out, err, left))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
