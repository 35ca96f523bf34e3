#!/usr/bin/python3
"""User-supplied regular expressions against a controller with an admin key
and two user keys (alice, bob) and two local hosts.

  (r1) bob's job has 20 MetricDefinitions `^(a|aa)+$` (catastrophic
       backtracking, with a capture group) and prints 30,000 lines of 40
       `a` and a `!` (1.2 MB); meanwhile alice's job on the other host runs to
       Completed, /healthz and DescribeTrainingJob each answer within 5 s
       throughout, the controller uses at most half a core while it
       ingests them, and bob's job log says that its definitions were
       disabled (4 more definitions with the slow regex of (r2) are
       disabled for their CPU use)
  (r2) a log search of bob's job with a catastrophic regex over its 1.2 MB
       log answers within 15 s (400 "too costly", or a truncated result);
       one with a regex just under the match limit (about 1 ms a line)
       answers truncated within 15 s
  (r3) 20 such searches at once (more than the 16 HTTP threads): /healthz,
       Describe and the agents' heartbeats (hosts stay ready) keep
       answering within 5 s, and every search answers within 30 s
  (r3b) one user's share: while two of bob's slow searches run, his
       third is answered 429 at once, and alice's search of her own job
       still runs (200)
  (r4) searches with that slow regex whose clients disconnect stop: the
       controller's CPU use in the 3 s after is under 1.5 s
  (r5) a log batch an agent sends twice (same boot_id and seq, as after a
       timed-out POST) is stored once
  (r6) SIGTERM stops trainctld within 20 s

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_hostile_regex.py
BUILD names the build directory (default build).
"""
import json
import os
import socket
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402
import test_security as ts  # noqa: E402

sc = fl.sc
sc.hermetic_env()
expect = sc.expect

BOB_SCRIPT = r"""
line=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
i=0
while [ $i -lt 30000 ]; do echo "$line!"; i=$((i+1)); done
echo "bob printed everything"
sleep 2
"""

ALICE_SCRIPT = r"""
i=0
while [ $i -lt 14 ]; do echo "alice step $i"; i=$((i+1)); sleep 1; done
"""

CATASTROPHIC = "^(a|aa)+$"
# Under the match limit from each start position, yet about 1 ms a line:
# stopped by CPU accounting, the search deadline or the client leaving.
SLOW = "(a|a)" + "(?:a|a)" * 12 + "(?:b|c)"
SEARCH = "^(a|aa)+$"


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(fn):
    t0 = time.time()
    try:
        r = fn()
    except Exception as e:  # a timeout is a result here
        r = e
    return time.time() - t0, r


def healthz(d, timeout=10):
    return sc.http_request(d.port, "GET", "/healthz", timeout=timeout)


def job_req(d, name, who, script, metrics=None):
    path = os.path.join(d.tmp, name + ".sh")
    with open(path, "w") as f:
        f.write(script)
    os.chmod(path, 0o755)
    r = ts.request(name, OutputDataConfig={"S3OutputPath": ts.out_of(who)})
    r["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sh"
    r["AlgorithmSpecification"]["ContainerArguments"] = [path]
    if metrics:
        r["AlgorithmSpecification"]["MetricDefinitions"] = metrics
    return r


def job_log(d, job):
    out = b""
    top = os.path.join(d.state_dir, "logs", job)
    for f in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        with open(os.path.join(top, f), "rb") as fh:
            out += fh.read()
    return out


def search_path(job, q):
    from urllib.parse import quote
    return "/v1/training-jobs/%s/logs/search?q=%s&regex=1" % (job, quote(q, safe=""))


def case_metrics(tap, d, alice, bob, admin):
    alice.create_training_job(**job_req(d, "rx-alice", "alice", ALICE_SCRIPT))
    fl.wait_job(alice, "rx-alice", fl.running, 60)
    metrics = [{"Name": "m%d" % i, "Regex": CATASTROPHIC} for i in range(16)]
    metrics += [{"Name": "s%d" % i, "Regex": SLOW} for i in range(4)]
    pid = d.proc.pid
    c0, t0 = cpu_s(pid), time.time()
    bob.create_training_job(**job_req(d, "rx-bob", "bob", BOB_SCRIPT, metrics))
    slow = []
    deadline = time.time() + 90
    done = None
    while time.time() < deadline:
        dt, r = timed(lambda: healthz(d, timeout=6))
        if dt > 5 or getattr(r, "status", None) != 200:
            slow.append("healthz %.1f s %r" % (dt, r))
        dt, r = timed(lambda: alice.describe_training_job(TrainingJobName="rx-alice"))
        if dt > 5 or not isinstance(r, dict):
            slow.append("describe %.1f s %r" % (dt, r))
        elif fl.terminal(r):
            done = r
            break
        time.sleep(0.3)
    used, took = cpu_s(pid) - c0, time.time() - t0

    def check():
        expect(done is not None, "alice's job did not end within 90 s")
        expect(done["TrainingJobStatus"] == "Completed", "alice's job: %s %s" % (
            done["TrainingJobStatus"], done.get("FailureReason")))
        expect(not slow, "slow or failed calls: %s" % "; ".join(slow[:5]))
        expect(used < 0.5 * took, "controller used %.1f s of CPU in %.1f s" % (used, took))
        fl.wait_job(bob, "rx-bob", fl.terminal, 60)
        log = job_log(d, "rx-bob")
        expect(log.count(b"bob printed everything") == 1, "bob's last line is not in his log once")
        expect(b"MetricDefinition 'm0' is disabled" in log, "no note that m0 was disabled in bob's log")
        expect(b"MetricDefinition 's0' is disabled" in log, "no note that s0 was disabled in bob's log")
    tap.case("(r1) 20 catastrophic MetricDefinitions: alice's job Completes, API answers < 5 s, "
             "CPU bounded, bob's definitions disabled with a note in his log", check)


def case_search(tap, d):
    bob_key = ts.USER_KEYS["bob"]
    path = search_path("rx-bob", SEARCH)

    def one():
        dt, r = timed(lambda: ts.signed_as(d, "GET", path, bob_key))
        expect(dt < 15, "the search took %.1f s" % dt)
        expect(hasattr(r, "status"), "the search failed: %r" % r)
        if r.status == 400:
            expect(b"too costly" in r.body, "400 without the reason: %r" % r.body[:200])
        else:
            expect(r.status == 200 and (r.json or {}).get("truncated") is True,
                   "search answered %s %r" % (r.status, r.body[:200]))
    tap.case("(r2) a catastrophic log search over 1.2 MB answers within 15 s", one)

    def slow():
        dt, r = timed(lambda: ts.signed_as(d, "GET", search_path("rx-bob", SLOW), bob_key))
        expect(dt < 15, "the search took %.1f s" % dt)
        expect(getattr(r, "status", None) == 200 and (r.json or {}).get("truncated") is True,
               "search answered %r" % (getattr(r, "body", r)[:200],))
    tap.case("(r2) a slow log search stops at its time budget, truncated", slow)

    def many():
        results = []

        def run():
            dt, r = timed(lambda: sc.http_request(
                d.port, "GET", path, headers=sc.sigv4_sign(
                    "GET", "127.0.0.1:%d" % d.port, path.partition("?")[0], path.partition("?")[2], b"",
                    bob_key[0], bob_key[1]), timeout=40))
            results.append((dt, getattr(r, "status", r)))
        threads = [threading.Thread(target=run) for _ in range(20)]
        for t in threads:
            t.start()
        slow = []
        t0 = time.time()
        while any(t.is_alive() for t in threads) and time.time() - t0 < 45:
            dt, r = timed(lambda: healthz(d, timeout=6))
            if dt > 5 or getattr(r, "status", None) != 200:
                slow.append("healthz %.1f s %r" % (dt, r))
            hosts = ts.signed_as(d, "GET", "/v1/hosts", ts.USER_KEYS["admin"]).json or {}
            lost = [h.get("name") for h in hosts.get("hosts", []) if h.get("state") not in ("ready", "busy")]
            if lost:
                slow.append("hosts not ready: %s" % lost)
            time.sleep(0.3)
        for t in threads:
            t.join(1)
        expect(not slow, "; ".join(slow[:5]))
        expect(len(results) == 20, "only %d searches answered" % len(results))
        bad = [x for x in results if x[0] > 30 or x[1] not in (200, 400, 429)]
        expect(not bad, "searches: %s" % bad[:5])
    tap.case("(r3) 20 concurrent catastrophic searches: API and heartbeats answer, searches end", many)

    def share():
        slow_path = search_path("rx-bob", SLOW)
        out = {}

        def run(i):
            out[i] = ts.signed_as(d, "GET", slow_path, bob_key)
        threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        dt, third = timed(lambda: ts.signed_as(d, "GET", slow_path, bob_key))
        dt2, hers = timed(lambda: ts.signed_as(d, "GET", search_path("rx-alice", "step"),
                                               ts.USER_KEYS["alice"]))
        for t in threads:
            t.join(30)
        expect(getattr(third, "status", None) == 429 and dt < 5,
               "bob's third search: %r after %.1f s" % (getattr(third, "body", third)[:200], dt))
        expect(getattr(hers, "status", None) == 200,
               "alice's search while bob holds his share: %r" % (getattr(hers, "body", hers)[:200],))
        expect(all(getattr(r, "status", None) == 200 for r in out.values()),
               "bob's two searches: %r" % {i: getattr(r, "status", r) for i, r in out.items()})
    tap.case("(r3b) one user holds at most two searches; another's still runs", share)

    def gone():
        path = search_path("rx-bob", SLOW)
        host = "127.0.0.1:%d" % d.port
        headers = sc.sigv4_sign("GET", host, path.partition("?")[0], path.partition("?")[2], b"",
                                bob_key[0], bob_key[1])
        socks = []
        for _ in range(2):  # one user's share of the searches
            s = socket.create_connection(("127.0.0.1", d.port))
            s.sendall(("GET %s HTTP/1.1\r\n%s\r\n" % (
                path, "".join("%s: %s\r\n" % kv for kv in headers.items()))).encode())
            socks.append(s)
        time.sleep(0.5)
        for s in socks:
            s.close()
        time.sleep(0.5)
        c0 = cpu_s(d.proc.pid)
        time.sleep(3)
        used = cpu_s(d.proc.pid) - c0
        expect(used < 1.5, "controller used %.1f s of CPU in the 3 s after the clients left" % used)
        with open(d.log_path, "rb") as f:
            left = f.read().count(b"stopped early (the client left)")
        expect(left == 2, "%d of 2 searches say they stopped because the client left" % left)
    tap.case("(r4) searches whose clients left stop", gone)


def case_resend(tap, d):
    token = fl.sc.host_token(d.state_dir, "local-1")
    marker = "resent-batch-marker-%d" % os.getpid()
    body = json.dumps({"boot_id": "0f2c9d1e-0000-4000-8000-00000000beef", "seq": 7, "lines": [
        {"job": "rx-bob", "attempt": 1, "algo": "algo-1", "rank": 0, "stream": "stdout",
         "ts_ms": int(time.time() * 1000), "text": marker}]}).encode()

    def check():
        for _ in range(2):
            r = sc.http_request(d.port, "POST", "/v1/agents/local-1/logs", body=body,
                                headers={"Authorization": "Bearer " + token,
                                         "Content-Type": "application/json"})
            expect(r.status == 200, "POST logs: %s %r" % (r.status, r.body[:200]))
        n = job_log(d, "rx-bob").count(marker.encode())
        expect(n == 1, "the line was stored %d times" % n)
    tap.case("(r5) a log batch sent twice is stored once", check)


def main():
    tap = sc.Tap()
    why = ts.make_users()
    if why:
        tap.skip("user-supplied regexes", why)
        return tap.finish()
    d = None
    try:
        d = sc.Daemon(credentials=None, name="trainctld-regex", extra=["--local-hosts", "2"])
        os.makedirs(d.state_dir, exist_ok=True)
        os.chmod(d.tmp, 0o711)
        path = os.path.join(d.tmp, "users-credentials")
        with open(path, "w") as f:
            f.write("[admin]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % ts.USER_KEYS["admin"])
            for who, user in (("alice", ts.USERS[0]), ("bob", ts.USERS[1])):
                f.write(ts.user_profile(who, user))
        d.extra += ["--credentials", path]
        err = d.start()
        if not tap.ok(err is None, "trainctld with an admin and two user keys starts", err):
            return tap.finish()
        deadline = time.time() + 30
        while time.time() < deadline:
            hosts = ts.signed_as(d, "GET", "/v1/hosts", ts.USER_KEYS["admin"]).json or {}
            if sum(h.get("state") == "ready" for h in hosts.get("hosts", [])) >= 2:
                break
            time.sleep(0.1)
        keys = ts.USER_KEYS
        alice = sc.make_client(d.endpoint, key=keys["alice"][0], secret=keys["alice"][1])
        bob = sc.make_client(d.endpoint, key=keys["bob"][0], secret=keys["bob"][1])
        admin = sc.make_client(d.endpoint, key=keys["admin"][0], secret=keys["admin"][1])
        case_metrics(tap, d, alice, bob, admin)
        case_search(tap, d)
        case_resend(tap, d)
        t0 = time.time()
        rc, killed = d.stop(timeout=20)
        tap.ok(not killed and time.time() - t0 < 20,
               "(r6) SIGTERM stops trainctld within 20 s",
               "exit %r after %.1f s, SIGKILL needed: %s" % (rc, time.time() - t0, killed))
    finally:
        if d is not None and d.proc and d.proc.poll() is None:
            d.proc.kill()
        ts.drop_users()
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
