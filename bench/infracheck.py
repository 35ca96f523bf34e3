#!/usr/bin/python3
"""What the infrastructure checks cost a job's start, network part
included (docs/distributed.md, "Infrastructure checks").

A namespace cluster (scripts/cluster.sh up, root) of --hosts hosts; for
each job size in turn, jobs with `InfraCheckConfig.EnableInfraCheck`
true and jobs without, interleaved trial by trial (a tiny Python program,
tests/integration/dist_probe.py). From Describe's transitions:
    start     Starting's StartTime -> Training's StartTime (the hosts
              prepare, check when asked, and are released together)
    check     the slowest host's check time, as the Training transition
              says it ("Infrastructure checks passed on N hosts in X s")
    rtt, bw   the hosts' median best round trip and bandwidth it gives
Medians and spreads (min-max) over the trials.

Only public interfaces: the SageMaker API (CreateTrainingJob signed with
SigV4 by hand: Debian's botocore predates InfraCheckConfig; Describe
through boto3), scripts/cluster.sh.

Usage: /usr/bin/python3 bench/infracheck.py [--hosts 6] [--trials 10]
       /usr/bin/python3 bench/infracheck.py --quick   (3 hosts, 3 trials)
"""
import argparse
import http.client
import json
import os
import re
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import distlib as dl  # noqa: E402
from distlib import sc  # noqa: E402

dl.PREFIX, dl.NET, dl.PORT = sc.run_names("ib")
dl.STATE = "/tmp/trainctl-cluster-%s" % dl.PREFIX
PASSED_RE = re.compile(r"Infrastructure checks passed on (\d+) hosts? in (\d+\.\d) s\.(?: Network: round trip "
                       r"([\d.]+) ms, (\d+) Mbit/s)?")


def create(cluster, req):
    """CreateTrainingJob with our own SigV4 signature."""
    body = json.dumps(req).encode()
    host = "%s:%d" % (cluster.addr, dl.PORT)
    hs = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker.CreateTrainingJob"}
    hs.update(sc.sigv4_sign("POST", host, "/", "", body, cluster.key, cluster.secret, hs))
    conn = http.client.HTTPConnection(cluster.addr, dl.PORT, timeout=30)
    try:
        conn.request("POST", "/", body=body, headers=hs)
        r = conn.getresponse()
        text = r.read().decode("utf-8", "replace")
    finally:
        conn.close()
    if r.status != 200:
        raise RuntimeError("CreateTrainingJob %s: HTTP %d %s" % (req["TrainingJobName"], r.status, text))


def one(cluster, sm, name, count, check):
    req = dl.probe_request(name, count)
    if check:
        req["InfraCheckConfig"] = {"EnableInfraCheck": True}
    create(cluster, req)
    d, seen = dl.wait_job(sm, name, 120)
    if d["TrainingJobStatus"] != "Completed":
        raise RuntimeError("%s: %s %r (%s)" % (name, d["TrainingJobStatus"], d.get("FailureReason"), seen))
    tr = d.get("SecondaryStatusTransitions") or []
    t0 = next(t["StartTime"] for t in tr if t["Status"] == "Starting")
    tt = next(t for t in tr if t["Status"] == "Training")
    out = {"start": (tt["StartTime"] - t0).total_seconds()}
    m = PASSED_RE.search(tt.get("StatusMessage") or "")
    if check:
        if not m:
            raise RuntimeError("%s: no passed checks in %r" % (name, tt.get("StatusMessage")))
        out["check"] = float(m.group(2))
        if m.group(3):
            out["rtt"] = float(m.group(3))
            out["bw"] = int(m.group(4))
    return out


def summary(xs, fmt):
    if not xs:
        return "-"
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(xs), min(xs), max(xs))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=6)
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="3 hosts, 3 trials")
    a = ap.parse_args()
    if a.quick:
        a.hosts, a.trials = 3, 3
    if os.geteuid() != 0:
        print("needs root (network namespaces)")
        return 77
    dl.N_HOSTS = a.hosts
    sizes = sorted({2, max(2, a.hosts * 2 // 3), a.hosts})
    cluster = dl.Cluster()
    run = "%x" % (int(time.time() * 1000) % 0xfffffff)
    res = {}
    try:
        err = cluster.up()
        if err:
            print(err)
            return 1
        dl.place_probe(cluster)
        sm = cluster.client()
        k = 0
        for trial in range(a.trials):
            for n in sizes:
                for check in (False, True):
                    k += 1
                    name = "ib-%s-%d" % (run, k)
                    r = one(cluster, sm, name, n, check)
                    res.setdefault((n, check), []).append(r)
            print("# trial %d of %d done" % (trial + 1, a.trials), flush=True)
    finally:
        cluster.down()
    print("| hosts | checks | start (s) | check (s) | round trip (ms) | bandwidth (Mbit/s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in sizes:
        for check in (False, True):
            rs = res.get((n, check), [])
            print("| %d | %s | %s | %s | %s | %s |" % (
                n, "on" if check else "off", summary([r["start"] for r in rs], "%.2f"),
                summary([r["check"] for r in rs if "check" in r], "%.1f"),
                summary([r["rtt"] for r in rs if "rtt" in r], "%.2f"),
                summary([r["bw"] for r in rs if "bw" in r], "%.0f")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
