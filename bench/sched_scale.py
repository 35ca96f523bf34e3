#!/usr/bin/python3
"""The scheduler at scale: N simulated hosts, a deep queue of service jobs.

    /usr/bin/python3 bench/sched_scale.py                  # 5,000 hosts, 50 shares
    /usr/bin/python3 bench/sched_scale.py --hosts 500 --submit-seconds 2 --duration 10 --smoke

Starts build/bin/trainctld (no credentials, loopback) with an inventory of
N hosts of one type whose agents are bench/scale.py's simulated ones (the
agent protocol, every assignment "running" 5-25 s, then done). Makes one
AWS Batch service environment, a fair-share scheduling policy with
--shares share identifiers of weights 1..4, and one job queue. Then:

- submit: SubmitServiceJob for --submit-seconds (10) through wrk
  (bench/submit.lua, --conns connections) as fast as the controller
  answers, each a training job of 1-4 hosts in share s<k>: at 2,000/s that
  queues 20,000 jobs
- window (--duration s, after the queue is full): the controller's
  scheduling passes and decisions, from the histograms that GET /metrics
  serves (trainctl_sched_pass_duration_seconds,
  trainctl_sched_decision_duration_seconds; p50/p99 are the bucket bounds
  the quantile falls under), passes per second, assignments ended per
  second (jobs ending, hosts freed, queued jobs started), trainctld's CPU
  and RSS, the jobs still queued

Exit status 0 when nothing failed (and, without --smoke, the goals are
met: decision p99 < 50 ms, >= 2,000 SubmitServiceJob/s).
"""
import argparse
import asyncio
import json
import multiprocessing
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import scale  # noqa: E402  (the simulated hosts)

JSON = {"Content-Type": "application/json"}
ITYPE = scale.BULK_TYPE


async def batch(conn, op, body):
    st, ans = await conn.request("POST", "/v1/" + op, json.dumps(body).encode(), JSON)
    if st != 200:
        raise RuntimeError("%s: HTTP %d %s" % (op, st, ans[:300]))
    return json.loads(ans)


async def make_queue(port, shares):
    c = scale.Conn(port)
    env = await batch(c, "createserviceenvironment", {
        "serviceEnvironmentName": "bench-env", "serviceEnvironmentType": "SAGEMAKER_TRAINING",
        "capacityLimits": [{"maxCapacity": 1000000, "capacityUnit": "NUM_INSTANCES"}]})
    pol = await batch(c, "createschedulingpolicy", {
        "name": "bench-fair", "fairsharePolicy": {
            "shareDecaySeconds": 3600,
            "shareDistribution": [{"shareIdentifier": "s%d" % k, "weightFactor": 1 + k % 4}
                                  for k in range(shares)]}})
    q = await batch(c, "createjobqueue", {
        "jobQueueName": "bench-q", "priority": 1, "jobQueueType": "SAGEMAKER_TRAINING",
        "schedulingPolicyArn": pol["arn"],
        "serviceEnvironmentOrder": [{"order": 1,
                                     "serviceEnvironment": env["serviceEnvironmentArn"]}]})
    c.close()
    return q["jobQueueArn"]


def histogram(text, name):
    """{le: cumulative count} of an unlabelled histogram in /metrics."""
    out = {}
    for m in re.finditer(r'^%s_bucket\{le="([^"]+)"\} (\d+)$' % name, text, re.M):
        out[m.group(1)] = int(m.group(2))
    return out


def quantile(h0, h1, q):
    """The bucket bound under which quantile q of the window's samples fall."""
    diff = [(float("inf") if le == "+Inf" else float(le), h1[le] - h0.get(le, 0)) for le in h1]
    diff.sort()
    total = diff[-1][1] if diff else 0
    if not total:
        return None, 0
    for le, cum in diff:
        if cum >= q * total:
            return le * 1000.0, total
    return float("inf"), total


def gauge_sum(text, name, **labels):
    n = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        if all('%s="%s"' % (k, v) in line for k, v in labels.items()):
            n += float(line.rsplit(" ", 1)[1])
    return n


async def metrics(port):
    c = scale.Conn(port)
    st, ans = await c.request("GET", "/metrics")
    c.close()
    if st != 200:
        raise RuntimeError("GET /metrics: HTTP %d" % st)
    return ans.decode()


def submit(args, port, queue_arn, tmp):
    """SubmitServiceJob through wrk for --submit-seconds: (ok, not ok, seconds, output)."""
    log = os.path.join(tmp, "wrk.log")
    t0 = time.monotonic()
    with open(log, "w") as f:
        subprocess.run(["wrk", "-t%d" % args.threads, "-c%d" % args.conns,
                        "-d%ds" % args.submit_seconds, "--timeout", "10s",
                        "-s", os.path.join(HERE, "submit.lua"),
                        "http://127.0.0.1:%d" % port, "--", queue_arn, str(args.shares)],
                       stdout=f, stderr=subprocess.STDOUT, check=False)
    took = time.monotonic() - t0
    with open(log) as f:
        text = f.read()
    m = re.search(r"RESULT ok=(\d+) non200=(\d+)", text)
    if not m:
        raise RuntimeError("wrk said: %s" % text[-500:])
    return int(m.group(1)), int(m.group(2)), took, text


async def window(args, port, pid, shared, res):
    m0 = await metrics(port)
    c0, t0 = scale.cpu_s(pid), time.monotonic()
    shared.measuring.value = 1
    await asyncio.sleep(args.duration)
    shared.measuring.value = 0
    m1 = await metrics(port)
    c1, t1 = scale.cpu_s(pid), time.monotonic()
    res["cpu_pct"] = 100.0 * (c1 - c0) / (t1 - t0)
    for key, name in (("pass", "trainctl_sched_pass_duration_seconds"),
                      ("decide", "trainctl_sched_decision_duration_seconds")):
        h0, h1 = histogram(m0, name), histogram(m1, name)
        res[key + "_p50_ms"], n = quantile(h0, h1, 0.50)
        res[key + "_p99_ms"], _ = quantile(h0, h1, 0.99)
        res["passes"] = n
    res["passes_per_s"] = res["passes"] / (t1 - t0)
    res["queued_at_end"] = gauge_sum(m1, "trainctl_sched_jobs", state="queued")
    res["running_at_end"] = gauge_sum(m1, "trainctl_sched_jobs", state="running")
    res["hosts_held_at_end"] = gauge_sum(m1, "trainctl_sched_hosts")


def run(args):
    tmp = tempfile.mkdtemp(prefix="trainctl-sched-scale.")
    state = os.path.join(tmp, "state")
    port = scale.free_port()
    n = args.hosts
    names = ["sim-%05d" % i for i in range(n)]
    with open(os.path.join(tmp, "inventory.json"), "w") as f:
        json.dump({"hosts": [{"name": h, "agent": "external", "instance_type": ITYPE,
                              "cpus": 8} for h in names]}, f)
    log = open(os.path.join(tmp, "trainctld.log"), "w")
    proc = subprocess.Popen([args.trainctld, "--listen", "127.0.0.1:%d" % port,
                             "--state-dir", state, "--inventory",
                             os.path.join(tmp, "inventory.json"), "--local-hosts", "0"],
                            stdout=log, stderr=subprocess.STDOUT)
    procs = args.procs or max(1, min(4, (n + 999) // 1000))
    shared = scale.Shared(procs)
    workers, res, errors = [], {"hosts": n, "shares": args.shares, "procs": procs}, []
    loop = scale.new_loop()
    try:
        loop.run_until_complete(scale.wait_up(scale.Conn(port), proc, log))
        tokens = []
        for i, h in enumerate(names):
            tokens.append((i, h, scale.host_token(state, h)))
        ctx = multiprocessing.get_context("fork")
        for k in range(procs):
            w = ctx.Process(target=scale.worker_main,
                            args=(port, args.seed, k, shared, tokens[k::procs], set()))
            w.start()
            workers.append(w)
        shared.ready.wait(timeout=180)
        queue_arn = loop.run_until_complete(make_queue(port, args.shares))
        c0 = scale.cpu_s(proc.pid)
        ok, bad, took, text = submit(args, port, queue_arn, tmp)
        print("submitted %d in %.1f s" % (ok, took), file=sys.stderr)
        res["submit_ok"], res["submit_non200"] = ok, bad
        res["submit_per_s"] = ok / args.submit_seconds
        res["submit_cpu_pct"] = 100.0 * (scale.cpu_s(proc.pid) - c0) / took
        if bad:
            errors.append("SubmitServiceJob: %d answers not 200: %s" % (bad, text[-300:]))
        loop.run_until_complete(window(args, port, proc.pid, shared, res))
        res["rss_mb"] = scale.rss_mb(proc.pid)
        res["alive"] = proc.poll() is None
        shared.stop.set()
        shared.freeze.set()
        got = [shared.results.get(timeout=60) for _ in workers]
        res["ended_per_s"] = sum(g["ended"] for g in got) / args.duration
        res["sim_errors"] = sum(g["n_errors"] for g in got)
        errors += [e for g in got for e in g["errors"]]
    finally:
        scale.shut_down(shared, workers, loop, proc, log, tmp, args.keep)
    res["errors"] = errors[:5]
    return res


def report(args, r):
    print("\n==== the scheduler: %d simulated hosts, service jobs of 1-4 hosts in %d "
          "fair shares (%d CPUs, the simulator and wrk on the same machine) ====" % (
              r["hosts"], r["shares"], os.cpu_count()))
    print("SubmitServiceJob: %d answered in %d s, %.0f/s (trainctld %.0f%% of a core)" % (
        r["submit_ok"], args.submit_seconds, r["submit_per_s"], r["submit_cpu_pct"]))
    print("window %.0f s: %d passes (%.1f/s); pass p50 <= %s ms, p99 <= %s ms; "
          "decision p50 <= %s ms, p99 <= %s ms" % (
              args.duration, r["passes"], r["passes_per_s"], r["pass_p50_ms"], r["pass_p99_ms"],
              r["decide_p50_ms"], r["decide_p99_ms"]))
    print("assignments ended %.0f/s; at the end %d jobs queued, %d running on %d hosts; "
          "trainctld %.0f%% of a core, RSS %.0f MB" % (
              r["ended_per_s"], r["queued_at_end"], r["running_at_end"], r["hosts_held_at_end"],
              r["cpu_pct"], r["rss_mb"]))
    for e in r["errors"]:
        print("    error: %s" % e)
    bad = bool(r["errors"]) or r["submit_non200"] or r["sim_errors"] or not r["alive"] \
        or not r["passes"]
    if not args.smoke and (r["decide_p99_ms"] is None or r["decide_p99_ms"] >= 50
                           or r["submit_per_s"] < 2000):
        bad = True
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=5000)
    ap.add_argument("--submit-seconds", type=int, default=10,
                    help="how long wrk submits, as fast as it can")
    ap.add_argument("--shares", type=int, default=50)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--conns", type=int, default=32)
    ap.add_argument("--procs", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--trainctld", default=os.path.join(scale.ROOT, "build/bin/trainctld"))
    args = ap.parse_args()
    # A TERM (timeout(1)) still stops trainctld and the simulator.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if not shutil.which("wrk"):
        sys.exit("bench/sched_scale.py: wrk not found (Debian package wrk)")
    want = 3 * args.hosts + 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(want, soft)), hard))
    r = run(args)
    print(json.dumps(r), file=sys.stderr)
    bad = report(args, r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
