"""Three trainctld members in network namespaces (docs/ha.md), each its
own host of a scripts/cluster.sh cluster, with agents provisioned over
SSH on the hosts after them: what tests/integration/test_ha_cluster.py
uses, on top of halib.py (members, recording clients) and ftlib.py
(namespace hosts, ft_trainer.py jobs).

  NsMember      a halib.Member started with `ip netns exec <ns>` on its
                host's address (NET.1K), raft on RAFT_PORT there
  NsHaCluster   hosts-up of members + agent hosts, one credentials file,
                an inventory of the agent hosts only, the members started
                with --advertise-url naming themselves first
  signed()      a SigV4-signed request to one member
  member_store  (applied index, {job: status}) read from a member's store
"""
import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
import halib  # noqa: E402

sc = fl.sc
RAFT_PORT = 7100


class NsMember(halib.Member):
    """Member K on host nodeK of the namespace cluster: --listen
    NET.(10+K):port, its state under the cluster's state dir (the same file
    system as the test's)."""

    def __init__(self, mid, ns, root):
        self.id = mid
        self.ns = ns
        self.node = "node%d" % mid
        self.addr = "%s.%d" % (ns.net, 10 + mid)
        self.api, self.raft = ns.port, RAFT_PORT
        self.state = os.path.join(root, "m%d" % mid)
        self.log_path = os.path.join(root, "m%d.log" % mid)
        self.proc = None
        self.stopped = False
        self.own = []       # arguments of this member only (--advertise-url)

    @property
    def url(self):
        return "http://%s:%d" % (self.addr, self.api)

    def start(self, peers, extra=()):
        os.makedirs(self.state, exist_ok=True)
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", "%s-%s" % (self.ns.prefix, self.node), halib.DAEMON,
                 "--listen", "%s:%d" % (self.addr, self.api), "--state-dir", self.state,
                 "--member", str(self.id), "--peers", peers] + self.own + list(extra),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        self.stopped = False

    def listening(self):
        try:
            return signed(self, "GET", "/healthz", timeout=2)[0] == 200
        except OSError:
            return False

    def client(self, read_timeout=10):
        import botocore.config
        import boto3
        cfg = botocore.config.Config(retries={"total_max_attempts": 1, "mode": "standard"},
                                     connect_timeout=2, read_timeout=read_timeout)
        return boto3.session.Session(aws_access_key_id=sc.KEY, aws_secret_access_key=sc.SECRET,
                                     region_name=sc.REGION).client(
            "sagemaker", endpoint_url=self.url, config=cfg)


def signed(member, method, path, timeout=10, body=None):
    """(HTTP status, JSON or text) of a SigV4-signed request to member;
    body (a dict) is sent as JSON."""
    host = "%s:%d" % (member.addr, member.api)
    data = json.dumps(body).encode() if body is not None else b""
    hs = {"Content-Type": "application/json"} if body is not None else {}
    hs.update(sc.sigv4_sign(method, host, path.split("?")[0], path.partition("?")[2], data,
                            sc.KEY, sc.SECRET, hs))
    conn = http.client.HTTPConnection(member.addr, member.api, timeout=timeout)
    try:
        conn.request(method, path, body=data, headers=hs)
        r = conn.getresponse()
        body = r.read()
    finally:
        conn.close()
    try:
        return r.status, json.loads(body.decode())
    except ValueError:
        return r.status, body.decode("utf-8", "replace")


def member_store(member):
    """(applied index, {job name: status}) of member's store, read-only."""
    c = sqlite3.connect("file:%s?mode=ro" % os.path.join(member.state, "trainctl.db"),
                        uri=True, timeout=5)
    try:
        applied = c.execute("SELECT applied_index FROM replica_state").fetchone()[0]
        jobs = dict(c.execute("SELECT name, status FROM jobs").fetchall())
    finally:
        c.close()
    return applied, jobs


class NsHaCluster(halib.Cluster):
    """n_members members on node1..n, n_agents agent hosts after them,
    all of instance type itype, on the namespace cluster ns (an
    ftlib.NsCluster whose hosts are not up yet)."""

    def __init__(self, ns, n_members=3, n_agents=3, itype="ml.m5.large", extra=()):
        self.ns = ns
        self.n_agents = n_agents
        self.itype = itype
        self.root = os.path.join(ns.state, "ha")
        self.members = [NsMember(i + 1, ns, self.root) for i in range(n_members)]
        self.peers = ",".join("%d=%s:%d=%s" % (m.id, m.addr, m.raft, m.url) for m in self.members)
        self.extra = list(extra)

    def hosts_up(self):
        """The hosts, the credentials, the agents' inventory; None or why
        not."""
        n = len(self.members) + self.n_agents
        rc, out, err = self.ns.sh("hosts-up", str(n), "--prefix", self.ns.prefix, "--net", self.ns.net,
                                  "--instance-type", self.itype,
                                  "--agent-path", self.ns.state + "/trainagent")
        if rc != 0:
            return "cluster.sh hosts-up %d: exit %d\n%s%s" % (n, rc, out, err)
        os.makedirs(self.root, exist_ok=True)
        creds = os.path.join(self.root, "credentials")
        with open(creds, "w") as f:
            f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (sc.KEY, sc.SECRET))
        os.chmod(creds, 0o600)
        with open(os.path.join(self.ns.state, "inventory.json")) as f:
            inv = json.load(f)
        names = set("node%d" % (len(self.members) + i + 1) for i in range(self.n_agents))
        inv["hosts"] = [h for h in inv["hosts"] if h["name"] in names]
        agents = os.path.join(self.root, "inventory.json")
        with open(agents, "w") as f:
            json.dump(inv, f, indent=1)
        self.extra = ["--credentials", creds, "--inventory", agents] + self.extra
        for m in self.members:
            others = [o.url for o in self.members if o is not m]
            m.own = ["--advertise-url", ",".join([m.url] + others)]
        return None

    def live(self):
        return [m for m in self.members if m.alive() and not m.stopped]

    def any_member(self, fn, timeout=30.0, first=None):
        """fn(member) through live members in turn (first one first) until
        it returns without an exception; raises the last one after
        timeout."""
        deadline = time.time() + timeout
        while True:
            order = self.live()
            if first in order:
                order.remove(first)
                order.insert(0, first)
            last = None
            for m in order:
                try:
                    return fn(m)
                except Exception as e:  # noqa: BLE001 (any failure: the next member)
                    last = e
            if time.time() > deadline:
                raise last or sc.Fail("no live member")
            time.sleep(0.2)

    def wait_agents(self, timeout=60.0):
        """None once every agent host is ready (asked of the leader), else
        why not."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            lead = self.wait_leader(max(1.0, deadline - time.time()))
            if lead:
                try:
                    st, js = signed(lead, "GET", "/v1/hosts")
                    last = js
                    hosts = js.get("hosts", []) if st == 200 and isinstance(js, dict) else []
                    if sum(h.get("state") == "ready" for h in hosts) >= self.n_agents:
                        return None
                except OSError as e:
                    last = str(e)
            time.sleep(0.2)
        return "agent hosts not ready after %.0f s: %s\n%s" % (timeout, fl.host_states(last), self.tail())

    def wait_follows(self, m, timeout=30.0):
        """None once m (started again, resumed or reconnected) says it
        follows and serves requests, else why not."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if m.alive() and m.role() == "follows" and m.listening():
                return None
            time.sleep(0.1)
        return "member %d: not following after %.0f s (alive %s, role %s)\n%s" % (
            m.id, timeout, m.alive(), m.role(), m.log()[-1500:])

    def tail(self, n=1500):
        return "\n".join("--- member %d ---\n%s" % (m.id, m.log()[-n:]) for m in self.members)

    def stop(self):
        """SIGTERM to every member by its PID (SIGCONT first), SIGKILL
        after 10 s."""
        for m in self.members:
            m.signal(signal.SIGCONT)
        halib.Cluster.stop(self)



# ------------------------------------------------------------ the floating address

KEEPALIVED = "/usr/sbin/keepalived"
VIP_HOST = 100  # the floating address: NET.100

KEEPALIVED_CONF = """\
# trainctl member %(id)d: the floating address %(vip)s follows the leader
global_defs {
    router_id trainctl-m%(id)d
    script_user root
    enable_script_security
    vrrp_version 3
}

# 200 only where this member leads and serves (docs/ha.md); a follower's
# 503 or no answer puts this instance in FAULT: it never holds the address
vrrp_script leader {
    script "/usr/bin/curl -sf -o /dev/null --max-time 1 http://%(addr)s:%(port)d/healthz/leader"
    interval 1
    timeout 2
    rise 1
    fall 1
}

vrrp_instance trainctl {
    state BACKUP
    nopreempt
    interface eth0
    virtual_router_id %(vrid)d
    priority 100
    advert_int %(advert)s
    unicast_src_ip %(addr)s
    unicast_peer {
%(peers)s
    }
    virtual_ipaddress {
        %(vip)s/24 dev eth0
    }
    track_script {
        leader
    }
}
"""


def vip_of(net):
    return "%s.%d" % (net, VIP_HOST)


class Keepalived:
    """keepalived (VRRP only, in the foreground) in member m's namespace,
    its configuration, pid files and log under the member's folder, and
    the iptables rule there that sends the floating address's API port to
    the member's own --listen (a member listens on its own address only)."""

    def __init__(self, cluster, m, vrid, advert="0.2"):
        self.m = m
        self.vip = vip_of(cluster.ns.net)
        self.ns = "%s-%s" % (cluster.ns.prefix, m.node)
        self.dir = os.path.join(cluster.root, "keepalived-m%d" % m.id)
        self.conf = os.path.join(self.dir, "keepalived.conf")
        self.log_path = os.path.join(self.dir, "keepalived.log")
        self.proc = None
        peers = "\n".join("        %s" % o.addr for o in cluster.members if o is not m)
        self.text = KEEPALIVED_CONF % {"id": m.id, "vip": self.vip, "addr": m.addr, "port": m.api,
                                       "vrid": vrid, "advert": advert, "peers": peers}

    def nsexec(self, *argv):
        return subprocess.run(["ip", "netns", "exec", self.ns] + list(argv), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=20)

    def start(self):
        """None, or why keepalived could not start."""
        os.makedirs(self.dir, exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(self.text)
        p = self.nsexec("iptables", "-t", "nat", "-A", "PREROUTING", "-d", self.vip, "-p", "tcp",
                        "--dport", str(self.m.api), "-j", "DNAT", "--to-destination",
                        "%s:%d" % (self.m.addr, self.m.api))
        if p.returncode != 0:
            return "iptables DNAT in %s: %s" % (self.ns, p.stdout.decode(errors="replace"))
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", self.ns, KEEPALIVED, "--dont-fork", "--log-console",
                 "--log-detail", "--no-syslog", "--vrrp", "--use-file", self.conf,
                 "--pid", os.path.join(self.dir, "keepalived.pid"),
                 "--vrrp_pid", os.path.join(self.dir, "vrrp.pid")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        time.sleep(0.2)
        if self.proc.poll() is not None:
            return "keepalived exited %s:\n%s" % (self.proc.returncode, self.log()[-1500:])
        return None

    def holds_vip(self):
        p = self.nsexec("ip", "-o", "-4", "addr", "show", "dev", "eth0")
        return (" %s/" % self.vip) in p.stdout.decode(errors="replace")

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        """SIGTERM by its PID (it stops its VRRP child and drops the
        address), SIGKILL after 10 s."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
