#!/usr/bin/python3
"""Preemption latency with AWS Batch quota shares, on the local cluster.

    /usr/bin/python3 bench/preempt.py [--trials 5] [--ckpt-now]

trainctld --local-hosts 2 and the queue of tests/integration/test_queues.py
(s2): one service environment of 2 hosts, a quota-share policy, shares
"vision" and "nlp" of 1 host each, LEND_AND_BORROW. Each trial: alice
submits a 2-host libtrainer-style job (tests/integration/ft_trainer.py,
a checkpoint every CKPT steps) to vision, borrowing nlp's host; once it
has trained for 12 s (no job is preempted before 10 s), bob submits a
1-host job to nlp, which is owed its host. Measured per trial, from bob's
SubmitServiceJob: alice's job Interrupted (the scheduler's reaction),
bob's ranks started (SecondaryStatus Training: alice's host stopped,
its last checkpoint mirrored, bob's attempt staged and launched), and
the steps alice redid after resuming (against one checkpoint interval).
With --ckpt-now alice's program takes checkpoint-now requests
(docs/checkpoints.md): the preemption asks it for a checkpoint first.
Run with the Debian interpreter: it runs itself again with the newer
botocore that has service jobs (tests/integration/batchlib.py).
"""
import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import batchlib  # noqa: E402

batchlib.reexec()

import ftlib as fl  # noqa: E402
import test_queues as tq  # noqa: E402

CKPT = tq.CKPT_EVERY


def transition_at(d, status):
    for t in d.get("SecondaryStatusTransitions") or []:
        if t.get("Status") == status:
            return t["StartTime"].timestamp()
    return None


def trial(k, cl, sm, b_a, b_b, ckpt_now):
    alice, bob = "pre-alice-%d-%d" % (os.getpid(), k), "pre-bob-%d-%d" % (os.getpid(), k)
    hps = {"steps": 400, "ckpt_every": CKPT, "step_sleep": 0.05, "ckpt_now": ckpt_now}
    ja = b_a.submit_service_job(jobName=alice, jobQueue="teams", serviceJobType="SAGEMAKER_TRAINING",
                                quotaShareName="vision",
                                serviceRequestPayload=tq.ft_payload(alice, 2, hps))["jobId"]
    fl.wait_job(sm, alice, lambda d: d.get("SecondaryStatus") == "Training", 60)
    time.sleep(12)
    t0 = time.time()
    jb = b_b.submit_service_job(jobName=bob, jobQueue="teams", serviceJobType="SAGEMAKER_TRAINING",
                                quotaShareName="nlp",
                                serviceRequestPayload=json.dumps(tq.sleeper(cl, bob, 1, 1)))["jobId"]
    fl.wait_job(sm, bob, lambda d: transition_at(d, "Training") is not None, 120)
    db = sm.describe_training_job(TrainingJobName=bob)
    tq.wait_service(b_a, ja, lambda d: d["isTerminated"], 300)
    tq.wait_service(b_b, jb, lambda d: d["isTerminated"], 120)
    da = sm.describe_training_job(TrainingJobName=alice)
    logs = fl.attempt_logs(cl.logs_dir(alice))
    reached = fl.last_step(logs.get(1, {}).get("algo-1", []))
    rf = fl.field(logs.get(2, {}).get("algo-1", []), "ft-resume", "resumed_from")
    return {"interrupted_s": transition_at(da, "Interrupted") - t0,
            "bob_training_s": transition_at(db, "Training") - t0,
            "redone_steps": reached - int(rf[0]) if rf else None,
            "alice": da["TrainingJobStatus"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--ckpt-now", action="store_true",
                    help="alice's program takes checkpoint-now requests")
    args = ap.parse_args()
    cl = fl.LocalCluster(n_hosts=2, prefix="trainctl-preempt-")
    err = fl.start_signed(cl, tq.write_credentials, tq.ALICE, ["--heartbeat-ms", "200"])
    if err:
        sys.exit("trainctld did not start: %s" % err)
    rows = []
    try:
        sm = fl.sc.make_client(cl.endpoint, key=tq.ALICE[0], secret=tq.ALICE[1])
        b_a = batchlib.client(cl.endpoint, tq.ALICE, tq.REGION)
        b_b = batchlib.client(cl.endpoint, tq.BOB, tq.REGION)
        tq.setup_quota(b_a)
        for k in range(args.trials):
            r = trial(k, cl, sm, b_a, b_b, args.ckpt_now)
            print("trial %d: %s" % (k + 1, json.dumps(r)), flush=True)
            rows.append(r)
    finally:
        cl.stop()
    bad = [r for r in rows if r["alice"] != "Completed" or r["redone_steps"] is None
           or r["redone_steps"] > CKPT]
    for key, what in (("interrupted_s", "submit -> alice Interrupted"),
                      ("bob_training_s", "submit -> bob's ranks started")):
        xs = [r[key] for r in rows]
        print("%-32s median %.2f s, max %.2f s" % (what, statistics.median(xs), max(xs)))
    print("steps alice redid: %s (checkpoint every %d steps%s)" % (
        [r["redone_steps"] for r in rows], CKPT,
        ", checkpoint-now requests taken" if args.ckpt_now else ""))
    sys.exit(1 if bad or not rows else 0)


if __name__ == "__main__":
    main()
