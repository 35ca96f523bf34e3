#!/usr/bin/python3
"""Scale of the controller: N simulated hosts against one trainctld.

    /usr/bin/python3 bench/scale.py                      # N = 500, 2000, 5000
    /usr/bin/python3 bench/scale.py --hosts 200 --jobs 100 --duration 10 --smoke

For each N it starts build/bin/trainctld (SQLite on disk in a temp state
dir) with an inventory of N hosts whose agents are started externally
("agent": "external"), reads each host's token from the state dir, and
runs the N simulated agents in --procs worker processes (one Python event
loop cannot keep 5,000 hosts on time; uvloop is used when installed). Each
host speaks the agent protocol (docs/agent-protocol.md) as trainagent does:
registration with its token, a work long-poll kept open, a status report
every heartbeat_ms and at once on any change. An assignment "runs" for a
random time (no process), then reports exited (code 0) and done.

The driver (this process, which runs no host) makes the load and measures.
Load: --jobs bulk jobs (1-16 instances, seeded) created at the start on N -
PROBE_HOSTS hosts, queued and running, each running 5-25 s. During the
measured window (--duration s) a probe job (1-4 instances) is created every
PROBE_EVERY s on PROBE_HOSTS hosts kept for them, so that create -> placed
is the controller's own latency, not a queue wait. Measured:

- trainctld CPU in % of one core: idle (heartbeats alone, before any job,
  with the heartbeats per second the simulator really sent) and over the
  window with the jobs, and per host
- RSS of trainctld at the end
- create -> placed: from sending CreateTrainingJob until every host of the
  job has the assignment from its work long-poll (p50 / p99; the clocks
  are CLOCK_MONOTONIC, shared by the processes)
- heartbeat -> seen: status POST sent -> answered (the controller answers
  once it has recorded it), p50 / p99
- host loss: a few hosts stop heartbeating; the time from their last
  acknowledged heartbeat until GET /v1/hosts shows them lost (the deadline
  is --host-deadline-ms, 3000 by default)
- every answer is checked: any non-2xx counts as an error

Exit status 0 when nothing failed (and, without --smoke, the goals are
met: 5,000 hosts under 25 % of one core, create -> placed p99 < 50 ms).
"""
import argparse
import asyncio
import json
import multiprocessing
import os
import queue
import random
import resource
import shutil
import signal
import sqlite3
import socket
import subprocess
import sys
import tempfile
import time
import zlib

try:
    import uvloop
except ImportError:
    uvloop = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE_HOSTS = 16
PROBE_EVERY = 0.25
PROBE_TYPE = "ml.c5.xlarge"
BULK_TYPE = "ml.m5.large"
LOST_HOSTS = 3
BODY_MAX = 16 << 20


def now_ms():
    return time.monotonic() * 1000.0


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]



def host_token(state, host):
    """The agent token of host, from the controller's store
    (db/secrets.h)."""
    con = sqlite3.connect("file:%s?mode=ro" % os.path.join(state, "trainctl.db"),
                          uri=True, timeout=5)
    try:
        row = con.execute("SELECT value FROM secrets WHERE name = ?",
                          ("host-token/" + host,)).fetchone()
    finally:
        con.close()
    if not row:
        raise RuntimeError("host %s has no token in the store" % host)
    return row[0]

def new_loop():
    loop = uvloop.new_event_loop() if uvloop else asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return loop


class Conn:
    """One keep-alive HTTP/1.1 connection (a trainagent holds a few)."""

    def __init__(self, port):
        self.port = port
        self.r = None
        self.w = None

    async def request(self, method, path, body=None, headers=None):
        data = b"" if body is None else body
        head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n" % (
            method, path, len(data))
        for k, v in (headers or {}).items():
            head += "%s: %s\r\n" % (k, v)
        msg = head.encode() + b"\r\n" + data
        for attempt in (0, 1):
            if self.w is None:
                self.r, self.w = await asyncio.open_connection(
                    "127.0.0.1", self.port, limit=BODY_MAX)
            try:
                self.w.write(msg)
                line = await self.r.readline()
                if not line:
                    raise ConnectionError("closed")
                status = int(line.split()[1])
                length = 0
                close = False
                while True:
                    h = await self.r.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    k = k.strip().lower()
                    if k == "content-length":
                        length = int(v)
                    elif k == "connection" and "close" in v.lower():
                        close = True
                if length > BODY_MAX:
                    raise ConnectionError("answer too big")
                payload = await self.r.readexactly(length) if length else b""
                if close:
                    self.close()
                return status, payload
            except (ConnectionError, asyncio.IncompleteReadError, OSError):
                self.close()
                if attempt:
                    raise
        raise ConnectionError("unreachable")

    def close(self):
        if self.w is not None:
            self.w.close()
        self.r = self.w = None


class Shared:
    """What the driver and the worker processes share."""

    def __init__(self, procs):
        ctx = multiprocessing.get_context("fork")
        self.ready = ctx.Barrier(procs + 1)
        self.measuring = ctx.Value("i", 0, lock=False)
        self.freeze = ctx.Event()
        self.stop = ctx.Event()
        self.acked = ctx.Array("q", procs, lock=False)  # heartbeats answered
        self.results = ctx.Queue()


class Stats:
    def __init__(self):
        self.errors = []
        self.n_errors = 0
        self.hb_ms = []
        self.placed = []        # (job, algo, t_ms) of probe jobs
        self.hb_late = 0        # heartbeats sent > 1.5 periods apart
        self.ended = 0          # assignments that ended in the window
        self.frozen = {}        # victim -> its last acknowledged heartbeat

    def error(self, what):
        self.n_errors += 1
        if len(self.errors) < 5:
            self.errors.append(what)


class Host:
    def __init__(self, sim, name, token, rng):
        self.sim = sim
        self.name = name
        self.auth = {"Authorization": "Bearer " + token,
                     "Content-Type": "application/json"}
        self.boot_id = "%016x" % rng.getrandbits(64)
        self.rng = rng
        self.reports = {}       # key -> report
        self.changed = asyncio.Event()
        self.frozen = False
        self.last_ack_ms = 0.0
        self.period_s = 1.0
        self.tasks = []

    async def start(self, sem):
        c = Conn(self.sim.port)
        body = json.dumps({"host": self.name, "version": "sim",
                           "boot_id": self.boot_id, "cpus": 8, "gpus": 0,
                           "address": "127.0.0.1"}).encode()
        async with sem:
            st, ans = await c.request("POST", "/v1/agents/register", body,
                                      self.auth)
        if st != 200:
            raise RuntimeError("register %s: HTTP %d %s" % (self.name, st, ans[:200]))
        self.period_s = json.loads(ans).get("heartbeat_ms", 1000) / 1000.0
        self.hb_conn = c
        self.tasks = [asyncio.ensure_future(self.work_loop()),
                      asyncio.ensure_future(self.hb_loop())]

    def freeze(self):
        self.frozen = True
        for t in self.tasks:
            t.cancel()

    async def work_loop(self):
        c = Conn(self.sim.port)
        version = 0
        path = "/v1/agents/%s/work?version=" % self.name
        while True:
            try:
                st, ans = await c.request("GET", path + str(version), None,
                                          self.auth)
            except (ConnectionError, OSError) as e:
                self.sim.stats.error("%s work: %s" % (self.name, e))
                await asyncio.sleep(0.5)
                continue
            t = now_ms()
            if st != 200:
                self.sim.stats.error("%s work: HTTP %d" % (self.name, st))
                await asyncio.sleep(0.5)
                continue
            w = json.loads(ans)
            version = w["version"]
            self.apply(w["assignments"], t)

    def apply(self, assignments, t):
        seen = set()
        wall = int(time.time() * 1000)
        for a in assignments:
            key = (a["job"], a["job_uid"], a["attempt"], a["algo"])
            seen.add(key)
            r = self.reports.get(key)
            if r is None:
                r = {"job": a["job"], "job_uid": a["job_uid"],
                     "attempt": a["attempt"], "algo": a["algo"],
                     "phase": "running", "started_ms": wall,
                     "processes": [{"rank": 0, "pid": 1000 + len(self.reports),
                                    "started_ms": wall, "exit_code": None,
                                    "signal": None, "exited_ms": None}],
                     "failure": None, "error": None}
                self.reports[key] = r
                if a["job"].startswith("probe-"):
                    self.sim.stats.placed.append((a["job"], a["algo"], t))
                if a["action"] == "run":
                    asyncio.get_event_loop().call_later(
                        self.sim.run_time(a["job"]), self.finish, key, 0)
                self.changed.set()
            if a["action"] in ("stop", "abort") and r["phase"] == "running":
                self.finish(key, 15)
        for key in list(self.reports):
            if key not in seen:
                del self.reports[key]
                self.changed.set()

    def finish(self, key, sig):
        r = self.reports.get(key)
        if r is None or r["phase"] != "running" or self.frozen:
            return
        p = r["processes"][0]
        p["exited_ms"] = int(time.time() * 1000)
        if sig:
            p["signal"] = sig
        else:
            p["exit_code"] = 0
        r["phase"] = "done"
        if self.sim.measuring():
            self.sim.stats.ended += 1
        self.changed.set()

    async def hb_loop(self):
        period = self.period_s
        await asyncio.sleep(self.rng.random() * period)
        path = "/v1/agents/%s/status" % self.name
        last_sent = None
        while True:
            try:
                await asyncio.wait_for(self.changed.wait(), period)
            except asyncio.TimeoutError:
                pass
            self.changed.clear()
            body = json.dumps({"boot_id": self.boot_id,
                               "assignments": list(self.reports.values())}).encode()
            t0 = now_ms()
            if last_sent is not None and t0 - last_sent > 1500 * period:
                self.sim.stats.hb_late += 1
            last_sent = t0
            try:
                st, ans = await self.hb_conn.request("POST", path, body, self.auth)
            except (ConnectionError, OSError) as e:
                self.sim.stats.error("%s status: %s" % (self.name, e))
                continue
            t1 = now_ms()
            if st != 200:
                self.sim.stats.error("%s status: HTTP %d %s" % (self.name, st, ans[:200]))
                continue
            self.last_ack_ms = t1
            self.sim.ack()
            if self.sim.measuring():
                self.sim.stats.hb_ms.append(t1 - t0)


class Worker:
    """One process's share of the simulated hosts."""

    def __init__(self, port, seed, index, shared):
        self.port = port
        self.seed = seed
        self.index = index
        self.shared = shared
        self.stats = Stats()
        self.run_times = {}

    def measuring(self):
        return self.shared.measuring.value != 0

    def ack(self):
        self.shared.acked[self.index] += 1

    def run_time(self, job):
        """The same for every host of a job, whichever process runs it."""
        if job not in self.run_times:
            if job.startswith("probe-"):
                self.run_times[job] = 0.3
            else:
                rng = random.Random(zlib.crc32(job.encode()) ^ self.seed)
                self.run_times[job] = rng.uniform(5, 25)
        return self.run_times[job]

    async def run(self, hosts, victims):
        sem = asyncio.Semaphore(32)
        hs = [Host(self, name, token, random.Random(self.seed * 100003 + i))
              for i, name, token in hosts]
        try:
            await asyncio.gather(*(h.start(sem) for h in hs))
        except Exception as e:      # the driver sees it as an error count
            self.stats.error("register: %s" % e)
        await asyncio.get_event_loop().run_in_executor(None, self.shared.ready.wait)
        while not self.shared.freeze.is_set():
            await asyncio.sleep(0.02)
        for h in hs:
            if h.name in victims:
                h.freeze()
                self.stats.frozen[h.name] = h.last_ack_ms
        while not self.shared.stop.is_set():
            await asyncio.sleep(0.05)
        for h in hs:
            h.freeze()


def worker_main(port, seed, index, shared, hosts, victims):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    w = Worker(port, seed, index, shared)
    loop = new_loop()
    try:
        loop.run_until_complete(w.run(hosts, victims))
    except Exception as e:
        w.stats.error("worker %d: %s" % (index, e))
    s = w.stats
    shared.results.put({"hb_ms": s.hb_ms, "placed": s.placed, "hb_late": s.hb_late,
                        "ended": s.ended, "frozen": s.frozen, "errors": s.errors,
                        "n_errors": s.n_errors})
    shared.results.close()
    shared.results.join_thread()    # flushed before the quick exit
    os._exit(0)


def create_body(name, count, itype):
    return json.dumps({
        "TrainingJobName": name,
        "AlgorithmSpecification": {"TrainingImage": "file:///bin/true",
                                   "TrainingInputMode": "File"},
        "RoleArn": "arn:aws:iam::000000000000:role/bench",
        "OutputDataConfig": {"S3OutputPath": "s3://bench/out"},
        "ResourceConfig": {"InstanceType": itype, "InstanceCount": count,
                           "VolumeSizeInGB": 1},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
    }).encode()


SM = {"Content-Type": "application/x-amz-json-1.1"}


async def sm_call(conn, op, body):
    h = dict(SM)
    h["X-Amz-Target"] = "SageMaker." + op
    return await conn.request("POST", "/", body, h)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pids):
    return sum(cpu_s(p) for p in pids)


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


async def wait_up(ctl, proc, log):
    deadline = time.monotonic() + 60
    while True:
        try:
            st, _ = await ctl.request("GET", "/v1/hosts")
            if st == 200:
                return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("trainctld did not start (see %s)" % log.name)
        await asyncio.sleep(0.05)


async def drive(args, n, port, proc, shared, workers, res, errors):
    """Runs the phases; the workers' hosts are up when it starts."""
    ctl = Conn(port)
    rng = random.Random(args.seed)
    wpids = [w.pid for w in workers]

    # Idle: every host heartbeats, no job anywhere.
    await asyncio.sleep(2.0)
    a0 = sum(shared.acked)
    c0, t0 = cpu_s(proc.pid), time.monotonic()
    await asyncio.sleep(args.idle)
    dt = time.monotonic() - t0
    res["idle_cpu_pct"] = 100.0 * (cpu_s(proc.pid) - c0) / dt
    res["idle_hb_per_s"] = (sum(shared.acked) - a0) / dt

    # Bulk jobs, queued and running.
    t0 = time.monotonic()
    jobs = [("bulk-%05d" % i, rng.randint(1, 16)) for i in range(args.jobs)]
    conns = [Conn(port) for _ in range(8)]

    async def create_some(c, part):
        for name, count in part:
            st, ans = await sm_call(c, "CreateTrainingJob",
                                    create_body(name, count, BULK_TYPE))
            if st != 200:
                errors.append("create %s: HTTP %d %s" % (name, st, ans[:200]))
    await asyncio.gather(*(create_some(c, jobs[k::8]) for k, c in enumerate(conns)))
    res["create_jobs_per_s"] = args.jobs / (time.monotonic() - t0)
    await asyncio.sleep(args.warmup)

    # The window.
    shared.measuring.value = 1
    a0 = sum(shared.acked)
    c0, t0 = cpu_s(proc.pid), time.monotonic()
    s0 = proc_cpu_s(wpids) + time.process_time()
    k = 0
    pc = Conn(port)
    sent = {}
    while time.monotonic() - t0 < args.duration:
        name = "probe-%05d" % k
        count = rng.randint(1, 4)
        k += 1
        sent[name] = (now_ms(), count)
        st, ans = await sm_call(pc, "CreateTrainingJob",
                                create_body(name, count, PROBE_TYPE))
        if st != 200:
            errors.append("create %s: HTTP %d %s" % (name, st, ans[:200]))
        await asyncio.sleep(PROBE_EVERY)
    c1, t1 = cpu_s(proc.pid), time.monotonic()
    res["sim_cpu_pct"] = 100.0 * (proc_cpu_s(wpids) + time.process_time() - s0) / (t1 - t0)
    res["hb_per_s"] = (sum(shared.acked) - a0) / (t1 - t0)
    shared.measuring.value = 0
    res["cpu_pct"] = 100.0 * (c1 - c0) / (t1 - t0)
    res["cpu_us_per_host_s"] = 1e6 * (c1 - c0) / (t1 - t0) / n
    res["probes"] = k
    await asyncio.sleep(1.0)

    # Host loss: the victims' owners freeze them and say when each was
    # last answered; GET /v1/hosts is polled until all are lost.
    shared.freeze.set()
    lost_at = {}
    victims = set(res["victims"])
    deadline = time.monotonic() + 10 + args.host_deadline_ms / 1000.0
    while len(lost_at) < len(victims) and time.monotonic() < deadline:
        st, ans = await ctl.request("GET", "/v1/hosts")
        t = now_ms()
        if st == 200:
            for e in json.loads(ans)["hosts"]:
                if e["name"] in victims and e["state"] == "lost" \
                        and e["name"] not in lost_at:
                    lost_at[e["name"]] = t
        await asyncio.sleep(0.05)
    res["rss_mb"] = rss_mb(proc.pid)
    res["alive"] = proc.poll() is None
    return sent, lost_at


def collect(res, shared, workers, sent, lost_at, errors):
    got = []
    for _ in workers:
        try:
            got.append(shared.results.get(timeout=60))
        except queue.Empty:
            errors.append("a worker did not report")
    hb = [x for g in got for x in g["hb_ms"]]
    frozen = {k: v for g in got for k, v in g["frozen"].items()}
    seen = {}
    for g in got:
        for job, algo, t in g["placed"]:
            seen.setdefault(job, []).append(t)
    placed = [max(ts) - sent[j][0] for j, ts in seen.items()
              if j in sent and len(ts) == sent[j][1]]
    for g in got:
        errors.extend(g["errors"])
    res["errors"] = len(errors) + sum(g["n_errors"] - len(g["errors"]) for g in got)
    res["first_errors"] = errors[:5]
    res["ended_per_s"] = sum(g["ended"] for g in got) / res["window_s"]
    res["probes_placed"] = len(placed)
    res["placed_p50"] = pct(placed, 50)
    res["placed_p99"] = pct(placed, 99)
    res["hb_n"] = len(hb)
    res["hb_p50"] = pct(hb, 50)
    res["hb_p99"] = pct(hb, 99)
    res["hb_late"] = sum(g["hb_late"] for g in got)
    if len(lost_at) == len(res["victims"]) and len(frozen) == len(res["victims"]):
        res["lost_noticed_ms"] = max(lost_at[h] - frozen[h] for h in lost_at)
    else:
        res["lost_noticed_ms"] = None


def shut_down(shared, workers, loop, proc, log, tmp, keep):
    """Stops the simulated hosts and trainctld (by PID); removes tmp."""
    shared.freeze.set()
    shared.stop.set()
    for w in workers:
        w.join(30)
        if w.is_alive():
            w.kill()
            w.join()
    loop.close()
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log.close()
    if keep:
        print("kept %s" % tmp, file=sys.stderr)
    else:
        shutil.rmtree(tmp, ignore_errors=True)


def run_n(args, n, daemon):
    tmp = tempfile.mkdtemp(prefix="trainctl-scale.")
    state = os.path.join(tmp, "state")
    port = free_port()
    names = ["sim-%05d" % i for i in range(n)]
    inv = {"hosts": [{"name": h, "agent": "external",
                      "instance_type": PROBE_TYPE if i < PROBE_HOSTS else BULK_TYPE,
                      "cpus": 8}
                     for i, h in enumerate(names)]}
    with open(os.path.join(tmp, "inventory.json"), "w") as f:
        json.dump(inv, f)
    log = open(os.path.join(tmp, "trainctld.log"), "w")
    proc = subprocess.Popen([daemon, "--listen", "127.0.0.1:%d" % port,
                             "--state-dir", state, "--inventory",
                             os.path.join(tmp, "inventory.json"),
                             "--local-hosts", "0",
                             "--host-deadline-ms", str(args.host_deadline_ms)],
                            stdout=log, stderr=subprocess.STDOUT)
    procs = args.procs or max(1, min(4, (n + 999) // 1000))
    res = {"hosts": n, "procs": procs, "window_s": args.duration,
           "victims": names[PROBE_HOSTS:PROBE_HOSTS + LOST_HOSTS]}
    shared = Shared(procs)
    workers = []
    errors = []
    loop = new_loop()
    try:
        loop.run_until_complete(wait_up(Conn(port), proc, log))
        tokens = []
        for i, h in enumerate(names):
            tokens.append((i, h, host_token(state, h)))
        t0 = time.monotonic()
        ctx = multiprocessing.get_context("fork")
        for k in range(procs):
            w = ctx.Process(target=worker_main,
                            args=(port, args.seed, k, shared, tokens[k::procs],
                                  set(res["victims"])))
            w.start()
            workers.append(w)
        shared.ready.wait(timeout=120)
        res["register_s"] = time.monotonic() - t0
        sent, lost_at = loop.run_until_complete(
            drive(args, n, port, proc, shared, workers, res, errors))
        shared.stop.set()
        collect(res, shared, workers, sent, lost_at, errors)
    finally:
        shut_down(shared, workers, loop, proc, log, tmp, args.keep)
    return res


def report(args, results):
    print("\n==== trainctld with N simulated hosts (heartbeat 1 s, %d bulk jobs of 1-16 "
          "instances; %d CPUs, the simulator on the same machine%s) ====" %
          (args.jobs, os.cpu_count(), ", uvloop" if uvloop else ""))
    print("%6s %15s %8s %8s %7s %7s %7s %15s %13s %9s %6s" % (
        "hosts", "idle CPU (hb/s)", "CPU%core", "us/host", "RSS MB", "ends/s",
        "probes", "placed p50/p99", "hb p50/p99", "lost", "errors"))
    bad = False
    for r in results:
        lost = "%.0f ms" % r["lost_noticed_ms"] if r["lost_noticed_ms"] is not None else "never"
        print("%6d %6.1f%% (%5.0f) %7.1f%% %8.1f %7.1f %7.1f %3d/%-3d %6.1f/%-8.1f "
              "%5.1f/%-7.1f %9s %6d" % (
                  r["hosts"], r["idle_cpu_pct"], r["idle_hb_per_s"], r["cpu_pct"],
                  r["cpu_us_per_host_s"], r["rss_mb"], r["ended_per_s"],
                  r["probes_placed"], r["probes"], r["placed_p50"], r["placed_p99"],
                  r["hb_p50"], r["hb_p99"], lost, r["errors"]))
        for e in r["first_errors"]:
            print("    error: %s" % e)
        if r["errors"] or not r["alive"] or r["lost_noticed_ms"] is None \
                or r["probes_placed"] < r["probes"]:
            bad = True
        if not args.smoke and r["hosts"] >= 5000 and (
                r["idle_cpu_pct"] >= 25 or r["placed_p99"] >= 50):
            bad = True
    print("(idle CPU: trainctld with heartbeats alone, before any job, and the "
          "heartbeats per second answered; CPU%%core: with the jobs; us/host: "
          "trainctld CPU microseconds per host per second with the jobs; ends/s: "
          "assignments that ended per second (jobs ending, hosts freed, queued "
          "jobs placed); lost: last heartbeat -> GET /v1/hosts says lost, "
          "deadline %d ms; simulator processes %s, using %s%% of a core in all)"
          % (args.host_deadline_ms,
             "/".join("%d" % r["procs"] for r in results),
             "/".join("%.0f" % r["sim_cpu_pct"] for r in results)))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", default="500,2000,5000")
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--idle", type=float, default=10.0,
                    help="seconds of heartbeats alone, before any job")
    ap.add_argument("--procs", type=int, default=0,
                    help="simulator processes (default: one per 1,000 hosts, at most 4)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--host-deadline-ms", type=int, default=3000)
    ap.add_argument("--smoke", action="store_true",
                    help="check only that nothing failed, not the goals")
    ap.add_argument("--json")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--trainctld", default=os.path.join(ROOT, "build/bin/trainctld"))
    args = ap.parse_args()
    ns = [int(x) for x in args.hosts.split(",")]
    want = 3 * max(ns) + 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(want, soft)), hard))
    results = []
    for n in ns:
        r = run_n(args, n, args.trainctld)
        results.append(r)
        print(json.dumps(r), file=sys.stderr)
    bad = report(args, results)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
