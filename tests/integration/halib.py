"""Three trainctld members on loopback (docs/ha.md), clients that record
what they asked and got, and leader faults: what bench/ha.py and
tests/integration/test_ha_history.py share.

  Member, Cluster   members started with --member/--peers, each its own
                    state folder and ports; the leader is the member whose
                    log says last that it leads (and is not frozen);
                    Cluster.join() starts a new member with --join
  Workload          clients (threads, boto3, retries off, each request to
                    a random member) creating, describing and stopping
                    jobs; every operation recorded for histcheck.py
  fault_trials()    kill -9 (then a restart) or SIGSTOP (then SIGCONT) of
                    the leader, one at a time, and the history's check
"""
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, "tests", "compat"))
sys.path.insert(0, HERE)

import histcheck  # noqa: E402
import smcompat as sc  # noqa: E402

DAEMON = os.environ.get("TRAINCTLD", os.path.join(TOP, os.environ.get("BUILD", "build"),
                                                  "bin", "trainctld"))


def pct(xs, p):
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))]


class Member:
    def __init__(self, mid, tmp):
        self.id = mid
        self.api, self.raft = sc.free_ports(2)
        self.state = os.path.join(tmp, "m%d" % mid)
        self.log_path = os.path.join(tmp, "m%d.log" % mid)
        self.proc = None
        self.stopped = False

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.api

    def start(self, peers, extra=()):
        os.makedirs(self.state, exist_ok=True)
        log = open(self.log_path, "a")
        self.proc = subprocess.Popen(
            [DAEMON, "--listen", "127.0.0.1:%d" % self.api, "--state-dir", self.state,
             "--member", str(self.id), "--peers", peers] + list(extra),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.stopped = False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            os.killpg(self.proc.pid, sig)

    def kill9(self):
        self.signal(signal.SIGKILL)
        if self.proc:
            self.proc.wait()

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def listening(self):
        """Whether its API port is held (the member serves)."""
        return sc.port_is_free(self.api, "127.0.0.1") is False

    def role(self):
        """'leads' or 'follows' from the member's last word on it."""
        last = None
        for m in re.finditer(r"member %d (leads|follows)" % self.id, self.log()):
            last = m.group(1)
        return last


class Cluster:
    def __init__(self, tmp, n=3, extra=()):
        self.members = [Member(i + 1, tmp) for i in range(n)]
        self.peers = ",".join("%d=127.0.0.1:%d=%s" % (m.id, m.raft, m.url)
                              for m in self.members)
        self.extra = list(extra)

    def start(self):
        for m in self.members:
            m.start(self.peers, self.extra)

    def join(self, mid, tmp):
        """A new member mid started with --join, its --peers every
        member's and its own; added to self.members (not to raft: the
        leader adds it)."""
        m = Member(mid, tmp)
        self.members.append(m)
        peers = ",".join("%d=127.0.0.1:%d=%s" % (x.id, x.raft, x.url)
                         for x in self.members)
        m.start(peers, self.extra + ["--join"])
        return m

    def leader(self):
        ups = [m for m in self.members if m.alive() and not m.stopped and m.role() == "leads"]
        return ups[0] if len(ups) == 1 else None

    def wait_leader(self, timeout=30.0, not_id=None):
        end = time.time() + timeout
        while time.time() < end:
            m = self.leader()
            if m and m.id != not_id and m.listening():
                return m
            time.sleep(0.05)
        return None

    def stop(self):
        for m in self.members:
            if m.stopped:
                m.signal(signal.SIGCONT)
            m.signal(signal.SIGTERM)
        for m in self.members:
            if m.proc:
                try:
                    m.proc.wait(10)
                except subprocess.TimeoutExpired:
                    m.kill9()


class Workload:
    """Clients creating, describing and stopping jobs, each operation
    recorded for the history checker. pace: seconds each client waits
    between operations (0: none); request(name): the create's request."""

    def __init__(self, cluster, clients, seed, pace=0.0, request=sc.small_request):
        self.cluster = cluster
        self.pace = pace
        self.request = request
        self.history = []
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.names = []
        self.threads = [threading.Thread(target=self.run, args=(i, seed + i), daemon=True)
                        for i in range(clients)]

    def record(self, op):
        with self.lock:
            self.history.append(op)

    def client(self, member):
        import botocore.config
        import boto3
        cfg = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                     connect_timeout=1, read_timeout=5)
        return boto3.session.Session(aws_access_key_id=sc.KEY, aws_secret_access_key=sc.SECRET,
                                     region_name=sc.REGION).client(
            "sagemaker", endpoint_url=member.url, config=cfg)

    def call(self, sm, kind, name, fn):
        t0 = time.time()
        op = {"op": kind, "name": name, "t0": t0}
        try:
            r = fn()
            op["result"] = "ok"
            if kind == "describe":
                op["status"] = r["TrainingJobStatus"]
        except Exception as e:  # noqa: BLE001 (any failure is recorded)
            resp = getattr(e, "response", None) or {}
            code = resp.get("Error", {}).get("Code")
            status = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if kind == "describe" and code == "ValidationException" and status == 400:
                op["result"], op["status"] = "ok", None          # not found
            elif code in ("ValidationException", "ResourceInUse") and status == 400:
                op["result"] = "fail"                             # refused: nothing done
            elif status == 503:
                op["result"] = "fail"                             # no leader: nothing done
            else:
                op["result"] = "unknown"                          # timeout, connection lost
        op["t1"] = time.time()
        self.record(op)
        return op

    def run(self, i, seed):
        rng = random.Random(seed)
        sms = {m.id: self.client(m) for m in self.cluster.members}
        n = 0
        mine = []
        while not self.stop_ev.is_set():
            members = list(self.cluster.members)   # members may be replaced
            m = members[rng.randrange(len(members))]
            if m.stopped or not m.alive():
                time.sleep(0.01)
                continue
            if m.id not in sms:     # a member added meanwhile
                sms[m.id] = self.client(m)
            sm = sms[m.id]
            roll = rng.random()
            if roll < 0.5 or not mine:
                n += 1
                name = "ha-c%d-%d" % (i, n)
                req = self.request(name)
                op = self.call(sm, "create", name, lambda: sm.create_training_job(**req))
                if op["result"] != "fail":
                    mine.append(name)
            elif roll < 0.9:
                name = rng.choice(mine)
                self.call(sm, "describe", name,
                          lambda: sm.describe_training_job(TrainingJobName=name))
            else:
                name = rng.choice(mine)
                self.call(sm, "stop", name, lambda: sm.stop_training_job(TrainingJobName=name))
            if self.pace:
                self.stop_ev.wait(self.pace)

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop_ev.set()
        for t in self.threads:
            t.join(30)


def writes_again(history, t_fault):
    """Seconds from the fault to the first create sent after it and
    acknowledged; None if none was."""
    acks = [op["t1"] for op in history
            if op["op"] == "create" and op["result"] == "ok" and op["t0"] >= t_fault]
    return min(acks) - t_fault if acks else None


def final_names(member):
    sm = sc.make_client(member.url)
    names, tok = [], None
    while True:
        kw = {"MaxResults": 100}
        if tok:
            kw["NextToken"] = tok
        r = sm.list_training_jobs(**kw)
        names += [j["TrainingJobName"] for j in r["TrainingJobSummaries"]]
        tok = r.get("NextToken")
        if not tok:
            return names


def whole(cl, timeout=30.0):
    """Waits (up to timeout) until one member leads and every other one
    runs, says it follows and serves."""
    end = time.time() + timeout
    while time.time() < end:
        lead = cl.leader()
        if lead and all(m is lead or (m.alive() and not m.stopped and m.role() == "follows"
                                      and m.listening()) for m in cl.members):
            return True
        time.sleep(0.05)
    return False


def fault_trials(args, tmp, log=print):
    """Runs args.faults leader faults (args.kinds in turn) under
    args.clients clients; returns the figures and the history's
    violations."""
    cl = Cluster(tmp, extra=["--ha-election-ms", str(args.election_ms)])
    cl.start()
    out = {"faults": [], "kinds": args.kinds}
    try:
        if not cl.wait_leader(60):
            raise RuntimeError("no leader in 60 s:\n" + "\n".join(m.log()[-2000:] for m in cl.members))
        wl = Workload(cl, args.clients, args.seed)
        wl.start()
        kinds = args.kinds.split(",")
        rng = random.Random(args.seed)
        for i in range(args.faults):
            time.sleep(rng.uniform(1.0, 2.0))
            # One fault at a time: the member hit before is back first
            # (a leader lost while another member is still starting
            # waits for it: two of three are needed to elect).
            whole(cl)
            lead = cl.wait_leader(30)
            if not lead:
                raise RuntimeError("no leader before fault %d" % (i + 1))
            kind = kinds[i % len(kinds)]
            t = time.time()
            if kind == "kill":
                lead.kill9()
            else:
                lead.signal(signal.SIGSTOP)
                lead.stopped = True
            new = cl.wait_leader(30, not_id=lead.id)
            # the first acknowledged write after the fault, within 10 s
            end = time.time() + 10
            again = None
            while time.time() < end and again is None:
                with wl.lock:
                    again = writes_again(wl.history, t)
                time.sleep(0.05)
            out["faults"].append({"kind": kind, "leader": lead.id,
                                  "new_leader": new.id if new else None,
                                  "writes_again_s": again})
            log("fault %d/%d %s of member %d: new leader %s, writes again after %s s" % (
                i + 1, args.faults, kind, lead.id, new.id if new else "-",
                "%.2f" % again if again is not None else "never"))
            if kind == "kill":
                time.sleep(2)
                lead.start(cl.peers, cl.extra)
            else:
                time.sleep(max(0.0, args.stop_s - (time.time() - t)))
                lead.signal(signal.SIGCONT)
                lead.stopped = False
        time.sleep(2)
        wl.finish()
        lead = cl.wait_leader(30)
        names = final_names(lead)
        # every member follows again: the old leaders came back
        time.sleep(2)
        roles = {m.id: m.role() if m.alive() else "down" for m in cl.members}
        with wl.lock:
            history = list(wl.history)
        violations = histcheck.check(history, final=names)
        out.update({
            "operations": histcheck.summary(history),
            "acked_creates": sum(1 for op in history if op["op"] == "create" and op["result"] == "ok"),
            "listed": len(names),
            "violations": violations[:20],
            "n_violations": len(violations),
            "lost_acked": sum(1 for v in violations if v.startswith("h1:")),
            "roles_at_end": roles,
        })
    finally:
        cl.stop()
    return out
