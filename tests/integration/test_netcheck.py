#!/usr/bin/python3
# trainctl-test: solo
"""The network part of the infrastructure checks (docs/distributed.md,
"Infrastructure checks"): the hosts of a multi-host attempt measure the
round trip and the bandwidth to each other over TCP before the program
starts, and the controller compares each host's figures with the
attempt's median.

A namespace cluster of 4 hosts (scripts/cluster.sh, trainctld
--infra-check on --max-retries 0). The link of the host the first
attempt puts at algo-2 is slowed inside its namespace with a token
bucket (`tc qdisc add dev eth0 root tbf rate 4mbit ...`; this kernel has
no netem, so the bandwidth is slowed, not the latency; tests/controller/
test_netcheck.c judges slow round trips):
  (a) a 3-host job: the slowed host fails its check before the program
      starts anywhere; the job's transitions name it, its bandwidth and
      the job's median; the spare replaces it (no retry spent); the job
      Completes, its transitions say the checks passed on 3 hosts within
      the 10 s budget, with the hosts' median round trip and bandwidth
  (b) the slowed host is drained with the reason and ran no rank
  (c) a 3-host job on healthy hosts passes its network check at once,
      every host having reached both of its peers (its note in the log)

TAP on stdout. Run from the top of the tree with Debian's interpreter, as
root (namespaces, tc):
    /usr/bin/python3 tests/integration/test_netcheck.py
Takes about 30 s.
"""
import os
import re
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import distlib as dl  # noqa: E402
from distlib import Fail, expect, short, sc  # noqa: E402

# This run's own names (distlib's are for test_distributed.py).
dl.PREFIX, dl.NET, dl.PORT = sc.run_names("nc")
dl.STATE = "/tmp/trainctl-cluster-%s" % dl.PREFIX
dl.N_HOSTS = 4
RUN = "%x" % (int(time.time() * 1000) % 0xfffffff)
TBF = ["tbf", "rate", "4mbit", "burst", "16kbit", "latency", "400ms"]
FAILED_RE = re.compile(r"^Infrastructure check failed on (algo-\d) \(host ([^)]+)\): network: its best "
                       r"bandwidth to its peers is (\d+) Mbit/s, 1/(\d+) of the job's median of (\d+) "
                       r"Mbit/s; replaced by (\S+)$")
NOTE_RE = re.compile(r"Infrastructure checks passed in \d+ ms \(clock offset -?\d+ ms, no GPU; network: (\d+) of "
                     r"(\d+) peers answered, best round trip [\d.]+ ms, \d+ Mbit/s\)")
PASSED_RE = re.compile(r"^Infrastructure checks passed on 3 hosts in (\d+\.\d) s\. Network: round trip "
                       r"(\d+\.\d\d) ms, (\d+) Mbit/s \(the hosts' median\)\. ")


def log(text):
    for line in str(text).splitlines():
        print("# " + line)
    sys.stdout.flush()


class Cluster(dl.Cluster):
    """distlib's cluster, its controller checking every job's hosts."""

    def up(self):
        rc, out, err = self.sh("up", "--hosts", str(dl.N_HOSTS), "--prefix", dl.PREFIX, "--net", dl.NET,
                               "--port", str(dl.PORT), "--instance-type", dl.ITYPE, "--timeout", "60",
                               "--trainctld", dl.TRAINCTLD, "--agent-path", dl.AGENT_PATH, "--",
                               "--grace-period", "2", "--heartbeat-ms", "200", "--host-deadline-ms",
                               str(dl.DEADLINE_MS), "--max-retries", "0", "--infra-check", "on", "-v")
        if rc != 0:
            return "cluster.sh up: exit %d\n%s%s\n%s" % (rc, out, err, self.log_tail())
        for line in out.splitlines():
            m = re.match(r"^export (\w+)=(.*)$", line)
            if m:
                self.env[m.group(1)] = m.group(2)
        self.endpoint = self.env.get("TRAINCTL_ENDPOINT")
        self.key = self.env.get("AWS_ACCESS_KEY_ID")
        self.secret = self.env.get("AWS_SECRET_ACCESS_KEY")
        self.addr = self.endpoint.split("//")[1].split(":")[0]
        import json
        with open(os.path.join(dl.STATE, "inventory.json")) as f:
            self.hosts = {h["name"]: h["address"] for h in json.load(f)["hosts"]}
        return None


def ns_of(node):
    return "%s-%s" % (dl.PREFIX, node)


def slow(node):
    r = subprocess.run(["ip", "netns", "exec", ns_of(node), "tc", "qdisc", "add", "dev", "eth0", "root"] + TBF,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    expect(r.returncode == 0, "tc qdisc add in %s: %s" % (ns_of(node), r.stdout.decode()))


def first_hosts(cluster):
    """The hosts a 3-host job gets first: the controller takes free hosts
    in its table's order, which GET /v1/hosts lists."""
    st, js = cluster.request("GET", "/v1/hosts")
    expect(st == 200, "GET /v1/hosts: HTTP %s" % st)
    names = [h["name"] for h in js.get("hosts", [])]
    expect(len(names) == 4, "hosts: %s" % names)
    return names


def messages(d):
    return [t.get("StatusMessage", "") for t in d.get("SecondaryStatusTransitions", [])]


def run(sm, name):
    sm.create_training_job(**dl.probe_request(name, 3))
    d, seen = dl.wait_job(sm, name, 90)
    return d, seen


def case_replaced(cluster, sm, order):
    slowed = order[1]
    slow(slowed)
    name = "netck-a-" + RUN
    t0 = time.time()
    d, seen = run(sm, name)
    msgs = messages(d)
    expect(d["TrainingJobStatus"] == "Completed", "%s: %s (%r); seen %s; transitions %s\n%s" % (
        name, d["TrainingJobStatus"], d.get("FailureReason"), seen, short(msgs, 1500),
        cluster.log_tail(20, grep=name)))
    failed = [FAILED_RE.match(m) for m in msgs if FAILED_RE.match(m)]
    expect(len(failed) == 1, "no transition names the slowed host %s and its bandwidth: %s" % (
        slowed, short(msgs, 1500)))
    f = failed[0]
    expect(f.group(2) == slowed, "the check named %s, not the slowed %s: %s" % (f.group(2), slowed, f.group(0)))
    expect(int(f.group(3)) * 4 < int(f.group(5)), "figures: %s" % f.group(0))
    expect(f.group(6) == order[3], "replaced by %s: %s" % (f.group(6), order))
    passed = [PASSED_RE.match(m) for m in msgs if PASSED_RE.match(m)]
    expect(len(passed) == 1, "no transition says the checks passed on 3 hosts with the network's figures: %s"
           % short(msgs, 1500))
    secs = float(passed[0].group(1))
    expect(secs <= 10.0, "the checks took %.1f s, over the 10 s budget" % secs)
    log("%s: %s | %s (%.1f s in all)" % (name, f.group(0), passed[0].group(0), time.time() - t0))
    return slowed


def case_drained(cluster, slowed):
    hs = cluster.host_list()
    h = hs.get(slowed) or {}
    expect(h.get("state") == "drained" and "network" in (h.get("drain_reason") or ""),
           "%s is not drained with the network's reason: %s" % (slowed, short(h)))
    text = cluster.agent_log(slowed)
    expect(not re.search(r"netck-a-%s/\d+/algo-\d: rank \d+ started" % RUN, text),
           "a rank started on the slowed host %s" % slowed)


def case_healthy(cluster, sm):
    name = "netck-c-" + RUN
    d, seen = run(sm, name)
    msgs = messages(d)
    expect(d["TrainingJobStatus"] == "Completed", "%s: %s (%r); seen %s" % (
        name, d["TrainingJobStatus"], d.get("FailureReason"), seen))
    expect(not [m for m in msgs if "check failed" in m], "a healthy host failed: %s" % short(msgs, 1500))
    expect([m for m in msgs if PASSED_RE.match(m)], "no passed checks with figures: %s" % short(msgs, 1500))
    # Each host reached both peers: a host done first keeps listening for
    # the others until the program starts.
    notes = []
    for root, _, files in os.walk(os.path.join(dl.STATE, "controller", "state", "logs", name)):
        for fn in files:
            with open(os.path.join(root, fn), errors="replace") as f:
                notes += NOTE_RE.findall(f.read())
    expect(len(notes) == 3 and all(n == ("2", "2") for n in notes),
           "the hosts' notes (answered, tried): %s" % notes)


def skip_reason():
    if os.geteuid() != 0:
        return "needs root (CAP_NET_ADMIN) for network namespaces and tc"
    if not os.access("/usr/sbin/sshd", os.X_OK):
        return "no /usr/sbin/sshd (apt-get install openssh-server)"
    if not os.access("/usr/sbin/tc", os.X_OK):
        return "no /usr/sbin/tc (iproute2)"
    return None


def main():
    reason = skip_reason()
    if reason:
        print("1..0 # SKIP %s" % reason)
        return 0
    tap = sc.Tap()
    cluster = Cluster()
    t_start = time.time()
    try:
        err = cluster.up()
        if tap.ok(err is None, "cluster.sh up --hosts 4, trainctld --infra-check on", err):
            dl.place_probe(cluster)
            sm = cluster.client()
            order = first_hosts(cluster)
            slowed = tap.case("(a) the host whose link is slowed fails its network check before the program "
                              "starts, named with its bandwidth; the spare replaces it; the job Completes; "
                              "checks within 10 s", case_replaced, cluster, sm, order)
            if slowed:
                tap.case("(b) the slowed host is drained with the reason and ran no rank",
                         case_drained, cluster, slowed)
            tap.case("(c) healthy hosts pass the network check", case_healthy, cluster, sm)
    except Exception as e:
        tap.ok(False, "the test ran to its end", "%s: %s\n%s" % (type(e).__name__, e, traceback.format_exc()))
    finally:
        rc, out, err = cluster.down()
        tap.ok(rc == 0, "cluster.sh down", "exit %d: %s%s" % (rc, out, err))
        log("whole run %.1f s" % (time.time() - t_start))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
