#!/usr/bin/python3
"""Launch latency of a job that reuses a managed warm pool against a cold
one on free hosts, on the embedded local cluster, in the same run.

Each round creates a cold job (2 hosts, a keep-alive period, placed on free
hosts), waits for its end (its pool is then Available), then a matching
job that reuses the pool's hosts. Each process is `/bin/date +%s%N`
(through ContainerEntrypoint), whose only output line is the wall-clock
time at which it began running; a job's latency is the latest of its
hosts' times minus the time the client received the CreateTrainingJob
response (same machine, same clock). Rounds use different volume sizes,
so a cold job never matches the previous round's pool, and each round
waits for the end of the warm job's own 1 s pool, so the cold job finds
free hosts at once.

Usage: bench/warm_pool.py [--runs 10] [--build build]
Prints the medians (and min/max) of both kinds over the rounds (the first
round is a warm-up).
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HOSTS = 4
COUNT = 2


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def call(base, op, body):
    req = urllib.request.Request(base + "/", data=json.dumps(body).encode(),
                                 headers={"X-Amz-Target": "SageMaker." + op,
                                          "Content-Type": "application/x-amz-json-1.1"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def get(base, path):
    with urllib.request.urlopen(base + path, timeout=30) as r:
        return json.loads(r.read())


def job(base, name, volume, keep):
    body = {
        "TrainingJobName": name,
        "RoleArn": "arn:aws:iam::000000000000:role/bench",
        "AlgorithmSpecification": {
            "TrainingImage": "trainctl/python",
            "TrainingInputMode": "File",
            "ContainerEntrypoint": ["/bin/date", "+%s%N"]},
        "OutputDataConfig": {"S3OutputPath": "s3://bench-out/warm"},
        "ResourceConfig": {"InstanceType": "ml.c5.xlarge", "InstanceCount": COUNT,
                           "VolumeSizeInGB": volume, "KeepAlivePeriodInSeconds": keep},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
    }
    call(base, "CreateTrainingJob", body)
    t0 = time.time_ns()
    while True:
        st = call(base, "DescribeTrainingJob", {"TrainingJobName": name})
        if st["TrainingJobStatus"] in ("Completed", "Failed", "Stopped"):
            break
        time.sleep(0.01)
    if st["TrainingJobStatus"] != "Completed":
        sys.exit("bench: job %s ended %s: %s" % (name, st["TrainingJobStatus"], st.get("FailureReason")))
    for _ in range(200):
        starts = []
        for s in get(base, "/v1/training-jobs/%s/logs" % name)["streams"]:
            ev = get(base, "/v1/training-jobs/%s/logs?stream=%s" % (name, s))["events"]
            starts += [int(e["message"]) for e in ev if e["message"].isdigit()]
        if len(starts) >= COUNT:
            break
        time.sleep(0.01)
    if len(starts) != COUNT:
        sys.exit("bench: job %s: %d start times, expected %d" % (name, len(starts), COUNT))
    return (max(starts) - t0) / 1e6


def pool_status(base, name):
    d = call(base, "DescribeTrainingJob", {"TrainingJobName": name})
    return d.get("WarmPoolStatus", {})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    a = ap.parse_args()
    state = tempfile.mkdtemp(prefix="trainctl-bench-warm.")
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    log = open(os.path.join(state, "trainctld.log"), "w")
    d = subprocess.Popen([os.path.join(a.build, "bin", "trainctld"), "--listen",
                          "127.0.0.1:%d" % port, "--state-dir", state,
                          "--local-hosts", str(HOSTS)], stdout=log, stderr=log)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                hosts = get(base, "/v1/hosts")["hosts"]
                if sum(h["state"] == "ready" for h in hosts) == HOSTS:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            sys.exit("bench: hosts did not become ready")
        cold, warm = [], []
        tag = os.getpid()
        for i in range(a.runs + 1):
            volume = 10 + i
            c = job(base, "wp-cold-%d-%d" % (tag, i), volume, 60)
            w = job(base, "wp-warm-%d-%d" % (tag, i), volume, 1)
            wp = pool_status(base, "wp-cold-%d-%d" % (tag, i))
            if wp.get("Status") != "Reused":
                sys.exit("bench: round %d: the cold job's pool is %s" % (i, wp))
            # The warm job's own pool (1 s) ends before the next round, so
            # that every cold job finds free hosts at once.
            for _ in range(500):
                if pool_status(base, "wp-warm-%d-%d" % (tag, i)).get("Status") == "Terminated":
                    break
                time.sleep(0.01)
            if i == 0:
                continue  # warm-up
            cold.append(c)
            warm.append(w)
        print("%d rounds, %d-host jobs, create -> all ranks running, ms:" % (len(cold), COUNT))
        print("| | median | min | max |")
        print("| --- | --: | --: | --: |")
        for label, v in (("cold: free hosts", cold), ("warm: reusing a pool", warm)):
            print("| %s | %.1f | %.1f | %.1f |" % (label, statistics.median(v), min(v), max(v)))
    finally:
        d.terminate()
        d.wait(timeout=30)


if __name__ == "__main__":
    main()
