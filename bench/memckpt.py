#!/usr/bin/python3
"""Restore time of a retried attempt's checkpoint: from the host's memory
(trainagent --memory-checkpoint-mb) versus from the store, for the same
checkpoint.

Two embedded local clusters side by side (trainctld --local-hosts 1 each):
one whose agent keeps copies in memory, one whose agent keeps none. Each
trial runs one job on each, interleaved: tests/integration/ft_trainer.py
with a pad.bin of SIZE MiB in every checkpoint, a checkpoint every 10
steps, failing at step 25 of attempt 1; attempt 2 restores step 20. The
figure is the agent's own, from its line in the job's log ("step 20
restored in N ms (source: memory)" or "... restored in N ms from ...
(source: store)"): the time to put the checkpoint folder in place, before
the program starts. The store is the embedded one, which the local agents
read as files (the fastest store there is), or with --s3 an S3 endpoint
over HTTP (a second trainctld, as trainctld --s3-endpoint uses a remote
one), as a host that does not share the controller's folder sees it.

    /usr/bin/python3 bench/memckpt.py --quick [--s3]   # 32 MiB, 2 trials
    /usr/bin/python3 bench/memckpt.py [--s3]           # 256 MiB, 5 trials
"""
import argparse
import glob
import os
import re
import shutil
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import ftlib as fl  # noqa: E402

fl.sc.hermetic_env()
ARGS = ["--heartbeat-ms", "200", "--host-deadline-ms", "1000", "--max-retries", "0"]
TIME_RE = re.compile(r"restored in (\d+) ms.*\(source: (\w+)\)")


OPERATOR = ("AKIDBENCHMEMCKPT0001", "operator/secret/bench/0123456789")


def start_store():
    """A second trainctld serving S3: the store as remote hosts see it."""
    store = fl.sc.Daemon(credentials={"operator": OPERATOR}, name="trainctld-bench-store")
    err = store.start()
    if err:
        raise SystemExit("store: %s" % err)
    os.makedirs(os.path.join(store.state_dir, "s3", fl.BUCKET), exist_ok=True)
    return store


def start(mb, shm, store):
    os.environ["TRAINCTL_MEMORY_CHECKPOINT_MB"] = str(mb)
    os.environ["TRAINCTL_MEMORY_CHECKPOINT_DIR"] = shm
    extra = list(ARGS)
    if store:
        extra += ["--s3-endpoint", store.endpoint]
        os.environ.update({"AWS_ACCESS_KEY_ID": OPERATOR[0], "AWS_SECRET_ACCESS_KEY": OPERATOR[1],
                           "AWS_REGION": "us-east-1"})
    cl = fl.LocalCluster(1, extra, prefix="trainctl-bench-memckpt-")
    err = cl.start()
    for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"):
        os.environ.pop(k, None)
    if err:
        raise SystemExit("trainctld: %s" % err)
    return cl


def restore_ms(cl, name):
    """(ms, source) of attempt 2's restore, from the job's log."""
    found = []
    for path in sorted(glob.glob(os.path.join(cl.logs_dir(name), "**"), recursive=True)):
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                found += [m.groups() for m in TIME_RE.finditer(f.read())]
    if len(found) < 2:
        raise SystemExit("%s: restores logged: %s" % (name, found))
    return int(found[-1][0]), found[-1][1]


def trial(cl, name, size_mb):
    sm = fl.sc.make_client(cl.endpoint)
    hps = {"steps": 30, "ckpt_every": 10, "step_sleep": 0.01, "ckpt_pad_kb": size_mb * 1024,
           "fail_at_step": 25, "fail_attempt": 1}
    sm.create_training_job(**fl.job_request(name, 1, hps, retries=1, max_runtime=600))
    d, _ = fl.wait_job(sm, name, fl.terminal, 600, interval=0.2)
    if d["TrainingJobStatus"] != "Completed":
        raise SystemExit("%s: %s (%s)" % (name, d["TrainingJobStatus"], d.get("FailureReason")))
    return restore_ms(cl, name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--size-mb", type=int)
    ap.add_argument("--trials", type=int)
    ap.add_argument("--s3", action="store_true", help="the store over HTTP: a second trainctld as S3 endpoint")
    a = ap.parse_args()
    size = a.size_mb or (32 if a.quick else 256)
    trials = a.trials or (2 if a.quick else 5)
    shm = "/dev/shm/trainctl-bench-memckpt-%d" % os.getpid()
    store = start_store() if a.s3 else None
    mem = start(4 * size + 64, shm, store)
    stor = start(0, shm, store)
    times = {"memory": [], "store": []}
    try:
        for i in range(trials):
            for cl, want in ((mem, "memory"), (stor, "store")):
                ms, src = trial(cl, "memckpt-%s-%d" % (want, i), size)
                if src != want:
                    raise SystemExit("trial %d: restored from %s, want %s" % (i, src, want))
                times[want].append(ms)
    finally:
        for cl in (mem, stor):
            cl.stop()
        if store:
            store.stop()
        shutil.rmtree(shm, ignore_errors=True)
    print("checkpoint of %d MiB (one rank), %d trials each, interleaved; store: %s; 2-core machine" % (
        size, trials, "S3 over HTTP (a second trainctld)" if store else "the embedded store's folder"))
    print("| source | median ms | min | max |")
    print("| --- | --- | --- | --- |")
    for src in ("memory", "store"):
        v = times[src]
        print("| %s | %d | %d | %d |" % (src, statistics.median(v), min(v), max(v)))
    m, s = statistics.median(times["memory"]), statistics.median(times["store"])
    print("store / memory: %.1fx" % (s / m if m else float("inf")))


if __name__ == "__main__":
    main()
