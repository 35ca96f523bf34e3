#!/usr/bin/python3
"""Racks from the inventory steer placement (docs/queues.md, "Topology").

trainctld with an inventory of four hosts whose agents are bench/scale.py's
simulated ones ("agent": "external"), listed so that neighbours are in
different racks: n1 (r1), n2 (r2), n3 (r2), n4 (r1).
  (k1) two 1-host jobs, one after the other, share a rack: the second
       goes to the rack with the fewest free hosts that holds it (input
       order alone would give them n1 and n2, one in each rack)
  (k2) a 2-host job then takes the other rack whole (input order alone
       would give it n3 and n4, one in each)
  (k3) GET /v1/hosts (and so `trainctl list-hosts`) shows each rack

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_racks.py
"""
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import scale  # noqa: E402  (the simulated hosts)

BUILD = os.environ.get("BUILD", "build")
RACKS = {"n1": "r1", "n2": "r2", "n3": "r2", "n4": "r1"}
n = 0
failed = 0


def check(ok, what, detail=""):
    global n, failed
    n += 1
    failed += not ok
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    if not ok and detail:
        for line in str(detail).splitlines()[-20:]:
            print("# " + line)
    sys.stdout.flush()
    return ok


def hosts_of(loop, port, job, count, timeout=30):
    """The hosts whose assignment is job, once there are count of them."""
    c = scale.Conn(port)
    deadline = time.time() + timeout
    got = []
    while time.time() < deadline:
        st, ans = loop.run_until_complete(c.request("GET", "/v1/hosts"))
        if st == 200:
            got = sorted(h["name"] for h in json.loads(ans)["hosts"] if h.get("job") == job)
            if len(got) == count:
                break
        time.sleep(0.1)
    c.close()
    return got


def create(loop, port, name, count):
    c = scale.Conn(port)
    st, ans = loop.run_until_complete(scale.sm_call(
        c, "CreateTrainingJob", scale.create_body(name, count, scale.BULK_TYPE)))
    c.close()
    return st, ans


def main():
    tmp = tempfile.mkdtemp(prefix="trainctl-racks-")
    state = os.path.join(tmp, "state")
    port = scale.free_port()
    with open(os.path.join(tmp, "inventory.json"), "w") as f:
        json.dump({"hosts": [{"name": h, "agent": "external", "instance_type": scale.BULK_TYPE,
                              "cpus": 8, "rack": r} for h, r in RACKS.items()]}, f)
    log = open(os.path.join(tmp, "trainctld.log"), "w")
    proc = subprocess.Popen([os.path.join(ROOT, BUILD, "bin", "trainctld"), "--listen",
                             "127.0.0.1:%d" % port, "--state-dir", state, "--inventory",
                             os.path.join(tmp, "inventory.json"), "--local-hosts", "0"],
                            stdout=log, stderr=subprocess.STDOUT)
    shared = scale.Shared(1)
    workers = []
    loop = scale.new_loop()
    try:
        loop.run_until_complete(scale.wait_up(scale.Conn(port), proc, log))
        tokens = []
        for i, h in enumerate(RACKS):
            tokens.append((i, h, scale.host_token(state, h)))
        w = multiprocessing.get_context("fork").Process(
            target=scale.worker_main, args=(port, 1, 0, shared, tokens, set()))
        w.start()
        workers.append(w)
        shared.ready.wait(timeout=60)
        # Simulated jobs run 5-25 s: long enough to be seen on their hosts.
        on = {}
        for name, count in (("rack-a", 1), ("rack-b", 1), ("rack-c", 2)):
            st, ans = create(loop, port, name, count)
            on[name] = hosts_of(loop, port, name, count) if st == 200 else []
            if st != 200:
                print("# create %s: %s %s" % (name, st, ans))
        a, b, c = on["rack-a"], on["rack-b"], on["rack-c"]
        check(len(a) == 1 and len(b) == 1 and RACKS[a[0]] == RACKS[b[0]],
              "(k1) two 1-host jobs share a rack", "on %s and %s" % (a, b))
        check(len(c) == 2 and len({RACKS[h] for h in c}) == 1 and not set(c) & set(a + b),
              "(k2) a 2-host job takes the other rack whole", "on %s (the others on %s, %s)" % (c, a, b))
        c = scale.Conn(port)
        st, ans = loop.run_until_complete(c.request("GET", "/v1/hosts"))
        c.close()
        racks = {h["name"]: h.get("rack") for h in json.loads(ans)["hosts"]} if st == 200 else {}
        check(racks == RACKS, "(k3) GET /v1/hosts shows each host's rack", racks)
        check(proc.poll() is None, "trainctld still up")
    finally:
        scale.shut_down(shared, workers, loop, proc, log, tmp, os.environ.get("TRAINCTL_TEST_KEEP") == "1")
    print("1..%d" % n)
    sys.exit(0 if failed == 0 else 1)


if __name__ == "__main__":
    main()
