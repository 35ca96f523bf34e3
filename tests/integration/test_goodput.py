#!/usr/bin/python3
"""Goodput accounting (docs/goodput.md) for a job with a known failure.

trainctld --local-hosts 2; the job runs goodput_trainer.py: 40 steps of
0.15 s, a checkpoint every 10 steps with a 0.3 s stall it reports, and in
attempt 1 an exit 1 after step 27, so attempt 2 resumes from the step-20
checkpoint and makes steps 21..27 again. The program writes its ground
truth (each step's start and end, each stall, what it resumed from).

  (g1) Describe's TrainctlGoodput (read from the REST face's job body:
       boto3 parses Describe as before and drops the member its model
       lacks): the categories add up to
       WallTimeInSeconds (within 0.01 s), which is TrainingEndTime -
       CreationTime (within 0.01 s); 2 attempts, both reporting; the
       step reached is 40
  (g2) StepsRedone is what the program redid (the step attempt 1
       reached minus the step attempt 2 resumed from), exactly
  (g3) Redone time matches the redone steps' duration in the ground
       truth within 0.5 s
  (g4) Checkpoint time matches the stalls the program reported within
       0.05 s
  (g5) Restart time matches the ground truth (attempt 1's last step end
       to attempt 2's first step end) within 0.5 s
  (g6) Productive time matches the new steps' duration within 1.5 s
       (a step at each attempt's edges and the program's exit may fall
       either side); nothing Preempted
  (g7) the JSON 1.1 face's body carries the same member
  (g8) `trainctl describe-training-job` prints the split
  (g9) a second job, requeued (preempted) after step 12 while the first
       runs: Preempted plus Restart is the ground truth's gap (attempt
       1's last step end to attempt 2's first) within 0.5 s, Preempted is
       not 0, StepsRedone is the program's, and the categories add up
  (g10) with both jobs ended, /metrics' trainctl_goodput_seconds_total
       by category is the sum of their splits (within 0.01 s a job)

TAP on stdout. Run from the top of the tree with Debian's interpreter.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
sc.hermetic_env()

TRAINER = os.path.join(HERE, "goodput_trainer.py")
STEPS, STEP_S, CKPT_EVERY, CKPT_S, FAIL_AFTER = 40, 0.15, 10, 0.3, 27


def request(name, truth):
    hps = {"steps": STEPS, "step_s": STEP_S, "ckpt_every": CKPT_EVERY, "ckpt_s": CKPT_S,
           "fail_after": FAIL_AFTER, "fail_attempt": 1, "truth": truth}
    req = fl.job_request(name, 1, hps, retries=1, image=TRAINER, max_runtime=120)
    return req


def read_truth(path):
    ev = []
    with open(path) as f:
        for line in f:
            ev.append(json.loads(line))
    return ev


def ground_truth(ev):
    """The program's own account: redone steps and seconds, stalls,
    restart and new steps' seconds."""
    steps = {1: [], 2: []}
    for e in ev:
        if e["ev"] == "step":
            steps.setdefault(e["attempt"], []).append(e)
    starts = {e["attempt"]: e for e in ev if e["ev"] == "start"}
    reached = max(s["step"] for s in steps[1])
    resumed = starts[2]["resumed"]
    redone = [s for s in steps[2] if s["step"] <= reached]
    new = steps[1] + [s for s in steps[2] if s["step"] > reached]
    return {
        "reached": reached,
        "resumed": resumed,
        "steps_redone": reached - resumed,
        "redone_s": sum(s["t1"] - s["t0"] for s in redone),
        "ckpt_s": sum(e["s"] for e in ev if e["ev"] == "ckpt"),
        "restart_s": steps[2][0]["t1"] - steps[1][-1]["t1"],
        "new_s": sum(s["t1"] - s["t0"] for s in new),
    }


def near(a, b, tol):
    return abs(a - b) <= tol


def check_split(tap, d, truth):
    gp = d.get("TrainctlGoodput")
    if not tap.ok(isinstance(gp, dict), "(g1) Describe carries TrainctlGoodput", sc.short(d, 800)):
        return None
    t = gp["TimeInSeconds"]
    wall = d["TrainingEndTime"] - d["CreationTime"]
    tap.ok(near(sum(t.values()), gp["WallTimeInSeconds"], 0.01) and near(gp["WallTimeInSeconds"], wall, 0.01)
           and gp["Attempts"] == 2 and gp["AttemptsReporting"] == 2 and gp["StepReached"] == STEPS,
           "(g1) the categories add up to the wall time; 2 attempts reporting, step %d" % STEPS,
           "sum %.3f wall %.3f (job %.3f) %s" % (sum(t.values()), gp["WallTimeInSeconds"], wall, gp))
    tap.ok(gp["StepsRedone"] == truth["steps_redone"] and truth["steps_redone"] == FAIL_AFTER - 20,
           "(g2) StepsRedone is the program's (%d)" % truth["steps_redone"], "%s vs %s" % (gp, truth))
    tap.ok(near(t["Redone"], truth["redone_s"], 0.5),
           "(g3) Redone %.2f s within 0.5 s of the truth %.2f s" % (t["Redone"], truth["redone_s"]))
    tap.ok(near(t["Checkpoint"], truth["ckpt_s"], 0.05),
           "(g4) Checkpoint %.2f s within 0.05 s of the reported %.2f s" % (t["Checkpoint"], truth["ckpt_s"]))
    tap.ok(near(t["Restart"], truth["restart_s"], 0.5),
           "(g5) Restart %.2f s within 0.5 s of the truth %.2f s" % (t["Restart"], truth["restart_s"]))
    tap.ok(near(t["Productive"], truth["new_s"], 1.5) and t["Preempted"] == 0,
           "(g6) Productive %.2f s within 1.5 s of the new steps' %.2f s; none preempted"
           % (t["Productive"], truth["new_s"]), str(gp))
    return gp


def check_json11(tap, cl, name, gp):
    body = json.dumps({"TrainingJobName": name}).encode()
    h = {"X-Amz-Target": "SageMaker.DescribeTrainingJob", "Content-Type": "application/x-amz-json-1.1"}
    r = sc.http_request(cl.port, "POST", "/", body, h)
    tap.ok(r.status == 200 and r.json.get("TrainctlGoodput") == gp,
           "(g7) the JSON 1.1 face's Describe body carries the same TrainctlGoodput", sc.short(r, 600))


def check_metrics(tap, cl, gps):
    """Once every job ended, /metrics' counters are the sum of their splits."""
    want = {}
    for gp in gps:
        for k, v in gp["TimeInSeconds"].items():
            want[k.lower()] = want.get(k.lower(), 0.0) + v
    r = sc.http_request(cl.port, "GET", "/metrics")
    text = r.body.decode()
    got = dict(re.findall(r'^trainctl_goodput_seconds_total\{category="(\w+)"\} ([0-9.]+)$', text, re.M))
    ok = r.status == 200 and set(got) == set(want)
    ok = ok and all(near(float(got[k]), v, 0.01 * len(gps)) for k, v in want.items())
    tap.ok(ok, "(g10) /metrics: trainctl_goodput_seconds_total by category is the sum of the ended jobs' splits",
           "%s vs %s" % (got, want))


def check_cli(tap, cl, name):
    env = dict(os.environ, TRAINCTL_ENDPOINT=cl.endpoint, AWS_ACCESS_KEY_ID=sc.KEY,
               AWS_SECRET_ACCESS_KEY=sc.SECRET)
    p = subprocess.run([fl.TRAINCTL, "--endpoint", cl.endpoint, "describe-training-job", name],
                       capture_output=True, text=True, env=env, timeout=20)
    tap.ok(p.returncode == 0 and re.search(r"^Goodput: +0\.\d\d of ", p.stdout, re.M)
           and re.search(r"^  Redone +\d+\.\d s", p.stdout, re.M),
           "(g8) trainctl describe-training-job prints the goodput split", p.stdout[-800:] + p.stderr[-400:])


def wait_truth_step(path, step, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if any(e["ev"] == "step" and e["step"] >= step for e in read_truth(path)):
                return True
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    return False


def start_preempted(tap, cl, sm, name, truth_path):
    req = request(name, truth_path)
    req["HyperParameters"]["fail_after"] = "0"
    sm.create_training_job(**req)
    if not wait_truth_step(truth_path, 12, 40):
        tap.ok(False, "(g9) the second job reaches step 12")
        return False
    r = sc.http_request(cl.port, "POST", "/v1/training-jobs/%s/requeue" % name)
    return tap.ok(r.status == 200, "(g9) the second job is requeued after step 12", sc.short(r, 400))


def check_preempted(tap, cl, sm, name, truth_path):
    d, seen = fl.wait_job(sm, name, fl.terminal, 60, interval=0.2)
    if not tap.ok(d["TrainingJobStatus"] == "Completed", "(g9) the requeued job Completes",
                  "%s %s" % (d.get("FailureReason"), seen)):
        return None
    truth = ground_truth(read_truth(truth_path))
    st, rest = cl.get_json("/v1/training-jobs/%s" % name)
    gp = rest.get("TrainctlGoodput") if st == 200 else None
    if not tap.ok(isinstance(gp, dict), "(g9) Describe carries TrainctlGoodput", sc.short(rest, 600)):
        return None
    t = gp["TimeInSeconds"]
    lost = t["Preempted"] + t["Restart"]
    tap.ok(t["Preempted"] > 0 and near(lost, truth["restart_s"], 0.5) and gp["StepsRedone"] == truth["steps_redone"]
           and near(sum(t.values()), gp["WallTimeInSeconds"], 0.01) and gp["Attempts"] == 2,
           "(g9) Preempted %.2f + Restart %.2f s within 0.5 s of the truth %.2f s; %d steps redone"
           % (t["Preempted"], t["Restart"], truth["restart_s"], gp["StepsRedone"]), "%s vs %s" % (gp, truth))
    return gp


def main():
    tap = sc.Tap()
    cl = fl.LocalCluster(2, ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "--grace-period", "2"],
                         prefix="trainctl-goodput-")
    err = cl.start()
    if not tap.ok(err is None, "trainctld --local-hosts 2 starts", err):
        sys.exit(tap.finish())
    tmp = tempfile.mkdtemp(prefix="trainctl-goodput-truth-")
    truth_path = os.path.join(tmp, "truth.jsonl")
    truth2 = os.path.join(tmp, "truth2.jsonl")
    try:
        sm = cl.client()
        name = "goodput-%d" % os.getpid()
        sm.create_training_job(**request(name, truth_path))
        requeued = start_preempted(tap, cl, sm, name + "-p", truth2)
        d, seen = fl.wait_job(sm, name, fl.terminal, 60, interval=0.2)
        gp = None
        ok = tap.ok(d["TrainingJobStatus"] == "Completed", "the job with a failure in attempt 1 Completes",
                    "%s %s" % (d.get("FailureReason"), seen))
        if ok:
            truth = ground_truth(read_truth(truth_path))
            st, rest = cl.get_json("/v1/training-jobs/%s" % name)
            gp = check_split(tap, rest if st == 200 else {}, truth)
            if gp:
                check_json11(tap, cl, name, gp)
                check_cli(tap, cl, name)
        gp2 = check_preempted(tap, cl, sm, name + "-p", truth2) if requeued else None
        if gp and gp2:
            check_metrics(tap, cl, [gp, gp2])
    except Exception as e:
        tap.ok(False, "the suite ran to its end", "%s: %s" % (type(e).__name__, e))
    finally:
        rc, killed = cl.stop()
        cl.check_stopped(tap, rc, killed)
        if tap.failed:
            sys.stderr.write(cl.log_tail(20) + "\n")
        cl.cleanup()
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
