#!/usr/bin/python3
"""Restore time of a checkpoint on a host that replaced a lost one: from
the copy another host of the job holds in memory (trainagent
--memory-checkpoint-mb with --peer-checkpoint-port) versus from the store,
for the same checkpoint.

One cluster of 3 network-namespace hosts (scripts/cluster.sh), the agents'
copies shared through cluster.sh --host-env. Each trial runs a 2-host job
of tests/integration/ft_trainer.py whose checkpoint (rank 0's, step 20)
carries a pad.bin of SIZE MiB; once algo-2's host holds algo-1's copy,
algo-1's host loses its link and the spare restores step 20 for attempt 2.
For the store's figure the copy on algo-2's host is removed first (both
copies gone). Trials alternate between the two. The copy comes over the
namespace network from algo-2's agent; the store is the embedded one,
which hosts on this machine read as files (they share its folders: no
network at all, the fastest store there is). The figure is the agent's own, from its line in
the job's log ("step 20 restored in N ms (source: peer)" or "... restored
in N ms from ... (source: store)"): the time to put the checkpoint folder
in place, before the program starts.

As hosts on other machines would reach the store over the network, each
peer trial also times, from the spare's namespace and before the loss,
the same pad.bin fetched with curl (to /dev/null) from algo-2's agent
(the job's token, derived here from the controller's key as the
controller does) and from the controller's S3 face (SigV4): the same
client, the same network, one server each.

    /usr/bin/python3 bench/peerckpt.py --quick   # 32 MiB, 2 trials each
    /usr/bin/python3 bench/peerckpt.py           # 256 MiB, 3 trials each
"""
import argparse
import glob
import hashlib
import hmac
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import ftlib as fl  # noqa: E402

sc = fl.sc
PREFIX, NET, PORT = sc.run_names("pb")
SHM = "/dev/shm/%s-bench-peerckpt-%d" % (PREFIX, os.getpid())
PEER_PORT = 7471
ARGS = ["--grace-period", "2", "--heartbeat-ms", "200", "--host-deadline-ms", "1000",
        "--restart-wait", "30", "--max-retries", "0"]
TIME_RE = re.compile(r"restored in (\d+) ms.*\(source: (\w+)\)")
FOLDER = "step-0000000020.rank-0.a1"


def curl_ms(ns, node, url, args):
    """Seconds of one GET of url with curl in node's namespace, as ms."""
    p = subprocess.run(["ip", "netns", "exec", "%s-%s" % (ns.prefix, node), "curl", "-s", "-f", "-o", "/dev/null",
                        "-w", "%{time_total}"] + args + [url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120)
    if p.returncode != 0:
        raise SystemExit("curl %s: exit %d %s" % (url, p.returncode, p.stderr.decode()[:300]))
    return float(p.stdout) * 1000


def raw_fetches(ns, name, holder, path):
    """(peer ms, store ms): pad.bin from algo-2's agent and from the
    controller's S3 face, fetched from the host no job runs on."""
    hosts = {h["name"]: h.get("address") for h in ns.hosts()}
    spare = [h for h, _ in sorted(hosts.items()) if ns.host_of(name, "algo-1") != h and holder != h][0]
    uid = os.path.basename(os.path.dirname(path))
    with open(os.path.join(ns.ctrl_state, "rendezvous.key")) as f:
        key = bytes.fromhex(f.read().strip())
    token = hmac.new(key, ("%s/0/%s" % (name, uid)).encode(), hashlib.sha256).hexdigest()
    peer = "http://%s:%d/checkpoints/%s/%s/pad.bin" % (hosts[holder], PEER_PORT, uid, FOLDER)
    store = "%s/%s/ckpt/%s/%s/pad.bin" % (ns.endpoint, fl.BUCKET, name, FOLDER.rsplit(".", 1)[0])
    p = curl_ms(ns, spare, peer, ["-H", "Authorization: Bearer " + token])
    s = curl_ms(ns, spare, store, ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "%s:%s" % (ns.key, ns.secret),
                                   "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"])
    return p, s


def wait_for(what, pred, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise SystemExit("%s: not within %d s" % (what, timeout))


def pushed_copy(node):
    hits = glob.glob(os.path.join(SHM, node, ".peer", "*", FOLDER, "MANIFEST.json"))
    return os.path.dirname(hits[0]) if hits else None


def trial(ns, sm, name, size_mb, want):
    hps = {"steps": 60, "ckpt_every": 20, "step_sleep": 0.05, "ckpt_pad_kb": size_mb * 1024}
    sm.create_training_job(**fl.job_request(name, 2, hps, retries=2, itype=ns.itype, max_runtime=600))
    holder = wait_for("algo-2's host", lambda: ns.host_of(name, "algo-2"), 60)
    victim = ns.host_of(name, "algo-1")
    path = wait_for("%s: the copy on %s" % (name, holder), lambda: pushed_copy(holder), 300)
    raw = raw_fetches(ns, name, holder, path) if want == "peer" else None
    ns.link(victim, up=False)
    # Cut off first: until then the victim pushes a removed copy again.
    if want == "store":
        shutil.rmtree(path)
    try:
        d, _ = fl.wait_job(sm, name, fl.terminal, 600, interval=0.2)
    finally:
        ns.link(victim, up=True)
    if d["TrainingJobStatus"] != "Completed":
        raise SystemExit("%s: %s (%s)" % (name, d["TrainingJobStatus"], d.get("FailureReason")))
    rows = fl.attempt_logs(ns.logs_dir(name)).get(2, {}).get("algo-1", [])
    found = [m.groups() for m in (TIME_RE.search(r[3]) for r in rows) if m]
    if not found or found[0][1] != want:
        raise SystemExit("%s: attempt 2's restore: %s, want %s" % (name, found, want))
    ns.wait_hosts(lambda hs: sum(h.get("state") == "ready" for h in hs) == ns.n_hosts, 60, "hosts ready")
    # Nothing of this trial's job stays in memory for the next one.
    for p in glob.glob(os.path.join(SHM, "*", "*")) + glob.glob(os.path.join(SHM, "*", ".peer", "*")):
        if os.path.basename(p) != ".peer":
            shutil.rmtree(p, ignore_errors=True)
    return int(found[0][0]), raw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--size-mb", type=int)
    ap.add_argument("--trials", type=int)
    a = ap.parse_args()
    size = a.size_mb or (32 if a.quick else 256)
    trials = a.trials or (2 if a.quick else 3)
    if fl.ns_skip_reason():
        raise SystemExit("needs the namespace cluster: %s" % fl.ns_skip_reason())
    env = ["TRAINCTL_MEMORY_CHECKPOINT_MB=%d" % (4 * size + 64), "TRAINCTL_MEMORY_CHECKPOINT_DIR=" + SHM,
           "TRAINCTL_PEER_CHECKPOINT_PORT=%d" % PEER_PORT]
    up_args = []
    for e in env:
        up_args += ["--host-env", e]
    ns = fl.NsCluster(PREFIX, NET, PORT, extra=ARGS, up_args=up_args)
    times = {"peer": [], "store": [], "curl peer": [], "curl store": []}
    run = "%x" % (int(time.time() * 1000) % 0xfffffff)
    try:
        err = ns.up()
        if err:
            raise SystemExit(err)
        sm = ns.client()
        for i in range(trials):
            for want in ("peer", "store"):
                ms, raw = trial(ns, sm, "pb-%s-%s-%d" % (want, run, i), size, want)
                times[want].append(ms)
                if raw:
                    times["curl peer"].append(raw[0])
                    times["curl store"].append(raw[1])
    finally:
        ns.down()
        shutil.rmtree(SHM, ignore_errors=True)
    print("checkpoint of %d MiB (one rank) restored on the spare of a 2-host job, %d trials each, "
          "alternating; 2-core machine" % (size, trials))
    rows = (("peer", "restore on the spare, from algo-2's copy (agent's record)"),
            ("store", "restore on the spare, from the store's folder read as files (agent's record)"),
            ("curl peer", "pad.bin over the network from algo-2's agent (curl)"),
            ("curl store", "pad.bin over the network from the controller's S3 face (curl)"))
    print("| what | median ms | min | max |")
    print("| --- | --- | --- | --- |")
    for key, what in rows:
        v = times[key]
        print("| %s | %d | %d | %d |" % (what, statistics.median(v), min(v), max(v)))
    for a, b in (("store", "peer"), ("curl store", "curl peer")):
        x, y = statistics.median(times[a]), statistics.median(times[b])
        print("%s / %s: %.1fx" % (a, b, x / y if y else float("inf")))


if __name__ == "__main__":
    main()
