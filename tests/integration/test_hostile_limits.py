#!/usr/bin/python3
"""Limits a hostile client runs into, against a trainctld with an admin key
and two user keys (alice, bob), two local hosts and --agent-listen.

  (7) the rendezvous store: a rank's token (read from inside a running
      job) fills its attempt with 4,096 one-byte keys, then overwrites
      every key with 64 KiB: the keys past the budget and the overwrites
      past 8 MiB are refused (413 naming the budget), a refused overwrite
      keeps the old value, a smaller one gives bytes back, trainctld's
      RSS grows by less than 48 MiB, and another job's attempt still
      PUTs and GETs; once the job is stopped, its token stores nothing;
      --rdzv-attempt-bytes must stay under --rdzv-total-bytes
  (9) 600 connections from 127.0.0.1 that send half a request line, to a
      trainctld with 1,024 descriptors and --per-client-connections 32:
      meanwhile the API answers a client on 127.0.0.2 in under 5 s each
      time, the agents keep heartbeating (on --agent-listen) and their
      hosts stay ready; the half-open connections are closed within the
      header timeout (2 s, checked at 6 s); the agent listener serves
      agents and ranks only
  (12) bob's Describe, Stop, Delete, Update, tags, REST describe/stop/logs
      and CloudWatch log events of alice's job answer byte for byte as of
      a job that does not exist (the name aside), and his Create with
      alice's job name as with the name of his own job

TAP on stdout. Run from the top of the tree with Debian's interpreter:
    /usr/bin/python3 tests/integration/test_hostile_limits.py
BUILD names the build directory (default build); TRAINCTL_TEST_KEEP=1
keeps the temp dirs.
"""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ftlib as fl  # noqa: E402

sc = fl.sc
sc.hermetic_env()
expect = sc.expect

KEYS = {"admin": ("AKIDLIMADMIN00000001", "admin/limits/0123456789"),
        "alice": ("AKIDLIMALICE00000001", "alice/limits/0123456789"),
        "bob": ("AKIDLIMBOB0000000001", "bob/limits/0123456789")}
OTHER_ADDR = "127.0.0.2"
HEADER_TIMEOUT = 2
PER_CLIENT = 32
FLOOD = 600
ATTEMPT_BYTES = 8 << 20
ATTEMPT_KEYS = 4096
BIG = 65536

RANK_SCRIPT = r"""
printf '%s\n%s\n' "$TRAINCTL_RDZV_URL" "$TRAINCTL_RDZV_TOKEN" > "$OUTDIR/$NAME.tmp"
mv "$OUTDIR/$NAME.tmp" "$OUTDIR/$NAME.env"
sleep 120
"""


def credentials(path):
    with open(path, "w") as f:
        f.write("[admin]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n" % KEYS["admin"])
        # A user key's jobs are its Unix user's: two users, two owners.
        for who, user in (("alice", "daemon"), ("bob", "bin")):
            f.write("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                    "trainctl_user = %s\ntrainctl_s3_prefixes = %s/%s/\n\n"
                    % ((who,) + KEYS[who] + (user, fl.BUCKET, who)))


def request(port, method, path, body=b"", headers=None, source=None, timeout=15):
    """One request on its own connection, from source (an address) if given."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout,
                                      source_address=(source, 0) if source else None)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return sc.Resp(r.status, {k.lower(): v for k, v in r.getheaders()}, data)
    finally:
        conn.close()


def signed(port, method, path, key, body=b"", headers=None, service="sagemaker", source=None):
    p, _, q = path.partition("?")
    h = dict(headers or {})
    h.update(sc.sigv4_sign(method, "127.0.0.1:%d" % port, p, q, body, key[0], key[1], h,
                           service=service))
    return request(port, method, path, body, h, source=source)


def amz(port, op, payload, key, source=None):
    body = json.dumps(payload).encode()
    h = {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "SageMaker." + op}
    return signed(port, "POST", "/", key, body, h, source=source)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Rank:
    """The rendezvous store as a rank speaks to it (trainer/kv.c): PUT and
    GET on $TRAINCTL_RDZV_URL/<key> with Bearer $TRAINCTL_RDZV_TOKEN, on
    one kept-alive connection."""

    def __init__(self, url, token):
        assert url.startswith("http://127.0.0.1:"), url
        rest = url[len("http://127.0.0.1:"):]
        port, _, self.path = rest.partition("/")
        self.path = "/" + self.path
        self.port = int(port)
        self.auth = {"Authorization": "Bearer " + token}
        self.conn = None

    def call(self, method, key, body=b""):
        for retry in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
            try:
                self.conn.request(method, "%s/%s" % (self.path, key), body=body, headers=self.auth)
                r = self.conn.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.conn.close()
                    self.conn = None
                return r.status, data
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if retry:
                    raise

    def put(self, key, value):
        return self.call("PUT", key, value)

    def get(self, key):
        return self.call("GET", key)


class Fresh:
    """A client that sends a call again once when its kept-alive
    connection was closed under it. This suite's 2 s header timeout
    closes a connection idle that long, and a request that races the
    close reaches no handler; clients with their retries on (boto3's
    default) send it again the same way."""

    def __init__(self, client):
        self.client = client

    def __getattr__(self, name):
        import botocore.exceptions
        fn = getattr(self.client, name)
        if not callable(fn):
            return fn

        def call(*args, **kw):
            try:
                return fn(*args, **kw)
            except botocore.exceptions.ConnectionClosedError:
                return fn(*args, **kw)
        return call


def job_request(name, script, outdir):
    req = fl.job_request(name, 1, checkpoint=False, max_runtime=300)
    req["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/sh"
    req["AlgorithmSpecification"]["ContainerArguments"] = [script]
    req["Environment"] = {"OUTDIR": outdir, "NAME": name}
    return req


def wait_env(outdir, name, timeout=60):
    path = os.path.join(outdir, name + ".env")
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path):
            url, token = open(path).read().split("\n")[:2]
            return url, token
        time.sleep(0.1)
    raise sc.Fail("%s: no rendezvous env from inside the job after %d s" % (name, timeout))


def case_rendezvous(tap, d, admin, outdir, script):
    for n in ("lim-rdzv-a", "lim-rdzv-b"):
        admin.create_training_job(**job_request(n, script, outdir))
    try:
        a = Rank(*wait_env(outdir, "lim-rdzv-a"))
        b = Rank(*wait_env(outdir, "lim-rdzv-b"))
    except sc.Fail as e:
        tap.ok(False, "(7) two jobs running with a rendezvous store", str(e))
        return
    expect_agent = "127.0.0.1:%d" % d.agent_port
    tap.ok(("%d" % d.agent_port) == str(a.port), "(7) ranks are pointed at --agent-listen %s" % expect_agent,
           "TRAINCTL_RDZV_URL port %d" % a.port)

    def keys():
        bad = []

        def check(cond, msg):
            if not cond:
                bad.append(msg)
        rss0 = rss_kib(d.proc.pid)
        refused = [i for i in range(ATTEMPT_KEYS) if a.put("k%04d" % i, b"x")[0] != 200]
        check(not refused, "one-byte keys refused below the key budget: %s" % refused[:5])
        st, body = a.put("k-one-more", b"x")
        check(st == 413 and b"4096 rendezvous keys" in body,
              "key %d: %s %r" % (ATTEMPT_KEYS + 1, st, body[:300]))
        ok, refused, why = 0, 0, None
        big = b"B" * BIG
        for i in range(ATTEMPT_KEYS):
            st, body = a.put("k%04d" % i, big)
            if st == 200:
                ok += 1
            else:
                refused += 1
                why = why or (st, body)
        check(ok <= ATTEMPT_BYTES // BIG and refused >= ATTEMPT_KEYS - ATTEMPT_BYTES // BIG,
              "overwrites with 64 KiB: %d stored, %d refused (budget %d bytes)" % (ok, refused, ATTEMPT_BYTES))
        check(why and why[0] == 413 and b"budget of 8388608 bytes" in why[1], "refusal: %r" % (why,))
        st, body = a.get("k4095")
        check(st == 200 and body == b"x", "a refused overwrite changed the value: %s %r" % (st, body[:40]))
        st, body = a.put("k0000", b"y")
        check(st == 200, "a smaller overwrite: %s %r" % (st, body[:300]))
        st, body = a.put("k4095", big)
        check(st == 200, "the bytes it gave back are not reusable: %s %r" % (st, body[:300]))
        st, body = a.get("k4095")
        check(st == 200 and body == big, "k4095 after its overwrite: %s, %d bytes" % (st, len(body)))
        grown = (rss_kib(d.proc.pid) - rss0) / 1024.0
        check(grown < 48, "trainctld RSS grew by %.0f MiB" % grown)
        st, body = b.put("peer", b"hello from b")
        check(st == 200, "another job's PUT: %s %r" % (st, body[:300]))
        st, body = b.get("peer")
        check(st == 200 and body == b"hello from b", "another job's GET: %s %r" % (st, body[:300]))
        expect(not bad, "\n".join(bad))
        return "RSS +%.1f MiB, %d overwrites stored" % (grown, ok)
    got = tap.case("(7) one attempt: keys and bytes past its budget refused, overwrites counted, "
                   "RSS bounded, another job unaffected", keys)
    if isinstance(got, str):
        tap.note(got)

    def ended():
        admin.stop_training_job(TrainingJobName="lim-rdzv-a")
        fl.wait_job(admin, "lim-rdzv-a", fl.terminal, 60)
        st, body = a.put("late", b"z" * BIG)
        expect(st == 409, "PUT with the token of an ended attempt: %s %r" % (st, body[:300]))
        st, body = a.get("k4095")
        expect(st in (404, 409), "its values are still there: %s, %d bytes" % (st, len(body)))
        st, body = b.get("peer")
        expect(st == 200, "the other job lost its value: %s %r" % (st, body[:200]))
    tap.case("(7) a stopped job's values go and its token stores nothing more", ended)

    def config():
        r = subprocess.run([sc.DAEMON, "--check-config", "--state-dir", os.path.join(d.tmp, "cc"),
                            "--rdzv-attempt-bytes", "1048576", "--rdzv-total-bytes", "1048576"],
                           capture_output=True, text=True)
        expect(r.returncode != 0 and "must be less than --rdzv-total-bytes" in r.stderr,
               "equal budgets: exit %d %r" % (r.returncode, r.stderr[-300:]))
        r = subprocess.run([sc.DAEMON, "--check-config", "--state-dir", os.path.join(d.tmp, "cc"),
                            "--rdzv-attempt-bytes", "1048576", "--rdzv-attempt-keys", "64",
                            "--rdzv-total-bytes", "2097152"], capture_output=True, text=True)
        expect(r.returncode == 0 and "rdzv-attempt-bytes 1048576\nrdzv-attempt-keys 64\n"
               "rdzv-total-bytes 2097152\n" in r.stdout, "budgets given: exit %d %r %r" % (
                   r.returncode, r.stdout[-600:], r.stderr[-300:]))
    tap.case("(7) the budgets are set by flags; an attempt's must be below the store's", config)
    return a


def source_ok():
    s = socket.socket()
    try:
        s.bind((OTHER_ADDR, 0))
        return True
    except OSError:
        return False
    finally:
        s.close()


def case_flood(tap, d, admin_key):
    added = False
    if not source_ok():
        r = subprocess.run(["ip", "addr", "add", OTHER_ADDR + "/32", "dev", "lo"], capture_output=True)
        added = r.returncode == 0
        if not added:
            tap.skip("(9) flood of half-open connections", "no %s: %s" % (OTHER_ADDR, r.stderr.decode()))
            return
    socks = []
    try:
        def flood():
            t0 = time.time()
            for _ in range(FLOOD):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                s.settimeout(2)
                try:
                    s.connect(("127.0.0.1", d.port))
                    s.send(b"GET /v1/training-jobs HTTP/1.1\r\nHost: x")
                except OSError:
                    pass
                socks.append(s)
            time.sleep(0.3)
            at_once = sum(closed(s) for s in socks)
            slow = []
            ages = []
            for i in range(8):
                t = time.time()
                try:
                    r = signed(d.port, "GET", "/v1/hosts", admin_key, source=OTHER_ADDR)
                    dt = time.time() - t
                    hosts = (r.json or {}).get("hosts", [])
                    ages.append(max([h.get("last_heartbeat_ms_ago", 1e9) for h in hosts] or [1e9]))
                    if r.status != 200 or dt > 5:
                        slow.append("%s in %.1f s" % (r.status, dt))
                    if any(h.get("state") not in ("ready", "busy") for h in hosts):
                        slow.append("hosts %s" % [(h.get("name"), h.get("state")) for h in hosts])
                except OSError as e:
                    slow.append("%s after %.1f s" % (e, time.time() - t))
                t = time.time()
                try:
                    r = request(d.agent_port, "GET", "/healthz", timeout=5)
                    if r.status != 200 or time.time() - t > 5:
                        slow.append("agent listener %s in %.1f s" % (r.status, time.time() - t))
                except OSError as e:
                    slow.append("agent listener: %s" % e)
                time.sleep(0.4)
            expect(not slow, "while %d half-open connections were open: %s" % (FLOOD, "; ".join(slow[:6])))
            expect(ages and max(ages) < 5000, "heartbeat ages (ms) during the flood: %s" % ages)
            # Every half-open connection is closed by the header timeout.
            deadline = t0 + HEADER_TIMEOUT + 4
            open_ = socks
            while time.time() < deadline:
                open_ = [s for s in open_ if not closed(s)]
                if not open_:
                    break
                time.sleep(0.2)
            expect(not open_, "%d of %d half-open connections still open %.1f s after they were made "
                   "(header timeout %d s)" % (len(open_), FLOOD, time.time() - t0, HEADER_TIMEOUT))
            return "%d closed at once (per-client limit), heartbeat ages %s ms" % (at_once, ages)
        got = tap.case("(9) %d half-open connections from one client: the API answers another address "
                 "in < 5 s, agents keep heartbeating, and they are closed by the header timeout" % FLOOD,
                 flood)
        if isinstance(got, str):
            tap.note(got)
    finally:
        for s in socks:
            s.close()
        if added:
            subprocess.run(["ip", "addr", "del", OTHER_ADDR + "/32", "dev", "lo"], capture_output=True)

    def agent_only():
        r = signed(d.agent_port, "GET", "/v1/hosts", admin_key)
        expect(r.status == 404, "GET /v1/hosts on --agent-listen: %r" % r)
        r = amz(d.agent_port, "ListTrainingJobs", {}, admin_key)
        expect(r.status == 404, "ListTrainingJobs on --agent-listen: %r" % r)
    tap.case("(9) the agent listener serves agents and ranks only", agent_only)


def closed(s):
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def normalized(r, *names):
    body = r.body
    for n in names:
        body = body.replace(n.encode(), b"NAME")
    return r.status, r.headers.get("content-type"), body


def user_job(name, who):
    req = fl.job_request(name, 1, checkpoint=False)
    req["AlgorithmSpecification"]["TrainingImage"] = "file:///bin/true"
    req["OutputDataConfig"] = {"S3OutputPath": "s3://%s/%s/out" % (fl.BUCKET, who)}
    return req


def case_existence(tap, d, alice, bob):
    mine, theirs, none = "lim-bob-own", "lim-alice-secret", "lim-nosuch-job"
    for c, n, who in ((alice, theirs, "alice"), (bob, mine, "bob")):
        r = amz(d.port, "CreateTrainingJob", user_job(n, who), c)
        if not tap.ok(r.status == 200, "(12) %s created" % n, repr(r)):
            return

    def arn(n):
        return "arn:aws:sagemaker:us-east-1:000000000000:training-job/" + n

    def ops(n):
        return [
            ("DescribeTrainingJob", lambda: amz(d.port, "DescribeTrainingJob", {"TrainingJobName": n}, bob)),
            ("StopTrainingJob", lambda: amz(d.port, "StopTrainingJob", {"TrainingJobName": n}, bob)),
            ("DeleteTrainingJob", lambda: amz(d.port, "DeleteTrainingJob", {"TrainingJobName": n}, bob)),
            ("UpdateTrainingJob", lambda: amz(d.port, "UpdateTrainingJob",
                                              {"TrainingJobName": n,
                                               "ResourceConfig": {"KeepAlivePeriodInSeconds": 60}}, bob)),
            ("ListTags", lambda: amz(d.port, "ListTags", {"ResourceArn": arn(n)}, bob)),
            ("AddTags", lambda: amz(d.port, "AddTags", {"ResourceArn": arn(n),
                                                       "Tags": [{"Key": "k", "Value": "v"}]}, bob)),
            ("DeleteTags", lambda: amz(d.port, "DeleteTags", {"ResourceArn": arn(n), "TagKeys": ["k"]}, bob)),
            ("GET /v1/training-jobs/N", lambda: signed(d.port, "GET", "/v1/training-jobs/" + n, bob)),
            ("POST /v1/training-jobs/N/stop",
             lambda: signed(d.port, "POST", "/v1/training-jobs/%s/stop" % n, bob)),
            ("GET /v1/training-jobs/N/logs", lambda: signed(d.port, "GET", "/v1/training-jobs/%s/logs" % n, bob)),
            ("GET /v1/training-jobs/N/logs/streams",
             lambda: signed(d.port, "GET", "/v1/training-jobs/%s/logs/streams" % n, bob)),
            ("Logs GetLogEvents", lambda: signed(
                d.port, "POST", "/", bob,
                json.dumps({"logGroupName": "/aws/sagemaker/TrainingJobs",
                            "logStreamName": n + "/algo-1-1700000000"}).encode(),
                {"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "Logs_20140328.GetLogEvents"},
                service="logs")),
        ]

    def same():
        diff = []
        for (what, f_theirs), (_, f_none) in zip(ops(theirs), ops(none)):
            a, b = normalized(f_theirs(), theirs), normalized(f_none(), none)
            if a != b:
                diff.append("%s: alice's job %r, none %r" % (what, a, b))
            if b"another user" in a[2] or b"AccessDenied" in a[2]:
                diff.append("%s names the owner: %r" % (what, a[2][:200]))
        r1 = amz(d.port, "CreateTrainingJob", user_job(theirs, "bob"), bob)
        r2 = amz(d.port, "CreateTrainingJob", user_job(mine, "bob"), bob)
        a, b = normalized(r1, theirs), normalized(r2, mine)
        if a != b or r1.status != 400 or b"ResourceInUse" not in r1.body:
            diff.append("CreateTrainingJob with alice's name %r, with his own %r" % (a, b))
        expect(not diff, "\n".join(diff))
        names = [j["TrainingJobName"] for j in
                 (amz(d.port, "ListTrainingJobs", {}, KEYS["admin"]).json or {}).get("TrainingJobSummaries", [])]
        expect(names.count(theirs) == 1, "alice's job after bob's requests: %s" % names)
        r = amz(d.port, "DescribeTrainingJob", {"TrainingJobName": theirs}, alice)
        expect(r.status == 200 and not (r.json or {}).get("Tags"), "alice's job changed: %r" % r)
    tap.case("(12) bob's requests on alice's job answer as on a job that does not exist", same)


def main():
    tap = sc.Tap()
    outdir = tempfile.mkdtemp(prefix="trainctl-limits-")
    script = os.path.join(outdir, "rank.sh")
    with open(script, "w") as f:
        f.write(RANK_SCRIPT)
    os.chmod(script, 0o755)
    d = sc.Daemon(credentials=None, name="trainctld-limits")
    os.makedirs(d.tmp, exist_ok=True)
    path = os.path.join(d.tmp, "limits-credentials")
    credentials(path)
    d.agent_port = sc.free_port()
    d.extra += ["--credentials", path, "--local-hosts", "2",
                "--agent-listen", "127.0.0.1:%d" % d.agent_port,
                "--per-client-connections", str(PER_CLIENT),
                "--header-timeout", str(HEADER_TIMEOUT)]
    # 1,024 descriptors: 512 connections for trainctld, which the flood
    # would take without a limit per client. A wrapper lowers the limit
    # and execs trainctld (the same process).
    wrapper = os.path.join(d.tmp, "trainctld-1024")
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\nulimit -Sn 1024 && ulimit -Hn 1024 && exec "%s" "$@"\n' % sc.DAEMON)
    os.chmod(wrapper, 0o755)
    real, sc.DAEMON = sc.DAEMON, wrapper
    try:
        err = d.start()
    finally:
        sc.DAEMON = real
    if not tap.ok(err is None, "trainctld with an admin and two user keys and --agent-listen starts", err):
        sys.exit(tap.finish())
    d.want_port = d.port

    def restart():
        rc, killed = d.stop(timeout=20)
        expect(rc == 0 and not killed, "exit %r on SIGTERM\n%s" % (rc, d.log_tail()))
        sc.DAEMON = wrapper
        try:
            err = d.start()
        finally:
            sc.DAEMON = real
        expect(err is None, "trainctld does not start again: %s" % err)
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            hosts = (signed(d.port, "GET", "/v1/hosts", KEYS["admin"]).json or {}).get("hosts", [])
            if sum(h.get("state") == "ready" for h in hosts) >= 2:
                break
            time.sleep(0.1)
        admin = Fresh(sc.make_client(d.endpoint, key=KEYS["admin"][0], secret=KEYS["admin"][1]))
        tap.log_hint = d.log_tail
        ended = case_rendezvous(tap, d, admin, outdir, script)
        case_flood(tap, d, KEYS["admin"])
        case_existence(tap, d, KEYS["alice"], KEYS["bob"])

        def after_restart():
            expect(ended is not None, "no rank of the stopped job to ask with")
            restart()
            st, body = ended.put("after-restart", b"z" * BIG)
            expect(st == 409, "PUT with an ended attempt's token after a restart: %s %r" % (st, body[:300]))
        tap.case("(7) after a restart too, an ended attempt's token stores nothing", after_restart)
        try:
            admin.stop_training_job(TrainingJobName="lim-rdzv-b")
        except Exception:
            pass
    finally:
        rc, killed = d.stop(timeout=20)
        tap.ok(rc == 0 and not killed, "trainctld exits 0 on SIGTERM", "exit %r\n%s" % (rc, d.log_tail()))
        if not os.environ.get("TRAINCTL_TEST_KEEP"):
            shutil.rmtree(outdir, ignore_errors=True)
    sys.exit(tap.finish())


if __name__ == "__main__":
    main()
