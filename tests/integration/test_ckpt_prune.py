#!/usr/bin/python3
"""Checkpoints the program pruned are pruned from the store too
(docs/distributed.md, "Checkpoints").

Embedded local cluster (trainctld --local-hosts 2):
  (q1) ft_trainer.py writes a libtrainer-format checkpoint every 10 steps
       for 80 steps and keeps the newest 2 on its host: once the job
       Completed, CheckpointConfig.S3Uri holds exactly those two, both
       complete (their MANIFEST.json matches their files)
  (q2) after a restart (the rank fails at step 45 of attempt 1) the second
       attempt resumes from step 40 and the store again ends with only the
       newest two, no step folder of attempt 1 left behind

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_ckpt_prune.py
BUILD names the build directory (default build).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
from ftlib import expect, short  # noqa: E402

fl.sc.hermetic_env()

ARGS = ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "--max-retries", "0", "-v"]
NEWEST = ["step-0000000070.rank-0", "step-0000000080.rank-0"]


def run(cl, sm, name, hps, retries=None):
    req = fl.job_request(name, 1, dict({"steps": 80, "ckpt_every": 10, "step_sleep": 0.05}, **hps),
                         retries=retries)
    sm.create_training_job(**req)
    d, _ = fl.wait_job(sm, name, fl.terminal, 180)
    expect(d["TrainingJobStatus"] == "Completed", "%s: %s (%s)\n%s" % (
        name, d["TrainingJobStatus"], d.get("FailureReason"), cl.log_tail(15)))
    probs, names = fl.store_problems(cl.s3_path(fl.ckpt_uri(name)))
    expect(not probs, "torn checkpoints in the store: %s" % probs)
    expect(sorted(names) == NEWEST, "the store holds %s, want the newest two %s" % (names, NEWEST))
    return d


def case_q1(cl, sm):
    run(cl, sm, "prune-q1", {})
    return "store: %s" % ", ".join(NEWEST)


def case_q2(cl, sm):
    d = run(cl, sm, "prune-q2", {"fail_at_step": 45, "fail_attempt": 1}, retries=1)
    restarts = [m for st, m in fl.transitions(d) if st == "Restarting"]
    expect(len(restarts) == 1, "restarts: %s" % short(fl.transitions(d), 800))


def main():
    tap = fl.sc.Tap()
    cl = fl.LocalCluster(2, ARGS, prefix="trainctl-prune-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --local-hosts 2 starts", err):
        sm = cl.client()
        r = tap.case("(q1) the checkpoints the program pruned are gone from the store too", case_q1, cl, sm)
        if isinstance(r, str):
            tap.note(r)
        tap.case("(q2) after a restart the store again holds only the newest two", case_q2, cl, sm)
    rc, killed = cl.stop()
    cl.check_stopped(tap, rc, killed)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
