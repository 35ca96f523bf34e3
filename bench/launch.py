#!/usr/bin/python3
"""Warm launch latency on the embedded local cluster.

From the CreateTrainingJob response to every process of a 3-host job having
exec'd: each process is `/bin/date +%s%N` (started through
ContainerEntrypoint), whose only output line is the wall-clock time at which
it began running; the controller keeps that line in the job's logs. The
latency of a job is the latest of its hosts' times minus the time the client
received the CreateTrainingJob response (same machine, same clock).

Usage: bench/launch.py [--jobs 50] [--hosts 3] [--build build]
Prints the median and p99 over the jobs.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    a = ap.parse_args()
    state = tempfile.mkdtemp(prefix="trainctl-bench-launch.")
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    log = open(os.path.join(state, "trainctld.log"), "w")
    d = subprocess.Popen([os.path.join(a.build, "bin", "trainctld"), "--listen",
                          "127.0.0.1:%d" % port, "--state-dir", state,
                          "--local-hosts", str(a.hosts)], stdout=log, stderr=log)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                hosts = get(base, "/v1/hosts")["hosts"]
                if sum(h["state"] == "ready" for h in hosts) == a.hosts:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            sys.exit("bench: hosts did not become ready")
        lat = []
        for i in range(a.jobs + 1):
            name = "launch-%d-%d" % (os.getpid(), i)
            body = {
                "TrainingJobName": name,
                "RoleArn": "arn:aws:iam::000000000000:role/bench",
                "AlgorithmSpecification": {
                    "TrainingImage": "trainctl/python",
                    "TrainingInputMode": "File",
                    "ContainerEntrypoint": ["/bin/date", "+%s%N"]},
                "OutputDataConfig": {"S3OutputPath": "s3://bench-out/launch"},
                "ResourceConfig": {"InstanceType": "ml.c5.xlarge",
                                   "InstanceCount": a.hosts, "VolumeSizeInGB": 1},
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
                sys.exit("bench: job %s ended %s: %s" % (name, st["TrainingJobStatus"],
                                                        st.get("FailureReason")))
            # Log lines travel in batches of their own; give the last
            # ones a moment.
            for _ in range(200):
                streams = get(base, "/v1/training-jobs/%s/logs" % name)["streams"]
                starts = []
                for s in streams:
                    ev = get(base, "/v1/training-jobs/%s/logs?stream=%s" % (name, s))["events"]
                    starts += [int(e["message"]) for e in ev if e["message"].isdigit()]
                if len(starts) >= a.hosts:
                    break
                time.sleep(0.01)
            if len(starts) != a.hosts:
                sys.exit("bench: job %s: %d start times, expected %d" % (name, len(starts), a.hosts))
            if i == 0:
                continue  # warm-up
            lat.append((max(starts) - t0) / 1e6)
        lat.sort()
        p99 = lat[min(len(lat) - 1, int(round(0.99 * (len(lat) - 1))))]
        print("warm launch, %d-host jobs, %d jobs: median %.1f ms, p99 %.1f ms, min %.1f ms, max %.1f ms"
              % (a.hosts, len(lat), statistics.median(lat), p99, lat[0], lat[-1]))
    finally:
        d.terminate()
        d.wait(timeout=30)


if __name__ == "__main__":
    main()
