#!/usr/bin/python3
"""The status page's jobs list (GET /v1/ui/jobs) at many jobs.

  /usr/bin/python3 bench/page_list.py [--jobs N] [--repeat N] [--json FILE]

From the top of the tree, after `make`; needs wrk (Debian package wrk).

1. starts build/bin/trainctld --local-hosts 0 (no credentials, as
   bench/api.sh does) on a free loopback port with a temp state dir
2. preloads --jobs (100,000) jobs with concurrent CreateTrainingJob
   (wrk + bench/create.lua mix): five name families, four common
   instance types and a rare one (0.1 %), tags on some (team=... 25 %,
   project=bench 50 %, audit=hold 0.1 %), creation times spread over the
   preload; then stops every 10th job (StopTrainingJob), so that the store
   holds InProgress and Stopped jobs
3. times the first page (limit 50, the page's default size) the page asks
   for: each sort x order, each filter alone, filters with a non-default
   sort, and a walk of --pages (50) pages following next_token
then prints one row per series (n, p50, p90, p99, max in ms) and stops the
daemon by PID. With --json, writes the figures there.

One keep-alive connection, one request at a time, time per request (send ..
whole body read) with perf_counter; the client's garbage collector is off
while a request is timed. Every answer must be HTTP 200 with a "jobs" list
whose rows match the filter (checked outside the timing); exit status 1 if
one was not, else 0. Rows over --target (50) ms p99 are marked.
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
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from list_latency import pct  # noqa: E402

PAGE = 50   # the page's default page size (web/js/jobs.js)
RARE_TYPE = "ml.p4d.24xlarge"


class Client:
    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.bad = 0
        self.first_error = None

    def fail(self, what):
        self.bad += 1
        if self.first_error is None:
            self.first_error = what

    def get(self, params):
        path = "/v1/ui/jobs?" + urllib.parse.urlencode(params)
        gc.disable()
        t = time.perf_counter()
        self.conn.request("GET", path)
        r = self.conn.getresponse()
        data = r.read()
        dt = (time.perf_counter() - t) * 1000.0
        gc.enable()
        if r.status != 200:
            self.fail("HTTP %d %s for %s" % (r.status, data[:300], path))
            return dt, None
        try:
            j = json.loads(data)
            j["jobs"]
        except (ValueError, KeyError, TypeError):
            self.fail("no jobs list in %s for %s" % (data[:300], path))
            return dt, None
        return dt, j

    def sagemaker(self, target, body):
        self.conn.request("POST", "/", json.dumps(body).encode(),
                          {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker." + target})
        r = self.conn.getresponse()
        data = r.read()
        if r.status != 200:
            self.fail("HTTP %d %s for %s" % (r.status, data[:300], target))
            return None
        return json.loads(data)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_daemon(daemon, tmp):
    port = free_port()
    state = os.path.join(tmp, "state")
    os.makedirs(state)
    log = open(os.path.join(tmp, "trainctld.log"), "w")
    p = subprocess.Popen([daemon, "--listen", "127.0.0.1:%d" % port, "--state-dir", state, "--local-hosts", "0"],
                         stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 20
    while time.time() < deadline:
        if p.poll() is not None:
            break
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return p, port
        except OSError:
            time.sleep(0.05)
    stop_daemon(p)
    with open(os.path.join(tmp, "trainctld.log")) as f:
        sys.stderr.write("trainctld did not start:\n" + f.read()[-2000:])
    return None, 0


def stop_daemon(p):
    if p is None or p.poll() is not None:
        return
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def preload(port, n, threads, conns, tmp):
    """n creates (at least) as fast as wrk can; returns (ok, non200, seconds)."""
    done = os.path.join(tmp, "done")
    os.makedirs(done)
    per = (n + threads - 1) // threads
    out = open(os.path.join(tmp, "preload.log"), "w")
    t0 = time.time()
    w = subprocess.Popen(["wrk", "-t%d" % threads, "-c%d" % conns, "-d3600s", "-s",
                          os.path.join(ROOT, "bench", "create.lua"), "http://127.0.0.1:%d/" % port, "--",
                          "mix", str(per), done], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    deadline = time.time() + 1800
    while w.poll() is None and len(os.listdir(done)) < threads and time.time() < deadline:
        time.sleep(0.1)
    if w.poll() is None:
        w.send_signal(signal.SIGINT)
    w.wait()
    el = time.time() - t0
    out.close()
    ok = bad = 0
    with open(os.path.join(tmp, "preload.log")) as f:
        text = f.read()
    for line in text.splitlines():
        if line.startswith("RESULT "):
            kv = dict(x.split("=") for x in line.split()[1:])
            ok, bad = int(kv["ok"]), int(kv["non200"])
        elif line.startswith("create: "):
            sys.stderr.write(line + "\n")
    return ok, bad, el


def all_jobs(c):
    """Every job's (name, creation_ms), newest first, walking 1000 a page."""
    rows, tok = [], None
    while True:
        q = {"limit": 1000}
        if tok:
            q["next_token"] = tok
        j = c.get(q)[1]
        if j is None:
            return None
        rows += [(r["name"], r["creation_ms"]) for r in j["jobs"]]
        tok = j.get("next_token")
        if not tok:
            return rows


def stop_some(port, names, nthreads=4):
    """StopTrainingJob for each of names over nthreads connections; returns failures."""
    fails = []

    def work(part):
        c = Client(port)
        for name in part:
            c.sagemaker("StopTrainingJob", {"TrainingJobName": name})
        fails.append(c.bad)
        if c.first_error:
            sys.stderr.write("stop: %s\n" % c.first_error)

    ts = [threading.Thread(target=work, args=(names[i::nthreads],)) for i in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return sum(fails)


def check_rows(c, params, j):
    """The rows of answer j match params' filters and order (outside the timing)."""
    rows = j["jobs"]
    want = {}
    for k, v in params.items():
        want[k] = v
    for r in rows:
        if "status" in want and r["status"] != want["status"]:
            return c.fail("status %s in %s" % (r["status"], params))
        if "name" in want and want["name"].lower() not in r["name"].lower():
            return c.fail("name %s in %s" % (r["name"], params))
        if "instance_type" in want and r["instance_type"] != want["instance_type"]:
            return c.fail("instance type %s in %s" % (r["instance_type"], params))
        if "created_after" in want and not r["creation_ms"] > int(want["created_after"]):
            return c.fail("created %d in %s" % (r["creation_ms"], params))
        if "created_before" in want and not r["creation_ms"] < int(want["created_before"]):
            return c.fail("created %d in %s" % (r["creation_ms"], params))
    sort = params.get("sort", "created")
    desc = params.get("order", "desc" if sort == "created" else "asc") == "desc"
    key = {"created": lambda r: r["creation_ms"], "name": lambda r: r["name"].lower(),
           "status": lambda r: r["status"]}[sort]
    keys = [key(r) for r in rows]
    if keys != sorted(keys, reverse=desc):
        return c.fail("rows out of order for %s" % params)
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=100000, help="jobs to preload (100000)")
    ap.add_argument("--repeat", type=int, default=50, help="requests per series (50)")
    ap.add_argument("--budget", type=float, default=15.0,
                    help="seconds a series may take before it stops early (at least 10 requests)")
    ap.add_argument("--pages", type=int, default=50, help="pages in the walks (50)")
    ap.add_argument("--target", type=float, default=50.0, help="p99 ms above which a row is marked (50)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--daemon", default=os.path.join(ROOT, "build", "bin", "trainctld"))
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (and print it)")
    ap.add_argument("--json")
    a = ap.parse_args()
    if not shutil.which("wrk"):
        print("bench/page_list.py: wrk not found (Debian package wrk)", file=sys.stderr)
        return 2
    if not os.access(a.daemon, os.X_OK):
        print("bench/page_list.py: %s not built" % a.daemon, file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="trainctl-pagebench.")
    p, port = start_daemon(a.daemon, tmp)
    if p is None:
        shutil.rmtree(tmp, ignore_errors=True)
        return 2
    try:
        return run(a, p, port, tmp)
    finally:
        stop_daemon(p)
        if a.keep:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def run(a, p, port, tmp):
    print("trainctld pid %d on 127.0.0.1:%d, state %s" % (p.pid, port, tmp))
    print("preloading %d jobs (wrk -t%d -c%d) ..." % (a.jobs, a.threads, a.conns))
    ok, bad, el = preload(port, a.jobs, a.threads, a.conns, tmp)
    print("  %d created in %.1fs (%.0f/s), non-200: %d" % (ok, el, ok / el if el > 0 else 0, bad))
    c = Client(port)
    jobs = all_jobs(c)
    if not jobs:
        print("listing the preloaded jobs failed: %s" % c.first_error, file=sys.stderr)
        return 1
    t0 = time.time()
    stop = [name for name, _ in jobs[::10]]
    sbad = stop_some(port, stop)
    # A queued job goes Stopping, then Stopped: wait for the last one, so
    # that no status changes while the pages are timed.
    deadline = time.time() + 120
    while time.time() < deadline:
        j = c.get({"limit": 1, "status": "Stopping"})[1]
        if j is None or not j["jobs"]:
            break
        time.sleep(0.5)
    print("  the store lists %d jobs; stopped %d of them in %.1fs, failures: %d" %
          (len(jobs), len(stop), time.time() - t0, sbad))
    # The creation times span the preload; a window of its middle tenth.
    newest, oldest = jobs[0][1], jobs[-1][1]
    span = max(1, newest - oldest)
    w_after = oldest + span * 45 // 100
    w_before = oldest + span * 55 // 100
    one = jobs[len(jobs) // 2][0]

    series = []

    def add(name, params, times, found):
        s = {"name": name, "params": params, "n": len(times), "p50": pct(times, 50), "p90": pct(times, 90),
             "p99": pct(times, 99), "max": max(times) if times else float("nan"), "rows": found}
        series.append(s)
        print("  %-46s %5d %8.2f %8.2f %8.2f %8.2f %6s%s" % (name, s["n"], s["p50"], s["p90"], s["p99"],
                                                            s["max"], found,
                                                            "  *" if s["p99"] > a.target else ""), flush=True)

    def first_page(label, **params):
        params = dict(params)
        q = dict(params, limit=PAGE)
        times, found = [], 0
        t_end = time.time() + a.budget
        for i in range(a.repeat):
            dt, j = c.get(q)
            times.append(dt)
            if j is None:
                break
            if i == 0:
                found = len(j["jobs"])
                check_rows(c, params, j)
            if i >= 9 and time.time() > t_end:
                break
        add(label, params, times, found)

    def walk(label, **params):
        q = dict(params, limit=PAGE)
        times, found, tok = [], 0, None
        for _ in range(a.pages):
            if tok:
                q["next_token"] = tok
            dt, j = c.get(q)
            times.append(dt)
            if j is None:
                break
            found += len(j["jobs"])
            tok = j.get("next_token")
            if not tok:
                break
        add(label, params, times, found)

    c.get({"limit": 1})   # warm the connection
    print()
    print("  %-46s %5s %8s %8s %8s %8s %6s" % ("GET /v1/ui/jobs, limit %d" % PAGE, "n", "p50 ms", "p90 ms",
                                              "p99 ms", "max ms", "rows"))
    for sort in ("created", "name", "status"):
        for order in ("desc", "asc"):
            first_page("sort %s %s" % (sort, order), sort=sort, order=order)
    first_page("status InProgress (90 %)", status="InProgress")
    first_page("status Stopped (10 %)", status="Stopped")
    first_page("status Failed (none)", status="Failed")
    first_page("name contains bert (20 %)", name="bert")
    first_page("name contains one job's name", name=one)
    first_page("name contains (no match)", name="matches-nothing")
    first_page("created window (middle 10 %)", created_after=w_after, created_before=w_before)
    first_page("created after (newest half)", created_after=oldest + span // 2)
    first_page("instance_type ml.m5.xlarge (50 %)", instance_type="ml.m5.xlarge")
    first_page("instance_type ml.p3.2xlarge (10 %)", instance_type="ml.p3.2xlarge")
    first_page("instance_type %s (0.1 %%)" % RARE_TYPE, instance_type=RARE_TYPE)
    first_page("tag team (25 %)", tag="team")
    first_page("tag team=red (8 %)", tag="team=red")
    first_page("tag audit=hold (0.1 %)", tag="audit=hold")
    first_page("tag (no match)", tag="nobody")
    first_page("status InProgress, sort name", status="InProgress", sort="name")
    first_page("status Stopped, sort name desc", status="Stopped", sort="name", order="desc")
    first_page("instance_type m5, sort status", instance_type="ml.m5.xlarge", sort="status")
    first_page("instance_type m5, sort name", instance_type="ml.m5.xlarge", sort="name")
    first_page("tag team=red, sort name", tag="team=red", sort="name")
    first_page("name contains bert, sort name", name="bert", sort="name")
    first_page("created window, sort name", created_after=w_after, created_before=w_before, sort="name")
    first_page("created window, sort status desc", created_after=w_after, created_before=w_before,
               sort="status", order="desc")
    first_page("status Stopped, created window", status="Stopped", created_after=w_after,
               created_before=w_before)
    walk("walk %d pages, sort created desc" % a.pages, order="desc")
    walk("walk %d pages, sort name asc" % a.pages, sort="name", order="asc")
    walk("walk %d pages, status InProgress, sort name" % a.pages, status="InProgress", sort="name")

    alive = p.poll() is None
    rss = ""
    try:
        with open("/proc/%d/status" % p.pid) as f:
            rss = [x.split(":")[1].strip() for x in f if x.startswith("VmRSS")][0]
    except (OSError, IndexError):
        pass
    print()
    print("%d jobs, %d CPUs; * p99 over %.0f ms; daemon RSS %s, alive: %s" %
          (len(jobs), os.cpu_count(), a.target, rss, "yes" if alive else "NO"))
    if c.bad:
        print("bad answers: %d (first: %s)" % (c.bad, c.first_error))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"jobs": len(jobs), "page": PAGE, "created_ok": ok, "created_non200": bad,
                       "stopped": len(stop), "stop_failures": sbad, "series": series, "bad": c.bad,
                       "first_error": c.first_error}, f, indent=1)
    return 1 if c.bad or bad or sbad or not alive else 0


if __name__ == "__main__":
    sys.exit(main())
