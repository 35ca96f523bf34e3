#!/usr/bin/python3
"""Membership changes of the replicated controller (docs/ha.md): three
members on loopback, then members added, removed and replaced while a
client keeps creating jobs through any member.

  (m0) --join and --ha-recover need --peers and exclude each other;
       --ha-recover of a state dir with no raft log is refused
  (m1) GET /v1/members through a follower: three voters, one the leader,
       each heard from, lags small; /metrics has the trainctl_ha_ gauges
  (m2) bad requests are refused with a clear 400/404/409 and change
       nothing: a missing Id, a bad raft address, an unknown member, an id
       in use, removing the leader, a path that is no id
  (m3) member 4 starts with --join on an empty state dir and is added
       while writes go on: it catches up (its store holds the jobs), the
       leader copies files to it too, and it votes: with a follower of the old three killed, writes go on
  (m4) the killed member is removed; three members remain
  (m5) a lost disk replaced: a follower killed; started again under its
       id with its raft folder gone it is refused; its state dir emptied,
       `trainctl members remove` takes it out; member 5 joins on an empty
       dir and `trainctl members add` adds it; writes are acknowledged
       throughout; `trainctl members --json` lists the three
  (m6) --ha-recover: every member stopped, a copy of the leader's state
       dir recovered as a cluster of that member alone; started, it leads
       and lists every acknowledged job; a new member is added to it

TAP on stdout. Run from the top of the tree with Debian's interpreter.
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import halib  # noqa: E402
import smcompat as sc  # noqa: E402

sc.hermetic_env()
expect = sc.expect

CLI = os.path.join(halib.TOP, os.environ.get("BUILD", "build"), "bin", "trainctl")
EXTRA = ["--ha-election-ms", "400", "--ha-heartbeat-ms", "50",
         "--ha-snapshot-entries", "16"]
DEADLINE = 20.0


def members_of(m, timeout=DEADLINE):
    """GET /v1/members through member m, again while no leader answers."""
    end = time.time() + timeout
    while True:
        r = sc.http_request(m.api, "GET", "/v1/members")
        if r.status == 200 or time.time() > end:
            return r
        time.sleep(0.1)


def send(m, method, path, body=None):
    data = json.dumps(body).encode() if isinstance(body, dict) else (body or b"")
    return sc.http_request(m.api, method, path, data,
                           {"Content-Type": "application/json"}, timeout=60)


def by_id(resp):
    return {x["Id"]: x for x in resp.json["Members"]}


class Writer:
    """One client creating jobs through the live members in turn; every
    acknowledged name is kept, and the longest time without one."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.acked = []
        self.failed = 0
        self.stop_ev = threading.Event()
        self.last_ack = time.time()
        self.longest_gap = 0.0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        rng = random.Random(39)
        n = 0
        while not self.stop_ev.is_set():
            ups = [m for m in self.cluster.members if m.alive()]
            if not ups:
                time.sleep(0.05)
                continue
            m = rng.choice(ups)
            n += 1
            name = "mb-%d" % n
            try:
                sc.make_client(m.url).create_training_job(**sc.small_request(name))
            except Exception:  # noqa: BLE001 (503, a killed member: next)
                self.failed += 1
                time.sleep(0.05)
                continue
            now = time.time()
            self.longest_gap = max(self.longest_gap, now - self.last_ack)
            self.last_ack = now
            self.acked.append(name)
            time.sleep(0.02)

    def acked_since(self, t, count=3, timeout=DEADLINE):
        """Waits until count creates were acknowledged after t."""
        base = len(self.acked)
        end = time.time() + timeout
        while time.time() < end:
            if self.last_ack > t and len(self.acked) >= base + count:
                return True
            time.sleep(0.05)
        return False

    def finish(self):
        self.stop_ev.set()
        self.thread.join(30)


def store_names(m):
    import sqlite3
    path = os.path.join(m.state, "trainctl.db")
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=10)
    try:
        return {r[0] for r in con.execute("SELECT name FROM jobs")}
    finally:
        con.close()


def wait_for(fn, timeout=DEADLINE):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    return fn()


def follower(cl, lead):
    return next(m for m in cl.members if m.alive() and m is not lead)


def m0(tmp):
    """--join and --ha-recover need --peers, and exclude each other."""
    st = os.path.join(tmp, "flags")
    base = [halib.DAEMON, "--listen", "127.0.0.1:1", "--state-dir", st]
    peers = ["--member", "1", "--peers",
             "1=127.0.0.1:2=http://127.0.0.1:1,2=127.0.0.1:3=http://127.0.0.1:4,"
             "3=127.0.0.1:5=http://127.0.0.1:6"]
    for extra, want in ((["--join"], "need --peers"), (["--ha-recover"], "need --peers"),
                        (peers + ["--join", "--ha-recover"], "exclude each other")):
        out = subprocess.run(base + extra, capture_output=True, text=True, timeout=30)
        expect(out.returncode != 0 and want in out.stderr, out)
    # --ha-recover of a state dir without a raft log: nothing to recover
    out = subprocess.run(base + peers + ["--ha-recover"], capture_output=True, text=True,
                         timeout=30)
    expect(out.returncode != 0 and "holds no raft log" in out.stderr, out)


def m1(cl):
    lead = cl.wait_leader()
    expect(lead is not None, "no leader")
    r = members_of(follower(cl, lead))
    expect(r.status == 200, r)
    ms = by_id(r)
    expect(sorted(ms) == [1, 2, 3], r)
    expect(r.json["LeaderId"] == lead.id and ms[lead.id]["Role"] == "leader", r)
    expect(all(x["Role"] in ("leader", "voter") for x in ms.values()), r)
    expect(wait_for(lambda: all(x["Reachable"] for x in by_id(members_of(lead)).values())),
           members_of(lead))
    for x in ms.values():
        expect(x["ApiUrl"] == cl.members[x["Id"] - 1].url, r)
    met = sc.http_request(lead.api, "GET", "/metrics").body.decode()
    for g in ("trainctl_ha_members 3", "trainctl_ha_leader %d" % lead.id,
              'trainctl_ha_member_lag_entries{member="1"',
              'trainctl_ha_member_reachable{member="2"}'):
        expect(g in met, "no %s in /metrics" % g)
    return lead


def m2(cl, lead):
    f = follower(cl, lead)
    cases = [
        ("POST", "/v1/members", {"RaftAddress": "127.0.0.1:1", "ApiUrl": "http://127.0.0.1:2"},
         400, "'Id'"),
        ("POST", "/v1/members", {"Id": 9, "RaftAddress": "nohost", "ApiUrl": "http://127.0.0.1:2"},
         400, "raft address"),
        ("POST", "/v1/members", {"Id": 9, "RaftAddress": "127.0.0.1:1", "ApiUrl": "ftp://x:2"},
         400, "API URL"),
        ("POST", "/v1/members", {"Id": 9, "RaftAddress": "127.0.0.1:1",
                                 "ApiUrl": "http://127.0.0.1:2", "Role": "x"}, 400, "'Role'"),
        ("POST", "/v1/members", b"{not json", 400, ""),
        ("POST", "/v1/members", {"Id": 2, "RaftAddress": "127.0.0.1:1",
                                 "ApiUrl": "http://127.0.0.1:2"}, 409, "member 2"),
        ("POST", "/v1/members", {"Id": 9, "RaftAddress": "127.0.0.1:%d" % lead.raft,
                                 "ApiUrl": "http://127.0.0.1:2"}, 409, "raft address"),
        ("DELETE", "/v1/members/%d" % lead.id, None, 409, "leads"),
        ("DELETE", "/v1/members/77", None, 400, "not a member"),
        ("DELETE", "/v1/members/abc", None, 400, "not a member id"),
        ("PUT", "/v1/members", None, 405, ""),
    ]
    for method, path, body, status, text in cases:
        r = send(f, method, path, body)
        expect(r.status == status and text in r.body.decode(),
               "%s %s %s: %r" % (method, path, body, r))
    expect(sorted(by_id(members_of(f))) == [1, 2, 3], "the members changed")


def m3(cl, wr, tmp):
    lead = cl.wait_leader()
    new = cl.join(4, tmp)
    time.sleep(0.3)
    t = time.time()
    r = send(lead, "POST", "/v1/members", {"Id": 4, "RaftAddress": "127.0.0.1:%d" % new.raft,
                                           "ApiUrl": new.url})
    expect(r.status == 200, r)
    expect(by_id(r)[4]["Role"] == "voter", r)
    expect(wr.acked_since(t), "no write acknowledged while member 4 was added")
    names = set(wr.acked)
    expect(wait_for(lambda: names <= store_names(new)),
           "member 4's store lacks %s" % sorted(names - store_names(new))[:5])
    expect(wait_for(lambda: by_id(members_of(lead))[4]["Lag"] < 50), members_of(lead))
    # the leader's copies of objects, logs and telemetry go to member 4 too
    expect(wait_for(lambda: "copies go to 3 other members" in lead.log()),
           "the leader does not copy to member 4:\n%s" % lead.log()[-1500:])
    # member 4 votes: with one of the old three gone, three of four remain
    victim = follower(cl, lead)
    if victim is new:
        victim = next(m for m in cl.members if m.alive() and m not in (lead, new))
    victim.kill9()
    t = time.time()
    expect(wr.acked_since(t), "no write acknowledged with member %d killed" % victim.id)
    return victim


def m4(cl, victim):
    lead = cl.wait_leader()
    r = send(lead, "DELETE", "/v1/members/%d" % victim.id)
    expect(r.status == 200, r)
    expect(sorted(by_id(r)) == sorted(m.id for m in cl.members if m.alive()), r)
    cl.members.remove(victim)


def cli(cl, *args):
    """trainctl with every live member as --endpoint."""
    return subprocess.run([CLI, "--endpoint", ",".join(m.url for m in cl.members if m.alive())]
                          + list(args), capture_output=True, text=True, timeout=60)


def table_rows(out):
    """The member lines of `trainctl members`' table."""
    return [ln for ln in out.stdout.splitlines() if ln[:1].isdigit()]


def m5(cl, wr, tmp):
    lead = cl.wait_leader()
    lost = follower(cl, lead)
    lost.kill9()
    # Its raft folder lost but its store kept: refused under its old id.
    shutil.rmtree(os.path.join(lost.state, "raft"))
    lost.start(cl.peers, EXTRA)
    try:
        lost.proc.wait(20)
    except subprocess.TimeoutExpired:
        lost.kill9()
    expect(lost.proc.returncode not in (0, None) and
           "replace this member with a new one" in lost.log(), lost.log()[-800:])
    shutil.rmtree(lost.state)
    t = time.time()
    out = cli(cl, "members", "remove", str(lost.id))
    expect(out.returncode == 0 and len(table_rows(out)) == 2, out)
    cl.members.remove(lost)
    new = cl.join(5, tmp)
    time.sleep(0.3)
    out = cli(cl, "members", "add", "5", "127.0.0.1:%d" % new.raft, new.url)
    expect(out.returncode == 0, out)
    rows = table_rows(out)
    expect(len(rows) == 3 and rows[-1].split()[:2] == ["5", "voter"], out.stdout)
    expect(wr.acked_since(t, count=5), "writes stopped while the disk was replaced")
    out = cli(cl, "members", "--json")
    expect(out.returncode == 0 and sorted(x["Id"] for x in json.loads(out.stdout)["Members"])
           == sorted(m.id for m in cl.members), out)
    names = set(wr.acked)
    expect(wait_for(lambda: names <= store_names(new)), "member 5 lacks jobs")


def m6(cl, wr, tmp):
    wr.finish()
    acked = set(wr.acked)
    lead = cl.wait_leader()
    cl.stop()
    copy = os.path.join(tmp, "restored")
    shutil.copytree(lead.state, copy)
    peers = ",".join("%d=127.0.0.1:%d=%s" % (x.id, x.raft, x.url) for x in cl.members)
    base = [halib.DAEMON, "--listen", "127.0.0.1:%d" % lead.api, "--state-dir", copy,
            "--member", str(lead.id), "--peers", peers]
    out = subprocess.run(base + ["--ha-recover"], capture_output=True, text=True, timeout=60)
    expect(out.returncode == 0, out)
    alone = halib.Member(lead.id, tmp)
    alone.api, alone.raft, alone.state = lead.api, lead.raft, copy
    alone.log_path = os.path.join(tmp, "restored.log")
    rest = halib.Cluster(tmp, n=0, extra=EXTRA)
    rest.members = [alone]
    alone.start(peers, EXTRA)
    try:
        expect(rest.wait_leader() is alone, alone.log()[-2000:])
        r = members_of(alone)
        expect(r.status == 200 and sorted(by_id(r)) == [lead.id], r)
        listed = set(halib.final_names(alone))
        expect(acked <= listed, "lost %s" % sorted(acked - listed)[:5])
        # the new member's --peers: the old ones (stopped), the survivor
        # and itself
        rest.members = [alone] + [m for m in cl.members if m.id != lead.id]
        new = rest.join(6, tmp)
        time.sleep(0.3)
        r = send(alone, "POST", "/v1/members", {"Id": 6, "RaftAddress": "127.0.0.1:%d" % new.raft,
                                                "ApiUrl": new.url})
        expect(r.status == 200 and by_id(r)[6]["Role"] == "voter", r)
        expect(wait_for(lambda: acked <= store_names(new)), "member 6 lacks jobs")
    finally:
        rest.stop()


def main():
    tap = sc.Tap()
    if not os.access(halib.DAEMON, os.X_OK):
        print("1..0 # SKIP %s is not built" % halib.DAEMON)
        return 0
    tmp = tempfile.mkdtemp(prefix="trainctl-ha-members-")
    cl = halib.Cluster(tmp, extra=EXTRA)
    wr = Writer(cl)
    t0 = time.time()
    try:
        tap.case("(m0) --join and --ha-recover are checked", m0, tmp)
        cl.start()
        lead = tap.case("(m1) three members, their roles, lags and gauges", m1, cl)
        if lead:
            tap.case("(m2) bad requests are refused and change nothing", m2, cl, lead)
            wr.thread.start()
            victim = tap.case("(m3) member 4 joins under writes, catches up and votes",
                              m3, cl, wr, tmp)
            if victim:
                tap.case("(m4) the killed member is removed", m4, cl, victim)
            tap.case("(m5) a lost disk is replaced by member 5; writes go on", m5, cl, wr, tmp)
            tap.note("%d creates acknowledged, %d refused or lost in flight; longest gap "
                     "between acknowledgements %.2f s" % (len(wr.acked), wr.failed,
                                                        wr.longest_gap))
            tap.case("(m6) --ha-recover from a copy of the leader's state dir", m6, cl, wr, tmp)
    finally:
        wr.stop_ev.set()
        cl.stop()
        if tap.failed:
            for m in cl.members:
                tap.note("--- member %d log tail\n%s" % (m.id, m.log()[-1500:]))
        shutil.rmtree(tmp, ignore_errors=True)
    tap.note("%.1f s" % (time.time() - t0))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
