#!/usr/bin/python3
"""Search latency over a large store, beside ListTrainingJobs in the same run.

  /usr/bin/python3 bench/search.py [--jobs 100000] [--repeat 50] [--json FILE]

Starts trainctld (--local-hosts 0, so jobs stay queued) in a temp state
dir, creates --jobs jobs through CreateTrainingJob (32 keep-alive
connections), each with a tag team=tNN (20 teams), a tag shard=sNNN (1000
shards), hyperparameter lr, then times each query --repeat times on one
keep-alive connection (send .. whole body read, the client's garbage
collector off while timing). Every answer must be HTTP 200 and hold the
expected number of results. Prints n, p50, p90, p99 and max in ms per
query; the daemon is stopped by its PID.
"""
import argparse
import gc
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DAEMON = os.path.join(HERE, "..", os.environ.get("BUILD", "build"), "bin", "trainctld")


def request(name, i):
    return {
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "trainctl/python", "TrainingInputMode": "File"},
        "RoleArn": "arn:aws:iam::123456789012:role/bench",
        "HyperParameters": {"sagemaker_program": "\"train.py\"", "lr": "%.5f" % ((i % 997) / 10000.0)},
        "InputDataConfig": [{"ChannelName": "train" if i % 2 else "valid",
                             "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                                             "S3Uri": "s3://bench/data/%d/" % (i % 100)}}}],
        "OutputDataConfig": {"S3OutputPath": "s3://bench/output"},
        "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 10},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "Tags": [{"Key": "team", "Value": "t%02d" % (i % 20)}, {"Key": "shard", "Value": "s%03d" % (i % 1000)}],
    }


def call(conn, target, body):
    data = json.dumps(body).encode()
    conn.request("POST", "/", data, {"Content-Type": "application/x-amz-json-1.1",
                                     "X-Amz-Target": "SageMaker." + target})
    r = conn.getresponse()
    out = r.read()
    return r.status, out


def seed(port, n, threads=32):
    nxt = [0]
    lock = threading.Lock()
    errors = []

    def work():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= n or errors:
                return
            st, out = call(conn, "CreateTrainingJob", request("bench-%06d" % i, i))
            if st != 200:
                errors.append(out[:300])

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise SystemExit("create failed: %r" % errors[0])


def pct(xs, p):
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="trainctl-bench-search-")
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    log = open(os.path.join(tmp, "trainctld.log"), "w")
    d = subprocess.Popen([DAEMON, "--listen", "127.0.0.1:%d" % port, "--state-dir", os.path.join(tmp, "state"),
                          "--local-hosts", "0"], stdout=log, stderr=log)
    try:
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.time() > deadline or d.poll() is not None:
                    raise SystemExit("trainctld did not start; see %s" % log.name)
                time.sleep(0.05)
        t0 = time.time()
        seed(port, a.jobs)
        print("seeded %d jobs in %.1f s" % (a.jobs, time.time() - t0))
        n = a.jobs
        F = lambda name, op, value=None: dict(Name=name, Operator=op, **({} if value is None else {"Value": value}))
        page = lambda expr, **kw: dict(Resource="TrainingJob", SearchExpression=expr, MaxResults=100, **kw)
        queries = [
            ("Search TrainingJobName Equals (indexed)", "Search",
             page(dict(Filters=[F("TrainingJobName", "Equals", "bench-%06d" % (n // 2))])), 1),
            ("Search TrainingJobStatus Equals, default sort (indexed)", "Search",
             page(dict(Filters=[F("TrainingJobStatus", "Equals", "InProgress")])), 100),
            ("Search Tags.shard Equals (indexed tag, %d hits)" % (n // 1000), "Search",
             page(dict(Filters=[F("Tags.shard", "Equals", "s123")])), min(100, n // 1000)),
            ("Search Tags.team Equals (indexed tag, %d hits)" % (n // 20), "Search",
             page(dict(Filters=[F("Tags.team", "Equals", "t07")])), 100),
            ("Search CreationTime > 0, SortBy CreationTime (indexed)", "Search",
             page(dict(Filters=[F("CreationTime", "GreaterThan", "1")]), SortBy="CreationTime"), 100),
            ("Search HyperParameters.lr < 0.0050 (full scan, info)", "Search",
             page(dict(Filters=[F("HyperParameters.lr", "LessThan", "0.0050")])), 100),
            ("ListTrainingJobs StatusEquals InProgress (same store)", "ListTrainingJobs",
             dict(StatusEquals="InProgress", MaxResults=100), 100),
        ]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        results = {}
        for label, target, body, want in queries:
            times = []
            for _ in range(a.repeat):
                gc.disable()
                t = time.perf_counter()
                st, out = call(conn, target, body)
                dt = (time.perf_counter() - t) * 1000.0
                gc.enable()
                if st != 200:
                    raise SystemExit("%s: HTTP %d %s" % (label, st, out[:300]))
                j = json.loads(out)
                got = len(j.get("Results", j.get("TrainingJobSummaries", [])))
                if got != want:
                    raise SystemExit("%s: %d results, expected %d" % (label, got, want))
                times.append(dt)
            r = dict(n=len(times), p50=pct(times, 50), p90=pct(times, 90), p99=pct(times, 99), max=max(times))
            results[label] = r
            print("%-60s n=%d p50 %.2f p90 %.2f p99 %.2f max %.2f ms" % (label, r["n"], r["p50"], r["p90"],
                                                                       r["p99"], r["max"]))
        if a.json:
            json.dump(dict(jobs=n, results=results), open(a.json, "w"), indent=1)
    finally:
        d.send_signal(signal.SIGTERM)
        try:
            d.wait(30)
        except subprocess.TimeoutExpired:
            d.kill()
            d.wait()
        if not os.environ.get("TRAINCTL_BENCH_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept %s" % tmp)


if __name__ == "__main__":
    sys.exit(main())
