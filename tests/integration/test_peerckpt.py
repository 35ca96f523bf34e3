#!/usr/bin/python3
"""Checkpoints restored from another host's memory (docs/checkpoints.md,
"Copies on another host"; trainagent --memory-checkpoint-mb and
--peer-checkpoint-port, given to every agent through cluster.sh
--host-env) on a cluster of 3 network-namespace hosts.

Each case runs a 2-host job of ft_trainer.py (rank 0, algo-1, writes a
checkpoint every 50 steps with a 256 KiB pad) with the third host free as
a spare. Once algo-2's host holds the copy of step 50 that algo-1's host
pushed to it, algo-1's host loses its link: attempt 2 runs algo-1 on the
spare, which restores step 50, and the job Completes with the weights of
a run without faults.

  (p1) the copy on algo-2's host is there: the spare restores it from
       there (its line in the job's log says "source: peer" and "rank 0
       peer algo-2 (attempt 1)", or, when algo-2 restored first and pushed
       its copy on, "rank 0 memory (attempt 2)"; nothing from the store),
       and algo-2 from its own memory ("rank 0 memory (attempt 1)")
  (p2) both copies gone (the lost host unreachable, algo-2's removed):
       no copy of attempt 1 is restored; the spare reads the store
       ("source: store"), or a copy that a host of attempt 2 made from it
       ("(attempt 2)": algo-2 restores from the store too, and may keep
       and push its copy before the spare asks)
  (p3) algo-2's copy is a stale attempt's (same step, another manifest):
       never restored (no "(attempt 1)" on either host), as in (p2)

TAP on stdout; skips (1..0 # SKIP) when not root or without sshd. Run from
the top of the tree: /usr/bin/python3 tests/integration/test_peerckpt.py
"""
import glob
import os
import shutil
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
expect, Fail = sc.expect, sc.Fail
PREFIX, NET, PORT = sc.run_names("pc")
SHM = "/dev/shm/%s-peerckpt-%d" % (PREFIX, os.getpid())
PEER_PORT = 7471
ARGS = ["--grace-period", "2", "--heartbeat-ms", "200", "--host-deadline-ms", "1000",
        "--restart-wait", "30", "--max-retries", "0", "-v"]
HOST_ENV = ["TRAINCTL_MEMORY_CHECKPOINT_MB=64", "TRAINCTL_MEMORY_CHECKPOINT_DIR=" + SHM,
            "TRAINCTL_PEER_CHECKPOINT_PORT=%d" % PEER_PORT]
HPS = {"steps": 150, "ckpt_every": 50, "step_sleep": 0.04, "ckpt_pad_kb": 256}
FOLDER = "step-0000000050.rank-0.a1"


def pushed_copy(node):
    """The copy of step 50 pushed to node, as a path; None until there."""
    hits = glob.glob(os.path.join(SHM, node, ".peer", "*", FOLDER, "MANIFEST.json"))
    return os.path.dirname(hits[0]) if hits else None


def wait_for(what, pred, timeout, ns, name):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise Fail("%s: %s not within %d s\n%s" % (name, what, timeout, ns.log_tail(15, grep=name)))


def make_stale(path):
    """The copy as a stale attempt would have left it: other weights, and
    a manifest naming them."""
    with open(os.path.join(path, "params.bin"), "r+b") as f:
        b = bytearray(f.read(64))
        b[0] ^= 0xff
        f.seek(0)
        f.write(bytes(b))
    with open(os.path.join(path, "MANIFEST.json"), "a") as f:
        f.write(" ")


def run_case(ns, sm, name, at_loss):
    """The job up to step 50's copy on algo-2's host, algo-1's host cut
    off, at_loss(path); returns attempt 2's restore lines of algo-1 and
    algo-2."""
    sm.create_training_job(**fl.job_request(name, 2, HPS, retries=2, itype=ns.itype))
    holder = wait_for("algo-2's host", lambda: ns.host_of(name, "algo-2"), 30, ns, name)
    victim = ns.host_of(name, "algo-1")
    path = wait_for("the copy of step 50 on %s" % holder, lambda: pushed_copy(holder), 40, ns, name)
    ns.link(victim, up=False)
    # Cut off first: until then the victim would push a copy again. The
    # spare starts a second later at the earliest (--host-deadline-ms).
    at_loss(path)
    try:
        d, _ = fl.wait_job(sm, name, fl.terminal, 60)
    finally:
        ns.link(victim, up=True)
    expect(d["TrainingJobStatus"] == "Completed", "%s: %s (%s)\n%s" % (
        name, d["TrainingJobStatus"], d.get("FailureReason"), ns.log_tail(15, grep=name)))
    logs = fl.attempt_logs(ns.logs_dir(name))
    rows = logs.get(2, {}).get("algo-1", [])
    rf = fl.field(rows, "ft-resume", "resumed_from")
    expect(rf and rf[0] == "50", "attempt 2 did not resume from 50: %s" % rf)
    res = fl.results(ns.s3_path(fl.model_uri(name)))
    ref = fl.reference(HPS)
    expect(res.get("algo-1", {}).get("params_sha256") == ref["params_sha256"],
           "weights differ from a run without faults: %r" % res.get("algo-1"))
    out = []
    for algo in ("algo-1", "algo-2"):
        rows = logs.get(2, {}).get(algo, [])
        lines = [r[3] for r in rows if "checkpoint:" in r[3] and "(source:" in r[3]]
        expect(lines, "no restore line in attempt 2 of %s: %s" % (algo, [r[3] for r in rows[:8]]))
        out.append(lines[0])
    hosts_ready(ns)
    return out


def hosts_ready(ns):
    ns.wait_hosts(lambda hs: sum(h.get("state") == "ready" for h in hs) == ns.n_hosts, 30,
                  "all hosts ready")


def from_store(line):
    """Whether a restore line says the store, or a copy attempt 2 made
    from it, and no copy of attempt 1."""
    return "(attempt 1)" not in line and ("source: store" in line or "(attempt 2)" in line)


def cases(tap, ns, sm):
    run = "%x" % (int(time.time() * 1000) % 0xfffffff)

    def p1():
        line, survivor = run_case(ns, sm, "pc-peer-" + run, lambda path: None)
        # Straight from algo-2's copy, or from the copy algo-2 pushed it
        # once restored (a slower spare may find that first): either way
        # algo-2's memory, nothing from the store.
        direct = "source: peer" in line and "rank 0 peer algo-2 (attempt 1)" in line
        pushed = "source: memory" in line and "rank 0 memory (attempt 2)" in line
        expect((direct or pushed) and "step 50 " in line and " 0 (0 bytes) from s3://" in line,
               "the spare did not restore step 50 from algo-2's copy: %s" % line)
        expect("source: memory" in survivor and "rank 0 memory (attempt 1)" in survivor,
               "algo-2 did not restore the copy pushed to it: %s" % survivor)
        return line.split("checkpoint: ", 1)[1]
    r = tap.case("(p1) a host lost: the spare restores its checkpoint from the copy on algo-2's host", p1)
    if isinstance(r, str):
        tap.note(r)

    def p2():
        line, survivor = run_case(ns, sm, "pc-gone-" + run, lambda path: shutil.rmtree(path))
        for what, ln in (("the spare", line), ("algo-2", survivor)):
            expect(from_store(ln), "%s did not restore from the store: %s" % (what, ln))
    tap.case("(p2) both copies gone: the spare restores from the store", p2)

    def p3():
        line, survivor = run_case(ns, sm, "pc-stale-" + run, make_stale)
        for what, ln in (("the spare", line), ("algo-2", survivor)):
            expect(from_store(ln), "a stale attempt's copy was restored on %s: %s" % (what, ln))
    tap.case("(p3) a stale attempt's copy (another manifest) is never restored", p3)


def main():
    tap = sc.Tap()
    reason = fl.ns_skip_reason()
    if reason:
        print("1..0 # SKIP %s" % reason)
        return 0
    up_args = []
    for e in HOST_ENV:
        up_args += ["--host-env", e]
    ns = fl.NsCluster(PREFIX, NET, PORT, extra=ARGS, up_args=up_args)
    try:
        t = time.time()
        err = ns.up()
        if not tap.ok(err is None, "cluster.sh up --hosts 3, copies shared on port %d (%.1f s)" % (
                PEER_PORT, time.time() - t), err):
            return tap.finish()
        cases(tap, ns, ns.client())
    except Exception as e:
        tap.ok(False, "the cases ran to their end", "%s: %s\n%s\n%s" % (
            type(e).__name__, e, traceback.format_exc(), ns.log_tail(15)))
    finally:
        rc, out, err = ns.down()
        shutil.rmtree(SHM, ignore_errors=True)
        left = [p for p, argv in fl.proc_argvs() if any(ns.state in a for a in argv)]
        tap.ok(rc == 0 and not left, "cluster.sh down: nothing left",
               "exit %d %s%s; left %s" % (rc, out, err, left))
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
