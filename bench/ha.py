#!/usr/bin/python3
"""The replicated controller under leader faults (docs/ha.md), and what
replication costs the API.

Three trainctld members on loopback (--member, --peers; each its own
state folder and ports). Clients (--clients threads, boto3, retries off,
each talking to one member: a follower forwards to the leader) create
training jobs with unique names, describe them and stop some, and record
every operation with the time it was invoked, the time it completed and
its outcome (ok, fail, or unknown for a timeout). Meanwhile the leader is
hit --faults times, one at a time:

  kill   kill -9 of the leader; it is started again (on its state) 2 s
         later and must come back as a follower;
  stop   SIGSTOP of the leader for --stop-s s (10), then SIGCONT: the
         split-brain case, the old leader must notice it no longer leads
         and follow.

For each fault: the time from the fault to the first create that was sent
after the fault and acknowledged (writes accepted again). At the end, a
quiet cluster's list of jobs and the recorded history go through the
history checker (tests/integration/histcheck.py): every acknowledged
create is there, no status went back, one outcome per job.

Then the API's figures, side by side in the same run, each --wrk-s s:
DescribeTrainingJob/s on a store of 2,000 jobs created first, then
CreateTrainingJob/s, of one trainctld (no --peers) against the 3-member
cluster's leader (wrk + bench/create.lua,
bench/describe.lua, as bench/api.sh). Goals (issue): writes again
<= 2 s after the leader is lost; 0 acknowledged writes lost over >= 50
faults; Create >= 0.5x and Describe >= 0.9x of one node.

The CPU each create costs (the daemons' user + system time over the
create run, over the creates answered) is printed beside it: one node's,
and the three members' together with the leader's share, since here the
three share two cores.

Usage: /usr/bin/python3 bench/ha.py [--faults 50] [--kinds kill,stop]
           [--clients 4] [--quick] [--no-api] [--member-arg ARG]...
           [--json FILE]
--faults 0: only the API's figures.
--quick: 6 faults, wrk 5 s.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests", "compat"))
sys.path.insert(0, os.path.join(TOP, "tests", "integration"))

import smcompat as sc  # noqa: E402
from halib import Cluster, DAEMON, fault_trials, pct  # noqa: E402

sc.hermetic_env()


PIN = {"on": False}


def pinned(cmd, cpu):
    """cmd run on one CPU (taskset) when --pin is given."""
    return ["taskset", "-c", str(cpu)] + cmd if PIN["on"] else cmd


def pin_pid(pid, cpu):
    if PIN["on"]:
        subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(pid)], check=True,
                       capture_output=True)


def wrk(url, script, seconds, extra_args=()):
    r = subprocess.run(pinned(["wrk", "-t2", "-c32"], 1) + ["-d%ds" % seconds, "--latency", "-s",
                        os.path.join(HERE, script), url, "--"] + list(extra_args),
                       capture_output=True, text=True, timeout=seconds + 60)
    m = re.search(r"Requests/sec:\s*([0-9.]+)", r.stdout)
    bad = re.search(r"non200=([0-9]+)", r.stdout + r.stderr)
    return float(m.group(1)) if m else 0.0, int(bad.group(1)) if bad else -1


def cpu_s(pid):
    """CPU seconds (user + system) the process has used so far."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


PRELOAD = 2000


def preload(port, n, prefix, threads=8):
    """n jobs created through port (8 clients), answered 200 each."""
    import threading
    bad = []

    def run(k):
        for i in range(k, n, threads):
            name = "%s-%d" % (prefix, i)
            for _ in range(50):
                r = sc.amz_json(port, "CreateTrainingJob", sc.small_request(name))
                if r.status == 200:
                    break
                time.sleep(0.1)    # 503 while a leader's lease is renewed
            else:
                bad.append(name)
    ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if bad:
        raise RuntimeError("preload: %d creates refused" % len(bad))


def names_file(port, path):
    subprocess.run([sys.executable, os.path.join(HERE, "list_latency.py"), str(port),
                    "--names-out", path], check=True, capture_output=True, timeout=300)


def api_side_by_side(args, tmp):
    """Create and Describe per second: one node, then the cluster's leader,
    twice each, alternated."""
    rows = {"single": {"create": [], "describe": [], "cpu_ms": []},
            "cluster": {"create": [], "describe": [], "cpu_ms": [], "leader_cpu_ms": []}}
    for rnd in range(2):
        for which in ("single", "cluster"):
            d = tempfile.mkdtemp(prefix="ha-api-", dir=tmp)
            if which == "single":
                port = sc.free_port()
                log = open(os.path.join(d, "log"), "w")
                p = subprocess.Popen([DAEMON, "--listen", "127.0.0.1:%d" % port, "--state-dir",
                                      os.path.join(d, "s"), "--local-hosts", "0"],
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
                log.close()
                pin_pid(p.pid, 0)
                stop = [p]
                pids = [p.pid]
                end = time.time() + 20
                while sc.port_is_free(port, "127.0.0.1") and time.time() < end:
                    time.sleep(0.05)
            else:
                cl = Cluster(d, extra=["--ha-election-ms", str(args.election_ms)] + args.member_arg)
                cl.start()
                lead = cl.wait_leader(60)
                port = lead.api
                stop = cl
                pids = [lead.proc.pid] + [m.proc.pid for m in cl.members if m is not lead]
                for i, x in enumerate(pids):
                    pin_pid(x, 0 if i == 0 else 1)
            try:
                url = "http://127.0.0.1:%d/" % port
                # Describe first, on stores of the same size: PRELOAD jobs.
                preload(port, PRELOAD, "pre%d%s" % (rnd, which[0]))
                nf = os.path.join(d, "names.txt")
                names_file(port, nf)
                dsc, dbad = wrk(url, "describe.lua", args.wrk_s, [nf])
                cpu0 = [cpu_s(x) for x in pids]
                c, cbad = wrk(url, "create.lua", args.wrk_s, ["r%d%s" % (rnd, which[0])])
                used = [cpu_s(x) - y for x, y in zip(pids, cpu0)]
                n = max(1.0, c * args.wrk_s)
                rows[which]["cpu_ms"].append(1000.0 * sum(used) / n)
                if which == "cluster":
                    rows[which]["leader_cpu_ms"].append(1000.0 * used[0] / n)
                rows[which]["create"].append(c)
                rows[which]["describe"].append(dsc)
                print("round %d %s: create %.0f/s (non-200 %d, %.2f ms of CPU each: %s), "
                      "describe %.0f/s (non-200 %d)" % (
                          rnd + 1, which, c, cbad, rows[which]["cpu_ms"][-1],
                          "+".join("%.2f" % (1000.0 * u / n) for u in used), dsc, dbad), flush=True)
            finally:
                if which == "single":
                    stop[0].terminate()
                    stop[0].wait(20)
                else:
                    stop.stop()
    out = {}
    for op in ("create", "describe"):
        s = sorted(rows["single"][op])[len(rows["single"][op]) // 2]
        c = sorted(rows["cluster"][op])[len(rows["cluster"][op]) // 2]
        out[op] = {"single": rows["single"][op], "cluster": rows["cluster"][op],
                   "ratio": c / s if s else 0.0}
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    out["cpu_ms_per_create"] = {"single": med(rows["single"]["cpu_ms"]),
                                "cluster": med(rows["cluster"]["cpu_ms"]),
                                "leader": med(rows["cluster"]["leader_cpu_ms"])}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--faults", type=int, default=50)
    ap.add_argument("--kinds", default="kill,stop")
    ap.add_argument("--stop-s", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--election-ms", type=int, default=800)
    ap.add_argument("--wrk-s", type=int, default=10)
    ap.add_argument("--seed", type=int, default=39)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-api", action="store_true")
    ap.add_argument("--pin", action="store_true",
                    help="one node, or the leader, alone on CPU 0; wrk and the followers on CPU 1")
    ap.add_argument("--member-arg", action="append", default=[],
                    help="another trainctld argument for the members of the API run")
    ap.add_argument("--json")
    args = ap.parse_args()
    PIN["on"] = args.pin
    if args.quick:
        args.faults, args.wrk_s, args.stop_s = 6, 5, 5.0
    tmp = tempfile.mkdtemp(prefix="trainctl-ha-bench-")
    res = {"args": vars(args)}
    try:
        if args.faults:
            res["faults"] = fault_trials(args, tmp, log=lambda m: print(m, flush=True))
        if not args.no_api:
            res["api"] = api_side_by_side(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    f = res.get("faults") or {"faults": [], "kinds": "", "operations": 0, "acked_creates": 0,
                              "listed": 0, "lost_acked": 0, "n_violations": 0, "violations": []}
    again = [x["writes_again_s"] for x in f["faults"] if x["writes_again_s"] is not None]
    never = sum(1 for x in f["faults"] if x["writes_again_s"] is None)
    print()
    print("| what | value |")
    print("| --- | --- |")
    for kind in filter(None, f["kinds"].split(",")):
        xs = [x["writes_again_s"] for x in f["faults"] if x["kind"] == kind
              and x["writes_again_s"] is not None]
        print("| writes again after %s of the leader (n=%d): median / p90 / max | %.2f / %.2f / %.2f s |"
              % (kind, len(xs), pct(xs, 50), pct(xs, 90), max(xs) if xs else float("nan")))
    print("| faults with no write acknowledged within 10 s | %d |" % never)
    print("| operations | %s |" % f["operations"])
    print("| acknowledged creates / listed at the end | %d / %d |" % (f["acked_creates"], f["listed"]))
    print("| acknowledged writes lost | %d |" % f["lost_acked"])
    print("| history violations | %d |" % f["n_violations"])
    for v in f["violations"]:
        print("|   %s | |" % v)
    if "api" in res:
        for op in ("create", "describe"):
            a = res["api"][op]
            print("| %s/s: one node / 3 members (leader) | %s / %s: %.2fx |" % (
                op.capitalize(), "+".join("%.0f" % x for x in a["single"]),
                "+".join("%.0f" % x for x in a["cluster"]), a["ratio"]))
        cpu = res["api"]["cpu_ms_per_create"]
        print("| CPU per create: one node / the 3 members (the leader's share) | %.2f / %.2f (%.2f) ms |" % (
            cpu["single"], cpu["cluster"], cpu["leader"]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1, default=str)
    ok = never == 0 and f["n_violations"] == 0 and (not again or max(again) <= 2.0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
