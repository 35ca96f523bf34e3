#!/usr/bin/python3
"""The job of bench/sched_trace.py: the same program under Slurm and under
trainctl. It runs `--steps` steps of `--step-sleep` seconds, writes a
checkpoint every `--ckpt-every` steps and, when started again, resumes
from its newest complete checkpoint.

    trace_job.py --name J --steps N --ckpt-every K --step-sleep S
                 --truth DIR [--ckpt-dir D]

Checkpoints are in docs/checkpoints.md's format (step-<10 digits>.rank-0/
with a MANIFEST.json), in --ckpt-dir, else TRAINCTL_CHECKPOINT_DIR (where
trainctl's agent mirrors and restores them). Under Slurm --ckpt-dir is a
folder every host sees, so a requeued job finds its checkpoints there.

Rank 0 (the first host of SM_HOSTS, or the only process outside
trainctl) does the steps and keeps the ground truth in DIR (a folder on
the shared file system): J.jsonl gets one line per attempt start
({"ev": "start", "t", "from": resumed step, "prev": the highest step any
earlier attempt reached}) and one per end ({"ev": "end", "t", "step",
"how": "done" or "term"}); J.max holds the highest step reached and when,
rewritten after every step (an attempt killed without a chance to write
its end line ended at the time in J.max). Other ranks wait until rank 0
is done (J.done), as the ranks of a data-parallel job do, and stop on
SIGTERM. Standard library only.
"""
import argparse
import hashlib
import json
import os
import shutil
import signal
import socket
import sys
import time

FORMAT = "trainctl-checkpoint-1"


class Term(Exception):
    pass


def on_term(signum, frame):
    raise Term()


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_text(path, text):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def ckpt_name(step):
    return "step-%010d.rank-0" % step


def complete(d, name):
    """The step of checkpoint dir d/name when it is complete, else None."""
    if not name.startswith("step-") or not name.endswith(".rank-0"):
        return None
    try:
        with open(os.path.join(d, name, "MANIFEST.json")) as f:
            man = json.load(f)
        step = int(name[5:15])
        if man.get("format") != FORMAT or man.get("step") != step or man.get("rank") != 0:
            return None
        for fe in man["files"]:
            if os.path.getsize(os.path.join(d, name, fe["name"])) != fe["size"]:
                return None
        return step
    except (OSError, ValueError, KeyError, TypeError):
        return None


def latest(d):
    steps = [s for s in (complete(d, n) for n in os.listdir(d)) if s is not None]
    return max(steps) if steps else 0


def save(d, step, keep=2):
    for n in os.listdir(d):
        if n.startswith(".tmp-step-") and ".rank-0." in n:
            shutil.rmtree(os.path.join(d, n), ignore_errors=True)
    tmp = os.path.join(d, ".tmp-%s.%d" % (ckpt_name(step), os.getpid()))
    os.mkdir(tmp)
    data = json.dumps({"step": step}).encode()
    write_file(os.path.join(tmp, "state.json"), data)
    man = {"format": FORMAT, "step": step, "rank": 0, "world_size": 1,
           "files": [{"name": "state.json", "size": len(data),
                      "sha256": hashlib.sha256(data).hexdigest()}]}
    write_file(os.path.join(tmp, "MANIFEST.json"), json.dumps(man).encode())
    fsync_dir(tmp)
    os.rename(tmp, os.path.join(d, ckpt_name(step)))
    fsync_dir(d)
    have = sorted(s for s in (complete(d, n) for n in os.listdir(d)) if s is not None)
    for s in have[:-keep]:
        shutil.rmtree(os.path.join(d, ckpt_name(s)), ignore_errors=True)


def log(a, ev):
    ev["t"] = time.time()
    with open(os.path.join(a.truth, a.name + ".jsonl"), "a") as f:
        f.write(json.dumps(ev) + "\n")
        f.flush()
        os.fsync(f.fileno())


def highest(a):
    try:
        with open(os.path.join(a.truth, a.name + ".max")) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def rank0(a, d):
    os.makedirs(d, exist_ok=True)
    step = latest(d)
    log(a, {"ev": "start", "from": step, "prev": highest(a), "host": socket.gethostname(),
            "attempt": os.environ.get("TRAINCTL_ATTEMPT") or os.environ.get("SLURM_RESTART_COUNT")})
    try:
        while step < a.steps:
            time.sleep(a.step_sleep)
            step += 1
            replace_text(os.path.join(a.truth, a.name + ".max"), "%d %.3f\n" % (step, time.time()))
            if a.ckpt_every and step % a.ckpt_every == 0 and step < a.steps:
                save(d, step)
    except Term:
        log(a, {"ev": "end", "step": step, "how": "term"})
        return 143
    log(a, {"ev": "end", "step": step, "how": "done"})
    replace_text(os.path.join(a.truth, a.name + ".done"), "%.3f\n" % time.time())
    return 0


def other_rank(a):
    done = os.path.join(a.truth, a.name + ".done")
    try:
        while not os.path.exists(done):
            time.sleep(0.1)
    except Term:
        return 143
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--ckpt-every", type=int, default=8)
    ap.add_argument("--step-sleep", type=float, default=0.25)
    ap.add_argument("--truth", required=True)
    ap.add_argument("--ckpt-dir")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    hosts = json.loads(os.environ.get("SM_HOSTS") or "[]")
    me = os.environ.get("SM_CURRENT_HOST")
    if hosts and me and me != hosts[0]:
        return other_rank(a)
    d = a.ckpt_dir or os.environ.get("TRAINCTL_CHECKPOINT_DIR") or "/opt/ml/checkpoints"
    return rank0(a, d)


if __name__ == "__main__":
    sys.exit(main())
