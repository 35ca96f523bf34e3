#!/usr/bin/python3
"""The replicated controller on a cluster of hosts (docs/ha.md, "The
namespace-cluster test"): three trainctld members, each on its own
network-namespace host (node1..node3 of scripts/cluster.sh), agents
provisioned over SSH on three more (node4..node6), two ft_trainer.py
jobs with checkpoints (2 hosts and 1 host) running through every fault,
and clients (halib.Workload, paced) creating, describing and stopping
queued jobs through random members the whole time.

  (v1) GET /healthz/leader is 200 on the leader, 503 on the followers;
       keepalived in each member's namespace (hanslib.Keepalived: VRRP,
       a check of the member's own /healthz/leader) puts the floating
       address NET.100 on the leader only, and boto3 through it creates,
       stops and describes a job

Faults, one at a time, while the jobs run:
  (f1) kill -9 the leader, then start it again on its state dir; the
       floating address moves to the new leader and boto3 through it
       works again (the seconds are printed)
  (f2) the leader's link down (cluster.sh link-down) for a few seconds,
       then up
  (f3) SIGSTOP the leader for 10 s, then SIGCONT (the split-brain case)
  (f4) kill -9 a follower, then start it again
  (f5) a follower's disk lost (killed, its state dir removed): removed
       from the members, a new member on the same host with an empty
       state dir joins (--join) and is added; it catches up
After each: another member leads and writes through a surviving member
are acknowledged again within FAILOVER_DEADLINE (the measured seconds are
printed; bench/ha.py holds the 2 s goal); the member hit, back, follows
and serves requests; the jobs' ranks are the same processes of attempt 1
on the agent hosts.
At the end: the jobs' checkpoints and models (uploaded through whichever
member led) are on every member's disk, byte for byte; the history of the
clients checks (histcheck.py: no
acknowledged create missing, no status going backwards, no acknowledged
stop undone) and every member's store holds every acknowledged job with
the leader's status; the jobs Complete in attempt 1 (no Restarting in
their transitions, no second attempt in their step traces, so never two
attempts at once).

TAP on stdout; skips (1..0 # SKIP) when not root or without sshd. Run from
the top of the tree: /usr/bin/python3 tests/integration/test_ha_cluster.py
"""
import os
import random
import re
import shutil
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
import halib  # noqa: E402
import hanslib  # noqa: E402
import histcheck  # noqa: E402

sc = fl.sc
expect, Fail = sc.expect, sc.Fail

FAILOVER_DEADLINE = 15.0  # generous: the goal (2 s) is bench/ha.py's
ITYPE = "ml.m5.large"
ARGS = ["--heartbeat-ms", "300", "--host-deadline-ms", "5000", "--grace-period", "2",
        "--max-retries", "0", "--restart-wait", "30"]
HPS = {"steps": 800, "ckpt_every": 50, "step_sleep": 0.1}
JOBS = (("a", 2), ("b", 1))


class Run:
    def __init__(self, ns, cl):
        self.ns, self.cl = ns, cl
        tag = "%x" % (int(time.time() * 1000) % 0xfffffff)
        self.jobs = {"hc-%s-%s" % (k, tag): n for k, n in JOBS}
        self.traces = {name: os.path.join(cl.root, name + ".trace") for name in self.jobs}
        self.ranks = {}
        self.wl = None
        self.figures = []
        self.kas = []
        self.vip_jobs = []

    # ------------------------------------------------------------ jobs

    def start_jobs(self):
        for name, n in self.jobs.items():
            req = fl.job_request(name, n, HPS, itype=ITYPE, max_runtime=600)
            req["Environment"]["FT_TRACE"] = self.traces[name]
            self.cl.any_member(lambda m: m.client().create_training_job(**req))
        deadline = time.time() + 60
        for name in self.jobs:
            while not fl.read_trace(self.traces[name]):
                expect(time.time() < deadline, "%s: no step traced after 60 s\n%s" % (name, self.cl.tail()))
                time.sleep(0.2)
        time.sleep(1)  # every rank of the 2-host job is past its start
        self.ranks = self.rank_procs()
        agents = ["node%d" % (len(self.cl.members) + i + 1) for i in range(self.cl.n_agents)]
        for name, n in self.jobs.items():
            hosts = set(h for _, h, _ in self.ranks[name])
            expect(len(hosts) == n, "%s: ranks on %s, want %d hosts" % (name, sorted(hosts), n))
            pids = [p for p, _, _ in self.ranks[name]]
            on = sorted(p for node in agents for p in self.ns.netns_pids(node, pids))
            expect(on == sorted(pids), "%s: ranks %s, of which on the agent hosts only %s" % (name, pids, on))

    def rank_procs(self):
        return {name: sorted((pid, host, att) for pid, host, att, _ in fl.procs_with(name))
                for name in self.jobs}

    def check_ranks(self, what):
        """The jobs' ranks: the same processes, attempt 1, still running."""
        now = self.rank_procs()
        for name in self.jobs:
            expect(now[name] == self.ranks[name], "%s: %s changed the job's ranks: %s -> %s" % (
                what, name, self.ranks[name], now[name]))
            expect(all(att == 1 for _, _, att in now[name]), "%s: not attempt 1: %s" % (name, now[name]))
            d = self.cl.any_member(lambda m: m.client().describe_training_job(TrainingJobName=name))
            expect(d["TrainingJobStatus"] == "InProgress" and d.get("SecondaryStatus") == "Training",
                   "%s: after %s: %s/%s (%s)" % (name, what, d["TrainingJobStatus"],
                                                 d.get("SecondaryStatus"), d.get("FailureReason")))

    # ------------------------------------------------------------ the floating address

    def vip_client(self):
        import botocore.config
        import boto3
        cfg = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                     connect_timeout=1, read_timeout=5)
        return boto3.session.Session(aws_access_key_id=sc.KEY, aws_secret_access_key=sc.SECRET,
                                     region_name=sc.REGION).client(
            "sagemaker", endpoint_url="http://%s:%d" % (hanslib.vip_of(self.ns.net), self.ns.port),
            config=cfg)

    def vip_works(self, lead):
        """A job created, described and stopped through the floating
        address, which only lead holds; False while not so."""
        holders = [k.m.id for k in self.kas if k.holds_vip()]
        if holders != [lead.id]:
            return False
        sm = self.vip_client()
        name = "hc-vip-%d-%d" % (len(self.vip_jobs), int(time.time() * 1000) % 100000)
        try:
            sm.create_training_job(**sc.small_request(name))
        except Exception:  # noqa: BLE001 (not there yet: no answer, 503)
            return False
        self.vip_jobs.append(name)
        sm.stop_training_job(TrainingJobName=name)
        st = sm.describe_training_job(TrainingJobName=name)["TrainingJobStatus"]
        expect(st in ("Stopping", "Stopped"), "%s through the floating address: %s" % (name, st))
        return True

    def wait_vip(self, what, lead, t, timeout=FAILOVER_DEADLINE):
        while not self.vip_works(lead):
            expect(time.time() < t + timeout, "%s: the floating address not on member %d within %.0f s "
                   "(held by %s)\n%s" % (what, lead.id, timeout, [k.m.id for k in self.kas if k.holds_vip()],
                                         "\n".join(k.log()[-800:] for k in self.kas)))
            time.sleep(0.1)
        return time.time() - t

    def v1(self):
        """keepalived on every member; /healthz/leader 200 on the leader
        only; boto3 through the floating address."""
        lead = self.cl.wait_leader(30)
        for m in self.cl.members:
            st = hanslib.signed(m, "GET", "/healthz/leader")[0]
            expect(st == (200 if m is lead else 503), "member %d (%s): GET /healthz/leader %d" % (
                m.id, "leader" if m is lead else "follower", st))
        vrid = random.SystemRandom().randrange(1, 256)  # one per run
        for m in self.cl.members:
            k = hanslib.Keepalived(self.cl, m, vrid)
            self.kas.append(k)
            why = k.start()
            expect(why is None, "member %d: %s" % (m.id, why))
        s = self.wait_vip("keepalived started", lead, time.time(), 30)
        self.figures.append(("(v1) keepalived started: boto3 through the floating address (on leader %d) works"
                             % lead.id, s))

    def stop_keepalived(self):
        for k in self.kas:
            k.stop()

    # ------------------------------------------------------------ faults

    def failover(self, what, victim, t):
        """Another member leads (unless a follower was hit) and a create
        through a surviving member is acknowledged; prints the seconds."""
        new = self.cl.wait_leader(FAILOVER_DEADLINE, not_id=victim.id)
        expect(new is not None, "%s: no other member leads within %.0f s\n%s" % (
            what, FAILOVER_DEADLINE, self.cl.tail()))
        again = None
        while again is None and time.time() < t + FAILOVER_DEADLINE:
            with self.wl.lock:
                again = halib.writes_again(self.wl.history, t)
            time.sleep(0.05)
        expect(again is not None, "%s: no create acknowledged within %.0f s\n%s" % (
            what, FAILOVER_DEADLINE, self.cl.tail()))
        self.figures.append((what + ": writes acknowledged again", again))
        return new, again

    def back(self, what, victim):
        """The member hit follows again and answers through its own address."""
        why = self.cl.wait_follows(victim)
        expect(why is None, "%s: %s" % (what, why))
        lead = self.cl.leader()
        expect(lead is not None and lead.id != victim.id or what.startswith("(f4)"),
               "%s: member %d leads again" % (what, victim.id))
        name = next(iter(self.jobs))
        st = victim.client().describe_training_job(TrainingJobName=name)["TrainingJobStatus"]
        expect(st == "InProgress", "%s: describe through member %d: %s" % (what, victim.id, st))
        self.check_ranks(what)

    def kill_restart(self, victim, what):
        t = time.time()
        victim.kill9()
        new, again = self.failover(what, victim, t) if victim.role() == "leads" else (None, None)
        if again is None:       # a follower: writes go on
            again = self.writes_after(what, t)
        elif self.kas:          # the floating address follows the leader
            s = self.wait_vip(what, new, t)
            self.figures.append((what + ": boto3 through the floating address (on leader %d) works" % new.id,
                                 s))
        time.sleep(1)
        victim.start(self.cl.peers, self.cl.extra)
        self.back(what, victim)
        return again

    def writes_after(self, what, t):
        deadline = t + FAILOVER_DEADLINE
        while time.time() < deadline:
            with self.wl.lock:
                again = halib.writes_again(self.wl.history, t)
            if again is not None:
                self.figures.append((what + ": writes acknowledged again", again))
                return again
            time.sleep(0.05)
        raise Fail("%s: no create acknowledged within %.0f s" % (what, FAILOVER_DEADLINE))

    def f1(self):
        lead = self.cl.wait_leader(30)
        self.kill_restart(lead, "(f1) kill -9 of leader %d" % lead.id)

    def f2(self):
        lead = self.cl.wait_leader(30)
        what = "(f2) link of leader %d down" % lead.id
        t = time.time()
        lead.stopped = True     # the clients leave it alone: it is out of reach
        self.ns.link(lead.node, up=False)
        try:
            self.failover(what, lead, t)
            time.sleep(max(0.0, 4.0 - (time.time() - t)))
        finally:
            self.ns.link(lead.node, up=True)
            lead.stopped = False
        self.back(what, lead)

    def f3(self):
        lead = self.cl.wait_leader(30)
        what = "(f3) SIGSTOP of leader %d for 10 s" % lead.id
        t = time.time()
        lead.signal(signal.SIGSTOP)
        lead.stopped = True
        try:
            self.failover(what, lead, t)
            time.sleep(max(0.0, 10.0 - (time.time() - t)))
        finally:
            lead.signal(signal.SIGCONT)
            lead.stopped = False
        self.back(what, lead)

    def f4(self):
        lead = self.cl.wait_leader(30)
        follower = [m for m in self.cl.members if m is not lead][0]
        self.kill_restart(follower, "(f4) kill -9 of follower %d" % follower.id)

    def f5_lost_disk(self):
        """A follower's disk lost: killed, its state dir gone. It is not
        started again under its old id (docs/ha.md, "Replacing a member
        whose disk is lost"): DELETE /v1/members/ID through a surviving
        member removes it, a new member (the next id) starts on the same
        host with --join and an empty state dir, POST /v1/members adds it;
        writes go on throughout, and the new member catches up (checked
        with every store at the end)."""
        lead = self.cl.wait_leader(30)
        lost = [m for m in self.cl.members if m is not lead][0]
        what = "(f5) member %d's disk lost" % lost.id
        t = time.time()
        lost.kill9()
        shutil.rmtree(lost.state)
        self.cl.members.remove(lost)
        st, js = self.cl.any_member(lambda m: self.changed(m, "DELETE", "/v1/members/%d" % lost.id))
        new = hanslib.NsMember(max(m.id for m in self.cl.members + [lost]) + 1, self.ns, self.cl.root)
        new.node, new.addr = lost.node, lost.addr
        new.own = lost.own
        self.cl.members.append(new)
        peers = ",".join("%d=%s:%d=%s" % (m.id, m.addr, m.raft, m.url) for m in self.cl.members)
        new.start(peers, self.cl.extra + ["--join"])
        body = {"Id": new.id, "RaftAddress": "%s:%d" % (new.addr, new.raft), "ApiUrl": new.url}
        self.cl.any_member(lambda m: self.changed(m, "POST", "/v1/members", body), timeout=60)
        self.writes_after(what, t)
        why = self.cl.wait_follows(new)
        expect(why is None, "%s: %s" % (what, why))
        st, js = hanslib.signed(new, "GET", "/v1/members")
        ids = sorted((x["Id"], x["Role"]) for x in js.get("Members", [])) if st == 200 else js
        expect(st == 200 and [i for i, _ in ids] == sorted(m.id for m in self.cl.members) and
               all(r in ("leader", "voter") for _, r in ids),
               "%s: GET /v1/members through the new member: %s %s" % (what, st, ids))
        self.check_ranks(what)

    @staticmethod
    def changed(m, method, path, body=None):
        """A change of members through m: raises unless answered 200."""
        st, js = hanslib.signed(m, method, path, timeout=60, body=body)
        expect(st == 200, "%s %s through member %d: %s %s" % (method, path, m.id, st, js))
        return st, js

    # ------------------------------------------------------------ the end

    def stop_queued(self):
        """Stops the clients, then every job they created that is still
        waiting (recorded too), so that none runs once the hosts are free."""
        self.wl.finish()
        with self.wl.lock:
            created = sorted(set(op["name"] for op in self.wl.history if op["op"] == "create"))
        lead = self.cl.wait_leader(30)
        sm = lead.client()
        for name in created:
            self.wl.call(sm, "stop", name, lambda: sm.stop_training_job(TrainingJobName=name))

    def check_history(self):
        lead = self.cl.wait_leader(30)
        names = halib.final_names(lead)
        with self.wl.lock:
            history = list(self.wl.history)
        bad = histcheck.check(history, final=names)
        expect(not bad, "history: %d violations: %s" % (len(bad), bad[:10]))
        return history, names

    def check_stores(self, history):
        """Every member's store: every acknowledged create, every job with
        the status the leader's store has."""
        acked = set(op["name"] for op in history if op["op"] == "create" and op["result"] == "ok")
        acked |= set(self.jobs) | set(self.vip_jobs)
        stopped = set(op["name"] for op in history if op["op"] == "stop" and op["result"] == "ok")
        lead = self.cl.wait_leader(30)
        deadline = time.time() + 20
        while True:
            ref = hanslib.member_store(lead)[1]
            diffs = []
            for m in self.cl.members:
                jobs = hanslib.member_store(m)[1]
                missing = sorted(acked - set(jobs))
                differ = sorted(n for n in ref if jobs.get(n) != ref[n])
                if missing or differ:
                    diffs.append("member %d: missing %s, differing %s" % (m.id, missing[:5], differ[:5]))
            if not diffs:
                break
            expect(time.time() < deadline, "stores after 20 s: %s" % "; ".join(diffs))
            time.sleep(0.2)
        undone = sorted(n for n in stopped if ref.get(n) not in ("Stopping", "Stopped", "Completed",
                                                                  "Failed"))
        expect(not undone, "acknowledged stops undone: %s" % [(n, ref.get(n)) for n in undone[:5]])
        return len(acked), len(stopped)

    def check_jobs(self):
        for name in self.jobs:
            d = self.cl.any_member(
                lambda m: fl.wait_job(m.client(), name, fl.terminal, 150)[0], timeout=160)
            expect(d["TrainingJobStatus"] == "Completed", "%s: %s (%s)" % (
                name, d["TrainingJobStatus"], d.get("FailureReason")))
            tr = fl.transitions(d)
            restarts = [x for x in tr if x[0] == "Restarting" or re.search(r"attempt [2-9]", x[1])]
            expect(not restarts, "%s: restarted: %s" % (name, tr))
            trace = fl.read_trace(self.traces[name])
            expect(sorted(trace) == [1], "%s: attempts traced: %s" % (name, sorted(trace)))
            expect(not fl.overlaps(trace), "%s: %s" % (name, fl.overlaps(trace)))
            steps = set(s for _, _, s in trace[1])
            expect(len(steps) == HPS["steps"], "%s: %d distinct steps traced, want %d" % (
                name, len(steps), HPS["steps"]))


    def check_objects(self):
        """Every object of the embedded store under the jobs' checkpoint
        and output prefixes (their agents' uploads, through whichever
        member led) is on every member's disk, byte for byte the leader's
        (the replaced member's too: it caught up)."""
        def files(m):
            out = {}
            root = os.path.join(m.state, "s3", fl.BUCKET)
            for sub in ("ckpt", "out"):
                for d, _, fs in os.walk(os.path.join(root, sub)):
                    for f in fs:
                        p = os.path.join(d, f)
                        out[os.path.relpath(p, root)] = fl.sha256_file(p)
            return out
        lead = self.cl.wait_leader(30)
        deadline = time.time() + 30
        while True:
            ref = files(lead)
            ckpts = [k for k in ref if k.startswith("ckpt/")]
            models = [k for k in ref if k.endswith("model.tar.gz")]
            diffs = []
            for m in self.cl.members:
                got = files(m)
                bad = sorted(k for k in ref if got.get(k) != ref[k])
                if bad:
                    diffs.append("member %d: %d of %d missing or different (%s)" % (
                        m.id, len(bad), len(ref), bad[:3]))
            if not diffs and ckpts and len(models) == len(self.jobs):
                return len(ref)
            expect(time.time() < deadline, "objects after 30 s: %s; %d checkpoint files, models %s" % (
                "; ".join(diffs), len(ckpts), models))
            time.sleep(0.5)


def cases(tap, ns, cl, run):
    if not tap.case("3 members elect a leader; 3 agent hosts ready", lambda: expect(
            cl.wait_leader(60) is not None and cl.wait_agents(60) is None,
            "%s" % cl.wait_agents(1))):
        return
    if not tap.case("2 jobs with checkpoints run on the agent hosts", run.start_jobs):
        return
    if not tap.case("(v1) keepalived: the floating address on the leader; boto3 through it", run.v1):
        return
    run.wl = halib.Workload(cl, 2, 39, pace=0.2)
    run.wl.start()
    ok = True
    for name, f in (("(f1) kill -9 of the leader", run.f1), ("(f2) the leader's link down", run.f2),
                    ("(f3) SIGSTOP of the leader for 10 s", run.f3),
                    ("(f4) kill -9 of a follower", run.f4),
                    ("(f5) a follower's disk lost, the member replaced", run.f5_lost_disk)):
        ok = ok and tap.case(name + ": writes again, the member hit follows, ranks kept", f)
    for what, s in run.figures:
        tap.note("%s after %.2f s" % (what, s))
    run.stop_queued()
    if not ok:
        return
    res = {}

    def history():
        res["h"], names = run.check_history()
        tap.note("%s; %d jobs listed" % (histcheck.summary(res["h"]), len(names)))
    if not tap.case("the clients' history: nothing acknowledged lost, no status backwards", history):
        return

    def stores():
        n, s = run.check_stores(res["h"])
        tap.note("%d acknowledged creates, %d acknowledged stops on every member" % (n, s))
    tap.case("every member's store holds every acknowledged job and state", stores)
    if tap.case("the jobs Complete in attempt 1: no restart, never two attempts", run.check_jobs):
        def objects():
            tap.note("%d checkpoint and output files on every member" % run.check_objects())
        tap.case("the jobs' checkpoints and models are on every member, byte for byte", objects)


def main():
    tap = sc.Tap()
    reason = fl.ns_skip_reason()
    if reason:
        print("1..0 # SKIP %s" % reason)
        return 0
    sc.hermetic_env()
    prefix, net, port = sc.run_names("hc")
    ns = fl.NsCluster(prefix, net, port, n_hosts=6, itype=ITYPE)
    cl = hanslib.NsHaCluster(ns, extra=ARGS)
    run = Run(ns, cl)
    t0 = time.time()
    try:
        err = cl.hosts_up()
        if not tap.ok(err is None, "cluster.sh hosts-up 6 (%.1f s)" % (time.time() - t0), err):
            return tap.finish()
        cl.start()
        cases(tap, ns, cl, run)
    except Exception as e:
        tap.ok(False, "the cases ran to their end", "%s: %s\n%s\n%s" % (
            type(e).__name__, e, traceback.format_exc(), cl.tail()))
    finally:
        run.stop_keepalived()
        cl.stop()
        rc, out, err = ns.down()
        left = [p for p, argv in fl.proc_argvs() if any(ns.state in a for a in argv)]
        tap.ok(rc == 0 and not left, "members stopped, cluster.sh down: nothing left (%.0f s in all)" % (
            time.time() - t0), "exit %d %s%s; left %s" % (rc, out, err, left))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
