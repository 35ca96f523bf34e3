#!/usr/bin/python3
"""examples/image_classification on the embedded local cluster
(trainctld --local-hosts 3), through the request the SageMaker Python SDK
sends for a PyTorch estimator with
distribution={"torch_distributed": {"enabled": True}} (tests/integration/
imgcls.py), at the small size of imgcls.py (3000 training images as 6
shards of a ShardedByS3Key channel, 1000 test images, 2 epochs):

  (a) train_ddp.py on 3 hosts: Completed, each host trained on its own
      1000 images, held-out accuracy >= DDP_MIN_ACC
  (b) the same with a host killed mid-run: once a checkpoint is in the
      store, every process of the job on algo-3 gets SIGKILL; the job
      restarts (RetryStrategy), attempt 2 resumes from the checkpoint's
      step (> 0), and the job Completes with the steps and, within
      KILL_TOL, the accuracy of (a)
  (c) train_pipeline.py on 2 hosts (the parameters split between them):
      Completed, held-out accuracy >= PIPE_MIN_ACC

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_image_classification.py
IMG_ONLY=a,b runs only those cases; TRAINCTL_TEST_KEEP=1 keeps the temp dir.
"""
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
import imgcls as ic  # noqa: E402
from ftlib import expect, short  # noqa: E402

fl.sc.hermetic_env()

ARGS = ["--heartbeat-ms", "200", "--host-deadline-ms", "5000", "--max-retries", "0", "--grace-period", "2"]
ONLY = set(x.strip() for x in os.environ.get("IMG_ONLY", "").split(",") if x.strip())
RUN = "%x" % (int(time.time() * 1000) % 0xfffffff)
BUCKET = "trainctl-img"
CODE_URI = "s3://%s/code/image_classification/sourcedir.tar.gz" % BUCKET
DATA_URI = "s3://%s/fashion-mnist/" % BUCKET
OUT = "s3://%s/out" % BUCKET


def log(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


def job_text(cl, name):
    """Every line the job's processes wrote, all hosts and attempts."""
    out = []
    d = cl.logs_dir(name)
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        with open(os.path.join(d, f), "rb") as fh:
            for line in fh.read().decode("utf-8", "replace").splitlines():
                parts = line.split("\t", 3)
                if len(parts) == 4:
                    out.append(parts[3])
    return "\n".join(out)


def run_job(cl, sm, name, program, count, hps, kill=False, sharded=True):
    req = ic.request(name, program, count, CODE_URI, DATA_URI, OUT, "ml.m5.large", hps,
                     ckpt_uri="s3://%s/ckpt/%s/" % (BUCKET, name), retries=1 if kill else None,
                     sharded=sharded, env={"FT_MARKER": name})
    sm.create_training_job(**req)
    killed = []
    if kill:
        ckpt = os.path.join(cl.s3_path("s3://%s/ckpt/%s/" % (BUCKET, name)), "ckpt.pt")
        deadline = time.time() + 90
        while not killed and time.time() < deadline:
            if os.path.exists(ckpt):
                killed = [p for p, host, att, _ in fl.procs_with(name) if host == "algo-3" and att == 1]
                fl.kill_pids(killed)
            time.sleep(0.05)
        expect(killed, "no checkpoint in the store, or no process of algo-3, within 90 s")
    d, seen = fl.wait_job(sm, name, fl.terminal, 150, interval=0.2)
    text = job_text(cl, name)
    expect(d["TrainingJobStatus"] == "Completed", "%s: %s (seen %s)\n%s" % (
        d["TrainingJobStatus"], d.get("FailureReason"), " -> ".join(s for _, s in seen), text[-2000:]))
    return d, text, killed


def case_a(cl, sm, ref):
    name = "img-ddp-%s" % RUN
    t = time.time()
    d, text, _ = run_job(cl, sm, name, "train_ddp.py", 3, ic.HPS)
    res = ic.finals(text)
    expect(len(res) == 1, "final lines: %s\n%s" % (res, text[-2000:]))
    expect("images=%d" % (ic.TRAIN_SAMPLES // 3) in text, "rank 0 did not train on its third:\n" + text[-1500:])
    acc, steps = res[0]
    expect(acc >= ic.DDP_MIN_ACC, "accuracy %.4f < %.2f" % (acc, ic.DDP_MIN_ACC))
    ref.update(acc=acc, steps=steps)
    log("(a) accuracy %.4f after %d steps, %.1f s" % (acc, steps, time.time() - t))


def case_b(cl, sm, ref):
    name = "img-kill-%s" % RUN
    hps = dict(ic.HPS, **{"step-sleep": 0.03})
    t = time.time()
    d, text, killed = run_job(cl, sm, name, "train_ddp.py", 3, hps, kill=True)
    statuses = [s for s, _ in fl.transitions(d)]
    expect("Restarting" in statuses, "no Restarting transition: %s" % short(fl.transitions(d), 1200))
    res, starts = ic.finals(text), ic.resumes(text)
    expect(len(starts) == 2 and starts[0] == 0 and starts[1] > 0,
           "resume steps %s (want 0, then the checkpoint's step)\n%s" % (starts, text[-2000:]))
    expect(len(res) == 1, "final lines: %s\n%s" % (res, text[-2000:]))
    acc, steps = res[0]
    if ref:
        expect(steps == ref["steps"], "%d steps, the undisturbed run %d" % (steps, ref["steps"]))
        expect(abs(acc - ref["acc"]) <= ic.KILL_TOL, "accuracy %.4f, the undisturbed run %.4f (tolerance %.2f)" % (
            acc, ref["acc"], ic.KILL_TOL))
    expect(acc >= ic.DDP_MIN_ACC, "accuracy %.4f < %.2f" % (acc, ic.DDP_MIN_ACC))
    log("(b) killed %d processes of algo-3; attempt 2 resumed at step %d; accuracy %.4f (undisturbed %s), %.1f s"
        % (len(killed), starts[1], acc, ref.get("acc"), time.time() - t))


def case_c(cl, sm, ref):
    name = "img-pipe-%s" % RUN
    t = time.time()
    d, text, _ = run_job(cl, sm, name, "train_pipeline.py", 2, ic.PIPE_HPS, sharded=False)
    res = ic.finals(text)
    expect(len(res) == 1, "final lines: %s\n%s" % (res, text[-2000:]))
    expect("stages=2 blocks=[[0, 1], [2, 3]]" in text, "the blocks were not split:\n" + text[-1500:])
    acc, _ = res[0]
    expect(acc >= ic.PIPE_MIN_ACC, "accuracy %.4f < %.2f" % (acc, ic.PIPE_MIN_ACC))
    log("(c) accuracy %.4f, %.1f s" % (acc, time.time() - t))


CASES = [
    ("a", "(a) DDP CNN on 3 hosts, ShardedByS3Key, SDK-shaped request: Completed, accuracy >= %.2f"
     % ic.DDP_MIN_ACC),
    ("b", "(b) algo-3 killed mid-run: restarts from the checkpoint, same steps and accuracy (+-%.2f)"
     % ic.KILL_TOL),
    ("c", "(c) pipeline stages on 2 hosts: Completed, accuracy >= %.2f" % ic.PIPE_MIN_ACC),
]


def main():
    tap = fl.sc.Tap()
    reason = ic.skip_reason()
    if reason:
        print("1..0 # SKIP %s" % reason)
        return 0
    cl = fl.LocalCluster(3, ARGS, prefix="trainctl-img-")
    err = cl.start()
    if tap.ok(err is None, "trainctld --local-hosts 3 starts, 3 hosts ready", err):
        ic.put_data(cl.s3_path(DATA_URI))
        ic.put_code(cl.s3_path(CODE_URI))
        sm = cl.client()
        ref = {}
        for c, title in CASES:
            if ONLY and c not in ONLY:
                continue
            try:
                globals()["case_" + c](cl, sm, ref)
                tap.ok(True, title)
            except Exception as e:
                tap.ok(False, title, "%s: %s\n%s\n%s" % (type(e).__name__, e, traceback.format_exc(),
                                                          cl.log_tail(15)))
    rc, killed = cl.stop()
    cl.check_stopped(tap, rc, killed)
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
