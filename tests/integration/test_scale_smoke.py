#!/usr/bin/python3
"""Scale smoke run: bench/scale.py with 200 simulated hosts for 10 s.

200 hosts in the inventory with externally started agents ("agent":
"external"), each speaking the agent protocol with its own token; 100 jobs
of 1-16 instances queued and running, probe jobs created every 250 ms.
  (s1) the tool ran and trainctld stayed up, no answer was an error
  (s2) every probe job reached every one of its hosts
  (s3) heartbeats were answered (hundreds of them in the window)
  (s4) hosts that stop heartbeating are seen lost, never before the
       deadline (3 s); how soon after it is the benchmark's figure
       (bench/scale.py waits 10 s past the deadline, then says "never")
The figures themselves (CPU, RSS, latencies at 500, 2,000 and 5,000 hosts)
are the benchmark's: docs/benchmarks.md.

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_scale_smoke.py
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")

n = 0


def check(ok, what, detail=""):
    global n
    n += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    if not ok and detail:
        for line in str(detail).splitlines()[-20:]:
            print("# " + line)
    sys.stdout.flush()


def main():
    print("1..4")
    with tempfile.TemporaryDirectory(prefix="trainctl-scale-test.") as tmp:
        out = os.path.join(tmp, "scale.json")
        p = subprocess.run(
            ["/usr/bin/python3", os.path.join(ROOT, "bench/scale.py"),
             "--hosts", "200", "--jobs", "100", "--duration", "10",
             "--warmup", "2", "--idle", "3", "--smoke", "--json", out,
             "--trainctld", os.path.join(ROOT, BUILD, "bin/trainctld")],
            capture_output=True, text=True, timeout=240)
        res = None
        if os.path.exists(out):
            with open(out) as f:
                res = json.load(f)[0]
        log = p.stdout + p.stderr
        check(p.returncode == 0 and res is not None and res["alive"] and
              res["errors"] == 0, "(s1) 200 simulated hosts: no error, "
              "trainctld up", log)
        if res is None:
            for what in ("(s2)", "(s3)", "(s4)"):
                check(False, what + " no results")
            return
        check(res["probes"] > 10 and res["probes_placed"] == res["probes"],
              "(s2) every probe job placed on all its hosts (%d of %d)" %
              (res["probes_placed"], res["probes"]), log)
        check(res["hb_n"] > 500, "(s3) heartbeats answered: %d" % res["hb_n"], log)
        lost = res["lost_noticed_ms"]
        check(lost is not None and lost >= 2900,
              "(s4) a silent host is seen lost, not before the deadline: %s ms" % lost, log)


if __name__ == "__main__":
    main()
